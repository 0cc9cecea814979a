//! The 16-bit floats' arithmetic: float32 inside, rounded to float16 (or bfloat16) at the end,
//! to nearest even or, for float16 under the toward-zero rules, toward zero, overflowing to
//! infinity ([`f32_to_f16_tz_inf`]) or saturating at 65504 ([`f32_to_f16_tz_sat`]). float16's slice kernel is a fused F16C pass on x86-64 CPUs that have
//! it, and block conversions with `half` elsewhere; bfloat16's is the portable loop (its
//! conversions are bit shifts and an integer rounding, which the compiler vectorises).

use super::arith::{map2, Arith, ElementSteps};
use super::{Formula, Operand};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use std::marker::PhantomData;

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
    #[inline(always)]
    fn round_tz_inf(w: f32) -> f32 {
        f16::from_bits(f32_to_f16_tz_inf(w)).to_f32()
    }
    #[inline(always)]
    fn round_tz_sat(w: f32) -> f32 {
        f16::from_bits(f32_to_f16_tz_sat(w)).to_f32()
    }

    /// On x86-64 CPUs of the AVX2 tier or above (`crate::arch`, which has F16C), one fused pass:
    /// 8 or 16 elements at a time are widened to float32, computed and rounded back to nearest
    /// even (`f16_x86`). Elsewhere, `f16_blocks`.
    fn apply_slices(f: Formula, out: &mut [Self], a: Operand<'_, Self>, b: Operand<'_, Self>) {
        apply_tier(crate::arch::current(), f, out, a, b);
    }
}

/// The float16 slice kernel of `tier`: the F16C pass from the AVX2 tier up, `f16_blocks` below.
pub(super) fn apply_tier(
    tier: crate::arch::Supported,
    f: Formula,
    out: &mut [f16],
    a: Operand<'_, f16>,
    b: Operand<'_, f16>,
) {
    #[cfg(target_arch = "x86_64")]
    use crate::arch::Tier;
    match tier.tier() {
        #[cfg(target_arch = "x86_64")]
        Tier::Avx2 | Tier::Avx512 => {
            // SAFETY: `tier` is one the CPU has (`Supported`), and both tiers have AVX and F16C.
            unsafe { f16_x86::apply(f, out, a, b) }
        }
        _ => f16_blocks(f, out, a, b),
    }
}

/// float32 -> float16 bits as DirectML 1.13 and later store float16 (`--float16
/// toward-zero-inf`): round toward zero, subnormal results kept (truncated into the subnormal
/// range), any value beyond 65504 (the largest finite float16) in magnitude to infinity of its
/// sign, where IEEE's round toward zero would give 65504; infinities stay infinities. A NaN becomes the NaN the nearest conversion
/// (`f16::from_f32`) makes of it: its sign, the quiet bit, and the top 10 payload bits.
#[inline(always)]
pub(crate) fn f32_to_f16_tz_inf(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let ax = bits & 0x7fff_ffff;
    if ax > 0x7f80_0000 {
        return sign | 0x7e00 | ((ax >> 13) & 0x3ff) as u16;
    }
    // Beyond 65504 (0x477fe000), infinity included.
    if ax > 0x477f_e000 {
        return sign | 0x7c00;
    }
    // Normal float16 results (from 2^-14): rebias the exponent, drop 13 significand bits.
    if ax >= 0x3880_0000 {
        return sign | ((ax - 0x3800_0000) >> 13) as u16;
    }
    // Subnormal results: whole units of 2^-24, from biased float32 exponent 103 (2^-24) up.
    let e = ax >> 23;
    if e < 103 {
        return sign;
    }
    let m = (ax & 0x7f_ffff) | 0x80_0000;
    sign | (m >> (126 - e)) as u16
}

/// float32 -> float16 bits by Direct3D's written conversion rule, as DirectML 1.8 to 1.12 store
/// float16 (`--float16 toward-zero-saturate`): IEEE's round toward zero, so a finite value
/// beyond 65504 in magnitude saturates at ±65504 ("the maximum representable value, not
/// including signed infinity"), infinities stay infinities, and otherwise as
/// [`f32_to_f16_tz_inf`].
#[inline(always)]
pub(crate) fn f32_to_f16_tz_sat(x: f32) -> u16 {
    let ax = x.to_bits() & 0x7fff_ffff;
    if ax > 0x477f_e000 && ax < 0x7f80_0000 {
        return ((x.to_bits() >> 16) & 0x8000) as u16 | 0x7bff;
    }
    f32_to_f16_tz_inf(x)
}

