//! Where results and reports go. A [`Destination`] is what the command line asked for (`-` or a
//! path); [`Staged::open`] decides once, through [`target::Target::resolve`], what that path names,
//! and opens it:
//!
//! - a regular file (or none yet), reached through any symbolic links: the result is written
//!   beside it into an unnamed file (Linux `O_TMPFILE`), which gets a name only when the whole
//!   result is written, so no kill, crash or power cut leaves a partial file behind; where the
//!   filesystem has no unnamed files, into a named temporary file. Either is then renamed over
//!   the target, so the file is never truncated or half-written and in-place runs read the old
//!   input to the end;
//! - standard output, a device, a FIFO, a socket or a descriptor path: written in order, never
//!   renamed over.
//!
//! With `--fsync` ([`Writing::durable`]) the data is flushed to storage before the file is
//! named, and its directory after. The writer above sees one sequential `write` and one
//! `commit`. Named temporary files are registered while they exist, so a signal handler can
//! remove them before the process exits ([`remove_pending`]); what a SIGKILL leaves, opening
//! the same target again removes ([`leftovers`]). The rules are in `docs/cli.md`,
//! "Output targets", and `docs/reliability.md`.

pub mod identity;
pub mod leftovers;
pub mod parts;
pub mod result;
pub mod space;
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

/// The error for a temporary file that could not be made in `dir` beside `target`: the system's
/// reason without the temporary file's random name, and for a directory without write
/// permission, why that matters and the fix.
fn cannot_create_beside(target: &Path, dir: &Path, e: io::Error) -> anyhow::Error {
    // tempfile appends the temporary file's random path to the system's message: drop it.
    let text = e.to_string();
    let reason = text.split(" at path ").next().unwrap_or(&text).to_string();
    if e.kind() == io::ErrorKind::PermissionDenied {
        anyhow::anyhow!(
            "no permission to create files in the directory {} ({reason}); tensorop writes {} beside it and \
             renames it into place, so replacing or creating a file needs write permission on its directory: make \
             the directory writable, or give a path in a writable directory",
            dir.display(),
            target.file_name().map_or(target.display().to_string(), |n| n.to_string_lossy().into_owned())
        )
    } else {
        anyhow::anyhow!("cannot create a temporary file for {} in {} ({reason})", target.display(), dir.display())
    }
}

/// Temporary files not yet committed or dropped.
static PENDING: Mutex<Vec<(PathBuf, Kind)>> = Mutex::new(Vec::new());

/// What a pending path is, so that it is removed the right way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    /// A directory being assembled (a DxDispatch repro), removed with its contents.
    Directory,
}

/// Registers a temporary file, or directory, for the lifetime of the guard.
pub struct Pending(PathBuf);

impl Pending {
    fn register(path: &Path, kind: Kind) -> Pending {
        if let Ok(mut p) = PENDING.lock() {
            p.push((path.to_path_buf(), kind));
        }
        Pending(path.to_path_buf())
    }

    fn new(path: &Path) -> Pending {
        Self::register(path, Kind::File)
    }

    /// A temporary directory, removed with what it holds.
    pub fn directory(path: &Path) -> Pending {
        Self::register(path, Kind::Directory)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Ok(mut p) = PENDING.lock() {
            p.retain(|(x, _)| x != &self.0);
        }
    }
}

/// Removes every temporary file and directory still pending (called when a signal ends the
/// process, which skips destructors). Returns how many were removed.
pub fn remove_pending() -> usize {
    let Ok(paths) = PENDING.lock() else { return 0 };
    paths
        .iter()
        .filter(|(p, kind)| match kind {
            Kind::File => std::fs::remove_file(p).is_ok(),
            Kind::Directory => std::fs::remove_dir_all(p).is_ok(),
        })
        .count()
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

/// Says on standard error (unless `quiet`) which temporary files of interrupted runs opening
/// `sink` removed.
pub fn note_leftovers(quiet: bool, dest: &Destination, sink: &Staged) {
    if !quiet {
        for name in sink.removed_leftovers() {
            eprintln!("tensorop: removed {name}, left beside {} by an interrupted run", dest.label());
        }
    }
}

/// Whether `e` is the reader of standard output going away: a [`BrokenPipe`] from a sink, or
/// a broken pipe from a writer of standard output.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.is::<BrokenPipe>()
        || e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

/// An I/O error of a writer over a [`Staged`] as the pipeline expects it: a closed standard output is a
/// [`BrokenPipe`].
pub fn from_io(e: io::Error) -> anyhow::Error {
    if e.get_ref().is_some_and(|inner| inner.is::<BrokenPipe>()) {
        anyhow::Error::new(BrokenPipe)
    } else {
        anyhow::Error::new(e).context("cannot write")
    }
}

/// How a file output reaches its name, as the report's `output.temporary_file` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staging {
    /// An unnamed file (Linux `O_TMPFILE`), linked and renamed into place when complete.
    Unnamed,
    /// A named temporary file `.NAME.XXXXXX.tensorop-tmp`, renamed into place when complete.
    Named,
    /// Written in order into the target itself (standard output, devices, FIFOs, sockets).
    InOrder,
    /// One part's range of the staging file of `--part` ([`parts`]).
    Parts,
}

