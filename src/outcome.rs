//! How a run ended, for every kind of run (`sub`/`sqdiff` on a pair, on containers, in parts,
//! with `--dxdispatch`, and `tensorop run`): one [`Outcome`], its one mapping to the exit status
//! (`docs/cli.md`, "Exit status"), how it is told on standard error, and how the report is
//! delivered beside it.

use crate::backend::directml::verify::Verified;
use crate::output::{BrokenPipe, Destination, Sink};
use crate::report::RunStatus;
use anyhow::{Context, Result};

/// How a run ended.
#[derive(Debug)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// A check failed: exit 3. Holds the failed checks' messages, one per line.
    Invalid(String),
    /// A runtime error: exit 1.
    Error(anyhow::Error),
    /// Containers: members that only one input holds, without `--skip-unpaired`: exit 5.
    Unpaired(String),
    /// A request that cannot be carried out, found once the inputs were read (a `--dxdispatch`
    /// job that fails DirectML's checks, a `--report` naming a model's file): a usage error,
    /// exit 2. Holds the whole message.
    Refused(String),
    /// `--verify`: the run completed, and DirectML's output differs from the CPU's reference:
    /// exit 4, as `compare` gives for results that differ. Holds how.
    Differs(String),
}

impl Outcome {
    /// The outcome of a run that completed with `--verify`'s verdict `v` (if any): success where
    /// DirectML's output is the reference's, bit for bit; otherwise exit 4 and what differs.
    pub fn verified(v: Option<&Verified>) -> Outcome {
        match v {
            Some(v) if !v.identical => Outcome::Differs(v.describe()),
            _ => Outcome::Ok,
        }
    }

    /// `--verify`: the outcome of a run that got as far as computing (succeeded, failed, or was
    /// told its output differs), with `verified` (its verdict, or `empty` where none came back)
    /// counted against the `elements` it was to compare; a run whose verdict is not identical,
    /// because it differs or stopped early, does not succeed. Other outcomes are as they were.
    pub fn with_verdict(
        self,
        verified: &mut Option<Verified>,
        elements: u64,
        empty: impl FnOnce() -> Verified,
    ) -> Outcome {
        if !matches!(self, Outcome::Ok | Outcome::Error(_) | Outcome::Differs(_)) {
            return self;
        }
        let v = verified.take().unwrap_or_else(empty).expecting(elements);
        let outcome = match self {
            Outcome::Ok => Outcome::verified(Some(&v)),
            other => other,
        };
        *verified = Some(v);
        outcome
    }

    /// The process's exit status for this outcome. (An interruption by a signal exits from the
    /// signal handler, with the status its system's tools use: `sys::on_interruption`.)
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Error(_) => 1,
            Outcome::Refused(_) => 2,
            Outcome::Invalid(_) => 3,
            Outcome::Differs(_) => 4,
            Outcome::Unpaired(_) => 5,
        }
    }

    /// A run's result as an outcome: an error is a runtime error, except that the reader of
    /// standard output going away ends the run early, as intended, with success (a
    /// `BrokenPipe`, which only writers of standard output give; a FIFO or socket named by a
    /// path whose reader leaves is an error).
    pub fn of(result: Result<Outcome>) -> Outcome {
        match result {
            Ok(o) => o,
            Err(e) if e.is::<BrokenPipe>() => Outcome::Ok,
            Err(e) => Outcome::Error(e),
        }
    }

    /// The report's `status` and `error`. A refusal is reported as the failure it refuses
    /// (`invalid`); a run whose `--verify` found differences completed (`ok`: its `verify` key
    /// says how they differ).
    pub fn status(&self) -> (RunStatus, Option<String>) {
        match self {
            Outcome::Ok | Outcome::Differs(_) => (RunStatus::Ok, None),
            Outcome::Invalid(msg) | Outcome::Refused(msg) => (RunStatus::Invalid, Some(msg.clone())),
            Outcome::Error(e) => (RunStatus::Error, Some(format!("{e:#}"))),
            Outcome::Unpaired(msg) => (RunStatus::Unpaired, Some(msg.clone())),
        }
    }

    /// Says on standard error how the run ended, unless it succeeded. `not_done` says what a
    /// failed check prevented ("nothing was computed").
    pub fn tell(&self, not_done: &str) {
        match self {
            Outcome::Ok => {}
            Outcome::Invalid(msg) => {
                eprintln!("tensorop: validation failed ({not_done}):");
                for line in msg.lines() {
                    eprintln!("  {line}");
                }
            }
            Outcome::Error(e) => eprintln!("tensorop: error: {e:#}"),
            Outcome::Unpaired(msg) => eprintln!("tensorop: {msg}"),
            Outcome::Refused(msg) => eprintln!("tensorop: usage error: {msg}"),
            Outcome::Differs(msg) => eprintln!("tensorop: {msg}"),
        }
    }

    /// Writes the report (when asked for: `report`) with `write` and returns the outcome: a
    /// failure to write it fails a run that succeeded, and is printed beside the error of one
    /// that failed.
    pub fn with_report(self, report: Option<(&Destination, Sink)>, write: impl FnOnce(Sink) -> Result<()>) -> Outcome {
        let Some((dest, sink)) = report else { return self };
        match (write(sink).with_context(|| format!("report {}", dest.label())), self) {
            (Ok(()), outcome) => outcome,
            (Err(e), Outcome::Ok | Outcome::Differs(_)) => Outcome::Error(e),
            (Err(e), other) => {
                eprintln!("tensorop: error: {e:#}");
                other
            }
        }
    }
}
