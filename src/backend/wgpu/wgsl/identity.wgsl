// Arithmetic in the element's own type (`Wide` is `Elem`): integers of up to 32 bits in u32 and
// 64-bit integers in u64 or `vec2<u32>` (wrapping: the same low bits for signed and unsigned
// elements; 8- and 16-bit results are masked by the storage), and native float64.

fn widen(x: Elem) -> Wide {
    return x;
}

fn narrow(x: Wide) -> Elem {
    return x;
}

fn step_round(x: Wide) -> Wide {
    return x;
}

// Direct3D's float16 conversion (`--float16 d3d`) applies to float16 alone.
fn step_round_d3d(x: Wide) -> Wide {
    return x;
}
