//! Output targets, for `-o` and `--report` alike (`docs/cli.md`, "Output targets"): regular
//! files replaced atomically with their mode kept, symbolic links followed and left links,
//! dangling links refused, devices, FIFOs, sockets and descriptor paths written in order and
//! never renamed over, directories refused, hard links replaced under the given name only, and
//! a missing directory named as such.
//!
//! Device nodes are made privately with mknod(2) inside the test's temporary directory (root
//! only: elsewhere the test prints why it skips, and `TENSOROP_REQUIRE_ROOT=1`, as CI sets,
//! makes that a failure). No test here writes to the real /dev/null, /dev/stdout or /dev/stderr
//! by path: descriptor paths are exercised through `/dev/fd/N` and `/proc/self/fd/N` on
//! descriptors the test owns.

use crate::common::*;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// The two ways a path reaches tensorop as a target.
#[derive(Clone, Copy, Debug)]
enum Flag {
    Output,
    Report,
}

impl Flag {
    const BOTH: [Flag; 2] = [Flag::Output, Flag::Report];

    /// The arguments of a `sub` run that sends this flag's bytes to `target` (and the other
    /// one to a regular file, `other`).
    fn args<'a>(self, target: &'a str, other: &'a str) -> Vec<&'a str> {
        match self {
            Flag::Output => vec!["sub", "a.npy", "b.npy", "-o", target, "--report", other],
            Flag::Report => vec!["sub", "a.npy", "b.npy", "-o", other, "--report", target],
        }
    }
}

/// [`target_case`]: the inputs and the reference output every target must receive.
struct Case {
    dir: Dir,
    output: Vec<u8>,
}

impl Case {
    fn new() -> Case {
        let (dir, output) = target_case();
        Case { dir, output }
    }

    /// What a correct run sends for `flag`: the output's bytes, or a report (checked by shape).
    fn assert_received(&self, flag: Flag, bytes: &[u8], what: &str) {
        match flag {
            Flag::Output => assert!(bytes == self.output, "{what}: {} bytes, not the expected output", bytes.len()),
            Flag::Report => {
                let r: serde_json::Value = serde_json::from_slice(bytes)
                    .unwrap_or_else(|e| panic!("{what}: not a JSON report ({e}): {}", String::from_utf8_lossy(bytes)));
                assert_eq!(r["status"], "ok", "{what}");
                assert_report_keys(&r);
            }
        }
    }

    /// Checks the regular file written for the other flag.
    fn assert_other(&self, flag: Flag, name: &str) {
        let bytes = self.dir.read(name);
        self.assert_received(if matches!(flag, Flag::Output) { Flag::Report } else { Flag::Output }, &bytes, name);
    }
}

/// Creates a character device node `name` (major, minor) in `dir`, or says why it cannot.
fn mknod_char(dir: &Dir, name: &str, major: u32, minor: u32, test: &str) -> Option<PathBuf> {
    let path = dir.path(name);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path without NUL");
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(major as _, minor as _)) };
    if rc == 0 {
        return Some(path);
    }
    let err = std::io::Error::last_os_error();
    skip(test, "TENSOROP_REQUIRE_ROOT", &format!("cannot create a device node ({err}; needs root)"));
    None
}

fn is_char_device(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_char_device())
}

// ---------------------------------------------------------------------------------------------
// Regular files and links
// ---------------------------------------------------------------------------------------------

#[test]
fn a_regular_file_is_replaced_whole_and_keeps_its_mode() {
    for flag in Flag::BOTH {
        let case = Case::new();
        let d = &case.dir;
        d.write("t", &[0xAB; 1_000_000]);
        fs::set_permissions(d.path("t"), fs::Permissions::from_mode(0o640)).unwrap();
        let ino = fs::metadata(d.path("t")).unwrap().ino();
        d.run(&flag.args("t", "o")).ok();
        case.assert_received(flag, &d.read("t"), "t");
        case.assert_other(flag, "o");
        let meta = fs::metadata(d.path("t")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o640, "{flag:?}: mode kept");
        assert_ne!(meta.ino(), ino, "{flag:?}: replaced by rename, not rewritten in place");
        assert_eq!(d.listing().len(), 4, "{flag:?}: no temporary file left: {:?}", d.listing());
    }
}

