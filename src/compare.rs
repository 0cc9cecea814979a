//! `tensorop compare A.npy B.npy`: whether two results are bit-identical and, when not, how far
//! apart (`docs/dxdispatch.md`, "Compare"): the count of differing elements, the largest
//! absolute difference, the largest distance in units in the last place (floats), and the first
//! differences with their indices. Both files stream in chunks, in C order (a Fortran-order file
//! is read through a C-order copy), so memory stays bounded. `sub --stats` answers a different
//! question (the distribution of `a - b`): it has no bit equality, no ulps and no positions.

use crate::cli::CompareArgs;
use crate::dtype::DType;
use crate::npy::fortran;
use crate::npy::header::FileDType;
use crate::npy::input::{NpyInput, Source};
use anyhow::{bail, Context, Result};
use half::f16;
use serde::Serialize;
use std::io::Write;

/// Exit status when the files differ.
pub const DIFFER: u8 = 4;

/// How many differences are listed.
const FIRST: usize = 10;

/// One differing element.
#[derive(Debug, Serialize)]
struct Difference {
    index: Vec<u64>,
    a: String,
    b: String,
    /// Units in the last place between them (floats, both finite or both infinite).
    ulps: Option<u64>,
}

/// What `compare` found.
#[derive(Debug, Serialize)]
struct Comparison {
    a: String,
    b: String,
    dtype: &'static str,
    shape: Vec<u64>,
    elements: u64,
    identical: bool,
    differing: u64,
    /// Of the pairs that are numbers (not NaN) on both sides, as exact decimal text (`inf` for an
    /// infinite difference; integers exact whatever their size).
    max_abs_difference: Option<String>,
    max_abs_difference_at: Option<Vec<u64>>,
    max_ulps: Option<u64>,
    max_ulps_at: Option<Vec<u64>>,
    /// Pairs where exactly one side is NaN, or both are NaN with different bits.
    nan_mismatches: u64,
    first_differences: Vec<Difference>,
}

/// Runs `compare`; returns the exit status (0 identical, [`DIFFER`] when not).
pub fn compare(args: &CompareArgs, out: &mut dyn Write) -> Result<u8> {
    let open = |p: &str| -> Result<NpyInput> {
        let input = NpyInput::open(&Source::parse(p)).with_context(|| p.to_string())?;
        if fortran::is_strided_fortran(&input) {
            return fortran::c_order_copy(&input).with_context(|| format!("{p}: cannot copy to C order"));
        }
        Ok(input)
    };
    if args.a == "-" && args.b == "-" {
        bail!("standard input can be read only once; name '-' at most once");
    }
    let (a, b) = (open(&args.a)?, open(&args.b)?);
    let dtype = match (&a.header.dtype, &b.header.dtype) {
        (FileDType::Numeric(x), FileDType::Numeric(y)) if x == y => *x,
        (x, y) => bail!(
            "{} is {} and {} is {}: compare needs two files of one numeric dtype",
            args.a,
            x.name(),
            args.b,
            y.name()
        ),
    };
    let squeeze = |s: &[u64]| s.iter().copied().filter(|&d| d != 1).collect::<Vec<_>>();
    if squeeze(&a.header.shape) != squeeze(&b.header.shape) {
        bail!(
            "{} has shape {} and {} has shape {}: not the same elements",
            args.a,
            crate::shape::fmt_shape(&a.header.shape),
            args.b,
            crate::shape::fmt_shape(&b.header.shape)
        );
    }
    let shape = a.header.shape.clone();
    let mut c = Comparison {
        a: args.a.clone(),
        b: args.b.clone(),
        dtype: dtype.name(),
        elements: a.header.elements,
        shape: shape.clone(),
        identical: true,
        differing: 0,
        max_abs_difference: None,
        max_abs_difference_at: None,
        max_ulps: None,
        max_ulps_at: None,
        nan_mismatches: 0,
        first_differences: Vec::new(),
    };
    let es = dtype.size();
    let chunk = 1usize << 16;
    let (mut ba, mut bb) = (vec![0u8; chunk * es], vec![0u8; chunk * es]);
    let mut max_abs: Option<Diff> = None;
    let mut at = 0u64;
    let unravel = |flat: u64| -> Vec<u64> {
        let mut idx = vec![0u64; shape.len()];
        let mut rest = flat;
        for k in (0..shape.len()).rev() {
            idx[k] = rest % shape[k].max(1);
            rest /= shape[k].max(1);
        }
        idx
    };
    while at < c.elements {
        let k = (c.elements - at).min(chunk as u64) as usize;
        a.read_le(at, &mut ba[..k * es])?;
        b.read_le(at, &mut bb[..k * es])?;
        for (i, (x, y)) in ba[..k * es].chunks_exact(es).zip(bb[..k * es].chunks_exact(es)).enumerate() {
            if x == y {
                continue;
            }
            let flat = at + i as u64;
            c.identical = false;
            c.differing += 1;
            let (vx, vy) = (value(dtype, x), value(dtype, y));
            let ulps = ulp_distance(dtype, x, y);
            if vx.is_nan() || vy.is_nan() {
                c.nan_mismatches += 1;
            } else {
                let d = abs_diff(dtype, x, y);
                if max_abs.is_none_or(|m| d > m) {
                    max_abs = Some(d);
                    c.max_abs_difference_at = Some(unravel(flat));
                }
            }
            if let Some(u) = ulps {
                if c.max_ulps.is_none_or(|m| u > m) {
                    c.max_ulps = Some(u);
                    c.max_ulps_at = Some(unravel(flat));
                }
            }
            if c.first_differences.len() < FIRST {
                c.first_differences.push(Difference {
                    index: unravel(flat),
                    a: exact(dtype, x),
                    b: exact(dtype, y),
                    ulps,
                });
            }
        }
        at += k as u64;
    }
    c.max_abs_difference = max_abs.map(|d| match d {
        Diff::Float(f) => f.to_string(),
        Diff::Int(i) => i.to_string(),
    });
    if args.json {
        let mut text = serde_json::to_string_pretty(&c)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
    } else {
        human(&c, out)?;
    }
    Ok(if c.identical { 0 } else { DIFFER })
}

