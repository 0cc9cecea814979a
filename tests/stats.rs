//! End-to-end tests of `--stats`: the exact sum, the summary's independence from threads, chunks
//! and backends, where it appears (report, standard error) and where it does not. The values
//! themselves are checked against an independent Python reference in the NumPy cross-check.

use crate::common::*;
use serde_json::Value;

#[test]
fn the_sum_is_exact_where_a_running_float_sum_is_not() {
    let dir = Dir::new();
    let x: Vec<f32> = [1e30f32, 1.0, -1e30, 3.0].repeat(1000);
    dir.write("x.npy", &npy(&[x.len()], &x));
    dir.write("z.npy", &npy(&[1], &[0.0f32]));
    dir.run(&["sub", "x.npy", "z.npy", "-o", "o.npy", "--stats", "--report", "r.json", "-q"]).ok();
    let s = &dir.report("r.json")["stats"];
    // A float64 running sum gives 3000 or 0 here; the exact sum is 4000.
    assert_eq!(s["sum"], 4000.0);
    assert_eq!(s["mean"], 1.0);
    assert_eq!((s["count"].as_u64(), s["finite"].as_u64()), (Some(4000), Some(4000)));
    assert_eq!(s["min"], -1e30f32 as f64);
    assert_eq!(s["histogram"]["binades"][0], serde_json::json!({"exp": 0, "count": 1000}));
    assert_eq!(s["histogram"]["binades"][1], serde_json::json!({"exp": 1, "count": 1000}));
}

/// Inputs of `n` elements of every class (NaN and infinities when `specials`, signed zeros,
/// subnormals, large and small normals), so that every field of the summary has something to
/// count. Without `specials` every float32 block takes the summary's windowed path.
fn edge_inputs(dir: &Dir, n: usize, specials: bool) {
    let a: Vec<f32> = (0..n as u32)
        .map(|i| match i % 11 {
            0 => {
                if specials {
                    f32::NAN
                } else {
                    1e-30
                }
            }
            1 => {
                if specials {
                    f32::INFINITY
                } else {
                    1.5e38
                }
            }
            2 => -0.0,
            3 => f32::from_bits(i % 5 + 1),
            4 => -3.0e38,
            5 => {
                if specials {
                    f32::NEG_INFINITY
                } else {
                    -7e-41
                }
            }
            _ => f32::from_bits(i.wrapping_mul(2_654_435_761) & 0xbf7f_ffff),
        })
        .collect();
    let b: Vec<f32> = (0..n as u32).map(|i| (i % 7) as f32 * 0.25 - 0.75).collect();
    dir.write("a.npy", &npy(&[n], &a));
    dir.write("b.npy", &npy(&[n], &b));
}

fn stats_of(dir: &Dir, op: &str, extra: &[&str], env: &[(&str, &str)]) -> Value {
    let args =
        [&[op, "a.npy", "b.npy", "-o", "o.npy", "--stats", "--report", "r.json", "-q", "-f", "none"], extra].concat();
    let out = dir.run_env(&args, env);
    assert_eq!(out.code, Some(0), "{args:?} {env:?}: {}", out.stderr);
    let s = dir.report("r.json")["stats"].clone();
    assert!(s.is_object(), "{args:?}: stats {s}");
    s
}

#[test]
fn the_summary_is_identical_for_any_threads_and_chunking() {
    let dir = Dir::new();
    for specials in [true, false] {
        // 300 000 float32: five CPU chunks of 256 KiB.
        edge_inputs(&dir, 300_000, specials);
        for op in ["sub", "sqdiff"] {
            let one = stats_of(&dir, op, &["--threads", "1"], &[]);
            for threads in ["2", "3", "8"] {
                let got = stats_of(&dir, op, &["--threads", threads], &[]);
                assert_eq!(got, one, "{op} --threads {threads}, specials: {specials}");
            }
            let classes: &[&str] = match (specials, op) {
                (false, _) => &[],
                (true, "sub") => &["nan", "posinf", "neginf"],
                (true, _) => &["nan", "posinf"],
            };
            for k in classes {
                assert!(one[k].as_u64() > Some(0), "{op}: the inputs should produce some {k}: {one}");
            }
            if !specials && op == "sub" {
                // (sqdiff squares the large values into infinities.)
                assert_eq!(one["finite"], one["count"], "{op}: {one}");
            }
            assert!(one["histogram"]["zero"].as_u64() > Some(0) && one["histogram"]["subnormal"].as_u64() > Some(0));
        }
    }
}

