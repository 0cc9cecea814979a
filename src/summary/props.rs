//! Property tests of the summary's CPU tiers: on inputs mixing every kind of value (any bits,
//! NaN of any payload and sign, signed zeros, infinities, subnormals, the largest finite values,
//! powers of two, runs of one value, values spread over a few binades as squared differences
//! are, and for integers their extremes), of any length from none to a few blocks and at
//! unaligned starts, each tier the CPU has gives the portable path's summary bit for bit,
//! whole and cut into chunks at random. Beside them: sums at float64's rounding ties, and
//! counts far past what a 64-bit lane could hold without its per-block flush.
//!
//! `PROPTEST_CASES=N` changes the number of cases; a failure prints its recipe.

use super::float::{add_floats, FloatSum};
use super::int::{Int, IntSum};
use super::{float16, float32, float64, Summary};
use crate::arch::Supported;
use half::{bf16, f16};
use proptest::prelude::*;

/// Kinds of values a recipe mixes.
const KINDS: usize = 8;

/// An input, made from a seed: its length, where it starts in its buffer, the weight of each
/// kind of value, how often a value repeats the one before, and the chunks it is added in.
#[derive(Debug, Clone)]
struct Recipe {
    seed: u64,
    len: usize,
    offset: usize,
    weights: [u32; KINDS],
    repeat: u32,
    chunk: usize,
}

fn recipe(max_len: usize) -> impl Strategy<Value = Recipe> {
    (any::<u64>(), 0..max_len, 0..16usize, prop::array::uniform8(0..4u32), 0..4u32, 1..max_len)
        .prop_map(|(seed, len, offset, weights, repeat, chunk)| Recipe { seed, len, offset, weights, repeat, chunk })
}

/// A xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

impl Recipe {
    /// The input's values as `make(kind, random word)` (`kind` below [`KINDS`]), in a buffer
    /// from `offset`.
    fn values<T: Copy>(&self, make: impl Fn(usize, u64) -> T) -> (Vec<T>, usize) {
        let mut rng = Rng(self.seed | 1);
        let total: u32 = self.weights.iter().sum::<u32>().max(1);
        let mut out: Vec<T> = Vec::with_capacity(self.offset + self.len);
        for _ in 0..self.offset + self.len {
            let r = rng.next();
            if let (Some(&last), true) = (out.last(), (r >> 60) < u64::from(self.repeat) * 4) {
                out.push(last);
                continue;
            }
            let (mut pick, mut kind) = ((r % u64::from(total)) as u32, 0);
            for (k, &w) in self.weights.iter().enumerate() {
                if pick < w {
                    kind = k;
                    break;
                }
                pick -= w;
            }
            out.push(make(kind, rng.next()));
        }
        (out, self.offset)
    }
}

/// A float's bits of kind `kind` from the random word `r`, for a format of `exp` exponent and
/// `mant` mantissa bits.
fn float_bits(kind: usize, r: u64, exp: u32, mant: u32) -> u64 {
    let sign = (r >> 63) << (exp + mant);
    let m = r & ((1 << mant) - 1);
    let top = (1u64 << exp) - 1;
    match kind {
        0 => r & ((1 << (exp + mant + 1)) - 1),
        1 => sign | top << mant | m.max(1),
        2 => sign,
        3 => sign | top << mant,
        4 => sign | m.max(1),
        5 => sign | (((top - 1) << mant | ((1 << mant) - 1)) - (r % 4)),
        6 => sign | ((r >> 32) % (top - 1) + 1) << mant,
        // A few binades below a centre that moves with the seed's bits: squared differences.
        _ => {
            let centre = top / 2 + (r >> 40) % 8;
            let e = centre.saturating_sub((r >> 48) % 24).clamp(1, top - 1);
            sign | e << mant | m
        }
    }
}

/// A float summary of `values` with `add`, in chunks of `chunk` values.
fn float_summary<T>(values: &[T], chunk: usize, add: impl Fn(&mut FloatSum, &[T])) -> Summary {
    let mut acc = FloatSum::default();
    values.chunks(chunk.max(1)).for_each(|c| add(&mut acc, c));
    acc.finish()
}

