//! The CPU tiers: which of tensorop's vector kernels this CPU runs. The one place that detects
//! the CPU's features (once, then cached), applies the cap `TENSOROP_CPU_TIER` sets, and hands out
//! the proof ([`Supported`]) that the kernels' `unsafe` calls rest on. The float16 op kernel
//! (`op/f16.rs`) and the summary's kernels (`summary/`) dispatch on it; every tier gives the same
//! bits, which the unit tests check on each tier the CPU has (`docs/architecture.md`, "CPU
//! tiers").

#[cfg(target_arch = "x86_64")]
mod x86_64;

use std::sync::atomic::{AtomicU8, Ordering};

/// A kind of CPU the kernels are written for, in increasing order: each tier has every feature
/// of the tiers below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Plain Rust, for any CPU.
    Portable,
    /// x86-64 with AVX2, FMA, F16C, BMI1, BMI2, LZCNT and POPCNT (x86-64-v3).
    Avx2,
    /// The AVX2 tier and AVX-512 F, BW, DQ, VL and CD (x86-64-v4).
    Avx512,
}

/// The environment variable that caps the tier: the highest tier the kernels may use.
pub const TIER_ENV: &str = "TENSOROP_CPU_TIER";

impl Tier {
    /// Every tier, lowest first.
    pub const ALL: [Tier; 3] = [Tier::Portable, Tier::Avx2, Tier::Avx512];

    /// The name `TENSOROP_CPU_TIER` takes.
    pub const fn name(self) -> &'static str {
        match self {
            Tier::Portable => "portable",
            Tier::Avx2 => "avx2",
            Tier::Avx512 => "avx512",
        }
    }

    /// The tier of that name.
    pub fn from_name(name: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The highest tier this CPU has, asked of the CPU.
    fn detect() -> Tier {
        #[cfg(target_arch = "x86_64")]
        return x86_64::detect();
        #[cfg(not(target_arch = "x86_64"))]
        Tier::Portable
    }
}

/// Proof that the CPU has a tier's features: made only for tiers at or below the detected one,
/// so a kernel of that tier may be called once one is in hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Supported(Tier);

impl Supported {
    /// The tier.
    pub fn tier(self) -> Tier {
        self.0
    }

    /// Every tier this CPU has, lowest first, whatever the cap: for the tests that compare the
    /// tiers' kernels with the portable ones.
    pub fn all() -> Vec<Supported> {
        let top = Tier::detect();
        Tier::ALL.into_iter().filter(|&t| t <= top).map(Supported).collect()
    }
}

/// The tier in use, as `Tier as u8 + 1`; 0 until it is first asked for or capped.
static CURRENT: AtomicU8 = AtomicU8::new(0);

/// The tier the kernels use: the highest the CPU has, detected on the first call (then one
/// relaxed load), or lower where [`limit`] capped it.
pub fn current() -> Supported {
    match CURRENT.load(Ordering::Relaxed) {
        0 => {
            let tier = Tier::detect();
            // A cap set meanwhile wins; a race between two detections stores the same value.
            match CURRENT.compare_exchange(0, tier as u8 + 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => Supported(tier),
                Err(code) => Supported(Tier::ALL[usize::from(code - 1)]),
            }
        }
        code => Supported(Tier::ALL[usize::from(code - 1)]),
    }
}

/// Caps the tier the kernels use at `max`, or at the CPU's own where that is lower.
pub fn limit(max: Tier) {
    CURRENT.store(Tier::detect().min(max) as u8 + 1, Ordering::Relaxed);
}

/// Applies `TENSOROP_CPU_TIER`'s value, if set: a tier's name caps the tier at it; any other
/// value is an error that names the variable and the names it takes.
pub fn limit_from(value: Option<&str>) -> Result<(), String> {
    let Some(value) = value.filter(|v| !v.is_empty()) else { return Ok(()) };
    match Tier::from_name(value) {
        Some(max) => {
            limit(max);
            Ok(())
        }
        None => {
            let names: Vec<&str> = Tier::ALL.iter().map(|t| t.name()).collect();
            Err(format!("{TIER_ENV}={value}: expected one of {} (the highest CPU tier to use)", names.join(", ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_tiers_are_ordered() {
        for t in Tier::ALL {
            assert_eq!(Tier::from_name(t.name()), Some(t));
        }
        assert!(Tier::Portable < Tier::Avx2 && Tier::Avx2 < Tier::Avx512);
        assert_eq!(Tier::from_name("AVX2"), None);
    }

    #[test]
    fn the_portable_tier_is_always_supported_and_the_current_one_is_among_them() {
        let all = Supported::all();
        assert_eq!(all.first().map(|s| s.tier()), Some(Tier::Portable));
        assert!(all.contains(&current()), "{:?} not in {all:?}", current());
        for s in &all {
            eprintln!("this CPU runs the {} tier", s.tier().name());
        }
        for t in Tier::ALL.iter().filter(|t| !all.iter().any(|s| s.tier() == **t)) {
            eprintln!("skipped: the {} tier, which this CPU lacks", t.name());
        }
    }

    #[test]
    fn a_bad_value_names_the_variable_and_the_tiers() {
        let e = limit_from(Some("sse9")).err().unwrap_or_default();
        assert!(e.contains("TENSOROP_CPU_TIER=sse9") && e.contains("portable, avx2, avx512"), "{e}");
        assert_eq!(limit_from(None), Ok(()));
        assert_eq!(limit_from(Some("")), Ok(()));
    }
}
