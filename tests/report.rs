//! End-to-end tests against the real binary in temporary directories. The JSON report: every key,
//! its formatting, counts, strides, and where it goes.

use crate::common::containers::safetensors;
use crate::common::*;

// ---------------------------------------------------------------------------------------------
// Reports
// ---------------------------------------------------------------------------------------------

#[test]
fn report_on_success_has_every_key() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]).ok();
    let r = dir.report("report.json");
    assert_report_keys(&r);
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["tool"]["name"], "tensorop");
    assert_eq!(r["tool"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(r["op"], "sub");
    assert_eq!(r["dml_operator"], "DML_OPERATOR_ELEMENT_WISE_SUBTRACT");
    assert_eq!(r["feature_level"], "6_4", "default level is latest = 6_4");
    assert_eq!(r["support_row"], "5_1");
    assert_eq!(r["status"], "ok");
    assert_eq!(r["valid"], true);
    assert!(r["error"].is_null());

    let inputs = r["inputs"].as_array().expect("inputs list");
    assert_eq!(inputs.len(), 2);
    assert!(inputs[0]["path"].as_str().unwrap().ends_with("a.npy"));
    assert!(inputs[1]["path"].as_str().unwrap().ends_with("b.npy"));
    for (inp, shape) in inputs.iter().zip([&A_SHAPE[..], &B_SHAPE[..]]) {
        assert_eq!(inp["dtype"], "float32");
        assert_eq!(u64s(&inp["shape"]), shape.iter().map(|&d| d as u64).collect::<Vec<_>>());
        assert_eq!(inp["byte_order"], "little");
        assert_eq!(inp["fortran_order"], false);
        assert_eq!(inp["npy_version"], "1.0");
    }

    assert!(r["output"]["path"].as_str().unwrap().ends_with("out.npy"));
    assert_eq!(r["output"]["dtype"], "float32");
    assert_eq!(u64s(&r["output"]["shape"]), vec![2, 3, 4]);
    assert_eq!(r["broadcast"]["mode"], "numpy");
    assert_eq!(u64s(&r["broadcast"]["shape"]), vec![2, 3, 4]);
    assert_eq!(r["broadcast"]["strides"].as_array().unwrap().len(), 2);

    assert_seven_checks(&r, &CHECKS_NUMPY);
    for id in CHECKS_NUMPY {
        assert_eq!(check_status(&r, id), "pass", "{id}");
    }
    assert_eq!(r["backend"]["name"], "cpu");
    assert!(r["backend"]["threads"].as_u64().unwrap() >= 1);
    assert_eq!(r["elements"], 24);
    for k in TIMING_KEYS {
        let t = r["timings_ms"][k].as_f64().unwrap_or_else(|| panic!("timings_ms.{k} is not a number"));
        assert!(t >= 0.0, "timings_ms.{k} = {t}");
    }
}

#[test]
fn report_names_the_float16_rule_as_the_flag_spells_it() {
    let dir = Dir::new();
    dir.write("h.npy", &npy(&[2], &[H(0x3c00), H(0x4000)]));
    let st = safetensors(&[("w", "F16", &[2], [0x00u8, 0x3c, 0x00, 0x40].to_vec())]);
    dir.write("h.safetensors", &st);
    for (flags, rule) in [
        (&[][..], "nearest"),
        (&["--float16", "nearest"], "nearest"),
        (&["--half-precision"], "per-step"),
        (&["--float16", "per-step"], "per-step"),
        (&["--float16", "d3d"], "toward-zero-inf"),
        (&["--float16", "toward-zero-saturate"], "toward-zero-saturate"),
        (&["--directml-version", "1.8"], "toward-zero-saturate"),
        (&["--directml-version", "1.15.4"], "toward-zero-inf"),
    ] {
        let single = [&["sqdiff", "h.npy", "h.npy", "-o", "o.npy", "--report", "r.json", "-q"][..], flags].concat();
        dir.run(&single).ok();
        let r = dir.report("r.json");
        assert_report_keys(&r);
        assert_eq!(r["float16_rule"], rule, "{flags:?}");
        let container = [
            &["sqdiff", "h.safetensors", "h.safetensors", "-o", "o.safetensors", "--report", "c.json", "-q"][..],
            flags,
        ]
        .concat();
        dir.run(&container).ok();
        assert_eq!(dir.report("c.json")["float16_rule"], rule, "container {flags:?}");
    }
}

#[test]
fn report_is_pretty_printed_and_ends_in_a_newline() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]).ok();
    let text = String::from_utf8(dir.read("report.json")).unwrap();
    assert!(text.ends_with('\n'), "report must end in a newline");
    assert!(text.trim_end().lines().count() > 10, "report should be pretty-printed, one key per line");
}