fn human(c: &Comparison, out: &mut dyn Write) -> Result<()> {
    let shape = crate::shape::fmt_shape(&c.shape);
    if c.identical {
        writeln!(out, "{} and {}: bit-identical ({} {shape}, {} elements)", c.a, c.b, c.dtype, c.elements)?;
        return Ok(());
    }
    let pct = 100.0 * c.differing as f64 / c.elements.max(1) as f64;
    writeln!(
        out,
        "{} and {}: {} of {} elements differ ({pct:.3}%), {} {shape}",
        c.a, c.b, c.differing, c.elements, c.dtype
    )?;
    let idx = |i: &Option<Vec<u64>>| i.as_ref().map(|v| crate::shape::fmt_shape(v)).unwrap_or_default();
    if let Some(d) = &c.max_abs_difference {
        writeln!(out, "largest absolute difference: {d} at {}", idx(&c.max_abs_difference_at))?;
    }
    if let Some(u) = c.max_ulps {
        writeln!(out, "largest distance: {u} ulp at {}", idx(&c.max_ulps_at))?;
    }
    if c.nan_mismatches > 0 {
        writeln!(out, "NaN on one side only (or NaNs of different bits): {}", c.nan_mismatches)?;
    }
    writeln!(out, "first differences (index: {} vs {}):", c.a, c.b)?;
    for d in &c.first_differences {
        let ulps = d.ulps.map(|u| format!(" ({u} ulp)")).unwrap_or_default();
        writeln!(out, "  {}: {} vs {}{ulps}", crate::shape::fmt_shape(&d.index), d.a, d.b)?;
    }
    Ok(())
}

/// An element as the shortest decimal that reads back as the same value in its dtype, so two
/// neighbouring floats never print alike; a NaN with its bits, so two NaNs can be told apart.
fn exact(dtype: DType, b: &[u8]) -> String {
    if value(dtype, b).is_nan() {
        return format!("NaN (0x{:0w$X})", crate::dxdispatch::values::bits(b), w = 2 * b.len());
    }
    match dtype {
        DType::F16 => {
            let h = f16::from_le_bytes([b[0], b[1]]);
            // The fewest significant digits that read back as this float16.
            (0..8)
                .map(|p| format!("{:.*e}", p, f64::from(h)))
                .find_map(|t| t.parse::<f64>().ok().filter(|&v| f16::from_f64(v) == h).map(|v| v.to_string()))
                .unwrap_or_else(|| h.to_string())
        }
        // A bfloat16 is a float32 with its low 16 bits zero: float32's shortest digits may
        // need more than bfloat16's, but they read back as the same value.
        DType::BF16 => f32::from(half::bf16::from_le_bytes([b[0], b[1]])).to_string(),
        DType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_string(),
        DType::F64 => value(dtype, b).to_string(),
        _ => crate::dxdispatch::values::format(dtype, b),
    }
}

