//! The exact sum of a float result, rounded once: the total of the exponent buckets
//! (`buckets[k]` counts units of 2^(k - 1075), float64's smallest subnormal being bucket 1's
//! unit) correctly rounded to float64, to nearest with ties to even, as Python's `math.fsum`.

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

/// `sum(buckets[k] * 2^(k - 1075))` correctly rounded to float64 (to nearest, ties to even);
/// `None` when it overflows float64.
///
/// The 53 bits from the highest set one are kept; the bit below them is the round bit, and
/// every lower bit, down to bit 1 (float64's smallest subnormal unit), makes the sticky bit. A
/// total below 2^-1021 has at most 53 bits above bit 0 and is exact, subnormal or not.
pub(super) fn exact_float_sum(buckets: &[i128]) -> Option<f64> {
    let (negative, bits) = exact_bits(buckets);
    let Some(top) = bits.iter().rposition(|&b| b == 1) else { return Some(if negative { -0.0 } else { 0.0 }) };
    // The result's unit in the last place: 53 significant bits, but never below float64's
    // smallest subnormal (index 1).
    let lo = top.saturating_sub(52).max(1);
    let mut q: u64 = (lo..=top).rev().fold(0, |q, k| (q << 1) | u64::from(bits[k]));
    let half = lo > 1 && bits[lo - 1] == 1;
    let sticky = lo > 2 && bits[1..lo - 1].contains(&1);
    let mut lo = lo;
    if half && (sticky || q & 1 == 1) {
        q += 1;
        if q == 1 << 53 {
            // Back to 53 bits (the value is the same either way: 2^53 * 2^e = 2^52 * 2^(e+1)).
            q >>= 1;
            lo += 1;
        }
    }
    let exp = lo as i64 - 1075;
    // q * 2^exp >= 2^1024: beyond float64.
    if i64::from(64 - q.leading_zeros()) + exp > 1024 {
        return None;
    }
    let v = q as f64 * pow2(exp);
    Some(if negative { -v } else { v })
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
        exact_float_sum(&buckets).map(f64::to_bits)
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
