//! End-to-end tests against the real binary in temporary directories: how the checks reach the
//! user. A refused run exits 3 and writes nothing but its report, which lists the seven checks in
//! order; standard error names each failed check with its message and ends with what would work.
//! One refusal per check keeps the exact wording users see. Which levels, dtypes, ranks and
//! sizes pass is the checks' own rule, tested by the unit tests of `src/spec/checks.rs` and
//! `src/spec/matrix.rs`.

use crate::common::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// A refusal, as users see it
// ---------------------------------------------------------------------------------------------

/// The last line of a refusal when only `--feature-level none` accepts the inputs.
const ONLY_NONE: &str =
    "no DirectML feature level accepts these inputs; --feature-level none does: use --feature-level none";

/// The last line of a refusal when no level, `none` included, accepts the inputs.
const NO_LEVEL: &str = "no DirectML feature level accepts these inputs, and neither does --feature-level none";

/// Runs `op a.npy b.npy -o out.npy --report report.json` with `extra` in `dir`, which must be
/// refused: exit 3 with only the report written, standard error exactly the refusal of
/// `summary` (each failed check as `id: message`, then what would work), the report's `error`
/// the same lines and its failed checks those lines' ids and messages, in order. Returns the
/// report.
fn assert_refused(dir: &Dir, op: &str, extra: &[&str], summary: &[&str]) -> Value {
    let mut args = vec![op, "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"];
    args.extend_from_slice(extra);
    let (out, r) = run_refused(dir, &args);
    let mut want = String::from("tensorop: validation failed (nothing was computed):\n");
    for line in summary {
        want.push_str(&format!("  {line}\n"));
    }
    assert_eq!(out.stderr, want, "standard error of `tensorop {}`", args.join(" "));
    assert_eq!(r["error"], summary.join("\n"), "the report's error");
    let failed: Vec<String> = r["checks"]
        .as_array()
        .expect("checks is a list")
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| format!("{}: {}", c["id"].as_str().expect("check id"), c["message"].as_str().expect("message")))
        .collect();
    assert_eq!(failed, summary[..summary.len() - 1], "the report's failed checks");
    r
}

#[test]
fn operator_available_refusal() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 3], &[1.0f32; 6]));
    dir.write("b.npy", &npy(&[3], &[0.5f32; 3]));
    let r = assert_refused(
        &dir,
        "sqdiff",
        &["--feature-level", "3_0"],
        &[
            "operator_available: sqdiff (DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE) needs feature level 3_1 or \
             newer; you asked for 3_0. Use --feature-level 3_1 or newer, or --feature-level none",
            "these inputs pass at feature level 3_1 and newer: use --feature-level 3_1",
        ],
    );
    assert_seven_checks(&r, &CHECKS_NUMPY);
    assert_eq!(r["feature_level"], "3_0");
    assert!(r["support_row"].is_null(), "no sqdiff row at 3_0");
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

#[test]
fn datatype_supported_refusal() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[4], &[1i8, 2, 3, 4]));
    dir.write("b.npy", &npy(&[1], &[1i8]));
    let r = assert_refused(
        &dir,
        "sub",
        &["-f", "5_0"],
        &[
            "datatype_supported: A (a.npy) is int8, which sub at feature level 5_0 (support row 4_1) does not \
             support; it accepts float32 float16 int64 int32 uint64 uint32. Use --feature-level 5_1 or newer, or \
             convert the inputs",
            "these inputs pass at feature level 5_1 and newer: use --feature-level 5_1",
        ],
    );
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
}

#[test]
fn datatype_supported_refusal_of_a_dtype_no_level_supports() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2], &[1.5f64, -2.0]));
    dir.write("b.npy", &npy(&[2], &[0.25f64, 0.5]));
    assert_refused(
        &dir,
        "sub",
        &[],
        &[
            "datatype_supported: A (a.npy) is float64, which sub at feature level 6_4 (support row 5_1) does not \
             support; it accepts float32 float16 int64 int32 int16 int8 uint64 uint32 uint16 uint8. DirectML's sub \
             never supports float64: convert the inputs, or use --feature-level none",
            ONLY_NONE,
        ],
    );
}

#[test]
fn same_datatype_refusal() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2], &[1.0f32, 2.0]));
    dir.write("b.npy", &npy(&[2], &[H(0x3c00), H(0x4000)]));
    let r = assert_refused(
        &dir,
        "sub",
        &[],
        &[
            "same_datatype: A (a.npy) is float32 but B (b.npy) is float16; sub does not promote types: convert one \
             input so both have the same dtype (e.g. numpy's b.astype('float32'))",
            NO_LEVEL,
        ],
    );
    assert_seven_checks(&r, &CHECKS_NUMPY);
    assert_checks(&r, &[("datatype_supported", "pass"), ("same_datatype", "fail"), ("broadcastable", "pass")]);
    // Integers of one width and another signedness differ too, as do integers of two widths.
    for b in [npy(&[2], &[1u32, 2]), npy(&[2], &[1i64, 2])] {
        let dir = Dir::new();
        dir.write("a.npy", &npy(&[2], &[1i32, 2]));
        dir.write("b.npy", &b);
        let r = run_invalid(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]);
        assert_seven_checks(&r, &CHECKS_NUMPY);
        assert_checks(&r, &[("datatype_supported", "pass"), ("same_datatype", "fail"), ("broadcastable", "pass")]);
    }
}

