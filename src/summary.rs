//! `--stats`: a summary of the result computed from its chunks as they stream past, never from a
//! second read (`docs/report.md`, "stats"). Counts by class, min and max, the exact sum and a
//! histogram by binade.
//!
//! The sum is exact, so the summary does not depend on how the output was cut into chunks, on
//! the threads or on the backend: every finite float is `m * 2^e` with an integer `m` below 2^53,
//! and `m` is added, with its sign, to an integer bucket for its exponent (`i128`: room for 2^74
//! additions). Buckets add exactly, in any order; the total is rounded to float64 once, at the
//! end (round to nearest even, as Python's `math.fsum`). float32, the common case, first sums
//! windows of binades exactly in float64 lanes (module `windowed`), so it needs no scatter per element
//! (`docs/benchmarks.md`, "--stats"). Integers sum into 192 bits. Min and max
//! order -0.0 before +0.0, so they too are the same whatever the order of the chunks.

use crate::dtype::DType;
use half::f16;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// Float64's biased exponents: 0 (zero and subnormals) to 2047 (infinities and NaN).
const EXPONENTS: usize = 2048;

/// A partial summary of some of the output's elements; `merge` adds two.
#[derive(Debug, Clone)]
pub struct Accumulator {
    float: bool,
    count: u64,
    nan: u64,
    posinf: u64,
    neginf: u64,
    zero: u64,
    /// Floats: how many of the zeros are -0.0 (for the signs of min and max).
    negative_zero: u64,
    subnormal: u64,
    /// Elements per binade: float64's biased exponent for floats, `exp + 1` for integers (so 0
    /// is unused: zeros are counted apart).
    binades: Vec<u64>,
    /// Floats: the signed sum of the mantissas with each float64 biased exponent (subnormals
    /// with exponent 1, where their mantissas' unit is the same).
    buckets: Vec<i128>,
    /// Integers: the sum is `high * 2^128 + low`.
    low: i128,
    high: i64,
    /// Floats: the extremes as float64 (exact for every float dtype).
    fmin: f64,
    fmax: f64,
    /// Integers: the extremes.
    imin: i128,
    imax: i128,
    /// float32: the lowest biased exponent of the first window of the next block, guessed from
    /// the last one (0: no guess). Only a guess: a block it does not fit is summed again.
    window_hint: u32,
}

impl Accumulator {
    /// An empty summary for elements of `dtype`.
    pub fn new(dtype: DType) -> Accumulator {
        let float = matches!(dtype, DType::F16 | DType::F32 | DType::F64);
        Accumulator {
            float,
            count: 0,
            nan: 0,
            posinf: 0,
            neginf: 0,
            zero: 0,
            negative_zero: 0,
            subnormal: 0,
            binades: vec![0; if float { EXPONENTS } else { 66 }],
            buckets: if float { vec![0; EXPONENTS] } else { Vec::new() },
            low: 0,
            high: 0,
            fmin: f64::INFINITY,
            fmax: f64::NEG_INFINITY,
            imin: i128::MAX,
            imax: i128::MIN,
            window_hint: 0,
        }
    }

    /// Adds `values` (elements of the dtype the accumulator was made for).
    pub fn add<T: Summarise>(&mut self, values: &[T]) {
        T::add_all(self, values);
    }

    /// Adds little-endian elements of `dtype` (as the output file holds them), whatever their
    /// alignment.
    pub(crate) fn add_le_bytes(&mut self, dtype: DType, bytes: &[u8]) {
        crate::with_dtype!(dtype, T => {
            match bytemuck::try_cast_slice::<u8, T>(bytes) {
                Ok(values) if cfg!(target_endian = "little") => self.add(values),
                _ => {
                    let mut values: Vec<T> = bytemuck::pod_collect_to_vec(bytes);
                    crate::dtype::to_little_endian(&mut values);
                    self.add(&values);
                }
            }
        });
    }

    /// Adds another partial summary of the same dtype.
    pub(crate) fn merge(&mut self, o: &Accumulator) {
        for (a, b) in [
            (&mut self.count, o.count),
            (&mut self.nan, o.nan),
            (&mut self.posinf, o.posinf),
            (&mut self.neginf, o.neginf),
            (&mut self.zero, o.zero),
            (&mut self.negative_zero, o.negative_zero),
            (&mut self.subnormal, o.subnormal),
        ] {
            *a += b;
        }
        self.binades.iter_mut().zip(&o.binades).for_each(|(a, b)| *a += b);
        self.buckets.iter_mut().zip(&o.buckets).for_each(|(a, b)| *a += b);
        self.add_integer(o.low);
        self.high += o.high;
        self.fmin = self.fmin.min(o.fmin);
        self.fmax = self.fmax.max(o.fmax);
        self.imin = self.imin.min(o.imin);
        self.imax = self.imax.max(o.imax);
    }

    #[inline(always)]
    fn add_integer(&mut self, x: i128) {
        let (sum, carried) = self.low.overflowing_add(x);
        self.low = sum;
        if carried {
            self.high += if x < 0 { -1 } else { 1 };
        }
    }

