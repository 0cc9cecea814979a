//! Faults a pipeline meets: a full filesystem, a read-only output directory, two runs writing the
//! same output at once. Each must end with a clear error (or one complete result), the old output
//! intact and no temporary file left. The filesystem cases mount a small tmpfs, which needs root;
//! elsewhere they print why they skip.

use crate::common::{self, gpu_available, npy, Dir};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::thread;

/// A tmpfs mounted for the test's lifetime.
#[cfg(unix)]
struct Tmpfs(std::path::PathBuf);

#[cfg(unix)]
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

#[cfg(unix)]
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

#[cfg(unix)]
fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(common::bin()).current_dir(dir).args(args).output().expect("run tensorop");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The filesystem fills up while the output is written, after the up-front space check passed
/// (here by tensorop's own C-order copy of a large Fortran-order input, with `TMPDIR` on the same
/// filesystem; another writer would do the same): exit 1 naming the output, the old output
/// intact, no temporary file left.
#[test]
#[cfg(unix)] // mounts a tmpfs (mount(8))
fn full_filesystem_is_an_error_and_keeps_the_old_output() {
    let dir = Dir::new();
    let Some(fs) = Tmpfs::mount(dir.root(), "size=48m", "full_filesystem_is_an_error_and_keeps_the_old_output") else {
        return;
    };
    // 33.6 MB, above the 32 MiB up to which Fortran-order inputs are held in memory.
    let shape = [2048, 4100];
    let n = shape[0] * shape[1];
    dir.write("a.npy", &common::npy_with(&shape, &vec![1.0f32; n], common::Layout::fortran()));
    dir.write("b.npy", &npy(&[1, shape[1]], &vec![0.5f32; shape[1]]));
    std::fs::write(fs.0.join("out.npy"), b"old result").expect("old output");
    let out = fs.0.join("out.npy");
    let output = Command::new(common::bin())
        .current_dir(dir.root())
        .env("TMPDIR", &fs.0)
        .args(["sub", "a.npy", "b.npy", "-o", out.to_str().expect("utf-8 path")])
        .output()
        .expect("run tensorop");
    let (code, err) = (output.status.code(), String::from_utf8_lossy(&output.stderr));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("No space left"), "{err}");
    assert!(err.contains("out.npy"), "the message names the output: {err}");
    assert_eq!(std::fs::read(&out).expect("old output"), b"old result");
    assert_eq!(listing(&fs.0), vec!["out.npy"], "a temporary file was left behind");
}

#[test]
#[cfg(unix)] // mounts a tmpfs (mount(8))
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
            let mut cmd = Command::new(common::bin());
            cmd.current_dir(dir.root()).args(["sub", "ones.npy", b, "-o", "out.npy"]);
            common::spawn(&mut cmd, "tensorop sub")
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

// ---------------------------------------------------------------------------------------------
// Inputs changed during a run
// ---------------------------------------------------------------------------------------------

/// `n` float32 values `0, 1, 2, ...` times `scale`.
fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| i as f32 * scale).collect()
}

/// Writes `file` (a whole `.npy`) to `path` via a sibling and a rename, as an editor or a
/// download tool would replace it. Returns false where the system refuses to rename over a file
/// another process has open (Wine does; Windows 10 and later allow it to files opened, as
/// tensorop opens its inputs, with delete sharing): `test` is then skipped, printing why.
fn replace_by_rename(path: &Path, file: &[u8], test: &str) -> bool {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, file).expect("write the replacement");
    match std::fs::rename(&tmp, path) {
        Ok(()) => true,
        Err(e) if cfg!(windows) && e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!("skipping {test}: this system does not rename over a file that is open ({e})");
            false
        }
        Err(e) => panic!("rename the replacement over the input: {e}"),
    }
}

/// A run whose output goes to a pipe this test reads. The CPU backend computes at most
/// `threads * 2 + 2` chunks of 256 KiB ahead of the writer, and the writer blocks once the pipe
/// is full, so while the test reads nothing the process holds still having read no more than
/// about 2 MiB of its inputs (with `--threads 2`): a change made to a larger input then lands
/// in the middle of the read, at a known point, on any machine however fast or loaded.
struct Streaming {
    child: Child,
    stdout: ChildStdout,
    stderr: thread::JoinHandle<String>,
    got: Vec<u8>,
}

