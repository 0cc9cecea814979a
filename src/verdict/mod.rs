//! The comparison core: the one place that decides whether two results are identical, how far
//! apart they are and where they first differ (`docs/cli.md`, "Verdicts"). `tensorop compare`,
//! the directml backend's `--verify` and the container digests all count with a [`Tally`].
//!
//! A tally compares two streams of little-endian elements of one dtype, chunk by chunk, and
//! records how many elements the result has ([`Tally::elements`]) beside how many it compared
//! ([`Tally::compared`]): a verdict over part of a result is never "identical"
//! ([`Tally::identical`]). Element by element: bits decide equality (a NaN equals only the same
//! NaN bits; +0 and -0 differ); [`element::ulp_distance`] and [`element::Tolerance`] (NumPy's
//! `isclose`, exactly) say how far apart two differing elements are; the first differences are
//! kept as [`Difference`]s, located by member or dispatch, multi-index and both bit patterns.

pub mod conformant;
pub mod element;

use crate::dtype::DType;
use element::{abs_diff, bits_text, exact, ulp_distance, value, Diff, Tolerance};
use serde::Serialize;

/// How many differences a tally keeps.
pub const FIRST: usize = 10;

/// Where a compared element belongs, beyond its index: a member of a container or a dispatch of
/// a model (and its order among them, so that merged tallies keep the first in run order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// A single result.
    #[default]
    Whole,
    /// The member of this name, the `n`th compared.
    Member(String, u64),
    /// The dispatch of this name, the `n`th run.
    Dispatch(String, u64),
}

impl Scope {
    fn order(&self) -> u64 {
        match self {
            Scope::Whole => 0,
            Scope::Member(_, n) | Scope::Dispatch(_, n) => *n,
        }
    }
}

/// One differing element: where it is and both sides, as values and as bits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// The container member it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// The model's dispatch that wrote it (`tensorop run`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatch: Option<String>,
    /// Its position in C order (in the member's or dispatch's output).
    pub element: u64,
    /// Its NumPy index into the output's shape.
    pub index: Vec<u64>,
    /// Side A's value, in the fewest digits that read back as it (a NaN with its bits).
    pub a: String,
    pub b: String,
    /// Both bit patterns, as wide as the type: `0x3C00`.
    pub a_bits: String,
    pub b_bits: String,
    /// Units in the last place between them ([`element::ulp_distance`]).
    pub ulps: Option<u64>,
    #[serde(skip)]
    order: u64,
}

impl Difference {
    /// Where it is, in words: `member w, element [0, 1]`.
    pub fn place(&self) -> String {
        let index = crate::shape::fmt_shape(&self.index);
        match (&self.member, &self.dispatch) {
            (Some(m), _) => format!("member {m:?}, element {index}"),
            (_, Some(d)) => format!("dispatch {d:?}, element {index}"),
            _ => format!("element {index}"),
        }
    }
}

/// The largest absolute difference so far: its float64 estimate (rounded once from the exact
/// value, so it orders as the exact values do, but for ties) and its exact value.
#[derive(Debug, Clone, PartialEq)]
struct Largest {
    estimate: f64,
    exact: Diff,
}

/// Whether the `i`th differing pair `(x, y)` of a chunk is within what is allowed.
pub type Accept<'f> = dyn Fn(usize, &[u8], &[u8]) -> bool + 'f;

/// A comparison of two results of one dtype, element by element, as chunks arrive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tally {
    /// Elements the result has: the comparison is complete when it compared them all.
    pub elements: u64,
    /// Elements compared.
    pub compared: u64,
    /// Compared elements whose bits differ.
    pub differing: u64,
    /// Differing elements outside every tolerance given (all of them when none is given).
    pub outside_tolerance: u64,
    /// Differing pairs where one side is NaN, or both are NaNs of different bits.
    pub nan_mismatches: u64,
    /// Of the differing pairs that are numbers on both sides, the largest |a - b|, every digit.
    pub max_abs_difference: Option<String>,
    pub max_abs_difference_at: Option<Vec<u64>>,
    /// The largest distance in units in the last place among the differing pairs that have one.
    pub max_ulps: Option<u64>,
    pub max_ulps_at: Option<Vec<u64>>,
    /// The first [`FIRST`] differences, in order.
    pub first_differences: Vec<Difference>,
    /// The first difference outside the tolerances (or what `compare --conformant` allows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_outside: Option<Difference>,
    #[serde(skip)]
    dtype: DType,
    #[serde(skip)]
    shape: Vec<u64>,
    #[serde(skip)]
    tolerance: Tolerance,
    #[serde(skip)]
    scope: Scope,
    #[serde(skip)]
    largest: Option<Largest>,
}

