//! The directml backend (Windows only): runs a job on DirectML through Direct3D 12, with
//! the `dml` descriptors tensorop reports (or `dml_executed`, where an input was copied to C
//! order first), chunk by chunk along the output's outer
//! dimensions, and (`--verify`) compares every chunk with the CPU backend's reference
//! (`docs/backends.md`, "directml"). `DirectML.dll` is loaded at run time, so tensorop starts
//! and its other backends work where there is none.

// Elsewhere only the settings, the usage error and the pure parts (chunks, verdicts) are
// reached; they are tested on every system.
#![cfg_attr(not(windows), allow(dead_code))]

#[cfg(all(windows, test))]
mod agreement;
pub mod chunks;
#[cfg(windows)]
mod create;
#[cfg(windows)]
mod debug;
#[cfg(windows)]
mod device;
#[cfg(windows)]
mod dred;
#[cfg(windows)]
mod operator;
#[cfg(windows)]
mod queue;
#[cfg(windows)]
mod resource;
#[cfg(windows)]
mod stamps;
#[cfg(windows)]
mod stream;
pub mod verify;
pub mod wait;

use super::{Job, Ran};
use crate::op::Float16Rule;
use crate::spec::level::FeatureLevel;
use anyhow::{bail, Result};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// A `DirectML.dll` to load instead of the one beside `tensorop.exe` or the system's.
pub const DLL_ENV: &str = "TENSOROP_DIRECTML_DLL";
/// A `d3d12.dll` to load instead of the system's (System32): for tests, and for users who need
/// another Direct3D 12 implementation.
pub const D3D12_ENV: &str = "TENSOROP_D3D12_DLL";
/// Seconds: the longest one wait for the GPU may take ([`wait::DEFAULT_TIMEOUT`]).
pub const TIMEOUT_ENV: &str = "TENSOROP_DIRECTML_TIMEOUT_S";
/// `1`: the D3D12 debug layer and DirectML's debug device, any error they report failing the run.
pub const DEBUG_ENV: &str = "TENSOROP_DIRECTML_DEBUG";
/// `1`: compile operators with `DML_EXECUTION_FLAG_DISABLE_META_COMMANDS` (a driver's
/// metacommands may round differently by vendor).
pub const NO_METACOMMANDS_ENV: &str = "TENSOROP_DIRECTML_DISABLE_METACOMMANDS";
/// Chunks in flight at once, 1 to 3 (default 3): 1 runs one chunk at a time, to compare.
pub const IN_FLIGHT_ENV: &str = "TENSOROP_DIRECTML_IN_FLIGHT";
/// The DXGI adapter to run on, by its index in `tensorop devices`.
pub const ADAPTER_ENV: &str = "TENSOROP_DIRECTML_ADAPTER";
/// Bytes: the largest output chunk per dispatch (tests use small values to reach many chunks).
pub const CHUNK_ENV: &str = "TENSOROP_DIRECTML_CHUNK_BYTES";
/// Largest output chunk per dispatch by default: bounds host and staging memory.
const MAX_CHUNK_BYTES: u64 = 16 << 20;
/// The most chunks in flight at once, and the default: one the device runs, one waiting behind
/// it, one the host hands on and refills.
pub const MAX_IN_FLIGHT: usize = 3;

/// How the directml backend is set up: the level (`--feature-level`, the minimum
/// `DMLCreateDevice1` is asked for), the DLL, the adapter, the chunk size and `--verify`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub level: FeatureLevel,
    /// `TENSOROP_DIRECTML_DLL`, absolute, an existing file.
    pub dll: Option<PathBuf>,
    /// `TENSOROP_D3D12_DLL`, absolute, an existing file; `None`: System32's `d3d12.dll`.
    pub d3d12: Option<PathBuf>,
    /// The longest one wait for the GPU may take.
    pub timeout: Duration,
    /// `TENSOROP_DIRECTML_DISABLE_METACOMMANDS=1`.
    pub no_metacommands: bool,
    /// `TENSOROP_DIRECTML_DEBUG=1`.
    pub debug: bool,
    pub adapter: Option<u32>,
    pub chunk_bytes: u64,
    /// Chunks in flight at once (`TENSOROP_DIRECTML_IN_FLIGHT`), 1 to 3.
    pub in_flight: usize,
    pub verify: bool,
    /// The float16 rule a flag named (`--float16`, `--directml-version`): `--verify`'s
    /// reference. `None`: the rule of the release loaded ([`Dml::float16_rule`]).
    pub float16: Option<Float16Rule>,
}

