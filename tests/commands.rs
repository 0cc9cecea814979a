//! End-to-end tests against the real binary in temporary directories. `info`, `support`, `devices`,
//! the wgpu backend's presence, usage errors, help and version.

use crate::common::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// info, support, devices, backends
// ---------------------------------------------------------------------------------------------

/// The per-file objects of `info --json`: accepts a list, a single object, an object with a
/// "files" list, or one JSON object per line.
fn info_entries(out: &Out) -> Vec<Value> {
    let text = out.stdout_str();
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        return match v {
            Value::Array(items) => items,
            Value::Object(ref o) if o.get("files").is_some_and(Value::is_array) => {
                o["files"].as_array().unwrap().clone()
            }
            other => vec![other],
        };
    }
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("info --json prints JSON"))
        .collect()
}

#[test]
fn info_prints_the_header_fields() {
    let dir = Dir::new();
    write_ab(&dir);
    let out = dir.run(&["info", "a.npy"]);
    out.ok();
    let text = out.stdout_str();
    assert!(text.contains("float32"), "{text}");
    assert!(
        ["(2, 3, 4)", "[2, 3, 4]", "2x3x4", "2×3×4", "[2,3,4]"].iter().any(|s| text.contains(s)),
        "shape should be shown: {text}"
    );
    // Several files: each is named.
    let out = dir.run(&["info", "a.npy", "b.npy"]);
    out.ok();
    let text = out.stdout_str();
    assert!(text.contains("a.npy") && text.contains("b.npy"), "{text}");
}

#[test]
fn info_json_describes_each_file() {
    let dir = Dir::new();
    write_ab(&dir);
    let layout = Layout { order: Order::Big, fortran: true, version: (2, 0) };
    dir.write("h.npy", &npy_with(&[2, 3], &[H(0); 6], layout));
    dir.write("u.npy", &npy_with(&[5], &[1u8; 5], Layout::version(3)));
    let out = dir.run(&["info", "a.npy", "h.npy", "u.npy", "--json"]);
    out.ok();
    let items = info_entries(&out);
    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(items[0]["dtype"], "float32");
    assert_eq!(u64s(&items[0]["shape"]), vec![2, 3, 4]);
    assert_eq!(items[0]["fortran_order"], false);
    assert_eq!(items[0]["byte_order"], "little");
    assert_eq!(items[0]["npy_version"], "1.0");
    assert_eq!(items[1]["dtype"], "float16");
    assert_eq!(u64s(&items[1]["shape"]), vec![2, 3]);
    assert_eq!(items[1]["fortran_order"], true);
    assert_eq!(items[1]["byte_order"], "big");
    assert_eq!(items[1]["npy_version"], "2.0");
    assert_eq!(items[2]["dtype"], "uint8");
    assert_eq!(items[2]["byte_order"], "not_applicable");
    assert_eq!(items[2]["npy_version"], "3.0");
}

#[test]
fn info_on_a_malformed_file_is_a_runtime_error_naming_it() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.write("broken.npy", &npy_raw((1, 0), &f32_header("(2, 3)"), &[0; 5]));
    dir.run(&["info", "a.npy", "broken.npy"]).expect_code(1).stderr_mentions("broken.npy");
    dir.write("magic.npy", b"PK\x03\x04 not npy at all");
    dir.run(&["info", "magic.npy", "--json"]).expect_code(1).stderr_mentions("magic.npy");
}

#[test]
fn support_table_lists_both_operators() {
    let dir = Dir::new();
    let out = dir.run(&["support"]);
    out.ok();
    let text = out.stdout_str();
    for needle in ["sub", "sqdiff", "float32", "uint64", "1_0", "6_4"] {
        assert!(text.contains(needle), "support table lacks {needle}:\n{text}");
    }
    let out = dir.run(&["support", "--op", "sqdiff", "--feature-level", "3_1"]);
    out.ok();
    assert!(out.stdout_str().contains("int32"));
}

fn support_json(dir: &Dir, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["support", "--json"];
    args.extend_from_slice(extra);
    let out = dir.run(&args);
    out.ok();
    out.stdout_json()["levels"].as_array().expect("levels list").clone()
}

