//! A model's dispatches checked before anything runs: tensorop's checks at the level asked for
//! (`spec::checks`), then DirectML's rules for buffer tensor descs and bindings, and for each
//! dispatch the oldest level that accepts it; the report's `dispatches` entries.

use super::desc::{addressed_bytes, element_count, sizes64};
use super::model::{Binding, Command, Dispatchable, Model, Resource, TensorDesc, TENSOR_NAMES};
use crate::npy::header::FileDType;
use crate::spec::checks::{validate, BroadcastMode, Check, CheckId, Status, TensorSpec};
use crate::spec::dml::dml_name;
use crate::spec::dml::TensorDesc as DmlTensorDesc;
use crate::spec::level::{FeatureLevel, LevelChoice};
use crate::spec::matrix::row_for;
use serde::Serialize;

/// One dispatch's checks and descriptors, as the report lists them.
#[derive(Debug, Clone, Serialize)]
pub struct DispatchReport {
    /// The command's index in `commands`.
    pub command: usize,
    pub dispatchable: String,
    pub op: &'static str,
    pub dml_operator: &'static str,
    pub feature_level: String,
    pub support_row: Option<String>,
    #[serde(serialize_with = "level_name")]
    pub minimum_feature_level: Option<FeatureLevel>,
    pub valid: bool,
    pub checks: Vec<Check>,
    /// The three tensor descs as the model gives them (`ATensor`, `BTensor`, `OutputTensor`).
    pub tensors: serde_json::Map<String, serde_json::Value>,
    /// Per tensor, the resource and the byte offset bound to it.
    pub bindings: serde_json::Map<String, serde_json::Value>,
    pub elements: u64,
}

/// A level as the report spells it (`3_1`), or `null`.
pub(super) fn level_name<S: serde::Serializer>(level: &Option<FeatureLevel>, s: S) -> Result<S::Ok, S::Error> {
    match level {
        Some(l) => s.collect_str(l),
        None => s.serialize_none(),
    }
}

/// Checks every dispatch of `model` at `level`.
pub fn check_all(model: &Model, level: LevelChoice) -> Vec<DispatchReport> {
    model
        .commands
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match c {
            Command::Dispatch { dispatchable, bindings } => {
                Some(check_dispatch(i, &model.dispatchables[*dispatchable], bindings, &model.resources, level))
            }
            _ => None,
        })
        .collect()
}

/// The checks of one dispatch at `level`: tensorop's (A's and B's data types and sizes against
/// the support row), then DirectML's rules for the descs and the bindings.
pub(super) fn checks_at(
    d: &Dispatchable,
    bindings: &[Binding; 3],
    resources: &[Resource],
    level: LevelChoice,
) -> (Vec<Check>, Option<FeatureLevel>) {
    let [a, b, out] = &d.tensors;
    let (da, db) = (FileDType::Numeric(a.dtype), FileDType::Numeric(b.dtype));
    let (sa, sb) = (sizes64(a), sizes64(b));
    let spec = |name: &str, dtype, shape| TensorSpec { name: name.to_string(), dtype, shape };
    let v = validate(d.op, level, BroadcastMode::None, &spec("ATensor", &da, &sa), &spec("BTensor", &db, &sb));
    let mut checks = v.checks;
    // A desc is what DirectML sees: a level that takes only rank 4 does not pad it.
    let row = match level {
        LevelChoice::Dml(l) => row_for(d.op, l).map(|row| (l, row)),
        LevelChoice::None => None,
    };
    if let Some((l, row)) = row {
        let rank = a.sizes.len();
        if rank < row.ranks.0 {
            if let Some(c) = checks.iter_mut().find(|c| c.id == CheckId::DimensionCount) {
                c.status = Status::Fail;
                c.message = format!(
                    "ATensor has {rank} dimensions; {} at feature level {l} takes {} (support row {}): write Sizes with \
                     leading 1s, as tensorop's own export does",
                    d.op.dml_operator(),
                    row.ranks.0,
                    row.since
                );
            }
        }
    }
    checks.push(output_check(a, out));
    checks.push(desc_check(&d.tensors));
    checks.push(binding_check(&d.tensors, bindings, resources));
    (checks, v.support_row)
}

/// `output_desc`: the output has A's data type and sizes, as DirectML requires.
pub(super) fn output_check(a: &TensorDesc, out: &TensorDesc) -> Check {
    let (status, message) = if out.dtype != a.dtype {
        (
            Status::Fail,
            format!(
                "OutputTensor is {} but ATensor is {}; DirectML computes in one data type",
                dml_name(out.dtype),
                dml_name(a.dtype)
            ),
        )
    } else if let Some(k) = out
        .strides
        .as_ref()
        .and_then(|st| st.iter().zip(&out.sizes).position(|(&stride, &size)| stride == 0 && size > 1))
    {
        (
            Status::Fail,
            format!(
                "OutputTensor's Strides are 0 along dimension {k} (of size {}): every element there would be written \
                 to one place; give the output its own element for each",
                out.sizes[k]
            ),
        )
    } else if out.sizes != a.sizes {
        (
            Status::Fail,
            format!(
                "OutputTensor's Sizes {:?} differ from ATensor's {:?}; DirectML requires the same sizes",
                out.sizes, a.sizes
            ),
        )
    } else {
        (Status::Pass, format!("OutputTensor is {} {:?}, as ATensor", dml_name(out.dtype), out.sizes))
    };
    Check { id: CheckId::OutputDesc, status, message }
}

