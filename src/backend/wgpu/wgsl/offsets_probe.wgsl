// A test kernel: for each chunk position l, the four words of `input_offsets(l)` (A's offset,
// low and high word, then B's) to `O[4l..4l + 4]`. Nothing is computed from the inputs.
// Uses: `p`, `A`, `B`, `O` and `input_offsets` from the shared part.

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = gid.x;
    if (l >= p.n) {
        // Never true: A and B are read so that the pipeline keeps their bindings.
        if (l == 0xffffffffu) { O[0] = A[0] + B[0]; }
        return;
    }
    let x = input_offsets(l);
    O[4u * l] = x.x;
    O[4u * l + 1u] = x.y;
    O[4u * l + 2u] = x.z;
    O[4u * l + 3u] = x.w;
}
