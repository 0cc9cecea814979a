// Arithmetic: IEEE-754 binary64 on the element's bits as `vec2<u32>` (low word, high word), for
// devices without SHADER_F64. Integer operations only, so the device's float modes play no part:
// round to nearest even, subnormals kept (never flushed), signed zeros, infinities, overflow to
// infinity; a NaN operand comes back quieted (the first NaN operand, as x86 does), an invalid
// operation gives the default NaN. Uses `add64`, `sub64` and `mul32` from the shared part.
// docs/backends.md, "Emulated float64", describes the representation and the cost.

const SIGN: u32 = 0x80000000u;
// The exponent field in the high word, and its all-ones value (infinities and NaN).
const EXP_MASK: u32 = 0x7ff00000u;
// The quiet bit of a NaN, in the high word.
// Equivalent: a NaN's payload: NaNs compare by position only (the contract: NaN in, NaN out, any
// payload).
// mutants-wgsl equivalent: `0x00080000u -> 0x80001u`, `0x00080000u -> 0x7ffffu`
const QUIET: u32 = 0x00080000u;
// The stored mantissa's bits in the high word, and the implicit bit just above them.
const MANT_HI: u32 = 0x000fffffu;
const IMPLICIT: u32 = 0x00100000u;

fn is_nan64(x: vec2<u32>) -> bool {
    return (x.y & EXP_MASK) == EXP_MASK && ((x.y & MANT_HI) | x.x) != 0u;
}

fn is_zero64(x: vec2<u32>) -> bool {
    // Equivalent: `mul_f64` (the only user here) only ever squares (`d * d`, the one product of
    // `sqdiff`): a check or term of the second operand repeats the first's, and a subnormal's
    // square underflows to zero whatever its exponent arithmetic.
    // mutants-wgsl equivalent: `& -> |`, `0u -> 1u`
    return ((x.y & ~SIGN) | x.x) == 0u;
}

