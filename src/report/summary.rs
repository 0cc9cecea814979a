//! How a `--stats` summary is shown: its JSON form in the report (`docs/report.md`, "stats";
//! integers of any size as JSON numbers, digit for digit) and the short form with a bar chart
//! that `--stats` prints on standard error.

use crate::dtype::DType;
use crate::summary::{Number, Summary};
use crate::text::{counted, float_in, float_text, grouped};
use serde::ser::{Serialize, SerializeMap, Serializer};

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Number::Float(x) => s.serialize_f64(x),
            Number::Int(v) if v.high == 0 => s.serialize_i128(v.low),
            Number::Int(v) => {
                let raw = serde_json::value::RawValue::from_string(v.to_string()).map_err(serde::ser::Error::custom)?;
                raw.serialize(s)
            }
        }
    }
}

impl Serialize for Summary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Binade {
            exp: i64,
            count: u64,
        }
        #[derive(serde::Serialize)]
        struct Histogram {
            zero: u64,
            subnormal: u64,
            binades: Vec<Binade>,
        }
        #[derive(serde::Serialize)]
        struct Exact {
            significand: String,
            exp2: i64,
        }
        let mut m = s.serialize_map(Some(12))?;
        m.serialize_entry("count", &self.count)?;
        m.serialize_entry("finite", &self.finite)?;
        m.serialize_entry("nan", &self.nan)?;
        m.serialize_entry("posinf", &self.posinf)?;
        m.serialize_entry("neginf", &self.neginf)?;
        m.serialize_entry("min", &self.min)?;
        m.serialize_entry("max", &self.max)?;
        m.serialize_entry("sum", &self.sum)?;
        let exact = &self.exact_sum;
        m.serialize_entry("exact_sum", &Exact { significand: exact.significand.to_string(), exp2: exact.exp2 })?;
        m.serialize_entry("mean", &self.mean)?;
        let binades = self.binades.iter().map(|&(exp, count)| Binade { exp, count }).collect();
        m.serialize_entry("histogram", &Histogram { zero: self.zero, subnormal: self.subnormal, binades })?;
        m.end()
    }
}

/// A summary's number (an extreme, a sum) for text: [`float_text`] for floats, every digit for
/// integers.
pub(crate) fn number_text(n: &Option<Number>, dtype: Option<DType>) -> String {
    match n {
        None => "-".to_string(),
        Some(Number::Float(x)) => dtype.map_or_else(|| float_text(*x), |d| float_in(d, *x)),
        Some(Number::Int(v)) => v.to_string(),
    }
}

/// A mean for text: in the digits of the elements' dtype (a float mean lies between their
/// extremes, so it fits the dtype), or float64's for integers.
fn mean_text(mean: Option<f64>, dtype: Option<DType>) -> String {
    match (mean, dtype) {
        (None, _) => "-".into(),
        (Some(m), Some(d)) if d.is_float() => float_in(d, m),
        (Some(m), _) => float_text(m),
    }
}

/// What a summary describes, for its short form.
pub(crate) struct Label<'a> {
    /// What was summarised: `sqdiff`.
    pub(crate) of: &'a str,
    /// The elements' dtype.
    pub(crate) dtype: &'a str,
    /// The mean's own name, where it has one: `mean squared error`.
    pub(crate) mean: Option<&'a str>,
}

/// The short summary for standard error: counts, extremes, sum and mean, and the histogram as a
/// bar chart, one line per binade.
pub(crate) fn human(summary: &Summary, label: &Label) -> String {
    human_part(summary, label, true)
}

/// One member's result in one line: how many elements are not zero, the extremes and the mean.
pub(crate) fn one_line(s: &Summary, dtype: Option<DType>) -> String {
    let num = |n| number_text(n, dtype);
    format!(
        "{} of {} non-zero ({} NaN), min {}, max {}, mean {}",
        grouped(s.count - s.zero),
        counted(s.count, "element"),
        grouped(s.nan),
        num(&s.min),
        num(&s.max),
        mean_text(s.mean, dtype)
    )
}

