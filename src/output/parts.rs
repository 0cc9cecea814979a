//! `--part K/N`: N runs (processes on one machine, or machines sharing a filesystem) each compute
//! one contiguous range of one result, and the result appears at its name whole, at once, when
//! the last part is done. The protocol (`docs/parts.md`):
//!
//! - Beside the target `NAME` sits the staging directory `.NAME.tensorop-parts`, holding
//!   `job.json` (what the job is: operator, inputs, output dtype and shape, part count, and its
//!   digest; and the name of the data file), the data file `data.XXXXXX` (the whole result
//!   file, header included, each part writing its own range) and one marker
//!   `part-K-of-N-JOB.done` per finished part (`JOB` the job's digest).
//! - The first part creates the data file under a new random name, then publishes `job.json`
//!   naming it, atomically (a hard link, which never replaces). The data file is created only
//!   there, before `job.json` exists, so its name names one file for the life of the job: no
//!   later part can create another under it. Every other part compares its own job with
//!   `job.json`, refusing, naming the differences, when they disagree, and opens the data file
//!   it names, never creating it.
//! - A part writes its bytes at their offsets, closes the file (flushing it to storage first with
//!   `--fsync`), and only then creates its marker, atomically (a rename), recording the data
//!   file's name.
//! - The part that then finds all N markers claims the data file (renames it to a name of its
//!   own), checks that every marker records that name, renames it over the target (one atomic
//!   rename) and removes the staging directory.
//!
//! Names, unlike device and inode numbers, read the same on every machine that shares the
//! filesystem (NFS clients number their mounts themselves), so parts on different machines
//! commit together.
//!
//! Running a part again (a retry, a duplicate) rewrites the same bytes and the same marker; a
//! killed part leaves no marker, so its range is not counted until it runs again. Whatever
//! happens, the target holds either what it held before or the whole new result.

use super::{parent_dir, Pending};
use crate::sys;
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// `--part K/N`: part `index` (from 1) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartSpec {
    pub index: u64,
    pub count: u64,
}

/// The most parts of one job: each holds a marker file in the staging directory.
pub const MAX_PARTS: u64 = 1 << 20;

impl PartSpec {
    /// Parses `K/N`, with 1 <= K <= N <= [`MAX_PARTS`].
    pub fn parse(text: &str) -> Result<PartSpec, String> {
        let bad = || format!("--part {text}: expected K/N, part K of N, with 1 <= K <= N <= {MAX_PARTS} (e.g. 3/8)");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (k.trim().parse::<u64>().map_err(|_| bad())?, n.trim().parse::<u64>().map_err(|_| bad())?);
        if index == 0 || index > count || count > MAX_PARTS {
            return Err(bad());
        }
        Ok(PartSpec { index, count })
    }

    /// The output elements this part computes, of `elements` in all: parts are contiguous, in
    /// order, and differ in length by at most one element.
    pub fn range(self, elements: u64) -> Range<u64> {
        let at = |k: u64| (u128::from(elements) * u128::from(k) / u128::from(self.count)) as u64;
        at(self.index - 1)..at(self.index)
    }
}

/// The staging directory of one part's job, open for this part.
pub struct Stage {
    dir: PathBuf,
    target: PathBuf,
    spec: PartSpec,
    /// The job's digest, as `job.json` and the report hold it.
    pub job: String,
    /// The name of the data file this part writes into, which `job.json` published and its
    /// marker records.
    data_name: String,
}

/// The staging directory's name beside `target`.
pub fn staging_dir(target: &Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    parent_dir(target).join(format!(".{name}.tensorop-parts"))
}

/// Sorted part numbers as ranges `[first, last]`: `1 2 3 5` is `[1, 3], [5, 5]`.
pub fn ranges(parts: &[u64]) -> Vec<[u64; 2]> {
    let mut out: Vec<[u64; 2]> = Vec::new();
    for &k in parts {
        match out.last_mut() {
            Some(r) if r[1] + 1 == k => r[1] = k,
            _ => out.push([k, k]),
        }
    }
    out
}

