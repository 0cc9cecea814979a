//! The wgpu backend: the same jobs as the CPU backend, on a GPU, bit for bit. Initialisation is
//! lazy (only `--backend wgpu` and `tensorop devices` touch a GPU) and asks for the platform's
//! one native API (Vulkan, Metal or DX12) rather than probing all of them. The output streams in
//! chunks sized by the device's limits: inputs read in output order are uploaded chunk by chunk,
//! broadcast inputs once; each chunk is computed and downloaded into the same ordered writer the
//! CPU backend uses, so host memory stays bounded.
//!
//! By concern: [`device`] opens and describes the GPU and makes its buffers and pipelines,
//! [`probe`] measures what its arithmetic does, [`shader`] decides how each dtype is computed
//! on it and writes the WGSL, [`kernel`] compiles a kernel and owns its per-chunk buffers,
//! [`window`] plans the intervals of large broadcast inputs, [`tuning`] holds the settings from
//! the environment, and this module lays out a job's chunks and streams them through a kernel
//! ([`run`]). The rest of the crate sees [`Gpu`], its report ([`DeviceReport`]), [`run`], the
//! adapter list and [`WgpuTuning`].

mod device;
mod kernel;
mod probe;
mod shader;
mod tuning;
mod window;

use crate::backend::{Job, Ran};
use crate::dtype::DType;
use crate::npy::input::InputTensor;
use crate::plan::Feed;
use crate::shape::Iteration;
use crate::summary::Accumulator;
use anyhow::{anyhow, bail, Result};
pub(crate) use device::{list_adapters, quiet_driver_probes, AdapterEntry, DeviceReport, Gpu};
use kernel::{ChunkTiming, Kernel, KernelDescriptor};
use shader::{elements_per_invocation, Params, MAX_INTERVALS, MAX_RANK, WORKGROUP};
use std::time::{Duration, Instant};
pub(crate) use tuning::WgpuTuning;

/// Host memory for one input's per-chunk data, kept as 8-byte words so that any element type
/// can be read into it in place (no intermediate copies).
#[derive(Default)]
struct HostBuf(Vec<u64>);

impl HostBuf {
    /// Reads `(first element, count)` runs of `input` one after another, in little-endian byte
    /// order, and returns their bytes.
    fn read(&mut self, input: &InputTensor, dtype: DType, runs: &[(u64, u64)]) -> Result<&[u8]> {
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
                crate::dtype::to_little_endian(v);
            });
            at += n;
        }
        Ok(&bytes[..len])
    }
}

/// What stays the same from chunk to chunk: the merged dimensions and strides as the uniform
/// block holds them, the chunk size, and how each input is fed.
struct Layout {
    dims: Vec<u32>,
    /// Per input, the low and high words of the element strides.
    strides: [Vec<u32>; 2],
    strides_hi: [Vec<u32>; 2],
    /// Offsets in 64 bits from the chunk's first coordinates (outputs of 2^32 elements or more).
    wide: bool,
    /// Output elements per chunk.
    chunk: u64,
    feeds: [Feed; 2],
}

impl Layout {
    fn new(gpu: &Gpu, job: &Job) -> Result<Layout> {
        let total = job.iter.count();
        let es = job.dtype.size() as u64;
        let grid = u64::from(gpu.groups_per_dimension()).pow(2) * u64::from(WORKGROUP);
        let per = u64::from(elements_per_invocation(job.dtype, gpu.native(job.dtype)));
        let chunk = (gpu.max_binding().min(gpu.tuning.chunk_bytes.max(16)) / es).min(grid * per).min(total) / 4 * 4;
        // Below 2^32 output elements every index and offset fits in u32.
        let wide = total > u64::from(u32::MAX) || gpu.tuning.wide;
        Layout::of(&job.iter, wide, chunk.max(4.min(total)), job.feeds)
    }

    /// The layout of `iter`'s dimensions and strides, with the rest as given.
    fn of(iter: &Iteration, wide: bool, chunk: u64, feeds: [Feed; 2]) -> Result<Layout> {
        let words = |shift: u32| iter.strides.clone().map(|s| s.iter().map(|&x| (x >> shift) as u32).collect());
        Ok(Layout { dims: Layout::dims(iter)?, strides: words(0), strides_hi: words(32), wide, chunk, feeds })
    }

