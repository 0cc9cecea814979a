//! Faults a pipeline meets: a full filesystem, a read-only output directory, two runs writing the
//! same output at once. Each must end with a clear error (or one complete result), the old output
//! intact and no temporary file left. The filesystem cases mount a small tmpfs, which needs root;
//! elsewhere they print why they skip.

mod common;

use common::{npy, Dir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for the test's lifetime.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, options: &str, test: &str) -> Option<Tmpfs> {
        let at = dir.join("mnt");
        std::fs::create_dir_all(&at).expect("mkdir mountpoint");
        let ok = Command::new("mount").args(["-t", "tmpfs", "-o", options, "tmpfs"]).arg(&at).status();
        if ok.is_ok_and(|s| s.success()) {
            Some(Tmpfs(at))
        } else {
            eprintln!("skipping {test}: cannot mount a tmpfs here (needs root)");
            None
        }
    }

    fn remount(&self, options: &str) {
        let ok = Command::new("mount").args(["-o", &format!("remount,{options}")]).arg(&self.0).status();
        assert!(ok.is_ok_and(|s| s.success()), "remount {options}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn listing(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into())
        .collect();
    v.sort();
    v
}

fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(common::bin()).current_dir(dir).args(args).output().expect("run tensorop");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn full_filesystem_is_an_error_and_keeps_the_old_output() {
    let dir = Dir::new();
    let Some(fs) = Tmpfs::mount(dir.root(), "size=64k", "full_filesystem_is_an_error_and_keeps_the_old_output") else {
        return;
    };
    dir.write("a.npy", &npy(&[100_000], &vec![1.0f32; 100_000]));
    std::fs::write(fs.0.join("out.npy"), b"old result").expect("old output");
    let out = fs.0.join("out.npy");
    let (code, err) = run(dir.root(), &["sub", "a.npy", "a.npy", "-o", out.to_str().expect("utf-8 path")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("No space left"), "{err}");
    assert!(err.contains("out.npy"), "the message names the output: {err}");
    assert_eq!(std::fs::read(&out).expect("old output"), b"old result");
    assert_eq!(listing(&fs.0), vec!["out.npy"], "a temporary file was left behind");
}

#[test]
fn read_only_output_directory_is_an_error() {
    let dir = Dir::new();
    let Some(fs) = Tmpfs::mount(dir.root(), "size=1m", "read_only_output_directory_is_an_error") else {
        return;
    };
    std::fs::write(fs.0.join("out.npy"), b"old result").expect("old output");
    fs.remount("ro");
    dir.write("a.npy", &npy(&[4], &[1.0f32, 2.0, 3.0, 4.0]));
    let out = fs.0.join("out.npy");
    let (code, err) = run(dir.root(), &["sub", "a.npy", "a.npy", "-o", out.to_str().expect("utf-8 path")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("Read-only file system"), "{err}");
    assert_eq!(std::fs::read(&out).expect("old output"), b"old result");
    assert_eq!(listing(&fs.0), vec!["out.npy"]);
}

#[test]
fn concurrent_writers_leave_one_complete_output() {
    let dir = Dir::new();
    let n = 2_000_000;
    dir.write("ones.npy", &npy(&[n], &vec![1.0f32; n]));
    dir.write("twos.npy", &npy(&[n], &vec![2.0f32; n]));
    for round in 0..5 {
        let spawn = |b: &str| {
            Command::new(common::bin())
                .current_dir(dir.root())
                .args(["sub", "ones.npy", b, "-o", "out.npy"])
                .spawn()
                .expect("start tensorop")
        };
        let (mut x, mut y) = (spawn("ones.npy"), spawn("twos.npy"));
        assert!(x.wait().expect("wait").success() && y.wait().expect("wait").success());
        let got = dir.output::<f32>("out.npy", &[n]);
        let first = got[0];
        assert!(first == 0.0 || first == -1.0, "round {round}: unexpected value {first}");
        assert!(got.iter().all(|&v| v == first), "round {round}: the output mixes both runs");
        assert_eq!(listing(dir.root()), vec!["ones.npy", "out.npy", "twos.npy"], "round {round}");
    }
}