impl Tally {
    /// A tally of a result of `dtype` and `shape`, nothing compared yet; `tolerance` decides
    /// which differences are outside it (none given: every one).
    pub fn new(dtype: DType, shape: &[u64], tolerance: Tolerance) -> Tally {
        Tally {
            elements: shape.iter().product(),
            compared: 0,
            differing: 0,
            outside_tolerance: 0,
            nan_mismatches: 0,
            max_abs_difference: None,
            max_abs_difference_at: None,
            max_ulps: None,
            max_ulps_at: None,
            first_differences: Vec::new(),
            first_outside: None,
            dtype,
            shape: shape.to_vec(),
            tolerance,
            scope: Scope::Whole,
            largest: None,
        }
    }

    /// Names what this tally compares (a member or a dispatch): its differences say so.
    pub fn scoped(mut self, scope: Scope) -> Tally {
        for d in self.first_differences.iter_mut().chain(self.first_outside.as_mut()) {
            apply(&scope, d);
        }
        self.scope = scope;
        self
    }

    /// Compares `a` with `b`, the result's elements from `first` on, little-endian. Only whole
    /// pairs are compared: where one side is shorter (a reference that stopped early), the
    /// elements past it stay uncompared, and the tally is not complete.
    pub fn add(&mut self, first: u64, a: &[u8], b: &[u8]) {
        let (dtype, tolerance) = (self.dtype, self.tolerance);
        self.add_judged(first, a, b, &|_, x, y| tolerance.allows(dtype, x, y));
    }

    /// As [`add`](Self::add), but a differing pair is outside when `accept(i, x, y)` says no
    /// for the `i`th pair (the allowed results of `compare --conformant`) instead of by the
    /// tolerances.
    pub fn add_judged(&mut self, first: u64, a: &[u8], b: &[u8], accept: &Accept<'_>) {
        let dtype = self.dtype;
        let es = dtype.size();
        for (i, (x, y)) in a.chunks_exact(es).zip(b.chunks_exact(es)).enumerate() {
            self.compared += 1;
            if x != y {
                self.record(dtype, first + i as u64, x, y, accept(i, x, y));
            }
        }
    }

    /// Records one differing pair at position `flat`; `within` says whether it is within what
    /// is allowed (the tolerances, or `compare --conformant`'s results).
    fn record(&mut self, dtype: DType, flat: u64, x: &[u8], y: &[u8], within: bool) {
        self.differing += 1;
        if !within {
            self.outside_tolerance += 1;
        }
        let index = || unravel(&self.shape, flat);
        if value(dtype, x).is_nan() || value(dtype, y).is_nan() {
            self.nan_mismatches += 1;
        } else if let Some(l) = outgrows(self.largest.as_ref(), dtype, [x, y]) {
            self.max_abs_difference = Some(l.exact.decimal());
            self.max_abs_difference_at = Some(index());
            self.largest = Some(l);
        }
        let ulps = ulp_distance(dtype, x, y);
        if let Some(u) = ulps {
            if self.max_ulps.is_none_or(|m| u > m) {
                self.max_ulps = Some(u);
                self.max_ulps_at = Some(index());
            }
        }
        if self.first_differences.len() < FIRST || (!within && self.first_outside.is_none()) {
            let mut d = Difference {
                member: None,
                dispatch: None,
                element: flat,
                index: index(),
                a: exact(dtype, x),
                b: exact(dtype, y),
                a_bits: bits_text(x),
                b_bits: bits_text(y),
                ulps,
                order: 0,
            };
            apply(&self.scope, &mut d);
            if !within && self.first_outside.is_none() {
                self.first_outside = Some(d.clone());
            }
            if self.first_differences.len() < FIRST {
                self.first_differences.push(d);
            }
        }
    }

