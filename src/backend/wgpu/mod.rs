//! The wgpu backend: the same jobs as the CPU backend, on a GPU, bit for bit. Initialisation is
//! lazy (only `--backend wgpu` and `tensorop devices` touch a GPU) and asks for the platform's
//! one native API (Vulkan, Metal or DX12) rather than probing all of them. The output streams in
//! chunks sized by the device's limits: inputs read in output order are uploaded chunk by chunk,
//! broadcast inputs once; each chunk is computed and downloaded into the same ordered writer the
//! CPU backend uses, so host memory stays bounded.

pub mod shader;
pub mod tuning;
pub mod window;

use crate::backend::{Job, Stats};
use crate::dtype::DType;
use crate::npy::input::NpyInput;
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use shader::{elements_per_invocation, Native, Params, MAX_INTERVALS, MAX_RANK, WORKGROUP};
use std::cell::OnceCell;
use std::time::{Duration, Instant};
pub use tuning::WgpuTuning;

/// What the report says about the device.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceReport {
    pub adapter: String,
    pub device_type: String,
    pub driver: String,
    pub api: String,
    /// Optional shader features the kernels used natively.
    pub features_native: Vec<&'static str>,
    /// Optional shader features the kernels emulated (for the job's dtype).
    pub features_emulated: Vec<&'static str>,
    /// Measured by a probe kernel: float32 subnormal results come back as zero.
    pub flushes_subnormals: bool,
}

/// An open GPU device.
pub struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    pub flushes_subnormals: bool,
    pub init_time: Duration,
    /// The optional features enabled on the device (float16 still subject to its probe).
    enabled: Native,
    /// Whether the device's float16 conversions matched the CPU's, probed on first use.
    f16_exact: OnceCell<bool>,
    tuning: WgpuTuning,
}

/// Mesa's Vulkan drivers print "XDG_RUNTIME_DIR is invalid or not set" on stderr when no desktop
/// session exists (servers, CI); any directory silences that probe. Changing the environment is
/// safe only while the process has one thread, so `main` calls this first, before the signal
/// thread starts, and only for commands that open a GPU.
pub fn quiet_driver_probes() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
}

fn instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    wgpu::Instance::new(desc)
}

fn api_name(b: wgpu::Backends) -> &'static str {
    if b == wgpu::Backends::VULKAN {
        "Vulkan"
    } else if b == wgpu::Backends::METAL {
        "Metal"
    } else if b == wgpu::Backends::DX12 {
        "DX12"
    } else {
        "OpenGL"
    }
}

fn no_adapter(b: wgpu::Backends) -> anyhow::Error {
    anyhow!(
        "no GPU adapter found through {}; install a driver for it (on Linux, mesa-vulkan-drivers provides \
         the CPU-based lavapipe) or use --backend cpu",
        api_name(b)
    )
}

/// The optional shader features tensorop can use, with their names.
const FEATURES: [(wgpu::Features, &str); 4] = [
    (wgpu::Features::SHADER_F16, "SHADER_F16"),
    (wgpu::Features::SHADER_I16, "SHADER_I16"),
    (wgpu::Features::SHADER_INT64, "SHADER_INT64"),
    (wgpu::Features::SHADER_F64, "SHADER_F64"),
];

