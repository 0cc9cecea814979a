//! Runs the NumPy cross-checks (`tests/crosscheck.py`; `tests/crosscheck_compare.py` for the
//! comparison core behind `compare` and `--verify`; `tests/crosscheck_conformant.py` for what any
//! conformant DirectML may give; `tests/crosscheck_dxdispatch.py` for
//! `tensorop run`; `tests/crosscheck_containers.py` for `.npz` and `.safetensors` pairs, which
//! also needs the `safetensors` Python package) and the fixture generator
//! (`testdata/make_fixtures.py`). They need python3 with numpy; without them these tests print why
//! and pass, unless `TENSOROP_REQUIRE_NUMPY=1` (as CI sets), in which case they fail.

use crate::common::{bin, manifest_dir, python_modules_available};
use std::process::Command;

/// True when the test should go on; prints the reason and returns false when it should skip.
/// Panics instead of skipping when TENSOROP_REQUIRE_NUMPY=1.
fn need_numpy(test: &str) -> bool {
    need_python(test, &["numpy"])
}

/// As [`need_numpy`], for python3 with every one of the packages `modules`.
fn need_python(test: &str, modules: &[&str]) -> bool {
    match python_modules_available(modules) {
        Ok(()) => true,
        Err(why) => {
            if std::env::var("TENSOROP_REQUIRE_NUMPY").as_deref() == Ok("1") {
                panic!("{test}: {why}, and TENSOROP_REQUIRE_NUMPY=1 forbids skipping");
            }
            eprintln!("skipping {test}: {why} (set TENSOROP_REQUIRE_NUMPY=1 to make this a failure)");
            false
        }
    }
}

/// Runs `tests/SCRIPT` on the binary with `args`; it must succeed and close with
/// `N passed, 0 failed`.
fn run_crosscheck(script: &str, args: &[&str]) {
    let path = manifest_dir().join("tests").join(script);
    let out = Command::new("python3")
        .arg(&path)
        .arg(bin())
        .args(args)
        .current_dir(manifest_dir())
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(out.status.success(), "{script} failed ({}):\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains(" passed, 0 failed"), "unexpected {script} summary:\n{stdout}");
}

#[test]
fn crosscheck_against_numpy() {
    if need_numpy("crosscheck_against_numpy") {
        run_crosscheck("crosscheck.py", &["--seed", "1", "--cases", "300"]);
    }
}

/// The comparison core (`tensorop compare --json`) against NumPy and exact rationals: counts,
/// tolerances, ULP distances, the largest difference and the first difference, every dtype.
#[test]
fn compare_crosscheck_against_numpy() {
    if need_numpy("compare_crosscheck_against_numpy") {
        run_crosscheck("crosscheck_compare.py", &["--seed", "5", "--cases", "150"]);
    }
}

/// `--device-dependence` and `compare --conformant` against a NumPy model of DirectML's float16
/// rules: the counts per cause, every rule's result accepted, a one-step change refused.
#[test]
fn conformant_crosscheck_against_numpy() {
    if need_numpy("conformant_crosscheck_against_numpy") {
        run_crosscheck("crosscheck_conformant.py", &["--seed", "3", "--cases", "40"]);
    }
}

#[test]
fn fixtures_regenerate_identically() {
    if !need_numpy("fixtures_regenerate_identically") {
        return;
    }
    let testdata = manifest_dir().join("testdata");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = Command::new("python3")
        .arg(testdata.join("make_fixtures.py"))
        .arg(tmp.path())
        .output()
        .expect("run make_fixtures.py");
    assert!(out.status.success(), "make_fixtures.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut generated: Vec<String> =
        std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    generated.sort();
    assert!(!generated.is_empty(), "make_fixtures.py wrote nothing");
    for name in &generated {
        let fresh = std::fs::read(tmp.path().join(name)).unwrap();
        let committed = std::fs::read(testdata.join(name))
            .unwrap_or_else(|e| panic!("testdata/{name} is generated but missing: {e}"));
        assert_eq!(fresh, committed, "testdata/{name} differs from what make_fixtures.py writes; rerun it");
    }
    // Every committed .npy is one the script makes.
    for entry in std::fs::read_dir(&testdata).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".npy") {
            assert!(generated.contains(&name), "testdata/{name} is not produced by make_fixtures.py");
        }
    }
}

#[test]
fn run_crosscheck_against_a_numpy_reading_of_dxdispatch() {
    if need_numpy("run_crosscheck_against_a_numpy_reading_of_dxdispatch") {
        run_crosscheck("crosscheck_dxdispatch.py", &["--seed", "1", "--cases", "150"]);
    }
}

#[test]
fn container_crosscheck_against_numpy_and_safetensors() {
    if need_python("container_crosscheck_against_numpy_and_safetensors", &["numpy", "safetensors"]) {
        run_crosscheck("crosscheck_containers.py", &["--seed", "1", "--cases", "120"]);
    }
}
