//! The GPU device: the adapter of the chosen API opened with the optional shader features
//! tensorop can use, its limits, the features a kernel uses natively, its buffers (created and
//! written padded to whole words, staging buffers read back) and compute pipelines, its
//! description for the report, and the adapter list of `tensorop devices`.

use super::shader::{Capability, Native, Recipe, SHADER_F16, SHADER_F64, SHADER_I16, SHADER_INT64};
use super::tuning::WgpuTuning;
use crate::dtype::DType;
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use std::borrow::Cow;
use std::cell::OnceCell;
use std::time::{Duration, Instant};

/// What the report says about the device.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceReport {
    adapter: String,
    device_type: String,
    driver: String,
    api: String,
    /// Optional shader features the kernels used natively.
    features_native: Vec<&'static str>,
    /// Optional shader features the kernels emulated (for the job's dtype).
    features_emulated: Vec<&'static str>,
    /// Measured by a probe kernel: float32 subnormal results come back as zero.
    flushes_subnormals: bool,
}

/// An open GPU device.
pub(crate) struct Gpu {
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    flushes_subnormals: bool,
    /// How long opening and probing the device took.
    pub(crate) init_time: Duration,
    /// The optional features enabled on the device (float16 still subject to its probe).
    enabled: Native,
    /// Whether the device's float16 conversions matched the CPU's, probed on first use.
    f16_exact: OnceCell<bool>,
    pub(super) tuning: WgpuTuning,
}

/// Mesa's Vulkan drivers print "XDG_RUNTIME_DIR is invalid or not set" on stderr when no desktop
/// session exists (servers, CI); any directory silences that probe. Changing the environment is
/// safe only while the process has one thread, so `main` calls this first, before the signal
/// thread starts, and only for commands that open a GPU.
pub(crate) fn quiet_driver_probes() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
}

fn instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    wgpu::Instance::new(desc)
}

/// The APIs tensorop opens adapters through, in the order it tries them.
const APIS: [(wgpu::Backends, &str); 4] = [
    (wgpu::Backends::DX12, "DX12"),
    (wgpu::Backends::VULKAN, "Vulkan"),
    (wgpu::Backends::METAL, "Metal"),
    (wgpu::Backends::GL, "OpenGL"),
];

/// The single APIs in the set `b`, in the order they are tried.
fn apis(b: wgpu::Backends) -> impl Iterator<Item = (wgpu::Backends, &'static str)> {
    APIS.into_iter().filter(move |(api, _)| b.contains(*api))
}

fn no_adapter(b: wgpu::Backends) -> anyhow::Error {
    anyhow!("{} or use --backend cpu", no_adapter_found(b))
}

/// Why no adapter is listed, and how to get one.
fn no_adapter_found(b: wgpu::Backends) -> String {
    let names: Vec<&str> = apis(b).map(|(_, name)| name).collect();
    format!(
        "no GPU adapter found through {}; install a driver for it (on Linux, mesa-vulkan-drivers provides \
         the CPU-based lavapipe)",
        names.join(" or ")
    )
}

/// The high-performance adapter of `api`, if it has one.
fn adapter_of(api: wgpu::Backends) -> Option<wgpu::Adapter> {
    let options = wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        force_fallback_adapter: false,
        compatible_surface: None,
        apply_limit_buckets: false,
    };
    pollster::block_on(instance(api).request_adapter(&options)).ok()
}

/// The optional shader features tensorop can use, with their names.
const FEATURES: [(wgpu::Features, &str); 4] = [
    (wgpu::Features::SHADER_F16, SHADER_F16),
    (wgpu::Features::SHADER_I16, SHADER_I16),
    (wgpu::Features::SHADER_INT64, SHADER_INT64),
    (wgpu::Features::SHADER_F64, SHADER_F64),
];

impl Gpu {
    /// Opens the high-performance adapter of the first of `tuning`'s APIs that has one that
    /// opens, and probes it. Errors: no adapter at all, or the last API's failure to open one.
    pub(crate) fn open(tuning: &WgpuTuning) -> Result<Gpu> {
        let mut failure = None;
        for (api, _) in apis(tuning.api) {
            let Some(adapter) = adapter_of(api) else { continue };
            match Self::open_adapter(adapter, tuning) {
                Ok(gpu) => return Ok(gpu),
                Err(e) => failure = Some(e),
            }
        }
        Err(failure.unwrap_or_else(|| no_adapter(tuning.api)))
    }

