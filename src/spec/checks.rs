//! The constraint checks, in the documented order (`docs/cli.md`, "Checks and the support
//! matrix"). Every check is evaluated and recorded (a check that cannot be evaluated because an
//! earlier one failed is `skip` with the reason), so one run shows every problem. Messages name the input, the rule and the fix.

use crate::npy::header::FileDType;
use crate::op::Op;
use crate::shape::{broadcast, element_count, fmt_shape};
use crate::spec::level::{FeatureLevel, LevelChoice};
use crate::spec::matrix::{introduced, row_for, SupportRow, NONE_RANKS, ROWS};
use serde::Serialize;

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
        }
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One recorded check.
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
#[derive(Debug, Clone)]
pub struct TensorSpec<'a> {
    /// `A (a.npy)`.
    pub name: String,
    pub dtype: &'a FileDType,
    pub shape: &'a [u64],
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
            (None, true) => "no DirectML feature level accepts these inputs; --feature-level none does: use \
                             --feature-level none"
                .into(),
            (None, false) => {
                "no DirectML feature level accepts these inputs, and neither does --feature-level none".into()
            }
        }
    }
}

/// The largest output element count DirectML buffer tensors allow.
pub const MAX_ELEMENTS: u64 = u32::MAX as u64;

/// Runs every check for `op` on inputs `a` and `b`, in the documented order.
///
/// Each check is a pure function of the operator, the level, its support row and the inputs, so
/// the same functions can be rerun at other levels.
pub fn validate(op: Op, level: LevelChoice, mode: BroadcastMode, a: &TensorSpec, b: &TensorSpec) -> Validation {
    let passes = |l: LevelChoice| checks_at(op, l, mode, a, b).0.iter().all(|c| c.status != Status::Fail);
    let minimum_level = FeatureLevel::ALL.into_iter().find(|&l| passes(LevelChoice::Dml(l)));
    let none_accepts = passes(LevelChoice::None);
    let (checks, support_row, out_shape) = checks_at(op, level, mode, a, b);
    Validation { checks, support_row, out_shape, minimum_level, none_accepts }
}

/// The seven checks at `level`, the support row applied and the output shape.
fn checks_at(
    op: Op,
    level: LevelChoice,
    mode: BroadcastMode,
    a: &TensorSpec,
    b: &TensorSpec,
) -> (Vec<Check>, Option<FeatureLevel>, Option<Vec<u64>>) {
    let row = support_row(op, level);
    let (shape, out_shape) = shape_check(mode, a, b);
    let out = out_shape.as_deref();
    let checks = vec![
        operator_check(op, level, row),
        datatype_check(op, level, row, a),
        same_datatype_check(op, a, b),
        shape,
        rank_check(op, level, row, a, b, out),
        nonzero_check(level, a, b),
        element_count_check(level, out),
    ];
    (checks, row.map(|r| r.since), out_shape)
}

impl Check {
    /// A recorded check (a shorthand for the per-check functions below).
    fn new(id: CheckId, status: Status, message: String) -> Check {
        Check { id, status, message }
    }
}

/// The support row `op` uses at `level`: `None` under `--feature-level none` or when the level
/// predates the operator.
fn support_row(op: Op, level: LevelChoice) -> Option<&'static SupportRow> {
    match level {
        LevelChoice::Dml(l) => row_for(op, l),
        LevelChoice::None => None,
    }
}

/// `operator_available`: the level has a support row for `op`.
fn operator_check(op: Op, level: LevelChoice, row: Option<&SupportRow>) -> Check {
    let id = CheckId::OperatorAvailable;
    let opname = format!("{} ({})", op.name(), op.dml_operator());
    match level {
        LevelChoice::None => {
            Check::new(id, Status::Skip, "--feature-level none: no DirectML operator requirement".into())
        }
        LevelChoice::Dml(l) if row.is_some() => Check::new(
            id,
            Status::Pass,
            format!("{opname} is available at feature level {l} (since {})", introduced(op)),
        ),
        LevelChoice::Dml(l) => Check::new(
            id,
            Status::Fail,
            format!(
                "{opname} needs feature level {} or newer; you asked for {l}. Use --feature-level {} \
                 or newer, or --feature-level none",
                introduced(op),
                introduced(op)
            ),
        ),
    }
}

