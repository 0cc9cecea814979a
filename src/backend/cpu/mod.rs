//! The CPU backend, tensorop's reference: the output is cut into chunks that worker threads
//! compute independently, each reading just the input elements it needs with positional reads.
//! A file output is written by the workers themselves, each chunk at its offset; any other
//! output gets the finished chunks in order from the calling thread. Memory is a fixed number of
//! chunk-sized buffers, whatever the size of the inputs; only small inputs that are not read in
//! output order are loaded whole (large Fortran-order inputs arrive here already copied in C
//! order, see [`crate::npy::fortran`]).
//!
//! This module runs a job and cuts its output into chunks, and runs small or single-threaded
//! work on the calling thread; [`worker`] computes a chunk, [`ordered`] runs the worker threads
//! whose chunks the calling thread writes in order, [`in_place`] those that write their chunks
//! into a file output themselves; [`reference`] is `--verify`'s reference, range by range.

mod in_place;
mod ordered;
mod reference;
mod worker;

#[cfg_attr(not(windows), allow(unused_imports))]
pub use reference::Reference;

use crate::backend::{BusyTimes, Emit, Job, Ran};
use crate::dtype::to_little_endian;
use crate::op::Arith;
use crate::plan::Feed;
use crate::summary::Summarise;
use anyhow::Result;
use std::time::Instant;
use worker::Worker;

/// Bytes of output per chunk: large enough that per-chunk costs vanish, small enough that a
/// chunk's inputs and output stay in the CPU's L2 cache between read, compute and write.
const CHUNK_BYTES: usize = 256 * 1024;

/// The callback a run hands its output to: each finished chunk's bytes in order, or, with a
/// positional output, how many more bytes the workers wrote in place.
type EmitFn<'w> = dyn FnMut(Emit<'_>) -> Result<()> + 'w;

/// Runs `job`, handing each finished chunk's bytes, in order, to `write` (with a positional
/// output: the count of bytes written in place).
pub fn run(job: &Job, write: &mut EmitFn<'_>) -> Result<Ran> {
    crate::with_dtype!(job.dtype, T => run_typed::<T>(job, write))
}

/// Runs `job` on elements of type `T`: loads the resident inputs, then computes and writes the
/// chunks on this thread or on worker threads.
fn run_typed<T: Arith + Summarise>(job: &Job, write: &mut EmitFn<'_>) -> Result<Ran> {
    let chunks = Chunks::new::<T>(job.range.clone());
    let threads = job.threads.min(usize::try_from(chunks.count).unwrap_or(usize::MAX)).max(1);
    let mut ran = Ran { threads_used: threads, ..Ran::default() };

    let t = Instant::now();
    let resident = resident_inputs::<T>(job)?;
    ran.busy.read += t.elapsed();

    if threads <= 1 {
        run_single(job, &resident, chunks, write, &mut ran)?;
    } else if let Some(out) = &job.positional {
        in_place::run_in_place(job, out, &resident, chunks, threads, write, &mut ran)?;
    } else {
        ordered::run_parallel(job, &resident, chunks, threads, write, &mut ran)?;
    }
    Ok(ran)
}

/// How the output (or the part of it computed) is cut: `count` chunks of `len` elements from
/// element `first`, the last one possibly shorter.
#[derive(Debug, Clone, Copy)]
struct Chunks {
    /// The first output element computed.
    first: u64,
    /// Output elements computed in all.
    total: u64,
    /// Elements per chunk ([`CHUNK_BYTES`] worth).
    len: usize,
    /// Chunks in all.
    count: u64,
}

impl Chunks {
    /// The chunks of the output elements `range`, of `T`.
    fn new<T>(range: std::ops::Range<u64>) -> Chunks {
        let len = (CHUNK_BYTES / std::mem::size_of::<T>()).max(1);
        let total = range.end.saturating_sub(range.start);
        Chunks { first: range.start, total, len, count: total.div_ceil(len as u64) }
    }

    /// Chunk `c`'s first output element and length.
    fn range(self, c: u64) -> (u64, usize) {
        let start = c * self.len as u64;
        (self.first + start, (self.total - start).min(self.len as u64) as usize)
    }
}

/// Loads whole, in storage order, the inputs the plan feeds as [`Feed::Resident`]; the others
/// stay `None` and stream through windows.
fn resident_inputs<T: Arith>(job: &Job) -> Result<[Option<Vec<T>>; 2]> {
    let mut resident: [Option<Vec<T>>; 2] = [None, None];
    for (i, slot) in resident.iter_mut().enumerate() {
        let input = job.inputs[i];
        if job.feeds[i] == Feed::Resident {
            let mut v = vec![T::zeroed(); input.header.elements as usize];
            input.read_into(0, &mut v)?;
            *slot = Some(v);
        }
    }
    Ok(resident)
}

/// Hands `bytes` to `write`, adding the time it took to `busy.write`.
fn timed_write(write: &mut EmitFn<'_>, bytes: &[u8], busy: &mut BusyTimes) -> Result<()> {
    let t = Instant::now();
    let r = write(Emit::Bytes(bytes));
    busy.write += t.elapsed();
    r
}

/// Small or single-threaded work: no threads, one buffer, chunk after chunk.
fn run_single<T: Arith + Summarise>(
    job: &Job,
    resident: &[Option<Vec<T>>; 2],
    chunks: Chunks,
    write: &mut EmitFn<'_>,
    ran: &mut Ran,
) -> Result<()> {
    let mut w = Worker::new(job, resident, chunks.len);
    let mut buf = vec![T::zeroed(); chunks.len.min(chunks.total as usize)];
    for c in 0..chunks.count {
        let (start, len) = chunks.range(c);
        w.produce(start, &mut buf[..len])?;
        to_little_endian(&mut buf[..len]);
        if let Some(out) = &job.positional {
            let n = w.put(out, start, &buf[..len])?;
            write(Emit::Written(n))?;
        } else {
            timed_write(write, bytemuck::cast_slice(&buf[..len]), &mut ran.busy)?;
        }
    }
    ran.merge(Ran::of_worker(&mut w));
    Ok(())
}