fn find_op<'a>(level: &'a Value, op: &str) -> &'a Value {
    level["ops"]
        .as_array()
        .expect("ops list")
        .iter()
        .find(|o| o["op"] == op)
        .unwrap_or_else(|| panic!("level {} has no op {op}", level["level"]))
}

fn dtype_set(v: &Value) -> std::collections::BTreeSet<String> {
    v.as_array().expect("dtypes list").iter().map(|d| d.as_str().unwrap().to_string()).collect()
}

fn set(items: &[&str]) -> std::collections::BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn support_json_has_the_contract_matrix() {
    let dir = Dir::new();
    let levels = support_json(&dir, &[]);
    let names: Vec<&str> = levels.iter().map(|l| l["level"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["1_0", "2_0", "2_1", "3_0", "3_1", "4_0", "4_1", "5_0", "5_1", "5_2", "6_0", "6_1", "6_2", "6_3", "6_4"]
    );
    let all10 = set(&["float32", "float16", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8"]);
    // (level, sub row, sub ranks, sub dtypes)
    let sub_rows: [(&str, &str, [u64; 2], std::collections::BTreeSet<String>); 6] = [
        ("1_0", "1_0", [4, 4], set(&["float32", "float16"])),
        ("2_0", "1_0", [4, 4], set(&["float32", "float16"])),
        ("2_1", "2_1", [4, 4], set(&["float32", "float16", "int32", "uint32"])),
        ("3_0", "3_0", [1, 8], set(&["float32", "float16", "int32", "uint32"])),
        ("4_1", "4_1", [1, 8], set(&["float32", "float16", "int64", "int32", "uint64", "uint32"])),
        ("6_4", "5_1", [1, 8], all10),
    ];
    for (lv, row, ranks, dtypes) in sub_rows {
        let level = levels.iter().find(|l| l["level"] == lv).unwrap();
        let sub = find_op(level, "sub");
        assert_eq!(sub["dml_operator"], "DML_OPERATOR_ELEMENT_WISE_SUBTRACT");
        assert_eq!(sub["available"], true, "sub at {lv}");
        assert_eq!(sub["support_row"], row, "sub at {lv}");
        assert_eq!(u64s(&sub["ranks"]), ranks.to_vec(), "sub at {lv}");
        assert_eq!(dtype_set(&sub["dtypes"]), dtypes, "sub at {lv}");
    }
    for lv in ["1_0", "2_1", "3_0"] {
        let level = levels.iter().find(|l| l["level"] == lv).unwrap();
        let sq = find_op(level, "sqdiff");
        assert_eq!(sq["dml_operator"], "DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE");
        assert_eq!(sq["available"], false, "sqdiff at {lv}");
        assert!(sq["support_row"].is_null());
        assert!(sq["ranks"].is_null());
    }
    for lv in ["3_1", "5_1", "6_4"] {
        let level = levels.iter().find(|l| l["level"] == lv).unwrap();
        let sq = find_op(level, "sqdiff");
        assert_eq!(sq["available"], true, "sqdiff at {lv}");
        assert_eq!(sq["support_row"], "3_1");
        assert_eq!(u64s(&sq["ranks"]), vec![1, 8]);
        assert_eq!(dtype_set(&sq["dtypes"]), set(&["float32", "float16", "int32", "uint32"]));
    }
}

#[test]
fn support_json_filters_by_op_and_level() {
    let dir = Dir::new();
    let levels = support_json(&dir, &["--op", "sqdiff"]);
    assert_eq!(levels.len(), 15);
    for l in &levels {
        let ops = l["ops"].as_array().unwrap();
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0]["op"], "sqdiff");
    }
    for spelling in ["4_1", "4.1", "DML_FEATURE_LEVEL_4_1"] {
        let levels = support_json(&dir, &["--feature-level", spelling]);
        assert_eq!(levels.len(), 1, "{spelling}");
        assert_eq!(levels[0]["level"], "4_1");
        assert_eq!(levels[0]["ops"].as_array().unwrap().len(), 2);
    }
    let levels = support_json(&dir, &["--feature-level", "latest", "--op", "sub"]);
    assert_eq!(levels.len(), 1);
    assert_eq!(levels[0]["level"], "6_4");
    assert_eq!(find_op(&levels[0], "sub")["support_row"], "5_1");
}

#[test]
fn support_rejects_unknown_values() {
    let dir = Dir::new();
    dir.run(&["support", "--feature-level", "9_9"]).expect_code(2).expect_message();
    dir.run(&["support", "--op", "add"]).expect_code(2).expect_message();
}

fn mentions_missing_gpu(stderr: &str) -> bool {
    let s = stderr.to_lowercase();
    ["gpu", "adapter", "wgpu", "backend", "device"].iter().any(|w| s.contains(w))
}

#[test]
fn devices_lists_adapters_or_says_none_is_available() {
    let dir = Dir::new();
    for args in [&["devices"][..], &["devices", "--json"][..]] {
        let out = dir.run(args);
        match out.code {
            Some(0) => {
                if args.len() == 2 {
                    out.stdout_json();
                }
            }
            Some(1) => {
                out.expect_message();
                assert!(mentions_missing_gpu(&out.stderr), "{}", out.stderr);
            }
            other => panic!("devices exited {other:?}: {}", out.stderr),
        }
    }
}

#[test]
fn wgpu_backend_matches_cpu_or_says_no_gpu() {
    let dir = Dir::new();
    write_ab(&dir);
    let before = dir.listing();
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--backend", "wgpu", "--report", "report.json"]);
    let r = dir.report("report.json");
    assert_report_keys(&r);
    match out.code {
        Some(0) => {
            assert_same_bits(&dir.output::<f32>("out.npy", &A_SHAPE), &expected_sub());
            assert_eq!(r["backend"]["name"], "wgpu");
        }
        Some(1) => {
            out.expect_message();
            assert!(mentions_missing_gpu(&out.stderr), "{}", out.stderr);
            assert_eq!(r["status"], "error");
            assert_only_added(&dir, &before, &["report.json"]);
        }
        other => panic!("--backend wgpu exited {other:?}: {}", out.stderr),
    }
}

// ---------------------------------------------------------------------------------------------
// Usage errors
// ---------------------------------------------------------------------------------------------

#[test]
fn usage_errors_exit_2() {
    let dir = Dir::new();
    write_ab(&dir);
    let cases: [&[&str]; 11] = [
        &["sub", "a.npy", "b.npy", "-o", "out.npy", "--bogus"],
        &["sub", "a.npy", "b.npy", "-o", "out.npy", "--broadcast", "maybe"],
        &["sub", "a.npy", "b.npy", "-o", "out.npy", "--backend", "metal"],
        &["sub", "a.npy", "b.npy", "-o", "out.npy", "--threads", "many"],
        &["sub", "a.npy", "b.npy", "-o", "out.npy", "--progress", "sometimes"],
        &["sub", "a.npy", "b.npy", "-o", "out.npy", "--feature-level"],
        &["sub", "a.npy", "-o", "out.npy"],
        &["sub", "a.npy", "b.npy", "c.npy", "-o", "out.npy"],
        &["add", "a.npy", "b.npy", "-o", "out.npy"],
        &["sqdiff", "-o", "out.npy"],
        &[],
    ];
    for args in cases {
        let out = dir.run(args);
        assert_eq!(out.code, Some(2), "`tensorop {}` should be a usage error; stderr: {}", args.join(" "), out.stderr);
        out.expect_message();
        assert!(!dir.exists("out.npy"), "{args:?}");
    }
}

#[test]
fn help_and_version_succeed() {
    let dir = Dir::new();
    let out = dir.run(&["--help"]);
    out.ok();
    let text = out.stdout_str();
    assert!(text.contains("sub") && text.contains("sqdiff"), "{text}");
    let out = dir.run(&["--version"]);
    out.ok();
    assert!(out.stdout_str().contains(env!("CARGO_PKG_VERSION")));
}
