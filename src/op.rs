//! The operators and their arithmetic: the one place that defines what `sub` and `sqdiff`
//! compute for each dtype (the arithmetic table in `docs/cli.md`).
//!
//! An operator's meaning is written once, as a [`Formula`] over three primitive [`Steps`]
//! (subtract, multiply, round an intermediate to the element type). Each way of computing
//! implements the steps, not the operators: the element types' Rust arithmetic ([`Arith`]), the
//! float16 kernels' float32 lanes, and the GPU kernels' WGSL text
//! (`backend::wgpu::shader`). Adding an operator is one [`Op`] variant, its [`Formula`], its
//! support rows and one CLI line; `docs/adding-an-operator.md` walks through it.

use crate::dtype::Element;
use half::f16;
use half::slice::HalfFloatSliceExt;
use std::marker::PhantomData;

/// An element-wise operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `a - b` (`DML_OPERATOR_ELEMENT_WISE_SUBTRACT`).
    Sub,
    /// `(a - b) * (a - b)` (`DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE`).
    SqDiff,
}

impl Op {
    /// Every operator.
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

    /// What the operator computes; `round_difference` is `--half-precision`.
    pub const fn formula(self, round_difference: bool) -> Formula {
        match (self, round_difference) {
            (Op::Sub, _) => Formula::Sub,
            (Op::SqDiff, false) => Formula::SqDiff,
            (Op::SqDiff, true) => Formula::SqDiffRounded,
        }
    }
}

/// The primitive steps a [`Formula`] is written in, over values of type `V`: the element type's
/// arithmetic type (float32 for float16), 8 float32 lanes, or a WGSL expression. Every step rounds
/// as IEEE-754 does for floats (to nearest even, subnormals kept) and wraps for integers.
pub trait Steps {
    /// A value the steps work on.
    type V: Clone;
    /// `a - b`.
    fn sub(&mut self, a: Self::V, b: Self::V) -> Self::V;
    /// `a * b`.
    fn mul(&mut self, a: Self::V, b: Self::V) -> Self::V;
    /// `v` rounded to the element type and widened back: float16's intermediate rounding, the
    /// identity for every type computed in its own width.
    fn round(&mut self, v: Self::V) -> Self::V;
}

/// One operator's formula: the single definition every kernel, CPU or GPU, is derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Formula {
    /// `a - b`.
    Sub,
    /// `d = a - b; d * d`: two roundings, never a fused multiply-add.
    SqDiff,
    /// `d = round(a - b); d * d`: float16 `sqdiff --half-precision`.
    SqDiffRounded,
}

impl Formula {
    /// Every formula.
    pub const ALL: [Formula; 3] = [Formula::Sub, Formula::SqDiff, Formula::SqDiffRounded];

    /// Applies the formula to `a` and `b` with `steps`. With a constant `self` (see
    /// [`with_formula!`]) and inlined steps, this compiles to the bare arithmetic.
    #[inline(always)]
    pub fn eval<S: Steps>(self, steps: &mut S, a: S::V, b: S::V) -> S::V {
        match self {
            Formula::Sub => steps.sub(a, b),
            Formula::SqDiff => {
                let d = steps.sub(a, b);
                steps.mul(d.clone(), d)
            }
            Formula::SqDiffRounded => {
                let d = steps.sub(a, b);
                let d = steps.round(d);
                steps.mul(d.clone(), d)
            }
        }
    }

    /// The formula with this [`id`](Self::id), for const-generic kernels; evaluated in a
    /// `const` block there, so an id outside [`Formula::ALL`] does not compile.
    pub const fn from_id(id: u8) -> Formula {
        Formula::ALL[id as usize]
    }

    /// A number for const generics (`Formula::from_id(f.id()) == f`).
    pub const fn id(self) -> u8 {
        self as u8
    }
}

// `ALL` lists every formula in id order, which `from_id` relies on.
const _: () = {
    let mut i = 0;
    while i < Formula::ALL.len() {
        assert!(Formula::ALL[i] as usize == i, "Formula::ALL must list the formulas in declaration order");
        i += 1;
    }
};

