//! The directml backend against the real DirectML (Windows; in CI under Wine, on vkd3d and
//! lavapipe, `docs/windows.md`): every data type DirectML runs, both operators, ranks 1 to 8,
//! broadcasts, edge values, many chunks, old levels, in place, containers and `tensorop run`,
//! each with `--verify` and compared byte for byte with the CPU backend's file; an injected
//! mismatch; `tensorop devices`; and the support checks against what DirectML creates. Where
//! DirectML cannot start these tests skip, saying why, unless `TENSOROP_REQUIRE_DIRECTML=1`.

#![cfg_attr(not(windows), allow(dead_code, unused_imports))]

use crate::common::*;
use serde_json::Value;
use std::fs;

#[cfg(not(windows))]
#[test]
fn elsewhere_the_backend_is_a_usage_error_that_names_windows() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2], &[1.0f32, 2.0]));
    for args in [
        &["sub", "a.npy", "a.npy", "-o", "o.npy", "--backend", "directml"][..],
        &["run", "m.json", "--backend", "directml"],
    ] {
        dir.run(args).expect_code(2).stderr_mentions("Windows");
    }
    dir.run(&["sub", "a.npy", "a.npy", "-o", "o.npy", "--verify"]).expect_code(2).stderr_mentions("--backend directml");
    assert!(!dir.path("o.npy").exists());
    // The other backends are as before.
    dir.run(&["sub", "a.npy", "a.npy", "-o", "o.npy"]).ok();
}