/// `datatype_supported`: A's dtype is numeric and, at a DirectML level, in the support row.
fn datatype_check(op: Op, level: LevelChoice, row: Option<&SupportRow>, a: &TensorSpec) -> Check {
    let id = CheckId::DatatypeSupported;
    let dt = match a.dtype {
        FileDType::Numeric(d) => *d,
        FileDType::Other(name) => {
            return Check::new(
                id,
                Status::Fail,
                format!(
                    "{} has dtype {name}, which tensorop does not compute on; convert it to one of the \
                     numeric dtypes (float16/32/64, int8-64, uint8-64)",
                    a.name
                ),
            )
        }
    };
    let LevelChoice::Dml(l) = level else {
        return Check::new(
            id,
            Status::Pass,
            format!("{} is {dt}; --feature-level none accepts every numeric dtype", a.name),
        );
    };
    let Some(row) = row else {
        return Check::new(id, Status::Skip, format!("skipped: {} has no support row at feature level {l}", op.name()));
    };
    let list = row.dtypes.iter().map(|d| d.name()).collect::<Vec<_>>().join(" ");
    if row.dtypes.contains(&dt) {
        return Check::new(
            id,
            Status::Pass,
            format!(
                "{} is {dt}; {} at feature level {l} (support row {}) accepts {list}",
                a.name,
                op.name(),
                row.since
            ),
        );
    }
    let newer = ROWS.iter().filter(|r| r.op == op && r.dtypes.contains(&dt)).map(|r| r.since).min();
    let fix = match newer {
        Some(n) => format!("use --feature-level {n} or newer, or convert the inputs"),
        None => {
            format!("DirectML's {} never supports {dt}: convert the inputs, or use --feature-level none", op.name())
        }
    };
    Check::new(
        id,
        Status::Fail,
        format!(
            "{} is {dt}, which {} at feature level {l} (support row {}) does not support; it accepts {list}. {fix}",
            a.name,
            op.name(),
            row.since
        ),
    )
}

/// `same_datatype`: A and B have the same dtype (`op` does not promote).
fn same_datatype_check(op: Op, a: &TensorSpec, b: &TensorSpec) -> Check {
    let id = CheckId::SameDatatype;
    if a.dtype == b.dtype {
        return Check::new(id, Status::Pass, format!("A and B are both {}", a.dtype.name()));
    }
    Check::new(
        id,
        Status::Fail,
        format!(
            "{} is {} but {} is {}; {} does not promote types: convert one input so both have \
             the same dtype (e.g. numpy's b.astype('{}'))",
            a.name,
            a.dtype.name(),
            b.name,
            b.dtype.name(),
            op.name(),
            a.dtype.name()
        ),
    )
}

/// `broadcastable` (`--broadcast numpy`) or `same_sizes` (`--broadcast none`), with the output
/// shape when the shapes are compatible.
fn shape_check(mode: BroadcastMode, a: &TensorSpec, b: &TensorSpec) -> (Check, Option<Vec<u64>>) {
    let (sa, sb) = (fmt_shape(a.shape), fmt_shape(b.shape));
    match mode {
        BroadcastMode::Numpy => match broadcast(a.shape, b.shape) {
            Ok(out) => {
                let message = format!("shapes {sa} and {sb} broadcast to {}", fmt_shape(&out));
                (Check::new(CheckId::Broadcastable, Status::Pass, message), Some(out))
            }
            Err(e) => {
                let message = format!(
                    "shapes {sa} and {sb} do not broadcast: dimension {} from the end is {} in A and {} \
                     in B; sizes must be equal or one of them 1 (reshape an input, e.g. add an axis)",
                    e.from_end, e.a, e.b
                );
                (Check::new(CheckId::Broadcastable, Status::Fail, message), None)
            }
        },
        BroadcastMode::None if a.shape == b.shape => {
            (Check::new(CheckId::SameSizes, Status::Pass, format!("both shapes are {sa}")), Some(a.shape.to_vec()))
        }
        BroadcastMode::None => {
            let message = format!(
                "--broadcast none needs identical shapes; A is {sa} and B is {sb}. Use --broadcast numpy to broadcast"
            );
            (Check::new(CheckId::SameSizes, Status::Fail, message), None)
        }
    }
}

