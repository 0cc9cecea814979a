//! The float64 summary. Below the AVX-512 tier, the general path (`float.rs`: each signed
//! mantissa into the `i128` bucket of its exponent). The AVX-512 tier (`avx512.rs`) sums a block
//! without a bucket per value: it splits each value into three parts at fixed powers of two
//! below the block's largest binade, each part a multiple of its level's unit, so that each
//! level's float64 lanes add exactly (the extraction of Rump, Ogita and Oishi's `AccSum`); a
//! block whose values reach below the third level, or hold NaN or infinities, takes the general
//! path. The unit tests compare it with the general path.

// The blocks below feed the x86-64 tiers; elsewhere only the portable path runs.
#![cfg_attr(not(target_arch = "x86_64"), allow(unused_imports, dead_code))]

#[cfg(target_arch = "x86_64")]
mod avx512;

use super::float::{add_floats, float_sum, FloatSum};
use super::{Accumulator, Summarise};
use crate::arch::{Supported, Tier};

impl Summarise for f64 {
    fn add_all(acc: &mut Accumulator, values: &[Self]) {
        add(crate::arch::current(), float_sum(acc), values);
    }
}

/// Adds `values` with `tier`'s kernels.
pub(super) fn add(tier: Supported, acc: &mut FloatSum, values: &[f64]) {
    match tier.tier() {
        #[cfg(target_arch = "x86_64")]
        Tier::Avx512 => {
            acc.count += values.len() as u64;
            for block in values.chunks(avx512::BLOCK) {
                // SAFETY: `tier` is one the CPU has (`Supported`): the AVX-512 tier.
                unsafe { avx512::add_block(acc, block) };
            }
        }
        _ => add_floats(acc, values),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift words.
    fn words(seed: u64, n: usize) -> Vec<u64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            })
            .collect()
    }

    /// Blocks whose second level sums as much as it may: a value of 1.5 sets the first level's
    /// unit at 2^-38 (`σ = 2^15`); every other value is 2^-31 (1 + f), whose bits below 2^-38
    /// are just under half that unit, with random bits down to the last (2^-83). Each leaves a
    /// remainder of the same sign, near 2^-39, with 45 bits: 8191 of them need the full 53 bits
    /// of the second level's sum (`σ = 2^-24`, unit 2^-77); a level any lower would round.
    fn second_level_bound(w: &[u64]) -> Vec<f64> {
        w.iter()
            .enumerate()
            .map(|(i, &r)| match i % 8192 {
                0 => 1.5,
                _ => f64::from_bits((1023 - 31) << 52 | (r >> 12 & 0xf_ff80_0000_0000) | 0x3f_ffff_ffff & r),
            })
            .collect()
    }

    #[test]
    fn every_tier_gives_the_general_paths_summary() {
        let w = words(0x2545_f491_4f6c_dd1d, 60_000);
        let uniform = |r: u64| (r >> 11) as f64 / (1u64 << 53) as f64;
        let squares: Vec<f64> = w.windows(2).map(|p| (uniform(p[0]) - uniform(p[1])).powi(2)).collect();
        let cases: Vec<(&str, Vec<f64>)> = vec![
            ("squares", squares.clone()),
            ("any bits", w.iter().map(|&b| f64::from_bits(b)).collect()),
            ("finite bits", w.iter().map(|&b| f64::from_bits(b & !(1 << 62))).collect()),
            ("zeros", vec![0.0; 20_000]),
            ("negative zeros and subnormals", w.iter().map(|&b| f64::from_bits(b & 0x8000_0000_0000_00ff)).collect()),
            ("largest", vec![f64::MAX; 20_000]),
            ("largest of both signs", w.iter().map(|&b| if b & 1 == 0 { f64::MAX } else { f64::MIN }).collect()),
            ("near the largest", w.iter().map(|&b| f64::from_bits(0x7fe0_0000_0000_0000 | b >> 12)).collect()),
            ("spread over 200 binades", w.iter().map(|&b| f64::from_bits((900 + b % 200) << 52 | b >> 12)).collect()),
            ("a tie in the sum", [2f64.powi(53), 1.0, 0.0].repeat(10_000)),
            ("rising blocks", squares.iter().enumerate().map(|(i, x)| x * 2f64.powi(i as i32 / 8192 * 3)).collect()),
            (
                "a jump above the guess",
                squares.iter().enumerate().map(|(i, x)| if i < 8192 { *x } else { x * 2f64.powi(45) }).collect(),
            ),
            ("remainders at the second level's bound", second_level_bound(&w)),
            (
                "falling blocks",
                squares.iter().enumerate().map(|(i, x)| x * 2f64.powi(-(i as i32 / 8192) * 3)).collect(),
            ),
        ];
        for (name, v) in &cases {
            for range in [0..v.len(), 1..v.len(), 0..15, 3..130, 5..8192 + 9] {
                let v = &v[range.start.min(v.len())..range.end.min(v.len())];
                let mut general = FloatSum::default();
                add_floats(&mut general, v);
                for tier in Supported::all() {
                    let mut acc = FloatSum::default();
                    add(tier, &mut acc, v);
                    assert_eq!(acc.finish(), general.finish(), "{name}, {} values, {:?}", v.len(), tier.tier());
                }
            }
        }
    }
}
