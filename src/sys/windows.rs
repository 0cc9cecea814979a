//! The Windows implementation of [`crate::sys`]: positional reads and writes through
//! `seek_read`/`seek_write`, free space from `GetDiskFreeSpaceExW`, console control events
//! (`SetConsoleCtrlHandler`), device names (`NUL`, `CON`, `\\.\pipe\NAME`), the standard handles,
//! and the sharing and read-only rules that decide whether a file can be replaced. What this
//! means for users is in `docs/windows.md`.
//!
//! Windows has no unnamed files, so every file output is staged in a named temporary file; no
//! Unix sockets as output targets; and no descriptor paths (`/dev/stdout`): `-` is the way to
//! standard output.

use super::Interruption;
use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::{FileExt, OpenOptionsExt};
use std::os::windows::io::{AsHandle, AsRawHandle};
use std::path::Path;
use std::sync::Mutex;
use windows_sys::Win32::Foundation::{ERROR_LOCK_VIOLATION, ERROR_SHARING_VIOLATION, STATUS_CONTROL_C_EXIT};
use windows_sys::Win32::Storage::FileSystem::{
    GetDiskFreeSpaceExW, GetFileInformationByHandle, GetFileType, MoveFileExW, BY_HANDLE_FILE_INFORMATION, DELETE,
    FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE,
    FILE_TYPE_DISK, MOVEFILE_REPLACE_EXISTING, MOVEFILE_WRITE_THROUGH,
};
use windows_sys::Win32::System::Console::{
    SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT,
};