/// A and B of `n` elements of `T` from a xorshift's bits (for floats, every class: NaN,
/// infinities, subnormals, zeros), equal in every eighth stretch of 100 so that `sub` gives zeros.
fn random_pair<T: Elem>(dir: &Dir, n: usize) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ T::SIZE as u64;
    let mut bytes = |n: usize| -> Vec<T> {
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                T::from_le(&state.to_le_bytes()[..T::SIZE])
            })
            .collect()
    };
    let a = bytes(n);
    let mut b = bytes(n);
    for (i, x) in b.iter_mut().enumerate() {
        if i / 100 % 8 == 0 {
            *x = a[i];
        }
    }
    dir.write("a.npy", &npy(&[n], &a));
    dir.write("b.npy", &npy(&[n], &b));
}

/// Writes `a.npy` and `b.npy` of a dtype ([`random_pair`]).
type MakePair = fn(&Dir, usize);

#[test]
fn the_summary_is_identical_on_every_cpu_tier() {
    let dir = Dir::new();
    // 100 003 elements: several blocks of every kernel, and a ragged end.
    let n = 100_003;
    let pairs: [(&str, MakePair); 11] = [
        ("float16", random_pair::<H>),
        ("float32", random_pair::<f32>),
        ("float64", random_pair::<f64>),
        ("int8", random_pair::<i8>),
        ("int16", random_pair::<i16>),
        ("int32", random_pair::<i32>),
        ("int64", random_pair::<i64>),
        ("uint8", random_pair::<u8>),
        ("uint16", random_pair::<u16>),
        ("uint32", random_pair::<u32>),
        ("uint64", random_pair::<u64>),
    ];
    for (dtype, make) in pairs {
        make(&dir, n);
        for op in ["sub", "sqdiff"] {
            let best = stats_of(&dir, op, &["--threads", "2"], &[]);
            for tier in ["portable", "avx2", "avx512"] {
                let got = stats_of(&dir, op, &["--threads", "2"], &[("TENSOROP_CPU_TIER", tier)]);
                assert_eq!(got, best, "{dtype} {op} under TENSOROP_CPU_TIER={tier}");
            }
        }
    }
    // bfloat16, summarised as float32 widened: a .safetensors pair of random bits, B zero in
    // its first half (so that `sub` keeps A's subnormals, NaN and infinities).
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut words: Vec<u8> = (0..2 * n)
        .flat_map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state as u16).to_le_bytes()
        })
        .collect();
    words[2 * n..3 * n].fill(0);
    let (a, b) = words.split_at(n * 2);
    dir.write("a.safetensors", &containers::safetensors(&[("x", "BF16", &[n], a.to_vec())]));
    dir.write("b.safetensors", &containers::safetensors(&[("x", "BF16", &[n], b.to_vec())]));
    for op in ["sub", "sqdiff"] {
        let bf16_stats = |env: &[(&str, &str)]| {
            let args = [op, "a.safetensors", "b.safetensors", "-o", "o.safetensors", "--stats", "-q", "-f", "none"];
            let out = dir.run_env(&[&args[..], &["--report", "r.json"]].concat(), env);
            assert_eq!(out.code, Some(0), "{env:?}: {}", out.stderr);
            dir.report("r.json")["members"][0]["stats"].clone()
        };
        let best = bf16_stats(&[]);
        let h = &best["histogram"];
        assert!(best["nan"].as_u64() > Some(0) && h["subnormal"].as_u64() > Some(0), "{op}: {best}");
        for tier in ["portable", "avx2", "avx512"] {
            assert_eq!(bf16_stats(&[("TENSOROP_CPU_TIER", tier)]), best, "bfloat16 {op}, TENSOROP_CPU_TIER={tier}");
        }
    }
}

#[test]
fn a_cpu_tier_that_does_not_exist_is_a_usage_error() {
    let dir = Dir::new();
    random_pair::<f32>(&dir, 10);
    let out = dir.run_env(&["sub", "a.npy", "b.npy", "-o", "o.npy", "--stats"], &[("TENSOROP_CPU_TIER", "sse9")]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("TENSOROP_CPU_TIER=sse9") && out.stderr.contains("portable, avx2, avx512"),
        "{}",
        out.stderr
    );
    assert!(!dir.path("o.npy").exists(), "nothing is written");
}

