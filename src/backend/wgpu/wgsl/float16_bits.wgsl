// float16 <-> float32 with integer operations (float16 bits in the low 16 bits of a u32), rounded
// to nearest even (or toward zero) whatever the device's conversions do: the emulated
// float16 kernels' `widen` and `narrow`, and every float16 kernel's `step_round` and
// `step_round_tz_inf` (a device may fold f32(f16(x)) into x).

// float16 bits -> float32, exactly (float16 subnormals are normal float32 values).
fn f16_bits_to_f32(h: u32) -> f32 {
    let s = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0u) {
        let v = f32(m) * 5.9604644775390625e-8;
        return bitcast<f32>(bitcast<u32>(v) | s);
    }
    if (e == 31u) {
        // Equivalent: a NaN's payload: NaNs compare by position only (the contract: NaN in, NaN
        // out, any payload).
        // mutants-wgsl equivalent: `13u -> 12u`
        return bitcast<f32>(s | 0x7f800000u | (m << 13u));
    }
    return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}

// float32 -> float16 bits, rounded to nearest even with integer operations.
fn f32_to_f16_bits(f: f32) -> u32 {
    let x = bitcast<u32>(f);
    let s = (x >> 16u) & 0x8000u;
    let ax = x & 0x7fffffffu;
    // Equivalent: a float32 NaN that reaches `narrow` is one widened from float16 (its low 13 bits
    // zero) or one the arithmetic made (quiet): 0x7f800001 never does.
    // mutants-wgsl equivalent: `0x7f800000u -> 0x7f800001u`
    if (ax > 0x7f800000u) {
        // Equivalent: a NaN's payload: NaNs compare by position only (the contract: NaN in, NaN
        // out, any payload).
        // mutants-wgsl equivalent: `0x7e00u -> 0x7e01u`, `0x7e00u -> 0x7dffu`, `>> -> <<`
        // mutants-wgsl equivalent: `13u -> 14u`, `13u -> 12u`, `mask dropped: & 0x3ffu`, `& -> |`
        // mutants-wgsl equivalent: `0x3ffu -> 0x400u`, `0x3ffu -> 0x3feu`
        return s | 0x7e00u | ((ax >> 13u) & 0x3ffu);
    }
    // Equivalent: 65520 (0x477ff000), the midpoint between float16's largest finite value and 2^16,
    // rounds to infinity through the normal path too (`>` for `>=`, the bound one higher). The
    // bound one lower sends only 0x477fefff (65520 - 2^-8) to infinity, and no float16 `sub` or
    // `sqdiff` gives that value: a search over every pair whose difference is near 65520 or near
    // 256 finds none.
    // mutants-wgsl equivalent: `>= -> >`, `0x477ff000u -> 0x477ff001u`
    // mutants-wgsl equivalent: `0x477ff000u -> 0x477fefffu`
    if (ax >= 0x477ff000u) {
        return s | 0x7c00u;
    }
    // Equivalent: at the bound between normal and subnormal results, 2^-14 (0x38800000) and the
    // float32 value just below it (0x387fffff) round to 0x0400 through either branch.
    // mutants-wgsl equivalent: `>= -> >`, `0x38800000u -> 0x38800001u`
    // mutants-wgsl equivalent: `0x38800000u -> 0x387fffffu`
    if (ax >= 0x38800000u) {
        let r = ax + 0xfffu + ((ax >> 13u) & 1u);
        return s | ((r - 0x38000000u) >> 13u);
    }
    let e = ax >> 23u;
    // Equivalent: a float32 value of biased exponent 101 (below 2^-25, less than half the smallest
    // subnormal) rounds to zero through the general branch too.
    // mutants-wgsl equivalent: `102u -> 101u`
    if (e < 102u) {
        return s;
    }
    let m = (ax & 0x7fffffu) | 0x800000u;
    let shift = 126u - e;
    let q = m >> shift;
    let rem = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    var r = q;
    if (rem > half || (rem == half && (q & 1u) == 1u)) {
        r = q + 1u;
    }
    return s | r;
}

