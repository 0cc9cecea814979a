//! Paths compared as the files they name, never as strings: a file that exists is known by its
//! identity (device and inode, or volume and file index), links followed, so `x.npy`, `./x.npy`,
//! `a/../x.npy`, an absolute spelling, a symbolic or hard link and `/proc/self/fd/N` are one file;
//! a file not made yet is known by the identity of its directory and its name (case-folded on
//! Windows, where names are case-insensitive). Standard input and output are known by what they
//! are connected to, so a report cannot replace the file a shell redirected the result into.
//!
//! The rule this serves (`docs/cli.md`, "Paths that name one file"): a report is never written
//! over an input or over the result, however spelt; such a command line is a usage error, before
//! any work.

use crate::sys::{self, FileKey, FileKind};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a path names, for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathId {
    /// An existing file or directory (links followed), and whether it is a regular file.
    Existing { key: FileKey, kind: FileKind },
    /// A file not made yet: its directory's identity and its name.
    New { dir: FileKey, name: OsString },
    /// What cannot be known (a missing directory, a dangling link, a stream that is closed):
    /// equal to nothing, so never refused here; opening it reports what is wrong.
    Unknown,
}

/// A path as a command line gives it: a file path, or one of the standard streams (`-`).
#[derive(Debug, Clone, Copy)]
pub enum Named<'a> {
    Path(&'a Path),
    Stdin,
    Stdout,
}

impl PathId {
    /// What `path` names. A dangling symbolic link names the file it points to, which writing
    /// through it would create.
    pub fn of(path: &Path) -> PathId {
        // A Windows device name (`NUL`, `CON`, a named pipe) is written in order and never
        // replaced, whatever the directory: it names no file here.
        if sys::device_name(path) {
            return PathId::Unknown;
        }
        let mut path = path.to_path_buf();
        for _ in 0..40 {
            if let Ok((key, meta)) = sys::key_of(&path) {
                return PathId::Existing { key, kind: FileKind::of(&meta) };
            }
            match std::fs::read_link(&path) {
                Ok(to) => path = directory_of(&path).filter(|_| to.is_relative()).map_or(to.clone(), |d| d.join(&to)),
                Err(_) => break,
            }
        }
        let (Some(dir), Some(name)) = (directory_of(&path), path.file_name()) else {
            return PathId::Unknown;
        };
        match sys::key_of(&dir) {
            Ok((dir, meta)) if meta.is_dir() => PathId::New { dir, name: fold(name) },
            _ => PathId::Unknown,
        }
    }

    /// What `named` names: a path, or what standard input or output is connected to.
    pub fn of_named(named: Named) -> PathId {
        let stream = match named {
            Named::Path(p) => return PathId::of(p),
            Named::Stdin => sys::std_stream(false),
            Named::Stdout => sys::std_stream(true),
        };
        match stream.as_ref().map(sys::key_of_file) {
            Some(Ok((key, meta))) => PathId::Existing { key, kind: FileKind::of(&meta) },
            _ => PathId::Unknown,
        }
    }

    /// Whether writing a file at `self` would replace or mix with what `other` names: the same
    /// regular file, or the same name not made yet. Devices (`/dev/null`), pipes and terminals
    /// are written in order and never replaced, so two writers there replace nothing.
    pub fn clashes_with(&self, other: &PathId) -> bool {
        match (self, other) {
            (PathId::Existing { key: a, kind: FileKind::Regular }, PathId::Existing { key: b, .. }) => a == b,
            (PathId::New { .. }, PathId::New { .. }) => self == other,
            _ => false,
        }
    }

    /// Whether `path` is this directory or lies inside it, however either is spelt: `path` and
    /// each of its parents are compared with `self`.
    pub fn holds(&self, path: &Path) -> bool {
        if matches!(self, PathId::Unknown) {
            return false;
        }
        let mut at = Some(absolute(path));
        while let Some(p) = at {
            if PathId::of(&p) == *self {
                return true;
            }
            at = p.parent().map(Path::to_path_buf);
        }
        false
    }
}

/// The directory `path` would be created in (`.` for a bare name).
fn directory_of(path: &Path) -> Option<PathBuf> {
    match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Some(PathBuf::from(".")),
        Some(p) => Some(p.to_path_buf()),
        None => None,
    }
}

/// `path` joined to the current directory when relative, without resolving `..` (the kernel
/// resolves it physically, through links).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A file name as the filesystem compares it: as given on Unix, upper-cased on Windows.
fn fold(name: &std::ffi::OsStr) -> OsString {
    if cfg!(windows) {
        name.to_string_lossy().to_uppercase().into()
    } else {
        name.to_os_string()
    }
}

/// How a run uses a path, for [`refuse_report_over`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Read: an input, a model, a model's source file.
    Read,
    /// Written: the result, a model's `writeFile` target.
    Write,
    /// A directory whose contents are the result (`--dxdispatch DIR`): a report anywhere inside
    /// it is refused too.
    Directory,
}

