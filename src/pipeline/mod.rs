//! The driver: one `sub`/`sqdiff` run, start to finish, flowing one way: open inputs (headers
//! only) -> checks -> plan -> the result's destination opened -> the engine streams the result
//! into it -> commit -> report. A container pair branches off to `container::run` after the
//! headers and comes back with its outcome; `--part` and `--dxdispatch` change only the
//! destination (`output::result`). Each stage records what it produced in a `trace::Trace`;
//! the report is built from the trace and the outcome at the end, whatever happened, after the
//! result was committed (or failed to be), so it always says what happened.

mod trace;

use crate::backend::{Engine, Job, Positional};
use crate::config::Config;
use crate::dxdispatch::export::Repro;
use crate::npy::input::InputTensor;
use crate::op::Float16Rule;
pub use crate::outcome::Outcome;
use crate::output::parts::{PartSpec, Stage};
use crate::output::result::{ResultSink, ToOutput, ToPart};
use crate::output::space::{check_free_space, Room};
use crate::output::target::Target;
use crate::output::{Destination, Staged, Staging};
use crate::plan::Plan;
use crate::progress::Progress;
use crate::report::summary;
use crate::report::{PartInfo, Report};
use crate::spec::checks::{validate, TensorSpec};
use anyhow::{bail, Context, Result};
use std::time::Instant;
use trace::Trace;

/// Runs `cfg`, writes the report if asked, and returns the outcome.
pub fn run(cfg: &Config) -> Outcome {
    let start = Instant::now();
    let report_sink = match cfg.report.as_ref().map(|dest| Report::open_sink(dest, cfg.writing)).transpose() {
        Ok(s) => s,
        Err(e) => return Outcome::Error(e),
    };
    if let (Some(dest), Some(sink)) = (&cfg.report, &report_sink) {
        crate::output::note_leftovers(cfg.quiet, dest, sink);
    }
    let report_to = cfg.report.as_ref().zip(report_sink);
    let part = cfg.part.map(|p| PartInfo {
        index: p.index,
        count: p.count,
        first: None,
        end: None,
        job: None,
        committed: false,
        pending: vec![],
    });
    let mut trace = Trace { part, ..Trace::default() };
    let result = match open_inputs(cfg, &mut trace) {
        Ok(Inputs::Pair(_)) if container_named(&cfg.output).is_some() => {
            Ok(Outcome::Refused(container_named(&cfg.output).unwrap_or_default()))
        }
        Ok(Inputs::Pair(inputs)) => stages(cfg, inputs, &mut trace),
        Ok(Inputs::Containers(_)) if cfg.device_dependence => Ok(Outcome::Refused(
            "--device-dependence counts the elements of one result: give two .npy files (a container's member can be \
             saved as .npy with NumPy or the safetensors package)"
                .into(),
        )),
        Ok(Inputs::Containers(_)) if cfg.part.is_some() => Err(anyhow::anyhow!(
            "--part splits the result of one pair of .npy files; a container pair is split by member instead \
             (--member PATTERN), one run per group of members"
        )),
        Ok(Inputs::Containers(inputs)) => {
            return crate::container::run::run(cfg, *inputs, trace.read, report_to, start);
        }
        Err(e) => Err(e),
    };
    let outcome = settle_verdict(cfg, &mut trace, Outcome::of(result));
    if let (Outcome::Ok, Some(s), Some(p), false) = (&outcome, &trace.summary, &trace.plan, cfg.quiet) {
        let label = summary::Label { of: cfg.sem.op.name(), dtype: p.dtype.name(), mean: cfg.sem.op.mean_name() };
        eprint!("{}", summary::human(s, &label));
    }
    if let (Outcome::Ok, Some(d), false) = (&outcome, &trace.dependence, cfg.quiet) {
        crate::notices::device_dependence(cfg, d);
    }
    if let (Outcome::Ok, true, Some(p), Some(v), false) =
        (&outcome, cfg.dry_run, &trace.plan, &trace.validation, cfg.quiet)
    {
        eprintln!("tensorop: {}", crate::notices::dry_run_verdict(cfg, p, v));
    }
    if let (Outcome::Ok, Some(part), false) = (&outcome, &trace.part, cfg.quiet) {
        eprintln!("tensorop: {}", crate::notices::part_done(cfg, part));
    }
    let report = trace.report(cfg, &outcome, start.elapsed());
    let outcome = outcome.with_report(report_to, |sink| report.write_to(sink));
    match (outcome, &cfg.dxdispatch) {
        (Outcome::Invalid(msg), Some(dir)) => {
            Outcome::Invalid(crate::dxdispatch::export::refusal(dir, &cfg.level.to_string(), msg))
        }
        (outcome, _) => outcome,
    }
}

