//! The wgpu backend: the same jobs as the CPU backend, on a GPU, bit for bit. Initialisation is
//! lazy (only `--backend wgpu` and `tensorop devices` touch a GPU) and asks for the platform's
//! one native API (Vulkan, Metal or DX12) rather than probing all of them. The output streams in
//! chunks sized by the device's limits: inputs read in output order are uploaded chunk by chunk,
//! broadcast inputs once; each chunk is computed and downloaded into the same ordered writer the
//! CPU backend uses, so host memory stays bounded.

pub mod shader;

use crate::backend::{Job, Stats};
use crate::dtype::DType;
use crate::npy::input::NpyInput;
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use shader::{elements_per_invocation, Params, MAX_RANK, WORKGROUP};
use std::time::{Duration, Instant};

/// Environment switch (`1`) that makes tensorop ignore the adapter's optional shader features, as
/// on a device that has none: tests use it to cover that path on any machine. float64, the one
/// dtype that needs a feature (SHADER_F64), is then refused.
pub const EMULATE_ENV: &str = "TENSOROP_WGPU_EMULATE";

/// Environment variable selecting the wgpu API (`vulkan`, `metal`, `dx12`, `gl`).
pub const BACKEND_ENV: &str = "TENSOROP_WGPU_BACKEND";

/// Largest chunk of output per dispatch, whatever the device allows: bounds host memory.
const MAX_CHUNK_BYTES: u64 = 8 << 20;

/// Environment variable overriding [`MAX_CHUNK_BYTES`] (tests use small chunks to cover the
/// multi-chunk path on small inputs).
pub const CHUNK_ENV: &str = "TENSOROP_WGPU_CHUNK_BYTES";

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
    /// SHADER_F64 is enabled on the device.
    native_f64: bool,
}

/// The platform's native API, or the one `TENSOROP_WGPU_BACKEND` names.
fn backends() -> Result<wgpu::Backends> {
    match std::env::var(BACKEND_ENV).ok().as_deref() {
        None | Some("") => Ok(if cfg!(any(target_os = "macos", target_os = "ios")) {
            wgpu::Backends::METAL
        } else if cfg!(windows) {
            wgpu::Backends::DX12
        } else {
            wgpu::Backends::VULKAN
        }),
        Some("vulkan") => Ok(wgpu::Backends::VULKAN),
        Some("metal") => Ok(wgpu::Backends::METAL),
        Some("dx12") => Ok(wgpu::Backends::DX12),
        Some("gl") => Ok(wgpu::Backends::GL),
        Some(other) => bail!("{BACKEND_ENV}={other} is not an API wgpu offers here; use vulkan, metal, dx12 or gl"),
    }
}

fn instance(backends: wgpu::Backends) -> wgpu::Instance {
    // Mesa's Vulkan drivers print "XDG_RUNTIME_DIR is invalid or not set" on stderr when no
    // desktop session exists (servers, CI). Any directory silences the probe; this runs before
    // tensorop starts any thread, so changing the environment is safe.
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    wgpu::Instance::new(desc)
}

fn api_name(b: wgpu::Backends) -> String {
    format!("{b:?}").to_lowercase()
}

fn no_adapter(b: wgpu::Backends) -> anyhow::Error {
    anyhow!(
        "no GPU adapter found through {}; install a driver for it (on Linux, mesa-vulkan-drivers provides \
         the CPU-based lavapipe) or use --backend cpu",
        api_name(b)
    )
}

