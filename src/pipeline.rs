//! One `sub`/`sqdiff` run, start to finish, flowing one way: open inputs (headers only) ->
//! checks -> plan (`plan`) -> backend streams chunks into the output sink -> atomic
//! commit -> report. Each stage records what it produced in a `Trace`; the report is built
//! from the trace and the outcome at the end, whatever happened, and the outcome maps to an exit
//! status.

use crate::backend::{self, wgpu::DeviceReport, BackendKind, BusyTimes, Emit, Job, Positional};
use crate::config::Config;
use crate::npy::fortran;
use crate::npy::input::NpyInput;
use crate::op::Op;
use crate::output::parts::{PartSpec, Stage};
use crate::output::target::Target;
use crate::output::{BrokenPipe, Destination, Sink, Staging};
use crate::plan::{Plan, RESIDENT_BYTES};
use crate::progress::Progress;
use crate::report::summary;
use crate::report::{
    ms, BackendInfo, BroadcastInfo, InputInfo, OutputInfo, PartInfo, Report, RunStatus, Timings, Tool,
};
use crate::spec::checks::{validate, Status, TensorSpec, Validation};
use crate::spec::dml::{descriptors, Descriptors};
use crate::spec::level::LevelChoice;
use crate::spec::matrix::row_for;
use crate::summary::Summary;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::time::{Duration, Instant};

/// How a run ended.
#[derive(Debug)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// A check failed: exit 3. Holds the failed checks' messages.
    Invalid(String),
    /// A runtime error: exit 1.
    Error(anyhow::Error),
    /// Containers: members that only one input holds, without `--skip-unpaired`: exit 5.
    Unpaired(String),
}

impl Outcome {
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Error(_) => 1,
            Outcome::Invalid(_) => 3,
            Outcome::Unpaired(_) => 5,
        }
    }
}

/// The name of the mean of `op`'s result, where it has one of its own (`--stats` prints it).
pub(crate) fn mean_name(op: Op) -> Option<&'static str> {
    match op {
        Op::Sub => None,
        Op::SqDiff => Some("mean squared error"),
    }
}

/// Runs `cfg`, writes the report if asked, and returns the outcome.
pub fn run(cfg: &Config) -> Outcome {
    let start = Instant::now();
    let report_sink = match cfg.report.as_ref().map(|dest| Report::open_sink(dest, cfg.writing)).transpose() {
        Ok(s) => s,
        Err(e) => return Outcome::Error(e),
    };
    if let (Some(dest), Some(sink)) = (&cfg.report, &report_sink) {
        note_leftovers(cfg, dest, sink);
    }
    let part = cfg.part.map(|p| PartInfo {
        index: p.index,
        count: p.count,
        first: None,
        end: None,
        job: None,
        committed: false,
    });
    let mut trace = Trace { part, ..Trace::default() };
    let result = match open_inputs(cfg, &mut trace) {
        Ok(Opened::Pair(inputs)) => stages(cfg, inputs, &mut trace),
        Ok(Opened::Containers(_)) if cfg.part.is_some() => Err(anyhow::anyhow!(
            "--part splits the result of one pair of .npy files; a container pair is split by member instead \
             (--member PATTERN), one run per group of members"
        )),
        Ok(Opened::Containers(inputs)) => {
            return crate::container::run::run(cfg, *inputs, trace.read, report_sink, start);
        }
        Err(e) => Err(e),
    };
    let outcome = match result {
        Ok(o) => o,
        // The reader of standard output went away: the pipeline ended early, as intended.
        Err(e) if e.is::<BrokenPipe>() => Outcome::Ok,
        Err(e) => Outcome::Error(e),
    };
    if let (Outcome::Ok, Some(s), Some(p), false) = (&outcome, &trace.summary, &trace.plan, cfg.quiet) {
        let label = summary::Label { of: cfg.sem.op.name(), dtype: p.dtype.name(), mean: mean_name(cfg.sem.op) };
        eprint!("{}", summary::human(s, &label));
    }
    if let (Outcome::Ok, true, Some(p), Some(v), false) =
        (&outcome, cfg.dry_run, &trace.plan, &trace.validation, cfg.quiet)
    {
        eprintln!("tensorop: {}", crate::notices::dry_run_verdict(cfg, p, v));
    }
    let report = trace.report(cfg, &outcome, start.elapsed());
    with_report(cfg, outcome, report_sink, |sink| report.write_to(sink))
}