/// Every tier, whole and in chunks, against the portable path whole.
fn floats_agree<T>(r: &Recipe, values: &[T], add: impl Fn(Supported, &mut FloatSum, &[T])) {
    let whole = |tier: Supported| float_summary(values, values.len(), |acc, v| add(tier, acc, v));
    let want = whole(Supported::all()[0]);
    for tier in Supported::all() {
        assert_eq!(whole(tier), want, "{r:?}: {:?} whole", tier.tier());
        let chunked = float_summary(values, r.chunk, |acc, v| add(tier, acc, v));
        assert_eq!(chunked, want, "{r:?}: {:?} in chunks", tier.tier());
    }
}

fn ints_agree<T: Int + std::fmt::Debug>(r: &Recipe, values: &[T]) {
    let summary = |tier: Supported, chunk: usize| {
        let mut acc = IntSum::default();
        values.chunks(chunk.max(1)).for_each(|c| T::add_tier(tier, &mut acc, c));
        acc.finish()
    };
    let want = summary(Supported::all()[0], values.len());
    for tier in Supported::all() {
        assert_eq!(summary(tier, values.len()), want, "{r:?}: {:?} whole", tier.tier());
        assert_eq!(summary(tier, r.chunk), want, "{r:?}: {:?} in chunks", tier.tier());
    }
}

/// An integer of kind `kind` from the random word `r`, as the low `bits` bits (sign-extended by
/// the caller's cast).
fn int_bits(kind: usize, r: u64, bits: u32) -> u64 {
    let mask = if bits == 64 { u64::MAX } else { (1 << bits) - 1 };
    let v = match kind {
        0 | 1 => r,
        // Both extremes of the signed and the unsigned type, 0 and ±1.
        2 => [1u64 << (bits - 1), (1u64 << (bits - 1)) - 1, 0, 1, u64::MAX, mask][(r >> 50) as usize % 6],
        3 => 1u64 << (r % u64::from(bits)),
        4 => (1u64 << (r % u64::from(bits))).wrapping_sub(1),
        5 => r % 2000,
        6 => (r % 2000).wrapping_neg(),
        _ => r >> (r % 64),
    };
    v & mask
}

proptest! {
    // 48 cases unless PROPTEST_CASES says otherwise.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(48),
        // A failure prints its recipe; nothing is written into the source tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn float16_tiers_agree(r in recipe(3 * (1 << 15) + 700)) {
        let (v, at) = r.values(|k, x| f16::from_bits(float_bits(k, x, 5, 10) as u16));
        floats_agree(&r, &v[at..], float16::add);
    }

    #[test]
    fn bfloat16_tiers_agree(r in recipe(3 * 8192 + 700)) {
        let (v, at) = r.values(|k, x| bf16::from_bits(float_bits(k, x, 8, 7) as u16));
        floats_agree(&r, &v[at..], |t, acc, v| {
            acc.count += v.len() as u64;
            float32::add(t, acc, v)
        });
        // The general path, which bfloat16 took before it was widened to float32.
        let general = float_summary(&v[at..], v.len(), add_floats);
        prop_assert_eq!(general, float_summary(&v[at..], v.len(), |acc, v| {
            acc.count += v.len() as u64;
            float32::add(Supported::all()[0], acc, v)
        }));
    }

    #[test]
    fn float32_tiers_agree(r in recipe(3 * 8192 + 700)) {
        let (v, at) = r.values(|k, x| f32::from_bits(float_bits(k, x, 8, 23) as u32));
        floats_agree(&r, &v[at..], |t, acc, v| {
            acc.count += v.len() as u64;
            float32::add(t, acc, v)
        });
    }

    #[test]
    fn float64_tiers_agree(r in recipe(3 * 8192 + 700)) {
        let (v, at) = r.values(|k, x| f64::from_bits(float_bits(k, x, 11, 52)));
        floats_agree(&r, &v[at..], float64::add);
    }

    #[test]
    fn integer_tiers_agree(r in recipe(2 * (1 << 15) + 700)) {
        macro_rules! each {
            ($($t:ty: $bits:expr),*) => {$(
                let (v, at) = r.values(|k, x| int_bits(k, x, $bits) as $t);
                ints_agree(&r, &v[at..]);
            )*};
        }
        each!(i8: 8, i16: 16, i32: 32, i64: 64, u8: 8, u16: 16, u32: 32, u64: 64);
    }
}

