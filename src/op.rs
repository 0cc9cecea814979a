//! The operators and their arithmetic: the one place that defines what `sub` and `sqdiff`
//! compute for each dtype (the contract's arithmetic table), plus the slice kernels every
//! backend's CPU path calls. Backends receive a [`Semantics`] value and never re-define the math.

use crate::dtype::Element;
use half::f16;
use half::slice::HalfFloatSliceExt;

/// An element-wise operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `a - b` (`DML_OPERATOR_ELEMENT_WISE_SUBTRACT`).
    Sub,
    /// `(a - b) * (a - b)` (`DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE`).
    SqDiff,
}

impl Op {
    /// Both operators.
    pub const ALL: [Op; 2] = [Op::Sub, Op::SqDiff];

    /// The command name (`sub`, `sqdiff`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Sub => "sub",
            Op::SqDiff => "sqdiff",
        }
    }

    /// The DirectML operator type this op implements.
    pub fn dml_operator(self) -> &'static str {
        match self {
            Op::Sub => "DML_OPERATOR_ELEMENT_WISE_SUBTRACT",
            Op::SqDiff => "DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE",
        }
    }
}

/// What a kernel computes: the operator and the float16 intermediate-rounding mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Semantics {
    pub op: Op,
    /// float16 only: round `a - b` to float16 before squaring (`--half-precision`).
    pub half_precision: bool,
}

impl Semantics {
    /// Applies the operator to one pair of elements: the scalar reference every kernel matches.
    #[cfg_attr(not(test), allow(dead_code))]
    #[inline(always)]
    pub fn scalar<T: Arith>(self, a: T, b: T) -> T {
        match (self.op, self.half_precision) {
            (Op::Sub, _) => T::sub(a, b),
            (Op::SqDiff, false) => T::sqdiff(a, b),
            (Op::SqDiff, true) => T::sqdiff_half(a, b),
        }
    }

    /// Computes `out[i] = op(a[i], b[i])` where each operand is a slice as long as `out` or a
    /// single broadcast value.
    pub fn apply<T: Arith>(self, out: &mut [T], a: Operand<'_, T>, b: Operand<'_, T>) {
        debug_assert!(a.fits(out.len()) && b.fits(out.len()));
        T::apply_slices(self, out, a, b);
    }
}

/// One operand of a slice kernel.
#[derive(Debug, Clone, Copy)]
pub enum Operand<'a, T> {
    /// One element per output element.
    Slice(&'a [T]),
    /// The same element for every output element (a stride-0 input).
    Scalar(T),
}

impl<T> Operand<'_, T> {
    fn fits(&self, n: usize) -> bool {
        match self {
            Operand::Slice(s) => s.len() == n,
            Operand::Scalar(_) => true,
        }
    }
}

/// The arithmetic of one element type.
pub trait Arith: Element + Copy {
    /// `a - b`.
    fn sub(a: Self, b: Self) -> Self;
    /// `(a - b) * (a - b)`.
    fn sqdiff(a: Self, b: Self) -> Self;
    /// `sqdiff` with the difference rounded to `Self` first; the same as `sqdiff` except for
    /// float16.
    fn sqdiff_half(a: Self, b: Self) -> Self {
        Self::sqdiff(a, b)
    }
    /// The slice kernel; the default is a loop the compiler vectorises.
    fn apply_slices(sem: Semantics, out: &mut [Self], a: Operand<'_, Self>, b: Operand<'_, Self>) {
        match (sem.op, sem.half_precision) {
            (Op::Sub, _) => map2(out, a, b, Self::sub),
            (Op::SqDiff, false) => map2(out, a, b, Self::sqdiff),
            (Op::SqDiff, true) => map2(out, a, b, Self::sqdiff_half),
        }
    }
}

/// `out[i] = f(a[i], b[i])`, monomorphised per operand shape so each loop vectorises.
#[inline(always)]
fn map2<T: Copy, F: Fn(T, T) -> T>(out: &mut [T], a: Operand<'_, T>, b: Operand<'_, T>, f: F) {
    match (a, b) {
        (Operand::Slice(a), Operand::Slice(b)) => {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                *o = f(x, y);
            }
        }
        (Operand::Slice(a), Operand::Scalar(y)) => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = f(x, y);
            }
        }
        (Operand::Scalar(x), Operand::Slice(b)) => {
            for (o, &y) in out.iter_mut().zip(b) {
                *o = f(x, y);
            }
        }
        (Operand::Scalar(x), Operand::Scalar(y)) => out.fill(f(x, y)),
    }
}

