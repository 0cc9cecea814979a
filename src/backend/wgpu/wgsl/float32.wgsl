// Arithmetic: float32 on the element's bits (`Elem` is `u32`), IEEE add and multiply.

alias Wide = f32;

fn widen(x: Elem) -> Wide {
    return bitcast<f32>(x);
}

fn narrow(x: Wide) -> Elem {
    return bitcast<u32>(x);
}

fn step_sub(a: Wide, b: Wide) -> Wide {
    return a - b;
}

fn step_mul(a: Wide, b: Wide) -> Wide {
    return a * b;
}

fn step_round(x: Wide) -> Wide {
    return x;
}
