//! Windows: Device Removed Extended Data (DRED), where the system has it: automatic
//! breadcrumbs turned on before any device is created, and read when a device is lost, so the
//! error says how far the device got in each command list still in flight (`docs/backends.md`,
//! "Timeouts and lost devices").

use super::wait::Breadcrumbs;
use std::ffi::c_void;
use windows::core::{Interface, GUID, HRESULT, PCSTR};
use windows::Win32::Foundation::HMODULE;
use windows::Win32::Graphics::Direct3D12::*;
use windows::Win32::System::LibraryLoader::GetProcAddress;

type GetDebugInterface = unsafe extern "system" fn(*const GUID, *mut *mut c_void) -> HRESULT;

/// Turns DRED's automatic breadcrumbs on through `D3D12GetDebugInterface` of the `d3d12.dll`
/// loaded; `false` where the system has no DRED (nothing changes then).
pub(super) fn enable(d3d12: HMODULE) -> bool {
    // SAFETY: a NUL-terminated name; the pointer is the documented function or none.
    let Some(f) = (unsafe { GetProcAddress(d3d12, PCSTR(b"D3D12GetDebugInterface\0".as_ptr())) }) else {
        return false;
    };
    // SAFETY: the documented signature of D3D12GetDebugInterface.
    let get: GetDebugInterface = unsafe { std::mem::transmute(f) };
    let mut raw = std::ptr::null_mut();
    // SAFETY: on success `raw` holds a new reference to the settings interface.
    unsafe {
        if get(&ID3D12DeviceRemovedExtendedDataSettings::IID, &mut raw).is_err() || raw.is_null() {
            return false;
        }
        let settings = ID3D12DeviceRemovedExtendedDataSettings::from_raw(raw);
        settings.SetAutoBreadcrumbsEnablement(D3D12_DRED_ENABLEMENT_FORCED_ON);
    }
    true
}

/// The breadcrumbs of `d3d`'s command lists that did not finish, or `None` where DRED has
/// none.
pub(super) fn breadcrumbs(d3d: &ID3D12Device) -> Option<Vec<Breadcrumbs>> {
    let dred: ID3D12DeviceRemovedExtendedData = d3d.cast().ok()?;
    // SAFETY: the output is valid while the device lives; the nodes form a list ended by null,
    // each with `BreadcrumbCount` operations and a pointer to the count completed.
    unsafe {
        let out = dred.GetAutoBreadcrumbsOutput().ok()?;
        let mut lists = Vec::new();
        let mut node = out.pHeadAutoBreadcrumbNode;
        while !node.is_null() && lists.len() < 64 {
            let n = &*node;
            let done = if n.pLastBreadcrumbValue.is_null() { 0 } else { *n.pLastBreadcrumbValue };
            if done < n.BreadcrumbCount && !n.pCommandHistory.is_null() {
                let ops = std::slice::from_raw_parts(n.pCommandHistory, n.BreadcrumbCount as usize);
                lists.push(Breadcrumbs { done, ops: ops.iter().map(|op| op.0 as u32).collect() });
            }
            node = n.pNext;
        }
        Some(lists)
    }
}
