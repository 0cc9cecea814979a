//! A run over containers: pair the members ([`super::pairs`]), check every pair at the chosen
//! level exactly as a pair of `.npy` files is checked, then (when every pair passes and every
//! member has a partner, or `--skip-unpaired`) compute each pair with the same plan and backends
//! into one container output, written in order and committed whole. Small members run side by
//! side, one thread each; large ones one at a time with every thread, so memory stays bounded by
//! the batch, never by the container. The report (`report::container`) has one entry per pair and
//! the totals, with every member's `--stats` summary merged exactly.

mod digest;

use super::pairs::{pair, Pair, Pairing, Side};
use super::write::{ContainerWriter, OutFormat, OutMember};
use super::{Format, Opened};
use crate::backend::{self, BackendKind, Emit, Job, Ran};
use crate::config::Config;
use crate::npy::header::FileDType;
use crate::npy::input::NpyInput;
use crate::output::{Destination, Sink, Staging};
use crate::pipeline::{self, Outcome};
use crate::plan::{Plan, RESIDENT_BYTES};
use crate::report::container::*;
use crate::report::{ms, BackendInfo, BroadcastInfo, RunStatus, Tool};
use crate::shape::view_strides;
use crate::spec::checks::{validate, TensorSpec, Validation};
use crate::spec::dml::descriptors;
use crate::spec::level::LevelChoice;
use crate::spec::matrix::row_for;
use crate::summary::{Accumulator, Summary};
use anyhow::{anyhow, bail, Context, Result};
use digest::differs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A member whose output is at most this many bytes runs on one thread, beside others.
const SMALL_MEMBER: u64 = 4 << 20;
/// The most result bytes a batch of small members holds in memory before it is written.
const BATCH_BYTES: u64 = 64 << 20;
/// The most members in a batch: each holds its partial summary (with `--stats`, about 50 KiB)
/// until the batch is written, so a checkpoint of many tiny tensors is cut into many batches.
const BATCH_MEMBERS: usize = 256;
/// Bytes of container framing per member, at most: a zip's local header, data descriptor and
/// directory entry (with zip64 fields) and the `.npy` header, or a `.safetensors` header entry
/// (plus three times the name's length, written in each).
const FRAMING_PER_MEMBER: u64 = 512;

/// One member pair as the run goes.
struct MemberRun {
    pair: Pair,
    inputs: [MemberInput; 2],
    validation: Validation,
    /// The output's dtype, once the pair passed its checks.
    dtype: Option<crate::dtype::DType>,
    elements: u64,
    /// The result would be 2^64 bytes or more (`-f none` only).
    too_large: bool,
    strides: Option<[Vec<u64>; 2]>,
    /// `--stats`: the pair's finished summary (its accumulator goes into [`Merging`] at once, so
    /// memory does not grow with the number of members).
    summary: Option<Summary>,
    written: bool,
}

/// What the run got as far as, for the report.
#[derive(Default)]
struct Progress {
    open: Duration,
    validate: Duration,
    execute: Option<Duration>,
    bytes_read: u64,
    bytes_written: u64,
    output: Option<ContainerOutput>,
    device: Option<crate::backend::wgpu::DeviceReport>,
    threads_used: Option<usize>,
    /// `--stats`: the summaries of the pairs computed so far, merged.
    merging: Merging,
}