/// bfloat16 arithmetic is float16's with bfloat16's rounding: carried out in float32 (every
/// bfloat16 is a float32, so widening is exact) and rounded to nearest even once at the end (and,
/// with [`Formula::SqDiffRounded`], once more after the difference). NaN stays NaN. The
/// toward-zero float16 rules do not apply (`round_tz_inf` and `round_tz_sat` are the identity):
/// bfloat16 has no DirectML type.
impl Arith for bf16 {
    type Wide = f32;
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn narrow(w: f32) -> bf16 {
        bf16::from_f32(w)
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
        bf16::from_f32(w).to_f32()
    }
}

/// The portable float16 kernel: converts blocks to float32 with `half`'s slice conversions,
/// computes with float16's own steps ([`Arith for f16`](Arith)) and converts back.
pub(super) fn f16_blocks(f: Formula, out: &mut [f16], a: Operand<'_, f16>, b: Operand<'_, f16>) {
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
        crate::with_formula!(f, F => map2(res, fa, fb, |x, y| F.eval(&mut steps(), x, y)));
        out[start..start + n].convert_from_f32_slice(res);
        start += n;
    }
}

/// float16 kernels on x86-64 with F16C: one pass that loads 8 float16 values per operand, widens
/// them with `vcvtph2ps`, computes in float32 exactly as [`Arith for f16`](Arith) does (a separate
/// subtract and multiply, never a fused multiply-add; with `--half-precision` the difference is
/// rounded to float16 and widened again; under the toward-zero rules the result is converted
/// toward zero by `vcvtps2ph`, which saturates at 65504, with lanes beyond 65504 set to infinity
/// for `toward-zero-inf`, and widened again) and stores the
/// result rounded to nearest even with `vcvtps2ph`. The conversions are exact IEEE conversions:
/// subnormals are kept (neither MXCSR's flush-to-zero nor denormals-are-zero applies to them),
/// overflow gives infinity to nearest and 65504 toward zero, and a NaN keeps its sign and the top
/// payload bits with the quiet bit set, as `half`'s conversions do; the tests check every float16
/// input bit for bit against the scalar functions.
#[cfg(target_arch = "x86_64")]
pub(super) mod f16_x86 {
    use super::{f16, Formula, Operand};
    use crate::op::Steps;
    use std::arch::x86_64::*;

    /// `vcvtps2ph`'s immediate: round to nearest even, ignoring MXCSR.RC. (Rust's intrinsic takes
    /// 3 bits only, so `_MM_FROUND_NO_EXC` cannot be or-ed in; the conversion raises no fault
    /// either way, as every SIMD exception is masked.)
    const RNE: i32 = _MM_FROUND_TO_NEAREST_INT;
    /// `vcvtps2ph`'s immediate for round toward zero: IEEE's, which gives 65504 for any finite
    /// value beyond it (`toward-zero-saturate`; for `toward-zero-inf`, `Lanes::round_tz_inf` sets
    /// those lanes to infinity).
    const RTZ: i32 = _MM_FROUND_TO_ZERO;

    /// Computes `out[i] = op(a[i], b[i])` for float16 over `min(out.len(), a.len(), b.len())`
    /// elements of the slices (as `map2`'s zips do).
    ///
    /// # Safety
    /// The CPU must have AVX and F16C (the AVX2 tier, `crate::arch`).
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
        #[inline(always)]
        fn round_tz_sat(&mut self, v: __m256) -> __m256 {
            // SAFETY: as `sub`. IEEE's round toward zero: a finite value beyond 65504 gives
            // 65504, an infinity stays infinite, a NaN is converted as to nearest.
            unsafe { _mm256_cvtph_ps(_mm256_cvtps_ph::<RTZ>(v)) }
        }
        #[inline(always)]
        fn round_tz_inf(&mut self, v: __m256) -> __m256 {
            // SAFETY: as `sub`.
            unsafe {
                let truncated = _mm256_cvtph_ps(_mm256_cvtps_ph::<RTZ>(v));
                // |v| > 65504 is false for NaN (an ordered comparison): NaN lanes keep the
                // conversion's NaN, which is the nearest conversion's.
                let magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0), v);
                let beyond = _mm256_cmp_ps::<_CMP_GT_OQ>(magnitude, _mm256_set1_ps(65504.0));
                let infinity = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0)), _mm256_set1_ps(f32::INFINITY));
                _mm256_blendv_ps(truncated, infinity, beyond)
            }
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
