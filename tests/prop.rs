//! Property tests of the binary: over random shapes (ranks 0 to 5, zero-size and unit dimensions,
//! broadcastable or not, both broadcast modes), all eleven dtypes, `sub`, `sqdiff`,
//! `sqdiff --half-precision` and both under `--float16 toward-zero-inf` and `toward-zero-saturate`, byte orders, storage orders and `.npy` versions, and element values
//! drawn half from all bit patterns and half from the awkward ones (NaNs, infinities, signed
//! zeros, subnormals, the largest finite values, integer extremes), or in one case of three all
//! from a few values whose differences round at a seam of the arithmetic (ties and near-ties at
//! every exponent distance; the integers' awkward values, 64-bit limb seams among them):
//!
//! - the CPU backend's output equals a plain scalar reference written here from the contract's
//!   arithmetic table (with its own float16 conversions, not the `half` crate the tool uses) and
//!   NumPy's broadcasting rule, index by index; incompatible shapes fail the checks (exit 3) and
//!   write nothing;
//! - the wgpu backend equals the CPU backend bit for bit (NaNs by position), with the adapter's
//!   features, emulated (`TENSOROP_WGPU_EMULATE=1`), with tiny chunks and windowed inputs, and on
//!   the 64-bit offset path. Skipped with a printed reason when no adapter is found, unless
//!   `TENSOROP_REQUIRE_GPU=1`.
//!
//! The seed is printed; `PROPTEST_RNG_SEED=N` replays a run, `PROPTEST_CASES=N` changes its size.
//! A failure is shrunk to a small case and reported with the seed.

use crate::common::{self, c_to_fortran, gpu_available, header_dict, npy_raw, parse_npy, py_shape, Dir};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use std::process::{Command, Stdio};

// ---------------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------------

/// NumPy kind and bytes per element of the eleven dtypes the contract computes on
/// (`--feature-level none` admits all of them, at every rank from 0 to 32).
const DTYPES: [(char, usize); 11] =
    [('f', 2), ('f', 4), ('f', 8), ('i', 1), ('i', 2), ('i', 4), ('i', 8), ('u', 1), ('u', 2), ('u', 4), ('u', 8)];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Sub,
    SqDiff,
    /// `sqdiff --half-precision` (differs from `sqdiff` for float16 only).
    SqDiffHalf,
    /// `sub --float16 toward-zero-inf` (differs from `sub` for float16 only).
    SubTzInf,
    /// `sqdiff --float16 toward-zero-inf` (differs from `sqdiff` for float16 only).
    SqDiffTzInf,
    /// `sub --float16 toward-zero-saturate` (differs from `sub` for float16 only).
    SubTzSat,
    /// `sqdiff --float16 toward-zero-saturate` (differs from `sqdiff` for float16 only).
    SqDiffTzSat,
}

impl Op {
    /// Whether the result is a square (`sqdiff`).
    fn squares(self) -> bool {
        !matches!(self, Op::Sub | Op::SubTzInf | Op::SubTzSat)
    }

    /// The command and its float16 flags.
    fn args(self) -> &'static [&'static str] {
        match self {
            Op::Sub => &["sub"],
            Op::SqDiff => &["sqdiff"],
            Op::SqDiffHalf => &["sqdiff", "--half-precision"],
            Op::SubTzInf => &["sub", "--float16", "toward-zero-inf"],
            Op::SqDiffTzInf => &["sqdiff", "--float16", "toward-zero-inf"],
            Op::SubTzSat => &["sub", "--float16", "toward-zero-saturate"],
            Op::SqDiffTzSat => &["sqdiff", "--float16", "toward-zero-saturate"],
        }
    }
}

/// How one input file is stored.
#[derive(Clone, Copy, Debug)]
struct Storage {
    big_endian: bool,
    fortran: bool,
    version: u8,
}

#[derive(Clone, Debug)]
struct Case {
    dtype: usize,
    op: Op,
    /// `--broadcast none` instead of `numpy`.
    no_broadcast: bool,
    shape_a: Vec<usize>,
    shape_b: Vec<usize>,
    storage: [Storage; 2],
    /// Element bit patterns in logical (C) order, zero-extended.
    a: Vec<u64>,
    b: Vec<u64>,
}

impl Case {
    fn kind(&self) -> char {
        DTYPES[self.dtype].0
    }
    fn size(&self) -> usize {
        DTYPES[self.dtype].1
    }
}

