//! Computing a container run's member pairs in order into the output container: small members
//! in batches side by side, one thread each (their results held in memory until written, in
//! order); large ones one at a time with every thread, streamed into the container writer. Each
//! through the one engine and `ResultSink`, as a single pair is.

use super::{MemberRun, Merging};
use crate::backend::{Engine, Job, Ran};
use crate::config::Config;
use crate::container::pairs::Side;
use crate::container::write::ContainerWriter;
use crate::container::Opened;
use crate::npy::input::InputTensor;
use crate::output::result::ResultSink;
use crate::plan::Plan;
use anyhow::{anyhow, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A member whose output is at most this many bytes runs on one thread, beside others.
const SMALL_MEMBER: u64 = 4 << 20;

/// The most result bytes a batch of small members holds in memory before it is written.
const BATCH_BYTES: u64 = 64 << 20;

/// The most members in a batch: each holds its partial summary (with `--stats`, about 50 KiB)
/// until the batch is written, so a checkpoint of many tiny tensors is cut into many batches.
const BATCH_MEMBERS: usize = 256;

/// Opens one side of a pair for reading.
pub(super) fn open_side(inputs: &[Opened; 2], i: usize, s: Side) -> Result<Option<InputTensor>> {
    match (&inputs[i], s) {
        (Opened::Many(c), Side::Member(k)) => Ok(Some(c.open_member(k)?)),
        _ => Ok(None),
    }
}

/// Computes the members in order, small ones in batches side by side, writing each result to
/// `writer`. Returns the most threads used at once.
pub(super) fn compute_all(
    cfg: &Config,
    inputs: &[Opened; 2],
    members: &mut [MemberRun],
    engine: &Engine,
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
        while engine.runs_side_by_side()
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
        let mut discard = Discard;
        let sink: &mut dyn ResultSink = match writer.as_deref_mut() {
            Some(w) => w,
            None => &mut discard,
        };
        let ran = compute_member(cfg, &plan, given, engine, cfg.threads, sink, &mut |n| {
            done = done.saturating_add(n);
            bar.set(done);
        })?;
        used = used.max(ran.threads_used);
        m.identical = member_identical(cfg, m, &plan, given)?;
        finish_member(m, &plan, ran, merging);
        i += 1;
    }
    bar.finish();
    Ok(used)
}

/// The plan of a member pair and its opened member inputs.
pub(super) fn plan_member(inputs: &[Opened; 2], m: &mut MemberRun) -> Result<(Plan, [Option<InputTensor>; 2])> {
    let opened = [open_side(inputs, 0, m.pair.sides[0])?, open_side(inputs, 1, m.pair.sides[1])?];
    let plan = {
        let g = given(inputs, &opened)?;
        Plan::new(&m.validation, g)?
    };
    Ok((plan, opened))
}

/// Both sides of a pair as the backends read them: an opened member, or the single `.npy`.
pub(super) fn given<'a>(inputs: &'a [Opened; 2], opened: &'a [Option<InputTensor>; 2]) -> Result<[&'a InputTensor; 2]> {
    let one = |i: usize| -> Result<&'a InputTensor> {
        match (&opened[i], &inputs[i]) {
            (Some(x), _) => Ok(x),
            (None, Opened::Single(x)) => Ok(x),
            (None, Opened::Many(_)) => Err(anyhow!("internal error: a member side was not opened")),
        }
    };
    Ok([one(0)?, one(1)?])
}

/// `--stats` over two containers' members of one shape: whether A's member equals B's bit for
/// bit, in the output's order (a second read of both members, which stops at the first row
/// that differs). `None` otherwise: a `.npy` against a container's members is no diff.
pub(super) fn member_identical(
    cfg: &Config,
    m: &MemberRun,
    plan: &Plan,
    given: [&InputTensor; 2],
) -> Result<Option<bool>> {
    let [a, b] = &m.inputs;
    if !cfg.summarise || a.member.is_none() || b.member.is_none() || a.shape != b.shape {
        return Ok(None);
    }
    let iter = crate::shape::Iteration::new(&plan.out_shape, &plan.strides[0], &plan.strides[1]);
    crate::verdict::conformant::inputs_identical(&iter, given, plan.dtype).map(Some)
}

/// Records what a member's computation gave.
pub(super) fn finish_member(m: &mut MemberRun, plan: &Plan, ran: Ran, merging: &mut Merging) {
    debug_assert_eq!(m.strides.as_ref(), Some(&plan.strides), "the checks' strides are the plan's");
    if let Some(acc) = ran.summary {
        m.summary = Some(acc.finish());
        merging.add(&acc);
    }
    if let Some(v) = ran.verified {
        merging.verified(&m.pair.name, v);
    }
}

/// A small member's plan, result bytes and run.
pub(super) type Computed = (Plan, Vec<u8>, Ran, Option<bool>);

/// Computes a batch of small members, one thread each, and writes their results in order.
pub(super) fn run_batch(
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
                    let sink: &mut dyn ResultSink = if keep { &mut out } else { &mut Discard };
                    let ran = compute_member(cfg, &plan, g, &Engine::Cpu, 1, sink, &mut |_| {})?;
                    let identical = member_identical(cfg, m, &plan, g)?;
                    Ok((plan, out, ran, identical))
                })();
                if let Ok(mut slot) = results[k].lock() {
                    *slot = Some(r);
                }
            });
        }
    });
    for (m, slot) in batch.iter_mut().zip(results) {
        let r = slot.into_inner().ok().flatten().ok_or_else(|| anyhow!("internal error: a member was not computed"))?;
        let (plan, bytes, ran, identical) = r?;
        m.identical = identical;
        if let Some(w) = writer.as_deref_mut() {
            w.start_member(&m.pair.name, &plan.header, plan.data_bytes)?;
            w.write(&bytes)?;
        }
        finish_member(m, &plan, ran, merging);
    }
    Ok(workers)
}

/// Runs the engine over one member pair, its result into `sink` in order; `counted` hears of
/// every byte.
pub(super) fn compute_member(
    cfg: &Config,
    plan: &Plan,
    given: [&InputTensor; 2],
    engine: &Engine,
    threads: usize,
    sink: &mut dyn ResultSink,
    counted: &mut dyn FnMut(u64),
) -> Result<Ran> {
    let copies = plan.c_order_copies(given)?;
    let inputs = [0, 1].map(|i| copies[i].as_ref().unwrap_or(given[i]));
    let iter = plan.iteration(inputs);
    let feeds = Plan::feeds(&iter, inputs, engine.resident_limit());
    let job = Job {
        sem: cfg.sem,
        dtype: plan.dtype,
        shape: &plan.out_shape,
        range: 0..iter.count(),
        iter,
        inputs,
        feeds,
        threads,
        summarise: cfg.summarise,
        positional: None,
    };
    engine.compute_into(&job, sink, counted)
}

/// A destination that keeps nothing (`-o /dev/null` for a container pair).
pub(super) struct Discard;

impl ResultSink for Discard {
    fn write(&mut self, _bytes: &[u8]) -> Result<()> {
        Ok(())
    }
}