/// Expands `$body` once per formula with `$F` a `const` of that formula, so that each copy of a
/// hot loop is compiled (and vectorised) for one formula, with no branch per element. The one
/// place that lists the formulas for dispatch: a new variant is a compile error here.
#[macro_export]
macro_rules! with_formula {
    ($formula:expr, $F:ident => $body:expr) => {
        match $formula {
            $crate::op::Formula::Sub => {
                const $F: $crate::op::Formula = $crate::op::Formula::Sub;
                $body
            }
            $crate::op::Formula::SqDiff => {
                const $F: $crate::op::Formula = $crate::op::Formula::SqDiff;
                $body
            }
            $crate::op::Formula::SqDiffRounded => {
                const $F: $crate::op::Formula = $crate::op::Formula::SqDiffRounded;
                $body
            }
        }
    };
}

/// What a kernel computes: the operator and the float16 intermediate-rounding mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Semantics {
    pub op: Op,
    /// float16 only: round `a - b` to float16 before squaring (`--half-precision`).
    pub half_precision: bool,
}

impl Semantics {
    /// The formula a kernel applies.
    pub fn formula(self) -> Formula {
        self.op.formula(self.half_precision)
    }

    /// Applies the operator to one pair of elements: the scalar reference every kernel matches.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn scalar<T: Arith>(self, a: T, b: T) -> T {
        element(self.formula(), a, b)
    }

    /// Computes `out[i] = op(a[i], b[i])` where each operand is a slice as long as `out` or a
    /// single broadcast value.
    pub fn apply<T: Arith>(self, out: &mut [T], a: Operand<'_, T>, b: Operand<'_, T>) {
        debug_assert!(a.fits(out.len()) && b.fits(out.len()));
        T::apply_slices(self.formula(), out, a, b);
    }
}

/// `f` on one pair of elements: widened, computed with `T`'s steps, narrowed.
#[inline(always)]
fn element<T: Arith>(f: Formula, a: T, b: T) -> T {
    T::narrow(f.eval(&mut ElementSteps::<T>(PhantomData), a.widen(), b.widen()))
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

/// The arithmetic of one element type: the primitive [`Steps`] in the type the arithmetic is
/// carried out in ([`Arith::Wide`]), and the slice kernel.
pub trait Arith: Element + Copy {
    /// The arithmetic type: float32 for float16 (rounded to float16 once, at the end), the
    /// element type itself otherwise.
    type Wide: Copy;
    /// An element in the arithmetic type (exact).
    fn widen(self) -> Self::Wide;
    /// A result rounded to the element type.
    fn narrow(w: Self::Wide) -> Self;
    /// `a - b`: IEEE for floats, wrapping for integers.
    fn sub(a: Self::Wide, b: Self::Wide) -> Self::Wide;
    /// `a * b`: IEEE for floats (Rust never contracts it into a fused multiply-add), wrapping
    /// for integers.
    fn mul(a: Self::Wide, b: Self::Wide) -> Self::Wide;
    /// An intermediate rounded to the element type; the identity unless `Wide` is wider.
    #[inline(always)]
    fn round(w: Self::Wide) -> Self::Wide {
        w
    }
    /// The slice kernel; the default is a loop per formula that the compiler vectorises.
    fn apply_slices(f: Formula, out: &mut [Self], a: Operand<'_, Self>, b: Operand<'_, Self>) {
        with_formula!(f, F => map2(out, a, b, |x, y| element(F, x, y)))
    }
}

/// [`Steps`] on `T`'s arithmetic type, as [`Arith`] defines them.
struct ElementSteps<T>(PhantomData<T>);

impl<T: Arith> Steps for ElementSteps<T> {
    type V = T::Wide;
    #[inline(always)]
    fn sub(&mut self, a: T::Wide, b: T::Wide) -> T::Wide {
        T::sub(a, b)
    }
    #[inline(always)]
    fn mul(&mut self, a: T::Wide, b: T::Wide) -> T::Wide {
        T::mul(a, b)
    }
    #[inline(always)]
    fn round(&mut self, v: T::Wide) -> T::Wide {
        T::round(v)
    }
}

/// `out[i] = f(a[i], b[i])`, monomorphised per operand shape so each loop vectorises.
#[inline(always)]
fn map2<T: Copy, U: Copy, F: Fn(T, T) -> U>(out: &mut [U], a: Operand<'_, T>, b: Operand<'_, T>, f: F) {
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
            type Wide = $t;
            #[inline(always)]
            fn widen(self) -> $t {
                self
            }
            #[inline(always)]
            fn narrow(w: $t) -> $t {
                w
            }
            #[inline(always)]
            fn sub(a: $t, b: $t) -> $t {
                a.wrapping_sub(b)
            }
            #[inline(always)]
            fn mul(a: $t, b: $t) -> $t {
                a.wrapping_mul(b)
            }
        }
    )*};
}
impl_int_arith!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! impl_float_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            type Wide = $t;
            #[inline(always)]
            fn widen(self) -> $t {
                self
            }
            #[inline(always)]
            fn narrow(w: $t) -> $t {
                w
            }
            #[inline(always)]
            fn sub(a: $t, b: $t) -> $t {
                a - b
            }
            #[inline(always)]
            fn mul(a: $t, b: $t) -> $t {
                a * b
            }
        }
    )*};
}
impl_float_arith!(f32, f64);

