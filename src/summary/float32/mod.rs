//! The float32 summary without a scatter per sum: windows of binades summed exactly in float64.
//!
//! A block of [`BLOCK`] values is read in two passes:
//! 1. the census: the histogram by biased exponent and the extremes as order keys. A block
//!    holding NaN or an infinity then goes to the general path ([`add_packed_block`]);
//! 2. the sums, two windows at a time: a window is [`WINDOW`] binades below the largest binade
//!    not yet summed (the histogram says which binades hold values). Its values are summed in
//!    float64 lanes, which is exact for them: every one is a multiple of the window's lowest
//!    unit, and their sum stays below 2^53 of those units. Typical data (a block within 34
//!    binades) need one such pass.
//!
//! With AVX2 both passes are written with intrinsics, and the census's scalar histogram
//! increments run beside its vector work. Better still, the two windows are guessed from the
//! previous block (its largest binade, with one binade of room) and summed in the census's own
//! pass; the histogram then says whether they held every value. A few values below them (at
//! most `STRAGGLERS` per block, as the smallest squared differences of normal data often are)
//! are found by a cheap scan and added one by one; a block with more, or with a value above
//! them, is summed again as above. Each window's float64 total goes into the exact buckets, so
//! the result is the same integer sum as the general path's, whatever the windows were. With
//! AVX-512 that guessed pass keeps its histogram in registers instead of memory
//! ([`Passes::counted`]), for the 40 binades around the windows; the values outside them are
//! few or the block is taken again the AVX2 way. The unit tests run every path the CPU has.

// The blocks below feed the x86-64 tiers; elsewhere only the portable path runs.
#![cfg_attr(not(target_arch = "x86_64"), allow(unused_imports, dead_code))]

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod portable;

use super::float::{add_exact, add_packed_block, binade, bucket, float_sum, split, FloatSum};
use super::{Accumulator, Summarise};
use crate::arch::{Supported, Tier};
use half::bf16;

impl Summarise for f32 {
    fn add_all(acc: &mut Accumulator, values: &[Self]) {
        let acc = float_sum(acc);
        acc.count += values.len() as u64;
        add(crate::arch::current(), acc, values);
    }
}

/// bfloat16 is float32 with the low 16 bits of the mantissa dropped: each block widened to
/// float32, exactly, is summarised as float32, into the same counts, extremes and exact sum.
impl Summarise for bf16 {
    fn add_all(acc: &mut Accumulator, values: &[Self]) {
        let acc = float_sum(acc);
        acc.count += values.len() as u64;
        add(crate::arch::current(), acc, values);
    }
}

/// Values per block.
pub(super) const BLOCK: usize = 1 << 13;
/// Binades per window. A window's lowest unit is 2^(lo - 150) for its lowest biased exponent
/// lo, its values are below 2^(lo + WINDOW - 127), and a block's sum is below 2^13 times
/// that: 2^(WINDOW + 36) units, below 2^53.
pub(super) const WINDOW: u32 = 16;
const _: () = assert!(WINDOW + 36 <= 53 && BLOCK == 1 << 13);

/// The most values below the guessed windows that are added one by one (`add_below`); a
/// block with more is summed again from its largest binade.
const STRAGGLERS: u64 = 256;
/// Lanes of the window sums.
const SUM_LANES: usize = 16;
/// Copies of the histogram, used in turn: consecutive values usually share a binade.
const COPIES: usize = 8;
/// Float32's magnitude bits.
const ABS: u32 = 0x7fff_ffff;
/// Magnitudes from this up are infinities and NaN.
const SPECIAL: u32 = 0x7f80_0000;

/// The histogram's copies: counts per biased float32 exponent.
type Counts = [[u32; 256]; COPIES];

