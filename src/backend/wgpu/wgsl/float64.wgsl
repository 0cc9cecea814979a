// Arithmetic: float64 with the device's `f64` (SHADER_F64). IEEE add, subtract and multiply are
// correctly rounded in Vulkan, Metal and DX12.

alias Wide = f64;

fn widen(x: Elem) -> Wide {
    return x;
}

fn narrow(x: Wide) -> Elem {
    return x;
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
