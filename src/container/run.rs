//! A run over containers: pair the members ([`super::pairs`]), check every pair at the chosen
//! level exactly as a pair of `.npy` files is checked, then (when every pair passes and every
//! member has a partner, or `--skip-unpaired`) compute each pair with the same plan and backends
//! into one container output, written in order and committed whole. Small members run side by
//! side, one thread each; large ones one at a time with every thread, so memory stays bounded by
//! the batch, never by the container. The report (`report::container`) has one entry per pair and
//! the totals, with every member's `--stats` summary merged exactly.

mod compute;
mod digest;
mod report;

use super::pairs::{pair, Pair, Pairing, Shapes, Side};
use super::write::{ContainerWriter, OutFormat, OutMember};
use super::{Format, Opened};
use crate::backend::directml::verify::Verified;
use crate::backend::Engine;
use crate::config::Config;
use crate::npy::header::FileDType;
use crate::outcome::Outcome;
use crate::output::{Destination, Staged, Staging};
use crate::report::container::*;
use crate::shape::view_strides;
use crate::spec::checks::{validate, BroadcastMode, TensorSpec, Validation};
use crate::summary::Summary;
use crate::text::{counted, plural};
use anyhow::{anyhow, bail, Context, Result};
use report::Merging;
use std::time::{Duration, Instant};

/// Bytes of container framing per member, at most: a zip's local header, data descriptor and
/// directory entry (with zip64 fields) and the `.npy` header, or a `.safetensors` header entry
/// (plus three times the name's length, written in each).
const FRAMING_PER_MEMBER: u64 = 512;

/// One member pair as the run goes.
struct MemberRun {
    pair: Pair,
    inputs: [MemberInput; 2],
    /// How its shapes were checked: `--broadcast`, or between two containers' members `none`
    /// unless `--broadcast` was given.
    broadcast: BroadcastMode,
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
    /// `--stats` over two containers: whether A's member equals B's bit for bit (the comparison
    /// core's verdict, `verdict::conformant::inputs_identical`), which the digest's "identical"
    /// is.
    identical: Option<bool>,
    written: bool,
}

impl MemberRun {
    /// Two containers' members of one name whose shapes differ (broadcast by `--broadcast
    /// numpy`): a changed tensor, counted as differing whatever its result. A `.npy` against a
    /// container's members broadcasts by design and is not counted so.
    fn shapes_differ(&self) -> bool {
        let [a, b] = &self.inputs;
        a.member.is_some() && b.member.is_some() && a.shape != b.shape
    }
}

/// What the run got as far as, for the report (a trace, as a single pair's run keeps one).
#[derive(Default)]
struct Trace {
    open: Duration,
    validate: Duration,
    execute: Option<Duration>,
    bytes_read: u64,
    bytes_written: u64,
    output: Option<ContainerOutput>,
    device: Option<crate::backend::DeviceReport>,
    threads_used: Option<usize>,
    /// `--stats`: the summaries of the pairs computed so far, merged.
    merging: Merging,
}

