//! Where a computed result goes: one interface, [`ResultSink`], that every kind of run streams
//! its results into, and the backends' bytes reach through one function,
//! [`crate::backend::Engine::compute_into`]. The destinations:
//!
//! - a file or stream ([`ToOutput`]: a [`Staged`] opened on `-o`, committed by rename);
//! - one part of a job ([`ToPart`]: the job's shared data file, at the part's offsets; its
//!   finish marks the part done and commits the job when it is the last);
//! - a DxDispatch repro (`dxdispatch::export::Repro`, around a file destination: its finish
//!   moves the assembled directory into place);
//! - a container output's current member (`container::write::ContainerWriter`);
//! - memory, for a batch of small members computed side by side (`Vec<u8>`);
//! - a DxDispatch resource's buffer (`dxdispatch::exec`).
//!
//! The driver knows this trait, not the destinations. A destination's errors name it (`output
//! c.npy: ...`); a reader that closed standard output is [`super::BrokenPipe`], which ends a run
//! early with success.

use super::parts::{PartDone, Stage};
use super::{Staged, Staging};
use anyhow::{Context, Result};
use std::fs::File;

/// What a finished destination committed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Committed {
    /// `--fsync`: the result was flushed to storage (and its directory after it was named).
    pub synced: bool,
    /// `--part`: whether this part was the last, and so committed the job's result.
    pub job_committed: bool,
    /// `--part`, in the part that committed the job: every part's `--verify` verdict as its
    /// marker recorded it, in part order (`null` for a part that ran without one).
    pub part_verdicts: Vec<serde_json::Value>,
    /// `--part`, in a part that did not commit the job: the parts not yet done when it finished.
    pub parts_pending: Vec<u64>,
}

/// Where a computed result goes.
pub trait ResultSink {
    /// The file the CPU workers may write into at each element's offset, with space for
    /// `bytes` (header included) reserved now; `None`: the result is taken in order through
    /// [`write`](Self::write).
    fn in_place(&mut self, _bytes: u64) -> Result<Option<File>> {
        Ok(None)
    }

    /// The result's next bytes, in order.
    fn write(&mut self, bytes: &[u8]) -> Result<()>;

    /// Moves the next write `n` bytes further on (a part starts at its first element).
    fn skip(&mut self, _n: u64) {}

    /// Commits the complete result, with `verdict` (this run's `--verify` verdict, as JSON)
    /// recorded where the destination keeps one (a part's marker). Dropping a destination
    /// unfinished leaves its target as it was (a stream keeps what it was given).
    fn finish(self: Box<Self>, _verdict: Option<serde_json::Value>) -> Result<Committed> {
        Ok(Committed::default())
    }
}

/// A file or stream named by `-o` (or standard output).
pub struct ToOutput {
    sink: Staged,
    /// How errors name it: `output c.npy`.
    label: String,
}

impl ToOutput {
    pub fn new(sink: Staged, label: String) -> ToOutput {
        ToOutput { sink, label }
    }

    /// How the result reaches its name.
    pub fn staging(&self) -> Staging {
        self.sink.staging()
    }
}

impl ResultSink for ToOutput {
    fn in_place(&mut self, bytes: u64) -> Result<Option<File>> {
        let Some(file) = self.sink.positional() else { return Ok(None) };
        let file = file.try_clone().with_context(|| self.label.clone())?;
        crate::sys::preallocate(&file, bytes)
            .with_context(|| format!("{}: cannot reserve {bytes} bytes", self.label))?;
        Ok(Some(file))
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.sink.write(bytes).with_context(|| self.label.clone())
    }

    fn finish(self: Box<Self>, _verdict: Option<serde_json::Value>) -> Result<Committed> {
        let synced = self.sink.commit().with_context(|| self.label.clone())?;
        Ok(Committed { synced, ..Committed::default() })
    }
}

/// One part of a `--part` job: its bytes go into the job's data file, at their offsets.
pub struct ToPart {
    out: ToOutput,
    stage: Stage,
    durable: bool,
}

impl ToPart {
    /// Writes into `file`, the data file of the joined `stage`.
    pub fn new(stage: Stage, file: File, durable: bool, label: String) -> ToPart {
        ToPart { out: ToOutput::new(Staged::part(file, durable), label), stage, durable }
    }

    /// The job's digest, as `job.json` and the report hold it.
    pub fn job(&self) -> &str {
        &self.stage.job
    }
}

impl ResultSink for ToPart {
    fn in_place(&mut self, bytes: u64) -> Result<Option<File>> {
        self.out.in_place(bytes)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write(bytes)
    }

    fn skip(&mut self, n: u64) {
        self.out.sink.skip(n);
    }

    fn finish(self: Box<Self>, verdict: Option<serde_json::Value>) -> Result<Committed> {
        let ToPart { out, stage, durable } = *self;
        let label = out.label.clone();
        let synced = Box::new(out).finish(None)?.synced;
        Ok(match stage.finish(durable, verdict).context(label)? {
            PartDone::Committed(verdicts) => {
                Committed { synced, job_committed: true, part_verdicts: verdicts, parts_pending: vec![] }
            }
            PartDone::Pending(pending) => Committed { synced, parts_pending: pending, ..Committed::default() },
        })
    }
}

impl ResultSink for Vec<u8> {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.extend_from_slice(bytes);
        Ok(())
    }
}
