//! The Unix implementation of [`crate::sys`]: `pread`/`pwrite`, `fallocate`, `O_TMPFILE` and
//! `linkat`, `statvfs`, SIGINT/SIGTERM/SIGHUP, permission bits and owners, `O_NOFOLLOW`, and the
//! descriptor paths (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`).

use super::Interruption;
use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// Reads exactly `buf.len()` bytes at `offset` without moving the file position (`pread`).
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    file.read_exact_at(buf, offset)
}

/// Writes all of `buf` at `offset` without moving the file position (`pwrite`).
pub fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    file.write_all_at(buf, offset)
}

/// Reserves `len` bytes for `file` (Linux `fallocate`), so that a full disk is an error now
/// rather than midway. Filesystems without it (and other systems) skip the reservation.
pub fn preallocate(file: &File, len: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let len = libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: a plain system call on a descriptor this process owns.
        if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } != 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) | Some(libc::EINVAL) => Ok(()),
                _ => Err(e),
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, len);
    Ok(())
}

/// An unnamed regular file in the directory `dir` (Linux `O_TMPFILE`), with the permission bits
/// of the `existing` file it will replace (else `0666`) less the umask, which [`link_unnamed`] names once it is complete: until then no
/// directory lists it, so a run killed at any moment leaves nothing behind. `None` where the
/// system or the filesystem has no unnamed files (the caller then uses a named temporary file),
/// or where `/proc/self/fd`, through which it is named, is missing.
pub fn unnamed_file_in(dir: &Path, existing: Option<&Metadata>) -> Option<File> {
    let mode = existing.map_or(0o666, mode);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Never with O_EXCL, which would make the file impossible to link.
        let file = OpenOptions::new().read(true).write(true).mode(mode).custom_flags(libc::O_TMPFILE).open(dir).ok()?;
        std::fs::symlink_metadata(descriptor_link(&file)).ok()?;
        Some(file)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (dir, mode);
        None
    }
}

