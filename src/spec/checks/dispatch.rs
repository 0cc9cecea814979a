//! The checks of a DxDispatch model's dispatch (`tensorop run`): tensorop's seven on A and B as
//! their descs give them, then DirectML's rules for buffer tensor descs and bindings
//! (`output_desc`, `tensor_desc`, `binding_size`), each a pure function of the facts gathered
//! from the model ([`Dispatch`]) returning its verdict; and [`validate_dispatch`], which records
//! them and finds the oldest level that accepts the dispatch.

use super::minimum::minimum_level;
use super::rules::{level_checks, same_datatype_check, shape_check, support_row};
use super::verdict::{BindingSizes, OutputDesc, TensorDescs, Verdict};
use super::{Bound, BroadcastMode, Check, Desc, Dispatch, TensorSpec, Validation};
use crate::npy::header::FileDType;
use crate::spec::level::LevelChoice;

/// Runs every check of dispatch `d` at `level`, in the report's order: tensorop's seven on A and
/// B (`--broadcast none`: DirectML does not broadcast; `dimension_count` takes A's desc as
/// written), then `output_desc`, `tensor_desc` and `binding_size`.
///
/// The checks that do not depend on the level run once; the others run at the level asked for,
/// and at every DirectML level and `none` for the minimum level, where only their statuses are
/// read.
pub fn validate_dispatch(d: &Dispatch, level: LevelChoice) -> Validation {
    let [a, b, out] = &d.descs;
    let (da, db) = (FileDType::Numeric(a.dtype), FileDType::Numeric(b.dtype));
    let (sa, sb) = (sizes64(a), sizes64(b));
    let sa = TensorSpec { name: a.name.to_string(), dtype: &da, shape: &sa };
    let sb = TensorSpec { name: b.name.to_string(), dtype: &db, shape: &sb };
    let shapes = shape_check(BroadcastMode::None, &sa, &sb);
    let out_shape = shapes.out();
    let fixed = [
        Verdict::SameDatatype(same_datatype_check(d.op, &sa, &sb)),
        Verdict::Shapes(shapes.clone()),
        Verdict::OutputDesc(output_desc_check(a, out)),
        Verdict::TensorDescs(tensor_desc_check(&d.descs)),
        Verdict::BindingSizes(binding_size_check(&d.descs, &d.bound)),
    ];
    let at = |l| level_checks(d.op, l, &sa, &sb, out_shape, Some(a));
    let (minimum_level, none_accepts) = minimum_level(&fixed, at);
    let [operator, datatype, rank, sizes, elements] = at(level);
    let [same, shapes, output, descs, bindings] = &fixed;
    let checks = [&operator, &datatype, same, shapes, &rank, &sizes, &elements, output, descs, bindings];
    Validation {
        checks: checks.map(Check::from).to_vec(),
        support_row: support_row(d.op, level).map(|r| r.since),
        out_shape: out_shape.map(<[u64]>::to_vec),
        minimum_level,
        none_accepts,
    }
}

/// A desc's sizes as a shape.
fn sizes64(desc: &Desc) -> Vec<u64> {
    desc.sizes.iter().map(|&s| u64::from(s)).collect()
}

/// `output_desc`: the output has A's data type, its own element for each of its elements (no
/// stride of 0 along a dimension of more than 1), and A's sizes.
fn output_desc_check<'v>(a: &Desc<'v>, out: &Desc<'v>) -> OutputDesc<'v> {
    if out.dtype != a.dtype {
        return OutputDesc::OtherDtype { out: out.dtype, a: a.dtype };
    }
    let overlap =
        out.strides.and_then(|st| st.iter().zip(out.sizes).position(|(&stride, &size)| stride == 0 && size > 1));
    if let Some(dimension) = overlap {
        return OutputDesc::ZeroStride { dimension, size: out.sizes[dimension] };
    }
    if out.sizes != a.sizes {
        return OutputDesc::OtherSizes { out: out.sizes, a: a.sizes };
    }
    OutputDesc::Matches { dtype: out.dtype, sizes: out.sizes }
}

/// `tensor_desc`: each desc is consistent: `DimensionCount` and the `Strides` match `Sizes`,
/// and `TotalTensorSizeInBytes` covers every element the desc addresses.
fn tensor_desc_check<'v>(descs: &[Desc<'v>; 3]) -> TensorDescs<'v> {
    descs.iter().find_map(desc_problem).unwrap_or(TensorDescs::Consistent)
}