impl Gpu {
    /// Opens the first high-performance adapter of the platform's API and probes it.
    pub fn open() -> Result<Gpu> {
        let t = Instant::now();
        let b = backends()?;
        let inst = instance(b);
        let adapter = pollster::block_on(inst.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
            apply_limit_buckets: false,
        }))
        .map_err(|_| no_adapter(b))?;
        let info = adapter.get_info();
        let emulate = std::env::var(EMULATE_ENV).is_ok_and(|v| v == "1");
        let native_f64 = !emulate && adapter.features().contains(wgpu::Features::SHADER_F64);
        let alimits = adapter.limits();
        let mut limits = wgpu::Limits::downlevel_defaults();
        limits.max_storage_buffer_binding_size = alimits.max_storage_buffer_binding_size;
        limits.max_buffer_size = alimits.max_buffer_size;
        limits.max_compute_workgroups_per_dimension = alimits.max_compute_workgroups_per_dimension;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("tensorop"),
            required_features: if native_f64 { wgpu::Features::SHADER_F64 } else { wgpu::Features::empty() },
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .with_context(|| format!("cannot open the GPU device {}", info.name))?;
        let mut gpu =
            Gpu { device, queue, info, limits, flushes_subnormals: false, init_time: Duration::ZERO, native_f64 };
        gpu.flushes_subnormals = gpu.probe_subnormals()?;
        gpu.init_time = t.elapsed();
        Ok(gpu)
    }

    /// Runs the float32 `sub` kernel on two subnormals (3 - 1 in units of the smallest one); a
    /// device that flushes returns zero instead of 2.
    fn probe_subnormals(&self) -> Result<bool> {
        let sem = crate::op::Semantics { op: crate::op::Op::Sub, half_precision: false };
        let kernel = Kernel::new(self, DType::F32, sem, 4, 4, 4)?;
        let mut params = Params::zeroed_with(1, 0, &[1], [&[1], &[1]], 3);
        params.rank = 1;
        let (mut out, mut timing) = (Vec::new(), ChunkTiming::default());
        let (a, b) = (3u32.to_le_bytes(), 1u32.to_le_bytes());
        kernel.run_chunk(self, &params, Some(&a), Some(&b), 4, &mut out, &mut timing)?;
        Ok(out != 2u32.to_le_bytes())
    }

    /// The report's description of this device for a job of `dtype`.
    pub fn report(&self, dtype: DType) -> DeviceReport {
        let emulated = match dtype {
            DType::F16 => vec!["SHADER_F16"],
            DType::I16 | DType::U16 => vec!["SHADER_I16"],
            DType::I8 | DType::U8 => vec!["8-bit integers (no wgpu feature)"],
            DType::I64 | DType::U64 => vec!["SHADER_INT64"],
            _ => vec![],
        };
        let native = if dtype == DType::F64 && self.native_f64 { vec!["SHADER_F64"] } else { vec![] };
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

/// A compiled kernel with its buffers.
struct Kernel {
    pipeline: wgpu::ComputePipeline,
    params: wgpu::Buffer,
    a: wgpu::Buffer,
    b: wgpu::Buffer,
    out: wgpu::Buffer,
    staging: wgpu::Buffer,
    bind: wgpu::BindGroup,
    dtype: DType,
}

fn pad4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

impl Kernel {
    /// Compiles the kernel and allocates input buffers of `a_bytes`/`b_bytes` and an output of
    /// `out_bytes`.
    fn new(
        gpu: &Gpu,
        dtype: DType,
        sem: crate::op::Semantics,
        a_bytes: u64,
        b_bytes: u64,
        out_bytes: u64,
    ) -> Result<Kernel> {
        let src = shader::source(dtype, sem, gpu.native_f64).ok_or_else(|| {
            anyhow!(
                "{} has no SHADER_F64 (64-bit floats){}, and the wgpu backend does not emulate float64; \
                 use --backend cpu for float64",
                gpu.info.name,
                if std::env::var(EMULATE_ENV).is_ok() { " or it is masked by TENSOROP_WGPU_EMULATE" } else { "" }
            )
        })?;
        let d = &gpu.device;
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("tensorop kernel"),
            source: wgpu::ShaderSource::Wgsl(src.into()),
        });
        let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("tensorop"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let buf = |label, size: u64, usage| {
            d.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: pad4(size.max(4)),
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        let params = buf("params", std::mem::size_of::<Params>() as u64, U::UNIFORM | U::COPY_DST);
        let a = buf("a", a_bytes, U::STORAGE | U::COPY_DST);
        let b = buf("b", b_bytes, U::STORAGE | U::COPY_DST);
        let out = buf("out", out_bytes, U::STORAGE | U::COPY_SRC);
        let staging = buf("staging", out_bytes, U::MAP_READ | U::COPY_DST);
        let layout = pipeline.get_bind_group_layout(0);
        let bind = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("tensorop"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: a.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: b.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: out.as_entire_binding() },
            ],
        });
        Ok(Kernel { pipeline, params, a, b, out, staging, bind, dtype })
    }

    /// Uploads (where given) the inputs, computes `params.n` elements and leaves their
    /// `out_len` bytes in `out`.
    #[allow(clippy::too_many_arguments)]
    fn run_chunk(
        &self,
        gpu: &Gpu,
        params: &Params,
        a: Option<&[u8]>,
        b: Option<&[u8]>,
        out_len: u64,
        out: &mut Vec<u8>,
        timing: &mut ChunkTiming,
    ) -> Result<()> {
        let t = Instant::now();
        gpu.queue.write_buffer(&self.params, 0, bytemuck::bytes_of(params));
        for (data, buf) in [(a, &self.a), (b, &self.b)] {
            if let Some(data) = data {
                write_padded(&gpu.queue, buf, data);
            }
        }
        timing.upload += t.elapsed();

        let t = Instant::now();
        let per = elements_per_invocation(self.dtype);
        let invocations = params.n.div_ceil(per);
        let groups = invocations.div_ceil(WORKGROUP).max(1);
        let max = gpu.limits.max_compute_workgroups_per_dimension.max(1);
        let (x, y) = if groups <= max { (groups, 1) } else { (max, groups.div_ceil(max)) };
        let copy = pad4(out_len);
        let mut enc = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("tensorop") });
        {
            let mut pass = enc
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("tensorop"), timestamp_writes: None });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind, &[]);
            pass.dispatch_workgroups(x, y, 1);
        }
        enc.copy_buffer_to_buffer(&self.out, 0, &self.staging, 0, copy);
        gpu.queue.submit([enc.finish()]);
        let slice = self.staging.slice(..copy);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        gpu.device.poll(wgpu::PollType::wait_indefinitely()).context("the GPU stopped responding")?;
        rx.recv()
            .map_err(|_| anyhow!("the GPU never finished mapping the result"))?
            .context("cannot read the result back from the GPU")?;
        timing.compute += t.elapsed();

        let t = Instant::now();
        {
            let view =
                slice.get_mapped_range().map_err(|e| anyhow!("cannot read the result back from the GPU: {e:?}"))?;
            out.clear();
            out.extend_from_slice(&view[..out_len as usize]);
        }
        self.staging.unmap();
        timing.download += t.elapsed();
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
}