/// Runs the container pair `inputs` (opened in `open`), writes the report to `report_sink` and
/// returns the outcome.
pub fn run(
    cfg: &Config,
    inputs: [Opened; 2],
    open: Duration,
    report_to: Option<(&Destination, Staged)>,
    start: Instant,
) -> Outcome {
    let mut trace = Trace { open, ..Trace::default() };
    trace.bytes_read = inputs.iter().map(bytes_opened).sum();
    let described = [container_input(&inputs[0]), container_input(&inputs[1])];
    let mut members = Vec::new();
    let mut pairing = Pairing::default();
    let outcome = Outcome::of(stages(cfg, inputs, &mut pairing, &mut members, &mut trace));
    let outcome = settle_verdict(cfg, &members, &mut trace, outcome);
    // Only a run that computed every pair has a verdict to print (a reader that closed
    // standard output early ends the run with success, but not every pair was computed).
    if matches!(outcome, Outcome::Ok) && trace.execute.is_some() && !cfg.quiet {
        report::print_summary(cfg, &members, &pairing.reshaped, &trace.merging.finish());
    }
    let report = report::report(cfg, described, &pairing, members, trace, &outcome, start.elapsed());
    outcome.with_report(report_to, |sink| crate::report::write_json(&report, sink))
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
    trace: &mut Trace,
) -> Result<Outcome> {
    if cfg.dxdispatch.is_some() {
        bail!(
            "--dxdispatch exports one pair of .npy files, not containers: a DirectML repro is one dispatch; save the \
             member you want to reproduce as .npy (for example with NumPy or the safetensors package) and export that"
        );
    }
    // The output's format first: a .npy output is refused before any work.
    let format = out_format(cfg, &inputs)?;
    let (shapes, broadcast) = member_broadcast(cfg, &inputs);
    *pairing = pair([&inputs[0], &inputs[1]], &cfg.members, shapes)?;
    let t = Instant::now();
    *members = pairing.pairs.iter().map(|p| check(cfg, &inputs, p, broadcast)).collect();
    trace.validate = t.elapsed();
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
    let reshaped = pairing.reshaped.len();
    if unpaired + reshaped > 0 && !cfg.skip_unpaired {
        let mut what = Vec::new();
        if unpaired > 0 {
            what.push(format!(
                "{} no partner in the other input",
                plural(unpaired as u64, "member") + if unpaired == 1 { " has" } else { " have" }
            ));
        }
        if reshaped > 0 {
            what.push(format!(
                "{} changed shape (a changed tensor is a difference, not a broadcast: --broadcast numpy broadcasts \
                 members of different shapes)",
                plural(reshaped as u64, "member")
            ));
        }
        return Ok(Outcome::Unpaired(format!(
            "{} (listed above); nothing was computed. Pass --skip-unpaired to run the {} that match, or --member \
             to choose members",
            what.join(", and "),
            plural(members.len() as u64, "pair")
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
    execute(cfg, inputs, members, trace)?;
    Ok(Outcome::Ok)
}

/// `--verify`: a run that got as far as computing has a verdict over every member pair's
/// result; one that stopped early (a closed standard output, an error in a member) says which
/// members it compared, and succeeds only if the verdict is identical.
fn settle_verdict(cfg: &Config, members: &[MemberRun], trace: &mut Trace, outcome: Outcome) -> Outcome {
    if !cfg.backend.verifies() || cfg.dry_run || members.is_empty() {
        return outcome;
    }
    let total = members.iter().fold(0u64, |t, m| t.saturating_add(m.elements));
    let empty = || Verified::empty(crate::dtype::DType::U8, &[], 0, cfg.sem.float16);
    outcome.with_verdict(&mut trace.merging.verified, total, empty)
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

/// How two inputs' member pairs are paired and checked: two containers' members of one name
/// are one tensor before and after, so a changed shape is a difference and they pair only with
/// equal shapes, unless `--broadcast` is given; a `.npy` against a container's members
/// broadcasts by `--broadcast` (NumPy's rule by default).
fn member_broadcast(cfg: &Config, inputs: &[Opened; 2]) -> (Shapes, BroadcastMode) {
    let containers = inputs.iter().all(|o| matches!(o, Opened::Many(_)));
    if containers && !cfg.broadcast_given {
        (Shapes::Equal, BroadcastMode::None)
    } else {
        (Shapes::Any, cfg.broadcast)
    }
}

/// The checks of one member pair, as a single pair gets them.
fn check(cfg: &Config, inputs: &[Opened; 2], p: &Pair, broadcast: BroadcastMode) -> MemberRun {
    let (ia, da, sa, fa) = side(inputs, 0, p.sides[0]);
    let (ib, db, sb, fb) = side(inputs, 1, p.sides[1]);
    let name = |tag: &str, info: &MemberInput| match &info.member {
        Some(m) => format!("{tag} ({}[{m}])", info.path),
        None => format!("{tag} ({})", info.path),
    };
    let a = TensorSpec { name: name("A", &ia), dtype: da, shape: sa };
    let b = TensorSpec { name: name("B", &ib), dtype: db, shape: sb };
    let validation = validate(cfg.sem.op, cfg.level, broadcast, &a, &b);
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
        broadcast,
        validation,
        dtype,
        elements,
        too_large,
        strides,
        summary: None,
        identical: None,
        written: false,
    }
}

/// Names on standard error the members only one input holds, and those whose shape changed.
fn note_unpaired(cfg: &Config, inputs: &[Opened; 2], pairing: &Pairing) {
    let quiet = cfg.quiet && cfg.skip_unpaired;
    if !pairing.reshaped.is_empty() && !quiet {
        let verb = if cfg.skip_unpaired { "skipped" } else { "not computed" };
        eprintln!("tensorop: {} changed shape, {verb}:", counted(pairing.reshaped.len() as u64, "member"));
        for r in &pairing.reshaped {
            let [a, b] = r.shapes.clone().map(|s| crate::shape::fmt_shape(&s));
            eprintln!("tensorop:   {}: {a} in A, {b} in B", r.name);
        }
    }
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
fn execute(cfg: &Config, inputs: [Opened; 2], members: &mut [MemberRun], trace: &mut Trace) -> Result<()> {
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
    let engine = Engine::open(&cfg.backend)?;
    trace.device = out_members.first().and_then(|m| engine.device(m.dtype)).map(|(report, _)| report);
    let out_label = cfg.output.label();
    let mut sink = match format {
        Some(_) => {
            let sink = Staged::open(&cfg.output, cfg.writing).with_context(|| format!("output {out_label}"))?;
            if let Some(dir) = sink.replace_dir() {
                // The results, plus each member's .npy header and framing (an upper estimate).
                let total = members.iter().fold(0u64, |t, m| {
                    let bytes = m.elements.saturating_mul(m.dtype.map_or(1, |d| d.size() as u64));
                    t.saturating_add(bytes).saturating_add(FRAMING_PER_MEMBER + m.pair.name.len() as u64 * 3)
                });
                crate::output::space::check_free_space(
                    &format!("output {out_label}"),
                    dir,
                    total,
                    crate::output::space::Room::Output,
                )?;
            }
            Some(sink)
        }
        None => None,
    };
    let staging = sink.as_ref().map(Staged::staging);
    let removed = sink.as_ref().map(|s| s.removed_leftovers().to_vec()).unwrap_or_default();
    if let Some(s) = &sink {
        crate::output::note_leftovers(cfg.quiet, &cfg.output, s);
    }
    let mut writer = match (format, sink.as_mut()) {
        (Some(f), Some(s)) => Some(
            ContainerWriter::begin(f, &out_members, s, out_label.clone())
                .with_context(|| format!("output {out_label}"))?,
        ),
        _ => None,
    };
    // Errors name what failed: a member's input (`input b.npz[x]: ...`) or the output.
    let threads_used = compute::compute_all(cfg, &inputs, members, &engine, writer.as_mut(), &mut trace.merging)?;
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
    trace.bytes_written = written;
    trace.threads_used = Some(threads_used);
    trace.execute = Some(t.elapsed());
    if let Some(f) = format {
        for m in members.iter_mut() {
            m.written = true;
        }
        trace.output = Some(ContainerOutput {
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