    /// The finished summary.
    pub fn finish(&self) -> Summary {
        let finite = self.count - self.nan - self.posinf - self.neginf;
        let (sum, mean) = if self.float {
            let sum = exact_float_sum(&self.buckets);
            (sum.map(Number::Float), sum.filter(|_| finite > 0).map(|s| s / finite as f64))
        } else {
            let sum = (self.high, self.low);
            (Some(Number::Int(sum)), (finite > 0).then(|| int_to_f64(sum) / finite as f64))
        };
        let (min, max) = match (finite, self.float) {
            (0, _) => (None, None),
            // Zeros compare equal; -0.0 orders before +0.0, whichever was met first.
            (_, true) => {
                let min = if self.fmin == 0.0 && self.negative_zero > 0 { -0.0 } else { self.fmin + 0.0 };
                let max = if self.fmax == 0.0 && self.zero > self.negative_zero { 0.0 } else { self.fmax };
                (Some(Number::Float(min)), Some(Number::Float(max)))
            }
            (_, false) => (Some(Number::Int((0, self.imin))), Some(Number::Int((0, self.imax)))),
        };
        let offset = if self.float { 1023 } else { 1 };
        let binades =
            (self.binades.iter().enumerate()).filter(|(_, &n)| n > 0).map(|(i, &n)| (i as i64 - offset, n)).collect();
        Summary {
            count: self.count,
            finite,
            nan: self.nan,
            posinf: self.posinf,
            neginf: self.neginf,
            min,
            max,
            sum,
            mean,
            zero: self.zero,
            subnormal: self.subnormal,
            binades,
        }
    }
}

/// Element types the summary takes.
pub trait Summarise: Copy {
    /// Adds `values` to `acc`.
    fn add_all(acc: &mut Accumulator, values: &[Self]);
}

macro_rules! summarise_ints {
    ($($t:ty),*) => {$(
        impl Summarise for $t {
            /// Blocks of 2^16 elements sum in an `i128` without overflow checks (at most 2^80).
            fn add_all(acc: &mut Accumulator, values: &[Self]) {
                acc.count += values.len() as u64;
                for block in values.chunks(1 << 16) {
                    let (mut sum, mut mn, mut mx) = (0i128, acc.imin, acc.imax);
                    for &x in block {
                        let x = x as i128;
                        sum += x;
                        mn = mn.min(x);
                        mx = mx.max(x);
                        match x.unsigned_abs() {
                            0 => acc.zero += 1,
                            a => acc.binades[(127 - a.leading_zeros()) as usize + 1] += 1,
                        }
                    }
                    (acc.imin, acc.imax) = (mn, mx);
                    acc.add_integer(sum);
                }
            }
        }
    )*};
}
summarise_ints!(i8, i16, i32, i64, u8, u16, u32, u64);

/// A float dtype's bit layout.
trait FloatBits: Copy {
    /// Stored mantissa bits and exponent bits.
    const MANT: u32;
    const EXP: u32;
    fn bits(self) -> u64;
    fn from_bits(b: u64) -> Self;
    fn value(self) -> f64;
}

impl FloatBits for f64 {
    const MANT: u32 = 52;
    const EXP: u32 = 11;
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn from_bits(b: u64) -> Self {
        f64::from_bits(b)
    }
    fn value(self) -> f64 {
        self
    }
}