/// `--verify`: a run that got as far as computing has a verdict, over the elements it was to
/// compute; one that stopped early (a closed standard output, an error) says so in it, and
/// succeeds only if it is identical.
fn settle_verdict(cfg: &Config, trace: &mut Trace, outcome: Outcome) -> Outcome {
    let Some(plan) = trace.plan.as_ref().filter(|_| cfg.backend.verifies() && !cfg.dry_run) else { return outcome };
    let range = cfg.part.map_or(0..plan.elements, |p| p.range(plan.elements));
    let elements = range.end - range.start;
    let empty = || crate::backend::directml::verify::Verified::empty(plan.dtype, &plan.out_shape, 0, cfg.sem.float16);
    outcome.with_verdict(&mut trace.verified, elements, empty)
}

/// A `.npy` pair's result is one `.npy` file: an output named as a container (`.safetensors`,
/// `.npz`) would hold the wrong format under its name. Returns the refusal, naming the fix.
fn container_named(output: &Destination) -> Option<String> {
    let Destination::Path(p) = output else { return None };
    let ext = p.extension()?.to_str()?.to_ascii_lowercase();
    matches!(ext.as_str(), "safetensors" | "npz").then(|| {
        format!(
            "output {}: two .npy inputs give one .npy result, and a .{ext} file is a container; write -o OUT.npy \
             (or give container inputs, whose members pair by name)",
            p.display()
        )
    })
}

/// The stages in order; each records its product in `trace` before the next starts.
fn stages(cfg: &Config, inputs: Vec<InputTensor>, trace: &mut Trace) -> Result<Outcome> {
    crate::notices::idle_flags(cfg, &inputs);
    let [a, b] = [&inputs[0], &inputs[1]];
    let t = Instant::now();
    fn spec(i: usize, x: &InputTensor) -> TensorSpec<'_> {
        TensorSpec { name: format!("{} ({})", ["A", "B"][i], x.label), dtype: &x.header.dtype, shape: &x.header.shape }
    }
    let validation = trace.validation.insert(validate(cfg.sem.op, cfg.level, cfg.broadcast, &spec(0, a), &spec(1, b)));
    trace.validate = t.elapsed();
    if !validation.valid() {
        return Ok(Outcome::Invalid(validation.failure_summary()));
    }
    let plan = trace.plan.insert(Plan::new(validation, [a, b])?).clone();
    if cfg.device_dependence {
        let iter = crate::shape::Iteration::new(&plan.out_shape, &plan.strides[0], &plan.strides[1]);
        let walk = crate::verdict::conformant::Walk { op: cfg.sem.op, dtype: plan.dtype, iter: &iter, inputs: [a, b] };
        let range = cfg.part.map_or(0..plan.elements, |p| p.range(plan.elements));
        trace.dependence = Some(walk.dependence(range)?);
    }
    // `--dxdispatch`: the repro is assembled in a hidden directory, the job written into it
    // while the inputs are open; the result joins it, and committing the result moves it into
    // place.
    let repro = match &cfg.dxdispatch {
        Some(dir) => {
            let in_dir = || format!("DxDispatch repro {}", dir.display());
            let repro = Repro::prepare(dir).with_context(in_dir)?;
            repro.write_job(cfg.sem, cfg.level, &plan, [a, b]).with_context(in_dir)?;
            Some(repro)
        }
        None => None,
    };
    if !cfg.dry_run {
        execute(cfg, &plan, inputs, trace, repro)?;
    }
    Ok(Outcome::verified(trace.verified.as_ref()))
}

