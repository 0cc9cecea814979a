//! Operating-system specifics, in one place so that the rest of the crate never asks which
//! system it runs on: positional reads and writes, reservation of space and free space, unnamed
//! files and durability, interruption (signals on Unix, console control events on Windows),
//! file kinds, the permissions and owner a replaced file keeps, opening without following links,
//! the paths that name this process's own streams (`/dev/stdout`, `/dev/fd/N`) and, on Windows,
//! the device names (`NUL`, `CON`, `\\.\pipe\NAME`).
//!
//! Each system has a file of its own behind the same functions: [`unix`] (Linux is tested; macOS
//! compiles) and [`windows`] (tested under Wine; see `docs/windows.md`). What differs for users
//! is listed in `docs/cli.md`, "Platforms".

#[cfg(not(any(unix, windows)))]
compile_error!("tensorop runs on Unix systems and Windows; src/sys/ has no implementation for this target");

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// The identity of a file: device and inode on Unix, volume serial number and file index on
/// Windows. Two paths name the same file exactly when their keys are equal, however spelt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKey(u64, u64);

/// What a path names, as far as writing to it is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Regular,
    Directory,
    Symlink,
    /// A character or block device, a FIFO, or (on Windows) a device name or named pipe: opened
    /// and written in order.
    Device,
    /// A Unix socket (never on Windows).
    #[cfg_attr(windows, allow(dead_code))]
    Socket,
}

impl FileKind {
    /// The kind of `meta`, from `symlink_metadata` (links, and on Windows junctions, not
    /// followed).
    pub fn of(meta: &std::fs::Metadata) -> FileKind {
        let t = meta.file_type();
        if t.is_symlink() {
            FileKind::Symlink
        } else if t.is_dir() {
            FileKind::Directory
        } else if t.is_file() {
            FileKind::Regular
        } else if is_socket(&t) {
            FileKind::Socket
        } else {
            // Character and block devices, FIFOs, device names; anything else a system may add
            // is written in order too, never renamed over.
            FileKind::Device
        }
    }
}

/// Why the process is being stopped from outside: a termination signal on Unix, a console
/// control event on Windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interruption {
    /// For the message: `signal 2`, `Ctrl-C`.
    pub what: &'static str,
    /// The exit status that system's tools use for it: 128 + the signal number on Unix,
    /// `STATUS_CONTROL_C_EXIT` (0xC000013A) on Windows.
    pub exit_code: i32,
}