/// Runs the container pair `inputs` (opened in `open`), writes the report to `report_sink` and
/// returns the outcome.
pub fn run(cfg: &Config, inputs: [Opened; 2], open: Duration, report_sink: Option<Sink>, start: Instant) -> Outcome {
    let mut progress = Progress { open, ..Progress::default() };
    progress.bytes_read = inputs.iter().map(bytes_opened).sum();
    let described = [container_input(&inputs[0]), container_input(&inputs[1])];
    let mut members = Vec::new();
    let mut pairing = Pairing::default();
    let outcome = match stages(cfg, inputs, &mut pairing, &mut members, &mut progress) {
        Ok(o) => o,
        Err(e) if e.is::<crate::output::BrokenPipe>() => Outcome::Ok,
        Err(e) => Outcome::Error(e),
    };
    // Only a run that computed every pair has a verdict to print (a reader that closed
    // standard output early ends the run with success, but not every pair was computed).
    if matches!(outcome, Outcome::Ok) && progress.execute.is_some() && !cfg.quiet {
        print_summary(cfg, &members, &progress.merging.finish());
    }
    let report = report(cfg, described, &pairing, members, progress, &outcome, start.elapsed());
    pipeline::with_report(cfg, outcome, report_sink, |sink| crate::report::write_json(&report, sink))
}

/// How the report describes an input.
fn container_input(o: &Opened) -> ContainerInput {
    match o {
        Opened::Single(x) => ContainerInput { path: x.label.clone(), format: Format::Npy.name(), members: 1 },
        Opened::Many(c) => ContainerInput { path: c.label.clone(), format: c.format.name(), members: c.members.len() },
    }
}

fn bytes_opened(o: &Opened) -> u64 {
    match o {
        Opened::Single(x) => x.bytes_read.min(x.header.data_offset),
        Opened::Many(c) => c.bytes_read,
    }
}

/// Pairs, checks, and (unless refused) computes and writes. The inputs are closed before the
/// output is committed (Windows cannot rename over a file that is open, so `-o A` in place
/// needs it).
fn stages(
    cfg: &Config,
    inputs: [Opened; 2],
    pairing: &mut Pairing,
    members: &mut Vec<MemberRun>,
    progress: &mut Progress,
) -> Result<Outcome> {
    if cfg.dxdispatch.is_some() {
        bail!(
            "--dxdispatch exports one pair of .npy files, not containers: a DirectML repro is one dispatch; save the \
             member you want to reproduce as .npy (for example with NumPy or the safetensors package) and export that"
        );
    }
    // The output's format first: a .npy output is refused before any work.
    let format = out_format(cfg, &inputs)?;
    *pairing = pair([&inputs[0], &inputs[1]], &cfg.members)?;
    let t = Instant::now();
    *members = pairing.pairs.iter().map(|p| check(cfg, &inputs, p)).collect();
    progress.validate = t.elapsed();
    note_unpaired(cfg, &inputs, pairing);
    let invalid: Vec<&MemberRun> = members.iter().filter(|m| !m.validation.valid()).collect();
    if let Some(first) = invalid.first() {
        return Ok(Outcome::Invalid(format!(
            "{} of {} member pairs fail their checks; the first, {}:\n{}",
            invalid.len(),
            members.len(),
            first.pair.name,
            first.validation.failure_summary()
        )));
    }
    let unpaired = pairing.only_in_a.len() + pairing.only_in_b.len();
    if unpaired > 0 && !cfg.skip_unpaired {
        return Ok(Outcome::Unpaired(format!(
            "{unpaired} members have no partner in the other input (listed above); nothing was computed. Pass \
             --skip-unpaired to run the {} pairs both inputs hold, or --member to choose members",
            members.len()
        )));
    }
    refuse_unwritable(members, format)?;
    if members.is_empty() {
        let after = if cfg.members.is_empty() { "" } else { " among the members --member selects" };
        bail!("no member pairs to run: the inputs have no members in common{after}");
    }
    if cfg.dry_run {
        return Ok(Outcome::Ok);
    }
    execute(cfg, inputs, members, progress)?;
    Ok(Outcome::Ok)
}