#[test]
fn a_symlink_chain_is_followed_and_stays_a_link() {
    for flag in Flag::BOTH {
        let case = Case::new();
        let d = &case.dir;
        fs::create_dir(d.path("real")).unwrap();
        d.write("real/t", b"old");
        fs::set_permissions(d.path("real/t"), fs::Permissions::from_mode(0o604)).unwrap();
        std::os::unix::fs::symlink("real/t", d.path("l1")).unwrap();
        std::os::unix::fs::symlink(d.path("l1"), d.path("l2")).unwrap();
        d.run(&flag.args("l2", "o")).ok();
        for l in ["l1", "l2"] {
            assert!(fs::symlink_metadata(d.path(l)).unwrap().file_type().is_symlink(), "{flag:?}: {l} is still a link");
        }
        assert_eq!(fs::read_link(d.path("l2")).unwrap(), d.path("l1"));
        case.assert_received(flag, &d.read("real/t"), "real/t through two links");
        assert_eq!(fs::metadata(d.path("real/t")).unwrap().permissions().mode() & 0o7777, 0o604);
        assert_eq!(fs::read_dir(d.path("real")).unwrap().count(), 1, "{flag:?}: no temporary file beside real/t");
    }
}

#[test]
fn a_dangling_symlink_is_refused_and_nothing_is_created() {
    for flag in Flag::BOTH {
        let case = Case::new();
        let d = &case.dir;
        std::os::unix::fs::symlink("nowhere/t", d.path("dl")).unwrap();
        fs::create_dir(d.path("nowhere")).unwrap();
        let before = d.listing();
        let out = d.run(&flag.args("dl", "o"));
        out.expect_code(1).stderr_mentions("dangling").stderr_mentions("dl");
        assert_eq!(fs::read_dir(d.path("nowhere")).unwrap().count(), 0, "{flag:?}: the link's target was created");
        assert!(fs::symlink_metadata(d.path("dl")).unwrap().file_type().is_symlink());
        let mut after = d.listing();
        // The report of a refused output is still written (every outcome has one).
        if matches!(flag, Flag::Output) {
            assert!(after.remove("o"), "the report is written on exit 1 too");
            let r = d.report("o");
            assert_eq!(r["status"], "error");
            assert!(r["output"].is_null());
        }
        assert_eq!(after, before, "{flag:?}: nothing else created");
    }
}

#[test]
fn a_hard_link_is_replaced_under_the_given_name_only() {
    for flag in Flag::BOTH {
        let case = Case::new();
        let d = &case.dir;
        d.write("t", b"old bytes");
        fs::hard_link(d.path("t"), d.path("h")).unwrap();
        d.run(&flag.args("t", "o")).ok();
        case.assert_received(flag, &d.read("t"), "t");
        assert_eq!(d.read("h"), b"old bytes", "{flag:?}: the other name keeps the old bytes");
        assert_eq!(fs::metadata(d.path("h")).unwrap().nlink(), 1);
    }
}

#[test]
fn a_directory_is_refused_directly_or_through_a_link() {
    for flag in Flag::BOTH {
        for target in ["dir", "dirlink"] {
            let case = Case::new();
            let d = &case.dir;
            fs::create_dir(d.path("dir")).unwrap();
            std::os::unix::fs::symlink("dir", d.path("dirlink")).unwrap();
            let other = if matches!(flag, Flag::Report) { "o" } else { "r" };
            d.run(&flag.args(target, other)).expect_code(1).stderr_mentions("directory").stderr_mentions(target);
            assert_eq!(fs::read_dir(d.path("dir")).unwrap().count(), 0, "{flag:?} {target}: nothing written inside");
            assert!(fs::symlink_metadata(d.path("dirlink")).unwrap().file_type().is_symlink());
        }
    }
}

#[test]
fn a_missing_directory_is_named_not_a_temporary_file() {
    for flag in Flag::BOTH {
        let case = Case::new();
        let d = &case.dir;
        let before = d.listing();
        let out = d.run(&flag.args("no/such/t", "o"));
        out.expect_code(1).stderr_mentions("directory no/such does not exist").stderr_mentions("mkdir -p");
        assert!(!out.stderr.contains("tensorop-tmp"), "names a temporary file: {}", out.stderr);
        let mut after = d.listing();
        after.remove("o");
        assert_eq!(after, before, "{flag:?}: nothing created");
    }
}

#[test]
fn in_place_through_a_link_to_an_input_gives_the_same_result() {
    let case = Case::new();
    let d = &case.dir;
    std::os::unix::fs::symlink("a.npy", d.path("la")).unwrap();
    d.run(&["sub", "a.npy", "b.npy", "-o", "la"]).ok();
    assert!(fs::symlink_metadata(d.path("la")).unwrap().file_type().is_symlink());
    assert_eq!(d.read("a.npy"), case.output, "a.npy holds A - B, computed from the old A");
    // And with the input itself given through the link.
    let case = Case::new();
    let d = &case.dir;
    std::os::unix::fs::symlink("a.npy", d.path("la")).unwrap();
    d.run(&["sub", "la", "b.npy", "-o", "a.npy"]).ok();
    assert_eq!(d.read("a.npy"), case.output);
}

