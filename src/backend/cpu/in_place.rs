//! Worker threads that write their chunks into a file output themselves, each at its offset,
//! while this thread only reports the bytes written.

use super::worker::Worker;
use super::{Chunks, EmitFn};
use crate::backend::{Emit, Job, Positional, Ran};
use crate::dtype::to_little_endian;
use crate::op::Arith;
use crate::summary::Summarise;
use anyhow::Result;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How often the calling thread reports the progress of workers writing in place.
const PROGRESS_TICK: Duration = Duration::from_millis(50);

/// `threads` workers compute chunks and write each at its offset into the positional output.
/// Nothing passes through this thread, which would otherwise wake for every chunk: each worker
/// keeps one buffer and takes the next chunk index, and this thread only reports the bytes
/// written, every [`PROGRESS_TICK`], until the workers finish. The first error stops them all.
pub(super) fn run_in_place<T: Arith + Summarise>(
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