/// float16 arithmetic is carried out in float32 and rounded to float16 once at the end (and, with
/// [`Formula::SqDiffRounded`], once more after the difference).
impl Arith for f16 {
    type Wide = f32;
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn narrow(w: f32) -> f16 {
        f16::from_f32(w)
    }
    #[inline(always)]
    fn sub(a: f32, b: f32) -> f32 {
        a - b
    }
    #[inline(always)]
    fn mul(a: f32, b: f32) -> f32 {
        a * b
    }
    #[inline(always)]
    fn round(w: f32) -> f32 {
        f16::from_f32(w).to_f32()
    }

    /// On x86-64 with F16C and AVX (detected once, [`f16_x86::available`]), one fused pass: 8 or
    /// 16 elements at a time are widened to float32, computed and rounded back to nearest even
    /// ([`f16_x86`]). Elsewhere, [`f16_blocks`].
    fn apply_slices(f: Formula, out: &mut [Self], a: Operand<'_, Self>, b: Operand<'_, Self>) {
        #[cfg(target_arch = "x86_64")]
        if f16_x86::available() {
            // SAFETY: `available` has checked at run time that the CPU has AVX and F16C.
            unsafe { f16_x86::apply(f, out, a, b) };
            return;
        }
        f16_blocks(f, out, a, b);
    }
}

/// The portable float16 kernel: converts blocks to float32 with `half`'s slice conversions,
/// computes with float16's own steps ([`Arith for f16`](Arith)) and converts back.
fn f16_blocks(f: Formula, out: &mut [f16], a: Operand<'_, f16>, b: Operand<'_, f16>) {
    const BLOCK: usize = 1024;
    let mut fa = [0f32; BLOCK];
    let mut fb = [0f32; BLOCK];
    let mut start = 0;
    while start < out.len() {
        let n = BLOCK.min(out.len() - start);
        let fa = widen(a, start, &mut fa[..n]);
        let fb = widen(b, start, &mut fb[..n]);
        let res = &mut [0f32; BLOCK][..n];
        let steps = || ElementSteps::<f16>(PhantomData);
        with_formula!(f, F => map2(res, fa, fb, |x, y| F.eval(&mut steps(), x, y)));
        out[start..start + n].convert_from_f32_slice(res);
        start += n;
    }
}

/// float16 kernels on x86-64 with F16C: one pass that loads 8 float16 values per operand, widens
/// them with `vcvtph2ps`, computes in float32 exactly as [`Arith for f16`](Arith) does (a separate
/// subtract and multiply, never a fused multiply-add; with `--half-precision` the difference is
/// rounded to float16 and widened again) and stores the result rounded to nearest even with
/// `vcvtps2ph`. Both conversions are exact IEEE conversions: subnormals are kept (neither MXCSR's
/// flush-to-zero nor denormals-are-zero applies to them), overflow gives infinity, and a NaN
/// keeps its sign and the top payload bits with the quiet bit set, as `half`'s conversions do; the
/// tests check every float16 input bit for bit against the scalar functions.
#[cfg(target_arch = "x86_64")]
mod f16_x86 {
    use super::{f16, Formula, Operand, Steps};
    use std::arch::x86_64::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    /// `vcvtps2ph`'s immediate: round to nearest even, ignoring MXCSR.RC. (Rust's intrinsic takes
    /// 3 bits only, so `_MM_FROUND_NO_EXC` cannot be or-ed in; the conversion raises no fault
    /// either way, as every SIMD exception is masked.)
    const RNE: i32 = _MM_FROUND_TO_NEAREST_INT;

    /// Whether this CPU has AVX and F16C: detected on the first call, then one relaxed load.
    pub fn available() -> bool {
        // 0: not yet detected, 1: no, 2: yes. A race only repeats the detection.
        static HAS: AtomicU8 = AtomicU8::new(0);
        match HAS.load(Ordering::Relaxed) {
            0 => {
                let has = is_x86_feature_detected!("avx") && is_x86_feature_detected!("f16c");
                HAS.store(if has { 2 } else { 1 }, Ordering::Relaxed);
                has
            }
            v => v == 2,
        }
    }

