//! The wgpu backend: the same jobs as the CPU backend, on a GPU, bit for bit. Initialisation is
//! lazy (only `--backend wgpu` and `tensorop devices` touch a GPU) and asks for the platform's
//! one native API (Vulkan, Metal or DX12) rather than probing all of them. The output streams in
//! chunks sized by the device's limits: inputs read in output order are uploaded chunk by chunk,
//! broadcast inputs once; each chunk is computed and downloaded into the same ordered writer the
//! CPU backend uses, so host memory stays bounded.
//!
//! By concern: `device` opens and describes the GPU, `probe` measures what its arithmetic
//! does, `kernel` compiles kernels and owns their buffers, [`shader`] writes the WGSL,
//! [`window`] plans the intervals of large broadcast inputs, [`tuning`] holds the settings from
//! the environment, and this module streams a job through them chunk by chunk ([`run`]).

mod device;
mod kernel;
mod probe;
pub mod shader;
pub mod tuning;
pub mod window;

use crate::backend::{Job, Stats};
use crate::dtype::DType;
use crate::npy::input::NpyInput;
use anyhow::{anyhow, bail, Context, Result};
pub use device::{list_adapters, quiet_driver_probes, AdapterEntry, DeviceReport, Gpu};
use kernel::*;
use serde::Serialize;
use shader::{elements_per_invocation, Native, Params, MAX_INTERVALS, MAX_RANK, WORKGROUP};
use std::cell::OnceCell;
use std::time::{Duration, Instant};
pub use tuning::WgpuTuning;

#[derive(Default)]
struct ChunkTiming {
    upload: Duration,
    compute: Duration,
    download: Duration,
    write: Duration,
}
/// Host memory for one input's per-chunk data, kept as 8-byte words so that any element type
/// can be read into it in place (no intermediate copies).
#[derive(Default)]
struct HostBuf(Vec<u64>);

impl HostBuf {
    /// Reads `(first element, count)` runs of `input` one after another, in little-endian byte
    /// order, and returns their bytes.
    fn read(&mut self, input: &NpyInput, dtype: DType, runs: &[(u64, u64)]) -> Result<&[u8]> {
        let es = dtype.size() as u64;
        let len: u64 = runs.iter().map(|r| r.1 * es).sum();
        let len = usize::try_from(len).map_err(|_| anyhow!("a chunk does not fit in memory"))?;
        self.0.resize(len.div_ceil(8), 0);
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut self.0[..]);
        let mut at = 0usize;
        for &(first, count) in runs {
            let n = (count * es) as usize;
            let dst = &mut bytes[at..at + n];
            crate::with_dtype!(dtype, T => {
                let v: &mut [T] = bytemuck::try_cast_slice_mut(dst)
                    .map_err(|e| anyhow!("internal error: misaligned chunk buffer: {e}"))?;
                input.read_into(first, v)?;
                if cfg!(target_endian = "big") {
                    v.iter_mut().for_each(|x| *x = crate::dtype::Element::swap_bytes(*x));
                }
            });
            at += n;
        }
        Ok(&bytes[..len])
    }
}

/// How one input reaches the GPU.
enum Feed {
    /// Read in output order: each chunk uploads the chunk's own run of the input.
    Local,
    /// Uploaded whole, once (a small broadcast input, or a Fortran-order one).
    Resident(wgpu::Buffer),
    /// A large broadcast input: each chunk uploads the intervals it reads ([`window`]).
    Windowed,
}

