//! Windows: `DirectML.dll`, `d3d12.dll` and `dxgi.dll` loaded at run time, the adapter, and the
//! Direct3D 12 and DirectML devices (`docs/backends.md`, "directml").

use super::queue::Queue;
use super::{DeviceReport, Settings};
use crate::dtype::DType;
use crate::op::Op;
use crate::spec::level::FeatureLevel;
use anyhow::{anyhow, bail, Context, Result};
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use windows::core::{Interface, GUID, HRESULT, HSTRING, PCSTR};
use windows::Win32::Foundation::HMODULE;
use windows::Win32::Graphics::Direct3D::{D3D_FEATURE_LEVEL, D3D_FEATURE_LEVEL_11_0};
use windows::Win32::Graphics::Direct3D12::*;
use windows::Win32::Graphics::Dxgi::*;
use windows::Win32::Storage::FileSystem::{
    GetFileVersionInfoSizeW, GetFileVersionInfoW, VerQueryValueW, VS_FIXEDFILEINFO,
};
use windows::Win32::System::LibraryLoader::*;
use windows::Win32::AI::MachineLearning::DirectML::*;

type CreateFactory = unsafe extern "system" fn(*const GUID, *mut *mut c_void) -> HRESULT;
type CreateD3d = unsafe extern "system" fn(*mut c_void, D3D_FEATURE_LEVEL, *const GUID, *mut *mut c_void) -> HRESULT;
type CreateDml = unsafe extern "system" fn(
    *mut c_void,
    DML_CREATE_DEVICE_FLAGS,
    DML_FEATURE_LEVEL,
    *const GUID,
    *mut *mut c_void,
) -> HRESULT;

/// The DirectML library a run uses: where it was loaded from and its file version.
pub(super) struct Library {
    pub path: PathBuf,
    pub version: String,
    create: CreateDml,
    /// `DML_CREATE_DEVICE_FLAG_DEBUG` (`TENSOROP_DIRECTML_DEBUG=1`, `DirectML.Debug.dll`
    /// installed), else none.
    flags: DML_CREATE_DEVICE_FLAGS,
}

/// A DXGI adapter: the GPU DirectML runs on.
pub(super) struct Adapter {
    pub index: u32,
    pub name: String,
    pub software: bool,
    adapter: IDXGIAdapter1,
}

/// An open DirectML device on one adapter, at the feature level the run asked for, with the
/// queue, command list and fence its dispatches go through.
pub(crate) struct Device {
    pub(super) lib: Library,
    /// The `d3d12.dll` loaded: System32's, or the one `TENSOROP_D3D12_DLL` names.
    pub(super) d3d12: PathBuf,
    /// The longest one wait for the GPU may take.
    pub(super) timeout: std::time::Duration,
    /// `TENSOROP_DIRECTML_DEBUG=1`: what is on.
    debug: Option<super::DebugReport>,
    pub(super) adapter: String,
    pub(super) level: FeatureLevel,
    pub(super) max_level: FeatureLevel,
    pub(super) d3d: ID3D12Device,
    pub(super) dml: IDMLDevice,
    pub(super) queue: Mutex<Queue>,
}

// SAFETY: Direct3D 12 devices, queues and fences and DirectML devices are free-threaded; the
// command list and allocator, which are not, are only reached through the `Mutex<Queue>`.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

fn wide(s: &str) -> HSTRING {
    HSTRING::from(s)
}

/// Loads `name` (a file name the system searches for, or a full path) with `flags`.
fn load(name: &Path, flags: LOAD_LIBRARY_FLAGS) -> windows::core::Result<HMODULE> {
    // SAFETY: a plain library load; the module stays loaded for the process's life.
    unsafe { LoadLibraryExW(&HSTRING::from(name.as_os_str()), None, flags) }
}