/// `dimension_count`: the output's rank (or, without an output shape, the larger input rank)
/// is within the level's range; shorter shapes are padded with leading 1s.
fn rank_check(
    op: Op,
    level: LevelChoice,
    row: Option<&SupportRow>,
    a: &TensorSpec,
    b: &TensorSpec,
    out: Option<&[u64]>,
) -> Check {
    let id = CheckId::DimensionCount;
    let rank = out.map_or(a.shape.len().max(b.shape.len()), <[u64]>::len);
    let (lo, hi, at) = match (level, row) {
        (LevelChoice::None, _) => (NONE_RANKS.0, NONE_RANKS.1, "--feature-level none".to_string()),
        (LevelChoice::Dml(l), Some(r)) => (r.ranks.0, r.ranks.1, format!("{} at feature level {l}", op.name())),
        (LevelChoice::Dml(l), None) => {
            return Check::new(
                id,
                Status::Skip,
                format!("skipped: {} has no support row at feature level {l}", op.name()),
            )
        }
    };
    // DirectML has no rank-0 tensors: a scalar is a 1-element tensor of rank 1.
    let effective = if level == LevelChoice::None { rank } else { rank.max(1) };
    let range = if lo == hi { format!("exactly {lo}") } else { format!("{lo} to {hi}") };
    if effective > hi {
        let fix = if hi < 8 {
            "use --feature-level 3_0 or newer (ranks 1-8), or --feature-level none"
        } else {
            "use --feature-level none (ranks 0-32), or reshape the inputs"
        };
        return Check::new(
            id,
            Status::Fail,
            format!("the output has rank {rank}, but {at} supports {range} dimensions; {fix}"),
        );
    }
    if effective < lo {
        let mut padded = vec![1u64; lo - rank.min(lo)];
        padded.extend_from_slice(out.unwrap_or(&[]));
        let shown = if out.is_some() { format!(" ({})", fmt_shape(&padded)) } else { String::new() };
        return Check::new(
            id,
            Status::Pass,
            format!("the output has rank {rank}; padded with leading 1s to rank {lo}{shown}, as {at} supports {range} dimensions"),
        );
    }
    let note = if rank == 0 && level != LevelChoice::None { " (rank 0 counts as rank 1)" } else { "" };
    Check::new(id, Status::Pass, format!("the output has rank {rank}{note}; {at} supports {range} dimensions"))
}

/// `nonzero_sizes`: at a DirectML level, neither input has a dimension of size 0.
fn nonzero_check(level: LevelChoice, a: &TensorSpec, b: &TensorSpec) -> Check {
    let id = CheckId::NonzeroSizes;
    if level == LevelChoice::None {
        return Check::new(id, Status::Skip, "--feature-level none: empty tensors are allowed".into());
    }
    match [a, b].into_iter().find(|t| t.shape.contains(&0)) {
        Some(t) => Check::new(
            id,
            Status::Fail,
            format!(
                "{} has shape {} with a dimension of size 0; DirectML rejects empty tensors. Use \
                 --feature-level none to allow them",
                t.name,
                fmt_shape(t.shape)
            ),
        ),
        None => Check::new(id, Status::Pass, "no dimension is 0".into()),
    }
}

