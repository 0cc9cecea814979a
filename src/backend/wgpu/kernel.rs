//! Compiled kernels and their per-chunk buffers. A [`KernelDescriptor`] names the WGSL and the
//! sizes of the buffers; a [`Kernel`] holds the pipeline and its slots (each a uniform block,
//! the per-chunk input buffers, an output and a staging buffer), submits one chunk and collects
//! its result, adding each stage's time to a [`ChunkTiming`].

use super::device::{pad4, Gpu};
use super::shader::{Params, WORKGROUP};
use anyhow::Result;
use std::time::{Duration, Instant};

/// The time the chunks spent in each stage (upload, compute, download, write), summed over a run.
#[derive(Default)]
pub(super) struct ChunkTiming {
    pub(super) upload: Duration,
    pub(super) compute: Duration,
    pub(super) download: Duration,
    pub(super) write: Duration,
}

/// One set of per-chunk buffers. Two slots let chunk k+1 be read and uploaded while chunk k is
/// computed and downloaded.
struct Slot {
    params: wgpu::Buffer,
    /// Per-chunk input buffers (`None` where the input is resident).
    inputs: [Option<wgpu::Buffer>; 2],
    out: wgpu::Buffer,
    staging: wgpu::Buffer,
    bind: wgpu::BindGroup,
}

impl Slot {
    /// The buffers of one slot for the kernel `desc`, bound as `layout` (`wgsl/params.wgsl`)
    /// lays them out.
    fn new(gpu: &Gpu, layout: &wgpu::BindGroupLayout, desc: &KernelDescriptor) -> Slot {
        use wgpu::BufferUsages as U;
        let params = gpu.buffer("params", std::mem::size_of::<Params>() as u64, U::UNIFORM | U::COPY_DST);
        let inputs = [0, 1].map(|i| {
            desc.resident[i].is_none().then(|| gpu.buffer("input", desc.chunk_bytes[i], U::STORAGE | U::COPY_DST))
        });
        let out = gpu.buffer("out", desc.out_bytes, U::STORAGE | U::COPY_SRC);
        let staging = gpu.buffer("staging", desc.out_bytes, U::MAP_READ | U::COPY_DST);
        let input = |i: usize| desc.resident[i].or(inputs[i].as_ref()).map(|b| b.as_entire_binding());
        let (Some(a), Some(b)) = (input(0), input(1)) else { unreachable!("every input has a buffer") };
        let bind = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("tensorop"),
            layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: a },
                wgpu::BindGroupEntry { binding: 2, resource: b },
                wgpu::BindGroupEntry { binding: 3, resource: out.as_entire_binding() },
            ],
        });
        Slot { params, inputs, out, staging, bind }
    }
}

/// What [`Kernel::new`] builds: the WGSL, how its offsets divide, and the buffers of its inputs
/// and output.
pub(super) struct KernelDescriptor<'a> {
    /// The WGSL, with the bindings of `wgsl/params.wgsl` and the entry point `main`: an
    /// operator's kernel from [`shader::source`](super::shader::source), or a test's.
    pub(super) source: String,
    /// Output elements each invocation computes
    /// ([`shader::elements_per_invocation`](super::shader::elements_per_invocation)): the
    /// dispatch has one invocation per this many elements of a chunk.
    pub(super) elements_per_invocation: u32,
    /// Whether `divmod` divides in f32 (the pipeline constant `FLOAT_DIVISION`), which every
    /// dimension it divides by must allow
    /// ([`Layout::float_division`](super::Layout::float_division)).
    pub(super) float_division: bool,
    /// Per input, the buffer holding it whole for the run, or `None` where it is uploaded chunk
    /// by chunk into buffers of the slots.
    pub(super) resident: [Option<&'a wgpu::Buffer>; 2],
    /// Per input uploaded chunk by chunk, the bytes of its buffer in each slot (the most one
    /// chunk uploads); ignored for a resident input.
    pub(super) chunk_bytes: [u64; 2],
    /// The bytes of each slot's output and staging buffers (the most one chunk computes).
    pub(super) out_bytes: u64,
    /// Sets of per-chunk buffers: two let one chunk be uploaded and downloaded while the other
    /// is computed; one serves a single dispatch.
    pub(super) slots: usize,
}

/// A compiled kernel with its buffers.
pub(super) struct Kernel {
    pipeline: wgpu::ComputePipeline,
    slots: Vec<Slot>,
    per: u32,
}

impl Kernel {
    /// Compiles `desc.source` and creates the buffers of its slots.
    pub(super) fn new(gpu: &Gpu, desc: &KernelDescriptor) -> Kernel {
        let constants = [("FLOAT_DIVISION", f64::from(u8::from(desc.float_division)))];
        let pipeline = gpu.compute_pipeline("tensorop kernel", desc.source.as_str().into(), &constants);
        let layout = pipeline.get_bind_group_layout(0);
        let slots = (0..desc.slots).map(|_| Slot::new(gpu, &layout, desc)).collect();
        Kernel { pipeline, slots, per: desc.elements_per_invocation }
    }

    /// Uploads `params` and the per-chunk `data` into `slot`, then queues the computation of
    /// `params.n` elements and the copy of their `out_len` bytes into the slot's staging buffer.
    pub(super) fn submit(
        &self,
        gpu: &Gpu,
        slot: usize,
        params: &Params,
        data: [Option<&[u8]>; 2],
        out_len: u64,
        timing: &mut ChunkTiming,
    ) -> wgpu::SubmissionIndex {
        let s = &self.slots[slot];
        let t = Instant::now();
        gpu.queue.write_buffer(&s.params, 0, bytemuck::bytes_of(params));
        for (data, buf) in data.iter().zip(&s.inputs) {
            if let (Some(data), Some(buf)) = (data, buf) {
                gpu.write_padded(buf, data);
            }
        }

        timing.upload += t.elapsed();

        let t = Instant::now();
        let invocations = params.n.div_ceil(self.per);
        let groups = invocations.div_ceil(WORKGROUP).max(1);
        let max = gpu.groups_per_dimension();
        let (x, y) = if groups <= max { (groups, 1) } else { (max, groups.div_ceil(max)) };
        let mut enc = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("tensorop") });
        {
            let mut pass = enc
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("tensorop"), timestamp_writes: None });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &s.bind, &[]);
            pass.dispatch_workgroups(x, y, 1);
        }
        enc.copy_buffer_to_buffer(&s.out, 0, &s.staging, 0, pad4(out_len));
        // Some drivers (lavapipe) execute work inside submit: count it as compute time.
        let idx = gpu.queue.submit([enc.finish()]);
        timing.compute += t.elapsed();
        idx
    }

    /// Waits for `slot`'s submission `idx` and hands its `out_len` result bytes to `write`.
    pub(super) fn collect(
        &self,
        gpu: &Gpu,
        slot: usize,
        idx: wgpu::SubmissionIndex,
        out_len: u64,
        timing: &mut ChunkTiming,
        write: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let t = Instant::now();
        let (mut waited, mut wrote) = (Duration::ZERO, Duration::ZERO);
        gpu.with_mapped(&self.slots[slot].staging, out_len, idx, &mut |bytes| {
            waited = t.elapsed();
            let t = Instant::now();
            let r = write(bytes);
            wrote = t.elapsed();
            r
        })?;
        timing.compute += waited;
        timing.write += wrote;
        timing.download += t.elapsed().saturating_sub(waited + wrote);
        Ok(())
    }
}