/// The address of `name` in `module`, as a function of type `F`.
fn entry<F: Copy>(module: HMODULE, name: &'static [u8], dll: &str) -> Result<F> {
    // SAFETY: `name` is NUL-terminated; the caller names `F` as the entry point's documented type.
    let f = unsafe { GetProcAddress(module, PCSTR(name.as_ptr())) }
        .ok_or_else(|| anyhow!("{dll} has no entry point {}", String::from_utf8_lossy(&name[..name.len() - 1])))?;
    debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of_val(&f));
    // SAFETY: a function pointer to a function pointer of the documented signature.
    Ok(unsafe { std::mem::transmute_copy(&f) })
}

fn module_path(module: HMODULE) -> PathBuf {
    let mut buf = vec![0u16; 32768];
    // SAFETY: the buffer is writable and its length is passed.
    let n = unsafe { GetModuleFileNameW(Some(module), &mut buf) } as usize;
    PathBuf::from(String::from_utf16_lossy(&buf[..n.min(buf.len())]))
}

/// The file version of `path` (`1.15.4.0`), or `unknown`.
fn file_version(path: &Path) -> String {
    let name = HSTRING::from(path.as_os_str());
    // SAFETY: the buffer has the size the system asked for; VerQueryValueW points into it.
    unsafe {
        let size = GetFileVersionInfoSizeW(&name, None);
        if size == 0 {
            return "unknown".into();
        }
        let mut data = vec![0u8; size as usize];
        if GetFileVersionInfoW(&name, None, size, data.as_mut_ptr().cast()).is_err() {
            return "unknown".into();
        }
        let (mut info, mut len) = (std::ptr::null_mut::<c_void>(), 0u32);
        if !VerQueryValueW(data.as_ptr().cast(), &wide("\\"), &mut info, &mut len).as_bool()
            || info.is_null()
            || (len as usize) < std::mem::size_of::<VS_FIXEDFILEINFO>()
        {
            return "unknown".into();
        }
        let v = &*(info as *const VS_FIXEDFILEINFO);
        let (ms, ls) = (v.dwFileVersionMS, v.dwFileVersionLS);
        format!("{}.{}.{}.{}", ms >> 16, ms & 0xffff, ls >> 16, ls & 0xffff)
    }
}

impl Library {
    /// `DirectML.dll`: the one `settings` names, else the one beside `tensorop.exe`, else the
    /// system's.
    pub(super) fn load(settings: &Settings) -> Result<Library> {
        let module = match &settings.dll {
            Some(p) => load(p, LOAD_WITH_ALTERED_SEARCH_PATH)
                .map_err(|e| anyhow!("{}={}: cannot load it as DirectML: {e}", super::DLL_ENV, p.display()))?,
            None => {
                let beside = std::env::current_exe().ok().and_then(|e| Some(e.parent()?.join("DirectML.dll")));
                match beside.filter(|p| p.is_file()) {
                    Some(p) => load(&p, LOAD_WITH_ALTERED_SEARCH_PATH)
                        .map_err(|e| anyhow!("{}: cannot load it as DirectML: {e}", p.display()))?,
                    None => load(Path::new("DirectML.dll"), LOAD_LIBRARY_SEARCH_SYSTEM32).map_err(|_| {
                        anyhow!(
                            "DirectML.dll is neither beside tensorop.exe nor in the system directory; put the \
                             DirectML.dll of the Microsoft.AI.DirectML package beside tensorop.exe, or name one \
                             with {}=PATH",
                            super::DLL_ENV
                        )
                    })?,
                }
            }
        };
        let path = module_path(module);
        let create = entry::<CreateDml>(module, b"DMLCreateDevice1\0", &path.display().to_string())
            .context("DirectML 1.1 or newer is needed")?;
        let debug = settings.debug && super::debug::directml_debug_installed(&path);
        let flags = if debug { DML_CREATE_DEVICE_FLAG_DEBUG } else { DML_CREATE_DEVICE_FLAG_NONE };
        Ok(Library { version: file_version(&path), path, create, flags })
    }
}