/// The two passes over a block, for one kind of CPU.
trait Passes {
    /// Adds the block to the histogram; returns the smallest and largest order keys (the
    /// magnitude bits, inverted for negative values).
    fn census(&self, block: &[f32], counts: &mut Counts) -> (i32, i32);
    /// The sums of the values with magnitude bits in `[b[1], b[0])` and in `[b[2], b[1])`.
    fn sums(&self, block: &[f32], b: [u32; 3]) -> (f64, f64);
    /// [`census`](Self::census) and [`sums`](Self::sums) together, in one pass where the
    /// CPU gains by it.
    fn census_and_sums(&self, block: &[f32], b: [u32; 3], counts: &mut Counts) -> ((i32, i32), (f64, f64)) {
        (self.census(block, counts), self.sums(block, b))
    }
    /// The census and the sums of the windows guessed from `lo` in one pass that keeps its
    /// counts in vector registers instead of memory, for the [`COUNTED`] binades from
    /// `max(lo - WINDOW, 1)` only; `None` where the CPU has no such pass.
    fn counted<T: Wide>(&self, _block: &[T], _lo: u32) -> Option<Counted> {
        None
    }
}

/// Binades that [`Passes::counted`] counts: the two windows', one bit position of a 32-bit lane
/// each.
pub(super) const COUNTED: usize = 32;
const _: () = assert!(COUNTED == 2 * WINDOW as usize);

/// What [`Passes::counted`] finds in a block.
pub(super) struct Counted {
    /// The smallest and largest order keys.
    keys: (i32, i32),
    /// The sums of the two windows.
    sums: (f64, f64),
    /// Values per biased exponent, from `max(lo - WINDOW, 1)` up.
    counts: [u64; COUNTED],
    /// Values with biased exponent 0: zeros and subnormals.
    zsub: u64,
}

/// The elements the float32 summary takes: float32, and bfloat16, which is float32 with the low
/// 16 bits of the mantissa dropped.
pub(super) trait Wide: Copy + Load {
    /// The value's float32 bits.
    fn bits(self) -> u32;
    /// The block as float32: itself, or widened (exactly) into `scratch`.
    fn widen<'a>(block: &'a [Self], scratch: &'a mut [f32; BLOCK]) -> &'a [f32];
}

impl Wide for f32 {
    #[inline(always)]
    fn bits(self) -> u32 {
        self.to_bits()
    }

    #[inline(always)]
    fn widen<'a>(block: &'a [f32], _scratch: &'a mut [f32; BLOCK]) -> &'a [f32] {
        block
    }
}

impl Wide for bf16 {
    #[inline(always)]
    fn bits(self) -> u32 {
        u32::from(self.to_bits()) << 16
    }

    #[inline(always)]
    fn widen<'a>(block: &'a [bf16], scratch: &'a mut [f32; BLOCK]) -> &'a [f32] {
        let wide = &mut scratch[..block.len()];
        wide.iter_mut().zip(block).for_each(|(w, x)| *w = f32::from_bits(x.bits()));
        wide
    }
}

/// What the AVX-512 pass loads ([`avx512::Load`]); nothing elsewhere.
#[cfg(target_arch = "x86_64")]
pub(super) use avx512::Load;
#[cfg(not(target_arch = "x86_64"))]
pub(super) trait Load {}
#[cfg(not(target_arch = "x86_64"))]
impl<T> Load for T {}

/// Adds `values` with `tier`'s passes.
pub(super) fn add<T: Wide>(tier: Supported, acc: &mut FloatSum, values: &[T]) {
    match tier.tier() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `tier` is one the CPU has (`Supported`).
        Tier::Avx512 => unsafe { add_avx512(acc, values) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Tier::Avx2 => unsafe { add_avx2(acc, values) },
        _ => add_portable(acc, values),
    }
}

/// [`add_block`] for any CPU.
pub(super) fn add_portable<T: Wide>(acc: &mut FloatSum, values: &[T]) {
    let mut scratch = [0f32; BLOCK];
    values.chunks(BLOCK).for_each(|block| add_block(acc, block, &portable::Portable, &mut scratch));
}

/// [`add_block`] with the AVX2 passes.
///
/// # Safety
/// The CPU must have the AVX2 tier.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt")]
unsafe fn add_avx2<T: Wide>(acc: &mut FloatSum, values: &[T]) {
    // SAFETY: the caller checked.
    let passes = unsafe { avx2::Avx2::new() };
    let mut scratch = [0f32; BLOCK];
    values.chunks(BLOCK).for_each(|block| add_block(acc, block, &passes, &mut scratch));
}

