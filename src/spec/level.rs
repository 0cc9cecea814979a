//! DirectML feature levels: parsing every spelling `--feature-level` accepts (`3_1`, `3.1`,
//! `DML_FEATURE_LEVEL_3_1`, `latest`, `none`), ordering, and display.

use std::fmt;
use std::str::FromStr;

/// A DirectML feature level, `major_minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FeatureLevel {
    pub major: u8,
    pub minor: u8,
}

impl FeatureLevel {
    /// Every feature level DirectML defines, oldest first.
    pub const ALL: [FeatureLevel; 15] = [
        FeatureLevel::new(1, 0),
        FeatureLevel::new(2, 0),
        FeatureLevel::new(2, 1),
        FeatureLevel::new(3, 0),
        FeatureLevel::new(3, 1),
        FeatureLevel::new(4, 0),
        FeatureLevel::new(4, 1),
        FeatureLevel::new(5, 0),
        FeatureLevel::new(5, 1),
        FeatureLevel::new(5, 2),
        FeatureLevel::new(6, 0),
        FeatureLevel::new(6, 1),
        FeatureLevel::new(6, 2),
        FeatureLevel::new(6, 3),
        FeatureLevel::new(6, 4),
    ];

    /// The level `latest` names.
    pub const LATEST: FeatureLevel = FeatureLevel::new(6, 4);

    pub const fn new(major: u8, minor: u8) -> Self {
        FeatureLevel { major, minor }
    }
}

impl fmt::Display for FeatureLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.major, self.minor)
    }
}

/// The `--feature-level` value: a DirectML level, or `none` for no DirectML limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelChoice {
    Dml(FeatureLevel),
    None,
}

impl fmt::Display for LevelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LevelChoice::Dml(l) => l.fmt(f),
            LevelChoice::None => f.write_str("none"),
        }
    }
}

impl FromStr for LevelChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        match lower.as_str() {
            "latest" => return Ok(LevelChoice::Dml(FeatureLevel::LATEST)),
            "none" => return Ok(LevelChoice::None),
            _ => {}
        }
        let body = lower.strip_prefix("dml_feature_level_").unwrap_or(&lower);
        let parsed =
            body.split_once(['_', '.']).and_then(|(a, b)| Some(FeatureLevel::new(a.parse().ok()?, b.parse().ok()?)));
        match parsed {
            Some(l) if FeatureLevel::ALL.contains(&l) => Ok(LevelChoice::Dml(l)),
            _ => Err(format!(
                "unknown feature level '{s}'; use one of {}, `latest` (= {}) or `none` \
                 (also spelled 3.1 or DML_FEATURE_LEVEL_3_1)",
                FeatureLevel::ALL.map(|l| l.to_string()).join(" "),
                FeatureLevel::LATEST
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses() {
        for l in FeatureLevel::ALL {
            let want = Ok(LevelChoice::Dml(l));
            assert_eq!(format!("{}_{}", l.major, l.minor).parse(), want);
            assert_eq!(format!("{}.{}", l.major, l.minor).parse(), want);
            assert_eq!(format!("DML_FEATURE_LEVEL_{}_{}", l.major, l.minor).parse(), want);
        }
        assert_eq!("latest".parse(), Ok(LevelChoice::Dml(FeatureLevel::new(6, 4))));
        assert_eq!("none".parse(), Ok(LevelChoice::None));
    }

    #[test]
    fn unknown_levels_are_refused_with_the_list() {
        for bad in ["3_2", "7_0", "3", "", "abc", "1_0_0", "DML_FEATURE_LEVEL_", "-1_0"] {
            let err = bad.parse::<LevelChoice>().unwrap_err();
            assert!(err.contains("6_4"), "{err}");
        }
    }

    #[test]
    fn levels_are_ordered() {
        assert!(FeatureLevel::new(3, 0) < FeatureLevel::new(3, 1));
        assert!(FeatureLevel::new(2, 1) < FeatureLevel::new(10, 0));
        let mut sorted = FeatureLevel::ALL;
        sorted.sort();
        assert_eq!(sorted, FeatureLevel::ALL);
    }
}
