//! The minimum feature level: the oldest DirectML level at which no check fails, and whether
//! `--feature-level none` accepts the inputs. Only the verdicts' statuses are read; no message
//! is rendered for it.

use super::verdict::Verdict;
use super::Status;
use crate::spec::level::{FeatureLevel, LevelChoice};

/// The oldest DirectML level at which none of `fixed` (the verdicts that do not depend on the
/// level) and none of `at(level)` fails, if any, and whether none fails under
/// `--feature-level none`.
pub(super) fn minimum_level<'v, const N: usize>(
    fixed: &[Verdict<'v>],
    at: impl Fn(LevelChoice) -> [Verdict<'v>; N],
) -> (Option<FeatureLevel>, bool) {
    let passes = |l| fixed.iter().chain(&at(l)).all(|v| v.status() != Status::Fail);
    (FeatureLevel::ALL.into_iter().find(|&l| passes(LevelChoice::Dml(l))), passes(LevelChoice::None))
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;

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
}
