// bfloat16 <-> float32 bits with integer operations (bfloat16 bits in the low 16 bits of a u32):
// a bfloat16 is the top half of a float32, so widening is a shift, exact for every value; the
// rounding to bfloat16 is to nearest even on the bits, whatever the device's conversions do.

// bfloat16 bits -> float32 bits, exactly.
fn bf16_to_f32_bits(h: u32) -> u32 {
    // Equivalent: a lane's bits above the low 16 shifted out: the storage masks each lane.
    return h << 16u;
}

// float32 bits -> bfloat16 bits, rounded to nearest even; a NaN stays a NaN (made quiet).
fn f32_bits_to_bf16(x: u32) -> u32 {
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (x >> 16u) | 0x40u;
    }
    // Carries into the exponent where rounding up crosses a binade, and into infinity past the
    // largest finite bfloat16, as IEEE rounding does.
    return (x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u;
}
