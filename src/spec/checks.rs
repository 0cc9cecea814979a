//! The constraint checks, in the documented order (`docs/cli.md`, "Checks and the support
//! matrix"). Each check is a pure function of the operator, the level, its support row and the
//! inputs, and returns its verdict (one enum per check, gathered in [`Verdict`]): the facts it
//! established (the dtype and the row applied, the rank and the ranks allowed, what would work
//! instead). Pass, fail and skip follow from the verdict ([`Verdict::status`]); the message a
//! user reads is its `Display`, and those impls, together in this module, hold all the wording.
//!
//! A failing check says what would work, from the support rows (`matrix::ROWS`): the oldest
//! level whose row accepts the dtype or the rank, else `--feature-level none` if it does, else how
//! to change the inputs.
//!
//! Every check is evaluated and recorded (a check that cannot be evaluated because an earlier
//! one failed is `skip` with the reason), so one run shows every problem. The minimum feature
//! level reruns the checks that depend on the level at every level and reads only their
//! statuses; no message is rendered for it.

use crate::dtype::DType;
use crate::npy::header::FileDType;
use crate::op::Op;
use crate::shape::{broadcast, element_count, fmt_shape, Incompatible};
use crate::spec::level::{FeatureLevel, LevelChoice};
use crate::spec::matrix::{introduced, oldest_row, row_for, SupportRow, NONE_RANKS, ROWS};
use serde::Serialize;
use std::fmt;

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

/// What one check established: one enum per check, whose variants carry the facts found.
/// [`Verdict::status`] says which are pass, fail and skip; the `Display` impls below hold every
/// message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict<'v> {
    Operator(Operator),
    Datatype(Datatype<'v>),
    SameDatatype(SameDatatype<'v>),
    Shapes(Shapes<'v>),
    Rank(Rank<'v>),
    Sizes(Sizes<'v>),
    Elements(Elements<'v>),
}

/// `operator_available`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operator {
    /// Under `--feature-level none`, DirectML's operators do not apply.
    Unrequired,
    /// `op` has a support row at `level`; it exists since `since`.
    Available { op: Op, level: FeatureLevel, since: FeatureLevel },
    /// `level` predates `op`, which exists since `since`.
    Missing { op: Op, level: FeatureLevel, since: FeatureLevel },
}

/// `datatype_supported`, about A's dtype (`same_datatype` covers B's).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Datatype<'v> {
    /// `input`'s dtype is not one tensorop computes on.
    NotNumeric { input: &'v str, dtype: &'v str },
    /// Under `--feature-level none`, which accepts every numeric dtype.
    AnyNumeric { input: &'v str, dtype: DType },
    /// No support row, so no dtype list to check against.
    NoRow(NoRow),
    /// `row`, applied at `level`, lists `dtype`.
    Accepted { input: &'v str, dtype: DType, level: FeatureLevel, row: &'static SupportRow },
    /// `row`, applied at `level`, does not list `dtype`; `fix` says what does.
    Refused { input: &'v str, dtype: DType, level: FeatureLevel, row: &'static SupportRow, fix: DtypeFix },
}

/// `same_datatype`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SameDatatype<'v> {
    /// Both inputs are `dtype`.
    Same { dtype: &'v FileDType },
    /// The inputs' dtypes differ, and `op` does not promote.
    Differ { op: Op, a: &'v TensorSpec<'v>, b: &'v TensorSpec<'v> },
}

/// `broadcastable` (`--broadcast numpy`) or `same_sizes` (`--broadcast none`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shapes<'v> {
    /// The shapes broadcast to `out`.
    Broadcast { a: &'v [u64], b: &'v [u64], out: Vec<u64> },
    /// The shapes do not broadcast; `clash` is the first dimension, from the end, that differs.
    NoBroadcast { a: &'v [u64], b: &'v [u64], clash: Incompatible },
    /// `--broadcast none`: both shapes are `shape`.
    Same { shape: &'v [u64] },
    /// `--broadcast none`: the shapes differ.
    Differ { a: &'v [u64], b: &'v [u64] },
}

/// `dimension_count`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rank<'v> {
    /// No support row, so no rank range.
    NoRow(NoRow),
    /// The output's `rank` is within `allowed` (rank 0 counts as rank 1 at a DirectML level).
    Fits { rank: usize, allowed: RankRange },
    /// `rank` is below `allowed`'s smallest: the output (`out`, when known) is padded with
    /// leading 1s up to it.
    Padded { rank: usize, allowed: RankRange, out: Option<&'v [u64]> },
    /// `rank` is above `allowed`'s largest; `fix` says what accepts it.
    TooHigh { rank: usize, allowed: RankRange, fix: RankFix },
}

/// `nonzero_sizes`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Sizes<'v> {
    /// Under `--feature-level none`, which allows empty tensors.
    Unchecked,
    /// No dimension of either input is 0.
    Nonzero,
    /// `input` (the first of A and B that has one) has a dimension of size 0.
    Zero { input: &'v TensorSpec<'v> },
}

/// `element_count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Elements<'v> {
    /// Under `--feature-level none`, which has no element limit.
    Unlimited,
    /// The shapes have no common output shape to count.
    NoShape,
    /// The output has `count` elements, at most [`MAX_ELEMENTS`].
    Within { count: u64 },
    /// The output, of shape `out`, has more than [`MAX_ELEMENTS`]: `count`, or `None` past 2^64.
    Over { out: &'v [u64], count: Option<u64> },
}

/// `op` has no support row at `level` (`operator_available` failed): the checks that need one
/// are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoRow {
    pub(crate) op: Op,
    pub(crate) level: FeatureLevel,
}

/// The dimension counts `level` allows for `op`: its support row's at a DirectML level,
/// [`NONE_RANKS`] under `--feature-level none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RankRange {
    pub(crate) op: Op,
    pub(crate) level: LevelChoice,
    /// Smallest and largest.
    pub(crate) ranks: (usize, usize),
}

/// What accepts a dtype the level's row does not list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DtypeFix {
    /// The oldest level whose row lists it.
    Level(FeatureLevel),
    /// No row of `op` lists `dtype`: only `--feature-level none` computes on it.
    Never { op: Op, dtype: DType },
}

/// What accepts a rank the level refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RankFix {
    /// The oldest level whose row accepts it, and that row's ranks.
    Level { since: FeatureLevel, ranks: (usize, usize) },
    /// No row does; `--feature-level none` does, with `ranks`.
    LevelNone { ranks: (usize, usize) },
    /// Nothing does, `--feature-level none` included: `max` is the most any level allows.
    Reshape { max: usize },
}

