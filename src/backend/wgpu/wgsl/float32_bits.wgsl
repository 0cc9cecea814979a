// Arithmetic: float32 on the element's bits (`Elem` is `u32`), IEEE add and multiply.

fn widen(x: Elem) -> Wide {
    return bitcast<f32>(x);
}

fn narrow(x: Wide) -> Elem {
    return bitcast<u32>(x);
}

fn step_round(x: Wide) -> Wide {
    return x;
}

// The toward-zero float16 conversions (`--float16 toward-zero-inf`, `toward-zero-saturate`)
// apply to float16 alone.
fn step_round_tz_inf(x: Wide) -> Wide {
    return x;
}

fn step_round_tz_sat(x: Wide) -> Wide {
    return x;
}
