//! One list of end-to-end cases, run on the CPU backend and on the wgpu backend (with the
//! adapter's features, again with `TENSOROP_WGPU_EMULATE=1` as on a device without them, and
//! again with broadcast inputs streamed in windows through tiny chunks, and with the 64-bit offset
//! path of huge outputs forced), compared bit for bit (NaNs only by position: their payload may differ). Skipped with a printed
//! reason when no GPU adapter is found, unless `TENSOROP_REQUIRE_GPU=1` (as CI sets with
//! lavapipe installed), which turns the skip into a failure.

use crate::common;
use std::path::Path;
use tensorop::op::Op;

/// A small deterministic generator (xorshift), so cases are the same on every run.
struct Rng(u64);

impl Rng {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                (self.0 >> 24) as u8
            })
            .collect()
    }
}

const DTYPES: [(&str, usize, bool); 11] = [
    ("f2", 2, true),
    ("f4", 4, true),
    ("f8", 8, true),
    ("i1", 1, false),
    ("i2", 2, false),
    ("i4", 4, false),
    ("i8", 8, false),
    ("u1", 1, false),
    ("u2", 2, false),
    ("u4", 4, false),
    ("u8", 8, false),
];

/// (shape of A, shape of B, Fortran order for A, big-endian for B)
const SHAPES: [(&[usize], &[usize], bool, bool); 7] = [
    (&[2, 3, 4], &[2, 3, 4], false, false),
    // A alone broadcast (and not a scalar): the kernels' window bit of A.
    (&[1, 7], &[5, 7], false, false),
    (&[5, 1, 7], &[3, 1], false, true),
    (&[], &[17], false, false),
    (&[33], &[33], false, false),
    (&[4, 6], &[6], true, false),
    (&[3, 1, 5, 1], &[1, 4, 1, 2], true, true),
];

fn write_npy(path: &Path, kind: &str, size: usize, shape: &[usize], fortran: bool, big: bool, rng: &mut Rng) {
    let order = if size == 1 {
        '|'
    } else if big {
        '>'
    } else {
        '<'
    };
    let header = common::header_dict(&format!("{order}{kind}"), fortran, &common::py_shape(shape));
    let n: usize = shape.iter().product();
    std::fs::write(path, common::npy_raw((1, 0), &header, &rng.bytes(n * size))).expect("write input");
}

/// Runs the binary in `dir` with extra environment variables: exit code, stdout, stderr.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Vec<u8>, String) {
    let out = common::run_in_env(dir, args, common::Input::Null, env);
    (out.code.unwrap_or(-1), out.stdout, out.stderr)
}

/// Compares two outputs element by element: identical bits, or both NaN.
fn same_bits(cpu: &[u8], gpu: &[u8], size: usize, float: bool) -> Result<(), String> {
    if cpu.len() != gpu.len() {
        return Err(format!("lengths differ: {} vs {}", cpu.len(), gpu.len()));
    }
    let header = cpu.len() - common::parse_npy(cpu).data.len();
    if cpu[..header] != gpu[..header] {
        return Err("headers differ".into());
    }
    let is_nan = |e: &[u8]| match (float, size) {
        (true, 2) => u16::from_le_bytes([e[0], e[1]]) & 0x7fff > 0x7c00,
        (true, 4) => f32::from_le_bytes(e.try_into().unwrap_or_default()).is_nan(),
        (true, 8) => f64::from_le_bytes(e.try_into().unwrap_or_default()).is_nan(),
        _ => false,
    };
    for (i, (c, g)) in cpu[header..].chunks(size).zip(gpu[header..].chunks(size)).enumerate() {
        if c != g && !(is_nan(c) && is_nan(g)) {
            return Err(format!("element {i}: cpu {c:02x?}, gpu {g:02x?}"));
        }
    }
    Ok(())
}

fn compare_case(
    dir: &Path,
    args: &[&str],
    size: usize,
    float: bool,
    env: &[(&str, &str)],
    what: &str,
) -> Result<(), String> {
    let cpu = run(dir, &[args, &["-o", "-"]].concat(), &[]);
    if cpu.0 != 0 {
        return Err(format!("{what}: cpu exit {}: {}", cpu.0, cpu.2));
    }
    let gpu = run(dir, &[args, &["-o", "-", "--backend", "wgpu"]].concat(), env);
    if gpu.0 != 0 {
        return Err(format!("{what}: wgpu exit {}: {}", gpu.0, gpu.2));
    }
    if !gpu.2.is_empty() {
        return Err(format!("{what}: wgpu printed on stderr: {}", gpu.2));
    }
    same_bits(&cpu.1, &gpu.1, size, float).map_err(|e| format!("{what}: {e}"))
}