#[test]
fn report_counts_elements_and_bytes() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]).ok();
    let r = dir.report("report.json");
    assert_eq!(r["elements"], 24);
    let file_bytes = (dir.read("a.npy").len() + dir.read("b.npy").len()) as u64;
    let data_bytes = (24 + 3) * 4;
    let read = r["bytes_read"].as_u64().expect("bytes_read");
    assert!(
        (data_bytes..=file_bytes).contains(&read),
        "bytes_read {read} should lie between the data ({data_bytes}) and the files ({file_bytes})"
    );
    let out_file = dir.read("out.npy").len() as u64;
    assert_eq!(r["bytes_written"], out_file, "bytes_written is the whole output file, header included");
}

#[test]
fn bytes_written_is_the_output_file_whichever_way_it_was_written() {
    // 2^20 float32 elements: 16 chunks, written in place by the workers (one or several) into a
    // file, or in order to standard output.
    let dir = Dir::new();
    let a: Vec<f32> = (0..1 << 20).map(|i| i as f32).collect();
    dir.write("a.npy", &npy(&[1 << 20], &a));
    dir.write("b.npy", &npy(&[1], &[1.0f32]));
    let file_bytes = (1u64 << 22) + 128;
    for threads in ["1", "2", "5"] {
        let report = format!("report{threads}.json");
        let args = ["sub", "a.npy", "b.npy", "-o", "out.npy", "--threads", threads, "--report", &report];
        dir.run(&args).ok();
        assert_eq!(dir.read("out.npy").len() as u64, file_bytes);
        assert_eq!(dir.report(&report)["bytes_written"], file_bytes, "--threads {threads}, file output");
    }
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "-", "--threads", "2", "--report", "stdout.json"]);
    out.ok();
    assert_eq!(out.stdout.len() as u64, file_bytes);
    assert_eq!(dir.report("stdout.json")["bytes_written"], file_bytes, "standard output");
}

#[test]
fn report_on_runtime_error_has_every_key_and_status_error() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.write("bad.npy", b"\x93NUMPZ\x01\x00garbage");
    dir.run(&["sub", "bad.npy", "b.npy", "-o", "out.npy", "--report", "report.json"])
        .expect_code(1)
        .stderr_mentions("bad.npy");
    let r = dir.report("report.json");
    assert_report_keys(&r);
    assert_eq!(r["status"], "error");
    assert_eq!(r["valid"], false);
    let err = r["error"].as_str().expect("error message");
    assert!(err.contains("bad.npy"), "report error should name the file: {err}");
    assert!(r["output"].is_null());
    assert!(r["checks"].is_array(), "checks is a (possibly empty) list");
    assert_eq!(r["op"], "sub");
    assert!(!dir.exists("out.npy"));
}

#[test]
fn report_on_validation_failure_lists_all_seven_checks() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 3], &[1.0f32; 6]));
    dir.write("b.npy", &npy(&[2, 3], &[H(0x3c00); 6]));
    let r = run_invalid(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]);
    assert_seven_checks(&r, &CHECKS_NUMPY);
    assert_checks(
        &r,
        &[
            ("operator_available", "pass"),
            ("datatype_supported", "pass"),
            ("same_datatype", "fail"),
            ("broadcastable", "pass"),
            ("dimension_count", "pass"),
            ("nonzero_sizes", "pass"),
            ("element_count", "pass"),
        ],
    );
    let inputs = r["inputs"].as_array().unwrap();
    assert_eq!(inputs[0]["dtype"], "float32");
    assert_eq!(inputs[1]["dtype"], "float16");
}