impl Settings {
    /// From `--feature-level`, `--verify` and the environment (`get`: a variable's value).
    pub fn from_lookup(level: FeatureLevel, verify: bool, get: &dyn Fn(&str) -> Option<String>) -> Result<Settings> {
        let value = |name: &str| get(name).filter(|v| !v.is_empty());
        let adapter = match value(ADAPTER_ENV) {
            None => None,
            Some(v) => match v.parse::<u32>() {
                Ok(n) => Some(n),
                Err(_) => bail!("{ADAPTER_ENV}={v} is not an adapter index; give one that tensorop devices lists"),
            },
        };
        let chunk_bytes = match value(CHUNK_ENV) {
            None => MAX_CHUNK_BYTES,
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n > 0 => n,
                _ => bail!("{CHUNK_ENV}={v} is not a byte count; give a whole number such as 65536"),
            },
        };
        let in_flight = match value(IN_FLIGHT_ENV) {
            None => MAX_IN_FLIGHT,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (1..=MAX_IN_FLIGHT).contains(&n) => n,
                _ => bail!("{IN_FLIGHT_ENV}={v}: give the chunks in flight at once, 1 to {MAX_IN_FLIGHT}"),
            },
        };
        let timeout = match value(TIMEOUT_ENV) {
            None => wait::DEFAULT_TIMEOUT,
            Some(v) => match v.parse::<f64>() {
                Ok(s) if s > 0.0 && s <= 1e9 => Duration::from_secs_f64(s),
                _ => bail!("{TIMEOUT_ENV}={v} is not a number of seconds; give one above 0, such as 600"),
            },
        };
        let switch = |name: &str, what: &str| match value(name).as_deref() {
            None | Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(v) => Err(anyhow::anyhow!("{name}={v}: give 1 ({what}) or 0")),
        };
        let no_metacommands = switch(NO_METACOMMANDS_ENV, "disable DirectML's metacommands")?;
        let debug = switch(DEBUG_ENV, "the Direct3D 12 debug layer and DirectML's debug device")?;
        let dll = value(DLL_ENV).map(|v| existing_file(DLL_ENV, &v)).transpose()?;
        let d3d12 = value(D3D12_ENV).map(|v| existing_file(D3D12_ENV, &v)).transpose()?;
        Ok(Settings {
            level,
            dll,
            d3d12,
            timeout,
            no_metacommands,
            debug,
            adapter,
            chunk_bytes,
            in_flight,
            verify,
            float16: None,
        })
    }

    /// Settings for listing devices: no level asked for.
    pub fn listing(get: &dyn Fn(&str) -> Option<String>) -> Result<Settings> {
        Settings::from_lookup(FeatureLevel::new(1, 0), false, get)
    }
}

/// The file a DLL variable names, made absolute (a library loaded by a relative path is searched
/// for, which Windows documents as undefined with the flags tensorop loads with); it must exist.
fn existing_file(var: &str, value: &str) -> Result<PathBuf> {
    let path = std::path::absolute(value).map_err(|e| anyhow::anyhow!("{var}={value}: {e}"))?;
    if !path.is_file() {
        bail!("{var}={value}: there is no such file ({}); name the DLL by its path, or unset {var}", path.display());
    }
    Ok(path)
}

/// The usage error of `--backend directml` where there is no DirectML.
pub fn unavailable() -> Option<String> {
    (!cfg!(windows)).then(|| {
        format!(
            "--backend directml runs on Windows only (DirectML is a Windows library); this tensorop is built for {}: \
             use --backend cpu or wgpu here, or --dxdispatch DIR to hand the job to DirectML's runner on Windows",
            std::env::consts::OS
        )
    })
}

/// The report's `backend.device` on the directml backend.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceReport {
    pub api: &'static str,
    pub adapter: String,
    pub dll: String,
    pub dll_version: String,
    /// The `d3d12.dll` loaded: System32's, or the one `TENSOROP_D3D12_DLL` names.
    pub d3d12: String,
    /// The level the DirectML device was created with (`--feature-level`).
    pub feature_level: String,
    /// The highest level the DLL and driver report.
    pub max_feature_level: String,
    /// How this release stores float16 on a device without native 16-bit arithmetic
    /// (`Float16Rule::of_directml` of its version): `--verify`'s reference unless a flag names
    /// another rule.
    pub float16_rule: &'static str,
    /// The `DML_EXECUTION_FLAGS` the job's operator was compiled with ([`ExecutionFlags`]).
    pub execution_flags: Vec<&'static str>,
    /// `TENSOROP_DIRECTML_DEBUG=1`: what was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug: Option<DebugReport>,
}

