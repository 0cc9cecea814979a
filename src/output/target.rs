//! What an output path names, decided once, before anything is written: a file to replace
//! atomically (after following symbolic links to the file they finally name), or something to
//! write in order and never rename over (a device, a FIFO, a socket, a descriptor path, and on
//! Windows a device name such as `NUL`, `CON` or `\\.\pipe\NAME`). The
//! rules, for `-o` and `--report` alike, are in `docs/cli.md`, "Output targets".

use crate::sys::{self, FileKind};
use anyhow::{bail, Context, Result};
use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};

/// Links followed before giving up, as the kernel does (`ELOOP`).
const MAX_LINKS: usize = 40;

/// How an output is written.
#[derive(Debug)]
pub enum Target {
    /// A regular file, or none yet: a temporary file beside `path`, renamed over it when complete.
    /// `existing` is the file being replaced, whose permission bits and owner are kept.
    Replace { path: PathBuf, existing: Option<Metadata> },
    /// This process's descriptor (`-`, `/dev/stdout`, `/dev/fd/N`): duplicated and written at
    /// its offset.
    Descriptor(i32),
    /// A character or block device, a FIFO, another process's descriptor link, or a Windows
    /// device name (`NUL`, `CON`, a named pipe): opened and written in order.
    Device(PathBuf),
    /// A Unix socket: connected to and written in order.
    Socket(PathBuf),
}

impl Target {
    /// Decides what `given` names. Refuses, naming the path and the fix: a directory, a dangling
    /// symbolic link, a loop of links, and a path whose directory does not exist.
    pub fn resolve(given: &Path) -> Result<Target> {
        let mut cur = given.to_path_buf();
        for _ in 0..=MAX_LINKS {
            if let Some(fd) = sys::own_descriptor(&cur) {
                return Ok(Target::Descriptor(fd));
            }
            if sys::foreign_descriptor(&cur) || sys::device_name(&cur) {
                return Ok(Target::Device(cur));
            }
            let meta = match fs::symlink_metadata(&cur) {
                Ok(meta) => meta,
                Err(e) if cur != given && e.kind() == io::ErrorKind::NotFound => bail!(
                    "{} is a symbolic link to {}, which does not exist; tensorop does not write through \
                     a dangling link (nor does cp): create the file it names, or remove the link",
                    given.display(),
                    cur.display()
                ),
                Err(e) => {
                    check_directory(&cur)?;
                    if e.kind() == io::ErrorKind::NotFound {
                        return Ok(Target::Replace { path: cur, existing: None });
                    }
                    return Err(e).with_context(|| format!("cannot inspect {}", cur.display()));
                }
            };
            match FileKind::of(&meta) {
                FileKind::Symlink => {
                    let to = fs::read_link(&cur).with_context(|| format!("cannot read the link {}", cur.display()))?;
                    // A relative link is relative to the directory holding it, which the kernel
                    // resolves physically: join without normalising `..`.
                    cur = match cur.parent() {
                        Some(dir) if to.is_relative() => dir.join(to),
                        _ => to,
                    };
                }
                FileKind::Directory if cur == given => {
                    bail!("{} is a directory; give a file path", given.display())
                }
                FileKind::Directory => {
                    bail!("{} is a symbolic link to the directory {}; give a file path", given.display(), cur.display())
                }
                FileKind::Regular => {
                    if let Some(why) = sys::replace_refusal(&cur, &meta) {
                        bail!(why);
                    }
                    return Ok(Target::Replace { path: cur, existing: Some(meta) });
                }
                FileKind::Device => return Ok(Target::Device(cur)),
                FileKind::Socket => return Ok(Target::Socket(cur)),
            }
        }
        bail!("{}: more than {MAX_LINKS} symbolic links in a row (a loop?); point it at a file", given.display())
    }
}