#[test]
fn wgpu_matches_cpu_bit_for_bit_on_every_dtype_shape_and_op() {
    if !common::gpu_available("wgpu_matches_cpu_bit_for_bit_on_every_dtype_shape_and_op") {
        return;
    }
    let dir = common::Dir::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut failures = Vec::new();
    let mut compared = 0;
    for (kind, size, float) in DTYPES {
        for (si, (sa, sb, fortran, big)) in SHAPES.iter().enumerate() {
            write_npy(&dir.path("a.npy"), kind, size, sa, *fortran, false, &mut rng);
            write_npy(&dir.path("b.npy"), kind, size, sb, false, *big, &mut rng);
            let mut variants: Vec<Vec<&str>> = Op::ALL.iter().map(|op| vec![op.name()]).collect();
            if kind == "f2" {
                variants.push(vec!["sqdiff", "--half-precision"]);
                variants.push(vec!["sub", "--float16", "toward-zero-inf"]);
                variants.push(vec!["sqdiff", "--float16", "toward-zero-inf"]);
                variants.push(vec!["sub", "--float16", "toward-zero-saturate"]);
                variants.push(vec!["sqdiff", "--float16", "toward-zero-saturate"]);
            }
            for v in variants {
                let args = [&v[..], &["a.npy", "b.npy", "--feature-level", "none", "-q"]].concat();
                let modes: [(&[(&str, &str)], &str); 4] = [
                    (&[], "native"),
                    (&[("TENSOROP_WGPU_EMULATE", "1")], "emulated"),
                    (&[("TENSOROP_WGPU_RESIDENT_BYTES", "0"), ("TENSOROP_WGPU_CHUNK_BYTES", "16")], "windowed"),
                    // The 64-bit offset path of outputs with 2^32 elements or more.
                    (&[("TENSOROP_WGPU_WIDE", "1"), ("TENSOROP_WGPU_CHUNK_BYTES", "16")], "wide"),
                ];
                for (env, mode) in modes {
                    let what = format!("{kind} {v:?} shape case {si} ({mode})");
                    compared += 1;
                    if let Err(e) = compare_case(dir.root(), &args, size, float, env, &what) {
                        failures.push(e);
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {compared} comparisons failed:\n{}", failures.len(), failures.join("\n"));
}

/// Every operator on `a.npy` and `b.npy` in `dir`: wgpu, native and emulated, against the CPU.
fn every_op_matches(dir: &common::Dir, size: usize, float: bool, what: &str) {
    for op in Op::ALL {
        let args = [op.name(), "a.npy", "b.npy", "--feature-level", "none", "-q"];
        native_and_emulated_match(dir, &args, size, float, &format!("{what}, {}", op.name()));
    }
}

/// One command in `dir`: wgpu, native and emulated, against the CPU; panics on a difference.
fn native_and_emulated_match(dir: &common::Dir, args: &[&str], size: usize, float: bool, what: &str) {
    for (env, mode) in [(&[][..], "native"), (&[("TENSOROP_WGPU_EMULATE", "1")][..], "emulated")] {
        if let Err(e) = compare_case(dir.root(), args, size, float, env, &format!("{what} ({mode})")) {
            panic!("{e}");
        }
    }
}

/// Float64 bit patterns where IEEE arithmetic has its seams: zeros, the subnormal range and its
/// edge, 1 and its neighbours, the largest finite value, values whose squares overflow, round to
/// the largest finite value, underflow or land on the smallest subnormal, infinities and NaNs
/// (quiet and signalling), each of both signs.
fn float64_edges() -> Vec<u64> {
    let positive: [u64; 26] = [
        0,
        1, // the smallest subnormal
        3,
        0x0008_0000_0000_0000, // a subnormal with only its top bit
        0x000f_ffff_ffff_ffff, // the largest subnormal
        0x0010_0000_0000_0000, // the smallest normal
        0x0010_0000_0000_0001,
        0x3fef_ffff_ffff_ffff, // 1 - ulp
        0x3ff0_0000_0000_0000, // 1
        0x3ff0_0000_0000_0001, // 1 + ulp
        0x3ff8_0000_0000_0000, // 1.5
        // Squares exactly half an ulp above a representable value plus 2^-104: the sticky bit
        // lies in the product's lowest word (the even and the odd case).
        0x3ff4_0000_0000_0001,
        0x3ff3_ffff_ffff_ffff,
        0x4000_0000_0000_0000, // 2
        0x7fef_ffff_ffff_ffff, // the largest finite
        0x7fe0_0000_0000_0000, // 2^1023
        0x5fef_ffff_ffff_ffff, // its square is just below 2^1024: rounds to the largest or overflows
        0x5ff0_0000_0000_0000, // 2^512: its square overflows
        0x5fe6_a09e_667f_3bcc, // about sqrt(largest finite)
        0x2000_0000_0000_0000, // 2^-511: its square is the smallest normal's neighbourhood
        0x1e60_0000_0000_0000, // 2^-537: its square is 2^-1074, the smallest subnormal
        0x1e5f_ffff_ffff_ffff, // just below: its square rounds to the smallest subnormal or to 0
        0x1e50_0000_0000_0000, // 2^-538: its square is 2^-1076, rounds to 0 (tie to even)
        0x7ff0_0000_0000_0000, // infinity
        0x7ff8_0000_0000_0000, // quiet NaN
        0x7ff0_0000_0000_0001, // signalling NaN
    ];
    positive.iter().flat_map(|&b| [b, b | 1 << 63]).collect()
}

/// Writes float64 inputs, then [`every_op_matches`].
fn float64_matches(dir: &common::Dir, a: (&[usize], &[u64]), b: (&[usize], &[u64]), what: &str) {
    let f = |v: &[u64]| v.iter().map(|&x| f64::from_bits(x)).collect::<Vec<_>>();
    dir.write("a.npy", &common::npy(a.0, &f(a.1)));
    dir.write("b.npy", &common::npy(b.0, &f(b.1)));
    every_op_matches(dir, 8, true, &format!("float64 {what}"));
}

#[test]
fn float64_is_exact_on_wgpu_with_and_without_shader_f64() {
    if !common::gpu_available("float64_is_exact_on_wgpu_with_and_without_shader_f64") {
        return;
    }
    let dir = common::Dir::new();
    // Every pair of edge values: A as a column, B as a row.
    let edges = float64_edges();
    let n = edges.len();
    float64_matches(&dir, (&[n, 1], &edges), (&[1, n], &edges), "edge pairs");
    // 10^5 random bit patterns (every exponent alike, NaNs and infinities included).
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let mut words = |k: usize| -> Vec<u64> {
        rng.bytes(8 * k).chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())).collect()
    };
    let (a, b) = (words(100_000), words(100_000));
    float64_matches(&dir, (&[a.len()], &a), (&[b.len()], &b), "random bit patterns");
    // 10^4 near-equal pairs: cancellation to a few ulps, across binade edges, down into the
    // subnormals, and exact cancellation.
    let base = words(10_000);
    let r = words(10_000);
    let a: Vec<u64> = base.iter().map(|&x| x & !(0x7ff << 52) | (x % 2046 + 1) << 52).collect();
    let b: Vec<u64> = a
        .iter()
        .zip(&r)
        .map(|(&x, &r)| match r % 4 {
            0 => x,
            1 => x.wrapping_add(r >> 60),
            2 => x.wrapping_sub(r >> 60),
            _ => (x & 1 << 63) | ((x & !(1 << 63)) ^ (r >> 59)),
        })
        .collect();
    float64_matches(&dir, (&[a.len()], &a), (&[b.len()], &b), "near-equal pairs");
    // The report says float64 was emulated.
    let args = ["sub", "a.npy", "b.npy", "-o", "c.npy", "--backend", "wgpu", "--report", "r.json", "-f", "none"];
    let (code, _, err) = run(dir.root(), &args, &[("TENSOROP_WGPU_EMULATE", "1")]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_slice(&dir.read("r.json")).expect("report is JSON");
    assert_eq!(report["backend"]["features_emulated"], serde_json::json!(["SHADER_F64"]), "{report}");
}

/// 2^k as a float64, subnormals included (k from -1074 to 1023).
fn pow2(k: i32) -> f64 {
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1 << (k + 1074))
    }
}

/// float64 pairs at the emulated addition's rounding seams. For x of an even and an odd
/// significand, the largest significand and the largest finite value (whose rounding up
/// overflows), and every distance n from 1 to 64 between x's exponent and y's: y with a bit on
/// x's rounding point (half an ulp of x) and, one at a time, its last bit added or taken away,
/// so that the sum or difference is a tie, just above one or just below, with the bits below
/// the guard bits (the sticky bit) deciding. Each pair both ways round, with both signs of
/// either operand: effective additions and subtractions alike.
fn float64_rounding_seams() -> (Vec<f64>, Vec<f64>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for x in [1.0, 1.0 + f64::EPSILON, 2.0 - f64::EPSILON, 1.5 * pow2(600), f64::MAX] {
        let e = x.abs().log2().floor() as i32;
        for n in 1..=64 {
            let (lead, half) = (pow2(e - n), pow2(e - 53));
            let tie = match n {
                1..=52 => lead + half,
                53 => half,
                _ => lead,
            };
            for y in [tie, f64::from_bits(tie.to_bits() + 1), f64::from_bits(tie.to_bits() - 1)] {
                for (p, q) in [(x, y), (y, x)] {
                    for (sp, sq) in [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)] {
                        a.push(sp * p);
                        b.push(sq * q);
                    }
                }
            }
        }
    }
    // Squares with ties and near-ties below their 53 kept bits (d has 27 or 28 significant bits,
    // so d * d has 54 or 55), scaled to normal, near-overflow and subnormal results.
    for d in [(1u64 << 27) - 1, (1 << 27) + 1, (1 << 27) - 3, (1 << 27) + 3, 3 << 26 | 1, (1 << 26) + 1] {
        for k in [-27, 480, 484, -540, -560] {
            a.push(d as f64 * pow2(k));
            b.push(0.0);
        }
    }
    // Squares that are a tie but for one sticky bit at a word edge of the 106-bit product: bit
    // 31 after the product's normalising shift (0x3ff0_0008_0000_8000) and bit 32 without it
    // (0x3fff_fff7_ffff_0000). Found by search: losing that bit rounds them down.
    for d in [0x3ff0_0008_0000_8000u64, 0x3fff_fff7_ffff_0000] {
        a.push(f64::from_bits(d));
        b.push(0.0);
    }
    (a, b)
}

#[test]
fn float64_emulation_is_exact_at_its_rounding_seams() {
    if !common::gpu_available("float64_emulation_is_exact_at_its_rounding_seams") {
        return;
    }
    let dir = common::Dir::new();
    let (a, b) = float64_rounding_seams();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
    float64_matches(&dir, (&[a.len()], &bits(&a)), (&[b.len()], &bits(&b)), "rounding seams");
}

/// Writes `a` as a column and `b` as a row of raw little-endian elements of `descr` (every pair
/// meets once), then [`every_op_matches`].
fn all_pairs_match(dir: &common::Dir, descr: &str, size: usize, a: &[u64], b: &[u64]) {
    pairs_match(dir, descr, size, false, a, b);
}

/// [`all_pairs_match`] for any dtype; `float`: NaNs compare by position only.
fn pairs_match(dir: &common::Dir, descr: &str, size: usize, float: bool, a: &[u64], b: &[u64]) {
    let raw = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()[..size].to_vec()).collect::<Vec<u8>>();
    let shape = |n: usize, col: bool| if col { format!("({n}, 1)") } else { format!("(1, {n})") };
    for (name, v, col) in [("a.npy", a, true), ("b.npy", b, false)] {
        let header = common::header_dict(descr, false, &shape(v.len(), col));
        dir.write(name, &common::npy_raw((1, 0), &header, &raw(v)));
    }
    every_op_matches(dir, size, float, &format!("{descr} all pairs"));
}

