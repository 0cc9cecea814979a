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

// The toward-zero float16 conversions (`--float16 toward-zero-inf`, `toward-zero-saturate`)
// apply to float16 alone.
fn step_round_tz_inf(x: Wide) -> Wide {
    return x;
}

fn step_round_tz_sat(x: Wide) -> Wide {
    return x;
}
