//! One `sub`/`sqdiff` run, start to finish, flowing one way: open inputs (headers only) ->
//! checks and broadcast plan -> backend streams chunks into the output sink -> atomic commit ->
//! report. Whatever happens, the report records it and the outcome maps to an exit status.

use crate::backend::{self, BackendKind, Job, Stats, RESIDENT_BYTES};
use crate::config::Config;
use crate::npy::fortran;
use crate::npy::header::{encode_header, FileDType};
use crate::npy::input::NpyInput;
use crate::output::{BrokenPipe, Sink};
use crate::progress::Progress;
use crate::report::{ms, BackendInfo, BroadcastInfo, InputInfo, OutputInfo, Report, RunStatus, Timings, Tool};
use crate::shape::{view_strides, Iteration};
use crate::spec::checks::{validate, TensorSpec};
use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;
use std::time::Instant;

/// How a run ended.
#[derive(Debug)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// A check failed: exit 3. Holds the failed checks' messages.
    Invalid(String),
    /// A runtime error: exit 1.
    Error(anyhow::Error),
}

impl Outcome {
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Error(_) => 1,
            Outcome::Invalid(_) => 3,
        }
    }
}

/// Runs `cfg`, writes the report if asked, and returns the outcome.
pub fn run(cfg: &Config) -> Outcome {
    let start = Instant::now();
    let report_sink = match cfg.report.as_ref().map(Report::open_sink).transpose() {
        Ok(s) => s,
        Err(e) => return Outcome::Error(e),
    };
    let mut report = new_report(cfg);
    let mut outcome = match execute(cfg, &mut report) {
        Ok(o) => o,
        // The reader of standard output went away: the pipeline ended early, as intended.
        Err(e) if e.is::<BrokenPipe>() => Outcome::Ok,
        Err(e) => Outcome::Error(e),
    };
    let (status, error) = match &outcome {
        Outcome::Ok => (RunStatus::Ok, None),
        Outcome::Invalid(msg) => (RunStatus::Invalid, Some(msg.clone())),
        Outcome::Error(e) => (RunStatus::Error, Some(format!("{e:#}"))),
    };
    report.status = status;
    report.error = error;
    report.valid = status == RunStatus::Ok
        && report.checks.iter().all(|c| c.status != crate::spec::checks::Status::Fail)
        && !report.checks.is_empty();
    report.timings_ms.total = ms(start.elapsed());
    if let (Some(dest), Some(sink)) = (&cfg.report, report_sink) {
        if let Err(e) = report.write_to(sink).with_context(|| format!("report {}", dest.label())) {
            outcome = match outcome {
                Outcome::Ok => Outcome::Error(e),
                other => {
                    eprintln!("tensorop: error: {e:#}");
                    other
                }
            };
        }
    }
    outcome
}

fn new_report(cfg: &Config) -> Report {
    Report {
        schema_version: 1,
        tool: Tool { name: "tensorop", version: env!("CARGO_PKG_VERSION") },
        op: cfg.sem.op.name(),
        dml_operator: cfg.sem.op.dml_operator(),
        feature_level: cfg.level.to_string(),
        support_row: None,
        status: RunStatus::Error,
        valid: false,
        error: None,
        inputs: Vec::new(),
        output: None,
        broadcast: None,
        checks: Vec::new(),
        backend: BackendInfo {
            name: cfg.backend.name(),
            device: None,
            threads: (cfg.backend == BackendKind::Cpu).then_some(cfg.threads),
            threads_used: None,
        },
        elements: 0,
        bytes_read: 0,
        bytes_written: 0,
        dry_run: cfg.dry_run,
        timings_ms: Timings::default(),
    }
}

