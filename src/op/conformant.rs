//! What a conformant DirectML may give for one pair of elements (`docs/backends.md`, "What any
//! conformant device may give"): the results of every float16 rule a DirectML release or device
//! class follows, with subnormal inputs, intermediates and results flushed to zero (which the
//! Direct3D rules allow) or not, and any NaN where a NaN is computed (its payload may change).
//! Integers and float64 have one answer.

use super::{Float16Rule, Op, Semantics};
use crate::dtype::DType;
use half::f16;

/// Why an element's value may depend on the device or the release.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Causes {
    /// float16: the rules give different results.
    pub float16_rule: bool,
    /// A subnormal input, intermediate or result, which a device may flush to zero.
    pub subnormal: bool,
    /// A NaN result, whose payload a device may change.
    pub nan: bool,
}

impl Causes {
    /// Whether any cause applies.
    pub fn any(self) -> bool {
        self.float16_rule || self.subnormal || self.nan
    }
}

/// The results a conformant DirectML may give for one element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// tensorop's default answer: the correctly rounded result (`--float16 nearest`).
    pub nearest: u64,
    /// The result bits allowed (little-endian value of the element's bytes).
    pub bits: Vec<u64>,
    /// Any NaN is allowed (a NaN is among the results).
    pub any_nan: bool,
    pub causes: Causes,
}

impl Allowed {
    /// Whether `got` (the element's bits) is one of the allowed results.
    pub fn admits(&self, dtype: DType, got: u64) -> bool {
        self.bits.contains(&got) || (self.any_nan && is_nan(dtype, got))
    }
}

/// The results a conformant DirectML may give for `op` on the elements of bits `a` and `b`.
pub fn allowed(op: Op, dtype: DType, a: u64, b: u64) -> Allowed {
    match dtype {
        DType::F16 => float16(op, a as u16, b as u16),
        DType::F32 => float32(op, f32::from_bits(a as u32), f32::from_bits(b as u32)),
        _ => {
            let r = exact(op, dtype, a, b);
            Allowed { nearest: r, bits: vec![r], any_nan: false, causes: Causes::default() }
        }
    }
}

/// float16: every rule, on the inputs as given and with subnormal inputs flushed; each result
/// also flushed where it is subnormal.
fn float16(op: Op, a: u16, b: u16) -> Allowed {
    let h = f16::from_bits;
    let flush = |x: u16| if x & 0x7c00 == 0 { x & 0x8000 } else { x };
    let by_rule =
        |x: u16, y: u16| Float16Rule::ALL.map(|rule| Semantics { op, float16: rule }.scalar(h(x), h(y)).to_bits());
    let given = by_rule(a, b);
    let mut causes = Causes {
        float16_rule: given.iter().any(|&r| r != given[0]),
        subnormal: [a, b].iter().chain(&given).any(|&x| subnormal16(x)),
        nan: false,
    };
    let mut results = given.to_vec();
    if causes.subnormal {
        results.extend(by_rule(flush(a), flush(b)));
        let flushed: Vec<u16> = results.iter().map(|&r| flush(r)).collect();
        results.extend(flushed);
    }
    causes.nan = results.iter().any(|&r| f16::from_bits(r).is_nan());
    let mut bits: Vec<u64> = results.into_iter().map(u64::from).collect();
    bits.sort_unstable();
    bits.dedup();
    Allowed { nearest: u64::from(given[0]), bits, any_nan: causes.nan, causes }
}

/// float32: IEEE arithmetic, with subnormal inputs, intermediate and result flushed or not.
fn float32(op: Op, a: f32, b: f32) -> Allowed {
    let flush = |x: f32| if x.is_subnormal() { 0.0f32.copysign(x) } else { x };
    let eval = |x: f32, y: f32, flush_d: bool| {
        let d = x - y;
        let d = if flush_d { flush(d) } else { d };
        match op {
            Op::Sub => d,
            Op::SqDiff => d * d,
        }
    };
    let r = eval(a, b, false);
    let subnormal = a.is_subnormal() || b.is_subnormal() || (a - b).is_subnormal() || r.is_subnormal();
    let mut results = vec![r];
    if subnormal {
        for (x, y, fd) in [(flush(a), flush(b), false), (a, b, true), (flush(a), flush(b), true)] {
            results.push(eval(x, y, fd));
        }
        let flushed: Vec<f32> = results.iter().map(|&r| flush(r)).collect();
        results.extend(flushed);
    }
    let nan = results.iter().any(|r| r.is_nan());
    let mut bits: Vec<u64> = results.iter().map(|r| u64::from(r.to_bits())).collect();
    bits.sort_unstable();
    bits.dedup();
    Allowed {
        nearest: u64::from(r.to_bits()),
        bits,
        any_nan: nan,
        causes: Causes { float16_rule: false, subnormal, nan },
    }
}

