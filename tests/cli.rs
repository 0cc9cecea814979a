//! End-to-end tests of the `tensorop` command line, run against the real binary in temporary
//! directories. They pin the behaviour `docs/cli.md` documents, including the decisions it
//! records (exit codes, report details, atomic output, stdin/stdout, float16 rounding).

mod common;

use common::*;
use serde_json::Value;
use std::io::Read;
use std::process::{Command, Stdio};

// ---------------------------------------------------------------------------------------------
// Shared inputs
// ---------------------------------------------------------------------------------------------

const A_SHAPE: [usize; 3] = [2, 3, 4];
const B_SHAPE: [usize; 2] = [3, 1];

/// A: float32 [2, 3, 4], values 0.75 * i - 5.
fn a_values() -> Vec<f32> {
    (0..24).map(|i| i as f32 * 0.75 - 5.0).collect()
}

/// B: float32 [3, 1] (broadcast along the last axis and the leading one).
fn b_values() -> Vec<f32> {
    vec![0.5, -1.25, 3.0]
}

/// Writes a.npy and b.npy (the shared float32 pair) into `dir`.
fn write_ab(dir: &Dir) {
    dir.write("a.npy", &npy(&A_SHAPE, &a_values()));
    dir.write("b.npy", &npy(&B_SHAPE, &b_values()));
}

fn expected_sub() -> Vec<f32> {
    broadcast_map(&A_SHAPE, &a_values(), &B_SHAPE, &b_values(), |a, b| a - b).1
}

fn expected_sqdiff() -> Vec<f32> {
    broadcast_map(&A_SHAPE, &a_values(), &B_SHAPE, &b_values(), |a, b| {
        let d = a - b;
        d * d
    })
    .1
}

/// Names in `dir` after a run that should only have added `added`.
fn assert_only_added(dir: &Dir, before: &std::collections::BTreeSet<String>, added: &[&str]) {
    let mut want = before.clone();
    for a in added {
        want.insert(a.to_string());
    }
    assert_eq!(dir.listing(), want, "directory contents after the run (stray temp file?)");
}

/// Runs a binary op on two typed 1-D or N-D inputs and returns the output values.
fn run_op<T: Elem>(op: &str, sa: &[usize], a: &[T], sb: &[usize], b: &[T], extra: &[&str]) -> Vec<T> {
    let dir = Dir::new();
    dir.write("a.npy", &npy(sa, a));
    dir.write("b.npy", &npy(sb, b));
    let mut args = vec![op, "a.npy", "b.npy", "-o", "out.npy"];
    args.extend_from_slice(extra);
    dir.run(&args).ok();
    let shape = broadcast_shape(sa, sb).unwrap();
    dir.output::<T>("out.npy", &shape)
}

/// Runs `args` (which must include `--report report.json`) expecting exit 3, and returns the
/// report after checking the common invalid-run properties.
fn run_invalid(dir: &Dir, args: &[&str]) -> Value {
    let before = dir.listing();
    dir.run(args).expect_code(3).expect_message();
    assert!(!dir.exists("out.npy"), "no output may be written on exit 3");
    assert_only_added(dir, &before, &["report.json"]);
    let r = dir.report("report.json");
    assert_report_keys(&r);
    assert_eq!(r["status"], "invalid");
    assert_eq!(r["valid"], false);
    assert!(r["error"].is_string(), "error should say why: {}", r["error"]);
    assert!(r["output"].is_null(), "output should be null when nothing was written");
    r
}

/// Writes `bad` as the named input (the other one is a good float32 file), runs `sub`, and checks
/// the runtime-error contract: exit 1, stderr names the file, no output, report status "error".
fn assert_malformed(bad: &[u8], as_b: bool) -> Out {
    let dir = Dir::new();
    let good = npy(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let (a, b) = if as_b { ("good.npy", "broken_input.npy") } else { ("broken_input.npy", "good.npy") };
    dir.write("broken_input.npy", bad);
    dir.write("good.npy", &good);
    let before = dir.listing();
    let out = dir.run(&["sub", a, b, "-o", "out.npy", "--report", "report.json"]);
    out.expect_code(1).expect_message().stderr_mentions("broken_input.npy");
    assert!(!dir.exists("out.npy"), "no output on a malformed input");
    assert_only_added(&dir, &before, &["report.json"]);
    let r = dir.report("report.json");
    assert_report_keys(&r);
    assert_eq!(r["status"], "error");
    assert_eq!(r["valid"], false);
    assert!(r["error"].is_string());
    assert!(r["output"].is_null());
    out
}

fn f32_header(shape: &str) -> String {
    header_dict("<f4", false, shape)
}

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

#[test]
fn sub_float32_broadcast_writes_expected_values() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]).ok();
    let got = dir.output::<f32>("out.npy", &A_SHAPE);
    assert_same_bits(&got, &expected_sub());
    // Spot-check one element by hand: a[1,2,3] = 0.75*23 - 5 = 12.25; b[2,0] = 3 -> 9.25.
    assert_eq!(got[23], 9.25);
}

#[test]
fn sqdiff_float32_broadcast_writes_expected_values() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "out.npy"]).ok();
    let got = dir.output::<f32>("out.npy", &A_SHAPE);
    assert_same_bits(&got, &expected_sqdiff());
    // a[0,0,0] = -5, b[0,0] = 0.5 -> 30.25.
    assert_eq!(got[0], 30.25);
}

#[test]
fn output_shape_is_the_broadcast_of_both_inputs() {
    // [3,1] x [1,4] -> [3,4]: each input broadcast along a different axis.
    let a = [1i32, 2, 3];
    let b = [10i32, 20, 30, 40];
    let got = run_op("sub", &[3, 1], &a, &[1, 4], &b, &[]);
    assert_eq!(got, vec![-9, -19, -29, -39, -8, -18, -28, -38, -7, -17, -27, -37]);
    // [4] x [2,3,1] -> [2,3,4]: leading dimensions padded.
    let a: Vec<i32> = (0..4).collect();
    let b: Vec<i32> = (0..6).map(|i| i * 100).collect();
    let got = run_op("sub", &[4], &a, &[2, 3, 1], &b, &[]);
    let (_, exp) = broadcast_map(&[4], &a, &[2, 3, 1], &b, |x, y| x - y);
    assert_eq!(got, exp);
}

#[test]
fn output_is_little_endian_c_order_version_1_whatever_the_inputs() {
    let dir = Dir::new();
    let layout = Layout { order: Order::Big, fortran: true, version: (3, 0) };
    dir.write("a.npy", &npy_with(&A_SHAPE, &a_values(), layout));
    dir.write("b.npy", &npy_with(&B_SHAPE, &b_values(), layout));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]).ok();
    let out = dir.npy("out.npy");
    assert_eq!(out.version, (1, 0));
    assert_eq!(out.descr, "<f4");
    assert!(!out.fortran);
    assert!(out.header.contains("'fortran_order': False"));
    assert_same_bits(&out.output_values::<f32>(&A_SHAPE), &expected_sub());
}

#[test]
fn testdata_fixtures_match_their_expected_outputs() {
    let td = manifest_dir().join("testdata");
    let cases: [(&str, &str, &str, &[&str]); 8] = [
        ("sub", "a.npy", "b.npy", &[]),
        ("sqdiff", "a.npy", "b.npy", &[]),
        ("sub", "a_big_endian.npy", "b.npy", &[]),
        ("sub", "a_fortran.npy", "b.npy", &[]),
        ("sub", "f16_a.npy", "f16_b.npy", &[]),
        ("sqdiff", "f16_a.npy", "f16_b.npy", &[]),
        ("sqdiff", "f16_a.npy", "f16_b.npy", &["--half-precision"]),
        ("sub", "i8_a.npy", "i8_b.npy", &[]),
    ];
    let expected = [
        "expected_sub.npy",
        "expected_sqdiff.npy",
        "expected_sub.npy",
        "expected_sub.npy",
        "expected_f16_sub.npy",
        "expected_f16_sqdiff.npy",
        "expected_f16_sqdiff_half.npy",
        "expected_i8_sub.npy",
    ];
    for ((op, a, b, extra), exp) in cases.iter().zip(expected) {
        let dir = Dir::new();
        let a = td.join(a);
        let b = td.join(b);
        let mut args = vec![*op, a.to_str().unwrap(), b.to_str().unwrap(), "-o", "out.npy"];
        args.extend_from_slice(extra);
        dir.run(&args).ok();
        let want = parse_npy(&std::fs::read(td.join(exp)).unwrap());
        let got = dir.npy("out.npy");
        assert_eq!(got.shape, want.shape, "{op} {a:?} {b:?}");
        assert_eq!(got.descr, want.descr, "{op} {a:?} {b:?}");
        assert_eq!(got.data, want.data, "{op} {a:?} {b:?} {extra:?} vs {exp}");
    }
    // And the malformed fixture is refused.
    let dir = Dir::new();
    let bad = td.join("malformed_truncated.npy");
    let b = td.join("b.npy");
    dir.run(&["sub", bad.to_str().unwrap(), b.to_str().unwrap(), "-o", "out.npy"])
        .expect_code(1)
        .stderr_mentions("malformed_truncated.npy");
}