/// How a part's finish left the job.
#[derive(Debug)]
pub enum PartDone {
    /// Not committed by this part: the parts not yet done when it finished (none when another
    /// part, finishing at the same moment, is committing the job).
    Pending(Vec<u64>),
    /// This part was the last and committed the result: every part's recorded verdict.
    Committed(Vec<Value>),
}

impl Stage {
    /// Joins (or starts) the job `description` of the target `target` as part `spec`: the
    /// staging directory, the data file (at its full size, `bytes`) and `job.json` are created
    /// if missing, or checked against this part's job. Returns the stage and the file to write
    /// the part into (the header is written by the caller, like any part's bytes).
    pub fn join(target: &Path, spec: PartSpec, description: Value, bytes: u64) -> Result<(Stage, File)> {
        let dir = staging_dir(target);
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
            Err(e) => return Err(e).with_context(|| format!("cannot create the staging directory {}", dir.display())),
        }
        let job = digest(&description);
        match enter(&dir, target, spec, &job, description, bytes) {
            Ok((data_name, file)) => Ok((Stage { dir, target: target.to_path_buf(), spec, job, data_name }, file)),
            // Removed while this part joined: a part that committed the job cleans it up.
            Err(e) if !dir.join("job.json").exists() => Err(e.context(vanished(&dir, target, "join the job"))),
            Err(e) => Err(e),
        }
    }

    /// Marks this part done (its bytes were written and the file closed, and with `durable`
    /// flushed), recording `verdict` (this part's `--verify` verdict, if any) in its marker, then
    /// commits the result if every part is done. Returns [`PartDone::Pending`] when this part
    /// did not commit it, else every part's recorded verdict, in part order (`null` for a part
    /// without one).
    pub fn finish(self, durable: bool, verdict: Option<Value>) -> Result<PartDone> {
        let marker = self.dir.join(marker_name(self.spec.index, self.spec.count, &self.job));
        let record = serde_json::json!({
            "job": self.job, "part": self.spec.index, "of": self.spec.count, "data": self.data_name,
            "verify": verdict,
        });
        let mut tmp = tempfile::Builder::new()
            .prefix(".marker.")
            .tempfile_in(&self.dir)
            .with_context(|| self.vanished("mark this part done"))?;
        let _pending = Pending::new(tmp.path());
        tmp.write_all(record.to_string().as_bytes()).context("cannot write the part's marker")?;
        tmp.persist(&marker).map_err(|e| e.error).with_context(|| self.vanished("mark this part done"))?;
        let markers: Vec<PathBuf> =
            (1..=self.spec.count).map(|k| self.dir.join(marker_name(k, self.spec.count, &self.job))).collect();
        let pending: Vec<u64> = (1..=self.spec.count).filter(|k| !markers[(*k - 1) as usize].exists()).collect();
        if !pending.is_empty() {
            return Ok(PartDone::Pending(pending));
        }
        // Claim the data file under a name of this part's own, so that no other part renames
        // it meanwhile, then check that every marker names this very file: a part counts only
        // if its bytes went into the file being committed. The name names one file only (see
        // the module's documentation), so equal names are the same file on every machine.
        let data = self.dir.join(&self.data_name);
        let claimed = self.dir.join(format!(".claim.{}.{}", std::process::id(), self.spec.index));
        match fs::rename(&data, &claimed) {
            Ok(()) => {}
            // Another part found every marker too, and claimed the file first.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(PartDone::Pending(vec![])),
            Err(e) => return Err(e).with_context(|| format!("cannot claim {}", data.display())),
        }
        // Whatever stops this commit gives the file back under its name, for the next try.
        let put_back = || {
            let _ = fs::hard_link(&claimed, &data);
            let _ = fs::remove_file(&claimed);
        };
        let file = match File::open(&claimed) {
            Ok(f) => f,
            Err(e) => {
                put_back();
                return Err(e).with_context(|| format!("cannot open {}", claimed.display()));
            }
        };
        let records: Vec<Option<Value>> =
            markers.iter().map(|m| fs::read(m).ok().and_then(|t| serde_json::from_slice(&t).ok())).collect();
        let names_it = |r: &Option<Value>| r.as_ref().is_some_and(|r| r["data"].as_str() == Some(&self.data_name));
        if !records.iter().all(names_it) {
            // Parts of another data file: put it back for whoever writes into it.
            drop(file);
            put_back();
            return Ok(PartDone::Pending(vec![]));
        }
        let verdicts = records.into_iter().map(|r| r.map_or(Value::Null, |r| r["verify"].clone())).collect();
        let synced = if durable { sys::sync_file(&file).map(|_| ()) } else { Ok(()) };
        drop(file);
        if let Err(e) = synced {
            put_back();
            return Err(e).context("cannot flush the result to storage (--fsync)");
        }
        if let Err(e) = fs::rename(&claimed, &self.target) {
            put_back();
            return Err(e).with_context(|| format!("cannot move the result into place at {}", self.target.display()));
        }
        if durable {
            let dir = parent_dir(&self.target);
            sys::sync_directory(dir)
                .with_context(|| format!("cannot flush the directory {} to storage (--fsync)", dir.display()))?;
        }
        // The result is in place; what remains is bookkeeping, which a part running at the
        // same moment may be removing too.
        let _ = fs::remove_dir_all(&self.dir);
        Ok(PartDone::Committed(verdicts))
    }

    /// [`vanished`], for this part.
    fn vanished(&self, what: &str) -> String {
        vanished(&self.dir, &self.target, what)
    }
}