/// Refuses, before any work (`--dry-run` included), a pair whose result cannot be written: one
/// of 2^64 bytes or more, a member `.safetensors` cannot name, a dtype `.npy` (and so `.npz`)
/// has no type for.
fn refuse_unwritable(members: &[MemberRun], format: Option<OutFormat>) -> Result<()> {
    if let Some(m) = members.iter().find(|m| m.too_large) {
        bail!("member {}: the result would be larger than 2^64 bytes", m.pair.name);
    }
    match format {
        Some(OutFormat::Safetensors) => {
            if let Some(m) = members.iter().find(|m| m.pair.name == "__metadata__") {
                bail!(
                    "member {:?}: .safetensors keeps that name for its metadata and cannot hold a tensor of that \
                     name; write -o OUT.npz, or leave it out with --member",
                    m.pair.name
                );
            }
        }
        Some(OutFormat::Npz) => {
            if let Some((m, d)) = members.iter().find_map(|m| m.dtype.filter(|d| !d.in_npy()).map(|d| (m, d))) {
                bail!(
                    "member {}: an .npz holds .npy files, and .npy has no {d} type; write -o OUT.safetensors",
                    m.pair.name
                );
            }
        }
        None => {}
    }
    Ok(())
}

/// The dtype, shape and storage order of one side of a pair, and how the report names it.
fn side(inputs: &[Opened; 2], i: usize, s: Side) -> (MemberInput, &FileDType, &[u64], bool) {
    match (&inputs[i], s) {
        (Opened::Many(c), Side::Member(k)) => {
            let m = &c.members[k];
            let info = MemberInput {
                path: c.label.clone(),
                member: Some(m.name.clone()),
                dtype: m.dtype.name(),
                shape: m.shape.clone(),
            };
            (info, &m.dtype, &m.shape, m.fortran_order)
        }
        (Opened::Single(x), _) => {
            let info = MemberInput {
                path: x.label.clone(),
                member: None,
                dtype: x.header.dtype.name(),
                shape: x.header.shape.clone(),
            };
            (info, &x.header.dtype, &x.header.shape, x.header.fortran_order)
        }
        (Opened::Many(_), Side::Single) => unreachable!("pairs::pair gives a container's side a member"),
    }
}

/// The checks of one member pair, as a single pair gets them.
fn check(cfg: &Config, inputs: &[Opened; 2], p: &Pair) -> MemberRun {
    let (ia, da, sa, fa) = side(inputs, 0, p.sides[0]);
    let (ib, db, sb, fb) = side(inputs, 1, p.sides[1]);
    let name = |tag: &str, info: &MemberInput| match &info.member {
        Some(m) => format!("{tag} ({}[{m}])", info.path),
        None => format!("{tag} ({})", info.path),
    };
    let a = TensorSpec { name: name("A", &ia), dtype: da, shape: sa };
    let b = TensorSpec { name: name("B", &ib), dtype: db, shape: sb };
    let validation = validate(cfg.sem.op, cfg.level, cfg.broadcast, &a, &b);
    let dtype = match (validation.valid(), da) {
        (true, FileDType::Numeric(d)) => Some(*d),
        _ => None,
    };
    // Past 2^64 elements only at `-f none`; refused before any work (`stages`).
    let elements = validation.out_shape.as_ref().map_or(Some(0), |s| crate::shape::element_count(s));
    let too_large = elements.and_then(|n| n.checked_mul(dtype.map_or(1, |d| d.size() as u64))).is_none();
    let elements = elements.unwrap_or(u64::MAX);
    // The strides the plan will use, known from the headers: the report has them (and the
    // DirectML descriptors) under --dry-run too, as a single pair's report does.
    let strides = match (&validation.out_shape, dtype) {
        (Some(out), Some(_)) => Some([view_strides(sa, fa, out), view_strides(sb, fb, out)]),
        _ => None,
    };
    MemberRun {
        pair: p.clone(),
        inputs: [ia, ib],
        validation,
        dtype,
        elements,
        too_large,
        strides,
        summary: None,
        written: false,
    }
}

