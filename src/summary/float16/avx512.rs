//! The float16 summary's AVX-512 kernel: one pass over a block counts the exponents by bit
//! position, keeps the extremes of the bits and sums the values in float64 lanes; a block
//! holding infinities or NaN has its sums and extremes taken again without them, and one
//! holding zeros or subnormals has its zeros counted, each in a pass of its own. Every function
//! here enables the AVX-512 tier's features; the only `unsafe` is the loads, from slices of the
//! length they read.

use super::Tally;
use crate::summary::positions::{Positions, GROUP};
use std::arch::x86_64::*;

/// Values per group of [`Positions::add16`]: 16 vectors of 16 exponents.
const PER_GROUP: usize = GROUP * 16;

/// The tally of a block of at most [`super::BLOCK`] values (as bits): whole groups by vectors,
/// the rest one by one.
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
pub(super) fn tally(block: &[u16]) -> Tally {
    debug_assert!(block.len() <= super::BLOCK);
    let (body, rest) = block.split_at(block.len() / PER_GROUP * PER_GROUP);
    let mut t = census(body);
    if t.bins[31] > 0 {
        finite(body, &mut t);
    }
    if t.bins[0] > 0 {
        zeros(body, &mut t);
    }
    rest.iter().for_each(|&b| t.add_one(b));
    t
}

/// 8 float16 at `p` as float64.
///
/// # Safety
/// `p` must be readable for 8 values.
#[target_feature(enable = "avx2,f16c,avx512f")]
#[inline]
unsafe fn eight(p: *const u16) -> __m512d {
    _mm512_cvtps_pd(_mm256_cvtph_ps(unsafe { _mm_loadu_si128(p.cast()) }))
}

/// The exponents' counts, the extremes and the sum of `body` (whole groups), as if every value
/// were finite.
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
fn census(body: &[u16]) -> Tally {
    let mut positions = Positions::new();
    let (mut max_signed, mut min_unsigned) = (_mm512_set1_epi16(i16::MIN), _mm512_set1_epi16(-1));
    let mut max_unsigned = _mm512_setzero_si512();
    let mut sums = [_mm512_setzero_pd(); 4];
    let (one, exponent) = (_mm512_set1_epi32(1), _mm512_set1_epi16(31));
    for group in body.chunks_exact(PER_GROUP) {
        let mut p = group.as_ptr();
        positions.add16(|| {
            // SAFETY: 8 calls per group, each reading the next 32 of its 256 values.
            let x = unsafe { _mm512_loadu_si512(p.cast()) };
            max_signed = _mm512_max_epi16(max_signed, x);
            min_unsigned = _mm512_min_epu16(min_unsigned, x);
            max_unsigned = _mm512_max_epu16(max_unsigned, x);
            for (r, s) in sums.iter_mut().enumerate() {
                // SAFETY: as above; values 8r to 8r + 7 of those 32.
                *s = _mm512_add_pd(*s, unsafe { eight(p.add(8 * r)) });
            }
            // SAFETY: as above (the pointer moves to the next 32 values, at most to the end).
            p = unsafe { p.add(32) };
            let e = _mm512_and_si512(_mm512_srli_epi16::<10>(x), exponent);
            let low = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(e));
            let high = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64::<1>(e));
            (_mm512_sllv_epi32(one, low), _mm512_sllv_epi32(one, high))
        });
    }
    let counts = positions.counts();
    let mut t = Tally::default();
    for (e, n) in t.bins.iter_mut().enumerate() {
        *n = counts[0][e] + counts[1][e];
    }
    set_extremes(&mut t, max_signed, min_unsigned, max_unsigned);
    t.sum = fixed_point(&sums);
    t
}

