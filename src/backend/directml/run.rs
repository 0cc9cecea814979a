//! Windows: a job on DirectML, chunk by chunk: each chunk's input windows read (little-endian,
//! storage order), dispatched, summarised (`--stats`), compared with the CPU's reference
//! (`--verify`) and handed on in order.

use super::chunks::{chunks, Chunk};
use super::device::Device;
use super::operator::{dispatch, Buffers, Shapes};
use super::verify::Verified;
use super::Settings;
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

/// Reads chunk `c`'s input windows into `host`.
fn read_windows<'h>(job: &Job, c: &Chunk, host: &'h mut [Vec<u8>; 2]) -> Result<[&'h [u8]; 2]> {
    let es = job.dtype.size();
    for (i, h) in host.iter_mut().enumerate() {
        let n = usize::try_from(c.span[i]).ok().and_then(|s| s.checked_mul(es)).ok_or_else(|| {
            anyhow!("input {}: a window of {} elements does not fit in memory", job.inputs[i].label, c.span[i])
        })?;
        h.resize(n, 0);
        job.inputs[i].read_le(c.base[i], h)?;
    }
    let [a, b] = host;
    Ok([a, b])
}

pub(super) fn run(
    dev: &Device,
    settings: &Settings,
    job: &Job,
    emit: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
) -> Result<Ran> {
    let mut ran = Ran { threads_used: 1, ..Ran::default() };
    let mut summary = job.summarise.then(|| Accumulator::new(job.dtype));
    let mut verified = settings.verify.then(|| Verified::new(job));
    if job.range.is_empty() {
        ran.summary = summary;
        ran.verified = verified;
        return Ok(ran);
    }
    let (sizes, shapes) = layout(job, settings)?;
    let limit = (settings.chunk_bytes / job.dtype.size() as u64).max(1);
    let mut bufs = Buffers::default();
    let (mut host, mut out, mut want) = ([Vec::new(), Vec::new()], Vec::new(), Vec::new());
    for c in chunks(&sizes, &shapes.strides, job.range.clone(), limit) {
        let t = Instant::now();
        let windows = read_windows(job, &c, &mut host)?;
        ran.busy.read += t.elapsed();
        let t = Instant::now();
        dispatch(dev, &mut bufs, &shapes, &c, windows, &mut out)?;
        ran.busy.compute += t.elapsed();
        if let Some(v) = &mut verified {
            v.check(job, c.start..c.start + c.count, &out, &mut want)?;
        }
        if let Some(s) = &mut summary {
            let t = Instant::now();
            s.add_le_bytes(job.dtype, &out);
            ran.busy.summarise += t.elapsed();
        }
        let t = Instant::now();
        emit(c.start, &out)?;
        ran.busy.write += t.elapsed();
    }
    ran.summary = summary;
    ran.verified = verified;
    Ok(ran)
}