/// Whether DirectML runs here: `tensorop devices` lists a DirectML adapter with a level.
fn directml() -> Option<Value> {
    let out = Dir::new().run(&["devices", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let found =
        list.as_array().into_iter().flatten().find(|d| d["api"] == "DirectML" && d["max_feature_level"].is_string());
    if found.is_none() {
        let why = format!("no DirectML adapter here (tensorop devices: {}{})", out.stdout_str(), out.stderr);
        assert!(std::env::var("TENSOROP_REQUIRE_DIRECTML").as_deref() != Ok("1"), "{why}");
        eprintln!("skipped: {why}");
    }
    found.cloned()
}

/// A `.npy` of `descr` elements given as little-endian bytes.
fn raw(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    npy_raw((1, 0), &header_dict(descr, false, &py_shape(shape)), data)
}

/// An element type: its `.npy` descr, size, and edge values as little-endian bit patterns.
struct Ty {
    name: &'static str,
    descr: &'static str,
    size: usize,
    edges: Vec<u64>,
}

fn float_edges(bits: u32, exp: u32) -> Vec<u64> {
    let man = bits - 1 - exp;
    let sign = 1u64 << (bits - 1);
    let inf = ((1u64 << exp) - 1) << man;
    let one = ((1u64 << (exp - 1)) - 1) << man;
    let quiet = 1u64 << (man - 1);
    let mut v = vec![
        0,
        sign,                   // -0
        one,                    // 1
        one | sign,             // -1
        one + 1,                // 1 + ulp
        one - 1,                // 1 - ulp/2
        one + (1 << (man - 1)), // 1.5
        one - (1u64 << man),    // 0.5
        1,                      // smallest subnormal
        (1u64 << man) - 1,      // largest subnormal
        1u64 << man,            // smallest normal
        inf - 1,                // largest finite
        (inf - 1) | sign,
        inf,
        inf | sign,
        inf | quiet | 5,    // quiet NaN with a payload
        inf | 3,            // signalling NaN
        inf | quiet | sign, // negative NaN
    ];
    // Values one ulp either side of 2 and 3, and a spread of ordinary values.
    v.extend([one + (1u64 << man) + 1, one + (1u64 << man) - 1, one + (3u64 << (man - 1)) + 7]);
    v
}

fn int_edges(bits: u32, signed: bool) -> Vec<u64> {
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let (min, max) = if signed { (1u64 << (bits - 1), (1u64 << (bits - 1)) - 1) } else { (0, mask) };
    [0, 1, 2, 3, 100, mask, mask - 1, min, min + 1, max, max - 1, 0x5a5a_5a5a_5a5a_5a5a & mask, 77 & mask]
        .into_iter()
        .map(|x| x & mask)
        .collect()
}

fn types() -> Vec<Ty> {
    let f = |name, descr, size: usize, exp| Ty { name, descr, size, edges: float_edges(size as u32 * 8, exp) };
    let i = |name, descr, size: usize, signed| Ty { name, descr, size, edges: int_edges(size as u32 * 8, signed) };
    vec![
        f("float32", "<f4", 4, 8),
        f("float16", "<f2", 2, 5),
        i("int64", "<i8", 8, true),
        i("int32", "<i4", 4, true),
        i("int16", "<i2", 2, true),
        i("int8", "|i1", 1, true),
        i("uint64", "<u8", 8, false),
        i("uint32", "<u4", 4, false),
        i("uint16", "<u2", 2, false),
        i("uint8", "|u1", 1, false),
    ]
}

fn bytes_of(t: &Ty, v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()[..t.size].to_vec()).collect()
}

/// The float16 rule DirectML 1.15.4's kernels follow on this device (docs/backends.md).
const RULE: &str = "toward-zero-inf";

/// Runs `args` on DirectML with `--verify` and on the CPU; both must succeed, the verdict be
/// bit-identical, and the two output files equal byte for byte. Returns the DirectML report.
fn agree(dir: &Dir, args: &[&str], env: &[(&str, &str)]) -> Value {
    agree_in(dir, args, env, RULE)
}

/// [`agree`], with the CPU computing float16 under `rule`.
fn agree_in(dir: &Dir, args: &[&str], env: &[(&str, &str)], rule: &str) -> Value {
    let mut d = args.to_vec();
    d.extend(["-o", "dml.npy", "--backend", "directml", "--verify", "--report", "dml.json"]);
    dir.run_env(&d, env).ok();
    let mut c = args.to_vec();
    c.extend(["-o", "cpu.npy", "--float16", rule]);
    dir.run(&c).ok();
    let report: Value = serde_json::from_slice(&fs::read(dir.path("dml.json")).expect("report")).expect("json");
    assert_eq!(report["verify"]["identical"], true, "{args:?}: {}", report["verify"]);
    assert_eq!(report["verify"]["differing"], 0);
    let (dml, cpu) = (fs::read(dir.path("dml.npy")).expect("dml"), fs::read(dir.path("cpu.npy")).expect("cpu"));
    assert!(dml == cpu, "{args:?}: DirectML's file differs from the CPU's");
    report
}

#[cfg(windows)]
#[test]
fn every_type_and_both_operators_agree_bit_for_bit_on_edge_values() {
    let Some(dev) = directml() else { return };
    let names = |k: &str| -> Vec<String> {
        dev[k].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(String::from)).collect()
    };
    let (subs, sqs) = (names("sub"), names("sqdiff"));
    for t in types() {
        let n = t.edges.len();
        let dir = Dir::new();
        // Every pair of edge values: A as a column, B as a row.
        dir.write("a.npy", &raw(t.descr, &[n, 1], &bytes_of(&t, &t.edges)));
        dir.write("b.npy", &raw(t.descr, &[1, n], &bytes_of(&t, &t.edges)));
        for (op, runs) in [("sub", &subs), ("sqdiff", &sqs)] {
            if !runs.iter().any(|x| x == t.name) {
                continue;
            }
            let r = agree(&dir, &[op, "a.npy", "b.npy"], &[]);
            assert_eq!(r["verify"]["elements"], (n * n) as u64, "{op} {}", t.name);
            if t.name == "float16" {
                let rules = r["verify"]["float16_rules"].as_array().expect("rules").clone();
                let own = rules.iter().find(|x| x["rule"] == RULE).expect("the release's rule");
                assert_eq!(own["matching"], (n * n) as u64);
            }
        }
    }
}

#[cfg(windows)]
#[test]
fn ranks_one_to_eight_with_broadcasts_and_many_chunks() {
    if directml().is_none() {
        return;
    }
    for rank in 1..=8usize {
        let sa: Vec<usize> = (0..rank).map(|k| if k % 2 == 0 { 3 } else { 1 }).collect();
        let sb: Vec<usize> = (0..rank).map(|k| if k % 2 == 0 { 1 } else { 2 }).collect();
        let (na, nb) = (sa.iter().product::<usize>(), sb.iter().product::<usize>());
        let a: Vec<f32> = (0..na).map(|i| i as f32 * 0.37 - 1.1).collect();
        let b: Vec<f32> = (0..nb).map(|i| 1.0 / (i as f32 + 3.0)).collect();
        let dir = Dir::new();
        dir.write("a.npy", &npy(&sa, &a));
        dir.write("b.npy", &npy(&sb, &b));
        for op in ["sub", "sqdiff"] {
            agree(&dir, &[op, "a.npy", "b.npy"], &[]);
            // 16-byte chunks: a dispatch per few elements, cut along every dimension.
            agree(&dir, &[op, "a.npy", "b.npy"], &[("TENSOROP_DIRECTML_CHUNK_BYTES", "16")]);
        }
    }
}

