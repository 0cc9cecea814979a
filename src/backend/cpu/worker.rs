//! A CPU worker: computes the output elements of a chunk, reading each input from memory (a
//! resident input) or through a window refilled by positional reads, gathering strided and
//! broadcast operands, and with `--stats` adding the chunk to its summary; and writes a finished
//! chunk into a positional output.

use crate::backend::{BusyTimes, Job, Positional, Ran};
use crate::npy::input::InputTensor;
use crate::op::{Arith, Operand, Semantics};
use crate::shape::Iteration;
use crate::summary::{Accumulator, Summarise};
use anyhow::Result;
use std::time::{Duration, Instant};

/// Innermost runs shorter than this (e.g. `[N, 3] - [3]`) are not computed run by run: broadcast
/// operands are gathered for the whole chunk and the kernel runs once per chunk.
const SHORT_RUN: u64 = 64;

/// Where a worker finds an input's elements.
enum InputView<'a, T> {
    /// The whole input, in storage order, shared by all workers.
    Resident(&'a [T]),
    /// A window of the input file, refilled by positional reads as the worker moves on.
    Window { input: &'a InputTensor, total: u64, buf: Vec<T>, lo: u64, len: usize },
}

/// One worker's view of one input: its source and a gather buffer for strided runs.
struct Reader<'a, T> {
    src: InputView<'a, T>,
    gather: Vec<T>,
    read_time: Duration,
}

impl<T: Arith> Reader<'_, T> {
    /// Makes sure elements `[off, off + n)` are available (a window is refilled if not).
    fn ensure(&mut self, off: u64, n: usize) -> Result<()> {
        if let InputView::Window { input, total, buf, lo, len } = &mut self.src {
            if off < *lo || off + n as u64 > *lo + *len as u64 {
                let take = (buf.capacity().max(n) as u64).min(*total - off) as usize;
                buf.resize(take, T::zeroed());
                let t = Instant::now();
                input.read_into(off, &mut buf[..take])?;
                self.read_time += t.elapsed();
                (*lo, *len) = (off, take);
            }
        }
        Ok(())
    }

    /// The operand for a whole chunk after [`Worker::fill_gathered`]: the input itself when it is
    /// read in output order, else the gathered buffer.
    fn chunk_operand(&mut self, identity: bool, start: u64, n: usize) -> Result<Operand<'_, T>> {
        if identity {
            self.operand(start, 1, n)
        } else {
            Ok(Operand::Slice(&self.gather[..n]))
        }
    }

    /// The operand for a run of `n` outputs whose input elements start at `off`, `stride` apart.
    fn operand(&mut self, off: u64, stride: u64, n: usize) -> Result<Operand<'_, T>> {
        let span = if stride == 0 { 1 } else { ((n as u64 - 1) * stride + 1) as usize };
        self.ensure(off, span)?;
        let (data, base): (&[T], u64) = match &self.src {
            InputView::Resident(d) => (d, 0),
            InputView::Window { buf, lo, len, .. } => (&buf[..*len], *lo),
        };
        let at = (off - base) as usize;
        Ok(match stride {
            0 => Operand::Scalar(data[at]),
            1 => Operand::Slice(&data[at..at + n]),
            s => {
                self.gather.clear();
                self.gather.extend((0..n).map(|i| data[at + i * s as usize]));
                Operand::Slice(&self.gather)
            }
        })
    }
}

/// Per-thread state: one reader per input.
pub(super) struct Worker<'a, T> {
    sem: Semantics,
    iter: &'a Iteration,
    readers: [Reader<'a, T>; 2],
    compute_time: Duration,
    /// With `--stats`: time spent adding chunks to the summary.
    summarise_time: Duration,
    /// Positional output: time in this worker's writes.
    write_time: Duration,
    /// With `--stats`: this worker's summary of the chunks it computed.
    summary: Option<Accumulator>,
}

impl<'a, T: Arith + Summarise> Worker<'a, T> {
    /// A worker reading the resident inputs from memory and the others through windows of
    /// `chunk` elements.
    pub(super) fn new(job: &'a Job, resident: &'a [Option<Vec<T>>; 2], chunk: usize) -> Self {
        Worker {
            sem: job.sem,
            iter: &job.iter,
            readers: [0, 1].map(|i| Reader {
                src: match &resident[i] {
                    Some(v) => InputView::Resident(v.as_slice()),
                    None => InputView::Window {
                        input: job.inputs[i],
                        total: job.inputs[i].header.elements,
                        buf: Vec::with_capacity(chunk),
                        lo: 0,
                        len: 0,
                    },
                },
                gather: Vec::new(),
                read_time: Duration::ZERO,
            }),
            compute_time: Duration::ZERO,
            summarise_time: Duration::ZERO,
            write_time: Duration::ZERO,
            summary: job.summarise.then(|| Accumulator::new(job.dtype)),
        }
    }