/// The DXGI adapters, in the system's order.
pub(super) fn adapters() -> Result<Vec<Adapter>> {
    let dxgi = load(Path::new("dxgi.dll"), LOAD_LIBRARY_SEARCH_SYSTEM32).context("cannot load dxgi.dll")?;
    let create = entry::<CreateFactory>(dxgi, b"CreateDXGIFactory1\0", "dxgi.dll")?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: the documented signature; on success `raw` holds a new IDXGIFactory1 reference.
    let factory = unsafe {
        create(&IDXGIFactory1::IID, &mut raw).ok().context("CreateDXGIFactory1 failed")?;
        IDXGIFactory1::from_raw(raw)
    };
    let mut out = Vec::new();
    for index in 0.. {
        // SAFETY: enumeration ends with an error (DXGI_ERROR_NOT_FOUND).
        let Ok(adapter) = (unsafe { factory.EnumAdapters1(index) }) else { break };
        // SAFETY: a plain query of a live adapter.
        let desc = unsafe { adapter.GetDesc1() }.context("IDXGIAdapter1::GetDesc1 failed")?;
        let n = desc.Description.iter().position(|&c| c == 0).unwrap_or(desc.Description.len());
        out.push(Adapter {
            index,
            name: String::from_utf16_lossy(&desc.Description[..n]),
            software: desc.Flags & DXGI_ADAPTER_FLAG_SOFTWARE.0 as u32 != 0,
            adapter,
        });
    }
    Ok(out)
}

/// `d3d12.dll`: the one `chosen` names (`TENSOROP_D3D12_DLL`, an absolute path), else the
/// system's, from System32 only, so that no `d3d12.dll` beside `tensorop.exe` or in the current
/// directory is ever loaded. Returns the module and the path it was loaded from.
fn load_d3d12(chosen: Option<&Path>) -> Result<(HMODULE, PathBuf)> {
    let module = match chosen {
        Some(p) => load(p, LOAD_WITH_ALTERED_SEARCH_PATH)
            .map_err(|e| anyhow!("{}={}: cannot load it as Direct3D 12: {e}", super::D3D12_ENV, p.display()))?,
        None => load(Path::new("d3d12.dll"), LOAD_LIBRARY_SEARCH_SYSTEM32)
            .context("cannot load d3d12.dll (Direct3D 12) from the system directory")?,
    };
    Ok((module, module_path(module)))
}

/// A Direct3D 12 device on `adapter`, through `D3D12CreateDevice` of the `d3d12.dll` loaded.
fn d3d_device(d3d12: HMODULE, adapter: &Adapter) -> Result<ID3D12Device> {
    let create = entry::<CreateD3d>(d3d12, b"D3D12CreateDevice\0", "d3d12.dll")?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: the documented signature; on success `raw` holds a new ID3D12Device reference.
    unsafe {
        create(adapter.adapter.as_raw(), D3D_FEATURE_LEVEL_11_0, &ID3D12Device::IID, &mut raw)
            .ok()
            .with_context(|| format!("adapter {} ({}): D3D12CreateDevice failed", adapter.index, adapter.name))?;
        Ok(ID3D12Device::from_raw(raw))
    }
}

pub(super) fn dml_level(l: FeatureLevel) -> DML_FEATURE_LEVEL {
    DML_FEATURE_LEVEL(((l.major as i32) << 12) | ((l.minor as i32) << 8))
}

impl Library {
    /// `DMLCreateDevice1` on `d3d` with `level` as the minimum.
    fn device(&self, d3d: &ID3D12Device, level: FeatureLevel) -> windows::core::Result<IDMLDevice> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the documented signature; on success `raw` holds a new IDMLDevice reference.
        unsafe {
            (self.create)(d3d.as_raw(), self.flags, dml_level(level), &IDMLDevice::IID, &mut raw).ok()?;
            Ok(IDMLDevice::from_raw(raw))
        }
    }
}

