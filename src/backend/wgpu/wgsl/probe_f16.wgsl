enable f16;
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f16>;
@group(0) @binding(2) var<storage, read> H: array<f16>;
@group(0) @binding(3) var<storage, read_write> Z: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Equivalent: the probe is dispatched in one dimension: `gid.y` is 0.
    // mutants-wgsl equivalent: `+ -> -`, `256u -> 257u`, `256u -> 255u`
    let i = gid.x + gid.y * nwg.x * 256u;
    // Equivalent: invocations past an array's end: the float32 array's length is a multiple of the
    // workgroup size, so none runs past it; past the float16 array's end, WGSL clamps or drops the
    // access, and the probe's answer stands. The probe only chooses between native and emulated
    // float16, which give the same bits.
    // mutants-wgsl equivalent: `< -> <=`
    if (i < arrayLength(&X)) {
        Y[i] = f16(X[i]);
    }
    // Equivalent: invocations past an array's end: the float32 array's length is a multiple of the
    // workgroup size, so none runs past it; past the float16 array's end, WGSL clamps or drops the
    // access, and the probe's answer stands. The probe only chooses between native and emulated
    // float16, which give the same bits.
    // mutants-wgsl equivalent: `< -> <=`
    if (i < arrayLength(&H)) {
        Z[i] = f32(H[i]);
    }
}
