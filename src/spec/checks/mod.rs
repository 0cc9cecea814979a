//! The constraint checks, in the documented order (`docs/cli.md`, "Checks and the support
//! matrix"), and what they record: the public types ([`Check`], [`Validation`]) and [`validate`].
//! `tensorop run` checks a DxDispatch model's dispatches with the same checks and three of its
//! own on the descs and bindings (`dispatch`, [`validate_dispatch`], from the facts in
//! [`Dispatch`]).
//!
//! Each check is a pure function of the operator, the level, its support row and the inputs
//! (`rules`), and returns its verdict (one enum per check, gathered in [`Verdict`]): the facts it
//! established (the dtype and the row applied, the rank and the ranks allowed, what would work
//! instead). Pass, fail and skip follow from the verdict ([`Verdict::status`]); the message a
//! user reads is its `Display`, and those impls, together in `wording`, hold all the wording.
//!
//! A failing check says what would work, from the support rows (`matrix::ROWS`): the oldest
//! level whose row accepts the dtype or the rank, else `--feature-level none` if it does, else how
//! to change the inputs.
//!
//! Every check is evaluated and recorded (a check that cannot be evaluated because an earlier
//! one failed is `skip` with the reason), so one run shows every problem. The minimum feature
//! level (`minimum`) reruns the checks that depend on the level at every level and reads only
//! their statuses; no message is rendered for it.

mod dispatch;
mod minimum;
mod rules;
mod verdict;
mod wording;

use crate::dtype::DType;
use crate::npy::header::FileDType;
use crate::op::Op;
use crate::spec::level::{FeatureLevel, LevelChoice};
use minimum::minimum_level;
use rules::{level_checks, same_datatype_check, shape_check, support_row};
use serde::Serialize;
use verdict::Verdict;

pub use dispatch::validate_dispatch;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Skip,
}

/// Which check: serialised as its id (`operator_available`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckId {
    OperatorAvailable,
    DatatypeSupported,
    SameDatatype,
    Broadcastable,
    SameSizes,
    DimensionCount,
    NonzeroSizes,
    ElementCount,
    /// `tensorop run` only: the output desc has A's data type and sizes.
    OutputDesc,
    /// `tensorop run` only: each desc's counts and `TotalTensorSizeInBytes` agree with its sizes.
    TensorDesc,
    /// `tensorop run` only: each bound resource holds its tensor.
    BindingSize,
}

impl CheckId {
    /// The id as the report and messages spell it.
    pub fn name(self) -> &'static str {
        match self {
            CheckId::OperatorAvailable => "operator_available",
            CheckId::DatatypeSupported => "datatype_supported",
            CheckId::SameDatatype => "same_datatype",
            CheckId::Broadcastable => "broadcastable",
            CheckId::SameSizes => "same_sizes",
            CheckId::DimensionCount => "dimension_count",
            CheckId::NonzeroSizes => "nonzero_sizes",
            CheckId::ElementCount => "element_count",
            CheckId::OutputDesc => "output_desc",
            CheckId::TensorDesc => "tensor_desc",
            CheckId::BindingSize => "binding_size",
        }
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One recorded check: a verdict's id, status and message, as the report lists it.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub id: CheckId,
    pub status: Status,
    pub message: String,
}

/// `--broadcast`: NumPy broadcasting or identical shapes only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BroadcastMode {
    Numpy,
    None,
}

impl BroadcastMode {
    pub fn name(self) -> &'static str {
        match self {
            BroadcastMode::Numpy => "numpy",
            BroadcastMode::None => "none",
        }
    }
}

/// What the checks need to know about an input.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec<'a> {
    /// `A (a.npy)`.
    pub name: String,
    pub dtype: &'a FileDType,
    pub shape: &'a [u64],
}

/// A buffer tensor desc of a DxDispatch model (`tensorop run`), as its checks see it: the desc
/// as written and what it addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Desc<'a> {
    /// `ATensor`, `BTensor` or `OutputTensor`.
    pub name: &'a str,
    pub dtype: DType,
    pub sizes: &'a [u32],
    /// `None`: packed.
    pub strides: Option<&'a [u32]>,
    pub dimension_count: u32,
    /// `TotalTensorSizeInBytes`.
    pub total_size: u64,
    /// The bytes of its elements; `None` past 2^64.
    pub bytes: Option<u64>,
    /// The bytes from its first to one past its last addressed element
    /// (`DMLCalcBufferTensorSize`).
    pub addressed: u64,
}

