// Arithmetic: integers of up to 32 bits in u32, wrapping. Wrapping subtraction and
// multiplication give the same low bits for signed and unsigned elements, so one form serves
// all eight integer dtypes up to 32 bits (8- and 16-bit results are masked by the storage).

alias Wide = u32;

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
