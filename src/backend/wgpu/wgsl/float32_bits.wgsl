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