/// What a desc of a DxDispatch dispatch is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound<'a> {
    /// The resource's name.
    pub resource: &'a str,
    /// The resource's `sizeInBytes`.
    pub size: u64,
    /// The byte offset the binding starts at.
    pub offset: u64,
}

/// What the checks need to know about a DxDispatch dispatch: its operator, its three descs
/// (`ATensor`, `BTensor`, `OutputTensor`) and what each is bound to, in the same order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch<'a> {
    pub op: Op,
    pub descs: [Desc<'a>; 3],
    pub bound: [Bound<'a>; 3],
}

/// All checks and what they established.
#[derive(Debug, Clone)]
pub struct Validation {
    pub checks: Vec<Check>,
    pub support_row: Option<FeatureLevel>,
    /// The output shape, when the shapes are compatible.
    pub out_shape: Option<Vec<u64>>,
    /// The oldest DirectML level at which every check passes for these inputs, whatever level
    /// was asked for; `None` when no level does.
    pub minimum_level: Option<FeatureLevel>,
    /// Whether every check passes with `--feature-level none`.
    pub none_accepts: bool,
}

impl Validation {
    pub fn valid(&self) -> bool {
        self.checks.iter().all(|c| c.status != Status::Fail)
    }

    /// The failed checks' messages, one per line, and last, what would work.
    pub fn failure_summary(&self) -> String {
        let mut lines: Vec<String> = self
            .checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| format!("{}: {}", c.id, c.message))
            .collect();
        lines.push(self.hint());
        lines.join("\n")
    }

    /// What would work for these inputs: the oldest level that passes, or that none does and
    /// whether `--feature-level none` accepts them.
    pub fn hint(&self) -> String {
        match (self.minimum_level, self.none_accepts) {
            (Some(l), _) => format!("these inputs pass at feature level {l} and newer: use --feature-level {l}"),
            (None, true) => ONLY_NONE_HINT.into(),
            (None, false) => {
                "no DirectML feature level accepts these inputs, and neither does --feature-level none".into()
            }
        }
    }
}

/// [`Validation::hint`] where no DirectML level accepts the inputs but `--feature-level none`
/// does.
pub const ONLY_NONE_HINT: &str =
    "no DirectML feature level accepts these inputs; --feature-level none does: use --feature-level none";

/// The largest output element count DirectML buffer tensors allow.
pub const MAX_ELEMENTS: u64 = u32::MAX as u64;

/// Runs every check for `op` on inputs `a` and `b`, in the documented order.
///
/// The checks that do not depend on the level (`same_datatype`, the shapes) run once; the
/// others run at the level asked for, and at every DirectML level and `none` for the minimum
/// level, where only their statuses are read.
pub fn validate(op: Op, level: LevelChoice, mode: BroadcastMode, a: &TensorSpec, b: &TensorSpec) -> Validation {
    let shapes = shape_check(mode, a, b);
    let out = shapes.out();
    let shared = [Verdict::SameDatatype(same_datatype_check(op, a, b)), Verdict::Shapes(shapes.clone())];
    let (minimum_level, none_accepts) = minimum_level(&shared, |l| level_checks(op, l, a, b, out, None));
    let [operator, datatype, rank, sizes, elements] = level_checks(op, level, a, b, out, None);
    let [same, shapes] = &shared;
    let checks = [&operator, &datatype, same, shapes, &rank, &sizes, &elements].map(Check::from).to_vec();
    let support_row = support_row(op, level).map(|r| r.since);
    Validation { checks, support_row, out_shape: out.map(<[u64]>::to_vec), minimum_level, none_accepts }
}

#[cfg(test)]
mod tests {
    //! The fixtures every test module of the checks shares, and the tests of what `validate`
    //! records.

    pub(super) use super::verdict::*;
    use super::{level_checks, same_datatype_check, shape_check};
    pub(super) use super::{validate, BroadcastMode, CheckId, Desc, Status, TensorSpec, Validation};
    pub(super) use crate::dtype::DType;
    pub(super) use crate::npy::header::FileDType;
    pub(super) use crate::op::Op;
    pub(super) use crate::spec::level::{FeatureLevel, LevelChoice};
    pub(super) use crate::spec::matrix::{row_for, SupportRow, NONE_RANKS, ROWS};