#[test]
fn short_inner_broadcasts_across_many_chunks() {
    // [N, 3] - [3] and [N, 1, 3] - [5, 1]: innermost runs far shorter than a chunk, chunks that
    // start mid-row, on one and two threads.
    let dir = Dir::new();
    let n = 100_003;
    let a: Vec<f32> = (0..n * 3).map(|i| i as f32 * 0.5).collect();
    dir.write("a.npy", &npy(&[n, 3], &a));
    dir.write("b.npy", &npy(&[3], &[1.0f32, 2.0, 4.0]));
    for threads in ["1", "2"] {
        dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--threads", threads]).ok();
        let exp: Vec<f32> = a.iter().enumerate().map(|(i, &x)| x - [1.0f32, 2.0, 4.0][i % 3]).collect();
        assert_same_bits(&dir.output::<f32>("out.npy", &[n, 3]), &exp);
    }
    let m = 30_011;
    let c: Vec<i32> = (0..m as i32 * 3).collect();
    dir.write("c.npy", &npy(&[m, 1, 3], &c));
    dir.write("d.npy", &npy(&[5, 1], &[10i32, 20, 30, 40, 50]));
    for threads in ["1", "2"] {
        dir.run(&["sqdiff", "c.npy", "d.npy", "-o", "out2.npy", "--threads", threads]).ok();
        let mut exp = Vec::with_capacity(m * 15);
        for i in 0..m {
            for d in [10i32, 20, 30, 40, 50] {
                for k in 0..3 {
                    let x = c[i * 3 + k].wrapping_sub(d);
                    exp.push(x.wrapping_mul(x));
                }
            }
        }
        assert_eq!(dir.output::<i32>("out2.npy", &[m, 5, 3]), exp);
    }
}

#[test]
fn thread_count_does_not_change_the_result() {
    let dir = Dir::new();
    let n = 200_003;
    let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 1e3).collect();
    dir.write("a.npy", &npy(&[n], &a));
    dir.write("b.npy", &npy(&[1], &[0.1f32]));
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "one.npy", "--threads", "1"]).ok();
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "three.npy", "--threads", "3", "--report", "report.json"]).ok();
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "all.npy"]).ok();
    let one = dir.read("one.npy");
    assert_eq!(one, dir.read("three.npy"));
    assert_eq!(one, dir.read("all.npy"));
    let exp: Vec<f32> = a
        .iter()
        .map(|&x| {
            let d = x - 0.1f32;
            d * d
        })
        .collect();
    assert_same_bits(&dir.output::<f32>("one.npy", &[n]), &exp);
    let r = dir.report("report.json");
    assert_eq!(r["backend"]["name"], "cpu");
    assert_eq!(r["backend"]["threads"], 3);
}

#[test]
fn quiet_success_prints_nothing_on_stderr() {
    let dir = Dir::new();
    write_ab(&dir);
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "-q"]);
    out.ok();
    assert_eq!(out.stderr, "", "-q: nothing on stderr but errors");
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "out2.npy", "--quiet", "--progress", "never"]);
    out.ok();
    assert_eq!(out.stderr, "");
    // Errors still get through -q.
    dir.write("bad.npy", b"not an npy file");
    dir.run(&["sub", "bad.npy", "b.npy", "-o", "out3.npy", "-q"]).expect_code(1).expect_message();
}

#[test]
fn forced_progress_bar_does_not_corrupt_stdout_output() {
    let dir = Dir::new();
    write_ab(&dir);
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "-", "--progress", "always"]);
    out.ok();
    let got = parse_npy(&out.stdout).output_values::<f32>(&A_SHAPE);
    assert_same_bits(&got, &expected_sub());
}

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
    let written = r["bytes_written"].as_u64().expect("bytes_written");
    assert!(
        (24 * 4..=out_file).contains(&written),
        "bytes_written {written} should lie between 96 and the output file size {out_file}"
    );
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
// Each check failing
// ---------------------------------------------------------------------------------------------

#[test]
fn operator_available_fails_for_sqdiff_before_3_1() {
    for level in ["1_0", "2_1", "3_0"] {
        let dir = Dir::new();
        dir.write("a.npy", &npy(&[2, 3], &[1.0f32; 6]));
        dir.write("b.npy", &npy(&[3], &[0.5f32; 3]));
        let r = run_invalid(
            &dir,
            &["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json", "--feature-level", level],
        );
        assert_seven_checks(&r, &CHECKS_NUMPY);
        assert_eq!(r["feature_level"], level);
        assert!(r["support_row"].is_null(), "no sqdiff row at {level}");
        // Later checks are still evaluated.
        assert_checks(
            &r,
            &[
                ("operator_available", "fail"),
                ("same_datatype", "pass"),
                ("broadcastable", "pass"),
                ("nonzero_sizes", "pass"),
                ("element_count", "pass"),
            ],
        );
    }
}

#[test]
fn operator_available_message_names_the_first_level_with_sqdiff() {
    let dir = Dir::new();
    write_ab(&dir);
    let out =
        dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--feature-level", "3_0", "--report", "report.json"]);
    out.expect_code(3).expect_message();
    let msg = check_message(&dir.report("report.json"), "operator_available");
    assert!(msg.contains("3_1") || msg.contains("3.1"), "the fix (level 3_1 or later) should be named: {msg}");
}

#[test]
fn datatype_supported_int8_sub_needs_5_1() {
    let a = [1i8, 2, 3, 4];
    let b = [1i8];
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[4], &a));
    dir.write("b.npy", &npy(&[1], &b));
    let r = run_invalid(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json", "-f", "5_0"]);
    assert_eq!(r["support_row"], "4_1");
    assert_checks(
        &r,
        &[
            ("operator_available", "pass"),
            ("datatype_supported", "fail"),
            ("same_datatype", "pass"),
            ("broadcastable", "pass"),
            ("dimension_count", "pass"),
        ],
    );
    assert!(check_message(&r, "datatype_supported").contains("int8"));
    let got = run_op("sub", &[4], &a, &[1], &b, &["-f", "5_1"]);
    assert_eq!(got, vec![0, 1, 2, 3]);
}

#[test]
fn datatype_supported_int32_sub_needs_2_1_and_int64_needs_4_1() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 2], &[5i32, 6, 7, 8]));
    dir.write("b.npy", &npy(&[2, 2], &[1i32, 1, 1, 1]));
    for (level, ok) in [("1_0", false), ("2_0", false), ("2_1", true)] {
        let out =
            dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--feature-level", level, "--report", "report.json"]);
        let r = dir.report("report.json");
        if ok {
            out.ok();
            assert_eq!(check_status(&r, "datatype_supported"), "pass");
        } else {
            out.expect_code(3);
            assert_eq!(check_status(&r, "datatype_supported"), "fail", "int32 at {level}");
        }
    }
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2], &[5i64, i64::MIN]));
    dir.write("b.npy", &npy(&[2], &[1i64, 1]));
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "-f", "4_0", "--report", "report.json"]);
    out.expect_code(3);
    assert_eq!(check_status(&dir.report("report.json"), "datatype_supported"), "fail");
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "-f", "4_1"]).ok();
    assert_eq!(dir.output::<i64>("out.npy", &[2]), vec![4, i64::MAX]);
}

