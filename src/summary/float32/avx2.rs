//! The float32 summary's passes with AVX2 intrinsics: the census (order keys in vectors, the
//! histogram's increments in scalar code beside them) and the two windows' sums, alone or in
//! one pass. Every `unsafe` here rests on one fact, that an [`Avx2`] exists only where the CPU
//! has AVX2.

use super::{histogram, order_key, Counts, Passes, ABS, COPIES};
use std::arch::x86_64::*;

/// Proof that the CPU has AVX2.
pub(super) struct Avx2(());

impl Avx2 {
    /// # Safety
    /// The CPU must have AVX2.
    pub(super) unsafe fn new() -> Avx2 {
        Avx2(())
    }
}

impl Passes for Avx2 {
    fn census(&self, block: &[f32], counts: &mut Counts) -> (i32, i32) {
        // SAFETY: `Avx2` exists only where the CPU has AVX2.
        unsafe { census(block, counts) }
    }

    fn sums(&self, block: &[f32], b: [u32; 3]) -> (f64, f64) {
        // SAFETY: as above.
        unsafe { sums(block, b) }
    }

    fn census_and_sums(&self, block: &[f32], b: [u32; 3], counts: &mut Counts) -> ((i32, i32), (f64, f64)) {
        // SAFETY: as above.
        unsafe { census_and_sums(block, b, counts) }
    }
}

/// The lanes of a vector of i32.
#[target_feature(enable = "avx2")]
unsafe fn lanes(v: __m256i) -> [i32; 8] {
    let mut out = [0i32; 8];
    _mm256_storeu_si256(out.as_mut_ptr().cast(), v);
    out
}

/// [`Passes::census`].
#[target_feature(enable = "avx2")]
unsafe fn census(block: &[f32], counts: &mut Counts) -> (i32, i32) {
    pass::<true, false>(block, [0; 3], counts).0
}

/// [`Passes::sums`].
#[target_feature(enable = "avx2")]
unsafe fn sums(block: &[f32], b: [u32; 3]) -> (f64, f64) {
    pass::<false, true>(block, b, &mut [[0; 256]; COPIES]).1
}

/// [`Passes::census_and_sums`].
#[target_feature(enable = "avx2")]
unsafe fn census_and_sums(block: &[f32], b: [u32; 3], counts: &mut Counts) -> ((i32, i32), (f64, f64)) {
    pass::<true, true>(block, b, counts)
}

/// One pass over the block: with `CENSUS`, the keys in vectors and the histogram's
/// increments in scalar code beside them; with `SUMS`, the two windows' sums in vectors.
/// Magnitudes are below 2^31, so the signed comparisons with `b - 1` (at least -1) are
/// `>= b`.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn pass<const CENSUS: bool, const SUMS: bool>(
    block: &[f32],
    b: [u32; 3],
    counts: &mut Counts,
) -> ((i32, i32), (f64, f64)) {
    let magnitude = _mm256_set1_epi32(ABS as i32);
    let mut min_key = _mm256_set1_epi32(i32::MAX);
    let mut max_key = _mm256_set1_epi32(i32::MIN);
    let b0 = _mm256_set1_epi32(b[0] as i32);
    let above1 = _mm256_set1_epi32(b[1] as i32 - 1);
    let above2 = _mm256_set1_epi32(b[2] as i32 - 1);
    let mut high = [_mm256_setzero_pd(); 4];
    let mut low = [_mm256_setzero_pd(); 4];
    let mut groups = block.chunks_exact(16);
    for group in &mut groups {
        for (half, eight) in group.chunks_exact(COPIES).enumerate() {
            let x = _mm256_loadu_si256(eight.as_ptr().cast());
            let a = _mm256_and_si256(x, magnitude);
            if CENSUS {
                let key = _mm256_xor_si256(a, _mm256_srai_epi32(x, 31));
                min_key = _mm256_min_epi32(min_key, key);
                max_key = _mm256_max_epi32(max_key, key);
                for (c, x) in counts.iter_mut().zip(eight) {
                    c[(x.to_bits() >> 23 & 0xff) as usize] += 1;
                }
            }
            if SUMS {
                let from1 = _mm256_cmpgt_epi32(a, above1);
                let in1 = _mm256_and_si256(from1, _mm256_cmpgt_epi32(b0, a));
                let in2 = _mm256_andnot_si256(from1, _mm256_cmpgt_epi32(a, above2));
                let x1 = _mm256_castsi256_ps(_mm256_and_si256(x, in1));
                let x2 = _mm256_castsi256_ps(_mm256_and_si256(x, in2));
                let (h, l) = (&mut high[2 * half..], &mut low[2 * half..]);
                h[0] = _mm256_add_pd(h[0], _mm256_cvtps_pd(_mm256_castps256_ps128(x1)));
                h[1] = _mm256_add_pd(h[1], _mm256_cvtps_pd(_mm256_extractf128_ps(x1, 1)));
                l[0] = _mm256_add_pd(l[0], _mm256_cvtps_pd(_mm256_castps256_ps128(x2)));
                l[1] = _mm256_add_pd(l[1], _mm256_cvtps_pd(_mm256_extractf128_ps(x2, 1)));
            }
        }
    }
    let rest = groups.remainder();
    let keys = rest.iter().map(|x| order_key(x.to_bits()));
    let keys = (
        keys.clone().chain(lanes(min_key)).min().unwrap_or(i32::MAX),
        keys.chain(lanes(max_key)).max().unwrap_or(i32::MIN),
    );
    if CENSUS {
        histogram(rest, counts);
    }
    let total = |v: &[__m256d; 4]| {
        let mut lanes = [0f64; 4];
        let sum = _mm256_add_pd(_mm256_add_pd(v[0], v[1]), _mm256_add_pd(v[2], v[3]));
        _mm256_storeu_pd(lanes.as_mut_ptr(), sum);
        lanes.iter().sum::<f64>()
    };
    let (mut h, mut l) = (total(&high), total(&low));
    for &x in rest {
        let a = x.to_bits() & ABS;
        h += if a < b[0] && a >= b[1] { f64::from(x) } else { 0.0 };
        l += if a < b[1] && a >= b[2] { f64::from(x) } else { 0.0 };
    }
    (keys, (h, l))
}
