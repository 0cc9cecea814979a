//! WGSL for the wgpu backend, generated per dtype, operator and the shader features the device
//! offers ([`Native`]). Native kernels use the device's types: `f16` (SHADER_F16, converted to
//! and from `f32` around float32 arithmetic), `u64` (SHADER_INT64, wrapping arithmetic for both
//! signed and unsigned) and `f64` (SHADER_F64). Without those features every dtype but float64 is
//! processed on `u32` words: 8- and 16-bit elements are packed four or two to a word and each
//! invocation owns whole output words (WGSL has no 8- or 16-bit integer types, so these are always
//! packed); 64-bit integers are `vec2<u32>` with a borrow and a wrapping square built from 16-bit
//! limbs; float16 is widened to float32 and rounded back to nearest-even with integer operations,
//! so the result does not depend on how a device rounds conversions. Broadcasting uses the CPU
//! backend's stride plan, passed in the uniform block, with an optional list of input intervals
//! per chunk for broadcast inputs streamed in windows (see [`super::window`]).

use crate::dtype::DType;
use crate::op::{Op, Semantics};

/// The most dimensions the uniform block holds (the largest rank any level accepts, `none`'s 32).
pub const MAX_RANK: usize = 32;

/// Invocations per workgroup.
pub const WORKGROUP: u32 = 256;

/// The most input intervals one chunk of a windowed input may need (`2 * rank + 1`, rounded up).
pub const MAX_INTERVALS: usize = 2 * MAX_RANK + 4;

/// Optional shader features the kernels use natively.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Native {
    /// SHADER_F16 (and the device's conversions passed the probe).
    pub f16: bool,
    /// SHADER_INT64.
    pub int64: bool,
    /// SHADER_F64.
    pub f64: bool,
}

/// Output elements each invocation computes.
pub fn elements_per_invocation(dtype: DType, native: Native) -> u32 {
    match dtype.size() {
        1 => 4,
        2 if dtype == DType::F16 && native.f16 => 1,
        2 => 2,
        _ => 1,
    }
}

/// The uniform block, as the host fills it (2976 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Elements in this chunk.
    pub n: u32,
    /// Flat output index of the chunk's first element.
    pub base: u32,
    pub rank: u32,
    /// Bit i set: input i is uploaded per chunk in output order (index = position in chunk).
    pub chunk_local: u32,
    /// Bit i set: input i is uploaded per chunk as the intervals in `intervals[i]`.
    pub windowed: u32,
    /// Number of intervals used in `intervals[i]`.
    pub interval_count: [u32; 2],
    /// 1: offsets are computed in 64 bits from `base_coords` (outputs of 2^32 elements or more).
    pub wide: u32,
    pub dims: [u32; MAX_RANK],
    /// Low words of the element strides.
    pub strides_a: [u32; MAX_RANK],
    pub strides_b: [u32; MAX_RANK],
    /// With `wide`: the multi-index of the chunk's first element.
    pub base_coords: [u32; MAX_RANK],
    /// With `wide`: high words of the element strides.
    pub strides_hi: [[u32; MAX_RANK]; 2],
    /// Per input: `(first input offset, low and high word; position in the uploaded buffer;
    /// unused)`, sorted.
    pub intervals: [[[u32; 4]; MAX_INTERVALS]; 2],
}

