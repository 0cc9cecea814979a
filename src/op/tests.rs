//! The arithmetic against independent references: every float16 input bit for bit, every kernel
//! against the scalar reference, integer wrapping and IEEE corner cases.

use super::f16::f16_blocks;
#[cfg(target_arch = "x86_64")]
use super::f16::f16_x86;
use super::*;
use crate::dtype::Element;
use half::f16;

const SUB: Semantics = Semantics { op: Op::Sub, half_precision: false };
const SQ: Semantics = Semantics { op: Op::SqDiff, half_precision: false };
const SQH: Semantics = Semantics { op: Op::SqDiff, half_precision: true };

/// The float16 reference computed with `half`'s software conversions only (`*_const`), so
/// that it does not depend on the CPU features `half` detects for `to_f32`/`from_f32`.
fn soft_f16(sem: Semantics, a: f16, b: f16) -> f16 {
    let (x, y) = (a.to_f32_const(), b.to_f32_const());
    let r = match (sem.op, sem.half_precision) {
        (Op::Sub, _) => x - y,
        (Op::SqDiff, false) => (x - y) * (x - y),
        (Op::SqDiff, true) => {
            let h = f16::from_f32_const(x - y).to_f32_const();
            h * h
        }
    };
    f16::from_f32_const(r)
}

/// Every float16 value as `a` or `b` against these: signed zeros, ±1, subnormals (smallest,
/// largest, a middle one), the smallest normals, the largest finite values, infinities, quiet
/// and signalling NaNs of both signs with several payloads, values whose differences and
/// squares fall on or next to float16 rounding ties, overflow when squared, and arbitrary ones.
const INTERESTING_F16: [u16; 44] = [
    0x0000, 0x8000, 0x3c00, 0xbc00, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0200, 0x0400, 0x8400, 0x0401, 0x7bff, 0xfbff,
    0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7d00, 0xfc01, 0x7fff, 0xfdff, 0x3c01, 0x3bff, 0x4000, 0x1000, 0x1400,
    0x6800, 0x6801, 0x5bff, 0x5c00, 0x57ff, 0x5800, 0x2e66, 0xc4d2, 0x3555, 0xb555, 0x7000, 0xf000, 0x2000, 0x1c00,
    0x0010, 0xabcd,
];

fn check_f16(what: &str, got: &[f16], want: impl Fn(usize) -> f16) {
    for (i, g) in got.iter().enumerate() {
        let w = want(i);
        assert_eq!(g.to_bits(), w.to_bits(), "{what} at {i}: got {:#06x}, want {:#06x}", g.to_bits(), w.to_bits());
    }
}

/// Runs one float16 kernel: the dispatched one (`Semantics::apply`, the F16C kernel where the
/// CPU has it) or the portable block kernel.
type F16Kernel = fn(Semantics, &mut [f16], Operand<'_, f16>, Operand<'_, f16>);
const F16_KERNELS: [(&str, F16Kernel); 2] =
    [("dispatched", |s, o, a, b| s.apply(o, a, b)), ("blocks", |s, o, a, b| f16_blocks(s.formula(), o, a, b))];

#[test]
fn float16_scalar_reference_matches_software_conversions_bit_for_bit() {
    for sem in [SUB, SQ, SQH] {
        for a in 0..=u16::MAX {
            for &b in &INTERESTING_F16 {
                let (a, b) = (f16::from_bits(a), f16::from_bits(b));
                for (x, y) in [(a, b), (b, a)] {
                    let (got, want) = (sem.scalar(x, y), soft_f16(sem, x, y));
                    assert_eq!(got.to_bits(), want.to_bits(), "{sem:?} {:#06x} {:#06x}", x.to_bits(), y.to_bits());
                }
            }
        }
    }
}