/// The one result of a type no device or release changes.
fn exact(op: Op, dtype: DType, a: u64, b: u64) -> u64 {
    let sem = Semantics::nearest(op);
    macro_rules! one {
        ($t:ty) => {{
            let (x, y) = (<$t>::from_le_bytes(bytes(a)), <$t>::from_le_bytes(bytes(b)));
            let r = sem.scalar(x, y).to_le_bytes();
            let mut w = [0u8; 8];
            w[..r.len()].copy_from_slice(&r);
            u64::from_le_bytes(w)
        }};
    }
    match dtype {
        DType::I8 => one!(i8),
        DType::I16 => one!(i16),
        DType::I32 => one!(i32),
        DType::I64 => one!(i64),
        DType::U8 => one!(u8),
        DType::U16 => one!(u16),
        DType::U32 => one!(u32),
        DType::U64 => one!(u64),
        DType::F64 => one!(f64),
        DType::BF16 => {
            u64::from(sem.scalar(half::bf16::from_bits(a as u16), half::bf16::from_bits(b as u16)).to_bits())
        }
        DType::F16 | DType::F32 => unreachable!("float16 and float32 have several answers"),
    }
}

/// The first `N` bytes of `x`, little-endian.
fn bytes<const N: usize>(x: u64) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&x.to_le_bytes()[..N]);
    out
}

fn subnormal16(x: u16) -> bool {
    x & 0x7c00 == 0 && x & 0x03ff != 0
}

fn is_nan(dtype: DType, x: u64) -> bool {
    match dtype {
        DType::F16 => f16::from_bits(x as u16).is_nan(),
        DType::BF16 => half::bf16::from_bits(x as u16).is_nan(),
        DType::F32 => f32::from_bits(x as u32).is_nan(),
        DType::F64 => f64::from_bits(x).is_nan(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float16_ties_and_overflow_depend_on_the_rule() {
        // 1 - 2^-24: nearest 0x3c00, toward zero 0x3bff.
        let t = allowed(Op::Sub, DType::F16, 0x3c00, 0x0001);
        assert_eq!(t.bits, vec![0x3bff, 0x3c00]);
        assert_eq!(t.causes, Causes { float16_rule: true, subnormal: true, nan: false });
        // 65504 - (-1): 65504, or infinity from DirectML 1.13 on.
        let t = allowed(Op::Sub, DType::F16, 0x7bff, 0xbc00);
        assert_eq!((t.bits.clone(), t.causes.float16_rule, t.causes.subnormal), (vec![0x7bff, 0x7c00], true, false));
        // 2 - 1 is 1 under every rule.
        let t = allowed(Op::Sub, DType::F16, 0x4000, 0x3c00);
        assert_eq!((t.bits.clone(), t.causes.any()), (vec![0x3c00], false));
        assert!(t.admits(DType::F16, 0x3c00) && !t.admits(DType::F16, 0x3c01));
        // sqdiff (1 + 2^-9) - 2^-11: per-step rounds the difference first.
        let t = allowed(Op::SqDiff, DType::F16, 0x3c02, 0x1000);
        assert!(t.bits.contains(&0x3c03) && t.bits.contains(&0x3c04), "{:x?}", t.bits);
    }

    #[test]
    fn subnormals_may_flush_and_nans_may_change() {
        // float32: 2^-149 - 0 may be flushed to +0.
        let t = allowed(Op::Sub, DType::F32, 1, 0);
        assert_eq!((t.bits.clone(), t.causes.subnormal), (vec![0, 1], true));
        // A NaN result: any NaN.
        let t = allowed(Op::Sub, DType::F32, 0x7fc0_0001, 0x3f80_0000);
        assert!(t.causes.nan && t.admits(DType::F32, 0xffc0_0000) && !t.admits(DType::F32, 0x3f80_0000));
        // float16 subnormal input: flushed, 2^-24 - 2^-24 stays 0 and -(2^-24) - 0 may be -0.
        let t = allowed(Op::Sub, DType::F16, 0x8001, 0x0000);
        assert_eq!(t.bits, vec![0x8000, 0x8001]);
        // Integers: one answer, wrapping.
        let t = allowed(Op::Sub, DType::I8, 0x80, 0x01);
        assert_eq!((t.bits.clone(), t.causes.any()), (vec![0x7f], false));
        let t = allowed(Op::SqDiff, DType::U64, 0, 1);
        assert_eq!(t.bits, vec![1]);
    }
}
