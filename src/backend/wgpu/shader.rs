//! WGSL for the wgpu backend. Every kernel is composed the same way, by [`source`], from three
//! independent parts in `wgsl/`, after a generated prelude of constants and type aliases:
//!
//! - **shared** (`params.wgsl`): the uniform block, the buffers, and the offset helpers that
//!   follow the CPU backend's stride plan (with an optional list of input intervals per chunk
//!   for broadcast inputs streamed in windows, see [`super::window`]);
//! - **storage**: how elements sit in buffer words and the entry point. `direct.wgsl` (one
//!   element per word) or `words64.wgsl` (a 64-bit element as two u32 words), both with the
//!   per-element entry point `element.wgsl`; or `packed.wgsl` (8- and 16-bit elements packed
//!   four or two to a u32 word, since WGSL has no 8- or 16-bit integers);
//! - **arithmetic**, in the arithmetic type `Wide` (an alias in the prelude): `widen`, `narrow`,
//!   `step_round`, `step_round_tz_inf` and `step_round_tz_sat` (`identity.wgsl` where `Wide` is the element type;
//!   `float32_bits.wgsl`; `float16.wgsl` with the device's `f16`, or `float16_packed.wgsl`
//!   without it, both rounding to nearest even, or toward zero, with the integer
//!   conversions of `float16_bits.wgsl` where the device's own might not; `bfloat16.wgsl`, or `bfloat16_exact.wgsl` over `float32_exact.wgsl`'s steps, with
//!   `bfloat16_bits.wgsl`'s conversions), and the steps `step_sub` and `step_mul` of [`crate::op::Steps`]
//!   (`native_steps.wgsl` with WGSL's operators; `int64_words.wgsl` on `vec2<u32>` words for
//!   devices without 64-bit integers; `float64_words.wgsl`, IEEE binary64 on `vec2<u32>` words
//!   for devices without SHADER_F64; `float32_exact.wgsl`, float32 on its bits for devices that
//!   flush float32 subnormals);
//!
//! and one generated function, `op`, which is the operator's [`Formula`] evaluated over WGSL
//! text: the same definition the CPU kernels compile, so a kernel cannot compute a different
//! operator than the CPU. Parts refer to each other only by the names listed in their headers.
//!
//! Which storage and arithmetic a dtype gets with the device's features ([`Native`]), and so
//! whether its kernel uses or emulates a capability, is decided in one place, [`Recipe::of`]:
//! the composition follows it and so does the device's report. The uniform block is declared
//! here too, as [`Params`], member for member as `params.wgsl` declares it.

use crate::dtype::DType;
use crate::op::{Formula, Semantics, Steps};

/// The most dimensions the uniform block holds (the largest rank any level accepts, `none`'s 32).
pub(super) const MAX_RANK: usize = 32;

/// Invocations per workgroup.
pub(super) const WORKGROUP: u32 = 256;

/// The most input intervals one chunk of a windowed input may need (`2 * rank + 1`, rounded up).
pub(super) const MAX_INTERVALS: usize = 2 * MAX_RANK + 4;

/// Optional shader features the kernels use natively.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Native {
    /// SHADER_F16 (and the device's conversions passed the probe).
    pub(super) f16: bool,
    /// SHADER_INT64.
    pub(super) int64: bool,
    /// SHADER_F64.
    pub(super) f64: bool,
    /// The device keeps float32 subnormals (its probe found no flushing); else float32
    /// subtraction and multiplication go through `float32_exact.wgsl`.
    pub(super) f32_subnormals: bool,
    /// `float32_exact.wgsl` flushes subnormals itself, as a flushing device would
    /// (`TENSOROP_WGPU_EMULATE=1`): any device then tests its bounds.
    pub(super) flush_model: bool,
}