// The intermediate rounding of `sqdiff --half-precision` in every float16 kernel, with integer
// operations even where the device has `f16`: a device's compiler may fold f32(f16(x)) into x,
// and one did (an NVIDIA H100's Vulkan driver).
fn step_round(x: f32) -> f32 {
    return f16_bits_to_f32(f32_to_f16_bits(x));
}

// float32 -> float16 bits toward zero as DirectML 1.13 and later store float16 (`--float16
// toward-zero-inf`), with integer operations: subnormals kept, any value beyond 65504 in
// magnitude (infinity included) to infinity, a NaN as `f32_to_f16_bits` makes it.
fn f32_to_f16_tz_inf_bits(f: f32) -> u32 {
    let x = bitcast<u32>(f);
    let s = (x >> 16u) & 0x8000u;
    let ax = x & 0x7fffffffu;
    // Equivalent: infinity (0x7f800000) becomes infinity through either branch.
    // mutants-wgsl equivalent: `> -> >=`, `0x7f800000u -> 0x7f7fffffu`
    // Equivalent: a float32 NaN that reaches here is one widened from float16 (its low 13 bits
    // zero) or one the arithmetic made (quiet): 0x7f800001 never does.
    // mutants-wgsl equivalent: `0x7f800000u -> 0x7f800001u`
    if (ax > 0x7f800000u) {
        return f32_to_f16_bits(f);
    }
    // Beyond 65504 (0x477fe000), the largest finite float16.
    if (ax > 0x477fe000u) {
        return s | 0x7c00u;
    }
    // Equivalent: 2^-14 (0x38800000), the bound between normal and subnormal results, becomes
    // 0x0400 through either branch, and the float32 value just below it (0x387fffff) 0x03ff.
    // mutants-wgsl equivalent: `>= -> >`, `0x38800000u -> 0x38800001u`
    // mutants-wgsl equivalent: `0x38800000u -> 0x387fffffu`
    if (ax >= 0x38800000u) {
        return s | ((ax - 0x38000000u) >> 13u);
    }
    // Subnormal results: whole units of 2^-24, from biased float32 exponent 103 (2^-24) up.
    let e = ax >> 23u;
    // Equivalent: a float32 value of biased exponent 102 (below 2^-24) truncates to zero through
    // the general branch too (its significand is shifted out).
    // mutants-wgsl equivalent: `103u -> 102u`
    if (e < 103u) {
        return s;
    }
    // Equivalent: the significand's lowest bit: every subnormal result shifts out 14 bits or more.
    // mutants-wgsl equivalent: `0x7fffffu -> 0x7ffffeu`, `0x800000u -> 0x800001u`
    let m = (ax & 0x7fffffu) | 0x800000u;
    return s | (m >> (126u - e));
}

// The conversion of `--float16 toward-zero-inf` in every float16 kernel, before `narrow` (which
// then finds the value exact), with integer operations as `step_round`.
fn step_round_tz_inf(x: f32) -> f32 {
    return f16_bits_to_f32(f32_to_f16_tz_inf_bits(x));
}

// float32 -> float16 bits by Direct3D's written rule, as DirectML 1.8 to 1.12 store float16
// (`--float16 toward-zero-saturate`): as `f32_to_f16_tz_inf_bits`, but a finite value beyond
// 65504 in magnitude saturates at 65504 of its sign (infinities stay infinite).
fn f32_to_f16_tz_sat_bits(f: f32) -> u32 {
    let ax = bitcast<u32>(f) & 0x7fffffffu;
    if (ax > 0x477fe000u && ax < 0x7f800000u) {
        return ((bitcast<u32>(f) >> 16u) & 0x8000u) | 0x7bffu;
    }
    return f32_to_f16_tz_inf_bits(f);
}

// The conversion of `--float16 toward-zero-saturate` in every float16 kernel, as
// `step_round_tz_inf`.
fn step_round_tz_sat(x: f32) -> f32 {
    return f16_bits_to_f32(f32_to_f16_tz_sat_bits(x));
}
