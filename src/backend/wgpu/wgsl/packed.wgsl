// Storage and entry point for 8- and 16-bit elements, packed `LANES` to a u32 word (WGSL has no
// 8- or 16-bit integer types). Each invocation owns one whole output word; an element is a lane
// value in the low `BITS` bits of a u32 (`Elem` is `u32`), and results are masked to `BITS`.
// Uses: `LANES` and `BITS` from the prelude, `op` from the formula.

const MASK: u32 = (1u << BITS) - 1u;

fn load_a(o: u32) -> Elem {
    // Equivalent: a lane loaded without its mask: the wrapping integer steps' low bits depend only
    // on the operands' low bits, float16's `widen` masks every field it reads, and the result is
    // masked on store.
    // mutants-wgsl equivalent: `mask dropped: & MASK`
    return (A[o / LANES] >> ((o % LANES) * BITS)) & MASK;
}

fn load_b(o: u32) -> Elem {
    // Equivalent: a lane loaded without its mask: the wrapping integer steps' low bits depend only
    // on the operands' low bits, float16's `widen` masks every field it reads, and the result is
    // masked on store.
    // mutants-wgsl equivalent: `mask dropped: & MASK`
    return (B[o / LANES] >> ((o % LANES) * BITS)) & MASK;
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = gid.x + gid.y * nwg.x * WORKGROUP;
    // Equivalent: an invocation at or past the chunk's end writes (a lane or word) after the
    // chunk's result, which is never downloaded.
    // mutants-wgsl equivalent: `>= -> >`
    if (w * LANES >= p.n) {
        return;
    }
    var word = 0u;
    for (var j = 0u; j < LANES; j = j + 1u) {
        let l = w * LANES + j;
        // Equivalent: an invocation at or past the chunk's end writes (a lane or word) after the
        // chunk's result, which is never downloaded.
        // mutants-wgsl equivalent: `< -> <=`
        if (l < p.n) {
            let offs = offsets(l);
            word = word | ((op(load_a(offs.x), load_b(offs.y)) & MASK) << (j * BITS));
        }
    }
    O[w] = word;
}
