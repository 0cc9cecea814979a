//! Worker threads whose finished chunks this thread writes in order: a pool of chunk buffers
//! shared by the workers, and the writer that puts the chunks back in order.

use super::worker::Worker;
use super::{timed_write, Chunks, EmitFn};
use crate::backend::{Job, Ran};
use crate::dtype::to_little_endian;
use crate::op::Arith;
use crate::summary::Summarise;
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;

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
pub(super) fn run_parallel<T: Arith + Summarise>(
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
