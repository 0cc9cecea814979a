//! Element values as DxDispatch reads and prints them: numbers from the model's JSON in each
//! data type (its float16 conversion truncates toward zero, as the half-precision library it is
//! built with does by default), sequences accumulated in the element type, and the `print`
//! command's text (C++ stream defaults: `%g` with 6 significant digits). `docs/dxdispatch.md`
//! lists the rules and where tensorop's text differs (8-bit integers print as numbers).

use crate::dtype::DType;
use half::f16;
use serde_json::Value;

/// One element's little-endian bytes (the first `dtype.size()` of 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scalar([u8; 8]);

impl Scalar {
    fn from_le(bytes: &[u8]) -> Scalar {
        let mut b = [0u8; 8];
        b[..bytes.len()].copy_from_slice(bytes);
        Scalar(b)
    }

    /// The element's bytes in `dtype`.
    pub fn bytes(&self, dtype: DType) -> &[u8] {
        &self.0[..dtype.size()]
    }
}

/// `x` as float16, truncated toward zero; magnitudes of 65536 and more become infinite. This is
/// the conversion of the half-precision library DxDispatch builds with (its default rounding
/// style), for values from the model and for float16 sequences.
pub fn f16_toward_zero(x: f32) -> f16 {
    if x.is_nan() || x.is_infinite() || x.abs() >= 65536.0 {
        return f16::from_f32(x);
    }
    let r = f16::from_f32(x);
    if f32::from(r).abs() > x.abs() {
        // One step toward zero: the magnitude's bit pattern less one.
        f16::from_bits(r.to_bits() - 1)
    } else {
        r
    }
}

/// A JSON number (or, for floats, `"nan"`, `"inf"`, `"-inf"` in any case) as an element of
/// `dtype`, as DxDispatch parses initial values: floats through a double (float16 through a
/// float); integers only from integer literals that fit.
pub fn parse(dtype: DType, v: &Value) -> Result<Scalar, String> {
    let float = || -> Result<f64, String> {
        match v {
            Value::Number(n) => {
                if let Some(f) = n.as_f64().filter(|_| n.is_f64()) {
                    return Ok(f);
                }
                // An integer literal: taken when a double holds it exactly.
                let exact = n
                    .as_i64()
                    .map(|i| (i as f64) as i128 == i as i128)
                    .or_else(|| n.as_u64().map(|u| (u as f64) as u128 == u as u128));
                match (exact, n.as_f64()) {
                    (Some(true), Some(f)) => Ok(f),
                    _ => Err(format!("{n} is not exactly representable as a double")),
                }
            }
            Value::String(s) if s.eq_ignore_ascii_case("nan") => Ok(f64::NAN),
            Value::String(s) if s.eq_ignore_ascii_case("inf") => Ok(f64::INFINITY),
            Value::String(s) if s.eq_ignore_ascii_case("-inf") => Ok(f64::NEG_INFINITY),
            Value::String(s) => {
                Err(format!("\"{s}\" is not a number; the strings allowed are \"nan\", \"inf\" and \"-inf\""))
            }
            other => Err(format!("expected a number, found {other}")),
        }
    };
    let signed = |lo: i64, hi: i64| -> Result<i64, String> {
        let i = v.as_i64().ok_or_else(|| {
            format!("expected a signed integer literal for {}, found {v}", crate::spec::dml::dml_name(dtype))
        })?;
        if i < lo || i > hi {
            return Err(format!("{i} does not fit in {} ({lo} to {hi})", crate::spec::dml::dml_name(dtype)));
        }
        Ok(i)
    };
    let unsigned = |hi: u64| -> Result<u64, String> {
        let u = v.as_u64().ok_or_else(|| {
            format!("expected an unsigned integer literal for {}, found {v}", crate::spec::dml::dml_name(dtype))
        })?;
        if u > hi {
            return Err(format!("{u} does not fit in {} (0 to {hi})", crate::spec::dml::dml_name(dtype)));
        }
        Ok(u)
    };
    Ok(match dtype {
        DType::F64 => Scalar::from_le(&float()?.to_le_bytes()),
        DType::F32 => Scalar::from_le(&(float()? as f32).to_le_bytes()),
        DType::F16 => Scalar::from_le(&f16_toward_zero(float()? as f32).to_le_bytes()),
        // DirectML has no bfloat16 and a model cannot name it; kept total, rounded to nearest.
        DType::BF16 => Scalar::from_le(&half::bf16::from_f64(float()?).to_le_bytes()),
        DType::I8 => Scalar::from_le(&(signed(i8::MIN.into(), i8::MAX.into())? as i8).to_le_bytes()),
        DType::I16 => Scalar::from_le(&(signed(i16::MIN.into(), i16::MAX.into())? as i16).to_le_bytes()),
        DType::I32 => Scalar::from_le(&(signed(i32::MIN.into(), i32::MAX.into())? as i32).to_le_bytes()),
        DType::I64 => Scalar::from_le(&signed(i64::MIN, i64::MAX)?.to_le_bytes()),
        DType::U8 => Scalar::from_le(&(unsigned(u8::MAX.into())? as u8).to_le_bytes()),
        DType::U16 => Scalar::from_le(&(unsigned(u16::MAX.into())? as u16).to_le_bytes()),
        DType::U32 => Scalar::from_le(&(unsigned(u32::MAX.into())? as u32).to_le_bytes()),
        DType::U64 => Scalar::from_le(&unsigned(u64::MAX)?.to_le_bytes()),
    })
}

