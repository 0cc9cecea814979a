//! The integer kind of summary: counts, extremes, the histogram by binade of `|x|` and the
//! exact sum in 192 bits ([`WideInt`]), for every integer dtype.
//!
//! The portable path adds each block in an `i128`. The AVX-512 tier (`avx512.rs`) takes values
//! in vectors of 32-bit lanes (the dtypes of 8 to 32 bits, widened) or 64-bit lanes: extremes by
//! lane, sums in 64-bit lanes (a 64-bit value split into its high and low 32 bits) that a
//! block ([`Tally`]) cannot overflow, and the histogram by bit position of `1 << (bit length - 1)`
//! ([`positions`](super::positions)). The unit tests compare every tier with the portable path.

// The blocks below feed the x86-64 tiers; elsewhere only the portable path runs.
#![cfg_attr(not(target_arch = "x86_64"), allow(unused_imports, dead_code))]

#[cfg(target_arch = "x86_64")]
mod avx512;

use super::exact::ExactSum;
use super::wide::WideInt;
use super::{Accumulator, Number, Summarise, Summary};
use crate::arch::{Supported, Tier};

/// Slots of the histogram: `|x|` in `[2^e, 2^(e+1))` counts in slot `e + 1`, for `e` from 0 to
/// 64 (`|i64::MIN|` is 2^63); slot 0 is unused, zeros are counted apart.
const SLOTS: usize = 66;

/// A partial summary of integer elements.
#[derive(Debug, Clone)]
pub struct IntSum {
    count: u64,
    zero: u64,
    binades: Vec<u64>,
    sum: WideInt,
    min: i128,
    max: i128,
}

impl Default for IntSum {
    fn default() -> Self {
        IntSum { count: 0, zero: 0, binades: vec![0; SLOTS], sum: WideInt::default(), min: i128::MAX, max: i128::MIN }
    }
}

impl IntSum {
    /// Adds another partial summary.
    pub(super) fn merge(&mut self, o: &IntSum) {
        self.count += o.count;
        self.zero += o.zero;
        self.binades.iter_mut().zip(&o.binades).for_each(|(a, b)| *a += b);
        self.sum.merge(o.sum);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// The finished summary: the mean is the exact sum over the count, rounded once.
    pub(super) fn finish(&self) -> Summary {
        let (min, max) = match self.count {
            0 => (None, None),
            _ => (Some(Number::Int(WideInt::small(self.min))), Some(Number::Int(WideInt::small(self.max)))),
        };
        let binades =
            (self.binades.iter().enumerate()).filter(|(_, &n)| n > 0).map(|(i, &n)| (i as i64 - 1, n)).collect();
        Summary {
            count: self.count,
            finite: self.count,
            nan: 0,
            posinf: 0,
            neginf: 0,
            min,
            max,
            sum: Some(Number::Int(self.sum)),
            exact_sum: ExactSum::new(self.sum.to_bigint(), 0),
            mean: self.sum.div_rounded(self.count),
            zero: self.zero,
            subnormal: 0,
            binades,
        }
    }
}

/// The integer summary of `acc`; an accumulator made for another dtype is a bug in the caller.
fn int_sum(acc: &mut Accumulator) -> &mut IntSum {
    match acc {
        Accumulator::Int(s) => s,
        Accumulator::Float(_) => unreachable!("integer elements added to a float summary"),
    }
}

/// An integer element type: its value exactly, and its kernels.
pub(super) trait Int: Copy {
    fn wide(self) -> i128;
    /// Adds `values` with `tier`'s kernels.
    fn add_tier(tier: Supported, acc: &mut IntSum, values: &[Self]);
}

macro_rules! summarise_ints {
    ($($t:ty),*) => {$(
        impl Summarise for $t {
            fn add_all(acc: &mut Accumulator, values: &[Self]) {
                <$t as Int>::add_tier(crate::arch::current(), int_sum(acc), values);
            }
        }

        impl Int for $t {
            #[inline(always)]
            fn wide(self) -> i128 {
                self as i128
            }

            fn add_tier(tier: Supported, acc: &mut IntSum, values: &[Self]) {
                match tier.tier() {
                    #[cfg(target_arch = "x86_64")]
                    Tier::Avx512 => {
                        acc.count += values.len() as u64;
                        for block in values.chunks(avx512::block_len::<$t>()) {
                            // SAFETY: `tier` is one the CPU has (`Supported`): the AVX-512 tier.
                            record(acc, &unsafe { avx512::tally(block) });
                        }
                    }
                    _ => add_portable(acc, values),
                }
            }
        }
    )*};
}
summarise_ints!(i8, i16, i32, i64, u8, u16, u32, u64);

/// The portable path: blocks of 2^16 elements sum in an `i128` without overflow checks (at
/// most 2^80).
fn add_portable<T: Int>(acc: &mut IntSum, values: &[T]) {
    acc.count += values.len() as u64;
    for block in values.chunks(1 << 16) {
        let (mut sum, mut mn, mut mx) = (0i128, acc.min, acc.max);
        for &x in block {
            let x = x.wide();
            sum += x;
            mn = mn.min(x);
            mx = mx.max(x);
            match x.unsigned_abs() {
                0 => acc.zero += 1,
                a => acc.binades[(127 - a.leading_zeros()) as usize + 1] += 1,
            }
        }
        (acc.min, acc.max) = (mn, mx);
        acc.sum.add(sum);
    }
}

/// What a block of integers holds, before it joins the accumulator.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Tally {
    /// Values `x` with `|x|` of bit length `k + 1` (in `[2^k, 2^(k+1))`), by `k`.
    bins: [u64; 64],
    zero: u64,
    min: i128,
    max: i128,
    sum: i128,
}

