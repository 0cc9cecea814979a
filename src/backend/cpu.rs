//! The CPU backend, tensorop's reference: the output is cut into chunks that worker threads
//! compute independently, each reading just the input elements it needs with positional reads.
//! A file output is written by the workers themselves, each chunk at its offset; any other
//! output gets the finished chunks in order from the calling thread. Memory is a fixed number of
//! chunk-sized buffers, whatever the size of the inputs; only small inputs that are not read in
//! output order are loaded whole (large Fortran-order inputs arrive here already copied in C
//! order, see [`crate::npy::fortran`]).

use crate::backend::{BusyTimes, Emit, Job, Positional, Ran};
use crate::dtype::to_little_endian;
use crate::npy::input::NpyInput;
use crate::op::{Arith, Operand, Semantics};
use crate::plan::Feed;
use crate::shape::Iteration;
use crate::summary::{Accumulator, Summarise};
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bytes of output per chunk: large enough that per-chunk costs vanish, small enough that a
/// chunk's inputs and output stay in the CPU's L2 cache between read, compute and write.
const CHUNK_BYTES: usize = 256 * 1024;

/// Innermost runs shorter than this (e.g. `[N, 3] - [3]`) are not computed run by run: broadcast
/// operands are gathered for the whole chunk and the kernel runs once per chunk.
const SHORT_RUN: u64 = 64;

/// How often the calling thread reports the progress of workers writing in place.
const PROGRESS_TICK: Duration = Duration::from_millis(50);

/// The callback a run hands its output to: each finished chunk's bytes in order, or, with a
/// positional output, how many more bytes the workers wrote in place.
type EmitFn<'w> = dyn FnMut(Emit<'_>) -> Result<()> + 'w;

/// Runs `job`, handing each finished chunk's bytes, in order, to `write` (with a positional
/// output: the count of bytes written in place).
pub fn run(job: &Job, write: &mut EmitFn<'_>) -> Result<Ran> {
    crate::with_dtype!(job.dtype, T => run_typed::<T>(job, write))
}