#[cfg(windows)]
#[test]
fn old_levels_pad_ranks_to_four_and_fortran_and_big_endian_inputs_run_as_stored() {
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    let a: Vec<f32> = (0..12).map(|i| i as f32 * 1.5).collect();
    dir.write("a.npy", &npy_with(&[3, 4], &a, Layout::fortran()));
    dir.write("b.npy", &npy_with(&[4], &[0.5f32, -2.0, 1e-40, f32::INFINITY], Layout::big()));
    for level in ["1_0", "3_1", "6_4"] {
        let r = agree(&dir, &["sub", "a.npy", "b.npy", "-f", level], &[]);
        assert_eq!(r["backend"]["feature_level"], level);
        let want = if level == "1_0" { 4 } else { 2 };
        assert_eq!(r["dml"]["tensors"]["ATensor"]["DimensionCount"], want);
    }
    agree(&dir, &["sqdiff", "a.npy", "b.npy", "-f", "3_1"], &[]);
}

#[cfg(windows)]
#[test]
fn in_place_containers_and_models_with_several_dispatches() {
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    let a: Vec<f32> = (0..6).map(|i| i as f32 - 2.5).collect();
    dir.write("a.npy", &npy(&[2, 3], &a));
    dir.write("b.npy", &npy(&[3], &[1.0f32, -1.0, 0.25]));
    let cpu = {
        dir.run(&["sub", "a.npy", "b.npy", "-o", "want.npy"]).ok();
        fs::read(dir.path("want.npy")).expect("want")
    };
    dir.run(&["sub", "a.npy", "b.npy", "-o", "a.npy", "--backend", "directml", "--verify"]).ok();
    assert_eq!(fs::read(dir.path("a.npy")).expect("a"), cpu, "the result replaced its input");

    let le = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let refs: Vec<(&str, &str, &[usize], Vec<u8>)> =
        vec![("w", "F32", &[3], le(&[1.0, 2.0, 3.0])), ("x", "F32", &[2], le(&[0.5, f32::NAN]))];
    dir.write("m.safetensors", &containers::safetensors(&refs));
    dir.write("z.safetensors", &containers::safetensors(&refs));
    let r = dir.run(&[
        "sqdiff",
        "m.safetensors",
        "z.safetensors",
        "-o",
        "d.safetensors",
        "--backend",
        "directml",
        "--verify",
        "--report",
        "-",
    ]);
    r.ok();
    let report = r.stdout_json();
    assert_eq!(report["verify"]["identical"], true);
    assert_eq!(report["verify"]["elements"], 5);
    assert_eq!(report["verify"]["covered"], serde_json::json!(["w", "x"]));

    dir.write("ma.npy", &npy(&[4], &[3.0f32, 2.0, 1.0, 0.0]));
    let model = r#"{
      "resources": {
        "A": { "initialValuesDataType": "FLOAT32", "initialValues": [1.5, -2, 3, 1e-40] },
        "B": { "initialValuesDataType": "FLOAT32", "initialValues": [0.25, 2, -3, 1e-40] },
        "T": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 4, "value": 0 } },
        "Out": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 4, "value": 0 } }
      },
      "dispatchables": {
        "minus": { "type": "DML_OPERATOR_ELEMENT_WISE_SUBTRACT", "desc": {
          "ATensor": { "DataType": "FLOAT32", "Sizes": [4] }, "BTensor": { "DataType": "FLOAT32", "Sizes": [4] },
          "OutputTensor": { "DataType": "FLOAT32", "Sizes": [4] } } },
        "square": { "type": "DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE", "desc": {
          "ATensor": { "DataType": "FLOAT32", "Sizes": [4] }, "BTensor": { "DataType": "FLOAT32", "Sizes": [4], "Strides": [0] },
          "OutputTensor": { "DataType": "FLOAT32", "Sizes": [4] } } }
      },
      "commands": [
        { "type": "dispatch", "dispatchable": "minus", "bindings": { "ATensor": "A", "BTensor": "B", "OutputTensor": "T" } },
        { "type": "dispatch", "dispatchable": "square", "bindings": { "ATensor": "T", "BTensor": "B", "OutputTensor": "Out" } },
        { "type": "writeFile", "targetPath": "out.npy", "resource": "Out", "dimensions": [4] }
      ]
    }"#;
    dir.write("model.json", model.as_bytes());
    dir.run(&["run", "model.json", "--backend", "directml", "--verify", "--report", "run.json"]).ok();
    let run: Value = serde_json::from_slice(&fs::read(dir.path("run.json")).expect("run report")).expect("json");
    assert_eq!(run["verify"]["identical"], true, "{}", run["verify"]);
    assert_eq!(run["verify"]["elements"], 8);
    assert_eq!(run["verify"]["covered"], serde_json::json!(["commands[0] minus", "commands[1] square"]));
    let dml = fs::read(dir.path("out.npy")).expect("out");
    dir.run(&["run", "model.json"]).ok();
    assert_eq!(fs::read(dir.path("out.npy")).expect("out"), dml);
}