/// Dimension sizes: mostly small, often 1 (broadcast), sometimes 0 (empty).
fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![1 => Just(0usize), 3 => Just(1usize), 6 => 2..=4usize]
}

/// Two shapes. An output shape of rank 0 to 5 is drawn; each input keeps the trailing axes of a
/// random rank (one of them all of them) and, per axis, either the output's size or 1. In about
/// one case in six an aligned axis is then given two sizes that do not broadcast (unequal, neither
/// 1, one of them possibly 0).
fn shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    (
        prop::collection::vec(dim(), 0..=5),
        any::<bool>(),
        0..=5usize,
        prop::collection::vec((any::<bool>(), any::<bool>()), 5),
        prop::bool::weighted(0.17),
        (0..5usize, prop::sample::select(vec![(2usize, 3usize), (0, 2), (4, 3), (3, 0)])),
    )
        .prop_map(|(out, a_full, other_rank, keep, incompatible, (axis, (x, y)))| {
            let r = out.len();
            let other_rank = other_rank.min(r);
            let (ra, rb) = if a_full { (r, other_rank) } else { (other_rank, r) };
            let pick = |rank: usize, first: bool| -> Vec<usize> {
                (r - rank..r).map(|k| if first && keep[k].0 || !first && keep[k].1 { out[k] } else { 1 }).collect()
            };
            let (mut a, mut b) = (pick(ra, true), pick(rb, false));
            let common = ra.min(rb);
            if incompatible && common > 0 {
                let k = axis % common;
                let (ia, ib) = (ra - 1 - k, rb - 1 - k);
                a[ia] = x;
                b[ib] = y;
            }
            (a, b)
        })
}

/// The awkward values of a dtype, as bit patterns.
fn specials(kind: char, size: usize) -> Vec<u64> {
    match (kind, size) {
        // +0, -0, smallest and largest subnormal (both signs), smallest normal, 1, 1 + ulp, the
        // largest finite (both signs), +-inf, a quiet and a signalling NaN, 2^-11 (its square
        // is subnormal).
        ('f', 2) => vec![
            0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400, 0x3c00, 0x3c01, 0x7bff, 0xfbff, 0x7c00, 0xfc00,
            0x7e00, 0x7c01, 0x1000,
        ],
        ('f', 4) => vec![
            0,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007f_ffff,
            0x0080_0000,
            0x3f80_0000,
            0x3f80_0001,
            0x7f7f_ffff,
            0xff7f_ffff,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x7f80_0001,
            // 65504 and 65520 (float16's largest finite and its rounding midpoint to infinity),
            // 2^-25 (float16's underflow midpoint).
            0x477f_e000,
            0x477f_f000,
            0x3300_0000,
        ],
        ('f', 8) => vec![
            0,
            1 << 63,
            1,
            (1 << 63) | 1,
            0x000f_ffff_ffff_ffff,
            0x0010_0000_0000_0000,
            0x3ff0_0000_0000_0000,
            0x3ff0_0000_0000_0001,
            0x3fef_ffff_ffff_ffff,
            0x7fef_ffff_ffff_ffff,
            // 2^512 (its square overflows) and 1.25 + ulp (its square is a tie plus a sticky
            // bit in the product's lowest word).
            0x5ff0_0000_0000_0000,
            0x3ff4_0000_0000_0001,
            0xffef_ffff_ffff_ffff,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            0x7ff8_0000_0000_0000,
            0x7ff0_0000_0000_0001,
            // 2^-537: its square is below the smallest subnormal.
            0x1e60_0000_0000_0000,
        ],
        _ => {
            let bits = size as u32 * 8;
            let mask = u64::MAX >> (64 - bits);
            let min = 1u64 << (bits - 1);
            let mut v = vec![0, 1, 2, mask, mask - 1, min, min - 1, min + 1, 1 << (bits / 2)];
            if bits == 64 {
                // The seams of the emulated 64-bit arithmetic's two u32 limbs.
                v.extend([0xffff_ffff, 0x1_0000_0001, 0xffff_ffff_0000_0000, 0x1_ffff_ffff, 0x8000_0000_ffff_ffff]);
            }
            v
        }
    }
}

