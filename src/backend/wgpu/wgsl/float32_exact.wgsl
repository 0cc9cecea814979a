// Arithmetic: float32 on the element's bits (`Wide` is `Elem`, a u32) for devices that flush
// float32 subnormals to zero. Where no operand and no result can be subnormal, the device's own
// IEEE subtract and multiply compute it. Elsewhere subtraction runs on the operands scaled by 2^64
// (never subnormal) and multiplication on integer significands, and the result's bits are built
// with integer operations, rounded to nearest even as IEEE-754 does: the same bits as the CPU.

const F32_SIGN: u32 = 0x80000000u;

// The device's float operations. With `FLUSH` (a prelude constant, true under
// TENSOROP_WGPU_EMULATE=1) they flush subnormal operands and results to zero themselves, as a
// flushing device does, so that a device which keeps subnormals tests the bounds below too.
fn flushed(x: f32) -> f32 {
    let u = bitcast<u32>(x);
    if (FLUSH && (u & 0x7f800000u) == 0u) {
        return bitcast<f32>(u & F32_SIGN);
    }
    return x;
}

fn dev_sub(a: f32, b: f32) -> f32 {
    return flushed(flushed(a) - flushed(b));
}

fn dev_mul(a: f32, b: f32) -> f32 {
    return flushed(flushed(a) * flushed(b));
}

// x * 2^64 for |x| < 2^-101 (biased exponent at most 25): exact, and zero or normal (at least
// 2^-85), so a flushing device keeps it.
fn scale_up(x: u32) -> f32 {
    let e = (x >> 23u) & 0xffu;
    if (e == 0u) {
        // Zero or subnormal: (x & 0x7fffff) * 2^-149 * 2^64, the sign put back by hand.
        let m = dev_mul(f32(x & 0x7fffffu), bitcast<f32>(0x15000000u));
        return bitcast<f32>(bitcast<u32>(m) | (x & F32_SIGN));
    }
    return bitcast<f32>(x + (64u << 23u));
}

// The bits of d * 2^-64, for d a multiple of 2^-85 that `scale_up` values gave.
fn scale_down(d: f32) -> u32 {
    let x = bitcast<u32>(d);
    if (((x >> 23u) & 0xffu) >= 65u) {
        return x - (64u << 23u);
    }
    // |d| < 2^-62: a subnormal result (or zero), |d| * 2^85 its significand, an integer below 2^23.
    return (x & F32_SIGN) | u32(dev_mul(abs(d), bitcast<f32>(0x6a000000u)));
}

fn step_sub(a: Wide, b: Wide) -> Wide {
    let ea = (a >> 23u) & 0xffu;
    let eb = (b >> 23u) & 0xffu;
    // An operand of 2^-101 or more: the exact difference is zero or at least 2^-126 in magnitude,
    // and a subnormal operand lies below a quarter of the other's unit in the last place, so
    // flushing it cannot change the rounded result.
    if (max(ea, eb) >= 26u) {
        return bitcast<u32>(dev_sub(bitcast<f32>(a), bitcast<f32>(b)));
    }
    // Both scaled differences are exact where the result is subnormal (Sterbenz), and round like
    // the unscaled one where it is normal.
    return scale_down(dev_sub(scale_up(a), scale_up(b)));
}

// p >> r rounded to nearest even, for 1 <= r and p below 2^48.
fn shift_round(p: vec2<u32>, r: u32) -> u32 {
    if (r > 49u) {
        return 0u;
    }
    var q: u32;
    if (r < 32u) {
        q = (p.x >> r) | (p.y << (32u - r));
    } else {
        q = p.y >> (r - 32u);
    }
    // The round bit (bit r - 1) and whether any bit below it is set.
    let k = r - 1u;
    var half: u32;
    var below: bool;
    if (k < 32u) {
        half = (p.x >> k) & 1u;
        below = (p.x & ((1u << k) - 1u)) != 0u;
    } else {
        half = (p.y >> (k - 32u)) & 1u;
        below = p.x != 0u || (p.y & ((1u << (k - 32u)) - 1u)) != 0u;
    }
    if (half == 1u && (below || (q & 1u) == 1u)) {
        q = q + 1u;
    }
    return q;
}

fn step_mul(a: Wide, b: Wide) -> Wide {
    let ea = (a >> 23u) & 0xffu;
    let eb = (b >> 23u) & 0xffu;
    let s = (a ^ b) & F32_SIGN;
    let zero = (a & 0x7fffffffu) == 0u || (b & 0x7fffffffu) == 0u;
    if (ea == 255u || eb == 255u) {
        // Infinity or NaN: a subnormal operand counts as the smallest normal of its sign (the
        // same result, not flushed; 0 * infinity stays NaN).
        let x = select(a, (a & F32_SIGN) | 0x800000u, ea == 0u && !zero);
        let y = select(b, (b & F32_SIGN) | 0x800000u, eb == 0u && !zero);
        return bitcast<u32>(dev_mul(bitcast<f32>(x), bitcast<f32>(y)));
    }
    if (zero) {
        return s;
    }
    // Normal operands whose exact product is at least 2^-126.
    if (ea != 0u && eb != 0u && ea + eb >= 128u) {
        return bitcast<u32>(dev_mul(bitcast<f32>(a), bitcast<f32>(b)));
    }
    // |a| = ma * 2^(xa - 150), a subnormal with the exponent of 1; the product p * 2^(xa + xb - 300).
    let xa = max(ea, 1u);
    let xb = max(eb, 1u);
    let ma = (a & 0x7fffffu) | select(0u, 0x800000u, ea != 0u);
    let mb = (b & 0x7fffffu) | select(0u, 0x800000u, eb != 0u);
    // Below 2^48 (`mul32` of params.wgsl: the 64-bit product from 16-bit limbs).
    let p = mul32(ma, mb);
    let top = select(i32(firstLeadingBit(p.x)), 32 + i32(firstLeadingBit(p.y)), p.y != 0u);
    // Keep 24 bits, or fewer where the result is subnormal (its unit is 2^-149).
    let r = max(top - 23, 151 - i32(xa + xb));
    var q: u32;
    if (r <= 0) {
        q = p.x << u32(-r);
    } else {
        q = shift_round(p, u32(r));
    }
    // q * 2^(xa + xb - 300 + r): a q of 2^23 or 2^24 carries into the exponent by itself.
    return s | ((u32(i32(xa + xb) - 151 + r) << 23u) + q);
}