macro_rules! impl_int_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn sub(a: Self, b: Self) -> Self {
                a.wrapping_sub(b)
            }
            #[inline(always)]
            fn sqdiff(a: Self, b: Self) -> Self {
                let d = a.wrapping_sub(b);
                d.wrapping_mul(d)
            }
        }
    )*};
}
impl_int_arith!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! impl_float_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn sub(a: Self, b: Self) -> Self {
                a - b
            }
            #[inline(always)]
            fn sqdiff(a: Self, b: Self) -> Self {
                // Two roundings, never fused: Rust does not contract `d * d` into an FMA.
                let d = a - b;
                d * d
            }
        }
    )*};
}
impl_float_arith!(f32, f64);

/// float16 arithmetic is carried out in float32 and rounded to float16 once at the end.
impl Arith for f16 {
    #[inline(always)]
    fn sub(a: Self, b: Self) -> Self {
        f16::from_f32(f32_sub(a.to_f32(), b.to_f32()))
    }
    #[inline(always)]
    fn sqdiff(a: Self, b: Self) -> Self {
        f16::from_f32(f32_sqdiff(a.to_f32(), b.to_f32()))
    }
    #[inline(always)]
    fn sqdiff_half(a: Self, b: Self) -> Self {
        f16::from_f32(f32_sqdiff_half(a.to_f32(), b.to_f32()))
    }

    /// On x86-64 with F16C and AVX2 (detected once), a fused kernel converts 8 elements at a time
    /// to float32, computes and converts back with round-to-nearest-even ([`f16_x86`]).
    /// Elsewhere, converts blocks to float32 with `half`'s slice conversions, computes with the
    /// same scalar functions as [`Arith::sub`] etc., and converts back.
    fn apply_slices(sem: Semantics, out: &mut [Self], a: Operand<'_, Self>, b: Operand<'_, Self>) {
        #[cfg(target_arch = "x86_64")]
        if f16_x86::available() {
            // SAFETY: the CPU has AVX2 and F16C, checked at run time.
            unsafe { f16_x86::apply(sem, out, a, b) };
            return;
        }
        f16_blocks(sem, out, a, b);
    }
}

/// The portable float16 kernel: block conversions through `half`.
fn f16_blocks(sem: Semantics, out: &mut [f16], a: Operand<'_, f16>, b: Operand<'_, f16>) {
    {
        const BLOCK: usize = 1024;
        let mut fa = [0f32; BLOCK];
        let mut fb = [0f32; BLOCK];
        let mut start = 0;
        while start < out.len() {
            let n = BLOCK.min(out.len() - start);
            let fa = widen(a, start, &mut fa[..n]);
            let fb = widen(b, start, &mut fb[..n]);
            let res = &mut [0f32; BLOCK][..n];
            // Each arm passes a fn item (not a fn pointer) so the loop is inlined and vectorised.
            match (sem.op, sem.half_precision) {
                (Op::Sub, _) => map2(res, fa, fb, f32_sub),
                (Op::SqDiff, false) => map2(res, fa, fb, f32_sqdiff),
                (Op::SqDiff, true) => map2(res, fa, fb, f32_sqdiff_half),
            }
            out[start..start + n].convert_from_f32_slice(res);
            start += n;
        }
    }
}

/// float16 kernels with x86-64's F16C conversions: 8 elements per step, computed in float32 exactly
/// as [`Arith for f16`](Arith) says (no fused multiply-add; the `--half-precision` difference
/// rounded to float16 and back), stored rounded to nearest even. F16C keeps subnormals and
/// produces infinities and NaNs as IEEE conversions do.
#[cfg(target_arch = "x86_64")]
mod f16_x86 {
    use super::{f16, Op, Operand, Semantics};
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// Round to nearest even, not MXCSR's mode (the immediate has 3 bits: no exception flag).
    const RNE: i32 = _MM_FROUND_TO_NEAREST_INT;

    /// Whether this CPU has AVX2 and F16C (detected once).
    pub fn available() -> bool {
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c"))
    }

    /// Computes `out[i] = op(a[i], b[i])` for float16.
    ///
    /// # Safety
    /// The CPU must have AVX2 and F16C ([`available`]).
    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn apply(sem: Semantics, out: &mut [f16], a: Operand<'_, f16>, b: Operand<'_, f16>) {
        match (sem.op, sem.half_precision) {
            (Op::Sub, _) => sub(out, a, b),
            (Op::SqDiff, false) => sqdiff(out, a, b),
            (Op::SqDiff, true) => sqdiff_half(out, a, b),
        }
    }