    /// Opens `adapter` with the features tensorop can use and probes it.
    fn open_adapter(adapter: wgpu::Adapter, tuning: &WgpuTuning) -> Result<Gpu> {
        let t = Instant::now();
        let info = adapter.get_info();
        let emulate = tuning.emulate;
        let wanted = wgpu::Features::SHADER_F64 | wgpu::Features::SHADER_F16 | wgpu::Features::SHADER_INT64;
        let features = if emulate { wgpu::Features::empty() } else { adapter.features() & wanted };
        let enabled = Native {
            f16: features.contains(wgpu::Features::SHADER_F16),
            int64: features.contains(wgpu::Features::SHADER_INT64),
            f64: features.contains(wgpu::Features::SHADER_F64),
            // Set by the probe below.
            f32_subnormals: false,
            flush_model: emulate,
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
        // Float32 arithmetic is exact on the device's own operations only where it keeps
        // subnormals; with TENSOROP_WGPU_EMULATE=1 the flushing devices' path runs everywhere.
        gpu.enabled.f32_subnormals = !gpu.flushes_subnormals && !emulate;
        gpu.init_time = t.elapsed();
        Ok(gpu)
    }

    /// The most bytes of an input this device's kernels hold whole: the tuning's limit, bounded
    /// by what one binding can hold and by offsets in 32 bits.
    pub(crate) fn resident_limit(&self) -> u64 {
        self.tuning.resident_bytes.min(self.max_binding()).min(u64::from(u32::MAX))
    }

    /// The most workgroups a kernel's dispatch uses per dimension: the device's limit, or less
    /// with `TENSOROP_WGPU_MAX_GROUPS`.
    pub(super) fn groups_per_dimension(&self) -> u32 {
        self.limits.max_compute_workgroups_per_dimension.min(self.tuning.max_groups).max(1)
    }

    /// The largest buffer one binding can hold.
    pub(super) fn max_binding(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
    }

    /// The features a kernel for `dtype` uses natively. float16 is native only when the device
    /// has SHADER_F16 and its conversions passed [`Gpu::probe_f16`] (run once, on first use).
    pub(super) fn native(&self, dtype: DType) -> Native {
        let f16 = dtype == DType::F16
            && self.enabled.f16
            && *self.f16_exact.get_or_init(|| self.probe_f16().unwrap_or(false));
        Native { f16, ..self.enabled }
    }

    /// Maps `len` bytes of `staging` once submission `idx` is done, and copies them out.
    pub(super) fn map_read(&self, staging: &wgpu::Buffer, len: u64, idx: wgpu::SubmissionIndex) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.with_mapped(staging, len, idx, &mut |bytes| {
            out.extend_from_slice(bytes);
            Ok(())
        })?;
        Ok(out)
    }

    /// Maps `len` bytes (a multiple of 4) of `staging` once submission `idx` is done and hands
    /// them to `f`.
    pub(super) fn with_mapped(
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
    pub(super) fn resident_buffer(&self, data: &[u8]) -> wgpu::Buffer {
        use wgpu::BufferUsages as U;
        let buf = self.buffer("input", data.len() as u64, U::STORAGE | U::COPY_DST);
        self.write_padded(&buf, data);
        buf
    }

    /// A buffer of at least `size` bytes (a whole number of words, at least one).
    pub(super) fn buffer(&self, label: &str, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: pad4(size.max(4)),
            usage,
            mapped_at_creation: false,
        })
    }

    /// Queues the write of `data` at the start of `buf`, its last partial word padded with zeros.
    pub(super) fn write_padded(&self, buf: &wgpu::Buffer, data: &[u8]) {
        let whole = data.len() / 4 * 4;
        if whole > 0 {
            self.queue.write_buffer(buf, 0, &data[..whole]);
        }
        if whole < data.len() {
            let mut tail = [0u8; 4];
            tail[..data.len() - whole].copy_from_slice(&data[whole..]);
            self.queue.write_buffer(buf, whole as u64, &tail);
        }
    }

    /// The pipeline of the entry point `main` of the WGSL `source` (a module labelled `label`),
    /// with the values of its pipeline constants.
    pub(super) fn compute_pipeline(
        &self,
        label: &str,
        source: Cow<'_, str>,
        constants: &[(&str, f64)],
    ) -> wgpu::ComputePipeline {
        let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source),
        });
        self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("tensorop"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
            cache: None,
        })
    }

    /// The report's description of this device for a job of `dtype`.
    pub(crate) fn report(&self, dtype: DType) -> DeviceReport {
        let (native, emulated) = match Recipe::of(dtype, self.native(dtype)).capability {
            Capability::Core => (vec![], vec![]),
            Capability::Uses(name) => (vec![name], vec![]),
            Capability::Emulates(name) => (vec![], vec![name]),
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

/// `n` rounded up to a whole number of 4-byte words.
pub(super) fn pad4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

/// One adapter, as `tensorop devices` lists it.
#[derive(Debug, Serialize)]
pub(crate) struct AdapterEntry {
    pub(crate) name: String,
    pub(crate) api: String,
    pub(crate) device_type: String,
    pub(crate) driver: String,
    pub(crate) features: Vec<&'static str>,
    pub(crate) max_storage_buffer_binding_size: u64,
    pub(crate) max_buffer_size: u64,
    pub(crate) max_compute_workgroups_per_dimension: u32,
}

/// Every adapter of `tuning`'s API.
pub(crate) fn list_adapters(tuning: &WgpuTuning) -> Result<Vec<AdapterEntry>> {
    let b = tuning.api;
    let inst = instance(b);
    let adapters = pollster::block_on(inst.enumerate_adapters(b));
    if adapters.is_empty() {
        // `devices` takes no --backend: the CPU backend is sub's and sqdiff's default.
        bail!("{}; sub and sqdiff run on the CPU backend (the default) without one", no_adapter_found(b));
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