/// [`add_block`] with the AVX2 passes and the AVX-512 [`Passes::counted`].
///
/// # Safety
/// The CPU must have the AVX-512 tier.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd")]
unsafe fn add_avx512<T: Wide>(acc: &mut FloatSum, values: &[T]) {
    // SAFETY: the caller checked.
    let passes = unsafe { avx512::Avx512::new() };
    let mut scratch = [0f32; BLOCK];
    values.chunks(BLOCK).for_each(|block| add_block(acc, block, &passes, &mut scratch));
}

/// A float32's bits as an integer in the order of the values (-0.0 just below +0.0).
#[inline(always)]
fn order_key(b: u32) -> i32 {
    ((b & ABS) as i32) ^ ((b as i32) >> 31)
}

/// The histogram by biased exponent, in [`COPIES`] interleaved copies.
#[inline(always)]
fn histogram(block: &[f32], counts: &mut Counts) {
    let mut groups = block.chunks_exact(COPIES);
    for group in &mut groups {
        for (c, x) in counts.iter_mut().zip(group) {
            c[(x.to_bits() >> 23 & 0xff) as usize] += 1;
        }
    }
    groups.remainder().iter().for_each(|x| counts[0][(x.to_bits() >> 23 & 0xff) as usize] += 1);
}

/// The magnitude bits where the window whose lowest biased exponent is `lo` starts:
/// subnormals share exponent 1's unit, so a window that reaches it takes them too.
fn start(lo: u32) -> u32 {
    if lo <= 1 {
        0
    } else {
        lo << 23
    }
}

/// The bounds of two windows whose first has the lowest biased exponent `lo`.
fn windows_from(lo: u32) -> [u32; 3] {
    [start((lo + WINDOW).min(255)), start(lo), start(lo.saturating_sub(WINDOW))]
}

/// Adds a block of at most [`BLOCK`] values; `scratch` holds it widened to float32 where the
/// guessed windows' pass does not take it.
#[inline(always)]
fn add_block<T: Wide>(acc: &mut FloatSum, block: &[T], passes: &impl Passes, scratch: &mut [f32; BLOCK]) {
    // With a guess from the last block, its two windows are summed in the census's pass;
    // the histogram then tells whether they held every value. Where the CPU can, that pass
    // counts in registers, and a block it does not fit is taken again as below.
    let guess = acc.window_hint;
    // The windows to sum beside the census: none once the counted pass found they do not fit.
    let mut windows = guess;
    if guess != 0 {
        if let Some(c) = passes.counted(block, guess) {
            if add_counted(acc, block, guess, c) {
                return;
            }
            windows = 0;
        }
    }
    let block = T::widen(block, scratch);
    let mut counts = [[0u32; 256]; COPIES];
    let ((min_key, max_key), guessed) = match windows {
        0 => (passes.census(block, &mut counts), None),
        lo => {
            let (keys, sums) = passes.census_and_sums(block, windows_from(lo), &mut counts);
            (keys, Some(sums))
        }
    };
    let mut bins = [0u64; 256];
    for c in &counts {
        bins.iter_mut().zip(c).for_each(|(n, &c)| *n += u64::from(c));
    }
    if bins[255] > 0 {
        return add_packed_block(acc, block);
    }
    let zeros = zeros(block, bins[0]);
    let subnormal = bins[0] - zeros.0;
    // The highest binade below `e` that holds values; subnormals count as exponent 1, whose
    // unit they share.
    let below = |e: u32| (1..e).rev().find(|&e| bins[e as usize] > 0 || (e == 1 && subnormal > 0));
    let highest = below(255);
    // The next guess leaves one binade of room above this block's highest.
    acc.window_hint = hint(highest, guess);
    // The guessed windows held every value but a few below them (at most [`STRAGGLERS`]):
    // those few are found by a scan and added one by one, which costs less than summing
    // the block again.
    let stragglers = |lo: u32| {
        let floor = lo.saturating_sub(WINDOW);
        let fits_above = highest.is_none_or(|top| top < lo + WINDOW);
        let under = match floor {
            0 | 1 => 0,
            _ => subnormal + bins[1..floor as usize].iter().sum::<u64>(),
        };
        (fits_above && under <= STRAGGLERS).then_some((under, start(floor)))
    };
    let mut bounds = [SPECIAL, 0, 0];
    let mut next = highest;
    if let Some(((high, low), (under, floor))) = guessed.zip(stragglers(guess)) {
        add_exact(acc, high);
        add_exact(acc, low);
        if under > 0 {
            add_below(acc, block, floor, None);
        }
        next = None;
    }
    while let Some(top) = next {
        let lo = top.saturating_sub(WINDOW - 1);
        bounds[1] = start(lo);
        next = below(lo);
        bounds[2] = match next {
            Some(top) => start(top.saturating_sub(WINDOW - 1)),
            None => bounds[1],
        };
        let (high, low) = passes.sums(block, bounds);
        add_exact(acc, high);
        add_exact(acc, low);
        next = next.and_then(|top| below(top.saturating_sub(WINDOW - 1)));
        bounds[0] = bounds[2];
    }
    record_block(acc, &bins, zeros, (min_key, max_key));
}

