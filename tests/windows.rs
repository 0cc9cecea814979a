//! Windows behaviour with no Unix counterpart (`docs/windows.md`): device names (`NUL`) and named
//! pipes (`\\.\pipe\NAME`) are written in order and never replaced; a read-only target and a
//! target another program holds open are refused up front, naming the file and the fix, with
//! the target untouched; standard input and output carry bytes in binary (a `\r\n` or a Ctrl-Z
//! in the data passes as it is); Ctrl-Break ends a run as Ctrl-C does, removing the temporary
//! output and exiting with `STATUS_CONTROL_C_EXIT`.

use crate::common::*;
use std::fs::{self, OpenOptions};
use std::io::Read;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::FromRawHandle;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The exit status of a process ended by a console control event (0xC000013A).
const STATUS_CONTROL_C_EXIT: i32 = 0xC000_013Au32 as i32;

#[test]
fn nul_is_written_and_never_replaced() {
    let (dir, _) = target_case();
    let before = dir.listing();
    for name in ["NUL", "nul", "NUL:", r".\NUL"] {
        let report = dir.run(&["sub", "a.npy", "b.npy", "-o", name, "--report", "-"]).ok().stdout_json();
        assert_eq!(report["output"]["temporary_file"], serde_json::Value::Null, "{name} was staged as a file");
        let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "-", "--report", name]);
        out.ok();
        assert!(out.stdout.starts_with(b"\x93NUMPY"), "the result did not reach standard output");
        assert_eq!(dir.listing(), before, "writing to {name} left files behind");
    }
}

/// A named pipe server: reads everything one client writes, on a thread of its own.
fn pipe_server(name: &str) -> std::thread::JoinHandle<Vec<u8>> {
    use windows_sys::Win32::Storage::FileSystem::PIPE_ACCESS_INBOUND;
    use windows_sys::Win32::System::Pipes::{ConnectNamedPipe, CreateNamedPipeW, PIPE_TYPE_BYTE, PIPE_WAIT};
    let wide: Vec<u16> = name.encode_utf16().chain(std::iter::once(0)).collect();
    // SAFETY: `wide` is NUL-terminated and outlives the call; null security attributes are
    // documented as the default.
    let handle = unsafe {
        CreateNamedPipeW(
            wide.as_ptr(),
            PIPE_ACCESS_INBOUND,
            PIPE_TYPE_BYTE | PIPE_WAIT,
            1,
            0,
            1 << 16,
            0,
            std::ptr::null(),
        )
    };
    assert_ne!(handle as isize, -1, "cannot create the named pipe {name}");
    // SAFETY: `handle` was just created, is valid, and is owned by nothing else.
    let mut pipe = unsafe { fs::File::from_raw_handle(handle) };
    std::thread::spawn(move || {
        use std::os::windows::io::AsRawHandle;
        // SAFETY: the handle is open; a client that connected first makes this fail harmlessly
        // (ERROR_PIPE_CONNECTED), and reading proceeds either way.
        unsafe { ConnectNamedPipe(pipe.as_raw_handle(), std::ptr::null_mut()) };
        let mut got = Vec::new();
        let _ = pipe.read_to_end(&mut got);
        got
    })
}

#[test]
fn named_pipes_receive_the_result_and_the_report_in_order() {
    let (dir, reference) = target_case();
    let before = dir.listing();
    for (k, flag) in ["-o", "--report"].into_iter().enumerate() {
        let name = format!(r"\\.\pipe\tensorop-test-{}-{k}", std::process::id());
        let server = pipe_server(&name);
        let (target, other) = if flag == "-o" { (name.as_str(), "r.json") } else { ("o.npy", name.as_str()) };
        dir.run(&["sub", "a.npy", "b.npy", "-o", target, "--report", other]).ok();
        let got = server.join().expect("the pipe server");
        if flag == "-o" {
            assert_eq!(got, reference, "the pipe received other bytes than a file does");
        } else {
            let report: serde_json::Value = serde_json::from_slice(&got).expect("a JSON report through the pipe");
            assert_eq!(report["status"], "ok");
        }
        for f in ["r.json", "o.npy"] {
            let _ = fs::remove_file(dir.path(f));
        }
        assert_eq!(dir.listing(), before, "{flag} to a named pipe left files behind");
    }
}

