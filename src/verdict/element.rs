//! One pair of elements, as every verdict sees it: their values, their absolute difference
//! (exact: an integer, or for floats an odd significand times a power of two), their distance in
//! units in the last place, how they print (value and bits), and whether they are within the
//! tolerances given. The one definition of each (`docs/cli.md`, "Verdicts").

use crate::dtype::DType;
use crate::summary::ExactSum;
use crate::text::{f16_text, f32_text, float_text};
use half::f16;
use num_bigint::BigInt;
use std::cmp::Ordering;

/// An element as a double (exact for floats and for integers up to 2^53).
pub fn value(dtype: DType, b: &[u8]) -> f64 {
    let mut x = [0u8; 8];
    x[..b.len()].copy_from_slice(b);
    match dtype {
        DType::F16 => f64::from(f16::from_le_bytes([x[0], x[1]])),
        DType::BF16 => f64::from(half::bf16::from_le_bytes([x[0], x[1]])),
        DType::F32 => f64::from(f32::from_le_bytes([x[0], x[1], x[2], x[3]])),
        DType::F64 => f64::from_le_bytes(x),
        _ => integer(dtype, b) as f64,
    }
}

/// An integer element, sign-extended as its dtype says.
fn integer(dtype: DType, b: &[u8]) -> i128 {
    let mut x = [0u8; 8];
    x[..b.len()].copy_from_slice(b);
    let u = u64::from_le_bytes(x);
    match dtype {
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            let shift = 64 - 8 * b.len() as u32;
            i128::from(((u << shift) as i64) >> shift)
        }
        _ => i128::from(u),
    }
}

/// An absolute difference, exactly: an integer's, or two finite floats' as an exact sum;
/// `Infinite` where one side is infinite (the other finite, or of the other sign).
#[derive(Debug, Clone, PartialEq)]
pub enum Diff {
    Int(u128),
    Float(ExactSum),
    Infinite,
}

impl Diff {
    /// Exact order of two differences.
    pub fn cmp_exact(&self, other: &Diff) -> Ordering {
        match (self, other) {
            (Diff::Infinite, Diff::Infinite) => Ordering::Equal,
            (Diff::Infinite, _) => Ordering::Greater,
            (_, Diff::Infinite) => Ordering::Less,
            (Diff::Int(a), Diff::Int(b)) => a.cmp(b),
            (Diff::Float(a), Diff::Float(b)) => cmp_sums(a, b),
            // One dtype per comparison: never both kinds.
            (Diff::Int(_), Diff::Float(_)) | (Diff::Float(_), Diff::Int(_)) => Ordering::Equal,
        }
    }

    /// Every digit: the integer, the exact decimal expansion of a float difference (a binary
    /// fraction always has one: `2^-3` is `0.125`), or `inf`.
    pub fn decimal(&self) -> String {
        match self {
            Diff::Int(i) => i.to_string(),
            Diff::Float(e) => decimal(e),
            Diff::Infinite => "inf".to_string(),
        }
    }

    /// For text: the float64 nearest the difference in its shortest digits ([`float_text`]),
    /// saying so when that is not the difference itself; an integer's digits.
    pub fn text(&self) -> String {
        match self {
            Diff::Int(i) => i.to_string(),
            Diff::Infinite => "inf".to_string(),
            Diff::Float(e) => match e.rounded() {
                Some(x) if exact_of(x) == *e => float_text(x),
                Some(x) => format!("{} (rounded to float64; --json gives every digit)", float_text(x)),
                None => "2^1024 or more (beyond float64; --json gives every digit)".to_string(),
            },
        }
    }
}

/// Exact order of two exact values.
fn cmp_sums(a: &ExactSum, b: &ExactSum) -> Ordering {
    let low = a.exp2.min(b.exp2);
    // Exponents come from float elements and their products: a few thousand bits at most.
    let scale = |e: &ExactSum| &e.significand << (e.exp2 - low).unsigned_abs();
    scale(a).cmp(&scale(b))
}