const COMMON: &str = r#"
struct Params {
    n: u32,
    base: u32,
    rank: u32,
    chunk_local: u32,
    windowed: u32,
    count_a: u32,
    count_b: u32,
    wide: u32,
    dims: array<vec4<u32>, 8>,
    sa: array<vec4<u32>, 8>,
    sb: array<vec4<u32>, 8>,
    bc: array<vec4<u32>, 8>,
    sah: array<vec4<u32>, 8>,
    sbh: array<vec4<u32>, 8>,
    ia: array<vec4<u32>, NINTERVALS>,
    ib: array<vec4<u32>, NINTERVALS>,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<ELEM>;
@group(0) @binding(2) var<storage, read> B: array<ELEM>;
@group(0) @binding(3) var<storage, read_write> O: array<ELEM>;

// Element offsets of both inputs for chunk position l.
fn offsets(l: u32) -> vec2<u32> {
    var oa = l;
    var ob = l;
    if (p.chunk_local != 3u) {
        var xa = vec2<u32>(0u, 0u);
        var xb = vec2<u32>(0u, 0u);
        if (p.wide == 0u) {
            // Flat output index and every offset fit in u32.
            var rem = p.base + l;
            for (var k = i32(p.rank) - 1; k >= 0; k = k - 1) {
                let q = u32(k) >> 2u;
                let r = u32(k) & 3u;
                let d = p.dims[q][r];
                let i = rem % d;
                rem = rem / d;
                xa.x = xa.x + i * p.sa[q][r];
                xb.x = xb.x + i * p.sb[q][r];
            }
        } else {
            // Outputs of 2^32 elements or more: the chunk's first coordinates plus l's, with
            // carries, and 64-bit offsets.
            var rem = l;
            var carry = 0u;
            for (var k = i32(p.rank) - 1; k >= 0; k = k - 1) {
                let q = u32(k) >> 2u;
                let r = u32(k) & 3u;
                let d = p.dims[q][r];
                let base = p.bc[q][r];
                let t = base + rem % d;
                rem = rem / d;
                let t2 = t + carry;
                var c = t2;
                carry = 0u;
                if (t < base || t2 < t || t2 >= d) {
                    c = t2 - d;
                    carry = 1u;
                }
                xa = add64(xa, mul64(c, vec2<u32>(p.sa[q][r], p.sah[q][r])));
                xb = add64(xb, mul64(c, vec2<u32>(p.sb[q][r], p.sbh[q][r])));
            }
        }
        if ((p.chunk_local & 1u) == 0u) {
            oa = xa.x;
            if ((p.windowed & 1u) != 0u) { oa = window_a(xa); }
        }
        if ((p.chunk_local & 2u) == 0u) {
            ob = xb.x;
            if ((p.windowed & 2u) != 0u) { ob = window_b(xb); }
        }
    }
    return vec2<u32>(oa, ob);
}

// The full 64-bit product of two u32, from 16-bit limbs.
fn mul32(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}

// c * s modulo 2^64.
fn mul64(c: u32, s: vec2<u32>) -> vec2<u32> {
    let ll = mul32(c, s.x);
    return vec2<u32>(ll.x, ll.y + c * s.y);
}

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// Position in the uploaded window of 64-bit input offset x: the last interval starting at or
// before x.
fn window_a(x: vec2<u32>) -> u32 {
    var lo = 0u;
    var hi = p.count_a;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        let iv = p.ia[mid];
        if (iv.y < x.y || (iv.y == x.y && iv.x <= x.x)) { lo = mid; } else { hi = mid; }
    }
    return p.ia[lo].z + (x.x - p.ia[lo].x);
}
"#;

const F16: &str = r#"
// float16 bits -> float32, exactly (float16 subnormals are normal float32 values).
fn h2f(h: u32) -> f32 {
    let s = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0u) {
        let v = f32(m) * 5.9604644775390625e-8;
        return bitcast<f32>(bitcast<u32>(v) | s);
    }
    if (e == 31u) {
        return bitcast<f32>(s | 0x7f800000u | (m << 13u));
    }
    return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}

// float32 -> float16 bits, rounded to nearest even with integer operations.
fn f2h(f: f32) -> u32 {
    let x = bitcast<u32>(f);
    let s = (x >> 16u) & 0x8000u;
    let ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
        return s | 0x7e00u | ((ax >> 13u) & 0x3ffu);
    }
    if (ax >= 0x477ff000u) {
        return s | 0x7c00u;
    }
    if (ax >= 0x38800000u) {
        let r = ax + 0xfffu + ((ax >> 13u) & 1u);
        return s | ((r - 0x38000000u) >> 13u);
    }
    let e = ax >> 23u;
    if (e < 102u) {
        return s;
    }
    let m = (ax & 0x7fffffu) | 0x800000u;
    let shift = 126u - e;
    let q = m >> shift;
    let rem = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    var r = q;
    if (rem > half || (rem == half && (q & 1u) == 1u)) {
        r = q + 1u;
    }
    return s | r;
}
"#;