/// Refuses a path whose directory is missing or is not a directory, naming that directory.
fn check_directory(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => bail!("{} is not a directory, so {} cannot be created in it", dir.display(), path.display()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(
            "the directory {} does not exist; create it first ({} {}) or choose another path",
            dir.display(),
            // PowerShell's and cmd's mkdir make the missing parents too.
            if cfg!(windows) { "mkdir" } else { "mkdir -p" },
            dir.display()
        ),
        Err(e) => Err(e).with_context(|| format!("cannot inspect the directory {}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(p: &Path) -> String {
        match Target::resolve(p) {
            Ok(Target::Replace { path, existing }) => format!("replace {} {}", path.display(), existing.is_some()),
            Ok(Target::Descriptor(fd)) => format!("fd {fd}"),
            Ok(Target::Device(p)) => format!("device {}", p.display()),
            Ok(Target::Socket(p)) => format!("socket {}", p.display()),
            Err(e) => format!("error {e:#}"),
        }
    }

    #[test]
    #[cfg(unix)]
    fn files_links_and_refusals() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().expect("tempdir");
        let p = |n: &str| d.path().join(n);
        fs::write(p("real"), b"x").unwrap();
        symlink("real", p("l1")).unwrap();
        symlink(p("l1"), p("l2")).unwrap();
        symlink("missing", p("dangling")).unwrap();
        symlink("loop", p("loop")).unwrap();
        fs::create_dir(p("sub")).unwrap();
        symlink("sub", p("dirlink")).unwrap();

        assert_eq!(resolve(&p("new")), format!("replace {} false", p("new").display()));
        assert_eq!(resolve(&p("real")), format!("replace {} true", p("real").display()));
        assert_eq!(resolve(&p("l1")), format!("replace {} true", p("real").display()));
        assert_eq!(resolve(&p("l2")), format!("replace {} true", p("real").display()));
        assert!(resolve(&p("dangling")).contains("dangling link"), "{}", resolve(&p("dangling")));
        assert!(resolve(&p("loop")).contains("symbolic links in a row"));
        assert!(resolve(&p("sub")).contains("is a directory"));
        assert!(resolve(&p("dirlink")).contains("link to the directory"));
        let missing = p("no/such/out.npy");
        let msg = resolve(&missing);
        assert!(msg.contains(&format!("the directory {} does not exist", p("no/such").display())), "{msg}");
        assert!(!msg.contains("tensorop-tmp"), "names a temporary file: {msg}");
        assert!(resolve(&p("real/out.npy")).contains("is not a directory"));
        assert_eq!(resolve(Path::new("/dev/stdout")), "fd 1");
        assert_eq!(resolve(Path::new("/dev/fd/5")), "fd 5");
    }

    #[test]
    #[cfg(windows)]
    fn device_names_are_written_in_order_and_files_refused_up_front() {
        let d = tempfile::tempdir().expect("tempdir");
        for name in ["NUL", "nul", "CON", r"\\.\pipe\x", "//./pipe/x"] {
            assert_eq!(resolve(Path::new(name)), format!("device {name}"));
        }
        let held = d.path().join("held.npy");
        fs::write(&held, b"x").unwrap();
        let open = {
            use std::os::windows::fs::OpenOptionsExt;
            fs::OpenOptions::new().read(true).share_mode(0).open(&held).unwrap()
        };
        assert!(resolve(&held).contains("is open in another program"), "{}", resolve(&held));
        drop(open);
        assert_eq!(resolve(&held), format!("replace {} true", held.display()));
        let mut perms = fs::metadata(&held).unwrap().permissions();
        perms.set_readonly(true);
        fs::set_permissions(&held, perms).unwrap();
        assert!(resolve(&held).contains("is read-only"), "{}", resolve(&held));
        assert!(resolve(&d.path().join("sub")).starts_with("replace"));
    }

    #[test]
    fn relative_names_resolve_beside_the_current_directory() {
        assert_eq!(resolve(Path::new("surely-not-here.npy")), "replace surely-not-here.npy false");
    }
}