fn execute(cfg: &Config, report: &mut Report) -> Result<Outcome> {
    // Inputs: headers parsed and sizes checked, no data read yet.
    let t = Instant::now();
    let mut inputs = Vec::with_capacity(2);
    for (i, source) in cfg.inputs.iter().enumerate() {
        let input =
            NpyInput::open(source).with_context(|| format!("input {} ({})", ["A", "B"][i], source.describe()))?;
        report.inputs.push(InputInfo::new(&source.label(), &input.header));
        report.bytes_read += input.bytes_read;
        inputs.push(input);
    }
    let (a, b) = (&inputs[0], &inputs[1]);
    report.timings_ms.read = ms(t.elapsed());

    // Checks and the broadcast plan.
    let t = Instant::now();
    fn spec(i: usize, x: &NpyInput) -> TensorSpec<'_> {
        TensorSpec { name: format!("{} ({})", ["A", "B"][i], x.label), dtype: &x.header.dtype, shape: &x.header.shape }
    }
    let v = validate(cfg.sem.op, cfg.level, cfg.broadcast, &spec(0, a), &spec(1, b));
    report.checks = v.checks.clone();
    report.support_row = v.support_row.map(|r| r.to_string());
    report.timings_ms.validate = ms(t.elapsed());
    if !v.valid() {
        return Ok(Outcome::Invalid(v.failure_summary()));
    }
    let out_shape =
        v.out_shape.clone().ok_or_else(|| anyhow!("internal error: a valid plan without an output shape"))?;
    let FileDType::Numeric(dtype) = a.header.dtype else {
        return Err(anyhow!("internal error: a valid plan with a non-numeric dtype"));
    };
    let strides = [a, b].map(|x| view_strides(&x.header.shape, x.header.fortran_order, &out_shape));
    let iter = Iteration::new(&out_shape, &strides[0], &strides[1]);
    report.elements = iter.count();
    report.broadcast =
        Some(BroadcastInfo { mode: cfg.broadcast.name(), shape: out_shape.clone(), strides: strides.clone() });
    if cfg.dry_run {
        return Ok(Outcome::Ok);
    }
    let header = encode_header(dtype, &out_shape);
    let out_bytes = crate::shape::element_count(&out_shape)
        .and_then(|n| n.checked_mul(dtype.size() as u64))
        .ok_or_else(|| anyhow!("the output would be larger than 2^64 bytes"))?;
    // Before any work, the output is opened: what its path names is decided here, once, and an
    // output file its filesystem cannot hold is refused now, not after minutes of writing (the
    // feature levels cap outputs at 2^32 - 1 elements, `none` does not).
    let out_label = cfg.output.label();
    let write_ctx = || format!("output {out_label}");
    let mut sink = Sink::open(&cfg.output).with_context(write_ctx)?;
    if let Some(dir) = sink.replace_dir() {
        check_free_space(&out_label, dir, out_bytes.saturating_add(header.len() as u64))?;
    }
    // A large Fortran-order input is copied once in C order, so every backend streams it with
    // bounded memory instead of holding it whole; the report keeps describing the file as given.
    let t = Instant::now();
    // Smaller ones the backends hold whole.
    let [ca, cb] = [a, b].map(|x| {
        (fortran::is_strided_fortran(x) && x.header.data_bytes > RESIDENT_BYTES)
            .then(|| fortran::c_order_copy(x).with_context(|| format!("cannot copy input {} to C order", x.label)))
            .transpose()
    });
    let (ca, cb) = (ca?, cb?);
    let (a, b) = (ca.as_ref().unwrap_or(a), cb.as_ref().unwrap_or(b));
    let iter = if ca.is_some() || cb.is_some() {
        let strides = [a, b].map(|x| view_strides(&x.header.shape, x.header.fortran_order, &out_shape));
        Iteration::new(&out_shape, &strides[0], &strides[1])
    } else {
        iter
    };
    report.timings_ms.read += ms(t.elapsed());
    // The GPU is opened only now: never for --help, usage errors, failed checks or dry runs.
    let gpu = match cfg.backend {
        BackendKind::Cpu => None,
        BackendKind::Wgpu => {
            let gpu = backend::wgpu::Gpu::open(&cfg.wgpu)?;
            report.backend.device = Some(gpu.report(dtype));
            report.timings_ms.init = Some(ms(gpu.init_time));
            Some(gpu)
        }
    };

    // Stream the result into the sink.
    let t = Instant::now();
    let mut written = header.len() as u64;
    sink.write(&header).with_context(write_ctx)?;
    let mut progress = Progress::new(cfg.progress, out_bytes);
    let job = Job { sem: cfg.sem, dtype, iter, inputs: [a, b], threads: cfg.threads };
    let mut data_written = 0u64;
    // Only write failures are the output's; a backend's errors (an input that shrank, a GPU
    // that failed) name their own cause.
    let mut write = |bytes: &[u8]| -> Result<()> {
        sink.write(bytes).with_context(write_ctx)?;
        data_written += bytes.len() as u64;
        progress.set(data_written);
        Ok(())
    };
    let result = match &gpu {
        None => backend::cpu::run(&job, &mut write),
        Some(gpu) => backend::wgpu::run(gpu, &job, &mut write),
    };
    progress.finish();
    written += data_written;
    report.bytes_written = written;
    let stats: Stats = result?;
    sink.commit().with_context(write_ctx)?;
    report.timings_ms.execute = ms(t.elapsed());
    report.timings_ms.read += ms(stats.read);
    report.timings_ms.compute = ms(stats.compute);
    report.timings_ms.write = ms(stats.write);
    if gpu.is_some() {
        report.timings_ms.upload = Some(ms(stats.upload));
        report.timings_ms.download = Some(ms(stats.download));
    } else {
        report.backend.threads_used = Some(stats.threads_used);
    }
    report.output = Some(OutputInfo { path: out_label, dtype: dtype.name().into(), shape: out_shape });
    Ok(Outcome::Ok)
}

/// Refuses an output of `needed` bytes (header included) that the free space of the filesystem
/// holding `dir`, where the output file `label` is written, cannot take. The result is written
/// to a temporary file there while any old file still exists, so the whole size is needed even
/// when the file (or an input, in place) will be replaced. Where the free space cannot be
/// measured (a filesystem that reports no sizes), the run goes on and a full disk is reported
/// when a write fails.
fn check_free_space(label: &str, dir: &Path, needed: u64) -> Result<()> {
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
