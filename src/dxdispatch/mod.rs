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

use crate::backend::directml::verify::Verified;
use crate::backend::Engine;
use crate::config::run::RunConfig;
use crate::dtype::DType;
use crate::npy::header::FileDType;
use crate::npy::input::InputTensor;
use crate::outcome::Outcome;
use crate::output::Destination;
use crate::report::{Head, Report, RunStatus};
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
    #[serde(flatten)]
    head: Head,
    command: &'static str,
    model: String,
    feature_level: String,
    /// `--float16`, spelt as the flag takes it.
    float16_rule: &'static str,
    dispatches: Vec<DispatchReport>,
    written: Vec<String>,
    backend: &'static str,
    /// `--verify` (directml backend): every dispatch's output against the CPU's reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    verify: Option<Verified>,
    dry_run: bool,
    timings_ms: RunTimings,
}

#[derive(Debug, Serialize)]
struct RunTimings {
    total: f64,
}

/// What a run of the model did: the files it wrote and, with `--verify`, the verdict.
#[derive(Default)]
struct Done {
    written: Vec<PathBuf>,
    verified: Option<Verified>,
}

/// `tensorop run`: reads, checks and runs the model, writes the report if asked, and returns
/// the outcome. `print` commands write to standard output.
pub fn run(cfg: &RunConfig) -> Outcome {
    run_to(cfg, &mut std::io::stdout().lock())
}

/// [`run`], with `print` commands writing to `out`.
pub fn run_to(cfg: &RunConfig, out: &mut dyn std::io::Write) -> Outcome {
    let start = Instant::now();
    let report_sink = match cfg.report.as_ref().map(|d| Report::open_sink(d, cfg.writing)).transpose() {
        Ok(s) => s,
        Err(e) => return Outcome::Error(e),
    };
    let mut dispatches = Vec::new();
    let mut done = Done::default();
    let outcome = Outcome::of(run_model(cfg, out, &mut dispatches, &mut done));
    let written = done.written;
    match &outcome {
        // A usage error: no report.
        Outcome::Refused(_) => return outcome,
        Outcome::Ok if !cfg.quiet => {
            for p in &written {
                eprintln!("tensorop: wrote {}", p.display());
            }
        }
        _ => {}
    }
    let (status, error) = outcome.status();
    let report = RunReport {
        // Every dispatch checked and passed (a model without dispatches has nothing to fail).
        head: Head::new(status, status == RunStatus::Ok, error),
        command: "run",
        model: cfg.model.clone(),
        feature_level: cfg.level.to_string(),
        float16_rule: cfg.float16.name(),
        dispatches,
        written: written.iter().map(|p| p.display().to_string()).collect(),
        backend: cfg.backend.name(),
        verify: done.verified,
        dry_run: cfg.dry_run,
        timings_ms: RunTimings { total: crate::report::ms(start.elapsed()) },
    };
    outcome.with_report(cfg.report.as_ref().zip(report_sink), |sink| crate::report::write_json(&report, sink))
}

/// Reads, checks and runs the model: `Ok(Invalid)` when a check failed, `Ok(Refused)` when the
/// report would replace one of the model's files.
fn run_model(
    cfg: &RunConfig,
    out: &mut dyn std::io::Write,
    dispatches: &mut Vec<DispatchReport>,
    done: &mut Done,
) -> Result<Outcome> {
    let model_path = Path::new(&cfg.model);
    let model = load(model_path, cfg).with_context(|| format!("model {}", model_path.display()))?;
    if let Some(msg) = report_clash(cfg, &model) {
        return Ok(Outcome::Refused(msg));
    }
    *dispatches = checks::check_all(&model, cfg.level);
    if let Some(msg) = failures(dispatches) {
        return Ok(Outcome::Invalid(msg));
    }
    let needed = preflight(&model, cfg.resource_limit)?;
    if cfg.dry_run {
        if !cfg.quiet {
            eprintln!("tensorop: {}", dry_run_text(cfg, &model, needed));
        }
        return Ok(Outcome::Ok);
    }
    let engine = Engine::open(&cfg.backend)?;
    let mut runner = exec::Runner {
        model: &model,
        engine: &engine,
        threads: cfg.threads,
        float16: cfg.float16,
        writing: cfg.writing,
        out,
        written: Vec::new(),
        out_closed: false,
        verified: None,
        command: 0,
    };
    let result = runner.run();
    done.written = std::mem::take(&mut runner.written);
    done.verified = runner.verified.take();
    let outcome = Outcome::of(result.map(|()| Outcome::Ok));
    if !cfg.backend.verifies() {
        return Ok(outcome);
    }
    // The verdict covers every dispatch the model runs: one that failed, or never ran, leaves
    // it incomplete.
    let empty = || Verified::empty(DType::U8, &[], 0, cfg.float16);
    Ok(outcome.with_verdict(&mut done.verified, dispatched_elements(&model), empty))
}

