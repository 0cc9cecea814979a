//! DirectML's own runner, DxDispatch, from both sides (`docs/dxdispatch.md`):
//!
//! - [`export`]: `sub`/`sqdiff --dxdispatch DIR` writes a job as a DxDispatch repro (model,
//!   inputs, `expected.npy`, README);
//! - `tensorop run MODEL.json` ([`run`]): reads a DxDispatch model ([`json`], [`model`],
//!   [`values`]), checks each dispatch at a feature level and runs its element-wise subtract and
//!   squared difference dispatches on tensorop's backends (`exec`).

mod buffer;
mod checks;
mod desc;
mod exec;
pub mod export;
pub mod json;
pub mod model;
pub mod values;

use crate::backend::BackendKind;
use crate::cli::{BackendArg, RunArgs};
use crate::dtype::DType;
use crate::npy::header::FileDType;
use crate::npy::input::NpyInput;
use crate::output::{Destination, Sink, Writing, NAMED_TEMPFILES_ENV};
use crate::report::Tool;
use anyhow::{anyhow, bail, Context, Result};
use checks::DispatchReport;
use model::{Command, Init, Model, Paths};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The largest model file read: initial values this large belong in `.npy` files.
/// A JSON value takes some 40 times its text in memory, so this bounds the reading at a few
/// hundred MiB.
pub const MAX_MODEL_BYTES: u64 = 8 << 20;

/// The `tensorop run` report (`docs/report.md`, "The run report").
#[derive(Debug, Serialize)]
struct RunReport {
    schema_version: u32,
    tool: Tool,
    command: &'static str,
    model: String,
    feature_level: String,
    status: crate::report::RunStatus,
    valid: bool,
    error: Option<String>,
    dispatches: Vec<DispatchReport>,
    written: Vec<String>,
    backend: &'static str,
    dry_run: bool,
    timings_ms: Timings,
}

#[derive(Debug, Serialize)]
struct Timings {
    total: f64,
}

/// How `run` ended, with its exit status.
enum Ending {
    Ok,
    /// A check failed (exit 3): the failures, one per line.
    Invalid(String),
    Error(anyhow::Error),
}

/// Why a model stopped before running, not being an error.
enum Stop {
    /// A check failed: the failures, one per line (exit 3).
    Invalid(String),
    /// A usage error found once the model was read (exit 2, no report): `--report` naming one
    /// of the model's files.
    Usage(String),
}

/// `tensorop run`: returns the exit status (0, 1 runtime error or malformed model, 3 a check
/// failed). Usage errors were refused by the caller. `print` commands write to standard output.
pub fn run(args: &RunArgs) -> u8 {
    run_to(args, &mut std::io::stdout().lock())
}

/// [`run`], with `print` commands writing to `out`.
pub fn run_to(args: &RunArgs, out: &mut dyn std::io::Write) -> u8 {
    let start = Instant::now();
    let writing = Writing { durable: args.fsync, unnamed: std::env::var(NAMED_TEMPFILES_ENV).as_deref() != Ok("1") };
    let report_dest = args.report.as_deref().map(Destination::parse);
    let report_sink = match report_dest.as_ref().map(|d| Sink::open(d, writing)).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tensorop: error: report: {e:#}");
            return 1;
        }
    };
    let mut dispatches = Vec::new();
    let mut written = Vec::new();
    let ending = match run_model(args, writing, out, &mut dispatches, &mut written) {
        Ok(Ok(())) => Ending::Ok,
        Ok(Err(Stop::Invalid(msg))) => Ending::Invalid(msg),
        Ok(Err(Stop::Usage(msg))) => {
            eprintln!("tensorop: usage error: {msg}");
            return 2;
        }
        Err(e) if e.is::<crate::output::BrokenPipe>() => Ending::Ok,
        Err(e) => Ending::Error(e),
    };
    let (status, error, code) = match &ending {
        Ending::Ok => (crate::report::RunStatus::Ok, None, 0),
        Ending::Invalid(m) => (crate::report::RunStatus::Invalid, Some(m.clone()), 3),
        Ending::Error(e) => (crate::report::RunStatus::Error, Some(format!("{e:#}")), 1),
    };
    match &ending {
        Ending::Ok if !args.quiet => {
            for p in &written {
                eprintln!("tensorop: wrote {}", p.display());
            }
        }
        Ending::Ok => {}
        Ending::Invalid(m) => {
            eprintln!("tensorop: validation failed (nothing was run or written):");
            for line in m.lines() {
                eprintln!("  {line}");
            }
        }
        Ending::Error(e) => eprintln!("tensorop: error: {e:#}"),
    }
    let report = RunReport {
        schema_version: 1,
        tool: Tool { name: "tensorop", version: env!("CARGO_PKG_VERSION") },
        command: "run",
        model: args.model.clone(),
        feature_level: args.feature_level.to_string(),
        status,
        // Every dispatch checked and passed (a model without dispatches has nothing to fail).
        valid: code == 0,
        error,
        dispatches,
        written: written.iter().map(|p| p.display().to_string()).collect(),
        backend: backend_of(args).name(),
        dry_run: args.dry_run,
        timings_ms: Timings { total: crate::report::ms(start.elapsed()) },
    };
    if let Some(sink) = report_sink {
        let result = (|| -> Result<()> {
            let mut sink = sink;
            let mut text = serde_json::to_string_pretty(&report)?;
            text.push('\n');
            sink.write(text.as_bytes())?;
            sink.commit()?;
            Ok(())
        })();
        if let Err(e) = result {
            eprintln!("tensorop: error: report {}: {e:#}", args.report.as_deref().unwrap_or("-"));
            if code == 0 {
                return 1;
            }
        }
    }
    code
}

