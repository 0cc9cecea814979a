//! Windows: a job's chunks streamed through DirectML, up to three in flight: while the
//! device copies, computes and reads back one chunk, the host reads the next chunk's input
//! windows straight into a persistently mapped upload buffer, and hands the finished chunk on
//! straight from a persistently mapped read-back buffer. Each slot has its own upload, device
//! and read-back buffers and its own binding tables, so nothing the device may still use is
//! touched; the host waits for a slot's fence only when it needs that slot again
//! (`docs/backends.md`, "directml").

use super::chunks::Chunk;
use super::device::Device;
use super::operator::{Compiled, Shapes};
use super::queue::Queue;
use super::resource::{buffer, transition};
use super::stamps::{GpuTime, Mark, Stamps};
use anyhow::{anyhow, Context, Result};
use std::collections::HashMap;
use std::sync::MutexGuard;
use windows::Win32::Graphics::Direct3D12::*;

/// Bytes from the start of the upload buffer to the second input's window: the first's,
/// rounded up to the 256-byte placement copies like.
fn second_at(first: u64) -> u64 {
    first.div_ceil(256) * 256
}

/// A buffer on an upload or read-back heap, mapped for the host for as long as it lives.
struct Mapped {
    res: ID3D12Resource,
    ptr: *mut u8,
    len: usize,
}

impl Mapped {
    fn new(d3d: &ID3D12Device, heap: D3D12_HEAP_TYPE, len: u64, state: D3D12_RESOURCE_STATES) -> Result<Mapped> {
        let res = buffer(d3d, heap, len, state)?;
        let mut p = std::ptr::null_mut();
        // SAFETY: an upload or read-back buffer may stay mapped while the device uses it; the
        // host touches only the parts no submission in flight uses (`Stream`).
        unsafe { res.Map(0, None, Some(&mut p)) }.context("cannot map a staging buffer")?;
        let len =
            usize::try_from(len).map_err(|_| anyhow!("a staging buffer of {len} bytes does not fit in memory"))?;
        Ok(Mapped { res, ptr: p as *mut u8, len })
    }
}

/// One chunk's worth of everything: staging and device buffers, and the chunk in flight.
struct Slot {
    upload: Mapped,
    readback: Mapped,
    inputs: [ID3D12Resource; 2],
    output: ID3D12Resource,
    /// The chunk submitted from this slot and not yet handed on.
    chunk: Option<Chunk>,
}

/// A finished chunk: which one, and the device's time on it.
pub(super) struct Finished {
    pub chunk: Chunk,
    pub gpu: GpuTime,
}

/// The stream of one job: its compiled operators (one per chunk shape), its slots and the
/// queue, held for the run.
pub(super) struct Stream<'d> {
    dev: &'d Device,
    q: MutexGuard<'d, Queue>,
    compiled: HashMap<Vec<u64>, Compiled>,
    slots: Vec<Slot>,
    stamps: Option<Stamps>,
    es: u64,
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        // A run that ends early (an error) may leave chunks in flight: the buffers they use are
        // released only after them.
        let dev = self.dev;
        self.q.drain([&dev.d3d, &dev.dml], dev.timeout);
    }
}