impl Verdict<'_> {
    /// The check this verdict belongs to.
    pub(crate) fn id(&self) -> CheckId {
        match self {
            Verdict::Operator(_) => CheckId::OperatorAvailable,
            Verdict::Datatype(_) => CheckId::DatatypeSupported,
            Verdict::SameDatatype(_) => CheckId::SameDatatype,
            Verdict::Shapes(Shapes::Broadcast { .. } | Shapes::NoBroadcast { .. }) => CheckId::Broadcastable,
            Verdict::Shapes(Shapes::Same { .. } | Shapes::Differ { .. }) => CheckId::SameSizes,
            Verdict::Rank(_) => CheckId::DimensionCount,
            Verdict::Sizes(_) => CheckId::NonzeroSizes,
            Verdict::Elements(_) => CheckId::ElementCount,
        }
    }

    /// Pass, fail or skip: which one each verdict is.
    pub(crate) fn status(&self) -> Status {
        use Verdict as V;
        match self {
            V::Operator(Operator::Available { .. })
            | V::Datatype(Datatype::AnyNumeric { .. } | Datatype::Accepted { .. })
            | V::SameDatatype(SameDatatype::Same { .. })
            | V::Shapes(Shapes::Broadcast { .. } | Shapes::Same { .. })
            | V::Rank(Rank::Fits { .. } | Rank::Padded { .. })
            | V::Sizes(Sizes::Nonzero)
            | V::Elements(Elements::Within { .. }) => Status::Pass,
            V::Operator(Operator::Missing { .. })
            | V::Datatype(Datatype::NotNumeric { .. } | Datatype::Refused { .. })
            | V::SameDatatype(SameDatatype::Differ { .. })
            | V::Shapes(Shapes::NoBroadcast { .. } | Shapes::Differ { .. })
            | V::Rank(Rank::TooHigh { .. })
            | V::Sizes(Sizes::Zero { .. })
            | V::Elements(Elements::Over { .. }) => Status::Fail,
            V::Operator(Operator::Unrequired)
            | V::Datatype(Datatype::NoRow(_))
            | V::Rank(Rank::NoRow(_))
            | V::Sizes(Sizes::Unchecked)
            | V::Elements(Elements::Unlimited | Elements::NoShape) => Status::Skip,
        }
    }
}

impl Shapes<'_> {
    /// The output shape, when the shapes are compatible.
    fn out(&self) -> Option<&[u64]> {
        match self {
            Shapes::Broadcast { out, .. } => Some(out),
            Shapes::Same { shape } => Some(shape),
            Shapes::NoBroadcast { .. } | Shapes::Differ { .. } => None,
        }
    }
}

impl From<&Verdict<'_>> for Check {
    fn from(v: &Verdict<'_>) -> Check {
        Check { id: v.id(), status: v.status(), message: v.to_string() }
    }
}

// The messages, all of them: each names the input, the rule and, for a failure, the fix.

impl fmt::Display for Verdict<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Operator(v) => v.fmt(f),
            Verdict::Datatype(v) => v.fmt(f),
            Verdict::SameDatatype(v) => v.fmt(f),
            Verdict::Shapes(v) => v.fmt(f),
            Verdict::Rank(v) => v.fmt(f),
            Verdict::Sizes(v) => v.fmt(f),
            Verdict::Elements(v) => v.fmt(f),
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let named = |op: &Op| format!("{} ({})", op.name(), op.dml_operator());
        match self {
            Operator::Unrequired => f.write_str("--feature-level none: no DirectML operator requirement"),
            Operator::Available { op, level, since } => {
                write!(f, "{} is available at feature level {level} (since {since})", named(op))
            }
            Operator::Missing { op, level, since } => write!(
                f,
                "{} needs feature level {since} or newer; you asked for {level}. Use --feature-level {since} or \
                 newer, or --feature-level none",
                named(op)
            ),
        }
    }
}

impl fmt::Display for Datatype<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |row: &SupportRow| row.dtypes.iter().map(|d| d.name()).collect::<Vec<_>>().join(" ");
        match self {
            Datatype::NotNumeric { input, dtype } => write!(
                f,
                "{input} has dtype {dtype}, which tensorop does not compute on; convert it to one of the numeric \
                 dtypes (float16/32/64, int8-64, uint8-64)"
            ),
            Datatype::AnyNumeric { input, dtype } => {
                write!(f, "{input} is {dtype}; --feature-level none accepts every numeric dtype")
            }
            Datatype::NoRow(no_row) => no_row.fmt(f),
            Datatype::Accepted { input, dtype, level, row } => {
                let (op, since, list) = (row.op.name(), row.since, names(row));
                write!(f, "{input} is {dtype}; {op} at feature level {level} (support row {since}) accepts {list}")
            }
            Datatype::Refused { input, dtype, level, row, fix } => {
                let (op, since, list) = (row.op.name(), row.since, names(row));
                write!(
                    f,
                    "{input} is {dtype}, which {op} at feature level {level} (support row {since}) does not \
                     support; it accepts {list}. {fix}"
                )
            }
        }
    }
}

impl fmt::Display for NoRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skipped: {} has no support row at feature level {}", self.op.name(), self.level)
    }
}

impl fmt::Display for DtypeFix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DtypeFix::Level(l) => write!(f, "Use --feature-level {l} or newer, or convert the inputs"),
            DtypeFix::Never { dtype: DType::BF16, .. } => write!(
                f,
                "DirectML has no bfloat16 tensor type at any feature level: use --feature-level none, or convert \
                 the inputs to float32 or float16"
            ),
            DtypeFix::Never { op, dtype } => write!(
                f,
                "DirectML's {} never supports {dtype}: convert the inputs, or use --feature-level none",
                op.name()
            ),
        }
    }
}

impl fmt::Display for SameDatatype<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SameDatatype::Same { dtype } => write!(f, "A and B are both {}", dtype.name()),
            SameDatatype::Differ { op, a, b } => {
                let (an, ad, bn, bd, op) = (&a.name, a.dtype.name(), &b.name, b.dtype.name(), op.name());
                write!(
                    f,
                    "{an} is {ad} but {bn} is {bd}; {op} does not promote types: convert one input so both have \
                     the same dtype (e.g. numpy's b.astype('{ad}'))"
                )
            }
        }
    }
}

impl fmt::Display for Shapes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = fmt_shape;
        match self {
            Shapes::Broadcast { a, b, out } => write!(f, "shapes {} and {} broadcast to {}", s(a), s(b), s(out)),
            Shapes::NoBroadcast { a, b, clash: Incompatible { from_end, a: size_a, b: size_b } } => {
                let (a, b) = (s(a), s(b));
                write!(
                    f,
                    "shapes {a} and {b} do not broadcast: dimension {from_end} from the end is {size_a} in A and \
                     {size_b} in B; sizes must be equal or one of them 1 (reshape an input, e.g. add an axis)"
                )
            }
            Shapes::Same { shape } => write!(f, "both shapes are {}", s(shape)),
            Shapes::Differ { a, b } => {
                let (a, b) = (s(a), s(b));
                write!(
                    f,
                    "--broadcast none needs identical shapes; A is {a} and B is {b}. Use --broadcast numpy to \
                     broadcast"
                )
            }
        }
    }
}

