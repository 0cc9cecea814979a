//! The exact sum of a result and its rounding: the total of a float result's exponent buckets
//! (`buckets[k]` counts units of 2^(k - 1075), float64's smallest subnormal being bucket 1's
//! unit), kept exactly as an integer times a power of two ([`ExactSum`], the report's
//! `exact_sum`), and correctly rounded to float64, to nearest with ties to even, as Python's
//! `math.fsum`.

use num_bigint::{BigInt, BigUint, Sign};

/// The exact total `sum(buckets[k] * 2^(k - 1075))` as its sign and magnitude bits, bit k of
/// weight 2^(k - 1075): the same for any spread of the same total over the buckets.
pub(super) fn exact_bits(buckets: &[i128]) -> (bool, Vec<u8>) {
    // Two's complement bits of the total, by carrying each bucket's value up: bit k is the
    // total's low bit at that weight, the rest moves on.
    let mut bits = Vec::with_capacity(buckets.len() + 140);
    let mut carry: i128 = 0;
    for &b in buckets {
        let v = carry + b;
        bits.push((v & 1) as u8);
        carry = v >> 1;
    }
    while carry != 0 && carry != -1 {
        bits.push((carry & 1) as u8);
        carry >>= 1;
    }
    let negative = carry == -1;
    if negative {
        // Magnitude of a negative two's complement number: invert and add one.
        let mut c = 1u8;
        for b in bits.iter_mut() {
            let v = (*b ^ 1) + c;
            *b = v & 1;
            c = v >> 1;
        }
    }
    (negative, bits)
}

/// An exact sum, `significand * 2^exp2`, normalised: the significand is odd, or 0 with `exp2`
/// 0, so that equal values have one form (`docs/report.md`, "stats"). Sums of any summaries
/// add exactly, in any order; this is what `tensorop merge-stats` adds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExactSum {
    pub(crate) significand: BigInt,
    pub(crate) exp2: i64,
}

impl ExactSum {
    /// `significand * 2^exp2`, normalised.
    pub(crate) fn new(significand: BigInt, exp2: i64) -> ExactSum {
        match significand.trailing_zeros() {
            None => ExactSum::default(),
            Some(tz) => ExactSum { significand: significand >> tz, exp2: exp2 + tz as i64 },
        }
    }

    /// The exact total of float exponent buckets (see [`exact_bits`]).
    pub(super) fn of_buckets(buckets: &[i128]) -> ExactSum {
        let (negative, bits) = exact_bits(buckets);
        let magnitude = BigUint::from_radix_le(&bits, 2).unwrap_or_default();
        let sign = if negative { Sign::Minus } else { Sign::Plus };
        ExactSum::new(BigInt::from_biguint(sign, magnitude), -1075)
    }

    /// Adds another exact sum, exactly.
    pub(crate) fn add(&mut self, o: &ExactSum) {
        let e = self.exp2.min(o.exp2);
        // Both exponents come from sums of float64 or integer elements (at least -1074), or
        // from a report, whose exponents are checked before they are added.
        let a = &self.significand << (self.exp2 - e) as u64;
        let b = &o.significand << (o.exp2 - e) as u64;
        *self = ExactSum::new(a + b, e);
    }

    /// The value as an integer, when it is one.
    pub(crate) fn integer(&self) -> Option<BigInt> {
        (self.exp2 >= 0).then(|| &self.significand << self.exp2 as u64)
    }

    /// The value correctly rounded to float64 (to nearest, ties to even); `None` when it is
    /// beyond float64 (2^1024 or more once rounded).
    ///
    /// The 53 bits from the highest set one are kept, but never a unit below float64's smallest
    /// subnormal (2^-1074); the bit below them is the round bit, and every lower bit makes the
    /// sticky bit.
    pub(crate) fn rounded(&self) -> Option<f64> {
        let m = self.significand.magnitude();
        if m.bits() == 0 {
            return Some(0.0);
        }
        let top = self.exp2 + m.bits() as i64 - 1;
        if top >= 1024 {
            return None;
        }
        let lo = (top - 52).max(-1074);
        let (mut q, mut lo) = if lo <= self.exp2 {
            // Exact: at most 53 bits, none below the smallest subnormal.
            (u64::try_from(m << (self.exp2 - lo) as u64).ok()?, lo)
        } else {
            let shift = (lo - self.exp2) as u64;
            let q = u64::try_from(m >> shift).ok()?;
            let half = m.bit(shift - 1);
            let sticky = m.trailing_zeros().is_some_and(|tz| tz < shift - 1);
            let up = half && (sticky || q & 1 == 1);
            (q + u64::from(up), lo)
        };
        if q == 1 << 53 {
            // Back to 53 bits (the value is the same either way: 2^53 * 2^e = 2^52 * 2^(e+1)).
            q >>= 1;
            lo += 1;
        }
        // q * 2^lo >= 2^1024: beyond float64.
        if i64::from(64 - q.leading_zeros()) + lo > 1024 {
            return None;
        }
        let v = q as f64 * pow2(lo);
        Some(if self.significand.sign() == Sign::Minus { -v } else { v })
    }
}

