//! Summaries of disjoint parts of a result merged into the summary of the whole: what `tensorop
//! merge-stats` does with the `stats` of several reports (`docs/cli.md`, "merge-stats").
//!
//! A finished [`Summary`] keeps everything the whole needs: the counts, the extremes (-0.0
//! before +0.0), the histogram and the exact sum. The rounded sum and the mean are computed
//! again from the merged exact sum, exactly as [`Accumulator::finish`](super::Accumulator::finish)
//! computes them, so the merge is bit for bit the summary of one run over all the elements.

use super::{Accumulator, Number, Summary, WideInt};
use crate::dtype::DType;
use anyhow::{anyhow, Result};
use std::cmp::Ordering;
use std::collections::BTreeMap;

impl Summary {
    /// The summary of no elements, of the float kind or the integer kind.
    pub fn empty(float: bool) -> Summary {
        Accumulator::new(if float { DType::F64 } else { DType::I64 }).finish()
    }

    /// Adds `o`, the summary of other elements of the same kind (`float`); fails only when a
    /// count passes 2^64 - 1.
    pub fn merge(&mut self, o: &Summary, float: bool) -> Result<()> {
        let add = |a: u64, b: u64| a.checked_add(b).ok_or_else(|| anyhow!("more than 2^64 - 1 elements in all"));
        self.count = add(self.count, o.count)?;
        self.finite = add(self.finite, o.finite)?;
        self.nan = add(self.nan, o.nan)?;
        self.posinf = add(self.posinf, o.posinf)?;
        self.neginf = add(self.neginf, o.neginf)?;
        self.zero = add(self.zero, o.zero)?;
        self.subnormal = add(self.subnormal, o.subnormal)?;
        let mut binades: BTreeMap<i64, u64> = self.binades.iter().copied().collect();
        for &(exp, n) in &o.binades {
            let slot = binades.entry(exp).or_insert(0);
            *slot = add(*slot, n)?;
        }
        self.binades = binades.into_iter().collect();
        self.min = extreme(self.min, o.min, Ordering::Less);
        self.max = extreme(self.max, o.max, Ordering::Greater);
        self.exact_sum.add(&o.exact_sum);
        self.settle(float)
    }

    /// Sets `sum` and `mean` from the exact sum and the counts, as a finished accumulator does.
    pub(crate) fn settle(&mut self, float: bool) -> Result<()> {
        if float {
            self.settle_float();
        } else {
            let exact = self.exact_sum.integer().ok_or_else(|| anyhow!("an integer sum that is not an integer"))?;
            let wide = WideInt::from_bigint(&exact).ok_or_else(|| anyhow!("an integer sum beyond 192 bits"))?;
            self.sum = Some(Number::Int(wide));
            self.mean = wide.div_rounded(self.count);
        }
        Ok(())
    }
}

impl Summary {
    /// Floats: the sum is the exact sum rounded once, the mean that sum over the finite elements
    /// (one more float64 division). A finished accumulator and a merge both end here.
    pub(crate) fn settle_float(&mut self) {
        let sum = self.exact_sum.rounded();
        self.sum = sum.map(Number::Float);
        self.mean = sum.filter(|_| self.finite > 0).map(|s| s / self.finite as f64);
    }
}

/// The one of `a` and `b` that comes first in `order` (`Less`: the minimum), where present;
/// floats in IEEE total order, so -0.0 comes before +0.0.
fn extreme(a: Option<Number>, b: Option<Number>, order: Ordering) -> Option<Number> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if compare(&y, &x) == order { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

fn compare(a: &Number, b: &Number) -> Ordering {
    match (a, b) {
        (Number::Float(x), Number::Float(y)) => x.total_cmp(y),
        (Number::Int(x), Number::Int(y)) => x.to_bigint().cmp(&y.to_bigint()),
        // Summaries of different kinds are never merged (the caller checks the dtypes).
        (Number::Float(_), Number::Int(_)) => Ordering::Less,
        (Number::Int(_), Number::Float(_)) => Ordering::Greater,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    /// Any cut of the elements into parts, merged in any order, gives the summary of the
    /// whole, key for key.
    fn check_cuts<T: super::super::Summarise>(dtype: DType, values: &[T], cuts: &[usize]) {
        let float = dtype.is_float();
        let mut whole = Accumulator::new(dtype);
        whole.add(values);
        let whole = whole.finish();
        let mut parts = Vec::new();
        let mut lo = 0;
        for &c in cuts.iter().chain([values.len()].iter()) {
            let mut a = Accumulator::new(dtype);
            a.add(&values[lo..c]);
            parts.push(a.finish());
            lo = c;
        }
        for order in [false, true] {
            let mut merged = Summary::empty(float);
            let it: Vec<&Summary> = if order { parts.iter().rev().collect() } else { parts.iter().collect() };
            for p in it {
                merged.merge(p, float).expect("merge");
            }
            assert_eq!(
                serde_json::to_string(&merged).expect("json"),
                serde_json::to_string(&whole).expect("json"),
                "{dtype:?} cut at {cuts:?}, reversed: {order}"
            );
        }
    }

    #[test]
    fn merged_parts_equal_the_whole() {
        let f: Vec<f64> =
            vec![1e308, 1e308, -1e308, 0.1, -0.0, 0.0, f64::NAN, f64::INFINITY, 5e-324, -3.5, 2f64.powi(53), 1.0];
        for cuts in [&[][..], &[1], &[3, 4], &[4, 5, 6, 7], &[0, 0, 12]] {
            check_cuts(DType::F64, &f, cuts);
        }
        // -0.0 alone in one part and +0.0 in another: the minimum is -0.0, the maximum +0.0.
        check_cuts(DType::F64, &[-0.0f64, 0.0], &[1]);
        check_cuts(DType::F64, &[0.0f64, -0.0], &[1]);
        let h: Vec<f16> = [0.5f32, -0.0, 65504.0, 6e-8, -2.0].iter().map(|&x| f16::from_f32(x)).collect();
        check_cuts(DType::F16, &h, &[2]);
        let i: Vec<i64> = vec![i64::MIN, i64::MAX, -1, 0, 7, i64::MAX, i64::MAX];
        check_cuts(DType::I64, &i, &[1, 5]);
        check_cuts(DType::U64, &[u64::MAX; 9], &[4]);
        // Nothing finite on one side.
        check_cuts(DType::F32, &[f32::NAN, 1.5, -2.25], &[1]);
    }

    #[test]
    fn sums_that_round_differently_in_parts_still_merge_exactly() {
        // Each part's rounded sum is 2^53; only the exact sums add up to 2^53 + 2.
        let v = [2f64.powi(53), 1.0, 1.0];
        check_cuts(DType::F64, &v, &[2]);
        let mut whole = Accumulator::new(DType::F64);
        whole.add(&v);
        assert_eq!(whole.finish().sum, Some(Number::Float(2f64.powi(53) + 2.0)));
    }
}
