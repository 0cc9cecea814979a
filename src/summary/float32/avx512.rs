//! The float32 summary's AVX-512 pass ([`Passes::counted`]): the census and the guessed
//! windows' sums in one pass that keeps its histogram in vector registers. Every `unsafe` here
//! rests on one fact, that an [`Avx512`] exists only where the CPU has AVX2 and AVX-512F.

use super::avx2::Avx2;
use super::{order_key, windows_from, Counted, Counts, Passes, Wide, ABS, COUNTED, WINDOW};
use crate::summary::positions::{Positions, GROUP};
use half::bf16;
use std::arch::x86_64::*;

/// Values per group of [`Positions::add16`].
const PER_GROUP: usize = GROUP * 16;

/// The values [`Passes::counted`] loads.
pub(crate) trait Load: Sized {
    /// 16 values at `p`: their float32 bits, and as float64 (the first 8, the last 8).
    ///
    /// # Safety
    /// `p` must be readable for 16 values, and the CPU must have the AVX-512 tier.
    unsafe fn load16(p: *const Self) -> (__m512i, __m512d, __m512d);
}

impl Load for f32 {
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
    unsafe fn load16(p: *const f32) -> (__m512i, __m512d, __m512d) {
        // SAFETY: the caller's.
        unsafe {
            let x = _mm512_loadu_si512(p.cast());
            (x, _mm512_cvtps_pd(_mm256_loadu_ps(p)), _mm512_cvtps_pd(_mm256_loadu_ps(p.add(8))))
        }
    }
}

impl Load for bf16 {
    /// Widened in the registers: 16 bits up.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
    unsafe fn load16(p: *const bf16) -> (__m512i, __m512d, __m512d) {
        // SAFETY: the caller's.
        let x = _mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(unsafe { _mm256_loadu_si256(p.cast()) }));
        let f = _mm512_castsi512_ps(x);
        (x, _mm512_cvtps_pd(_mm512_castps512_ps256(f)), _mm512_cvtps_pd(_mm512_extractf32x8_ps::<1>(f)))
    }
}

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

    fn counted<T: Wide>(&self, block: &[T], lo: u32) -> Option<Counted> {
        // SAFETY: `Avx512` exists only where the CPU has the AVX-512 tier.
        Some(unsafe { counted(block, lo) })
    }
}

/// [`Passes::counted`]: per value, its order key (the extremes), its window's sum in float64
/// lanes (by masks: from `b[1]` up the first window, from `b[2]` up the second; a value above
/// the first makes the block one that does not fit, found by the keys), a count of exponent 0,
/// and `1 << (e - base)` for its biased exponent `e`, counted by bit position
/// ([`Positions`]): [`COUNTED`] bins from `base`, none for a value outside them (a shift by a
/// negative count, taken as unsigned, or by 32 or more gives 0). Whole groups of 256 values by
/// vectors, the rest one by one.
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
fn counted<T: Wide>(block: &[T], lo: u32) -> Counted {
    let b = windows_from(lo);
    let base = lo.saturating_sub(WINDOW).max(1);
    let (magnitude, exponent) = (_mm512_set1_epi32(ABS as i32), _mm512_set1_epi32(0x7f80_0000));
    let (b1, b2) = (_mm512_set1_epi32(b[1] as i32), _mm512_set1_epi32(b[2] as i32));
    let (one, first) = (_mm512_set1_epi32(1), _mm512_set1_epi32(base as i32));
    let mut min_key = _mm512_set1_epi32(i32::MAX);
    let mut max_key = _mm512_set1_epi32(i32::MIN);
    let mut high = [_mm512_setzero_pd(); 2];
    let mut low = [_mm512_setzero_pd(); 2];
    // Values of exponent 0 by lane (a popcount per vector costs more).
    let mut zsub = _mm512_setzero_si512();
    let mut positions = Positions::new();
    let (body, rest) = block.split_at(block.len() / PER_GROUP * PER_GROUP);
    for group in body.chunks_exact(PER_GROUP) {
        let mut p = group.as_ptr();
        let mut vector = || {
            // SAFETY: 16 calls per group, each reading the next 16 of its 256 values; the
            // pointer moves on at most to the group's end.
            let (x, lower, upper) = unsafe { T::load16(p) };
            p = unsafe { p.add(16) };
            let a = _mm512_and_si512(x, magnitude);
            let key = _mm512_xor_si512(a, _mm512_srai_epi32::<31>(x));
            min_key = _mm512_min_epi32(min_key, key);
            max_key = _mm512_max_epi32(max_key, key);
            zsub = _mm512_mask_add_epi32(zsub, _mm512_testn_epi32_mask(a, exponent), zsub, one);
            let in1 = _mm512_cmpge_epu32_mask(a, b1);
            let in2 = _mm512_mask_cmpge_epu32_mask(!in1, a, b2);
            high[0] = _mm512_mask_add_pd(high[0], in1 as u8, high[0], lower);
            high[1] = _mm512_mask_add_pd(high[1], (in1 >> 8) as u8, high[1], upper);
            low[0] = _mm512_mask_add_pd(low[0], in2 as u8, low[0], lower);
            low[1] = _mm512_mask_add_pd(low[1], (in2 >> 8) as u8, low[1], upper);
            _mm512_sllv_epi32(one, _mm512_sub_epi32(_mm512_srli_epi32::<23>(a), first))
        };
        positions.add16(|| (vector(), vector()));
    }
    let [even, odd] = positions.counts();
    let mut counts = [0u64; COUNTED];
    for (k, n) in counts.iter_mut().enumerate() {
        *n = even[k] + odd[k];
    }
    let sum = |v: [__m512d; 2]| _mm512_reduce_add_pd(_mm512_add_pd(v[0], v[1]));
    let mut c = Counted {
        keys: (_mm512_reduce_min_epi32(min_key), _mm512_reduce_max_epi32(max_key)),
        sums: (sum(high), sum(low)),
        counts,
        zsub: _mm512_reduce_add_epi32(zsub) as u64,
    };
    for &x in rest {
        let (key, a) = (order_key(x.bits()), x.bits() & ABS);
        c.keys = (c.keys.0.min(key), c.keys.1.max(key));
        match a >> 23 {
            0 => c.zsub += 1,
            e if (base..base + COUNTED as u32).contains(&e) => c.counts[(e - base) as usize] += 1,
            _ => {}
        }
        // Exact in any order: every partial sum is a multiple of the window's unit below 2^53 of
        // them (`WINDOW`).
        let v = f64::from(f32::from_bits(x.bits()));
        if a >= b[1] {
            c.sums.0 += v;
        } else if a >= b[2] {
            c.sums.1 += v;
        }
    }
    c
}