impl Staging {
    /// The report's word for it (`null` for in-order targets).
    pub fn name(self) -> Option<&'static str> {
        match self {
            Staging::Unnamed => Some("unnamed"),
            Staging::Named => Some("named"),
            Staging::InOrder => None,
            Staging::Parts => Some("parts"),
        }
    }
}

/// The environment variable that makes file outputs use named temporary files even where
/// unnamed ones exist: for tests of that fallback, and for a filesystem that claims `O_TMPFILE`
/// but mishandles it.
pub const NAMED_TEMPFILES_ENV: &str = "TENSOROP_NAMED_TEMPFILES";

/// How outputs are written: the same for the result and the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writing {
    /// `--fsync`: flush to storage before [`Staged::commit`] returns.
    pub durable: bool,
    /// Use unnamed files where the filesystem has them (not with [`NAMED_TEMPFILES_ENV`]` = 1`).
    pub unnamed: bool,
}

impl Default for Writing {
    fn default() -> Self {
        Writing { durable: false, unnamed: true }
    }
}

/// An open destination for bytes.
pub struct Staged {
    handle: Handle,
    /// `--fsync`: flush to storage before [`Staged::commit`] returns.
    durable: bool,
    /// Temporary files of interrupted runs to the same target, removed when this one opened.
    removed: Vec<String>,
}

/// What a sink writes into, by the kind of target it opened.
enum Handle {
    /// An unnamed file in `target`'s directory, linked and renamed over `target` by
    /// [`Staged::commit`].
    Unnamed { file: File, target: PathBuf, existed: bool },
    /// A temporary file, renamed over `target` by [`Staged::commit`].
    Named { tmp: tempfile::NamedTempFile, target: PathBuf, _pending: Pending },
    /// Written in order. `stdout`: this is descriptor 1, whose closing by its reader ends the
    /// run quietly.
    Direct { file: File, stdout: bool },
    /// `--part`: the staging file of the job, written at `cursor` (a part's range) and never
    /// renamed by the sink ([`parts::Stage::finish`] commits).
    Part { file: File, cursor: u64 },
}

impl Staged {
    /// Decides what `dest` names and opens it (see the module's rules), as `how` says. Errors
    /// name the path.
    pub fn open(dest: &Destination, how: Writing) -> Result<Staged> {
        let target = match dest {
            Destination::Stdout => Target::Descriptor(1),
            Destination::Path(p) => Target::resolve(p)?,
        };
        let mut removed = Vec::new();
        let out = match target {
            Target::Replace { path, existing } => {
                removed = leftovers::remove(parent_dir(&path), &temporary_prefix(&path), TEMPORARY_SUFFIX);
                Self::replace(path, existing.as_ref(), how.unnamed)?
            }
            Target::Descriptor(fd) => {
                let file = sys::duplicate_descriptor(fd).with_context(|| match dest {
                    Destination::Stdout => "cannot use standard output".to_string(),
                    Destination::Path(p) => format!("cannot use {}: descriptor {fd} is not open", p.display()),
                })?;
                Handle::Direct { file, stdout: fd == 1 }
            }
            Target::Device(path) => {
                let file =
                    sys::open_in_order(&path).with_context(|| format!("cannot open {} for writing", path.display()))?;
                Handle::Direct { file, stdout: false }
            }
            Target::Socket(path) => {
                let file = sys::connect_socket(&path)
                    .with_context(|| format!("cannot connect to the socket {}", path.display()))?;
                Handle::Direct { file, stdout: false }
            }
        };
        Ok(Staged { handle: out, durable: how.durable, removed })
    }

