//! Windows: a job on DirectML, chunk by chunk, several in flight (`stream.rs`): each chunk's
//! input windows read (little-endian, storage order) straight into the device's upload buffer,
//! dispatched, and its output, straight from the read-back buffer, compared with the CPU's
//! reference (`--verify`), summarised (`--stats`) and handed on in order.

use super::chunks::{chunks, Chunk};
use super::device::Device;
use super::operator::Shapes;
use super::stream::{Finished, Stream};
use super::verify::{semantics, Verified};
use super::Settings;
use crate::backend::cpu::Reference;
use crate::backend::{Job, Ran};
use crate::shape::view_strides;
use crate::spec::dml::descriptors;
use crate::spec::matrix::row_for;
use crate::summary::Accumulator;
use anyhow::{anyhow, Result};
use std::time::Instant;

/// The job's descriptors as DirectML takes them: the output's sizes and each input's strides,
/// from the inputs as stored (what the report's `dml` says).
fn layout(job: &Job, settings: &Settings) -> Result<(Vec<u64>, Shapes)> {
    let strides = [0, 1].map(|i| {
        let h = &job.inputs[i].header;
        view_strides(&h.shape, h.fortran_order, job.shape)
    });
    let row = row_for(job.sem.op, settings.level)
        .ok_or_else(|| anyhow!("{} is not in DirectML feature level {}", job.sem.op.dml_operator(), settings.level))?;
    let d = descriptors(job.sem.op, row, job.dtype, job.shape, &strides);
    let s = |t: &crate::spec::dml::TensorDesc| t.strides.clone().unwrap_or_default();
    let shapes = Shapes {
        dtype: job.dtype,
        op: job.sem.op,
        strides: [s(&d.tensors.a), s(&d.tensors.b)],
        flags: super::ExecutionFlags::of(job.dtype, job.sem.float16, settings),
    };
    Ok((d.tensors.output.sizes, shapes))
}

/// Reads chunk `c`'s input windows (little-endian, storage order) into `windows`.
fn read_windows(job: &Job, c: &Chunk, windows: [&mut [u8]; 2]) -> Result<()> {
    for (i, w) in windows.into_iter().enumerate() {
        job.inputs[i].read_le(c.base[i], w)?;
    }
    Ok(())
}

/// Where finished chunks go, in order: `--verify`'s comparison, `--stats` and the output.
struct Sink<'j, 'e> {
    job: &'j Job<'j>,
    reference: Option<Reference<'j>>,
    wants: Vec<Vec<u8>>,
    emit: &'e mut dyn FnMut(u64, &[u8]) -> Result<()>,
    ran: Ran,
}

impl Sink<'_, '_> {
    /// Hands on the finished chunk `f`, whose output is `out`.
    fn take(&mut self, f: &Finished, out: &[u8]) -> Result<()> {
        let (c, busy) = (&f.chunk, &mut self.ran.busy);
        busy.device += f.gpu.list;
        busy.dispatch += f.gpu.dispatch;
        if let (Some(v), Some(r)) = (&mut self.ran.verified, &mut self.reference) {
            r.compute(c.start..c.start + c.count, &mut self.wants)?;
            v.check(self.job, c.start, out, &self.wants);
        }
        if let Some(s) = &mut self.ran.summary {
            let t = Instant::now();
            s.add_le_bytes(self.job.dtype, out);
            busy.summarise += t.elapsed();
        }
        let t = Instant::now();
        (self.emit)(c.start, out)?;
        busy.write += t.elapsed();
        Ok(())
    }
}

/// Runs `job` on DirectML, `settings.in_flight` chunks in flight: each slot's finished chunk is handed
/// on just before the slot takes the next one, so the device works while the host reads and
/// writes.
pub(super) fn run(
    dev: &Device,
    settings: &Settings,
    job: &Job,
    emit: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
) -> Result<Ran> {
    let ran = Ran {
        threads_used: 1,
        summary: job.summarise.then(|| Accumulator::new(job.dtype)),
        verified: settings.verify.then(|| Verified::new(job)),
        ..Ran::default()
    };
    if job.range.is_empty() {
        return Ok(ran);
    }
    let (sizes, shapes) = layout(job, settings)?;
    let limit = (settings.chunk_bytes / job.dtype.size() as u64).max(1);
    let all = chunks(&sizes, &shapes.strides, job.range.clone(), limit);
    let sems = semantics(job);
    let reference = settings.verify.then(|| Reference::new(job, sems.clone())).transpose()?;
    let mut sink = Sink { job, reference, wants: vec![Vec::new(); sems.len()], emit, ran };
    let mut stream = Stream::new(dev, &shapes, &all, settings.in_flight)?;
    let slots = stream.slots();
    let count = all.len();
    for (i, c) in all.into_iter().enumerate() {
        let slot = i % slots;
        hand_on(&mut stream, slot, &mut sink)?;
        let t = Instant::now();
        read_windows(job, &c, stream.windows(slot, &c)?)?;
        sink.ran.busy.read += t.elapsed();
        stream.submit(slot, c)?;
    }
    for k in 0..slots {
        hand_on(&mut stream, (count + k) % slots, &mut sink)?;
    }
    Ok(sink.ran)
}

/// Waits for slot `slot`'s chunk in flight, if any (the wait counted as `compute`), and hands
/// it on.
fn hand_on(stream: &mut Stream<'_>, slot: usize, sink: &mut Sink<'_, '_>) -> Result<()> {
    let t = Instant::now();
    let finished = stream.finish(slot)?;
    sink.ran.busy.compute += t.elapsed();
    match finished {
        Some(f) => sink.take(&f, stream.output(slot, &f.chunk)),
        None => Ok(()),
    }
}