/// One element: any bit pattern, or one of the awkward values.
fn element(kind: char, size: usize) -> impl Strategy<Value = u64> {
    let mask = u64::MAX >> (64 - size as u32 * 8);
    prop_oneof![any::<u64>().prop_map(move |v| v & mask), prop::sample::select(specials(kind, size))]
}

/// A float's bits from an f64 that the dtype holds exactly, or `None`.
fn exact_bits(size: usize, v: f64) -> Option<u64> {
    let back = match size {
        2 => {
            let h = f32_to_f16(v as f32);
            (f64::from(f16_to_f32(h)), u64::from(h))
        }
        4 => (f64::from(v as f32), u64::from((v as f32).to_bits())),
        _ => (v, v.to_bits()),
    };
    (back.0 == v).then_some(back.1)
}

/// A few values between which every difference rounds at a seam of the arithmetic, so that
/// random cases drawn from them meet the seams in every pair (the boundary suites of
/// tests/backends.rs, made random).
///
/// Floats: x (an even or odd significand, the largest one, or 1.5, at a random exponent) and y
/// at a random exponent distance n below it with a bit on x's rounding point (half an ulp of x),
/// as it is and with its last bit added or taken away, both signs. Integers: the awkward
/// values, among them the 64-bit limb seams, so that every pair is awkward.
fn seam_set(kind: char, size: usize) -> BoxedStrategy<Vec<u64>> {
    if kind != 'f' {
        return Just(specials(kind, size)).boxed();
    }
    // Stored significand bits, and the normal exponents' range.
    let (p, emin, emax): (i32, i32, i32) = match size {
        2 => (10, -14, 15),
        4 => (23, -126, 127),
        _ => (52, -1022, 1023),
    };
    let ulp = 2f64.powi(-p);
    (prop::sample::select(vec![1.0, 1.0 + ulp, 2.0 - ulp, 1.5]), emin..=emax, 1..=p + 12)
        .prop_map(move |(s, e, n)| {
            let x = s * 2f64.powi(e);
            let (lead, half) = (2f64.powi(e - n), 2f64.powi(e - p - 1));
            let y = if n <= p {
                lead + half
            } else if n == p + 1 {
                half
            } else {
                lead
            };
            let mut set = Vec::new();
            for v in [Some(x), Some(y)].into_iter().flatten() {
                if let Some(b) = exact_bits(size, v) {
                    let sign = 1u64 << (size * 8 - 1);
                    set.extend([b, b | sign]);
                    if v == y && b > 1 {
                        set.extend([b + 1, b - 1, (b + 1) | sign, (b - 1) | sign]);
                    }
                }
            }
            if set.is_empty() {
                set.push(0);
            }
            set
        })
        .boxed()
}

/// Elements for inputs of `na` and `nb` elements: in two cases of three each drawn on its own
/// ([`element`]), in the third all from one [`seam_set`].
fn elements(kind: char, size: usize, na: usize, nb: usize) -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
    use prop::collection::vec;
    let seams = seam_set(kind, size)
        .prop_flat_map(move |set| (vec(prop::sample::select(set.clone()), na), vec(prop::sample::select(set), nb)));
    prop_oneof![2 => (vec(element(kind, size), na), vec(element(kind, size), nb)).boxed(), 1 => seams.boxed()]
}

fn storage() -> impl Strategy<Value = Storage> {
    (any::<bool>(), prop::bool::weighted(0.3), prop::sample::select(vec![1u8, 1, 1, 2, 3]))
        .prop_map(|(big_endian, fortran, version)| Storage { big_endian, fortran, version })
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..DTYPES.len(),
        prop::sample::select(vec![
            Op::Sub,
            Op::SqDiff,
            Op::SqDiffHalf,
            Op::SubTzInf,
            Op::SqDiffTzInf,
            Op::SubTzSat,
            Op::SqDiffTzSat,
        ]),
        prop::bool::weighted(0.1),
        shapes(),
        [storage(), storage()],
    )
        .prop_flat_map(|(dtype, op, no_broadcast, (shape_a, shape_b), storage)| {
            let (kind, size) = DTYPES[dtype];
            let (na, nb) = (shape_a.iter().product::<usize>(), shape_b.iter().product::<usize>());
            elements(kind, size, na, nb).prop_map(move |(a, b)| Case {
                dtype,
                op,
                no_broadcast,
                shape_a: shape_a.clone(),
                shape_b: shape_b.clone(),
                storage,
                a,
                b,
            })
        })
}