#[test]
fn datatype_supported_sqdiff_int8_refused_at_latest() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[3], &[1i8, 2, 3]));
    dir.write("b.npy", &npy(&[3], &[0i8, 0, 0]));
    let r = run_invalid(&dir, &["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]);
    assert_eq!(r["support_row"], "3_1");
    assert_checks(&r, &[("operator_available", "pass"), ("datatype_supported", "fail")]);
}

#[test]
fn datatype_supported_float64_only_with_level_none() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2], &[1.5f64, -2.0]));
    dir.write("b.npy", &npy(&[2], &[0.25f64, 0.5]));
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]);
    out.expect_code(3).stderr_mentions("float64");
    assert!(!dir.exists("out.npy"));
    let r = dir.report("report.json");
    assert_eq!(check_status(&r, "datatype_supported"), "fail");
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--feature-level", "none", "--report", "report.json"]).ok();
    assert_eq!(dir.output::<f64>("out.npy", &[2]), vec![1.25, -2.5]);
    let r = dir.report("report.json");
    assert_eq!(check_status(&r, "datatype_supported"), "pass");
}

#[test]
fn non_numeric_dtypes_are_validation_failures() {
    // (descr, shape, data) for bool, complex64, unicode string and a structured record.
    let cases: [(&str, &[u8]); 4] =
        [("'|b1'", &[1, 0]), ("'<c8'", &[0; 16]), ("'<U3'", &[0; 24]), ("[('x', '<f4'), ('y', '<f4')]", &[0; 16])];
    for level in ["latest", "none"] {
        for (descr, data) in cases {
            let dir = Dir::new();
            let header = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': (2,), }}");
            let file = npy_raw((1, 0), &header, data);
            dir.write("a.npy", &file);
            dir.write("b.npy", &file);
            let out = dir.run(&[
                "sub",
                "a.npy",
                "b.npy",
                "-o",
                "out.npy",
                "--report",
                "report.json",
                "--feature-level",
                level,
            ]);
            assert_eq!(out.code, Some(3), "dtype {descr} at {level}: stderr {}", out.stderr);
            out.expect_message();
            assert!(!dir.exists("out.npy"));
            let r = dir.report("report.json");
            assert_eq!(r["status"], "invalid", "{descr}");
            assert_eq!(check_status(&r, "datatype_supported"), "fail", "{descr}");
        }
    }
}

#[test]
fn same_datatype_fails_without_promotion() {
    for (a, b) in [
        (npy(&[2], &[1.0f32, 2.0]), npy(&[2], &[H(0x3c00), H(0x4000)])),
        (npy(&[2], &[1i32, 2]), npy(&[2], &[1u32, 2])),
        (npy(&[2], &[1i32, 2]), npy(&[2], &[1i64, 2])),
    ] {
        let dir = Dir::new();
        dir.write("a.npy", &a);
        dir.write("b.npy", &b);
        let r = run_invalid(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]);
        assert_seven_checks(&r, &CHECKS_NUMPY);
        assert_checks(&r, &[("datatype_supported", "pass"), ("same_datatype", "fail"), ("broadcastable", "pass")]);
    }
}

#[test]
fn byte_order_alone_does_not_make_dtypes_differ() {
    let dir = Dir::new();
    dir.write("a.npy", &npy_with(&[3], &[1.0f32, 2.0, 3.0], Layout::big()));
    dir.write("b.npy", &npy(&[3], &[0.5f32, 0.5, 0.5]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]).ok();
    assert_eq!(dir.output::<f32>("out.npy", &[3]), vec![0.5, 1.5, 2.5]);
    let r = dir.report("report.json");
    assert_eq!(check_status(&r, "same_datatype"), "pass");
    assert_eq!(r["inputs"][0]["byte_order"], "big");
    assert_eq!(r["inputs"][1]["byte_order"], "little");
}

#[test]
fn broadcastable_fails_for_incompatible_shapes() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 3], &[1.0f32; 6]));
    dir.write("b.npy", &npy(&[4], &[1.0f32; 4]));
    let r = run_invalid(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]);
    assert_seven_checks(&r, &CHECKS_NUMPY);
    assert_checks(
        &r,
        &[
            ("operator_available", "pass"),
            ("datatype_supported", "pass"),
            ("same_datatype", "pass"),
            ("broadcastable", "fail"),
        ],
    );
    // With no output shape these may be skipped, but nothing else failed.
    for id in ["dimension_count", "nonzero_sizes", "element_count"] {
        assert_pass_or_skip(&r, id);
    }
    let msg = check_message(&r, "broadcastable");
    assert!(msg.contains('3') && msg.contains('4'), "message should show the clash: {msg}");
}

#[test]
fn several_failures_are_all_reported() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 3], &[1.0f32; 6]));
    dir.write("b.npy", &npy(&[4], &[H(0); 4]));
    let r = run_invalid(&dir, &["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json", "-f", "3_0"]);
    assert_seven_checks(&r, &CHECKS_NUMPY);
    assert_checks(&r, &[("operator_available", "fail"), ("same_datatype", "fail"), ("broadcastable", "fail")]);
}

#[test]
fn same_sizes_fails_with_broadcast_none() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 3], &[1.0f32; 6]));
    dir.write("b.npy", &npy(&[3], &[1.0f32; 3]));
    let r = run_invalid(
        &dir,
        &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json", "--broadcast", "none"],
    );
    assert_seven_checks(&r, &CHECKS_NONE);
    assert_eq!(check_status(&r, "same_sizes"), "fail");
    // With no common shape `broadcast` may be null; if present it names the mode.
    if r["broadcast"].is_object() {
        assert_eq!(r["broadcast"]["mode"], "none");
    }
}

#[test]
fn broadcast_none_accepts_identical_shapes() {
    let a: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let b = vec![1.0f32; 6];
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 3], &a));
    dir.write("b.npy", &npy(&[2, 3], &b));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--broadcast", "none", "--report", "report.json"]).ok();
    assert_eq!(dir.output::<f32>("out.npy", &[2, 3]), vec![-1.0, 0.0, 1.0, 2.0, 3.0, 4.0]);
    let r = dir.report("report.json");
    assert_seven_checks(&r, &CHECKS_NONE);
    assert_eq!(check_status(&r, "same_sizes"), "pass");
    let strides = r["broadcast"]["strides"].as_array().unwrap();
    assert_eq!(u64s(&strides[0]), vec![3, 1]);
    assert_eq!(u64s(&strides[1]), vec![3, 1]);
}

#[test]
fn dimension_count_allows_rank_8_and_refuses_rank_9_at_latest() {
    let dir = Dir::new();
    let s8 = [1, 2, 1, 1, 1, 1, 1, 3];
    dir.write("a.npy", &npy(&s8, &[1u32, 2, 3, 4, 5, 6]));
    dir.write("b.npy", &npy(&[1], &[1u32]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]).ok();
    assert_eq!(dir.output::<u32>("out.npy", &s8), vec![0, 1, 2, 3, 4, 5]);

    let dir = Dir::new();
    let s9 = [1, 1, 1, 1, 1, 1, 1, 1, 2];
    dir.write("a.npy", &npy(&s9, &[1u32, 2]));
    dir.write("b.npy", &npy(&[1], &[1u32]));
    let r = run_invalid(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]);
    assert_checks(
        &r,
        &[("broadcastable", "pass"), ("dimension_count", "fail"), ("nonzero_sizes", "pass"), ("element_count", "pass")],
    );
    assert!(check_message(&r, "dimension_count").contains('9'));
}