/// The report's `backend.debug`: the debug layer (always, when the switch is on: without it
/// the run fails) and whether DirectML's debug device was there too.
#[derive(Debug, Clone, Serialize)]
pub struct DebugReport {
    pub d3d12_debug_layer: bool,
    pub directml_debug_device: bool,
}

/// An open DirectML device.
pub struct Dml {
    #[cfg(windows)]
    device: device::Device,
    settings: Settings,
    pub init_time: Duration,
}

impl Dml {
    /// Loads DirectML and opens a device at `settings.level`.
    pub fn open(settings: &Settings) -> Result<Dml> {
        #[cfg(windows)]
        {
            let t = std::time::Instant::now();
            let device = device::Device::open(settings)?;
            Ok(Dml { device, settings: settings.clone(), init_time: t.elapsed() })
        }
        #[cfg(not(windows))]
        {
            let _ = settings;
            bail!("{}", unavailable().unwrap_or_default())
        }
    }

    /// The device, and the flags a job of `dtype` is compiled with.
    pub fn report(&self, dtype: crate::dtype::DType) -> DeviceReport {
        #[cfg(windows)]
        {
            let flags = ExecutionFlags::of(dtype, self.float16_rule(), &self.settings);
            DeviceReport { execution_flags: flags.names(), ..self.device.report() }
        }
        #[cfg(not(windows))]
        {
            let _ = dtype;
            unreachable!("no DirectML device opens here")
        }
    }

    /// The float16 rule of the run: the one a flag named, else the loaded release's.
    pub fn float16_rule(&self) -> Float16Rule {
        #[cfg(windows)]
        {
            self.settings.float16.unwrap_or_else(|| release_rule(&self.device.report().dll_version))
        }
        #[cfg(not(windows))]
        {
            self.settings.float16.unwrap_or_default()
        }
    }

    /// Runs `job`, handing each chunk's output (its first element's index, its bytes) in
    /// order to `emit`. `--verify`'s reference follows [`Dml::float16_rule`].
    pub fn run(&self, job: &Job, emit: &mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<Ran> {
        #[cfg(windows)]
        {
            let sem = crate::op::Semantics { float16: self.float16_rule(), ..job.sem };
            run::run(&self.device, &self.settings, &job.with_sem(sem), emit)
        }
        #[cfg(not(windows))]
        {
            let _ = (job, emit);
            bail!("{}", unavailable().unwrap_or_default())
        }
    }
}

/// The `DML_EXECUTION_FLAGS` a job's operator is compiled with, chosen by its dtype: half
/// precision only for float16 under `--float16 per-step` (the flag means nothing for other
/// dtypes), and no metacommands where `TENSOROP_DIRECTML_DISABLE_METACOMMANDS=1`. The report's
/// `backend.execution_flags` names them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecutionFlags {
    pub half_precision: bool,
    pub no_metacommands: bool,
}

impl ExecutionFlags {
    pub fn of(dtype: crate::dtype::DType, rule: Float16Rule, settings: &Settings) -> ExecutionFlags {
        ExecutionFlags {
            half_precision: dtype == crate::dtype::DType::F16 && rule == Float16Rule::PerStep,
            no_metacommands: settings.no_metacommands,
        }
    }

    /// DirectML's names of the flags set; `DML_EXECUTION_FLAG_NONE` for none.
    pub fn names(self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.half_precision {
            out.push("DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION");
        }
        if self.no_metacommands {
            out.push("DML_EXECUTION_FLAG_DISABLE_META_COMMANDS");
        }
        if out.is_empty() {
            out.push("DML_EXECUTION_FLAG_NONE");
        }
        out
    }
}

/// The float16 rule of the DirectML release of file version `version`; the newest releases'
/// where the version cannot be read.
pub fn release_rule(version: &str) -> Float16Rule {
    Float16Rule::of_directml(version).unwrap_or(Float16Rule::TowardZeroInf)
}