// ---------------------------------------------------------------------------------------------
// Devices, FIFOs, sockets, descriptor paths: written in order, never renamed over
// ---------------------------------------------------------------------------------------------

/// The fix for a data-destroying bug: a private null device given as `-o` or `--report` was
/// replaced by a regular file (the temporary file renamed over it). It must stay a device.
#[test]
fn a_private_null_device_stays_a_device() {
    for flag in Flag::BOTH {
        let case = Case::new();
        let d = &case.dir;
        let Some(nul) = mknod_char(d, "nul", 1, 3, "a_private_null_device_stays_a_device") else { return };
        let rdev = fs::symlink_metadata(&nul).unwrap().rdev();
        let before = d.listing();
        d.run(&flag.args("nul", "o")).ok();
        assert!(is_char_device(&nul), "{flag:?}: nul was replaced: {:?}", fs::symlink_metadata(&nul));
        assert_eq!(fs::symlink_metadata(&nul).unwrap().rdev(), rdev);
        case.assert_other(flag, "o");
        let mut after = d.listing();
        after.remove("o");
        assert_eq!(after, before, "{flag:?}: no temporary file left beside the device");
        // Through a link too: the device is written, the link stays a link.
        std::os::unix::fs::symlink("nul", d.path("lnul")).unwrap();
        d.run(&flag.args("lnul", "o")).ok();
        assert!(is_char_device(&nul) && fs::symlink_metadata(d.path("lnul")).unwrap().file_type().is_symlink());
    }
}

/// A device that fails every write (like /dev/full): the failure part-way is reported (exit 1),
/// the node is kept.
#[test]
fn a_failing_device_is_an_error_and_is_kept() {
    for flag in Flag::BOTH {
        let case = Case::new();
        let d = &case.dir;
        let Some(full) = mknod_char(d, "full", 1, 7, "a_failing_device_is_an_error_and_is_kept") else { return };
        let other = if matches!(flag, Flag::Report) { "o" } else { "r" };
        d.run(&flag.args("full", other)).expect_code(1).stderr_mentions("full").stderr_mentions("space");
        assert!(is_char_device(&full), "{flag:?}: full was replaced");
    }
}

/// Reads everything written to a FIFO, on a thread; `finish` unblocks a reader that no writer
/// ever reached, and gives up on one whose FIFO was replaced (so a failing run cannot hang the
/// test).
struct FifoReader {
    path: PathBuf,
    done: mpsc::Receiver<Vec<u8>>,
}

impl FifoReader {
    fn start(path: &Path, limit: Option<usize>) -> FifoReader {
        let p = path.to_path_buf();
        let (tx, done) = mpsc::channel();
        thread::spawn(move || {
            let mut f = fs::File::open(&p).expect("open the FIFO for reading");
            let mut buf = Vec::new();
            match limit {
                Some(n) => {
                    buf.resize(n, 0);
                    let _ = f.read_exact(&mut buf);
                }
                None => {
                    let _ = f.read_to_end(&mut buf);
                }
            }
            let _ = tx.send(buf);
        });
        FifoReader { path: path.to_path_buf(), done }
    }

    fn finish(self) -> Vec<u8> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(buf) = self.done.recv_timeout(Duration::from_millis(20)) {
                return buf;
            }
            // A writer that opens and closes at once gives a waiting reader its end of file.
            let _ = fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&self.path).map(drop);
        }
        panic!("the FIFO's reader never got an end of file (was {} replaced?)", self.path.display());
    }
}

#[test]
fn a_fifo_is_written_in_order_and_stays_a_fifo() {
    for flag in Flag::BOTH {
        let case = Case::new();
        let d = &case.dir;
        mkfifo(&d.path("p"));
        let reader = FifoReader::start(&d.path("p"), None);
        let out = d.run(&flag.args("p", "o"));
        let got = reader.finish();
        out.ok();
        case.assert_received(flag, &got, "what the FIFO's reader got");
        case.assert_other(flag, "o");
        assert!(fs::symlink_metadata(d.path("p")).unwrap().file_type().is_fifo(), "{flag:?}: still a FIFO");
        assert_eq!(d.listing().len(), 4, "{flag:?}: no temporary file left: {:?}", d.listing());
    }
}

