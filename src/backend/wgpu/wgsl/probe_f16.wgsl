enable f16;
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f16>;
@group(0) @binding(2) var<storage, read> H: array<f16>;
@group(0) @binding(3) var<storage, read_write> Z: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i < arrayLength(&X)) {
        Y[i] = f16(X[i]);
    }
    if (i < arrayLength(&H)) {
        Z[i] = f32(H[i]);
    }
}