#[test]
fn rank_2_is_padded_to_4_under_2_1_and_the_message_says_so() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]));
    dir.write("b.npy", &npy(&[3], &[1.0f32, 1.0, 1.0]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--feature-level", "2_1", "--report", "report.json"]).ok();
    // The output keeps the inputs' broadcast shape; padding is only how DirectML sees it.
    assert_eq!(dir.output::<f32>("out.npy", &[2, 3]), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let r = dir.report("report.json");
    assert_eq!(r["support_row"], "2_1");
    assert_eq!(check_status(&r, "dimension_count"), "pass");
    let msg = check_message(&r, "dimension_count").to_lowercase();
    assert!(msg.contains("pad"), "message should mention padding: {msg}");
}

#[test]
fn rank_5_is_refused_under_2_1() {
    let dir = Dir::new();
    let s5 = [1, 1, 2, 1, 3];
    dir.write("a.npy", &npy(&s5, &[1.0f32; 6]));
    dir.write("b.npy", &npy(&s5, &[1.0f32; 6]));
    let r = run_invalid(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json", "-f", "2_1"]);
    assert_checks(&r, &[("dimension_count", "fail"), ("datatype_supported", "pass")]);
    // Rank 5 is fine from 3_0.
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "-f", "3_0"]).ok();
    assert_eq!(dir.output::<f32>("out.npy", &s5), vec![0.0; 6]);
}

#[test]
fn rank_0_inputs_broadcast_like_scalars() {
    // scalar - vector
    let got = run_op("sub", &[], &[10i32], &[3], &[1, 2, 3], &[]);
    assert_eq!(got, vec![9, 8, 7]);
    // vector - scalar
    let got = run_op("sub", &[3], &[1.5f32, 2.5, 3.5], &[], &[0.5f32], &[]);
    assert_eq!(got, vec![1.0, 2.0, 3.0]);
    // scalar - scalar keeps rank 0
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[], &[7.0f32]));
    dir.write("b.npy", &npy(&[], &[2.0f32]));
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]).ok();
    let out = dir.npy("out.npy");
    assert!(out.header.contains("'shape': ()"), "header: {}", out.header);
    assert_eq!(out.output_values::<f32>(&[]), vec![25.0]);
    let r = dir.report("report.json");
    assert_eq!(u64s(&r["output"]["shape"]), Vec::<u64>::new());
    assert_eq!(r["elements"], 1);
    assert_eq!(check_status(&r, "dimension_count"), "pass");
}

#[test]
fn rank_0_counts_as_rank_1_at_every_level() {
    for level in ["1_0", "3_0", "6_4"] {
        let dir = Dir::new();
        dir.write("a.npy", &npy(&[], &[3.0f32]));
        dir.write("b.npy", &npy(&[], &[1.0f32]));
        dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "-f", level]).ok();
        assert_eq!(dir.output::<f32>("out.npy", &[]), vec![2.0]);
    }
}

#[test]
fn nonzero_sizes_fails_for_empty_tensors() {
    let dir = Dir::new();
    dir.write("a.npy", &npy::<f32>(&[0, 3], &[]));
    dir.write("b.npy", &npy(&[3], &[1.0f32; 3]));
    let r = run_invalid(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]);
    assert_checks(
        &r,
        &[("broadcastable", "pass"), ("dimension_count", "pass"), ("nonzero_sizes", "fail"), ("element_count", "pass")],
    );
}

#[test]
fn empty_tensors_are_allowed_with_level_none() {
    let dir = Dir::new();
    dir.write("a.npy", &npy::<f32>(&[0, 3], &[]));
    dir.write("b.npy", &npy(&[3], &[1.0f32; 3]));
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "-f", "none", "--report", "report.json"]).ok();
    assert_eq!(dir.output::<f32>("out.npy", &[0, 3]), Vec::<f32>::new());
    let r = dir.report("report.json");
    assert_eq!(r["elements"], 0);
    assert_eq!(check_status(&r, "nonzero_sizes"), "skip");
    // Broadcasting against a zero-size dim: [2,1,0] x [3,1] -> [2,3,0].
    dir.write("c.npy", &npy::<i16>(&[2, 1, 0], &[]));
    dir.write("d.npy", &npy(&[3, 1], &[1i16, 2, 3]));
    dir.run(&["sub", "c.npy", "d.npy", "-o", "out2.npy", "-f", "none"]).ok();
    assert_eq!(dir.output::<i16>("out2.npy", &[2, 3, 0]), Vec::<i16>::new());
}

#[test]
fn element_count_fails_above_u32_max() {
    // [65536, 1] x [1, 65537] broadcasts to 4_295_032_832 > 2^32 - 1 elements; nothing may be
    // computed or allocated for it.
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[65536, 1], &vec![1u8; 65536]));
    dir.write("b.npy", &npy(&[1, 65537], &vec![1u8; 65537]));
    let r = run_invalid(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]);
    assert_checks(
        &r,
        &[
            ("operator_available", "pass"),
            ("datatype_supported", "pass"),
            ("broadcastable", "pass"),
            ("dimension_count", "pass"),
            ("nonzero_sizes", "pass"),
            ("element_count", "fail"),
        ],
    );
    let msg = check_message(&r, "element_count").replace([',', '_', ' '], "");
    assert!(
        msg.contains("4295032832") || msg.contains("4294967295"),
        "message should give the count or the limit: {msg}"
    );
}