    macro_rules! kernel {
        ($name:ident, |$x:ident, $y:ident| $body:expr) => {
            #[target_feature(enable = "avx2,f16c")]
            unsafe fn $name(out: &mut [f16], a: Operand<'_, f16>, b: Operand<'_, f16>) {
                #[inline(always)]
                unsafe fn op($x: __m256, $y: __m256) -> __m256 {
                    $body
                }
                // 8 float16 values from `src` at `i`, or the broadcast value.
                #[inline(always)]
                unsafe fn load(v: &Operand<'_, f16>, i: usize, splat: __m256) -> __m256 {
                    match v {
                        // SAFETY: the caller keeps i + 8 <= len; unaligned 16-byte load.
                        Operand::Slice(s) => _mm256_cvtph_ps(_mm_loadu_si128(s.as_ptr().add(i).cast())),
                        Operand::Scalar(_) => splat,
                    }
                }
                let splat = |v: &Operand<'_, f16>| match v {
                    Operand::Scalar(x) => _mm256_set1_ps(x.to_f32()),
                    Operand::Slice(_) => _mm256_setzero_ps(),
                };
                let (sa, sb) = (splat(&a), splat(&b));
                let n = out.len();
                let mut i = 0;
                while i + 8 <= n {
                    let r = op(load(&a, i, sa), load(&b, i, sb));
                    // SAFETY: i + 8 <= out.len(); unaligned 16-byte store.
                    _mm_storeu_si128(out.as_mut_ptr().add(i).cast(), _mm256_cvtps_ph::<RNE>(r));
                    i += 8;
                }
                if i < n {
                    // The tail through 8-element buffers, with the same instructions.
                    let m = n - i;
                    let pad = |v: &Operand<'_, f16>| {
                        let mut buf = [f16::ZERO; 8];
                        if let Operand::Slice(s) = v {
                            buf[..m].copy_from_slice(&s[i..n]);
                        }
                        buf
                    };
                    let (ta, tb) = (pad(&a), pad(&b));
                    let (la, lb) = (Operand::Slice(&ta[..]), Operand::Slice(&tb[..]));
                    let va = if matches!(a, Operand::Scalar(_)) { sa } else { load(&la, 0, sa) };
                    let vb = if matches!(b, Operand::Scalar(_)) { sb } else { load(&lb, 0, sb) };
                    let mut res = [f16::ZERO; 8];
                    // SAFETY: res holds 8 elements.
                    _mm_storeu_si128(res.as_mut_ptr().cast(), _mm256_cvtps_ph::<RNE>(op(va, vb)));
                    out[i..].copy_from_slice(&res[..m]);
                }
            }
        };
    }

    kernel!(sub, |x, y| _mm256_sub_ps(x, y));
    kernel!(sqdiff, |x, y| {
        let d = _mm256_sub_ps(x, y);
        _mm256_mul_ps(d, d)
    });
    kernel!(sqdiff_half, |x, y| {
        let h = _mm256_cvtph_ps(_mm256_cvtps_ph::<RNE>(_mm256_sub_ps(x, y)));
        _mm256_mul_ps(h, h)
    });
}

/// Widens `n = buf.len()` float16 operand values starting at `start` into `buf`.
#[inline(always)]
fn widen<'a>(op: Operand<'_, f16>, start: usize, buf: &'a mut [f32]) -> Operand<'a, f32> {
    match op {
        Operand::Slice(s) => {
            s[start..start + buf.len()].convert_to_f32_slice(buf);
            Operand::Slice(buf)
        }
        Operand::Scalar(x) => Operand::Scalar(x.to_f32()),
    }
}

/// float16 `sub` in float32: `f32(a) - f32(b)`.
#[inline(always)]
fn f32_sub(a: f32, b: f32) -> f32 {
    a - b
}

/// float16 `sqdiff` in float32: `d = f32(a) - f32(b); d * d`.
#[inline(always)]
fn f32_sqdiff(a: f32, b: f32) -> f32 {
    let d = a - b;
    d * d
}