/// The highest feature level `dml` reports; a failed query is an error, not a level.
fn max_level(dml: &IDMLDevice) -> Result<FeatureLevel> {
    let levels: Vec<DML_FEATURE_LEVEL> = FeatureLevel::ALL.iter().map(|&l| dml_level(l)).collect();
    let query = DML_FEATURE_QUERY_FEATURE_LEVELS {
        RequestedFeatureLevelCount: levels.len() as u32,
        RequestedFeatureLevels: levels.as_ptr(),
    };
    let mut data = DML_FEATURE_DATA_FEATURE_LEVELS::default();
    // SAFETY: query and answer are the documented structs, with their sizes.
    let ok = unsafe {
        dml.CheckFeatureSupport(
            DML_FEATURE_FEATURE_LEVELS,
            std::mem::size_of_val(&query) as u32,
            Some(&query as *const _ as *const c_void),
            std::mem::size_of_val(&data) as u32,
            &mut data as *mut _ as *mut c_void,
        )
    };
    ok.context("IDMLDevice::CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS) failed")?;
    let max = data.MaxSupportedFeatureLevel.0;
    FeatureLevel::ALL
        .iter()
        .copied()
        .filter(|&l| dml_level(l).0 <= max)
        .next_back()
        .ok_or_else(|| anyhow!("DirectML reports feature level {max:#x}, older than 1_0"))
}

impl Device {
    /// Opens DirectML on the adapter `settings` names (else the first that is not a software
    /// adapter) at `settings.level`.
    pub(crate) fn open(settings: &Settings) -> Result<Device> {
        // d3d12.dll first: DirectML.dll's own import of it then binds to this module, never to
        // a d3d12.dll found beside DirectML.dll or the executable.
        let (d3d12, d3d12_path) = load_d3d12(settings.d3d12.as_deref())?;
        if settings.debug {
            super::debug::enable_layer(d3d12)?;
        }
        super::dred::enable(d3d12);
        let lib = Library::load(settings)?;
        let adapter = pick(adapters()?, settings.adapter)?;
        let d3d = d3d_device(d3d12, &adapter)?;
        let level = settings.level;
        let dml = match lib.device(&d3d, level) {
            Ok(d) => d,
            Err(e) => {
                let highest =
                    lib.device(&d3d, FeatureLevel::new(1, 0)).map_err(anyhow::Error::from).and_then(|d| max_level(&d));
                let hint = match highest {
                    Ok(h) => format!("its highest here is {h}: give --feature-level {h} or an older level"),
                    Err(_) => "it cannot create a DirectML device on this adapter at all".into(),
                };
                bail!(
                    "DirectML {} ({}) on adapter {} ({}) cannot give feature level {level} (DMLCreateDevice1: \
                     {e}); {hint}, or use a newer DirectML.dll ({}=PATH)",
                    lib.path.display(),
                    lib.version,
                    adapter.index,
                    adapter.name,
                    super::DLL_ENV
                );
            }
        };
        let max_level = max_level(&dml)?;
        let info = settings.debug.then(|| super::debug::info_queue(&d3d)).transpose()?;
        let debug = settings.debug.then(|| super::DebugReport {
            d3d12_debug_layer: true,
            directml_debug_device: lib.flags == DML_CREATE_DEVICE_FLAG_DEBUG,
        });
        let queue = Queue::new(&d3d, &dml, info)?;
        Ok(Device {
            lib,
            d3d12: d3d12_path,
            timeout: settings.timeout,
            debug,
            adapter: adapter.name,
            level,
            max_level,
            d3d,
            dml,
            queue: Mutex::new(queue),
        })
    }