/// An element as a double (exact for floats and for integers up to 2^53).
fn value(dtype: DType, b: &[u8]) -> f64 {
    let mut x = [0u8; 8];
    x[..b.len()].copy_from_slice(b);
    match dtype {
        DType::F16 => f64::from(f16::from_le_bytes([x[0], x[1]])),
        DType::BF16 => f64::from(half::bf16::from_le_bytes([x[0], x[1]])),
        DType::F32 => f64::from(f32::from_le_bytes([x[0], x[1], x[2], x[3]])),
        DType::F64 => f64::from_le_bytes(x),
        _ => 0.0,
    }
}

/// An absolute difference: exact for integers, a double for floats.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
enum Diff {
    Float(f64),
    Int(u128),
}

/// `|a - b|`: exact for integers, the double nearest the exact difference for floats.
fn abs_diff(dtype: DType, a: &[u8], b: &[u8]) -> Diff {
    let int = |b: &[u8], signed: bool| -> i128 {
        let mut x = [0u8; 8];
        x[..b.len()].copy_from_slice(b);
        let u = u64::from_le_bytes(x);
        if signed {
            let shift = 64 - 8 * b.len() as u32;
            (((u << shift) as i64) >> shift) as i128
        } else {
            u as i128
        }
    };
    match dtype {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Diff::Float((value(dtype, a) - value(dtype, b)).abs()),
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => Diff::Int((int(a, true) - int(b, true)).unsigned_abs()),
        _ => Diff::Int((int(a, false) - int(b, false)).unsigned_abs()),
    }
}

/// Units in the last place from `a` to `b` (floats): the count of representable values between
/// them, 0 for +0 and -0; `None` for integers, NaNs, and an infinity against a finite value.
pub fn ulp_distance(dtype: DType, a: &[u8], b: &[u8]) -> Option<u64> {
    let bits = match dtype {
        DType::F16 | DType::BF16 => 16u32,
        DType::F32 => 32,
        DType::F64 => 64,
        _ => return None,
    };
    let (va, vb) = (value(dtype, a), value(dtype, b));
    if va.is_nan() || vb.is_nan() || (va.is_infinite() != vb.is_infinite()) {
        return None;
    }
    let raw = |x: &[u8]| -> i128 {
        let mut buf = [0u8; 8];
        buf[..x.len()].copy_from_slice(x);
        let u = u64::from_le_bytes(buf) as u128;
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
        assert_eq!(ulp_distance(DType::I32, &1i32.to_le_bytes(), &2i32.to_le_bytes()), None);
    }

    #[test]
    fn integer_differences_are_exact() {
        assert_eq!(abs_diff(DType::I8, &[0x80], &[0x7f]), Diff::Int(255));
        assert_eq!(abs_diff(DType::U64, &u64::MAX.to_le_bytes(), &0u64.to_le_bytes()), Diff::Int(u64::MAX.into()));
        let d = abs_diff(DType::I64, &i64::MAX.to_le_bytes(), &i64::MIN.to_le_bytes());
        assert_eq!(d, Diff::Int(u64::MAX.into()));
    }

    #[test]
    fn floats_print_with_the_fewest_digits_of_their_type() {
        assert_eq!(exact(DType::F16, &f16::from_f32(0.1).to_le_bytes()), "0.1");
        assert_eq!(exact(DType::F16, &f16::from_f32(1.0).to_le_bytes()), "1");
        assert_eq!(exact(DType::F32, &0.1f32.to_le_bytes()), "0.1");
        assert_eq!(exact(DType::F32, &f32::from_bits(0x7fc0_0001).to_le_bytes()), "NaN (0x7FC00001)");
    }
}
