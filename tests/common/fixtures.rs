//! The float32 pair most end-to-end tests share (A `[2, 3, 4]`, B `[3, 1]`), their expected
//! results, and the run-and-check helpers built on them.

use super::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Shared inputs
// ---------------------------------------------------------------------------------------------

/// For the output-target tests: a directory holding a.npy (float32 [300, 300]) and b.npy (a
/// broadcast row), and the bytes `sub a.npy b.npy` writes to a regular file, the reference
/// every other target must receive. The output (360 KB) is larger than a pipe's buffer, so
/// FIFOs, sockets and named pipes see many writes.
pub fn target_case() -> (Dir, Vec<u8>) {
    let dir = Dir::new();
    let a: Vec<f32> = (0..300 * 300).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..300).map(|i| i as f32).collect();
    dir.write("a.npy", &npy(&[300, 300], &a));
    dir.write("b.npy", &npy(&[300], &b));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "ref.npy"]).ok();
    let output = dir.read("ref.npy");
    fs::remove_file(dir.path("ref.npy")).expect("remove ref.npy");
    (dir, output)
}

pub const A_SHAPE: [usize; 3] = [2, 3, 4];
pub const B_SHAPE: [usize; 2] = [3, 1];

/// A: float32 [2, 3, 4], values 0.75 * i - 5.
pub fn a_values() -> Vec<f32> {
    (0..24).map(|i| i as f32 * 0.75 - 5.0).collect()
}

/// B: float32 [3, 1] (broadcast along the last axis and the leading one).
pub fn b_values() -> Vec<f32> {
    vec![0.5, -1.25, 3.0]
}

/// Writes a.npy and b.npy (the shared float32 pair) into `dir`.
pub fn write_ab(dir: &Dir) {
    dir.write("a.npy", &npy(&A_SHAPE, &a_values()));
    dir.write("b.npy", &npy(&B_SHAPE, &b_values()));
}

pub fn expected_sub() -> Vec<f32> {
    broadcast_map(&A_SHAPE, &a_values(), &B_SHAPE, &b_values(), |a, b| a - b).1
}

pub fn expected_sqdiff() -> Vec<f32> {
    broadcast_map(&A_SHAPE, &a_values(), &B_SHAPE, &b_values(), |a, b| {
        let d = a - b;
        d * d
    })
    .1
}

/// Names in `dir` after a run that should only have added `added`.
pub fn assert_only_added(dir: &Dir, before: &std::collections::BTreeSet<String>, added: &[&str]) {
    let mut want = before.clone();
    for a in added {
        want.insert(a.to_string());
    }
    assert_eq!(dir.listing(), want, "directory contents after the run (stray temp file?)");
}

/// Runs a binary op on two typed 1-D or N-D inputs and returns the output values.
pub fn run_op<T: Elem>(op: &str, sa: &[usize], a: &[T], sb: &[usize], b: &[T], extra: &[&str]) -> Vec<T> {
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
pub fn run_invalid(dir: &Dir, args: &[&str]) -> Value {
    run_refused(dir, args).1
}

/// [`run_invalid`], returning the run too (for the refusal's wording on standard error).
pub fn run_refused(dir: &Dir, args: &[&str]) -> (Out, Value) {
    let before = dir.listing();
    let out = dir.run(args);
    out.expect_code(3).expect_message();
    assert!(!dir.exists("out.npy"), "no output may be written on exit 3");
    assert_only_added(dir, &before, &["report.json"]);
    let r = dir.report("report.json");
    assert_report_keys(&r);
    assert_eq!(r["status"], "invalid");
    assert_eq!(r["valid"], false);
    assert!(r["error"].is_string(), "error should say why: {}", r["error"]);
    assert!(r["output"].is_null(), "output should be null when nothing was written");
    (out, r)
}

/// Writes `bad` as the named input (the other one is a good float32 file), runs `sub`, and checks
/// the runtime-error contract: exit 1, stderr names the file, no output, report status "error".
pub fn assert_malformed(bad: &[u8], as_b: bool) -> Out {
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

pub fn f32_header(shape: &str) -> String {
    header_dict("<f4", false, shape)
}

/// A DxDispatch model of one float32 `[4]` subtract, `A - B`, whose result `writeFile` writes to
/// `target`; `a` and `b` are the resources' `initialValues` objects (JSON).
pub fn subtract_model(a: &str, b: &str, target: &str) -> String {
    format!(
        r#"{{
      "resources": {{
        "A": {{ "initialValuesDataType": "FLOAT32", "initialValues": {a} }},
        "B": {{ "initialValuesDataType": "FLOAT32", "initialValues": {b} }},
        "Out": {{ "initialValuesDataType": "FLOAT32", "initialValues": {{ "valueCount": 4, "value": 0 }} }}
      }},
      "dispatchables": {{ "minus": {{ "type": "DML_OPERATOR_ELEMENT_WISE_SUBTRACT", "desc": {{
        "ATensor": {{ "DataType": "FLOAT32", "Sizes": [4] }},
        "BTensor": {{ "DataType": "FLOAT32", "Sizes": [4] }},
        "OutputTensor": {{ "DataType": "FLOAT32", "Sizes": [4] }} }} }} }},
      "commands": [
        {{ "type": "dispatch", "dispatchable": "minus", "bindings": {{ "ATensor": "A", "BTensor": "B", "OutputTensor": "Out" }} }},
        {{ "type": "writeFile", "targetPath": "{target}", "resource": "Out", "dimensions": [4] }}
      ]
    }}"#
    )
}

/// a.npy and b.npy (float32 [2, 2]): b[0, 1] is 3 ulp above 2, b[1, 1] is 4.5 against 4.
pub fn float32_pair(dir: &Dir) {
    let a = [1.0f32, 2.0, 3.0, 4.0];
    let mut b = a;
    b[1] = f32::from_bits(2.0f32.to_bits() + 3);
    b[3] = 4.5;
    dir.write("a.npy", &npy(&[2, 2], &a));
    dir.write("b.npy", &npy(&[2, 2], &b));
}