/// `element_count`: at a DirectML level, the output has at most [`MAX_ELEMENTS`] elements.
fn element_count_check(level: LevelChoice, out: Option<&[u64]>) -> Check {
    let id = CheckId::ElementCount;
    let out = match (level, out) {
        (LevelChoice::None, _) => {
            return Check::new(id, Status::Skip, "--feature-level none: no DirectML element limit".into())
        }
        (LevelChoice::Dml(_), None) => {
            return Check::new(id, Status::Skip, "skipped: the shapes have no common output shape".into())
        }
        (LevelChoice::Dml(_), Some(out)) => out,
    };
    match element_count(out) {
        Some(n) if n <= MAX_ELEMENTS => {
            Check::new(id, Status::Pass, format!("the output has {n} elements (limit {MAX_ELEMENTS})"))
        }
        n => Check::new(
            id,
            Status::Fail,
            format!(
                "the output {} has {} elements, more than DirectML's limit of {MAX_ELEMENTS} (2^32 - 1); \
                 split the work or use --feature-level none",
                fmt_shape(out),
                n.map_or("over 2^64".into(), |n| n.to_string())
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    fn run(op: Op, level: &str, mode: BroadcastMode, a: (FileDType, Vec<u64>), b: (FileDType, Vec<u64>)) -> Validation {
        let sa = TensorSpec { name: "A (a.npy)".into(), dtype: &a.0, shape: &a.1 };
        let sb = TensorSpec { name: "B (b.npy)".into(), dtype: &b.0, shape: &b.1 };
        validate(op, level.parse().unwrap(), mode, &sa, &sb)
    }

    fn f32s(shape: &[u64]) -> (FileDType, Vec<u64>) {
        (FileDType::Numeric(DType::F32), shape.to_vec())
    }

    fn status(v: &Validation, id: &str) -> Status {
        v.checks.iter().find(|c| c.id.name() == id).unwrap().status
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

    #[test]
    fn sqdiff_before_3_1_fails_operator_available() {
        let v = run(Op::SqDiff, "3_0", BroadcastMode::Numpy, f32s(&[2]), f32s(&[2]));
        assert_eq!(status(&v, "operator_available"), Status::Fail);
        assert_eq!(
            v.checks[0].message,
            "sqdiff (DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE) needs feature level 3_1 or newer; you \
             asked for 3_0. Use --feature-level 3_1 or newer, or --feature-level none"
        );
        assert_eq!(status(&v, "datatype_supported"), Status::Skip);
        assert_eq!(v.support_row, None);
        assert!(!v.valid());
    }

    #[test]
    fn every_dtype_at_every_level_follows_the_rows() {
        for level in crate::spec::level::FeatureLevel::ALL {
            for op in Op::ALL {
                for d in DType::ALL {
                    let t = (FileDType::Numeric(d), vec![1, 2, 3, 4]);
                    let v = run(op, &level.to_string(), BroadcastMode::Numpy, t.clone(), t);
                    let want = match row_for(op, level) {
                        None => Status::Skip,
                        Some(r) if r.dtypes.contains(&d) => Status::Pass,
                        Some(_) => Status::Fail,
                    };
                    assert_eq!(status(&v, "datatype_supported"), want, "{op:?} {d} at {level}");
                }
            }
        }
    }

    #[test]
    fn datatype_failures_point_to_a_fix() {
        let i8s = |s: &[u64]| (FileDType::Numeric(DType::I8), s.to_vec());
        let v = run(Op::Sub, "4_1", BroadcastMode::Numpy, i8s(&[2]), i8s(&[2]));
        assert!(v.checks[1].message.contains("--feature-level 5_1"), "{}", v.checks[1].message);
        let f64s = (FileDType::Numeric(DType::F64), vec![2]);
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f64s.clone(), f64s.clone());
        assert_eq!(status(&v, "datatype_supported"), Status::Fail);
        assert!(v.checks[1].message.contains("--feature-level none"));
        let v = run(Op::Sub, "none", BroadcastMode::Numpy, f64s.clone(), f64s);
        assert!(v.valid());
        let b = (FileDType::Other("bool".into()), vec![2]);
        let v = run(Op::Sub, "none", BroadcastMode::Numpy, b.clone(), b);
        assert_eq!(status(&v, "datatype_supported"), Status::Fail);
    }

    #[test]
    fn mismatched_dtypes_and_shapes_fail_their_checks() {
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[2, 3]), (FileDType::Numeric(DType::I32), vec![4]));
        assert_eq!(status(&v, "same_datatype"), Status::Fail);
        assert_eq!(status(&v, "broadcastable"), Status::Fail);
        assert_eq!(status(&v, "element_count"), Status::Skip);
        assert!(v.checks[3].message.contains("dimension 1 from the end is 3 in A and 4 in B"));

        let v = run(Op::Sub, "latest", BroadcastMode::None, f32s(&[2, 3]), f32s(&[3]));
        assert_eq!(v.checks[3].id, CheckId::SameSizes);
        assert_eq!(status(&v, "same_sizes"), Status::Fail);
        let v = run(Op::Sub, "latest", BroadcastMode::None, f32s(&[2, 3]), f32s(&[2, 3]));
        assert!(v.valid());
    }

    #[test]
    fn rank_four_levels_pad_and_refuse() {
        let v = run(Op::Sub, "2_1", BroadcastMode::Numpy, f32s(&[2, 3]), f32s(&[3]));
        assert_eq!(status(&v, "dimension_count"), Status::Pass);
        assert!(
            v.checks[4].message.contains("padded with leading 1s to rank 4 ([1, 1, 2, 3])"),
            "{}",
            v.checks[4].message
        );
        let v = run(Op::Sub, "2_1", BroadcastMode::Numpy, f32s(&[1, 2, 3, 4, 5]), f32s(&[5]));
        assert_eq!(status(&v, "dimension_count"), Status::Fail);
        assert!(v.checks[4].message.contains("3_0"));
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[1; 9]), f32s(&[1]));
        assert_eq!(status(&v, "dimension_count"), Status::Fail);
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[1; 8]), f32s(&[1]));
        assert_eq!(status(&v, "dimension_count"), Status::Pass);
        // rank 0 counts as rank 1 under DirectML; padded to 4 at 1_0.
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[]), f32s(&[]));
        assert!(v.valid());
        let v = run(Op::Sub, "1_0", BroadcastMode::Numpy, f32s(&[]), f32s(&[]));
        assert!(v.valid() && v.checks[4].message.contains("rank 4"));
        let v = run(Op::Sub, "none", BroadcastMode::Numpy, f32s(&[1; 33]), f32s(&[1]));
        assert_eq!(status(&v, "dimension_count"), Status::Fail);
        let v = run(Op::Sub, "none", BroadcastMode::Numpy, f32s(&[1; 32]), f32s(&[]));
        assert!(v.valid());
    }

    #[test]
    fn rank_messages_say_what_applies() {
        let message = |level: &str, rank: usize| {
            let v = run(Op::Sub, level, BroadcastMode::Numpy, f32s(&vec![1; rank]), f32s(&[]));
            v.checks[4].message.clone()
        };
        // Past rank 8 no level helps: only `none` does.
        assert_eq!(
            message("6_4", 9),
            "the output has rank 9, but sub at feature level 6_4 supports 1 to 8 dimensions; use \
             --feature-level none (ranks 0-32), or reshape the inputs"
        );
        // Exactly the level's rank: nothing padded.
        assert_eq!(message("2_1", 4), "the output has rank 4; sub at feature level 2_1 supports exactly 4 dimensions");
        // Rank 0 counts as rank 1 at a DirectML level only.
        assert_eq!(
            message("6_4", 0),
            "the output has rank 0 (rank 0 counts as rank 1); sub at feature level 6_4 supports 1 to 8 dimensions"
        );
        assert_eq!(message("6_4", 1), "the output has rank 1; sub at feature level 6_4 supports 1 to 8 dimensions");
        assert_eq!(message("none", 0), "the output has rank 0; --feature-level none supports 0 to 32 dimensions");
    }

    #[test]
    fn empty_and_huge_tensors() {
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[3, 0]), f32s(&[1]));
        assert_eq!(status(&v, "nonzero_sizes"), Status::Fail);
        let v = run(Op::Sub, "none", BroadcastMode::Numpy, f32s(&[3, 0]), f32s(&[1]));
        assert!(v.valid());
        assert_eq!(status(&v, "nonzero_sizes"), Status::Skip);
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[65536, 1]), f32s(&[65536]));
        assert_eq!(status(&v, "element_count"), Status::Fail);
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[65535, 1]), f32s(&[65537]));
        assert_eq!(status(&v, "element_count"), Status::Pass);
    }

    /// The minimum level of `op` on `a` and `b`, asked at `level` (it must not depend on it),
    /// and whether `--feature-level none` accepts them.
    fn minimum(
        op: Op,
        mode: BroadcastMode,
        a: (FileDType, Vec<u64>),
        b: (FileDType, Vec<u64>),
    ) -> (Option<String>, bool) {
        let at: Vec<_> =
            ["1_0", "4_1", "latest", "none"].iter().map(|l| run(op, l, mode, a.clone(), b.clone())).collect();
        for v in &at[1..] {
            assert_eq!((v.minimum_level, v.none_accepts), (at[0].minimum_level, at[0].none_accepts));
        }
        (at[0].minimum_level.map(|l| l.to_string()), at[0].none_accepts)
    }

    fn of(d: DType, shape: &[u64]) -> (FileDType, Vec<u64>) {
        (FileDType::Numeric(d), shape.to_vec())
    }

    #[test]
    fn minimum_level_is_each_dtypes_first_row() {
        use DType::*;
        let np = BroadcastMode::Numpy;
        let first = |op, d| minimum(op, np, of(d, &[2, 3]), of(d, &[3])).0;
        for (d, sub, sqdiff) in [
            (F32, Some("1_0"), Some("3_1")),
            (F16, Some("1_0"), Some("3_1")),
            (I32, Some("2_1"), Some("3_1")),
            (U32, Some("2_1"), Some("3_1")),
            (I64, Some("4_1"), None),
            (U64, Some("4_1"), None),
            (I16, Some("5_1"), None),
            (I8, Some("5_1"), None),
            (U16, Some("5_1"), None),
            (U8, Some("5_1"), None),
            (F64, None, None),
        ] {
            assert_eq!(first(Op::Sub, d).as_deref(), sub, "sub {d}");
            assert_eq!(first(Op::SqDiff, d).as_deref(), sqdiff, "sqdiff {d}");
        }
        // Every level from the minimum on passes; the one before fails.
        let v = run(Op::Sub, "4_1", np, of(I8, &[2]), of(I8, &[2]));
        assert!(!v.valid() && v.failure_summary().ends_with("use --feature-level 5_1"), "{}", v.failure_summary());
        assert!(run(Op::Sub, "5_1", np, of(I8, &[2]), of(I8, &[2])).valid());
    }

    #[test]
    fn minimum_level_follows_ranks_sizes_and_shapes() {
        let np = BroadcastMode::Numpy;
        let rank = |r: usize| minimum(Op::Sub, np, f32s(&vec![2; r]), f32s(&[2])).0;
        assert_eq!(rank(4).as_deref(), Some("1_0"), "rank 4 is every level's");
        assert_eq!(rank(5).as_deref(), Some("3_0"), "ranks 5-8 from 3_0");
        assert_eq!(rank(8).as_deref(), Some("3_0"));
        assert_eq!(minimum(Op::Sub, np, f32s(&[1; 9]), f32s(&[1])), (None, true), "rank 9: only none");
        assert_eq!(minimum(Op::SqDiff, np, f32s(&[1; 5]), f32s(&[1])).0.as_deref(), Some("3_1"));
        assert_eq!(minimum(Op::Sub, np, f32s(&[]), f32s(&[])).0.as_deref(), Some("1_0"), "rank 0 counts as 1");
        assert_eq!(minimum(Op::Sub, np, f32s(&[3, 0]), f32s(&[1])), (None, true), "empty: only none");
        assert_eq!(minimum(Op::Sub, np, f32s(&[65536, 65536]), f32s(&[1])), (None, true), "2^32 elements");
        assert_eq!(minimum(Op::Sub, np, f32s(&[2, 3]), of(DType::I32, &[3])), (None, false), "dtype mismatch");
        assert_eq!(minimum(Op::Sub, np, f32s(&[2, 3]), f32s(&[4])), (None, false), "unbroadcastable");
        let none = BroadcastMode::None;
        assert_eq!(minimum(Op::Sub, none, f32s(&[2, 3]), f32s(&[3])), (None, false), "--broadcast none");
        assert_eq!(minimum(Op::Sub, none, f32s(&[2, 3]), f32s(&[2, 3])).0.as_deref(), Some("1_0"));
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