#[test]
fn element_count_exactly_u32_max_passes_in_a_dry_run() {
    // 65537 * 65535 = 2^32 - 1.
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[65537, 1], &vec![1u8; 65537]));
    dir.write("b.npy", &npy(&[1, 65535], &vec![1u8; 65535]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--dry-run", "--report", "report.json"]).ok();
    assert!(!dir.exists("out.npy"));
    let r = dir.report("report.json");
    assert_eq!(check_status(&r, "element_count"), "pass");
    assert_eq!(r["elements"], 4_294_967_295u64);
}

#[test]
fn level_none_skips_three_checks() {
    let dir = Dir::new();
    // Even an output above 2^32 - 1 elements passes validation at level none (dry run: nothing
    // is computed).
    dir.write("a.npy", &npy(&[65536, 1], &vec![1u8; 65536]));
    dir.write("b.npy", &npy(&[1, 65537], &vec![1u8; 65537]));
    dir.run(&[
        "sqdiff",
        "a.npy",
        "b.npy",
        "-o",
        "out.npy",
        "--feature-level",
        "none",
        "--dry-run",
        "--report",
        "report.json",
    ])
    .ok();
    assert!(!dir.exists("out.npy"));
    let r = dir.report("report.json");
    assert_eq!(r["feature_level"], "none");
    assert!(r["support_row"].is_null());
    assert_seven_checks(&r, &CHECKS_NUMPY);
    assert_checks(
        &r,
        &[
            ("operator_available", "skip"),
            ("datatype_supported", "pass"),
            ("same_datatype", "pass"),
            ("broadcastable", "pass"),
            ("dimension_count", "pass"),
            ("nonzero_sizes", "skip"),
            ("element_count", "skip"),
        ],
    );
}

#[test]
fn level_none_accepts_rank_32_and_refuses_rank_33() {
    let dir = Dir::new();
    let mut s32 = vec![1usize; 32];
    s32[0] = 2;
    s32[31] = 3;
    let a: Vec<i64> = (0..6).collect();
    dir.write("a.npy", &npy(&s32, &a));
    dir.write("b.npy", &npy(&[3], &[1i64, 1, 1]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "-f", "none"]).ok();
    assert_eq!(dir.output::<i64>("out.npy", &s32), vec![-1, 0, 1, 2, 3, 4]);

    let dir = Dir::new();
    let s33 = vec![1usize; 33];
    dir.write("a.npy", &npy(&s33, &[1i64]));
    dir.write("b.npy", &npy(&[1], &[1i64]));
    let r = run_invalid(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json", "-f", "none"]);
    assert_eq!(check_status(&r, "dimension_count"), "fail");
}

// ---------------------------------------------------------------------------------------------
// Feature levels
// ---------------------------------------------------------------------------------------------

#[test]
fn level_spellings_are_equivalent() {
    let dir = Dir::new();
    write_ab(&dir);
    for spelling in ["3_1", "3.1", "DML_FEATURE_LEVEL_3_1"] {
        dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--feature-level", spelling, "--report", "report.json"])
            .ok();
        let r = dir.report("report.json");
        assert_eq!(r["feature_level"], "3_1", "spelling {spelling}");
        assert_eq!(r["support_row"], "3_1", "spelling {spelling}");
        assert_same_bits(&dir.output::<f32>("out.npy", &A_SHAPE), &expected_sqdiff());
    }
}

#[test]
fn level_latest_is_6_4_and_the_default() {
    let dir = Dir::new();
    write_ab(&dir);
    for extra in [&["-f", "latest"][..], &["--feature-level", "6_4"][..], &[][..]] {
        let mut args = vec!["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "r.json"];
        args.extend_from_slice(extra);
        dir.run(&args).ok();
        let r = dir.report("r.json");
        assert_eq!(r["feature_level"], "6_4", "{extra:?}");
        assert_eq!(r["support_row"], "5_1", "{extra:?}");
    }
}

#[test]
fn support_row_is_the_newest_at_or_below_the_level() {
    let dir = Dir::new();
    write_ab(&dir);
    let rows = [
        ("1_0", "1_0"),
        ("2_0", "1_0"),
        ("2_1", "2_1"),
        ("3_0", "3_0"),
        ("3_1", "3_0"),
        ("4_0", "3_0"),
        ("4_1", "4_1"),
        ("5_0", "4_1"),
        ("5_1", "5_1"),
        ("5_2", "5_1"),
        ("6_0", "5_1"),
        ("6_3", "5_1"),
    ];
    for (level, row) in rows {
        // float32 [2,3,4] is rank 3: padded to 4 at the rank-4-only rows.
        dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "-f", level, "--report", "r.json"]).ok();
        let r = dir.report("r.json");
        assert_eq!(r["feature_level"], level);
        assert_eq!(r["support_row"], row, "sub at {level}");
    }
}

#[test]
fn unknown_feature_level_is_a_usage_error() {
    let dir = Dir::new();
    write_ab(&dir);
    for bad in ["7_0", "3_2", "0_9", "three", "", "DML_FEATURE_LEVEL_9_9"] {
        dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--feature-level", bad]).expect_code(2).expect_message();
        assert!(!dir.exists("out.npy"), "level {bad:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Malformed inputs: exit 1, naming the file
// ---------------------------------------------------------------------------------------------

#[test]
fn malformed_bad_magic() {
    let mut f = npy(&[2, 3], &[1.0f32; 6]);
    f[1] = b'X';
    assert_malformed(&f, false);
}

#[test]
fn malformed_unsupported_version_4_0() {
    let f = npy_raw((4, 0), &f32_header("(2, 3)"), &[0; 24]);
    assert_malformed(&f, false);
}

#[test]
fn malformed_unparsable_header() {
    let f = npy_raw((1, 0), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, }", &[0; 24]);
    assert_malformed(&f, false);
    let f = npy_raw((1, 0), "this is not a python dict", &[0; 24]);
    assert_malformed(&f, true);
}

#[test]
fn malformed_header_missing_keys() {
    let f = npy_raw((1, 0), "{'descr': '<f4', 'fortran_order': False, }", &[0; 24]);
    assert_malformed(&f, false);
    let f = npy_raw((1, 0), "{'fortran_order': False, 'shape': (2, 3), }", &[0; 24]);
    assert_malformed(&f, false);
}

#[test]
fn malformed_negative_dimension() {
    let f = npy_raw((1, 0), &f32_header("(-1, 3)"), &[0; 12]);
    assert_malformed(&f, false);
}

#[test]
fn malformed_shape_whose_byte_size_overflows_u64() {
    let f = npy_raw((1, 0), &f32_header("(4611686018427387904, 8)"), &[0; 16]);
    assert_malformed(&f, false);
    // Element count itself past u64.
    let f = npy_raw((1, 0), &f32_header("(18446744073709551615, 18446744073709551615)"), &[0; 16]);
    assert_malformed(&f, true);
}

#[test]
fn malformed_header_claims_more_data_than_the_file_has() {
    // 2^40 float32 = 4 TiB claimed, 16 bytes present: must fail fast without allocating.
    let f = npy_raw((1, 0), &f32_header("(1099511627776,)"), &[0; 16]);
    let start = std::time::Instant::now();
    assert_malformed(&f, false);
    assert!(start.elapsed().as_secs() < 30, "should fail before reading or allocating");
}

#[test]
fn malformed_truncated_data() {
    let f = npy_raw((1, 0), &f32_header("(2, 3)"), &[0; 20]);
    assert_malformed(&f, false);
    assert_malformed(&f, true);
}

#[test]
fn malformed_trailing_bytes_after_data() {
    let f = npy_raw((1, 0), &f32_header("(2, 3)"), &[0; 28]);
    assert_malformed(&f, false);
}

#[test]
fn malformed_pickled_object_dtype() {
    let header = "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }";
    // A pickle stream (protocol 2) of a small list; it must never be unpickled.
    let f = npy_raw((1, 0), header, b"\x80\x02]q\x00(K\x01K\x02e.");
    assert_malformed(&f, false);
}

#[test]
fn malformed_truncated_header() {
    let mut f = b"\x93NUMPY\x01\x00".to_vec();
    f.extend_from_slice(&1000u16.to_le_bytes());
    f.extend_from_slice(b"{'descr': '<f4', ");
    assert_malformed(&f, false);
}

#[test]
fn malformed_empty_file() {
    assert_malformed(b"", false);
}

#[test]
fn missing_input_file_is_a_runtime_error() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "a.npy", "no_such_file.npy", "-o", "out.npy", "--report", "report.json"])
        .expect_code(1)
        .stderr_mentions("no_such_file.npy");
    assert!(!dir.exists("out.npy"));
    assert_eq!(dir.report("report.json")["status"], "error");
}

// ---------------------------------------------------------------------------------------------
// Standard input and output
// ---------------------------------------------------------------------------------------------

#[test]
fn stdin_input_from_a_pipe() {
    let dir = Dir::new();
    write_ab(&dir);
    let a = dir.read("a.npy");
    std::fs::remove_file(dir.path("a.npy")).unwrap();
    dir.run_piped(&["sub", "-", "b.npy", "-o", "out.npy"], &a).ok();
    assert_same_bits(&dir.output::<f32>("out.npy", &A_SHAPE), &expected_sub());
}

#[test]
fn stdin_input_from_a_redirected_file() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run_redirected(&["sqdiff", "a.npy", "-", "-o", "out.npy"], "b.npy").ok();
    assert_same_bits(&dir.output::<f32>("out.npy", &A_SHAPE), &expected_sqdiff());
}

#[test]
fn stdin_input_big_enough_to_need_many_reads() {
    let dir = Dir::new();
    let n = 300_000;
    let a: Vec<i32> = (0..n as i32).collect();
    let bytes = npy_with(&[n], &a, Layout::big());
    dir.write("b.npy", &npy(&[1], &[7i32]));
    dir.run_piped(&["sub", "-", "b.npy", "-o", "out.npy"], &bytes).ok();
    let exp: Vec<i32> = a.iter().map(|x| x - 7).collect();
    assert_eq!(dir.output::<i32>("out.npy", &[n]), exp);
}

#[test]
fn empty_stdin_is_a_runtime_error() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "-", "b.npy", "-o", "out.npy"]).expect_code(1).expect_message();
    assert!(!dir.exists("out.npy"));
}

#[test]
fn both_inputs_from_stdin_are_refused() {
    let dir = Dir::new();
    write_ab(&dir);
    let a = dir.read("a.npy");
    let out = dir.run_piped(&["sub", "-", "-", "-o", "out.npy"], &a);
    // Only one input may be `-`; a usage error (2) is expected, a runtime error (1) tolerated.
    assert!(matches!(out.code, Some(1) | Some(2)), "exit {:?}; stderr {}", out.code, out.stderr);
    out.expect_message();
    assert!(!dir.exists("out.npy"));
}

#[test]
fn output_to_stdout_with_dash() {
    let dir = Dir::new();
    write_ab(&dir);
    let before = dir.listing();
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "-"]);
    out.ok();
    assert_same_bits(&parse_npy(&out.stdout).output_values::<f32>(&A_SHAPE), &expected_sub());
    assert_eq!(dir.listing(), before, "nothing written to disk");
}

