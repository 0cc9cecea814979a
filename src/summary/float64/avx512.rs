//! The float64 summary's AVX-512 kernel. One pass over a block keeps the extremes of the bits,
//! counts exponent 0 and the [`COUNTED`] binades from two below the guessed largest down by bit
//! position, and sums the values in [`LEVELS`] levels: with `σ = 2^s`, `q = (σ + p) - σ` is `p`
//! rounded to a multiple of `2^(s - 53)` and `p - q` is exact, so each level takes the bits of
//! the remainder from `2^(s - 53)` up, and the next level's `s` is 39 lower. The guess is the
//! last block's largest binade; a block above it is taken again, one that leaves a remainder or
//! holds NaN or infinities takes the general path for its sum or wholly, and values below the
//! counted binades are counted one by one. Every function here enables the AVX-512 tier's
//! features; the only `unsafe` is the loads, from slices of the length they read.

use super::super::exact::pow2;
use super::super::float::{add_each, add_exact, binade, bucket, split, FloatSum};
use crate::summary::positions::{Positions, GROUP};
use std::arch::x86_64::*;

/// Values per block: the sum of at most 2^13 parts of magnitude at most `2^(s - 14)` stays below
/// `2^s`, a multiple of `2^(s - 53)`: exact in float64.
pub(super) const BLOCK: usize = 1 << 13;
/// Levels of the sum: from the largest binade, about 39 * 3 - 14 binades are summed exactly.
const LEVELS: usize = 3;
/// How much lower each level's `s` is: its parts' remainders are at most `2^(s - 53)`, the next
/// level's parts at most `2^(s' - 14)`.
const STEP: i32 = 39;
/// Binades counted by bit position: from `base`, one per bit of a 64-bit lane.
const COUNTED: u32 = 64;
/// Values per group of [`Positions::add16`].
const PER_GROUP: usize = GROUP * 8;
/// float64's magnitude bits, and the first of infinity and NaN.
const ABS: u64 = !(1 << 63);
const SPECIAL: u64 = 0x7ff0_0000_0000_0000;
/// The largest biased exponent a block may reach: `σ` of the first level, `2^(e - 1023 + 15)`,
/// must be finite.
const HIGHEST: u32 = 2031;

/// What one pass found in a block.
struct Pass {
    /// Values by biased exponent from `base`, and with exponent 0.
    counts: [u64; COUNTED as usize],
    base: u32,
    zsub: u64,
    /// The bits' extremes: as signed integers, and the smallest and largest as unsigned.
    max_signed: i64,
    min_unsigned: u64,
    max_unsigned: u64,
    /// Each level's exact sum; `None` where a remainder was left below the last level.
    sums: Option<[f64; LEVELS]>,
}

impl Pass {
    /// The largest and the smallest value's bits: as signed integers every non-negative value
    /// is above every negative one; among negative values, the larger bits are the smaller value.
    fn extremes(&self) -> (u64, u64) {
        let max = if self.min_unsigned >> 63 == 0 { self.max_signed as u64 } else { self.min_unsigned };
        let min = if self.max_unsigned >> 63 == 1 { self.max_unsigned } else { self.min_unsigned };
        (min, max)
    }
}

/// Adds a block of at most [`BLOCK`] values to `acc`, its count aside.
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
pub(super) fn add_block(acc: &mut FloatSum, block: &[f64]) {
    let largest = |b: &[f64]| b.iter().map(|x| x.to_bits() & ABS).max().unwrap_or(0);
    // The last block's largest biased exponent (`window_hint` less one), or this block's.
    let guess = match acc.window_hint {
        0 => (largest(block) >> 52) as u32,
        h => h - 1,
    };
    let mut pass = run(block, guess.min(HIGHEST));
    let (min, max) = pass.extremes();
    let top = (min & ABS).max(max & ABS);
    if top >= SPECIAL || (top >> 52) as u32 > HIGHEST {
        return add_each(acc, block);
    }
    let top_exponent = (top >> 52) as u32;
    if top_exponent > guess {
        pass = run(block, top_exponent);
    }
    acc.window_hint = top_exponent + 1;
    match pass.sums {
        Some(sums) => sums.into_iter().for_each(|s| add_exact(acc, s)),
        None => {
            for &x in block {
                if let Some((e, m)) = split::<f64>(acc, x.to_bits()) {
                    acc.buckets[bucket::<f64>(e)] += i128::from(m);
                }
            }
        }
    }
    record(acc, block, &pass, (min, max));
}