/// [`human`], with the histogram only when `histogram` is set.
pub(crate) fn human_part(summary: &Summary, label: &Label, histogram: bool) -> String {
    let s = summary;
    let dtype = DType::from_name(label.dtype);
    let num = |n| number_text(n, dtype);
    let mean = mean_text(s.mean, dtype);
    let what = label.mean.map_or(String::new(), |name| format!(" ({name})"));
    let mut out = format!(
        "tensorop: stats of {} ({}, {}): {} finite, {} NaN, {} +inf, {} -inf\n  min {}  max {}  \
         sum {}  mean {mean}{what}\n",
        label.of,
        label.dtype,
        counted(s.count, "element"),
        grouped(s.finite),
        grouped(s.nan),
        grouped(s.posinf),
        grouped(s.neginf),
        num(&s.min),
        num(&s.max),
        num(&s.sum),
    );
    if !histogram {
        return out;
    }
    let mut rows: Vec<(String, u64)> = Vec::new();
    if s.zero > 0 {
        rows.push(("zero".into(), s.zero));
    }
    if s.subnormal > 0 {
        rows.push(("subnormal".into(), s.subnormal));
    }
    rows.extend(s.binades.iter().map(|&(e, n)| (format!("2^{e}"), n)));
    let top = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    if !rows.is_empty() {
        out.push_str("  |x| by binade, [2^e, 2^(e+1)):\n");
    }
    for (label, n) in rows {
        let bar = ((n as f64 / top as f64) * 40.0).ceil() as usize;
        out.push_str(&format!("  {label:>10} {:>15} {}\n", grouped(n), "#".repeat(bar)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::summary::Accumulator;

    #[test]
    fn integers_past_i128_are_json_numbers_digit_for_digit() {
        let mut a = Accumulator::new(DType::U64);
        a.add(&vec![u64::MAX; 1 << 16]);
        for _ in 0..47 {
            let b = a.clone();
            a.merge(&b);
        }
        let json = serde_json::to_string(&a.finish().sum).expect("json");
        assert_eq!(json, "170141183460469231722463931679029329920");
        let mut small = Accumulator::new(DType::I8);
        small.add(&[-3i8, 1]);
        assert_eq!(serde_json::to_string(&small.finish().sum).expect("json"), "-2");
    }

    #[test]
    fn text_floats_are_shortest_and_scientific_outside_1e_minus_4_to_1e16() {
        assert_eq!(float_text(1e-45), "1e-45");
        assert_eq!(float_text(f64::from(f32::from_bits(1))), "1.401298464324817e-45");
        assert_eq!(float_text(1e300), "1e300");
        assert_eq!(float_text(-2.5e16), "-2.5e16");
        assert_eq!(float_text(1.625), "1.625");
        assert_eq!(float_text(0.0001), "0.0001");
        assert_eq!(float_text(0.00009), "9e-5");
        assert_eq!(float_text(-0.0), "-0");
        assert_eq!(float_text(f64::NAN), "NaN");
        assert_eq!(float_text(f64::NEG_INFINITY), "-inf");
        assert_eq!(float_text(123456789.0), "123456789");
    }

    #[test]
    fn the_short_form_names_the_mean_and_draws_the_histogram() {
        let mut a = Accumulator::new(DType::F32);
        a.add(&[0.0f32, 1.0, 1.5, 4.0]);
        let text = human(&a.finish(), &Label { of: "sqdiff", dtype: "float32", mean: Some("mean squared error") });
        assert_eq!(
            text,
            "tensorop: stats of sqdiff (float32, 4 elements): 4 finite, 0 NaN, 0 +inf, 0 -inf\n  min 0  max 4  \
             sum 6.5  mean 1.625 (mean squared error)\n  |x| by binade, [2^e, 2^(e+1)):\n        zero               1 \
             ####################\n         2^0               2 \
             ########################################\n         2^2               1 ####################\n"
        );
        let text = human(&a.finish(), &Label { of: "sub", dtype: "float32", mean: None });
        assert!(text.contains("mean 1.625\n"), "{text}");
    }
}
