//! End-to-end tests against the real binary in temporary directories. The seven checks, each
//! failing on its own, and how `--feature-level` selects the support row.

use crate::common::*;

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
