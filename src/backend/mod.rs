//! Backends execute a validated [`Job`]: they stream the output, chunk by chunk and in order, to
//! a writer callback. The CPU backend ([`cpu`]) is the reference; the GPU backend must match it
//! bit for bit. An [`Engine`] is the one place a backend is chosen and opened: every kind of run
//! (a pair, containers, parts, `tensorop run`) opens one and hands it its jobs.

pub mod cpu;
pub mod directml;
pub mod wgpu;

use crate::dtype::DType;
use crate::npy::input::InputTensor;
use crate::op::Semantics;
use crate::output::result::ResultSink;
use crate::plan::Feed;
use crate::shape::Iteration;
use crate::summary::Accumulator;
use std::time::Duration;

/// Which backend runs the arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Cpu,
    Wgpu,
    Directml,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Directml => "directml",
        }
    }

    /// Whether the backend runs on a GPU (the report's timings and thread counts differ).
    pub fn on_gpu(self) -> bool {
        self != BackendKind::Cpu
    }
}

/// The backend a run asked for, with that backend's settings and no other's: a choice that
/// cannot run (DirectML without its settings) cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    Cpu,
    Wgpu(wgpu::WgpuTuning),
    Directml(directml::Settings),
}

impl Choice {
    /// The CPU backend.
    pub fn cpu() -> Choice {
        Choice::Cpu
    }

    /// Which backend this is.
    pub fn kind(&self) -> BackendKind {
        match self {
            Choice::Cpu => BackendKind::Cpu,
            Choice::Wgpu(_) => BackendKind::Wgpu,
            Choice::Directml(_) => BackendKind::Directml,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// `--verify`: the directml backend's output is compared with the CPU's reference.
    pub fn verifies(&self) -> bool {
        matches!(self, Choice::Directml(s) if s.verify)
    }
}

/// The report's `backend.device`: what the GPU backends ran on.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
pub enum DeviceReport {
    Wgpu(wgpu::DeviceReport),
    Directml(directml::DeviceReport),
}

/// A backend, opened once per run: the CPU, a GPU through wgpu, or DirectML (opened only when
/// a run gets as far as computing: never for `--help`, usage errors, failed checks or dry runs).
pub enum Engine {
    Cpu,
    Wgpu(Box<wgpu::Gpu>),
    Directml(Box<directml::Dml>),
}

impl Engine {
    /// Opens the backend `choice` names, with its settings.
    pub fn open(choice: &Choice) -> anyhow::Result<Engine> {
        Ok(match choice {
            Choice::Cpu => Engine::Cpu,
            Choice::Wgpu(tuning) => Engine::Wgpu(Box::new(wgpu::Gpu::open(tuning)?)),
            Choice::Directml(s) => Engine::Directml(Box::new(directml::Dml::open(s)?)),
        })
    }

    /// The most bytes of an input this backend holds whole ([`crate::plan::Feed::choose`]).
    pub fn resident_limit(&self) -> u64 {
        match self {
            Engine::Cpu | Engine::Directml(_) => crate::plan::RESIDENT_BYTES,
            Engine::Wgpu(gpu) => gpu.resident_limit(),
        }
    }

    /// The device a result of `dtype` is computed on, and the time it took to start; `None` on
    /// the CPU.
    pub fn device(&self, dtype: DType) -> Option<(DeviceReport, Duration)> {
        match self {
            Engine::Cpu => None,
            Engine::Wgpu(gpu) => Some((DeviceReport::Wgpu(gpu.report(dtype)), gpu.init_time)),
            Engine::Directml(dml) => Some((DeviceReport::Directml(dml.report(dtype)), dml.init_time)),
        }
    }

    /// Whether the workers can write a file output in place ([`Positional`]): the CPU's can.
    pub fn writes_in_place(&self) -> bool {
        matches!(self, Engine::Cpu)
    }

    /// Whether small jobs may run side by side, one thread each: on the CPU; a GPU runs one
    /// job at a time.
    pub fn runs_side_by_side(&self) -> bool {
        matches!(self, Engine::Cpu)
    }

    /// Runs `job`, handing its output in order to `emit`.
    pub fn run(&self, job: &Job, emit: &mut dyn FnMut(Emit<'_>) -> anyhow::Result<()>) -> anyhow::Result<Ran> {
        match self {
            Engine::Cpu => cpu::run(job, emit),
            Engine::Wgpu(gpu) => wgpu::run(gpu, job, &mut |bytes| emit(Emit::Bytes(bytes))),
            Engine::Directml(dml) => dml.run(job, &mut |_, bytes| emit(Emit::Bytes(bytes))),
        }
    }

    /// Runs `job` into `sink`: the bytes the backend hands over are written in order, and
    /// `counted` hears of every byte (written in order or in place) for progress and totals.
    pub fn compute_into(
        &self,
        job: &Job,
        sink: &mut dyn ResultSink,
        counted: &mut dyn FnMut(u64),
    ) -> anyhow::Result<Ran> {
        self.run(job, &mut |e| {
            let n = match e {
                Emit::Bytes(bytes) => {
                    sink.write(bytes)?;
                    bytes.len() as u64
                }
                Emit::Written(n) => n,
            };
            counted(n);
            Ok(())
        })
    }
}

/// Everything a backend needs: what to compute, over which iteration space, from which inputs.
pub struct Job<'a> {
    pub sem: Semantics,
    pub dtype: DType,
    /// The output's shape as the report's `dml` descriptors give it (`iter` merges dimensions).
    pub shape: &'a [u64],
    pub iter: Iteration,
    /// The output elements to compute: all of them, or one part's range (`--part`).
    pub range: std::ops::Range<u64>,
    pub inputs: [&'a InputTensor; 2],
    /// How each input is fed ([`crate::plan::Plan::feeds`]).
    pub feeds: [Feed; 2],
    pub threads: usize,
    /// Summarise the result as it streams (`--stats`).
    pub summarise: bool,
    /// A file output the CPU workers write into at each chunk's offset; `None`: every byte
    /// goes through the ordered writer callback.
    pub positional: Option<Positional<'a>>,
}

impl<'a> Job<'a> {
    /// The same job under other semantics (the directml backend's float16 rule).
    pub fn with_sem(&self, sem: Semantics) -> Job<'a> {
        Job {
            sem,
            dtype: self.dtype,
            shape: self.shape,
            iter: self.iter.clone(),
            range: self.range.clone(),
            inputs: self.inputs,
            feeds: self.feeds,
            threads: self.threads,
            summarise: self.summarise,
            positional: self.positional,
        }
    }
}

/// An output file written in place by the workers (`pwrite` at the chunk's offset), the
/// pipeline's callback then only counting the bytes ([`Emit::Written`]: progress, totals).
#[derive(Clone, Copy)]
pub struct Positional<'a> {
    pub file: &'a std::fs::File,
    /// Where element 0 goes: the header's length.
    pub offset: u64,
    /// The output's label, for errors.
    pub label: &'a str,
}

impl Positional<'_> {
    /// Writes the little-endian elements of the chunk starting at element `start`.
    pub fn write(&self, start: u64, element_size: usize, bytes: &[u8]) -> anyhow::Result<()> {
        use anyhow::Context;
        crate::sys::write_all_at(self.file, bytes, self.offset + start * element_size as u64)
            .with_context(|| format!("output {}: cannot write", self.label))
    }
}

