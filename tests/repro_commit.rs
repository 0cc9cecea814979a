//! `--dxdispatch DIR`: the repro's final rename is part of the result's commit. A rename that
//! fails leaves a report that says so (status `error`, exit 1) and no hidden directory; with
//! `--fsync` the rename is made durable by syncing DIR's parent after it. Unix: the run is held
//! with SIGSTOP while the test puts a file into `DIR`, and `strace` shows the system calls.

use crate::common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Two float32 inputs of `n` elements each.
fn pair(dir: &Dir, n: usize) {
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 97) as f32).collect();
    dir.write("a.npy", &npy(&[n], &a));
    dir.write("b.npy", &npy(&[n], &b));
}

/// The hidden directory a repro of `r` is assembled in, once it exists.
fn hidden(dir: &Dir) -> Option<String> {
    dir.listing().into_iter().find(|name| name.starts_with(".r.") && name.ends_with(".tensorop-tmp"))
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill").args([sig, &pid.to_string()]).status().expect("run kill").success();
    assert!(ok, "kill {sig} {pid}");
}

#[test]
fn a_failing_final_rename_leaves_a_report_that_says_so() {
    // The run is stopped once its hidden directory exists, `r` is made with a file in it, and
    // the run goes on: the rename onto a directory that is not empty fails. A run too quick to
    // be caught is repeated with larger inputs.
    for log2 in [22, 24, 26] {
        let dir = Dir::new();
        pair(&dir, 1 << log2);
        let mut cmd = Command::new(bin());
        cmd.current_dir(dir.root())
            .args(["sub", "a.npy", "b.npy", "--dxdispatch", "r", "--report", "rep.json", "-q"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = spawn(&mut cmd, "tensorop --dxdispatch");
        let deadline = Instant::now() + Duration::from_secs(30);
        while hidden(&dir).is_none() && child.try_wait().expect("try_wait").is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        signal(child.id(), "-STOP");
        let caught = hidden(&dir).is_some() && !dir.exists("r");
        if caught {
            std::fs::create_dir(dir.path("r")).expect("make r");
            dir.write("r/keep.txt", b"mine");
        }
        signal(child.id(), "-CONT");
        let code = wait_limited(&mut child, "tensorop --dxdispatch");
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).expect("stderr");
        if !caught {
            assert_eq!(code, Some(0), "{stderr}");
            continue;
        }
        assert_eq!(code, Some(1), "a repro that did not reach its name fails the run: {stderr}");
        assert!(stderr.contains("cannot move the repro into place"), "{stderr}");
        let report = dir.report("rep.json");
        assert_eq!(report["status"], "error", "the report says what happened: {report}");
        assert!(report["error"].as_str().unwrap_or("").contains("cannot move the repro into place"), "{report}");
        assert!(report["output"].is_null(), "no result is reported as written: {report}");
        assert_eq!(dir.read("r/keep.txt"), b"mine", "the directory in the way is left as it was");
        assert_eq!(hidden(&dir), None, "no hidden directory is left behind");
        return;
    }
    panic!("the run finished before it could be stopped, even with 2^26-element inputs");
}

#[test]
fn fsync_makes_the_repros_rename_durable() {
    let test = "fsync_makes_the_repros_rename_durable";
    if Command::new("strace").arg("-V").output().is_err() {
        skip(test, "TENSOROP_REQUIRE_STRACE", "strace is not installed");
        return;
    }
    let dir = Dir::new();
    pair(&dir, 1000);
    let out = Command::new("strace")
        .current_dir(dir.root())
        .args(["-f", "-qq", "-o", "trace.txt", "-e", "trace=rename,renameat,renameat2,openat,open,fsync,fdatasync"])
        .arg(bin())
        .args(["sub", "a.npy", "b.npy", "--dxdispatch", "r", "--fsync", "-q"])
        .output()
        .expect("run strace");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = String::from_utf8(dir.read("trace.txt")).expect("utf-8 trace");
    let lines: Vec<&str> = trace.lines().collect();
    let renamed = lines
        .iter()
        .position(|l| l.contains("rename") && l.contains(".tensorop-tmp\"") && l.contains("\"r\""))
        .unwrap_or_else(|| panic!("no rename of the hidden directory to r:\n{trace}"));
    // After the rename: the parent (".") opened, and that descriptor synced.
    let synced_parent = lines[renamed..].iter().filter(|l| l.contains("open") && l.contains("\".\"")).any(|open| {
        let fd = open.rsplit("= ").next().unwrap_or("").trim();
        lines[renamed..].iter().any(|l| l.contains(&format!("fsync({fd})")) && l.trim_end().ends_with("= 0"))
    });
    assert!(synced_parent, "the parent directory is not synced after the rename:\n{trace}");
    assert!(dir.exists("r/expected.npy"));
}