/// Names on standard error the members only one input holds.
fn note_unpaired(cfg: &Config, inputs: &[Opened; 2], pairing: &Pairing) {
    for (i, names) in [&pairing.only_in_a, &pairing.only_in_b].into_iter().enumerate() {
        if names.is_empty() || cfg.quiet && cfg.skip_unpaired {
            continue;
        }
        let path = match &inputs[i] {
            Opened::Single(x) => x.label.clone(),
            Opened::Many(c) => c.label.clone(),
        };
        let verb = if cfg.skip_unpaired { "skipped" } else { "unpaired" };
        eprintln!(
            "tensorop: {} member{} only in {} ({path}), {verb}: {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            ["A", "B"][i],
            names.join(", ")
        );
    }
}

/// Where the result goes: a container of `format`, or nowhere (`-o /dev/null`, `NUL`).
fn out_format(cfg: &Config, inputs: &[Opened; 2]) -> Result<Option<OutFormat>> {
    let from_inputs = || {
        let first = inputs.iter().find_map(|o| match o {
            Opened::Many(c) => Some(c.format),
            Opened::Single(_) => None,
        });
        match first {
            Some(Format::Npz) => OutFormat::Npz,
            _ => OutFormat::Safetensors,
        }
    };
    let Destination::Path(p) = &cfg.output else { return Ok(Some(from_inputs())) };
    if discards(p) {
        return Ok(None);
    }
    let ext = p.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    Ok(Some(match ext.as_deref() {
        Some("safetensors") => OutFormat::Safetensors,
        Some("npz") => OutFormat::Npz,
        Some("npy") => bail!(
            "output {}: a container pair has many results and a .npy file holds one; write -o OUT.safetensors or \
             -o OUT.npz (a member can be read back from either by name)",
            p.display()
        ),
        _ => from_inputs(),
    }))
}

/// Whether `path` is the null device, which takes a result only to discard it: on Windows any
/// name Windows resolves to it (`NUL`, `nul:`, `.\NUL`, `\\.\NUL`), elsewhere `/dev/null` or a
/// link to it.
fn discards(path: &std::path::Path) -> bool {
    let null = std::path::Path::new("/dev/null");
    if cfg!(windows) {
        let resolved = std::path::absolute(path).ok();
        resolved.and_then(|p| p.to_str().map(|s| s.eq_ignore_ascii_case(r"\\.\NUL"))).unwrap_or(false)
    } else {
        path == null || std::fs::canonicalize(path).is_ok_and(|p| p == null)
    }
}