/// What a backend hands the pipeline's output callback.
pub enum Emit<'a> {
    /// The output's next bytes, in order, for the pipeline to write.
    Bytes(&'a [u8]),
    /// This many more bytes were written in place by the workers ([`Positional`]): counted only.
    Written(u64),
}

/// Where a backend's time went. Durations are summed over worker threads, so with several
/// threads they can exceed the wall-clock time.
#[derive(Debug, Clone, Copy, Default)]
pub struct BusyTimes {
    pub read: Duration,
    pub compute: Duration,
    /// With `--stats`: adding the computed elements to the summary.
    pub summarise: Duration,
    pub write: Duration,
    /// GPU only: host-to-device copies.
    pub upload: Duration,
    /// GPU only: device-to-host copies.
    pub download: Duration,
    /// directml only: the device's own time on the run's command lists (copies and dispatches),
    /// by timestamp queries.
    pub device: Duration,
    /// directml only: the device's time in DirectML's dispatches of the operator.
    pub dispatch: Duration,
}

impl BusyTimes {
    /// Adds another part's times.
    pub(crate) fn add(&mut self, o: &BusyTimes) {
        self.read += o.read;
        self.compute += o.compute;
        self.summarise += o.summarise;
        self.write += o.write;
        self.upload += o.upload;
        self.download += o.download;
        self.device += o.device;
        self.dispatch += o.dispatch;
    }
}

/// What a backend's run (or one worker's part of it) yields.
#[derive(Debug, Clone, Default)]
pub struct Ran {
    /// The threads that computed (the CPU backend's workers; 1 on the GPU).
    pub threads_used: usize,
    pub busy: BusyTimes,
    /// With `--stats`: the summary of every element computed.
    pub summary: Option<Accumulator>,
    /// The directml backend with `--verify`: its output against the CPU's reference.
    pub verified: Option<directml::verify::Verified>,
}

impl Ran {
    /// Adds a part's times and summary. Summaries merge exactly (integer buckets, counts,
    /// extremes), so the order the parts finish in does not change the result.
    pub(crate) fn merge(&mut self, part: Ran) {
        self.busy.add(&part.busy);
        if let Some(s) = part.summary {
            match &mut self.summary {
                Some(acc) => acc.merge(&s),
                None => self.summary = Some(s),
            }
        }
        if let Some(v) = part.verified {
            match &mut self.verified {
                Some(mine) => mine.merge(&v),
                None => self.verified = Some(v),
            }
        }
    }
}
