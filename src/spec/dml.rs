//! The DirectML descriptors of a job: what a DirectML caller fills in to run the same operator
//! on the same tensors at the level asked for (`docs/report.md`, "dml"). Derived from the plan
//! (the broadcast output shape and each input's element strides) and the support row applied.

use crate::dtype::DType;
use crate::op::Op;
use crate::spec::matrix::SupportRow;
use serde::Serialize;

/// The report's `dml` object.
#[derive(Debug, Clone, Serialize)]
pub struct Descriptors {
    pub operator: &'static str,
    pub desc: &'static str,
    pub tensors: Tensors,
}

/// The operator desc's three tensors, in the order the desc declares them.
#[derive(Debug, Clone, Serialize)]
pub struct Tensors {
    #[serde(rename = "ATensor")]
    pub a: TensorDesc,
    #[serde(rename = "BTensor")]
    pub b: TensorDesc,
    #[serde(rename = "OutputTensor")]
    pub output: TensorDesc,
}

/// A `DML_BUFFER_TENSOR_DESC`, with DirectML's field names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TensorDesc {
    pub data_type: String,
    pub flags: &'static str,
    pub dimension_count: usize,
    pub sizes: Vec<u64>,
    /// `None` (packed) for the output.
    pub strides: Option<Vec<u64>>,
    pub total_tensor_size_in_bytes: u64,
    pub guaranteed_base_offset_alignment: u32,
}

/// The descriptors for `op` on `dtype` inputs with element `strides` over the output `shape`,
/// at a level whose support row is `row`.
pub fn descriptors(op: Op, row: &SupportRow, dtype: DType, shape: &[u64], strides: &[Vec<u64>; 2]) -> Descriptors {
    // DirectML has no rank-0 tensors, and rank-4-only levels take lower ranks padded with
    // leading 1s (as the dimension_count check says).
    let rank = shape.len().max(1).max(row.ranks.0);
    let pad = rank - shape.len();
    let sizes: Vec<u64> = std::iter::repeat_n(1, pad).chain(shape.iter().copied()).collect();
    let input = |s: &Vec<u64>| {
        let strides: Vec<u64> = std::iter::repeat_n(0, pad).chain(s.iter().copied()).collect();
        tensor(dtype, &sizes, Some(strides))
    };
    Descriptors {
        operator: op.dml_operator(),
        desc: op.dml_desc(),
        tensors: Tensors { a: input(&strides[0]), b: input(&strides[1]), output: tensor(dtype, &sizes, None) },
    }
}

fn tensor(dtype: DType, sizes: &[u64], strides: Option<Vec<u64>>) -> TensorDesc {
    TensorDesc {
        data_type: format!("DML_TENSOR_DATA_TYPE_{}", dtype.name().to_ascii_uppercase()),
        flags: "DML_TENSOR_FLAG_NONE",
        dimension_count: sizes.len(),
        total_tensor_size_in_bytes: buffer_tensor_size(dtype.size() as u64, sizes, strides.as_deref()),
        sizes: sizes.to_vec(),
        strides,
        guaranteed_base_offset_alignment: 0,
    }
}

/// DirectML's `DMLCalcBufferTensorSize`: the bytes from the first to one past the last element
/// addressed (all of them when packed), rounded up to a multiple of 4. Saturates instead of
/// wrapping (a level's element limit keeps real values far below).
pub fn buffer_tensor_size(element_size: u64, sizes: &[u64], strides: Option<&[u64]>) -> u64 {
    let elements = match strides {
        None => sizes.iter().fold(1u64, |n, &d| n.saturating_mul(d)),
        Some(s) => {
            sizes.iter().zip(s).fold(1u64, |n, (&d, &st)| n.saturating_add(d.saturating_sub(1).saturating_mul(st)))
        }
    };
    elements.saturating_mul(element_size).saturating_add(3) / 4 * 4
}

/// The DirectML name of `dtype` (`FLOAT32`).
pub fn dml_name(dtype: DType) -> String {
    dtype.name().to_ascii_uppercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::level::FeatureLevel;
    use crate::spec::matrix::row_for;

    #[test]
    fn the_documented_example() {
        let row = row_for(Op::Sub, FeatureLevel::new(5, 1)).expect("row");
        let d = descriptors(Op::Sub, row, DType::F32, &[8, 7, 6, 5], &[vec![6, 0, 1, 0], vec![0, 5, 0, 1]]);
        assert_eq!(d.desc, "DML_ELEMENT_WISE_SUBTRACT_OPERATOR_DESC");
        assert_eq!(d.tensors.a.total_tensor_size_in_bytes, 192);
        assert_eq!(d.tensors.b.total_tensor_size_in_bytes, 140);
        assert_eq!(d.tensors.output.total_tensor_size_in_bytes, 6720);
        assert_eq!(d.tensors.output.strides, None);
        assert_eq!(d.tensors.a.data_type, "DML_TENSOR_DATA_TYPE_FLOAT32");
        let json = serde_json::to_value(&d).expect("json");
        assert_eq!(json["tensors"]["BTensor"]["Strides"], serde_json::json!([0, 5, 0, 1]));
        assert_eq!(json["tensors"]["OutputTensor"]["DimensionCount"], 4);
    }

    #[test]
    fn rank_four_levels_pad_and_rank_zero_becomes_one() {
        let row = row_for(Op::Sub, FeatureLevel::new(1, 0)).expect("row");
        let d = descriptors(Op::Sub, row, DType::F16, &[3, 4], &[vec![4, 1], vec![0, 1]]);
        assert_eq!(d.tensors.b.sizes, [1, 1, 3, 4]);
        assert_eq!(d.tensors.b.strides.as_deref(), Some(&[0, 0, 0, 1][..]));
        // 4 float16 elements = 8 bytes; 12 for A, 24 bytes for the output.
        assert_eq!(d.tensors.b.total_tensor_size_in_bytes, 8);
        assert_eq!(d.tensors.output.total_tensor_size_in_bytes, 24);
        let row = row_for(Op::Sub, FeatureLevel::new(5, 1)).expect("row");
        let d = descriptors(Op::Sub, row, DType::U8, &[], &[vec![], vec![]]);
        assert_eq!((d.tensors.a.dimension_count, d.tensors.a.sizes.clone()), (1, vec![1]));
        // One byte, rounded up to 4.
        assert_eq!(d.tensors.a.total_tensor_size_in_bytes, 4);
    }
}
