//! The exact sum of an integer result: a signed 192-bit integer `high * 2^128 + low`, wide
//! enough for 2^64 elements of any 64-bit dtype. It adds exactly in any order, prints in
//! decimal, and divides by the element count into the correctly rounded float64 mean.

use super::exact::pow2;
use num_bigint::{BigInt, BigUint, Sign};
use std::fmt;

/// `high * 2^128 + low`, with `low` signed: the carry out of `low` goes to `high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct WideInt {
    pub(crate) high: i64,
    pub(crate) low: i128,
}

impl WideInt {
    /// A value that fits in `i128`.
    pub(crate) fn small(low: i128) -> WideInt {
        WideInt { high: 0, low }
    }

    /// Adds `x` exactly.
    #[inline(always)]
    pub(crate) fn add(&mut self, x: i128) {
        let (sum, carried) = self.low.overflowing_add(x);
        self.low = sum;
        if carried {
            self.high += if x < 0 { -1 } else { 1 };
        }
    }

    /// Adds another wide sum exactly.
    pub(crate) fn merge(&mut self, o: WideInt) {
        self.add(o.low);
        self.high += o.high;
    }

    /// The value as an arbitrary-precision integer.
    pub(crate) fn to_bigint(self) -> BigInt {
        (BigInt::from(self.high) << 128u32) + BigInt::from(self.low)
    }

    /// `v` as a wide integer, when it fits in 192 bits.
    pub(crate) fn from_bigint(v: &BigInt) -> Option<WideInt> {
        // The low 128 bits as a signed i128 (two's complement), the rest exactly above them.
        let modulus = BigInt::from(1) << 128u32;
        let mut low = v % &modulus;
        if low < BigInt::from(0) {
            low += &modulus;
        }
        if low > BigInt::from(i128::MAX) {
            low -= &modulus;
        }
        let high = (v - &low) >> 128u32;
        Some(WideInt { high: i64::try_from(high).ok()?, low: i128::try_from(low).ok()? })
    }

    /// `self / count` correctly rounded to float64 (to nearest, ties to even): one rounding of
    /// the exact quotient, however large the sum. `None` for a count of 0.
    pub(crate) fn div_rounded(self, count: u64) -> Option<f64> {
        let value = self.to_bigint();
        let q = quotient_to_f64(value.magnitude(), count)?;
        Some(if value.sign() == Sign::Minus { -q } else { q })
    }
}

impl fmt::Display for WideInt {
    /// Decimal digits, with a `-` for negative values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.high {
            0 => write!(f, "{}", self.low),
            _ => write!(f, "{}", self.to_bigint()),
        }
    }
}

/// `m / n` correctly rounded to float64 (`None` for `n = 0`), for `m` below 2^192: the quotient
/// of a non-zero `m` lies between 2^-64 and 2^192, never subnormal and never beyond float64.
fn quotient_to_f64(m: &BigUint, n: u64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    if m.bits() == 0 {
        return Some(0.0);
    }
    // Scaled by 2^k, the integer quotient has at least 54 bits: the 53 kept and the round bit.
    // Every bit below the round bit, and a non-zero remainder, make the sticky bit.
    let k = (54 + 64u64).saturating_sub(m.bits());
    let scaled = m << k;
    let divisor = BigUint::from(n);
    let (q, r) = (&scaled / &divisor, &scaled % &divisor);
    let shift = q.bits() - 53;
    let mut kept = u64::try_from(&q >> shift).ok()?;
    let round = q.bit(shift - 1);
    let below = &q & ((BigUint::from(1u32) << (shift - 1)) - 1u32);
    let sticky = below.bits() != 0 || r.bits() != 0;
    let mut exp = shift as i64 - k as i64;
    if round && (sticky || kept & 1 == 1) {
        kept += 1;
        if kept == 1 << 53 {
            kept >>= 1;
            exp += 1;
        }
    }
    // 53 bits times a power of two within float64's normal range: both exact.
    Some(kept as f64 * pow2(exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wide(v: i128) -> WideInt {
        WideInt::small(v)
    }

    #[test]
    fn carries_into_the_high_word_either_way() {
        let mut a = WideInt::small(i128::MAX - 1);
        a.add(u64::MAX.into());
        a.add(u64::MAX.into());
        assert_eq!(a.to_string(), "170141183460469231768580791863303208956", "2^127 - 2 + 2 (2^64 - 1)");
        let mut n = WideInt::small(i128::MIN + 1);
        n.add(i64::MIN.into());
        n.add(i64::MIN.into());
        assert_eq!(n.to_string(), "-170141183460469231750134047789593657343", "-2^127 + 1 - 2^64");
        n.merge(n);
        assert_eq!(n.to_string(), "-340282366920938463500268095579187314686", "twice that");
        assert_eq!(wide(-5).to_string(), "-5");
    }

    /// Each expected value is Python's `float(fractions.Fraction(sum, count))`: the exact
    /// quotient rounded once.
    #[test]
    fn the_mean_is_the_exact_quotient_rounded_once() {
        let mean = |w: WideInt, n: u64| w.div_rounded(n).map(f64::to_bits);
        let bits = |x: f64| Some(x.to_bits());
        assert_eq!(wide(3).div_rounded(0), None);
        assert_eq!(mean(wide(0), 7), bits(0.0));
        assert_eq!(mean(wide(3), 5), bits(0.6));
        assert_eq!(mean(wide(1), 3), bits(1.0 / 3.0));
        assert_eq!(mean(wide(-2), 3), bits(-2.0 / 3.0));
        // Ties: 2^53 + 1 goes down to even, 2^53 + 3 up to even; (2^54 + 2) / 2 is the first
        // again, and (2^54 + 3) / 2 rounds up only for its remainder (the sticky bit).
        let p53 = 1i128 << 53;
        assert_eq!(mean(wide(p53 + 1), 1), bits(9007199254740992.0));
        assert_eq!(mean(wide(p53 + 3), 1), bits(9007199254740996.0));
        assert_eq!(mean(wide(2 * p53 + 2), 2), bits(9007199254740992.0));
        assert_eq!(mean(wide(2 * p53 + 3), 2), bits(9007199254740994.0));
        assert_eq!(mean(wide(-(2 * p53 + 3)), 2), bits(-9007199254740994.0));
        // Just above a tie only through the remainder of the division: every quotient bit
        // below the round bit is 0.
        assert_eq!(mean(wide(785777644949932811303573993194707198), 14136303640247592237), bits(5.5585792789052616e16));
        // The smallest means: the widest divisor over a sum of 1, with 53 bits to keep.
        assert_eq!(mean(wide(1), u64::MAX), bits(5.421010862427522e-20));
        // A sum of uint64 values past 2^53: rounded to float64 first and then divided, the mean
        // would be 1.1469935491464292e+19, one unit in the last place away.
        assert_eq!(mean(wide(49825399774920890454243), 4344), bits(1.1469935491464294e+19));
        // Rounding up into the next binade: (2^54 - 1) / 2 = 2^53 - 0.5, a tie whose kept bits
        // are odd, up to 2^53.
        assert_eq!(mean(wide(2 * p53 - 1), 2), bits(9007199254740992.0));
        // The widest sums: (2^127 - 1) / 3, and -2^190 + 12345 over 2^64 - 1.
        assert_eq!(mean(wide(i128::MAX), 3), bits(5.671372782015641e+37));
        let w = WideInt { high: -(1 << 62), low: 12345 };
        assert_eq!(w.to_bigint(), (BigInt::from(-1) << 190u32) + 12345);
        assert_eq!(mean(w, u64::MAX), bits(-8.507059173023462e+37));
    }
}