/// float16 `sqdiff` with `--half-precision`: `h = f16(f32(a) - f32(b)); f32(h) * f32(h)`.
#[inline(always)]
fn f32_sqdiff_half(a: f32, b: f32) -> f32 {
    let h = f16::from_f32(a - b).to_f32();
    h * h
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUB: Semantics = Semantics { op: Op::Sub, half_precision: false };
    const SQ: Semantics = Semantics { op: Op::SqDiff, half_precision: false };
    const SQH: Semantics = Semantics { op: Op::SqDiff, half_precision: true };

    /// Identical bits, or NaN in both (the contract leaves NaN payloads free).
    fn same_f16(x: f16, y: f16) -> bool {
        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
    }

    #[test]
    fn float16_kernel_matches_the_scalar_reference_for_every_a() {
        // Every float16 value as `a` against values that stress rounding, subnormals, overflow,
        // signed zeros and NaNs as `b`, through every operand form and tail length.
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let bs: Vec<f16> = [
            0x0000, 0x8000, 0x3c00, 0xbc00, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00,
            0x7c01, 0x7d00, 0xfc01, 0x3c01, 0x4000, 0x5bff, 0x6800, 0x1000, 0x2e66, 0xc4d2, 0x57ff, 0x5800, 0x0200,
            0x3555, 0xb555, 0x7000, 0xf000, 0x2000, 0x4248, 0x1c00, 0x0010, 0x43ff, 0xd3ff, 0x7a00, 0x0401, 0x3bff,
            0xabcd,
        ]
        .into_iter()
        .map(f16::from_bits)
        .collect();
        for sem in [SUB, SQ, SQH] {
            for &b in &bs {
                let want: Vec<f16> = all.iter().map(|&a| sem.scalar(a, b)).collect();
                let bv = vec![b; all.len()];
                let mut got = vec![f16::ZERO; all.len()];
                for (form, (oa, ob)) in [
                    (Operand::Slice(&all[..]), Operand::Slice(&bv[..])),
                    (Operand::Slice(&all[..]), Operand::Scalar(b)),
                ]
                .into_iter()
                .enumerate()
                {
                    sem.apply(&mut got, oa, ob);
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            same_f16(*g, *w),
                            "{sem:?} form {form}: a={i:#06x} b={:#06x}: {g:?} vs {w:?}",
                            b.to_bits()
                        );
                    }
                }
                // b - a with a scalar first operand.
                sem.apply(&mut got, Operand::Scalar(b), Operand::Slice(&all[..]));
                for (i, g) in got.iter().enumerate() {
                    let w = sem.scalar(b, all[i]);
                    assert!(same_f16(*g, w), "{sem:?}: a={:#06x} b={i:#06x}: {g:?} vs {w:?}", b.to_bits());
                }
            }
            // Tails: every length up to 37, at every alignment of the slices.
            for len in 0..38 {
                for off in 0..3 {
                    let (a, b) = (&all[1000 + off..1000 + off + len], &all[40000..40000 + len]);
                    let mut got = vec![f16::ZERO; len];
                    sem.apply(&mut got, Operand::Slice(a), Operand::Slice(b));
                    for i in 0..len {
                        assert!(same_f16(got[i], sem.scalar(a[i], b[i])), "{sem:?} len {len} off {off} at {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn integers_wrap() {
        assert_eq!(SUB.scalar(-128i8, 1), 127);
        assert_eq!(SUB.scalar(0u8, 1), 255);
        assert_eq!(SUB.scalar(i64::MIN, 1), i64::MAX);
        assert_eq!(SUB.scalar(0u64, u64::MAX), 1);
        // (100 - -100) = 200 wraps to -56; (-56)^2 = 3136 wraps to 64.
        assert_eq!(SQ.scalar(100i8, -100), 64);
        assert_eq!(SQ.scalar(0u32, 1), 1);
        assert_eq!(SQ.scalar(0u32, 65536), 0);
        assert_eq!(SQ.scalar(i32::MIN, 0), 0);
        assert_eq!(SQ.scalar(3u16, 300), (297u16.wrapping_neg()).wrapping_mul(297u16.wrapping_neg()));
    }

    #[test]
    fn floats_follow_ieee_with_subnormals() {
        let tiny = f32::from_bits(3); // subnormal
        assert_eq!(SUB.scalar(tiny, f32::from_bits(1)).to_bits(), 2);
        assert!(SUB.scalar(f32::INFINITY, f32::INFINITY).is_nan());
        assert_eq!(SUB.scalar(0.0f32, 0.0).to_bits(), 0);
        assert_eq!(SUB.scalar(-0.0f32, 0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(SQ.scalar(f32::MAX, -f32::MAX), f32::INFINITY);
        assert_eq!(SQ.scalar(3.0f64, 1.0), 4.0);
        // 1e-23^2 underflows to a subnormal in f64? No: f64 keeps it normal; f32 gives 0.
        assert_eq!(SQ.scalar(1e-23f32, 0.0), 0.0);
        let d = 1.0e-20f32;
        assert_eq!(SQ.scalar(d, 0.0), d * d);
        // No FMA: (1 + 2^-12)^2 rounds differently from a fused computation.
        let x = 1.0f32 + f32::EPSILON * 2048.0;
        assert_eq!(SQ.scalar(x, 0.0).to_bits(), (x * x).to_bits());
    }

    #[test]
    fn float16_rounds_once_or_twice() {
        let h = f16::from_f32;
        // 2049 is not representable in f16 (spacing 2 above 2048).
        let a = h(2048.0);
        let b = h(-1.0);
        assert_eq!(SUB.scalar(a, b), h(2049.0)); // ties to even: 2048
        assert_eq!(SUB.scalar(a, b).to_f32(), 2048.0);
        // sqdiff: d = 0.0999755859375 + ...; choose values where one vs two roundings differ.
        let (a, b) = (h(1.0), h(-0.0004883)); // b rounds to -2^-11 + ...
        let d = a.to_f32() - b.to_f32();
        assert_eq!(SQ.scalar(a, b), f16::from_f32(d * d));
        let hd = f16::from_f32(d).to_f32();
        assert_eq!(SQH.scalar(a, b), f16::from_f32(hd * hd));
        // overflow to inf in f16 only at the end
        assert_eq!(SQ.scalar(h(300.0), h(0.0)), f16::INFINITY);
        // subnormal float16 results are kept
        let sub = f16::from_bits(1);
        assert_eq!(SUB.scalar(f16::from_bits(3), f16::from_bits(2)), sub);
    }

    #[test]
    fn half_precision_differs_from_default_somewhere() {
        let mut differ = 0;
        for bits in (0u16..0x7c00).step_by(7) {
            let a = f16::from_bits(bits);
            let b = f16::from_bits(0x3c01);
            if SQ.scalar(a, b) != SQH.scalar(a, b) {
                differ += 1;
            }
        }
        assert!(differ > 0, "the two float16 modes should not be identical");
    }

    /// The vectorised slice kernels give exactly the scalar reference, for every operand shape.
    fn check_slices<T: Arith>(vals: &[T]) {
        let n = vals.len();
        let rev: Vec<T> = vals.iter().rev().copied().collect();
        for sem in [SUB, SQ, SQH] {
            let mut out = vec![vals[0]; n];
            sem.apply(&mut out, Operand::Slice(vals), Operand::Slice(&rev));
            for i in 0..n {
                assert_eq!(out[i].to_bits_eq(), sem.scalar(vals[i], rev[i]).to_bits_eq(), "{sem:?} at {i}");
            }
            sem.apply(&mut out, Operand::Slice(vals), Operand::Scalar(rev[3]));
            for i in 0..n {
                assert_eq!(out[i].to_bits_eq(), sem.scalar(vals[i], rev[3]).to_bits_eq());
            }
            sem.apply(&mut out, Operand::Scalar(vals[5]), Operand::Slice(&rev));
            for i in 0..n {
                assert_eq!(out[i].to_bits_eq(), sem.scalar(vals[5], rev[i]).to_bits_eq());
            }
        }
    }

    trait BitsEq {
        fn to_bits_eq(self) -> Vec<u8>;
    }
    impl<T: Element> BitsEq for T {
        fn to_bits_eq(self) -> Vec<u8> {
            bytemuck::bytes_of(&self).to_vec()
        }
    }

    #[test]
    fn slice_kernels_match_scalar_reference() {
        let f16s: Vec<f16> = (0..3000u32).map(|i| f16::from_bits((i * 21 + 7) as u16 & 0x7bff)).collect();
        check_slices(&f16s);
        let f32s: Vec<f32> =
            (0..3000u32).map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761) & 0x7f7f_ffff)).collect();
        check_slices(&f32s);
        let i8s: Vec<i8> = (0..300i32).map(|i| (i * 37) as i8).collect();
        check_slices(&i8s);
        let u64s: Vec<u64> = (0..300u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        check_slices(&u64s);
    }
}
