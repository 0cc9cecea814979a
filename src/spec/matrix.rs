//! The DirectML support matrix as data: for each operator, the rows of the documentation
//! (introduced at a level, supported ranks and dtypes), and the lookup of the row that applies
//! at a chosen level (the newest row at or below it).

use crate::dtype::DType;
use crate::op::Op;
use crate::spec::level::{FeatureLevel, LevelChoice};

/// One row of the support matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupportRow {
    pub op: Op,
    /// The feature level that introduced this row.
    pub since: FeatureLevel,
    /// Smallest and largest supported dimension count.
    pub ranks: (usize, usize),
    pub dtypes: &'static [DType],
}

use DType::*;

const SUB_1_0: &[DType] = &[F32, F16];
const SUB_2_1: &[DType] = &[F32, F16, I32, U32];
const SUB_4_1: &[DType] = &[F32, F16, I64, I32, U64, U32];
const SUB_5_1: &[DType] = &[F32, F16, I64, I32, I16, I8, U64, U32, U16, U8];

/// Every row, per operator oldest first.
pub static ROWS: &[SupportRow] = &[
    SupportRow { op: Op::Sub, since: FeatureLevel::new(1, 0), ranks: (4, 4), dtypes: SUB_1_0 },
    SupportRow { op: Op::Sub, since: FeatureLevel::new(2, 1), ranks: (4, 4), dtypes: SUB_2_1 },
    SupportRow { op: Op::Sub, since: FeatureLevel::new(3, 0), ranks: (1, 8), dtypes: SUB_2_1 },
    SupportRow { op: Op::Sub, since: FeatureLevel::new(4, 1), ranks: (1, 8), dtypes: SUB_4_1 },
    SupportRow { op: Op::Sub, since: FeatureLevel::new(5, 1), ranks: (1, 8), dtypes: SUB_5_1 },
    SupportRow { op: Op::SqDiff, since: FeatureLevel::new(3, 1), ranks: (1, 8), dtypes: SUB_2_1 },
];

/// Ranks accepted with `--feature-level none`.
pub const NONE_RANKS: (usize, usize) = (0, 32);

/// The row of `op` that applies at `level`: the newest one introduced at or below it, or `None`
/// when the operator does not exist yet at that level.
pub fn row_for(op: Op, level: FeatureLevel) -> Option<&'static SupportRow> {
    ROWS.iter().filter(|r| r.op == op && r.since <= level).max_by_key(|r| r.since)
}

/// The oldest row of `op` that `accepts`: where a failing check's fix points to.
pub(crate) fn oldest_row(op: Op, accepts: impl Fn(&SupportRow) -> bool) -> Option<&'static SupportRow> {
    ROWS.iter().filter(|r| r.op == op && accepts(r)).min_by_key(|r| r.since)
}

/// The level that introduced `op`.
pub fn introduced(op: Op) -> FeatureLevel {
    ROWS.iter().filter(|r| r.op == op).map(|r| r.since).min().unwrap_or(FeatureLevel::LATEST)
}

/// What a level choice allows for `op`: dtypes and ranks, or `None` if the op is unavailable.
pub fn allowed(op: Op, level: LevelChoice) -> Option<(&'static [DType], (usize, usize))> {
    match level {
        LevelChoice::None => Some((&DType::ALL, NONE_RANKS)),
        LevelChoice::Dml(l) => row_for(op, l).map(|r| (r.dtypes, r.ranks)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(op: Op, level: &str) -> Option<&'static SupportRow> {
        match level.parse().unwrap() {
            LevelChoice::Dml(l) => row_for(op, l),
            LevelChoice::None => None,
        }
    }

    #[test]
    fn every_level_picks_the_documented_row() {
        let expect_sub = [
            ("1_0", "1_0"),
            ("2_0", "1_0"),
            ("2_1", "2_1"),
            ("3_0", "3_0"),
            ("3_1", "3_0"),
            ("4_0", "3_0"),
            ("4_1", "4_1"),
            ("5_0", "4_1"),
            ("5_1", "5_1"),
            ("5_2", "5_1"),
            ("6_0", "5_1"),
            ("6_1", "5_1"),
            ("6_2", "5_1"),
            ("6_3", "5_1"),
            ("6_4", "5_1"),
        ];
        for (level, since) in expect_sub {
            assert_eq!(row(Op::Sub, level).unwrap().since.to_string(), since, "sub at {level}");
        }
        for level in ["1_0", "2_0", "2_1", "3_0"] {
            assert!(row(Op::SqDiff, level).is_none(), "sqdiff must not exist at {level}");
        }
        for level in ["3_1", "4_0", "4_1", "5_0", "5_1", "5_2", "6_0", "6_1", "6_2", "6_3", "6_4"] {
            assert_eq!(row(Op::SqDiff, level).unwrap().since.to_string(), "3_1");
        }
    }

    #[test]
    fn rows_hold_the_documented_dtypes_and_ranks() {
        let names = |r: &SupportRow| r.dtypes.iter().map(|d| d.name()).collect::<Vec<_>>().join(" ");
        let r = row(Op::Sub, "1_0").unwrap();
        assert_eq!((names(r), r.ranks), ("float32 float16".into(), (4, 4)));
        let r = row(Op::Sub, "2_1").unwrap();
        assert_eq!((names(r), r.ranks), ("float32 float16 int32 uint32".into(), (4, 4)));
        let r = row(Op::Sub, "3_0").unwrap();
        assert_eq!((names(r), r.ranks), ("float32 float16 int32 uint32".into(), (1, 8)));
        let r = row(Op::Sub, "4_1").unwrap();
        assert_eq!(names(r), "float32 float16 int64 int32 uint64 uint32");
        let r = row(Op::Sub, "5_1").unwrap();
        assert_eq!(names(r), "float32 float16 int64 int32 int16 int8 uint64 uint32 uint16 uint8");
        let r = row(Op::SqDiff, "3_1").unwrap();
        assert_eq!((names(r), r.ranks), ("float32 float16 int32 uint32".into(), (1, 8)));
        assert!(ROWS.iter().all(|r| !r.dtypes.contains(&DType::F64)));
    }

    #[test]
    fn none_allows_everything_numeric() {
        let (d, r) = allowed(Op::SqDiff, LevelChoice::None).unwrap();
        assert_eq!(d.len(), 12, "the twelve numeric dtypes, bfloat16 included");
        assert_eq!(r, (0, 32));
        assert_eq!(introduced(Op::Sub).to_string(), "1_0");
        assert_eq!(introduced(Op::SqDiff).to_string(), "3_1");
    }

    #[test]
    fn oldest_row_is_the_first_that_accepts() {
        let since = |op, accepts: fn(&SupportRow) -> bool| oldest_row(op, accepts).map(|r| r.since.to_string());
        assert_eq!(since(Op::Sub, |r| r.dtypes.contains(&DType::I8)).as_deref(), Some("5_1"));
        assert_eq!(since(Op::Sub, |r| r.dtypes.contains(&DType::I32)).as_deref(), Some("2_1"));
        assert_eq!(since(Op::Sub, |r| r.ranks.1 >= 5).as_deref(), Some("3_0"));
        assert_eq!(since(Op::SqDiff, |r| r.ranks.1 >= 5).as_deref(), Some("3_1"));
        assert_eq!(since(Op::Sub, |r| r.ranks.1 >= 9), None);
        assert_eq!(since(Op::Sub, |r| r.dtypes.contains(&DType::F64)), None);
    }
}