impl fmt::Display for Rank<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rank::NoRow(no_row) => no_row.fmt(f),
            Rank::Fits { rank: 0, allowed } if allowed.level != LevelChoice::None => {
                write!(f, "the output has rank 0 (rank 0 counts as rank 1); {allowed}")
            }
            Rank::Fits { rank, allowed } => write!(f, "the output has rank {rank}; {allowed}"),
            Rank::Padded { rank, allowed, out } => {
                let to = allowed.ranks.0;
                let padded = out.map(|out| [vec![1; to - to.min(*rank)], out.to_vec()].concat());
                let shown = padded.map_or(String::new(), |p| format!(" ({})", fmt_shape(&p)));
                write!(f, "the output has rank {rank}; padded with leading 1s to rank {to}{shown}, as {allowed}")
            }
            Rank::TooHigh { rank, allowed, fix } => write!(f, "the output has rank {rank}, but {allowed}; {fix}"),
        }
    }
}

/// `sub at feature level 2_1 supports exactly 4 dimensions`.
impl fmt::Display for RankRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.level {
            LevelChoice::None => f.write_str("--feature-level none")?,
            LevelChoice::Dml(l) => write!(f, "{} at feature level {l}", self.op.name())?,
        }
        match self.ranks {
            (lo, hi) if lo == hi => write!(f, " supports exactly {lo} dimensions"),
            (lo, hi) => write!(f, " supports {lo} to {hi} dimensions"),
        }
    }
}

impl fmt::Display for RankFix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankFix::Level { since, ranks: (lo, hi) } => {
                write!(f, "use --feature-level {since} or newer (ranks {lo}-{hi}), or --feature-level none")
            }
            RankFix::LevelNone { ranks: (lo, hi) } => {
                write!(f, "use --feature-level none (ranks {lo}-{hi}), or reshape the inputs")
            }
            RankFix::Reshape { max } => write!(
                f,
                "reshape the inputs to at most {max} dimensions: no feature level accepts more, --feature-level \
                 none included"
            ),
        }
    }
}

impl fmt::Display for Sizes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sizes::Unchecked => f.write_str("--feature-level none: empty tensors are allowed"),
            Sizes::Nonzero => f.write_str("no dimension is 0"),
            Sizes::Zero { input } => {
                let (name, shape) = (&input.name, fmt_shape(input.shape));
                write!(
                    f,
                    "{name} has shape {shape} with a dimension of size 0; DirectML rejects empty tensors. Use \
                     --feature-level none to allow them"
                )
            }
        }
    }
}

impl fmt::Display for Elements<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Elements::Unlimited => f.write_str("--feature-level none: no DirectML element limit"),
            Elements::NoShape => f.write_str("skipped: the shapes have no common output shape"),
            Elements::Within { count } => {
                write!(
                    f,
                    "the output has {} (limit {MAX_ELEMENTS})",
                    crate::report::summary::counted(*count, "element")
                )
            }
            Elements::Over { out, count } => {
                let (out, count) = (fmt_shape(out), count.map_or("over 2^64".into(), |n| n.to_string()));
                write!(
                    f,
                    "the output {out} has {count} elements, more than DirectML's limit of {MAX_ELEMENTS} \
                     (2^32 - 1); split the work or use --feature-level none"
                )
            }
        }
    }
}

/// Runs every check for `op` on inputs `a` and `b`, in the documented order.
///
/// The checks that do not depend on the level (`same_datatype`, the shapes) run once; the
/// others run at the level asked for, and at every DirectML level and `none` for the minimum
/// level, where only their statuses are read.
pub fn validate(op: Op, level: LevelChoice, mode: BroadcastMode, a: &TensorSpec, b: &TensorSpec) -> Validation {
    let shapes = shape_check(mode, a, b);
    let out = shapes.out();
    let shared = [Verdict::SameDatatype(same_datatype_check(op, a, b)), Verdict::Shapes(shapes.clone())];
    let passes = |l| shared.iter().chain(&level_checks(op, l, a, b, out)).all(|v| v.status() != Status::Fail);
    let minimum_level = FeatureLevel::ALL.into_iter().find(|&l| passes(LevelChoice::Dml(l)));
    let none_accepts = passes(LevelChoice::None);
    let [operator, datatype, rank, sizes, elements] = level_checks(op, level, a, b, out);
    let [same, shapes] = &shared;
    let checks = [&operator, &datatype, same, shapes, &rank, &sizes, &elements].map(Check::from).to_vec();
    let support_row = support_row(op, level).map(|r| r.since);
    Validation { checks, support_row, out_shape: out.map(<[u64]>::to_vec), minimum_level, none_accepts }
}

/// The five checks that depend on the level, in the documented order: `operator_available`,
/// `datatype_supported`, `dimension_count`, `nonzero_sizes`, `element_count`. `out` is the
/// output shape, when the shapes are compatible.
fn level_checks<'v>(
    op: Op,
    level: LevelChoice,
    a: &'v TensorSpec<'v>,
    b: &'v TensorSpec<'v>,
    out: Option<&'v [u64]>,
) -> [Verdict<'v>; 5] {
    let row = support_row(op, level);
    [
        Verdict::Operator(operator_check(op, level, row)),
        Verdict::Datatype(datatype_check(op, level, row, a)),
        Verdict::Rank(rank_check(op, level, row, a, b, out)),
        Verdict::Sizes(nonzero_check(level, a, b)),
        Verdict::Elements(element_count_check(level, out)),
    ]
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
fn operator_check(op: Op, level: LevelChoice, row: Option<&SupportRow>) -> Operator {
    let since = introduced(op);
    match (level, row) {
        (LevelChoice::None, _) => Operator::Unrequired,
        (LevelChoice::Dml(level), Some(_)) => Operator::Available { op, level, since },
        (LevelChoice::Dml(level), None) => Operator::Missing { op, level, since },
    }
}

/// `datatype_supported`: A's dtype is numeric and, at a DirectML level, in the support row; if
/// not, the oldest row that lists it is the fix.
fn datatype_check<'v>(
    op: Op,
    level: LevelChoice,
    row: Option<&'static SupportRow>,
    a: &'v TensorSpec<'v>,
) -> Datatype<'v> {
    let input = a.name.as_str();
    let dtype = match a.dtype {
        FileDType::Numeric(d) => *d,
        FileDType::Other(name) => return Datatype::NotNumeric { input, dtype: name },
    };
    let LevelChoice::Dml(level) = level else {
        return Datatype::AnyNumeric { input, dtype };
    };
    let Some(row) = row else {
        return Datatype::NoRow(NoRow { op, level });
    };
    if row.dtypes.contains(&dtype) {
        return Datatype::Accepted { input, dtype, level, row };
    }
    let fix = oldest_row(op, |r| r.dtypes.contains(&dtype))
        .map_or(DtypeFix::Never { op, dtype }, |r| DtypeFix::Level(r.since));
    Datatype::Refused { input, dtype, level, row, fix }
}