/// The uniform block, as the host fills it (3104 bytes): `Params` in `wgsl/params.wgsl`, member
/// for member, which the tests check by reflection.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct Params {
    /// Elements in this chunk.
    pub(super) n: u32,
    /// Flat output index of the chunk's first element.
    pub(super) base: u32,
    pub(super) rank: u32,
    /// Bit i set: input i is uploaded per chunk in output order (index = position in chunk).
    pub(super) chunk_local: u32,
    /// Bit i set: input i is uploaded per chunk as the intervals in `intervals[i]`.
    pub(super) windowed: u32,
    /// 1: offsets are computed in 64 bits from `base_coords` (outputs of 2^32 elements or more).
    pub(super) wide: u32,
    /// Number of intervals used in `intervals[i]`.
    pub(super) interval_count: [u32; 2],
    pub(super) dims: [u32; MAX_RANK],
    /// `1 / dims[k]` in f32, correctly rounded (for the division in `divmod`).
    pub(super) inv_dims: [f32; MAX_RANK],
    /// Low words of the element strides.
    pub(super) strides_a: [u32; MAX_RANK],
    pub(super) strides_b: [u32; MAX_RANK],
    /// With `wide`: the multi-index of the chunk's first element.
    pub(super) base_coords: [u32; MAX_RANK],
    /// With `wide`: high words of the element strides.
    pub(super) strides_hi: [[u32; MAX_RANK]; 2],
    /// Per input: `(first input offset, low and high word; position in the uploaded buffer;
    /// unused)`, sorted.
    pub(super) intervals: [[[u32; 4]; MAX_INTERVALS]; 2],
}

impl Params {
    /// The block for the chunk of `n` elements at flat index `base` over `dims` (with their
    /// reciprocals), the inputs' element strides (low words) and the `chunk_local` mask; every
    /// other member zero.
    pub(super) fn zeroed_with(n: u32, base: u32, dims: &[u32], strides: [&[u32]; 2], chunk_local: u32) -> Params {
        let mut p: Params = bytemuck::Zeroable::zeroed();
        p.n = n;
        p.base = base;
        p.rank = dims.len() as u32;
        p.chunk_local = chunk_local;
        p.dims[..dims.len()].copy_from_slice(dims);
        for (inv, &d) in p.inv_dims.iter_mut().zip(dims) {
            // Correctly rounded where `divmod` divides in f32 (d below 2^22, exact in f32);
            // unused elsewhere (a dimension of 0 gives infinity: no element to index).
            *inv = 1.0 / d as f32;
        }
        p.strides_a[..dims.len()].copy_from_slice(strides[0]);
        p.strides_b[..dims.len()].copy_from_slice(strides[1]);
        p
    }
}

/// One file of `wgsl/`, compiled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Part {
    /// The file's name in `wgsl/`.
    file: &'static str,
    text: &'static str,
}

/// The [`Part`] for a file of `wgsl/`.
macro_rules! wgsl {
    ($file:literal) => {
        Part { file: $file, text: include_str!(concat!("wgsl/", $file)) }
    };
}

impl Part {
    /// The WGSL text. Built with the `wgsl-mutants` feature (for the shader mutation runner,
    /// docs/testing.md), a file of the same name in the directory `TENSOROP_WGSL_DIR` replaces
    /// the compiled-in text; release builds never read shaders from disk.
    pub(super) fn text(self) -> std::borrow::Cow<'static, str> {
        #[cfg(feature = "wgsl-mutants")]
        if let Some(dir) = std::env::var_os("TENSOROP_WGSL_DIR") {
            if let Ok(text) = std::fs::read_to_string(std::path::Path::new(&dir).join(self.file)) {
                return text.into();
            }
        }
        self.text.into()
    }
}

/// The shared part of every kernel.
const PARAMS: Part = wgsl!("params.wgsl");

/// How a kernel stores elements: the storage part and its entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// One element per buffer word of type `word`.
    Direct { word: &'static str },
    /// A 64-bit element as two u32 words.
    Words64,
    /// `lanes` elements of `32 / lanes` bits per u32 word.
    Packed { lanes: u32 },
}

impl Storage {
    /// The WGSL parts, after the prelude and the shared part.
    fn parts(self) -> &'static [Part] {
        match self {
            Storage::Direct { .. } => &[wgsl!("direct.wgsl"), wgsl!("element.wgsl")],
            Storage::Words64 => &[wgsl!("words64.wgsl"), wgsl!("element.wgsl")],
            Storage::Packed { .. } => &[wgsl!("packed.wgsl")],
        }
    }

    /// `(Word, Elem)`: the buffers' element type and the type `op` takes.
    fn types(self) -> (&'static str, &'static str) {
        match self {
            Storage::Direct { word } => (word, word),
            Storage::Words64 => ("u32", "vec2<u32>"),
            Storage::Packed { .. } => ("u32", "u32"),
        }
    }
}

// The arithmetic parts: element conversions to and from `Wide` and rounding, then the steps.

/// Conversions where `Wide` is the element type.
const IDENTITY: Part = wgsl!("identity.wgsl");
/// The steps with WGSL's own operators.
const NATIVE_STEPS: Part = wgsl!("native_steps.wgsl");
/// float16 <-> float32 in integer operations: the emulated float16 conversions, and every float16
/// kernel's intermediate rounding.
const F16_BITS: Part = wgsl!("float16_bits.wgsl");

