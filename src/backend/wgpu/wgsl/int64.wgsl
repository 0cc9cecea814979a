// Arithmetic: 64-bit integers with the device's `u64` (SHADER_INT64), wrapping: the same bits for
// signed and unsigned elements.

alias Wide = u64;

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