#[test]
fn float16_kernels_match_the_scalar_reference_bit_for_bit() {
    #[cfg(target_arch = "x86_64")]
    eprintln!("F16C kernel available: {}", f16_x86::available());
    let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    for (name, kernel) in F16_KERNELS {
        for sem in [SUB, SQ, SQH] {
            let mut got = vec![f16::ZERO; all.len()];
            for b in INTERESTING_F16.map(f16::from_bits) {
                let bv = vec![b; all.len()];
                let what = format!("{name} {sem:?} b={:#06x}", b.to_bits());
                kernel(sem, &mut got, Operand::Slice(&all), Operand::Slice(&bv));
                check_f16(&format!("{what} slice-slice"), &got, |i| sem.scalar(all[i], b));
                kernel(sem, &mut got, Operand::Slice(&all), Operand::Scalar(b));
                check_f16(&format!("{what} slice-scalar"), &got, |i| sem.scalar(all[i], b));
                kernel(sem, &mut got, Operand::Slice(&bv), Operand::Slice(&all));
                check_f16(&format!("{what} reversed slice-slice"), &got, |i| sem.scalar(b, all[i]));
                kernel(sem, &mut got, Operand::Scalar(b), Operand::Slice(&all));
                check_f16(&format!("{what} scalar-slice"), &got, |i| sem.scalar(b, all[i]));
                for a in INTERESTING_F16.map(f16::from_bits) {
                    let mut one = [f16::ZERO; 19];
                    kernel(sem, &mut one, Operand::Scalar(a), Operand::Scalar(b));
                    check_f16(&format!("{what} scalar-scalar a={:#06x}", a.to_bits()), &one, |_| sem.scalar(a, b));
                }
            }
        }
    }
}

/// Two operands and the expected result at each index.
type F16Form<'a> = (Operand<'a, f16>, Operand<'a, f16>, &'a dyn Fn(usize) -> f16);

#[test]
fn float16_kernels_handle_every_tail_length_and_alignment() {
    // Lengths 0..=37 and two long runs (the second ends inside the portable kernel's third
    // 1024-element block), at three alignments, in every operand form; each output is prefilled
    // so that a kernel writing past its end or skipping an element fails.
    let all: Vec<f16> = (0..=u16::MAX).map(|i| f16::from_bits(i.wrapping_mul(40503))).collect();
    let canary = f16::from_bits(0x7c3f);
    for (name, kernel) in F16_KERNELS {
        for sem in [SUB, SQ, SQH] {
            for len in (0..38).chain([1001, 2500]) {
                for off in 0..3 {
                    let a = &all[1000 + off..1000 + off + len];
                    let b = &all[40000 + 2 * off..40000 + 2 * off + len];
                    let (x, y) = (all[7], all[60001]);
                    let forms: [F16Form<'_>; 4] = [
                        (Operand::Slice(a), Operand::Slice(b), &|i| sem.scalar(a[i], b[i])),
                        (Operand::Slice(a), Operand::Scalar(y), &|i| sem.scalar(a[i], y)),
                        (Operand::Scalar(x), Operand::Slice(b), &|i| sem.scalar(x, b[i])),
                        (Operand::Scalar(x), Operand::Scalar(y), &|_| sem.scalar(x, y)),
                    ];
                    for (form, (oa, ob, want)) in forms.into_iter().enumerate() {
                        let mut out = vec![canary; len + 1];
                        kernel(sem, &mut out[..len], oa, ob);
                        check_f16(&format!("{name} {sem:?} len {len} off {off} form {form}"), &out[..len], want);
                        assert_eq!(out[len].to_bits(), canary.to_bits(), "wrote past the end");
                    }
                }
            }
        }
    }
}

#[test]
fn integers_wrap() {
    assert_eq!(SUB.scalar(-128i8, 1), 127);
    assert_eq!(SUB.scalar(0u8, 1), 255);
    assert_eq!(SUB.scalar(i64::MIN, 1), i64::MAX);
    assert_eq!(SUB.scalar(0u64, u64::MAX), 1);
    // (100 - -100) = 200 wraps to -56; (-56)^2 = 3136 wraps to 64.
    assert_eq!(SQ.scalar(100i8, -100), 64);
    assert_eq!(SQ.scalar(0u32, 1), 1);
    assert_eq!(SQ.scalar(0u32, 65536), 0);
    assert_eq!(SQ.scalar(i32::MIN, 0), 0);
    assert_eq!(SQ.scalar(3u16, 300), (297u16.wrapping_neg()).wrapping_mul(297u16.wrapping_neg()));
}