    /// The merged dimensions as the uniform block holds them (u32).
    fn dims(iter: &Iteration) -> Result<Vec<u32>> {
        if iter.dims.len() > MAX_RANK {
            bail!("the wgpu backend handles up to {MAX_RANK} dimensions after merging; use --backend cpu");
        }
        let mut dims = Vec::with_capacity(iter.dims.len());
        for (k, &d) in iter.dims.iter().enumerate() {
            dims.push(match u32::try_from(d) {
                Ok(d) => d,
                // An outermost dimension no input steps through: its coordinate is never used.
                Err(_) if k == 0 && (0..2).all(|i| iter.is_identity(i) || iter.strides[i][0] == 0) => u32::MAX,
                Err(_) => bail!(
                    "the wgpu backend handles dimensions of up to 2^32 - 1 elements after merging; this output has \
                     one of {d}; use --backend cpu"
                ),
            });
        }
        Ok(dims)
    }

    /// Whether every dimension the kernels' `divmod` divides by is below 2^22, where its f32
    /// division is exact (docs/backends.md, "Broadcast indexing"): on the 32-bit path all but
    /// the outermost, whose coordinate is what the divisions leave.
    fn float_division(&self) -> bool {
        let divided = if self.wide { &self.dims[..] } else { self.dims.get(1..).unwrap_or_default() };
        divided.iter().all(|&d| d < 1 << 22)
    }

    /// Bit i set where input i is fed as `feed`.
    fn mask(&self, feed: Feed) -> u32 {
        (0..2).filter(|&i| self.feeds[i] == feed).map(|i| 1u32 << i).sum()
    }

    /// The uniform block for the chunk of `n` elements at `start`, intervals not yet filled.
    fn params(&self, iter: &Iteration, start: u64, n: u64) -> Params {
        let strides = [&self.strides[0][..], &self.strides[1][..]];
        let mut params = Params::zeroed_with(n as u32, start as u32, &self.dims, strides, self.mask(Feed::Streamed));
        params.windowed = self.mask(Feed::Windowed);
        if self.wide {
            params.wide = 1;
            params.base = 0;
            for (k, c) in iter.unravel(start).into_iter().enumerate() {
                // Every coordinate fits in u32 but that of an outermost dimension wider than
                // u32, which no input steps through (see `dims`): its value is never used.
                params.base_coords[k] = u32::try_from(c).unwrap_or(0);
                params.strides_hi[0][k] = self.strides_hi[0][k];
                params.strides_hi[1][k] = self.strides_hi[1][k];
            }
        }
        params
    }
}

/// Uploads the inputs fed whole ([`Feed::Resident`]), once.
fn upload_resident(gpu: &Gpu, job: &Job) -> Result<[Option<wgpu::Buffer>; 2]> {
    let mut buffers = [None, None];
    for (i, slot) in buffers.iter_mut().enumerate() {
        let (input, feed) = (job.inputs[i], job.feeds[i]);
        if feed != Feed::Resident {
            continue;
        }
        let h = &input.header;
        if h.data_bytes > gpu.max_binding() {
            bail!(
                "input {} is broadcast in Fortran order and {} bytes, more than the {} bytes this GPU can bind; use \
                 --backend cpu, or store it in C order",
                input.label,
                h.data_bytes,
                gpu.max_binding()
            );
        }
        let mut host = HostBuf::default();
        *slot = Some(gpu.resident_buffer(host.read(input, job.dtype, &[(0, h.elements)])?));
    }
    Ok(buffers)
}