/// The exact decimal expansion of `e`: `significand x 2^exp2` is `significand x 5^k / 10^k`
/// for `k = -exp2`, so its digits are those of `significand x 5^k` with the point `k` from the
/// right (the significand is odd, so the last digit is 5 and none is a padding zero).
fn decimal(e: &ExactSum) -> String {
    let sign = if e.significand.sign() == num_bigint::Sign::Minus { "-" } else { "" };
    let m = e.significand.magnitude();
    if e.exp2 >= 0 {
        return format!("{sign}{}", m << e.exp2.unsigned_abs());
    }
    let k = usize::try_from(e.exp2.unsigned_abs()).unwrap_or(usize::MAX);
    let digits = (m * num_bigint::BigUint::from(5u8).pow(e.exp2.unsigned_abs() as u32)).to_string();
    if digits.len() > k {
        let (int, frac) = digits.split_at(digits.len() - k);
        format!("{sign}{int}.{frac}")
    } else {
        format!("{sign}0.{}{digits}", "0".repeat(k - digits.len()))
    }
}

/// A finite double as an exact sum (its integer significand times a power of two).
fn exact_of(x: f64) -> ExactSum {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp == 0 { (frac, -1074) } else { (frac | (1u64 << 52), exp - 1075) };
    let m = BigInt::from(m);
    ExactSum::new(if x.is_sign_negative() { -m } else { m }, e)
}

/// `|a - b|` of two elements that are not NaN: exact.
pub fn abs_diff(dtype: DType, a: &[u8], b: &[u8]) -> Diff {
    if !dtype.is_float() {
        return Diff::Int((integer(dtype, a) - integer(dtype, b)).unsigned_abs());
    }
    let (x, y) = (value(dtype, a), value(dtype, b));
    if x.is_infinite() || y.is_infinite() {
        return if x == y { Diff::Float(ExactSum::new(BigInt::from(0), 0)) } else { Diff::Infinite };
    }
    let mut d = exact_of(x);
    d.add(&exact_of(-y));
    if d.significand.sign() == num_bigint::Sign::Minus {
        d = ExactSum::new(-d.significand, d.exp2);
    }
    Diff::Float(d)
}

/// Units in the last place from `a` to `b`: for floats the count of steps between them in the
/// type's ordered values (adjacent floats are 1 apart, +0 and -0 are 0 apart, the smallest
/// subnormals either side of zero 2 apart, and an infinity and itself 0); for integers their
/// difference (the spacing of integers is 1). `None` where a NaN is involved, and for an
/// infinity against anything but itself (a finite value is no number of steps from infinity,
/// whatever the bit patterns say). Saturates at `u64::MAX`.
pub fn ulp_distance(dtype: DType, a: &[u8], b: &[u8]) -> Option<u64> {
    if !dtype.is_float() {
        return Some(u64::try_from((integer(dtype, a) - integer(dtype, b)).unsigned_abs()).unwrap_or(u64::MAX));
    }
    let (va, vb) = (value(dtype, a), value(dtype, b));
    if va.is_nan() || vb.is_nan() || ((va.is_infinite() || vb.is_infinite()) && va != vb) {
        return None;
    }
    let bits = 8 * dtype.size() as u32;
    let raw = |x: &[u8]| -> i128 {
        let u = u128::from(bits_of(x));
        let sign = 1u128 << (bits - 1);
        let magnitude = (u & (sign - 1)) as i128;
        if u & sign != 0 {
            -magnitude
        } else {
            magnitude
        }
    };
    Some((raw(a) - raw(b)).unsigned_abs() as u64)
}

/// An element's bits as a number (little-endian bytes, at most 8).
pub fn bits_of(b: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(x)
}

/// An element's bits in hexadecimal, as wide as its type: `0x3C00`.
pub fn bits_text(b: &[u8]) -> String {
    format!("0x{:0w$X}", bits_of(b), w = 2 * b.len())
}