const I64: &str = r#"
fn sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x - b.x;
    let borrow = select(0u, 1u, a.x < b.x);
    return vec2<u32>(lo, a.y - b.y - borrow);
}

// d * d modulo 2^64.
fn sq64(d: vec2<u32>) -> vec2<u32> {
    let ll = mul32(d.x, d.x);
    let cross = d.x * d.y;
    return vec2<u32>(ll.x, ll.y + cross + cross);
}
"#;

/// The scalar operation on element bits, as a WGSL function `op(a, b)`.
fn op_fn(dtype: DType, sem: Semantics) -> String {
    let sq = sem.op == Op::SqDiff;
    match dtype {
        DType::F32 => {
            let body = if sq {
                "let d = bitcast<f32>(a) - bitcast<f32>(b);\n    return bitcast<u32>(d * d);"
            } else {
                "return bitcast<u32>(bitcast<f32>(a) - bitcast<f32>(b));"
            };
            format!("fn op(a: u32, b: u32) -> u32 {{\n    {body}\n}}\n")
        }
        DType::F16 => {
            let body = match (sq, sem.half_precision) {
                (false, _) => "return f2h(h2f(a) - h2f(b));",
                (true, false) => "let d = h2f(a) - h2f(b);\n    return f2h(d * d);",
                (true, true) => "let h = h2f(f2h(h2f(a) - h2f(b)));\n    return f2h(h * h);",
            };
            format!("{F16}\nfn op(a: u32, b: u32) -> u32 {{\n    {body}\n}}\n")
        }
        DType::I64 | DType::U64 => {
            let body = if sq { "return sq64(sub64(a, b));" } else { "return sub64(a, b);" };
            format!("{I64}\nfn op(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {{\n    {body}\n}}\n")
        }
        // Wrapping integer arithmetic is the same on the low bits for signed and unsigned.
        _ => {
            let body = if sq { "let d = a - b;\n    return d * d;" } else { "return a - b;" };
            format!("fn op(a: u32, b: u32) -> u32 {{\n    {body}\n}}\n")
        }
    }
}

/// The uniform block's declarations and the offset helpers, for elements of WGSL type `elem`.
fn common(elem: &str) -> String {
    let window_b = COMMON[COMMON.find("fn window_a").unwrap_or(0)..].replace("window_a", "window_b");
    let window_b = window_b.replace("p.ia", "p.ib").replace("p.count_a", "p.count_b");
    let head = COMMON.replace("ELEM", elem).replace("NINTERVALS", &MAX_INTERVALS.to_string());
    format!("{head}\n{window_b}")
}

/// The WGSL source of the kernel for `dtype` and `sem` with the `native` features. float64 needs
/// SHADER_F64; without it there is no kernel (`None`).
pub fn source(dtype: DType, sem: Semantics, native: Native) -> Option<String> {
    match dtype {
        DType::F64 => return native.f64.then(|| f64_source(sem)),
        DType::F16 if native.f16 => return Some(f16_source(sem)),
        DType::I64 | DType::U64 if native.int64 => return Some(int64_source(sem)),
        _ => {}
    }
    let size = dtype.size();
    let main = match size {
        1 | 2 | 4 => {
            let epw = elements_per_invocation(dtype, Native::default());
            let bits = size * 8;
            let (load, mask) = match size {
                1 => ("(X[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu", "0xffu"),
                2 => ("(X[o >> 1u] >> ((o & 1u) * 16u)) & 0xffffu", "0xffffu"),
                _ => ("X[o]", "0xffffffffu"),
            };
            let load_a = load.replace('X', "A");
            let load_b = load.replace('X', "B");
            format!(
                r#"
@compute @workgroup_size({WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let w = gid.x + gid.y * nwg.x * {WORKGROUP}u;
    if (w * {epw}u >= p.n) {{
        return;
    }}
    var word = 0u;
    for (var j = 0u; j < {epw}u; j = j + 1u) {{
        let l = w * {epw}u + j;
        if (l < p.n) {{
            let offs = offsets(l);
            var o = offs.x;
            let a = {load_a};
            o = offs.y;
            let b = {load_b};
            word = word | ((op(a, b) & {mask}) << (j * {bits}u));
        }}
    }}
    O[w] = word;
}}
"#
            )
        }
        8 => element_main(
            "let a = vec2<u32>(A[2u * offs.x], A[2u * offs.x + 1u]);
    let b = vec2<u32>(B[2u * offs.y], B[2u * offs.y + 1u]);
    let r = op(a, b);
    O[2u * l] = r.x;
    O[2u * l + 1u] = r.y;",
        ),
        _ => return None,
    };
    Some(format!("{}\n{}\n{main}", common("u32"), op_fn(dtype, sem)))
}

