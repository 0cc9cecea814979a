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
    // Equivalent: the emulated mode's own flushing (a test aid) flushing fewer values or none: the
    // results stay exact (the path is exact on a device that keeps subnormals); only the test of
    // the bounds gets weaker, and the mutants of the bounds themselves are caught.
    // mutants-wgsl equivalent: `mask dropped: & 0x7f800000u`, `& -> |`
    // mutants-wgsl equivalent: `0x7f800000u -> 0x7f800001u`, `0u -> 1u`
    if (FLUSH && (u & 0x7f800000u) == 0u) {
        // mutants-wgsl equivalent (the reason above): `mask dropped: & F32_SIGN`
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
    // Equivalent: the normal branch starting one exponent later: a result of biased exponent 1
    // (2^-126 to 2^-125) comes out the same from the subnormal branch, whose |d| * 2^85 is then its
    // significand with the hidden bit, which is its encoding.
    // mutants-wgsl equivalent: `0xffu -> 0xfeu`, `>= -> >`, `65u -> 66u`
    if (((x >> 23u) & 0xffu) >= 65u) {
        return x - (64u << 23u);
    }
    // |d| < 2^-62: a subnormal result (or zero), |d| * 2^85 its significand, an integer below 2^23.
    return (x & F32_SIGN) | u32(dev_mul(abs(d), bitcast<f32>(0x6a000000u)));
}

fn step_sub(a: Wide, b: Wide) -> Wide {
    // Equivalent: the exponents masked with 0xfe: the bound below, 26, is even, so `e >= 26` and
    // `(e & 0xfe) >= 26` agree.
    // mutants-wgsl equivalent: `0xffu -> 0xfeu`
    let ea = (a >> 23u) & 0xffu;
    // mutants-wgsl equivalent (the reason above): `0xffu -> 0xfeu`
    let eb = (b >> 23u) & 0xffu;
    // An operand of 2^-101 or more: the exact difference is zero or at least 2^-126 in magnitude,
    // and a subnormal operand lies below a quarter of the other's unit in the last place, so
    // flushing it cannot change the rounded result.
    // Equivalent: a higher bound: more operands take the scaled path, which is exact for any
    // operand below 2^63.
    // mutants-wgsl equivalent: `>= -> >`, `26u -> 27u`
    if (max(ea, eb) >= 26u) {
        return bitcast<u32>(dev_sub(bitcast<f32>(a), bitcast<f32>(b)));
    }
    // Both scaled differences are exact where the result is subnormal (Sterbenz), and round like
    // the unscaled one where it is normal.
    return scale_down(dev_sub(scale_up(a), scale_up(b)));
}

// p >> r rounded to nearest even, for 1 <= r and p below 2^48.
fn shift_round(p: vec2<u32>, r: u32) -> u32 {
    // Equivalent: returning early at 49 or 50: the product is below 2^48, so shifted by 49 or 50
    // its kept bits and round bit are zero either way.
    // mutants-wgsl equivalent: `> -> >=`, `49u -> 50u`, `49u -> 48u`
    if (r > 49u) {
        return 0u;
    }
    var q: u32;
    // Equivalent: only squares reach `step_mul` (`sqdiff`'s `d * d`): a shift r = 151 - 2e is odd,
    // so r = 32 (round bit 31), where these differ, never occurs.
    // mutants-wgsl equivalent: `< -> <=`, `32u -> 33u`
    if (r < 32u) {
        q = (p.x >> r) | (p.y << (32u - r));
    } else {
        // Equivalent: WGSL takes a run-time shift amount modulo 32, so `n + 32` and `n - 32` shift
        // alike.
        // mutants-wgsl equivalent: `- -> +`
        q = p.y >> (r - 32u);
    }
    // The round bit (bit r - 1) and whether any bit below it is set.
    let k = r - 1u;
    var half: u32;
    var below: bool;
    // Equivalent: only squares reach `step_mul` (`sqdiff`'s `d * d`): a shift r = 151 - 2e is odd,
    // so r = 32 (round bit 31), where these differ, never occurs.
    // mutants-wgsl equivalent: `32u -> 31u`
    if (k < 32u) {
        half = (p.x >> k) & 1u;
        below = (p.x & ((1u << k) - 1u)) != 0u;
    } else {
        // Equivalent: WGSL takes a run-time shift amount modulo 32, so `n + 32` and `n - 32` shift
        // alike.
        // mutants-wgsl equivalent: `- -> +`
        half = (p.y >> (k - 32u)) & 1u;
        // mutants-wgsl equivalent (the reason above): `- -> +#1`
        below = p.x != 0u || (p.y & ((1u << (k - 32u)) - 1u)) != 0u;
    }
    // Equivalent: only squares: an exact tie of a square has the even quotient (j^2 - 1) / 2 (j
    // odd), so a tie never rounds up, whatever the mutated test of the quotient's parity.
    // mutants-wgsl equivalent: `mask dropped: & 1u`, `1u -> 2u#2`, `1u -> 0u#2`, `1u -> 2u#3`
    if (half == 1u && (below || (q & 1u) == 1u)) {
        q = q + 1u;
    }
    return q;
}