/// Writes the report (when asked for) with `write` and returns the run's outcome: a failure to
/// write it fails a run that succeeded, and is printed beside the error of one that failed.
pub(crate) fn with_report(
    cfg: &Config,
    outcome: Outcome,
    report_sink: Option<Sink>,
    write: impl FnOnce(Sink) -> Result<()>,
) -> Outcome {
    let (Some(dest), Some(sink)) = (&cfg.report, report_sink) else { return outcome };
    match (write(sink).with_context(|| format!("report {}", dest.label())), outcome) {
        (Ok(()), outcome) => outcome,
        (Err(e), Outcome::Ok) => Outcome::Error(e),
        (Err(e), other) => {
            eprintln!("tensorop: error: {e:#}");
            other
        }
    }
}

/// What the stages of a run produced, as far as the run got.
#[derive(Default)]
struct Trace {
    inputs: Vec<InputInfo>,
    /// Header bytes read while opening the inputs.
    bytes_read: u64,
    /// Opening the inputs, plus any C-order copies and the backend's reads.
    read: Duration,
    validation: Option<Validation>,
    validate: Duration,
    plan: Option<Plan>,
    /// wgpu: the device and its start-up time.
    device: Option<(DeviceReport, Duration)>,
    /// Header and data bytes handed to the output, also when the run failed part way.
    bytes_written: u64,
    /// The threads the backend computed on, when it finished.
    threads_used: Option<usize>,
    /// Where the backend's time went, when it finished.
    busy: Option<BusyTimes>,
    /// Wall time of the streaming stage, when the output was committed.
    execute: Option<Duration>,
    /// `--stats`: the summary of a committed output.
    summary: Option<Summary>,
    /// How the output reached its name, once it was opened.
    staging: Option<Staging>,
    /// `--fsync`: whether the committed output was flushed to storage.
    synced: bool,
    /// Temporary files of interrupted runs that opening the output removed.
    leftovers: Vec<String>,
    /// `--part`: the part, as far as the run got.
    part: Option<PartInfo>,
}

/// Says on standard error (unless `--quiet`) which temporary files of interrupted runs opening
/// `sink` removed.
pub(crate) fn note_leftovers(cfg: &Config, dest: &Destination, sink: &Sink) {
    if !cfg.quiet {
        for name in sink.removed_leftovers() {
            eprintln!("tensorop: removed {name}, left beside {} by an interrupted run", dest.label());
        }
    }
}

/// The stages in order; each records its product in `trace` before the next starts.
fn stages(cfg: &Config, inputs: Vec<NpyInput>, trace: &mut Trace) -> Result<Outcome> {
    crate::notices::idle_flags(cfg, &inputs);
    let [a, b] = [&inputs[0], &inputs[1]];
    let t = Instant::now();
    fn spec(i: usize, x: &NpyInput) -> TensorSpec<'_> {
        TensorSpec { name: format!("{} ({})", ["A", "B"][i], x.label), dtype: &x.header.dtype, shape: &x.header.shape }
    }
    let validation = trace.validation.insert(validate(cfg.sem.op, cfg.level, cfg.broadcast, &spec(0, a), &spec(1, b)));
    trace.validate = t.elapsed();
    if !validation.valid() {
        return Ok(Outcome::Invalid(validation.failure_summary()));
    }
    let plan = trace.plan.insert(Plan::new(validation, [a, b])?).clone();
    if let Some(stage) = &cfg.export {
        crate::dxdispatch::export::write_job(stage, cfg, &plan, [a, b]).context("DxDispatch repro")?;
    }
    if !cfg.dry_run {
        execute(cfg, &plan, inputs, trace)?;
    }
    Ok(Outcome::Ok)
}

/// What the inputs turned out to be.
enum Opened {
    /// Two `.npy` files: the single-pair run.
    Pair(Vec<NpyInput>),
    /// At least one container: the run over member pairs (`container::run`).
    Containers(Box<[crate::container::Opened; 2]>),
}