/// `same_datatype`: A and B have the same dtype (`op` does not promote).
fn same_datatype_check<'v>(op: Op, a: &'v TensorSpec<'v>, b: &'v TensorSpec<'v>) -> SameDatatype<'v> {
    if a.dtype == b.dtype {
        SameDatatype::Same { dtype: a.dtype }
    } else {
        SameDatatype::Differ { op, a, b }
    }
}

/// `broadcastable` (`--broadcast numpy`) or `same_sizes` (`--broadcast none`); a passing
/// verdict holds the output shape.
fn shape_check<'v>(mode: BroadcastMode, a: &'v TensorSpec<'v>, b: &'v TensorSpec<'v>) -> Shapes<'v> {
    let (sa, sb) = (a.shape, b.shape);
    match mode {
        BroadcastMode::Numpy => match broadcast(sa, sb) {
            Ok(out) => Shapes::Broadcast { a: sa, b: sb, out },
            Err(clash) => Shapes::NoBroadcast { a: sa, b: sb, clash },
        },
        BroadcastMode::None if sa == sb => Shapes::Same { shape: sa },
        BroadcastMode::None => Shapes::Differ { a: sa, b: sb },
    }
}

/// `dimension_count`: the output's rank (or, without an output shape, the larger input rank)
/// is within the level's range; shorter shapes are padded with leading 1s.
fn rank_check<'v>(
    op: Op,
    level: LevelChoice,
    row: Option<&SupportRow>,
    a: &TensorSpec,
    b: &TensorSpec,
    out: Option<&'v [u64]>,
) -> Rank<'v> {
    let rank = out.map_or(a.shape.len().max(b.shape.len()), <[u64]>::len);
    let (ranks, effective) = match (level, row) {
        (LevelChoice::None, _) => (NONE_RANKS, rank),
        // DirectML has no rank-0 tensors: a scalar is a 1-element tensor of rank 1.
        (LevelChoice::Dml(_), Some(r)) => (r.ranks, rank.max(1)),
        (LevelChoice::Dml(level), None) => return Rank::NoRow(NoRow { op, level }),
    };
    let allowed = RankRange { op, level, ranks };
    if effective > ranks.1 {
        return Rank::TooHigh { rank, allowed, fix: rank_fix(op, effective) };
    }
    if effective < ranks.0 {
        return Rank::Padded { rank, allowed, out };
    }
    Rank::Fits { rank, allowed }
}

/// What accepts an output of `rank` dimensions (at least 1, as DirectML counts it): the
/// oldest support row of `op` that does, else `--feature-level none` if it does, else nothing.
fn rank_fix(op: Op, rank: usize) -> RankFix {
    if let Some(row) = oldest_row(op, |r| r.ranks.1 >= rank) {
        return RankFix::Level { since: row.since, ranks: row.ranks };
    }
    if rank <= NONE_RANKS.1 {
        return RankFix::LevelNone { ranks: NONE_RANKS };
    }
    RankFix::Reshape { max: ROWS.iter().map(|r| r.ranks.1).fold(NONE_RANKS.1, usize::max) }
}

/// `nonzero_sizes`: at a DirectML level, neither input has a dimension of size 0.
fn nonzero_check<'v>(level: LevelChoice, a: &'v TensorSpec<'v>, b: &'v TensorSpec<'v>) -> Sizes<'v> {
    if level == LevelChoice::None {
        return Sizes::Unchecked;
    }
    match [a, b].into_iter().find(|t| t.shape.contains(&0)) {
        Some(input) => Sizes::Zero { input },
        None => Sizes::Nonzero,
    }
}