/// The output elements of every dispatch the model runs, counted once per dispatch command.
fn dispatched_elements(model: &Model) -> u64 {
    let outputs = model.commands.iter().filter_map(|c| match c {
        Command::Dispatch { dispatchable, .. } => {
            model.dispatchables.get(*dispatchable).and_then(|d| desc::element_count(&d.tensors[2]))
        }
        _ => None,
    });
    outputs.fold(0u64, u64::saturating_add)
}

/// The failed checks of every dispatch, one per line, and the level the whole model needs;
/// `None` when every dispatch passes.
fn failures(dispatches: &[DispatchReport]) -> Option<String> {
    let failures: Vec<String> = dispatches
        .iter()
        .filter(|d| !d.valid)
        .flat_map(|d| {
            d.checks.iter().filter(|c| c.status == crate::spec::checks::Status::Fail).map(move |c| {
                format!("dispatch '{}' (commands[{}]): {}: {}", d.dispatchable, d.command, c.id, c.message)
            })
        })
        .collect();
    if failures.is_empty() {
        return None;
    }
    let mut msg = failures.join("\n");
    // The level the whole model needs: the newest of the dispatches' oldest levels.
    let levels: Option<Vec<_>> = dispatches.iter().map(|d| d.minimum_feature_level).collect();
    if let Some(oldest) = levels.and_then(|l| l.into_iter().max()) {
        msg.push_str(&format!(
            "\nevery dispatch passes at feature level {oldest} and newer: use --feature-level {oldest}"
        ));
    }
    Some(msg)
}

/// Refuses a `--report` path that names the model, a file a resource reads, a file a
/// `writeFile` writes, or the file standard output (where `print` writes) was redirected to.
fn report_clash(cfg: &RunConfig, model: &Model) -> Option<String> {
    use crate::output::identity::{refuse_report_over, Named, Role, Use};
    let prints = model.commands.iter().any(|c| matches!(c, Command::Print { .. }));
    if cfg.report == Some(Destination::Stdout) && prints && !cfg.dry_run {
        return Some(
            "--json (or --report -) writes the report to standard output, where this model's print commands \
             write too; give --report PATH, or add --dry-run"
                .into(),
        );
    }
    let Some(Destination::Path(report)) = &cfg.report else { return None };
    fn role(what: String, path: &Path, used: Use) -> Role<'_> {
        Role { what, named: Named::Path(path), used }
    }
    let mut roles = vec![role(format!("the model ({})", cfg.model), Path::new(&cfg.model), Use::Read)];
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
    if !cfg.dry_run {
        roles.push(Role {
            what: "standard output, where print writes,".into(),
            named: Named::Stdout,
            used: Use::Write,
        });
    }
    refuse_report_over(report, &roles)
}

/// Reads and resolves the model file.
fn load(path: &Path, cfg: &RunConfig) -> Result<Model> {
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
    let paths =
        Paths { input: cfg.input_path.clone().unwrap_or(folder), output: cfg.output_path.clone().unwrap_or_default() };
    model::read(&root, &paths, &npy_dtype)
}

/// A `.npy` source's data type and data bytes, refused as DxDispatch refuses it (Fortran order)
/// or as tensorop cannot compute it.
fn npy_dtype(path: &Path) -> Result<(DType, u64)> {
    let input = InputTensor::open_path(path)?;
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

/// What `run --dry-run` checked, in one line: the dispatches and the level they pass at, the
/// writeFile commands, and the space the resources would take.
fn dry_run_text(cfg: &RunConfig, model: &Model, needed: u64) -> String {
    use crate::text::{counted, grouped};
    let dispatches = model.commands.iter().filter(|c| matches!(c, Command::Dispatch { .. })).count();
    let writes = model.commands.iter().filter(|c| matches!(c, Command::WriteFile { .. })).count();
    format!(
        "dry run: {} passed every check at feature level {}; {} planned; {} taking {} bytes, within \
         --resource-limit and the free temporary space; nothing was run or written",
        counted(dispatches as u64, "dispatch"),
        cfg.level,
        counted(writes as u64, "writeFile"),
        counted(model.resources.len() as u64, "resource"),
        grouped(needed),
    )
}

/// What can be known before anything runs: every `writeFile` fits its resource, and the
/// temporary space holds the resources.
fn preflight(model: &Model, limit: u64) -> Result<u64> {
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
    let label = format!("temporary space ({})", dir.display());
    crate::output::space::check_free_space(&label, &dir, needed, crate::output::space::Room::Resources)?;
    Ok(needed)
}