#[test]
fn a_fifo_whose_reader_leaves_early_is_an_error() {
    let case = Case::new();
    let d = &case.dir;
    mkfifo(&d.path("p"));
    let reader = FifoReader::start(&d.path("p"), Some(10));
    let out = d.run(&["sub", "a.npy", "b.npy", "-o", "p", "--report", "r.json"]);
    let got = reader.finish();
    assert_eq!(&got[..6], b"\x93NUMPY");
    out.expect_code(1).stderr_mentions("output p");
    assert_eq!(d.report("r.json")["status"], "error");
    assert!(fs::symlink_metadata(d.path("p")).unwrap().file_type().is_fifo());
}

#[test]
fn a_unix_socket_is_connected_to_and_written() {
    for flag in Flag::BOTH {
        let case = Case::new();
        let d = &case.dir;
        let listener = UnixListener::bind(d.path("s")).expect("bind a Unix socket");
        listener.set_nonblocking(true).unwrap();
        let server = thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        stream.set_nonblocking(false).unwrap();
                        let mut buf = Vec::new();
                        stream.read_to_end(&mut buf).unwrap();
                        return buf;
                    }
                    Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                    Err(e) => panic!("no connection: {e}"),
                }
            }
        });
        d.run(&flag.args("s", "o")).ok();
        case.assert_received(flag, &server.join().unwrap(), "what the socket's server got");
        assert!(fs::symlink_metadata(d.path("s")).unwrap().file_type().is_socket());
    }
}

/// Runs `args` with standard output appended to the file `name` (already holding `head`), so a
/// descriptor path written in order lands after `head`, at the descriptor's offset.
fn run_with_stdout_file(d: &Dir, args: &[&str], name: &str) -> (Option<i32>, String) {
    let f = fs::OpenOptions::new().append(true).open(d.path(name)).expect("open the stdout file");
    let out = Command::new(bin())
        .args(args)
        .current_dir(d.root())
        .stdin(Stdio::null())
        .stdout(Stdio::from(f))
        .stderr(Stdio::piped())
        .output()
        .expect("run tensorop");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn descriptor_paths_write_to_the_descriptor_at_its_offset() {
    for flag in Flag::BOTH {
        for target in ["/dev/fd/1", "/proc/self/fd/1"] {
            let case = Case::new();
            let d = &case.dir;
            d.write("log", b"head\n");
            let (code, err) = run_with_stdout_file(d, &flag.args(target, "o"), "log");
            assert_eq!(code, Some(0), "{flag:?} {target}: {err}");
            let got = d.read("log");
            assert_eq!(&got[..5], b"head\n", "{flag:?} {target}: written after what was there");
            case.assert_received(flag, &got[5..], target);
            case.assert_other(flag, "o");
        }
    }
}

#[test]
fn descriptor_paths_to_pipes_work_and_links_to_them_are_followed() {
    // Standard output is the test's pipe here; /dev/fd/1 names it.
    let case = Case::new();
    let d = &case.dir;
    let out = d.run(&["sub", "a.npy", "b.npy", "-o", "/dev/fd/1"]);
    out.ok();
    assert_eq!(out.stdout, case.output);
    // The report on standard error, through a private link to /dev/fd/2.
    std::os::unix::fs::symlink("/dev/fd/2", d.path("err")).unwrap();
    let out = d.run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "--report", "err"]);
    out.ok();
    case.assert_received(Flag::Report, out.stderr.as_bytes(), "the report on standard error");
    assert_eq!(fs::read_link(d.path("err")).unwrap(), Path::new("/dev/fd/2"), "the link is left as it was");
}

#[test]
fn a_closed_descriptor_is_an_error() {
    let case = Case::new();
    case.dir.run(&["sub", "a.npy", "b.npy", "-o", "/dev/fd/9"]).expect_code(1).stderr_mentions("descriptor 9");
}

#[test]
fn output_and_report_to_one_path_is_a_usage_error() {
    let case = Case::new();
    let d = &case.dir;
    d.run(&["sub", "a.npy", "b.npy", "-o", "x", "--report", "x"]).expect_code(2).stderr_mentions("the result (-o x)");
    assert!(!d.exists("x"));
    // Writing both to one descriptor after another is allowed (the report follows the output).
    let (code, err) = {
        d.write("log", b"");
        run_with_stdout_file(d, &["sub", "a.npy", "b.npy", "-o", "/dev/fd/1", "--report", "/proc/self/fd/1"], "log")
    };
    assert_eq!(code, Some(0), "{err}");
    let got = d.read("log");
    assert_eq!(&got[..case.output.len()], &case.output[..]);
    case.assert_received(Flag::Report, &got[case.output.len()..], "the report after the output");
}
