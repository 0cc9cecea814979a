//! The GPU device: the adapter of the chosen API opened with the optional shader features
//! tensorop can use, its description for the report, staging-buffer reads, and the adapter list
//! of `tensorop devices`.

use super::shader::Native;
use super::*;

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
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) info: wgpu::AdapterInfo,
    pub(super) limits: wgpu::Limits,
    pub flushes_subnormals: bool,
    pub init_time: Duration,
    /// The optional features enabled on the device (float16 still subject to its probe).
    pub(super) enabled: Native,
    /// Whether the device's float16 conversions matched the CPU's, probed on first use.
    pub(super) f16_exact: OnceCell<bool>,
    pub(super) tuning: WgpuTuning,
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

    /// The features a kernel for `dtype` uses natively. float16 is native only when the device
    /// has SHADER_F16 and its conversions passed [`Gpu::probe_f16`] (run once, on first use).
    /// The most bytes of an input this device's kernels hold whole: the tuning's limit, bounded
    /// by what one binding can hold and by offsets in 32 bits.
    pub fn resident_limit(&self) -> u64 {
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
            DType::F64 => (vec![], vec!["SHADER_F64"]),
            DType::F32 if !native.f32_subnormals => (vec![], vec!["float32 subnormals (no wgpu feature)"]),
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