#[cfg(windows)]
#[test]
fn an_injected_mismatch_is_exit_4_with_count_ulps_and_the_rule_followed() {
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    // 1 - 2^-24, (1 + 2^-9) - 2^-11, 65504 - (-1): DirectML's rule and round-to-nearest differ.
    let a = [0x3c00u64, 0x3c02, 0x7bff, 0x4000];
    let b = [0x0001u64, 0x1000, 0xbc00, 0x3c00];
    let t = &types()[1];
    dir.write("a.npy", &raw("<f2", &[4], &bytes_of(t, &a)));
    dir.write("b.npy", &raw("<f2", &[4], &bytes_of(t, &b)));
    let out = dir.run(&[
        "sub",
        "a.npy",
        "b.npy",
        "-o",
        "o.npy",
        "--backend",
        "directml",
        "--verify",
        "--float16",
        "nearest",
        "--report",
        "r.json",
    ]);
    out.expect_code(4).stderr_mentions("differs").stderr_mentions("toward-zero-inf");
    let r: Value = serde_json::from_slice(&fs::read(dir.path("r.json")).expect("report")).expect("json");
    let v = &r["verify"];
    assert_eq!(
        (v["identical"].clone(), v["differing"].clone(), v["max_ulps"].clone()),
        (false.into(), 3.into(), 1.into()),
        "{v}"
    );
    // The first difference, located: its index, both values and both bit patterns.
    let first = &v["first_difference"];
    assert_eq!((first["element"].clone(), first["index"].clone()), (0.into(), serde_json::json!([0])), "{v}");
    assert_eq!((first["a_bits"].clone(), first["b_bits"].clone()), ("0x3BFF".into(), "0x3C00".into()), "{v}");
    assert_eq!((v["complete"].clone(), v["compared"].clone()), (true.into(), 4.into()), "{v}");
    let rules = v["float16_rules"].as_array().expect("rules");
    let own = rules.iter().find(|x| x["rule"] == "toward-zero-inf").cloned().expect("toward-zero-inf");
    assert_eq!(own["matching"], 4);
    let got = parse_npy(&fs::read(dir.path("o.npy")).expect("o")).data;
    assert_eq!(got, [0xff, 0x3b, 0x01, 0x3c, 0x00, 0x7c, 0x00, 0x3c], "DirectML's own bits were written");
}

#[cfg(windows)]
#[test]
fn devices_lists_the_directml_adapter_and_the_support_checks_agree_with_directml() {
    let Some(dev) = directml() else { return };
    assert!(dev["dll_version"].as_str().is_some_and(|v| v.starts_with("1.")), "{dev}");
    let top = dev["max_feature_level"].as_str().expect("level").to_string();
    let text = Dir::new().run(&["devices"]).ok().stdout_str();
    assert!(text.contains("DirectML") && text.contains(&format!("feature levels up to {top}")), "{text}");
    // What tensorop accepts at DirectML's highest level is what DirectML creates.
    for op in ["sub", "sqdiff"] {
        let created: Vec<&str> = dev[op].as_array().expect("types").iter().filter_map(|v| v.as_str()).collect();
        for t in types().iter().chain(&[Ty { name: "float64", descr: "<f8", size: 8, edges: vec![0] }]) {
            let dir = Dir::new();
            dir.write("a.npy", &raw(t.descr, &[1], &vec![0; t.size]));
            let out = dir.run(&[op, "a.npy", "a.npy", "--dry-run", "-f", &top]);
            let accepted = out.code == Some(0);
            assert_eq!(
                accepted,
                created.contains(&t.name),
                "{op} {} at {top}: tensorop {:?}, DirectML creates {created:?}",
                t.name,
                out.code
            );
            if accepted {
                agree(&dir, &[op, "a.npy", "a.npy", "-f", &top], &[]);
            }
        }
    }
}