impl Gpu {
    /// Opens the first high-performance adapter of `tuning`'s API and probes it.
    pub fn open(tuning: &WgpuTuning) -> Result<Gpu> {
        let t = Instant::now();
        let b = tuning.api;
        let inst = instance(b);
        let adapter = pollster::block_on(inst.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
            apply_limit_buckets: false,
        }))
        .map_err(|_| no_adapter(b))?;
        let info = adapter.get_info();
        let emulate = tuning.emulate;
        let wanted = wgpu::Features::SHADER_F64 | wgpu::Features::SHADER_F16 | wgpu::Features::SHADER_INT64;
        let features = if emulate { wgpu::Features::empty() } else { adapter.features() & wanted };
        let enabled = Native {
            f16: features.contains(wgpu::Features::SHADER_F16),
            int64: features.contains(wgpu::Features::SHADER_INT64),
            f64: features.contains(wgpu::Features::SHADER_F64),
        };
        let alimits = adapter.limits();
        let mut limits = wgpu::Limits::downlevel_defaults();
        limits.max_storage_buffer_binding_size = alimits.max_storage_buffer_binding_size;
        limits.max_buffer_size = alimits.max_buffer_size;
        limits.max_compute_workgroups_per_dimension = alimits.max_compute_workgroups_per_dimension;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("tensorop"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .with_context(|| format!("cannot open the GPU device {}", info.name))?;
        let mut gpu = Gpu {
            device,
            queue,
            info,
            limits,
            flushes_subnormals: false,
            init_time: Duration::ZERO,
            enabled,
            f16_exact: OnceCell::new(),
            tuning: *tuning,
        };
        gpu.flushes_subnormals = gpu.probe_subnormals()?;
        gpu.init_time = t.elapsed();
        Ok(gpu)
    }

    /// The features a kernel for `dtype` uses natively. float16 is native only when the device
    /// has SHADER_F16 and its conversions passed [`Gpu::probe_f16`] (run once, on first use).
    fn native(&self, dtype: DType) -> Native {
        let f16 = dtype == DType::F16
            && self.enabled.f16
            && *self.f16_exact.get_or_init(|| self.probe_f16().unwrap_or(false));
        Native { f16, ..self.enabled }
    }

    /// Runs the float32 `sub` kernel on two subnormals (3 - 1 in units of the smallest one); a
    /// device that flushes returns zero instead of 2.
    fn probe_subnormals(&self) -> Result<bool> {
        let sem = crate::op::Semantics { op: crate::op::Op::Sub, half_precision: false };
        let a = self.resident_buffer(&3u32.to_le_bytes());
        let b = self.resident_buffer(&1u32.to_le_bytes());
        let kernel = Kernel::new(self, DType::F32, sem, Native::default(), [Some(&a), Some(&b)], [0, 0], 4, 1)?;
        let mut params = Params::zeroed_with(1, 0, &[1], [&[1], &[1]], 0);
        params.rank = 1;
        let mut out = Vec::new();
        let idx = kernel.submit(self, 0, &params, [None, None], 4, &mut ChunkTiming::default());
        kernel.collect(self, 0, idx, 4, &mut ChunkTiming::default(), &mut |bytes| {
            out.extend_from_slice(bytes);
            Ok(())
        })?;
        Ok(out != 2u32.to_le_bytes())
    }

    /// Whether the device converts float32 to float16 (round to nearest even, subnormals kept,
    /// overflow to infinity) and float16 to float32 exactly as the CPU does: every float16 value,
    /// every rounding midpoint between neighbours and the float32 values either side of it.
    fn probe_f16(&self) -> Result<bool> {
        use half::f16;
        let mut x: Vec<f32> = Vec::with_capacity(0x7c00 * 8);
        for h in 0..0x7c00u16 {
            let f = f16::from_bits(h).to_f32();
            let ulp = if h + 1 < 0x7c00 { f16::from_bits(h + 1).to_f32() - f } else { 32.0 };
            let mid = f + ulp / 2.0;
            // mid > 0, so its neighbours are one bit pattern away.
            let (below, above) = (f32::from_bits(mid.to_bits() - 1), f32::from_bits(mid.to_bits() + 1));
            for v in [f, mid, below, above] {
                x.extend([v, -v]);
            }
        }
        let halves: Vec<u16> = (0..=u16::MAX).collect();
        let d = &self.device;
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("tensorop f16 probe"),
            source: wgpu::ShaderSource::Wgsl(shader::F16_PROBE.into()),
        });
        let pipeline = compute_pipeline(d, &module);
        use wgpu::BufferUsages as U;
        let xb = self.resident_buffer(bytemuck::cast_slice(&x));
        let hb = self.resident_buffer(bytemuck::cast_slice(&halves));
        let (ylen, zlen) = (x.len() as u64 * 2, halves.len() as u64 * 4);
        let yb = buffer(d, "y", ylen, U::STORAGE | U::COPY_SRC);
        let zb = buffer(d, "z", zlen, U::STORAGE | U::COPY_SRC);
        let staging = buffer(d, "staging", ylen + zlen, U::MAP_READ | U::COPY_DST);
        let bind = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("tensorop f16 probe"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: xb.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: yb.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: hb.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: zb.as_entire_binding() },
            ],
        });
        let mut enc = d.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("tensorop") });
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups((x.len() as u32).div_ceil(WORKGROUP), 1, 1);
        }
        enc.copy_buffer_to_buffer(&yb, 0, &staging, 0, ylen);
        enc.copy_buffer_to_buffer(&zb, 0, &staging, ylen, zlen);
        let idx = self.queue.submit([enc.finish()]);
        let bytes = self.map_read(&staging, ylen + zlen, idx)?;
        let (y, z) = bytes.split_at(ylen as usize);
        let y: Vec<u16> = y.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        let z: Vec<u32> = z.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let narrow_ok = x.iter().zip(&y).all(|(v, h)| f16::from_f32(*v).to_bits() == *h);
        let widen_ok = halves.iter().zip(&z).all(|(h, w)| {
            let v = f16::from_bits(*h).to_f32();
            if v.is_nan() {
                f32::from_bits(*w).is_nan()
            } else {
                v.to_bits() == *w
            }
        });
        Ok(narrow_ok && widen_ok)
    }

    /// Maps `len` bytes of `staging` once submission `idx` is done, and copies them out.
    fn map_read(&self, staging: &wgpu::Buffer, len: u64, idx: wgpu::SubmissionIndex) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.with_mapped(staging, len, idx, &mut |bytes| {
            out.extend_from_slice(bytes);
            Ok(())
        })?;
        Ok(out)
    }

    /// Maps `len` bytes (a multiple of 4) of `staging` once submission `idx` is done and hands
    /// them to `f`.
    fn with_mapped(
        &self,
        staging: &wgpu::Buffer,
        len: u64,
        idx: wgpu::SubmissionIndex,
        f: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let slice = staging.slice(..pad4(len));
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::Wait { submission_index: Some(idx), timeout: None })
            .context("the GPU stopped responding")?;
        rx.recv()
            .map_err(|_| anyhow!("the GPU never finished mapping the result"))?
            .context("cannot read the result back from the GPU")?;
        let result = {
            let view =
                slice.get_mapped_range().map_err(|e| anyhow!("cannot read the result back from the GPU: {e:?}"))?;
            f(&view[..len as usize])
        };
        staging.unmap();
        result
    }

    /// A storage buffer holding `data` (padded to whole words).
    fn resident_buffer(&self, data: &[u8]) -> wgpu::Buffer {
        use wgpu::BufferUsages as U;
        let buf = buffer(&self.device, "input", data.len() as u64, U::STORAGE | U::COPY_DST);
        write_padded(&self.queue, &buf, data);
        buf
    }

    /// The report's description of this device for a job of `dtype`.
    pub fn report(&self, dtype: DType) -> DeviceReport {
        let native = self.native(dtype);
        let (native, emulated): (Vec<&'static str>, Vec<&'static str>) = match dtype {
            DType::F16 if native.f16 => (vec!["SHADER_F16"], vec![]),
            DType::F16 => (vec![], vec!["SHADER_F16"]),
            // WGSL has no 16- or 8-bit integer types, whatever the device offers.
            DType::I16 | DType::U16 => (vec![], vec!["SHADER_I16"]),
            DType::I8 | DType::U8 => (vec![], vec!["8-bit integers (no wgpu feature)"]),
            DType::I64 | DType::U64 if native.int64 => (vec!["SHADER_INT64"], vec![]),
            DType::I64 | DType::U64 => (vec![], vec!["SHADER_INT64"]),
            DType::F64 if native.f64 => (vec!["SHADER_F64"], vec![]),
            _ => (vec![], vec![]),
        };
        DeviceReport {
            adapter: self.info.name.clone(),
            device_type: format!("{:?}", self.info.device_type),
            driver: format!("{} {}", self.info.driver, self.info.driver_info).trim().to_string(),
            api: format!("{:?}", self.info.backend),
            features_native: native,
            features_emulated: emulated,
            flushes_subnormals: self.flushes_subnormals,
        }
    }
}