#[test]
fn output_defaults_to_stdout_when_it_is_not_a_terminal() {
    let dir = Dir::new();
    write_ab(&dir);
    let out = dir.run(&["sqdiff", "a.npy", "b.npy"]);
    out.ok();
    assert_same_bits(&parse_npy(&out.stdout).output_values::<f32>(&A_SHAPE), &expected_sqdiff());
}

#[test]
fn stdin_to_stdout_pipeline() {
    let dir = Dir::new();
    write_ab(&dir);
    let b = dir.read("b.npy");
    let out = dir.run_piped(&["sub", "a.npy", "-", "-o", "-"], &b);
    out.ok();
    assert_same_bits(&parse_npy(&out.stdout).output_values::<f32>(&A_SHAPE), &expected_sub());
}

#[test]
fn nothing_on_stdout_when_validation_fails() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2], &[1.0f32, 2.0]));
    dir.write("b.npy", &npy(&[3], &[1.0f32, 2.0, 3.0]));
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "-"]);
    out.expect_code(3).expect_message();
    assert!(out.stdout.is_empty(), "no partial .npy on stdout");
}

#[test]
fn closed_stdout_pipe_ends_quietly() {
    // Like `tensorop sub a b -o - | head -c 10`: the reader goes away after 10 bytes.
    let dir = Dir::new();
    let n = 1 << 20;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    dir.write("a.npy", &npy(&[n], &a));
    dir.write("b.npy", &npy(&[1], &[1.0f32]));
    let mut child = Command::new(bin())
        .args(["sub", "a.npy", "b.npy", "-o", "-"])
        .current_dir(dir.root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut head = [0u8; 10];
    stdout.read_exact(&mut head).unwrap();
    drop(stdout);
    assert_eq!(&head[..6], b"\x93NUMPY");
    let mut stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let code = wait_limited(&mut child, "tensorop sub a.npy b.npy -o - | head -c 10");
    let err = err.join().unwrap();
    assert_eq!(code, Some(0), "a closed pipe is not an error (stderr: {err})");
    assert_eq!(err, "", "nothing on stderr for a closed pipe");
    assert_eq!(dir.listing().len(), 2, "no files left behind");
}

// ---------------------------------------------------------------------------------------------
// Output safety
// ---------------------------------------------------------------------------------------------

#[test]
fn in_place_output_over_a_matches_another_path() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "c.npy"]).ok();
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "a.npy"]).ok();
    assert_eq!(dir.read("a.npy"), dir.read("c.npy"));
    assert_same_bits(&dir.output::<f32>("a.npy", &A_SHAPE), &expected_sqdiff());
    assert_eq!(dir.listing().len(), 3, "no temp files: {:?}", dir.listing());
}

#[test]
fn in_place_output_over_the_broadcast_input_b() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "b.npy"]).ok();
    assert_same_bits(&dir.output::<f32>("b.npy", &A_SHAPE), &expected_sub());
    assert_eq!(dir.listing().len(), 2, "no temp files: {:?}", dir.listing());
}

#[test]
fn in_place_with_a_big_endian_fortran_input() {
    let dir = Dir::new();
    let layout = Layout { order: Order::Big, fortran: true, version: (2, 0) };
    dir.write("a.npy", &npy_with(&A_SHAPE, &a_values(), layout));
    dir.write("b.npy", &npy(&B_SHAPE, &b_values()));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "a.npy"]).ok();
    assert_same_bits(&dir.output::<f32>("a.npy", &A_SHAPE), &expected_sub());
}

#[test]
fn existing_output_is_untouched_on_validation_failure() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2], &[1.0f32, 2.0]));
    dir.write("b.npy", &npy(&[3], &[1.0f32, 2.0, 3.0]));
    dir.write("out.npy", b"precious previous contents");
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]).expect_code(3);
    assert_eq!(dir.read("out.npy"), b"precious previous contents");
    assert_eq!(dir.listing(), before, "no temp file left behind");
}

#[test]
fn existing_output_is_untouched_on_runtime_error() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.write("bad.npy", &npy_raw((1, 0), &f32_header("(3, 1)"), &[0; 11]));
    dir.write("out.npy", b"precious previous contents");
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "bad.npy", "-o", "out.npy", "--report", "report.json"]).expect_code(1);
    assert_eq!(dir.read("out.npy"), b"precious previous contents");
    assert_only_added(&dir, &before, &["report.json"]);
}

#[test]
fn existing_output_is_untouched_on_usage_error() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.write("out.npy", b"precious previous contents");
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--broadcast", "sideways"]).expect_code(2);
    assert_eq!(dir.read("out.npy"), b"precious previous contents");
    assert_eq!(dir.listing(), before);
}

#[test]
fn in_place_failure_leaves_the_input_intact() {
    let dir = Dir::new();
    write_ab(&dir);
    let a_before = dir.read("a.npy");
    dir.write("bad.npy", b"\x93NUMPY\x01\x00");
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "bad.npy", "-o", "a.npy"]).expect_code(1);
    assert_eq!(dir.read("a.npy"), a_before);
    assert_eq!(dir.listing(), before, "no temp file left behind");
    // float16 B against float32 A: validation failure, in place.
    dir.write("h.npy", &npy(&[3, 1], &[H(0); 3]));
    let before_h = dir.listing();
    dir.run(&["sub", "a.npy", "h.npy", "-o", "a.npy"]).expect_code(3);
    assert_eq!(dir.read("a.npy"), a_before);
    assert_eq!(dir.listing(), before_h, "no temp file left behind");
}

#[test]
fn output_into_a_missing_directory_is_a_runtime_error() {
    let dir = Dir::new();
    write_ab(&dir);
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "b.npy", "-o", "no/such/dir/out.npy", "--report", "report.json"])
        .expect_code(1)
        .expect_message();
    assert_only_added(&dir, &before, &["report.json"]);
    let r = dir.report("report.json");
    assert_eq!(r["status"], "error");
    assert!(r["output"].is_null());
}

#[test]
fn output_path_that_is_a_directory_is_a_runtime_error() {
    let dir = Dir::new();
    write_ab(&dir);
    std::fs::create_dir(dir.path("outdir")).unwrap();
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "b.npy", "-o", "outdir"]).expect_code(1).expect_message();
    assert!(dir.path("outdir").is_dir());
    assert_eq!(std::fs::read_dir(dir.path("outdir")).unwrap().count(), 0);
    assert_eq!(dir.listing(), before);
}

#[test]
fn success_leaves_no_temp_files() {
    let dir = Dir::new();
    write_ab(&dir);
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]).ok();
    assert_only_added(&dir, &before, &["out.npy", "report.json"]);
    // Overwriting an existing output replaces it completely.
    dir.write("out.npy", &vec![0xAB; 10_000]);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]).ok();
    assert_same_bits(&dir.output::<f32>("out.npy", &A_SHAPE), &expected_sub());
    assert_only_added(&dir, &before, &["out.npy", "report.json"]);
}

#[test]
fn dry_run_writes_no_output_and_a_valid_report() {
    let dir = Dir::new();
    write_ab(&dir);
    let before = dir.listing();
    let out = dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--dry-run", "--report", "report.json"]);
    out.ok();
    assert_only_added(&dir, &before, &["report.json"]);
    let r = dir.report("report.json");
    assert_report_keys(&r);
    assert_eq!(r["status"], "ok");
    assert_eq!(r["valid"], true);
    assert!(r["output"].is_null(), "dry run writes nothing");
    assert_eq!(r["elements"], 24);
    assert_eq!(u64s(&r["broadcast"]["shape"]), vec![2, 3, 4]);
    for id in CHECKS_NUMPY {
        assert_eq!(check_status(&r, id), "pass");
    }
    // Nothing on stdout either when no -o is given.
    let out = dir.run(&["sqdiff", "a.npy", "b.npy", "--dry-run"]);
    out.ok();
    assert!(out.stdout.is_empty(), "dry run writes no .npy to stdout");
}

#[test]
fn dry_run_with_a_failing_check_exits_3() {
    let dir = Dir::new();
    write_ab(&dir);
    let r = run_invalid(
        &dir,
        &["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--dry-run", "--report", "report.json", "-f", "3_0"],
    );
    assert_eq!(check_status(&r, "operator_available"), "fail");
}