/// float16 bit patterns at the emulation's rounding seams: 1, 1.5, the largest significand and
/// 1 + ulp in every binade from the smallest subnormal to the largest finite, of both signs,
/// with zeros, infinities and NaN. Their differences land on rounding midpoints across binade
/// edges (2048 - 1 is halfway between 2046 and 2048), their squares on the overflow midpoint
/// (65520) and the underflow one (2^-25), and into the subnormals. Two pairs more: their
/// difference's square, rounded to float32, lies exactly halfway between two float16
/// subnormals, the one tie that rounding to a subnormal meets (found by search: 0x1fea - 0x0028
/// and 0x1fed - 0x0026). And one whose square in float32 is a float16 tie but for its lowest
/// bit (0x15c5 - 0xccc6: the difference itself is rounded to float32 first), and one whose
/// square does the same between two subnormals (0x000c - 0x1e6d, square 0x38252001: found by
/// search over every pair whose square is that small).
fn float16_seams() -> Vec<u64> {
    let mut v: Vec<u64> = vec![0, 0x7c00, 0x7e00, 0x1fea, 0x0028, 0x1fed, 0x0026, 0x15c5, 0x4cc6, 0x000c, 0x1e6d];
    for e in 0u64..31 {
        for m in [0u64, 0x200, 0x3ff, 1] {
            v.push(e << 10 | m);
        }
    }
    v.sort_unstable();
    v.dedup();
    v.iter().flat_map(|&b| [b, b | 0x8000]).collect()
}

