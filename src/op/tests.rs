//! The arithmetic against independent references: every float16 input bit for bit under every
//! float16 rule, every kernel against the scalar reference, integer wrapping and IEEE corner
//! cases.

use super::f16::apply_tier;
use super::*;
use crate::arch::Supported;
use crate::dtype::Element;
use half::f16;

const SUB: Semantics = Semantics::nearest(Op::Sub);
const SQ: Semantics = Semantics::nearest(Op::SqDiff);
const SQH: Semantics = Semantics { op: Op::SqDiff, float16: Float16Rule::PerStep };
const SUBH: Semantics = Semantics { op: Op::Sub, float16: Float16Rule::PerStep };
const SUBD: Semantics = Semantics { op: Op::Sub, float16: Float16Rule::TowardZeroInf };
const SQD: Semantics = Semantics { op: Op::SqDiff, float16: Float16Rule::TowardZeroInf };
const SUBS: Semantics = Semantics { op: Op::Sub, float16: Float16Rule::TowardZeroSaturate };
const SQS: Semantics = Semantics { op: Op::SqDiff, float16: Float16Rule::TowardZeroSaturate };
/// Every operator under every float16 rule.
const ALL_SEMS: [Semantics; 8] = [SUB, SQ, SUBH, SQH, SUBD, SQD, SUBS, SQS];

/// The float16 reference computed with `half`'s software conversions only (`*_const`), so
/// that it does not depend on the CPU features `half` detects for `to_f32`/`from_f32`; Direct3D's
/// toward-zero rules with [`toward_zero_reference`] on the float32 result, computed exactly in
/// float64 and rounded to float32 once per step.
fn soft_f16(sem: Semantics, a: f16, b: f16) -> f16 {
    let (x, y) = (a.to_f32_const(), b.to_f32_const());
    match (sem.op, sem.float16) {
        (Op::Sub, Float16Rule::Nearest | Float16Rule::PerStep) => f16::from_f32_const(x - y),
        (Op::SqDiff, Float16Rule::Nearest) => f16::from_f32_const((x - y) * (x - y)),
        (Op::SqDiff, Float16Rule::PerStep) => {
            let h = f16::from_f32_const(x - y).to_f32_const();
            f16::from_f32_const(h * h)
        }
        (op, rule @ (Float16Rule::TowardZeroInf | Float16Rule::TowardZeroSaturate)) => {
            // float16 values differ by at most 2^17 in a 40-bit span: exact in float64, as is the
            // square of a float32 (48 bits). `as f32` rounds to nearest even, overflow to infinity.
            let d = (f64::from(x) - f64::from(y)) as f32;
            let r = if op == Op::Sub { d } else { (f64::from(d) * f64::from(d)) as f32 };
            f16::from_bits(toward_zero_reference(r, rule == Float16Rule::TowardZeroSaturate))
        }
    }
}

/// The value of a finite float16 bit pattern, from its fields.
fn f16_value(h: u16) -> f64 {
    let (e, m) = (i32::from(h >> 10 & 0x1f), f64::from(h & 0x3ff));
    let v = if e == 0 { m * 2f64.powi(-24) } else { (1024.0 + m) * 2f64.powi(e - 25) };
    if h & 0x8000 != 0 {
        -v
    } else {
        v
    }
}