#[cfg(windows)]
#[test]
fn usage_errors_come_before_any_work() {
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2], &[1.0f32, 2.0]));
    dir.run(&["sub", "a.npy", "a.npy", "-o", "o.npy", "--backend", "directml", "-f", "none"])
        .expect_code(2)
        .stderr_mentions("none");
    dir.run_env(
        &["sub", "a.npy", "a.npy", "-o", "o.npy", "--backend", "directml"],
        &[("TENSOROP_DIRECTML_ADAPTER", "x")],
    )
    .expect_code(2)
    .stderr_mentions("TENSOROP_DIRECTML_ADAPTER");
    dir.run_env(
        &["sub", "a.npy", "a.npy", "-o", "o.npy", "--backend", "directml"],
        &[("TENSOROP_DIRECTML_DLL", "C:\\nowhere\\DirectML.dll")],
    )
    .expect_code(2)
    .stderr_mentions("TENSOROP_DIRECTML_DLL=C:\\nowhere\\DirectML.dll: there is no such file");
    assert!(!dir.path("o.npy").exists());
}

#[cfg(windows)]
#[test]
fn parts_and_stats_run_on_directml_as_on_the_cpu() {
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    let a: Vec<f32> = (0..60).map(|i| (i as f32 * 0.71).sin()).collect();
    dir.write("a.npy", &npy(&[3, 4, 5], &a));
    dir.write("b.npy", &npy(&[4, 1], &[0.5f32, -1.5, 2.25, 1e-39]));
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "want.npy", "--stats", "--report", "cpu.json"]).ok();
    let chunks = [("TENSOROP_DIRECTML_CHUNK_BYTES", "24")];
    for k in ["2/3", "1/3", "3/3"] {
        dir.run_env(
            &["sqdiff", "a.npy", "b.npy", "-o", "p.npy", "--part", k, "--backend", "directml", "--verify"],
            &chunks,
        )
        .ok();
    }
    assert_eq!(fs::read(dir.path("p.npy")).expect("parts"), fs::read(dir.path("want.npy")).expect("want"));
    let out =
        dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "s.npy", "--stats", "--backend", "directml", "--report", "-"]);
    let cpu: Value = serde_json::from_slice(&fs::read(dir.path("cpu.json")).expect("cpu report")).expect("json");
    assert_eq!(out.ok().stdout_json()["stats"], cpu["stats"], "--stats of DirectML's bytes equal the CPU's");
}

/// A float16 job of many chunks, more than are ever in flight, with `--stats` and `--verify`:
/// the output and the summary are the CPU's, every rule's count is over the whole output, and
/// the report gives the device's own time beside the wall time.
#[cfg(windows)]
#[test]
fn many_chunks_in_flight_stream_in_order_with_the_devices_time() {
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    let n = 1 << 14;
    // Every bit pattern's neighbourhood: finite values of every binade, infinities and NaNs.
    let a: Vec<u8> = (0..n).flat_map(|i: u32| ((i.wrapping_mul(2_654_435_761) >> 16) as u16).to_le_bytes()).collect();
    let b: Vec<u8> = (0..n).flat_map(|i: u32| ((i.wrapping_mul(40_503) as u16) ^ 0x1234).to_le_bytes()).collect();
    dir.write("a.npy", &raw("<f2", &[n as usize], &a));
    dir.write("b.npy", &raw("<f2", &[n as usize], &b));
    let env = [("TENSOROP_DIRECTML_CHUNK_BYTES", "2048")];
    let report = agree(&dir, &["sqdiff", "a.npy", "b.npy", "--stats"], &env);
    let cpu = dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "c.npy", "--stats", "--float16", RULE, "--report", "-"]);
    assert_eq!(report["stats"], cpu.ok().stdout_json()["stats"], "--stats of DirectML's bytes equal the CPU's");
    let rules = report["verify"]["float16_rules"].as_array().expect("rule counts").clone();
    assert!(rules.iter().any(|r| r["matching"] == n), "{rules:?}");
    assert!(rules.iter().all(|r| r["matching"].as_u64().is_some_and(|m| m <= u64::from(n))), "{rules:?}");
    let t = &report["timings_ms"];
    let (device, dispatch) = (t["device"].as_f64().expect("device"), t["dispatch"].as_f64().expect("dispatch"));
    assert!(device > 0.0 && dispatch > 0.0 && dispatch <= device, "{t}");
    assert!(device <= t["execute"].as_f64().expect("execute") * 1.5, "{t}");
}