/// Opens both inputs: headers (and container directories) parsed and sizes checked, no data
/// read yet.
fn open_inputs(cfg: &Config, trace: &mut Trace) -> Result<Opened> {
    use crate::container::Opened as One;
    let t = Instant::now();
    let mut opened = Vec::with_capacity(2);
    for (i, source) in cfg.inputs.iter().enumerate() {
        let input = One::open(source).with_context(|| format!("input {} ({})", ["A", "B"][i], source.describe()))?;
        if let One::Single(x) = &input {
            trace.inputs.push(InputInfo::new(&source.label(), &x.header));
            trace.bytes_read += x.bytes_read;
        }
        opened.push(input);
    }
    trace.read = t.elapsed();
    if opened.iter().all(|o| matches!(o, One::Single(_))) {
        let singles = opened.into_iter().filter_map(|o| match o {
            One::Single(x) => Some(x),
            One::Many(_) => None,
        });
        return Ok(Opened::Pair(singles.collect()));
    }
    let [a, b]: [One; 2] = opened.try_into().map_err(|_| anyhow::anyhow!("internal error: not two inputs"))?;
    Ok(Opened::Containers(Box::new([a, b])))
}

/// Opens the output, computes the result into it, closes the inputs and commits the output
/// (with `--part`, writes this part into the job's staging file, and commits the result if
/// every part is done).
fn execute(cfg: &Config, plan: &Plan, inputs: Vec<NpyInput>, trace: &mut Trace) -> Result<()> {
    let (mut sink, stage) = match cfg.part {
        None => (open_output(cfg, plan, trace)?, None),
        Some(spec) => {
            let (stage, sink) = join_part(cfg, plan, [&inputs[0], &inputs[1]], spec, trace)?;
            (sink, Some(stage))
        }
    };
    let (ran, t) = compute(cfg, plan, [&inputs[0], &inputs[1]], &mut sink, trace)?;
    // Closed before the output replaces a file: Windows does not replace a file that is open,
    // as an in-place run's input is.
    drop(inputs);
    trace.synced = sink.commit().with_context(|| format!("output {}", cfg.output.label()))?;
    if let Some(stage) = stage {
        let committed = stage.finish(cfg.writing.durable).with_context(|| format!("output {}", cfg.output.label()))?;
        if let Some(p) = &mut trace.part {
            p.committed = committed;
        }
    }
    trace.execute = Some(t.elapsed());
    trace.summary = ran.summary.as_ref().map(|a| a.finish());
    trace.threads_used = Some(ran.threads_used);
    trace.busy = Some(ran.busy);
    Ok(())
}

/// Makes the planned C-order copies, starts the backend and streams the result into `sink`.
/// Returns what the backend ran, and when the streaming started.
fn compute(
    cfg: &Config,
    plan: &Plan,
    given: [&NpyInput; 2],
    sink: &mut Sink,
    trace: &mut Trace,
) -> Result<(backend::Ran, Instant)> {
    let t = Instant::now();
    let copies = c_order_copies(plan, given)?;
    let inputs = [0, 1].map(|i| copies[i].as_ref().unwrap_or(given[i]));
    trace.read += t.elapsed();
    let gpu = open_device(cfg, plan, trace)?;
    let iter = plan.iteration(inputs);
    let feeds = Plan::feeds(&iter, inputs, gpu.as_ref().map_or(RESIDENT_BYTES, |g| g.resident_limit()));
    let out_label = cfg.output.label();
    let in_place = match gpu {
        None => reserve_in_place(sink, plan, &out_label)?,
        Some(_) => None,
    };
    let positional =
        in_place.as_ref().map(|file| Positional { file, offset: plan.header.len() as u64, label: &out_label });
    let job = Job {
        sem: cfg.sem,
        dtype: plan.dtype,
        range: cfg.part.map_or(0..plan.elements, |p| p.range(plan.elements)),
        iter,
        inputs,
        feeds,
        threads: cfg.threads,
        summarise: cfg.summarise,
        positional,
    };
    let t = Instant::now();
    let ran = stream(cfg, plan, &job, gpu.as_ref(), sink, trace)?;
    Ok((ran, t))
}

/// Opens the output before any work: what its path names is decided here, once, and an output
/// file its filesystem cannot hold is refused now, not after minutes of writing (the feature
/// levels cap outputs at 2^32 - 1 elements, `none` does not).
fn open_output(cfg: &Config, plan: &Plan, trace: &mut Trace) -> Result<Sink> {
    let out_label = cfg.output.label();
    let sink = Sink::open(&cfg.output, cfg.writing).with_context(|| format!("output {out_label}"))?;
    trace.staging = Some(sink.staging());
    trace.leftovers = sink.removed_leftovers().to_vec();
    note_leftovers(cfg, &cfg.output, &sink);
    if let Some(dir) = sink.replace_dir() {
        check_free_space(&out_label, dir, plan.output_bytes())?;
    }
    Ok(sink)
}