impl Params {
    fn zeroed_with(n: u32, base: u32, dims: &[u32], strides: [&[u32]; 2], chunk_local: u32) -> Params {
        let mut p: Params = bytemuck::Zeroable::zeroed();
        p.n = n;
        p.base = base;
        p.rank = dims.len() as u32;
        p.chunk_local = chunk_local;
        p.dims[..dims.len()].copy_from_slice(dims);
        p.strides_a[..dims.len()].copy_from_slice(strides[0]);
        p.strides_b[..dims.len()].copy_from_slice(strides[1]);
        p
    }
}

fn pad4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

fn buffer(d: &wgpu::Device, label: &str, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    d.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: pad4(size.max(4)),
        usage,
        mapped_at_creation: false,
    })
}

fn compute_pipeline(d: &wgpu::Device, module: &wgpu::ShaderModule) -> wgpu::ComputePipeline {
    d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("tensorop"),
        layout: None,
        module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    })
}

/// One set of per-chunk buffers. Two slots let chunk k+1 be read and uploaded while chunk k is
/// computed and downloaded.
struct Slot {
    params: wgpu::Buffer,
    /// Per-chunk input buffers (`None` where the input is resident).
    inputs: [Option<wgpu::Buffer>; 2],
    out: wgpu::Buffer,
    staging: wgpu::Buffer,
    bind: wgpu::BindGroup,
}

