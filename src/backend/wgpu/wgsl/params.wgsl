// The uniform block, the buffers and the offset helpers every kernel shares. `Params` has the
// layout of `shader::Params` in Rust, member for member (a test checks it with naga).
// Uses from the prelude: `Word`, `MAX_INTERVALS`.

struct Params {
    // Elements in this chunk.
    n: u32,
    // Flat output index of the chunk's first element.
    base: u32,
    rank: u32,
    // Bit i set: input i is uploaded per chunk in output order (index = position in chunk).
    chunk_local: u32,
    // Bit i set: input i is uploaded per chunk as the intervals listed for it in `intervals`.
    windowed: u32,
    // 1: offsets are computed in 64 bits from `base_coords` (outputs of 2^32 elements or more).
    wide: u32,
    // Per input: how many of its `MAX_INTERVALS` interval slots are used.
    interval_count: vec2<u32>,
    dims: array<vec4<u32>, 8>,
    // f32(1 / dims[k]), correctly rounded, for `divmod`.
    inv_dims: array<vec4<f32>, 8>,
    // Low words of the element strides.
    strides_a: array<vec4<u32>, 8>,
    strides_b: array<vec4<u32>, 8>,
    // With `wide`: the multi-index of the chunk's first element.
    base_coords: array<vec4<u32>, 8>,
    // With `wide`: high words of the element strides, A's then B's.
    strides_hi: array<vec4<u32>, 16>,
    // Per input, `MAX_INTERVALS` slots: (first input offset, low and high word; position in the
    // uploaded buffer; unused), sorted; A's then B's.
    intervals: array<vec4<u32>, INTERVAL_SLOTS>,
}

const INTERVAL_SLOTS: u32 = 2u * MAX_INTERVALS;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<Word>;
@group(0) @binding(2) var<storage, read> B: array<Word>;
@group(0) @binding(3) var<storage, read_write> O: array<Word>;

// Element offsets in their input's storage of chunk position l, 64 bits each (low word, high
// word), A's then B's; used only for inputs not uploaded in output order.
fn input_offsets(l: u32) -> vec4<u32> {
    var xa = vec2<u32>(0u, 0u);
    var xb = vec2<u32>(0u, 0u);
    if (p.wide == 0u) {
        // Flat output index and every offset fit in u32.
        var rem = p.base + l;
        for (var k = i32(p.rank) - 1; k > 0; k = k - 1) {
            let q = u32(k) >> 2u;
            let r = u32(k) & 3u;
            let qr = divmod(rem, p.dims[q][r], p.inv_dims[q][r]);
            rem = qr.x;
            xa.x = xa.x + qr.y * p.strides_a[q][r];
            xb.x = xb.x + qr.y * p.strides_b[q][r];
        }
        // The outermost coordinate is what is left: the flat index is below the output's size.
        xa.x = xa.x + rem * p.strides_a[0].x;
        xb.x = xb.x + rem * p.strides_b[0].x;
    } else {
        // Outputs of 2^32 elements or more: the chunk's first coordinates plus l's, with
        // carries, and 64-bit offsets.
        var rem = l;
        var carry = 0u;
        for (var k = i32(p.rank) - 1; k >= 0; k = k - 1) {
            let q = u32(k) >> 2u;
            let r = u32(k) & 3u;
            let d = p.dims[q][r];
            let base = p.base_coords[q][r];
            let qr = divmod(rem, d, p.inv_dims[q][r]);
            let t = base + qr.y;
            rem = qr.x;
            let t2 = t + carry;
            var c = t2;
            carry = 0u;
            if (t < base || t2 < t || t2 >= d) {
                c = t2 - d;
                carry = 1u;
            }
            xa = add64(xa, mul_wide(c, vec2<u32>(p.strides_a[q][r], p.strides_hi[q][r])));
            xb = add64(xb, mul_wide(c, vec2<u32>(p.strides_b[q][r], p.strides_hi[8u + q][r])));
        }
    }
    return vec4<u32>(xa, xb);
}