    /// Computes `out[i] = op(a[i], b[i])` for float16 over `min(out.len(), a.len(), b.len())`
    /// elements of the slices (as `map2`'s zips do).
    ///
    /// # Safety
    /// The CPU must have AVX and F16C ([`available`]).
    #[target_feature(enable = "avx,f16c")]
    pub unsafe fn apply(f: Formula, out: &mut [f16], a: Operand<'_, f16>, b: Operand<'_, f16>) {
        crate::with_formula!(f, F => forms::<{ F.id() }>(out, a, b))
    }

    /// One loop per operand form, so the loads of a broadcast operand leave the loop.
    ///
    /// # Safety
    /// As [`apply`].
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    unsafe fn forms<const F: u8>(out: &mut [f16], a: Operand<'_, f16>, b: Operand<'_, f16>) {
        let none = std::ptr::null();
        match (a, b) {
            (Operand::Slice(a), Operand::Slice(b)) => {
                let n = out.len().min(a.len()).min(b.len());
                let zero = _mm256_setzero_ps();
                // SAFETY: `a` and `b` hold at least `n` elements each.
                run::<F, false, false>(&mut out[..n], a.as_ptr(), b.as_ptr(), zero, zero);
            }
            (Operand::Slice(a), Operand::Scalar(y)) => {
                let n = out.len().min(a.len());
                // SAFETY: `a` holds at least `n` elements; `b` is not read.
                run::<F, false, true>(&mut out[..n], a.as_ptr(), none, _mm256_setzero_ps(), splat(y));
            }
            (Operand::Scalar(x), Operand::Slice(b)) => {
                let n = out.len().min(b.len());
                // SAFETY: `b` holds at least `n` elements; `a` is not read.
                run::<F, true, false>(&mut out[..n], none, b.as_ptr(), splat(x), _mm256_setzero_ps());
            }
            (Operand::Scalar(x), Operand::Scalar(y)) => {
                let r = _mm256_cvtps_ph::<RNE>(op::<F>(splat(x), splat(y)));
                out.fill(f16::from_bits(_mm_extract_epi16::<0>(r) as u16));
            }
        }
    }

    /// `x` widened into all 8 lanes.
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    unsafe fn splat(x: f16) -> __m256 {
        _mm256_cvtph_ps(_mm_set1_epi16(x.to_bits() as i16))
    }

    /// 8 float32 lanes: float16's steps ([`Arith for f16`](super::Arith)) with AVX and F16C.
    struct Lanes;

    impl Steps for Lanes {
        type V = __m256;
        #[inline(always)]
        fn sub(&mut self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: only reached from `op`, which runs with AVX and F16C enabled.
            unsafe { _mm256_sub_ps(a, b) }
        }
        #[inline(always)]
        fn mul(&mut self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: as `sub`.
            unsafe { _mm256_mul_ps(a, b) }
        }
        #[inline(always)]
        fn round(&mut self, v: __m256) -> __m256 {
            // SAFETY: as `sub`.
            unsafe { _mm256_cvtph_ps(_mm256_cvtps_ph::<RNE>(v)) }
        }
    }

    /// The formula with id `F` on 8 float32 lanes, rounding as the scalar steps do.
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    unsafe fn op<const F: u8>(x: __m256, y: __m256) -> __m256 {
        const { Formula::from_id(F) }.eval(&mut Lanes, x, y)
    }

    /// 8 results: elements `i..i + 8` of `a` and `b` (or the splats, for a broadcast operand)
    /// widened, computed, and stored rounded to float16 at `o`.
    ///
    /// # Safety
    /// `a.add(i)` (unless `SA`), `b.add(i)` (unless `SB`) must be readable for 8 elements and `o`
    /// writable for 8 elements.
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    unsafe fn step8<const F: u8, const SA: bool, const SB: bool>(
        o: *mut f16,
        a: *const f16,
        b: *const f16,
        i: usize,
        sa: __m256,
        sb: __m256,
    ) {
        let x = if SA { sa } else { _mm256_cvtph_ps(_mm_loadu_si128(a.add(i).cast())) };
        let y = if SB { sb } else { _mm256_cvtph_ps(_mm_loadu_si128(b.add(i).cast())) };
        _mm_storeu_si128(o.cast(), _mm256_cvtps_ph::<RNE>(op::<F>(x, y)));
    }