impl FloatBits for f32 {
    const MANT: u32 = 23;
    const EXP: u32 = 8;
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn from_bits(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl FloatBits for f16 {
    const MANT: u32 = 10;
    const EXP: u32 = 5;
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn from_bits(b: u64) -> Self {
        f16::from_bits(b as u16)
    }
    fn value(self) -> f64 {
        self.to_f64()
    }
}

macro_rules! summarise_floats {
    ($($t:ty),*) => {$(
        impl Summarise for $t {
            fn add_all(acc: &mut Accumulator, values: &[Self]) {
                add_floats(acc, values);
            }
        }
    )*};
}
summarise_floats!(f16, f64);

impl Summarise for f32 {
    fn add_all(acc: &mut Accumulator, values: &[Self]) {
        acc.count += values.len() as u64;
        windowed::add(acc, values);
    }
}

/// Independent copies of the scratch buckets: consecutive elements usually share an exponent,
/// and one copy would make each addition wait for the previous one to the same bucket.
const LANES: usize = 4;

/// Mantissas up to this many bits share one scratch word with the count: `m * 2^20 + 1`.
const PACKED_MANT: u32 = 23;
const COUNT_BITS: u32 = 20;

/// The float path: float16 and float32 in blocks through packed scratch buckets
/// ([`add_packed_block`]), float64 one element at a time straight into the `i128` buckets
/// ([`add_wide`]).
fn add_floats<T: FloatBits>(acc: &mut Accumulator, values: &[T]) {
    acc.count += values.len() as u64;
    if T::MANT <= PACKED_MANT {
        values.chunks(1 << 16).for_each(|block| add_packed_block(acc, block));
    } else {
        values.iter().for_each(|&x| add_wide(acc, x));
    }
}

/// The float64 bucket (biased float64 exponent, the unit of its mantissas) of `T`'s biased
/// exponent `e`: the unit of `T`'s bucket e is 2^(max(e, 1) - bias - MANT) (subnormals share
/// exponent 1's unit), float64's bucket k has 2^(k - 1075).
fn bucket<T: FloatBits>(e: usize) -> usize {
    let bias = (1i64 << (T::EXP - 1)) - 1;
    (e.max(1) as i64 - bias - i64::from(T::MANT) + 1075) as usize
}

/// The `binades` slot (float64's biased exponent) of `T`'s biased exponent `e` (normal values).
fn binade<T: FloatBits>(e: usize) -> usize {
    let bias = (1i64 << (T::EXP - 1)) - 1;
    (e as i64 - bias + 1023) as usize
}

/// Per-block counts of the packed path, and the extremes as order keys (see [`order_key`]).
struct Tally {
    zero: u64,
    negative_zero: u64,
    nan: u64,
    neginf: u64,
    min_key: i64,
    max_key: i64,
}

/// A float's bits as an integer in the same order as the values (-0.0 just below +0.0).
#[inline(always)]
fn order_key(magnitude: u64, negative: i64) -> i64 {
    magnitude as i64 ^ -negative
}

/// One element of the packed path: its scratch bucket and the tally.
#[inline(always)]
fn tally_one<T: FloatBits>(lane: &mut [i64; 256], t: &mut Tally, b: u64) {
    let special = (1u64 << T::EXP) - 1;
    let sign_shift = T::MANT + T::EXP;
    let e = ((b >> T::MANT) & special) as u8;
    let mant = b & ((1u64 << T::MANT) - 1);
    let neg = (b >> sign_shift) as i64;
    let m = (mant | u64::from(e != 0) << T::MANT) as i64;
    lane[usize::from(e)] += (((m ^ -neg) + neg) << COUNT_BITS) + 1;
    let is_special = u64::from(e) == special;
    let magnitude = b & !(1 << sign_shift);
    t.zero += u64::from(magnitude == 0);
    t.negative_zero += u64::from(b == 1 << sign_shift);
    t.nan += u64::from(is_special & (mant != 0));
    t.neginf += u64::from(is_special & (mant == 0) & (neg != 0));
    let key = order_key(magnitude, neg);
    t.min_key = t.min_key.min(if is_special { i64::MAX } else { key });
    t.max_key = t.max_key.max(if is_special { i64::MIN } else { key });
}

/// float16 and float32, a block of at most 2^16 elements: one addition per element into the
/// scratch bucket of its exponent, the mantissa (with its sign) in the high bits and a count in
/// the low 20 (2^16 mantissas of 24 bits stay below 2^40). NaN and infinities land in the top
/// bucket and are told apart by branch-free counts; the extremes are tracked as integer order
/// keys. Four copies of the buckets, used in turn, keep consecutive additions independent. The
/// block's buckets then go into the float64-exponent `buckets` and the `binades`.
fn add_packed_block<T: FloatBits>(acc: &mut Accumulator, block: &[T]) {
    let exps = 1usize << T::EXP;
    let mut lanes = [[0i64; 256]; LANES];
    let mut t = Tally { zero: 0, negative_zero: 0, nan: 0, neginf: 0, min_key: i64::MAX, max_key: i64::MIN };
    let mut quads = block.chunks_exact(LANES);
    for quad in &mut quads {
        for (lane, &x) in lanes.iter_mut().zip(quad) {
            tally_one::<T>(lane, &mut t, x.bits());
        }
    }
    for &x in quads.remainder() {
        tally_one::<T>(&mut lanes[0], &mut t, x.bits());
    }
    for e in 0..exps {
        let (mut sum, mut n) = (0i64, 0u64);
        for lane in &lanes {
            let count = lane[e] & ((1 << COUNT_BITS) - 1);
            n += count as u64;
            sum += (lane[e] - count) >> COUNT_BITS;
        }
        if e == exps - 1 {
            // NaN and infinities: counted, never summed.
            acc.posinf += n - t.nan - t.neginf;
            continue;
        }
        if e == 0 {
            acc.subnormal += n - t.zero;
        } else {
            acc.binades[binade::<T>(e)] += n;
        }
        acc.buckets[bucket::<T>(e)] += i128::from(sum);
    }
    acc.nan += t.nan;
    acc.neginf += t.neginf;
    acc.zero += t.zero;
    acc.negative_zero += t.negative_zero;
    let sign = 1u64 << (T::MANT + T::EXP);
    let value = |key: i64| T::from_bits(if key < 0 { !key as u64 | sign } else { key as u64 }).value();
    if t.min_key != i64::MAX {
        acc.fmin = acc.fmin.min(value(t.min_key));
        acc.fmax = acc.fmax.max(value(t.max_key));
    }
}

/// float32 without a scatter per sum: windows of binades summed exactly in float64.
///
/// A block of [`BLOCK`] values is read in two passes:
/// 1. the census: the histogram by biased exponent and the extremes as order keys. A block
///    holding NaN or an infinity then goes to the general path ([`add_packed_block`]);
/// 2. the sums, two windows at a time: a window is [`WINDOW`] binades below the largest binade
///    not yet summed (the histogram says which binades hold values). Its values are summed in
///    float64 lanes, which is exact for them: every one is a multiple of the window's lowest
///    unit, and their sum stays below 2^53 of those units. Typical data (a block within 34
///    binades) need one such pass.
///
/// With AVX2 both passes are written with intrinsics, and the census's scalar histogram
/// increments run beside its vector work. Better still, the two windows are guessed from the
/// previous block (its largest binade, with one binade of room) and summed in the census's own
/// pass; the histogram then says whether they held every value. A few values below them (at
/// most `STRAGGLERS` per block, as the smallest squared differences of normal data often are)
/// are found by a cheap scan and added one by one; a block with more, or with a value above
/// them, is summed again as above. Each window's float64 total goes into the exact buckets, so
/// the result is the same integer sum as the general path's, whatever the windows were. With
/// AVX-512 that guessed pass keeps its histogram in registers instead of memory
/// ([`Passes::counted`]), for the 40 binades around the windows; the values outside them are
/// few or the block is taken again the AVX2 way. The unit tests run every path the CPU has.
mod windowed {
    use super::{add_packed_block, binade, Accumulator};

    /// Values per block.
    pub(super) const BLOCK: usize = 1 << 13;
    /// Binades per window. A window's lowest unit is 2^(lo - 150) for its lowest biased exponent
    /// lo, its values are below 2^(lo + WINDOW - 127), and a block's sum is below 2^13 times
    /// that: 2^(WINDOW + 36) units, at most 2^53.
    pub(super) const WINDOW: u32 = 17;
    const _: () = assert!(WINDOW + 36 <= 53 && BLOCK == 1 << 13);

    /// The most values below the guessed windows that are added one by one (`add_below`); a
    /// block with more is summed again from its largest binade.
    const STRAGGLERS: u64 = 256;
    /// Lanes of the window sums.
    const LANES: usize = 16;
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
        fn counted(&self, _block: &[f32], _lo: u32) -> Option<Counted> {
            None
        }
    }

    /// Binades that [`Passes::counted`] counts: the two windows' and six above them.
    pub(super) const COUNTED: usize = 40;
    const _: () = assert!(COUNTED >= 2 * WINDOW as usize && COUNTED.is_multiple_of(8));

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

    pub(super) fn add(acc: &mut Accumulator, values: &[f32]) {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") {
            if is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX2 and AVX-512F.
                return unsafe { add_avx512(acc, values) };
            }
            // SAFETY: the CPU has AVX2.
            return unsafe { add_avx2(acc, values) };
        }
        add_portable(acc, values);
    }

    /// A way of adding float32 values.
    #[cfg(test)]
    pub(super) type Path = fn(&mut Accumulator, &[f32]);

    /// Every way of adding float32 values that this CPU can run, by name: the dispatched one
    /// and the others, so that the tests compare them all.
    #[cfg(test)]
    pub(super) fn paths() -> Vec<(&'static str, Path)> {
        let mut paths: Vec<(&'static str, Path)> = vec![("dispatched", add), ("portable", add_portable)];
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            paths.push(("avx2", |acc, v| unsafe { add_avx2(acc, v) }));
            if is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX2 and AVX-512F.
                paths.push(("avx512", |acc, v| unsafe { add_avx512(acc, v) }));
            }
        }
        for path in ["avx2", "avx512"] {
            if !paths.iter().any(|(name, _)| *name == path) {
                eprintln!("skipped: the {path} float32 summary, which this CPU cannot run");
            }
        }
        paths
    }

    /// [`add_block`] for any CPU.
    pub(super) fn add_portable(acc: &mut Accumulator, values: &[f32]) {
        values.chunks(BLOCK).for_each(|block| add_block(acc, block, &Portable));
    }

    /// [`add_block`] with the AVX2 passes.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn add_avx2(acc: &mut Accumulator, values: &[f32]) {
        // SAFETY: the caller checked.
        let passes = unsafe { x86::Avx2::new() };
        values.chunks(BLOCK).for_each(|block| add_block(acc, block, &passes));
    }

    /// [`add_block`] with the AVX2 passes and the AVX-512 [`Passes::counted`].
    ///
    /// # Safety
    /// The CPU must have AVX2 and AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f")]
    unsafe fn add_avx512(acc: &mut Accumulator, values: &[f32]) {
        // SAFETY: the caller checked.
        let passes = unsafe { x86::Avx512::new() };
        values.chunks(BLOCK).for_each(|block| add_block(acc, block, &passes));
    }

    /// The passes in plain Rust, which the compiler vectorises where it can.
    struct Portable;

    impl Passes for Portable {
        fn census(&self, block: &[f32], counts: &mut Counts) -> (i32, i32) {
            let (mut min_key, mut max_key) = (i32::MAX, i32::MIN);
            for &x in block {
                let key = order_key(x.to_bits());
                min_key = min_key.min(key);
                max_key = max_key.max(key);
            }
            histogram(block, counts);
            (min_key, max_key)
        }

        fn sums(&self, block: &[f32], b: [u32; 3]) -> (f64, f64) {
            let mut high = [0f64; LANES];
            let mut low = [0f64; LANES];
            let one = |high: &mut f64, low: &mut f64, x: f32| {
                let a = x.to_bits() & ABS;
                *high += if a < b[0] && a >= b[1] { f64::from(x) } else { 0.0 };
                *low += if a < b[1] && a >= b[2] { f64::from(x) } else { 0.0 };
            };
            let mut lanes = block.chunks_exact(LANES);
            for group in &mut lanes {
                for ((high, low), &x) in high.iter_mut().zip(&mut low).zip(group) {
                    one(high, low, x);
                }
            }
            lanes.remainder().iter().for_each(|&x| one(&mut high[0], &mut low[0], x));
            (high.iter().sum(), low.iter().sum())
        }
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

    #[inline(always)]
    fn add_block(acc: &mut Accumulator, block: &[f32], passes: &impl Passes) {
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
        finish(acc, &bins, zeros, (min_key, max_key));
    }

    /// A block that [`Passes::counted`] took with the windows guessed from `lo`. Returns false,
    /// having added nothing, where they do not fit it: it holds NaN or an infinity, a value
    /// above them or more than [`STRAGGLERS`] below them.
    fn add_counted(acc: &mut Accumulator, block: &[f32], lo: u32, c: Counted) -> bool {
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
        finish(acc, &bins, zeros, c.keys);
        true
    }

    /// The zeros and negative zeros of a block that holds `zsub` values of biased exponent 0.
    fn zeros(block: &[f32], zsub: u64) -> (u64, u64) {
        match zsub {
            0 => (0, 0),
            _ => (
                block.iter().filter(|x| x.to_bits() & ABS == 0).count() as u64,
                block.iter().filter(|x| x.to_bits() == !ABS).count() as u64,
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
    fn finish(acc: &mut Accumulator, bins: &[u64; 256], (zero, negative_zero): (u64, u64), keys: (i32, i32)) {
        acc.subnormal += bins[0] - zero;
        for (e, &n) in bins.iter().enumerate().take(255).skip(1) {
            if n > 0 {
                acc.binades[binade::<f32>(e)] += n;
            }
        }
        acc.zero += zero;
        acc.negative_zero += negative_zero;
        let value = |key: i32| f64::from(f32::from_bits(if key < 0 { !key as u32 | !ABS } else { key as u32 }));
        acc.fmin = acc.fmin.min(value(keys.0));
        acc.fmax = acc.fmax.max(value(keys.1));
    }

    /// The passes with AVX2 intrinsics.
    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use super::{histogram, order_key, windows_from, Counted, Counts, Passes, ABS, COPIES, COUNTED, WINDOW};
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
            let (b0, b1, b2) =
                (_mm512_set1_epi32(b[0] as i32), _mm512_set1_epi32(b[1] as i32), _mm512_set1_epi32(b[2] as i32));
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
    }

    /// Adds the values of `block` whose magnitude bits are non-zero and below `floor`, one by
    /// one, exactly; with `bins`, also counts those that are not subnormal there. The scan tests groups of [`LANES`] without a branch per value, so the
    /// compiler vectorises it; only a group that holds such a value is looked at again.
    fn add_below(acc: &mut Accumulator, block: &[f32], floor: u32, mut bins: Option<&mut [u64; 256]>) {
        // 0 < a < floor, as one unsigned comparison: a = 0 wraps to the top.
        let under = |x: &f32| (x.to_bits() & ABS).wrapping_sub(1) < floor.saturating_sub(1);
        let mut groups = block.chunks_exact(LANES);
        let mut one = |group: &[f32]| {
            for x in group.iter().filter(|x| under(x)) {
                if let Some((e, m)) = super::split::<f32>(acc, u64::from(x.to_bits())) {
                    acc.buckets[super::bucket::<f32>(e)] += i128::from(m);
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

    /// Adds a finite float64 exactly: its signed mantissa into its exponent's bucket.
    #[inline(always)]
    fn add_exact(acc: &mut Accumulator, x: f64) {
        if let Some((e, m)) = super::split::<f64>(acc, x.to_bits()) {
            acc.buckets[super::bucket::<f64>(e)] += i128::from(m);
        }
    }
}

/// float64, one element: 53-bit mantissas leave no room to pack, so the signed mantissa goes
/// straight into its `i128` bucket.
#[inline(always)]
fn add_wide<T: FloatBits>(acc: &mut Accumulator, x: T) {
    let b = x.bits();
    let Some((e, m)) = split::<T>(acc, b) else { return };
    acc.buckets[bucket::<T>(e)] += i128::from(m);
    if b << (64 - T::MANT - T::EXP) == 0 {
        acc.zero += 1;
        acc.negative_zero += u64::from(b != 0);
    } else if e == 0 {
        acc.subnormal += 1;
    } else {
        acc.binades[binade::<T>(e)] += 1;
    }
    let v = x.value();
    acc.fmin = acc.fmin.min(v);
    acc.fmax = acc.fmax.max(v);
}

/// A finite float's bits as (exponent, signed integer mantissa); NaN and infinities are
/// counted here instead (`None`).
#[inline(always)]
fn split<T: FloatBits>(acc: &mut Accumulator, b: u64) -> Option<(usize, i64)> {
    let special = (1u64 << T::EXP) - 1;
    let mant_mask = (1u64 << T::MANT) - 1;
    let e = (b >> T::MANT) & special;
    if e == special {
        match (b & mant_mask != 0, b >> (T::MANT + T::EXP) != 0) {
            (true, _) => acc.nan += 1,
            (false, false) => acc.posinf += 1,
            (false, true) => acc.neginf += 1,
        }
        return None;
    }
    let m = (b & mant_mask | u64::from(e != 0) << T::MANT) as i64;
    let s = -((b >> (T::MANT + T::EXP)) as i64);
    Some((e as usize, (m ^ s) - s))
}

/// The exact total `sum(buckets[k] * 2^(k - 1075))` as its sign and magnitude bits, bit k of
/// weight 2^(k - 1075): the same for any spread of the same total over the buckets.
fn exact_bits(buckets: &[i128]) -> (bool, Vec<u8>) {
    // Two's complement bits of the total, by carrying each bucket's value up: bit k is the
    // total's low bit at that weight, the rest moves on.
    let mut bits = Vec::with_capacity(buckets.len() + 140);
    let mut carry: i128 = 0;
    for &b in buckets {
        let v = carry + b;
        bits.push((v & 1) as u8);
        carry = v >> 1;
    }
    while carry != 0 && carry != -1 {
        bits.push((carry & 1) as u8);
        carry >>= 1;
    }
    let negative = carry == -1;
    if negative {
        // Magnitude of a negative two's complement number: invert and add one.
        let mut c = 1u8;
        for b in bits.iter_mut() {
            let v = (*b ^ 1) + c;
            *b = v & 1;
            c = v >> 1;
        }
    }
    (negative, bits)
}

/// `sum(buckets[k] * 2^(k - 1075))` correctly rounded to float64 (to nearest, ties to even);
/// `None` when it overflows float64.
fn exact_float_sum(buckets: &[i128]) -> Option<f64> {
    let (negative, bits) = exact_bits(buckets);
    let Some(top) = bits.iter().rposition(|&b| b == 1) else { return Some(if negative { -0.0 } else { 0.0 }) };
    // The result's unit in the last place: 53 significant bits, but never below float64's
    // smallest subnormal (index 1).
    let lo = top.saturating_sub(52).max(1);
    let mut q: u64 = (lo..=top).rev().fold(0, |q, k| (q << 1) | u64::from(bits[k]));
    let half = lo > 1 && bits[lo - 1] == 1;
    let sticky = lo > 2 && bits[1..lo - 1].contains(&1);
    let mut lo = lo;
    if half && (sticky || q & 1 == 1) {
        q += 1;
        if q == 1 << 53 {
            q >>= 1;
            lo += 1;
        }
    }
    let exp = lo as i64 - 1075;
    // q * 2^exp >= 2^1024: beyond float64.
    if i64::from(64 - q.leading_zeros()) + exp > 1024 {
        return None;
    }
    let v = q as f64 * pow2(exp);
    Some(if negative { -v } else { v })
}

/// 2^e exactly, for e from -1074 to 1023.
fn pow2(e: i64) -> f64 {
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

/// `high * 2^128 + low` rounded to float64 (for the mean).
fn int_to_f64((high, low): (i64, i128)) -> f64 {
    high as f64 * 2f64.powi(128) + low as f64
}

/// A number in the summary: a float64, or an exact integer `high * 2^128 + low`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Float(f64),
    Int((i64, i128)),
}

impl Number {
    /// Decimal digits of `high * 2^128 + low` (`low` signed).
    fn int_digits((high, low): (i64, i128)) -> String {
        if high == 0 {
            return low.to_string();
        }
        // As 192-bit two's complement (h, l), then |value| in base 10^18 limbs.
        let (mut h, mut l) = (i128::from(high) - i128::from(low < 0), low as u128);
        let negative = h < 0;
        if negative {
            let (nl, borrow) = 0u128.overflowing_sub(l);
            l = nl;
            h = -h - i128::from(borrow);
        }
        let mut words = [h as u128 as u64, (l >> 64) as u64, l as u64];
        let mut parts = Vec::new();
        while words.iter().any(|&w| w != 0) {
            let mut rem: u128 = 0;
            for w in words.iter_mut() {
                let cur = (rem << 64) | u128::from(*w);
                *w = (cur / 1_000_000_000_000_000_000) as u64;
                rem = cur % 1_000_000_000_000_000_000;
            }
            parts.push(rem as u64);
        }
        let mut s = String::from(if negative { "-" } else { "" });
        for (i, p) in parts.iter().rev().enumerate() {
            s.push_str(&if i == 0 { p.to_string() } else { format!("{p:018}") });
        }
        s
    }
}

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Number::Float(x) => s.serialize_f64(x),
            Number::Int((0, low)) => s.serialize_i128(low),
            Number::Int(v) => {
                let raw = serde_json::value::RawValue::from_string(Number::int_digits(v))
                    .map_err(serde::ser::Error::custom)?;
                raw.serialize(s)
            }
        }
    }
}

/// The summary as the report holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub(crate) count: u64,
    pub(crate) finite: u64,
    pub(crate) nan: u64,
    pub(crate) posinf: u64,
    pub(crate) neginf: u64,
    pub(crate) min: Option<Number>,
    pub(crate) max: Option<Number>,
    pub(crate) sum: Option<Number>,
    pub(crate) mean: Option<f64>,
    pub(crate) zero: u64,
    pub(crate) subnormal: u64,
    /// `(exp, count)` ascending, only binades with a count.
    pub(crate) binades: Vec<(i64, u64)>,
}

impl Serialize for Summary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Binade {
            exp: i64,
            count: u64,
        }
        #[derive(serde::Serialize)]
        struct Histogram {
            zero: u64,
            subnormal: u64,
            binades: Vec<Binade>,
        }
        let mut m = s.serialize_map(Some(11))?;
        m.serialize_entry("count", &self.count)?;
        m.serialize_entry("finite", &self.finite)?;
        m.serialize_entry("nan", &self.nan)?;
        m.serialize_entry("posinf", &self.posinf)?;
        m.serialize_entry("neginf", &self.neginf)?;
        m.serialize_entry("min", &self.min)?;
        m.serialize_entry("max", &self.max)?;
        m.serialize_entry("sum", &self.sum)?;
        m.serialize_entry("mean", &self.mean)?;
        let binades = self.binades.iter().map(|&(exp, count)| Binade { exp, count }).collect();
        m.serialize_entry("histogram", &Histogram { zero: self.zero, subnormal: self.subnormal, binades })?;
        m.end()
    }
}