// a < b as unsigned 64-bit integers.
fn lt64(a: vec2<u32>, b: vec2<u32>) -> bool {
    // Equivalent: operands of equal magnitude swapped: a sum of equal signs commutes, and opposite
    // signs cancel to +0 either way.
    // mutants-wgsl equivalent: `< -> <=#2`
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

// x << n, for n < 64.
fn shl64(x: vec2<u32>, n: u32) -> vec2<u32> {
    if (n == 0u) {
        return x;
    }
    if (n < 32u) {
        return vec2<u32>(x.x << n, (x.y << n) | (x.x >> (32u - n)));
    }
    // Equivalent: a 1 in bit 0 of an exactly cancelled difference, below the three guard bits: it
    // never rounds up.
    // mutants-wgsl equivalent: `0u -> 1u`
    // Equivalent: WGSL takes a run-time shift amount modulo 32, so `n + 32` and `n - 32` shift
    // alike.
    // mutants-wgsl equivalent: `- -> +`
    return vec2<u32>(0u, x.x << (n - 32u));
}

// x >> n with every bit shifted out or-ed into bit 0 (the sticky bit), for any n.
fn shr_sticky(x: vec2<u32>, n: u32) -> vec2<u32> {
    if (n == 0u) {
        return x;
    }
    // Equivalent: the sticky bit of an operand shifted 63 places or more: a value of at most 56
    // bits is then below a quarter ulp of the other operand, and the sum rounds to that operand
    // with or without the sticky bit.
    // mutants-wgsl equivalent: `64u -> 63u`
    if (n >= 64u) {
        // mutants-wgsl equivalent (the reason above): `select dropped: select(0u, 1u, (x.x | x.y) != 0u) -> 0u`
        // mutants-wgsl equivalent (the reason above): `select arms swapped`, `0u -> 1u#1`
        // mutants-wgsl equivalent (the reason above): `1u -> 2u`, `1u -> 0u`, `| -> &`
        // mutants-wgsl equivalent (the reason above): `!= -> ==`, `0u -> 1u#2`
        return vec2<u32>(select(0u, 1u, (x.x | x.y) != 0u), 0u);
    }
    var r: vec2<u32>;
    var lost: u32;
    if (n < 32u) {
        r = vec2<u32>((x.x >> n) | (x.y << (32u - n)), x.y >> n);
        // Equivalent: the lost-bits mask takes one bit more: the result's own bit 0, which the
        // sticky bit is or-ed into; nothing changes.
        // mutants-wgsl equivalent: `32u -> 31u`
        lost = x.x << (32u - n);
    } else if (n == 32u) {
        r = vec2<u32>(x.y, 0u);
        lost = x.x;
    } else {
        // Equivalent: WGSL takes a run-time shift amount modulo 32, so `n + 32` and `n - 32` shift
        // alike.
        // mutants-wgsl equivalent: `- -> +`
        let k = n - 32u;
        r = vec2<u32>(x.y >> k, 0u);
        // Equivalent: the lost-bits mask takes one bit more: the result's own bit 0, which the
        // sticky bit is or-ed into; nothing changes.
        // mutants-wgsl equivalent: `32u -> 31u`
        lost = x.x | (x.y << (32u - k));
    }
    return vec2<u32>(r.x | select(0u, 1u, lost != 0u), r.y);
}

fn clz64(x: vec2<u32>) -> u32 {
    if (x.y != 0u) {
        return countLeadingZeros(x.y);
    }
    return 32u + countLeadingZeros(x.x);
}

// The significand with its implicit bit (none for subnormals and zero).
fn significand(x: vec2<u32>) -> vec2<u32> {
    let e = (x.y & EXP_MASK) != 0u;
    return vec2<u32>(x.x, (x.y & MANT_HI) | select(0u, IMPLICIT, e));
}

// The quieted NaN of a NaN operand.
fn quiet(x: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(x.x, x.y | QUIET);
}

// The default NaN of an invalid operation (x86's: negative, quiet, no payload).
fn default_nan() -> vec2<u32> {
    // Equivalent: a NaN's payload: NaNs compare by position only (the contract: NaN in, NaN out,
    // any payload).
    // mutants-wgsl equivalent: `0u -> 1u`
    return vec2<u32>(0u, SIGN | EXP_MASK | QUIET);
}

// Rounds m * 2^(e - 1078) to nearest even and encodes it with `sign`: m has three guard bits
// below its 53 (bit 0 sticky), its leading bit at bit 55, or lower only when e is 1
// (subnormal results). e >= 1.
fn round_pack(sign: u32, e: i32, m: vec2<u32>) -> vec2<u32> {
    // Equivalent: `round_pack` tests overflow twice (the exponent before rounding, the encoded
    // exponent after); either test alone catches every overflow.
    // mutants-wgsl equivalent: `>= -> >`, `2047 -> 2048`
    if (e >= 2047) {
        return vec2<u32>(0u, sign | EXP_MASK);
    }
    let low = m.x & 7u;
    var q = vec2<u32>((m.x >> 3u) | (m.y << 29u), m.y >> 3u);
    if (low > 4u || (low == 4u && (q.x & 1u) == 1u)) {
        q = add64(q, vec2<u32>(1u, 0u));
    }
    // (e - 1) * 2^52 + q: the implicit bit (and a carry out of rounding) adds into the exponent
    // field, and a subnormal that rounds up to 2^52 becomes the smallest normal by itself.
    let hi = (u32(e - 1) << 20u) + q.y;
    // Equivalent: `round_pack` tests overflow twice (the exponent before rounding, the encoded
    // exponent after); either test alone catches every overflow.
    // mutants-wgsl equivalent: `>= -> >`
    if (hi >= EXP_MASK) {
        return vec2<u32>(0u, sign | EXP_MASK);
    }
    return vec2<u32>(q.x, sign | hi);
}

// a + (b with its sign flipped by `flip`): `flip` is SIGN for a - b, 0 for a + b.
fn add_f64(a: vec2<u32>, b_in: vec2<u32>, flip: u32) -> vec2<u32> {
    let b = vec2<u32>(b_in.x, b_in.y ^ flip);
    if ((a.y & EXP_MASK) == EXP_MASK || (b.y & EXP_MASK) == EXP_MASK) {
        if (is_nan64(a)) {
            return quiet(a);
        }
        if (is_nan64(b_in)) {
            // The NaN operand as given, sign included.
            return quiet(b_in);
        }
        if ((a.y & EXP_MASK) == EXP_MASK) {
            // Equivalent: both operands are infinities here: their high words can differ in the
            // sign bit only.
            // mutants-wgsl equivalent: `mask dropped: & SIGN`
            if ((b.y & EXP_MASK) == EXP_MASK && ((a.y ^ b.y) & SIGN) != 0u) {
                return default_nan();
            }
            return a;
        }
        return b;
    }
    // x: the operand of larger magnitude.
    var x = a;
    var y = b;
    if (lt64(vec2<u32>(a.x, a.y & ~SIGN), vec2<u32>(b.x, b.y & ~SIGN))) {
        x = b;
        y = a;
    }
    // Subnormals have exponent 1's unit.
    let ex = max((x.y >> 20u) & 0x7ffu, 1u);
    let ey = max((y.y >> 20u) & 0x7ffu, 1u);
    let mx = shl64(significand(x), 3u);
    let my = shr_sticky(shl64(significand(y), 3u), ex - ey);
    var e = i32(ex);
    var m: vec2<u32>;
    if (((x.y ^ y.y) & SIGN) == 0u) {
        m = add64(mx, my);
        if ((m.y & 0x01000000u) != 0u) {
            // A carry into bit 56.
            m = shr_sticky(m, 1u);
            e = e + 1;
        }
    } else {
        m = sub64(mx, my);
        if ((m.x | m.y) == 0u) {
            // Exact cancellation: +0 when rounding to nearest.
            return vec2<u32>(0u, 0u);
        }
        // Leading bit back to bit 55, but not below exponent 1. A shift of more than one
        // happens only when ex - ey <= 1, where no bit was shifted out of y: it is exact.
        let s = min(clz64(m) - 8u, u32(e - 1));
        m = shl64(m, s);
        e = e - i32(s);
    }
    return round_pack(x.y & SIGN, e, m);
}

// a * b.
fn mul_f64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    // Equivalent: `mul_f64` (the only user here) only ever squares (`d * d`, the one product of
    // `sqdiff`): a check or term of the second operand repeats the first's, and a subnormal's
    // square underflows to zero whatever its exponent arithmetic.
    // mutants-wgsl equivalent: `mask dropped: & SIGN`
    let sign = (a.y ^ b.y) & SIGN;
    // mutants-wgsl equivalent (the reason above): `mask dropped: & EXP_MASK`, `|| -> &&`
    if ((a.y & EXP_MASK) == EXP_MASK || (b.y & EXP_MASK) == EXP_MASK) {
        if (is_nan64(a)) {
            return quiet(a);
        }
        if (is_nan64(b)) {
            return quiet(b);
        }
        // Equivalent: `mul_f64` (the only user here) only ever squares (`d * d`, the one product of
        // `sqdiff`): a check or term of the second operand repeats the first's, and a subnormal's
        // square underflows to zero whatever its exponent arithmetic.
        // mutants-wgsl equivalent: `|| -> &&`
        if (is_zero64(a) || is_zero64(b)) {
            return default_nan();
        }
        return vec2<u32>(0u, sign | EXP_MASK);
    }
    // Equivalent: `mul_f64` (the only user here) only ever squares (`d * d`, the one product of
    // `sqdiff`): a check or term of the second operand repeats the first's, and a subnormal's
    // square underflows to zero whatever its exponent arithmetic.
    // mutants-wgsl equivalent: `|| -> &&`
    if (is_zero64(a) || is_zero64(b)) {
        return vec2<u32>(0u, sign);
    }
    // Significands normalised to bit 52, subnormals included, with their exponents.
    var ma = significand(a);
    var mb = significand(b);
    let na = clz64(ma) - 11u;
    let nb = clz64(mb) - 11u;
    ma = shl64(ma, na);
    mb = shl64(mb, nb);
    // Equivalent: `mul_f64` (the only user here) only ever squares (`d * d`, the one product of
    // `sqdiff`): a check or term of the second operand repeats the first's, and a subnormal's
    // square underflows to zero whatever its exponent arithmetic.
    // mutants-wgsl equivalent: `1u -> 2u`, `1u -> 0u`, `- -> +`
    let ea = i32(max((a.y >> 20u) & 0x7ffu, 1u)) - i32(na);
    // mutants-wgsl equivalent (the reason above): `1u -> 2u`, `1u -> 0u`, `- -> +`
    let eb = i32(max((b.y >> 20u) & 0x7ffu, 1u)) - i32(nb);
    // The 106-bit product in four words w0..w3, from 32x32-bit partial products.
    let p00 = mul32(ma.x, mb.x);
    let mid = add64(mul32(ma.x, mb.y), mul32(ma.y, mb.x));
    let v = add64(vec2<u32>(p00.y, 0u), mid);
    let top = add64(vec2<u32>(v.y, 0u), mul32(ma.y, mb.y));
    var w0 = p00.x;
    var w1 = v.x;
    var w2 = top.x;
    var w3 = top.y;
    // The product is in [2^104, 2^106): bring its leading bit to bit 105.
    var e = ea + eb - 1023;
    if ((w3 & 0x200u) != 0u) {
        e = e + 1;
    } else {
        w3 = (w3 << 1u) | (w2 >> 31u);
        w2 = (w2 << 1u) | (w1 >> 31u);
        // Equivalent: bits that reach the sticky bit either way (the lowest product word's top bit
        // is also in the next word's sticky bits).
        // mutants-wgsl equivalent: `31u -> 30u`
        w1 = (w1 << 1u) | (w0 >> 31u);
        // mutants-wgsl equivalent (the reason above): `1u -> 0u`
        w0 = w0 << 1u;
    }
    // Bits 50..105 with the rest as the sticky bit.
    // Equivalent: a sticky bit of 2 instead of 1: the rounding decision (guard bits above, at or
    // below 100) is the same.
    // mutants-wgsl equivalent: `1u -> 2u`
    let sticky = select(0u, 1u, (w0 | (w1 & 0x3ffffu)) != 0u);
    var m = vec2<u32>((w1 >> 18u) | (w2 << 14u) | sticky, (w2 >> 18u) | (w3 << 14u));
    // Equivalent: `e < 1` against `e <= 1` or `e < 2`: at e = 1 the shift is by zero.
    // mutants-wgsl equivalent: `< -> <=`, `1 -> 2`
    if (e < 1) {
        // Subnormal (or zero after rounding): shift down to exponent 1's unit.
        // Equivalent: the sticky bit of an operand shifted 63 places or more: a value of at most 56
        // bits is then below a quarter ulp of the other operand, and the sum rounds to that operand
        // with or without the sticky bit.
        // mutants-wgsl equivalent: `64 -> 65`, `64 -> 63`
        m = shr_sticky(m, u32(min(1 - e, 64)));
        e = 1;
    }
    return round_pack(sign, e, m);
}

fn step_sub(a: Wide, b: Wide) -> Wide {
    return add_f64(a, b, SIGN);
}

fn step_mul(a: Wide, b: Wide) -> Wide {
    return mul_f64(a, b);
}