#[test]
fn integer_emulation_is_exact_at_its_seams() {
    if !common::gpu_available("integer_emulation_is_exact_at_its_seams") {
        return;
    }
    let dir = common::Dir::new();
    // 64-bit limbs: every combination of these low and high words, so that pairs have equal low
    // words, low words one apart either way, 0 and 2^32 - 1 in either word, borrows and carries
    // into and out of the high word, and squares whose cross terms carry.
    let words = [0u64, 1, 2, 0x7fff_ffff, 0x8000_0000, 0xffff_fffe, 0xffff_ffff];
    let limbs: Vec<u64> = words.iter().flat_map(|&hi| words.iter().map(move |&lo| hi << 32 | lo)).collect();
    for descr in ["<i8", "<u8"] {
        all_pairs_match(&dir, descr, 8, &limbs, &limbs);
    }
    // 8-bit lanes: every pair, four to a word, so each wrap happens in every lane position
    // next to lanes that must not change.
    let bytes: Vec<u64> = (0..256).collect();
    for descr in ["|i1", "|u1"] {
        all_pairs_match(&dir, descr, 1, &bytes, &bytes);
    }
    // 16-bit lanes: the values around each byte and sign boundary, two to a word.
    let halves: Vec<u64> =
        [0u64, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x101, 0x7ffe, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff].to_vec();
    for descr in ["<i2", "<u2"] {
        all_pairs_match(&dir, descr, 2, &halves, &halves);
    }
}