fn backend_of(args: &RunArgs) -> BackendKind {
    match args.backend {
        BackendArg::Cpu => BackendKind::Cpu,
        BackendArg::Wgpu => BackendKind::Wgpu,
    }
}

/// Reads, checks and runs the model. `Ok(Err(stop))`: a check failed, or the report would
/// replace one of the model's files.
fn run_model(
    args: &RunArgs,
    writing: Writing,
    out: &mut dyn std::io::Write,
    dispatches: &mut Vec<DispatchReport>,
    written: &mut Vec<PathBuf>,
) -> Result<std::result::Result<(), Stop>> {
    let model_path = Path::new(&args.model);
    let model = load(model_path, args).with_context(|| format!("model {}", model_path.display()))?;
    if let Some(msg) = report_clash(args, &model) {
        return Ok(Err(Stop::Usage(msg)));
    }
    *dispatches = checks::check_all(&model, args.feature_level);
    let failures: Vec<String> = dispatches
        .iter()
        .filter(|d| !d.valid)
        .flat_map(|d| {
            d.checks.iter().filter(|c| c.status == crate::spec::checks::Status::Fail).map(move |c| {
                format!("dispatch '{}' (commands[{}]): {}: {}", d.dispatchable, d.command, c.id, c.message)
            })
        })
        .collect();
    if !failures.is_empty() {
        let mut msg = failures.join("\n");
        // The level the whole model needs: the newest of the dispatches' oldest levels.
        let levels: Option<Vec<_>> = dispatches.iter().map(|d| d.minimum_feature_level).collect();
        if let Some(oldest) = levels.and_then(|l| l.into_iter().max()) {
            msg.push_str(&format!(
                "\nevery dispatch passes at feature level {oldest} and newer: use --feature-level {oldest}"
            ));
        }
        return Ok(Err(Stop::Invalid(msg)));
    }
    preflight(&model, args.resource_limit)?;
    if args.dry_run {
        return Ok(Ok(()));
    }
    let backend = backend_of(args);
    let gpu = match backend {
        BackendKind::Cpu => None,
        BackendKind::Wgpu => {
            let tuning = crate::backend::wgpu::WgpuTuning::from_env()?;
            Some(crate::backend::wgpu::Gpu::open(&tuning)?)
        }
    };
    let threads = match args.threads {
        Some(n) => usize::from(n),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let mut runner = exec::Runner {
        model: &model,
        backend,
        gpu: gpu.as_ref(),
        threads,
        writing,
        out,
        written: Vec::new(),
        out_closed: false,
    };
    let result = runner.run();
    *written = std::mem::take(&mut runner.written);
    result?;
    Ok(Ok(()))
}

/// Refuses a `--report` path that names the model, a file a resource reads, a file a
/// `writeFile` writes, or the file standard output (where `print` writes) was redirected to.
fn report_clash(args: &RunArgs, model: &Model) -> Option<String> {
    use crate::output::identity::{refuse_report_over, Named, Role, Use};
    let report = match args.report.as_deref().map(Destination::parse) {
        Some(Destination::Path(p)) => p,
        _ => return None,
    };
    fn role(what: String, path: &Path, used: Use) -> Role<'_> {
        Role { what, named: Named::Path(path), used }
    }
    let mut roles = vec![role(format!("the model ({})", args.model), Path::new(&args.model), Use::Read)];
    for r in &model.resources {
        if let Init::Npy(p) | Init::Raw(p) = &r.init {
            roles.push(role(format!("resource '{}' ({})", r.name, p.display()), p, Use::Read));
        }
    }
    for c in &model.commands {
        if let Command::WriteFile { resource, target, .. } = c {
            let name = &model.resources[*resource].name;
            roles.push(role(format!("the writeFile of '{name}' ({})", target.display()), target, Use::Write));
        }
    }
    if !args.dry_run {
        roles.push(Role {
            what: "standard output, where print writes,".into(),
            named: Named::Stdout,
            used: Use::Write,
        });
    }
    refuse_report_over(&report, &roles)
}