/// Reads `count` elements of `input` from element `start`, in little-endian byte order.
fn read_le(input: &NpyInput, dtype: DType, start: u64, count: usize) -> Result<Vec<u8>> {
    crate::with_dtype!(dtype, T => {
        let mut v = vec![<T as bytemuck::Zeroable>::zeroed(); count];
        input.read_into(start, &mut v)?;
        if cfg!(target_endian = "big") {
            v.iter_mut().for_each(|x| *x = crate::dtype::Element::swap_bytes(*x));
        }
        Ok(bytemuck::cast_slice::<T, u8>(&v).to_vec())
    })
}

/// Runs `job` on `gpu`, handing each finished chunk's bytes, in order, to `write`.
pub fn run(gpu: &Gpu, job: &Job, write: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<Stats> {
    let dtype = job.dtype;
    let es = dtype.size() as u64;
    let total = job.iter.count();
    let mut stats = Stats { threads_used: 1, ..Stats::default() };
    if total == 0 {
        return Ok(stats);
    }
    u32::try_from(total).map_err(|_| {
        anyhow!("the wgpu backend handles outputs of up to 2^32 - 1 elements; this one has {total}; use --backend cpu")
    })?;
    let rank = job.iter.dims.len();
    if rank > MAX_RANK {
        bail!("the wgpu backend handles up to {MAX_RANK} dimensions after merging; use --backend cpu");
    }
    let to32 = |v: &[u64]| -> Result<Vec<u32>> {
        v.iter()
            .map(|&x| u32::try_from(x).map_err(|_| anyhow!("a stride exceeds 2^32 elements; use --backend cpu")))
            .collect()
    };
    let dims = to32(&job.iter.dims)?;
    let strides = [to32(&job.iter.strides[0])?, to32(&job.iter.strides[1])?];

    let max_bind = gpu.limits.max_storage_buffer_binding_size.min(gpu.limits.max_buffer_size);
    let grid = u64::from(gpu.limits.max_compute_workgroups_per_dimension).pow(2) * u64::from(WORKGROUP);
    let per = u64::from(elements_per_invocation(dtype));
    let limit = std::env::var(CHUNK_ENV).ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(MAX_CHUNK_BYTES);
    let chunk = (max_bind.min(limit.max(16)) / es).min(grid * per).min(total) / 4 * 4;
    let chunk = chunk.max(4.min(total));

    // Inputs read in output order are uploaded per chunk; the rest once, whole.
    let t = Instant::now();
    let mut resident: [Option<Vec<u8>>; 2] = [None, None];
    let mut sizes = [0u64; 2];
    for i in 0..2 {
        let input = job.inputs[i];
        if job.iter.is_identity(i) {
            sizes[i] = chunk * es;
        } else {
            let bytes = input.header.data_bytes;
            if bytes > max_bind {
                bail!(
                    "input {} is broadcast and {bytes} bytes, more than the {max_bind} bytes this GPU can bind; use --backend cpu",
                    input.label
                );
            }
            resident[i] = Some(read_le(input, dtype, 0, input.header.elements as usize)?);
            sizes[i] = bytes;
        }
    }
    stats.read += t.elapsed();
    let kernel = Kernel::new(gpu, dtype, job.sem, sizes[0], sizes[1], chunk * es)?;
    let chunk_local = (0..2).filter(|&i| resident[i].is_none()).map(|i| 1u32 << i).sum();

    let mut timing = ChunkTiming::default();
    let mut out = Vec::new();
    let mut start = 0u64;
    while start < total {
        let n = chunk.min(total - start);
        let mut fresh: [Option<Vec<u8>>; 2] = [None, None];
        let t = Instant::now();
        for (i, slot) in fresh.iter_mut().enumerate() {
            if resident[i].is_none() {
                *slot = Some(read_le(job.inputs[i], dtype, start, n as usize)?);
            }
        }
        stats.read += t.elapsed();
        // Chunk-local inputs are uploaded every chunk; broadcast inputs with the first only.
        let upload = |i: usize| fresh[i].as_deref().or(resident[i].as_deref().filter(|_| start == 0));
        let params = Params::zeroed_with(n as u32, start as u32, &dims, [&strides[0], &strides[1]], chunk_local);
        kernel.run_chunk(gpu, &params, upload(0), upload(1), n * es, &mut out, &mut timing)?;
        let t = Instant::now();
        write(&out)?;
        stats.write += t.elapsed();
        start += n;
    }
    stats.upload = timing.upload;
    stats.compute = timing.compute;
    stats.download = timing.download;
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

/// Every adapter of the platform's API.
pub fn list_adapters() -> Result<Vec<AdapterEntry>> {
    let b = backends()?;
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
            let features = [
                (wgpu::Features::SHADER_F16, "SHADER_F16"),
                (wgpu::Features::SHADER_I16, "SHADER_I16"),
                (wgpu::Features::SHADER_INT64, "SHADER_INT64"),
                (wgpu::Features::SHADER_F64, "SHADER_F64"),
            ]
            .into_iter()
            .filter(|(flag, _)| f.contains(*flag))
            .map(|(_, name)| name)
            .collect();
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
