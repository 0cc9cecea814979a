//! The directml backend (Windows only): runs a job on DirectML through Direct3D 12, with
//! exactly the `dml` descriptors tensorop reports, chunk by chunk along the output's outer
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
mod device;
#[cfg(windows)]
mod operator;
pub mod verify;

use super::{Job, Ran};
use crate::op::Float16Rule;
use crate::spec::level::FeatureLevel;
use anyhow::{bail, Result};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// A `DirectML.dll` to load instead of the one beside `tensorop.exe` or the system's.
pub const DLL_ENV: &str = "TENSOROP_DIRECTML_DLL";
/// The DXGI adapter to run on, by its index in `tensorop devices`.
pub const ADAPTER_ENV: &str = "TENSOROP_DIRECTML_ADAPTER";
/// Bytes: the largest output chunk per dispatch (tests use small values to reach many chunks).
pub const CHUNK_ENV: &str = "TENSOROP_DIRECTML_CHUNK_BYTES";
/// Largest output chunk per dispatch by default: bounds host and staging memory.
const MAX_CHUNK_BYTES: u64 = 16 << 20;

/// How the directml backend is set up: the level (`--feature-level`, the minimum
/// `DMLCreateDevice1` is asked for), the DLL, the adapter, the chunk size and `--verify`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub level: FeatureLevel,
    pub dll: Option<PathBuf>,
    pub adapter: Option<u32>,
    pub chunk_bytes: u64,
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
        Ok(Settings { level, dll: value(DLL_ENV).map(PathBuf::from), adapter, chunk_bytes, verify, float16: None })
    }

    /// Settings for listing devices: no level asked for.
    pub fn listing(get: &dyn Fn(&str) -> Option<String>) -> Result<Settings> {
        Settings::from_lookup(FeatureLevel::new(1, 0), false, get)
    }
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
    /// The level the DirectML device was created with (`--feature-level`).
    pub feature_level: String,
    /// The highest level the DLL and driver report.
    pub max_feature_level: String,
    /// How this release stores float16 on a device without native 16-bit arithmetic
    /// (`Float16Rule::of_directml` of its version): `--verify`'s reference unless a flag names
    /// another rule.
    pub float16_rule: &'static str,
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

    pub fn report(&self) -> DeviceReport {
        #[cfg(windows)]
        {
            self.device.report()
        }
        #[cfg(not(windows))]
        {
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

/// The float16 rule of the DirectML release of file version `version`; the newest releases'
/// where the version cannot be read.
pub fn release_rule(version: &str) -> Float16Rule {
    Float16Rule::of_directml(version).unwrap_or(Float16Rule::TowardZeroInf)
}

/// `tensorop devices`: the DirectML adapters (Windows), or why there are none.
pub fn list(get: &dyn Fn(&str) -> Option<String>) -> Result<serde_json::Value> {
    #[cfg(windows)]
    {
        Ok(serde_json::to_value(device::list(&Settings::listing(get)?)?)?)
    }
    #[cfg(not(windows))]
    {
        let _ = get;
        bail!("{}", unavailable().unwrap_or_default())
    }
}

#[cfg(windows)]
mod run;