// Element offsets of both inputs for chunk position l, in the buffers bound as A and B.
fn offsets(l: u32) -> vec2<u32> {
    var oa = l;
    var ob = l;
    // Equivalent: `3u -> 4u` drops the shortcut for both inputs uploaded in output order: the same
    // offsets are then computed and not used.
    // mutants-wgsl equivalent: `3u -> 4u`
    if (p.chunk_local != 3u) {
        let x = input_offsets(l);
        if ((p.chunk_local & 1u) == 0u) {
            oa = x.x;
            // Equivalent: `window` called on an input that is not windowed: it has no intervals,
            // and `window` returns its offset unchanged (unused slots are zero).
            // mutants-wgsl equivalent: `mask dropped: & 1u`, `& -> |`
            if ((p.windowed & 1u) != 0u) { oa = window(0u, x.xy); }
        }
        if ((p.chunk_local & 2u) == 0u) {
            ob = x.z;
            // Equivalent: `window` called on an input that is not windowed: it has no intervals,
            // and `window` returns its offset unchanged (unused slots are zero).
            // mutants-wgsl equivalent: `mask dropped: & 2u`, `& -> |`, `2u -> 3u`, `0u -> 1u`
            if ((p.windowed & 2u) != 0u) { ob = window(1u, x.zw); }
        }
    }
    return vec2<u32>(oa, ob);
}

// Set by the host, as a pipeline constant, when every dimension it divides by is below 2^22:
// `divmod` then divides in f32. A constant, not a uniform, so that no kernel pays a branch.
override FLOAT_DIVISION: bool = false;

// (n / d, n % d) for d >= 1, `inv` being f32(1 / d). With `FLOAT_DIVISION` (d < 2^22) without
// a division, which lavapipe, running invocations as CPU vector lanes, does one lane at a time
// for integers: the quotient is estimated in f32 from the reciprocal, corrected by the f32
// quotient of what is left, then by one either way. docs/backends.md, "Broadcast indexing",
// gives the error bound, which holds with any rounding of the f32 operations within 1 ulp and a
// reciprocal within 3 ulp.
fn divmod(n: u32, d: u32, inv: f32) -> vec2<u32> {
    if (!FLOAT_DIVISION) {
        return vec2<u32>(n / d, n % d);
    }
    // Within 2560 / d + 1 of the quotient. Capped at the largest f32 below 2^32 (2^32 - 256,
    // reached only with d = 1), so that the conversion is in range on any device.
    let q0 = u32(min(f32(n) * inv, 4294967040.0));
    // n - q0 * d, exactly: its magnitude is below 2560 + 2d < 2^24, so f32 holds it too.
    let r0 = bitcast<i32>(n - q0 * d);
    let q1 = q0 + bitcast<u32>(i32(floor(f32(r0) * inv)));
    // Now n - q1 * d lies in [-d, 2d).
    let r1 = bitcast<i32>(n - q1 * d);
    let under = r1 < 0;
    let over = r1 >= i32(d);
    // Equivalent: the downward correction (q1 = q + 1) has not been seen to happen on any device
    // tested, nor in simulation (docs/backends.md, "Broadcast indexing"): these mutants are
    // equivalent there. The correction stays for roundings not proven harmless.
    // mutants-wgsl equivalent: `- -> +`, `select dropped: select(0u, 1u, under) -> 0u`
    // mutants-wgsl equivalent: `1u -> 2u#1`, `1u -> 0u#1`
    let q = q1 - select(0u, 1u, under) + select(0u, 1u, over);
    // mutants-wgsl equivalent (the reason above): `+ -> -`
    // mutants-wgsl equivalent (the reason above): `select dropped: select(0, i32(d), under) -> 0`
    let rest = r1 + select(0, i32(d), under) - select(0, i32(d), over);
    return vec2<u32>(q, bitcast<u32>(rest));
}

// The full 64-bit product of two u32, from 16-bit limbs.
fn mul32(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}

// c * s modulo 2^64.
fn mul_wide(c: u32, s: vec2<u32>) -> vec2<u32> {
    let ll = mul32(c, s.x);
    return vec2<u32>(ll.x, ll.y + c * s.y);
}

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// a - b modulo 2^64: the low words' borrow goes into the high word.
fn sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

// Position in input i's uploaded window of its 64-bit offset x: the last interval starting at
// or before x.
fn window(i: u32, x: vec2<u32>) -> u32 {
    let first = i * MAX_INTERVALS;
    var lo = 0u;
    var hi = p.interval_count[i];
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        let iv = p.intervals[first + mid];
        if (iv.y < x.y || (iv.y == x.y && iv.x <= x.x)) { lo = mid; } else { hi = mid; }
    }
    let iv = p.intervals[first + lo];
    return iv.z + (x.x - iv.x);
}
