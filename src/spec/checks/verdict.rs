//! The verdicts: what each check established, as data. One enum per check, whose variants
//! carry the facts found (the dtype and the row applied, the rank and the ranks allowed, what
//! would work instead; for a DxDispatch dispatch, which desc or binding is wrong and how);
//! [`Verdict::status`] says which are pass, fail and skip, and a verdict becomes a recorded
//! [`Check`] with its id, status and message.

use super::{Check, CheckId, Status, TensorSpec};
use crate::dtype::DType;
use crate::npy::header::FileDType;
use crate::op::Op;
use crate::shape::Incompatible;
use crate::spec::level::{FeatureLevel, LevelChoice};
use crate::spec::matrix::SupportRow;

/// What one check established: one enum per check, whose variants carry the facts found.
/// [`Verdict::status`] says which are pass, fail and skip; the `Display` impls (`wording`) hold
/// every message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict<'v> {
    Operator(Operator),
    Datatype(Datatype<'v>),
    SameDatatype(SameDatatype<'v>),
    Shapes(Shapes<'v>),
    Rank(Rank<'v>),
    Sizes(Sizes<'v>),
    Elements(Elements<'v>),
    OutputDesc(OutputDesc<'v>),
    TensorDescs(TensorDescs<'v>),
    BindingSizes(BindingSizes<'v>),
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
    /// `tensorop run`: the model's `desc` (A's) has `rank` dimensions, fewer than the smallest
    /// rank of `row`, applied at `level`. DirectML takes a desc as written and pads nothing.
    Unpadded { desc: &'v str, rank: usize, level: FeatureLevel, row: &'static SupportRow },
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
    /// The output has `count` elements, at most [`MAX_ELEMENTS`](super::MAX_ELEMENTS).
    Within { count: u64 },
    /// The output, of shape `out`, has more than [`MAX_ELEMENTS`](super::MAX_ELEMENTS): `count`, or `None` past 2^64.
    Over { out: &'v [u64], count: Option<u64> },
}

/// `output_desc` (`tensorop run`): the output desc has A's data type and sizes, as DirectML
/// requires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OutputDesc<'v> {
    /// The output is `dtype` with `sizes`, as A.
    Matches { dtype: DType, sizes: &'v [u32] },
    /// The output is `out` but A is `a`: DirectML computes in one data type.
    OtherDtype { out: DType, a: DType },
    /// The output's stride along `dimension`, of `size` (more than 1), is 0: every element there
    /// would be written to one place.
    ZeroStride { dimension: usize, size: u32 },
    /// The output's sizes are `out` but A's are `a`.
    OtherSizes { out: &'v [u32], a: &'v [u32] },
}

/// `tensor_desc` (`tensorop run`): each desc's counts, strides and `TotalTensorSizeInBytes`
/// agree with its sizes. A failure is the first problem found, in desc order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TensorDescs<'v> {
    /// The three descs are consistent.
    Consistent,
    /// `desc`'s `Sizes` is empty.
    NoSizes { desc: &'v str },
    /// `desc`'s `sizes` describe more than 2^64 bytes.
    Oversized { desc: &'v str, sizes: &'v [u32] },
    /// `desc`'s `DimensionCount` is `count` but its `Sizes` has `sizes` entries.
    DimensionCount { desc: &'v str, count: u32, sizes: usize },
    /// `desc`'s `Strides` has `strides` entries but its `Sizes` has `sizes`.
    Strides { desc: &'v str, strides: usize, sizes: usize },
    /// `desc`'s `TotalTensorSizeInBytes` is `total`, less than the `addressed` bytes.
    TotalSize { desc: &'v str, total: u64, addressed: u64 },
}

/// `binding_size` (`tensorop run`): each bound range, from the binding's offset to the end of
/// the resource, holds its tensor. A failure is the first binding found wanting, in desc order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BindingSizes<'v> {
    /// Every bound resource holds its tensor.
    Hold,
    /// `desc`, of `dtype`, is bound to `resource` at byte `offset`, which is not a multiple of
    /// its element size.
    Misaligned { desc: &'v str, dtype: DType, resource: &'v str, offset: u64 },
    /// `desc` needs `total` bytes (`TotalTensorSizeInBytes`), but `resource` has only `room`
    /// from byte `offset`.
    TooSmall { desc: &'v str, total: u64, resource: &'v str, room: u64, offset: u64 },
}

/// `op` has no support row at `level` (`operator_available` failed): the checks that need one
/// are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoRow {
    pub(crate) op: Op,
    pub(crate) level: FeatureLevel,
}

/// The dimension counts `level` allows for `op`: its support row's at a DirectML level,
/// [`NONE_RANKS`](crate::spec::matrix::NONE_RANKS) under `--feature-level none`.
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
            Verdict::OutputDesc(_) => CheckId::OutputDesc,
            Verdict::TensorDescs(_) => CheckId::TensorDesc,
            Verdict::BindingSizes(_) => CheckId::BindingSize,
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
            | V::Elements(Elements::Within { .. })
            | V::OutputDesc(OutputDesc::Matches { .. })
            | V::TensorDescs(TensorDescs::Consistent)
            | V::BindingSizes(BindingSizes::Hold) => Status::Pass,
            V::Operator(Operator::Missing { .. })
            | V::Datatype(Datatype::NotNumeric { .. } | Datatype::Refused { .. })
            | V::SameDatatype(SameDatatype::Differ { .. })
            | V::Shapes(Shapes::NoBroadcast { .. } | Shapes::Differ { .. })
            | V::Rank(Rank::TooHigh { .. } | Rank::Unpadded { .. })
            | V::Sizes(Sizes::Zero { .. })
            | V::Elements(Elements::Over { .. })
            | V::OutputDesc(
                OutputDesc::OtherDtype { .. } | OutputDesc::ZeroStride { .. } | OutputDesc::OtherSizes { .. },
            )
            | V::TensorDescs(
                TensorDescs::NoSizes { .. }
                | TensorDescs::Oversized { .. }
                | TensorDescs::DimensionCount { .. }
                | TensorDescs::Strides { .. }
                | TensorDescs::TotalSize { .. },
            )
            | V::BindingSizes(BindingSizes::Misaligned { .. } | BindingSizes::TooSmall { .. }) => Status::Fail,
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
    pub(super) fn out(&self) -> Option<&[u64]> {
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