/// A block that [`Passes::counted`] took with the windows guessed from `lo`. Returns false,
/// having added nothing, where they do not fit it: it holds NaN or an infinity, a value
/// above them or more than [`STRAGGLERS`] below them.
#[inline(always)]
fn add_counted<T: Wide>(acc: &mut FloatSum, block: &[T], lo: u32, c: Counted) -> bool {
    let magnitude = |key: i32| (if key < 0 { !key } else { key }) as u32;
    let largest = magnitude(c.keys.0).max(magnitude(c.keys.1));
    let floor = lo.saturating_sub(WINDOW);
    if largest >= SPECIAL || largest >> 23 >= lo + WINDOW {
        return false;
    }
    let zeros = zeros(block, c.zsub);
    // Below the windows: the values of biased exponent 1 to `floor - 1`, the only ones not
    // counted, and the subnormals unless the lower window reaches them.
    let uncounted = (block.len() as u64).checked_sub(c.counts.iter().sum::<u64>() + c.zsub);
    let under = match uncounted {
        Some(n) if floor > 1 => n + c.zsub - zeros.0,
        n => n.unwrap_or(u64::MAX),
    };
    if under > STRAGGLERS {
        return false;
    }
    let mut bins = [0u64; 256];
    bins[0] = c.zsub;
    for (b, &n) in bins.iter_mut().skip(floor.max(1) as usize).zip(&c.counts) {
        *b = n;
    }
    add_exact(acc, c.sums.0);
    add_exact(acc, c.sums.1);
    if under > 0 {
        add_below(acc, block, start(floor), Some(&mut bins));
    }
    acc.window_hint = hint((largest > 0).then_some((largest >> 23).max(1)), lo);
    record_block(acc, &bins, zeros, c.keys);
    true
}

/// The zeros and negative zeros of a block that holds `zsub` values of biased exponent 0.
#[inline(always)]
fn zeros<T: Wide>(block: &[T], zsub: u64) -> (u64, u64) {
    match zsub {
        0 => (0, 0),
        _ => (
            block.iter().filter(|x| x.bits() & ABS == 0).count() as u64,
            block.iter().filter(|x| x.bits() == !ABS).count() as u64,
        ),
    }
}

/// The next block's guess: one binade of room above this block's highest binade (subnormals
/// as 1), or the last guess if it held only zeros.
fn hint(highest: Option<u32>, guess: u32) -> u32 {
    highest.map_or(guess, |top| top.saturating_sub(WINDOW - 2).max(1))
}

/// Records a block's counts by biased exponent (`bins[0]`: zeros and subnormals), its zeros
/// and negative zeros, and its extremes.
#[inline(always)]
fn record_block(acc: &mut FloatSum, bins: &[u64; 256], (zero, negative_zero): (u64, u64), keys: (i32, i32)) {
    acc.subnormal += bins[0] - zero;
    // Biased exponents 1 to 254 are consecutive binades.
    let first = binade::<f32>(1);
    acc.binades[first..first + 254].iter_mut().zip(&bins[1..255]).for_each(|(a, n)| *a += n);
    acc.zero += zero;
    acc.negative_zero += negative_zero;
    let value = |key: i32| f64::from(f32::from_bits(if key < 0 { !key as u32 | !ABS } else { key as u32 }));
    acc.fmin = acc.fmin.min(value(keys.0));
    acc.fmax = acc.fmax.max(value(keys.1));
}

