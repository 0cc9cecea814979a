//! The float kind of summary: counts by class, extremes, the histogram by binade and the exact
//! sum, for float16, float32 and float64 elements.
//!
//! Every finite float is `m * 2^e` with an integer `m` below 2^53; `m` is added, with its sign,
//! to an `i128` bucket for its exponent (room for 2^74 additions). Buckets add exactly, in any
//! order, and the total is rounded to float64 once ([`exact`](super::exact)). This module holds
//! the general path: float16 below the AVX-512 tier (and float32 blocks holding NaN or
//! infinities) through packed scratch buckets, float64 below it one element at a time. float16
//! and float64 on the AVX-512 tier ([`float16`](super::float16), [`float64`](super::float64)),
//! float32 and bfloat16 ([`float32`](super::float32)) have their own faster paths, which land in
//! the same buckets.

use super::exact::ExactSum;
use super::{Accumulator, Number, Summary};
use half::{bf16, f16};

/// Float64's biased exponents: 0 (zero and subnormals) to 2047 (infinities and NaN).
const EXPONENTS: usize = 2048;

/// A partial summary of float elements.
#[derive(Debug, Clone)]
pub struct FloatSum {
    pub(super) count: u64,
    pub(super) nan: u64,
    pub(super) posinf: u64,
    pub(super) neginf: u64,
    pub(super) zero: u64,
    /// How many of the zeros are -0.0 (for the signs of min and max).
    pub(super) negative_zero: u64,
    pub(super) subnormal: u64,
    /// Elements per binade, by float64's biased exponent.
    pub(super) binades: Vec<u64>,
    /// The signed sum of the mantissas with each float64 biased exponent (subnormals with
    /// exponent 1, where their mantissas' unit is the same).
    pub(super) buckets: Vec<i128>,
    /// The extremes as float64 (exact for every float dtype).
    pub(super) fmin: f64,
    pub(super) fmax: f64,
    /// float32: the lowest biased exponent of the first window of the next block, guessed from
    /// the last one (0: no guess). Only a guess: a block it does not fit is summed again.
    pub(super) window_hint: u32,
}

impl Default for FloatSum {
    fn default() -> Self {
        FloatSum {
            count: 0,
            nan: 0,
            posinf: 0,
            neginf: 0,
            zero: 0,
            negative_zero: 0,
            subnormal: 0,
            binades: vec![0; EXPONENTS],
            buckets: vec![0; EXPONENTS],
            fmin: f64::INFINITY,
            fmax: f64::NEG_INFINITY,
            window_hint: 0,
        }
    }
}

impl FloatSum {
    /// Adds another partial summary.
    pub(super) fn merge(&mut self, o: &FloatSum) {
        for (a, b) in [
            (&mut self.count, o.count),
            (&mut self.nan, o.nan),
            (&mut self.posinf, o.posinf),
            (&mut self.neginf, o.neginf),
            (&mut self.zero, o.zero),
            (&mut self.negative_zero, o.negative_zero),
            (&mut self.subnormal, o.subnormal),
        ] {
            *a += b;
        }
        self.binades.iter_mut().zip(&o.binades).for_each(|(a, b)| *a += b);
        self.buckets.iter_mut().zip(&o.buckets).for_each(|(a, b)| *a += b);
        self.fmin = self.fmin.min(o.fmin);
        self.fmax = self.fmax.max(o.fmax);
    }

    /// The finished summary: the sum rounded once, the mean that float64 sum over the finite
    /// elements (one more float64 division).
    pub(super) fn finish(&self) -> Summary {
        let finite = self.count - self.nan - self.posinf - self.neginf;
        let (min, max) = match finite {
            0 => (None, None),
            // Zeros compare equal; -0.0 orders before +0.0, whichever was met first.
            _ => {
                let min = if self.fmin == 0.0 && self.negative_zero > 0 { -0.0 } else { self.fmin + 0.0 };
                let max = if self.fmax == 0.0 && self.zero > self.negative_zero { 0.0 } else { self.fmax };
                (Some(Number::Float(min)), Some(Number::Float(max)))
            }
        };
        let binades =
            (self.binades.iter().enumerate()).filter(|(_, &n)| n > 0).map(|(i, &n)| (i as i64 - 1023, n)).collect();
        let mut s = Summary {
            count: self.count,
            finite,
            nan: self.nan,
            posinf: self.posinf,
            neginf: self.neginf,
            min,
            max,
            sum: None,
            exact_sum: ExactSum::of_buckets(&self.buckets),
            mean: None,
            zero: self.zero,
            subnormal: self.subnormal,
            binades,
        };
        s.settle_float();
        s
    }
}