#[test]
fn floats_follow_ieee_with_subnormals() {
    let tiny = f32::from_bits(3); // subnormal
    assert_eq!(SUB.scalar(tiny, f32::from_bits(1)).to_bits(), 2);
    assert!(SUB.scalar(f32::INFINITY, f32::INFINITY).is_nan());
    assert_eq!(SUB.scalar(0.0f32, 0.0).to_bits(), 0);
    assert_eq!(SUB.scalar(-0.0f32, 0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(SQ.scalar(f32::MAX, -f32::MAX), f32::INFINITY);
    assert_eq!(SQ.scalar(3.0f64, 1.0), 4.0);
    // 1e-23^2 underflows to a subnormal in f64? No: f64 keeps it normal; f32 gives 0.
    assert_eq!(SQ.scalar(1e-23f32, 0.0), 0.0);
    let d = 1.0e-20f32;
    assert_eq!(SQ.scalar(d, 0.0), d * d);
    // No FMA: (1 + 2^-12)^2 rounds differently from a fused computation.
    let x = 1.0f32 + f32::EPSILON * 2048.0;
    assert_eq!(SQ.scalar(x, 0.0).to_bits(), (x * x).to_bits());
}

#[test]
fn float16_rounds_once_or_twice() {
    let h = f16::from_f32;
    // 2049 is not representable in f16 (spacing 2 above 2048).
    let a = h(2048.0);
    let b = h(-1.0);
    assert_eq!(SUB.scalar(a, b), h(2049.0)); // ties to even: 2048
    assert_eq!(SUB.scalar(a, b).to_f32(), 2048.0);
    // sqdiff: d = 0.0999755859375 + ...; choose values where one vs two roundings differ.
    let (a, b) = (h(1.0), h(-0.0004883)); // b rounds to -2^-11 + ...
    let d = a.to_f32() - b.to_f32();
    assert_eq!(SQ.scalar(a, b), f16::from_f32(d * d));
    let hd = f16::from_f32(d).to_f32();
    assert_eq!(SQH.scalar(a, b), f16::from_f32(hd * hd));
    // overflow to inf in f16 only at the end
    assert_eq!(SQ.scalar(h(300.0), h(0.0)), f16::INFINITY);
    // subnormal float16 results are kept
    let sub = f16::from_bits(1);
    assert_eq!(SUB.scalar(f16::from_bits(3), f16::from_bits(2)), sub);
}

#[test]
fn half_precision_differs_from_default_somewhere() {
    let mut differ = 0;
    for bits in (0u16..0x7c00).step_by(7) {
        let a = f16::from_bits(bits);
        let b = f16::from_bits(0x3c01);
        if SQ.scalar(a, b) != SQH.scalar(a, b) {
            differ += 1;
        }
    }
    assert!(differ > 0, "the two float16 modes should not be identical");
}

/// The vectorised slice kernels give exactly the scalar reference, for every operand shape.
fn check_slices<T: Arith>(vals: &[T]) {
    let n = vals.len();
    let rev: Vec<T> = vals.iter().rev().copied().collect();
    for sem in [SUB, SQ, SQH] {
        let mut out = vec![vals[0]; n];
        sem.apply(&mut out, Operand::Slice(vals), Operand::Slice(&rev));
        for i in 0..n {
            assert_eq!(out[i].to_bits_eq(), sem.scalar(vals[i], rev[i]).to_bits_eq(), "{sem:?} at {i}");
        }
        sem.apply(&mut out, Operand::Slice(vals), Operand::Scalar(rev[3]));
        for i in 0..n {
            assert_eq!(out[i].to_bits_eq(), sem.scalar(vals[i], rev[3]).to_bits_eq());
        }
        sem.apply(&mut out, Operand::Scalar(vals[5]), Operand::Slice(&rev));
        for i in 0..n {
            assert_eq!(out[i].to_bits_eq(), sem.scalar(vals[5], rev[i]).to_bits_eq());
        }
    }
}

trait BitsEq {
    fn to_bits_eq(self) -> Vec<u8>;
}
impl<T: Element> BitsEq for T {
    fn to_bits_eq(self) -> Vec<u8> {
        bytemuck::bytes_of(&self).to_vec()
    }
}

#[test]
fn slice_kernels_match_scalar_reference() {
    let f16s: Vec<f16> = (0..3000u32).map(|i| f16::from_bits((i * 21 + 7) as u16 & 0x7bff)).collect();
    check_slices(&f16s);
    let f32s: Vec<f32> = (0..3000u32).map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761) & 0x7f7f_ffff)).collect();
    check_slices(&f32s);
    let i8s: Vec<i8> = (0..300i32).map(|i| (i * 37) as i8).collect();
    check_slices(&i8s);
    let u64s: Vec<u64> = (0..300u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
    check_slices(&u64s);
}

