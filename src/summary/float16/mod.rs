//! The float16 summary. Every float16 is a whole number of 2^-24 below 2^40 of them, so its
//! exact sum needs no buckets by exponent: one fixed-point integer. The AVX-512 tier sums the
//! values converted to float64 (`vcvtph2ps`, then `vcvtps2pd`), which is exact for a block
//! ([`BLOCK`]) in each lane, and counts the 32 exponents by bit position ([`positions`](super::positions));
//! the block's [`Tally`] then joins the accumulator. The other tiers take the general path
//! (`float.rs`, packed scratch buckets), which the unit tests compare it with.

// The blocks below feed the x86-64 tiers; elsewhere only the portable path runs.
#![cfg_attr(not(target_arch = "x86_64"), allow(unused_imports, dead_code))]

#[cfg(target_arch = "x86_64")]
mod avx512;

use super::float::{add_floats, binade, bucket, float_sum, FloatSum};
use super::{Accumulator, Summarise};
use crate::arch::{Supported, Tier};
use half::f16;

/// Values per AVX-512 block: each float64 lane then adds up at most 2^10 values below 2^40
/// units of 2^-24, far below 2^53.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const BLOCK: usize = 1 << 15;

impl Summarise for f16 {
    fn add_all(acc: &mut Accumulator, values: &[Self]) {
        add(crate::arch::current(), float_sum(acc), values);
    }
}

/// Adds `values` with `tier`'s kernels.
pub(super) fn add(tier: Supported, acc: &mut FloatSum, values: &[f16]) {
    match tier.tier() {
        #[cfg(target_arch = "x86_64")]
        Tier::Avx512 => {
            acc.count += values.len() as u64;
            for block in values.chunks(BLOCK) {
                // SAFETY: `tier` is one the CPU has (`Supported`): the AVX-512 tier.
                let t = unsafe { avx512::tally(bytemuck::cast_slice(block)) };
                record(acc, &t);
            }
        }
        _ => add_floats(acc, values),
    }
}

/// What a block of float16 values holds, before it joins the accumulator.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Tally {
    /// Values per biased exponent: 0 for zeros and subnormals, 31 for infinities and NaN.
    bins: [u64; 32],
    zero: u64,
    negative_zero: u64,
    nan: u64,
    neginf: u64,
    /// The finite values' extremes as bits: the largest as a signed integer (the maximum where
    /// any value is non-negative), the smallest and the largest as unsigned integers.
    max_signed: i16,
    min_unsigned: u16,
    max_unsigned: u16,
    /// The finite values' exact sum in units of 2^-24 (below 2^56 for a block).
    sum: i64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            bins: [0; 32],
            zero: 0,
            negative_zero: 0,
            nan: 0,
            neginf: 0,
            max_signed: i16::MIN,
            min_unsigned: u16::MAX,
            max_unsigned: 0,
            sum: 0,
        }
    }
}

impl Tally {
    /// Adds one value: the scalar path, for the ends of blocks.
    #[inline]
    pub(super) fn add_one(&mut self, b: u16) {
        let e = usize::from(b >> 10 & 31);
        self.bins[e] += 1;
        let magnitude = b & 0x7fff;
        if e == 31 {
            self.nan += u64::from(magnitude > 0x7c00);
            self.neginf += u64::from(b == 0xfc00);
            return;
        }
        self.zero += u64::from(magnitude == 0);
        self.negative_zero += u64::from(b == 0x8000);
        self.max_signed = self.max_signed.max(b as i16);
        self.min_unsigned = self.min_unsigned.min(b);
        self.max_unsigned = self.max_unsigned.max(b);
        let m = i64::from(b & 0x3ff | u16::from(e != 0) << 10) << (e.max(1) - 1);
        self.sum += if b >> 15 == 1 { -m } else { m };
    }
}

/// Adds a block's tally to the accumulator.
fn record(acc: &mut FloatSum, t: &Tally) {
    acc.subnormal += t.bins[0] - t.zero;
    for e in 1..31 {
        acc.binades[binade::<f16>(e)] += t.bins[e];
    }
    acc.posinf += t.bins[31] - t.nan - t.neginf;
    acc.nan += t.nan;
    acc.neginf += t.neginf;
    acc.zero += t.zero;
    acc.negative_zero += t.negative_zero;
    // Every finite float16 is a multiple of 2^-24, the unit of exponent 1's bucket.
    acc.buckets[bucket::<f16>(1)] += i128::from(t.sum);
    if t.bins[..31].iter().any(|&n| n > 0) {
        // Bits as signed integers put every non-negative value above every negative one; among
        // negative values, the larger bits are the smaller value.
        let max = if t.min_unsigned < 0x8000 { t.max_signed as u16 } else { t.min_unsigned };
        let min = if t.max_unsigned >= 0x8000 { t.max_unsigned } else { t.min_unsigned };
        acc.fmin = acc.fmin.min(f16::from_bits(min).to_f64());
        acc.fmax = acc.fmax.max(f16::from_bits(max).to_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary of `values` by each tier the CPU has, the portable one first.
    fn by_tier(values: &[f16]) -> Vec<(Tier, super::super::Summary)> {
        Supported::all()
            .into_iter()
            .map(|tier| {
                let mut acc = FloatSum::default();
                add(tier, &mut acc, values);
                (tier.tier(), acc.finish())
            })
            .collect()
    }

    #[test]
    fn every_tier_gives_the_portable_summary() {
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let finite: Vec<f16> = all.iter().copied().filter(|x| x.is_finite()).collect();
        let mut cases: Vec<(&str, Vec<f16>)> = vec![
            ("every bit pattern", all.clone()),
            ("every finite bit pattern", finite.clone()),
            ("zeros", vec![f16::ZERO; 70_000]),
            ("largest", vec![f16::MAX; 100_000]),
            ("most negative", vec![f16::MIN; 100_000]),
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let random: Vec<f16> = (0..200_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                f16::from_bits(state as u16 & 0xbfff)
            })
            .collect();
        cases.push(("random", random));
        for (name, v) in &cases {
            for range in [0..v.len(), 1..v.len(), 0..255, 3..259, 7..(1 << 15) + 300] {
                let v = &v[range.start.min(v.len())..range.end.min(v.len())];
                let sums = by_tier(v);
                for (tier, s) in &sums[1..] {
                    assert_eq!(s, &sums[0].1, "{name}, {} values, {tier:?}", v.len());
                }
            }
        }
    }
}