/// Reads and resolves the model file.
fn load(path: &Path, args: &RunArgs) -> Result<Model> {
    let meta = std::fs::metadata(path).context("cannot open the model")?;
    if meta.is_dir() {
        bail!("is a directory; give the model's .json file");
    }
    let mut text = String::new();
    use std::io::Read;
    std::fs::File::open(path)
        .context("cannot open the model")?
        .take(MAX_MODEL_BYTES + 1)
        .read_to_string(&mut text)
        .context("cannot read the model as UTF-8 text")?;
    if text.len() as u64 > MAX_MODEL_BYTES {
        bail!("the model is over {MAX_MODEL_BYTES} bytes; keep large initial values in .npy or raw files (sourcePath)");
    }
    let root = json::parse(&text)?;
    let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let paths = Paths {
        input: args.input_path.clone().unwrap_or(folder),
        output: args.output_path.clone().unwrap_or_default(),
    };
    model::read(&root, &paths, &npy_dtype)
}

/// A `.npy` source's data type and data bytes, refused as DxDispatch refuses it (Fortran order)
/// or as tensorop cannot compute it.
fn npy_dtype(path: &Path) -> Result<(DType, u64)> {
    let input = NpyInput::open_path(path)?;
    let h = &input.header;
    if h.fortran_order {
        bail!(
            "Fortran order, which DxDispatch refuses ('Fortran stride order unsupported.'); save it in C order \
             (numpy.ascontiguousarray)"
        );
    }
    match &h.dtype {
        FileDType::Numeric(d) => Ok((*d, h.data_bytes)),
        FileDType::Other(name) => Err(anyhow!("{name} data, which tensorop does not compute")),
    }
}

/// What can be known before anything runs: every `writeFile` fits its resource, and the
/// temporary space holds the resources.
fn preflight(model: &Model, limit: u64) -> Result<()> {
    for (i, c) in model.commands.iter().enumerate() {
        if let Command::WriteFile { resource, target, dimensions } = c {
            exec::write_plan(&model.resources[*resource], target, dimensions.as_deref())
                .with_context(|| format!("commands[{i}].dimensions"))?;
        }
    }
    let resources = model.resources.iter().fold(0u64, |n, r| n.saturating_add(r.size));
    // Each dispatch's own temporary files live only while it runs.
    let (mut temp, mut busiest) = (0u64, None);
    for c in &model.commands {
        if let Command::Dispatch { dispatchable, bindings } = c {
            let d = &model.dispatchables[*dispatchable];
            let t = desc::dispatch_temp_bytes(d, bindings).unwrap_or(u64::MAX);
            if t > temp {
                (temp, busiest) = (t, Some(&d.name));
            }
        }
    }
    let needed = resources.saturating_add(temp);
    if needed > limit {
        let largest = model
            .resources
            .iter()
            .max_by_key(|r| r.size)
            .map_or(String::new(), |r| format!(" (the largest, '{}', {} bytes)", r.name, r.size));
        let during = busiest.map_or(String::new(), |name| {
            format!(", and dispatch '{name}' {temp} bytes of temporary results and copies while it runs")
        });
        bail!(
            "the model needs {needed} bytes: its resources take {resources}{largest}{during}; that is over the limit \
             of {limit} bytes, so nothing was made. Raise it with --resource-limit BYTES if the model is meant to be \
             this large"
        );
    }
    let dir = std::env::temp_dir();
    if let Some(available) = crate::sys::available_bytes(&dir) {
        if needed > available {
            bail!(
                "the resources need {needed} bytes of temporary space but {} has {available} bytes available; \
                 point TMPDIR at a filesystem with room",
                dir.display()
            );
        }
    }
    Ok(())
}