/// A run whose standard output closes before DirectML's result is all written: its verdict
/// covers what was compared, is never "identical", and the run exits 4 (not verified).
#[cfg(windows)]
#[test]
fn a_verdict_over_part_of_the_output_is_never_identical() {
    use std::process::{Command, Stdio};
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    let a: Vec<f32> = (0..1 << 16).map(|i| i as f32).collect();
    dir.write("a.npy", &npy(&[1 << 8, 1 << 8], &a));
    dir.write("b.npy", &npy(&[1 << 8], &[0.5f32; 1 << 8]));
    let mut child = Command::new(bin())
        .args(["sub", "a.npy", "b.npy", "-o", "-", "--backend", "directml", "--verify", "--report", "r.json"])
        .current_dir(dir.root())
        .env("TENSOROP_DIRECTML_CHUNK_BYTES", "1024")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tensorop");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("not verified"), "{stderr}");
    let v = dir.report("r.json")["verify"].clone();
    assert_eq!((v["identical"].clone(), v["complete"].clone()), (false.into(), false.into()), "{v}");
    assert_eq!(v["elements"], 1 << 16, "{v}");
    assert!(v["compared"].as_u64().is_some_and(|n| n < 1 << 16), "{v}");
}

/// `--part`: each part's verdict travels in its marker; the part that commits the job says
/// whether every part verified, and exits 4 when one did not.
#[cfg(windows)]
#[test]
fn the_committing_part_says_whether_every_part_verified() {
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    let a: Vec<f32> = (0..64).map(|i| i as f32 * 0.75).collect();
    dir.write("a.npy", &npy(&[8, 8], &a));
    dir.write("b.npy", &npy(&[8], &[0.25f32; 8]));
    let part = |k: &str, verify: bool, report: &str| {
        let mut args = vec!["sqdiff", "a.npy", "b.npy", "-o", "o.npy", "--part", k, "--backend", "directml"];
        if verify {
            args.push("--verify");
        }
        args.extend(["--report", report]);
        dir.run(&args)
    };
    part("1/2", true, "p1.json").ok();
    part("2/2", true, "p2.json").ok();
    let v = dir.report("p2.json")["verify"].clone();
    assert_eq!(v["identical"], true, "{v}");
    assert_eq!(v["parts"]["identical"], serde_json::json!([1, 2]), "{v}");
    // Part 2 without --verify: the committing part 1 cannot say the result verified.
    part("2/2", false, "q2.json").ok();
    part("1/2", true, "q1.json").expect_code(4).stderr_mentions("parts [2] of 2");
    let v = dir.report("q1.json")["verify"].clone();
    assert_eq!((v["identical"].clone(), v["parts"]["verified"].clone()), (false.into(), serde_json::json!([1])), "{v}");
    assert!(dir.exists("o.npy"), "the result is committed all the same");
}

/// The `DirectML.dll` of DirectML 1.8.0 (`.ci/directml-stack` downloads it beside 1.15.4), or
/// `None`, saying why, where it is not given (a failure under `TENSOROP_REQUIRE_DIRECTML=1`).
fn directml_1_8() -> Option<String> {
    let path = std::env::var("TENSOROP_TEST_DIRECTML_1_8").ok().filter(|p| !p.is_empty());
    if path.is_none() {
        let why = "TENSOROP_TEST_DIRECTML_1_8 names no DirectML 1.8.0 DLL";
        assert!(std::env::var("TENSOROP_REQUIRE_DIRECTML").as_deref() != Ok("1"), "{why}");
        eprintln!("skipped: {why}");
    }
    path
}

