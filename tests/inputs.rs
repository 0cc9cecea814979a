//! End-to-end tests against the real binary in temporary directories. Inputs: malformed files (exit
//! 1, naming the file), standard input and standard output.

use crate::common::*;
use std::io::Read;
use std::process::{Command, Stdio};

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
    let mut cmd = Command::new(bin());
    cmd.args(["sub", "a.npy", "b.npy", "-o", "-"])
        .current_dir(dir.root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn(&mut cmd, "tensorop sub -o -");
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