/// This process's `/proc` link to `file`'s descriptor.
#[cfg(target_os = "linux")]
fn descriptor_link(file: &File) -> std::path::PathBuf {
    use std::os::fd::AsRawFd;
    std::path::PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// Gives the unnamed `file` (from [`unnamed_file_in`]) the name `path`, in the directory it was
/// made in (`linkat` of its `/proc/self/fd` link; if that fails, `linkat` of the descriptor
/// itself, which needs `CAP_DAC_READ_SEARCH`). Fails with `AlreadyExists` when the name is
/// taken: a link never replaces a file.
pub fn link_unnamed(file: &File, path: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let cstr = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
        let (from, to) = (cstr(&descriptor_link(file))?, cstr(path)?);
        // SAFETY: both paths are NUL-terminated and outlive the call.
        let r = unsafe {
            libc::linkat(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::AT_SYMLINK_FOLLOW)
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::AlreadyExists {
            return Err(e);
        }
        use std::os::fd::AsRawFd;
        // SAFETY: as above; the empty path is NUL-terminated.
        let r =
            unsafe { libc::linkat(file.as_raw_fd(), c"".as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::AT_EMPTY_PATH) };
        if r == 0 {
            Ok(())
        } else {
            Err(e)
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, path);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Flushes `file`'s data and metadata to stable storage (`fsync`). `Ok(false)` when the file
/// cannot be synced (a pipe, a socket, a terminal): there is nothing durable to make.
pub fn sync_file(file: &File) -> io::Result<bool> {
    match file.sync_all() {
        Ok(()) => Ok(true),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOTSUP) | Some(libc::EROFS)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Renames the finished temporary file `tmp` over `target` (`rename(2)`: atomic, replacing any
/// file there). `--fsync` is served by [`sync_directory`] after it.
pub fn persist(tmp: tempfile::NamedTempFile, target: &Path, _durable: bool) -> io::Result<()> {
    tmp.persist(target).map(drop).map_err(|e| e.error)
}

/// Flushes the directory `dir` (its entries: a new or renamed name) to stable storage.
pub fn sync_directory(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Bytes an unprivileged writer may still allocate on the filesystem holding `dir` (`df`'s
/// "Avail"), or None when unknown (a missing directory, or a pseudo filesystem without sizes).
pub fn available_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `path` is NUL-terminated and outlives the call; `st` is writable memory of the
    // type statvfs(3) fills, and is read only after the call reports success.
    let st = unsafe {
        if libc::statvfs(path.as_ptr(), st.as_mut_ptr()) != 0 {
            return None;
        }
        st.assume_init()
    };
    // Pseudo filesystems report zero blocks: no limit to check against.
    if st.f_blocks == 0 {
        return None;
    }
    #[allow(clippy::useless_conversion)] // the field types differ between platforms
    let (avail, frsize) = (u64::from(st.f_bavail), u64::from(st.f_frsize));
    Some(avail.saturating_mul(frsize))
}

/// Calls `handler`, on a thread of its own, when SIGINT, SIGTERM or SIGHUP arrives. Does
/// nothing where the handlers cannot be installed.
pub fn on_interruption(handler: impl FnOnce(Interruption) + Send + 'static) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let what = match sig {
                SIGINT => "SIGINT (Ctrl-C)",
                SIGTERM => "SIGTERM",
                _ => "SIGHUP",
            };
            handler(Interruption { what, exit_code: 128 + sig });
        }
    });
}

/// Whether `t` is a Unix socket (for [`super::FileKind::of`]).
pub(super) fn is_socket(t: &std::fs::FileType) -> bool {
    t.is_socket()
}

/// The descriptor a path names in this process: `/dev/stdin`, `/dev/stdout`, `/dev/stderr`,
/// `/dev/fd/N`, `/proc/self/fd/N`, `/proc/thread-self/fd/N` and `/proc/PID/fd/N` with this
/// process's PID.
pub fn own_descriptor(path: &Path) -> Option<i32> {
    let s = path.to_str()?;
    match s {
        "/dev/stdin" => return Some(0),
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => {}
    }
    let n = s
        .strip_prefix("/dev/fd/")
        .or_else(|| s.strip_prefix("/proc/self/fd/"))
        .or_else(|| s.strip_prefix("/proc/thread-self/fd/"))
        .or_else(|| {
            let (pid, n) = s.strip_prefix("/proc/")?.split_once("/fd/")?;
            (pid.parse::<u32>().ok()? == std::process::id()).then_some(n)
        })?;
    n.parse::<i32>().ok().filter(|n| *n >= 0)
}

/// Whether `path` is a device name rather than a file (Windows's `NUL`, `CON`, `\\.\pipe\NAME`):
/// never on Unix, where devices are files and [`super::FileKind::of`] tells them.
pub fn device_name(_path: &Path) -> bool {
    false
}

/// Why the regular file `path` cannot be replaced, with the fix; `None` when it can. On Unix a
/// rename needs only the directory's write permission (as `mv`), which the temporary file's
/// creation checks.
pub fn replace_refusal(_path: &Path, _meta: &Metadata) -> Option<String> {
    None
}

/// Whether `path` is another process's descriptor link (`/proc/PID/fd/N`). Its link text
/// (`pipe:[1234]`) names no file, so it is opened as it is, never followed by hand.
pub fn foreign_descriptor(path: &Path) -> bool {
    let Some(rest) = path.to_str().and_then(|s| s.strip_prefix("/proc/")) else { return false };
    rest.split_once("/fd/").is_some_and(|(pid, n)| {
        pid.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// A new handle on this process's descriptor `fd`, sharing its file offset (as `>>` and pipes
/// need), or the reason it cannot be had (`EBADF`: not open). Standard input and output are
/// descriptors 0 and 1: an unbuffered handle, as large binary chunks want.
pub fn duplicate_descriptor(fd: i32) -> io::Result<File> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) only reads the descriptor table; an unopened `fd` gives
    // EBADF, which is returned. The new descriptor is owned by nothing else.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` was just returned by fcntl, is open and owned by no one else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(new) }))
}

/// Opens a device, FIFO or descriptor link for writing in order: never created, never truncated
/// (a FIFO's open waits for a reader, as a shell's redirection does).
pub fn open_in_order(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).open(path)
}

/// Connects to the Unix stream socket at `path`, for writing.
pub fn connect_socket(path: &Path) -> io::Result<File> {
    let stream = std::os::unix::net::UnixStream::connect(path)?;
    Ok(File::from(OwnedFd::from(stream)))
}

/// Opens `path` for reading only if it is not a symbolic link, and without waiting (a FIFO put
/// in its place would otherwise block the open).
pub fn open_no_follow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
}

/// The identity and metadata of the file `path` names, symbolic links followed (as opening it
/// would follow them, `/proc/self/fd/N` included).
pub fn key_of(path: &Path) -> io::Result<(super::FileKey, Metadata)> {
    let m = std::fs::metadata(path)?;
    Ok((super::FileKey(m.dev(), m.ino()), m))
}

/// The identity and metadata of the open file `file`.
pub fn key_of_file(file: &File) -> io::Result<(super::FileKey, Metadata)> {
    let m = file.metadata()?;
    Ok((super::FileKey(m.dev(), m.ino()), m))
}

/// This process's standard input (`stdout` false) or output, as a file of its own (a duplicate
/// descriptor); `None` where it is closed.
pub fn std_stream(stdout: bool) -> Option<File> {
    use std::os::fd::AsFd;
    let fd = if stdout {
        std::io::stdout().as_fd().try_clone_to_owned()
    } else {
        std::io::stdin().as_fd().try_clone_to_owned()
    };
    fd.ok().map(File::from)
}

/// Whether `path` still names the file `held` (device and inode; links not followed).
pub fn same_file(held: &File, path: &Path) -> bool {
    match (held.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Permission bits (with setuid, setgid and sticky) of `meta`.
fn mode(meta: &Metadata) -> u32 {
    meta.permissions().mode() & 0o7777
}

/// The permissions a new temporary file is created with: those of the `existing` file it will
/// replace, else `0666` (creation still applies the umask).
pub fn new_file_permissions(existing: Option<&Metadata>) -> Option<Permissions> {
    Some(Permissions::from_mode(existing.map_or(0o666, mode)))
}

/// Gives `file` the exact permission bits and, where this process may (root may; others keep
/// their own owner, which is what the file already has), the owner and group of `existing`:
/// best effort, as `cp -p` tries.
pub fn keep_like(file: &File, existing: &Metadata) {
    let _ = std::os::unix::fs::fchown(file, Some(existing.uid()), Some(existing.gid()));
    let _ = file.set_permissions(Permissions::from_mode(mode(existing)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_paths_are_recognised() {
        let pid = std::process::id();
        for (p, n) in [
            ("/dev/stdout".to_string(), Some(1)),
            ("/dev/stderr".into(), Some(2)),
            ("/dev/fd/7".into(), Some(7)),
            ("/proc/self/fd/2".into(), Some(2)),
            ("/proc/thread-self/fd/9".into(), Some(9)),
            (format!("/proc/{pid}/fd/4"), Some(4)),
            (format!("/proc/{}/fd/4", pid + 1), None),
            ("/dev/fd/x".into(), None),
            ("/dev/fd/-1".into(), None),
            ("/dev/null".into(), None),
            ("dev/stdout".into(), None),
        ] {
            assert_eq!(own_descriptor(Path::new(&p)), n, "{p}");
        }
        assert!(foreign_descriptor(Path::new(&format!("/proc/{}/fd/4", pid + 1))));
        assert!(!foreign_descriptor(Path::new("/proc/self/fd/4")));
        assert!(!foreign_descriptor(Path::new("/proc/1/fdinfo/4")));
    }

    #[test]
    fn duplicating_a_closed_descriptor_fails() {
        assert!(duplicate_descriptor(1 << 20).is_err());
        assert!(duplicate_descriptor(-1).is_err());
    }

    #[test]
    fn free_space_is_known_for_a_temporary_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(available_bytes(dir.path()).is_some_and(|n| n > 0));
        assert_eq!(available_bytes(Path::new("/nonexistent-dir-xyz")), None);
    }
}