/// DirectML 1.8.0 stores float16 toward zero, saturating at 65504: the backend picks that rule
/// from the DLL's version, `--verify` finds every element identical under it, and what tensorop
/// accepts at the release's highest level (5_0) is what it creates.
#[cfg(windows)]
#[test]
fn directml_1_8_gets_its_own_float16_rule_and_support_rows() {
    if directml().is_none() {
        return;
    }
    let Some(dll) = directml_1_8() else { return };
    let env = [("TENSOROP_DIRECTML_DLL", dll.as_str())];
    let list = Dir::new().run_env(&["devices", "--json"], &env).ok().stdout_json();
    let dev = list.as_array().into_iter().flatten().find(|d| d["api"] == "DirectML").cloned().expect("DirectML 1.8");
    assert!(dev["dll_version"].as_str().is_some_and(|v| v.starts_with("1.8.")), "{dev}");
    assert_eq!(dev["max_feature_level"], "5_0", "{dev}");
    let t = &types()[1];
    let n = t.edges.len();
    let dir = Dir::new();
    dir.write("a.npy", &raw(t.descr, &[n, 1], &bytes_of(t, &t.edges)));
    dir.write("b.npy", &raw(t.descr, &[1, n], &bytes_of(t, &t.edges)));
    for op in ["sub", "sqdiff"] {
        let r = agree_in(&dir, &[op, "a.npy", "b.npy", "-f", "5_0"], &env, "toward-zero-saturate");
        assert_eq!(r["verify"]["float16_rule"], "toward-zero-saturate", "{op}: {}", r["verify"]);
        assert_eq!(r["backend"]["float16_rule"], "toward-zero-saturate");
        assert!(r["backend"]["dll_version"].as_str().is_some_and(|v| v.starts_with("1.8.")));
        let rules = r["verify"]["float16_rules"].as_array().expect("rules").clone();
        let own = rules.iter().find(|x| x["rule"] == "toward-zero-saturate").expect("rule");
        assert_eq!(own["matching"], (n * n) as u64, "{op}");
        // 1.15.4's rule does not explain 1.8.0's bits: 65504 - (-1) and the like.
        let newer = rules.iter().find(|x| x["rule"] == "toward-zero-inf").expect("rule");
        assert!(newer["matching"].as_u64().is_some_and(|m| m < (n * n) as u64), "{op}: {newer}");
    }
    // The support rows at 5_0 against what DirectML 1.8.0 creates.
    for op in ["sub", "sqdiff"] {
        let created: Vec<&str> = dev[op].as_array().expect("types").iter().filter_map(|v| v.as_str()).collect();
        for t in types() {
            let dir = Dir::new();
            dir.write("a.npy", &raw(t.descr, &[1], &vec![0; t.size]));
            let accepted = dir.run(&[op, "a.npy", "a.npy", "--dry-run", "-f", "5_0"]).code == Some(0);
            assert_eq!(
                accepted,
                created.contains(&t.name),
                "{op} {} at 5_0: DirectML 1.8.0 creates {created:?}",
                t.name
            );
        }
    }
}

/// A `d3d12.dll` planted beside `tensorop.exe` is never loaded: without
/// `TENSOROP_D3D12_DLL`, Direct3D 12 comes from the system directory only, and the listing
/// says which file it loaded. The planted file is not even a DLL, so loading it would fail
/// with its path in the message.
#[cfg(windows)]
#[test]
fn a_d3d12_dll_planted_beside_the_executable_is_not_loaded() {
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    let exe = dir.path("tensorop.exe");
    fs::copy(bin(), &exe).expect("copy tensorop.exe");
    dir.write("d3d12.dll", b"planted: not a DLL");
    // DirectML by its absolute path (the one the other tests use, beside the test binary).
    let dml = bin().with_file_name("DirectML.dll");
    let dml = if dml.is_file() {
        dml
    } else {
        std::path::PathBuf::from(std::env::var("TENSOROP_DIRECTML_DLL").expect("a DirectML.dll"))
    };
    let out = std::process::Command::new(&exe)
        .args(["devices", "--json"])
        .current_dir(dir.root())
        .env_remove("TENSOROP_D3D12_DLL")
        .env("TENSOROP_DIRECTML_DLL", &dml)
        .output()
        .expect("run the copy");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let planted = dir.path("d3d12.dll").display().to_string().to_lowercase();
    assert!(!text.to_lowercase().contains(&planted), "the planted d3d12.dll was loaded: {text}");
    let list: Value = serde_json::from_slice(&out.stdout).expect("devices --json prints JSON");
    for d in list.as_array().into_iter().flatten().filter(|d| d["api"] == "DirectML" && d["d3d12"].is_string()) {
        let loaded = d["d3d12"].as_str().unwrap_or_default().to_lowercase();
        assert!(loaded.ends_with("system32\\d3d12.dll"), "d3d12.dll came from {loaded}, not the system directory");
    }
}