/// Where a worker finds an input's elements.
enum InputView<'a, T> {
    /// The whole input, in storage order, shared by all workers.
    Resident(&'a [T]),
    /// A window of the input file, refilled by positional reads as the worker moves on.
    Window { input: &'a NpyInput, total: u64, buf: Vec<T>, lo: u64, len: usize },
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
struct Worker<'a, T> {
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

impl<T: Arith> Worker<'_, T> {
    /// Computes output elements `[start, start + out.len())`.
    fn fill(&mut self, start: u64, out: &mut [T]) -> Result<()> {
        let it = self.iter;
        let last = it.dims.len() - 1;
        let inner = it.dims[last];
        let gatherable = |i: usize| it.is_identity(i) || matches!(self.readers[i].src, InputView::Resident(_));
        if inner < SHORT_RUN && out.len() as u64 > inner && gatherable(0) && gatherable(1) {
            return self.fill_gathered(start, out);
        }
        let (sa, sb) = (it.strides[0][last], it.strides[1][last]);
        let mut idx = it.unravel(start);
        let mut pos = 0;
        while pos < out.len() {
            let n = ((inner - idx[last]) as usize).min(out.len() - pos);
            let (oa, ob) = (it.offset(0, &idx), it.offset(1, &idx));
            let [ra, rb] = &mut self.readers;
            let a = ra.operand(oa, sa, n)?;
            let b = rb.operand(ob, sb, n)?;
            let t = Instant::now();
            self.sem.apply(&mut out[pos..pos + n], a, b);
            self.compute_time += t.elapsed();
            pos += n;
            advance(&mut idx, &it.dims, n as u64);
        }
        Ok(())
    }

    /// [`fill`](Self::fill) for short innermost runs: each broadcast (resident) input is gathered
    /// into a chunk-long buffer, inputs read in output order are used as they are, and the
    /// kernel runs once.
    fn fill_gathered(&mut self, start: u64, out: &mut [T]) -> Result<()> {
        let it = self.iter;
        let n = out.len();
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
        self.sem.apply(out, a, b);
        self.compute_time += t.elapsed();
        Ok(())
    }
}

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
        run_in_place(job, out, &resident, chunks, threads, write, &mut ran)?;
    } else {
        run_parallel(job, &resident, chunks, threads, write, &mut ran)?;
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

impl<'a, T: Arith + Summarise> Worker<'a, T> {
    /// A worker reading the resident inputs from memory and the others through windows of
    /// `chunk` elements.
    fn new(job: &'a Job, resident: &'a [Option<Vec<T>>; 2], chunk: usize) -> Self {
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
    fn put(&mut self, out: &Positional<'_>, start: u64, chunk: &[T]) -> Result<u64> {
        let t = Instant::now();
        let bytes: &[u8] = bytemuck::cast_slice(chunk);
        out.write(start, std::mem::size_of::<T>(), bytes)?;
        self.write_time += t.elapsed();
        Ok(bytes.len() as u64)
    }

    /// [`fill`](Self::fill), then the chunk added to the summary (`--stats`).
    fn produce(&mut self, start: u64, out: &mut [T]) -> Result<()> {
        self.fill(start, out)?;
        if let Some(s) = &mut self.summary {
            let t = Instant::now();
            s.add(out);
            self.summarise_time += t.elapsed();
        }
        Ok(())
    }
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

/// What the worker threads share: the free buffers, the next chunk index, the abort flag set
/// when the writer fails, and the workers' summed timings.
struct Queue<T> {
    free_rx: Mutex<mpsc::Receiver<Vec<T>>>,
    next: AtomicU64,
    abort: AtomicBool,
    finished: Mutex<Ran>,
}

/// A computed chunk (its index and little-endian elements), or the error that stopped a worker.
type Done<T> = Result<(u64, Vec<T>)>;

/// `threads` workers compute chunks while this thread hands them to `write` in order.
///
/// Workers take a free buffer, then the next chunk index, so at most `pool` chunks are in
/// flight and the chunk the writer waits for always holds a buffer: no deadlock. When the
/// writer fails (a write error, or a worker's error received), it sets the abort flag and
/// closes the channels so the workers stop.
fn run_parallel<T: Arith + Summarise>(
    job: &Job,
    resident: &[Option<Vec<T>>; 2],
    chunks: Chunks,
    threads: usize,
    write: &mut EmitFn<'_>,
    ran: &mut Ran,
) -> Result<()> {
    let pool = threads * 2 + 2;
    let (free_tx, free_rx) = mpsc::channel::<Vec<T>>();
    for _ in 0..pool {
        let _ = free_tx.send(vec![T::zeroed(); chunks.len]);
    }
    let queue = Queue {
        free_rx: Mutex::new(free_rx),
        next: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        finished: Mutex::new(Ran::default()),
    };
    let (done_tx, done_rx) = mpsc::channel::<Done<T>>();

    std::thread::scope(|s| -> Result<()> {
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let queue = &queue;
            let mut w = Worker::new(job, resident, chunks.len);
            s.spawn(move || work(&mut w, chunks, queue, &done_tx));
        }
        drop(done_tx);

        let result = write_in_order(chunks.count, &done_rx, &free_tx, write, ran);
        if result.is_err() {
            queue.abort.store(true, Ordering::Relaxed);
        }
        drop(free_tx);
        drop(done_rx);
        result
    })?;
    if let Ok(parts) = queue.finished.into_inner() {
        ran.merge(parts);
    }
    Ok(())
}

/// A worker thread's loop: a free buffer, then the next chunk, computed and sent to the
/// writer, until the chunks run out, the writer aborts or hangs up, or a chunk fails (its
/// error is sent). Its times and summary then join the other finished workers'.
fn work<T: Arith + Summarise>(
    w: &mut Worker<'_, T>,
    chunks: Chunks,
    queue: &Queue<T>,
    done_tx: &mpsc::Sender<Done<T>>,
) {
    loop {
        let buf = match queue.free_rx.lock().map(|rx| rx.recv()) {
            Ok(Ok(buf)) => buf,
            _ => break,
        };
        let c = queue.next.fetch_add(1, Ordering::Relaxed);
        if c >= chunks.count || queue.abort.load(Ordering::Relaxed) {
            break;
        }
        let (start, len) = chunks.range(c);
        let mut buf = buf;
        buf.resize(len, T::zeroed());
        let res = w.produce(start, &mut buf).map(|()| {
            to_little_endian(&mut buf);
            (c, buf)
        });
        let failed = res.is_err();
        if done_tx.send(res).is_err() || failed {
            break;
        }
    }
    if let Ok(mut parts) = queue.finished.lock() {
        parts.merge(Ran::of_worker(w));
    }
}

/// The writer: receives finished chunks in any order and writes them in chunk order, returning
/// each written buffer to the free pool. Stops at the first error received or written.
fn write_in_order<T: Arith>(
    n_chunks: u64,
    done_rx: &mpsc::Receiver<Done<T>>,
    free_tx: &mpsc::Sender<Vec<T>>,
    write: &mut EmitFn<'_>,
    ran: &mut Ran,
) -> Result<()> {
    let mut pending = BTreeMap::new();
    let mut want = 0u64;
    while want < n_chunks {
        let (c, buf) = done_rx.recv().map_err(|_| anyhow!("a worker thread stopped unexpectedly"))??;
        pending.insert(c, buf);
        while let Some(buf) = pending.remove(&want) {
            timed_write(write, bytemuck::cast_slice(&buf), &mut ran.busy)?;
            let _ = free_tx.send(buf);
            want += 1;
        }
    }
    Ok(())
}

/// `threads` workers compute chunks and write each at its offset into the positional output.
/// Nothing passes through this thread, which would otherwise wake for every chunk: each worker
/// keeps one buffer and takes the next chunk index, and this thread only reports the bytes
/// written, every [`PROGRESS_TICK`], until the workers finish. The first error stops them all.
fn run_in_place<T: Arith + Summarise>(
    job: &Job,
    out: &Positional<'_>,
    resident: &[Option<Vec<T>>; 2],
    chunks: Chunks,
    threads: usize,
    write: &mut EmitFn<'_>,
    ran: &mut Ran,
) -> Result<()> {
    let next = AtomicU64::new(0);
    let abort = AtomicBool::new(false);
    let written = AtomicU64::new(0);
    let (done_tx, done_rx) = mpsc::channel::<(Result<()>, Ran)>();
    let mut first_err = None;
    std::thread::scope(|s| {
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let (next, abort, written) = (&next, &abort, &written);
            let mut w = Worker::new(job, resident, chunks.len);
            s.spawn(move || {
                let mut buf = vec![T::zeroed(); chunks.len];
                let res = loop {
                    let c = next.fetch_add(1, Ordering::Relaxed);
                    if c >= chunks.count || abort.load(Ordering::Relaxed) {
                        break Ok(());
                    }
                    let (start, len) = chunks.range(c);
                    let chunk = &mut buf[..len];
                    let res = w.produce(start, chunk).and_then(|()| {
                        to_little_endian(chunk);
                        w.put(out, start, chunk)
                    });
                    match res {
                        Ok(n) => written.fetch_add(n, Ordering::Relaxed),
                        Err(e) => {
                            abort.store(true, Ordering::Relaxed);
                            break Err(e);
                        }
                    };
                };
                let _ = done_tx.send((res, Ran::of_worker(&mut w)));
            });
        }
        drop(done_tx);
        let mut reported = 0;
        loop {
            let finished = match done_rx.recv_timeout(PROGRESS_TICK) {
                Ok((res, part)) => {
                    ran.merge(part);
                    if let Err(e) = res {
                        first_err.get_or_insert(e);
                    }
                    false
                }
                Err(RecvTimeoutError::Timeout) => false,
                // Every worker has reported (or one panicked, which the scope re-raises).
                Err(RecvTimeoutError::Disconnected) => true,
            };
            let now = written.load(Ordering::Relaxed);
            if now > reported && first_err.is_none() {
                if let Err(e) = write(Emit::Written(now - reported)) {
                    abort.store(true, Ordering::Relaxed);
                    first_err.get_or_insert(e);
                }
                reported = now;
            }
            if finished {
                break;
            }
        }
    });
    first_err.map_or(Ok(()), Err)
}

impl Ran {
    /// A finished worker's times and summary (taken from it).
    fn of_worker<T>(w: &mut Worker<'_, T>) -> Ran {
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
