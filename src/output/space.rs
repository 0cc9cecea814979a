//! Free space, checked once before writing begins: a result its filesystem cannot hold is
//! refused before any work, not after minutes of writing. The one check and its one message,
//! for an output file, a `--part` job's data file and a container alike.

use anyhow::{bail, Result};
use std::path::Path;

/// What needs the space, and what the user can do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// An output file (or a container, or a `--part` job's data file).
    Output,
    /// `tensorop run`: the model's resources, held in temporary files.
    Resources,
}

impl Room {
    fn needs(self) -> &'static str {
        match self {
            Room::Output => "the result needs",
            Room::Resources => "the model's resources need",
        }
    }

    fn fix(self) -> &'static str {
        match self {
            Room::Output => {
                "free some space, write the output to a filesystem with room (-o PATH), or stream it with -o - (no \
                 space check)"
            }
            Room::Resources => "free some space, or point TMPDIR at a filesystem with room",
        }
    }
}

/// Refuses an output of `needed` bytes (header included) that the free space of the filesystem
/// holding `dir`, where the output file `label` is written, cannot take. The result is written
/// to a temporary file there while any old file still exists, so the whole size is needed even
/// when the file (or an input, in place) will be replaced. Where the free space cannot be
/// measured (a filesystem that reports no sizes), the run goes on and a full disk is reported
/// when a write fails.
pub fn check_free_space(label: &str, dir: &Path, needed: u64, room: Room) -> Result<()> {
    let Some(available) = crate::sys::available_bytes(dir) else {
        return Ok(());
    };
    if needed > available {
        bail!(
            "{label}: not enough free space: {} {needed} bytes ({}) but the filesystem holding {} has \
             {available} bytes ({}) available; {}",
            room.needs(),
            human_bytes(needed),
            dir.display(),
            human_bytes(available),
            room.fix(),
        );
    }
    Ok(())
}

/// `1.5 GiB`: a size for people, beside the exact byte count.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 7] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_check_refuses_what_the_filesystem_cannot_hold() {
        let dir = tempfile::tempdir().expect("tempdir");
        let label = format!("output {}", dir.path().join("out.npy").display());
        assert!(check_free_space(&label, dir.path(), 0, Room::Output).is_ok());
        let e = check_free_space(&label, dir.path(), u64::MAX, Room::Output).expect_err("2^64 - 1 bytes never fit");
        let msg = format!("{e:#}");
        for part in [&label, &u64::MAX.to_string(), "available", "-o -"] {
            assert!(msg.contains(part), "{part:?} missing from: {msg}");
        }
    }

    #[test]
    fn human_bytes_picks_a_unit() {
        assert_eq!(human_bytes(10), "10 bytes");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(16 << 30), "16.0 GiB");
    }
}