/// `value + delta` in `dtype`, as DxDispatch's sequences accumulate: integers wrap, floats round
/// to nearest, float16 adds in float and truncates.
pub fn step(dtype: DType, value: Scalar, delta: Scalar) -> Scalar {
    macro_rules! ints {
        ($t:ty) => {{
            let a = <$t>::from_le_bytes(value.0[..std::mem::size_of::<$t>()].try_into().unwrap_or_default());
            let d = <$t>::from_le_bytes(delta.0[..std::mem::size_of::<$t>()].try_into().unwrap_or_default());
            Scalar::from_le(&a.wrapping_add(d).to_le_bytes())
        }};
    }
    match dtype {
        DType::F16 => {
            let a = f16::from_le_bytes([value.0[0], value.0[1]]);
            let d = f16::from_le_bytes([delta.0[0], delta.0[1]]);
            Scalar::from_le(&f16_toward_zero(f32::from(a) + f32::from(d)).to_le_bytes())
        }
        DType::BF16 => {
            let a = half::bf16::from_le_bytes([value.0[0], value.0[1]]);
            let d = half::bf16::from_le_bytes([delta.0[0], delta.0[1]]);
            Scalar::from_le(&half::bf16::from_f32(f32::from(a) + f32::from(d)).to_le_bytes())
        }
        DType::F32 => {
            let a = f32::from_le_bytes([value.0[0], value.0[1], value.0[2], value.0[3]]);
            let d = f32::from_le_bytes([delta.0[0], delta.0[1], delta.0[2], delta.0[3]]);
            Scalar::from_le(&(a + d).to_le_bytes())
        }
        DType::F64 => Scalar::from_le(&(f64::from_le_bytes(value.0) + f64::from_le_bytes(delta.0)).to_le_bytes()),
        DType::I8 => ints!(i8),
        DType::I16 => ints!(i16),
        DType::I32 => ints!(i32),
        DType::I64 => ints!(i64),
        DType::U8 => ints!(u8),
        DType::U16 => ints!(u16),
        DType::U32 => ints!(u32),
        DType::U64 => ints!(u64),
    }
}

/// One element (little-endian `bytes` of `dtype`) as `print` shows it.
pub fn format(dtype: DType, bytes: &[u8]) -> String {
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    if let Some(nan) = nan_text(dtype, bytes) {
        return nan.into();
    }
    match dtype {
        DType::F16 => fmt_g(f64::from(f16::from_le_bytes([b[0], b[1]]))),
        DType::BF16 => fmt_g(f64::from(half::bf16::from_le_bytes([b[0], b[1]]))),
        DType::F32 => fmt_g(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        DType::F64 => fmt_g(f64::from_le_bytes(b)),
        DType::I8 => (b[0] as i8).to_string(),
        DType::I16 => i16::from_le_bytes([b[0], b[1]]).to_string(),
        DType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_string(),
        DType::I64 => i64::from_le_bytes(b).to_string(),
        DType::U8 => b[0].to_string(),
        DType::U16 => u16::from_le_bytes([b[0], b[1]]).to_string(),
        DType::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_string(),
        DType::U64 => u64::from_le_bytes(b).to_string(),
    }
}

/// A NaN as the Microsoft C runtime prints it: `nan` when positive, `-nan(ind)` for the
/// negative "indefinite" NaN (only the quiet bit set, what x86 arithmetic makes), `-nan` for
/// other negative ones; `None` when the element is not a NaN.
fn nan_text(dtype: DType, bytes: &[u8]) -> Option<&'static str> {
    let (exp_bits, frac_bits) = match dtype {
        DType::F16 => (5u32, 10u32),
        DType::BF16 => (8, 7),
        DType::F32 => (8, 23),
        DType::F64 => (11, 52),
        _ => return None,
    };
    let u = bits(bytes);
    let frac = u & ((1u64 << frac_bits) - 1);
    let exp = (u >> frac_bits) & ((1u64 << exp_bits) - 1);
    if exp != (1u64 << exp_bits) - 1 || frac == 0 {
        return None;
    }
    let negative = (u >> (frac_bits + exp_bits)) & 1 == 1;
    let quiet_only = frac == 1u64 << (frac_bits - 1);
    Some(match (negative, quiet_only) {
        (false, _) => "nan",
        (true, true) => "-nan(ind)",
        (true, false) => "-nan",
    })
}