impl Default for Tally {
    fn default() -> Self {
        Tally { bins: [0; 64], zero: 0, min: i128::MAX, max: i128::MIN, sum: 0 }
    }
}

impl Tally {
    /// Adds one value: the scalar path, for the ends of blocks.
    #[inline]
    pub(super) fn add_one(&mut self, x: i128) {
        self.sum += x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        match x.unsigned_abs() {
            0 => self.zero += 1,
            a => self.bins[(127 - a.leading_zeros()) as usize] += 1,
        }
    }
}

/// Adds a block's tally to the accumulator.
fn record(acc: &mut IntSum, t: &Tally) {
    acc.zero += t.zero;
    for (slot, &n) in acc.binades.iter_mut().skip(1).zip(&t.bins) {
        *slot += n;
    }
    acc.min = acc.min.min(t.min);
    acc.max = acc.max.max(t.max);
    acc.sum.add(t.sum);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    /// The summary of `values` by each tier the CPU has, the portable one first.
    fn by_tier<T: Int>(values: &[T]) -> Vec<(Tier, Summary)> {
        Supported::all()
            .into_iter()
            .map(|tier| {
                let mut acc = IntSum::default();
                T::add_tier(tier, &mut acc, values);
                (tier.tier(), acc.finish())
            })
            .collect()
    }

    fn check_tiers<T: Int + std::fmt::Debug>(name: &str, v: &[T]) {
        for range in [0..v.len(), 1..v.len(), 0..255, 3..259, 7..(1 << 15) + 300] {
            let v = &v[range.start.min(v.len())..range.end.min(v.len())];
            let sums = by_tier(v);
            for (tier, s) in &sums[1..] {
                assert_eq!(s, &sums[0].1, "{name}, {} values, {tier:?}", v.len());
            }
        }
    }

    #[test]
    fn every_tier_gives_the_portable_summary_quick() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let r: Vec<u64> = (0..100_000).map(|_| next()).collect();
        macro_rules! each {
            ($($t:ty),*) => {$(
                let v: Vec<$t> = r.iter().map(|&x| x as $t).collect();
                check_tiers(stringify!($t), &v);
                let v: Vec<$t> = r.iter().map(|&x| (x >> (x % 64)) as $t).collect();
                check_tiers(stringify!($t), &v);
                check_tiers(stringify!($t), &vec![<$t>::MIN; 70_000]);
                check_tiers(stringify!($t), &vec![<$t>::MAX; 70_000]);
                check_tiers(stringify!($t), &vec![0 as $t; 70_000]);
            )*};
        }
        each!(i8, i16, i32, i64, u8, u16, u32, u64);
    }

    fn digits(a: &Accumulator) -> String {
        match a.finish().sum {
            Some(Number::Int(v)) => v.to_string(),
            other => panic!("integer sum expected, got {other:?}"),
        }
    }

    #[test]
    fn extremes_histogram_and_mean() {
        let mut i = Accumulator::new(DType::I64);
        i.add(&[i64::MIN, -1, 0, 5, i64::MAX]);
        let s = i.finish();
        assert_eq!(s.sum, Some(Number::Int(WideInt::small(3))));
        assert_eq!(
            (s.min, s.max),
            (Some(Number::Int(WideInt::small(i64::MIN.into()))), Some(Number::Int(WideInt::small(i64::MAX.into()))))
        );
        assert_eq!(s.binades, [(0, 1), (2, 1), (62, 1), (63, 1)]);
        assert_eq!(s.mean, Some(0.6));
        assert_eq!(Accumulator::new(DType::U8).finish().mean, None, "no elements, no mean");
    }

    #[test]
    fn integer_sums_of_any_size() {
        // Partial sums merged by doubling, up to 2^63 elements (the most a count can reach
        // without overflowing u64): (2^64 - 1) * 2^63 and -2^63 * 2^63, exact.
        let mut a = Accumulator::new(DType::U64);
        a.add(&vec![u64::MAX; 1 << 16]);
        let mut n = Accumulator::new(DType::I64);
        n.add(&vec![i64::MIN; 1 << 16]);
        for _ in 0..47 {
            let b = a.clone();
            a.merge(&b);
            let m = n.clone();
            n.merge(&m);
        }
        assert_eq!(a.finish().count, 1 << 63);
        assert_eq!(digits(&a), "170141183460469231722463931679029329920");
        assert_eq!(digits(&n), "-85070591730234615865843651857942052864", "-2^126");
        // The means, rounded once: 2^64 - 1 and -2^63 exactly.
        assert_eq!(a.finish().mean, Some(18446744073709551615.0));
        assert_eq!(n.finish().mean, Some(-9223372036854775808.0));
    }

    #[test]
    fn the_mean_of_a_sum_past_2_to_the_53_is_rounded_once() {
        // 4344 values summing to 49825399774920890454243: float64(sum) / count would give
        // 1.1469935491464292e+19; the exact quotient rounds to ...94e+19 (Python's
        // `float(Fraction(sum, count))`).
        let sum: u128 = 49825399774920890454243;
        let (q, r) = ((sum / 4344) as u64, (sum % 4344) as u64);
        let mut values = vec![q; 4344];
        values.iter_mut().take(r as usize).for_each(|v| *v += 1);
        let mut a = Accumulator::new(DType::U64);
        a.add(&values);
        assert_eq!(digits(&a), sum.to_string());
        assert_eq!(a.finish().mean, Some(1.1469935491464294e19));
    }
}