// ---------------------------------------------------------------------------------------------
// Input formats
// ---------------------------------------------------------------------------------------------

#[test]
fn big_endian_inputs_of_every_width() {
    let big = Layout::big();
    let dir = Dir::new();
    // float32
    dir.write("a.npy", &npy_with(&A_SHAPE, &a_values(), big));
    dir.write("b.npy", &npy_with(&B_SHAPE, &b_values(), big));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "f32.npy", "--report", "r.json"]).ok();
    assert_same_bits(&dir.output::<f32>("f32.npy", &A_SHAPE), &expected_sub());
    let r = dir.report("r.json");
    assert_eq!(r["inputs"][0]["byte_order"], "big");
    assert_eq!(r["inputs"][1]["byte_order"], "big");
    // int16
    dir.write("c.npy", &npy_with(&[3], &[1000i16, -2, 0x0102], big));
    dir.write("d.npy", &npy_with(&[3], &[1i16, 3, 0x0201], big));
    dir.run(&["sub", "c.npy", "d.npy", "-o", "i16.npy"]).ok();
    assert_eq!(dir.output::<i16>("i16.npy", &[3]), vec![999, -5, -0xff]);
    // uint64
    dir.write("e.npy", &npy_with(&[2], &[0x0102030405060708u64, 5], big));
    dir.write("g.npy", &npy_with(&[1], &[1u64], big));
    dir.run(&["sub", "e.npy", "g.npy", "-o", "u64.npy"]).ok();
    assert_eq!(dir.output::<u64>("u64.npy", &[2]), vec![0x0102030405060707, 4]);
    // float16
    dir.write("h.npy", &npy_with(&[2], &[H(0x4200), H(0xc000)], big));
    dir.write("k.npy", &npy_with(&[1], &[H(0x3c00)], big));
    dir.run(&["sub", "h.npy", "k.npy", "-o", "f16.npy"]).ok();
    // 3 - 1 = 2 (0x4000); -2 - 1 = -3 (0xc200)
    assert_eq!(dir.output::<H>("f16.npy", &[2]), vec![H(0x4000), H(0xc200)]);
}

#[test]
fn native_byte_order_descr_is_read() {
    let dir = Dir::new();
    let native = Layout { order: Order::Native, ..Layout::default() };
    dir.write("a.npy", &npy_with(&[2], &[5u32, 6], native));
    dir.write("b.npy", &npy(&[2], &[1u32, 2]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "r.json"]).ok();
    assert_eq!(dir.output::<u32>("out.npy", &[2]), vec![4, 4]);
    let want = if cfg!(target_endian = "little") { "little" } else { "big" };
    assert_eq!(dir.report("r.json")["inputs"][0]["byte_order"], want);
}

#[test]
fn single_byte_types_report_byte_order_not_applicable() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2], &[5u8, 6]));
    dir.write("b.npy", &npy(&[2], &[1u8, 7]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "r.json"]).ok();
    assert_eq!(dir.output::<u8>("out.npy", &[2]), vec![4, 255]);
    let r = dir.report("r.json");
    assert_eq!(r["inputs"][0]["byte_order"], "not_applicable");
    assert_eq!(r["inputs"][0]["dtype"], "uint8");
}

#[test]
fn fortran_order_inputs_are_read_in_logical_order() {
    let dir = Dir::new();
    let a: Vec<i32> = (0..24).collect();
    let b: Vec<i32> = (0..12).map(|i| i * 100).collect();
    dir.write("a.npy", &npy_with(&[2, 3, 4], &a, Layout::fortran()));
    dir.write("b.npy", &npy_with(&[3, 4], &b, Layout::fortran()));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "r.json"]).ok();
    let (_, exp) = broadcast_map(&[2, 3, 4], &a, &[3, 4], &b, |x, y| x - y);
    assert_eq!(dir.output::<i32>("out.npy", &[2, 3, 4]), exp);
    let r = dir.report("r.json");
    assert_eq!(r["inputs"][0]["fortran_order"], true);
    assert_eq!(r["inputs"][1]["fortran_order"], true);
    // A Fortran input that is itself broadcast.
    dir.write("c.npy", &npy_with(&[3, 1], &[1i32, 2, 3], Layout::fortran()));
    dir.run(&["sub", "a.npy", "c.npy", "-o", "out2.npy"]).ok();
    let (_, exp) = broadcast_map(&[2, 3, 4], &a, &[3, 1], &[1, 2, 3], |x, y| x - y);
    assert_eq!(dir.output::<i32>("out2.npy", &[2, 3, 4]), exp);
}

#[test]
fn npy_versions_2_and_3_are_read() {
    let dir = Dir::new();
    dir.write("a.npy", &npy_with(&A_SHAPE, &a_values(), Layout::version(2)));
    dir.write("b.npy", &npy_with(&B_SHAPE, &b_values(), Layout::version(3)));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "r.json"]).ok();
    assert_same_bits(&dir.output::<f32>("out.npy", &A_SHAPE), &expected_sub());
    let r = dir.report("r.json");
    assert_eq!(r["inputs"][0]["npy_version"], "2.0");
    assert_eq!(r["inputs"][1]["npy_version"], "3.0");
    assert_eq!(dir.npy("out.npy").version, (1, 0));
}

// ---------------------------------------------------------------------------------------------
// Arithmetic
// ---------------------------------------------------------------------------------------------

#[test]
fn integer_sub_wraps() {
    let got = run_op("sub", &[4], &[127i8, -128, 0, 100], &[4], &[-1i8, 1, -128, -100], &[]);
    assert_eq!(got, vec![-128, 127, -128, -56]);
    let got = run_op("sub", &[3], &[0u8, 255, 5], &[3], &[1u8, 0, 10], &[]);
    assert_eq!(got, vec![255, 255, 251]);
    let got = run_op("sub", &[2], &[i16::MIN, i16::MAX], &[2], &[1i16, -1], &[]);
    assert_eq!(got, vec![i16::MAX, i16::MIN]);
    let got = run_op("sub", &[2], &[0u16, 1], &[1], &[2u16], &[]);
    assert_eq!(got, vec![65534, 65535]);
    let got = run_op("sub", &[2], &[i32::MIN, 5], &[1], &[1i32], &[]);
    assert_eq!(got, vec![i32::MAX, 4]);
    let got = run_op("sub", &[2], &[0u32, 3], &[2], &[1u32, u32::MAX], &[]);
    assert_eq!(got, vec![u32::MAX, 4]);
    let got = run_op("sub", &[2], &[i64::MIN, i64::MAX], &[2], &[1i64, -1], &[]);
    assert_eq!(got, vec![i64::MAX, i64::MIN]);
    let got = run_op("sub", &[1], &[0u64], &[1], &[u64::MAX], &[]);
    assert_eq!(got, vec![1]);
}

#[test]
fn integer_sqdiff_wraps() {
    // Supported at 3_1+: int32, uint32.
    let got = run_op("sqdiff", &[3], &[0u32, 70000, 5], &[1], &[1u32], &[]);
    // 0-1 = 0xFFFFFFFF; squared mod 2^32 = 1. 69999^2 = 4_899_860_001 mod 2^32 = 604_892_705.
    assert_eq!(got, vec![1, 604_892_705, 16]);
    let got = run_op("sqdiff", &[3], &[i32::MIN, 50000, -3], &[1], &[0i32], &[]);
    // MIN^2 wraps to 0; 50000^2 = 2_500_000_000 -> -1_794_967_296.
    assert_eq!(got, vec![0, -1_794_967_296, 9]);
    // Others at level none.
    let none = ["-f", "none"];
    let got = run_op("sqdiff", &[3], &[100i8, -128, 127], &[3], &[0i8, 127, -128], &none);
    // 100^2 = 10000 -> 16; -128-127 = 1 -> 1; 127+128 = -1 -> 1.
    assert_eq!(got, vec![16, 1, 1]);
    let got = run_op("sqdiff", &[2], &[0u8, 20], &[2], &[1u8, 4], &none);
    assert_eq!(got, vec![1, 0]);
    let got = run_op("sqdiff", &[2], &[i64::MIN, 1 << 32], &[1], &[0i64], &none);
    assert_eq!(got, vec![0, 0]);
    let got = run_op("sqdiff", &[2], &[0u64, 3], &[1], &[1u64], &none);
    assert_eq!(got, vec![1, 4]);
    let got = run_op("sqdiff", &[1], &[300i16], &[1], &[0i16], &none);
    assert_eq!(got, vec![(300i16).wrapping_mul(300)]);
}