    /// The loop over `out`: 16 elements per iteration, then 8, then the last 0-7 through
    /// 8-element buffers with the same instructions.
    ///
    /// # Safety
    /// Unless `SA` (`SB`), `a` (`b`) must be readable for `out.len()` elements; a broadcast
    /// operand's pointer is never read, its value is `sa` (`sb`).
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    unsafe fn run<const F: u8, const SA: bool, const SB: bool>(
        out: &mut [f16],
        a: *const f16,
        b: *const f16,
        sa: __m256,
        sb: __m256,
    ) {
        let n = out.len();
        let o = out.as_mut_ptr();
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: i + 16 <= n, within every slice read or written.
            step8::<F, SA, SB>(o.add(i), a, b, i, sa, sb);
            step8::<F, SA, SB>(o.add(i + 8), a, b, i + 8, sa, sb);
            i += 16;
        }
        if i + 8 <= n {
            // SAFETY: i + 8 <= n.
            step8::<F, SA, SB>(o.add(i), a, b, i, sa, sb);
            i += 8;
        }
        let m = n - i;
        if m > 0 {
            let (mut ta, mut tb, mut to) = ([f16::ZERO; 8], [f16::ZERO; 8], [f16::ZERO; 8]);
            // SAFETY: m < 8 elements from i < n, within the slices read; the buffers hold 8.
            if !SA {
                std::ptr::copy_nonoverlapping(a.add(i), ta.as_mut_ptr(), m);
            }
            if !SB {
                std::ptr::copy_nonoverlapping(b.add(i), tb.as_mut_ptr(), m);
            }
            step8::<F, SA, SB>(to.as_mut_ptr(), ta.as_ptr(), tb.as_ptr(), 0, sa, sb);
            out[i..].copy_from_slice(&to[..m]);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    const SUB: Semantics = Semantics { op: Op::Sub, half_precision: false };
    const SQ: Semantics = Semantics { op: Op::SqDiff, half_precision: false };
    const SQH: Semantics = Semantics { op: Op::SqDiff, half_precision: true };

    /// The float16 reference computed with `half`'s software conversions only (`*_const`), so
    /// that it does not depend on the CPU features `half` detects for `to_f32`/`from_f32`.
    fn soft_f16(sem: Semantics, a: f16, b: f16) -> f16 {
        let (x, y) = (a.to_f32_const(), b.to_f32_const());
        let r = match (sem.op, sem.half_precision) {
            (Op::Sub, _) => x - y,
            (Op::SqDiff, false) => (x - y) * (x - y),
            (Op::SqDiff, true) => {
                let h = f16::from_f32_const(x - y).to_f32_const();
                h * h
            }
        };
        f16::from_f32_const(r)
    }

    /// Every float16 value as `a` or `b` against these: signed zeros, ±1, subnormals (smallest,
    /// largest, a middle one), the smallest normals, the largest finite values, infinities, quiet
    /// and signalling NaNs of both signs with several payloads, values whose differences and
    /// squares fall on or next to float16 rounding ties, overflow when squared, and arbitrary ones.
    const INTERESTING_F16: [u16; 44] = [
        0x0000, 0x8000, 0x3c00, 0xbc00, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0200, 0x0400, 0x8400, 0x0401, 0x7bff, 0xfbff,
        0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7d00, 0xfc01, 0x7fff, 0xfdff, 0x3c01, 0x3bff, 0x4000, 0x1000, 0x1400,
        0x6800, 0x6801, 0x5bff, 0x5c00, 0x57ff, 0x5800, 0x2e66, 0xc4d2, 0x3555, 0xb555, 0x7000, 0xf000, 0x2000, 0x1c00,
        0x0010, 0xabcd,
    ];

    fn check_f16(what: &str, got: &[f16], want: impl Fn(usize) -> f16) {
        for (i, g) in got.iter().enumerate() {
            let w = want(i);
            assert_eq!(g.to_bits(), w.to_bits(), "{what} at {i}: got {:#06x}, want {:#06x}", g.to_bits(), w.to_bits());
        }
    }

    /// Runs one float16 kernel: the dispatched one (`Semantics::apply`, the F16C kernel where the
    /// CPU has it) or the portable block kernel.
    type F16Kernel = fn(Semantics, &mut [f16], Operand<'_, f16>, Operand<'_, f16>);
    const F16_KERNELS: [(&str, F16Kernel); 2] =
        [("dispatched", |s, o, a, b| s.apply(o, a, b)), ("blocks", |s, o, a, b| f16_blocks(s.formula(), o, a, b))];

    #[test]
    fn float16_scalar_reference_matches_software_conversions_bit_for_bit() {
        for sem in [SUB, SQ, SQH] {
            for a in 0..=u16::MAX {
                for &b in &INTERESTING_F16 {
                    let (a, b) = (f16::from_bits(a), f16::from_bits(b));
                    for (x, y) in [(a, b), (b, a)] {
                        let (got, want) = (sem.scalar(x, y), soft_f16(sem, x, y));
                        assert_eq!(got.to_bits(), want.to_bits(), "{sem:?} {:#06x} {:#06x}", x.to_bits(), y.to_bits());
                    }
                }
            }
        }
    }

    #[test]
    fn float16_kernels_match_the_scalar_reference_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        eprintln!("F16C kernel available: {}", f16_x86::available());
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        for (name, kernel) in F16_KERNELS {
            for sem in [SUB, SQ, SQH] {
                let mut got = vec![f16::ZERO; all.len()];
                for b in INTERESTING_F16.map(f16::from_bits) {
                    let bv = vec![b; all.len()];
                    let what = format!("{name} {sem:?} b={:#06x}", b.to_bits());
                    kernel(sem, &mut got, Operand::Slice(&all), Operand::Slice(&bv));
                    check_f16(&format!("{what} slice-slice"), &got, |i| sem.scalar(all[i], b));
                    kernel(sem, &mut got, Operand::Slice(&all), Operand::Scalar(b));
                    check_f16(&format!("{what} slice-scalar"), &got, |i| sem.scalar(all[i], b));
                    kernel(sem, &mut got, Operand::Slice(&bv), Operand::Slice(&all));
                    check_f16(&format!("{what} reversed slice-slice"), &got, |i| sem.scalar(b, all[i]));
                    kernel(sem, &mut got, Operand::Scalar(b), Operand::Slice(&all));
                    check_f16(&format!("{what} scalar-slice"), &got, |i| sem.scalar(b, all[i]));
                    for a in INTERESTING_F16.map(f16::from_bits) {
                        let mut one = [f16::ZERO; 19];
                        kernel(sem, &mut one, Operand::Scalar(a), Operand::Scalar(b));
                        check_f16(&format!("{what} scalar-scalar a={:#06x}", a.to_bits()), &one, |_| sem.scalar(a, b));
                    }
                }
            }
        }
    }