impl Summary {
    /// The short summary for standard error: counts, extremes, sum and mean, and the histogram
    /// as a bar chart, one line per binade.
    pub(crate) fn human(&self, op: crate::op::Op, dtype: &str) -> String {
        let num = |n: &Option<Number>| match n {
            None => "-".to_string(),
            Some(Number::Float(x)) => format!("{x}"),
            Some(Number::Int(v)) => Number::int_digits(*v),
        };
        let mean = self.mean.map_or("-".into(), |m| format!("{m}"));
        let what = if op == crate::op::Op::SqDiff { " (mean squared error)" } else { "" };
        let mut s = format!(
            "tensorop: stats of {} ({dtype}, {} elements): {} finite, {} NaN, {} +inf, {} -inf\n  min {}  max {}  \
             sum {}  mean {mean}{what}\n",
            op.name(),
            self.count,
            self.finite,
            self.nan,
            self.posinf,
            self.neginf,
            num(&self.min),
            num(&self.max),
            num(&self.sum),
        );
        let mut rows: Vec<(String, u64)> = Vec::new();
        if self.zero > 0 {
            rows.push(("zero".into(), self.zero));
        }
        if self.subnormal > 0 {
            rows.push(("subnormal".into(), self.subnormal));
        }
        rows.extend(self.binades.iter().map(|&(e, n)| (format!("2^{e}"), n)));
        let top = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
        if !rows.is_empty() {
            s.push_str("  |x| by binade, [2^e, 2^(e+1)):\n");
        }
        for (label, n) in rows {
            let bar = ((n as f64 / top as f64) * 40.0).ceil() as usize;
            s.push_str(&format!("  {label:>10} {n:>12} {}\n", "#".repeat(bar)));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fsum_f64(values: &[f64]) -> Option<f64> {
        let mut acc = Accumulator::new(DType::F64);
        acc.add(values);
        acc.finish().sum.map(|n| match n {
            Number::Float(x) => x,
            Number::Int(_) => panic!("float sum expected"),
        })
    }

    #[test]
    fn float_sums_are_exact_then_rounded_once() {
        // A naive running sum loses the small terms next to the large ones.
        let v: Vec<f64> = [1e30, 1.0, -1e30, 3.0].repeat(1000);
        assert_eq!(fsum_f64(&v), Some(4000.0));
        assert_eq!(fsum_f64(&[0.1, 0.2, 0.3]), Some(0.6), "math.fsum([0.1, 0.2, 0.3])");
        assert_eq!(fsum_f64(&[1.0, 1e100, 1.0, -1e100]), Some(2.0));
        // Ties to even: 2^53 + 1 is halfway between 2^53 and 2^53 + 2.
        let big = 2f64.powi(53);
        assert_eq!(fsum_f64(&[big, 1.0]), Some(big));
        assert_eq!(fsum_f64(&[big, 1.0, 2f64.powi(-60)]), Some(big + 2.0), "sticky bit rounds up");
        assert_eq!(fsum_f64(&[big + 2.0, 1.0]), Some(big + 4.0), "tie to even upwards");
        // Subnormals and signed zeros.
        let tiny = f64::from_bits(1);
        assert_eq!(fsum_f64(&[tiny, tiny, -tiny]), Some(tiny));
        assert_eq!(fsum_f64(&[f64::MIN_POSITIVE, -tiny]).map(f64::to_bits), Some(f64::MIN_POSITIVE.to_bits() - 1));
        assert_eq!(fsum_f64(&[]).map(f64::to_bits), Some(0));
        assert_eq!(fsum_f64(&[-0.0]).map(f64::to_bits), Some(0), "the exact sum of -0.0 is 0");
        // Overflow of float64 is None; cancellation back into range is not.
        assert_eq!(fsum_f64(&[f64::MAX, f64::MAX]), None);
        assert_eq!(fsum_f64(&[f64::MAX, f64::MAX, -f64::MAX]), Some(f64::MAX));
        assert_eq!(fsum_f64(&[-f64::MAX, -f64::MAX]), None);
        // Rounding up to 2^1024 overflows too.
        let ulp = 2f64.powi(970);
        assert_eq!(fsum_f64(&[f64::MAX, ulp]), None);
        assert_eq!(fsum_f64(&[f64::MAX, ulp / 2.0 * 0.99]), Some(f64::MAX));
    }

    /// Float32 through the general path (packed blocks), the oracle of the windowed one.
    fn packed_f32(values: &[f32]) -> Accumulator {
        let mut acc = Accumulator::new(DType::F32);
        acc.count += values.len() as u64;
        values.chunks(1 << 16).for_each(|b| add_packed_block(&mut acc, b));
        acc
    }

    /// The exact total of an accumulator: sign and magnitude bits without leading zeros.
    fn exact(acc: &Accumulator) -> (bool, Vec<u8>) {
        let (negative, mut bits) = exact_bits(&acc.buckets);
        while bits.last() == Some(&0) {
            bits.pop();
        }
        (negative, bits)
    }

    #[test]
    fn windowed_float32_matches_the_general_path() {
        let state = std::cell::Cell::new(0x2545_f491_4f6c_dd1du64);
        let next = || {
            let mut s = state.get();
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            state.set(s);
            s
        };
        let n = 3 * windowed::BLOCK + 13;
        // Values made from their position in a block and a random word.
        let per_block = |bits: fn(usize, u32) -> u32| -> Vec<f32> {
            (0..n).map(|i| f32::from_bits(bits(i % windowed::BLOCK, next() as u32))).collect()
        };
        let finite = |b: u32| if b & 0x7f80_0000 == 0x7f80_0000 { b & 0xff7f_ffff } else { b };
        let uniform = |r: u64| (r >> 40) as f32 / (1u64 << 24) as f32;
        // Blocks whose largest binade is 120, with `k` values below the windows that the
        // previous block's guess gives.
        let below_windows = |k: usize| -> Vec<f32> {
            (0..n)
                .map(|i| {
                    let (i, r) = (i % windowed::BLOCK, (i as u32).wrapping_mul(2_654_435_761));
                    f32::from_bits(match i {
                        0 => 120 << 23,
                        _ if i <= k => (60 + r % 27) << 23 | r & 0x807f_ffff,
                        _ => (100 + r % 20) << 23 | r & 0x807f_ffff,
                    })
                })
                .collect()
        };
        let mut cases: Vec<(&str, Vec<f32>)> = vec![
            ("random finite bits", (0..n).map(|_| f32::from_bits(finite(next() as u32))).collect()),
            ("squares", (0..n).map(|_| (uniform(next()) - uniform(next())).powi(2)).collect()),
            (
                "cancellation",
                (0..n)
                    .map(|i| {
                        let x = uniform(next()) * 1e6;
                        if i % 2 == 0 {
                            x
                        } else {
                            -f32::from_bits(x.to_bits() ^ (next() as u32 & 3))
                        }
                    })
                    .collect(),
            ),
            ("subnormals and zeros", (0..n).map(|_| f32::from_bits(next() as u32 & 0x8080_0fff)).collect()),
            ("naive float64 is wrong", [1e30f32, 1.0, -1e30].repeat(n / 3)),
            ("largest", vec![f32::MAX; n]),
            ("largest of both signs", (0..n).map(|i| if i % 3 == 0 { -f32::MAX } else { f32::MAX }).collect()),
            (
                "powers of two",
                (0..n).map(|i| f32::from_bits(((i as u32 * 7) % 254 + 1) << 23 | (i as u32 & 1) << 31)).collect(),
            ),
            (
                "window edges",
                (0..n)
                    .map(|i| f32::from_bits(((254 - (i as u32 % 40)) << 23) | (next() as u32 & 0x807f_ffff)))
                    .collect(),
            ),
            // Largest exponent 18: the window takes the subnormals' unit, and 2^13 values of
            // 2^41 units or more add up to 2^53 of them; one odd subnormal per block.
            ("widest window", per_block(|k, r| if k == 0 { r & 0x7f_ffff | 1 } else { 18 << 23 | r & 0x7f_ffff })),
            // The second window at its widest: the first holds one value of exponent 100, the
            // second 2^13 - 2 positive values of exponent 83, whose sum passes 2^53 units of
            // the binade below the window (66), and one odd value at its lowest binade, 67.
            (
                "widest second window",
                per_block(|k, r| match k {
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
                per_block(|k, r| match k {
                    0 => 100 << 23 | r & 0x7f_ffff,
                    1 => 66 << 23 | 0x7f_ffff,
                    _ => 83 << 23 | r & 0x7f_ffff,
                }),
            ),
            // A block whose smallest value lies just below the second window: one more.
            (
                "third window",
                (0..n)
                    .map(|i| {
                        let r = next() as u32 & 0x807f_ffff;
                        f32::from_bits(match i % 101 {
                            0 => 100 << 23 | r,
                            1 => 66 << 23 | r | 1,
                            _ => (67 + r % 34) << 23 | r,
                        })
                    })
                    .collect(),
            ),
            // Each block's largest binade two above the last one's: just out of reach of the
            // windows guessed from the last block, which must be summed again.
            (
                "rising blocks",
                (0..n)
                    .map(|i| {
                        let (r, top) = (next() as u32, 100 + 2 * (i / windowed::BLOCK) as u32);
                        let e = if i % windowed::BLOCK == 0 { top } else { top - r % 30 };
                        f32::from_bits(e << 23 | r & 0x807f_ffff)
                    })
                    .collect(),
            ),
            // A few values below the windows guessed from the last block (88 to 121), added
            // one by one: the largest just below them, a subnormal and a negative one; the
            // smallest value in them and a zero are not among them.
            (
                "a few below the windows",
                per_block(|k, r| match k {
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
                per_block(|k, r| match k {
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
                per_block(|k, r| match k {
                    300 => 120 << 23,
                    k if k < 256 => 110 << 23 | r & 0x807f_ffff,
                    _ => (100 + r % 20) << 23 | r & 0x807f_ffff,
                }),
            ),
            ("zeros", vec![0.0; n]),
            ("negative zeros", vec![-0.0; n]),
        ];
        let mut special = cases[1].1.clone();
        special[5] = f32::NAN;
        special[windowed::BLOCK + 7] = f32::NEG_INFINITY;
        special[2 * windowed::BLOCK + 1] = f32::INFINITY;
        cases.push(("NaN and infinities in some blocks", special));
        for (name, v) in &cases {
            for len in [v.len(), 1, 15, 17, windowed::BLOCK - 1, windowed::BLOCK + 1] {
                let v = &v[..len.min(v.len())];
                let slow = packed_f32(v);
                for (path, add) in windowed::paths() {
                    let mut acc = Accumulator::new(DType::F32);
                    acc.count += v.len() as u64;
                    add(&mut acc, v);
                    assert_eq!(acc.finish(), slow.finish(), "{name}, {len} values, {path}");
                    assert_eq!(exact(&acc), exact(&slow), "{name}, {len} values, {path}: the exact sums differ");
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

    #[test]
    fn classes_extremes_and_histogram() {
        let v =
            [f16::from_f32(0.0), f16::from_f32(-0.0), f16::from_bits(1), f16::INFINITY, f16::NAN, f16::from_f32(3.0)];
        let mut a = Accumulator::new(DType::F16);
        a.add(&v);
        let s = a.finish();
        assert_eq!((s.count, s.finite, s.nan, s.posinf, s.neginf, s.zero, s.subnormal), (6, 4, 1, 1, 0, 2, 1));
        assert_eq!(s.min.map(|n| matches!(n, Number::Float(x) if x.to_bits() == (-0.0f64).to_bits())), Some(true));
        assert_eq!(s.max, Some(Number::Float(3.0)));
        assert_eq!(s.binades, [(1, 1)], "3.0 is in [2, 4); the float16 subnormal is not a binade");
        let mut i = Accumulator::new(DType::I64);
        i.add(&[i64::MIN, -1, 0, 5, i64::MAX]);
        let s = i.finish();
        assert_eq!(s.sum, Some(Number::Int((0, 3))));
        assert_eq!(
            (s.min, s.max),
            (Some(Number::Int((0, i64::MIN as i128))), Some(Number::Int((0, i64::MAX as i128))))
        );
        assert_eq!(s.binades, [(0, 1), (2, 1), (62, 1), (63, 1)]);
        assert_eq!(s.mean, Some(0.6));
    }

    #[test]
    fn integer_sums_of_any_size() {
        let digits = |a: &Accumulator| match a.finish().sum {
            Some(Number::Int(v)) => Number::int_digits(v),
            _ => panic!("integer sum expected"),
        };
        // Partial sums merged by doubling, up to 2^63 elements (the most a count can reach
        // without overflowing u64): (2^64 - 1) * 2^63 and -2^63 * 2^63, exact.
        let mut a = Accumulator::new(DType::U64);
        a.add(&vec![u64::MAX; 1 << 16]);
        let mut n = Accumulator::new(DType::I64);
        n.add(&vec![i64::MIN; 1 << 16]);
        for _ in 0..47 {
            let b = a.clone();
            a.merge(&b);
            let m = n.clone();
            n.merge(&m);
        }
        assert_eq!(a.count, 1 << 63);
        assert_eq!(digits(&a), "170141183460469231722463931679029329920");
        let json = serde_json::to_string(&a.finish().sum).expect("json");
        assert_eq!(json, "170141183460469231722463931679029329920");
        assert_eq!(digits(&n), "-85070591730234615865843651857942052864", "-2^126");
        // Past i128 either way: the carry into the high word, from a low word at its limits.
        let mut a = Accumulator::new(DType::U64);
        a.low = i128::MAX - 1;
        a.add(&[u64::MAX, u64::MAX]);
        assert_eq!(digits(&a), "170141183460469231768580791863303208956", "2^127 - 2 + 2 (2^64 - 1)");
        let mut n = Accumulator::new(DType::I64);
        n.low = i128::MIN + 1;
        n.add(&[i64::MIN, i64::MIN]);
        assert_eq!(digits(&n), "-170141183460469231750134047789593657343", "-2^127 + 1 - 2^64");
        let b = n.clone();
        n.merge(&b);
        assert_eq!(digits(&n), "-340282366920938463500268095579187314686", "twice that");
    }
}