/// float32 bit patterns where a device that flushes subnormals would differ, and where
/// `float32_exact.wgsl` changes paths: biased exponents 0 to 3 (subnormals and the smallest
/// normals), 23 to 27 (the subtraction's bound, 26), 52 to 54 (squares at the smallest
/// subnormal's half, 2^-150), 62 to 66 (squares at 2^-126) and 100 to 102, 126 to 128 and 254,
/// each with significands 0, 1, 2, half, and the two largest; both signs, with infinities and
/// NaNs. And odd multiples of 2^-75, whose squares lie exactly halfway between two subnormals
/// (j^2 halves of 2^-149): ties to even, with the round bit in the product's low word (j = 3, 5,
/// 4095) or its high word and nothing below it (j = 33, 65, 129, 255: exponents 57 to 59).
fn float32_seams() -> Vec<u64> {
    let ties = [0x1ac0_0000, 0x1b20_0000, 0x1fff_f000, 0x1c84_0000, 0x1d02_0000, 0x1d81_0000, 0x1dff_0000];
    let mut v: Vec<u64> = [0x7f80_0000, 0x7fc0_0000, 0x7f80_0001].into_iter().chain(ties).collect();
    for e in [0u64, 1, 2, 3, 23, 24, 25, 26, 27, 52, 53, 54, 62, 63, 64, 65, 66, 100, 101, 102, 126, 127, 128, 254] {
        for m in [0u64, 1, 2, 0x40_0000, 0x7f_fffe, 0x7f_ffff] {
            v.push(e << 23 | m);
        }
    }
    v.sort_unstable();
    v.dedup();
    v.iter().flat_map(|&b| [b, b | 0x8000_0000]).collect()
}

/// A device that flushes float32 subnormals gets exact float32 arithmetic from
/// `float32_exact.wgsl`; `TENSOROP_WGPU_EMULATE=1` (the "emulated" runs) uses it on any device.
#[test]
fn float32_is_exact_at_the_subnormal_seams() {
    if !common::gpu_available("float32_is_exact_at_the_subnormal_seams") {
        return;
    }
    let dir = common::Dir::new();
    let seams = float32_seams();
    pairs_match(&dir, "<f4", 4, true, &seams, &seams);
}