impl<'d> Stream<'d> {
    /// Compiles the operator for every chunk shape of `chunks` and makes slots large enough
    /// for the largest chunk.
    pub(super) fn new(dev: &'d Device, shapes: &Shapes, chunks: &[Chunk], in_flight: usize) -> Result<Stream<'d>> {
        let mut q = dev.queue.lock().map_err(|_| anyhow!("internal error: the DirectML queue was poisoned"))?;
        let es = shapes.dtype.size() as u64;
        let mut compiled = HashMap::new();
        for c in chunks {
            if !compiled.contains_key(&c.sizes) {
                compiled.insert(c.sizes.clone(), Compiled::new(dev, &mut q, shapes, &c.sizes, in_flight)?);
            }
        }
        let most = |f: &dyn Fn(&Compiled) -> u64| compiled.values().map(f).max().unwrap_or(0);
        let bytes = [most(&|c| c.bytes[0]), most(&|c| c.bytes[1]), most(&|c| c.bytes[2])];
        let windows = [0, 1].map(|i| chunks.iter().map(|c| c.span[i] * es).max().unwrap_or(0));
        let d3d = &dev.d3d;
        let (common, dst, read) =
            (D3D12_RESOURCE_STATE_COMMON, D3D12_RESOURCE_STATE_COPY_DEST, D3D12_RESOURCE_STATE_GENERIC_READ);
        let mut slots = Vec::with_capacity(in_flight);
        for _ in 0..in_flight {
            let default = |n: u64| buffer(d3d, D3D12_HEAP_TYPE_DEFAULT, n, common);
            slots.push(Slot {
                upload: Mapped::new(d3d, D3D12_HEAP_TYPE_UPLOAD, second_at(windows[0]) + windows[1], read)?,
                readback: Mapped::new(d3d, D3D12_HEAP_TYPE_READBACK, bytes[2], dst)?,
                inputs: [default(bytes[0])?, default(bytes[1])?],
                output: default(bytes[2])?,
                chunk: None,
            });
        }
        let stamps = Stamps::new(d3d, &q.queue, in_flight as u32).ok();
        Ok(Stream { dev, q, compiled, slots, stamps, es })
    }

    /// The slots: chunks in flight at most.
    pub(super) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Waits for the chunk in flight in slot `slot`, if any, and returns it; its output is
    /// then [`output`](Self::output).
    pub(super) fn finish(&mut self, slot: usize) -> Result<Option<Finished>> {
        let Some(chunk) = self.slots[slot].chunk.take() else { return Ok(None) };
        let dev = self.dev;
        self.q.wait(slot, [&dev.d3d, &dev.dml], dev.timeout, &dispatch_of(&chunk))?;
        let gpu = self.stamps.as_ref().map(|s| s.read(slot)).unwrap_or_default();
        Ok(Some(Finished { chunk, gpu }))
    }

    /// The output of chunk `c`, finished in slot `slot`.
    pub(super) fn output(&self, slot: usize, c: &Chunk) -> &[u8] {
        let r = &self.slots[slot].readback;
        let n = ((c.count * self.es) as usize).min(r.len);
        // SAFETY: the buffer is mapped and `n` bytes long at least; the chunk's copy into it
        // finished (`finish`) and nothing is submitted from this slot while the slice lives.
        unsafe { std::slice::from_raw_parts(r.ptr, n) }
    }

    /// Where chunk `c`'s input windows go, in slot `slot`'s upload buffer (the slot holds no
    /// chunk in flight).
    pub(super) fn windows(&mut self, slot: usize, c: &Chunk) -> Result<[&mut [u8]; 2]> {
        let u = &mut self.slots[slot].upload;
        let lens = [c.span[0] * self.es, c.span[1] * self.es];
        let at = second_at(lens[0]);
        if at + lens[1] > u.len as u64 {
            return Err(anyhow!("internal error: chunk windows of {lens:?} bytes exceed the upload buffer"));
        }
        // SAFETY: the two ranges are disjoint and within the mapped buffer; no submission in
        // flight reads this slot's upload buffer (its chunk was finished).
        unsafe {
            Ok([
                std::slice::from_raw_parts_mut(u.ptr, lens[0] as usize),
                std::slice::from_raw_parts_mut(u.ptr.add(at as usize), lens[1] as usize),
            ])
        }
    }

    /// Records and submits chunk `c` from slot `slot`, its windows written
    /// ([`windows`](Self::windows)): the copies into the device's buffers, the dispatch and the
    /// copy of its output into the read-back buffer.
    pub(super) fn submit(&mut self, slot: usize, c: Chunk) -> Result<()> {
        let cmp =
            self.compiled.get(&c.sizes).ok_or_else(|| anyhow!("internal error: no operator for {:?}", c.sizes))?;
        let s = &self.slots[slot];
        let list = self.q.list(slot);
        let (common, uav, dst, src) = (
            D3D12_RESOURCE_STATE_COMMON,
            D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
            D3D12_RESOURCE_STATE_COPY_DEST,
            D3D12_RESOURCE_STATE_COPY_SOURCE,
        );
        let lens = [c.span[0] * self.es, c.span[1] * self.es];
        let mark = |m: Mark| {
            if let Some(st) = &self.stamps {
                st.mark(list, slot, m);
            }
        };
        mark(Mark::ListStart);
        // SAFETY: every resource recorded belongs to the slot or the operator, which the stream
        // holds until the slot's submission finished (`finish`, `drop`).
        unsafe {
            for (i, r) in s.inputs.iter().enumerate() {
                transition(list, r, common, dst);
                list.CopyBufferRegion(r, 0, &s.upload.res, [0, second_at(lens[0])][i], lens[i]);
                transition(list, r, dst, uav);
            }
            transition(list, &s.output, common, uav);
            cmp.record(&self.q, slot, &s.inputs, &s.output, &mark)?;
            transition(list, &s.output, uav, src);
            list.CopyBufferRegion(&s.readback.res, 0, &s.output, 0, c.count * self.es);
        }
        mark(Mark::ListEnd);
        if let Some(st) = &self.stamps {
            st.resolve(list, slot);
        }
        self.q.submit(slot, &dispatch_of(&c))?;
        self.slots[slot].chunk = Some(c);
        Ok(())
    }
}

/// `the DirectML dispatch of output elements 0 to 4194303`: a chunk, for errors.
fn dispatch_of(c: &Chunk) -> String {
    format!("the DirectML dispatch of output elements {} to {}", c.start, c.start + c.count.saturating_sub(1))
}
