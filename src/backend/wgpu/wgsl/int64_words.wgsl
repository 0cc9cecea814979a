// Arithmetic: 64-bit integers as `vec2<u32>` (low word, high word), wrapping, for devices
// without SHADER_INT64. Uses `sub64` and `mul32` (the full product of two u32) from the shared
// part.

// a - b modulo 2^64.
fn step_sub(a: Wide, b: Wide) -> Wide {
    return sub64(a, b);
}

// a * b modulo 2^64: the full product of the low words plus the low words of the cross terms.
fn step_mul(a: Wide, b: Wide) -> Wide {
    let ll = mul32(a.x, b.x);
    return vec2<u32>(ll.x, ll.y + a.x * b.y + a.y * b.x);
}