/// `--atol`, `--rtol` and `--ulps`: how far apart two elements may be and still count as equal.
/// `None` is a flag not given; with none given, only bit-identical elements are equal.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Tolerance {
    pub atol: Option<f64>,
    pub rtol: Option<f64>,
    pub ulps: Option<u64>,
}

/// Below this relative distance from the bound (plus [`NEAR_ABS`]), the float64 estimate of
/// `|a - b|` and of the bound could be on the wrong side of it: the exact values decide.
const NEAR_REL: f64 = 1.0 / (1u64 << 40) as f64;
/// Float64's rounding in the subnormal range is absolute: about 2^-1075 an operation.
const NEAR_ABS: f64 = f64::MIN_POSITIVE;

impl Tolerance {
    /// Whether any tolerance was given (else only bit-identical elements are equal).
    pub fn given(&self) -> bool {
        self.atol.is_some() || self.rtol.is_some() || self.ulps.is_some()
    }

    /// Whether `a` and `b`, which differ in their bits, are within a tolerance given: NumPy's
    /// `isclose`, `|a - b| <= atol + rtol * |b|` (exactly, with no rounding), or at most `ulps`
    /// apart (integers: `ulps` units of 1). A NaN is equal only to the same bits (so never
    /// here), and an infinity only to itself.
    pub fn allows(&self, dtype: DType, a: &[u8], b: &[u8]) -> bool {
        if dtype.is_float() && !(value(dtype, a).is_finite() && value(dtype, b).is_finite()) {
            return false;
        }
        let by_ulps = self.ulps.is_some_and(|n| {
            let units = if dtype.is_float() {
                ulp_distance(dtype, a, b).map(u128::from)
            } else {
                // Exact, even past u64: the difference of two 64-bit integers.
                Some((integer(dtype, a) - integer(dtype, b)).unsigned_abs())
            };
            units.is_some_and(|u| u <= u128::from(n))
        });
        by_ulps || ((self.atol.is_some() || self.rtol.is_some()) && self.within_bound(dtype, a, b))
    }

    /// `|a - b| <= atol + rtol * |b|` for two finite elements, in real arithmetic: decided in
    /// float64 when clearly on one side, else with exact values.
    fn within_bound(&self, dtype: DType, a: &[u8], b: &[u8]) -> bool {
        let (atol, rtol) = (self.atol.unwrap_or(0.0), self.rtol.unwrap_or(0.0));
        let y = value(dtype, b);
        let d = if dtype.is_float() {
            (value(dtype, a) - y).abs()
        } else {
            (integer(dtype, a) - integer(dtype, b)).unsigned_abs() as f64
        };
        let bound = atol + rtol * y.abs();
        if bound.is_finite() && d.is_finite() {
            if d < bound * (1.0 - NEAR_REL) - NEAR_ABS {
                return true;
            }
            if d > bound * (1.0 + NEAR_REL) + NEAR_ABS {
                return false;
            }
        }
        let (d, abs_b) = match abs_diff(dtype, a, b) {
            Diff::Int(i) => {
                (ExactSum::new(BigInt::from(i), 0), ExactSum::new(BigInt::from(integer(dtype, b).abs()), 0))
            }
            Diff::Float(e) => (e, exact_of(y.abs())),
            Diff::Infinite => return false,
        };
        let r = exact_of(rtol);
        let mut exact_bound = ExactSum::new(r.significand * abs_b.significand, r.exp2 + abs_b.exp2);
        exact_bound.add(&exact_of(atol));
        cmp_sums(&d, &exact_bound).is_le()
    }
}

