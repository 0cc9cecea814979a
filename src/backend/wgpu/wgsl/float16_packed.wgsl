// Arithmetic: float16 on the element's bits (`Elem` is a u32 holding 16 bits), computed in float32
// and rounded back to nearest even with the integer conversions of `float16_bits.wgsl`, so the
// result does not depend on how a device rounds conversions. `step_round` is
// `float16_bits.wgsl`'s.

fn widen(h: Elem) -> Wide {
    return f16_bits_to_f32(h);
}

fn narrow(f: Wide) -> Elem {
    return f32_to_f16_bits(f);
}