/// One DirectML adapter as `tensorop devices` lists it.
#[derive(Debug, serde::Serialize)]
pub struct Listed {
    pub api: &'static str,
    pub index: u32,
    pub adapter: String,
    pub dll: String,
    pub dll_version: String,
    /// The `d3d12.dll` loaded: System32's, or the one `TENSOROP_D3D12_DLL` names.
    pub d3d12: String,
    /// `None` where DirectML cannot create a device on the adapter (with the reason).
    pub max_feature_level: Option<String>,
    /// Why no DirectML device opens on the adapter; absent where one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per operator, the data types DirectML creates it for at the highest level.
    pub sub: Vec<&'static str>,
    pub sqdiff: Vec<&'static str>,
}

/// `tensorop devices`: the DirectML adapters (Windows), or why there are none.
pub fn list(get: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Listed>> {
    #[cfg(windows)]
    {
        device::list(&Settings::listing(get)?)
    }
    #[cfg(not(windows))]
    {
        let _ = get;
        bail!("{}", unavailable().unwrap_or_default())
    }
}

#[cfg(windows)]
mod run;

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Settings> {
        let get = |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
        Settings::from_lookup(FeatureLevel::new(6, 4), false, &get)
    }

    /// A DLL named by a variable is loaded by its absolute path, and must exist: a relative
    /// path would be searched for.
    #[test]
    fn dll_variables_name_existing_files_by_absolute_paths() {
        let here = std::env::current_dir().expect("current directory");
        let s = settings(&[(DLL_ENV, "Cargo.toml"), (D3D12_ENV, "Cargo.toml")]).expect("existing files");
        assert_eq!(s.dll.as_deref(), Some(here.join("Cargo.toml").as_path()));
        assert_eq!(s.d3d12.as_deref(), Some(here.join("Cargo.toml").as_path()));
        for var in [DLL_ENV, D3D12_ENV] {
            let e = settings(&[(var, "no-such.dll")]).expect_err("a missing file is refused");
            assert!(format!("{e:#}").contains(&format!("{var}=no-such.dll: there is no such file")), "{e:#}");
        }
        let s = settings(&[]).expect("defaults");
        assert_eq!((s.dll, s.d3d12, s.timeout), (None, None, wait::DEFAULT_TIMEOUT));
    }

    #[test]
    fn execution_flags_follow_the_dtype_and_the_switch() {
        use crate::dtype::DType;
        let plain = settings(&[]).expect("defaults");
        let per_step = Float16Rule::PerStep;
        assert_eq!(
            ExecutionFlags::of(DType::F16, per_step, &plain).names(),
            ["DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION"]
        );
        // The flag means nothing for other dtypes: not set.
        for d in [DType::F32, DType::I32] {
            assert_eq!(ExecutionFlags::of(d, per_step, &plain).names(), ["DML_EXECUTION_FLAG_NONE"], "{d:?}");
        }
        assert_eq!(ExecutionFlags::of(DType::F16, Float16Rule::Nearest, &plain).names(), ["DML_EXECUTION_FLAG_NONE"]);
        let no_meta = settings(&[(NO_METACOMMANDS_ENV, "1")]).expect("1");
        assert_eq!(
            ExecutionFlags::of(DType::F16, per_step, &no_meta).names(),
            ["DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION", "DML_EXECUTION_FLAG_DISABLE_META_COMMANDS"]
        );
        assert!(settings(&[(NO_METACOMMANDS_ENV, "yes")]).is_err());
    }

    #[test]
    fn one_to_three_chunks_are_in_flight() {
        assert_eq!(settings(&[]).expect("default").in_flight, 3);
        assert_eq!(settings(&[(IN_FLIGHT_ENV, "1")]).expect("one").in_flight, 1);
        for bad in ["0", "4", "two"] {
            let e = settings(&[(IN_FLIGHT_ENV, bad)]).expect_err("refused");
            assert!(format!("{e:#}").contains("1 to 3"), "{bad}: {e:#}");
        }
    }

    #[test]
    fn the_timeout_is_seconds_above_zero() {
        assert_eq!(settings(&[(TIMEOUT_ENV, "2.5")]).expect("2.5 s").timeout, Duration::from_millis(2500));
        for bad in ["0", "-1", "soon", "inf"] {
            let e = settings(&[(TIMEOUT_ENV, bad)]).expect_err("refused");
            assert!(format!("{e:#}").contains(TIMEOUT_ENV), "{bad}: {e:#}");
        }
    }
}
