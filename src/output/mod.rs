//! Where results and reports go. A [`Destination`] is what the command line asked for (`-` or a
//! path); [`Sink::open`] decides once, through [`target::Target::resolve`], what that path names,
//! and opens it:
//!
//! - a regular file (or none yet), reached through any symbolic links: a temporary file beside
//!   it, renamed into place only when the whole result is written, so the file is never
//!   truncated or half-written and in-place runs read the old input to the end;
//! - standard output, a device, a FIFO, a socket or a descriptor path: written in order, never
//!   renamed over.
//!
//! The writer above it sees one sequential `write` and one `commit`. Temporary files are
//! registered while they exist, so a signal handler can remove them before the process exits
//! ([`remove_pending`]). The rules are in `docs/cli.md`, "Output targets".

pub mod target;

use crate::sys;
use anyhow::{Context, Result};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use target::Target;

/// Where the command line asked for bytes to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// `-`.
    Stdout,
    Path(PathBuf),
}

impl Destination {
    /// `-` is standard output; anything else is a path.
    pub fn parse(arg: &str) -> Destination {
        if arg == "-" {
            Destination::Stdout
        } else {
            Destination::Path(PathBuf::from(arg))
        }
    }

    /// As given on the command line.
    pub fn label(&self) -> String {
        match self {
            Destination::Stdout => "-".into(),
            Destination::Path(p) => p.display().to_string(),
        }
    }
}

/// Temporary files not yet committed or dropped.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Registers a temporary file for the lifetime of the guard.
pub struct Pending(PathBuf);

impl Pending {
    fn new(path: &Path) -> Pending {
        if let Ok(mut p) = PENDING.lock() {
            p.push(path.to_path_buf());
        }
        Pending(path.to_path_buf())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Ok(mut p) = PENDING.lock() {
            p.retain(|x| x != &self.0);
        }
    }
}

/// Removes every temporary file still pending (called when a signal ends the process, which
/// skips destructors). Returns how many were removed.
pub fn remove_pending() -> usize {
    let Ok(paths) = PENDING.lock() else { return 0 };
    paths.iter().filter(|p| std::fs::remove_file(p).is_ok()).count()
}

/// A write to standard output failed because the reader went away (`| head`).
#[derive(Debug)]
pub struct BrokenPipe;

impl std::fmt::Display for BrokenPipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed by the reader")
    }
}
impl std::error::Error for BrokenPipe {}

/// An open destination for bytes.
pub enum Sink {
    /// A temporary file, renamed over `target` by [`Sink::commit`].
    Replace { tmp: tempfile::NamedTempFile, target: PathBuf, _pending: Pending },
    /// Written in order. `stdout`: this is descriptor 1, whose closing by its reader ends the
    /// run quietly.
    Direct { file: File, stdout: bool },
}

impl Sink {
    /// Decides what `dest` names and opens it (see the module's rules). Errors name the path.
    pub fn open(dest: &Destination) -> Result<Sink> {
        let target = match dest {
            Destination::Stdout => Target::Descriptor(1),
            Destination::Path(p) => Target::resolve(p)?,
        };
        match target {
            Target::Replace { path, existing } => Self::replace(path, existing.as_ref()),
            Target::Descriptor(fd) => {
                let file = sys::duplicate_descriptor(fd).with_context(|| match dest {
                    Destination::Stdout => "cannot use standard output".to_string(),
                    Destination::Path(p) => format!("cannot use {}: descriptor {fd} is not open", p.display()),
                })?;
                Ok(Sink::Direct { file, stdout: fd == 1 })
            }
            Target::Device(path) => {
                let file =
                    sys::open_in_order(&path).with_context(|| format!("cannot open {} for writing", path.display()))?;
                Ok(Sink::Direct { file, stdout: false })
            }
            Target::Socket(path) => {
                let file = sys::connect_socket(&path)
                    .with_context(|| format!("cannot connect to the socket {}", path.display()))?;
                Ok(Sink::Direct { file, stdout: false })
            }
        }
    }