// ---------------------------------------------------------------------------------------------
// The reference
// ---------------------------------------------------------------------------------------------

/// float16 bits to float32 (exact).
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let (exp, mant) = ((h >> 10) & 0x1f, h & 0x3ff);
    match exp {
        0 => sign * f32::from(mant) * 2f32.powi(-24),
        0x1f if mant == 0 => sign * f32::INFINITY,
        0x1f => f32::NAN,
        _ => f32::from_bits((u32::from(h & 0x8000) << 16) | ((u32::from(exp) + 112) << 23) | (u32::from(mant) << 13)),
    }
}

/// float32 to float16 bits, rounded to nearest even (subnormals kept, overflow to infinity).
fn f32_to_f16(x: f32) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000u16 } else { 0 };
    if x.is_nan() {
        return 0x7e00;
    }
    let v = f64::from(x.abs());
    if v >= 65520.0 {
        // At or above the midpoint between the largest finite float16 (65504) and 2^16.
        return sign | 0x7c00;
    }
    if v < 2f64.powi(-14) {
        // Subnormal range: units of 2^-24; 1024 units is the smallest normal, whose bits are 0x400.
        return sign | (v * 2f64.powi(24)).round_ties_even() as u16;
    }
    let e = binade(v);
    let mut m = (v * 2f64.powi(10 - e)).round_ties_even() as u32;
    let mut e = e;
    if m == 2048 {
        m = 1024;
        e += 1;
    }
    if e > 15 {
        return sign | 0x7c00;
    }
    sign | (((e + 15) as u16) << 10) | (m - 1024) as u16
}

/// The exponent e of a positive finite `v`: 2^e <= v < 2^(e + 1).
fn binade(v: f64) -> i32 {
    let e = v.log2().floor() as i32;
    // Guard against log2 rounding at exact powers of two.
    if 2f64.powi(e) > v {
        e - 1
    } else if 2f64.powi(e + 1) <= v {
        e + 1
    } else {
        e
    }
}

/// float32 to float16 bits toward zero (subnormals kept), as DirectML 1.13 and later store
/// float16: any value beyond 65504 in magnitude to infinity.
fn f32_to_f16_tz_inf(x: f32) -> u16 {
    f32_to_f16_toward_zero(x, false)
}

/// float32 to float16 bits toward zero, as DirectML 1.8 to 1.12 store float16 (Direct3D's
/// written rule): a finite value beyond 65504 in magnitude saturates at 65504, infinities stay.
fn f32_to_f16_tz_sat(x: f32) -> u16 {
    f32_to_f16_toward_zero(x, true)
}

fn f32_to_f16_toward_zero(x: f32, saturate: bool) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000u16 } else { 0 };
    if x.is_nan() {
        return 0x7e00;
    }
    let v = f64::from(x.abs());
    if v > 65504.0 {
        return sign | if saturate && v.is_finite() { 0x7bff } else { 0x7c00 };
    }
    if v < 2f64.powi(-14) {
        return sign | (v * 2f64.powi(24)).floor() as u16;
    }
    let e = binade(v);
    let m = (v * 2f64.powi(10 - e)).floor() as u32;
    sign | (((e + 15) as u16) << 10) | (m - 1024) as u16
}

/// The contract's arithmetic table, on element bits.
fn reference(kind: char, size: usize, op: Op, a: u64, b: u64) -> u64 {
    match (kind, size) {
        ('f', 2) => {
            let d = f16_to_f32(a as u16) - f16_to_f32(b as u16);
            let r = match op {
                Op::Sub | Op::SubTzInf | Op::SubTzSat => d,
                Op::SqDiff | Op::SqDiffTzInf | Op::SqDiffTzSat => d * d,
                Op::SqDiffHalf => {
                    let h = f16_to_f32(f32_to_f16(d));
                    h * h
                }
            };
            u64::from(match op {
                Op::SubTzInf | Op::SqDiffTzInf => f32_to_f16_tz_inf(r),
                Op::SubTzSat | Op::SqDiffTzSat => f32_to_f16_tz_sat(r),
                Op::Sub | Op::SqDiff | Op::SqDiffHalf => f32_to_f16(r),
            })
        }
        ('f', 4) => {
            let d = f32::from_bits(a as u32) - f32::from_bits(b as u32);
            u64::from(if op.squares() { d * d } else { d }.to_bits())
        }
        ('f', 8) => {
            let d = f64::from_bits(a) - f64::from_bits(b);
            if op.squares() { d * d } else { d }.to_bits()
        }
        // Two's complement: the low bits of a wrapping difference and square do not depend on
        // signedness.
        _ => {
            let mask = u64::MAX >> (64 - size as u32 * 8);
            let d = a.wrapping_sub(b) & mask;
            if op.squares() {
                d.wrapping_mul(d) & mask
            } else {
                d
            }
        }
    }
}