/// The report names the `d3d12.dll` loaded: the one `TENSOROP_D3D12_DLL` names where it is
/// set (CI's stack), and the DLL variables are refused when they name no file.
#[cfg(windows)]
#[test]
fn the_report_names_the_d3d12_dll_and_missing_dlls_are_refused() {
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[3], &[1.0f32, 2.0, 3.0]));
    let args = ["sub", "a.npy", "a.npy", "-o", "o.npy", "--backend", "directml", "--report", "r.json"];
    dir.run(&args).ok();
    let loaded = dir.report("r.json")["backend"]["d3d12"].as_str().expect("backend.d3d12").to_lowercase();
    match std::env::var("TENSOROP_D3D12_DLL") {
        Ok(p) if !p.is_empty() => assert!(loaded.ends_with("d3d12.dll") && !loaded.contains("system32"), "{loaded}"),
        _ => assert!(loaded.ends_with("system32\\d3d12.dll"), "{loaded}"),
    }
    for var in ["TENSOROP_D3D12_DLL", "TENSOROP_DIRECTML_DLL"] {
        dir.run_env(&args, &[(var, "missing.dll")]).expect_code(2).stderr_mentions("there is no such file");
    }
}

/// A Fortran-order input above the 32 MiB copy threshold: DirectML reads the C-order copy,
/// and the report says which descriptors ran (`dml_executed`) beside the ones a caller passes
/// for the file as stored (`dml`); the result is the CPU's, bit for bit.
#[cfg(windows)]
#[test]
fn a_large_fortran_input_reports_the_descriptors_directml_ran() {
    if directml().is_none() {
        return;
    }
    let (rows, cols) = (2048usize, 4200usize); // 8.6 M float32 elements: 34 MB
    let a: Vec<f32> = (0..rows * cols).map(|i| (i % 1013) as f32 * 0.25).collect();
    let dir = Dir::new();
    dir.write("a.npy", &npy_with(&[rows, cols], &a, Layout::fortran()));
    dir.write("b.npy", &npy(&[cols], &(0..cols).map(|i| i as f32).collect::<Vec<_>>()));
    let r = agree(&dir, &["sub", "a.npy", "b.npy"], &[]);
    let strides = |d: &Value| d["tensors"]["ATensor"]["Strides"].clone();
    assert_eq!(strides(&r["dml"]), serde_json::json!([1, rows]), "dml: the file as stored (Fortran)");
    assert_eq!(strides(&r["dml_executed"]), serde_json::json!([cols, 1]), "what DirectML ran: the C-order copy");
    assert_eq!(r["dml_executed"]["tensors"]["BTensor"], r["dml"]["tensors"]["BTensor"]);
}

/// `TENSOROP_DIRECTML_DEBUG=1` where the debug layer is not installed (the CI harness answers
/// as Windows without Graphics Tools does) fails the run, saying so, instead of running
/// unchecked; elsewhere the run reports the layer on.
#[cfg(windows)]
#[test]
fn the_debug_switch_runs_under_the_debug_layer_or_says_why_it_cannot() {
    if directml().is_none() {
        return;
    }
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[3], &[1.0f32, 2.0, 3.0]));
    let args = ["sub", "a.npy", "a.npy", "-o", "o.npy", "--backend", "directml", "--report", "r.json"];
    let out = dir.run_env(&args, &[("TENSOROP_DIRECTML_DEBUG", "1")]);
    if out.code == Some(0) {
        assert_eq!(dir.report("r.json")["backend"]["debug"]["d3d12_debug_layer"], true);
    } else {
        out.expect_code(1)
            .stderr_mentions("TENSOROP_DIRECTML_DEBUG=1: the Direct3D 12 debug layer is not available here");
        assert!(!dir.path("o.npy").exists());
    }
    dir.run_env(&args, &[("TENSOROP_DIRECTML_DEBUG", "yes")])
        .expect_code(2)
        .stderr_mentions("TENSOROP_DIRECTML_DEBUG=yes");
}