    /// A temporary file in `target`'s directory (same filesystem, so the final rename is
    /// atomic), with the permission bits and, where allowed, the owner of the file it replaces;
    /// else `0666` less the umask.
    fn replace(target: PathBuf, existing: Option<&std::fs::Metadata>) -> Result<Sink> {
        let dir = parent_dir(&target).to_path_buf();
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mode = existing.map(sys::mode);
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tensorop-tmp")
            .permissions(sys::permissions(mode.unwrap_or(0o666)))
            .tempfile_in(&dir)
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
        if let (Some(mode), Some(meta)) = (mode, existing) {
            // Creation applied the umask; the replaced file's exact mode and owner are restored.
            sys::copy_owner(tmp.as_file(), meta);
            let _ = tmp.as_file().set_permissions(sys::permissions(mode));
        }
        let _pending = Pending::new(tmp.path());
        Ok(Sink::Replace { tmp, target, _pending })
    }

    /// The directory whose filesystem must hold the whole result: that of the file a
    /// [`Sink::Replace`] replaces; `None` for targets written in order.
    pub fn replace_dir(&self) -> Option<&Path> {
        match self {
            Sink::Replace { target, .. } => Some(parent_dir(target)),
            Sink::Direct { .. } => None,
        }
    }

    /// The file behind a [`Sink::Replace`], which may be written at any offset (workers write
    /// their chunks in place); `None` for targets written in order.
    pub fn positional(&self) -> Option<&File> {
        match self {
            Sink::Replace { tmp, .. } => Some(tmp.as_file()),
            Sink::Direct { .. } => None,
        }
    }

    /// Appends `bytes`. A closed standard output becomes [`BrokenPipe`].
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        match self {
            Sink::Replace { tmp, .. } => tmp.as_file_mut().write_all(bytes).context("cannot write"),
            Sink::Direct { file, stdout } => file.write_all(bytes).map_err(|e| {
                if *stdout && e.kind() == io::ErrorKind::BrokenPipe {
                    anyhow::Error::new(BrokenPipe)
                } else {
                    anyhow::Error::new(e).context("cannot write")
                }
            }),
        }
    }

    /// Moves a finished file into place. Dropping a `Sink` without committing removes the
    /// temporary file and leaves the target as it was; a target written in order keeps what was
    /// written (it cannot be rolled back).
    pub fn commit(self) -> Result<()> {
        match self {
            Sink::Replace { tmp, target, _pending } => {
                tmp.persist(&target)
                    .map_err(|e| e.error)
                    .with_context(|| format!("cannot move the result into place at {}", target.display()))?;
                Ok(())
            }
            Sink::Direct { mut file, .. } => file.flush().context("cannot flush"),
        }
    }
}

/// The directory holding `path` (`.` for a bare name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::Permissions;
    use std::os::unix::fs::PermissionsExt;

    fn open(p: &Path) -> Result<Sink> {
        Sink::open(&Destination::Path(p.to_path_buf()))
    }

    #[test]
    fn commit_replaces_atomically_and_drop_leaves_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.npy");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, Permissions::from_mode(0o640)).unwrap();

        let mut s = open(&target).unwrap();
        s.write(b"new data").unwrap();
        drop(s);
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temporary file left behind");

        let mut s = open(&target).unwrap();
        assert_eq!(s.replace_dir(), Some(dir.path()));
        s.write(b"new data").unwrap();
        s.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new data");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn missing_directory_is_named() {
        let e = open(Path::new("/nonexistent-dir-xyz/out.npy")).err().unwrap();
        let msg = format!("{e:#}");
        assert!(msg.contains("directory /nonexistent-dir-xyz does not exist"), "{msg}");
        assert!(!msg.contains("tensorop-tmp"), "{msg}");
    }

    #[test]
    fn a_descriptor_path_is_written_in_order_at_its_offset() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, b"head ").unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        let fd = f.as_raw_fd();
        let mut s = open(Path::new(&format!("/dev/fd/{fd}"))).unwrap();
        assert_eq!(s.replace_dir(), None);
        s.write(b"body").unwrap();
        s.commit().unwrap();
        f.write_all(b" tail").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"head body tail");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
