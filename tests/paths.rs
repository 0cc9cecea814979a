//! End-to-end tests: paths compared as the files they name. However `--report` spells an input,
//! the result or a file a DxDispatch model reads or writes (relative, absolute, `./`, `a/../`,
//! doubled separators, symbolic and hard links, `/proc/self/fd/N`, `/proc/self/cwd/...`, and
//! on Windows other case and `\\?\`), the run is a usage error (exit 2) before any work, and
//! every byte is unchanged.

use crate::common::containers::{f32_bytes, safetensors};
use crate::common::*;
use std::collections::BTreeMap;

/// Every file in `dir` with its bytes, to show that a refused run changed nothing.
fn snapshot(dir: &Dir) -> BTreeMap<String, Vec<u8>> {
    dir.listing()
        .into_iter()
        .filter(|n| dir.path(n).is_file())
        .map(|n| {
            let bytes = dir.read(&n);
            (n, bytes)
        })
        .collect()
}

/// Spellings of `name` in `dir`, each naming the same file (or the same new name).
fn spellings(dir: &Dir, name: &str) -> Vec<String> {
    std::fs::create_dir_all(dir.path("sub")).expect("mkdir");
    let abs = dir.path(name).display().to_string();
    let sep = std::path::MAIN_SEPARATOR;
    let mut all = vec![
        name.to_string(),
        format!(".{sep}{name}"),
        format!("sub{sep}..{sep}{name}"),
        format!(".{sep}{sep}{name}"),
        abs.clone(),
    ];
    if cfg!(unix) {
        all.push(format!("/proc/self/cwd/{name}"));
    }
    if cfg!(windows) {
        all.push(name.to_uppercase());
        all.push(format!(r"\\?\{abs}"));
    }
    all
}

/// Runs `args` in `dir`, expecting a usage error that names `--report`, with every file as
/// before.
fn refused(dir: &Dir, args: &[&str], mentions: &str) {
    let before = snapshot(dir);
    dir.run(args).expect_code(2).stderr_mentions("--report").stderr_mentions(mentions);
    assert_eq!(snapshot(dir), before, "`tensorop {}` changed a file", args.join(" "));
}

