//! Windows: the GPU's own clock on a run's command lists, by timestamp queries: each list
//! records four timestamps (its start, the operator's dispatch start and end, its end), resolved
//! into a persistently mapped read-back buffer, so the report can put DirectML's execution time
//! (`timings_ms.dispatch`) and the device's busy time (`timings_ms.device`) beside the wall time
//! (`docs/report.md`, "Timings").

use anyhow::{anyhow, Context, Result};
use std::time::Duration;
use windows::Win32::Graphics::Direct3D12::*;

/// Where in a list a timestamp is taken.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mark {
    ListStart = 0,
    DispatchStart = 1,
    DispatchEnd = 2,
    ListEnd = 3,
}

const MARKS: u32 = 4;

/// Timestamp queries for `slots` command lists in flight.
pub(super) struct Stamps {
    heap: ID3D12QueryHeap,
    readback: ID3D12Resource,
    ticks: *const u64,
    frequency: u64,
}

/// The GPU time of one list: all of it, and the operator's dispatch.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct GpuTime {
    pub list: Duration,
    pub dispatch: Duration,
}

impl Stamps {
    /// Queries for `slots` lists on `queue`, or an error where the device has none (the run
    /// then goes on without GPU times).
    pub(super) fn new(d3d: &ID3D12Device, queue: &ID3D12CommandQueue, slots: u32) -> Result<Stamps> {
        let count = slots * MARKS;
        let desc = D3D12_QUERY_HEAP_DESC { Type: D3D12_QUERY_HEAP_TYPE_TIMESTAMP, Count: count, NodeMask: 0 };
        // SAFETY: plain object creation and a query of live objects; the read-back buffer is
        // mapped for as long as `Stamps` holds it (it is never unmapped: released with it).
        unsafe {
            let frequency = queue.GetTimestampFrequency().context("GetTimestampFrequency failed")?;
            let mut heap: Option<ID3D12QueryHeap> = None;
            d3d.CreateQueryHeap(&desc, &mut heap).context("CreateQueryHeap failed")?;
            let heap = heap.ok_or_else(|| anyhow!("CreateQueryHeap returned nothing"))?;
            let bytes = u64::from(count) * 8;
            let readback =
                super::resource::buffer(d3d, D3D12_HEAP_TYPE_READBACK, bytes, D3D12_RESOURCE_STATE_COPY_DEST)?;
            let mut p = std::ptr::null_mut();
            readback.Map(0, None, Some(&mut p)).context("cannot map the timestamp buffer")?;
            Ok(Stamps { heap, readback, ticks: p as *const u64, frequency: frequency.max(1) })
        }
    }

    /// Records timestamp `mark` of slot `slot` in `list`.
    pub(super) fn mark(&self, list: &ID3D12GraphicsCommandList, slot: usize, mark: Mark) {
        // SAFETY: the index is within the heap (`slot` below the slots it was made for).
        unsafe { list.EndQuery(&self.heap, D3D12_QUERY_TYPE_TIMESTAMP, slot as u32 * MARKS + mark as u32) };
    }

    /// Records the copy of slot `slot`'s timestamps into the read-back buffer (after the last
    /// mark of the list).
    pub(super) fn resolve(&self, list: &ID3D12GraphicsCommandList, slot: usize) {
        let first = slot as u32 * MARKS;
        // SAFETY: the range is within the heap and the buffer (`MARKS` per slot, 8 bytes each).
        unsafe {
            list.ResolveQueryData(
                &self.heap,
                D3D12_QUERY_TYPE_TIMESTAMP,
                first,
                MARKS,
                &self.readback,
                u64::from(first) * 8,
            )
        };
    }

    /// Slot `slot`'s times, read once its list finished.
    pub(super) fn read(&self, slot: usize) -> GpuTime {
        // SAFETY: the buffer holds `MARKS` ticks per slot and stays mapped; the list that wrote
        // them has finished (the caller waited for its fence).
        let t = |m: Mark| unsafe { std::ptr::read_volatile(self.ticks.add(slot * MARKS as usize + m as usize)) };
        let span = |a: u64, b: u64| Duration::from_secs_f64(b.saturating_sub(a) as f64 / self.frequency as f64);
        GpuTime {
            list: span(t(Mark::ListStart), t(Mark::ListEnd)),
            dispatch: span(t(Mark::DispatchStart), t(Mark::DispatchEnd)),
        }
    }
}