#[test]
fn float16_emulation_is_exact_at_its_rounding_midpoints() {
    if !common::gpu_available("float16_emulation_is_exact_at_its_rounding_midpoints") {
        return;
    }
    let dir = common::Dir::new();
    let seams = float16_seams();
    pairs_match(&dir, "<f2", 2, true, &seams, &seams);
    // And the intermediate rounding of `--half-precision`.
    let args = ["sqdiff", "a.npy", "b.npy", "--feature-level", "none", "-q", "--half-precision"];
    native_and_emulated_match(&dir, &args, 2, true, "float16 sqdiff --half-precision");
    // And Direct3D's conversion, whose edges the same pairs reach: differences and squares just
    // past 65504 (65504 + 2^-8 is 0x7bff - 0x9c00), at it, at 2^-14 and across the subnormals.
    for op in Op::ALL {
        for rule in ["toward-zero-inf", "toward-zero-saturate"] {
            let args = [op.name(), "a.npy", "b.npy", "--feature-level", "none", "-q", "--float16", rule];
            native_and_emulated_match(&dir, &args, 2, true, &format!("float16 {} --float16 {rule}", op.name()));
        }
    }
}

#[test]
fn wgpu_streams_many_chunks_in_order() {
    if !common::gpu_available("wgpu_streams_many_chunks_in_order") {
        return;
    }
    let dir = common::Dir::new();
    let mut rng = Rng(7);
    // (A, B): B broadcast along the outer, a middle and the inner dimension, and both at once;
    // and every other dimension, so that nine remain after merging (the uniform block holds
    // four to a vector: the third vector is read).
    let shapes: [(&[usize], &[usize]); 5] = [
        (&[37, 101], &[101]),
        (&[6, 5, 37], &[6, 1, 37]),
        (&[9, 2, 3, 11], &[9, 1, 3, 1]),
        (&[7, 1], &[1, 13]),
        (&[2, 3, 2, 3, 2, 3, 2, 3, 2], &[2, 1, 2, 1, 2, 1, 2, 1, 2]),
    ];
    for (kind, size, float) in [("u1", 1, false), ("f2", 2, true), ("f4", 4, true), ("i8", 8, false)] {
        for (sa, sb) in shapes {
            write_npy(&dir.path("a.npy"), kind, size, sa, false, false, &mut rng);
            write_npy(&dir.path("b.npy"), kind, size, sb, false, false, &mut rng);
            let args = ["sqdiff", "a.npy", "b.npy", "--feature-level", "none", "-q"];
            // 64-byte chunks: hundreds of dispatches, broadcast inputs uploaded once, then
            // streamed in per-chunk windows.
            for (resident, wide) in [("33554432", "0"), ("0", "0"), ("0", "1")] {
                let env = [
                    ("TENSOROP_WGPU_CHUNK_BYTES", "64"),
                    ("TENSOROP_WGPU_RESIDENT_BYTES", resident),
                    ("TENSOROP_WGPU_WIDE", wide),
                ];
                let what = format!("{kind} {sa:?} - {sb:?}, resident limit {resident}, wide {wide}");
                if let Err(e) = compare_case(dir.root(), &args, size, float, &env, &what) {
                    panic!("{e}");
                }
            }
        }
    }
}

/// Chunks of more workgroups than a dispatch dimension holds are dispatched in two dimensions
/// (with the default chunk size only on devices with small limits, or with larger
/// `TENSOROP_WGPU_CHUNK_BYTES`): the cap of 2 per dimension makes small inputs take that path,
/// every storage kind, native and emulated.
#[test]
fn wgpu_dispatches_in_two_dimensions() {
    if !common::gpu_available("wgpu_dispatches_in_two_dimensions") {
        return;
    }
    let dir = common::Dir::new();
    let mut rng = Rng(11);
    for (kind, size, float) in [("u1", 1, false), ("i2", 2, false), ("f2", 2, true), ("f4", 4, true), ("f8", 8, true)] {
        write_npy(&dir.path("a.npy"), kind, size, &[37, 101], false, false, &mut rng);
        write_npy(&dir.path("b.npy"), kind, size, &[101], false, false, &mut rng);
        for emulate in ["0", "1"] {
            let env = [("TENSOROP_WGPU_MAX_GROUPS", "2"), ("TENSOROP_WGPU_EMULATE", emulate)];
            let args = ["sqdiff", "a.npy", "b.npy", "--feature-level", "none", "-q"];
            let what = format!("{kind} [37, 101] - [101], two-dimensional dispatch, emulate {emulate}");
            if let Err(e) = compare_case(dir.root(), &args, size, float, &env, &what) {
                panic!("{e}");
            }
        }
    }
}