/// `element_count`: at a DirectML level, the output has at most [`MAX_ELEMENTS`] elements.
fn element_count_check(level: LevelChoice, out: Option<&[u64]>) -> Elements<'_> {
    let out = match (level, out) {
        (LevelChoice::None, _) => return Elements::Unlimited,
        (LevelChoice::Dml(_), None) => return Elements::NoShape,
        (LevelChoice::Dml(_), Some(out)) => out,
    };
    match element_count(out) {
        Some(count) if count <= MAX_ELEMENTS => Elements::Within { count },
        count => Elements::Over { out, count },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Input = (FileDType, Vec<u64>);

    fn run(op: Op, level: &str, mode: BroadcastMode, a: Input, b: Input) -> Validation {
        let sa = TensorSpec { name: "A (a.npy)".into(), dtype: &a.0, shape: &a.1 };
        let sb = TensorSpec { name: "B (b.npy)".into(), dtype: &b.0, shape: &b.1 };
        validate(op, level.parse().unwrap(), mode, &sa, &sb)
    }

    fn of(d: DType, shape: &[u64]) -> Input {
        (FileDType::Numeric(d), shape.to_vec())
    }

    fn f32s(shape: &[u64]) -> Input {
        of(DType::F32, shape)
    }

    fn other(name: &str) -> Input {
        (FileDType::Other(name.into()), vec![2])
    }

    fn status(v: &Validation, id: &str) -> Status {
        v.checks.iter().find(|c| c.id.name() == id).unwrap().status
    }

    /// A DirectML level by name (`3_1`).
    fn fl(level: &str) -> FeatureLevel {
        match level.parse() {
            Ok(LevelChoice::Dml(l)) => l,
            other => panic!("{level}: {other:?}"),
        }
    }

    fn row(op: Op, level: &str) -> &'static SupportRow {
        row_for(op, fl(level)).unwrap()
    }

    /// The seven verdicts on `a` and `b`, in the documented order, as `validate` gathers them.
    /// The inputs are leaked so that the verdicts, which borrow them, can be returned.
    fn verdicts(op: Op, level: &str, mode: BroadcastMode, a: Input, b: Input) -> Vec<Verdict<'static>> {
        let spec = |name: &str, t: Input| -> &'static TensorSpec<'static> {
            let t: &'static Input = Box::leak(Box::new(t));
            Box::leak(Box::new(TensorSpec { name: name.into(), dtype: &t.0, shape: &t.1 }))
        };
        let (a, b) = (spec("A (a.npy)", a), spec("B (b.npy)", b));
        let shapes: &'static Shapes = Box::leak(Box::new(shape_check(mode, a, b)));
        let [operator, datatype, rank, sizes, elements] = level_checks(op, level.parse().unwrap(), a, b, shapes.out());
        let same = Verdict::SameDatatype(same_datatype_check(op, a, b));
        vec![operator, datatype, same, Verdict::Shapes(shapes.clone()), rank, sizes, elements]
    }

    /// The verdict of check `id` for `op` at `level` (`--broadcast numpy`).
    fn verdict(id: CheckId, op: Op, level: &str, a: Input, b: Input) -> Verdict<'static> {
        verdicts(op, level, BroadcastMode::Numpy, a, b).into_iter().find(|v| v.id() == id).unwrap()
    }

    fn operator(op: Op, level: &str) -> Operator {
        match verdict(CheckId::OperatorAvailable, op, level, f32s(&[2]), f32s(&[2])) {
            Verdict::Operator(v) => v,
            v => panic!("{v:?}"),
        }
    }

    fn datatype(op: Op, level: &str, a: Input) -> Datatype<'static> {
        match verdict(CheckId::DatatypeSupported, op, level, a.clone(), a) {
            Verdict::Datatype(v) => v,
            v => panic!("{v:?}"),
        }
    }

    fn shapes(mode: BroadcastMode, a: &[u64], b: &[u64]) -> Shapes<'static> {
        match verdicts(Op::Sub, "latest", mode, f32s(a), f32s(b)).swap_remove(3) {
            Verdict::Shapes(v) => v,
            v => panic!("{v:?}"),
        }
    }

    fn rank(op: Op, level: &str, a: &[u64], b: &[u64]) -> Rank<'static> {
        match verdict(CheckId::DimensionCount, op, level, f32s(a), f32s(b)) {
            Verdict::Rank(v) => v,
            v => panic!("{v:?}"),
        }
    }

    fn range(op: Op, level: &str, ranks: (usize, usize)) -> RankRange {
        RankRange { op, level: level.parse().unwrap(), ranks }
    }

    fn sizes(level: &str, a: &[u64], b: &[u64]) -> Sizes<'static> {
        match verdict(CheckId::NonzeroSizes, Op::Sub, level, f32s(a), f32s(b)) {
            Verdict::Sizes(v) => v,
            v => panic!("{v:?}"),
        }
    }

    fn elements(level: &str, a: &[u64], b: &[u64]) -> Elements<'static> {
        match verdict(CheckId::ElementCount, Op::Sub, level, f32s(a), f32s(b)) {
            Verdict::Elements(v) => v,
            v => panic!("{v:?}"),
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

    #[test]
    fn operator_available_follows_the_first_row() {
        let (v3_0, v3_1) = (fl("3_0"), fl("3_1"));
        assert_eq!(operator(Op::SqDiff, "3_0"), Operator::Missing { op: Op::SqDiff, level: v3_0, since: v3_1 });
        assert_eq!(operator(Op::SqDiff, "3_1"), Operator::Available { op: Op::SqDiff, level: v3_1, since: v3_1 });
        assert_eq!(operator(Op::Sub, "1_0"), Operator::Available { op: Op::Sub, level: fl("1_0"), since: fl("1_0") });
        assert_eq!(operator(Op::SqDiff, "none"), Operator::Unrequired);
    }

    #[test]
    fn sqdiff_before_3_1_fails_operator_available() {
        let v = run(Op::SqDiff, "3_0", BroadcastMode::Numpy, f32s(&[2]), f32s(&[2]));
        assert_eq!(status(&v, "operator_available"), Status::Fail);
        assert_eq!(status(&v, "datatype_supported"), Status::Skip);
        assert_eq!(status(&v, "dimension_count"), Status::Skip);
        assert_eq!(v.support_row, None);
        assert!(!v.valid());
        let no_row = NoRow { op: Op::SqDiff, level: fl("3_0") };
        assert_eq!(datatype(Op::SqDiff, "3_0", f32s(&[2])), Datatype::NoRow(no_row));
        assert_eq!(rank(Op::SqDiff, "3_0", &[2], &[2]), Rank::NoRow(no_row));
    }

    #[test]
    fn every_dtype_at_every_level_follows_the_rows() {
        for level in FeatureLevel::ALL {
            for op in Op::ALL {
                for d in DType::ALL {
                    let t = of(d, &[1, 2, 3, 4]);
                    let v = run(op, &level.to_string(), BroadcastMode::Numpy, t.clone(), t.clone());
                    let want = match row_for(op, level) {
                        None => Status::Skip,
                        Some(r) if r.dtypes.contains(&d) => Status::Pass,
                        Some(_) => Status::Fail,
                    };
                    assert_eq!(status(&v, "datatype_supported"), want, "{op:?} {d} at {level}");
                    let got = datatype(op, &level.to_string(), t);
                    let want = match row_for(op, level) {
                        None => Datatype::NoRow(NoRow { op, level }),
                        Some(row) if row.dtypes.contains(&d) => {
                            Datatype::Accepted { input: "A (a.npy)", dtype: d, level, row }
                        }
                        Some(row) => {
                            let first = ROWS.iter().filter(|r| r.op == op && r.dtypes.contains(&d)).map(|r| r.since);
                            let fix = first.min().map_or(DtypeFix::Never { op, dtype: d }, DtypeFix::Level);
                            Datatype::Refused { input: "A (a.npy)", dtype: d, level, row, fix }
                        }
                    };
                    assert_eq!(got, want);
                }
            }
        }
    }

    #[test]
    fn datatype_failures_point_to_a_fix() {
        use DType::*;
        let input = "A (a.npy)";
        let fix = |op, level, d| match datatype(op, level, of(d, &[2])) {
            Datatype::Refused { fix, .. } => fix,
            v => panic!("{v:?}"),
        };
        assert_eq!(fix(Op::Sub, "4_1", I8), DtypeFix::Level(fl("5_1")));
        assert_eq!(fix(Op::Sub, "1_0", I32), DtypeFix::Level(fl("2_1")));
        assert_eq!(fix(Op::Sub, "4_0", I64), DtypeFix::Level(fl("4_1")));
        assert_eq!(fix(Op::Sub, "latest", F64), DtypeFix::Never { op: Op::Sub, dtype: F64 });
        assert_eq!(fix(Op::SqDiff, "latest", I8), DtypeFix::Never { op: Op::SqDiff, dtype: I8 });
        assert_eq!(fix(Op::Sub, "1_0", BF16), DtypeFix::Never { op: Op::Sub, dtype: BF16 });
        let bf16 = DtypeFix::Never { op: Op::Sub, dtype: BF16 }.to_string();
        assert!(bf16.starts_with("DirectML has no bfloat16 tensor type at any feature level"), "{bf16}");
        assert!(run(Op::SqDiff, "none", BroadcastMode::Numpy, of(BF16, &[2, 3]), of(BF16, &[3])).valid());
        assert_eq!(
            datatype(Op::Sub, "4_1", of(I8, &[2])),
            Datatype::Refused {
                input,
                dtype: I8,
                level: fl("4_1"),
                row: row(Op::Sub, "4_1"),
                fix: fix(Op::Sub, "4_1", I8)
            }
        );
        assert_eq!(datatype(Op::Sub, "none", of(F64, &[2])), Datatype::AnyNumeric { input, dtype: F64 });
        assert!(run(Op::Sub, "none", BroadcastMode::Numpy, of(F64, &[2]), of(F64, &[2])).valid());
        for level in ["none", "latest"] {
            assert_eq!(datatype(Op::Sub, level, other("bool")), Datatype::NotNumeric { input, dtype: "bool" });
            let v = run(Op::Sub, level, BroadcastMode::Numpy, other("bool"), other("bool"));
            assert_eq!(status(&v, "datatype_supported"), Status::Fail);
        }
    }

    #[test]
    fn same_datatype_compares_the_dtypes() {
        let same = |a: Input, b: Input| verdicts(Op::Sub, "latest", BroadcastMode::Numpy, a, b).swap_remove(2);
        let v = same(f32s(&[2]), f32s(&[2]));
        assert_eq!(v, Verdict::SameDatatype(SameDatatype::Same { dtype: &FileDType::Numeric(DType::F32) }));
        assert_eq!(same(other("bool"), other("bool")).status(), Status::Pass);
        match same(f32s(&[2, 3]), of(DType::I32, &[4])) {
            Verdict::SameDatatype(SameDatatype::Differ { op, a, b }) => {
                assert_eq!((op, a.name.as_str(), b.name.as_str()), (Op::Sub, "A (a.npy)", "B (b.npy)"));
                assert_eq!((a.dtype, b.dtype), (&FileDType::Numeric(DType::F32), &FileDType::Numeric(DType::I32)));
            }
            v => panic!("{v:?}"),
        }
        // No promotion, not even between floats or between integers; A's dtype is supported.
        for (da, db) in [(DType::F32, DType::F16), (DType::I32, DType::U32), (DType::I32, DType::I64)] {
            assert_eq!(same(of(da, &[2]), of(db, &[2])).status(), Status::Fail, "{da} and {db}");
            let v = run(Op::Sub, "latest", BroadcastMode::Numpy, of(da, &[2]), of(db, &[2]));
            let statuses = ["datatype_supported", "same_datatype", "broadcastable"].map(|id| status(&v, id));
            assert_eq!(statuses, [Status::Pass, Status::Fail, Status::Pass], "{da} and {db}");
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

    #[test]
    fn mismatched_dtypes_and_shapes_fail_their_checks() {
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[2, 3]), of(DType::I32, &[4]));
        assert_eq!(status(&v, "same_datatype"), Status::Fail);
        assert_eq!(status(&v, "broadcastable"), Status::Fail);
        assert_eq!(status(&v, "element_count"), Status::Skip);
        assert_eq!(elements("latest", &[2, 3], &[4]), Elements::NoShape);
        let clash = Incompatible { from_end: 1, a: 3, b: 4 };
        assert_eq!(shapes(BroadcastMode::Numpy, &[2, 3], &[4]), Shapes::NoBroadcast { a: &[2, 3], b: &[4], clash });

        let v = run(Op::Sub, "latest", BroadcastMode::None, f32s(&[2, 3]), f32s(&[3]));
        assert_eq!(v.checks[3].id, CheckId::SameSizes);
        assert_eq!(status(&v, "same_sizes"), Status::Fail);
        assert_eq!(shapes(BroadcastMode::None, &[2, 3], &[3]), Shapes::Differ { a: &[2, 3], b: &[3] });
        let v = run(Op::Sub, "latest", BroadcastMode::None, f32s(&[2, 3]), f32s(&[2, 3]));
        assert!(v.valid());
        assert_eq!(v.out_shape, Some(vec![2, 3]));
        assert_eq!(shapes(BroadcastMode::None, &[2, 3], &[2, 3]), Shapes::Same { shape: &[2, 3] });
        let out = vec![8, 7, 6, 5];
        assert_eq!(
            shapes(BroadcastMode::Numpy, &[8, 1, 6, 1], &[7, 1, 5]),
            Shapes::Broadcast { a: &[8, 1, 6, 1], b: &[7, 1, 5], out }
        );
    }

    #[test]
    fn rank_four_levels_pad_and_refuse() {
        let sub = |level, ranks| range(Op::Sub, level, ranks);
        let padded = Rank::Padded { rank: 2, allowed: sub("2_1", (4, 4)), out: Some(&[2, 3]) };
        assert_eq!(rank(Op::Sub, "2_1", &[2, 3], &[3]), padded);
        // Without an output shape, the larger input rank, and nothing to show padded.
        assert_eq!(
            rank(Op::Sub, "2_1", &[2, 3], &[4]),
            Rank::Padded { rank: 2, allowed: sub("2_1", (4, 4)), out: None }
        );
        let fix = RankFix::Level { since: fl("3_0"), ranks: (1, 8) };
        assert_eq!(
            rank(Op::Sub, "2_1", &[1, 2, 3, 4, 5], &[5]),
            Rank::TooHigh { rank: 5, allowed: sub("2_1", (4, 4)), fix }
        );
        assert_eq!(rank(Op::Sub, "2_1", &[1, 1, 2, 3], &[3]), Rank::Fits { rank: 4, allowed: sub("2_1", (4, 4)) });
        let fix = RankFix::LevelNone { ranks: (0, 32) };
        assert_eq!(rank(Op::Sub, "latest", &[1; 9], &[1]), Rank::TooHigh { rank: 9, allowed: sub("6_4", (1, 8)), fix });
        assert_eq!(rank(Op::Sub, "latest", &[1; 8], &[1]), Rank::Fits { rank: 8, allowed: sub("6_4", (1, 8)) });
        assert_eq!(rank(Op::Sub, "6_4", &[1], &[]), Rank::Fits { rank: 1, allowed: sub("6_4", (1, 8)) });
        // Rank 0 counts as rank 1 under DirectML; padded to 4 at 1_0.
        assert_eq!(rank(Op::Sub, "latest", &[], &[]), Rank::Fits { rank: 0, allowed: sub("6_4", (1, 8)) });
        assert!(run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[]), f32s(&[])).valid());
        assert_eq!(
            rank(Op::Sub, "1_0", &[], &[]),
            Rank::Padded { rank: 0, allowed: sub("1_0", (4, 4)), out: Some(&[]) }
        );
        assert!(run(Op::Sub, "1_0", BroadcastMode::Numpy, f32s(&[]), f32s(&[])).valid());
        let none = range(Op::Sub, "none", (0, 32));
        let fix = RankFix::Reshape { max: 32 };
        assert_eq!(rank(Op::Sub, "none", &[1; 33], &[1]), Rank::TooHigh { rank: 33, allowed: none, fix });
        assert_eq!(rank(Op::Sub, "none", &[1; 32], &[]), Rank::Fits { rank: 32, allowed: none });
        assert_eq!(rank(Op::Sub, "none", &[], &[]), Rank::Fits { rank: 0, allowed: none });
        assert!(run(Op::Sub, "none", BroadcastMode::Numpy, f32s(&[1; 32]), f32s(&[])).valid());
    }

    /// The fix of a rank that is too high is the oldest row that accepts it, else `none`, else
    /// nothing.
    #[test]
    fn rank_fixes_come_from_the_rows() {
        let fix = |op, level, r: usize| match rank(op, level, &vec![1; r], &[1]) {
            Rank::TooHigh { fix, .. } => fix,
            v => panic!("{v:?}"),
        };
        let level = |l| RankFix::Level { since: fl(l), ranks: (1, 8) };
        let none = RankFix::LevelNone { ranks: (0, 32) };
        let reshape = RankFix::Reshape { max: 32 };
        for l in ["1_0", "2_0", "2_1"] {
            assert_eq!(fix(Op::Sub, l, 5), level("3_0"));
            assert_eq!(fix(Op::Sub, l, 8), level("3_0"));
            assert_eq!(fix(Op::Sub, l, 9), none, "no row has rank 9");
            assert_eq!(fix(Op::Sub, l, 33), reshape);
        }
        for (op, l) in [(Op::Sub, "3_0"), (Op::Sub, "latest"), (Op::SqDiff, "3_1"), (Op::SqDiff, "latest")] {
            assert_eq!(fix(op, l, 9), none);
            assert_eq!(fix(op, l, 32), none);
            assert_eq!(fix(op, l, 33), reshape);
        }
        assert_eq!(fix(Op::Sub, "none", 33), reshape);
        // A row's fix also offers `none`: it accepts every rank a row does.
        assert!(ROWS.iter().all(|r| r.ranks.1 <= NONE_RANKS.1));
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

    #[test]
    fn nonzero_sizes_names_the_empty_input() {
        let zero = |level, a: &[u64], b: &[u64]| match sizes(level, a, b) {
            Sizes::Zero { input } => (input.name.clone(), input.shape.to_vec()),
            v => panic!("{v:?}"),
        };
        assert_eq!(zero("latest", &[3, 0], &[1]), ("A (a.npy)".into(), vec![3, 0]));
        assert_eq!(zero("1_0", &[3], &[0, 3]), ("B (b.npy)".into(), vec![0, 3]));
        assert_eq!(zero("latest", &[0], &[0, 3]), ("A (a.npy)".into(), vec![0]), "A first");
        assert_eq!(sizes("latest", &[3, 1], &[1]), Sizes::Nonzero);
        assert_eq!(sizes("none", &[3, 0], &[1]), Sizes::Unchecked);
        // An empty output is within every other rule.
        let v = run(Op::Sub, "latest", BroadcastMode::Numpy, f32s(&[0, 3]), f32s(&[3]));
        let statuses = ["broadcastable", "dimension_count", "nonzero_sizes", "element_count"].map(|id| status(&v, id));
        assert_eq!(statuses, [Status::Pass, Status::Pass, Status::Fail, Status::Pass]);
        assert_eq!(elements("latest", &[0, 3], &[3]), Elements::Within { count: 0 });
    }

    #[test]
    fn element_count_is_at_most_u32_max() {
        assert_eq!(elements("latest", &[65535, 1], &[65537]), Elements::Within { count: u32::MAX as u64 });
        let over = Elements::Over { out: &[65536, 65536], count: Some(1 << 32) };
        assert_eq!(elements("latest", &[65536, 1], &[65536]), over);
        let past_u64 = Elements::Over { out: &[1 << 32, 1 << 32], count: None };
        assert_eq!(elements("latest", &[1 << 32, 1], &[1 << 32]), past_u64);
        assert_eq!(elements("none", &[65536, 1], &[65536]), Elements::Unlimited);
        assert_eq!(elements("latest", &[2], &[3]), Elements::NoShape);
    }

    /// Every message, once: a verdict of each kind and the exact text a user reads.
    #[test]
    fn every_verdict_renders_its_message() {
        let (f32_, i32_) = (FileDType::Numeric(DType::F32), FileDType::Numeric(DType::I32));
        let a = TensorSpec { name: "A (a.npy)".into(), dtype: &f32_, shape: &[2, 3] };
        let b = TensorSpec { name: "B (b.npy)".into(), dtype: &i32_, shape: &[0, 3] };
        let tables = [level_messages(), input_messages(&a, &b), rank_messages(), size_messages(&b)];
        for (verdict, text) in tables.into_iter().flatten() {
            assert_eq!(verdict.to_string(), text, "{verdict:?}");
        }
    }

    /// `operator_available` and `datatype_supported`, the checks of the level's support row.
    fn level_messages() -> Vec<(Verdict<'static>, &'static str)> {
        use DType::*;
        let (sub, sqdiff, input) = (Op::Sub, Op::SqDiff, "A (a.npy)");
        let no_row = NoRow { op: sqdiff, level: fl("3_0") };
        vec![
            (Verdict::Operator(Operator::Unrequired), "--feature-level none: no DirectML operator requirement"),
            (
                Verdict::Operator(Operator::Available { op: sub, level: fl("2_1"), since: fl("1_0") }),
                "sub (DML_OPERATOR_ELEMENT_WISE_SUBTRACT) is available at feature level 2_1 (since 1_0)",
            ),
            (
                Verdict::Operator(Operator::Missing { op: sqdiff, level: fl("3_0"), since: fl("3_1") }),
                "sqdiff (DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE) needs feature level 3_1 or newer; you \
                 asked for 3_0. Use --feature-level 3_1 or newer, or --feature-level none",
            ),
            (
                Verdict::Datatype(Datatype::NotNumeric { input, dtype: "complex64" }),
                "A (a.npy) has dtype complex64, which tensorop does not compute on; convert it to one of the \
                 numeric dtypes (float16/32/64, int8-64, uint8-64)",
            ),
            (
                Verdict::Datatype(Datatype::AnyNumeric { input, dtype: F64 }),
                "A (a.npy) is float64; --feature-level none accepts every numeric dtype",
            ),
            (Verdict::Datatype(Datatype::NoRow(no_row)), "skipped: sqdiff has no support row at feature level 3_0"),
            (
                Verdict::Datatype(Datatype::Accepted { input, dtype: F32, level: fl("3_1"), row: row(sub, "3_1") }),
                "A (a.npy) is float32; sub at feature level 3_1 (support row 3_0) accepts float32 float16 int32 \
                 uint32",
            ),
            (
                Verdict::Datatype(Datatype::Refused {
                    input,
                    dtype: I8,
                    level: fl("4_1"),
                    row: row(sub, "4_1"),
                    fix: DtypeFix::Level(fl("5_1")),
                }),
                "A (a.npy) is int8, which sub at feature level 4_1 (support row 4_1) does not support; it accepts \
                 float32 float16 int64 int32 uint64 uint32. Use --feature-level 5_1 or newer, or convert the inputs",
            ),
            (
                Verdict::Datatype(Datatype::Refused {
                    input,
                    dtype: F64,
                    level: fl("6_4"),
                    row: row(sqdiff, "6_4"),
                    fix: DtypeFix::Never { op: sqdiff, dtype: F64 },
                }),
                "A (a.npy) is float64, which sqdiff at feature level 6_4 (support row 3_1) does not support; it \
                 accepts float32 float16 int32 uint32. DirectML's sqdiff never supports float64: convert the \
                 inputs, or use --feature-level none",
            ),
        ]
    }

    /// `same_datatype`, `broadcastable` and `same_sizes`, the checks of the inputs alone.
    fn input_messages<'v>(a: &'v TensorSpec<'v>, b: &'v TensorSpec<'v>) -> Vec<(Verdict<'v>, &'static str)> {
        let sub = Op::Sub;
        vec![
            (Verdict::SameDatatype(SameDatatype::Same { dtype: a.dtype }), "A and B are both float32"),
            (
                Verdict::SameDatatype(SameDatatype::Differ { op: sub, a, b }),
                "A (a.npy) is float32 but B (b.npy) is int32; sub does not promote types: convert one input so \
                 both have the same dtype (e.g. numpy's b.astype('float32'))",
            ),
            (
                Verdict::Shapes(Shapes::Broadcast { a: &[2, 3], b: &[3], out: vec![2, 3] }),
                "shapes [2, 3] and [3] broadcast to [2, 3]",
            ),
            (
                Verdict::Shapes(Shapes::NoBroadcast {
                    a: &[2, 3],
                    b: &[4],
                    clash: Incompatible { from_end: 1, a: 3, b: 4 },
                }),
                "shapes [2, 3] and [4] do not broadcast: dimension 1 from the end is 3 in A and 4 in B; sizes \
                 must be equal or one of them 1 (reshape an input, e.g. add an axis)",
            ),
            (Verdict::Shapes(Shapes::Same { shape: &[] }), "both shapes are []"),
            (
                Verdict::Shapes(Shapes::Differ { a: &[2, 3], b: &[3] }),
                "--broadcast none needs identical shapes; A is [2, 3] and B is [3]. Use --broadcast numpy to \
                 broadcast",
            ),
        ]
    }

    /// `dimension_count`.
    fn rank_messages() -> Vec<(Verdict<'static>, &'static str)> {
        let sub = Op::Sub;
        let (sub_2_1, sub_6_4, none) =
            (range(sub, "2_1", (4, 4)), range(sub, "6_4", (1, 8)), range(sub, "none", (0, 32)));
        let no_row = NoRow { op: Op::SqDiff, level: fl("3_0") };
        vec![
            (Verdict::Rank(Rank::NoRow(no_row)), "skipped: sqdiff has no support row at feature level 3_0"),
            (
                Verdict::Rank(Rank::Fits { rank: 4, allowed: sub_2_1 }),
                "the output has rank 4; sub at feature level 2_1 supports exactly 4 dimensions",
            ),
            (
                Verdict::Rank(Rank::Fits { rank: 1, allowed: sub_6_4 }),
                "the output has rank 1; sub at feature level 6_4 supports 1 to 8 dimensions",
            ),
            (
                Verdict::Rank(Rank::Fits { rank: 0, allowed: sub_6_4 }),
                "the output has rank 0 (rank 0 counts as rank 1); sub at feature level 6_4 supports 1 to 8 \
                 dimensions",
            ),
            (
                Verdict::Rank(Rank::Fits { rank: 0, allowed: none }),
                "the output has rank 0; --feature-level none supports 0 to 32 dimensions",
            ),
            (
                Verdict::Rank(Rank::Padded { rank: 2, allowed: sub_2_1, out: Some(&[2, 3]) }),
                "the output has rank 2; padded with leading 1s to rank 4 ([1, 1, 2, 3]), as sub at feature level \
                 2_1 supports exactly 4 dimensions",
            ),
            (
                Verdict::Rank(Rank::Padded { rank: 0, allowed: range(sub, "1_0", (4, 4)), out: Some(&[]) }),
                "the output has rank 0; padded with leading 1s to rank 4 ([1, 1, 1, 1]), as sub at feature level \
                 1_0 supports exactly 4 dimensions",
            ),
            (
                Verdict::Rank(Rank::Padded { rank: 2, allowed: sub_2_1, out: None }),
                "the output has rank 2; padded with leading 1s to rank 4, as sub at feature level 2_1 supports \
                 exactly 4 dimensions",
            ),
            (
                Verdict::Rank(Rank::TooHigh {
                    rank: 5,
                    allowed: sub_2_1,
                    fix: RankFix::Level { since: fl("3_0"), ranks: (1, 8) },
                }),
                "the output has rank 5, but sub at feature level 2_1 supports exactly 4 dimensions; use \
                 --feature-level 3_0 or newer (ranks 1-8), or --feature-level none",
            ),
            (
                Verdict::Rank(Rank::TooHigh { rank: 9, allowed: sub_6_4, fix: RankFix::LevelNone { ranks: (0, 32) } }),
                "the output has rank 9, but sub at feature level 6_4 supports 1 to 8 dimensions; use \
                 --feature-level none (ranks 0-32), or reshape the inputs",
            ),
            (
                Verdict::Rank(Rank::TooHigh { rank: 33, allowed: none, fix: RankFix::Reshape { max: 32 } }),
                "the output has rank 33, but --feature-level none supports 0 to 32 dimensions; reshape the inputs \
                 to at most 32 dimensions: no feature level accepts more, --feature-level none included",
            ),
        ]
    }

    /// `nonzero_sizes` and `element_count`.
    fn size_messages<'v>(b: &'v TensorSpec<'v>) -> Vec<(Verdict<'v>, &'static str)> {
        vec![
            (Verdict::Sizes(Sizes::Unchecked), "--feature-level none: empty tensors are allowed"),
            (Verdict::Sizes(Sizes::Nonzero), "no dimension is 0"),
            (
                Verdict::Sizes(Sizes::Zero { input: b }),
                "B (b.npy) has shape [0, 3] with a dimension of size 0; DirectML rejects empty tensors. Use \
                 --feature-level none to allow them",
            ),
            (Verdict::Elements(Elements::Unlimited), "--feature-level none: no DirectML element limit"),
            (Verdict::Elements(Elements::NoShape), "skipped: the shapes have no common output shape"),
            (
                Verdict::Elements(Elements::Within { count: 4_294_967_295 }),
                "the output has 4294967295 elements (limit 4294967295)",
            ),
            (
                Verdict::Elements(Elements::Over { out: &[65536, 65537], count: Some(4_295_032_832) }),
                "the output [65536, 65537] has 4295032832 elements, more than DirectML's limit of 4294967295 \
                 (2^32 - 1); split the work or use --feature-level none",
            ),
            (
                Verdict::Elements(Elements::Over { out: &[1 << 32, 1 << 32], count: None }),
                "the output [4294967296, 4294967296] has over 2^64 elements, more than DirectML's limit of \
                 4294967295 (2^32 - 1); split the work or use --feature-level none",
            ),
        ]
    }

    /// The minimum level of `op` on `a` and `b`, asked at `level` (it must not depend on it),
    /// and whether `--feature-level none` accepts them.
    fn minimum(op: Op, mode: BroadcastMode, a: Input, b: Input) -> (Option<String>, bool) {
        let at: Vec<_> =
            ["1_0", "4_1", "latest", "none"].iter().map(|l| run(op, l, mode, a.clone(), b.clone())).collect();
        for v in &at[1..] {
            assert_eq!((v.minimum_level, v.none_accepts), (at[0].minimum_level, at[0].none_accepts));
        }
        (at[0].minimum_level.map(|l| l.to_string()), at[0].none_accepts)
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
            (BF16, None, None),
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