/// Runs `job` on `gpu`, handing each finished chunk's bytes, in order, to `write`. Chunk k+1 is
/// read from the inputs and uploaded while chunk k is computed; chunk k is downloaded and written
/// while chunk k+1 is computed.
pub fn run(gpu: &Gpu, job: &Job, write: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<Stats> {
    let dtype = job.dtype;
    let es = dtype.size() as u64;
    let total = job.iter.count();
    let mut stats = Stats { threads_used: 1, ..Stats::default() };
    if total == 0 {
        return Ok(stats);
    }
    let rank = job.iter.dims.len();
    if rank > MAX_RANK {
        bail!("the wgpu backend handles up to {MAX_RANK} dimensions after merging; use --backend cpu");
    }
    // Below 2^32 output elements every index and offset fits in u32; above, the shader adds the
    // chunk's first coordinates and computes offsets in 64 bits.
    let wide = total > u64::from(u32::MAX) || gpu.tuning.wide;
    let mut dims = Vec::with_capacity(rank);
    for (k, &d) in job.iter.dims.iter().enumerate() {
        dims.push(match u32::try_from(d) {
            Ok(d) => d,
            // An outermost dimension no input steps through: its coordinate is never used.
            Err(_) if k == 0 && (0..2).all(|i| job.iter.is_identity(i) || job.iter.strides[i][0] == 0) => u32::MAX,
            Err(_) => bail!(
                "the wgpu backend handles dimensions of up to 2^32 - 1 elements after merging; this output has one \
                 of {d}; use --backend cpu"
            ),
        });
    }
    let lo = |v: &[u64]| v.iter().map(|&x| x as u32).collect::<Vec<u32>>();
    let hi = |v: &[u64]| v.iter().map(|&x| (x >> 32) as u32).collect::<Vec<u32>>();
    let strides = [lo(&job.iter.strides[0]), lo(&job.iter.strides[1])];
    let strides_hi = [hi(&job.iter.strides[0]), hi(&job.iter.strides[1])];

    let native = gpu.native(dtype);
    let max_bind = gpu.limits.max_storage_buffer_binding_size.min(gpu.limits.max_buffer_size);
    let grid = u64::from(gpu.limits.max_compute_workgroups_per_dimension).pow(2) * u64::from(WORKGROUP);
    let per = u64::from(elements_per_invocation(dtype, native));
    let limit = gpu.tuning.chunk_bytes;
    let chunk = (max_bind.min(limit.max(16)) / es).min(grid * per).min(total) / 4 * 4;
    let chunk = chunk.max(4.min(total));
    // Resident inputs are indexed with the low word of the offset.
    let resident_limit = gpu.tuning.resident_bytes.min(max_bind).min(u64::from(u32::MAX));

    let t = Instant::now();
    let mut feeds = Vec::with_capacity(2);
    for i in 0..2 {
        let input = job.inputs[i];
        let h = &input.header;
        // A Fortran-order input's strides do not bound a chunk's intervals by the chunk's size.
        let strided_fortran = crate::npy::fortran::is_strided_fortran(input);
        feeds.push(if job.iter.is_identity(i) {
            Feed::Local
        } else if h.data_bytes <= resident_limit || strided_fortran {
            if h.data_bytes > max_bind {
                bail!(
                    "input {} is broadcast in Fortran order and {} bytes, more than the {max_bind} bytes this GPU \
                     can bind; use --backend cpu, or store it in C order",
                    input.label,
                    h.data_bytes
                );
            }
            let mut host = HostBuf::default();
            Feed::Resident(gpu.resident_buffer(host.read(input, dtype, &[(0, h.elements)])?))
        } else {
            Feed::Windowed
        });
    }
    stats.read += t.elapsed();
    let resident = [0, 1].map(|i| match &feeds[i] {
        Feed::Resident(b) => Some(b),
        _ => None,
    });
    let kernel = Kernel::new(gpu, dtype, job.sem, native, resident, [chunk * es; 2], chunk * es, 2)?;
    let chunk_local = (0..2).filter(|&i| matches!(feeds[i], Feed::Local)).map(|i| 1u32 << i).sum();
    let windowed = (0..2).filter(|&i| matches!(feeds[i], Feed::Windowed)).map(|i| 1u32 << i).sum();

    let mut timing = ChunkTiming::default();
    let mut host = [HostBuf::default(), HostBuf::default()];
    let mut pending: Option<(usize, wgpu::SubmissionIndex, u64)> = None;
    let (mut start, mut slot) = (0u64, 0usize);
    while start < total {
        let n = chunk.min(total - start);
        let mut params = Params::zeroed_with(n as u32, start as u32, &dims, [&strides[0], &strides[1]], chunk_local);
        params.windowed = windowed;
        if wide {
            params.wide = 1;
            params.base = 0;
            for (k, c) in job.iter.unravel(start).into_iter().enumerate() {
                params.base_coords[k] = if dims[k] == u32::MAX { 0 } else { c as u32 };
                params.strides_hi[0][k] = strides_hi[0][k];
                params.strides_hi[1][k] = strides_hi[1][k];
            }
        }
        let t = Instant::now();
        let mut data: [Option<&[u8]>; 2] = [None, None];
        for (i, (h, slot_data)) in host.iter_mut().zip(data.iter_mut()).enumerate() {
            let runs = match feeds[i] {
                Feed::Resident(_) => continue,
                Feed::Local => vec![(start, n)],
                Feed::Windowed => {
                    let iv = window::intervals(&job.iter.dims, &job.iter.strides[i], start, start + n);
                    if iv.len() > MAX_INTERVALS || window::total(&iv) > chunk {
                        bail!("internal error: a chunk of input {} needs more than its buffer", job.inputs[i].label);
                    }
                    params.interval_count[i] = iv.len() as u32;
                    let mut at = 0u64;
                    for (k, &(lo, hi)) in iv.iter().enumerate() {
                        params.intervals[i][k] = [lo as u32, (lo >> 32) as u32, at as u32, 0];
                        at += hi - lo + 1;
                    }
                    iv.iter().map(|&(lo, hi)| (lo, hi - lo + 1)).collect()
                }
            };
            *slot_data = Some(h.read(job.inputs[i], dtype, &runs)?);
        }
        stats.read += t.elapsed();
        let idx = kernel.submit(gpu, slot, &params, data, n * es, &mut timing);
        if let Some((prev, prev_idx, len)) = pending.take() {
            kernel.collect(gpu, prev, prev_idx, len, &mut timing, write)?;
        }
        pending = Some((slot, idx, n * es));
        slot ^= 1;
        start += n;
    }
    if let Some((prev, prev_idx, len)) = pending {
        kernel.collect(gpu, prev, prev_idx, len, &mut timing, write)?;
    }
    stats.upload = timing.upload;
    stats.compute = timing.compute;
    stats.download = timing.download;
    stats.write = timing.write;
    Ok(stats)
}
