// Arithmetic: bfloat16 on the element's bits (`Elem` is a u32 holding 16 bits), computed as
// float32 on its bits (`Wide` is `u32`) by `float32_exact.wgsl`, for devices that flush float32
// subnormals (bfloat16's subnormals are float32's), and rounded back to nearest even with the
// integer conversions of `bfloat16_bits.wgsl`.

fn widen(h: Elem) -> Wide {
    return bf16_to_f32_bits(h);
}

fn narrow(x: Wide) -> Elem {
    return f32_bits_to_bf16(x);
}

fn step_round(x: Wide) -> Wide {
    return bf16_to_f32_bits(f32_bits_to_bf16(x));
}

// The toward-zero float16 conversions (`--float16 toward-zero-inf`, `toward-zero-saturate`)
// apply to float16 alone: bfloat16 has no
// DirectML type, and rounds to nearest even at the end.
fn step_round_tz_inf(x: Wide) -> Wide {
    return x;
}

fn step_round_tz_sat(x: Wide) -> Wide {
    return x;
}
