//! The JSON report: serde structs that mirror the documented keys (`docs/report.md`), filled in
//! as the run goes, and written (pretty-printed, newline-terminated) to its destination on every
//! outcome.

pub mod container;
pub mod merge;
pub(crate) mod summary;

use crate::npy::header::Header;
use crate::output::{Destination, Staged, Writing};
use crate::spec::checks::Check;
use anyhow::{Context, Result};
use serde::Serialize;

/// How a run ended, as the report's `status` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Ok,
    Invalid,
    Error,
    /// Containers: members without a partner, and no `--skip-unpaired`.
    Unpaired,
}

/// The keys every report starts with, for a single pair, a container pair and `tensorop run`
/// alike: the schema, the tool, and how the run ended.
#[derive(Debug, Serialize)]
pub struct Head {
    pub schema_version: u32,
    pub tool: Tool,
    pub status: RunStatus,
    /// The run ended `ok` and every check it made passed.
    pub valid: bool,
    pub error: Option<String>,
}

impl Head {
    pub fn new(status: RunStatus, valid: bool, error: Option<String>) -> Head {
        Head {
            schema_version: 1,
            tool: Tool { name: "tensorop", version: env!("CARGO_PKG_VERSION") },
            status,
            valid,
            error,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub head: Head,
    pub op: &'static str,
    pub dml_operator: &'static str,
    /// `--float16` (`--half-precision` is `per-step`), spelt as the flag takes it.
    pub float16_rule: &'static str,
    pub feature_level: String,
    pub support_row: Option<String>,
    /// The oldest DirectML level at which these inputs pass every check; `None` when no level
    /// does or the inputs could not be read.
    pub minimum_feature_level: Option<String>,
    pub inputs: Vec<InputInfo>,
    pub output: Option<OutputInfo>,
    pub broadcast: Option<BroadcastInfo>,
    pub checks: Vec<Check>,
    /// The DirectML descriptors of the job, when it ran (or was planned, with `--dry-run`) at a
    /// DirectML level.
    pub dml: Option<crate::spec::dml::Descriptors>,
    /// `--backend directml`: the descriptors DirectML ran, where they differ from `dml` (an
    /// input copied to C order first, a Fortran-order input above the copy threshold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dml_executed: Option<crate::spec::dml::Descriptors>,
    /// `--stats`: the summary of the result, when one was computed.
    pub stats: Option<crate::summary::Summary>,
    /// `--verify` (directml backend): DirectML's output against the CPU's reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::backend::directml::verify::Verified>,
    /// `--device-dependence`: the elements a conformant DirectML may give differently, by cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_dependence: Option<crate::verdict::conformant::Dependence>,
    pub backend: BackendInfo,
    pub elements: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub dry_run: bool,
    /// `--part K/N`: which part this run was, of which job, and whether it committed the result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<PartInfo>,
    pub timings_ms: Timings,
}

/// The report's `part` (`--part`).
#[derive(Debug, Clone, Serialize)]
pub struct PartInfo {
    pub index: u64,
    pub count: u64,
    /// The part's output elements, `[first, end)`, once the output's size was known.
    pub first: Option<u64>,
    pub end: Option<u64>,
    /// The job's digest, once this part joined it.
    pub job: Option<String>,
    /// Whether this part, the last to finish, moved the whole result into place.
    pub committed: bool,
    /// The parts not yet done when this one finished, as ranges `[first, last]` (empty when it
    /// committed the job).
    pub pending: Vec<[u64; 2]>,
}

#[derive(Debug, Serialize)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

/// An input's header, as `tensorop info` also prints it.
#[derive(Debug, Clone, Serialize)]
pub struct InputInfo {
    pub path: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub byte_order: &'static str,
    pub fortran_order: bool,
    pub npy_version: String,
}

impl InputInfo {
    pub fn new(path: &str, h: &Header) -> InputInfo {
        InputInfo {
            path: path.to_string(),
            dtype: h.dtype.name(),
            shape: h.shape.clone(),
            byte_order: h.byte_order.name(),
            fortran_order: h.fortran_order,
            npy_version: h.version_string(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct OutputInfo {
    pub path: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    /// How the file reached its name: `"unnamed"` (Linux `O_TMPFILE`), `"named"` (a temporary
    /// file beside it), `null` when written in order (standard output, devices, FIFOs).
    pub temporary_file: Option<&'static str>,
    /// Temporary files that interrupted runs had left beside the target, removed by this one.
    pub removed_leftovers: Vec<String>,
    /// `--fsync`: the result was flushed to storage (and, for a file, its directory).
    pub fsync: bool,
}

#[derive(Debug, Serialize)]
pub struct BroadcastInfo {
    pub mode: &'static str,
    pub shape: Vec<u64>,
    /// Per input, the element stride of each output dimension; 0 = broadcast.
    pub strides: [Vec<u64>; 2],
}

#[derive(Debug, Serialize)]
pub struct BackendInfo {
    pub name: &'static str,
    /// wgpu only: adapter, device type, driver, API, features, `flushes_subnormals`.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub device: Option<crate::backend::DeviceReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads_used: Option<usize>,
}

/// Milliseconds per stage. `read`, `compute` and `write` are busy time summed over threads
/// (they overlap while streaming); `execute` is the wall time of the streaming stage and `total`
/// the wall time of the whole run.
#[derive(Debug, Default, Serialize)]
pub struct Timings {
    pub read: f64,
    pub validate: f64,
    pub compute: f64,
    pub write: f64,
    pub execute: f64,
    pub total: f64,
    /// wgpu only: device start-up, uploads and downloads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub download: Option<f64>,
    /// `--stats`: adding the result to the summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarise: Option<f64>,
    /// directml only: the device's time on the run's command lists, and in DirectML's
    /// dispatches of the operator (timestamp queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatch: Option<f64>,
}

/// Milliseconds with microsecond resolution.
pub fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

impl Report {
    /// Opens where the report will go. Called before any work, so an unwritable report path
    /// fails the run before an output is committed.
    pub fn open_sink(dest: &Destination, how: Writing) -> Result<Staged> {
        Staged::open(dest, how).with_context(|| format!("report {}", dest.label()))
    }

    /// Serialises the report into `sink` and commits it.
    pub fn write_to(&self, sink: Staged) -> Result<()> {
        write_json(self, sink)
    }
}

/// Serialises a report (pretty-printed, newline-terminated) into `sink` and commits it.
pub(crate) fn write_json(report: &impl Serialize, mut sink: Staged) -> Result<()> {
    let mut text = serde_json::to_string_pretty(report).context("cannot serialise the report")?;
    text.push('\n');
    sink.write(text.as_bytes())?;
    sink.commit().map(|_| ())
}