/// The toward-zero float32 -> float16 conversions written from their definitions: a NaN as
/// `half`'s software conversion makes it; an infinity stays; beyond 65504 in magnitude, infinity
/// of the sign (DirectML 1.13 and later) or, with `saturate`, 65504 of the sign (Direct3D's
/// written rule, DirectML 1.8 to 1.12); else the float16 of largest magnitude not above |x|
/// (toward zero), found by searching every finite float16.
fn toward_zero_reference(x: f32, saturate: bool) -> u16 {
    if x.is_nan() {
        return f16::from_f32_const(x).to_bits();
    }
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = f64::from(x).abs();
    if a.is_infinite() || (a > 65504.0 && !saturate) {
        return sign | 0x7c00;
    }
    if a > 65504.0 {
        return sign | 0x7bff;
    }
    // Non-negative finite float16 patterns grow with their value: the last one at or below `a`.
    let (mut lo, mut hi) = (0u16, 0x7bff);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if f16_value(mid) <= a {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    sign | lo
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

/// The float16 kernels this CPU runs: the dispatched one (`Semantics::apply`, `None`) and each
/// tier's (`apply_tier`: the portable tier's is the block kernel, the others' the F16C kernel).
fn f16_kernels() -> Vec<(String, Option<Supported>)> {
    let tiers = Supported::all().into_iter().map(|t| (t.tier().name().to_string(), Some(t)));
    std::iter::once(("dispatched".to_string(), None)).chain(tiers).collect()
}

/// Runs one of [`f16_kernels`].
fn run_f16(kernel: Option<Supported>, sem: Semantics, out: &mut [f16], a: Operand<'_, f16>, b: Operand<'_, f16>) {
    match kernel {
        None => sem.apply(out, a, b),
        Some(tier) => apply_tier(tier, sem.formula(), out, a, b),
    }
}

#[test]
fn float16_scalar_reference_matches_software_conversions_bit_for_bit() {
    for sem in ALL_SEMS {
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
    eprintln!("float16 kernels: {:?}", f16_kernels());
    let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    for (name, kernel) in f16_kernels() {
        for sem in ALL_SEMS {
            let mut got = vec![f16::ZERO; all.len()];
            for b in INTERESTING_F16.map(f16::from_bits) {
                let bv = vec![b; all.len()];
                let what = format!("{name} {sem:?} b={:#06x}", b.to_bits());
                run_f16(kernel, sem, &mut got, Operand::Slice(&all), Operand::Slice(&bv));
                check_f16(&format!("{what} slice-slice"), &got, |i| sem.scalar(all[i], b));
                run_f16(kernel, sem, &mut got, Operand::Slice(&all), Operand::Scalar(b));
                check_f16(&format!("{what} slice-scalar"), &got, |i| sem.scalar(all[i], b));
                run_f16(kernel, sem, &mut got, Operand::Slice(&bv), Operand::Slice(&all));
                check_f16(&format!("{what} reversed slice-slice"), &got, |i| sem.scalar(b, all[i]));
                run_f16(kernel, sem, &mut got, Operand::Scalar(b), Operand::Slice(&all));
                check_f16(&format!("{what} scalar-slice"), &got, |i| sem.scalar(b, all[i]));
                for a in INTERESTING_F16.map(f16::from_bits) {
                    let mut one = [f16::ZERO; 19];
                    run_f16(kernel, sem, &mut one, Operand::Scalar(a), Operand::Scalar(b));
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
    for (name, kernel) in f16_kernels() {
        for sem in [SUB, SQ, SQH, SUBD, SQD, SUBS, SQS] {
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
                        run_f16(kernel, sem, &mut out[..len], oa, ob);
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
fn toward_zero_conversions_match_their_definitions() {
    use super::f16::{f32_to_f16_tz_inf, f32_to_f16_tz_sat};
    let check = |x: f32| {
        for (got, saturate) in [(f32_to_f16_tz_inf(x), false), (f32_to_f16_tz_sat(x), true)] {
            let want = toward_zero_reference(x, saturate);
            assert_eq!(
                got,
                want,
                "{x:e} ({:#010x}), saturate {saturate}: got {got:#06x}, want {want:#06x}",
                x.to_bits()
            );
            if x.is_nan() {
                // The NaN the nearest conversion makes, hardware or software.
                assert_eq!(got, f16::from_f32(x).to_bits(), "NaN {:#010x}", x.to_bits());
            }
        }
    };
    // Every float16 value and the float32 values either side of it (and of the midpoints above
    // it), both signs: the truncation's edges, the subnormal range, 65504 and what lies beyond.
    for h in 0..0x7c00u16 {
        let v = f16::from_bits(h).to_f32();
        let mid = (f64::from(v) + (f16_value(h + 1) - f16_value(h)) / 2.0) as f32;
        for x in [v, mid] {
            for bits in [x.to_bits().saturating_sub(1), x.to_bits(), x.to_bits() + 1] {
                check(f32::from_bits(bits));
                check(-f32::from_bits(bits));
            }
        }
    }
    // A spread over every float32 pattern, NaNs, infinities and float32 subnormals included.
    for bits in (0..=u32::MAX).step_by(997).chain([0x7f80_0000, 0xff80_0000, 0x7f80_0001, 0xffc0_1234, 1]) {
        check(f32::from_bits(bits));
    }
}

#[test]
fn toward_zero_truncates_and_overflows_as_directml_was_measured() {
    let h = f16::from_bits;
    // (a, b, sub toward-zero-inf (DirectML 1.13+), toward-zero-saturate (1.8-1.12), nearest)
    let cases: [(u16, u16, u16, u16, u16); 10] = [
        (0x3c00, 0x0001, 0x3bff, 0x3bff, 0x3c00), // 1 - 2^-24
        (0x3c02, 0x1000, 0x3c01, 0x3c01, 0x3c02), // (1 + 2^-9) - 2^-11: a tie, nearest even goes up
        (0x7bff, 0xbc00, 0x7c00, 0x7bff, 0x7bff), // 65504 - (-1): infinity from 1.13, 65504 before
        (0xfbff, 0x3c00, 0xfc00, 0xfbff, 0xfbff), // -65504 - 1
        (0x7bff, 0xfbff, 0x7c00, 0x7bff, 0x7c00), // 65504 - (-65504): nearest overflows too
        (0x7bff, 0x0000, 0x7bff, 0x7bff, 0x7bff), // 65504 itself stays
        (0x0003, 0x0001, 0x0002, 0x0002, 0x0002), // subnormals, exact
        (0x7c00, 0x3c00, 0x7c00, 0x7c00, 0x7c00), // infinity stays, saturating or not
        (0xfc00, 0x7bff, 0xfc00, 0xfc00, 0xfc00), // -infinity too
        (0xbc00, 0x8001, 0xbbff, 0xbbff, 0xbc00), // -1 + 2^-24: toward zero, so up
    ];
    for (a, b, inf, sat, nearest) in cases {
        assert_eq!(SUBD.scalar(h(a), h(b)).to_bits(), inf, "{a:#06x} - {b:#06x}");
        assert_eq!(SUBS.scalar(h(a), h(b)).to_bits(), sat, "{a:#06x} - {b:#06x}");
        assert_eq!(SUB.scalar(h(a), h(b)).to_bits(), nearest, "{a:#06x} - {b:#06x}");
    }
    // 300^2 = 90000: 65504 up to DirectML 1.12.
    assert_eq!(SQS.scalar(h(0x5cb0), h(0x0000)).to_bits(), 0x7bff);
    // sqdiff: the square rounded to float32, then truncated. (1 + 23 * 2^-10)^2 is
    // 1 + 46 * 2^-10 + 529 * 2^-20, over half a float16 ulp (2^-10) above 1 + 46 * 2^-10.
    assert_eq!(SQD.scalar(h(0x3c17), h(0x0000)).to_bits(), 0x3c2e);
    assert_eq!(SQ.scalar(h(0x3c17), h(0x0000)).to_bits(), 0x3c2f);
    // 3 * 2^-13 squared is 2.25 * 2^-24: subnormal, truncated.
    assert_eq!(SQD.scalar(h(0x0e00), h(0x0000)).to_bits(), 0x0002);
    // 300^2 = 90000: beyond 65504.
    assert_eq!(SQD.scalar(h(0x5cb0), h(0x0000)).to_bits(), 0x7c00);
    // A NaN stays the NaN the nearest conversion makes.
    assert_eq!(SUBD.scalar(h(0x7d01), h(0x3c00)).to_bits(), SUB.scalar(h(0x7d01), h(0x3c00)).to_bits());
    // bfloat16 has no DirectML type: the toward-zero rules are nearest for it.
    let bf = half::bf16::from_bits;
    assert_eq!(SUBD.scalar(bf(0x3f80), bf(0x0001)).to_bits(), SUB.scalar(bf(0x3f80), bf(0x0001)).to_bits());
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
    for sem in ALL_SEMS {
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
    // The toward-zero rules are float16's alone: bfloat16 rounds to nearest under them.
    let r = match (sem.op, sem.float16) {
        (Op::Sub, _) => x - y,
        (Op::SqDiff, Float16Rule::Nearest | Float16Rule::TowardZeroInf | Float16Rule::TowardZeroSaturate) => {
            (x - y) * (x - y)
        }
        (Op::SqDiff, Float16Rule::PerStep) => {
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
    for sem in ALL_SEMS {
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