fn is_nan(kind: char, size: usize, bits: u64) -> bool {
    match (kind, size) {
        ('f', 2) => bits & 0x7c00 == 0x7c00 && bits & 0x3ff != 0,
        ('f', 4) => f32::from_bits(bits as u32).is_nan(),
        ('f', 8) => f64::from_bits(bits).is_nan(),
        _ => false,
    }
}

/// NumPy's broadcasting rule: the output shape, or None when the shapes are incompatible.
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let at = |s: &[usize], k: usize| if k + s.len() >= r { s[k + s.len() - r] } else { 1 };
    (0..r)
        .map(|k| match (at(a, k), at(b, k)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// The flat C-order index into an input of `shape` of the output element at multi-index `idx`:
/// the input's axes align with the output's last ones, and an axis of size 1 always reads index 0.
fn source(shape: &[usize], idx: &[usize]) -> usize {
    let pad = idx.len() - shape.len();
    shape.iter().enumerate().fold(0, |acc, (k, &d)| acc * d + if d == 1 { 0 } else { idx[pad + k] })
}

/// The expected output (shape and element bits) of a case, or None when the checks must fail.
fn expected(c: &Case) -> Option<(Vec<usize>, Vec<u64>)> {
    if c.no_broadcast && c.shape_a != c.shape_b {
        return None;
    }
    let shape = broadcast(&c.shape_a, &c.shape_b)?;
    let n: usize = shape.iter().product();
    let mut idx = vec![0usize; shape.len()];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let (x, y) = (c.a[source(&c.shape_a, &idx)], c.b[source(&c.shape_b, &idx)]);
        out.push(reference(c.kind(), c.size(), c.op, x, y));
        for k in (0..shape.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    Some((shape, out))
}

// ---------------------------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------------------------

fn npy_file(kind: char, size: usize, shape: &[usize], vals: &[u64], st: Storage) -> Vec<u8> {
    let stored = if st.fortran { c_to_fortran(shape, vals) } else { vals.to_vec() };
    let mut data = Vec::with_capacity(stored.len() * size);
    for v in stored {
        let le = &v.to_le_bytes()[..size];
        if st.big_endian {
            data.extend(le.iter().rev());
        } else {
            data.extend(le);
        }
    }
    let order = match (size, st.big_endian) {
        (1, _) => '|',
        (_, true) => '>',
        (_, false) => '<',
    };
    npy_raw((st.version, 0), &header_dict(&format!("{order}{kind}{size}"), st.fortran, &py_shape(shape)), &data)
}

/// Writes the case's inputs into `dir`; returns the arguments (without `-o`).
fn write_inputs(dir: &Dir, c: &Case) -> Vec<&'static str> {
    let (kind, size) = (c.kind(), c.size());
    dir.write("a.npy", &npy_file(kind, size, &c.shape_a, &c.a, c.storage[0]));
    dir.write("b.npy", &npy_file(kind, size, &c.shape_b, &c.b, c.storage[1]));
    let mut args = c.op.args().to_vec();
    args.extend(["a.npy", "b.npy", "--feature-level", "none"]);
    if c.no_broadcast {
        args.extend(["--broadcast", "none"]);
    }
    args
}

/// (exit code, stderr) of the binary run in `dir`.
fn run(dir: &Dir, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(common::bin());
    cmd.current_dir(dir.root()).args(args).env_remove("RUST_BACKTRACE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null());
    let (code, _, err) = common::output(&mut cmd, "tensorop");
    (code, String::from_utf8_lossy(&err).into_owned())
}

/// The output file's element bits, after checking it is the format the contract promises: a
/// version 1.0, C-order, little-endian file of the inputs' dtype and the expected shape, holding
/// exactly the data the shape needs.
fn output_bits(dir: &Dir, name: &str, c: &Case, shape: &[usize]) -> Result<Vec<u64>, TestCaseError> {
    let (kind, size) = (c.kind(), c.size());
    let npy = parse_npy(&dir.read(name));
    let order = if size == 1 { '|' } else { '<' };
    prop_assert_eq!((npy.version, npy.fortran), ((1, 0), false), "{}: output format", name);
    prop_assert_eq!(&npy.descr, &format!("{order}{kind}{size}"), "{}: output dtype", name);
    prop_assert_eq!(&npy.shape, &shape.to_vec(), "{}: output shape", name);
    prop_assert_eq!(npy.data.len(), shape.iter().product::<usize>() * size, "{}: output data length", name);
    Ok(npy
        .data
        .chunks_exact(size)
        .map(|e| {
            let mut w = [0u8; 8];
            w[..size].copy_from_slice(e);
            u64::from_le_bytes(w)
        })
        .collect())
}

/// The flat index, as a multi-index, for messages.
fn unravel(shape: &[usize], mut flat: usize) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        idx[k] = flat % shape[k].max(1);
        flat /= shape[k].max(1);
    }
    idx
}

/// Runs `property` over `cases` generated cases with a printed seed (`PROPTEST_RNG_SEED` if set,
/// else a fresh one); panics with the shrunk case and the seed on failure.
fn check<S: Strategy>(name: &str, cases: u32, strategy: S, property: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let mut config = Config { cases, failure_persistence: None, max_shrink_iters: 1024, ..Config::default() };
    if std::env::var_os("PROPTEST_CASES").is_some() {
        config.cases = Config::default().cases;
    }
    let seed = match config.rng_seed {
        RngSeed::Fixed(s) => s,
        RngSeed::Random => {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            (t.as_nanos() as u64) ^ u64::from(std::process::id()).rotate_left(32)
        }
    };
    config.rng_seed = RngSeed::Fixed(seed);
    eprintln!("{name}: {} cases, seed {seed} (PROPTEST_RNG_SEED={seed} replays this run)", config.cases);
    let mut runner = TestRunner::new(config);
    if let Err(e) = runner.run(&strategy, property) {
        panic!("{name} failed (replay with PROPTEST_RNG_SEED={seed}): {e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

#[test]
fn cpu_backend_equals_the_scalar_reference() {
    assert_reference_float16_conversions_are_exact();
    check("cpu_backend_equals_the_scalar_reference", 64, case(), |c| {
        let dir = Dir::new();
        let args = write_inputs(&dir, &c);
        let (code, err) = run(&dir, &[&args[..], &["-o", "out.npy"]].concat(), &[]);
        let Some((shape, want)) = expected(&c) else {
            prop_assert_eq!(code, Some(3), "incompatible shapes must fail the checks (exit 3): {}", err);
            let check = if c.no_broadcast { "same_sizes" } else { "broadcastable" };
            prop_assert!(err.contains(check), "the message names the failed check {}: {}", check, err);
            prop_assert!(!dir.exists("out.npy"), "nothing is written when a check fails");
            return Ok(());
        };
        prop_assert_eq!(code, Some(0), "{}", err);
        let got = output_bits(&dir, "out.npy", &c, &shape)?;
        let (kind, size) = (c.kind(), c.size());
        for (flat, (g, w)) in got.iter().zip(&want).enumerate() {
            if g != w && !(is_nan(kind, size, *g) && is_nan(kind, size, *w)) {
                let idx = unravel(&shape, flat);
                let (x, y) = (c.a[source(&c.shape_a, &idx)], c.b[source(&c.shape_b, &idx)]);
                prop_assert!(false, "element {:?}: a {:#x}, b {:#x}: got {:#x}, want {:#x}", idx, x, y, g, w);
            }
        }
        Ok(())
    });
}

/// The wgpu backend's paths: the adapter's features, none of them, tiny chunks with broadcast
/// inputs streamed in windows, and the 64-bit offset path of outputs with 2^32 elements or more.
const GPU_MODES: [&[(&str, &str)]; 4] = [
    &[],
    &[("TENSOROP_WGPU_EMULATE", "1")],
    &[("TENSOROP_WGPU_RESIDENT_BYTES", "0"), ("TENSOROP_WGPU_CHUNK_BYTES", "16")],
    &[("TENSOROP_WGPU_WIDE", "1"), ("TENSOROP_WGPU_CHUNK_BYTES", "64")],
];

#[test]
fn wgpu_backend_equals_the_cpu_backend() {
    let test = "wgpu_backend_equals_the_cpu_backend";
    if !gpu_available(test) {
        return;
    }
    check(test, 32, (case(), 0..GPU_MODES.len()), |(c, mode)| {
        let dir = Dir::new();
        let (kind, size) = (c.kind(), c.size());
        let args = write_inputs(&dir, &c);
        let env = GPU_MODES[mode];
        let (cpu, cpu_err) = run(&dir, &[&args[..], &["-o", "cpu.npy"]].concat(), &[]);
        let gpu_args = [&args[..], &["-o", "gpu.npy", "--backend", "wgpu"]].concat();
        let (gpu, gpu_err) = run(&dir, &gpu_args, env);
        prop_assert_eq!(cpu, gpu, "exit codes differ ({:?}); cpu: {} / wgpu: {}", env, cpu_err, gpu_err);
        let Some((shape, _)) = expected(&c) else {
            return Ok(());
        };
        prop_assert_eq!(cpu, Some(0), "{}", cpu_err);
        // Bit for bit, also on a device that flushes float32 subnormals (float32_exact.wgsl).
        let (c_bits, g_bits) = (output_bits(&dir, "cpu.npy", &c, &shape)?, output_bits(&dir, "gpu.npy", &c, &shape)?);
        for (flat, (x, y)) in c_bits.iter().zip(&g_bits).enumerate() {
            prop_assert!(
                x == y || (is_nan(kind, size, *x) && is_nan(kind, size, *y)),
                "element {:?} ({:?}): cpu {:#x}, wgpu {:#x}",
                unravel(&shape, flat),
                env,
                x,
                y
            );
        }
        Ok(())
    });
}

/// The reference's own float16 conversions agree with the `half` crate on every float16 value and
/// on float32 values around every float16 rounding boundary, so that a disagreement in the
/// properties points at the tool, not at the reference.
fn assert_reference_float16_conversions_are_exact() {
    for h in 0..=u16::MAX {
        let x = f16_to_f32(h);
        let want = half::f16::from_bits(h).to_f32();
        assert!(x.to_bits() == want.to_bits() || (x.is_nan() && want.is_nan()), "f16 {h:#06x} -> {x}");
        if !x.is_nan() {
            assert_eq!(f32_to_f16(x), h, "f16 {h:#06x} round trip");
        }
        // Each value's float32 neighbours and the midpoint to the next float16.
        for v in [f32::from_bits(x.to_bits().wrapping_add(1)), f32::from_bits(x.to_bits().wrapping_sub(1))] {
            if !v.is_nan() {
                assert_eq!(f32_to_f16(v), half::f16::from_f32(v).to_bits(), "f32 {v:e} ({:#x})", v.to_bits());
            }
        }
        let next = f16_to_f32(h.wrapping_add(1));
        if x.is_finite() && next.is_finite() && (x >= 0.0) == (next >= 0.0) {
            let mid = ((f64::from(x) + f64::from(next)) / 2.0) as f32;
            assert_eq!(f32_to_f16(mid), half::f16::from_f32(mid).to_bits(), "midpoint {mid:e}");
        }
    }
    // Toward zero: every finite float16 is kept, the float32 value just above a positive
    // one truncates to it (past 65504: infinity), the one just below to its predecessor.
    for h in 1..0x7c00u16 {
        let x = f16_to_f32(h);
        let above = if h == 0x7bff { 0x7c00 } else { h };
        for (v, want) in [(x, h), (f32::from_bits(x.to_bits() + 1), above), (f32::from_bits(x.to_bits() - 1), h - 1)] {
            assert_eq!(f32_to_f16_tz_inf(v), want, "toward-zero-inf {v:e}");
            assert_eq!(f32_to_f16_tz_inf(-v), want | 0x8000, "toward-zero-inf {:e}", -v);
        }
    }
    assert_eq!(f32_to_f16_tz_inf(65504.004), 0x7c00);
    assert_eq!(f32_to_f16_tz_inf(f32::NEG_INFINITY), 0xfc00);
    assert_eq!(f32_to_f16_tz_sat(65504.004), 0x7bff);
    assert_eq!(f32_to_f16_tz_sat(-1e30), 0xfbff);
    assert_eq!(f32_to_f16_tz_sat(f32::NEG_INFINITY), 0xfc00);
}
