//! Temporary files that interrupted runs left beside a target, and their removal by the next run
//! to the same target (`docs/reliability.md`, "Leftovers of a killed run").
//!
//! Every file output is staged in a file that holds an exclusive lock (`flock`) for as long as
//! its run lives: an unnamed file is locked before it ever gets a name, a named temporary file
//! right after it is made. The kernel drops the lock when the process dies, however it dies. A
//! `.NAME.XXXXXX.tensorop-tmp` beside `NAME` is therefore a leftover when it is a regular file,
//! its lock can be taken, and it was last written at least [`LEFTOVER_AGE`] ago (which covers
//! the microseconds between a named file's creation and its lock, and filesystems whose locks
//! do not reach other machines). Anything else is kept: another run's file, a file of another
//! name, a directory or a link, a file that cannot be opened or locked.

use std::fs::{self, File};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long a temporary file must have gone unwritten before its free lock marks it as left.
pub const LEFTOVER_AGE: Duration = Duration::from_secs(60);

/// Locks a staging file for the life of this process, without waiting. Best effort: where the
/// filesystem has no locks, no other run can take one either, so such leftovers are kept; a
/// file someone else already locked is never judged a leftover while they hold it.
pub fn hold(file: &File) {
    let _ = file.try_lock();
}

/// Whether `name` is a temporary file's name beside the target whose names start `prefix` and
/// end `suffix`: six ASCII letters or digits between them, as they are made.
fn is_temporary_name(name: &str, prefix: &str, suffix: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|rest| rest.strip_suffix(suffix))
        .is_some_and(|middle| middle.len() == 6 && middle.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Removes `path` if it is a leftover (see the module's rules); returns whether it did.
fn remove_if_left(path: &Path, now: SystemTime) -> bool {
    let Ok(meta) = fs::symlink_metadata(path) else { return false };
    let old = meta.modified().ok().and_then(|m| now.duration_since(m).ok()).is_some_and(|age| age >= LEFTOVER_AGE);
    if !meta.file_type().is_file() || !old {
        return false;
    }
    let Ok(file) = crate::sys::open_no_follow(path) else { return false };
    if file.try_lock().is_err() {
        return false;
    }
    // Still the file that was judged, not one renamed into its place since.
    crate::sys::same_file(&file, path) && fs::remove_file(path).is_ok()
}

/// Removes the leftovers in `dir` (the target's directory) whose names start `prefix` and end
/// `suffix`; returns their names, sorted. Errors (an unreadable directory, a file that went away) remove nothing.
pub fn remove(dir: &Path, prefix: &str, suffix: &str) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let now = SystemTime::now();
    let mut removed: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            (is_temporary_name(&name, prefix, suffix) && remove_if_left(&e.path(), now)).then_some(name)
        })
        .collect();
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIX: &str = ".out.npy.";
    const SUFFIX: &str = ".tensorop-tmp";

    fn aged(path: &Path, by: Duration) {
        let f = fs::OpenOptions::new().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - by).unwrap();
    }

    #[test]
    fn names_are_the_prefix_six_letters_or_digits_and_the_suffix() {
        for (name, is) in [
            (".out.npy.Ab12Zz.tensorop-tmp", true),
            (".out.npy.Ab12Z.tensorop-tmp", false),
            (".out.npy.Ab12Zzz.tensorop-tmp", false),
            (".out.npy.Ab-2Zz.tensorop-tmp", false),
            (".out.npy.Ab12Zz.tensorop-tmpx", false),
            ("out.npy.Ab12Zz.tensorop-tmp", false),
            (".other.npy.Ab12Zz.tensorop-tmp", false),
            (".out.npy.Ab12Zz", false),
        ] {
            assert_eq!(is_temporary_name(name, PREFIX, SUFFIX), is, "{name}");
        }
    }

    #[test]
    fn only_old_unlocked_regular_files_of_the_target_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let old = Duration::from_secs(LEFTOVER_AGE.as_secs() + 5);
        // Removed: two leftovers of this target.
        for n in [".out.npy.AAAAAA.tensorop-tmp", ".out.npy.zz0099.tensorop-tmp"] {
            fs::write(p(n), b"partial").unwrap();
            aged(&p(n), old);
        }
        // Kept: young; locked by a live run; another target's; a directory; a link; any name.
        fs::write(p(".out.npy.young1.tensorop-tmp"), b"x").unwrap();
        fs::write(p(".out.npy.locked.tensorop-tmp"), b"x").unwrap();
        aged(&p(".out.npy.locked.tensorop-tmp"), old);
        let live = File::open(p(".out.npy.locked.tensorop-tmp")).unwrap();
        hold(&live);
        fs::write(p(".b.npy.BBBBBB.tensorop-tmp"), b"x").unwrap();
        aged(&p(".b.npy.BBBBBB.tensorop-tmp"), old);
        fs::create_dir(p(".out.npy.dir000.tensorop-tmp")).unwrap();
        fs::write(p("kept.npy"), b"x").unwrap();
        aged(&p("kept.npy"), old);
        #[cfg(unix)]
        std::os::unix::fs::symlink("kept.npy", p(".out.npy.link00.tensorop-tmp")).unwrap();

        let removed = remove(dir.path(), PREFIX, SUFFIX);
        assert_eq!(removed, [".out.npy.AAAAAA.tensorop-tmp", ".out.npy.zz0099.tensorop-tmp"]);
        let mut left: Vec<String> =
            fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        let mut kept = vec![
            ".b.npy.BBBBBB.tensorop-tmp",
            ".out.npy.dir000.tensorop-tmp",
            ".out.npy.locked.tensorop-tmp",
            ".out.npy.young1.tensorop-tmp",
            "kept.npy",
        ];
        if cfg!(unix) {
            kept.insert(2, ".out.npy.link00.tensorop-tmp");
        }
        assert_eq!(left, kept);
        // Once its run is gone, the locked one is a leftover too.
        drop(live);
        assert_eq!(remove(dir.path(), PREFIX, SUFFIX), [".out.npy.locked.tensorop-tmp"]);
    }

    #[test]
    fn an_unreadable_directory_removes_nothing() {
        assert!(remove(Path::new("/nonexistent-dir-xyz"), PREFIX, SUFFIX).is_empty());
    }
}
