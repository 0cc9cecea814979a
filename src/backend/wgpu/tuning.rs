//! The wgpu backend's settings from the environment (`TENSOROP_WGPU_*`: the API to use, and the
//! switches tests use to reach every path on small inputs; see `docs/backends.md`), read and
//! parsed in one place, once, before any work. Nothing else reads these variables.

use crate::plan::RESIDENT_BYTES;
use anyhow::{bail, Result};

/// Selects the wgpu API: `vulkan`, `metal`, `dx12` or `gl`.
const BACKEND_ENV: &str = "TENSOROP_WGPU_BACKEND";
/// `1`: ignore the adapter's optional shader features, as on a device that has none, and take
/// the float32 path of devices that flush subnormals, flushing them as such a device does: tests
/// use it to reach every emulated path.
const EMULATE_ENV: &str = "TENSOROP_WGPU_EMULATE";
/// `1`: take the 64-bit offset path of outputs of 2^32 elements or more on any output.
const WIDE_ENV: &str = "TENSOROP_WGPU_WIDE";
/// Bytes: the largest output chunk per dispatch (default [`MAX_CHUNK_BYTES`]).
const CHUNK_ENV: &str = "TENSOROP_WGPU_CHUNK_BYTES";
/// Bytes: broadcast inputs up to this size are uploaded once, larger ones stream in windows
/// (default [`RESIDENT_BYTES`]).
const RESIDENT_ENV: &str = "TENSOROP_WGPU_RESIDENT_BYTES";

/// Workgroups: the most per dispatch dimension (default, and at most, the device's limit), so
/// that small tests reach the two-dimensional dispatch of large chunks.
const GROUPS_ENV: &str = "TENSOROP_WGPU_MAX_GROUPS";

/// Largest chunk of output per dispatch, whatever the device allows: bounds host memory.
const MAX_CHUNK_BYTES: u64 = 4 << 20;

/// How the wgpu backend is set up and chunks its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgpuTuning {
    /// The API adapters are requested from.
    pub(super) api: wgpu::Backends,
    /// Use no optional shader feature.
    pub(super) emulate: bool,
    /// Force the 64-bit offset path.
    pub(super) wide: bool,
    pub(crate) chunk_bytes: u64,
    pub(super) resident_bytes: u64,
    /// Cap on workgroups per dispatch dimension.
    pub(super) max_groups: u32,
}

impl Default for WgpuTuning {
    /// The platform's own API, the adapter's features, the default sizes.
    fn default() -> Self {
        WgpuTuning {
            api: platform_api(),
            emulate: false,
            wide: false,
            chunk_bytes: MAX_CHUNK_BYTES,
            resident_bytes: RESIDENT_BYTES,
            max_groups: u32::MAX,
        }
    }
}

impl WgpuTuning {
    /// From the process environment.
    pub(crate) fn from_env() -> Result<WgpuTuning> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// From `get` (a variable's value, or `None` when unset). A value that means nothing is an
    /// error naming the variable and what it accepts; unset and empty mean the default.
    pub(crate) fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<WgpuTuning> {
        let value = |name: &str| get(name).filter(|v| !v.is_empty());
        let d = WgpuTuning::default();
        let api = match value(BACKEND_ENV).as_deref() {
            None => d.api,
            Some("vulkan") => wgpu::Backends::VULKAN,
            Some("metal") => wgpu::Backends::METAL,
            Some("dx12") => wgpu::Backends::DX12,
            Some("gl") => wgpu::Backends::GL,
            Some(other) => bail!("{BACKEND_ENV}={other} is not an API wgpu offers here; use vulkan, metal, dx12 or gl"),
        };
        let switch = |name: &str| match value(name).as_deref() {
            None | Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(other) => bail!("{name}={other}: use 1 (on) or 0 (off)"),
        };
        let bytes = |name: &str, default: u64| match value(name) {
            None => Ok(default),
            Some(v) => match v.parse::<u64>() {
                Ok(n) => Ok(n),
                Err(_) => bail!("{name}={v} is not a byte count; give a whole number such as 65536"),
            },
        };
        let groups = match value(GROUPS_ENV) {
            None => d.max_groups,
            Some(v) => match v.parse::<u32>() {
                Ok(n) if n > 0 => n,
                _ => bail!("{GROUPS_ENV}={v} is not a workgroup count; give a whole number from 1 to 4294967295"),
            },
        };
        Ok(WgpuTuning {
            api,
            emulate: switch(EMULATE_ENV)?,
            wide: switch(WIDE_ENV)?,
            chunk_bytes: bytes(CHUNK_ENV, d.chunk_bytes)?,
            resident_bytes: bytes(RESIDENT_ENV, d.resident_bytes)?,
            max_groups: groups,
        })
    }
}

/// Metal on Apple systems, DX12 on Windows, Vulkan elsewhere.
fn platform_api() -> wgpu::Backends {
    if cfg!(any(target_os = "macos", target_os = "ios")) {
        wgpu::Backends::METAL
    } else if cfg!(windows) {
        // DX12 first, the API DirectML runs on; Vulkan where DX12 has no adapter.
        wgpu::Backends::DX12 | wgpu::Backends::VULKAN
    } else {
        wgpu::Backends::VULKAN
    }
}

#[cfg(test)]
mod tests {
    use super::{WgpuTuning, BACKEND_ENV, CHUNK_ENV, EMULATE_ENV, GROUPS_ENV, RESIDENT_ENV, WIDE_ENV};
    use anyhow::Result;

    fn with(vars: &[(&str, &str)]) -> Result<WgpuTuning> {
        WgpuTuning::from_lookup(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn unset_and_empty_mean_the_defaults() {
        assert_eq!(with(&[]).unwrap(), WgpuTuning::default());
        assert_eq!(with(&[(EMULATE_ENV, ""), (CHUNK_ENV, "")]).unwrap(), WgpuTuning::default());
    }

    #[test]
    fn every_variable_is_parsed_the_same_way() {
        let t = with(&[
            (BACKEND_ENV, "gl"),
            (EMULATE_ENV, "1"),
            (WIDE_ENV, "0"),
            (CHUNK_ENV, "16"),
            (RESIDENT_ENV, "0"),
            (GROUPS_ENV, "3"),
        ])
        .unwrap();
        assert_eq!(t.api, wgpu::Backends::GL);
        assert!(t.emulate && !t.wide);
        assert_eq!((t.chunk_bytes, t.resident_bytes, t.max_groups), (16, 0, 3));
    }

    #[test]
    fn values_that_mean_nothing_name_the_variable() {
        for (var, v, says) in [
            (BACKEND_ENV, "nonsense", "vulkan, metal"),
            (EMULATE_ENV, "yes", "use 1 (on) or 0 (off)"),
            (WIDE_ENV, "true", "use 1"),
            (CHUNK_ENV, "4MiB", "byte count"),
            (RESIDENT_ENV, "-1", "byte count"),
            (GROUPS_ENV, "0", "workgroup count"),
        ] {
            let msg = with(&[(var, v)]).unwrap_err().to_string();
            assert!(msg.contains(&format!("{var}={v}")) && msg.contains(says), "{msg}");
        }
    }
}