/// float64 with the device's native 64-bit floats (IEEE add, subtract and multiply are correctly
/// rounded in Vulkan, Metal and DX12).
fn f64_source(sem: Semantics) -> String {
    let body = match sem.op {
        Op::Sub => "O[l] = A[offs.x] - B[offs.y];",
        Op::SqDiff => "let d = A[offs.x] - B[offs.y];\n    O[l] = d * d;",
    };
    format!("{}\n{}", common("f64"), element_main(body))
}

/// 64-bit integers with the device's `u64`: wrapping subtraction and multiplication give the same
/// bits for signed and unsigned elements.
fn int64_source(sem: Semantics) -> String {
    let body = match sem.op {
        Op::Sub => "O[l] = A[offs.x] - B[offs.y];",
        Op::SqDiff => "let d = A[offs.x] - B[offs.y];\n    O[l] = d * d;",
    };
    format!("{}\n{}", common("u64"), element_main(body))
}

/// float16 with the device's `f16` storage and conversions, arithmetic in float32 exactly as
/// `docs/cli.md`, "Arithmetic", says. Used only when the conversion probe matched the CPU (see `Gpu::native`).
fn f16_source(sem: Semantics) -> String {
    let body = match (sem.op, sem.half_precision) {
        (Op::Sub, _) => "O[l] = f16(f32(A[offs.x]) - f32(B[offs.y]));",
        (Op::SqDiff, false) => "let d = f32(A[offs.x]) - f32(B[offs.y]);\n    O[l] = f16(d * d);",
        (Op::SqDiff, true) => "let h = f32(f16(f32(A[offs.x]) - f32(B[offs.y])));\n    O[l] = f16(h * h);",
    };
    format!("enable f16;\n{}\n{}", common("f16"), element_main(body))
}

/// The probe for native float16: `Y[i] = f16(X[i])` and `Z[i] = f32(H[i])`, compared on the
/// host with the CPU's exact conversions.
pub const F16_PROBE: &str = r#"
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
"#;

/// An entry point where each invocation computes one element `l`; `body` sees `l` and `offs`.
fn element_main(body: &str) -> String {
    format!(
        r#"
@compute @workgroup_size({WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let l = gid.x + gid.y * nwg.x * {WORKGROUP}u;
    if (l >= p.n) {{
        return;
    }}
    let offs = offsets(l);
    {body}
}}
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate(src: &str, what: &str) {
        let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(src)));
        let caps = naga::valid::Capabilities::FLOAT64
            | naga::valid::Capabilities::SHADER_INT64
            | naga::valid::Capabilities::SHADER_FLOAT16;
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
            .validate(&module)
            .unwrap_or_else(|e| panic!("{what}: {e:?}"));
    }

    #[test]
    fn every_supported_kernel_is_valid_wgsl() {
        let none = Native::default();
        let all = Native { f16: true, int64: true, f64: true };
        for d in DType::ALL {
            for op in Op::ALL {
                for half_precision in [false, true] {
                    let sem = Semantics { op, half_precision };
                    assert_eq!(source(d, sem, none).is_none(), d == DType::F64);
                    for native in [none, all] {
                        if let Some(src) = source(d, sem, native) {
                            validate(&src, &format!("{d} {op:?} {native:?}"));
                        }
                    }
                }
            }
        }
        validate(F16_PROBE, "f16 probe");
    }

    #[test]
    fn params_match_the_wgsl_layout() {
        assert_eq!(std::mem::size_of::<Params>(), 32 + 6 * 128 + 2 * MAX_INTERVALS * 16);
    }
}