#[test]
fn the_summary_is_identical_on_the_gpu_native_and_emulated() {
    if !gpu_available("the_summary_is_identical_on_the_gpu_native_and_emulated") {
        return;
    }
    let dir = Dir::new();
    for specials in [true, false] {
        edge_inputs(&dir, 100_000, specials);
        for op in ["sub", "sqdiff"] {
            let cpu = stats_of(&dir, op, &[], &[]);
            let wgpu = ["--backend", "wgpu"];
            assert_eq!(stats_of(&dir, op, &wgpu, &[]), cpu, "{op} wgpu, specials: {specials}");
            let small = [("TENSOROP_WGPU_CHUNK_BYTES", "4096"), ("TENSOROP_WGPU_EMULATE", "1")];
            assert_eq!(stats_of(&dir, op, &wgpu, &small), cpu, "{op} wgpu, emulated, small chunks, {specials}");
        }
    }
    // float16 and int64 as well, native and emulated.
    let h: Vec<H> = (0..20_000u32).map(|i| H((i.wrapping_mul(40_503) & 0xffff) as u16)).collect();
    dir.write("a.npy", &npy(&[h.len()], &h));
    dir.write("b.npy", &npy(&[1], &[H(0x3c00)]));
    let cpu = stats_of(&dir, "sqdiff", &[], &[]);
    assert_eq!(stats_of(&dir, "sqdiff", &["--backend", "wgpu"], &[("TENSOROP_WGPU_EMULATE", "1")]), cpu, "float16");
    let i: Vec<i64> = (0..20_000u64).map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15) as i64).collect();
    dir.write("a.npy", &npy(&[i.len()], &i));
    dir.write("b.npy", &npy(&[1], &[i64::MIN]));
    let cpu = stats_of(&dir, "sub", &[], &[]);
    assert_eq!(stats_of(&dir, "sub", &["--backend", "wgpu"], &[("TENSOROP_WGPU_EMULATE", "1")]), cpu, "int64");
}

#[test]
fn integer_sums_are_exact_integers_of_any_size() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[4], &[u64::MAX; 4]));
    dir.write("b.npy", &npy(&[1], &[0u64]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "--stats", "--report", "r.json", "-q"]).ok();
    let text = String::from_utf8(dir.read("r.json")).expect("utf-8");
    // 4 * (2^64 - 1), beyond 64 bits, written as a JSON integer.
    assert!(text.contains("\"sum\": 73786976294838206460"), "{text}");
    assert!(text.contains("\"max\": 18446744073709551615"), "{text}");
}

/// The mean of an integer result is the exact sum over the count rounded once, on every thread
/// count and backend: 4344 uint64 values summing to 49825399774920890454243, whose float64 sum
/// divided by the count would be 1.1469935491464292e+19 (Python's
/// `float(Fraction(sum, 4344))` is 1.1469935491464294e+19).
#[test]
fn the_integer_mean_is_rounded_once_everywhere() {
    let dir = Dir::new();
    let sum: u128 = 49_825_399_774_920_890_454_243;
    let (q, r) = ((sum / 4344) as u64, (sum % 4344) as usize);
    let a: Vec<u64> = (0..4344).map(|i| q + u64::from(i < r)).collect();
    dir.write("a.npy", &npy(&[a.len()], &a));
    dir.write("b.npy", &npy(&[1], &[0u64]));
    let gpu = gpu_available("the_integer_mean_is_rounded_once_everywhere");
    let runs: [&[&str]; 3] = [&["--threads", "1"], &["--threads", "3"], &["--backend", "wgpu"]];
    for extra in runs.into_iter().filter(|r| gpu || r[0] != "--backend") {
        let s = stats_of(&dir, "sub", extra, &[]);
        let text = String::from_utf8(dir.read("r.json")).expect("utf-8");
        assert!(text.contains(&format!("\"sum\": {sum},")), "{extra:?}: {text}");
        assert_eq!(s["mean"].as_f64(), Some(1.1469935491464294e19), "{extra:?}");
    }
}

#[test]
fn stats_go_to_the_report_and_stderr_only_when_asked_and_only_on_success() {
    let dir = Dir::new();
    write_ab(&dir);
    let base = ["sqdiff", "a.npy", "b.npy", "-o", "o.npy", "--report", "r.json"];
    let out = dir.run(&[&base[..], &["--stats"]].concat());
    out.ok().stderr_mentions("mean squared error").stderr_mentions("binade");
    assert!(dir.report("r.json")["stats"].is_object());
    let out = dir.run(&[&base[..], &["--stats", "-q"]].concat());
    assert!(out.ok().stderr.is_empty(), "-q: nothing on stderr: {}", out.stderr);
    assert!(dir.report("r.json")["stats"].is_object(), "-q keeps the stats in the report");
    for (extra, code) in [(&[][..], 0), (&["--stats", "--dry-run"][..], 0), (&["--stats", "-f", "1_0"][..], 3)] {
        let out = dir.run(&[&base[..], extra].concat());
        assert_eq!(out.code, Some(code), "{extra:?}: {}", out.stderr);
        assert!(dir.report("r.json")["stats"].is_null(), "{extra:?}: stats should be null");
        assert!(!out.stderr.contains("mean squared error"), "{extra:?}");
    }
    // A runtime failure: null as well.
    dir.write("bad.npy", b"\x93NUMPY\x01\x00garbage");
    dir.run(&["sub", "bad.npy", "b.npy", "-o", "o.npy", "--stats", "--report", "r.json"]).expect_code(1);
    assert!(dir.report("r.json")["stats"].is_null());
}
