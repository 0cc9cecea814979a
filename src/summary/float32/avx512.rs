//! The float32 summary's AVX-512 pass ([`Passes::counted`]): the census and the guessed
//! windows' sums in one pass that keeps its histogram in vector registers. Every `unsafe` here
//! rests on one fact, that an [`Avx512`] exists only where the CPU has AVX2 and AVX-512F.

use super::avx2::Avx2;
use super::{windows_from, Counted, Counts, Passes, ABS, COUNTED, WINDOW};
use std::arch::x86_64::*;

/// Proof that the CPU has AVX2 and AVX-512F: the AVX2 passes and [`Passes::counted`].
pub(super) struct Avx512(Avx2);

impl Avx512 {
    /// # Safety
    /// The CPU must have AVX2 and AVX-512F.
    pub(super) unsafe fn new() -> Avx512 {
        // SAFETY: the caller checked.
        Avx512(unsafe { Avx2::new() })
    }
}

impl Passes for Avx512 {
    fn census(&self, block: &[f32], counts: &mut Counts) -> (i32, i32) {
        self.0.census(block, counts)
    }

    fn sums(&self, block: &[f32], b: [u32; 3]) -> (f64, f64) {
        self.0.sums(block, b)
    }

    fn census_and_sums(&self, block: &[f32], b: [u32; 3], counts: &mut Counts) -> ((i32, i32), (f64, f64)) {
        self.0.census_and_sums(block, b, counts)
    }

    fn counted(&self, block: &[f32], lo: u32) -> Option<Counted> {
        // SAFETY: `Avx512` exists only where the CPU has AVX-512F.
        Some(unsafe { counted(block, lo) })
    }
}

/// Vectors of counters, each lane's 32 bits eight counters of four bits: [`COUNTED`]
/// binades.
const NIBBLES: usize = COUNTED / 8;

/// [`Passes::counted`]. Each value adds 1 << (4 * (e - base) - 32 * k) to counter vector
/// k: a variable shift by 32 or more (or a negative one, taken as unsigned) gives 0, so
/// each value lands in exactly the counter of its binade, or nowhere outside the range.
/// Four bits hold 15 values, so the counters are widened to 16 bits every 15 groups of
/// 16; 16 bits hold a lane's 512. The rest is the AVX2 pass's work in wider vectors:
/// the windows' sums (with masks), the order keys, and the count of exponent 0.
#[target_feature(enable = "avx512f")]
unsafe fn counted(block: &[f32], lo: u32) -> Counted {
    let b = windows_from(lo);
    let base = lo.saturating_sub(WINDOW).max(1);
    let magnitude = _mm512_set1_epi32(ABS as i32);
    let exponent = _mm512_set1_epi32(0x7f80_0000);
    let one = _mm512_set1_epi32(1);
    let base4 = _mm512_set1_epi32(4 * base as i32);
    let (b0, b1, b2) = (_mm512_set1_epi32(b[0] as i32), _mm512_set1_epi32(b[1] as i32), _mm512_set1_epi32(b[2] as i32));
    let mut min_key = _mm512_set1_epi32(i32::MAX);
    let mut max_key = _mm512_set1_epi32(i32::MIN);
    let mut high = [_mm512_setzero_pd(); 2];
    let mut low = [_mm512_setzero_pd(); 2];
    let mut wide = [_mm512_setzero_si512(); 4 * NIBBLES];
    let mut zsub = 0u64;
    for run in block.chunks(16 * 15) {
        let mut nibbles = [_mm512_setzero_si512(); NIBBLES];
        for group in run.chunks(16) {
            // The last group of a block may be short. Its missing lanes load as zeros, which
            // add nothing to the sums and land in no counter (exponent 0 is below any
            // base): only the keys and the count of exponent 0 mask them off.
            let valid = (1u32 << group.len()).wrapping_sub(1) as u16;
            // SAFETY: the masked load reads only the group's own elements.
            let x = unsafe { _mm512_maskz_loadu_epi32(valid, group.as_ptr().cast()) };
            let a = _mm512_and_si512(x, magnitude);
            let key = _mm512_xor_si512(a, _mm512_srai_epi32::<31>(x));
            min_key = _mm512_mask_min_epi32(min_key, valid, min_key, key);
            max_key = _mm512_mask_max_epi32(max_key, valid, max_key, key);
            let j4 = _mm512_sub_epi32(_mm512_srli_epi32::<21>(_mm512_and_si512(a, exponent)), base4);
            for (k, n) in nibbles.iter_mut().enumerate() {
                let shift = _mm512_sub_epi32(j4, _mm512_set1_epi32(32 * k as i32));
                *n = _mm512_add_epi32(*n, _mm512_sllv_epi32(one, shift));
            }
            zsub += u64::from(_mm512_mask_testn_epi32_mask(valid, a, exponent).count_ones());
            let from1 = _mm512_cmpge_epu32_mask(a, b1);
            let in1 = _mm512_mask_cmplt_epu32_mask(from1, a, b0);
            let in2 = _mm512_mask_cmpge_epu32_mask(!from1, a, b2);
            let xf = _mm512_castsi512_ps(x);
            let lower = _mm512_cvtps_pd(_mm512_castps512_ps256(xf));
            let upper = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(xf))));
            high[0] = _mm512_mask_add_pd(high[0], in1 as u8, high[0], lower);
            high[1] = _mm512_mask_add_pd(high[1], (in1 >> 8) as u8, high[1], upper);
            low[0] = _mm512_mask_add_pd(low[0], in2 as u8, low[0], lower);
            low[1] = _mm512_mask_add_pd(low[1], (in2 >> 8) as u8, low[1], upper);
        }
        // Nibble m of a lane goes to its low 16 bits, nibble m + 4 to its high 16.
        let nibble = _mm512_set1_epi32(0x000f_000f);
        for (k, n) in nibbles.iter().enumerate() {
            for m in 0..4 {
                let w = &mut wide[4 * k + m];
                let part = _mm512_and_si512(_mm512_srlv_epi32(*n, _mm512_set1_epi32(4 * m as i32)), nibble);
                *w = _mm512_add_epi32(*w, part);
            }
        }
    }
    let mut counts = [0u64; COUNTED];
    for (k, w) in wide.iter().enumerate() {
        let (nibble, m) = (k / 4, k % 4);
        let low16 = _mm512_and_si512(*w, _mm512_set1_epi32(0xffff));
        counts[8 * nibble + m] = _mm512_reduce_add_epi32(low16) as u64;
        counts[8 * nibble + m + 4] = _mm512_reduce_add_epi32(_mm512_srli_epi32::<16>(*w)) as u64;
    }
    let sum = |v: [__m512d; 2]| _mm512_reduce_add_pd(_mm512_add_pd(v[0], v[1]));
    Counted {
        keys: (_mm512_reduce_min_epi32(min_key), _mm512_reduce_max_epi32(max_key)),
        sums: (sum(high), sum(low)),
        counts,
        zsub,
    }
}