#[test]
fn float32_sub_edge_cases() {
    let inf = f32::INFINITY;
    let tiny = f32::from_bits(1); // smallest subnormal
    let a = [inf, inf, -0.0, -0.0, 0.0, f32::from_bits(2), f32::MIN_POSITIVE, f32::NAN, 1.0, f32::MAX];
    let b = [inf, -inf, 0.0, -0.0, 0.0, tiny, tiny, 1.0, f32::NAN, -f32::MAX];
    let got = run_op("sub", &[10], &a, &[10], &b, &[]);
    let exp = [
        f32::NAN,
        inf,
        -0.0,
        0.0,
        0.0,
        tiny,
        f32::from_bits(0x007f_ffff), // largest subnormal, kept
        f32::NAN,
        f32::NAN,
        inf,
    ];
    assert_same_bits(&got, &exp);
    assert_eq!(got[2].to_bits(), 0x8000_0000, "-0 - 0 = -0");
    assert_eq!(got[3].to_bits(), 0, "-0 - -0 = +0");
    assert_eq!(got[5].to_bits(), 1, "subnormal result preserved");
}

#[test]
fn float32_sqdiff_edge_cases() {
    let inf = f32::INFINITY;
    let a = [1e20f32, 1e-20, inf, -inf, 3.0, -0.0, 0.1, f32::NAN];
    let b = [0.0f32, 0.0, inf, 0.0, 3.0, 0.0, 0.3, 0.0];
    let got = run_op("sqdiff", &[8], &a, &[8], &b, &[]);
    let d = 0.1f32 - 0.3f32;
    let exp = [
        inf,                         // overflow
        f32::from_bits(0x0001_16c2), // 1e-40: subnormal, kept
        f32::NAN,                    // inf - inf
        inf,
        0.0,
        0.0, // (-0)^2 = +0
        d * d,
        f32::NAN,
    ];
    assert_same_bits(&got, &exp);
}

#[test]
fn float64_edge_cases_at_level_none() {
    let tiny = f64::from_bits(1);
    let a = [f64::INFINITY, -0.0, f64::from_bits(3), 1e200, 0.1];
    let b = [f64::INFINITY, 0.0, tiny, -1e200, 0.2];
    let got = run_op("sub", &[5], &a, &[5], &b, &["-f", "none"]);
    assert_same_bits(&got, &[f64::NAN, -0.0, f64::from_bits(2), 2e200, 0.1 - 0.2]);
    let got = run_op("sqdiff", &[5], &a, &[5], &b, &["-f", "none"]);
    let d = 0.1f64 - 0.2;
    assert_same_bits(&got, &[f64::NAN, 0.0, 0.0, f64::INFINITY, d * d]);
}

#[test]
fn float16_sub_rounds_once_from_f32() {
    let a = [
        H(0x3c01), // 1 + 2^-10
        H(0x3c02), // 1 + 2^-9
        H(0x0003), // 3 * 2^-24 (subnormal)
        H(0x7bff), // 65504 (max)
        H(0x8000), // -0
        H(0x7c00), // inf
        H(0x3c00), // 1
    ];
    let b = [
        H(0x1000), // 2^-11
        H(0x1000),
        H(0x0001), // 2^-24
        H(0xfbff), // -65504
        H(0x0000),
        H(0x7c00),
        H(0x0001),
    ];
    let got = run_op("sub", &[7], &a, &[7], &b, &[]);
    let exp = [
        H(0x3c00), // 1 + 2^-11: tie between 1 and 1+2^-10, to even -> 1
        H(0x3c02), // 1 + 3*2^-11: tie between 0x3c01 and 0x3c02, to even -> 0x3c02
        H(0x0002), // subnormal kept
        H(0x7c00), // 131008 overflows to inf
        H(0x8000), // -0 - 0 = -0
        H(0x7e00), // NaN (any payload)
        H(0x3c00), // 1 - 2^-24 is nearer 1 than 1 - 2^-11
    ];
    assert_same_bits(&got, &exp);
}

#[test]
fn float16_sqdiff_default_rounds_once_at_the_end() {
    let a = [H(0x3c01), H(0x3c02), H(0x1400), H(0x5c00), H(0x0003)];
    let b = [H(0x1000), H(0x1000), H(0x0000), H(0x0000), H(0x0001)];
    let got = run_op("sqdiff", &[5], &a, &[5], &b, &[]);
    let exp = [
        // d = 1 + 2^-11 exactly in f32; d*d = 1 + 2^-10 + 2^-22 -> f16 1 + 2^-10.
        H(0x3c01),
        // d = 1 + 3*2^-11; d*d = 1 + 3*2^-10 + 9*2^-22 -> f16 1 + 3*2^-10.
        H(0x3c03),
        // 2^-10 squared = 2^-20: a float16 subnormal (16 * 2^-24), kept.
        H(0x0010),
        // 256^2 = 65536 rounds past 65504 to inf.
        H(0x7c00),
        // (2^-23)^2 underflows to +0.
        H(0x0000),
    ];
    assert_same_bits(&got, &exp);
}

#[test]
fn float16_sqdiff_half_precision_rounds_the_difference_first() {
    let a = [H(0x3c01), H(0x3c02), H(0x1400), H(0x5c00), H(0x0003)];
    let b = [H(0x1000), H(0x1000), H(0x0000), H(0x0000), H(0x0001)];
    let got = run_op("sqdiff", &[5], &a, &[5], &b, &["--half-precision"]);
    let exp = [
        // h = f16(1 + 2^-11) = 1 (tie to even); 1 * 1 = 1.
        H(0x3c00),
        // h = f16(1 + 3*2^-11) = 1 + 2^-9 (tie to even); h*h = 1 + 2^-8 + 2^-18 -> 1 + 2^-8.
        H(0x3c04),
        H(0x0010),
        H(0x7c00),
        H(0x0000),
    ];
    assert_same_bits(&got, &exp);
}

#[test]
fn half_precision_does_not_change_float16_sub() {
    let a = [H(0x3c01), H(0x3c02)];
    let b = [H(0x1000), H(0x1000)];
    let plain = run_op("sub", &[2], &a, &[2], &b, &[]);
    let half = run_op("sub", &[2], &a, &[2], &b, &["--half-precision"]);
    assert_eq!(plain, half);
}

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

#[test]
fn large_fortran_inputs_stream_in_c_order_with_the_same_result() {
    // Over the 32 MiB that backends hold whole: copied in C order tile by tile first. A is
    // [2, 2100, 2100] float32 in Fortran order (35 MB); B broadcasts along the middle axis.
    let dir = Dir::new();
    let sa = [2usize, 2100, 2100];
    let a: Vec<f32> = (0..sa.iter().product::<usize>()).map(|i| (i % 9973) as f32 * 0.5).collect();
    let sb = [2usize, 1, 2100];
    let b: Vec<f32> = (0..4200).map(|i| i as f32 * 0.25).collect();
    dir.write("a.npy", &npy_with(&sa, &a, Layout::fortran()));
    dir.write("b.npy", &npy(&sb, &b));
    let (_, expected) = broadcast_map(&sa, &a, &sb, &b, |x, y| (x - y) * (x - y));
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--report", "r.json"]).ok();
    assert_same_bits(&dir.output::<f32>("out.npy", &sa), &expected);
    // The report still describes the file as given.
    let r = dir.report("r.json");
    assert_eq!(r["inputs"][0]["fortran_order"], true);
    assert_eq!(u64s(&r["broadcast"]["strides"][0]), vec![1, 2, 4200]);
    assert_eq!(dir.listing(), ["a.npy", "b.npy", "out.npy", "r.json"].iter().map(|s| s.to_string()).collect());
}