/// A role a path plays in a run, for [`refuse_report_over`]: what it is, with how it was given
/// (`input A (a.npy)`, `the result (-o x.npy)`), what it names and how the run uses it.
pub struct Role<'a> {
    pub what: String,
    pub named: Named<'a>,
    pub used: Use,
}

/// Whether writing to `named` continues a stream in order (standard output, or a descriptor
/// path such as `/dev/fd/1`, written at the descriptor's offset) rather than replacing a file.
fn in_order(named: Named) -> bool {
    match named {
        Named::Stdout => true,
        Named::Stdin => false,
        Named::Path(p) => sys::own_descriptor(p).is_some(),
    }
}

/// Refuses a report at `report` (`--report PATH`) that would replace, write into, or be written
/// into any of `roles`: the usage error's text, naming both, or `None`. A report and a result
/// written one after the other into one stream (`-o /dev/fd/1 --report /proc/self/fd/1`) replace
/// nothing, and are allowed.
pub fn refuse_report_over(report: &Path, roles: &[Role]) -> Option<String> {
    let ours = PathId::of(report);
    let report_in_order = in_order(Named::Path(report));
    roles.iter().find_map(|role| {
        let theirs = PathId::of_named(role.named);
        let (clash, how, verb) = match role.used {
            Use::Directory => (theirs.holds(report), "lies inside", "be written into"),
            Use::Write if report_in_order && in_order(role.named) => (false, "", ""),
            Use::Read if report_in_order => (ours.clashes_with(&theirs), "names the same file as", "write into"),
            Use::Read | Use::Write => (ours.clashes_with(&theirs), "names the same file as", "replace"),
        };
        clash.then(|| {
            format!(
                "--report {} {how} {}, so the report would {verb} it; give --report a path of its own (or - for \
                 standard output)",
                report.display(),
                role.what
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_file_are_one_file() {
        let d = tempfile::tempdir().expect("tempdir");
        let x = d.path().join("x.npy");
        std::fs::write(&x, b"x").expect("write");
        std::fs::create_dir(d.path().join("sub")).expect("mkdir");
        let id = PathId::of(&x);
        let doubled = format!("{}//x.npy", d.path().display());
        let dotted = d.path().join("sub").join("..").join(".").join("x.npy");
        for other in [PathBuf::from(doubled), dotted] {
            assert!(id.clashes_with(&PathId::of(&other)), "{}", other.display());
        }
        std::fs::hard_link(&x, d.path().join("hard")).expect("link");
        assert!(id.clashes_with(&PathId::of(&d.path().join("hard"))));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&x, d.path().join("soft")).expect("symlink");
            assert!(id.clashes_with(&PathId::of(&d.path().join("soft"))));
        }
        std::fs::write(d.path().join("y.npy"), b"y").expect("write");
        assert!(!id.clashes_with(&PathId::of(&d.path().join("y.npy"))));
    }

    #[test]
    fn new_names_compare_by_directory_and_name() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(d.path().join("sub")).expect("mkdir");
        let a = PathId::of(&d.path().join("new.npy"));
        assert!(matches!(a, PathId::New { .. }));
        assert!(a.clashes_with(&PathId::of(&d.path().join("sub").join("..").join("new.npy"))));
        assert!(!a.clashes_with(&PathId::of(&d.path().join("other.npy"))));
        assert_eq!(PathId::of(&d.path().join("missing").join("x")), PathId::Unknown);
        assert!(!PathId::Unknown.clashes_with(&PathId::Unknown));
        #[cfg(windows)]
        assert!(a.clashes_with(&PathId::of(&d.path().join("NEW.NPY"))));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("sub/../new.npy", d.path().join("dangling")).expect("symlink");
            assert!(a.clashes_with(&PathId::of(&d.path().join("dangling"))));
        }
    }

    #[test]
    fn a_directory_holds_what_lies_inside_it() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(d.path().join("repro")).expect("mkdir");
        let existing = PathId::of(&d.path().join("repro"));
        assert!(existing.holds(&d.path().join("repro").join("r.json")));
        assert!(existing.holds(&d.path().join("repro")));
        assert!(!existing.holds(&d.path().join("r.json")));
        let new = PathId::of(&d.path().join("later"));
        assert!(new.holds(&d.path().join("later").join("r.json")));
        assert!(!new.holds(&d.path().join("laterx")));
    }

    #[test]
    fn the_refusal_names_both_paths() {
        let d = tempfile::tempdir().expect("tempdir");
        let a = d.path().join("a.npy");
        std::fs::write(&a, b"a").expect("write");
        let spelt = d.path().join(".").join("a.npy");
        let roles = [Role { what: "input A (a.npy)".into(), named: Named::Path(&a), used: Use::Read }];
        let msg = refuse_report_over(&spelt, &roles).expect("refused");
        assert!(msg.contains("names the same file as input A (a.npy), so the report would replace it"), "{msg}");
        assert!(msg.starts_with(&format!("--report {}", spelt.display())), "{msg}");
        assert_eq!(refuse_report_over(&d.path().join("r.json"), &roles), None);
    }
}