#[test]
fn report_strides_follow_the_contract_example() {
    let dir = Dir::new();
    let sa = [8, 1, 6, 1];
    let sb = [7, 1, 5];
    dir.write("a.npy", &npy(&sa, &[1.0f32; 48]));
    dir.write("b.npy", &npy(&sb, &[2.0f32; 35]));
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "c.npy", "--report", "report.json"]).ok();
    let r = dir.report("report.json");
    assert_eq!(r["dml_operator"], "DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE");
    assert_eq!(u64s(&r["broadcast"]["shape"]), vec![8, 7, 6, 5]);
    assert_eq!(u64s(&r["output"]["shape"]), vec![8, 7, 6, 5]);
    assert_eq!(r["elements"], 1680);
    let strides = r["broadcast"]["strides"].as_array().unwrap();
    assert_eq!(u64s(&strides[0]), vec![6, 0, 1, 0]);
    assert_eq!(u64s(&strides[1]), vec![0, 5, 0, 1]);
    assert_eq!(dir.output::<f32>("c.npy", &[8, 7, 6, 5]), vec![1.0f32; 1680]);
}

#[test]
fn report_strides_are_storage_strides_for_fortran_inputs() {
    let dir = Dir::new();
    dir.write("a.npy", &npy_with(&A_SHAPE, &a_values(), Layout::fortran()));
    dir.write("b.npy", &npy(&[3, 4], &[0.0f32; 12]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]).ok();
    let r = dir.report("report.json");
    assert_eq!(r["inputs"][0]["fortran_order"], true);
    let strides = r["broadcast"]["strides"].as_array().unwrap();
    // A [2,3,4] stored in Fortran order: first axis fastest.
    assert_eq!(u64s(&strides[0]), vec![1, 2, 6]);
    assert_eq!(u64s(&strides[1]), vec![0, 4, 1]);
    assert_same_bits(&dir.output::<f32>("out.npy", &A_SHAPE), &a_values());
}

#[test]
fn report_can_go_to_stdout() {
    let dir = Dir::new();
    write_ab(&dir);
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "-"]);
    out.ok();
    let r = out.stdout_json();
    assert_report_keys(&r);
    assert_eq!(r["status"], "ok");
    assert!(dir.exists("out.npy"));
}

#[test]
fn report_to_stdout_with_output_to_stdout_is_a_usage_error() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "-", "--report", "-"]).expect_code(2).expect_message();
    // Without -o the output goes to stdout (it is a pipe here), so this clashes too.
    dir.run(&["sub", "a.npy", "b.npy", "--report", "-"]).expect_code(2).expect_message();
}

// ---------------------------------------------------------------------------------------------
// The answers: minimum feature level and DirectML descriptors
// ---------------------------------------------------------------------------------------------

#[test]
fn minimum_feature_level_is_reported_at_any_level_and_hinted_on_failure() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[4], &[1i8, 2, 3, 4]));
    dir.write("b.npy", &npy(&[4], &[1i8; 4]));
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "-f", "4_1", "--report", "r.json"]);
    out.expect_code(3).stderr_mentions("these inputs pass at feature level 5_1 and newer: use --feature-level 5_1");
    let r = dir.report("r.json");
    assert_eq!(r["minimum_feature_level"], "5_1");
    assert!(r["error"].as_str().unwrap_or_default().ends_with("use --feature-level 5_1"), "{}", r["error"]);
    for level in ["5_1", "latest", "none"] {
        dir.run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "-f", level, "--report", "r.json"]).ok();
        assert_eq!(dir.report("r.json")["minimum_feature_level"], "5_1", "at {level}");
    }
    // No level: null, and the hint says whether `none` would do.
    dir.write("d.npy", &npy(&[2], &[1.0f64, 2.0]));
    dir.run(&["sub", "d.npy", "d.npy", "-o", "o.npy", "--report", "r.json"])
        .expect_code(3)
        .stderr_mentions("--feature-level none does: use --feature-level none");
    assert!(dir.report("r.json")["minimum_feature_level"].is_null());
    // Inputs that cannot be read: null.
    dir.write("bad.npy", b"\x93NUMPY\x01\x00garbage");
    dir.run(&["sub", "bad.npy", "b.npy", "-o", "o.npy", "--report", "r.json"]).expect_code(1);
    let r = dir.report("r.json");
    assert!(r["minimum_feature_level"].is_null() && r["dml"].is_null());
}