/// Reads exactly `buf.len()` bytes at `offset`. Windows moves the file position as it reads;
/// nothing in tensorop mixes positional and sequential reads of one handle after its header.
pub fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` at `offset` (the file position moves, as for [`read_exact_at`]).
pub fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.seek_write(buf, offset) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reserves `len` bytes for `file` by setting its end (NTFS allocates the clusters then), so that
/// a full disk is an error now rather than midway.
pub fn preallocate(file: &File, len: u64) -> io::Result<()> {
    file.set_len(len)
}

/// Windows has no unnamed files: file outputs are staged in named temporary files.
pub fn unnamed_file_in(_dir: &Path, _existing: Option<&Metadata>) -> Option<File> {
    None
}

/// Windows has no unnamed files to name (see [`unnamed_file_in`]).
pub fn link_unnamed(_file: &File, _path: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Flushes `file`'s data and metadata to stable storage (`FlushFileBuffers`). `Ok(false)` for
/// what is not a file on disk (a pipe, whose flush would wait for its reader; `NUL`; the
/// console): there is nothing durable to make.
pub fn sync_file(file: &File) -> io::Result<bool> {
    // SAFETY: a plain query on a handle that is open for the duration of the call.
    if unsafe { GetFileType(file.as_raw_handle()) } != FILE_TYPE_DISK {
        return Ok(false);
    }
    file.sync_all().map(|()| true)
}

/// Renames the finished temporary file `tmp` over `target`, replacing any file there. The file
/// is closed first, then renamed as `std::fs::rename` does (with POSIX semantics where Windows
/// has them: the old file may still be open elsewhere with delete sharing); with `durable`
/// (`--fsync`), by `MoveFileExW` with `MOVEFILE_WRITE_THROUGH`, which returns once the rename is
/// on disk. A target in use is retried for about a second; on failure the temporary file is
/// removed, and a target another program holds is named as such.
pub fn persist(tmp: tempfile::NamedTempFile, target: &Path, durable: bool) -> io::Result<()> {
    // Closed, and made a normal file (tempfile marks its files temporary), before the rename.
    let path = tmp.into_temp_path().keep().map_err(|e| e.error)?;
    let mut renamed = rename_over(&path, target, durable);
    // A file in use is often so only for a moment (another run's rename into the same target,
    // a virus scanner or indexer reading it): retry for about a second before giving up.
    for pause_ms in [10, 20, 40, 80, 160, 320, 400] {
        match &renamed {
            Err(e) if in_use(e) => std::thread::sleep(std::time::Duration::from_millis(pause_ms)),
            _ => break,
        }
        renamed = rename_over(&path, target, durable);
    }
    match renamed {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            if !in_use(&e) {
                return Err(e);
            }
            let why = format!(
                "{} is open in another program, or you may not replace it ({e}); close it there and run \
                 again, or check its permissions",
                target.display()
            );
            Err(io::Error::new(e.kind(), why))
        }
    }
}

/// Whether `e` says a file is in use or may not be replaced (access denied, sharing or lock
/// violation).
fn in_use(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(5) | Some(32) | Some(33))
}

/// Renames `from` over `target`: as `std::fs::rename` does, or with `durable` by `MoveFileExW`
/// with `MOVEFILE_WRITE_THROUGH`, which returns once the rename is on disk.
fn rename_over(from: &Path, target: &Path, durable: bool) -> io::Result<()> {
    if !durable {
        return std::fs::rename(from, target);
    }
    let (from, to) = (wide(from), wide(target));
    // SAFETY: both paths are NUL-terminated and outlive the call.
    let ok = unsafe { MoveFileExW(from.as_ptr(), to.as_ptr(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH) };
    if ok != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Nothing more to do: with `--fsync`, [`persist`] renames with `MOVEFILE_WRITE_THROUGH`, which
/// returns once the rename is on disk.
pub fn sync_directory(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// A path as the NUL-terminated UTF-16 string the Windows API takes.
fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str().encode_wide().chain(std::iter::once(0)).collect()
}

/// Bytes this user may still allocate on the volume holding `dir`, or None when unknown.
pub fn available_bytes(dir: &Path) -> Option<u64> {
    let path = wide(dir);
    let (mut free, mut total) = (0u64, 0u64);
    // SAFETY: `path` is NUL-terminated and outlives the call; the two out-pointers are valid
    // u64s, and the third may be null as the function documents.
    let ok = unsafe { GetDiskFreeSpaceExW(path.as_ptr(), &mut free, &mut total, std::ptr::null_mut()) };
    (ok != 0 && total != 0).then_some(free)
}

/// The handler [`on_interruption`] installed, taken by the first console event.
type Handler = Box<dyn FnOnce(Interruption) + Send>;
static HANDLER: Mutex<Option<Handler>> = Mutex::new(None);

/// Runs on the thread Windows starts for a console control event.
unsafe extern "system" fn on_console_event(event: u32) -> windows_sys::core::BOOL {
    let what = match event {
        CTRL_C_EVENT => "Ctrl-C",
        CTRL_BREAK_EVENT => "Ctrl-Break",
        CTRL_CLOSE_EVENT => "the console's closing",
        CTRL_LOGOFF_EVENT => "logoff",
        CTRL_SHUTDOWN_EVENT => "shutdown",
        _ => return 0,
    };
    match HANDLER.lock().ok().and_then(|mut h| h.take()) {
        // The handler exits the process.
        Some(handler) => handler(Interruption { what, exit_code: STATUS_CONTROL_C_EXIT }),
        // A second event while the first one cleans up: returning would let Windows end the
        // process now (it does after a close event), so wait for the first to exit.
        None => loop {
            std::thread::park();
        },
    }
    1
}

/// Calls `handler` when Ctrl-C, Ctrl-Break or the console's closing arrives (and logoff or
/// shutdown, which Windows sends only to programs that load no window library: not to tensorop,
/// whose GPU libraries load one, so there they end it as a kill does; see `docs/windows.md`).
/// Does nothing where the handler cannot be installed. A process started with Ctrl-C disabled
/// (`CREATE_NEW_PROCESS_GROUP`) keeps it disabled, as Windows intends; Ctrl-Break still reaches it.
pub fn on_interruption(handler: impl FnOnce(Interruption) + Send + 'static) {
    if let Ok(mut slot) = HANDLER.lock() {
        *slot = Some(Box::new(handler));
    }
    // SAFETY: `on_console_event` has the signature Windows calls and lives for the whole program.
    unsafe { SetConsoleCtrlHandler(Some(on_console_event), 1) };
}

/// Never: Windows has no Unix sockets as output targets (for [`super::FileKind::of`]).
pub(super) fn is_socket(_t: &std::fs::FileType) -> bool {
    false
}

/// Whether `path` names a device rather than a file: a path in the device namespace
/// (`\\.\pipe\NAME`, `\\.\COM10`), or a name Windows itself resolves to one (`NUL`, `con`,
/// `COM1`, `NUL:`). The latter is asked of Windows (`GetFullPathNameW`, through
/// `std::path::absolute`), so each version's own rules hold: Windows 10 reserves `NUL.npy` and
/// `dir\CON` too, Windows 11 only the bare names (and `NUL` in any directory).
pub fn device_name(path: &Path) -> bool {
    let device_namespace = |s: &str| s.starts_with(r"\\.\") || s.starts_with("//./");
    if path.to_str().is_some_and(device_namespace) {
        return true;
    }
    std::path::absolute(path).ok().and_then(|p| p.to_str().map(device_namespace)).unwrap_or(false)
}

/// Why the regular file `path` cannot be replaced, with the fix; `None` when it can. Windows
/// refuses to replace a read-only file, and a file another program holds open without letting
/// others delete it (most editors and viewers do).
pub fn replace_refusal(path: &Path, meta: &Metadata) -> Option<String> {
    let p = path.display();
    if meta.permissions().readonly() {
        return Some(format!(
            "{p} is read-only, and Windows does not replace a read-only file; clear the attribute \
             (attrib -r \"{p}\") or choose another path"
        ));
    }
    let probe = OpenOptions::new()
        .access_mode(DELETE)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path);
    match probe.map_err(|e| e.raw_os_error()) {
        Err(Some(code)) if code == ERROR_SHARING_VIOLATION as i32 || code == ERROR_LOCK_VIOLATION as i32 => {
            Some(format!(
                "{p} is open in another program, which does not let it be replaced (Windows keeps a file \
                 in use); close it there and run again, or choose another path"
            ))
        }
        _ => None,
    }
}

/// No path names one of this process's handles on Windows (`-` is standard output).
pub fn own_descriptor(_path: &Path) -> Option<i32> {
    None
}

/// No path names another process's handle on Windows.
pub fn foreign_descriptor(_path: &Path) -> bool {
    false
}

/// A new handle on standard input (0), output (1) or error (2), or the reason it cannot be had
/// (not open). Reads and writes are binary: bytes pass as they are, with no newline translation.
pub fn duplicate_descriptor(fd: i32) -> io::Result<File> {
    let handle = match fd {
        0 => io::stdin().as_handle().try_clone_to_owned(),
        1 => io::stdout().as_handle().try_clone_to_owned(),
        2 => io::stderr().as_handle().try_clone_to_owned(),
        _ => return Err(io::Error::new(io::ErrorKind::NotFound, format!("no standard handle {fd}"))),
    }?;
    Ok(File::from(handle))
}

/// Opens a device or named pipe for writing in order: never created, never truncated.
pub fn open_in_order(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).open(path)
}

/// Unix sockets are not output targets on Windows ([`super::FileKind::of`] never names one).
pub fn connect_socket(_path: &Path) -> io::Result<File> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "Unix sockets are not output targets on Windows"))
}

/// Opens `path` for reading, the link itself if it is a symbolic link or junction.
pub fn open_no_follow(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).custom_flags(FILE_FLAG_OPEN_REPARSE_POINT).open(path)
}

/// The volume and file index of an open file (its identity, as device and inode on Unix).
fn identity(file: &File) -> Option<(u32, u32, u32)> {
    let mut info = std::mem::MaybeUninit::<BY_HANDLE_FILE_INFORMATION>::zeroed();
    // SAFETY: the handle is open for the duration of the call; `info` is writable memory of
    // the type the function fills, read only after it reports success.
    let info = unsafe {
        if GetFileInformationByHandle(file.as_raw_handle(), info.as_mut_ptr()) == 0 {
            return None;
        }
        info.assume_init()
    };
    Some((info.dwVolumeSerialNumber, info.nFileIndexHigh, info.nFileIndexLow))
}

/// The identity and metadata of the file `path` names, symbolic links and junctions followed
/// (as opening it would follow them); directories too.
pub fn key_of(path: &Path) -> io::Result<(super::FileKey, Metadata)> {
    let file = OpenOptions::new()
        .access_mode(0)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    key_of_file(&file)
}

/// The identity and metadata of the open file `file`.
pub fn key_of_file(file: &File) -> io::Result<(super::FileKey, Metadata)> {
    let (volume, high, low) = identity(file).ok_or_else(|| io::Error::other("the file has no identity to read"))?;
    Ok((super::FileKey(u64::from(volume), u64::from(high) << 32 | u64::from(low)), file.metadata()?))
}

/// This process's standard input (`stdout` false) or output, as a file of its own (a duplicate
/// handle); `None` where it is closed or not a handle.
pub fn std_stream(stdout: bool) -> Option<File> {
    let handle = if stdout {
        std::io::stdout().as_handle().try_clone_to_owned()
    } else {
        std::io::stdin().as_handle().try_clone_to_owned()
    };
    handle.ok().map(File::from)
}

/// Whether `path` still names the file `held` (volume and file index; links not followed).
pub fn same_file(held: &File, path: &Path) -> bool {
    let now = OpenOptions::new()
        .access_mode(0)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .open(path);
    match (identity(held), now.ok().as_ref().and_then(identity)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// New temporary files get the directory's inherited access rules, as any new file on Windows.
pub fn new_file_permissions(_existing: Option<&Metadata>) -> Option<Permissions> {
    None
}

/// Nothing to copy: the replaced file's access rules are the directory's (a read-only file is
/// refused before, by [`replace_refusal`]).
pub fn keep_like(_file: &File, _existing: &Metadata) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_are_recognised() {
        // Names every Windows version agrees on; the rest is each version's own rule.
        for (p, device) in [
            ("NUL", true),
            ("nul", true),
            ("CON", true),
            ("COM1", true),
            (r"C:\work\NUL", true),
            (r"\\.\pipe\tensorop", true),
            ("//./pipe/tensorop", true),
            (r"\\.\COM10", true),
            ("null", false),
            ("COM10", false),
            ("out.npy", false),
            (r"C:\work\out.npy", false),
            (r"\\?\C:\work\out.npy", false),
        ] {
            assert_eq!(device_name(Path::new(p)), device, "{p}");
        }
    }

    #[test]
    fn free_space_is_known_for_a_temporary_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(available_bytes(dir.path()).is_some_and(|n| n > 0));
        assert_eq!(available_bytes(Path::new(r"Q:\nonexistent-dir-xyz")), None);
    }

    #[test]
    fn a_file_is_itself_and_no_other() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(&b, b"b").unwrap();
        let held = File::open(&a).unwrap();
        assert!(same_file(&held, &a));
        assert!(!same_file(&held, &b));
        assert!(!same_file(&held, &dir.path().join("missing")));
    }

    #[test]
    fn standard_handles_duplicate_and_others_do_not() {
        assert!(duplicate_descriptor(2).is_ok());
        assert!(duplicate_descriptor(7).is_err());
    }
}