/// A compiled kernel with its buffers.
struct Kernel {
    pipeline: wgpu::ComputePipeline,
    slots: Vec<Slot>,
    per: u32,
}

impl Kernel {
    /// Compiles the kernel; each input is either `resident` (one buffer for the whole run) or
    /// uploaded per chunk into buffers of `chunk_bytes`; outputs are up to `out_bytes`.
    #[allow(clippy::too_many_arguments)]
    fn new(
        gpu: &Gpu,
        dtype: DType,
        sem: crate::op::Semantics,
        native: Native,
        resident: [Option<&wgpu::Buffer>; 2],
        chunk_bytes: [u64; 2],
        out_bytes: u64,
        slots: usize,
    ) -> Result<Kernel> {
        let src = shader::source(dtype, sem, native).ok_or_else(|| {
            anyhow!(
                "{} has no SHADER_F64 (64-bit floats){}, and the wgpu backend does not emulate float64; \
                 use --backend cpu for float64",
                gpu.info.name,
                if gpu.tuning.emulate { " or it is masked by TENSOROP_WGPU_EMULATE" } else { "" }
            )
        })?;
        let d = &gpu.device;
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("tensorop kernel"),
            source: wgpu::ShaderSource::Wgsl(src.into()),
        });
        let pipeline = compute_pipeline(d, &module);
        use wgpu::BufferUsages as U;
        let layout = pipeline.get_bind_group_layout(0);
        let slots = (0..slots)
            .map(|_| {
                let params = buffer(d, "params", std::mem::size_of::<Params>() as u64, U::UNIFORM | U::COPY_DST);
                let inputs = [0, 1].map(|i| {
                    resident[i].is_none().then(|| buffer(d, "input", chunk_bytes[i], U::STORAGE | U::COPY_DST))
                });
                let out = buffer(d, "out", out_bytes, U::STORAGE | U::COPY_SRC);
                let staging = buffer(d, "staging", out_bytes, U::MAP_READ | U::COPY_DST);
                let input = |i: usize| resident[i].or(inputs[i].as_ref()).map(|b| b.as_entire_binding());
                let (Some(a), Some(b)) = (input(0), input(1)) else { unreachable!("every input has a buffer") };
                let bind = d.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("tensorop"),
                    layout: &layout,
                    entries: &[
                        wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 1, resource: a },
                        wgpu::BindGroupEntry { binding: 2, resource: b },
                        wgpu::BindGroupEntry { binding: 3, resource: out.as_entire_binding() },
                    ],
                });
                Slot { params, inputs, out, staging, bind }
            })
            .collect();
        Ok(Kernel { pipeline, slots, per: elements_per_invocation(dtype, native) })
    }

    /// Uploads `params` and the per-chunk `data` into `slot`, then queues the computation of
    /// `params.n` elements and the copy of their `out_len` bytes into the slot's staging buffer.
    fn submit(
        &self,
        gpu: &Gpu,
        slot: usize,
        params: &Params,
        data: [Option<&[u8]>; 2],
        out_len: u64,
        timing: &mut ChunkTiming,
    ) -> wgpu::SubmissionIndex {
        let s = &self.slots[slot];
        let t = Instant::now();
        gpu.queue.write_buffer(&s.params, 0, bytemuck::bytes_of(params));
        for (data, buf) in data.iter().zip(&s.inputs) {
            if let (Some(data), Some(buf)) = (data, buf) {
                write_padded(&gpu.queue, buf, data);
            }
        }

        timing.upload += t.elapsed();

        let t = Instant::now();
        let invocations = params.n.div_ceil(self.per);
        let groups = invocations.div_ceil(WORKGROUP).max(1);
        let max = gpu.limits.max_compute_workgroups_per_dimension.max(1);
        let (x, y) = if groups <= max { (groups, 1) } else { (max, groups.div_ceil(max)) };
        let mut enc = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("tensorop") });
        {
            let mut pass = enc
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("tensorop"), timestamp_writes: None });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &s.bind, &[]);
            pass.dispatch_workgroups(x, y, 1);
        }
        enc.copy_buffer_to_buffer(&s.out, 0, &s.staging, 0, pad4(out_len));
        // Some drivers (lavapipe) execute work inside submit: count it as compute time.
        let idx = gpu.queue.submit([enc.finish()]);
        timing.compute += t.elapsed();
        idx
    }

    /// Waits for `slot`'s submission `idx` and hands its `out_len` result bytes to `write`.
    fn collect(
        &self,
        gpu: &Gpu,
        slot: usize,
        idx: wgpu::SubmissionIndex,
        out_len: u64,
        timing: &mut ChunkTiming,
        write: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let t = Instant::now();
        let (mut waited, mut wrote) = (Duration::ZERO, Duration::ZERO);
        gpu.with_mapped(&self.slots[slot].staging, out_len, idx, &mut |bytes| {
            waited = t.elapsed();
            let t = Instant::now();
            let r = write(bytes);
            wrote = t.elapsed();
            r
        })?;
        timing.compute += waited;
        timing.write += wrote;
        timing.download += t.elapsed().saturating_sub(waited + wrote);
        Ok(())
    }
}