/// `--part`: joins the job's staging directory beside the output (see [`parts`]) and returns
/// the stage and a sink writing into its file. Every part writes the header too: the same bytes.
fn join_part(
    cfg: &Config,
    plan: &Plan,
    inputs: [&NpyInput; 2],
    spec: PartSpec,
    trace: &mut Trace,
) -> Result<(Stage, Sink)> {
    let label = cfg.output.label();
    let target = match &cfg.output {
        Destination::Path(p) => match Target::resolve(p).with_context(|| format!("output {label}"))? {
            Target::Replace { path, .. } => path,
            _ => bail!(
                "output {label}: --part writes a file that appears when the last part is done; {label} is not a file"
            ),
        },
        Destination::Stdout => bail!("--part needs an output file (-o PATH)"),
    };
    let mut described = Vec::new();
    for x in inputs {
        let mut id = x.identity()?;
        id["dtype"] = format!("{:?}", x.header.dtype).into();
        id["shape"] = serde_json::json!(x.header.shape);
        id["fortran_order"] = x.header.fortran_order.into();
        id["byte_order"] = format!("{:?}", x.header.byte_order).into();
        described.push(id);
    }
    let description = serde_json::json!({
        "tensorop": env!("CARGO_PKG_VERSION"),
        "op": cfg.sem.op.name(),
        "half_precision": cfg.sem.half_precision,
        "broadcast": cfg.broadcast.name(),
        "dtype": plan.dtype.name(),
        "shape": plan.out_shape,
        "parts": spec.count,
        "inputs": described,
    });
    let (stage, file) = Stage::join(&target, spec, description, plan.output_bytes())
        .with_context(|| format!("output {label} (part {}/{})", spec.index, spec.count))?;
    trace.staging = Some(Staging::Parts);
    if let Some(p) = &mut trace.part {
        p.job = Some(stage.job.clone());
    }
    Ok((stage, Sink::part(file, cfg.writing.durable)))
}

/// The GPU, with `--backend wgpu`. It is opened only now: never for `--help`, usage errors,
/// failed checks or dry runs.
fn open_device(cfg: &Config, plan: &Plan, trace: &mut Trace) -> Result<Option<backend::wgpu::Gpu>> {
    match cfg.backend {
        BackendKind::Cpu => Ok(None),
        BackendKind::Wgpu => {
            let gpu = backend::wgpu::Gpu::open(&cfg.wgpu)?;
            trace.device = Some((gpu.report(plan.dtype), gpu.init_time));
            Ok(Some(gpu))
        }
    }
}

/// A file output on the CPU backend is written in place by the workers, each chunk at its
/// offset, into space reserved now; `None` for other targets, which get the chunks in order.
fn reserve_in_place(sink: &Sink, plan: &Plan, out_label: &str) -> Result<Option<std::fs::File>> {
    let Some(file) = sink.positional() else { return Ok(None) };
    let file = file.try_clone().with_context(|| format!("output {out_label}"))?;
    crate::sys::preallocate(&file, plan.output_bytes())
        .with_context(|| format!("output {out_label}: cannot reserve {} bytes", plan.output_bytes()))?;
    Ok(Some(file))
}

/// Writes the header, then runs the backend with the sink as its output, counting the bytes and
/// showing the progress.
fn stream(
    cfg: &Config,
    plan: &Plan,
    job: &Job,
    gpu: Option<&backend::wgpu::Gpu>,
    sink: &mut Sink,
    trace: &mut Trace,
) -> Result<backend::Ran> {
    let out_label = cfg.output.label();
    let write_ctx = || format!("output {out_label}");
    sink.write(&plan.header).with_context(write_ctx)?;
    trace.bytes_written = plan.header.len() as u64;
    // A part's bytes start at its first element.
    sink.skip(job.range.start * plan.dtype.size() as u64);
    let mut progress = Progress::new(cfg.progress, (job.range.end - job.range.start) * plan.dtype.size() as u64);
    let mut data_written = 0u64;
    // Only write failures are the output's; a backend's errors (an input that shrank, a GPU
    // that failed) name their own cause.
    let mut write = |out: Emit<'_>| -> Result<()> {
        data_written += match out {
            Emit::Bytes(bytes) => {
                sink.write(bytes).with_context(write_ctx)?;
                bytes.len() as u64
            }
            Emit::Written(n) => n,
        };
        progress.set(data_written);
        Ok(())
    };
    let result = match gpu {
        None => backend::cpu::run(job, &mut write),
        Some(gpu) => backend::wgpu::run(gpu, job, &mut |bytes| write(Emit::Bytes(bytes))),
    };
    progress.finish();
    trace.bytes_written += data_written;
    result
}