/// Adds the values of `block` whose magnitude bits are non-zero and below `floor`, one by
/// one, exactly; with `bins`, also counts those that are not subnormal there. The scan tests groups of [`SUM_LANES`] without a branch per value, so the
/// compiler vectorises it; only a group that holds such a value is looked at again.
#[inline(always)]
fn add_below<T: Wide>(acc: &mut FloatSum, block: &[T], floor: u32, mut bins: Option<&mut [u64; 256]>) {
    // 0 < a < floor, as one unsigned comparison: a = 0 wraps to the top.
    let under = |x: &T| (x.bits() & ABS).wrapping_sub(1) < floor.saturating_sub(1);
    let mut groups = block.chunks_exact(SUM_LANES);
    let mut one = |group: &[T]| {
        for x in group.iter().filter(|x| under(x)) {
            if let Some((e, m)) = split::<f32>(acc, u64::from(x.bits())) {
                acc.buckets[bucket::<f32>(e)] += i128::from(m);
                if let Some(bins) = bins.as_deref_mut().filter(|_| e != 0) {
                    bins[e] += 1;
                }
            }
        }
    };
    for group in &mut groups {
        if group.iter().fold(false, |any, x| any | under(x)) {
            one(group);
        }
    }
    one(groups.remainder());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::summary::exact::exact_bits;

    /// Float32 through the general path (packed blocks), the oracle of the windowed one.
    fn packed_f32(values: &[f32]) -> FloatSum {
        let mut acc = FloatSum::default();
        acc.count += values.len() as u64;
        values.chunks(1 << 16).for_each(|b| add_packed_block(&mut acc, b));
        acc
    }

    /// The exact total of an accumulator: sign and magnitude bits without leading zeros.
    fn exact(acc: &FloatSum) -> (bool, Vec<u8>) {
        let (negative, mut bits) = exact_bits(&acc.buckets);
        while bits.last() == Some(&0) {
            bits.pop();
        }
        (negative, bits)
    }

    /// A xorshift generator: the same values on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            let mut s = self.0;
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            self.0 = s;
            s
        }
    }

    /// Values per case: three blocks and a few more.
    const N: usize = 3 * BLOCK + 13;

    /// Values made from their position in a block and a random word.
    fn per_block(rng: &mut Rng, bits: fn(usize, u32) -> u32) -> Vec<f32> {
        (0..N).map(|i| f32::from_bits(bits(i % BLOCK, rng.next() as u32))).collect()
    }

    /// Blocks whose largest binade is 120, with `k` values below the windows that the previous
    /// block's guess gives.
    fn below_windows(k: usize) -> Vec<f32> {
        (0..N)
            .map(|i| {
                let (i, r) = (i % BLOCK, (i as u32).wrapping_mul(2_654_435_761));
                f32::from_bits(match i {
                    0 => 120 << 23,
                    _ if i <= k => (60 + r % 27) << 23 | r & 0x807f_ffff,
                    _ => (100 + r % 20) << 23 | r & 0x807f_ffff,
                })
            })
            .collect()
    }

    /// Kinds of values: random bits, squares, cancellation, subnormals, the extremes, powers of
    /// two and every binade near the top.
    fn value_cases(rng: &mut Rng) -> Vec<(&'static str, Vec<f32>)> {
        let finite = |b: u32| if b & 0x7f80_0000 == 0x7f80_0000 { b & 0xff7f_ffff } else { b };
        let uniform = |r: u64| (r >> 40) as f32 / (1u64 << 24) as f32;
        vec![
            ("random finite bits", (0..N).map(|_| f32::from_bits(finite(rng.next() as u32))).collect()),
            ("squares", (0..N).map(|_| (uniform(rng.next()) - uniform(rng.next())).powi(2)).collect()),
            (
                "cancellation",
                (0..N)
                    .map(|i| {
                        let x = uniform(rng.next()) * 1e6;
                        if i % 2 == 0 {
                            x
                        } else {
                            -f32::from_bits(x.to_bits() ^ (rng.next() as u32 & 3))
                        }
                    })
                    .collect(),
            ),
            ("subnormals and zeros", (0..N).map(|_| f32::from_bits(rng.next() as u32 & 0x8080_0fff)).collect()),
            ("naive float64 is wrong", [1e30f32, 1.0, -1e30].repeat(N / 3)),
            ("largest", vec![f32::MAX; N]),
            ("largest of both signs", (0..N).map(|i| if i % 3 == 0 { -f32::MAX } else { f32::MAX }).collect()),
            (
                "powers of two",
                (0..N).map(|i| f32::from_bits(((i as u32 * 7) % 254 + 1) << 23 | (i as u32 & 1) << 31)).collect(),
            ),
            (
                "window edges",
                (0..N)
                    .map(|i| f32::from_bits(((254 - (i as u32 % 40)) << 23) | (rng.next() as u32 & 0x807f_ffff)))
                    .collect(),
            ),
        ]
    }

    /// Blocks built at the windows' bounds: the widest windows and values just outside them.
    fn window_cases(rng: &mut Rng) -> Vec<(&'static str, Vec<f32>)> {
        vec![
            // Largest exponent 18: the window takes the subnormals' unit, and 2^13 values of
            // 2^41 units or more add up to 2^53 of them; one odd subnormal per block.
            ("widest window", per_block(rng, |k, r| if k == 0 { r & 0x7f_ffff | 1 } else { 18 << 23 | r & 0x7f_ffff })),
            // The second window at its widest: the first holds one value of exponent 100, the
            // second 2^13 - 2 positive values of exponent 83, whose sum passes 2^53 units of
            // the binade below the window (66), and one odd value at its lowest binade, 67.
            (
                "widest second window",
                per_block(rng, |k, r| match k {
                    0 => 100 << 23 | r & 0x7f_ffff,
                    1 => 67 << 23 | r & 0x7f_ffff | 1,
                    _ => 83 << 23 | r & 0x7f_ffff,
                }),
            ),
            // The same with the largest value below that window: one more window. A second
            // window one binade wider would round, one that took this value for covered would
            // drop it.
            (
                "just below the second window",
                per_block(rng, |k, r| match k {
                    0 => 100 << 23 | r & 0x7f_ffff,
                    1 => 66 << 23 | 0x7f_ffff,
                    _ => 83 << 23 | r & 0x7f_ffff,
                }),
            ),
            // A block whose smallest value lies just below the second window: one more.
            (
                "third window",
                (0..N)
                    .map(|i| {
                        let r = rng.next() as u32 & 0x807f_ffff;
                        f32::from_bits(match i % 101 {
                            0 => 100 << 23 | r,
                            1 => 66 << 23 | r | 1,
                            _ => (67 + r % 34) << 23 | r,
                        })
                    })
                    .collect(),
            ),
        ]
    }

    /// Blocks that the windows guessed from the previous block miss, or hold but for a few
    /// values below them; and zeros of both signs.
    fn guess_cases(rng: &mut Rng) -> Vec<(&'static str, Vec<f32>)> {
        vec![
            // Each block's largest binade two above the last one's: just out of reach of the
            // windows guessed from the last block, which must be summed again.
            (
                "rising blocks",
                (0..N)
                    .map(|i| {
                        let (r, top) = (rng.next() as u32, 100 + 2 * (i / BLOCK) as u32);
                        let e = if i % BLOCK == 0 { top } else { top - r % 30 };
                        f32::from_bits(e << 23 | r & 0x807f_ffff)
                    })
                    .collect(),
            ),
            // A few values below the windows guessed from the last block (88 to 121), added
            // one by one: the largest just below them, a subnormal and a negative one; the
            // smallest value in them and a zero are not among them.
            (
                "a few below the windows",
                per_block(rng, |k, r| match k {
                    0 => 120 << 23 | r & 0x7f_ffff,
                    1 => 87 << 23 | 0x7f_ffff,
                    2 => r & 0x7f_ffff | 1,
                    3 => 1 << 31 | 50 << 23 | r & 0x7f_ffff,
                    4 => 88 << 23,
                    5 => 0,
                    _ => (90 + r % 30) << 23 | r & 0x807f_ffff,
                }),
            ),
            // As many below the windows as are added one by one, and one more: the block is
            // then summed again from its largest binade.
            ("as many below as are added one by one", below_windows(256)),
            ("too many below the windows", below_windows(257)),
            // Below the windows only a subnormal, and zeros: the subnormal is added one by one.
            (
                "a subnormal below the windows",
                per_block(rng, |k, r| match k {
                    0 => 120 << 23,
                    1 => r & 0x807f_ffff | 1,
                    2 | 3 => r & 1 << 31,
                    _ => (100 + r % 20) << 23 | r & 0x807f_ffff,
                }),
            ),
            // 256 values of one binade in a row: 16 in each vector lane, one more than four
            // bits count, so the counters must be widened before.
            (
                "a run of one binade",
                per_block(rng, |k, r| match k {
                    300 => 120 << 23,
                    k if k < 256 => 110 << 23 | r & 0x807f_ffff,
                    _ => (100 + r % 20) << 23 | r & 0x807f_ffff,
                }),
            ),
            ("zeros", vec![0.0; N]),
            ("negative zeros", vec![-0.0; N]),
        ]
    }

    #[test]
    fn windowed_float32_matches_the_general_path() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut cases = value_cases(&mut rng);
        cases.extend(window_cases(&mut rng));
        cases.extend(guess_cases(&mut rng));
        let mut special = cases[1].1.clone();
        special[5] = f32::NAN;
        special[BLOCK + 7] = f32::NEG_INFINITY;
        special[2 * BLOCK + 1] = f32::INFINITY;
        cases.push(("NaN and infinities in some blocks", special));
        for (name, v) in &cases {
            for len in [v.len(), 1, 15, 17, BLOCK - 1, BLOCK + 1] {
                let v = &v[..len.min(v.len())];
                let slow = packed_f32(v);
                for tier in Supported::all() {
                    let path = tier.tier().name();
                    let mut acc = FloatSum::default();
                    acc.count += v.len() as u64;
                    add(tier, &mut acc, v);
                    assert_eq!(acc.finish(), slow.finish(), "{name}, {len} values, {path}");
                    assert_eq!(exact(&acc), exact(&slow), "{name}, {len} values, {path}: the exact sums differ");
                }
            }
        }
    }

    #[test]
    fn bfloat16_widened_matches_the_general_path() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let all: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        let finite: Vec<bf16> = all.iter().copied().filter(|x| x.is_finite()).collect();
        let squares: Vec<bf16> = (0..100_000)
            .map(|_| bf16::from_f32(((rng.next() >> 40) as f32 / (1 << 24) as f32 - 0.5).powi(2)))
            .collect();
        for (name, v) in [("every bit pattern", all), ("every finite one", finite), ("squares", squares)] {
            for len in [v.len(), 1, 15, BLOCK - 1, BLOCK + 1] {
                let v = &v[..len.min(v.len())];
                let mut general = FloatSum::default();
                crate::summary::float::add_floats(&mut general, v);
                for tier in Supported::all() {
                    let mut acc = FloatSum::default();
                    acc.count += v.len() as u64;
                    add(tier, &mut acc, v);
                    assert_eq!(acc.finish(), general.finish(), "{name}, {len} values, {}", tier.tier().name());
                }
            }
        }
    }

    #[test]
    fn chunking_and_merging_do_not_change_anything() {
        let v: Vec<f32> = (0..10_000u32)
            .map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761) & 0xbfff_ffff | (i & 1) << 31))
            .collect();
        let mut whole = Accumulator::new(DType::F32);
        whole.add(&v);
        for parts in [2, 3, 7, 64] {
            let mut merged = Accumulator::new(DType::F32);
            for c in v.chunks(v.len().div_ceil(parts)).rev() {
                let mut a = Accumulator::new(DType::F32);
                a.add(c);
                merged.merge(&a);
            }
            assert_eq!(merged.finish(), whole.finish(), "{parts} parts");
        }
    }
}