/// Element `offset` of a tensor's storage, as a DirectML kernel addresses it through `Strides`.
fn addressed(storage: &[f32], sizes: &[u64], strides: &[u64], flat: u64) -> f32 {
    let (mut rem, mut offset) = (flat, 0u64);
    for (&d, &s) in sizes.iter().zip(strides).rev() {
        offset += (rem % d) * s;
        rem /= d;
    }
    storage[offset as usize]
}

#[test]
fn dml_descriptors_address_the_broadcast_inputs_in_their_storage() {
    let dir = Dir::new();
    // A in Fortran order, B broadcast along two dimensions; level 1_0 pads rank 3 to 4.
    let a = a_values();
    dir.write("a.npy", &npy_with(&A_SHAPE, &a, Layout::fortran()));
    let b: Vec<f32> = (0..3).map(|i| 100.0 + i as f32).collect();
    dir.write("b.npy", &npy(&B_SHAPE, &b));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "-f", "1_0", "--report", "r.json"]).ok();
    let r = dir.report("r.json");
    let d = &r["dml"];
    assert_eq!(d["operator"], "DML_OPERATOR_ELEMENT_WISE_SUBTRACT");
    assert_eq!(d["desc"], "DML_ELEMENT_WISE_SUBTRACT_OPERATOR_DESC");
    let t = &d["tensors"];
    let sizes = u64s(&t["OutputTensor"]["Sizes"]);
    assert_eq!(sizes, [1, 2, 3, 4]);
    assert!(t["OutputTensor"]["Strides"].is_null());
    assert_eq!(t["OutputTensor"]["TotalTensorSizeInBytes"], 96);
    // Each input's strides, applied to its storage, give the broadcast input, element by element.
    let storage = [c_to_fortran(&A_SHAPE, &a), b.clone()];
    let logical: [&dyn Fn(usize, usize, usize) -> f32; 2] = [&|i, j, k| a[(i * 3 + j) * 4 + k], &|_, j, _| b[j]];
    for (name, store, value) in [("ATensor", &storage[0], logical[0]), ("BTensor", &storage[1], logical[1])] {
        let desc = &t[name];
        assert_eq!(desc["DataType"], "DML_TENSOR_DATA_TYPE_FLOAT32");
        assert_eq!(desc["Flags"], "DML_TENSOR_FLAG_NONE");
        assert_eq!(desc["DimensionCount"], 4);
        assert_eq!(desc["GuaranteedBaseOffsetAlignment"], 0);
        assert_eq!(u64s(&desc["Sizes"]), sizes, "{name}: all tensors share Sizes");
        let strides = u64s(&desc["Strides"]);
        for flat in 0..24u64 {
            let (i, j, k) = ((flat / 12) as usize, (flat / 4 % 3) as usize, (flat % 4) as usize);
            assert_eq!(addressed(store, &sizes, &strides, flat), value(i, j, k), "{name} at {flat}");
        }
        // DMLCalcBufferTensorSize: one past the last element addressed, in bytes, rounded up to 4.
        let span: u64 = 1 + sizes.iter().zip(&strides).map(|(d, s)| (d - 1) * s).sum::<u64>();
        assert_eq!(desc["TotalTensorSizeInBytes"], (span * 4).div_ceil(4) * 4, "{name}");
        assert!(span as usize <= store.len(), "{name} addresses past its storage");
    }
    // A Fortran-order input shows its storage strides.
    assert_eq!(u64s(&t["ATensor"]["Strides"]), [0, 1, 2, 6]);
    // float16 rounds the size up to a multiple of 4.
    dir.write("h.npy", &npy(&[3], &[H(0x3c00); 3]));
    dir.run(&["sub", "h.npy", "h.npy", "-o", "o.npy", "--report", "r.json"]).ok();
    assert_eq!(dir.report("r.json")["dml"]["tensors"]["ATensor"]["TotalTensorSizeInBytes"], 8);
}

#[test]
fn dml_is_null_at_level_none_and_on_failures() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "-f", "none", "--report", "r.json"]).ok();
    assert!(dir.report("r.json")["dml"].is_null());
    dir.run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "--dry-run", "--report", "r.json"]).ok();
    assert_eq!(dir.report("r.json")["dml"]["tensors"]["BTensor"]["Sizes"].as_array().map(Vec::len), Some(3));
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "o.npy", "-f", "3_0", "--report", "r.json"]).expect_code(3);
    assert!(dir.report("r.json")["dml"].is_null());
    dir.run(&["sub", "a.npy", "b.npy", "-o", "missing-dir/o.npy", "--report", "r.json"]).expect_code(1);
    assert!(dir.report("r.json")["dml"].is_null());
}

