// Storage: a 64-bit element as two u32 words, low word first (`Elem` is `vec2<u32>`).

fn load_a(o: u32) -> Elem {
    return vec2<u32>(A[2u * o], A[2u * o + 1u]);
}

fn load_b(o: u32) -> Elem {
    return vec2<u32>(B[2u * o], B[2u * o + 1u]);
}

fn store(l: u32, v: Elem) {
    O[2u * l] = v.x;
    O[2u * l + 1u] = v.y;
}
