// Arithmetic: float16 with the device's `f16` storage and conversions (SHADER_F16), computed in
// float32 and rounded to float16 at the end, as the CPU does. Used only where the conversion
// probe matched the CPU's exact conversions. `step_round` is `float16_bits.wgsl`'s.

fn widen(x: Elem) -> Wide {
    return f32(x);
}

fn narrow(x: Wide) -> Elem {
    return f16(x);
}