impl Streaming {
    fn start(dir: &Path, args: &[&str]) -> Streaming {
        let mut cmd = Command::new(common::bin());
        cmd.current_dir(dir)
            .args(args)
            .args(["-o", "-", "--threads", "2"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = common::spawn(&mut cmd, "tensorop (streaming)");
        let stdout = child.stdout.take().expect("stdout pipe");
        let mut stderr = child.stderr.take().expect("stderr pipe");
        let stderr = thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Streaming { child, stdout, stderr, got: Vec::new() }
    }

    /// Reads until at least `n` bytes of output have arrived: the header and the first
    /// results, which the process computed from the first bytes of its inputs.
    fn read_at_least(&mut self, n: usize) {
        let mut buf = vec![0u8; 4096];
        while self.got.len() < n {
            let k = self.stdout.read(&mut buf).expect("read tensorop's output");
            assert!(k > 0, "the output ended after {} bytes, before the test changed the input", self.got.len());
            self.got.extend_from_slice(&buf[..k]);
        }
    }

    /// Reads the rest of the output and waits: (exit code, all output, stderr).
    fn finish(mut self) -> (Option<i32>, Vec<u8>, String) {
        self.stdout.read_to_end(&mut self.got).expect("read tensorop's output");
        let code = common::wait_limited(&mut self.child, "tensorop (streaming)");
        (code, self.got, self.stderr.join().expect("stderr reader"))
    }
}

/// Input A, 16 MiB, is cut to half its data while the process is reading its first chunks: the
/// positional reads (no memory map, so no SIGBUS) come up short and the run fails, naming the
/// input. What reached standard output before that cannot be taken back; it is a strict prefix
/// of a result, and the exit status says it is incomplete.
#[test]
fn input_truncated_mid_read_is_an_error_not_a_crash() {
    let dir = Dir::new();
    let n = 4 << 20;
    dir.write("a.npy", &npy(&[n], &ramp(n, 1.0)));
    dir.write("b.npy", &npy(&[n], &vec![0.5f32; n]));
    let full_len = std::fs::metadata(dir.path("a.npy")).expect("stat a.npy").len();
    let mut run = Streaming::start(dir.root(), &["sub", "a.npy", "b.npy"]);
    run.read_at_least(128 + 4);
    let f = std::fs::OpenOptions::new().write(true).open(dir.path("a.npy")).expect("open a.npy");
    f.set_len(full_len - (n as u64 * 4) / 2).expect("truncate a.npy");
    let (code, out, err) = run.finish();
    assert_eq!(code, Some(1), "a shrunken input must fail the run (None = killed by a signal): {err}");
    assert!(err.contains("a.npy") && err.contains("became shorter"), "the message names the input: {err}");
    assert!(out.len() < 128 + n * 4, "a complete result was written from an incomplete input");
    assert_eq!(std::fs::metadata(dir.path("a.npy")).expect("a.npy").len(), full_len - (n as u64 * 2));
}

/// Input A is replaced (another file renamed over its path) while the process is reading it:
/// the process keeps reading the file it opened, so the result is entirely the old A's, never a
/// mix of the two.
#[test]
fn input_replaced_mid_read_gives_the_old_inputs_whole_result() {
    let dir = Dir::new();
    let n = 4 << 20;
    let (old, b) = (ramp(n, 1.0), vec![0.5f32; n]);
    dir.write("a.npy", &npy(&[n], &old));
    dir.write("b.npy", &npy(&[n], &b));
    let mut run = Streaming::start(dir.root(), &["sub", "a.npy", "b.npy"]);
    run.read_at_least(128 + 4);
    let replaced = replace_by_rename(
        &dir.path("a.npy"),
        &npy(&[n], &vec![-7.0f32; n]),
        "input_replaced_mid_read_gives_the_old_inputs_whole_result",
    );
    let (code, out, err) = run.finish();
    if !replaced {
        return;
    }
    assert_eq!(code, Some(0), "{err}");
    let got: Vec<f32> = common::parse_npy(&out).output_values(&[n]);
    let expected: Vec<f32> = old.iter().zip(&b).map(|(x, y)| x - y).collect();
    common::assert_same_bits(&got, &expected);
}

/// A run of `tensorop sub a.npy - -o out.npy` whose input B comes through a pipe the test feeds
/// in two parts. The pipeline opens A and checks its size against its header, then reads B's
/// header and copies B's data, and only after both are open reads any of A's data. A write into
/// a pipe returns once all but the pipe's capacity (64 KiB, at most 1 MiB) has been taken, so
/// when the first 2 MiB of B have been written the process is past A's checks and has not read
/// A's data: the test can change A at that point, however fast or slow the machine.
struct HeldOnB {
    child: Child,
    stdin: ChildStdin,
    rest: Vec<u8>,
}

impl HeldOnB {
    fn start(dir: &Path, b: &[u8], args: &[&str], env: &[(&str, &str)]) -> HeldOnB {
        let mut cmd = Command::new(common::bin());
        cmd.current_dir(dir).args(["sub", "a.npy", "-", "-o", "out.npy"]).args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = common::spawn(&mut cmd, "tensorop (held on B)");
        let mut stdin = child.stdin.take().expect("stdin pipe");
        let cut = 2 << 20;
        assert!(b.len() > cut + (1 << 20), "B must be larger than what the pipe holds");
        stdin.write_all(&b[..cut]).expect("feed the first part of B");
        HeldOnB { child, stdin, rest: b[cut..].to_vec() }
    }

    fn finish(mut self) -> (Option<i32>, String) {
        self.stdin.write_all(&self.rest).expect("feed the rest of B");
        drop(self.stdin);
        let mut err = String::new();
        self.child.stderr.take().expect("stderr").read_to_string(&mut err).expect("read stderr");
        (common::wait_limited(&mut self.child, "tensorop (B from a pipe)"), err)
    }
}

/// Input A is cut to half its data after the process opened and checked it: the run fails with
/// a message naming A, the old output is untouched and no temporary file is left, on the CPU
/// backend and on the GPU backend.
#[test]
fn input_truncated_during_a_run_leaves_the_old_output_and_no_temp_file() {
    let test = "input_truncated_during_a_run_leaves_the_old_output_and_no_temp_file";
    let n = 1 << 20;
    let a = npy(&[n], &ramp(n, 1.0));
    let b = npy(&[n], &vec![0.5f32; n]);
    let mut backends = vec!["cpu"];
    if gpu_available(test) {
        backends.push("wgpu");
    }
    for backend in backends {
        let dir = Dir::new();
        dir.write("a.npy", &a);
        dir.write("out.npy", b"old result");
        // Small GPU chunks, so that A is read chunk by chunk, not in one upload.
        let run = HeldOnB::start(dir.root(), &b, &["--backend", backend], &[("TENSOROP_WGPU_CHUNK_BYTES", "65536")]);
        let f = std::fs::OpenOptions::new().write(true).open(dir.path("a.npy")).expect("open a.npy");
        f.set_len(a.len() as u64 - (n as u64 * 2)).expect("truncate a.npy");
        let (code, err) = run.finish();
        assert_eq!(code, Some(1), "{backend}: a shrunken input must fail the run (None = killed by a signal): {err}");
        assert!(err.contains("a.npy") && err.contains("became shorter"), "{backend}: the message names A: {err}");
        assert_eq!(dir.read("out.npy"), b"old result", "{backend}: the old output was changed");
        assert_eq!(listing(dir.root()), vec!["a.npy", "out.npy"], "{backend}: a temporary file was left behind");
    }
}

/// Input A is replaced by rename after the process opened it: the output is the old A's whole
/// result, committed as usual.
#[test]
fn input_replaced_during_a_run_with_file_output_is_consistent() {
    let dir = Dir::new();
    let n = 1 << 20;
    let (old, b) = (ramp(n, 1.0), ramp(n, 0.25));
    dir.write("a.npy", &npy(&[n], &old));
    let run = HeldOnB::start(dir.root(), &npy(&[n], &b), &[], &[]);
    let replaced = replace_by_rename(
        &dir.path("a.npy"),
        &npy(&[n], &vec![-7.0f32; n]),
        "input_replaced_during_a_run_with_file_output_is_consistent",
    );
    let (code, err) = run.finish();
    if !replaced {
        return;
    }
    assert_eq!(code, Some(0), "{err}");
    let expected: Vec<f32> = old.iter().zip(&b).map(|(x, y)| x - y).collect();
    common::assert_same_bits(&dir.output::<f32>("out.npy", &[n]), &expected);
    assert_eq!(listing(dir.root()), vec!["a.npy", "out.npy"]);
}

/// An input streamed through a pipe that ends early (the writer died): exit 1 naming standard
/// input and the missing bytes, no output, no temporary file.
#[test]
fn input_stream_that_ends_early_is_an_error() {
    let dir = Dir::new();
    let n = 1 << 20;
    let a = npy(&[n], &ramp(n, 1.0));
    dir.write("b.npy", &npy(&[n], &vec![0.5f32; n]));
    let out = dir.run_piped(&["sub", "-", "b.npy", "-o", "out.npy"], &a[..a.len() / 2]);
    out.expect_code(1).stderr_mentions("standard input").stderr_mentions("truncated data");
    assert_eq!(listing(dir.root()), vec!["b.npy"], "no output and no temporary file");
}

// ---------------------------------------------------------------------------------------------
// Outputs larger than the free space
// ---------------------------------------------------------------------------------------------

/// The bytes of a `[rows, cols]` output of one-byte or four-byte elements, header included.
#[cfg(unix)]
fn output_bytes(descr: &str, rows: usize, cols: usize, item: u64) -> u64 {
    let header = common::npy_raw((1, 0), &common::header_dict(descr, false, &common::py_shape(&[rows, cols])), &[]);
    header.len() as u64 + (rows * cols) as u64 * item
}

/// The number of bytes after `"has "` in the refusal message.
#[cfg(unix)]
fn available_in(msg: &str) -> u64 {
    let at = msg.find(" has ").unwrap_or_else(|| panic!("no available figure in: {msg}")) + 5;
    msg[at..].split(' ').next().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no number in: {msg}"))
}

/// An output its filesystem cannot hold is refused before any work (exit 1, nothing written,
/// the old output intact, no temporary file), with a message giving the path, the bytes needed
/// and available, and the ways out. Inputs are small ([N, 1] and [1, M]); broadcasting makes the
/// output big. At DirectML levels `element_count` caps outputs at 2^32 - 1 elements first, and
/// the space check still applies under that cap; an output that fits is not refused.
#[test]
#[cfg(unix)] // mounts a tmpfs (mount(8))
fn output_larger_than_the_free_space_is_refused_up_front() {
    let dir = Dir::new();
    let Some(fs) = Tmpfs::mount(dir.root(), "size=1m", "output_larger_than_the_free_space_is_refused_up_front") else {
        return;
    };
    std::fs::write(fs.0.join("out.npy"), b"old result").expect("old output");
    let out = fs.0.join("out.npy");
    let out = out.to_str().expect("utf-8 path");
    let big = 1 << 20;
    dir.write("col.npy", &npy(&[big, 1], &vec![1u8; big]));
    dir.write("row.npy", &npy(&[1, big], &vec![2u8; big]));
    let (cols, rows) = (65_535, 65_535);
    dir.write("col32.npy", &npy(&[rows, 1], &vec![1.0f32; rows]));
    dir.write("row32.npy", &npy(&[1, cols], &vec![2.0f32; cols]));

    // 1 TiB under --feature-level none; 16 GiB (65535^2 float32, under the element cap) at the
    // default level.
    let cases = [
        (vec!["sub", "col.npy", "row.npy", "-f", "none"], output_bytes("|u1", big, big, 1)),
        (vec!["sub", "col32.npy", "row32.npy"], output_bytes("<f4", rows, cols, 4)),
    ];
    for (args, needed) in cases {
        let started = std::time::Instant::now();
        let r = dir.run(&[&args[..], &["-o", out, "--report", "r.json"]].concat());
        r.expect_code(1);
        assert!(started.elapsed().as_secs() < 10, "the refusal should come before any work: {args:?}");
        for part in ["not enough free space", out, &needed.to_string(), "available", "-o -"] {
            r.stderr_mentions(part);
        }
        assert!(available_in(&r.stderr) <= 1 << 20, "available is the tmpfs's free space: {}", r.stderr);
        assert!(!r.stderr.contains("No space left"), "refused up front, not when a write failed: {}", r.stderr);
        let report = dir.report("r.json");
        assert_eq!(report["status"], "error");
        assert_eq!(report["bytes_written"], 0, "nothing was written");
        assert!(report["output"].is_null());
        assert_eq!(std::fs::read(out).expect("old output"), b"old result");
        assert_eq!(listing(&fs.0), vec!["out.npy"], "a temporary file was left behind");
    }

    // At the default level the 1 TiB case is refused by the DirectML element cap (exit 3).
    let r = dir.run(&["sub", "col.npy", "row.npy", "-o", out, "--report", "r.json"]);
    r.expect_code(3).stderr_mentions("element_count");
    // An output that fits the tmpfs (256 KiB) is written.
    dir.write("c.npy", &npy(&[256, 1], &vec![3.0f32; 256]));
    dir.write("r.npy", &npy(&[1, 256], &vec![1.0f32; 256]));
    dir.run(&["sub", "c.npy", "r.npy", "-o", out]).ok();
    assert_eq!(dir.output::<f32>(out, &[256, 256]), vec![2.0f32; 256 * 256]);
    assert_eq!(listing(&fs.0), vec!["out.npy"]);
}