/// bfloat16 rounded from float32 by hand: round to nearest even on the bits, NaN made quiet.
fn soft_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// The bfloat16 reference: float16's formulas (`soft_f16`) with bfloat16's exact widening (a
/// shift) and [`soft_bf16_bits`].
fn soft_bf16(sem: Semantics, a: u16, b: u16) -> u16 {
    let w = |h: u16| f32::from_bits(u32::from(h) << 16);
    let (x, y) = (w(a), w(b));
    let r = match (sem.op, sem.half_precision) {
        (Op::Sub, _) => x - y,
        (Op::SqDiff, false) => (x - y) * (x - y),
        (Op::SqDiff, true) => {
            let h = w(soft_bf16_bits(x - y));
            h * h
        }
    };
    soft_bf16_bits(r)
}

#[test]
fn bfloat16_matches_the_hand_rounded_reference_for_every_input() {
    use half::bf16;
    // Signed zeros, ±1, subnormals, the smallest normals, the largest finite values, infinities,
    // NaNs, values next to rounding ties, overflow when squared, and arbitrary ones.
    let interesting: [u16; 22] = [
        0x0000, 0x8000, 0x3f80, 0xbf80, 0x0001, 0x8001, 0x007f, 0x0080, 0x0081, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0,
        0xffc1, 0x3f81, 0x3f7f, 0x4000, 0x5f80, 0x1f80, 0x3e4d, 0xc2f7,
    ];
    for sem in [SUB, SQ, SQH] {
        for a in 0..=u16::MAX {
            for &b in &interesting {
                for (x, y) in [(a, b), (b, a)] {
                    let got = sem.scalar(bf16::from_bits(x), bf16::from_bits(y));
                    let want = soft_bf16(sem, x, y);
                    if bf16::from_bits(want).is_nan() {
                        assert!(got.is_nan(), "{sem:?} {x:#06x} {y:#06x}: got {:#06x}, want NaN", got.to_bits());
                    } else {
                        assert_eq!(got.to_bits(), want, "{sem:?} {x:#06x} {y:#06x}");
                    }
                }
            }
        }
    }
    // One rounding by default, two with --half-precision: they differ somewhere.
    let b = bf16::from_bits(0x3f81);
    let differ =
        (0u16..0x7f80).step_by(7).filter(|&a| SQ.scalar(bf16::from_bits(a), b) != SQH.scalar(bf16::from_bits(a), b));
    assert!(differ.count() > 0, "the two bfloat16 modes should not be identical");
    let bf16s: Vec<bf16> = (0..3000u32).map(|i| bf16::from_bits((i * 21 + 7) as u16)).collect();
    check_slices(&bf16s);
}