fn write_padded(queue: &wgpu::Queue, buf: &wgpu::Buffer, data: &[u8]) {
    let whole = data.len() / 4 * 4;
    if whole > 0 {
        queue.write_buffer(buf, 0, &data[..whole]);
    }
    if whole < data.len() {
        let mut tail = [0u8; 4];
        tail[..data.len() - whole].copy_from_slice(&data[whole..]);
        queue.write_buffer(buf, whole as u64, &tail);
    }
}

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

/// One adapter, as `tensorop devices` lists it.
#[derive(Debug, Serialize)]
pub struct AdapterEntry {
    pub name: String,
    pub api: String,
    pub device_type: String,
    pub driver: String,
    pub features: Vec<&'static str>,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroups_per_dimension: u32,
}

/// Every adapter of `tuning`'s API.
pub fn list_adapters(tuning: &WgpuTuning) -> Result<Vec<AdapterEntry>> {
    let b = tuning.api;
    let inst = instance(b);
    let adapters = pollster::block_on(inst.enumerate_adapters(b));
    if adapters.is_empty() {
        return Err(no_adapter(b));
    }
    Ok(adapters
        .iter()
        .map(|a| {
            let info = a.get_info();
            let f = a.features();
            let l = a.limits();
            let features = FEATURES.into_iter().filter(|(flag, _)| f.contains(*flag)).map(|(_, name)| name).collect();
            AdapterEntry {
                name: info.name.clone(),
                api: format!("{:?}", info.backend),
                device_type: format!("{:?}", info.device_type),
                driver: format!("{} {}", info.driver, info.driver_info).trim().to_string(),
                features,
                max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
                max_buffer_size: l.max_buffer_size,
                max_compute_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
            }
        })
        .collect())
}