/// Reads the chunk of `n` elements at `start` of each input that is not resident into `host`,
/// filling the intervals of windowed inputs into `params`; returns the bytes to upload.
fn read_chunk<'h>(
    host: &'h mut [HostBuf; 2],
    job: &Job,
    layout: &Layout,
    (start, n): (u64, u64),
    params: &mut Params,
) -> Result<[Option<&'h [u8]>; 2]> {
    let mut data: [Option<&[u8]>; 2] = [None, None];
    for (i, (h, slot)) in host.iter_mut().zip(data.iter_mut()).enumerate() {
        let runs = match layout.feeds[i] {
            Feed::Resident => continue,
            Feed::Streamed => vec![(start, n)],
            Feed::Windowed => {
                let iv = window::intervals(&job.iter.dims, &job.iter.strides[i], start, start + n);
                if iv.len() > MAX_INTERVALS || window::total(&iv) > layout.chunk {
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
        *slot = Some(h.read(job.inputs[i], job.dtype, &runs)?);
    }
    Ok(data)
}

/// Runs `job` on `gpu`, handing each finished chunk's bytes, in order, to `write`. Chunk k+1 is
/// read from the inputs and uploaded while chunk k is computed; chunk k is downloaded and written
/// while chunk k+1 is computed.
pub(crate) fn run(gpu: &Gpu, job: &Job, write: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<Ran> {
    let (end, es) = (job.range.end, job.dtype.size() as u64);
    let mut ran = Ran { threads_used: 1, ..Ran::default() };
    if job.range.is_empty() {
        ran.summary = job.summarise.then(|| Accumulator::new(job.dtype));
        return Ok(ran);
    }
    let layout = Layout::new(gpu, job)?;
    let t = Instant::now();
    let resident = upload_resident(gpu, job)?;
    ran.busy.read += t.elapsed();
    let chunk = layout.chunk;
    let native = gpu.native(job.dtype);
    let kernel = Kernel::new(
        gpu,
        &KernelDescriptor {
            source: shader::source(job.dtype, job.sem, native),
            elements_per_invocation: elements_per_invocation(job.dtype, native),
            float_division: layout.float_division(),
            resident: resident.each_ref().map(Option::as_ref),
            chunk_bytes: [chunk * es; 2],
            out_bytes: chunk * es,
            slots: 2,
        },
    );

    // --stats: the downloaded chunks go through the same summary as the CPU backend's.
    let mut summary = job.summarise.then(|| Accumulator::new(job.dtype));
    let mut summarise = Duration::ZERO;
    let mut write = |bytes: &[u8]| -> Result<()> {
        if let Some(s) = &mut summary {
            let t = Instant::now();
            s.add_le_bytes(job.dtype, bytes);
            summarise += t.elapsed();
        }
        write(bytes)
    };
    let write = &mut write;
    let mut timing = ChunkTiming::default();
    let mut host = [HostBuf::default(), HostBuf::default()];
    let mut pending: Option<(usize, wgpu::SubmissionIndex, u64)> = None;
    let (mut start, mut slot) = (job.range.start, 0usize);
    while start < end {
        let n = chunk.min(end - start);
        let mut params = layout.params(&job.iter, start, n);
        let t = Instant::now();
        let data = read_chunk(&mut host, job, &layout, (start, n), &mut params)?;
        ran.busy.read += t.elapsed();
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
    ran.busy.upload = timing.upload;
    ran.busy.compute = timing.compute;
    ran.busy.download = timing.download;
    // The summary is taken in the write callback: its time is counted apart.
    ran.busy.summarise = summarise;
    ran.busy.write = timing.write.saturating_sub(summarise);
    ran.summary = summary;
    Ok(ran)
}

#[cfg(test)]
mod tests {
    use super::kernel::{ChunkTiming, Kernel, KernelDescriptor};
    use super::{quiet_driver_probes, shader, Gpu, Layout, WgpuTuning};
    use crate::plan::Feed;
    use crate::shape::Iteration;

    /// A small deterministic generator (the tests need no crate for it).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 11 ^ self.0 << 29
        }
    }

    /// The device, or `None` (the test is skipped with a printed reason) where no adapter
    /// exists and `TENSOROP_REQUIRE_GPU` is not `1`.
    fn gpu(test: &str) -> Option<Gpu> {
        quiet_driver_probes();
        match Gpu::open(&WgpuTuning::default()) {
            Ok(g) => Some(g),
            Err(e) if std::env::var("TENSOROP_REQUIRE_GPU").as_deref() == Ok("1") => {
                panic!("{test}: no GPU adapter and TENSOROP_REQUIRE_GPU=1: {e:#}")
            }
            Err(e) => {
                eprintln!(
                    "skipping {test}: no GPU adapter ({e:#}) (set TENSOROP_REQUIRE_GPU=1 to make this a failure)"
                );
                None
            }
        }
    }

    /// What the kernel's `input_offsets` gives for positions `[start, start + n)` of `iter`, in
    /// 64 bits (`wide`) or 32, with the uniform block filled as a run fills it, but for the
    /// reciprocals of the dimensions, moved by `ulps` (to test `divmod`'s error bound).
    fn gpu_offsets(gpu: &Gpu, iter: &Iteration, wide: bool, start: u64, n: u64, ulps: i32) -> Vec<[u64; 2]> {
        let layout =
            Layout::of(iter, wide, n, [Feed::Resident, Feed::Resident]).expect("a shape the wgpu backend takes");
        let mut params = layout.params(iter, start, n);
        for inv in &mut params.inv_dims {
            for _ in 0..ulps.unsigned_abs() {
                *inv = if ulps > 0 { inv.next_up() } else { inv.next_down() };
            }
        }
        let dummy = gpu.resident_buffer(&[0; 4]);
        let kernel = Kernel::new(
            gpu,
            &KernelDescriptor {
                source: shader::offsets_source(),
                elements_per_invocation: 1,
                float_division: layout.float_division(),
                resident: [Some(&dummy), Some(&dummy)],
                chunk_bytes: [0, 0],
                out_bytes: n * 16,
                slots: 1,
            },
        );
        let mut timing = ChunkTiming::default();
        let idx = kernel.submit(gpu, 0, &params, [None, None], n * 16, &mut timing);
        let mut words = Vec::new();
        kernel
            .collect(gpu, 0, idx, n * 16, &mut timing, &mut |bytes| {
                words.extend(bytes.chunks_exact(4).map(|w| u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))));
                Ok(())
            })
            .expect("the offsets download");
        words.chunks_exact(4).map(|w| [w[0] | w[1] << 32, w[2] | w[3] << 32]).collect()
    }

    /// Checks positions `[start, start + n)` of `iter` against the CPU's offsets (modulo 2^64).
    fn check(gpu: &Gpu, what: &str, iter: &Iteration, wide: bool, start: u64, n: u64) {
        check_with(gpu, what, iter, wide, start, n, 0)
    }

    /// [`check`] with the reciprocals of the dimensions moved by `ulps`.
    fn check_with(gpu: &Gpu, what: &str, iter: &Iteration, wide: bool, start: u64, n: u64, ulps: i32) {
        let got = gpu_offsets(gpu, iter, wide, start, n, ulps);
        for (l, g) in got.iter().enumerate() {
            let idx = iter.unravel(start + l as u64);
            let want = [0, 1].map(|i| {
                idx.iter().zip(&iter.strides[i]).fold(0u64, |acc, (&c, &s)| acc.wrapping_add(c.wrapping_mul(s)))
            });
            assert_eq!(
                *g,
                want,
                "{what}: position {} (coordinates {idx:?}) of dims {:?}, strides {:?}",
                start + l as u64,
                iter.dims,
                iter.strides
            );
        }
    }

    fn iteration(dims: &[u64], a: &[u64], b: &[u64]) -> Iteration {
        Iteration { dims: dims.to_vec(), strides: [a.to_vec(), b.to_vec()] }
    }

    /// The 64-bit offset arithmetic of outputs of 2^32 elements or more, at its seams: flat
    /// indices and offsets crossing 2^32, coordinates carried across dimensions (several at
    /// once), a dimension of 2^32 - 1 whose coordinate plus a position's overflows u32, strides
    /// with high words, products whose 16-bit limbs carry, the outermost dimension wider than
    /// u32 that no input steps through, and random shapes. No data: the kernel writes offsets.
    #[test]
    fn wide_offsets_match_the_cpu_at_their_seams() {
        let Some(gpu) = gpu("wide_offsets_match_the_cpu_at_their_seams") else { return };
        let m = u64::from(u32::MAX);
        let n = 4096;
        // [3, 2^32 - 1, 3]: A in C order, B with a stride of 2^32 + 7 innermost.
        let it = iteration(&[3, m, 3], &[3 * m, 3, 1], &[1, 0, (1 << 32) + 7]);
        let total = 9 * m;
        for start in [0, 3 * m - 50, (1 << 32) - 10, 3 * (m - 4), 3 * m + 3 * (m - 1000), total - n] {
            check(&gpu, "dimension of 2^32 - 1", &it, true, start, n);
        }
        // A dimension wider than u32 that no input steps through.
        let it = iteration(&[(1 << 33) + 5, 5, 7], &[0, 7, 1], &[0, 0, 1]);
        for start in [0, (1 << 32) * 35 - 100, ((1 << 33) + 4) * 35] {
            check(&gpu, "outermost dimension of 2^33 + 5", &it, true, start, n.min(35 * ((1 << 33) + 5) - start));
        }
        // Strides whose products carry across the 16-bit limbs and into the high word.
        let it = iteration(
            &[1 << 20, 1 << 20, 16],
            &[(1 << 42) + 3, (1 << 24) - 1, m],
            &[(1 << 40) - 1, (1 << 33) + (1 << 31), 0],
        );
        for start in [0, (1 << 24) - 17, (1 << 36) - 4000, (1 << 44) - n] {
            check(&gpu, "carrying products", &it, true, start, n);
        }
        // Random shapes of 2^32 elements or more, random strides below 2^40, random starts.
        let mut rng = Lcg(0x5eed);
        for case in 0..24 {
            let rank = 1 + rng.next() as usize % 5;
            let mut dims: Vec<u64> = (0..rank).map(|_| 1 + rng.next() % 3000).collect();
            while dims.iter().product::<u64>() < 1 << 32 {
                dims[rng.next() as usize % rank] *= 2 + rng.next() % 7;
            }
            if dims.iter().any(|&d| d > m) {
                continue;
            }
            let strides = |rng: &mut Lcg| {
                (0..rank)
                    .map(|_| if rng.next().is_multiple_of(4) { 0 } else { rng.next() % (1 << 40) })
                    .collect::<Vec<_>>()
            };
            let (a, b) = (strides(&mut rng), strides(&mut rng));
            let it = iteration(&dims, &a, &b);
            let total: u64 = dims.iter().product();
            let start = rng.next() % (total - n);
            check(&gpu, &format!("random case {case}"), &it, true, start, n);
        }
        // The 32-bit path, for comparison: a small output.
        let it = iteration(&[7, 300, 5], &[1500, 5, 1], &[0, 1, 300]);
        check(&gpu, "32-bit offsets", &it, false, 0, 7 * 300 * 5);
        // Every dimension below 2^22, so `divmod` divides in f32, on the 64-bit path.
        let it = iteration(&[1 << 12, (1 << 12) - 3, 1 << 9], &[1, 0, 1 << 12], &[0, 1 << 9, 1]);
        assert!(shader_division_is_float(&it, true));
        for start in [0, (1 << 32) - 2000, (1 << 33) - 3 * (1 << 21) - n] {
            check(&gpu, "64-bit offsets, f32 division", &it, true, start, n);
        }
    }

    fn shader_division_is_float(it: &Iteration, wide: bool) -> bool {
        Layout::of(it, wide, 4, [Feed::Resident; 2]).expect("a shape the wgpu backend takes").float_division()
    }

    /// `divmod`'s quotients and remainders where its f32 estimate is furthest off: flat indices
    /// up to 2^32 - 1 by divisors from 1 to 2^22 - 1 (the largest it divides in f32) and past
    /// it (integer division), at multiples of the divisor and either side, with the reciprocal
    /// as the host computes it and 3 ulp off either way (the error the bound allows). Offsets
    /// of A are the quotient, of B the remainder; a third dimension chains two divisions.
    #[test]
    fn offsets_divide_exactly_by_every_kind_of_dimension() {
        let Some(gpu) = gpu("offsets_divide_exactly_by_every_kind_of_dimension") else { return };
        let m = u64::from(u32::MAX);
        let n = 4096;
        for d in [1, 2, 3, 7, 255, 256, 8191, 8192, 65535, 65537, 999_983, (1 << 22) - 1, 1 << 22, (1 << 22) + 1, m] {
            let outer = m / d;
            let it = iteration(&[outer, d], &[1, 0], &[0, 1]);
            assert_eq!(shader_division_is_float(&it, false), d < 1 << 22, "divisor {d}");
            let total = outer * d;
            let last = total - n.min(total);
            let mut starts = vec![0, last, total / 2 - n.min(total / 2)];
            starts.extend([m / 3, m / 2 + 12345].map(|s| s.min(last)));
            // Either side of multiples of d, from the first row to the last.
            starts.extend([1, outer / 3, outer / 2, outer - 1].map(|k| (k * d).saturating_sub(n / 2).min(last)));
            for start in starts {
                for ulps in [0, -3, 3] {
                    let what = format!("divisor {d}, reciprocal {ulps} ulp off");
                    check_with(&gpu, &what, &it, false, start, n.min(total - start), ulps);
                }
            }
        }
        // Rank 3: the quotient of one division is the dividend of the next.
        let it = iteration(&[5000, 3001, 283], &[1, 0, 7], &[0, 283, 1]);
        assert!(shader_division_is_float(&it, false));
        for start in [0, 5000 * 3001 * 283 - n, 3001 * 283 * 2500 - 77] {
            check(&gpu, "rank 3", &it, false, start, n);
        }
    }
}