    /// Whether every element of the result was compared.
    pub fn complete(&self) -> bool {
        self.compared == self.elements
    }

    /// Complete, and not one element differs in its bits.
    pub fn identical(&self) -> bool {
        self.complete() && self.differing == 0
    }

    /// Complete, and every difference within the tolerances given.
    pub fn within_tolerance(&self) -> bool {
        self.complete() && self.outside_tolerance == 0
    }

    /// `bit_identical`, `within_tolerance`, `different`, or `incomplete` (fewer elements
    /// compared than the result has, and none outside the tolerances among them).
    pub fn verdict(&self) -> &'static str {
        if self.outside_tolerance > 0 {
            "different"
        } else if !self.complete() {
            "incomplete"
        } else if self.differing == 0 {
            "bit_identical"
        } else {
            "within_tolerance"
        }
    }

    /// The first difference, where there is one.
    pub fn first(&self) -> Option<&Difference> {
        self.first_differences.first()
    }

    /// The largest absolute difference as text ([`Diff::text`]).
    pub fn max_abs_text(&self) -> Option<String> {
        self.largest.as_ref().map(|l| l.exact.text())
    }

    /// Adds another tally (another member, dispatch or part): counts add up, the extremes are
    /// the larger, and the first differences stay the first in run order (by scope, then
    /// position). Locations of the extremes are kept only within one result.
    pub fn merge(&mut self, o: &Tally) {
        self.elements += o.elements;
        self.compared += o.compared;
        self.differing += o.differing;
        self.outside_tolerance += o.outside_tolerance;
        self.nan_mismatches += o.nan_mismatches;
        if o.max_ulps > self.max_ulps {
            self.max_ulps = o.max_ulps;
            self.max_ulps_at = o.max_ulps_at.clone();
        }
        let theirs_larger = match (&self.largest, &o.largest) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(m), Some(t)) => t.exact.cmp_exact(&m.exact).is_gt(),
        };
        if theirs_larger {
            self.largest = o.largest.clone();
            self.max_abs_difference = o.max_abs_difference.clone();
            self.max_abs_difference_at = o.max_abs_difference_at.clone();
        }
        self.first_outside = match (self.first_outside.take(), &o.first_outside) {
            (Some(m), Some(t)) if (t.order, t.element) < (m.order, m.element) => Some(t.clone()),
            (m, t) => m.or_else(|| t.clone()),
        };
        self.first_differences.extend(o.first_differences.iter().cloned());
        self.first_differences.sort_by_key(|d| (d.order, d.element));
        self.first_differences.truncate(FIRST);
        if self.dtype != o.dtype {
            // Over results of several dtypes or shapes, an index names a place only with its
            // member or dispatch, which each difference carries.
            self.shape.clear();
        }
    }
}

/// Stamps `scope` on a difference.
fn apply(scope: &Scope, d: &mut Difference) {
    d.order = scope.order();
    match scope {
        Scope::Whole => {}
        Scope::Member(name, _) => d.member = Some(name.clone()),
        Scope::Dispatch(name, _) => d.dispatch = Some(name.clone()),
    }
}

/// The NumPy index of position `flat` in C order of `shape`.
pub fn unravel(shape: &[u64], flat: u64) -> Vec<u64> {
    let mut idx = vec![0u64; shape.len()];
    let mut rest = flat;
    for k in (0..shape.len()).rev() {
        idx[k] = rest % shape[k].max(1);
        rest /= shape[k].max(1);
    }
    idx
}