/// Computes every pair into the output container and commits it.
fn execute(cfg: &Config, inputs: [Opened; 2], members: &mut [MemberRun], progress: &mut Progress) -> Result<()> {
    let t = Instant::now();
    let format = out_format(cfg, &inputs)?;
    let out_members: Vec<OutMember> = members
        .iter()
        .map(|m| {
            let dtype = m.dtype.ok_or_else(|| anyhow!("internal error: member {} has no dtype", m.pair.name))?;
            let shape = m.validation.out_shape.clone().ok_or_else(|| anyhow!("internal error: no output shape"))?;
            Ok(OutMember { name: m.pair.name.clone(), dtype, shape })
        })
        .collect::<Result<_>>()?;
    let gpu = match cfg.backend {
        BackendKind::Cpu => None,
        BackendKind::Wgpu => {
            let gpu = backend::wgpu::Gpu::open(&cfg.wgpu)?;
            progress.device = out_members.first().map(|m| gpu.report(m.dtype));
            Some(gpu)
        }
    };
    let out_label = cfg.output.label();
    let mut sink = match format {
        Some(_) => {
            let sink = Sink::open(&cfg.output, cfg.writing).with_context(|| format!("output {out_label}"))?;
            if let Some(dir) = sink.replace_dir() {
                // The results, plus each member's .npy header and framing (an upper estimate).
                let total = members.iter().fold(0u64, |t, m| {
                    let bytes = m.elements.saturating_mul(m.dtype.map_or(1, |d| d.size() as u64));
                    t.saturating_add(bytes).saturating_add(FRAMING_PER_MEMBER + m.pair.name.len() as u64 * 3)
                });
                pipeline::check_free_space(&out_label, dir, total)?;
            }
            Some(sink)
        }
        None => None,
    };
    let staging = sink.as_ref().map(Sink::staging);
    let removed = sink.as_ref().map(|s| s.removed_leftovers().to_vec()).unwrap_or_default();
    if let Some(s) = &sink {
        pipeline::note_leftovers(cfg, &cfg.output, s);
    }
    let mut writer = match (format, sink.as_mut()) {
        (Some(f), Some(s)) => Some(
            ContainerWriter::begin(f, &out_members, s, out_label.clone())
                .with_context(|| format!("output {out_label}"))?,
        ),
        _ => None,
    };
    // Errors name what failed: a member's input (`input b.npz[x]: ...`) or the output.
    let threads_used = compute_all(cfg, &inputs, members, gpu.as_ref(), writer.as_mut(), &mut progress.merging)?;
    let mut written = 0;
    if let Some(w) = writer.take() {
        written = w.written;
        w.finish().with_context(|| format!("output {out_label}"))?;
    }
    drop(writer);
    drop(inputs);
    let synced = match sink {
        Some(s) => s.commit().with_context(|| format!("output {out_label}"))?,
        None => false,
    };
    progress.bytes_written = written;
    progress.threads_used = Some(threads_used);
    progress.execute = Some(t.elapsed());
    if let Some(f) = format {
        for m in members.iter_mut() {
            m.written = true;
        }
        progress.output = Some(ContainerOutput {
            path: out_label,
            format: f.name(),
            members: members.len(),
            temporary_file: staging.and_then(Staging::name),
            removed_leftovers: removed,
            fsync: synced,
        });
    }
    Ok(())
}

/// Opens one side of a pair for reading.
fn open_side(inputs: &[Opened; 2], i: usize, s: Side) -> Result<Option<NpyInput>> {
    match (&inputs[i], s) {
        (Opened::Many(c), Side::Member(k)) => Ok(Some(c.open_member(k)?)),
        _ => Ok(None),
    }
}

/// Computes the members in order, small ones in batches side by side, writing each result to
/// `writer`. Returns the most threads used at once.
fn compute_all(
    cfg: &Config,
    inputs: &[Opened; 2],
    members: &mut [MemberRun],
    gpu: Option<&backend::wgpu::Gpu>,
    mut writer: Option<&mut ContainerWriter<'_>>,
    merging: &mut Merging,
) -> Result<usize> {
    let bytes = |m: &MemberRun| m.elements.saturating_mul(m.dtype.map_or(1, |d| d.size() as u64));
    // Progress over every member's result bytes, as a single result's bar counts its own.
    let mut bar = crate::progress::Progress::new(cfg.progress, members.iter().map(bytes).fold(0, u64::saturating_add));
    let mut done = 0u64;
    let mut used = 1;
    let mut i = 0;
    while i < members.len() {
        // A batch: consecutive small members, up to BATCH_BYTES of results.
        let mut end = i;
        let mut batch_bytes = 0;
        while gpu.is_none()
            && cfg.threads > 1
            && end < members.len()
            && end - i < BATCH_MEMBERS
            && bytes(&members[end]) <= SMALL_MEMBER
            && batch_bytes + bytes(&members[end]) <= BATCH_BYTES
        {
            batch_bytes += bytes(&members[end]);
            end += 1;
        }
        if end - i >= 2 {
            used = used.max(run_batch(cfg, inputs, &mut members[i..end], writer.as_deref_mut(), merging)?);
            done = done.saturating_add(batch_bytes);
            bar.set(done);
            i = end;
            continue;
        }
        let m = &mut members[i];
        let (plan, opened) = plan_member(inputs, m)?;
        let given = given(inputs, &opened)?;
        if let Some(w) = writer.as_deref_mut() {
            w.start_member(&m.pair.name, &plan.header, plan.data_bytes)?;
        }
        let ran = compute_member(cfg, &plan, given, gpu, cfg.threads, &mut |bytes| {
            done = done.saturating_add(bytes.len() as u64);
            bar.set(done);
            match writer.as_deref_mut() {
                Some(w) => w.write(bytes),
                None => Ok(()),
            }
        })?;
        used = used.max(ran.threads_used);
        finish_member(m, &plan, ran, merging);
        i += 1;
    }
    bar.finish();
    Ok(used)
}

