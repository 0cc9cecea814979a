// float16 <-> float32 with integer operations (float16 bits in the low 16 bits of a u32), rounded
// to nearest even whatever the device's conversions do: the emulated float16 kernels' `widen` and
// `narrow`, and every float16 kernel's `step_round` (a device may fold f32(f16(x)) into x).

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
        return bitcast<f32>(s | 0x7f800000u | (m << 13u));
    }
    return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}

// float32 -> float16 bits, rounded to nearest even with integer operations.
fn f32_to_f16_bits(f: f32) -> u32 {
    let x = bitcast<u32>(f);
    let s = (x >> 16u) & 0x8000u;
    let ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
        return s | 0x7e00u | ((ax >> 13u) & 0x3ffu);
    }
    if (ax >= 0x477ff000u) {
        return s | 0x7c00u;
    }
    if (ax >= 0x38800000u) {
        let r = ax + 0xfffu + ((ax >> 13u) & 1u);
        return s | ((r - 0x38000000u) >> 13u);
    }
    let e = ax >> 23u;
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