fn step_mul(a: Wide, b: Wide) -> Wide {
    let ea = (a >> 23u) & 0xffu;
    let eb = (b >> 23u) & 0xffu;
    // Equivalent: only squares: both operands are the same value, so the sign is always +, and for
    // a zero the tests of one operand's or both operands' magnitude agree; a zero, or the smallest
    // subnormal, that misses the zero test gives zero through the integer path too.
    // mutants-wgsl equivalent: `mask dropped: & F32_SIGN`
    let s = (a ^ b) & F32_SIGN;
    // mutants-wgsl equivalent (the reason above): `mask dropped: & 0x7fffffffu`, `& -> |`
    // mutants-wgsl equivalent (the reason above): `0x7fffffffu -> 0x7ffffffeu`, `0u -> 1u`
    // mutants-wgsl equivalent (the reason above): `|| -> &&`
    let zero = (a & 0x7fffffffu) == 0u || (b & 0x7fffffffu) == 0u;
    // Equivalent: only squares: an infinity or NaN times itself takes the device's multiply with or
    // without the infinity branch (which only matters beside a subnormal), and a finite of biased
    // exponent 254 squares the same in it.
    // mutants-wgsl equivalent: `255u -> 256u`, `255u -> 254u`
    // mutants-wgsl equivalent (the reason above): `|| -> &&`
    if (ea == 255u || eb == 255u) {
        // Infinity or NaN: a subnormal operand counts as the smallest normal of its sign (the
        // same result, not flushed; 0 * infinity stays NaN).
        // Equivalent: only squares: the substitution of a subnormal operand never applies, since
        // both operands are the same infinity or NaN (the substitution dropped, its arms swapped,
        // its sign, mask and constant changed, its condition inverted).
        // mutants-wgsl equivalent: `select dropped: select(a, (a & F32_SIGN) | 0x800000u, ea == 0u && !zero) -> a`
        // mutants-wgsl equivalent: `select arms swapped`, `mask dropped: & F32_SIGN`, `& -> |`
        // mutants-wgsl equivalent: `| -> &`, `0x800000u -> 0x800001u`, `0x800000u -> 0x7fffffu`
        // mutants-wgsl equivalent: `== -> !=`, `0u -> 1u`, `&& -> ||`
        let x = select(a, (a & F32_SIGN) | 0x800000u, ea == 0u && !zero);
        // mutants-wgsl equivalent (the reason above): `select dropped: select(b, (b & F32_SIGN) | 0x800000u, eb == 0u && !zero) -> b`
        // mutants-wgsl equivalent (the reason above): `select arms swapped`
        // mutants-wgsl equivalent (the reason above): `mask dropped: & F32_SIGN`, `& -> |`
        // mutants-wgsl equivalent (the reason above): `| -> &`, `0x800000u -> 0x800001u`
        // mutants-wgsl equivalent (the reason above): `0x800000u -> 0x7fffffu`, `== -> !=`
        // mutants-wgsl equivalent (the reason above): `0u -> 1u`, `&& -> ||`
        let y = select(b, (b & F32_SIGN) | 0x800000u, eb == 0u && !zero);
        return bitcast<u32>(dev_mul(bitcast<f32>(x), bitcast<f32>(y)));
    }
    if (zero) {
        return s;
    }
    // Normal operands whose exact product is at least 2^-126.
    // Equivalent: only squares: the device's multiply is taken for normal operands whose exponent
    // sum is at least 128. A square's sum is even, so the bound at 127 or 129, or `>` for `>=`,
    // moves no square (at 129 a sum of 128 takes the integer path, which is exact for it too); an
    // operand of exponent 1 (`ea != 1` for `ea != 0`) has a square far below that bound either way.
    // mutants-wgsl equivalent: `0u -> 1u`, `>= -> >`, `128u -> 129u`, `128u -> 127u`
    if (ea != 0u && eb != 0u && ea + eb >= 128u) {
        return bitcast<u32>(dev_mul(bitcast<f32>(a), bitcast<f32>(b)));
    }
    // |a| = ma * 2^(xa - 150), a subnormal with the exponent of 1; the product p * 2^(xa + xb - 300).
    // Equivalent: only squares: an operand of biased exponent 0 or 1 is below 2^-125, so its square
    // is below 2^-250, under half the smallest subnormal: zero whatever its exponent (`max(ea, 2)`,
    // `max(ea, 0)`) or hidden bit (set or cleared at the wrong exponent) says.
    // mutants-wgsl equivalent: `1u -> 2u`, `1u -> 0u`
    let xa = max(ea, 1u);
    // mutants-wgsl equivalent (the reason above): `1u -> 2u`, `1u -> 0u`
    let xb = max(eb, 1u);
    // mutants-wgsl equivalent (the reason above): `0u -> 1u`
    let ma = (a & 0x7fffffu) | select(0u, 0x800000u, ea != 0u);
    // mutants-wgsl equivalent (the reason above): `0u -> 1u`
    let mb = (b & 0x7fffffu) | select(0u, 0x800000u, eb != 0u);
    // Below 2^48 (`mul32` of params.wgsl: the 64-bit product from 16-bit limbs).
    let p = mul32(ma, mb);
    // Equivalent: only squares: in the integer path a square's exponent sum 2e is at most 126, so
    // the subnormal shift 151 - 2e is at least 25, while the product's leading bit `top` is at most
    // 47 (`top - 23` at most 24, or 25 with 22, a tie): `r` is always the subnormal shift, `top` is
    // never used, and the branch for `r <= 0` never runs.
    // mutants-wgsl equivalent: `select dropped: select(i32(firstLeadingBit(p.x)), 32 + i32(firstLeadingBit(p.y)), p.y != 0u) -> i32(firstLeadingBit(p.x))`
    // mutants-wgsl equivalent: `select arms swapped`, `32 -> 33`, `32 -> 31`, `+ -> -`
    // mutants-wgsl equivalent: `!= -> ==`, `0u -> 1u`
    let top = select(i32(firstLeadingBit(p.x)), 32 + i32(firstLeadingBit(p.y)), p.y != 0u);
    // Keep 24 bits, or fewer where the result is subnormal (its unit is 2^-149).
    // Equivalent: only squares: in the integer path a square's exponent sum 2e is at most 126, so
    // the subnormal shift 151 - 2e is at least 25, while the product's leading bit `top` is at most
    // 47 (`top - 23` at most 24, or 25 with 22, a tie): `r` is always the subnormal shift, `top` is
    // never used, and the branch for `r <= 0` never runs.
    // mutants-wgsl equivalent: `23 -> 24`, `23 -> 22`
    let r = max(top - 23, 151 - i32(xa + xb));
    var q: u32;
    // Equivalent: only squares: in the integer path a square's exponent sum 2e is at most 126, so
    // the subnormal shift 151 - 2e is at least 25, while the product's leading bit `top` is at most
    // 47 (`top - 23` at most 24, or 25 with 22, a tie): `r` is always the subnormal shift, `top` is
    // never used, and the branch for `r <= 0` never runs.
    // mutants-wgsl equivalent: `<= -> <`, `0 -> 1`
    if (r <= 0) {
        // mutants-wgsl equivalent (the reason above): `<< -> >>`
        q = p.x << u32(-r);
    } else {
        q = shift_round(p, u32(r));
    }
    // q * 2^(xa + xb - 300 + r): a q of 2^23 or 2^24 carries into the exponent by itself.
    // Equivalent: only squares: with `r` the subnormal shift, the result's exponent field `xa + xb
    // - 151 + r` is 0, however it is shifted into place (a rounded `q` of 2^23 carries into the
    // exponent by itself).
    // mutants-wgsl equivalent: `<< -> >>`, `23u -> 24u`, `23u -> 22u`
    return s | ((u32(i32(xa + xb) - 151 + r) << 23u) + q);
}
