//! Windows: the queue DirectML's work goes through (one command list, reused dispatch after
//! dispatch), its submission, and its bounded wait (`wait.rs` decides what a wait that times
//! out or finds the device removed means).

use anyhow::{bail, Context, Result};
use windows::core::{Interface, PCWSTR};
use windows::Win32::Foundation::{CloseHandle, GetLastError, HANDLE, WAIT_OBJECT_0, WAIT_TIMEOUT};
use windows::Win32::Graphics::Direct3D12::*;
use windows::Win32::System::Threading::{CreateEventW, WaitForSingleObject};
use windows::Win32::AI::MachineLearning::DirectML::*;

/// What records and submits work: one command list, reused dispatch after dispatch.
pub(crate) struct Queue {
    pub queue: ID3D12CommandQueue,
    pub alloc: ID3D12CommandAllocator,
    pub list: ID3D12GraphicsCommandList,
    pub recorder: IDMLCommandRecorder,
    fence: ID3D12Fence,
    fence_value: u64,
    event: HANDLE,
    /// Why the queue cannot be used any more: work on it did not finish, so its command list
    /// and allocator may still be in the GPU's hands.
    lost: Option<String>,
    /// `TENSOROP_DIRECTML_DEBUG=1`: the debug layer's messages, checked after every execution.
    info: Option<ID3D12InfoQueue>,
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: the event was created by this queue and nothing waits on it any more.
        unsafe {
            let _ = CloseHandle(self.event);
        }
    }
}

impl Queue {
    pub(super) fn new(d3d: &ID3D12Device, dml: &IDMLDevice, info: Option<ID3D12InfoQueue>) -> Result<Queue> {
        let desc = D3D12_COMMAND_QUEUE_DESC { Type: D3D12_COMMAND_LIST_TYPE_DIRECT, ..Default::default() };
        // SAFETY: plain object creation on a live device.
        unsafe {
            let queue: ID3D12CommandQueue = d3d.CreateCommandQueue(&desc).context("CreateCommandQueue failed")?;
            let alloc: ID3D12CommandAllocator =
                d3d.CreateCommandAllocator(D3D12_COMMAND_LIST_TYPE_DIRECT).context("CreateCommandAllocator failed")?;
            let list: ID3D12GraphicsCommandList = d3d
                .CreateCommandList(0, D3D12_COMMAND_LIST_TYPE_DIRECT, &alloc, None)
                .context("CreateCommandList failed")?;
            let fence: ID3D12Fence = d3d.CreateFence(0, D3D12_FENCE_FLAG_NONE).context("CreateFence failed")?;
            let event = CreateEventW(None, false, false, PCWSTR::null()).context("CreateEventW failed")?;
            let recorder: IDMLCommandRecorder = dml.CreateCommandRecorder().context("CreateCommandRecorder failed")?;
            Ok(Queue { queue, alloc, list, recorder, fence, fence_value: 0, event, lost: None, info })
        }
    }

    /// Closes the command list, runs it and waits for it, up to `timeout` (`what` names the
    /// work for the error); the list is then open again. Work that fails before it reaches the
    /// GPU leaves the list reset for the next; work that did not finish leaves the queue lost,
    /// every later use an error with the first one's reason.
    pub(super) fn execute(&mut self, dev: [&dyn Removed; 2], timeout: std::time::Duration, what: &str) -> Result<()> {
        if let Some(why) = &self.lost {
            bail!("{what}: not run, the device's queue was lost earlier ({why})");
        }
        if let Err(e) = self.submit() {
            self.reset().context("resetting the command list after a failed submission")?;
            return Err(e.context(format!("{what} could not be submitted")));
        }
        let mut gpu = Waiting { queue: self, dev };
        if let Err(e) = super::wait::finish(&mut gpu, timeout, what) {
            self.lost = Some(format!("{e:#}"));
            return Err(e);
        }
        if let Some(info) = &self.info {
            super::debug::check(info, what)?;
        }
        self.reset()
    }

    /// Closes the list and submits it, with a fence signal after it.
    fn submit(&mut self) -> Result<()> {
        // SAFETY: the list was recorded by this thread (under the mutex); the fence and event
        // belong to this queue.
        unsafe {
            self.list.Close().context("ID3D12GraphicsCommandList::Close failed")?;
            let list: ID3D12CommandList = self.list.cast()?;
            self.queue.ExecuteCommandLists(&[Some(list)]);
            self.fence_value += 1;
            self.queue.Signal(&self.fence, self.fence_value).context("ID3D12CommandQueue::Signal failed")?;
            self.fence.SetEventOnCompletion(self.fence_value, self.event).context("SetEventOnCompletion failed")?;
        }
        Ok(())
    }

    /// Opens the list again for recording, on a fresh allocator.
    fn reset(&mut self) -> Result<()> {
        // SAFETY: no work recorded with the allocator is in flight (it finished, or never left).
        unsafe {
            self.alloc.Reset().context("ID3D12CommandAllocator::Reset failed")?;
            self.list.Reset(&self.alloc, None).context("ID3D12GraphicsCommandList::Reset failed")?;
        }
        Ok(())
    }
}

/// Says why a device was removed: `ID3D12Device` and `IDMLDevice` alike.
pub(super) trait Removed {
    fn removed(&self) -> Option<String>;
}

impl Removed for ID3D12Device {
    fn removed(&self) -> Option<String> {
        // SAFETY: a plain query of a live device.
        unsafe { self.GetDeviceRemovedReason() }.err().map(|e| format!("Direct3D 12: {e}"))
    }
}

impl Removed for IDMLDevice {
    fn removed(&self) -> Option<String> {
        // SAFETY: a plain query of a live device.
        unsafe { self.GetDeviceRemovedReason() }.err().map(|e| format!("DirectML: {e}"))
    }
}

/// The queue's last submission, as [`super::wait::finish`] waits for it.
struct Waiting<'a> {
    queue: &'a Queue,
    dev: [&'a dyn Removed; 2],
}

impl super::wait::Gpu for Waiting<'_> {
    fn wait(&mut self, timeout: std::time::Duration) -> super::wait::Waited {
        use super::wait::Waited;
        let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX - 1);
        // SAFETY: the event belongs to the queue and lives as long as it.
        match unsafe { WaitForSingleObject(self.queue.event, ms) } {
            WAIT_OBJECT_0 => Waited::Done,
            WAIT_TIMEOUT => Waited::TimedOut,
            // SAFETY: reads the calling thread's last error.
            other => {
                Waited::Failed(format!("WaitForSingleObject gave {:#x} ({:?})", other.0, unsafe { GetLastError() }))
            }
        }
    }

    fn removed(&self) -> Option<String> {
        let reasons: Vec<String> = self.dev.iter().filter_map(|d| d.removed()).collect();
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}
