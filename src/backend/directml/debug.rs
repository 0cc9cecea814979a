//! Windows: `TENSOROP_DIRECTML_DEBUG=1`, the D3D12 debug layer and (where `DirectML.Debug.dll`
//! is installed beside `DirectML.dll`) DirectML's debug device, with every error the debug
//! layer reports failing the run (`docs/backends.md`, "Debugging").

use anyhow::{anyhow, bail, Result};
use std::ffi::c_void;
use std::path::Path;
use windows::core::{Interface, GUID, HRESULT, PCSTR};
use windows::Win32::Foundation::HMODULE;
use windows::Win32::Graphics::Direct3D12::*;
use windows::Win32::System::LibraryLoader::GetProcAddress;

type GetDebugInterface = unsafe extern "system" fn(*const GUID, *mut *mut c_void) -> HRESULT;

/// Turns the D3D12 debug layer on (before any device is created), through `D3D12GetDebugInterface`
/// of the `d3d12.dll` loaded; an error where it is not installed.
pub(super) fn enable_layer(d3d12: HMODULE) -> Result<()> {
    // SAFETY: a NUL-terminated name; the pointer is the documented function or none.
    let f = unsafe { GetProcAddress(d3d12, PCSTR(b"D3D12GetDebugInterface\0".as_ptr())) }
        .ok_or_else(|| anyhow!("d3d12.dll has no D3D12GetDebugInterface"))?;
    // SAFETY: the documented signature of D3D12GetDebugInterface.
    let get: GetDebugInterface = unsafe { std::mem::transmute(f) };
    let mut raw = std::ptr::null_mut();
    // SAFETY: on success `raw` holds a new ID3D12Debug reference.
    unsafe {
        get(&ID3D12Debug::IID, &mut raw).ok().map_err(|e| {
            anyhow!(
                "{}=1: the Direct3D 12 debug layer is not available here (D3D12GetDebugInterface: {e}); on \
                 Windows it comes with the Graphics Tools optional feature",
                super::DEBUG_ENV
            )
        })?;
        ID3D12Debug::from_raw(raw).EnableDebugLayer();
    }
    Ok(())
}

/// Whether DirectML's debug device can be created with the DLL at `dll`: it needs
/// `DirectML.Debug.dll` beside it.
pub(super) fn directml_debug_installed(dll: &Path) -> bool {
    dll.with_file_name("DirectML.Debug.dll").is_file()
}

/// The debug layer's message queue of `d3d`.
pub(super) fn info_queue(d3d: &ID3D12Device) -> Result<ID3D12InfoQueue> {
    d3d.cast().map_err(|e| anyhow!("{}=1: the device has no debug message queue ({e})", super::DEBUG_ENV))
}

/// Fails with every message of severity error or corruption the debug layer stored since the
/// last call (they are cleared), naming `what` was running.
pub(super) fn check(info: &ID3D12InfoQueue, what: &str) -> Result<()> {
    let mut errors = Vec::new();
    // SAFETY: each message is read into a buffer of the size the queue asks for, aligned for
    // D3D12_MESSAGE, and its description lies inside that buffer.
    unsafe {
        for i in 0..info.GetNumStoredMessages() {
            let mut len = 0usize;
            if info.GetMessage(i, None, &mut len).is_err() || len < std::mem::size_of::<D3D12_MESSAGE>() {
                continue;
            }
            let mut buf = vec![0u64; len.div_ceil(8)];
            let m = buf.as_mut_ptr() as *mut D3D12_MESSAGE;
            if info.GetMessage(i, Some(m), &mut len).is_err() {
                continue;
            }
            let m = &*m;
            if m.Severity == D3D12_MESSAGE_SEVERITY_ERROR || m.Severity == D3D12_MESSAGE_SEVERITY_CORRUPTION {
                let text = std::slice::from_raw_parts(m.pDescription, m.DescriptionByteLength.saturating_sub(1));
                errors.push(format!("{} ({:?})", String::from_utf8_lossy(text), m.ID));
            }
        }
        info.ClearStoredMessages();
    }
    if !errors.is_empty() {
        bail!("{what}: the Direct3D 12 debug layer reported {} error(s): {}", errors.len(), errors.join("; "));
    }
    Ok(())
}
