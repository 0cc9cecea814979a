// Arithmetic: float16 with the device's `f16` storage and conversions (SHADER_F16), computed in
// float32 and rounded to float16 at the end, as the CPU does. Used only where the conversion
// probe matched the CPU's exact conversions.

fn widen(x: Elem) -> Wide {
    return f32(x);
}

fn narrow(x: Wide) -> Elem {
    return f16(x);
}

// The intermediate rounding of `sqdiff --half-precision`, with integer operations
// (`float16_bits.wgsl`): a device's compiler may fold f32(f16(x)) into x, and one did (an NVIDIA
// H100's Vulkan driver).
fn step_round(x: Wide) -> Wide {
    return f16_bits_to_f32(f32_to_f16_bits(x));
}
