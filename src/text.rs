//! Numbers for people to read: counts with their noun and digit grouping, floats in the
//! shortest digits that read back as the same value, in float64 or in a result's own dtype.
//! Text output only (standard error, `compare`'s text, `info`); JSON keeps its exact forms
//! (`docs/report.md`). A leaf module: it names no other part of the tool but the dtypes.

use crate::dtype::DType;
use half::{bf16, f16};

/// A float64 in its shortest digits that read back as the same value, in plain notation
/// between 1e-4 and 1e16 and in scientific notation outside it, as Python's `repr` does
/// (`1e-45`, not 45 zeros).
pub(crate) fn float_text(x: f64) -> String {
    notation(x, format!("{x}"), format!("{x:e}"))
}

/// A float32 in its shortest digits, in the notation [`float_text`] picks for its size.
pub(crate) fn f32_text(x: f32) -> String {
    notation(f64::from(x), format!("{x}"), format!("{x:e}"))
}

/// `x` as a value of `dtype` would be read: for float16, bfloat16 and float32, the shortest
/// digits that read back as the same value *in that dtype* (`x` is rounded to it first, to
/// nearest even), so a float32 result prints `3.8869322e-5`, not float64's 17 digits. A value
/// beyond the dtype's range (a float16 sum) keeps float32's or float64's digits instead of
/// printing an infinity it is not. Integer dtypes and float64 print as [`float_text`].
pub(crate) fn float_in(dtype: DType, x: f64) -> String {
    match dtype {
        DType::F16 if f16::from_f64(x).is_finite() || !x.is_finite() => f16_text(f16::from_f64(x)),
        DType::BF16 if bf16::from_f64(x).is_finite() || !x.is_finite() => {
            shortest(x, |v| bf16::from_f64(v) == bf16::from_f64(x), 9)
        }
        DType::F16 | DType::BF16 | DType::F32 if (x as f32).is_finite() || !x.is_finite() => f32_text(x as f32),
        _ => float_text(x),
    }
}

/// A float16 in the fewest significant digits that read back as it.
pub(crate) fn f16_text(h: f16) -> String {
    let x = f64::from(h);
    shortest(x, |v| f16::from_f64(v) == h, 8)
}

/// The fewest significant digits (up to `max`) whose value `same` accepts, else float64's.
fn shortest(x: f64, same: impl Fn(f64) -> bool, max: usize) -> String {
    if !x.is_finite() || x == 0.0 {
        return float_text(x);
    }
    (0..max)
        .map(|p| format!("{x:.p$e}"))
        .find_map(|t| t.parse::<f64>().ok().filter(|&v| same(v)).map(float_text))
        .unwrap_or_else(|| float_text(x))
}

fn notation(x: f64, plain: String, scientific: String) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e16).contains(&x.abs()) {
        plain
    } else {
        scientific
    }
}

/// `n` with its digits grouped in threes: `134,217,728`.
pub(crate) fn grouped(n: impl Into<u128>) -> String {
    let digits = n.into().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` and `noun`, plural unless `n` is 1, the digits not grouped: for messages a report's JSON
/// also carries (a check's message, a run's `error`), which keep plain numbers.
pub(crate) fn plural(n: impl Into<u128>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{n} {}", plural_of(noun)),
    }
}

/// A noun's plural: `dispatches`, `elements`.
fn plural_of(noun: &str) -> String {
    let es = ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end));
    format!("{noun}{}", if es { "es" } else { "s" })
}

/// `n` (grouped) and `noun`, plural unless `n` is 1: `1 element`, `134,217,728 elements`.
pub(crate) fn counted(n: impl Into<u128>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{} {}", grouped(n), plural_of(noun)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_in_threes() {
        assert_eq!(grouped(0u32), "0");
        assert_eq!(grouped(999u32), "999");
        assert_eq!(grouped(1000u32), "1,000");
        assert_eq!(grouped(134_217_728u64), "134,217,728");
        assert_eq!(counted(1u8, "element"), "1 element");
        assert_eq!(counted(12_345u64, "element"), "12,345 elements");
        assert_eq!(counted(2u8, "dispatch"), "2 dispatches");
        assert_eq!(plural(12_345u64, "element"), "12345 elements");
    }

    #[test]
    fn floats_print_in_their_own_dtype() {
        let x = f64::from(3.886_932_2e-5_f32);
        assert_eq!(float_text(x), "3.8869322452228516e-5");
        assert_eq!(float_in(DType::F32, x), "3.8869322e-5");
        assert_eq!(float_in(DType::F64, x), "3.8869322452228516e-5");
        assert_eq!(float_in(DType::F16, f64::from(f16::from_f32(0.1))), "0.1");
        assert_eq!(float_in(DType::BF16, f64::from(bf16::from_f32(0.1))), "0.1");
        assert_eq!(float_in(DType::F16, 65504.0), "65500");
        // A float16 sum beyond float16's range is not an infinity.
        assert_eq!(float_in(DType::F16, 1e6), "1000000");
        assert_eq!(float_in(DType::F16, f64::INFINITY), "inf");
        assert_eq!(float_in(DType::F32, f64::NAN), "NaN");
    }

    #[test]
    fn every_float16_reads_back_from_its_text() {
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits);
            if h.is_finite() {
                let back: f64 = f16_text(h).parse().unwrap_or(f64::NAN);
                assert_eq!(f16::from_f64(back), h, "{bits:#06x}");
            }
        }
    }
}
