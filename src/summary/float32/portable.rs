//! The float32 summary's passes in plain Rust, for any CPU; the compiler vectorises them where
//! it can.

use super::{histogram, order_key, Counts, Passes, ABS, SUM_LANES};

/// The passes in plain Rust, which the compiler vectorises where it can.
pub(super) struct Portable;

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
        let mut high = [0f64; SUM_LANES];
        let mut low = [0f64; SUM_LANES];
        let one = |high: &mut f64, low: &mut f64, x: f32| {
            let a = x.to_bits() & ABS;
            *high += if a < b[0] && a >= b[1] { f64::from(x) } else { 0.0 };
            *low += if a < b[1] && a >= b[2] { f64::from(x) } else { 0.0 };
        };
        let mut lanes = block.chunks_exact(SUM_LANES);
        for group in &mut lanes {
            for ((high, low), &x) in high.iter_mut().zip(&mut low).zip(group) {
                one(high, low, x);
            }
        }
        lanes.remainder().iter().for_each(|&x| one(&mut high[0], &mut low[0], x));
        (high.iter().sum(), low.iter().sum())
    }
}