/// The float summary of `acc`; an accumulator made for another dtype is a bug in the caller.
pub(super) fn float_sum(acc: &mut Accumulator) -> &mut FloatSum {
    match acc {
        Accumulator::Float(s) => s,
        Accumulator::Int(_) => unreachable!("float elements added to an integer summary"),
    }
}

/// A float dtype's bit layout.
pub(super) trait FloatBits: Copy {
    /// Stored mantissa bits and exponent bits.
    const MANT: u32;
    const EXP: u32;
    fn bits(self) -> u64;
    fn from_bits(b: u64) -> Self;
    fn value(self) -> f64;
}

impl FloatBits for f64 {
    const MANT: u32 = 52;
    const EXP: u32 = 11;
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn from_bits(b: u64) -> Self {
        f64::from_bits(b)
    }
    fn value(self) -> f64 {
        self
    }
}

impl FloatBits for f32 {
    const MANT: u32 = 23;
    const EXP: u32 = 8;
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn from_bits(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl FloatBits for f16 {
    const MANT: u32 = 10;
    const EXP: u32 = 5;
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn from_bits(b: u64) -> Self {
        f16::from_bits(b as u16)
    }
    fn value(self) -> f64 {
        self.to_f64()
    }
}

impl FloatBits for bf16 {
    const MANT: u32 = 7;
    const EXP: u32 = 8;
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn from_bits(b: u64) -> Self {
        bf16::from_bits(b as u16)
    }
    fn value(self) -> f64 {
        self.to_f64()
    }
}

/// Independent copies of the scratch buckets: consecutive elements usually share an exponent,
/// and one copy would make each addition wait for the previous one to the same bucket.
const SCRATCH_COPIES: usize = 4;

/// Mantissas up to this many bits share one scratch word with the count: `m * 2^20 + 1`.
const PACKED_MANT: u32 = 23;
const COUNT_BITS: u32 = 20;

/// The float path: float16 and float32 in blocks through packed scratch buckets
/// ([`add_packed_block`]), float64 one element at a time straight into the `i128` buckets
/// ([`add_wide`]).
pub(super) fn add_floats<T: FloatBits>(acc: &mut FloatSum, values: &[T]) {
    acc.count += values.len() as u64;
    if T::MANT <= PACKED_MANT {
        values.chunks(1 << 16).for_each(|block| add_packed_block(acc, block));
    } else {
        values.iter().for_each(|&x| add_wide(acc, x));
    }
}

/// The float64 bucket (biased float64 exponent, the unit of its mantissas) of `T`'s biased
/// exponent `e`: the unit of `T`'s bucket e is 2^(max(e, 1) - bias - MANT) (subnormals share
/// exponent 1's unit), float64's bucket k has 2^(k - 1075).
pub(super) fn bucket<T: FloatBits>(e: usize) -> usize {
    let bias = (1i64 << (T::EXP - 1)) - 1;
    (e.max(1) as i64 - bias - i64::from(T::MANT) + 1075) as usize
}

/// The `binades` slot (float64's biased exponent) of `T`'s biased exponent `e` (normal values).
pub(super) fn binade<T: FloatBits>(e: usize) -> usize {
    let bias = (1i64 << (T::EXP - 1)) - 1;
    (e as i64 - bias + 1023) as usize
}

/// Per-block counts of the packed path, and the extremes as order keys (see [`order_key`]).
struct Tally {
    zero: u64,
    negative_zero: u64,
    nan: u64,
    neginf: u64,
    min_key: i64,
    max_key: i64,
}

/// A float's bits as an integer in the same order as the values (-0.0 just below +0.0).
#[inline(always)]
fn order_key(magnitude: u64, negative: i64) -> i64 {
    magnitude as i64 ^ -negative
}

/// One element of the packed path: its scratch bucket and the tally.
#[inline(always)]
fn tally_one<T: FloatBits>(lane: &mut [i64; 256], t: &mut Tally, b: u64) {
    let special = (1u64 << T::EXP) - 1;
    let sign_shift = T::MANT + T::EXP;
    let e = ((b >> T::MANT) & special) as u8;
    let mant = b & ((1u64 << T::MANT) - 1);
    let neg = (b >> sign_shift) as i64;
    let m = (mant | u64::from(e != 0) << T::MANT) as i64;
    lane[usize::from(e)] += (((m ^ -neg) + neg) << COUNT_BITS) + 1;
    let is_special = u64::from(e) == special;
    let magnitude = b & !(1 << sign_shift);
    t.zero += u64::from(magnitude == 0);
    t.negative_zero += u64::from(b == 1 << sign_shift);
    t.nan += u64::from(is_special & (mant != 0));
    t.neginf += u64::from(is_special & (mant == 0) & (neg != 0));
    let key = order_key(magnitude, neg);
    t.min_key = t.min_key.min(if is_special { i64::MAX } else { key });
    t.max_key = t.max_key.max(if is_special { i64::MIN } else { key });
}

/// float16 and float32, a block of at most 2^16 elements: one addition per element into the
/// scratch bucket of its exponent, the mantissa (with its sign) in the high bits and a count in
/// the low 20 (2^16 mantissas of 24 bits stay below 2^40). NaN and infinities land in the top
/// bucket and are told apart by branch-free counts; the extremes are tracked as integer order
/// keys. Four copies of the buckets, used in turn, keep consecutive additions independent. The
/// block's buckets then go into the float64-exponent `buckets` and the `binades`.
pub(super) fn add_packed_block<T: FloatBits>(acc: &mut FloatSum, block: &[T]) {
    let exps = 1usize << T::EXP;
    let mut lanes = [[0i64; 256]; SCRATCH_COPIES];
    let mut t = Tally { zero: 0, negative_zero: 0, nan: 0, neginf: 0, min_key: i64::MAX, max_key: i64::MIN };
    let mut quads = block.chunks_exact(SCRATCH_COPIES);
    for quad in &mut quads {
        for (lane, &x) in lanes.iter_mut().zip(quad) {
            tally_one::<T>(lane, &mut t, x.bits());
        }
    }
    for &x in quads.remainder() {
        tally_one::<T>(&mut lanes[0], &mut t, x.bits());
    }
    for e in 0..exps {
        let (mut sum, mut n) = (0i64, 0u64);
        for lane in &lanes {
            let count = lane[e] & ((1 << COUNT_BITS) - 1);
            n += count as u64;
            sum += (lane[e] - count) >> COUNT_BITS;
        }
        if e == exps - 1 {
            // NaN and infinities: counted, never summed.
            acc.posinf += n - t.nan - t.neginf;
            continue;
        }
        if e == 0 {
            acc.subnormal += n - t.zero;
        } else {
            acc.binades[binade::<T>(e)] += n;
        }
        acc.buckets[bucket::<T>(e)] += i128::from(sum);
    }
    acc.nan += t.nan;
    acc.neginf += t.neginf;
    acc.zero += t.zero;
    acc.negative_zero += t.negative_zero;
    let sign = 1u64 << (T::MANT + T::EXP);
    let value = |key: i64| T::from_bits(if key < 0 { !key as u64 | sign } else { key as u64 }).value();
    if t.min_key != i64::MAX {
        acc.fmin = acc.fmin.min(value(t.min_key));
        acc.fmax = acc.fmax.max(value(t.max_key));
    }
}

/// Adds float64 `values` one by one ([`add_wide`]), without counting them.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn add_each(acc: &mut FloatSum, values: &[f64]) {
    values.iter().for_each(|&x| add_wide(acc, x));
}

/// Adds a finite float64 exactly: its signed mantissa into its exponent's bucket.
#[inline(always)]
pub(super) fn add_exact(acc: &mut FloatSum, x: f64) {
    if let Some((e, m)) = split::<f64>(acc, x.to_bits()) {
        acc.buckets[bucket::<f64>(e)] += i128::from(m);
    }
}

/// float64, one element: 53-bit mantissas leave no room to pack, so the signed mantissa goes
/// straight into its `i128` bucket.
#[inline(always)]
fn add_wide<T: FloatBits>(acc: &mut FloatSum, x: T) {
    let b = x.bits();
    let Some((e, m)) = split::<T>(acc, b) else { return };
    acc.buckets[bucket::<T>(e)] += i128::from(m);
    if b << (64 - T::MANT - T::EXP) == 0 {
        acc.zero += 1;
        acc.negative_zero += u64::from(b != 0);
    } else if e == 0 {
        acc.subnormal += 1;
    } else {
        acc.binades[binade::<T>(e)] += 1;
    }
    let v = x.value();
    acc.fmin = acc.fmin.min(v);
    acc.fmax = acc.fmax.max(v);
}

/// A finite float's bits as (exponent, signed integer mantissa); NaN and infinities are
/// counted here instead (`None`).
#[inline(always)]
pub(super) fn split<T: FloatBits>(acc: &mut FloatSum, b: u64) -> Option<(usize, i64)> {
    let special = (1u64 << T::EXP) - 1;
    let mant_mask = (1u64 << T::MANT) - 1;
    let e = (b >> T::MANT) & special;
    if e == special {
        match (b & mant_mask != 0, b >> (T::MANT + T::EXP) != 0) {
            (true, _) => acc.nan += 1,
            (false, false) => acc.posinf += 1,
            (false, true) => acc.neginf += 1,
        }
        return None;
    }
    let m = (b & mant_mask | u64::from(e != 0) << T::MANT) as i64;
    let s = -((b >> (T::MANT + T::EXP)) as i64);
    Some((e as usize, (m ^ s) - s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    fn fsum_f64(values: &[f64]) -> Option<f64> {
        let mut acc = Accumulator::new(DType::F64);
        acc.add(values);
        acc.finish().sum.map(|n| match n {
            Number::Float(x) => x,
            Number::Int(_) => panic!("float sum expected"),
        })
    }

    #[test]
    fn float_sums_are_exact_then_rounded_once() {
        // A naive running sum loses the small terms next to the large ones.
        let v: Vec<f64> = [1e30, 1.0, -1e30, 3.0].repeat(1000);
        assert_eq!(fsum_f64(&v), Some(4000.0));
        assert_eq!(fsum_f64(&[0.1, 0.2, 0.3]), Some(0.6), "math.fsum([0.1, 0.2, 0.3])");
        assert_eq!(fsum_f64(&[1.0, 1e100, 1.0, -1e100]), Some(2.0));
        // Ties to even: 2^53 + 1 is halfway between 2^53 and 2^53 + 2.
        let big = 2f64.powi(53);
        assert_eq!(fsum_f64(&[big, 1.0]), Some(big));
        assert_eq!(fsum_f64(&[big, 1.0, 2f64.powi(-60)]), Some(big + 2.0), "sticky bit rounds up");
        assert_eq!(fsum_f64(&[big + 2.0, 1.0]), Some(big + 4.0), "tie to even upwards");
        // Subnormals and signed zeros.
        let tiny = f64::from_bits(1);
        assert_eq!(fsum_f64(&[tiny, tiny, -tiny]), Some(tiny));
        assert_eq!(fsum_f64(&[f64::MIN_POSITIVE, -tiny]).map(f64::to_bits), Some(f64::MIN_POSITIVE.to_bits() - 1));
        assert_eq!(fsum_f64(&[]).map(f64::to_bits), Some(0));
        assert_eq!(fsum_f64(&[-0.0]).map(f64::to_bits), Some(0), "the exact sum of -0.0 is 0");
        // Overflow of float64 is None; cancellation back into range is not.
        assert_eq!(fsum_f64(&[f64::MAX, f64::MAX]), None);
        assert_eq!(fsum_f64(&[f64::MAX, f64::MAX, -f64::MAX]), Some(f64::MAX));
        assert_eq!(fsum_f64(&[-f64::MAX, -f64::MAX]), None);
        // Rounding up to 2^1024 overflows too.
        let ulp = 2f64.powi(970);
        assert_eq!(fsum_f64(&[f64::MAX, ulp]), None);
        assert_eq!(fsum_f64(&[f64::MAX, ulp / 2.0 * 0.99]), Some(f64::MAX));
    }

    #[test]
    fn classes_extremes_and_histogram() {
        let v =
            [f16::from_f32(0.0), f16::from_f32(-0.0), f16::from_bits(1), f16::INFINITY, f16::NAN, f16::from_f32(3.0)];
        let mut a = Accumulator::new(DType::F16);
        a.add(&v);
        let s = a.finish();
        assert_eq!((s.count, s.finite, s.nan, s.posinf, s.neginf, s.zero, s.subnormal), (6, 4, 1, 1, 0, 2, 1));
        assert_eq!(s.min.map(|n| matches!(n, Number::Float(x) if x.to_bits() == (-0.0f64).to_bits())), Some(true));
        assert_eq!(s.max, Some(Number::Float(3.0)));
        assert_eq!(s.binades, [(1, 1)], "3.0 is in [2, 4); the float16 subnormal is not a binade");
    }
}
