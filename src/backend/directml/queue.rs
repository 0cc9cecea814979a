//! Windows: the queue DirectML's work goes through: [`SLOTS`] command lists, each on its own
//! allocator, so that while the device runs one the host records the next; one fence whose
//! values say which submission finished; and bounded waits (`wait.rs` decides what a wait that
//! times out or finds the device removed means).

use anyhow::{bail, Context, Result};
use windows::core::{Interface, PCWSTR};
use windows::Win32::Foundation::{CloseHandle, GetLastError, HANDLE, WAIT_OBJECT_0, WAIT_TIMEOUT};
use windows::Win32::Graphics::Direct3D12::*;
use windows::Win32::System::Threading::{CreateEventW, WaitForSingleObject};
use windows::Win32::AI::MachineLearning::DirectML::*;

/// Command lists the queue keeps: the most chunks in flight ([`super::MAX_IN_FLIGHT`]).
pub(super) const SLOTS: usize = super::MAX_IN_FLIGHT;

/// One command list and its allocator, and the fence value of its submission still in flight
/// (0: none).
struct Recording {
    alloc: ID3D12CommandAllocator,
    list: ID3D12GraphicsCommandList,
    pending: u64,
}

/// What records and submits work: [`SLOTS`] command lists, reused submission after submission.
pub(crate) struct Queue {
    pub queue: ID3D12CommandQueue,
    pub recorder: IDMLCommandRecorder,
    slots: Vec<Recording>,
    fence: ID3D12Fence,
    fence_value: u64,
    event: HANDLE,
    /// Why the queue cannot be used any more: work on it did not finish, so its command lists
    /// and allocators may still be in the GPU's hands.
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
        let direct = D3D12_COMMAND_LIST_TYPE_DIRECT;
        // SAFETY: plain object creation on a live device.
        unsafe {
            let queue: ID3D12CommandQueue = d3d.CreateCommandQueue(&desc).context("CreateCommandQueue failed")?;
            let mut slots = Vec::with_capacity(SLOTS);
            for _ in 0..SLOTS {
                let alloc: ID3D12CommandAllocator =
                    d3d.CreateCommandAllocator(direct).context("CreateCommandAllocator failed")?;
                let list: ID3D12GraphicsCommandList =
                    d3d.CreateCommandList(0, direct, &alloc, None).context("CreateCommandList failed")?;
                slots.push(Recording { alloc, list, pending: 0 });
            }
            let fence: ID3D12Fence = d3d.CreateFence(0, D3D12_FENCE_FLAG_NONE).context("CreateFence failed")?;
            let event = CreateEventW(None, false, false, PCWSTR::null()).context("CreateEventW failed")?;
            let recorder: IDMLCommandRecorder = dml.CreateCommandRecorder().context("CreateCommandRecorder failed")?;
            Ok(Queue { queue, recorder, slots, fence, fence_value: 0, event, lost: None, info })
        }
    }

    /// Slot `slot`'s command list, open for recording.
    pub(super) fn list(&self, slot: usize) -> &ID3D12GraphicsCommandList {
        &self.slots[slot].list
    }

    /// [`submit`](Self::submit), then [`wait`](Self::wait).
    pub(super) fn execute(
        &mut self,
        slot: usize,
        dev: [&dyn Removed; 2],
        timeout: std::time::Duration,
        what: &str,
    ) -> Result<()> {
        self.submit(slot, what)?;
        self.wait(slot, dev, timeout, what)
    }

    /// Closes slot `slot`'s list and runs it (`what` names the work for an error). Work that
    /// fails before it reaches the GPU leaves the list reset for the next.
    pub(super) fn submit(&mut self, slot: usize, what: &str) -> Result<()> {
        if let Some(why) = &self.lost {
            bail!("{what}: not run, the device's queue was lost earlier ({why})");
        }
        if let Err(e) = self.send(slot) {
            if self.lost.is_none() {
                self.reset(slot).context("resetting the command list after a failed submission")?;
            }
            return Err(e.context(format!("{what} could not be submitted")));
        }
        Ok(())
    }

    /// Waits, up to `timeout`, for slot `slot`'s submission (if any) to finish, and opens its
    /// list again. Work that did not finish leaves the queue lost, every later use an error
    /// with the first one's reason.
    pub(super) fn wait(
        &mut self,
        slot: usize,
        dev: [&dyn Removed; 2],
        timeout: std::time::Duration,
        what: &str,
    ) -> Result<()> {
        if let Some(why) = &self.lost {
            bail!("{what}: not finished, the device's queue was lost earlier ({why})");
        }
        let value = self.slots[slot].pending;
        if value == 0 {
            return Ok(());
        }
        // SAFETY: the fence and event belong to this queue.
        unsafe { self.fence.SetEventOnCompletion(value, self.event) }.context("SetEventOnCompletion failed")?;
        let mut gpu = Waiting { queue: self, dev };
        if let Err(e) = super::wait::finish(&mut gpu, timeout, what) {
            self.lost = Some(format!("{e:#}"));
            return Err(e);
        }
        self.slots[slot].pending = 0;
        if let Some(info) = &self.info {
            super::debug::check(info, what)?;
        }
        self.reset(slot)
    }

    /// Waits, up to `timeout`, for everything submitted, whatever became of it: nothing the
    /// device may still read or write is released before (errors are not reported: this runs
    /// when a run ends early, after the error that ended it).
    pub(super) fn drain(&mut self, dev: [&dyn Removed; 2], timeout: std::time::Duration) {
        for slot in 0..SLOTS {
            if self.slots[slot].pending != 0 && self.lost.is_none() {
                let _ = self.wait(slot, dev, timeout, "finishing the work in flight");
            }
        }
    }

    /// Closes slot `slot`'s list and submits it, with a fence signal after it.
    fn send(&mut self, slot: usize) -> Result<()> {
        let r = &mut self.slots[slot];
        // SAFETY: the list was recorded by this thread (under the mutex); the fence belongs to
        // this queue.
        unsafe {
            r.list.Close().context("ID3D12GraphicsCommandList::Close failed")?;
            let list: ID3D12CommandList = r.list.cast()?;
            self.queue.ExecuteCommandLists(&[Some(list)]);
            self.fence_value += 1;
            if let Err(e) = self.queue.Signal(&self.fence, self.fence_value) {
                // The list is in the device's hands with no fence behind it: nothing can tell
                // when its allocator is free again.
                self.lost = Some(format!("ID3D12CommandQueue::Signal failed: {e}"));
                bail!("ID3D12CommandQueue::Signal failed: {e}");
            }
        }
        r.pending = self.fence_value;
        Ok(())
    }

    /// Opens slot `slot`'s list again for recording, on its reset allocator.
    fn reset(&mut self, slot: usize) -> Result<()> {
        let r = &self.slots[slot];
        // SAFETY: no work recorded with the allocator is in flight (it finished, or never left).
        unsafe {
            r.alloc.Reset().context("ID3D12CommandAllocator::Reset failed")?;
            r.list.Reset(&r.alloc, None).context("ID3D12GraphicsCommandList::Reset failed")?;
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
        let e = unsafe { self.GetDeviceRemovedReason() }.err()?;
        let crumbs = super::dred::breadcrumbs(self).unwrap_or_default();
        Some(format!("Direct3D 12: {e}{}", super::wait::Breadcrumbs::summary(&crumbs)))
    }
}

impl Removed for IDMLDevice {
    fn removed(&self) -> Option<String> {
        // SAFETY: a plain query of a live device.
        unsafe { self.GetDeviceRemovedReason() }.err().map(|e| format!("DirectML: {e}"))
    }
}

/// A submission of the queue, as [`super::wait::finish`] waits for it (the fence's event is set
/// for its value).
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