/// The plan of a member pair and its opened member inputs.
fn plan_member(inputs: &[Opened; 2], m: &mut MemberRun) -> Result<(Plan, [Option<NpyInput>; 2])> {
    let opened = [open_side(inputs, 0, m.pair.sides[0])?, open_side(inputs, 1, m.pair.sides[1])?];
    let plan = {
        let g = given(inputs, &opened)?;
        Plan::new(&m.validation, g)?
    };
    Ok((plan, opened))
}

/// Both sides of a pair as the backends read them: an opened member, or the single `.npy`.
fn given<'a>(inputs: &'a [Opened; 2], opened: &'a [Option<NpyInput>; 2]) -> Result<[&'a NpyInput; 2]> {
    let one = |i: usize| -> Result<&'a NpyInput> {
        match (&opened[i], &inputs[i]) {
            (Some(x), _) => Ok(x),
            (None, Opened::Single(x)) => Ok(x),
            (None, Opened::Many(_)) => Err(anyhow!("internal error: a member side was not opened")),
        }
    };
    Ok([one(0)?, one(1)?])
}

/// Records what a member's computation gave.
fn finish_member(m: &mut MemberRun, plan: &Plan, ran: Ran, merging: &mut Merging) {
    debug_assert_eq!(m.strides.as_ref(), Some(&plan.strides), "the checks' strides are the plan's");
    if let Some(acc) = ran.summary {
        m.summary = Some(acc.finish());
        merging.add(&acc);
    }
}

/// A small member's plan, result bytes and run.
type Computed = (Plan, Vec<u8>, Ran);

/// Computes a batch of small members, one thread each, and writes their results in order.
fn run_batch(
    cfg: &Config,
    inputs: &[Opened; 2],
    batch: &mut [MemberRun],
    mut writer: Option<&mut ContainerWriter<'_>>,
    merging: &mut Merging,
) -> Result<usize> {
    let workers = cfg.threads.min(batch.len());
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<Computed>>>> = batch.iter().map(|_| Mutex::new(None)).collect();
    let keep = writer.is_some();
    let members: &[MemberRun] = batch;
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= members.len() {
                    break;
                }
                let m = &members[k];
                let r = (|| -> Result<Computed> {
                    let opened = [open_side(inputs, 0, m.pair.sides[0])?, open_side(inputs, 1, m.pair.sides[1])?];
                    let g = given(inputs, &opened)?;
                    let plan = Plan::new(&m.validation, g)?;
                    let mut out = Vec::with_capacity(if keep { plan.data_bytes as usize } else { 0 });
                    let ran = compute_member(cfg, &plan, g, None, 1, &mut |bytes| {
                        if keep {
                            out.extend_from_slice(bytes);
                        }
                        Ok(())
                    })?;
                    Ok((plan, out, ran))
                })();
                if let Ok(mut slot) = results[k].lock() {
                    *slot = Some(r);
                }
            });
        }
    });
    for (m, slot) in batch.iter_mut().zip(results) {
        let r = slot.into_inner().ok().flatten().ok_or_else(|| anyhow!("internal error: a member was not computed"))?;
        let (plan, bytes, ran) = r?;
        if let Some(w) = writer.as_deref_mut() {
            w.start_member(&m.pair.name, &plan.header, plan.data_bytes)?;
            w.write(&bytes)?;
        }
        finish_member(m, &plan, ran, merging);
    }
    Ok(workers)
}

