//! The integer summary's AVX-512 kernels: one pass over a block keeps the extremes by lane, sums
//! in 64-bit lanes and counts the bit lengths of `|x|` by bit position. Values of 8 to 32 bits
//! go in 32-bit lanes, 16 to a vector; 64-bit values 8 to a vector, their sums split into the
//! high (signed) and low (unsigned) 32 bits. Every function here enables the AVX-512 tier's
//! features; the only `unsafe` is the loads, from slices of the length they read.

use super::{Int, Tally};
use crate::summary::positions::{Positions, GROUP, MAX_GROUPS};
use std::arch::x86_64::*;

/// An integer type's lanes.
pub(super) trait Lanes: Int {
    /// 64-bit lanes (8 values a vector) rather than 32-bit ones (16).
    const WIDE: bool;
    /// Whether the lanes hold values that their signed comparison orders (every type but
    /// `u32` and `u64`, whose values may set the top bit).
    const SIGNED: bool;
    /// The values at `p`, one per lane, sign- or zero-extended.
    ///
    /// # Safety
    /// `p` must be readable for a vector's values, and the CPU must have the AVX-512 tier.
    unsafe fn load(p: *const Self) -> __m512i;
}

macro_rules! lanes {
    ($($t:ty, $wide:expr, $signed:expr, |$p:ident| $load:expr;)*) => {$(
        impl Lanes for $t {
            const WIDE: bool = $wide;
            const SIGNED: bool = $signed;
            #[inline]
            #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
            unsafe fn load($p: *const Self) -> __m512i {
                // SAFETY: the caller's.
                unsafe { $load }
            }
        }
    )*};
}
lanes! {
    i8, false, true, |p| _mm512_cvtepi8_epi32(_mm_loadu_si128(p.cast()));
    u8, false, true, |p| _mm512_cvtepu8_epi32(_mm_loadu_si128(p.cast()));
    i16, false, true, |p| _mm512_cvtepi16_epi32(_mm256_loadu_si256(p.cast()));
    u16, false, true, |p| _mm512_cvtepu16_epi32(_mm256_loadu_si256(p.cast()));
    i32, false, true, |p| _mm512_loadu_si512(p.cast());
    u32, false, false, |p| _mm512_loadu_si512(p.cast());
    i64, true, true, |p| _mm512_loadu_si512(p.cast());
    u64, true, false, |p| _mm512_loadu_si512(p.cast());
}

/// Values per vector.
const fn per_vector<T: Lanes>() -> usize {
    if T::WIDE {
        8
    } else {
        16
    }
}

/// Values per block: the most groups [`Positions`] counts (rounded down to a power of two). The
/// 64-bit sums' lanes then add at most 2^12 values below 2^32 in magnitude.
pub(super) const fn block_len<T: Lanes>() -> usize {
    128 * GROUP * per_vector::<T>()
}
const _: () = assert!(MAX_GROUPS >= 128);

/// The tally of a block of at most [`block_len`] values: whole groups by vectors, the rest one
/// by one.
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
pub(super) fn tally<T: Lanes>(block: &[T]) -> Tally {
    debug_assert!(block.len() <= block_len::<T>());
    let per_group = GROUP * per_vector::<T>();
    let (body, rest) = block.split_at(block.len() / per_group * per_group);
    let mut t = if T::WIDE { wide(body) } else { narrow(body) };
    rest.iter().for_each(|&x| t.add_one(x.wide()));
    t
}

