//! End-to-end tests against the real binary in temporary directories. Results: values, shapes, the
//! output format, threads, and every dtype's arithmetic (integer wrap, IEEE float32/float64,
//! float16 rounding), input byte orders, storage orders and `.npy` versions.

use crate::common::*;

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
// Shapes at the checks' edges: scalars, empty outputs, padded and the largest ranks
// ---------------------------------------------------------------------------------------------

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

/// The output of the largest rank each level allows: 8 at a DirectML level, 32 at level none.
#[test]
fn outputs_of_the_largest_ranks_are_computed() {
    let dir = Dir::new();
    let s8 = [1, 2, 1, 1, 1, 1, 1, 3];
    dir.write("a.npy", &npy(&s8, &[1u32, 2, 3, 4, 5, 6]));
    dir.write("b.npy", &npy(&[1], &[1u32]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]).ok();
    assert_eq!(dir.output::<u32>("out.npy", &s8), vec![0, 1, 2, 3, 4, 5]);

    let dir = Dir::new();
    let mut s32 = vec![1usize; 32];
    s32[0] = 2;
    s32[31] = 3;
    let a: Vec<i64> = (0..6).collect();
    dir.write("a.npy", &npy(&s32, &a));
    dir.write("b.npy", &npy(&[3], &[1i64, 1, 1]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "-f", "none"]).ok();
    assert_eq!(dir.output::<i64>("out.npy", &s32), vec![-1, 0, 1, 2, 3, 4]);
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

/// Inputs over the 32 MiB that backends hold whole, in each storage order: a Fortran-order one is
/// copied in C order tile by tile first; a C-order one, and a Fortran-order one with a single
/// dimension above 1 (whose storage is already in C order), are read as they are.
#[test]
fn large_inputs_in_either_storage_order_give_the_same_result() {
    let dir = Dir::new();
    // [2, 2100, 2100] float32 in Fortran order (35 MB); B broadcasts along the middle axis.
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
    // The same values in C order: no copy, the same result.
    dir.write("c.npy", &npy(&sa, &a));
    dir.run(&["sqdiff", "c.npy", "b.npy", "-o", "out_c.npy"]).ok();
    assert_same_bits(&dir.output::<f32>("out_c.npy", &sa), &expected);
    // A [9_000_000, 1] float32 (36 MB) whose header says Fortran order.
    let sf = [9_000_000usize, 1];
    let f: Vec<f32> = (0..sf[0]).map(|i| (i % 7919) as f32).collect();
    dir.write("f.npy", &npy_with(&sf, &f, Layout::fortran()));
    dir.write("one.npy", &npy(&[1usize], &[0.5f32]));
    dir.run(&["sub", "f.npy", "one.npy", "-o", "out_f.npy"]).ok();
    let expected: Vec<f32> = f.iter().map(|x| x - 0.5).collect();
    assert_same_bits(&dir.output::<f32>("out_f.npy", &sf), &expected);
    let names = ["a.npy", "b.npy", "c.npy", "f.npy", "one.npy", "out.npy", "out_c.npy", "out_f.npy", "r.json"];
    assert_eq!(dir.listing(), names.iter().map(|s| s.to_string()).collect());
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

/// DirectML's float16 results as measured on a device without native 16-bit arithmetic, and the
/// other rules' on the same inputs.
#[test]
fn float16_toward_zero_rules_truncate_and_overflow_by_release() {
    // 1 - 2^-24, (1 + 2^-9) - 2^-11 (a tie), 65504 - (-1), -65504 - 1, 65504 - 0, subnormals,
    // -1 + 2^-24, NaN, infinity.
    let a = [H(0x3c00), H(0x3c02), H(0x7bff), H(0xfbff), H(0x7bff), H(0x0003), H(0xbc00), H(0x7e00), H(0x7c00)];
    let b = [H(0x0001), H(0x1000), H(0xbc00), H(0x3c00), H(0x0000), H(0x0001), H(0x8001), H(0x3c00), H(0x3c00)];
    let inf = [H(0x3bff), H(0x3c01), H(0x7c00), H(0xfc00), H(0x7bff), H(0x0002), H(0xbbff), H(0x7e00), H(0x7c00)];
    // DirectML 1.8 to 1.12: the same, but 65504 - (-1) saturates at 65504.
    let sat = [H(0x3bff), H(0x3c01), H(0x7bff), H(0xfbff), H(0x7bff), H(0x0002), H(0xbbff), H(0x7e00), H(0x7c00)];
    let nearest = [H(0x3c00), H(0x3c02), H(0x7bff), H(0xfbff), H(0x7bff), H(0x0002), H(0xbc00), H(0x7e00), H(0x7c00)];
    let n = a.len();
    for rule in [&["--float16", "toward-zero-inf"][..], &["--float16", "d3d"], &["--directml-version", "1.13"]] {
        assert_same_bits(&run_op("sub", &[n], &a, &[n], &b, rule), &inf);
    }
    for rule in [&["--float16", "toward-zero-saturate"][..], &["--directml-version", "1.8.0"]] {
        assert_same_bits(&run_op("sub", &[n], &a, &[n], &b, rule), &sat);
    }
    assert_same_bits(&run_op("sub", &[n], &a, &[n], &b, &[]), &nearest);
    assert_same_bits(&run_op("sub", &[n], &a, &[n], &b, &["--float16", "nearest"]), &nearest);
    assert_same_bits(&run_op("sub", &[n], &a, &[n], &b, &["--float16", "per-step"]), &nearest);
    // sqdiff: the square rounded to float32, then truncated. (1 + 23 * 2^-10)^2 lies more than
    // half a float16 ulp above 1 + 46 * 2^-10; 300^2 is past 65504; (3 * 2^-13)^2 = 2.25 * 2^-24.
    let a = [H(0x3c17), H(0x5cb0), H(0x0e00), H(0x3c02)];
    let b = [H(0x0000), H(0x0000), H(0x0000), H(0x1000)];
    let sq = |extra: &[&str]| run_op("sqdiff", &[4], &a, &[4], &b, extra);
    assert_same_bits(&sq(&["--float16", "toward-zero-inf"]), &[H(0x3c2e), H(0x7c00), H(0x0002), H(0x3c03)]);
    assert_same_bits(&sq(&["--float16", "toward-zero-saturate"]), &[H(0x3c2e), H(0x7bff), H(0x0002), H(0x3c03)]);
    assert_same_bits(&sq(&[]), &[H(0x3c2f), H(0x7c00), H(0x0002), H(0x3c03)]);
    // per-step rounds (1 + 2^-9) - 2^-11 to 1 + 2^-9 first: squared, 1 + 2^-8 + 2^-18.
    assert_same_bits(&sq(&["--float16", "per-step"]), &[H(0x3c2f), H(0x7c00), H(0x0002), H(0x3c04)]);
    assert_eq!(sq(&["--float16", "per-step"]), sq(&["--half-precision"]));
}

#[test]
fn half_precision_and_another_float16_rule_are_a_usage_error() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[1], &[H(0x3c00)]));
    for rule in ["nearest", "toward-zero-inf", "toward-zero-saturate"] {
        dir.run(&["sqdiff", "a.npy", "a.npy", "-o", "c.npy", "--half-precision", "--float16", rule])
            .expect_code(2)
            .stderr_mentions(&format!("--half-precision is --float16 per-step, which contradicts --float16 {rule}"));
    }
    dir.run(&["sqdiff", "a.npy", "a.npy", "-o", "c.npy", "--float16", "toward-zero"]).expect_code(2);
    assert!(!dir.exists("c.npy"), "a usage error writes nothing");
    dir.run(&["sqdiff", "a.npy", "a.npy", "-o", "c.npy", "--half-precision", "--float16", "per-step"]).ok();
}

#[test]
fn half_precision_does_not_change_float16_sub() {
    let a = [H(0x3c01), H(0x3c02)];
    let b = [H(0x1000), H(0x1000)];
    let plain = run_op("sub", &[2], &a, &[2], &b, &[]);
    let half = run_op("sub", &[2], &a, &[2], &b, &["--half-precision"]);
    assert_eq!(plain, half);
}
