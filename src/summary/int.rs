//! The integer kind of summary: counts, extremes, the histogram by binade of `|x|` and the
//! exact sum in 192 bits ([`WideInt`]), for every integer dtype.

use super::exact::ExactSum;
use super::wide::WideInt;
use super::{Accumulator, Number, Summarise, Summary};

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

macro_rules! summarise_ints {
    ($($t:ty),*) => {$(
        impl Summarise for $t {
            /// Blocks of 2^16 elements sum in an `i128` without overflow checks (at most 2^80).
            fn add_all(acc: &mut Accumulator, values: &[Self]) {
                let acc = int_sum(acc);
                acc.count += values.len() as u64;
                for block in values.chunks(1 << 16) {
                    let (mut sum, mut mn, mut mx) = (0i128, acc.min, acc.max);
                    for &x in block {
                        let x = x as i128;
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
        }
    )*};
}
summarise_ints!(i8, i16, i32, i64, u8, u16, u32, u64);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

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