/// The sums and the extremes of `body` taken again without its infinities and NaN, which it
/// counts.
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
fn finite(body: &[u16], t: &mut Tally) {
    let (mut max_signed, mut min_unsigned) = (_mm512_set1_epi16(i16::MIN), _mm512_set1_epi16(-1));
    let mut max_unsigned = _mm512_setzero_si512();
    let mut sums = [_mm512_setzero_pd(); 4];
    let (magnitude, infinity, neginf) =
        (_mm512_set1_epi16(0x7fff), _mm512_set1_epi16(0x7c00), _mm512_set1_epi16(0xfc00u16 as i16));
    let (mut nan, mut negative_infinities) = (0, 0);
    for c in body.chunks_exact(32) {
        // SAFETY: `c` holds 32 values, one vector.
        let x = unsafe { _mm512_loadu_si512(c.as_ptr().cast()) };
        let m = _mm512_and_si512(x, magnitude);
        let finite = _mm512_cmplt_epu16_mask(m, infinity);
        nan += _mm512_cmpgt_epu16_mask(m, infinity).count_ones();
        negative_infinities += _mm512_cmpeq_epi16_mask(x, neginf).count_ones();
        max_signed = _mm512_mask_max_epi16(max_signed, finite, max_signed, x);
        min_unsigned = _mm512_mask_min_epu16(min_unsigned, finite, min_unsigned, x);
        max_unsigned = _mm512_mask_max_epu16(max_unsigned, finite, max_unsigned, x);
        for (r, s) in sums.iter_mut().enumerate() {
            // SAFETY: values 8r to 8r + 7 of `c`; the others load as zeros.
            let h = unsafe { _mm_maskz_loadu_epi16((finite >> (8 * r)) as u8, c.as_ptr().add(8 * r).cast()) };
            *s = _mm512_add_pd(*s, _mm512_cvtps_pd(_mm256_cvtph_ps(h)));
        }
    }
    t.nan = u64::from(nan);
    t.neginf = u64::from(negative_infinities);
    set_extremes(t, max_signed, min_unsigned, max_unsigned);
    t.sum = fixed_point(&sums);
}

/// Counts the zeros and negative zeros of `body`.
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
fn zeros(body: &[u16], t: &mut Tally) {
    let (magnitude, negative_zero) = (_mm512_set1_epi16(0x7fff), _mm512_set1_epi16(0x8000u16 as i16));
    let (mut zero, mut negative) = (0, 0);
    for c in body.chunks_exact(32) {
        // SAFETY: `c` holds 32 values, one vector.
        let x = unsafe { _mm512_loadu_si512(c.as_ptr().cast()) };
        zero += _mm512_testn_epi16_mask(x, magnitude).count_ones();
        negative += _mm512_cmpeq_epi16_mask(x, negative_zero).count_ones();
    }
    t.zero = u64::from(zero);
    t.negative_zero = u64::from(negative);
}

/// The lanes of a vector of 16-bit integers.
#[target_feature(enable = "avx512f")]
fn lanes16(v: __m512i) -> [u16; 32] {
    let mut out = [0u16; 32];
    // SAFETY: `out` holds one vector.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) };
    out
}

/// The extremes' lanes folded into the tally (whose `add_one` may go on from them).
#[target_feature(enable = "avx512f")]
fn set_extremes(t: &mut Tally, max_signed: __m512i, min_unsigned: __m512i, max_unsigned: __m512i) {
    t.max_signed = lanes16(max_signed).into_iter().map(|b| b as i16).max().unwrap_or(i16::MIN);
    t.min_unsigned = lanes16(min_unsigned).into_iter().min().unwrap_or(u16::MAX);
    t.max_unsigned = lanes16(max_unsigned).into_iter().max().unwrap_or(0);
}

/// The float64 lanes' total in units of 2^-24: each lane is a multiple of 2^-24 below 2^29, so
/// scaled by 2^24 it is an integer below 2^53, exact in float64 and in `i64`.
#[target_feature(enable = "avx512f")]
fn fixed_point(sums: &[__m512d; 4]) -> i64 {
    let mut total = 0i64;
    for s in sums {
        let mut lanes = [0f64; 8];
        // SAFETY: `lanes` holds one vector.
        unsafe { _mm512_storeu_pd(lanes.as_mut_ptr(), *s) };
        total += lanes.iter().map(|&x| (x * 16_777_216.0) as i64).sum::<i64>();
    }
    total
}