/// The C-order copies the plan asks for, made now (see [`crate::npy::fortran`]); smaller
/// Fortran-order inputs the backends hold whole.
pub(crate) fn c_order_copies(plan: &Plan, inputs: [&NpyInput; 2]) -> Result<[Option<NpyInput>; 2]> {
    let [a, b] = [0, 1].map(|i| {
        plan.c_order_copy[i]
            .then(|| {
                fortran::c_order_copy(inputs[i])
                    .with_context(|| format!("cannot copy input {} to C order", inputs[i].label))
            })
            .transpose()
    });
    Ok([a?, b?])
}

impl Trace {
    /// The DirectML descriptors of a planned job at a DirectML level.
    fn dml(&self, cfg: &Config) -> Option<Descriptors> {
        let (LevelChoice::Dml(level), Some(plan)) = (cfg.level, &self.plan) else { return None };
        let row = row_for(cfg.sem.op, level)?;
        Some(descriptors(cfg.sem.op, row, plan.dtype, &plan.out_shape, &plan.strides))
    }

    /// The report of a run that got as far as this trace and ended with `outcome` after `total`.
    fn report(self, cfg: &Config, outcome: &Outcome, total: Duration) -> Report {
        let (status, error) = match outcome {
            Outcome::Ok => (RunStatus::Ok, None),
            Outcome::Invalid(msg) => (RunStatus::Invalid, Some(msg.clone())),
            Outcome::Error(e) => (RunStatus::Error, Some(format!("{e:#}"))),
            Outcome::Unpaired(msg) => (RunStatus::Unpaired, Some(msg.clone())),
        };
        let checks = self.validation.as_ref().map(|v| v.checks.clone()).unwrap_or_default();
        let committed = self.execute.is_some();
        let gpu = cfg.backend == BackendKind::Wgpu;
        let busy = self.busy.unwrap_or_default();
        let dml = if status == RunStatus::Ok { self.dml(cfg) } else { None };
        let summary = if status == RunStatus::Ok { self.summary.clone() } else { None };
        Report {
            schema_version: 1,
            tool: Tool { name: "tensorop", version: env!("CARGO_PKG_VERSION") },
            op: cfg.sem.op.name(),
            dml_operator: cfg.sem.op.dml_operator(),
            feature_level: cfg.level.to_string(),
            support_row: self.validation.as_ref().and_then(|v| v.support_row).map(|r| r.to_string()),
            minimum_feature_level: self.validation.as_ref().and_then(|v| v.minimum_level).map(|l| l.to_string()),
            status,
            valid: status == RunStatus::Ok && !checks.is_empty() && checks.iter().all(|c| c.status != Status::Fail),
            error,
            inputs: self.inputs,
            output: self.plan.as_ref().filter(|_| committed).map(|p| OutputInfo {
                path: cfg.export.as_ref().map_or_else(|| cfg.output.label(), |e| e.final_output.clone()),
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
            dml,
            stats: summary,
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
            },
        }
    }
}

/// Refuses an output of `needed` bytes (header included) that the free space of the filesystem
/// holding `dir`, where the output file `label` is written, cannot take. The result is written
/// to a temporary file there while any old file still exists, so the whole size is needed even
/// when the file (or an input, in place) will be replaced. Where the free space cannot be
/// measured (a filesystem that reports no sizes), the run goes on and a full disk is reported
/// when a write fails.
pub(crate) fn check_free_space(label: &str, dir: &Path, needed: u64) -> Result<()> {
    let Some(available) = crate::sys::available_bytes(dir) else {
        return Ok(());
    };
    if needed > available {
        bail!(
            "output {label}: not enough free space: the result needs {needed} bytes ({}) but the filesystem \
             holding {} has {available} bytes ({}) available; free some space, write the output to a \
             filesystem with room (-o PATH), or stream it with -o - (no space check)",
            human_bytes(needed),
            dir.display(),
            human_bytes(available),
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
        let label = dir.path().join("out.npy").display().to_string();
        assert!(check_free_space(&label, dir.path(), 0).is_ok());
        let e = check_free_space(&label, dir.path(), u64::MAX).expect_err("2^64 - 1 bytes never fit");
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