/// The element's own type with WGSL's operators: wrapping integers, the device's float64.
const WRAPPING: &[Part] = &[IDENTITY, NATIVE_STEPS];
/// 64-bit integers on `vec2<u32>` words.
const INT64_WORDS: &[Part] = &[IDENTITY, wgsl!("int64_words.wgsl")];
/// float16 in the device's `f16`, computed in float32 and rounded as the CPU rounds.
const FLOAT16: &[Part] = &[wgsl!("float16.wgsl"), F16_BITS, NATIVE_STEPS];
/// float16 on its bits, computed in float32, converted in integer operations.
const FLOAT16_PACKED: &[Part] = &[wgsl!("float16_packed.wgsl"), F16_BITS, NATIVE_STEPS];
/// bfloat16 <-> float32 bits in integer operations: every bfloat16 kernel's conversions.
const BF16_BITS: Part = wgsl!("bfloat16_bits.wgsl");
/// bfloat16 on its bits, computed in the device's float32 (a device that keeps subnormals).
const BFLOAT16: &[Part] = &[wgsl!("bfloat16.wgsl"), BF16_BITS, NATIVE_STEPS];
/// bfloat16 on its bits, computed as float32 on its bits, exact on a device that flushes
/// subnormals.
const BFLOAT16_EXACT: &[Part] = &[wgsl!("bfloat16_exact.wgsl"), BF16_BITS, wgsl!("float32_exact.wgsl")];
/// float32 on its bits with the device's IEEE operations (a device that keeps subnormals).
const FLOAT32_BITS: &[Part] = &[wgsl!("float32_bits.wgsl"), NATIVE_STEPS];
/// float32 on its bits, exact on a device that flushes subnormals (flushing them itself with
/// `FLUSH`).
const FLOAT32_EXACT: &[Part] = &[IDENTITY, wgsl!("float32_exact.wgsl")];
/// IEEE binary64 in integer operations on `vec2<u32>` words.
const FLOAT64_WORDS: &[Part] = &[IDENTITY, wgsl!("float64_words.wgsl")];

// The names the report and `tensorop devices` give the capabilities kernels may need.
pub(super) const SHADER_F16: &str = "SHADER_F16";
pub(super) const SHADER_I16: &str = "SHADER_I16";
pub(super) const SHADER_INT64: &str = "SHADER_INT64";
pub(super) const SHADER_F64: &str = "SHADER_F64";
const EIGHT_BIT_INTEGERS: &str = "8-bit integers (no wgpu feature)";
const FLOAT32_SUBNORMALS: &str = "float32 subnormals (no wgpu feature)";
const BFLOAT16_TYPE: &str = "bfloat16 (no wgpu feature)";
const BFLOAT16_AND_SUBNORMALS: &str = "bfloat16 and float32 subnormals (no wgpu feature)";

/// Whether a dtype's kernel depends on a capability beyond WGSL's core types and, if so, whether
/// it has it from the device: what the report lists under `features_native` or
/// `features_emulated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Capability {
    /// WGSL's core types and operations are enough.
    Core,
    /// The kernel uses the device's named feature.
    Uses(&'static str),
    /// The kernel emulates the named capability in 32-bit integer operations: a wgpu feature the
    /// device lacks (or WGSL cannot use), or one wgpu has no feature for.
    Emulates(&'static str),
}

/// How the kernels compute one dtype on one device, decided in one place ([`Recipe::of`]): the
/// storage of its elements, the arithmetic type `Wide` and parts, and the capability that takes.
/// The WGSL ([`source`]) and the device report (`Gpu::report`) both follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Recipe {
    storage: Storage,
    /// The arithmetic type `Wide`, in WGSL.
    wide: &'static str,
    /// Element conversions and rounding, then the steps, after the storage parts.
    arith: &'static [Part],
    pub(super) capability: Capability,
}