/// Runs the backend over one member pair, handing the result's bytes to `write` in order.
fn compute_member(
    cfg: &Config,
    plan: &Plan,
    given: [&NpyInput; 2],
    gpu: Option<&backend::wgpu::Gpu>,
    threads: usize,
    write: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<Ran> {
    let copies = pipeline::c_order_copies(plan, given)?;
    let inputs = [0, 1].map(|i| copies[i].as_ref().unwrap_or(given[i]));
    let iter = plan.iteration(inputs);
    let feeds = Plan::feeds(&iter, inputs, gpu.map_or(RESIDENT_BYTES, |g| g.resident_limit()));
    let job = Job {
        sem: cfg.sem,
        dtype: plan.dtype,
        range: 0..iter.count(),
        iter,
        inputs,
        feeds,
        threads,
        summarise: cfg.summarise,
        positional: None,
    };
    match gpu {
        None => backend::cpu::run(&job, &mut |e| match e {
            Emit::Bytes(b) => write(b),
            Emit::Written(_) => Ok(()),
        }),
        Some(g) => backend::wgpu::run(g, &job, &mut |b| write(b)),
    }
}

/// `--stats` on standard error ([`digest::print`]): the totals, then the worst members.
fn print_summary(cfg: &Config, members: &[MemberRun], merged: &Merged) {
    if !cfg.summarise {
        return;
    }
    let rows: Vec<digest::Row> = members
        .iter()
        .filter_map(|m| {
            Some(digest::Row {
                name: &m.pair.name,
                dtype: m.dtype.map_or("-", |d| d.name()),
                shape: m.validation.out_shape.as_deref().unwrap_or(&[]),
                summary: m.summary.as_ref()?,
            })
        })
        .collect();
    let totals: Vec<(&str, &Summary)> = match merged {
        Merged { all: Some(s), .. } => vec![("all members", s)],
        Merged { all: None, float: Some(f), int: Some(i) } => vec![("float members", f), ("integer members", i)],
        _ => Vec::new(),
    };
    digest::print(cfg, &rows, &totals);
}

/// The members' summaries merged: `all` when they are of one kind, else one per kind.
struct Merged {
    all: Option<crate::summary::Summary>,
    float: Option<crate::summary::Summary>,
    int: Option<crate::summary::Summary>,
}

/// The pairs' partial summaries merged as they finish, one per kind (merging is exact and
/// order-free, so the totals do not depend on which pair finished first).
#[derive(Default)]
struct Merging {
    float: Option<Accumulator>,
    int: Option<Accumulator>,
}

impl Merging {
    fn add(&mut self, a: &Accumulator) {
        let slot = match a {
            Accumulator::Float(_) => &mut self.float,
            Accumulator::Int(_) => &mut self.int,
        };
        match slot {
            Some(acc) => acc.merge(a),
            None => *slot = Some(a.clone()),
        }
    }

    fn finish(&self) -> Merged {
        let [f, i] = [&self.float, &self.int].map(|a| a.as_ref().map(Accumulator::finish));
        match (f, i) {
            (Some(f), Some(i)) => Merged { all: None, float: Some(f), int: Some(i) },
            (one, other) => Merged { all: one.or(other), float: None, int: None },
        }
    }
}

/// The report of the run.
fn report(
    cfg: &Config,
    inputs: [ContainerInput; 2],
    pairing: &Pairing,
    members: Vec<MemberRun>,
    progress: Progress,
    outcome: &Outcome,
    total: Duration,
) -> ContainerReport {
    let (status, error) = match outcome {
        Outcome::Ok => (RunStatus::Ok, None),
        Outcome::Invalid(msg) => (RunStatus::Invalid, Some(msg.clone())),
        Outcome::Unpaired(msg) => (RunStatus::Unpaired, Some(msg.clone())),
        Outcome::Error(e) => (RunStatus::Error, Some(format!("{e:#}"))),
    };
    let merged = progress.merging.finish();
    let computed = progress.execute.is_some();
    let minimum = if members.iter().all(|m| m.validation.minimum_level.is_some()) {
        members.iter().filter_map(|m| m.validation.minimum_level).max().map(|l| l.to_string())
    } else {
        None
    };
    let summaries: Vec<Option<Summary>> = members.iter().map(|m| m.summary.clone()).collect();
    let totals = Totals {
        pairs: members.len(),
        ok: members.iter().filter(|m| m.validation.valid()).count(),
        invalid: members.iter().filter(|m| !m.validation.valid()).count(),
        unpaired: pairing.only_in_a.len() + pairing.only_in_b.len(),
        minimum_feature_level: minimum,
        elements: members.iter().map(|m| m.elements).sum(),
        differing: (cfg.summarise && computed).then(|| summaries.iter().flatten().filter(|s| differs(s)).count()),
        stats: merged.all,
        stats_by_kind: match (merged.float, merged.int) {
            (Some(float), Some(int)) => Some(StatsByKind { float, int }),
            _ => None,
        },
    };
    let named: Vec<(&str, Option<&Summary>)> =
        members.iter().zip(&summaries).map(|(m, s)| (m.pair.name.as_str(), s.as_ref())).collect();
    let ranks = digest::ranks(cfg.sem.op, &named);
    let entries =
        members.into_iter().zip(summaries).zip(ranks).map(|((m, stats), rank)| entry(cfg, m, stats, rank)).collect();
    let gpu = cfg.backend == BackendKind::Wgpu;
    ContainerReport {
        schema_version: 1,
        tool: Tool { name: "tensorop", version: env!("CARGO_PKG_VERSION") },
        op: cfg.sem.op.name(),
        dml_operator: cfg.sem.op.dml_operator(),
        feature_level: cfg.level.to_string(),
        status,
        valid: status == RunStatus::Ok && totals.invalid == 0,
        error,
        inputs,
        members: entries,
        unpaired: Unpaired {
            only_in_a: pairing.only_in_a.clone(),
            only_in_b: pairing.only_in_b.clone(),
            skipped: cfg.skip_unpaired,
        },
        totals,
        output: progress.output,
        backend: BackendInfo {
            name: cfg.backend.name(),
            device: progress.device,
            threads: (!gpu).then_some(cfg.threads),
            threads_used: progress.threads_used.filter(|_| !gpu),
        },
        bytes_read: progress.bytes_read,
        bytes_written: progress.bytes_written,
        dry_run: cfg.dry_run,
        timings_ms: ContainerTimings {
            open: ms(progress.open),
            validate: ms(progress.validate),
            execute: progress.execute.map_or(0.0, ms),
            total: ms(total),
        },
    }
}

/// A member pair's entry in the report.
fn entry(cfg: &Config, m: MemberRun, stats: Option<Summary>, rank: Option<usize>) -> MemberEntry {
    let valid = m.validation.valid();
    let dml = match (cfg.level, m.dtype, &m.validation.out_shape, &m.strides) {
        (LevelChoice::Dml(level), Some(dtype), Some(shape), Some(strides)) => {
            row_for(cfg.sem.op, level).map(|row| descriptors(cfg.sem.op, row, dtype, shape, strides))
        }
        _ => None,
    };
    MemberEntry {
        status: if valid { RunStatus::Ok } else { RunStatus::Invalid },
        inputs: m.inputs,
        support_row: m.validation.support_row.map(|r| r.to_string()),
        minimum_feature_level: m.validation.minimum_level.map(|l| l.to_string()),
        broadcast: match (&m.validation.out_shape, m.strides) {
            (Some(shape), Some(strides)) => {
                Some(BroadcastInfo { mode: cfg.broadcast.name(), shape: shape.clone(), strides })
            }
            _ => None,
        },
        checks: m.validation.checks,
        dml,
        elements: m.elements,
        stats,
        rank,
        output_member: m.written.then(|| m.pair.name.clone()),
        name: m.pair.name,
    }
}