#[test]
fn broadcastable_refusal() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 3], &[1.0f32; 6]));
    dir.write("b.npy", &npy(&[4], &[1.0f32; 4]));
    let r = assert_refused(
        &dir,
        "sub",
        &[],
        &[
            "broadcastable: shapes [2, 3] and [4] do not broadcast: dimension 1 from the end is 3 in A and 4 in B; \
             sizes must be equal or one of them 1 (reshape an input, e.g. add an axis)",
            NO_LEVEL,
        ],
    );
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
}

#[test]
fn same_sizes_refusal() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 3], &[1.0f32; 6]));
    dir.write("b.npy", &npy(&[3], &[1.0f32; 3]));
    let r = assert_refused(
        &dir,
        "sub",
        &["--broadcast", "none"],
        &[
            "same_sizes: --broadcast none needs identical shapes; A is [2, 3] and B is [3]. Use --broadcast numpy \
             to broadcast",
            NO_LEVEL,
        ],
    );
    assert_seven_checks(&r, &CHECKS_NONE);
    // With no common shape `broadcast` may be null; if present it names the mode.
    if r["broadcast"].is_object() {
        assert_eq!(r["broadcast"]["mode"], "none");
    }
}

#[test]
fn dimension_count_refusal() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[1, 1, 1, 1, 1, 1, 1, 1, 2], &[1u32, 2]));
    dir.write("b.npy", &npy(&[1], &[1u32]));
    let r = assert_refused(
        &dir,
        "sub",
        &[],
        &[
            "dimension_count: the output has rank 9, but sub at feature level 6_4 supports 1 to 8 dimensions; use \
             --feature-level none (ranks 0-32), or reshape the inputs",
            ONLY_NONE,
        ],
    );
    assert_checks(
        &r,
        &[("broadcastable", "pass"), ("dimension_count", "fail"), ("nonzero_sizes", "pass"), ("element_count", "pass")],
    );
}

#[test]
fn nonzero_sizes_refusal() {
    let dir = Dir::new();
    dir.write("a.npy", &npy::<f32>(&[0, 3], &[]));
    dir.write("b.npy", &npy(&[3], &[1.0f32; 3]));
    let r = assert_refused(
        &dir,
        "sub",
        &[],
        &[
            "nonzero_sizes: A (a.npy) has shape [0, 3] with a dimension of size 0; DirectML rejects empty tensors. \
             Use --feature-level none to allow them",
            ONLY_NONE,
        ],
    );
    assert_checks(
        &r,
        &[("broadcastable", "pass"), ("dimension_count", "pass"), ("nonzero_sizes", "fail"), ("element_count", "pass")],
    );
}

#[test]
fn element_count_refusal() {
    // [65536, 1] x [1, 65537] broadcasts to 4_295_032_832 > 2^32 - 1 elements; nothing may be
    // computed or allocated for it.
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[65536, 1], &vec![1u8; 65536]));
    dir.write("b.npy", &npy(&[1, 65537], &vec![1u8; 65537]));
    let r = assert_refused(
        &dir,
        "sub",
        &[],
        &[
            "element_count: the output [65536, 65537] has 4295032832 elements, more than DirectML's limit of \
             4294967295 (2^32 - 1); split the work or use --feature-level none",
            ONLY_NONE,
        ],
    );
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
}

#[test]
fn several_failures_are_all_reported() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 3], &[1.0f32; 6]));
    dir.write("b.npy", &npy(&[4], &[H(0); 4]));
    let r = assert_refused(
        &dir,
        "sqdiff",
        &["-f", "3_0"],
        &[
            "operator_available: sqdiff (DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE) needs feature level 3_1 or \
             newer; you asked for 3_0. Use --feature-level 3_1 or newer, or --feature-level none",
            "same_datatype: A (a.npy) is float32 but B (b.npy) is float16; sqdiff does not promote types: convert \
             one input so both have the same dtype (e.g. numpy's b.astype('float32'))",
            "broadcastable: shapes [2, 3] and [4] do not broadcast: dimension 1 from the end is 3 in A and 4 in B; \
             sizes must be equal or one of them 1 (reshape an input, e.g. add an axis)",
            NO_LEVEL,
        ],
    );
    assert_seven_checks(&r, &CHECKS_NUMPY);
}

// ---------------------------------------------------------------------------------------------
// What reaches the checks, and what they let through
// ---------------------------------------------------------------------------------------------

/// Files of a dtype tensorop does not compute on are read far enough to be refused by the checks
/// (exit 3), not failed as unreadable (exit 1), at a DirectML level and at level none.
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

/// Byte order is how a file stores its dtype, not part of it: a big-endian and a little-endian
/// float32 input pass `same_datatype` together.
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

/// Under `--broadcast none` the report lists `same_sizes` where `broadcastable` stands, and
/// identical shapes are computed.
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

/// `--feature-level none` records the three DirectML-only checks as skipped.
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

/// A level that does not parse is a usage error (exit 2): nothing is checked or written.
#[test]
fn unknown_feature_level_is_a_usage_error() {
    let dir = Dir::new();
    write_ab(&dir);
    for bad in ["7_0", "3_2", "0_9", "three", "", "DML_FEATURE_LEVEL_9_9"] {
        dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--feature-level", bad]).expect_code(2).expect_message();
        assert!(!dir.exists("out.npy"), "level {bad:?}");
    }
}