/// 2^e exactly, for e from -1074 to 1023.
pub(super) fn pow2(e: i64) -> f64 {
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rounded total of the terms `m * 2^e` (`e` from -1074 up), each in its bucket.
    fn total(terms: &[(i128, i64)]) -> Option<u64> {
        let mut buckets = vec![0i128; 2048];
        for &(m, e) in terms {
            buckets[(e + 1075) as usize] += m;
        }
        ExactSum::of_buckets(&buckets).rounded().map(f64::to_bits)
    }

    fn bits(x: f64) -> Option<u64> {
        Some(x.to_bits())
    }

    /// One unit of float64's smallest subnormal: 2^-1074.
    const TINY: (i128, i64) = (1, -1074);
    const P53: i128 = 1 << 53;

    // Every expected value below is Python's `float(fractions.Fraction(...))` of the same exact
    // total (and `math.fsum` where the terms are floats): the exact sum rounded once.

    #[test]
    fn exact_ties_go_to_even_both_ways() {
        // 2^53 + 1: halfway between 2^53 and 2^53 + 2, whose kept bits are even: down.
        assert_eq!(total(&[(P53 + 1, 0)]), bits(9007199254740992.0));
        // 2^53 + 3: halfway between 2^53 + 2 (odd) and 2^53 + 4: up.
        assert_eq!(total(&[(P53 + 3, 0)]), bits(9007199254740996.0));
        assert_eq!(total(&[(-P53 - 3, 0)]), bits(-9007199254740996.0));
    }

    #[test]
    fn a_sticky_bit_far_below_breaks_a_tie_upwards() {
        // 2^53 + 1 + 2^-1074: the only bit past the round bit is the smallest subnormal unit.
        assert_eq!(total(&[(P53 + 1, 0), TINY]), bits(9007199254740994.0));
        assert_eq!(total(&[(-P53 - 1, 0), (-1, -1074)]), bits(-9007199254740994.0));
        // Just below the tie: 2^53 + 1 - 2^-1074 rounds down.
        assert_eq!(total(&[(P53 + 1, 0), (-1, -1074)]), bits(9007199254740992.0));
        // A sticky bit just below the round bit.
        assert_eq!(total(&[(P53 + 1, 0), (1, -1)]), bits(9007199254740994.0));
    }

    #[test]
    fn subnormal_totals_are_exact() {
        assert_eq!(total(&[(3, -1074)]), bits(1.5e-323));
        // The largest subnormal, and one unit more: the smallest normal.
        assert_eq!(total(&[(1, -1022), (-1, -1074)]), bits(2.225073858507201e-308));
        assert_eq!(total(&[(1, -1022), (-1, -1074), TINY]), bits(2.2250738585072014e-308));
        assert_eq!(total(&[(-3, -1074)]), bits(-1.5e-323));
        assert_eq!(total(&[(3, -1074), (-3, -1074)]), bits(0.0));
    }

    #[test]
    fn the_first_rounded_binades_round_with_their_lowest_bits() {
        // (2^53 + 1) and (2^53 + 3) units of 2^-1074: 54 bits, so the round bit is the smallest
        // subnormal unit itself (bit 1), with nothing below it: ties, to even.
        assert_eq!(total(&[(P53 + 1, -1074)]), bits(4.450147717014403e-308));
        assert_eq!(total(&[(P53 + 3, -1074)]), bits(4.450147717014405e-308));
        // (2^54 + 1) and (2^54 + 3) units: 55 bits, the round bit is bit 2 and the sticky bit
        // only bit 1.
        assert_eq!(total(&[(2 * P53 + 1, -1074)]), bits(8.900295434028806e-308));
        assert_eq!(total(&[(2 * P53 + 3, -1074)]), bits(8.900295434028808e-308));
    }

    #[test]
    fn rounding_up_can_carry_into_the_next_binade() {
        // 2^54 - 1: 54 bits all set, a tie whose kept bits are odd: up to 2^54.
        assert_eq!(total(&[(2 * P53 - 1, 0)]), bits(1.8014398509481984e16));
        // 2^53 - 1/2 - 2^-1074 stays below: 2^53 - 1.
        assert_eq!(total(&[(P53, 0), (-1, -1), (-1, -1074)]), bits(9007199254740991.0));
    }

    #[test]
    fn the_largest_finite_value_and_overflow() {
        let max = ((P53 - 1), 971);
        assert_eq!(total(&[max]), bits(f64::MAX));
        // MAX plus just under half its unit in the last place (2^970) stays MAX ...
        assert_eq!(total(&[max, (1, 970), (-1, -1074)]), bits(f64::MAX));
        // ... and half of it exactly is a tie on an odd significand: up to 2^1024, beyond
        // float64 (`math.fsum` raises OverflowError).
        assert_eq!(total(&[max, (1, 970)]), None);
        assert_eq!(total(&[(1 - P53, 971), (-1, 970)]), None);
        // Twice MAX overflows; cancelled back into range it does not.
        assert_eq!(total(&[max, max]), None);
        assert_eq!(total(&[max, max, (1 - P53, 971)]), bits(f64::MAX));
    }

    #[test]
    fn zero_totals_are_positive_zero() {
        assert_eq!(total(&[]), bits(0.0));
        assert_eq!(total(&[(5, 3), (-5, 3)]), bits(0.0));
    }
}