    pub(super) type Input = (FileDType, Vec<u64>);

    pub(super) fn run(op: Op, level: &str, mode: BroadcastMode, a: Input, b: Input) -> Validation {
        let sa = TensorSpec { name: "A (a.npy)".into(), dtype: &a.0, shape: &a.1 };
        let sb = TensorSpec { name: "B (b.npy)".into(), dtype: &b.0, shape: &b.1 };
        validate(op, level.parse().unwrap(), mode, &sa, &sb)
    }

    pub(super) fn of(d: DType, shape: &[u64]) -> Input {
        (FileDType::Numeric(d), shape.to_vec())
    }

    pub(super) fn f32s(shape: &[u64]) -> Input {
        of(DType::F32, shape)
    }

    pub(super) fn other(name: &str) -> Input {
        (FileDType::Other(name.into()), vec![2])
    }

    pub(super) fn status(v: &Validation, id: &str) -> Status {
        v.checks.iter().find(|c| c.id.name() == id).unwrap().status
    }

    /// A DirectML level by name (`3_1`).
    pub(super) fn fl(level: &str) -> FeatureLevel {
        match level.parse() {
            Ok(LevelChoice::Dml(l)) => l,
            other => panic!("{level}: {other:?}"),
        }
    }

    pub(super) fn row(op: Op, level: &str) -> &'static SupportRow {
        row_for(op, fl(level)).unwrap()
    }

    /// The seven verdicts on `a` and `b`, in the documented order, as `validate` gathers them.
    /// The inputs are leaked so that the verdicts, which borrow them, can be returned.
    pub(super) fn verdicts(op: Op, level: &str, mode: BroadcastMode, a: Input, b: Input) -> Vec<Verdict<'static>> {
        let spec = |name: &str, t: Input| -> &'static TensorSpec<'static> {
            let t: &'static Input = Box::leak(Box::new(t));
            Box::leak(Box::new(TensorSpec { name: name.into(), dtype: &t.0, shape: &t.1 }))
        };
        let (a, b) = (spec("A (a.npy)", a), spec("B (b.npy)", b));
        let shapes: &'static Shapes = Box::leak(Box::new(shape_check(mode, a, b)));
        let [operator, datatype, rank, sizes, elements] =
            level_checks(op, level.parse().unwrap(), a, b, shapes.out(), None);
        let same = Verdict::SameDatatype(same_datatype_check(op, a, b));
        vec![operator, datatype, same, Verdict::Shapes(shapes.clone()), rank, sizes, elements]
    }

    /// The verdict of check `id` for `op` at `level` (`--broadcast numpy`).
    pub(super) fn verdict(id: CheckId, op: Op, level: &str, a: Input, b: Input) -> Verdict<'static> {
        verdicts(op, level, BroadcastMode::Numpy, a, b).into_iter().find(|v| v.id() == id).unwrap()
    }

    pub(super) fn range(op: Op, level: &str, ranks: (usize, usize)) -> RankRange {
        RankRange { op, level: level.parse().unwrap(), ranks }
    }

    /// A packed float32 desc of a DxDispatch model, consistent with its `sizes`.
    pub(super) fn desc(name: &'static str, sizes: &'static [u32]) -> Desc<'static> {
        let bytes = sizes.iter().map(|&n| u64::from(n)).product::<u64>() * 4;
        let (dimension_count, total_size) = (sizes.len() as u32, bytes);
        Desc {
            name,
            dtype: DType::F32,
            sizes,
            strides: None,
            dimension_count,
            total_size,
            bytes: Some(bytes),
            addressed: bytes,
        }
    }

    const IDS: [&str; 7] = [
        "operator_available",
        "datatype_supported",
        "same_datatype",
        "broadcastable",
        "dimension_count",
        "nonzero_sizes",
        "element_count",
    ];

    #[test]
    fn a_valid_run_passes_all_seven_in_order() {
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[8, 1, 6, 1]), f32s(&[7, 1, 5]));
        assert_eq!(v.checks.iter().map(|c| c.id.name()).collect::<Vec<_>>(), IDS);
        assert!(v.valid());
        assert_eq!(v.out_shape, Some(vec![8, 7, 6, 5]));
        assert_eq!(v.support_row.unwrap().to_string(), "5_1");
    }

    /// `validate` records each verdict as it is: its check, its status, its message.
    #[test]
    fn validate_records_the_verdicts() {
        let np = BroadcastMode::Numpy;
        for (op, level, mode, a, b) in [
            (Op::Sub, "latest", np, f32s(&[2, 3]), f32s(&[3])),
            (Op::SqDiff, "3_0", np, f32s(&[2, 3]), of(DType::F16, &[4])),
            (Op::Sub, "2_1", np, of(DType::I8, &[1; 9]), f32s(&[0])),
            (Op::Sub, "none", BroadcastMode::None, other("bool"), f32s(&[3])),
            (Op::Sub, "1_0", BroadcastMode::None, f32s(&[]), f32s(&[])),
        ] {
            let got = run(op, level, mode, a.clone(), b.clone()).checks;
            let got: Vec<_> = got.into_iter().map(|c| (c.id, c.status, c.message)).collect();
            let want: Vec<_> =
                verdicts(op, level, mode, a, b).iter().map(|v| (v.id(), v.status(), v.to_string())).collect();
            assert_eq!(got, want, "{op:?} at {level}");
        }
    }

    /// One run records every failure, and a check that an earlier failure leaves without input
    /// is skipped, not failed.
    #[test]
    fn several_failures_are_all_recorded() {
        let v = run(Op::SqDiff, "3_0", BroadcastMode::Numpy, f32s(&[2, 3]), of(DType::F16, &[4]));
        let statuses: Vec<_> = v.checks.iter().map(|c| (c.id.name(), c.status)).collect();
        let (pass, fail, skip) = (Status::Pass, Status::Fail, Status::Skip);
        let want = [fail, skip, fail, fail, skip, pass, skip];
        assert_eq!(statuses, IDS.into_iter().zip(want).collect::<Vec<_>>());
        // Shapes that do not broadcast: the rank and the sizes are still checked, on the inputs.
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[2, 3]), f32s(&[4]));
        let statuses = ["broadcastable", "dimension_count", "nonzero_sizes", "element_count"].map(|id| status(&v, id));
        assert_eq!(statuses, [fail, pass, pass, skip]);
    }

    #[test]
    fn level_none_skips_three_checks() {
        let (pass, skip) = (Status::Pass, Status::Skip);
        // Even an output above 2^32 - 1 elements, of float64.
        for (a, b) in [(f32s(&[2, 3]), f32s(&[3])), (of(DType::F64, &[65536, 1]), of(DType::F64, &[1, 65537]))] {
            let v = run(Op::SqDiff, "none", BroadcastMode::Numpy, a, b);
            assert_eq!(
                v.checks.iter().map(|c| c.status).collect::<Vec<_>>(),
                [skip, pass, pass, pass, pass, skip, skip]
            );
            assert!(v.valid() && v.support_row.is_none());
        }
    }

    /// What a refused run prints: one line per failed check, named as in the report, and no
    /// line for a check that passed.
    #[test]
    fn failure_summary_names_the_failed_checks_only() {
        let v = run(Op::Sub, "4_1", BroadcastMode::Numpy, of(DType::I8, &[2]), of(DType::I8, &[2, 2]));
        let failed: Vec<_> = v.checks.iter().filter(|c| c.status == Status::Fail).collect();
        assert_eq!(failed.len(), 1, "{:?}", v.checks);
        let summary = v.failure_summary();
        let lines: Vec<_> = summary.lines().collect();
        assert_eq!(lines.len(), 2, "{summary}");
        assert_eq!(lines[0], format!("datatype_supported: {}", failed[0].message));
        assert_eq!(lines[1], "these inputs pass at feature level 5_1 and newer: use --feature-level 5_1");
    }

    #[test]
    fn every_failure_ends_with_what_would_work() {
        let np = BroadcastMode::Numpy;
        let last = |v: Validation| v.failure_summary().lines().last().unwrap_or_default().to_string();
        assert_eq!(
            last(run(Op::SqDiff, "3_0", np, f32s(&[2]), f32s(&[2]))),
            "these inputs pass at feature level 3_1 and newer: use --feature-level 3_1"
        );
        assert!(last(run(Op::Sub, "latest", np, of(DType::F64, &[2]), of(DType::F64, &[2])))
            .ends_with("--feature-level none does: use --feature-level none"));
        assert!(last(run(Op::Sub, "none", np, f32s(&[2]), f32s(&[3]))).ends_with("neither does --feature-level none"));
    }
}
