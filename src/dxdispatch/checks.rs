//! A model's dispatches checked before anything runs: the facts `spec::checks` needs of each
//! dispatch, gathered from the model (its descs as written, the bytes each spans and addresses,
//! the resource range bound to each), and the report's `dispatches` entries made of what it
//! finds: tensorop's checks at the level asked for, DirectML's rules for buffer tensor descs and
//! bindings, and the oldest level that accepts the dispatch.

use super::desc::{addressed_bytes, element_count, sizes64};
use super::model::{Binding, Command, Dispatchable, Model, Resource, TENSOR_NAMES};
use crate::spec::checks::{validate_dispatch, Bound, Check, Desc, Dispatch};
use crate::spec::dml::dml_name;
use crate::spec::dml::TensorDesc;
use crate::spec::level::{FeatureLevel, LevelChoice};
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

/// What the checks need to know about one dispatch: its operator, its descs as written (with
/// the bytes of their elements and the bytes they address) and the resource range bound to each.
fn facts<'m>(d: &'m Dispatchable, bindings: &[Binding; 3], resources: &'m [Resource]) -> Dispatch<'m> {
    let desc = |i: usize| {
        let t = &d.tensors[i];
        Desc {
            name: TENSOR_NAMES[i],
            dtype: t.dtype,
            sizes: &t.sizes,
            strides: t.strides.as_deref(),
            dimension_count: t.dimension_count,
            total_size: t.total_size,
            bytes: element_count(t).and_then(|n| n.checked_mul(t.dtype.size() as u64)),
            addressed: addressed_bytes(t),
        }
    };
    let bound = |b: &Binding| {
        let r = &resources[b.resource];
        Bound { resource: &r.name, size: r.size, offset: b.offset }
    };
    Dispatch { op: d.op, descs: std::array::from_fn(desc), bound: bindings.each_ref().map(bound) }
}

/// One dispatch's checks at `level` (tensorop's on A's and B's data types and sizes against the
/// support row, then DirectML's rules for the descs and the bindings), the oldest level that
/// accepts it, and its descs and bindings as the report lists them.
pub(super) fn check_dispatch(
    index: usize,
    d: &Dispatchable,
    bindings: &[Binding; 3],
    resources: &[Resource],
    level: LevelChoice,
) -> DispatchReport {
    let v = validate_dispatch(&facts(d, bindings, resources), level);
    let valid = v.valid();
    let mut tensors = serde_json::Map::new();
    let mut bound = serde_json::Map::new();
    for ((name, t), b) in TENSOR_NAMES.iter().zip(&d.tensors).zip(bindings) {
        let desc = TensorDesc {
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
        support_row: v.support_row.map(|r| r.to_string()),
        minimum_feature_level: v.minimum_level,
        valid,
        checks: v.checks,
        tensors,
        bindings: bound,
        elements: element_count(&d.tensors[2]).unwrap_or(u64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::dxdispatch::model::{BufferDesc, Init};
    use crate::op::Op;
    use crate::spec::checks::Status;

    fn tensor(sizes: Vec<u32>, strides: Option<Vec<u32>>, total_size: u64) -> BufferDesc {
        let dimension_count = sizes.len() as u32;
        BufferDesc { dtype: DType::F32, sizes, strides, dimension_count, flags: vec![], total_size, alignment: 0 }
    }

    fn resource(name: &str, size: u64) -> Resource {
        Resource { name: name.into(), dtype: DType::F32, init: Init::Bytes(vec![]), size, init_bytes: 0 }
    }

    /// A subtraction of a [2, 3] float32 array and a broadcast row (stride 0 along its first
    /// dimension), its result bound 8 bytes into its resource.
    fn model() -> (Dispatchable, [Binding; 3], [Resource; 3]) {
        let tensors =
            [tensor(vec![2, 3], None, 24), tensor(vec![2, 3], Some(vec![0, 1]), 12), tensor(vec![2, 3], None, 24)];
        let d = Dispatchable { name: "d".into(), op: Op::Sub, tensors };
        let bindings = [0, 1, 2].map(|resource| Binding { resource, offset: if resource == 2 { 8 } else { 0 } });
        (d, bindings, [resource("A", 24), resource("B", 12), resource("Out", 32)])
    }

    #[test]
    fn the_facts_are_the_descs_as_written_and_the_bound_ranges() {
        let (d, bindings, resources) = model();
        let f = facts(&d, &bindings, &resources);
        assert_eq!(f.op, Op::Sub);
        assert_eq!(f.descs.map(|t| t.name), TENSOR_NAMES);
        let b = Desc {
            name: "BTensor",
            dtype: DType::F32,
            sizes: &[2, 3],
            strides: Some(&[0, 1]),
            dimension_count: 2,
            total_size: 12,
            bytes: Some(24),
            addressed: 12,
        };
        assert_eq!(f.descs[1], b);
        assert_eq!((f.descs[0].bytes, f.descs[0].addressed), (Some(24), 24));
        assert_eq!(f.bound[2], Bound { resource: "Out", size: 32, offset: 8 });
        let mut huge = d;
        huge.tensors[2] = tensor(vec![u32::MAX; 3], None, 0);
        assert_eq!(facts(&huge, &bindings, &resources).descs[2].bytes, None, "past 2^64 bytes");
    }

    /// The report lists what `spec::checks` found: the checks, the support row and the oldest
    /// level that accepts the dispatch.
    #[test]
    fn the_report_holds_the_verdicts() {
        let (d, bindings, resources) = model();
        let level = "2_1".parse().unwrap();
        let report = check_dispatch(5, &d, &bindings, &resources, level);
        let v = validate_dispatch(&facts(&d, &bindings, &resources), level);
        let key = |c: &Check| (c.id, c.status, c.message.clone());
        assert_eq!(report.checks.iter().map(key).collect::<Vec<_>>(), v.checks.iter().map(key).collect::<Vec<_>>());
        let failed: Vec<_> = report.checks.iter().filter(|c| c.status == Status::Fail).map(|c| c.id.name()).collect();
        assert_eq!(failed, ["dimension_count"], "rank 2 as written, at a rank-4 level");
        assert!(!report.valid);
        assert_eq!((report.command, report.support_row.as_deref()), (5, Some("2_1")));
        assert_eq!(report.minimum_feature_level.map(|l| l.to_string()).as_deref(), Some("3_0"));
        assert!(check_dispatch(5, &d, &bindings, &resources, "3_0".parse().unwrap()).valid);
    }
}
