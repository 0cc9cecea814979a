//! Where results go: a temporary file beside the target, renamed into place only when the whole
//! result is written (so the target is never truncated or half-written, and in-place runs read
//! the old input to the end), or standard output. One sequential write path serves both.
//! Temporary files are registered while they exist, so a signal handler can remove them before
//! the process exits ([`remove_pending`]).

use anyhow::{Context, Result};
use std::fs::{File, Permissions};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// An open destination for the output bytes.
pub enum Sink {
    File { tmp: tempfile::NamedTempFile, target: PathBuf, _pending: Pending },
    Stdout(File),
}

impl Sink {
    /// Creates a temporary file in the target's directory (same filesystem, so the final rename
    /// is atomic), with the target's permissions if it exists, else `0666` less the umask.
    pub fn create_file(target: &Path) -> Result<Sink> {
        if target.is_dir() {
            anyhow::bail!("{} is a directory; give a file path for the output", target.display());
        }
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mode = std::fs::metadata(target).map(|m| m.permissions().mode() & 0o7777).ok();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tensorop-tmp")
            .permissions(Permissions::from_mode(mode.unwrap_or(0o666)))
            .tempfile_in(&dir)
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
        if let Some(mode) = mode {
            // Creation applied the umask; an existing target's exact mode is restored.
            let _ = tmp.as_file().set_permissions(Permissions::from_mode(mode));
        }
        let _pending = Pending::new(tmp.path());
        Ok(Sink::File { tmp, target: target.to_path_buf(), _pending })
    }

    /// Standard output, unbuffered (chunks are large; no line buffering of binary data).
    pub fn stdout() -> Result<Sink> {
        let fd = io::stdout().as_fd().try_clone_to_owned().context("cannot use standard output")?;
        Ok(Sink::Stdout(File::from(fd)))
    }

    /// Appends `bytes`. A closed standard output becomes [`BrokenPipe`].
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        match self {
            Sink::File { tmp, .. } => tmp.as_file_mut().write_all(bytes).context("cannot write the output"),
            Sink::Stdout(f) => f.write_all(bytes).map_err(|e| {
                if e.kind() == io::ErrorKind::BrokenPipe {
                    anyhow::Error::new(BrokenPipe)
                } else {
                    anyhow::Error::new(e).context("cannot write to standard output")
                }
            }),
        }
    }

    /// Moves a finished file into place. Dropping a `Sink` without committing removes the
    /// temporary file and leaves the target as it was.
    pub fn commit(self) -> Result<()> {
        match self {
            Sink::File { tmp, target, _pending } => {
                tmp.persist(&target)
                    .map_err(|e| e.error)
                    .with_context(|| format!("cannot move the result into place at {}", target.display()))?;
                Ok(())
            }
            Sink::Stdout(mut f) => f.flush().context("cannot flush standard output"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_atomically_and_drop_leaves_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.npy");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, Permissions::from_mode(0o640)).unwrap();

        let mut s = Sink::create_file(&target).unwrap();
        s.write(b"new data").unwrap();
        drop(s);
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temporary file left behind");

        let mut s = Sink::create_file(&target).unwrap();
        s.write(b"new data").unwrap();
        s.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new data");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn missing_directory_is_an_error() {
        let e = Sink::create_file(Path::new("/nonexistent-dir-xyz/out.npy")).err().unwrap();
        assert!(format!("{e:#}").contains("/nonexistent-dir-xyz"));
    }
}