/// 8 to 32-bit values in 32-bit lanes: `1 << (31 - lzcnt|x|)` has the bit of `|x|`'s length
/// (none for 0: a shift by -1 is one by 2^32 - 1, which gives 0).
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
fn narrow<T: Lanes>(body: &[T]) -> Tally {
    let mut positions = Positions::new();
    let (mut min, mut max) = match T::SIGNED {
        true => (_mm512_set1_epi32(i32::MAX), _mm512_set1_epi32(i32::MIN)),
        false => (_mm512_set1_epi32(-1), _mm512_setzero_si512()),
    };
    let mut sums = [_mm512_setzero_si512(); 2];
    let (one, top) = (_mm512_set1_epi32(1), _mm512_set1_epi32(31));
    for group in body.chunks_exact(GROUP * 16) {
        let mut p = group.as_ptr();
        let mut vector = || {
            // SAFETY: 16 calls per group, each reading the next 16 of its 256 values; the
            // pointer moves on at most to the group's end.
            let x = unsafe { T::load(p) };
            p = unsafe { p.add(16) };
            let (low, high) = (_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64::<1>(x));
            let a = if T::SIGNED {
                (min, max) = (_mm512_min_epi32(min, x), _mm512_max_epi32(max, x));
                sums[0] = _mm512_add_epi64(sums[0], _mm512_cvtepi32_epi64(low));
                sums[1] = _mm512_add_epi64(sums[1], _mm512_cvtepi32_epi64(high));
                _mm512_abs_epi32(x)
            } else {
                (min, max) = (_mm512_min_epu32(min, x), _mm512_max_epu32(max, x));
                sums[0] = _mm512_add_epi64(sums[0], _mm512_cvtepu32_epi64(low));
                sums[1] = _mm512_add_epi64(sums[1], _mm512_cvtepu32_epi64(high));
                x
            };
            _mm512_sllv_epi32(one, _mm512_sub_epi32(top, _mm512_lzcnt_epi32(a)))
        };
        positions.add16(|| (vector(), vector()));
    }
    let counts = positions.counts();
    let mut t = Tally::default();
    for (k, n) in t.bins.iter_mut().take(32).enumerate() {
        *n = counts[0][k] + counts[1][k];
    }
    t.zero = body.len() as u64 - t.bins.iter().sum::<u64>();
    let lanes = |v: __m512i| {
        let mut out = [0u32; 16];
        // SAFETY: `out` holds one vector.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) };
        out.map(|x| if T::SIGNED { i128::from(x as i32) } else { i128::from(x) })
    };
    if !body.is_empty() {
        t.min = lanes(min).into_iter().min().unwrap_or(i128::MAX);
        t.max = lanes(max).into_iter().max().unwrap_or(i128::MIN);
    }
    t.sum = sums.iter().map(|&s| lanes64(s).iter().map(|&x| i128::from(x)).sum::<i128>()).sum();
    t
}

/// 64-bit values: as [`narrow`] in 64-bit lanes, the sums split into `x >> 32` and `x & (2^32 -
/// 1)`.
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
fn wide<T: Lanes>(body: &[T]) -> Tally {
    let mut positions = Positions::new();
    let (mut min, mut max) = match T::SIGNED {
        true => (_mm512_set1_epi64(i64::MAX), _mm512_set1_epi64(i64::MIN)),
        false => (_mm512_set1_epi64(-1), _mm512_setzero_si512()),
    };
    let (mut high, mut low) = (_mm512_setzero_si512(), _mm512_setzero_si512());
    let (one, top, mask) = (_mm512_set1_epi64(1), _mm512_set1_epi64(63), _mm512_set1_epi64(0xffff_ffff));
    for group in body.chunks_exact(GROUP * 8) {
        let mut p = group.as_ptr();
        let mut vector = || {
            // SAFETY: 16 calls per group, each reading the next 8 of its 128 values; the
            // pointer moves on at most to the group's end.
            let x = unsafe { T::load(p) };
            p = unsafe { p.add(8) };
            low = _mm512_add_epi64(low, _mm512_and_si512(x, mask));
            let a = if T::SIGNED {
                (min, max) = (_mm512_min_epi64(min, x), _mm512_max_epi64(max, x));
                high = _mm512_add_epi64(high, _mm512_srai_epi64::<32>(x));
                _mm512_abs_epi64(x)
            } else {
                (min, max) = (_mm512_min_epu64(min, x), _mm512_max_epu64(max, x));
                high = _mm512_add_epi64(high, _mm512_srli_epi64::<32>(x));
                x
            };
            _mm512_sllv_epi64(one, _mm512_sub_epi64(top, _mm512_lzcnt_epi64(a)))
        };
        positions.add16(|| (vector(), vector()));
    }
    let counts = positions.counts();
    let mut t = Tally::default();
    let (short, long) = t.bins.split_at_mut(32);
    short.copy_from_slice(&counts[0]);
    long.copy_from_slice(&counts[1]);
    t.zero = body.len() as u64 - t.bins.iter().sum::<u64>();
    let value = |x: i64| if T::SIGNED { i128::from(x) } else { i128::from(x as u64) };
    if !body.is_empty() {
        t.min = lanes64(min).into_iter().map(value).min().unwrap_or(i128::MAX);
        t.max = lanes64(max).into_iter().map(value).max().unwrap_or(i128::MIN);
    }
    let (high, low) = (lanes64(high), lanes64(low));
    t.sum = high.iter().map(|&h| i128::from(h) << 32).sum::<i128>() + low.iter().map(|&l| i128::from(l)).sum::<i128>();
    t
}

/// The lanes of a vector of 64-bit integers.
#[target_feature(enable = "avx512f")]
fn lanes64(v: __m512i) -> [i64; 8] {
    let mut out = [0i64; 8];
    // SAFETY: `out` holds one vector.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) };
    out
}