impl Recipe {
    /// The recipe for `dtype` with the device's `native` features. Without a feature the dtype
    /// is emulated on `u32` words.
    pub(super) fn of(dtype: DType, native: Native) -> Recipe {
        use Capability::{Core, Emulates, Uses};
        use DType::*;
        use Storage::{Direct, Packed, Words64};
        const U32_WORD: Storage = Direct { word: "u32" };
        let (storage, wide, arith, capability) = match dtype {
            // WGSL has no 8- or 16-bit integer types, whatever the device offers.
            I8 | U8 => (Packed { lanes: 4 }, "u32", WRAPPING, Emulates(EIGHT_BIT_INTEGERS)),
            I16 | U16 => (Packed { lanes: 2 }, "u32", WRAPPING, Emulates(SHADER_I16)),
            I32 | U32 => (U32_WORD, "u32", WRAPPING, Core),
            I64 | U64 if native.int64 => (Direct { word: "u64" }, "u64", WRAPPING, Uses(SHADER_INT64)),
            I64 | U64 => (Words64, "vec2<u32>", INT64_WORDS, Emulates(SHADER_INT64)),
            F16 if native.f16 => (Direct { word: "f16" }, "f32", FLOAT16, Uses(SHADER_F16)),
            F16 => (Packed { lanes: 2 }, "f32", FLOAT16_PACKED, Emulates(SHADER_F16)),
            // WGSL has no bfloat16 type: always on u32 words, computed in float32.
            BF16 if native.f32_subnormals => (Packed { lanes: 2 }, "f32", BFLOAT16, Emulates(BFLOAT16_TYPE)),
            BF16 => (Packed { lanes: 2 }, "u32", BFLOAT16_EXACT, Emulates(BFLOAT16_AND_SUBNORMALS)),
            F32 if native.f32_subnormals => (U32_WORD, "f32", FLOAT32_BITS, Core),
            F32 => (U32_WORD, "u32", FLOAT32_EXACT, Emulates(FLOAT32_SUBNORMALS)),
            F64 if native.f64 => (Direct { word: "f64" }, "f64", WRAPPING, Uses(SHADER_F64)),
            F64 => (Words64, "vec2<u32>", FLOAT64_WORDS, Emulates(SHADER_F64)),
        };
        Recipe { storage, wide, arith, capability }
    }
}

/// Output elements each invocation computes.
pub(super) fn elements_per_invocation(dtype: DType, native: Native) -> u32 {
    match Recipe::of(dtype, native).storage {
        Storage::Packed { lanes } => lanes,
        Storage::Direct { .. } | Storage::Words64 => 1,
    }
}

/// The WGSL source of the kernel for `dtype` and `sem` with the `native` features: the prelude,
/// the shared part, the storage parts, the arithmetic part and `op`, in that order (WGSL
/// declarations may be used before they appear, so only `enable` has to come first).
pub(super) fn source(dtype: DType, sem: Semantics, native: Native) -> String {
    let Recipe { storage, wide, arith, .. } = Recipe::of(dtype, native);
    let (word, elem) = storage.types();
    let mut src = String::new();
    if word == "f16" {
        src.push_str("enable f16;\n");
    }
    src.push_str(&format!(
        "const WORKGROUP: u32 = {WORKGROUP}u;\nconst MAX_INTERVALS: u32 = {MAX_INTERVALS}u;\n\
         alias Word = {word};\nalias Elem = {elem};\nalias Wide = {wide};\nconst FLUSH: bool = {};\n",
        native.flush_model
    ));
    if let Storage::Packed { lanes } = storage {
        src.push_str(&format!("const LANES: u32 = {lanes}u;\nconst BITS: u32 = {}u;\n", 32 / lanes));
    }
    for part in [PARAMS].iter().chain(storage.parts()).chain(arith) {
        src.push('\n');
        src.push_str(&part.text());
    }
    src.push('\n');
    src.push_str(&op_function(sem.formula()));
    src
}

/// A kernel that computes nothing but writes each chunk position's 64-bit input offsets
/// (`wgsl/offsets_probe.wgsl`): the offset arithmetic on its own, for the tests.
#[cfg(test)]
pub(super) fn offsets_source() -> String {
    format!(
        "const WORKGROUP: u32 = {WORKGROUP}u;\nconst MAX_INTERVALS: u32 = {MAX_INTERVALS}u;\nalias Word = u32;\n\n{}\n{}",
        PARAMS.text(),
        wgsl!("offsets_probe.wgsl").text()
    )
}

/// [`Steps`] over WGSL: each step appends a `let` to the function body and names its value.
struct WgslSteps {
    body: String,
    values: usize,
}

impl WgslSteps {
    fn bind(&mut self, expr: String) -> String {
        let name = format!("v{}", self.values);
        self.values += 1;
        self.body.push_str(&format!("    let {name} = {expr};\n"));
        name
    }
}