#[test]
fn a_read_only_target_is_refused_naming_the_fix() {
    let (dir, _) = target_case();
    dir.write("out.npy", b"previous result");
    let mut perms = fs::metadata(dir.path("out.npy")).expect("stat").permissions();
    perms.set_readonly(true);
    fs::set_permissions(dir.path("out.npy"), perms).expect("make read-only");
    let before = dir.listing();
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]);
    out.expect_code(1).stderr_mentions("out.npy is read-only").stderr_mentions("attrib -r");
    assert_eq!(dir.read("out.npy"), b"previous result");
    assert_eq!(dir.listing(), before);
}

#[test]
fn a_target_open_without_sharing_is_refused_and_kept() {
    let (dir, _) = target_case();
    dir.write("out.npy", b"previous result");
    let before = dir.listing();
    // As an editor or viewer holds a file: no sharing at all.
    let held = OpenOptions::new().read(true).share_mode(0).open(dir.path("out.npy")).expect("hold the target");
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]);
    out.expect_code(1).stderr_mentions("out.npy is open in another program").stderr_mentions("close it");
    drop(held);
    assert_eq!(dir.read("out.npy"), b"previous result");
    assert_eq!(dir.listing(), before);
}

/// A target another program holds open with delete sharing: Windows 10 and later replace it (the
/// holder keeps the old file); Wine refuses. Either way the result is whole or not there at all.
#[test]
fn a_target_open_with_delete_sharing_is_replaced_or_refused_whole() {
    let (dir, reference) = target_case();
    dir.write("out.npy", b"previous result");
    let before = dir.listing();
    let all_sharing = 0x1 | 0x2 | 0x4; // FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE
    let held =
        OpenOptions::new().read(true).share_mode(all_sharing).open(dir.path("out.npy")).expect("hold the target");
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]);
    drop(held);
    if out.code == Some(0) {
        assert_eq!(dir.read("out.npy"), reference, "replaced, but not by the whole result");
    } else {
        out.expect_code(1).stderr_mentions("out.npy is open in another program");
        assert_eq!(dir.read("out.npy"), b"previous result");
    }
    assert_eq!(dir.listing(), before, "a temporary file was left behind");
}

#[test]
fn standard_streams_carry_bytes_unchanged() {
    let dir = Dir::new();
    // Carriage returns, line feeds and Ctrl-Z: what text mode would translate or stop at.
    let data: Vec<u8> = (0..4096).map(|i| [b'\r', b'\n', 0x1a, 0, 0xff][i % 5]).collect();
    let header = header_dict("|u1", false, "(4096,)");
    let a = npy_raw((1, 0), &header, &data);
    dir.write("zero.npy", &npy_raw((1, 0), &header_dict("|u1", false, "(1,)"), &[0]));
    let out = dir.run_piped(&["sub", "-", "zero.npy", "-o", "-", "--feature-level", "none"], &a);
    out.ok();
    assert_eq!(out.stdout, a, "standard input or output changed the bytes");
}