    /// A file in `target`'s directory (same filesystem, so the final rename is atomic), unnamed
    /// where the filesystem allows, with the permission bits and, where allowed, the owner of
    /// the file it replaces; else `0666` less the umask.
    fn replace(target: PathBuf, existing: Option<&std::fs::Metadata>, unnamed: bool) -> Result<Handle> {
        let dir = parent_dir(&target).to_path_buf();
        // Creation applied the umask; the replaced file's exact mode and owner are restored.
        let like_existing = |file: &File| existing.into_iter().for_each(|meta| sys::keep_like(file, meta));
        if let Some(file) = unnamed.then(|| sys::unnamed_file_in(&dir, existing)).flatten() {
            like_existing(&file);
            leftovers::hold(&file);
            return Ok(Handle::Unnamed { file, target, existed: existing.is_some() });
        }
        let prefix = temporary_prefix(&target);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(TEMPORARY_SUFFIX);
        if let Some(permissions) = sys::new_file_permissions(existing) {
            builder.permissions(permissions);
        }
        let tmp = builder.tempfile_in(&dir).map_err(|e| cannot_create_beside(&target, &dir, e))?;
        like_existing(tmp.as_file());
        leftovers::hold(tmp.as_file());
        let _pending = Pending::new(tmp.path());
        Ok(Handle::Named { tmp, target, _pending })
    }

    /// A part's sink (`--part`): writes go into the job's staging `file`, from offset 0 (the
    /// header) and then from wherever [`skip`](Self::skip) moves them.
    pub fn part(file: File, durable: bool) -> Staged {
        Staged { handle: Handle::Part { file, cursor: 0 }, durable, removed: Vec::new() }
    }

    /// `--part`: moves the next write `n` bytes further on (to the part's first element).
    pub fn skip(&mut self, n: u64) {
        if let Handle::Part { cursor, .. } = &mut self.handle {
            *cursor += n;
        }
    }

    /// The names of the temporary files that interrupted runs had left beside the target, which
    /// opening it removed (see `docs/reliability.md`, "Leftovers of a killed run").
    pub fn removed_leftovers(&self) -> &[String] {
        &self.removed
    }

    /// How the output reaches its name.
    pub fn staging(&self) -> Staging {
        match self.handle {
            Handle::Unnamed { .. } => Staging::Unnamed,
            Handle::Named { .. } => Staging::Named,
            Handle::Direct { .. } => Staging::InOrder,
            Handle::Part { .. } => Staging::Parts,
        }
    }

    /// The directory whose filesystem must hold the whole result: that of the file being
    /// replaced; `None` for targets written in order.
    pub fn replace_dir(&self) -> Option<&Path> {
        match &self.handle {
            Handle::Unnamed { target, .. } | Handle::Named { target, .. } => Some(parent_dir(target)),
            Handle::Direct { .. } | Handle::Part { .. } => None,
        }
    }

    /// The file behind a replaced target, which may be written at any offset (workers write
    /// their chunks in place); `None` for targets written in order.
    pub fn positional(&self) -> Option<&File> {
        match &self.handle {
            Handle::Unnamed { file, .. } => Some(file),
            Handle::Named { tmp, .. } => Some(tmp.as_file()),
            Handle::Part { file, .. } => Some(file),
            Handle::Direct { .. } => None,
        }
    }

    /// Appends `bytes`. A closed standard output becomes [`BrokenPipe`].
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        match &mut self.handle {
            Handle::Unnamed { file, .. } => file.write_all(bytes).context("cannot write"),
            Handle::Named { tmp, .. } => tmp.as_file_mut().write_all(bytes).context("cannot write"),
            Handle::Part { file, cursor } => {
                sys::write_all_at(file, bytes, *cursor).context("cannot write")?;
                *cursor += bytes.len() as u64;
                Ok(())
            }
            Handle::Direct { file, stdout } => file.write_all(bytes).map_err(|e| {
                if *stdout && e.kind() == io::ErrorKind::BrokenPipe {
                    anyhow::Error::new(BrokenPipe)
                } else {
                    anyhow::Error::new(e).context("cannot write")
                }
            }),
        }
    }

    /// Moves a finished file into place; with `durable`, its data is on storage before it is
    /// named and its directory after. Returns whether the result was made durable (`--fsync`
    /// on a target that can be synced). Dropping a `Staged` without committing leaves the target
    /// as it was and no file behind; a target written in order keeps what was written (it
    /// cannot be rolled back).
    pub fn commit(self) -> Result<bool> {
        let durable = self.durable;
        let sync = |file: &File| -> Result<bool> {
            Ok(durable && sys::sync_file(file).context("cannot flush the result to storage (--fsync)")?)
        };
        let into_place = |target: &Path| format!("cannot move the result into place at {}", target.display());
        let (synced, target) = match self.handle {
            Handle::Unnamed { file, target, existed } => {
                let synced = sync(&file)?;
                // A new target is named at once: nothing else ever shows. An existing one is
                // replaced by a rename from a fresh name, the one moment a kill could leave a
                // (complete) file behind.
                let linked = !existed && sys::link_unnamed(&file, &target).is_ok();
                if !linked {
                    let prefix = temporary_prefix(&target);
                    let named = tempfile::Builder::new()
                        .prefix(&prefix)
                        .suffix(TEMPORARY_SUFFIX)
                        .make_in(parent_dir(&target), |path| {
                            sys::link_unnamed(&file, path)?;
                            Ok(Pending::new(path))
                        })
                        .with_context(|| into_place(&target))?;
                    named.persist(&target).map_err(|e| e.error).with_context(|| into_place(&target))?;
                }
                (synced, target)
            }
            Handle::Named { tmp, target, _pending } => {
                let synced = sync(tmp.as_file())?;
                sys::persist(tmp, &target, durable).with_context(|| into_place(&target))?;
                (synced, target)
            }
            Handle::Direct { mut file, .. } => {
                file.flush().context("cannot flush")?;
                return sync(&file);
            }
            Handle::Part { file, .. } => return sync(&file),
        };
        if synced {
            let dir = parent_dir(&target);
            sys::sync_directory(dir)
                .with_context(|| format!("cannot flush the directory {} to storage (--fsync)", dir.display()))?;
        }
        Ok(synced)
    }
}