// ---------------------------------------------------------------------------------------------
// docs/report.md against the reports the binary writes
// ---------------------------------------------------------------------------------------------

/// The keys the rows of the first table after `heading` in docs/report.md name (a row may name
/// several: `` `bytes_read`, `bytes_written` ``), and whether each row says the key is present
/// only sometimes.
fn documented_keys(heading: &str) -> Vec<(String, bool)> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md")).expect("docs/report.md");
    let start = doc.find(heading).unwrap_or_else(|| panic!("docs/report.md has no {heading:?}"));
    let mut keys = Vec::new();
    for row in doc[start..].lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).skip(2) {
        let mut cells = row.split(" | ");
        let first = cells.next().unwrap_or_default().trim_start_matches('|');
        let sometimes = cells.next().is_some_and(|v| v.contains("only"));
        for key in first.split(',') {
            let key = key.trim().trim_matches('`');
            if !key.is_empty() {
                keys.push((key.to_string(), sometimes));
            }
        }
    }
    keys
}

/// Every key of `object` is documented under one of `headings`, and every documented key that
/// is not "only" sometimes there is in `object`. Rows naming a nested key (`output.fsync`)
/// document the objects inside, which their own rows describe.
fn keys_match_the_docs(what: &str, object: &serde_json::Value, headings: &[&str]) {
    let documented: Vec<(String, bool)> =
        headings.iter().flat_map(|h| documented_keys(h)).filter(|(k, _)| !k.contains('.')).collect();
    let object = object.as_object().unwrap_or_else(|| panic!("{what} is not an object: {object}"));
    for key in object.keys() {
        assert!(
            documented.iter().any(|(k, _)| k == key),
            "{what} has key {key:?}, which docs/report.md ({headings:?}) does not document"
        );
    }
    for (key, sometimes) in &documented {
        assert!(
            *sometimes || object.contains_key(key),
            "docs/report.md documents {what}.{key}, which the report lacks"
        );
    }
}

#[test]
fn every_report_key_is_documented_and_every_documented_key_is_written() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--stats", "--report", "pair.json"]).ok();
    let pair = dir.report("pair.json");
    keys_match_the_docs("a pair's report", &pair, &["## Stable keys", "## Extra keys"]);
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "p.npy", "--part", "1/2", "--report", "part.json", "-q"]).ok();
    let part = dir.report("part.json");
    keys_match_the_docs("a part's report", &part, &["## Stable keys", "## Extra keys"]);
    let listed = "`{\"index\": K, \"count\": N, \"first\", \"end\", \"job\", \"committed\", \"pending\"}`";
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md")).expect("docs/report.md");
    assert!(doc.contains(listed), "docs/report.md lists part's keys as {listed}");
    let keys: Vec<&String> = part["part"].as_object().expect("part").keys().collect();
    assert_eq!(keys, ["index", "count", "first", "end", "job", "committed", "pending"], "{}", part["part"]);

    let x = [1.0f32, 2.0, 3.0, 4.0];
    let c = |v: f32| x.iter().flat_map(|e| (e * v).to_le_bytes()).collect::<Vec<u8>>();
    dir.write("a.safetensors", &safetensors(&[("w", "F32", &[4], c(1.0)), ("v", "F32", &[4], c(2.0))]));
    dir.write("b.safetensors", &safetensors(&[("w", "F32", &[4], c(0.5)), ("v", "F32", &[4], c(2.0))]));
    let args =
        ["sqdiff", "a.safetensors", "b.safetensors", "-o", "o.safetensors", "--stats", "--report", "c.json", "-q"];
    dir.run(&args).ok();
    let r = dir.report("c.json");
    keys_match_the_docs("a container report", &r, &["## Container runs"]);
    keys_match_the_docs("a container report's totals", &r["totals"], &["`totals`:"]);
    keys_match_the_docs("a container report's members", &r["members"][0], &["Each entry of `members`:"]);
}