    pub(super) fn report(&self) -> DeviceReport {
        DeviceReport {
            api: "DirectML",
            adapter: self.adapter.clone(),
            dll: self.lib.path.display().to_string(),
            dll_version: self.lib.version.clone(),
            d3d12: self.d3d12.display().to_string(),
            feature_level: self.level.to_string(),
            max_feature_level: self.max_level.to_string(),
            float16_rule: super::release_rule(&self.lib.version).name(),
            execution_flags: vec![],
            debug: self.debug.clone(),
        }
    }
}

/// The adapter `index` names, else the first hardware adapter, else the first.
fn pick(mut all: Vec<Adapter>, index: Option<u32>) -> Result<Adapter> {
    let listed = || all.iter().map(|a| format!("{}: {}", a.index, a.name)).collect::<Vec<_>>().join(", ");
    let at = match index {
        Some(i) => all
            .iter()
            .position(|a| a.index == i)
            .ok_or_else(|| anyhow!("{}={i}: there is no such adapter (adapters: {})", super::ADAPTER_ENV, listed()))?,
        None => all
            .iter()
            .position(|a| !a.software)
            .or((!all.is_empty()).then_some(0))
            .ok_or_else(|| anyhow!("DirectML needs a Direct3D 12 adapter and DXGI lists none"))?,
    };
    Ok(all.swap_remove(at))
}

/// Every adapter, with what DirectML reports on it.
pub(crate) fn list(settings: &Settings) -> Result<Vec<super::Listed>> {
    let (d3d12, d3d12_path) = load_d3d12(settings.d3d12.as_deref())?;
    let lib = Library::load(settings)?;
    let mut out = Vec::new();
    for a in adapters()? {
        let mut l = super::Listed {
            api: "DirectML",
            index: a.index,
            adapter: a.name.clone(),
            dll: lib.path.display().to_string(),
            dll_version: lib.version.clone(),
            d3d12: d3d12_path.display().to_string(),
            max_feature_level: None,
            error: None,
            sub: vec![],
            sqdiff: vec![],
        };
        let dml = d3d_device(d3d12, &a).and_then(|d| {
            let dml = lib.device(&d, FeatureLevel::new(1, 0)).context("DMLCreateDevice1 failed")?;
            let top = max_level(&dml)?;
            Ok(lib.device(&d, top).map(|d| (d, top)).unwrap_or((dml, top)))
        });
        match dml {
            Ok((dml, top)) => {
                l.max_feature_level = Some(top.to_string());
                for (op, list) in [(Op::Sub, &mut l.sub), (Op::SqDiff, &mut l.sqdiff)] {
                    *list = DType::ALL.into_iter().filter(|&t| creates(&dml, op, t)).map(|t| t.name()).collect();
                }
            }
            Err(e) => l.error = Some(format!("{e:#}")),
        }
        out.push(l);
    }
    Ok(out)
}

/// Whether DirectML creates and compiles `op` on one-element `dtype` tensors: what it runs.
/// Creating alone is not enough: DirectML 1.8.0 creates `sqdiff` on 8- and 16-bit integers
/// (which its feature levels do not list) and refuses to compile it.
fn creates(dml: &IDMLDevice, op: Op, dtype: DType) -> bool {
    let sizes = [1u32];
    let Some(dt) = super::create::data_type(dtype) else { return false };
    let t = DML_BUFFER_TENSOR_DESC {
        DataType: dt,
        Flags: DML_TENSOR_FLAG_NONE,
        DimensionCount: 1,
        Sizes: sizes.as_ptr(),
        Strides: std::ptr::null(),
        TotalTensorSizeInBytes: 8,
        GuaranteedBaseOffsetAlignment: 0,
    };
    let Ok(created) = super::create::create(dml, op, [&t, &t, &t]) else { return false };
    let mut compiled: Option<IDMLCompiledOperator> = None;
    // SAFETY: a COM call on live objects.
    let ok = unsafe { dml.CompileOperator(&created, DML_EXECUTION_FLAG_NONE, &mut compiled) };
    ok.is_ok() && compiled.is_some()
}