/// What the inputs turned out to be.
enum Inputs {
    /// Two `.npy` files: the single-pair run.
    Pair(Vec<InputTensor>),
    /// At least one container: the run over member pairs (`container::run`).
    Containers(Box<[crate::container::Opened; 2]>),
}

/// Opens both inputs: headers (and container directories) parsed and sizes checked, no data
/// read yet.
fn open_inputs(cfg: &Config, trace: &mut Trace) -> Result<Inputs> {
    use crate::container::Opened as One;
    let t = Instant::now();
    let mut opened = Vec::with_capacity(2);
    for (i, source) in cfg.inputs.iter().enumerate() {
        let input = One::open(source).with_context(|| format!("input {} ({})", ["A", "B"][i], source.describe()))?;
        if let One::Single(x) = &input {
            trace.inputs.push(crate::report::InputInfo::new(&source.label(), &x.header));
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
        return Ok(Inputs::Pair(singles.collect()));
    }
    let [a, b]: [One; 2] = opened.try_into().map_err(|_| anyhow::anyhow!("internal error: not two inputs"))?;
    Ok(Inputs::Containers(Box::new([a, b])))
}

/// Opens the result's destination, computes the result into it, closes the inputs and commits
/// it (a part's commit marks it done, and commits the job's result if every part is done; a
/// repro's moves its directory into place).
fn execute(cfg: &Config, plan: &Plan, inputs: Vec<InputTensor>, trace: &mut Trace, repro: Option<Repro>) -> Result<()> {
    let mut sink = open_result(cfg, plan, [&inputs[0], &inputs[1]], trace, repro)?;
    let t = Instant::now();
    let copies = plan.c_order_copies([&inputs[0], &inputs[1]])?;
    let given = [0, 1].map(|i| copies[i].as_ref().unwrap_or(&inputs[i]));
    if cfg.backend.kind() == crate::backend::BackendKind::Directml && copies.iter().any(Option::is_some) {
        // DirectML reads the copies: the report says so beside the descriptors a caller passes.
        let s = given.map(|x| crate::shape::view_strides(&x.header.shape, x.header.fortran_order, &plan.out_shape));
        trace.strides_executed = (s != plan.strides).then_some(s);
    }
    trace.read += t.elapsed();
    let engine = Engine::open(&cfg.backend)?;
    trace.device = engine.device(plan.dtype);
    let t = Instant::now();
    let ran = stream(cfg, plan, given, &engine, sink.as_mut(), trace)?;
    // Closed before the output replaces a file: Windows does not replace a file that is open,
    // as an in-place run's input is.
    drop(copies);
    drop(inputs);
    // A part's verdict travels in its marker, so that the part that commits the job can say
    // whether every part verified.
    let verdict = ran.verified.as_ref().map(serde_json::to_value).transpose()?;
    let committed = sink.finish(verdict)?;
    trace.synced = committed.synced;
    if let Some(p) = &mut trace.part {
        p.committed = committed.job_committed;
        p.pending = crate::output::parts::ranges(&committed.parts_pending);
    }
    trace.execute = Some(t.elapsed());
    trace.summary = ran.summary.as_ref().map(|a| a.finish());
    trace.verified = match (ran.verified, committed.job_committed) {
        (Some(v), true) => Some(v.with_parts(&committed.part_verdicts)),
        (v, _) => v,
    };
    trace.threads_used = Some(ran.threads_used);
    trace.busy = Some(ran.busy);
    Ok(())
}

/// Opens where the result goes, before any work: what the output path names is decided here,
/// once, and an output file its filesystem cannot hold is refused now, not after minutes of
/// writing (the feature levels cap outputs at 2^32 - 1 elements, `none` does not).
fn open_result(
    cfg: &Config,
    plan: &Plan,
    inputs: [&InputTensor; 2],
    trace: &mut Trace,
    repro: Option<Repro>,
) -> Result<Box<dyn ResultSink>> {
    let label = format!("output {}", cfg.output.label());
    if let Some(spec) = cfg.part {
        let part = join_part(cfg, plan, inputs, spec, &label)?;
        trace.staging = Some(Staging::Parts);
        if let Some(p) = &mut trace.part {
            p.job = Some(part.job().to_string());
        }
        return Ok(Box::new(part));
    }
    let dest = match &repro {
        Some(r) => Destination::Path(r.expected()),
        None => cfg.output.clone(),
    };
    let sink = Staged::open(&dest, cfg.writing).with_context(|| label.clone())?;
    trace.staging = Some(sink.staging());
    trace.leftovers = sink.removed_leftovers().to_vec();
    crate::output::note_leftovers(cfg.quiet, &cfg.output, &sink);
    if let Some(dir) = sink.replace_dir() {
        check_free_space(&label, dir, plan.output_bytes(), Room::Output)?;
    }
    let out = ToOutput::new(sink, label);
    Ok(match repro {
        Some(r) => Box::new(r.around(out, cfg.writing.durable)),
        None => Box::new(out),
    })
}

/// `--part`: joins the job's staging directory beside the output (see `output::parts`). Every
/// part writes the header too: the same bytes.
fn join_part(cfg: &Config, plan: &Plan, inputs: [&InputTensor; 2], spec: PartSpec, label: &str) -> Result<ToPart> {
    let out = cfg.output.label();
    let target = match &cfg.output {
        Destination::Path(p) => match Target::resolve(p).with_context(|| label.to_string())? {
            Target::Replace { path, .. } => path,
            _ => bail!("{label}: --part writes a file that appears when the last part is done; {out} is not a file"),
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
        "half_precision": cfg.sem.float16 == Float16Rule::PerStep,
        "float16_rule": cfg.sem.float16.name(),
        "broadcast": cfg.broadcast.name(),
        "dtype": plan.dtype.name(),
        "shape": plan.out_shape,
        "parts": spec.count,
        "inputs": described,
    });
    let (stage, file) = Stage::join(&target, spec, description, plan.output_bytes())
        .with_context(|| format!("{label} (part {}/{})", spec.index, spec.count))?;
    Ok(ToPart::new(stage, file, cfg.writing.durable, label.to_string()))
}

/// Writes the header, then runs the engine into `sink` (the CPU's workers writing a file in
/// place where the destination is one), counting the bytes and showing the progress.
fn stream(
    cfg: &Config,
    plan: &Plan,
    inputs: [&InputTensor; 2],
    engine: &Engine,
    sink: &mut dyn ResultSink,
    trace: &mut Trace,
) -> Result<crate::backend::Ran> {
    let in_place = match engine.writes_in_place() {
        true => sink.in_place(plan.output_bytes())?,
        false => None,
    };
    let out_label = cfg.output.label();
    let iter = plan.iteration(inputs);
    let feeds = Plan::feeds(&iter, inputs, engine.resident_limit());
    let job = Job {
        sem: cfg.sem,
        dtype: plan.dtype,
        shape: &plan.out_shape,
        range: cfg.part.map_or(0..plan.elements, |p| p.range(plan.elements)),
        iter,
        inputs,
        feeds,
        threads: cfg.threads,
        summarise: cfg.summarise,
        positional: in_place.as_ref().map(|file| Positional {
            file,
            offset: plan.header.len() as u64,
            label: &out_label,
        }),
    };
    sink.write(&plan.header)?;
    trace.bytes_written = plan.header.len() as u64;
    // A part's bytes start at its first element.
    sink.skip(job.range.start * plan.dtype.size() as u64);
    let mut progress = Progress::new(cfg.progress, (job.range.end - job.range.start) * plan.dtype.size() as u64);
    let mut data_written = 0u64;
    let result = engine.compute_into(&job, sink, &mut |n| {
        data_written += n;
        progress.set(data_written);
    });
    progress.finish();
    trace.bytes_written += data_written;
    result
}
