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

// Direct3D's float16 conversion (`--float16 d3d`) applies to float16 alone.
fn step_round_d3d(x: Wide) -> Wide {
    return x;
}
