//! The x86-64 tiers' features, asked of the CPU: the only place tensorop calls
//! `is_x86_feature_detected!`. The kernels of a tier enable the same features
//! (`#[target_feature(enable = ...)]`).

use super::Tier;

/// The highest tier whose every feature this CPU has.
pub(super) fn detect() -> Tier {
    let avx2 = is_x86_feature_detected!("avx")
        && is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
        && is_x86_feature_detected!("bmi1")
        && is_x86_feature_detected!("bmi2")
        && is_x86_feature_detected!("lzcnt")
        && is_x86_feature_detected!("popcnt");
    let avx512 = is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512dq")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512cd");
    match (avx2, avx512) {
        (true, true) => Tier::Avx512,
        (true, false) => Tier::Avx2,
        (false, _) => Tier::Portable,
    }
}
