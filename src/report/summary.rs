//! How a `--stats` summary is shown: its JSON form in the report (`docs/report.md`, "stats";
//! integers of any size as JSON numbers, digit for digit) and the short form with a bar chart
//! that `--stats` prints on standard error.

use crate::summary::{Number, Summary};
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

/// A float for text meant to be read (standard error, `compare`'s text): the shortest digits that
/// read back as the same value, in plain notation between 1e-4 and 1e16 and in scientific
/// notation outside it, as Python's `repr` does (`1e-45`, not 45 zeros). JSON keeps its own
/// exact forms.
pub(crate) fn float_text(x: f64) -> String {
    let plain = x == 0.0 || !x.is_finite() || (1e-4..1e16).contains(&x.abs());
    if plain {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// A summary's number (an extreme, a sum) for text: [`float_text`] for floats, every digit for
/// integers.
pub(crate) fn number_text(n: &Option<Number>) -> String {
    match n {
        None => "-".to_string(),
        Some(Number::Float(x)) => float_text(*x),
        Some(Number::Int(v)) => v.to_string(),
    }
}

/// `n` and `noun`, plural unless `n` is 1: `1 element`, `3 elements`.
pub(crate) fn counted(n: impl Into<u128>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
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
pub(crate) fn one_line(s: &Summary) -> String {
    let num = number_text;
    format!(
        "{} of {} non-zero ({} NaN), min {}, max {}, mean {}",
        s.count - s.zero,
        counted(s.count, "element"),
        s.nan,
        num(&s.min),
        num(&s.max),
        s.mean.map_or("-".into(), float_text)
    )
}

/// [`human`], with the histogram only when `histogram` is set.
pub(crate) fn human_part(summary: &Summary, label: &Label, histogram: bool) -> String {
    let s = summary;
    let num = number_text;
    let mean = s.mean.map_or("-".into(), float_text);
    let what = label.mean.map_or(String::new(), |name| format!(" ({name})"));
    let mut out = format!(
        "tensorop: stats of {} ({}, {}): {} finite, {} NaN, {} +inf, {} -inf\n  min {}  max {}  \
         sum {}  mean {mean}{what}\n",
        label.of,
        label.dtype,
        counted(s.count, "element"),
        s.finite,
        s.nan,
        s.posinf,
        s.neginf,
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
        out.push_str(&format!("  {label:>10} {n:>12} {}\n", "#".repeat(bar)));
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
             sum 6.5  mean 1.625 (mean squared error)\n  |x| by binade, [2^e, 2^(e+1)):\n        zero            1 \
             ####################\n         2^0            2 \
             ########################################\n         2^2            1 ####################\n"
        );
        let text = human(&a.finish(), &Label { of: "sub", dtype: "float32", mean: None });
        assert!(text.contains("mean 1.625\n"), "{text}");
    }
}