/// The message for a staging directory `dir`, or the data file in it, that disappeared while a
/// part tried `what`: another run of a part committed the job to `target` meanwhile.
fn vanished(dir: &Path, target: &Path, what: &str) -> String {
    format!(
        "cannot {what} in {}: it is gone, so another run of a part committed the job (or someone removed it) \
         while this part ran; {} holds the result if the job committed",
        dir.display(),
        target.display()
    )
}

/// Joins the job `job` (`description`) of `target` in the staging directory `dir`: the data file and
/// `job.json` naming it are created if `job.json` is missing, else the job is compared with it
/// and the data file it names opened. Returns the data file's name and the file, open for
/// writing, `bytes` long.
fn enter(
    dir: &Path,
    target: &Path,
    spec: PartSpec,
    job: &str,
    description: Value,
    bytes: u64,
) -> Result<(String, File)> {
    let dir_label = dir.display().to_string();
    let job_path = dir.join("job.json");
    if !job_path.exists() {
        let (name, file) = new_data_file(dir, bytes)?;
        let staged = serde_json::json!({ "job": job, "description": description, "data": name });
        if publish_once(dir, &job_path, &staged)? {
            return Ok((name, file));
        }
        // Another part published first: its data file is the job's.
        drop(file);
        let _ = fs::remove_file(dir.join(&name));
    }
    let text = fs::read(&job_path).with_context(|| format!("cannot read {}", job_path.display()))?;
    let theirs: Value = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a tensorop job; remove {dir_label}", job_path.display()))?;
    let differences = differences("", &theirs["description"], &description);
    if !differences.is_empty() {
        bail!(
            "part {}/{} disagrees with the job already staged in {dir_label} by other parts:\n  {}\nParts of \
             one job must be given the same inputs, operator and options and the same N; if the staged job \
             is stale (its inputs changed since), remove {dir_label} and run every part again",
            spec.index,
            spec.count,
            differences.join("\n  ")
        );
    }
    let name = match theirs["data"].as_str() {
        Some(n) if n.starts_with("data.") && !n.contains(['/', '\\']) => n.to_string(),
        _ => bail!(
            "{} names no data file (staged by an older tensorop?); remove {dir_label} and run every part again",
            job_path.display()
        ),
    };
    let data = dir.join(&name);
    let file = match OpenOptions::new().read(true).write(true).open(&data) {
        Ok(file) => file,
        // Claimed by a part committing the job: only the first part ever creates it.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(e).context(vanished(dir, target, &format!("open the job's data file {name}")))
        }
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", data.display())),
    };
    let len = file.metadata().with_context(|| format!("cannot inspect {}", data.display()))?.len();
    if len != bytes {
        bail!(
            "{} holds {len} bytes, not this job's {bytes}; remove {dir_label} and run every part again",
            data.display()
        );
    }
    Ok((name, file))
}

