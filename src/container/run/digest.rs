//! What `--stats` over a container prints on standard error, and the order it ranks members in.
//!
//! The totals come first (pairs compared, how many differ, how many are identical, the merged
//! summary, and the members whose shape changed), then the worst members, worst first: the [`SHOWN`] worst of those that differ, or
//! with `-v` every member, and a line counting those left out. The report's `rank` key
//! (`report::container`) is the same order, so a script finds there what standard error shows.
//!
//! A member's rank key measures how far its result is from all zeros: for `sqdiff` its mean
//! squared error, for `sub` its largest |difference|. The summary's extremes and mean cover the
//! finite elements only, so a result holding a NaN ranks first (worst) and one holding an
//! infinity next (its key is +inf); equal keys (-0 and +0 included) rank by name, and a result
//! that is all zeros ranks after every one that is not.
//!
//! A pair whose inputs' shapes differ is never "identical": a member that changed shape between
//! two containers is not computed and is listed with both shapes; one broadcast on purpose
//! (`--broadcast numpy`, or a `.npy` against a container) counts as differing, whatever its
//! result.

use crate::config::Config;
use crate::container::pairs::Reshaped;
use crate::op::Op;
use crate::output::Destination;
use crate::report::summary::{human_part, one_line, Label};
use crate::summary::{Number, Summary};
use crate::text::counted;
use std::cmp::Ordering;

/// The members standard error lists without `-v`.
pub(super) const SHOWN: usize = 10;

/// One computed member pair, as standard error names it.
pub(super) struct Row<'a> {
    pub(super) name: &'a str,
    pub(super) dtype: &'a str,
    pub(super) shape: &'a [u64],
    /// Its inputs' shapes, where two containers' members of different shapes were broadcast.
    pub(super) shapes: Option<[&'a [u64]; 2]>,
    /// Two containers' members of one shape: whether A's is B's, bit for bit (the comparison
    /// core's verdict).
    pub(super) identical: Option<bool>,
    pub(super) summary: &'a Summary,
}

impl Row<'_> {
    /// Whether the pair differs: A's member is not B's bit for bit, or (a `.npy` against a
    /// container) its result holds anything but zeros; and always when the shapes differ.
    fn differs(&self) -> bool {
        match self.identical {
            Some(identical) => !identical,
            None => self.shapes.is_some() || differs(self.summary),
        }
    }
}

/// Whether a member's result holds anything but zeros (a NaN counts).
pub(super) fn differs(s: &Summary) -> bool {
    s.zero != s.count
}

/// What the rank key is, in words.
fn key_name(op: Op) -> &'static str {
    match op {
        Op::Sub => "max |difference|",
        Op::SqDiff => "mean squared error",
    }
}

/// A member's rank key.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Key {
    /// The result holds a NaN.
    Nan,
    /// A float64 key, never NaN: +inf for a result holding an infinity.
    Float(f64),
    /// An integer result's largest |difference|, exact.
    Int(u128),
}

/// The rank key of the result `s` of `op`.
fn key(op: Op, s: &Summary) -> Key {
    if s.nan > 0 {
        return Key::Nan;
    }
    if s.posinf > 0 || s.neginf > 0 {
        return Key::Float(f64::INFINITY);
    }
    if s.finite == 0 {
        return Key::Float(0.0);
    }
    match op {
        Op::SqDiff => Key::Float(s.mean.unwrap_or_else(|| mean_beyond_float64(s))),
        Op::Sub => {
            let magnitude = |n: &Option<Number>| match n {
                Some(Number::Float(x)) => Key::Float(x.abs()),
                // An element of a 64-bit dtype at most, so `high` is 0.
                Some(Number::Int(v)) if v.high == 0 => Key::Int(v.low.unsigned_abs()),
                Some(Number::Int(_)) => Key::Int(u128::MAX),
                None => Key::Float(0.0),
            };
            let (lo, hi) = (magnitude(&s.min), magnitude(&s.max));
            if compare(lo, hi) == Ordering::Greater {
                lo
            } else {
                hi
            }
        }
    }
}

/// The mean of finite elements whose sum is beyond float64 (the summary's `mean` is then
/// `None`): the sum scaled down by 2^64 to round it, divided, and scaled back.
fn mean_beyond_float64(s: &Summary) -> f64 {
    let mut scaled = s.exact_sum.clone();
    scaled.exp2 -= 64;
    scaled.rounded().map_or(f64::INFINITY, |sum| sum / s.finite as f64 * 2f64.powi(64))
}

