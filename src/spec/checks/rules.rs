//! The checks themselves: each a pure function of the operator, the level, its support row and
//! the inputs, returning its verdict. `operator_available`, `datatype_supported`,
//! `dimension_count`, `nonzero_sizes` and `element_count` depend on the level; `same_datatype`
//! and the shapes (`broadcastable` or `same_sizes`) do not.

use super::verdict::{
    Datatype, DtypeFix, Elements, NoRow, Operator, Rank, RankFix, RankRange, SameDatatype, Shapes, Sizes, Verdict,
};
use super::{BroadcastMode, Desc, TensorSpec, MAX_ELEMENTS};
use crate::npy::header::FileDType;
use crate::op::Op;
use crate::shape::{broadcast, element_count};
use crate::spec::level::LevelChoice;
use crate::spec::matrix::{introduced, oldest_row, row_for, SupportRow, NONE_RANKS, ROWS};

/// The five checks that depend on the level, in the documented order: `operator_available`,
/// `datatype_supported`, `dimension_count`, `nonzero_sizes`, `element_count`. `out` is the
/// output shape, when the shapes are compatible; `written` is A's desc as a DxDispatch model
/// writes it, for `tensorop run`.
pub(super) fn level_checks<'v>(
    op: Op,
    level: LevelChoice,
    a: &'v TensorSpec<'v>,
    b: &'v TensorSpec<'v>,
    out: Option<&'v [u64]>,
    written: Option<&Desc<'v>>,
) -> [Verdict<'v>; 5] {
    let row = support_row(op, level);
    let unpadded = written.and_then(|desc| unpadded_check(level, row, desc));
    [
        Verdict::Operator(operator_check(op, level, row)),
        Verdict::Datatype(datatype_check(op, level, row, a)),
        Verdict::Rank(unpadded.unwrap_or_else(|| rank_check(op, level, row, a, b, out))),
        Verdict::Sizes(nonzero_check(level, a, b)),
        Verdict::Elements(element_count_check(level, out)),
    ]
}

/// The support row `op` uses at `level`: `None` under `--feature-level none` or when the level
/// predates the operator.
pub(super) fn support_row(op: Op, level: LevelChoice) -> Option<&'static SupportRow> {
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
pub(super) fn same_datatype_check<'v>(op: Op, a: &'v TensorSpec<'v>, b: &'v TensorSpec<'v>) -> SameDatatype<'v> {
    if a.dtype == b.dtype {
        SameDatatype::Same { dtype: a.dtype }
    } else {
        SameDatatype::Differ { op, a, b }
    }
}

/// `broadcastable` (`--broadcast numpy`) or `same_sizes` (`--broadcast none`); a passing
/// verdict holds the output shape.
pub(super) fn shape_check<'v>(mode: BroadcastMode, a: &'v TensorSpec<'v>, b: &'v TensorSpec<'v>) -> Shapes<'v> {
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

/// `dimension_count` of a DxDispatch dispatch, when it fails for its A desc as written: DirectML
/// pads no desc, so a rank below the smallest of the level's support row is refused (tensorop's
/// own inputs are padded with leading 1s instead). `None` when the desc's rank is no reason to
/// fail; the inputs' rank is then checked as for any inputs.
fn unpadded_check<'v>(level: LevelChoice, row: Option<&'static SupportRow>, desc: &Desc<'v>) -> Option<Rank<'v>> {
    let (LevelChoice::Dml(level), Some(row)) = (level, row) else { return None };
    let rank = desc.sizes.len();
    (rank < row.ranks.0).then_some(Rank::Unpadded { desc: desc.name, rank, level, row })
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
    use super::super::tests::*;
    use super::{level_checks, support_row, unpadded_check};
    use crate::shape::Incompatible;

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

    /// A DxDispatch desc is taken as written: below the smallest rank of the level's row it
    /// fails `dimension_count`, where tensorop's own inputs are padded with leading 1s.
    #[test]
    fn a_desc_below_the_rows_ranks_is_not_padded() {
        let at = |op, level: &str, d: &Desc<'static>| {
            let level = level.parse().unwrap();
            unpadded_check(level, support_row(op, level), d)
        };
        let a = desc("ATensor", &[2, 3]);
        for l in ["1_0", "2_0", "2_1"] {
            let want = Rank::Unpadded { desc: "ATensor", rank: 2, level: fl(l), row: row(Op::Sub, l) };
            assert_eq!(at(Op::Sub, l, &a), Some(want));
        }
        assert_eq!(at(Op::Sub, "2_1", &desc("ATensor", &[1, 1, 2, 3])), None, "rank 4");
        assert_eq!(at(Op::Sub, "3_0", &a), None, "ranks 1-8");
        assert_eq!(at(Op::Sub, "none", &a), None);
        assert_eq!(at(Op::SqDiff, "3_0", &a), None, "no row: dimension_count is skipped");
        // A desc of rank 0 is below every row: rank 0 counts as 1 only for tensorop's inputs.
        let scalar = Rank::Unpadded { desc: "ATensor", rank: 0, level: fl("6_4"), row: row(Op::Sub, "6_4") };
        assert_eq!(at(Op::Sub, "6_4", &desc("ATensor", &[])), Some(scalar));

        // The verdict `level_checks` gives, in place of the padded one.
        let t = f32s(&[2, 3]);
        let spec = TensorSpec { name: "ATensor".into(), dtype: &t.0, shape: &t.1 };
        let level = "2_1".parse().unwrap();
        let [_, _, padded, ..] = level_checks(Op::Sub, level, &spec, &spec, Some(&[2, 3]), None);
        let [_, _, unpadded, ..] = level_checks(Op::Sub, level, &spec, &spec, Some(&[2, 3]), Some(&a));
        assert_eq!(
            padded,
            Verdict::Rank(Rank::Padded { rank: 2, allowed: range(Op::Sub, "2_1", (4, 4)), out: Some(&[2, 3]) })
        );
        assert_eq!(unpadded, Verdict::Rank(at(Op::Sub, "2_1", &a).unwrap()));
        assert_eq!((padded.status(), unpadded.status()), (Status::Pass, Status::Fail));
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
}
