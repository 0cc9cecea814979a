//! What the stages of a single-pair run produced ([`Trace`]), and the report built from it and
//! the outcome at the end (`docs/report.md`), so every outcome (ok, invalid, error, a closed
//! pipe) gets the same report shape.

use crate::backend::BusyTimes;
use crate::backend::DeviceReport;
use crate::config::Config;
use crate::outcome::Outcome;
use crate::output::Staging;
use crate::plan::Plan;
use crate::report::{
    ms, BackendInfo, BroadcastInfo, Head, InputInfo, OutputInfo, PartInfo, Report, RunStatus, Timings,
};
use crate::spec::checks::{Status, Validation};
use crate::spec::dml::{descriptors, Descriptors};
use crate::spec::level::LevelChoice;
use crate::spec::matrix::row_for;
use crate::summary::Summary;
use std::time::Duration;

/// What the stages of a run produced, as far as the run got.
#[derive(Default)]
pub(super) struct Trace {
    pub(super) inputs: Vec<InputInfo>,
    /// Header bytes read while opening the inputs.
    pub(super) bytes_read: u64,
    /// Opening the inputs, plus any C-order copies and the backend's reads.
    pub(super) read: Duration,
    pub(super) validation: Option<Validation>,
    pub(super) validate: Duration,
    pub(super) plan: Option<Plan>,
    /// wgpu: the device and its start-up time.
    pub(super) device: Option<(DeviceReport, Duration)>,
    /// Header and data bytes handed to the output, also when the run failed part way.
    pub(super) bytes_written: u64,
    /// The threads the backend computed on, when it finished.
    pub(super) threads_used: Option<usize>,
    /// Where the backend's time went, when it finished.
    pub(super) busy: Option<BusyTimes>,
    /// Wall time of the streaming stage, when the output was committed.
    pub(super) execute: Option<Duration>,
    /// `--stats`: the summary of a committed output.
    pub(super) summary: Option<Summary>,
    /// `--verify`: the verdict, over what was compared (complete only for a committed output).
    pub(super) verified: Option<crate::backend::directml::verify::Verified>,
    /// `--device-dependence`: the counts, once the plan was made.
    pub(super) dependence: Option<crate::verdict::conformant::Dependence>,
    /// `--backend directml`: the strides of the inputs DirectML read, where an input was
    /// copied to C order first (they then differ from the plan's).
    pub(super) strides_executed: Option<[Vec<u64>; 2]>,
    /// How the output reached its name, once it was opened.
    pub(super) staging: Option<Staging>,
    /// `--fsync`: whether the committed output was flushed to storage.
    pub(super) synced: bool,
    /// Temporary files of interrupted runs that opening the output removed.
    pub(super) leftovers: Vec<String>,
    /// `--part`: the part, as far as the run got.
    pub(super) part: Option<PartInfo>,
}

impl Trace {
    /// The DirectML descriptors of a planned job at a DirectML level.
    fn dml(&self, cfg: &Config) -> Option<Descriptors> {
        let (LevelChoice::Dml(level), Some(plan)) = (cfg.level, &self.plan) else { return None };
        let row = row_for(cfg.sem.op, level)?;
        Some(descriptors(cfg.sem.op, row, plan.dtype, &plan.out_shape, &plan.strides))
    }

    /// The report of a run that got as far as this trace and ended with `outcome` after `total`.
    pub(super) fn report(self, cfg: &Config, outcome: &Outcome, total: Duration) -> Report {
        let (status, error) = outcome.status();
        let checks = self.validation.as_ref().map(|v| v.checks.clone()).unwrap_or_default();
        let committed = self.execute.is_some();
        let gpu = cfg.backend.kind().on_gpu();
        let directml = cfg.backend.kind() == crate::backend::BackendKind::Directml && committed;
        let busy = self.busy.unwrap_or_default();
        let dml = if status == RunStatus::Ok { self.dml(cfg) } else { None };
        let summary = if status == RunStatus::Ok { self.summary.clone() } else { None };
        Report {
            head: Head::new(
                status,
                status == RunStatus::Ok && !checks.is_empty() && checks.iter().all(|c| c.status != Status::Fail),
                error,
            ),
            op: cfg.sem.op.name(),
            dml_operator: cfg.sem.op.dml_operator(),
            float16_rule: cfg.sem.float16.name(),
            feature_level: cfg.level.to_string(),
            support_row: self.validation.as_ref().and_then(|v| v.support_row).map(|r| r.to_string()),
            minimum_feature_level: self.validation.as_ref().and_then(|v| v.minimum_level).map(|l| l.to_string()),
            inputs: self.inputs,
            output: self.plan.as_ref().filter(|_| committed).map(|p| OutputInfo {
                path: cfg.output.label(),
                dtype: p.dtype.name().into(),
                shape: p.out_shape.clone(),
                temporary_file: self.staging.and_then(Staging::name),
                removed_leftovers: self.leftovers.clone(),
                fsync: self.synced,
            }),
            broadcast: self.plan.as_ref().map(|p| BroadcastInfo {
                mode: cfg.broadcast.name(),
                shape: p.out_shape.clone(),
                strides: p.strides.clone(),
            }),
            checks,
            dml_executed: match (&dml, &self.strides_executed, cfg.level, &self.plan) {
                (Some(_), Some(s), LevelChoice::Dml(level), Some(plan)) => {
                    row_for(cfg.sem.op, level).map(|row| descriptors(cfg.sem.op, row, plan.dtype, &plan.out_shape, s))
                }
                _ => None,
            },
            dml,
            stats: summary,
            verify: self.verified,
            device_dependence: self.dependence,
            backend: BackendInfo {
                name: cfg.backend.name(),
                device: self.device.as_ref().map(|d| d.0.clone()),
                threads: (!gpu).then_some(cfg.threads),
                threads_used: self.threads_used.filter(|_| committed && !gpu),
            },
            elements: self.plan.as_ref().map_or(0, |p| p.elements),
            bytes_read: self.bytes_read,
            bytes_written: self.bytes_written,
            dry_run: cfg.dry_run,
            part: self.part.map(|mut p| {
                if let (Some(plan), Some(spec)) = (&self.plan, cfg.part) {
                    let r = spec.range(plan.elements);
                    (p.first, p.end) = (Some(r.start), Some(r.end));
                }
                p
            }),
            timings_ms: Timings {
                read: ms(self.read + if committed { busy.read } else { Duration::ZERO }),
                validate: ms(self.validate),
                compute: if committed { ms(busy.compute) } else { 0.0 },
                write: if committed { ms(busy.write) } else { 0.0 },
                execute: self.execute.map_or(0.0, ms),
                total: ms(total),
                init: self.device.as_ref().map(|d| ms(d.1)),
                upload: (gpu && committed).then(|| ms(busy.upload)),
                download: (gpu && committed).then(|| ms(busy.download)),
                summarise: (cfg.summarise && committed).then(|| ms(busy.summarise)),
                device: directml.then(|| ms(busy.device)),
                dispatch: directml.then(|| ms(busy.dispatch)),
            },
        }
    }
}