impl Steps for WgslSteps {
    type V = String;
    fn sub(&mut self, a: String, b: String) -> String {
        self.bind(format!("step_sub({a}, {b})"))
    }
    fn mul(&mut self, a: String, b: String) -> String {
        self.bind(format!("step_mul({a}, {b})"))
    }
    fn round(&mut self, v: String) -> String {
        self.bind(format!("step_round({v})"))
    }
    fn round_tz_inf(&mut self, v: String) -> String {
        self.bind(format!("step_round_tz_inf({v})"))
    }
    fn round_tz_sat(&mut self, v: String) -> String {
        self.bind(format!("step_round_tz_sat({v})"))
    }
}

/// `fn op(a: Elem, b: Elem) -> Elem`: the formula on the widened elements, narrowed.
fn op_function(formula: Formula) -> String {
    let mut steps = WgslSteps { body: String::new(), values: 0 };
    let result = formula.eval(&mut steps, "widen(a)".into(), "widen(b)".into());
    format!("// {formula:?}\nfn op(a: Elem, b: Elem) -> Elem {{\n{}    return narrow({result});\n}}\n", steps.body)
}

/// The probe for native float16: `Y[i] = f16(X[i])` and `Z[i] = f32(H[i])`, compared on the
/// host with the CPU's exact conversions.
pub(super) const F16_PROBE: Part = wgsl!("probe_f16.wgsl");

#[cfg(test)]
mod tests {
    use super::{op_function, source, Native, Params, F16_PROBE};
    use crate::dtype::DType;
    use crate::op::{Float16Rule, Formula, Op, Semantics};

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
        let all = Native { f16: true, int64: true, f64: true, f32_subnormals: true, flush_model: false };
        let model = Native { flush_model: true, ..none };
        for d in DType::ALL {
            for op in Op::ALL {
                for float16 in Float16Rule::ALL {
                    let sem = Semantics { op, float16 };
                    for native in [none, all, model] {
                        validate(&source(d, sem, native), &format!("{d} {op:?} {float16:?} {native:?}"));
                    }
                }
            }
        }
        validate(&F16_PROBE.text(), "f16 probe");
    }

    /// `Params` in WGSL, read back by naga: each member's name, byte offset and size, as the
    /// device sees them under WGSL's uniform layout rules.
    fn wgsl_params() -> Vec<(String, u32, u32)> {
        let src = source(DType::F32, Semantics::nearest(Op::Sub), Native::default());
        let module = naga::front::wgsl::parse_str(&src).expect("valid WGSL");
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).expect("layout");
        let (_, ty) = module.types.iter().find(|(_, t)| t.name.as_deref() == Some("Params")).expect("Params");
        let naga::TypeInner::Struct { members, span } = &ty.inner else { panic!("Params is not a struct") };
        assert_eq!(*span as usize, std::mem::size_of::<Params>(), "total size");
        members.iter().map(|m| (m.name.clone().unwrap_or_default(), m.offset, layouter[m.ty].size)).collect()
    }

    #[test]
    fn params_match_the_wgsl_layout_member_for_member() {
        use std::mem::{offset_of, size_of_val};
        let p: Params = bytemuck::Zeroable::zeroed();
        macro_rules! rust {
            ($($f:ident),*) => { vec![$((stringify!($f).to_string(), offset_of!(Params, $f) as u32, size_of_val(&p.$f) as u32)),*] };
        }
        let rust = rust!(
            n,
            base,
            rank,
            chunk_local,
            windowed,
            wide,
            interval_count,
            dims,
            inv_dims,
            strides_a,
            strides_b,
            base_coords,
            strides_hi,
            intervals
        );
        assert_eq!(wgsl_params(), rust);
    }

    #[test]
    fn op_is_the_formula_in_wgsl() {
        let rounded = op_function(Formula::SqDiffRounded);
        assert!(rounded.contains("let v0 = step_sub(widen(a), widen(b));"), "{rounded}");
        assert!(rounded.contains("let v1 = step_round(v0);"), "{rounded}");
        assert!(rounded.contains("let v2 = step_mul(v1, v1);"), "{rounded}");
        assert!(rounded.contains("return narrow(v2);"), "{rounded}");
        let sub = op_function(Formula::Sub);
        assert!(sub.contains("return narrow(v0);") && !sub.contains("step_mul"), "{sub}");
        let tz = op_function(Formula::SqDiffTzInf);
        assert!(tz.contains("let v1 = step_mul(v0, v0);"), "{tz}");
        assert!(tz.contains("let v2 = step_round_tz_inf(v1);"), "{tz}");
        assert!(tz.contains("return narrow(v2);") && !tz.contains("step_round("), "{tz}");
        let sat = op_function(Formula::SubTzSat);
        assert!(sat.contains("let v1 = step_round_tz_sat(v0);") && sat.contains("return narrow(v1);"), "{sat}");
    }
}