#[test]
fn wgpu_report_names_the_device_and_gpu_timings() {
    if !common::gpu_available("wgpu_report_names_the_device_and_gpu_timings") {
        return;
    }
    let dir = common::Dir::new();
    let mut rng = Rng(3);
    write_npy(&dir.path("a.npy"), "f2", 2, &[8], false, false, &mut rng);
    write_npy(&dir.path("b.npy"), "f2", 2, &[8], false, false, &mut rng);
    let args = ["sub", "a.npy", "b.npy", "-o", "c.npy", "--backend", "wgpu", "--report", "r.json"];
    let f16 = serde_json::json!(["SHADER_F16"]);
    for emulate in ["0", "1"] {
        let (code, _, err) = run(dir.root(), &args, &[("TENSOROP_WGPU_EMULATE", emulate)]);
        assert_eq!(code, 0, "{err}");
        let report: serde_json::Value = serde_json::from_slice(&dir.read("r.json")).expect("report is JSON");
        let b = &report["backend"];
        assert_eq!(b["name"], "wgpu");
        for key in ["adapter", "device_type", "driver", "api"] {
            assert!(b[key].as_str().is_some_and(|s| !s.is_empty()), "backend.{key} missing: {b}");
        }
        assert!(b["flushes_subnormals"].is_boolean());
        // float16 is either native or emulated, never both; the switch forces emulation.
        let (native, emulated) = (&b["features_native"], &b["features_emulated"]);
        assert!((*native == f16) != (*emulated == f16), "{b}");
        if emulate == "1" {
            assert_eq!(*emulated, f16, "{b}");
        }
        for key in ["init", "upload", "compute", "download", "total"] {
            assert!(report["timings_ms"][key].is_number(), "timings_ms.{key} missing");
        }
    }
}

#[test]
fn devices_lists_adapters_as_table_and_json() {
    if !common::gpu_available("devices_lists_adapters_as_table_and_json") {
        return;
    }
    let dir = common::Dir::new();
    let (code, out, _) = run(dir.root(), &["devices", "--json"], &[]);
    assert_eq!(code, 0);
    let list: serde_json::Value = serde_json::from_slice(&out).expect("devices --json is JSON");
    let first = &list[0];
    for key in ["name", "api", "device_type", "driver", "features", "max_storage_buffer_binding_size"] {
        assert!(!first[key].is_null(), "devices --json lacks {key}: {first}");
    }
    let (code, out, err) = run(dir.root(), &["devices"], &[]);
    assert_eq!(code, 0);
    assert!(String::from_utf8_lossy(&out).contains("max storage binding"));
    assert!(err.is_empty(), "devices printed on stderr: {err}");
}

#[test]
fn missing_adapter_is_a_clear_runtime_error() {
    // An API with no driver here: the message says what was looked for and what to do.
    let dir = common::Dir::new();
    let (code, _, err) = run(dir.root(), &["devices"], &[("TENSOROP_WGPU_BACKEND", "nonsense")]);
    assert_eq!(code, 1);
    assert!(err.contains("TENSOROP_WGPU_BACKEND"), "{err}");
}

/// `devices --json` prints valid JSON whatever is found: with no adapter, an entry with the
/// reason (and exit 1); the hint names no flag `devices` does not take.
#[cfg(not(target_os = "macos"))]
#[test]
fn devices_json_without_an_adapter_is_json_with_the_reason() {
    let dir = common::Dir::new();
    let (code, out, err) = run(dir.root(), &["devices", "--json"], &[("TENSOROP_WGPU_BACKEND", "metal")]);
    let list: serde_json::Value = serde_json::from_slice(&out).expect("devices --json prints JSON without an adapter");
    let wgpu = list.as_array().and_then(|l| l.iter().find(|e| e["api"] == "wgpu")).expect("an entry for wgpu");
    assert!(wgpu["error"].as_str().is_some_and(|e| e.contains("no GPU adapter")), "{list}");
    if !cfg!(windows) {
        assert_eq!(code, 1, "no adapter anywhere is still a failure");
    }
    assert!(!err.contains("--backend"), "devices takes no --backend, yet: {err}");
}