/// `tensor_desc`: each desc is consistent: `DimensionCount` and the `Strides` match `Sizes`,
/// and `TotalTensorSizeInBytes` covers every element the desc addresses.
pub(super) fn desc_check(tensors: &[TensorDesc; 3]) -> Check {
    for (name, t) in TENSOR_NAMES.iter().zip(tensors) {
        let problem = if t.sizes.is_empty() {
            Some(format!("{name}: Sizes is empty; a DirectML tensor has at least one dimension (write [1])"))
        } else if element_count(t).and_then(|n| n.checked_mul(t.dtype.size() as u64)).is_none() {
            Some(format!("{name}: Sizes {:?} describe more than 2^64 bytes", t.sizes))
        } else if t.dimension_count as usize != t.sizes.len() {
            Some(format!("{name}: DimensionCount is {} but Sizes has {} entries", t.dimension_count, t.sizes.len()))
        } else if t.strides.as_ref().is_some_and(|s| s.len() != t.sizes.len()) {
            Some(format!(
                "{name}: Strides has {} entries but Sizes has {}",
                t.strides.as_ref().map_or(0, Vec::len),
                t.sizes.len()
            ))
        } else {
            let needed = addressed_bytes(t);
            (t.total_size < needed).then(|| {
                format!("{name}: TotalTensorSizeInBytes is {} but the desc addresses {needed} bytes (DMLCalcBufferTensorSize)", t.total_size)
            })
        };
        if let Some(message) = problem {
            return Check { id: CheckId::TensorDesc, status: Status::Fail, message };
        }
    }
    Check { id: CheckId::TensorDesc, status: Status::Pass, message: "the three descs are consistent".into() }
}

/// `binding_size`: each bound range (from the binding's offset to the end of the resource) holds
/// the tensor's `TotalTensorSizeInBytes`.
pub(super) fn binding_check(tensors: &[TensorDesc; 3], bindings: &[Binding; 3], resources: &[Resource]) -> Check {
    for ((name, t), b) in TENSOR_NAMES.iter().zip(tensors).zip(bindings) {
        let r = &resources[b.resource];
        let es = t.dtype.size() as u64;
        if b.offset % es != 0 {
            return Check {
                id: CheckId::BindingSize,
                status: Status::Fail,
                message: format!(
                    "{name} is bound to '{}' at byte {}, which is not a multiple of its element size ({es} bytes); \
                     give elementOffset in elements of {}",
                    r.name,
                    b.offset,
                    dml_name(t.dtype)
                ),
            };
        }
        let room = r.size - b.offset;
        if room < t.total_size {
            return Check {
                id: CheckId::BindingSize,
                status: Status::Fail,
                message: format!(
                    "{name} needs {} bytes (TotalTensorSizeInBytes) but '{}' has {room} bytes from offset {}; enlarge its \
                     sizeInBytes or bind a larger resource",
                    t.total_size, r.name, b.offset
                ),
            };
        }
    }
    Check { id: CheckId::BindingSize, status: Status::Pass, message: "every bound resource holds its tensor".into() }
}

pub(super) fn check_dispatch(
    index: usize,
    d: &Dispatchable,
    bindings: &[Binding; 3],
    resources: &[Resource],
    level: LevelChoice,
) -> DispatchReport {
    let (checks, support_row) = checks_at(d, bindings, resources, level);
    let valid = checks.iter().all(|c| c.status != Status::Fail);
    let minimum = FeatureLevel::ALL
        .iter()
        .copied()
        .find(|&l| checks_at(d, bindings, resources, LevelChoice::Dml(l)).0.iter().all(|c| c.status != Status::Fail));
    let mut tensors = serde_json::Map::new();
    let mut bound = serde_json::Map::new();
    for ((name, t), b) in TENSOR_NAMES.iter().zip(&d.tensors).zip(bindings) {
        let desc = DmlTensorDesc {
            data_type: format!("DML_TENSOR_DATA_TYPE_{}", dml_name(t.dtype)),
            flags: if t.flags.iter().any(|f| f.ends_with("OWNED_BY_DML")) {
                "DML_TENSOR_FLAG_OWNED_BY_DML"
            } else {
                "DML_TENSOR_FLAG_NONE"
            },
            dimension_count: t.dimension_count as usize,
            sizes: sizes64(t),
            strides: t.strides.as_ref().map(|s| s.iter().map(|&x| u64::from(x)).collect()),
            total_tensor_size_in_bytes: t.total_size,
            guaranteed_base_offset_alignment: t.alignment,
        };
        tensors.insert(name.to_string(), serde_json::to_value(desc).unwrap_or_default());
        bound.insert(
            name.to_string(),
            serde_json::json!({ "resource": resources[b.resource].name, "offset_bytes": b.offset }),
        );
    }
    DispatchReport {
        command: index,
        dispatchable: d.name.clone(),
        op: d.op.name(),
        dml_operator: d.op.dml_operator(),
        feature_level: level.to_string(),
        support_row: support_row.map(|r| r.to_string()),
        minimum_feature_level: minimum,
        valid,
        checks,
        tensors,
        bindings: bound,
        elements: element_count(&d.tensors[2]).unwrap_or(u64::MAX),
    }
}