/// The end of temporary files' names.
const TEMPORARY_SUFFIX: &str = ".tensorop-tmp";

/// The start of temporary files' names beside `target`: `.NAME.` (then six random characters
/// and [`TEMPORARY_SUFFIX`]).
fn temporary_prefix(target: &Path) -> String {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{name}.")
}

/// The directory holding `path` (`.` for a bare name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(p: &Path) -> Result<Staged> {
        Staged::open(&Destination::Path(p.to_path_buf()), Writing::default())
    }

    #[test]
    fn a_directory_without_write_permission_is_named_with_the_fix() {
        let denied =
            io::Error::new(io::ErrorKind::PermissionDenied, "Permission denied (os error 13) at path \"/d/.x\"");
        let msg = cannot_create_beside(Path::new("ro/x.npy"), Path::new("ro"), denied).to_string();
        assert!(msg.starts_with("no permission to create files in the directory ro (Permission denied (os error 13))"));
        assert!(msg.contains("needs write permission on its directory") && !msg.contains("/d/.x"), "{msg}");
        let full =
            io::Error::new(io::ErrorKind::StorageFull, "No space left on device (os error 28) at path \"/d/.x\"");
        let msg = cannot_create_beside(Path::new("x.npy"), Path::new("."), full).to_string();
        assert_eq!(msg, "cannot create a temporary file for x.npy in . (No space left on device (os error 28))");
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn commit_replaces_atomically_and_drop_leaves_target() {
        for (unnamed, durable) in [(true, false), (false, false), (true, true), (false, true)] {
            let how = Writing { durable, unnamed };
            let dir = tempfile::tempdir().unwrap();
            let target = dir.path().join("out.npy");
            std::fs::write(&target, b"old").unwrap();
            #[cfg(unix)]
            std::fs::set_permissions(&target, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
            let open = || Staged::open(&Destination::Path(target.clone()), how).unwrap();

            let mut s = open();
            s.write(b"new data").unwrap();
            if unnamed && cfg!(target_os = "linux") {
                assert_eq!(s.staging(), Staging::Unnamed);
                assert_eq!(names(dir.path()), ["out.npy"], "an unnamed file shows in its directory");
            } else {
                assert_eq!(s.staging(), Staging::Named);
            }
            drop(s);
            assert_eq!(std::fs::read(&target).unwrap(), b"old");
            assert_eq!(names(dir.path()), ["out.npy"], "temporary file left behind ({how:?})");

            let mut s = open();
            assert_eq!(s.replace_dir(), Some(dir.path()));
            s.write(b"new data").unwrap();
            assert_eq!(s.commit().unwrap(), durable);
            assert_eq!(std::fs::read(&target).unwrap(), b"new data");
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o640, "{how:?}");
            }
            assert_eq!(names(dir.path()), ["out.npy"], "{how:?}");

            // A new target: the file appears complete under its name, and nothing else does.
            let fresh = dir.path().join("fresh.npy");
            let mut s = Staged::open(&Destination::Path(fresh.clone()), how).unwrap();
            s.write(b"fresh").unwrap();
            assert!(!fresh.exists());
            s.commit().unwrap();
            assert_eq!(std::fs::read(&fresh).unwrap(), b"fresh");
            assert_eq!(names(dir.path()), ["fresh.npy", "out.npy"], "{how:?}");
        }
    }

    #[test]
    fn missing_directory_is_named() {
        let e = open(Path::new("/nonexistent-dir-xyz/out.npy")).err().unwrap();
        let msg = format!("{e:#}");
        assert!(msg.contains("directory /nonexistent-dir-xyz does not exist"), "{msg}");
        assert!(!msg.contains("tensorop-tmp"), "{msg}");
    }

    #[test]
    #[cfg(unix)]
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