/// Creates the job's data file in `dir` under a new random name (`data.XXXXXX`), `bytes` long
/// (sparse where the filesystem allows). Returns its name and the file, open for writing.
fn new_data_file(dir: &Path, bytes: u64) -> Result<(String, File)> {
    crate::output::space::check_free_space(
        &format!("output {}", dir.join("data").display()),
        dir,
        bytes,
        crate::output::space::Room::Output,
    )?;
    // Created as any new file is (not private, as temporary files are): it becomes the result.
    let tmp = tempfile::Builder::new()
        .prefix("data.")
        .make_in(dir, |path| OpenOptions::new().read(true).write(true).create_new(true).open(path))
        .with_context(|| format!("cannot create the data file in {}", dir.display()))?;
    tmp.as_file().set_len(bytes).with_context(|| format!("cannot size {} to {bytes} bytes", tmp.path().display()))?;
    let (file, path) = tmp.keep().map_err(|e| e.error).context("cannot keep the data file")?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok((name, file))
}

/// `part-K-of-N-JOB.done`: the job's digest in the name, so that only this job's markers count,
/// even where a staging directory outlived its job (see `docs/parts.md`).
fn marker_name(index: u64, count: u64, job: &str) -> String {
    format!("part-{index}-of-{count}-{job}.done")
}

/// Writes `value` to `path` unless `path` exists, atomically: written to a temporary file, then
/// hard-linked to its name, which fails rather than replace. Returns whether this call created
/// it.
fn publish_once(dir: &Path, path: &Path, value: &Value) -> Result<bool> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".job.")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a file in {}", dir.display()))?;
    let _pending = Pending::new(tmp.path());
    let mut text = serde_json::to_string_pretty(value).context("cannot serialise the job")?;
    text.push('\n');
    tmp.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", tmp.path().display()))?;
    match fs::hard_link(tmp.path(), path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot create {}", path.display())),
    }
}

/// FNV-1a, 64 bits, of the description's JSON text: a name for the job, the same on every
/// machine and build.
fn digest(description: &Value) -> String {
    let text = description.to_string();
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{hash:016x}")
}

/// The keys (`inputs[0].bytes`) where `theirs` and `ours` differ, with both values.
fn differences(at: &str, theirs: &Value, ours: &Value) -> Vec<String> {
    match (theirs, ours) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            let mut seen = std::collections::BTreeSet::new();
            keys.retain(|k| seen.insert(*k));
            let key = |k: &str| if at.is_empty() { k.to_string() } else { format!("{at}.{k}") };
            keys.iter()
                .flat_map(|k| {
                    differences(&key(k), a.get(*k).unwrap_or(&Value::Null), b.get(*k).unwrap_or(&Value::Null))
                })
                .collect()
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().flat_map(|(i, (x, y))| differences(&format!("{at}[{i}]"), x, y)).collect()
        }
        (a, b) if a == b => Vec::new(),
        (a, b) => vec![format!("{at}: the staged job has {a}, this part {b}")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_elements_once_in_order() {
        for (elements, count) in [(0u64, 1u64), (7, 3), (10, 10), (3, 8), (u64::MAX, 7), (1000, 1)] {
            let mut next = 0;
            for index in 1..=count {
                let r = PartSpec { index, count }.range(elements);
                assert_eq!(r.start, next, "{elements} in {count}");
                assert!(r.end - r.start <= elements / count + 1);
                next = r.end;
            }
            assert_eq!(next, elements);
        }
    }

    #[test]
    fn part_numbers_are_checked() {
        assert_eq!(PartSpec::parse("3/8"), Ok(PartSpec { index: 3, count: 8 }));
        for bad in ["0/8", "9/8", "8", "a/b", "1/0", "-1/2", "1/2/3", "1/2000000"] {
            assert!(PartSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn differences_name_the_keys() {
        let a = serde_json::json!({"op": "sub", "inputs": [{"bytes": 1}, {"bytes": 2}]});
        let b = serde_json::json!({"op": "sqdiff", "inputs": [{"bytes": 1}, {"bytes": 3}]});
        assert_eq!(
            differences("", &a, &b),
            [
                "op: the staged job has \"sub\", this part \"sqdiff\"",
                "inputs[1].bytes: the staged job has 2, this part 3"
            ]
        );
        assert!(differences("", &a, &a).is_empty());
    }
}