#[test]
fn a_report_never_replaces_an_input_however_spelt() {
    let dir = Dir::new();
    write_ab(&dir);
    for input in ["a.npy", "b.npy"] {
        for spelt in spellings(&dir, input) {
            let which = if input == "a.npy" { "input A" } else { "input B" };
            refused(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", &spelt], which);
            refused(&dir, &["sqdiff", "a.npy", "b.npy", "--dry-run", "--report", &spelt], which);
            refused(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--part", "1/2", "--report", &spelt], which);
        }
    }
    assert!(!dir.exists("out.npy"));
}

#[test]
fn a_report_never_replaces_the_result_however_spelt() {
    let dir = Dir::new();
    write_ab(&dir);
    // The result not made yet, then made by an earlier run.
    for existing in [false, true] {
        if existing {
            dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]).ok();
        }
        for spelt in spellings(&dir, "out.npy") {
            refused(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", &spelt], "the result");
            refused(&dir, &["sub", "a.npy", "b.npy", "-o", &spelt, "--report", "out.npy"], "the result");
            refused(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--dry-run", "--report", &spelt], "the result");
        }
        assert_eq!(dir.exists("out.npy"), existing);
    }
}

#[test]
#[cfg(unix)]
fn links_and_descriptors_name_the_file_they_lead_to() {
    use std::os::unix::fs::symlink;
    let dir = Dir::new();
    write_ab(&dir);
    symlink("a.npy", dir.path("soft-a")).expect("symlink");
    std::fs::hard_link(dir.path("a.npy"), dir.path("hard-a")).expect("link");
    symlink("out.npy", dir.path("soft-out")).expect("symlink");
    refused(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "soft-a"], "input A");
    refused(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "hard-a"], "input A");
    // A link to the result that does not exist yet, which writing the result would complete.
    refused(&dir, &["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "soft-out"], "the result");
    // A descriptor the shell opened on input B: `tensorop ... --report /proc/self/fd/3 3<b.npy`.
    let before = snapshot(&dir);
    let out = std::process::Command::new("sh")
        .current_dir(dir.root())
        .args(["-c", "exec 3<b.npy; exec \"$0\" sub a.npy b.npy -o out.npy --report /proc/self/fd/3"])
        .arg(bin())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run sh");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("input B"));
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn standard_streams_are_the_files_they_are_connected_to() {
    let dir = Dir::new();
    write_ab(&dir);
    // `tensorop sub a.npy - --report b.npy < b.npy`: B is read from the file the report names.
    let before = snapshot(&dir);
    dir.run_redirected(&["sub", "a.npy", "-", "-o", "out.npy", "--report", "b.npy"], "b.npy")
        .expect_code(2)
        .stderr_mentions("input B (standard input)");
    assert_eq!(snapshot(&dir), before);
    // `tensorop sub a.npy b.npy --report out.npy > out.npy`: the result goes where the report would.
    let file = std::fs::File::create(dir.path("out.npy")).expect("create");
    let out = std::process::Command::new(bin())
        .current_dir(dir.root())
        .args(["sub", "a.npy", "b.npy", "--report", "out.npy"])
        .stdin(std::process::Stdio::null())
        .stdout(file)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the result (standard output)"));
    assert_eq!(dir.read("out.npy"), b"");
    // A report beside them is fine, and so is Windows' null device name for both (on Unix, one
    // device written twice is in targets::output_and_report_to_one_path_is_a_usage_error, with
    // private nodes, not the real /dev/null).
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "r.json"]).ok();
    if cfg!(windows) {
        dir.run(&["sub", "a.npy", "b.npy", "-o", "NUL", "--report", "NUL"]).ok();
    }
}

#[test]
fn containers_and_dxdispatch_directories_are_guarded_too() {
    let dir = Dir::new();
    let member = f32_bytes(&[1.0, 2.0]);
    let st = safetensors(&[("w", "F32", &[2], member.clone())]);
    dir.write("a.safetensors", &st);
    dir.write("b.safetensors", &st);
    refused(
        &dir,
        &["sub", "a.safetensors", "b.safetensors", "-o", "c.safetensors", "--report", "./b.safetensors"],
        "input B",
    );
    refused(
        &dir,
        &["sub", "a.safetensors", "b.safetensors", "-o", "c.safetensors", "--report", "c.safetensors"],
        "the result",
    );
    write_ab(&dir);
    let sep = std::path::MAIN_SEPARATOR;
    for report in
        [format!("repro{sep}r.json"), format!("repro{sep}expected.npy"), format!(".{sep}repro{sep}{sep}r.json")]
    {
        refused(
            &dir,
            &["sub", "a.npy", "b.npy", "-f", "3_1", "--dxdispatch", "repro", "--report", &report],
            "--dxdispatch",
        );
    }
    assert!(!dir.exists("repro"));
}

#[test]
fn run_never_reports_over_the_model_or_its_files() {
    let dir = Dir::new();
    write_ab(&dir);
    let model = subtract_model(r#"{ "sourcePath": "a.npy" }"#, r#"{ "valueCount": 4, "value": 1 }"#, "result.npy");
    let a4 = npy(&[4], &[1.0f32, 2.0, 3.0, 4.0]);
    dir.write("a.npy", &a4);
    dir.write("model.json", model.as_bytes());
    std::fs::create_dir(dir.path("sub")).expect("mkdir");
    let sep = std::path::MAIN_SEPARATOR;
    refused(&dir, &["run", "model.json", "--report", &format!(".{sep}model.json")], "the model");
    refused(&dir, &["run", "model.json", "--report", &format!("sub{sep}..{sep}a.npy")], "resource 'A'");
    refused(&dir, &["run", "model.json", "--report", "result.npy"], "writeFile");
    refused(&dir, &["run", "model.json", "--dry-run", "--report", "model.json"], "the model");
    assert!(!dir.exists("result.npy"));
    dir.run(&["run", "model.json", "--report", "r.json"]).ok();
    assert!(dir.exists("result.npy") && dir.exists("r.json"));
}
