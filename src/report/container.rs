//! The JSON report of a container run (`docs/report.md`, "Container runs"): the keys a single
//! pair's report has that describe the whole run (tool, op, level, status, backend, timings),
//! one entry per member pair with the single pair's keys for that pair, the members only one
//! input holds, and the totals.

use super::{BackendInfo, BroadcastInfo, RunStatus};
use crate::spec::checks::Check;
use crate::summary::Summary;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct ContainerReport {
    #[serde(flatten)]
    pub head: super::Head,
    pub op: &'static str,
    pub dml_operator: &'static str,
    /// `--float16` (`--half-precision` is `per-step`), spelt as the flag takes it.
    pub float16_rule: &'static str,
    pub feature_level: String,
    pub inputs: [ContainerInput; 2],
    pub members: Vec<MemberEntry>,
    pub unpaired: Unpaired,
    pub totals: Totals,
    /// `--verify` (directml backend): every pair's output against the CPU's reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::backend::directml::verify::Verified>,
    pub output: Option<ContainerOutput>,
    pub backend: BackendInfo,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub dry_run: bool,
    pub timings_ms: ContainerTimings,
}

/// One input of a container run.
#[derive(Debug, Serialize)]
pub struct ContainerInput {
    pub path: String,
    /// `npz`, `safetensors` or `npy` (a single array applied to every member).
    pub format: &'static str,
    /// How many members it holds (1 for `npy`).
    pub members: usize,
}

/// One side of a member pair.
#[derive(Debug, Clone, Serialize)]
pub struct MemberInput {
    pub path: String,
    /// The member's name in its container; `null` for a single `.npy`.
    pub member: Option<String>,
    pub dtype: String,
    pub shape: Vec<u64>,
}

/// A member pair: what a single pair's report says, for this pair.
#[derive(Debug, Serialize)]
pub struct MemberEntry {
    pub name: String,
    /// `ok` (checked, and computed unless `--dry-run`) or `invalid` (a check failed).
    pub status: RunStatus,
    pub inputs: [MemberInput; 2],
    /// The two sides' shapes differ (broadcast, by `--broadcast numpy` or a `.npy` against a
    /// container): such a pair is counted as differing, whatever its result.
    pub shapes_differ: bool,
    /// `--stats` over two containers' members of one shape: whether A's member is B's bit for
    /// bit (a NaN equals only the same NaN; +0 and -0 differ); `null` otherwise.
    pub identical: Option<bool>,
    pub support_row: Option<String>,
    pub minimum_feature_level: Option<String>,
    pub checks: Vec<Check>,
    pub broadcast: Option<BroadcastInfo>,
    pub dml: Option<crate::spec::dml::Descriptors>,
    pub elements: u64,
    pub stats: Option<Summary>,
    /// With `--stats`, once computed: the pair's place among the computed pairs, worst first (1
    /// the worst), in the order `--stats -v` lists them on standard error: by mean squared error
    /// for `sqdiff`, by the largest |difference| for `sub`, a NaN first, equal ones by name.
    pub rank: Option<usize>,
    /// The member's name in the output container, once it was written there.
    pub output_member: Option<String>,
}

/// Members that only one input holds (after `--member`).
#[derive(Debug, Default, Serialize)]
pub struct Unpaired {
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// Members of one name whose shapes differ between two containers (not computed: a changed
    /// tensor is a difference, not a broadcast, unless `--broadcast` is given): the name and
    /// both shapes.
    pub shape_changed: Vec<ShapeChanged>,
    /// `--skip-unpaired`: they were skipped instead of failing the run.
    pub skipped: bool,
}

/// The whole run, over every member pair.
#[derive(Debug, Default, Serialize)]
pub struct Totals {
    pub pairs: usize,
    pub ok: usize,
    pub invalid: usize,
    pub unpaired: usize,
    /// Members whose shape changed (`unpaired.shape_changed`).
    pub shape_changed: usize,
    /// The newest of the members' minimum levels: the level the whole container pair needs;
    /// `null` when some member passes at no DirectML level.
    pub minimum_feature_level: Option<String>,
    pub elements: u64,
    /// Member pairs that differ (with `--stats`): a result holding a non-zero element, inputs of
    /// different shapes (broadcast), or a changed shape (not computed).
    pub differing: Option<usize>,
    /// `--stats`: every member's result summarised as one: equal to the summary of all their
    /// elements in one array, bit for bit. `null` when members of integer and float dtypes are
    /// mixed; then `stats_by_kind` has one of each.
    pub stats: Option<Summary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats_by_kind: Option<StatsByKind>,
}

/// Merged summaries of the float members and of the integer members, when both exist.
#[derive(Debug, Serialize)]
pub struct StatsByKind {
    pub float: Summary,
    pub int: Summary,
}

#[derive(Debug, Serialize)]
pub struct ContainerOutput {
    pub path: String,
    pub format: &'static str,
    pub members: usize,
    /// As a single pair's `output.temporary_file`.
    pub temporary_file: Option<&'static str>,
    pub removed_leftovers: Vec<String>,
    pub fsync: bool,
}

/// Milliseconds: `open` (headers and directories), `validate` (every member's checks),
/// `execute` (computing and writing every member) and `total`.
#[derive(Debug, Default, Serialize)]
pub struct ContainerTimings {
    pub open: f64,
    pub validate: f64,
    pub execute: f64,
    pub total: f64,
}
/// A member whose shape differs between two containers (`unpaired.shape_changed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShapeChanged {
    pub name: String,
    /// Its shape in A and in B.
    pub shapes: [Vec<u64>; 2],
}
