// Storage: one element per buffer word (`Elem` is `Word`).

fn load_a(o: u32) -> Elem {
    return A[o];
}

fn load_b(o: u32) -> Elem {
    return B[o];
}

fn store(l: u32, v: Elem) {
    O[l] = v;
}