    /// Writes the finished little-endian chunk at `start` into the positional output `out`,
    /// returning its length in bytes.
    pub(super) fn put(&mut self, out: &Positional<'_>, start: u64, chunk: &[T]) -> Result<u64> {
        let t = Instant::now();
        let bytes: &[u8] = bytemuck::cast_slice(chunk);
        out.write(start, std::mem::size_of::<T>(), bytes)?;
        self.write_time += t.elapsed();
        Ok(bytes.len() as u64)
    }

    /// [`fill`](Self::fill), then the chunk added to the summary (`--stats`).
    pub(super) fn produce(&mut self, start: u64, out: &mut [T]) -> Result<()> {
        self.fill(start, out)?;
        if let Some(s) = &mut self.summary {
            let t = Instant::now();
            s.add(out);
            self.summarise_time += t.elapsed();
        }
        Ok(())
    }
}

impl<T: Arith> Worker<'_, T> {
    /// Computes output elements `[start, start + out.len())`.
    fn fill(&mut self, start: u64, out: &mut [T]) -> Result<()> {
        let sem = self.sem;
        self.fill_with(start, out.len(), &mut |at, n, a, b| sem.apply(&mut out[at..at + n], a, b))
    }

    /// Reads the operands of output elements `[start, start + n)` run by run (or, for short
    /// runs, gathered for all of them) and hands each run to `apply` with its offset from
    /// `start`: the one pass over the inputs that [`fill`](Self::fill) and the reference's
    /// several rules (`reference.rs`) share.
    pub(super) fn fill_with<F: Apply<T>>(&mut self, start: u64, n: usize, apply: &mut F) -> Result<()> {
        let it = self.iter;
        let last = it.dims.len() - 1;
        let inner = it.dims[last];
        let gatherable = |i: usize| it.is_identity(i) || matches!(self.readers[i].src, InputView::Resident(_));
        if inner < SHORT_RUN && n as u64 > inner && gatherable(0) && gatherable(1) {
            return self.fill_gathered(start, n, apply);
        }
        let (sa, sb) = (it.strides[0][last], it.strides[1][last]);
        let mut idx = it.unravel(start);
        let mut pos = 0;
        while pos < n {
            let run = ((inner - idx[last]) as usize).min(n - pos);
            let (oa, ob) = (it.offset(0, &idx), it.offset(1, &idx));
            let [ra, rb] = &mut self.readers;
            let a = ra.operand(oa, sa, run)?;
            let b = rb.operand(ob, sb, run)?;
            let t = Instant::now();
            apply(pos, run, a, b);
            self.compute_time += t.elapsed();
            pos += run;
            advance(&mut idx, &it.dims, run as u64);
        }
        Ok(())
    }

    /// [`fill_with`](Self::fill_with) for short innermost runs: each broadcast (resident) input
    /// is gathered into a chunk-long buffer, inputs read in output order are used as they are,
    /// and `apply` runs once.
    fn fill_gathered<F: Apply<T>>(&mut self, start: u64, n: usize, apply: &mut F) -> Result<()> {
        let it = self.iter;
        let last = it.dims.len() - 1;
        for (i, r) in self.readers.iter_mut().enumerate() {
            let InputView::Resident(data) = r.src else { continue };
            if it.is_identity(i) {
                continue;
            }
            let s = it.strides[i][last] as usize;
            r.gather.clear();
            let mut idx = it.unravel(start);
            while r.gather.len() < n {
                let m = ((it.dims[last] - idx[last]) as usize).min(n - r.gather.len());
                let off = it.offset(i, &idx) as usize;
                r.gather.extend((0..m).map(|k| data[off + k * s]));
                advance(&mut idx, &it.dims, m as u64);
            }
        }
        let [ra, rb] = &mut self.readers;
        let a = ra.chunk_operand(it.is_identity(0), start, n)?;
        let b = rb.chunk_operand(it.is_identity(1), start, n)?;
        let t = Instant::now();
        apply(0, n, a, b);
        self.compute_time += t.elapsed();
        Ok(())
    }
}

/// What a run of operands is handed to: its offset from the first element filled, its length,
/// and the operands.
pub(super) trait Apply<T>: FnMut(usize, usize, Operand<'_, T>, Operand<'_, T>) {}
impl<T, F: FnMut(usize, usize, Operand<'_, T>, Operand<'_, T>)> Apply<T> for F {}

/// Advances the multi-index `idx` by `n` positions along the innermost dimension, carrying into
/// outer dimensions (`n` never crosses more than the end of the current run).
fn advance(idx: &mut [u64], dims: &[u64], n: u64) {
    let last = idx.len() - 1;
    idx[last] += n;
    let mut k = last;
    while k > 0 && idx[k] == dims[k] {
        idx[k] = 0;
        idx[k - 1] += 1;
        k -= 1;
    }
}

impl Ran {
    /// A finished worker's times and summary (taken from it).
    pub(super) fn of_worker<T>(w: &mut Worker<'_, T>) -> Ran {
        let busy = BusyTimes {
            read: w.readers[0].read_time + w.readers[1].read_time,
            compute: w.compute_time,
            summarise: w.summarise_time,
            write: w.write_time,
            ..BusyTimes::default()
        };
        Ran { busy, summary: w.summary.take(), ..Ran::default() }
    }
}