/// The difference of `x` and `y` (not NaN) as the new largest, when it is larger than
/// `largest`. Floats are first compared by `|x - y|` in float64, rounded once from the exact
/// difference, so it orders as the exact differences do but for ties: only a tie (or a new
/// largest) needs the exact difference.
fn outgrows(largest: Option<&Largest>, dtype: DType, [x, y]: [&[u8]; 2]) -> Option<Largest> {
    let int = (!dtype.is_float()).then(|| abs_diff(dtype, x, y));
    let estimate = match &int {
        Some(Diff::Int(d)) => *d as f64,
        _ => (value(dtype, x) - value(dtype, y)).abs(),
    };
    let exact_diff = || int.clone().unwrap_or_else(|| abs_diff(dtype, x, y));
    let larger = match largest {
        None => true,
        Some(m) if estimate < m.estimate => false,
        Some(m) if estimate > m.estimate => true,
        Some(m) => exact_diff().cmp_exact(&m.exact).is_gt(),
    };
    larger.then(|| Largest { estimate, exact: exact_diff() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16s(v: &[u16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn identical_needs_every_element_compared() {
        let mut t = Tally::new(DType::F16, &[2, 2], Tolerance::default());
        t.add(0, &f16s(&[1, 2]), &f16s(&[1, 2]));
        assert_eq!((t.identical(), t.complete(), t.verdict()), (false, false, "incomplete"));
        // A reference one element short: three compared, never identical.
        t.add(2, &f16s(&[3, 4]), &f16s(&[3]));
        assert_eq!((t.compared, t.identical(), t.verdict()), (3, false, "incomplete"));
        t.add(3, &f16s(&[4]), &f16s(&[4]));
        assert_eq!((t.compared, t.identical(), t.verdict()), (4, true, "bit_identical"));
    }

    #[test]
    fn differences_are_located_and_counted_once() {
        let mut t = Tally::new(DType::F16, &[2, 3], Tolerance::default());
        // 0x3bff vs 0x3c00: adjacent; +0 vs -0: 0 apart; inf vs 65504: no distance; a NaN
        // against a number: no distance; the same NaN: equal.
        t.add(1, &f16s(&[0x3bff, 0x0000, 0x7c00, 0x7e00, 0x7e01]), &f16s(&[0x3c00, 0x8000, 0x7bff, 0x3c00, 0x7e01]));
        assert_eq!((t.compared, t.differing, t.nan_mismatches, t.max_ulps), (5, 4, 1, Some(1)));
        assert_eq!(t.max_abs_difference.as_deref(), Some("inf"));
        assert_eq!(t.max_abs_difference_at, Some(vec![1, 0]));
        let d = t.first().expect("a difference");
        assert_eq!((d.element, &d.index, d.a_bits.as_str(), d.b_bits.as_str()), (1, &vec![0, 1], "0x3BFF", "0x3C00"));
        assert_eq!(d.place(), "element [0, 1]");
        assert_eq!((t.verdict(), t.identical()), ("different", false));
    }

    #[test]
    fn merged_tallies_keep_the_first_difference_in_run_order() {
        let mut late = Tally::new(DType::I8, &[4], Tolerance::default()).scoped(Scope::Member("z".into(), 2));
        late.add(0, &[1, 2, 3, 4], &[0, 2, 3, 4]);
        let mut early = Tally::new(DType::I32, &[2], Tolerance::default()).scoped(Scope::Member("a".into(), 1));
        early.add(0, &[0; 8], &[0, 0, 0, 0, 9, 0, 0, 0]);
        let mut all = late.clone();
        all.merge(&early);
        let d = all.first().expect("a difference");
        assert_eq!((d.member.as_deref(), d.element, d.place()), (Some("a"), 1, "member \"a\", element [1]".into()));
        assert_eq!((all.elements, all.compared, all.differing, all.max_ulps), (6, 6, 2, Some(9)));
        assert_eq!(all.max_abs_difference.as_deref(), Some("9"));
        assert!(all.complete() && !all.identical());
    }

    #[test]
    fn tolerances_decide_what_is_outside() {
        let t = Tolerance { ulps: Some(1), ..Tolerance::default() };
        let mut v = Tally::new(DType::F32, &[2], t);
        let f = |x: &[f32]| x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        v.add(0, &f(&[1.0, 2.0]), &f(&[1.0 + f32::EPSILON, 2.0]));
        assert_eq!((v.differing, v.outside_tolerance, v.verdict()), (1, 0, "within_tolerance"));
        assert!(v.within_tolerance() && !v.identical());
    }
}