/// The raw bits of an element, zero-extended, for `print`'s verbose lines.
pub fn bits(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(b)
}

/// `x` as C's `%g` with precision 6 prints it (what a default C++ stream writes), with NaN and
/// infinity spelt as the Microsoft C runtime does (`nan`, `-nan(ind)`, `inf`, `-inf`).
pub fn fmt_g(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan(ind)".into() } else { "nan".into() };
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    const P: i32 = 6;
    let sci = format!("{:.*e}", (P - 1) as usize, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..P).contains(&exp) {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        strip_zeros(&format!("{:.*}", (P - 1 - exp) as usize, x)).to_string()
    }
}

/// `1.500` -> `1.5`, `2.000` -> `2`.
fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn percent_g_as_a_cpp_stream_prints() {
        let cases = [
            (1.5, "1.5"),
            (0.1f32 as f64, "0.1"),
            (7.654321, "7.65432"),
            (1e-7, "1e-07"),
            (1234567.0, "1.23457e+06"),
            (123456.0, "123456"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (-2.0, "-2"),
            (1e300, "1e+300"),
            (999999.5, "1e+06"),
            (-0.0, "-0"),
        ];
        for (x, want) in cases {
            assert_eq!(fmt_g(x), want, "{x}");
        }
        assert_eq!(fmt_g(f64::NAN), "nan");
        assert_eq!(fmt_g(-f64::NAN), "-nan(ind)");
        assert_eq!(format(DType::F32, &0xFFC0_0000u32.to_le_bytes()), "-nan(ind)");
        assert_eq!(format(DType::F32, &0xFFC0_0001u32.to_le_bytes()), "-nan");
        assert_eq!(format(DType::F16, &0x7E00u16.to_le_bytes()), "nan");
        assert_eq!(fmt_g(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn float16_truncates_toward_zero() {
        // 0.3 is 0x34CD to nearest, 0x34CC toward zero.
        assert_eq!(f16_toward_zero(0.3).to_bits(), 0x34CC);
        assert_eq!(f16_toward_zero(-0.3).to_bits(), 0x34CC | 0x8000);
        assert_eq!(f16_toward_zero(65520.0), f16::MAX);
        assert!(f16_toward_zero(70000.0).is_infinite());
        assert_eq!(f16_toward_zero(1.0), f16::ONE);
        let s = parse(DType::F16, &json!(0.3)).unwrap();
        assert_eq!(s.bytes(DType::F16), &0x34CCu16.to_le_bytes());
    }

    #[test]
    fn integers_need_integer_literals_that_fit() {
        assert_eq!(parse(DType::I8, &json!(-128)).unwrap().bytes(DType::I8), &[0x80]);
        assert!(parse(DType::I8, &json!(128)).unwrap_err().contains("does not fit in INT8"));
        assert!(parse(DType::U8, &json!(-1)).is_err());
        assert!(parse(DType::I32, &json!(1.0)).is_err());
        assert!(parse(DType::I32, &json!(true)).is_err());
        assert_eq!(parse(DType::U64, &json!(u64::MAX)).unwrap().bytes(DType::U64), &u64::MAX.to_le_bytes());
        assert!(parse(DType::F32, &json!("NaN")).is_ok());
        assert!(parse(DType::F32, &json!("two")).is_err());
    }

    #[test]
    fn sequences_wrap_and_round_in_the_element_type() {
        let s = |d: DType, v: serde_json::Value| parse(d, &v).unwrap();
        assert_eq!(step(DType::U8, s(DType::U8, json!(250)), s(DType::U8, json!(10))).bytes(DType::U8), &[4]);
        let x = step(DType::F32, s(DType::F32, json!(0.1)), s(DType::F32, json!(0.2)));
        assert_eq!(x.bytes(DType::F32), &(0.1f32 + 0.2f32).to_le_bytes());
    }
}
