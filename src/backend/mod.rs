//! Backends execute a validated [`Job`]: they stream the output, chunk by chunk and in order, to
//! a writer callback. The CPU backend ([`cpu`]) is the reference; the GPU backend must match it
//! bit for bit.

pub mod cpu;
pub mod wgpu;

use crate::dtype::DType;
use crate::npy::input::NpyInput;
use crate::op::Semantics;
use crate::plan::Feed;
use crate::shape::Iteration;
use crate::summary::Accumulator;
use std::time::Duration;

/// Which backend runs the arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Cpu,
    Wgpu,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Wgpu => "wgpu",
        }
    }
}

/// Everything a backend needs: what to compute, over which iteration space, from which inputs.
pub struct Job<'a> {
    pub sem: Semantics,
    pub dtype: DType,
    pub iter: Iteration,
    pub inputs: [&'a NpyInput; 2],
    /// How each input is fed ([`crate::plan::Plan::feeds`]).
    pub feeds: [Feed; 2],
    pub threads: usize,
    /// Summarise the result as it streams (`--stats`).
    pub stats: bool,
}

/// Where a backend's time went. Durations are summed over worker threads, so with several
/// threads they can exceed the wall-clock time.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub threads_used: usize,
    pub read: Duration,
    pub compute: Duration,
    pub write: Duration,
    /// GPU only: host-to-device copies.
    pub upload: Duration,
    /// GPU only: device-to-host copies.
    pub download: Duration,
    /// With `--stats`: the summary of every element computed.
    pub summary: Option<Accumulator>,
}
