// The entry point of kernels where each invocation computes one output element `l`.
// Uses: `load_a`, `load_b` and `store` from the storage part, `op` from the formula.

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let l = gid.x + gid.y * nwg.x * WORKGROUP;
    // Equivalent: an invocation at or past the chunk's end writes an element after the chunk's
    // result, which is never downloaded.
    // mutants-wgsl equivalent: `>= -> >`
    if (l >= p.n) {
        return;
    }
    let offs = offsets(l);
    store(l, op(load_a(offs.x), load_b(offs.y)));
}
