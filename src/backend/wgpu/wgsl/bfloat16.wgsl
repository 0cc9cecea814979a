// Arithmetic: bfloat16 on the element's bits (`Elem` is a u32 holding 16 bits), computed in the
// device's float32 (`Wide` is `f32`; a device that keeps float32 subnormals, since bfloat16's are
// float32's) and rounded back to nearest even with the integer conversions of
// `bfloat16_bits.wgsl`.

fn widen(h: Elem) -> Wide {
    return bitcast<f32>(bf16_to_f32_bits(h));
}

fn narrow(f: Wide) -> Elem {
    return f32_bits_to_bf16(bitcast<u32>(f));
}

// The intermediate rounding of `sqdiff --half-precision`, in integer operations (a compiler
// cannot fold it away).
fn step_round(x: Wide) -> Wide {
    return bitcast<f32>(bf16_to_f32_bits(f32_bits_to_bf16(bitcast<u32>(x))));
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