/// The first problem of one desc, in the order `tensor_desc` looks for them.
fn desc_problem<'v>(t: &Desc<'v>) -> Option<TensorDescs<'v>> {
    let desc = t.name;
    if t.sizes.is_empty() {
        Some(TensorDescs::NoSizes { desc })
    } else if t.bytes.is_none() {
        Some(TensorDescs::Oversized { desc, sizes: t.sizes })
    } else if t.dimension_count as usize != t.sizes.len() {
        Some(TensorDescs::DimensionCount { desc, count: t.dimension_count, sizes: t.sizes.len() })
    } else if let Some(strides) = t.strides.filter(|s| s.len() != t.sizes.len()) {
        Some(TensorDescs::Strides { desc, strides: strides.len(), sizes: t.sizes.len() })
    } else {
        (t.total_size < t.addressed).then_some(TensorDescs::TotalSize {
            desc,
            total: t.total_size,
            addressed: t.addressed,
        })
    }
}

/// `binding_size`: each binding starts on an element of its tensor's type, and each bound range
/// (from the binding's offset to the end of the resource) holds the tensor's
/// `TotalTensorSizeInBytes`.
fn binding_size_check<'v>(descs: &[Desc<'v>; 3], bound: &[Bound<'v>; 3]) -> BindingSizes<'v> {
    for (t, b) in descs.iter().zip(bound) {
        let (desc, resource, offset) = (t.name, b.resource, b.offset);
        if offset % t.dtype.size() as u64 != 0 {
            return BindingSizes::Misaligned { desc, dtype: t.dtype, resource, offset };
        }
        let room = b.size - offset;
        if room < t.total_size {
            return BindingSizes::TooSmall { desc, total: t.total_size, resource, room, offset };
        }
    }
    BindingSizes::Hold
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::{binding_size_check, output_desc_check, tensor_desc_check, validate_dispatch};
    use crate::spec::checks::{Bound, Dispatch};

    const IDS: [&str; 10] = [
        "operator_available",
        "datatype_supported",
        "same_datatype",
        "same_sizes",
        "dimension_count",
        "nonzero_sizes",
        "element_count",
        "output_desc",
        "tensor_desc",
        "binding_size",
    ];

    /// A float32 dispatch of `op` on descs of `sizes`, each bound at offset 0 to a resource that
    /// holds it exactly.
    fn dispatch(op: Op, sizes: &'static [u32]) -> Dispatch<'static> {
        let descs = [desc("ATensor", sizes), desc("BTensor", sizes), desc("OutputTensor", sizes)];
        let bound = ["A", "B", "Out"].map(|resource| Bound { resource, size: descs[0].total_size, offset: 0 });
        Dispatch { op, descs, bound }
    }

    fn at(d: &Dispatch, level: &str) -> Validation {
        validate_dispatch(d, level.parse().unwrap())
    }

    #[test]
    fn a_consistent_dispatch_passes_all_ten_in_order() {
        let v = at(&dispatch(Op::Sub, &[2, 3]), "latest");
        assert_eq!(v.checks.iter().map(|c| c.id.name()).collect::<Vec<_>>(), IDS);
        assert!(v.checks.iter().all(|c| c.status == Status::Pass), "{:?}", v.checks);
        assert_eq!(v.support_row, Some(fl("5_1")));
        assert_eq!(v.out_shape, Some(vec![2, 3]));
        assert_eq!(v.checks[4].message, "the output has rank 2; sub at feature level 6_4 supports 1 to 8 dimensions");
        // Rank 2 as written: the rank-4 levels refuse it, every later one takes it.
        assert_eq!((v.minimum_level, v.none_accepts), (Some(fl("3_0")), true));
        let v = at(&dispatch(Op::Sub, &[1, 1, 2, 3]), "1_0");
        assert!(v.valid());
        assert_eq!((v.minimum_level, v.none_accepts), (Some(fl("1_0")), true));
    }

    /// The minimum level reads every check's status, the desc checks included.
    #[test]
    fn the_minimum_level_follows_every_check() {
        let v = at(&dispatch(Op::Sub, &[2, 3]), "2_1");
        assert!(!v.valid());
        let failed: Vec<_> = v.checks.iter().filter(|c| c.status == Status::Fail).map(|c| c.id.name()).collect();
        assert_eq!(failed, ["dimension_count"]);
        assert_eq!(v.minimum_level, Some(fl("3_0")), "whatever level was asked for");
        assert_eq!(at(&dispatch(Op::SqDiff, &[2, 3]), "3_0").minimum_level, Some(fl("3_1")));
        let mut d = dispatch(Op::Sub, &[2, 3]);
        d.descs.iter_mut().for_each(|t| t.dtype = DType::I8);
        assert_eq!(at(&d, "latest").minimum_level, Some(fl("5_1")));
        // A desc or binding problem fails at every level, `none` included.
        let mut d = dispatch(Op::Sub, &[2, 3]);
        d.bound[2].size = 16;
        let v = at(&d, "none");
        assert_eq!(v.checks.iter().map(|c| c.status == Status::Fail).collect::<Vec<_>>()[7..], [false, false, true]);
        assert_eq!((v.minimum_level, v.none_accepts), (None, false));
    }

    #[test]
    fn the_output_desc_has_as_type_and_sizes() {
        use OutputDesc::*;
        let (a, out) = (desc("ATensor", &[2, 3]), desc("OutputTensor", &[2, 3]));
        assert_eq!(output_desc_check(&a, &out), Matches { dtype: DType::F32, sizes: &[2, 3] });
        let other = Desc { dtype: DType::F16, sizes: &[3, 2], ..out };
        assert_eq!(output_desc_check(&a, &other), OtherDtype { out: DType::F16, a: DType::F32 }, "the type first");
        let strided = |strides| Desc { strides: Some(strides), sizes: &[2, 1, 3], ..out };
        assert_eq!(output_desc_check(&a, &strided(&[3, 0, 0])), ZeroStride { dimension: 2, size: 3 });
        assert_eq!(output_desc_check(&a, &strided(&[3, 0, 1])), OtherSizes { out: &[2, 1, 3], a: &[2, 3] });
        assert_eq!(output_desc_check(&a, &desc("OutputTensor", &[3, 2])), OtherSizes { out: &[3, 2], a: &[2, 3] });
    }

    #[test]
    fn tensor_desc_names_the_first_problem() {
        use TensorDescs::*;
        let ok = [desc("ATensor", &[2, 3]), desc("BTensor", &[2, 3]), desc("OutputTensor", &[2, 3])];
        assert_eq!(tensor_desc_check(&ok), Consistent);
        let with = |i: usize, t: Desc<'static>| {
            let mut descs = ok;
            descs[i] = t;
            tensor_desc_check(&descs)
        };
        let b = ok[1];
        let desc = "BTensor";
        assert_eq!(with(1, Desc { sizes: &[], dimension_count: 3, ..b }), NoSizes { desc });
        assert_eq!(with(1, Desc { bytes: None, dimension_count: 3, ..b }), Oversized { desc, sizes: &[2, 3] });
        assert_eq!(
            with(1, Desc { dimension_count: 3, strides: Some(&[1]), ..b }),
            DimensionCount { desc, count: 3, sizes: 2 }
        );
        assert_eq!(with(1, Desc { strides: Some(&[1]), total_size: 0, ..b }), Strides { desc, strides: 1, sizes: 2 });
        assert_eq!(with(1, Desc { total_size: 20, ..b }), TotalSize { desc, total: 20, addressed: 24 });
        assert_eq!(with(1, Desc { total_size: 28, ..b }), Consistent, "more than it addresses is fine");
        let mut descs = ok;
        descs[0].total_size = 0;
        descs[2].sizes = &[];
        assert_eq!(tensor_desc_check(&descs), TotalSize { desc: "ATensor", total: 0, addressed: 24 }, "ATensor first");
    }

    #[test]
    fn each_binding_starts_on_an_element_and_holds_its_tensor() {
        use BindingSizes::*;
        let d = dispatch(Op::Sub, &[2, 3]);
        assert_eq!(binding_size_check(&d.descs, &d.bound), Hold);
        let with = |i: usize, size, offset| {
            let mut bound = d.bound;
            bound[i] = Bound { size, offset, ..bound[i] };
            binding_size_check(&d.descs, &bound)
        };
        let desc = "BTensor";
        assert_eq!(with(1, 40, 16), Hold);
        assert_eq!(with(1, 40, 6), Misaligned { desc, dtype: DType::F32, resource: "B", offset: 6 });
        assert_eq!(with(1, 2, 6), Misaligned { desc, dtype: DType::F32, resource: "B", offset: 6 }, "alignment first");
        assert_eq!(with(1, 36, 16), TooSmall { desc, total: 24, resource: "B", room: 20, offset: 16 });
        let mut bound = d.bound;
        bound[0].offset = 2;
        bound[1].size = 0;
        assert_eq!(
            binding_size_check(&d.descs, &bound),
            Misaligned { desc: "ATensor", dtype: DType::F32, resource: "A", offset: 2 }
        );
    }
}