/// The counts and extremes of a pass (and of the values it did not count) into `acc`.
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
fn record(acc: &mut FloatSum, block: &[f64], pass: &Pass, (min, max): (u64, u64)) {
    let first = binade::<f64>(pass.base as usize);
    let end = (first + COUNTED as usize).min(acc.binades.len());
    acc.binades[first..end].iter_mut().zip(&pass.counts).for_each(|(a, n)| *a += n);
    let uncounted = block.len() as u64 - pass.counts.iter().sum::<u64>() - pass.zsub;
    if uncounted > 0 {
        let counted = pass.base..pass.base + COUNTED;
        for x in block {
            let e = (x.to_bits() >> 52 & 0x7ff) as u32;
            if e != 0 && !counted.contains(&e) {
                acc.binades[binade::<f64>(e as usize)] += 1;
            }
        }
    }
    if pass.zsub > 0 {
        let zero = block.iter().filter(|x| x.to_bits() & ABS == 0).count() as u64;
        acc.zero += zero;
        acc.negative_zero += block.iter().filter(|x| x.to_bits() == !ABS).count() as u64;
        acc.subnormal += pass.zsub - zero;
    }
    if !block.is_empty() {
        acc.fmin = acc.fmin.min(f64::from_bits(min));
        acc.fmax = acc.fmax.max(f64::from_bits(max));
    }
}

/// One pass over `block`, its largest biased exponent taken to be at most `top`: whole groups
/// by vectors, the rest one by one with the same arithmetic.
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
fn run(block: &[f64], top: u32) -> Pass {
    let base = top.saturating_sub(COUNTED - 2).max(1);
    // The first level's parts (the values) are below 2^(top - 1022) = 2^(s - 14).
    let s = std::array::from_fn::<i32, LEVELS, _>(|k| (top as i32 - 1023 + 15 - STEP * k as i32).max(-1022));
    let sigma = s.map(|s| pow2(i64::from(s)));
    let (abs, exponent, one) = (_mm512_set1_epi64(ABS as i64), _mm512_set1_epi64(SPECIAL as i64), _mm512_set1_epi64(1));
    let first = _mm512_set1_epi64(i64::from(base));
    let sig = sigma.map(|s| _mm512_set1_pd(s));
    let mut sums = [_mm512_setzero_pd(); LEVELS];
    let (mut max_signed, mut min_unsigned) = (_mm512_set1_epi64(i64::MIN), _mm512_set1_epi64(-1));
    let (mut max_unsigned, mut zsub, mut rest) =
        (_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512());
    let mut positions = Positions::new();
    let (body, tail) = block.split_at(block.len() / PER_GROUP * PER_GROUP);
    for group in body.chunks_exact(PER_GROUP) {
        let mut p = group.as_ptr();
        let mut vector = || {
            // SAFETY: 16 calls per group, each reading the next 8 of its 128 values; the
            // pointer moves on at most to the group's end.
            let x = unsafe { _mm512_loadu_pd(p) };
            p = unsafe { p.add(8) };
            let bits = _mm512_castpd_si512(x);
            max_signed = _mm512_max_epi64(max_signed, bits);
            min_unsigned = _mm512_min_epu64(min_unsigned, bits);
            max_unsigned = _mm512_max_epu64(max_unsigned, bits);
            let a = _mm512_and_si512(bits, abs);
            zsub = _mm512_mask_add_epi64(zsub, _mm512_testn_epi64_mask(a, exponent), zsub, one);
            let mut r = x;
            for (sum, sig) in sums.iter_mut().zip(&sig) {
                let q = _mm512_sub_pd(_mm512_add_pd(*sig, r), *sig);
                r = _mm512_sub_pd(r, q);
                *sum = _mm512_add_pd(*sum, q);
            }
            // The remainder's magnitude bits (-0.0 is no remainder).
            rest = _mm512_ternarylogic_epi64::<0xf8>(rest, _mm512_castpd_si512(r), abs);
            _mm512_sllv_epi64(one, _mm512_sub_epi64(_mm512_srli_epi64::<52>(a), first))
        };
        positions.add16(|| (vector(), vector()));
    }
    let [low, high] = positions.counts();
    let mut pass = Pass {
        counts: std::array::from_fn(|i| if i < 32 { low[i] } else { high[i - 32] }),
        base,
        zsub: _mm512_reduce_add_epi64(zsub) as u64,
        max_signed: _mm512_reduce_max_epi64(max_signed),
        min_unsigned: _mm512_reduce_min_epu64(min_unsigned),
        max_unsigned: _mm512_reduce_max_epu64(max_unsigned),
        sums: None,
    };
    let mut level = sums.map(|s| _mm512_reduce_add_pd(s));
    let mut remainder = _mm512_test_epi64_mask(rest, rest) != 0;
    for &x in tail {
        let b = x.to_bits();
        (pass.max_signed, pass.min_unsigned) = (pass.max_signed.max(b as i64), pass.min_unsigned.min(b));
        pass.max_unsigned = pass.max_unsigned.max(b);
        match (b >> 52 & 0x7ff) as u32 {
            0 => pass.zsub += 1,
            e if (base..base + COUNTED).contains(&e) => pass.counts[(e - base) as usize] += 1,
            _ => {}
        }
        let mut r = x;
        for (sum, sig) in level.iter_mut().zip(sigma) {
            let q = (sig + r) - sig;
            r -= q;
            *sum += q;
        }
        remainder |= r != 0.0;
    }
    pass.sums = (!remainder).then_some(level);
    pass
}