/// The sum of `values` added by each tier, checked equal, as float64 bits.
fn tier_sums<T>(values: &[T], add: impl Fn(Supported, &mut FloatSum, &[T])) -> Option<u64> {
    let tiers = Supported::all();
    let sums: Vec<Summary> =
        tiers.iter().map(|&t| float_summary(values, values.len(), |acc, v| add(t, acc, v))).collect();
    for (tier, s) in tiers.iter().zip(&sums) {
        assert_eq!(s, &sums[0], "{:?}", tier.tier());
    }
    sums[0].sum.map(|n| match n {
        super::Number::Float(x) => x.to_bits(),
        super::Number::Int(_) => u64::MAX,
    })
}

#[test]
fn sums_at_float64_rounding_ties_round_alike_on_every_tier() {
    let f32_sum = |v: &[f32]| {
        tier_sums(v, |t, acc, v| {
            acc.count += v.len() as u64;
            float32::add(t, acc, v)
        })
    };
    let p53 = 2f32.powi(53);
    let tiny = f32::from_bits(1);
    // 2^53 + 1: a tie, to even (down); 2^53 + 3: up; a sticky bit far below breaks the tie.
    for (v, want) in [
        (vec![p53, 1.0], 2f64.powi(53)),
        (vec![p53, 2.0, 1.0], 2f64.powi(53) + 4.0),
        (vec![p53, 1.0, tiny], 2f64.powi(53) + 2.0),
        (vec![-p53, -1.0, -tiny], -(2f64.powi(53) + 2.0)),
        (vec![p53, 1.0, -tiny], 2f64.powi(53)),
    ] {
        // Alone, and among 20 000 zeros at varying places (other blocks, other lanes).
        let mut padded = vec![0.0f32; 20_000];
        for (i, &x) in v.iter().enumerate() {
            padded[i * 6007 % 20_000] = x;
        }
        assert_eq!(f32_sum(&v), Some(want.to_bits()), "{v:?}");
        assert_eq!(f32_sum(&padded), Some(want.to_bits()), "{v:?} among zeros");
    }
    // float16: 2^15 values of 2^15 make 2^30, whose float64 unit in the last place is 2^-22:
    // 2^-23 more is a tie (to even, down), with 2^-24 more again it rounds up.
    let f16_sum = |v: &[f16]| tier_sums(v, float16::add);
    let mut v = vec![f16::from_f32(32768.0); 1 << 15];
    v.push(f16::from_bits(2));
    assert_eq!(f16_sum(&v), Some(2f64.powi(30).to_bits()));
    v.push(f16::from_bits(1));
    assert_eq!(f16_sum(&v), Some((2f64.powi(30) + 2f64.powi(-22)).to_bits()));
    v.iter_mut().for_each(|x| *x = -*x);
    assert_eq!(f16_sum(&v), Some((-(2f64.powi(30) + 2f64.powi(-22))).to_bits()));
}

#[test]
fn counts_past_a_64_bit_lane_sum_are_exact_on_every_tier() {
    // 2^28 values of the widest magnitude, in chunks of 2^16 as the CPU backend adds them: a
    // 64-bit lane without its per-block flush would have overflowed long before.
    let chunk_u64 = vec![u64::MAX; 1 << 16];
    let chunk_i64 = vec![i64::MIN; 1 << 16];
    let chunk_i32 = vec![i32::MIN; 1 << 16];
    let chunk_f16 = vec![f16::MIN; 1 << 16];
    for tier in Supported::all() {
        let (mut u, mut i, mut n) = (IntSum::default(), IntSum::default(), IntSum::default());
        let mut h = FloatSum::default();
        for _ in 0..1 << 12 {
            u64::add_tier(tier, &mut u, &chunk_u64);
            i64::add_tier(tier, &mut i, &chunk_i64);
            i32::add_tier(tier, &mut n, &chunk_i32);
            float16::add(tier, &mut h, &chunk_f16);
        }
        let digits = |s: Summary| match s.sum {
            Some(super::Number::Int(w)) => w.to_string(),
            other => format!("{other:?}"),
        };
        // (2^64 - 1) * 2^28, -2^63 * 2^28, -2^31 * 2^28.
        assert_eq!(digits(u.finish()), "4951760157141521099328061440", "{:?}", tier.tier());
        assert_eq!(digits(i.finish()), "-2475880078570760549798248448", "{:?}", tier.tier());
        assert_eq!(digits(n.finish()), "-576460752303423488", "{:?}", tier.tier());
        // -65504 * 2^28, exact in float64.
        assert_eq!(h.finish().sum, Some(super::Number::Float(-65504.0 * 2f64.powi(28))), "{:?}", tier.tier());
    }
}