/// `Greater` when `a` is the worse (larger) key.
fn compare(a: Key, b: Key) -> Ordering {
    match (a, b) {
        (Key::Nan, Key::Nan) => Ordering::Equal,
        (Key::Nan, _) => Ordering::Greater,
        (_, Key::Nan) => Ordering::Less,
        (Key::Float(x), Key::Float(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        (Key::Int(x), Key::Int(y)) => x.cmp(&y),
        (Key::Float(x), Key::Int(y)) => float_vs_int(x, y),
        (Key::Int(x), Key::Float(y)) => float_vs_int(y, x).reverse(),
    }
}

/// `x` against `y` exactly (a `sub` over float and integer members).
fn float_vs_int(x: f64, y: u128) -> Ordering {
    let rounded = y as f64;
    match x.partial_cmp(&rounded) {
        Some(Ordering::Equal) => {}
        Some(o) => return o,
        None => return Ordering::Less,
    }
    // `x` equals `y` rounded: an integer, at most 2^128 (which `y` is below).
    if x >= 2f64.powi(128) {
        Ordering::Greater
    } else {
        (x as u128).cmp(&y)
    }
}

/// The indices of `rows`, worst first: those that differ before those that do not (a key can be
/// 0 or below for a result that differs: a float64 mean that underflows, an integer `sqdiff`'s
/// wrapped squares), then by rank key, NaN first, equal keys by name (then in their order,
/// which `sort_by` keeps).
pub(super) fn ranking(op: Op, rows: &[(&str, &Summary)]) -> Vec<usize> {
    let keys: Vec<(bool, Key)> = rows.iter().map(|(_, s)| (differs(s), key(op, s))).collect();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&i, &j| {
        let ((di, ki), (dj, kj)) = (keys[i], keys[j]);
        dj.cmp(&di).then_with(|| compare(kj, ki)).then_with(|| rows[i].0.cmp(rows[j].0))
    });
    order
}

/// Each member's rank, 1 for the worst, among those with a summary; `None` for the others.
pub(super) fn ranks(op: Op, summaries: &[(&str, Option<&Summary>)]) -> Vec<Option<usize>> {
    let with: Vec<(usize, (&str, &Summary))> =
        summaries.iter().enumerate().filter_map(|(i, (n, s))| s.map(|s| (i, (*n, s)))).collect();
    let rows: Vec<(&str, &Summary)> = with.iter().map(|w| w.1).collect();
    let mut ranks = vec![None; summaries.len()];
    for (place, k) in ranking(op, &rows).into_iter().enumerate() {
        ranks[with[k].0] = Some(place + 1);
    }
    ranks
}

/// `--stats` on standard error: the totals (every summary in `totals`, labelled, with the
/// histogram only with `-v`), then the worst members and how many were left out.
pub(super) fn print(cfg: &Config, rows: &[Row], reshaped: &[Reshaped], totals: &[(&str, &Summary)]) {
    let differing = rows.iter().filter(|r| r.differs()).count();
    let broadcast = rows.iter().filter(|r| r.shapes.is_some()).count();
    let same = if rows.iter().all(|r| r.identical.is_some()) { "bit-identical" } else { "identical (all-zero result)" };
    let mut head = format!(
        "tensorop: {} compared: {differing} differ, {} {same}",
        counted(rows.len() as u64, "member pair"),
        rows.len() - differing
    );
    if broadcast > 0 {
        head += &format!("; {broadcast} of them broadcast between different shapes, which counts as differing");
    }
    if !reshaped.is_empty() {
        head += &format!("; {} changed shape, not computed:", counted(reshaped.len() as u64, "more member"));
    }
    eprintln!("{head}");
    for r in reshaped {
        let [a, b] = r.shapes.clone().map(|s| crate::shape::fmt_shape(&s));
        eprintln!("tensorop:   {}: {a} in A, {b} in B", r.name);
    }
    for (dtype, s) in totals {
        let label = Label { of: cfg.sem.op.name(), dtype, mean: cfg.sem.op.mean_name() };
        eprint!("{}", human_part(s, &label, cfg.verbose));
    }
    let keyed: Vec<(&str, &Summary)> = rows.iter().map(|r| (r.name, r.summary)).collect();
    let listed: Vec<usize> =
        ranking(cfg.sem.op, &keyed).into_iter().filter(|&i| cfg.verbose || rows[i].differs()).collect();
    let shown = if cfg.verbose { listed.len() } else { listed.len().min(SHOWN) };
    if shown == 0 {
        return;
    }
    let by = key_name(cfg.sem.op);
    eprintln!(
        "tensorop: {}, worst first by {by} (NaN first, equal ones by name):",
        if cfg.verbose {
            format!("every member pair ({})", rows.len())
        } else if shown < listed.len() {
            format!("the {shown} worst of {differing} differing members")
        } else {
            format!("the {}", counted(shown as u64, "differing member"))
        }
    );
    for &i in &listed[..shown] {
        eprintln!("tensorop: {}", line(&rows[i]));
    }
    let left = listed.len() - shown;
    if left > 0 {
        let report = match &cfg.report {
            Some(Destination::Path(p)) => format!("the report ({}) lists every member", p.display()),
            Some(Destination::Stdout) => "the report on standard output lists every member".to_string(),
            None => "--report PATH writes every member to a report".to_string(),
        };
        let more = counted(left as u64, "more differing member");
        eprintln!("tensorop: {more} not shown: -v prints them all; {report}");
    }
}

/// One member's line: its name, dtype and shape, and its result in short, with its infinities
/// (which the extremes and the mean leave out).
fn line(r: &Row) -> String {
    let s = r.summary;
    let mut inf = String::new();
    for (n, sign) in [(s.posinf, '+'), (s.neginf, '-')] {
        if n > 0 {
            inf.push_str(&format!(", {n} {sign}inf"));
        }
    }
    let shapes = match r.shapes {
        Some([a, b]) => {
            format!(" (broadcast: {} in A, {} in B)", crate::shape::fmt_shape(a), crate::shape::fmt_shape(b))
        }
        None => String::new(),
    };
    format!(
        "{}: {} {}{shapes}: {}{inf}",
        r.name,
        r.dtype,
        crate::shape::fmt_shape(r.shape),
        one_line(s, crate::dtype::DType::from_name(r.dtype))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::summary::Accumulator;

    fn summary_f32(v: &[f32]) -> Summary {
        let mut a = Accumulator::new(DType::F32);
        a.add(v);
        a.finish()
    }

    fn summary_i64(v: &[i64]) -> Summary {
        let mut a = Accumulator::new(DType::I64);
        a.add(v);
        a.finish()
    }

    #[test]
    fn nan_ranks_first_then_infinity_then_the_key_and_ties_by_name() {
        let rows = [
            ("small", summary_f32(&[0.0, 0.5])),
            ("inf", summary_f32(&[f32::INFINITY, 0.0])),
            ("zero", summary_f32(&[0.0, -0.0])),
            ("nan_b", summary_f32(&[f32::NAN])),
            ("big", summary_f32(&[4.0, 4.0])),
            ("nan_a", summary_f32(&[1.0, f32::NAN])),
            ("big_too", summary_f32(&[8.0, 0.0])),
            ("a_zero", summary_f32(&[0.0])),
        ];
        let keyed: Vec<(&str, &Summary)> = rows.iter().map(|(n, s)| (*n, s)).collect();
        let names = |op| ranking(op, &keyed).into_iter().map(|i| rows[i].0).collect::<Vec<_>>();
        // sqdiff: by mean (big and big_too tie at 4).
        assert_eq!(names(Op::SqDiff), ["nan_a", "nan_b", "inf", "big", "big_too", "small", "a_zero", "zero"]);
        // sub: by max |x| (big_too's 8 above big's 4).
        assert_eq!(names(Op::Sub), ["nan_a", "nan_b", "inf", "big_too", "big", "small", "a_zero", "zero"]);
    }

    #[test]
    fn sub_keys_are_the_largest_magnitude_compared_exactly_across_kinds() {
        let neg = summary_i64(&[-(1 << 60) - 1, 3]);
        let pos = summary_f32(&[(1u64 << 60) as f32]);
        assert_eq!(key(Op::Sub, &neg), Key::Int((1 << 60) + 1));
        assert_eq!(compare(key(Op::Sub, &neg), key(Op::Sub, &pos)), Ordering::Greater);
        assert_eq!(float_vs_int(2f64.powi(60), 1 << 60), Ordering::Equal);
        assert_eq!(float_vs_int(2f64.powi(128), u128::MAX), Ordering::Greater);
        assert_eq!(float_vs_int(f64::INFINITY, u128::MAX), Ordering::Greater);
        // A wrapped integer sqdiff whose mean is below 0 still ranks before an all-zero result.
        let wrapped = summary_i64(&[-3, 0]);
        let zero = summary_i64(&[0, 0]);
        let keyed = [("a", &zero), ("b", &wrapped)];
        assert_eq!(ranking(Op::SqDiff, &keyed), [1, 0]);
        let rows = [("a", summary_f32(&[1.0])), ("b", neg.clone())];
        let with: Vec<(&str, Option<&Summary>)> = vec![("a", Some(&rows[0].1)), ("x", None), ("b", Some(&rows[1].1))];
        assert_eq!(ranks(Op::Sub, &with), [Some(2), None, Some(1)]);
    }

    #[test]
    fn a_members_line_counts_the_infinities_its_extremes_leave_out() {
        let s = summary_f32(&[0.5, f32::NEG_INFINITY, 0.0]);
        let row = Row { name: "w", dtype: "float32", shape: &[3], shapes: None, identical: None, summary: &s };
        assert_eq!(line(&row), "w: float32 [3]: 2 of 3 elements non-zero (0 NaN), min 0, max 0.5, mean 0.25, 1 -inf");
        assert_eq!(key(Op::Sub, &s), Key::Float(f64::INFINITY));
    }
}