/// An element as the shortest decimal that reads back as the same value in its dtype, so two
/// neighbouring floats never print alike; a NaN with its bits, so two NaNs can be told apart.
pub fn exact(dtype: DType, b: &[u8]) -> String {
    if value(dtype, b).is_nan() && dtype.is_float() {
        return format!("NaN ({})", bits_text(b));
    }
    match dtype {
        DType::F16 => f16_text(f16::from_le_bytes([b[0], b[1]])),
        // A bfloat16 is a float32 with its low 16 bits zero: float32's shortest digits may
        // need more than bfloat16's, but they read back as the same value.
        DType::BF16 => f32_text(f32::from(half::bf16::from_le_bytes([b[0], b[1]]))),
        DType::F32 => f32_text(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        DType::F64 => float_text(value(dtype, b)),
        _ => integer(dtype, b).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulps_count_representable_values_between() {
        let f = |x: f32| x.to_le_bytes();
        assert_eq!(ulp_distance(DType::F32, &f(1.0), &f(1.0 + f32::EPSILON)), Some(1));
        assert_eq!(ulp_distance(DType::F32, &f(0.0), &f(-0.0)), Some(0));
        // Across zero: the smallest subnormals on either side are 2 apart.
        assert_eq!(ulp_distance(DType::F32, &f(f32::from_bits(1)), &f(-f32::from_bits(1))), Some(2));
        assert_eq!(ulp_distance(DType::F32, &f(f32::NAN), &f(1.0)), None);
        assert_eq!(ulp_distance(DType::F32, &f(f32::INFINITY), &f(f32::MAX)), None);
        let h = |x: f32| f16::from_f32(x).to_le_bytes();
        assert_eq!(ulp_distance(DType::F16, &h(1.0), &h(1.0 + 1.0 / 1024.0)), Some(1));
        // An infinity is no number of steps from a finite value; it is 0 from itself.
        assert_eq!(ulp_distance(DType::F16, &h(65504.0), &f16::INFINITY.to_le_bytes()), None);
        assert_eq!(ulp_distance(DType::F16, &f16::INFINITY.to_le_bytes(), &f16::INFINITY.to_le_bytes()), Some(0));
        assert_eq!(ulp_distance(DType::F32, &f(f32::INFINITY), &f(f32::NEG_INFINITY)), None);
        // Integers: their difference, exactly, saturating past u64.
        assert_eq!(ulp_distance(DType::I32, &1i32.to_le_bytes(), &(-2i32).to_le_bytes()), Some(3));
        assert_eq!(ulp_distance(DType::I8, &[0x80], &[0x7f]), Some(255));
        assert_eq!(ulp_distance(DType::U64, &u64::MAX.to_le_bytes(), &0u64.to_le_bytes()), Some(u64::MAX));
        assert_eq!(ulp_distance(DType::I64, &i64::MAX.to_le_bytes(), &i64::MIN.to_le_bytes()), Some(u64::MAX));
        // Subnormals count like any float: the smallest float16 subnormal is 1 from zero.
        assert_eq!(ulp_distance(DType::F16, &f16::from_bits(1).to_le_bytes(), &h(0.0)), Some(1));
        assert_eq!(ulp_distance(DType::BF16, &[0x80, 0x3f], &[0x81, 0x3f]), Some(1));
    }

    #[test]
    fn differences_are_exact() {
        assert_eq!(abs_diff(DType::I8, &[0x80], &[0x7f]), Diff::Int(255));
        assert_eq!(abs_diff(DType::U64, &u64::MAX.to_le_bytes(), &0u64.to_le_bytes()), Diff::Int(u64::MAX.into()));
        let d = abs_diff(DType::I64, &i64::MAX.to_le_bytes(), &i64::MIN.to_le_bytes());
        assert_eq!(d, Diff::Int(u64::MAX.into()));
        // 1e300 against its neighbour: exactly 2^944 apart.
        let (x, y) = (1e300f64, f64::from_bits(1e300f64.to_bits() + 1));
        let Diff::Float(e) = abs_diff(DType::F64, &x.to_le_bytes(), &y.to_le_bytes()) else { panic!() };
        assert_eq!((e.significand.to_string(), e.exp2), ("1".to_string(), 944));
        // 1 - 2^-60 is no double, but the difference of 1 and 2^-60 is exact.
        let Diff::Float(e) = abs_diff(DType::F64, &1f64.to_le_bytes(), &(2f64.powi(-60)).to_le_bytes()) else {
            panic!()
        };
        assert_eq!((e.significand, e.exp2), ((BigInt::from(1) << 60) - 1, -60));
        assert_eq!(abs_diff(DType::F32, &f32::INFINITY.to_le_bytes(), &1f32.to_le_bytes()), Diff::Infinite);
        let small = abs_diff(DType::F64, &1f64.to_le_bytes(), &(1.0f64 + f64::EPSILON).to_le_bytes());
        let big = abs_diff(DType::F64, &1f64.to_le_bytes(), &(1.0f64 + 2.0 * f64::EPSILON).to_le_bytes());
        assert_eq!(small.cmp_exact(&big), Ordering::Less);
        assert_eq!(Diff::Infinite.cmp_exact(&big), Ordering::Greater);
    }

    #[test]
    fn differences_print_every_digit() {
        let d = |x: f64, y: f64| abs_diff(DType::F64, &x.to_le_bytes(), &y.to_le_bytes());
        // 1e300 against its neighbour: 2^944, all 285 digits.
        let big = d(1e300, f64::from_bits(1e300f64.to_bits() + 1));
        let digits = (BigInt::from(1) << 944usize).to_string();
        assert_eq!((big.decimal(), digits.len()), (digits, 285));
        assert_eq!(big.text(), "1.487016908477783e284");
        assert_eq!(d(1.0, 0.875).decimal(), "0.125");
        assert_eq!(d(0.0, f64::from_bits(1)).decimal().len(), 2 + 1074);
        let tiny = d(0.0, f64::from_bits(1)).decimal();
        assert!(
            tiny.starts_with("0.000") && tiny[2..].trim_start_matches('0').starts_with("4940656458412465"),
            "{tiny}"
        );
        // 1 - 2^-60 is no float64: the text says it is rounded, the digits are exact.
        let odd = d(1.0, 2f64.powi(-60));
        assert_eq!(odd.decimal(), "0.999999999999999999132638262011596452794037759304046630859375");
        assert_eq!(odd.text(), "1 (rounded to float64; --json gives every digit)");
        let far = d(f64::MAX, -f64::MAX);
        assert!(far.text().starts_with("2^1024 or more"), "{}", far.text());
        assert_eq!(
            far.decimal(),
            (BigInt::from(2) * ((BigInt::from(1) << 1024usize) - (BigInt::from(1) << 971usize))).to_string()
        );
        assert_eq!(Diff::Int(u128::from(u64::MAX)).text(), "18446744073709551615");
        assert_eq!(Diff::Infinite.decimal(), "inf");
    }

    #[test]
    fn tolerances_follow_numpy_isclose_and_ulps() {
        let f = |x: f32| x.to_le_bytes();
        let t = Tolerance { atol: Some(1e-6), ..Tolerance::default() };
        assert!(t.allows(DType::F32, &f(1.0), &f(1.0000005)));
        assert!(!t.allows(DType::F32, &f(1.0), &f(1.00001)));
        let r = Tolerance { rtol: Some(1e-3), ..Tolerance::default() };
        assert!(r.allows(DType::F32, &f(1000.5), &f(1000.0)));
        assert!(!r.allows(DType::F32, &f(0.002), &f(0.001)));
        // B is the reference: |b| scales the bound.
        assert!(!r.allows(DType::F32, &f(1000.0), &f(0.0)));
        let u = Tolerance { ulps: Some(1), ..Tolerance::default() };
        assert!(u.allows(DType::F32, &f(1.0), &f(1.0 + f32::EPSILON)));
        assert!(!u.allows(DType::F32, &f(1.0), &f(1.0 + 2.0 * f32::EPSILON)));
        assert!(u.allows(DType::I32, &5i32.to_le_bytes(), &4i32.to_le_bytes()));
        assert!(!u.allows(DType::I32, &6i32.to_le_bytes(), &4i32.to_le_bytes()));
        // NaNs equal only when bit-identical; an infinity only to itself.
        let wide = Tolerance { atol: Some(1e30), rtol: Some(1.0), ulps: Some(u64::MAX) };
        assert!(!wide.allows(DType::F32, &f(f32::NAN), &f(-f32::NAN)));
        assert!(!wide.allows(DType::F32, &f(f32::NAN), &f(1.0)));
        assert!(!wide.allows(DType::F32, &f(f32::INFINITY), &f(f32::MAX)));
        assert!(!wide.allows(DType::F32, &f(f32::INFINITY), &f(f32::NEG_INFINITY)));
        assert!(!Tolerance::default().allows(DType::F32, &f(1.0), &f(1.0 + f32::EPSILON)));
        // --atol 0 is numeric equality: +0 and -0.
        assert!(Tolerance { atol: Some(0.0), ..Tolerance::default() }.allows(DType::F32, &f(0.0), &f(-0.0)));
    }

    #[test]
    fn bounds_are_decided_exactly() {
        // 0.1 + 0.2 against 0.3 with atol = their float64 difference, 2^-54: exactly on the bound.
        let (a, b) = (0.1f64 + 0.2, 0.3f64);
        let gap = a - b;
        let at = |atol: f64| Tolerance { atol: Some(atol), ..Tolerance::default() };
        assert!(at(gap).allows(DType::F64, &a.to_le_bytes(), &b.to_le_bytes()));
        assert!(!at(f64::from_bits(gap.to_bits() - 1)).allows(DType::F64, &a.to_le_bytes(), &b.to_le_bytes()));
        // Integers beyond 2^53: float64 would call 2^60 + 1 and 2^60 equal.
        let (x, y) = ((1i64 << 60) + 3, 1i64 << 60);
        assert!(at(3.0).allows(DType::I64, &x.to_le_bytes(), &y.to_le_bytes()));
        assert!(!at(2.0).allows(DType::I64, &x.to_le_bytes(), &y.to_le_bytes()));
        // rtol * |b| exactly: 2^60 * 2^-60 = 1.
        let r = Tolerance { rtol: Some(2f64.powi(-60)), ..Tolerance::default() };
        assert!(r.allows(DType::I64, &(y + 1).to_le_bytes(), &y.to_le_bytes()));
        assert!(!r.allows(DType::I64, &(y + 2).to_le_bytes(), &y.to_le_bytes()));
        // Beyond float64's range: MAX against -MAX is 2 MAX apart; rtol 2 allows it, 1.5 not.
        let m = |rtol: f64| Tolerance { rtol: Some(rtol), ..Tolerance::default() };
        assert!(m(2.0).allows(DType::F64, &f64::MAX.to_le_bytes(), &(-f64::MAX).to_le_bytes()));
        assert!(!m(1.5).allows(DType::F64, &f64::MAX.to_le_bytes(), &(-f64::MAX).to_le_bytes()));
    }

    #[test]
    fn floats_print_with_the_fewest_digits_of_their_type() {
        assert_eq!(exact(DType::F16, &f16::from_f32(0.1).to_le_bytes()), "0.1");
        assert_eq!(exact(DType::F16, &f16::from_f32(1.0).to_le_bytes()), "1");
        assert_eq!(exact(DType::F32, &0.1f32.to_le_bytes()), "0.1");
        assert_eq!(exact(DType::F32, &f32::from_bits(1).to_le_bytes()), "1e-45");
        assert_eq!(exact(DType::F64, &1e300f64.to_le_bytes()), "1e300");
        assert_eq!(exact(DType::F64, &f64::from_bits(1e300f64.to_bits() + 1).to_le_bytes()), "1.0000000000000002e300");
        assert_eq!(exact(DType::F16, &f16::from_bits(1).to_le_bytes()), "6e-8");
        assert_eq!(exact(DType::F32, &f32::from_bits(0x7fc0_0001).to_le_bytes()), "NaN (0x7FC00001)");
    }
}
