//! Signals end a run cleanly: the temporary output is removed (a named one; an unnamed one
//! vanishes with the process), the target is left as it was, and the exit status is 128 + the
//! signal number (130 for Ctrl-C).

use crate::common;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Two small uint8 inputs that broadcast to a 2 GiB output: long enough to interrupt.
fn long_run(dir: &common::Dir, named: bool) -> std::process::Child {
    let header = |shape: &str| common::header_dict("|u1", false, shape);
    dir.write("a.npy", &common::npy_raw((1, 0), &header("(32768, 1)"), &vec![7u8; 32768]));
    dir.write("b.npy", &common::npy_raw((1, 0), &header("(1, 65536)"), &vec![3u8; 65536]));
    Command::new(common::bin())
        .current_dir(dir.root())
        .args(["sub", "a.npy", "b.npy", "-o", "out.npy", "--feature-level", "none", "--threads", "1"])
        .env("TENSOROP_NAMED_TEMPFILES", if named { "1" } else { "0" })
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tensorop")
}

fn interrupt_once_writing(signal: &str, expected: i32, named: bool) {
    let dir = common::Dir::new();
    std::fs::write(dir.path("out.npy"), b"previous result").expect("write old output");
    let mut child = long_run(&dir, named);
    let start = Instant::now();
    // Wait until the temporary output is open, so the signal lands mid-write.
    while !common::writing_output_in(child.id(), dir.root()) {
        assert!(start.elapsed() < Duration::from_secs(20), "no temporary output appeared");
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended ({status}) before it could be interrupted");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let pid = child.id().to_string();
    let sent = Command::new("kill").args([signal, &pid]).status().expect("run kill");
    assert!(sent.success());
    let out = child.wait_with_output().expect("wait for tensorop");
    assert_eq!(out.status.code(), Some(expected), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    // Named as users know signals: `interrupted by SIGINT (Ctrl-C)`, not `signal 2`.
    let name = match signal {
        "-INT" => "SIGINT (Ctrl-C)",
        "-TERM" => "SIGTERM",
        _ => "SIGHUP",
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("interrupted by {name}; no output was written")), "{stderr}");
    let left: Vec<String> = dir.listing().into_iter().filter(|n| !n.ends_with(".npy")).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(dir.read("out.npy"), b"previous result", "the old output was touched");
}

#[test]
fn ctrl_c_removes_the_temporary_output_and_exits_130() {
    interrupt_once_writing("-INT", 130, false);
    interrupt_once_writing("-INT", 130, true);
}

#[test]
fn sigterm_removes_the_temporary_output_and_exits_143() {
    interrupt_once_writing("-TERM", 143, false);
    interrupt_once_writing("-TERM", 143, true);
}

#[test]
fn sighup_removes_the_temporary_output_and_exits_129() {
    interrupt_once_writing("-HUP", 129, false);
    interrupt_once_writing("-HUP", 129, true);
}
