// The primitive steps with WGSL's own operators on `Wide`: IEEE add and multiply for f32 and
// f64 (correctly rounded in Vulkan, Metal and DX12; WGSL never fuses them), wrapping for u32
// and u64.

fn step_sub(a: Wide, b: Wide) -> Wide {
    return a - b;
}

fn step_mul(a: Wide, b: Wide) -> Wide {
    return a * b;
}