    /// Two operands and the expected result at each index.
    type F16Form<'a> = (Operand<'a, f16>, Operand<'a, f16>, &'a dyn Fn(usize) -> f16);

    #[test]
    fn float16_kernels_handle_every_tail_length_and_alignment() {
        // Lengths 0..=37 and one long run, at three alignments, in every operand form; each
        // output is prefilled so that a kernel writing past its end or skipping an element fails.
        let all: Vec<f16> = (0..=u16::MAX).map(|i| f16::from_bits(i.wrapping_mul(40503))).collect();
        let canary = f16::from_bits(0x7c3f);
        for (name, kernel) in F16_KERNELS {
            for sem in [SUB, SQ, SQH] {
                for len in (0..38).chain([1001]) {
                    for off in 0..3 {
                        let a = &all[1000 + off..1000 + off + len];
                        let b = &all[40000 + 2 * off..40000 + 2 * off + len];
                        let (x, y) = (all[7], all[60001]);
                        let forms: [F16Form<'_>; 4] = [
                            (Operand::Slice(a), Operand::Slice(b), &|i| sem.scalar(a[i], b[i])),
                            (Operand::Slice(a), Operand::Scalar(y), &|i| sem.scalar(a[i], y)),
                            (Operand::Scalar(x), Operand::Slice(b), &|i| sem.scalar(x, b[i])),
                            (Operand::Scalar(x), Operand::Scalar(y), &|_| sem.scalar(x, y)),
                        ];
                        for (form, (oa, ob, want)) in forms.into_iter().enumerate() {
                            let mut out = vec![canary; len + 1];
                            kernel(sem, &mut out[..len], oa, ob);
                            check_f16(&format!("{name} {sem:?} len {len} off {off} form {form}"), &out[..len], want);
                            assert_eq!(out[len].to_bits(), canary.to_bits(), "wrote past the end");
                        }
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