/// Starts a long run (a 2 GiB output).
fn long_run(dir: &Dir) -> std::process::Child {
    let header = |shape: &str| header_dict("|u1", false, shape);
    dir.write("a.npy", &npy_raw((1, 0), &header("(32768, 1)"), &vec![7u8; 32768]));
    dir.write("b.npy", &npy_raw((1, 0), &header("(1, 65536)"), &vec![3u8; 65536]));
    let mut cmd = Command::new(bin());
    cmd.current_dir(dir.root())
        .args(["sub", "a.npy", "b.npy", "-o", "out.npy", "--feature-level", "none", "--threads", "1"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    spawn(&mut cmd, "tensorop (long run)")
}

/// Delivers the console control `event` to `child` alone, as Windows itself delivers one: by
/// starting the process's `kernel32!CtrlRoutine` on a new thread in it, with the event as its
/// argument. (`GenerateConsoleCtrlEvent` needs a console shared with the run, which Wine's
/// programs started from a pipe do not have, and reaches a whole process group.)
fn send_console_event(child: &std::process::Child, event: u32) -> Result<(), String> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
    use windows_sys::Win32::System::Threading::{CreateRemoteThread, LPTHREAD_START_ROUTINE};
    let kernel32: Vec<u16> = "kernel32.dll".encode_utf16().chain(std::iter::once(0)).collect();
    // SAFETY: NUL-terminated names; kernel32 is loaded in every process, at the same address in
    // every process of a session, so its CtrlRoutine here is the child's too.
    let routine = unsafe { GetProcAddress(GetModuleHandleW(kernel32.as_ptr()), c"CtrlRoutine".as_ptr().cast()) };
    let Some(routine) = routine else {
        return Err(format!("kernel32 exports no CtrlRoutine ({})", std::io::Error::last_os_error()));
    };
    // SAFETY: CtrlRoutine takes the event as its one pointer-sized argument and returns a u32,
    // as a thread's start routine does.
    let start: LPTHREAD_START_ROUTINE = unsafe { std::mem::transmute(routine) };
    // SAFETY: the child's handle has every access right (this process created it).
    let thread = unsafe {
        CreateRemoteThread(
            child.as_raw_handle(),
            std::ptr::null(),
            0,
            start,
            event as usize as *const std::ffi::c_void,
            0,
            std::ptr::null_mut(),
        )
    };
    if thread.is_null() {
        return Err(format!("cannot start CtrlRoutine in the run ({})", std::io::Error::last_os_error()));
    }
    // SAFETY: `thread` was just returned, is open, and is closed once, here.
    drop(unsafe { std::os::windows::io::OwnedHandle::from_raw_handle(thread) });
    Ok(())
}

/// Interrupts a run once its temporary output exists, with `event`, named `what` in its message.
fn interrupt_once_writing(event: u32, what: &str) {
    let dir = Dir::new();
    dir.write("out.npy", b"previous result");
    let mut child = long_run(&dir);
    let start = Instant::now();
    let staged = || dir.listing().iter().any(|n| n.ends_with(".tensorop-tmp"));
    while !staged() {
        assert!(start.elapsed() < Duration::from_secs(60), "no temporary output appeared");
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended ({status}) before it could be interrupted");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Err(why) = send_console_event(&child, event) {
        let _ = child.kill();
        panic!("{why}");
    }
    let out = child.wait_with_output().expect("wait for tensorop");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(STATUS_CONTROL_C_EXIT), "stderr: {stderr}");
    assert!(stderr.contains(&format!("interrupted by {what}; no output was written")), "stderr: {stderr}");
    let left: Vec<String> = dir.listing().into_iter().filter(|n| !n.ends_with(".npy")).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(dir.read("out.npy"), b"previous result", "the old output was touched");
}

#[test]
fn ctrl_c_removes_the_temporary_output_and_exits_with_the_control_c_status() {
    interrupt_once_writing(windows_sys::Win32::System::Console::CTRL_C_EVENT, "Ctrl-C");
}

#[test]
fn ctrl_break_removes_the_temporary_output_and_exits_with_the_control_c_status() {
    interrupt_once_writing(windows_sys::Win32::System::Console::CTRL_BREAK_EVENT, "Ctrl-Break");
}

#[test]
fn closing_the_console_removes_the_temporary_output_and_exits_with_the_control_c_status() {
    interrupt_once_writing(windows_sys::Win32::System::Console::CTRL_CLOSE_EVENT, "the console's closing");
}
