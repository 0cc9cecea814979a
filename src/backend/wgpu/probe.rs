//! Probes run once on an opened device: whether it flushes float32 subnormals, and whether its
//! float16 conversions round exactly as the CPU's do (else float16 is emulated).

use super::device::Gpu;
use super::kernel::{ChunkTiming, Kernel, KernelDescriptor};
use super::shader::{self, elements_per_invocation, Native, Params, F16_PROBE, WORKGROUP};
use crate::dtype::DType;
use crate::op::{Op, Semantics};
use anyhow::Result;

impl Gpu {
    /// Runs the float32 `sub` kernel on two subnormals (3 - 1 in units of the smallest one); a
    /// device that flushes returns zero instead of 2.
    pub(super) fn probe_subnormals(&self) -> Result<bool> {
        let sem = Semantics::nearest(Op::Sub);
        let a = self.resident_buffer(&3u32.to_le_bytes());
        let b = self.resident_buffer(&1u32.to_le_bytes());
        // The device's own float32 arithmetic, whatever this probe decides.
        let native = Native { f32_subnormals: true, ..Native::default() };
        let kernel = Kernel::new(
            self,
            &KernelDescriptor {
                source: shader::source(DType::F32, sem, native),
                elements_per_invocation: elements_per_invocation(DType::F32, native),
                float_division: true,
                resident: [Some(&a), Some(&b)],
                chunk_bytes: [0, 0],
                out_bytes: 4,
                slots: 1,
            },
        );
        let mut params = Params::zeroed_with(1, 0, &[1], [&[1], &[1]], 0);
        params.rank = 1;
        let mut out = Vec::new();
        let idx = kernel.submit(self, 0, &params, [None, None], 4, &mut ChunkTiming::default());
        kernel.collect(self, 0, idx, 4, &mut ChunkTiming::default(), &mut |bytes| {
            out.extend_from_slice(bytes);
            Ok(())
        })?;
        Ok(out != 2u32.to_le_bytes())
    }

    /// Whether the device converts float32 to float16 (round to nearest even, subnormals kept,
    /// overflow to infinity) and float16 to float32 exactly as the CPU does: every float16 value,
    /// every rounding midpoint between neighbours and the float32 values either side of it.
    pub(super) fn probe_f16(&self) -> Result<bool> {
        use half::f16;
        let mut x: Vec<f32> = Vec::with_capacity(0x7c00 * 8);
        for h in 0..0x7c00u16 {
            let f = f16::from_bits(h).to_f32();
            let ulp = if h + 1 < 0x7c00 { f16::from_bits(h + 1).to_f32() - f } else { 32.0 };
            let mid = f + ulp / 2.0;
            // mid > 0, so its neighbours are one bit pattern away.
            let (below, above) = (f32::from_bits(mid.to_bits() - 1), f32::from_bits(mid.to_bits() + 1));
            for v in [f, mid, below, above] {
                x.extend([v, -v]);
            }
        }
        let halves: Vec<u16> = (0..=u16::MAX).collect();
        let d = &self.device;
        let pipeline = self.compute_pipeline("tensorop f16 probe", F16_PROBE.text(), &[]);
        use wgpu::BufferUsages as U;
        let xb = self.resident_buffer(bytemuck::cast_slice(&x));
        let hb = self.resident_buffer(bytemuck::cast_slice(&halves));
        let (ylen, zlen) = (x.len() as u64 * 2, halves.len() as u64 * 4);
        let yb = self.buffer("y", ylen, U::STORAGE | U::COPY_SRC);
        let zb = self.buffer("z", zlen, U::STORAGE | U::COPY_SRC);
        let staging = self.buffer("staging", ylen + zlen, U::MAP_READ | U::COPY_DST);
        let bind = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("tensorop f16 probe"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: xb.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: yb.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: hb.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: zb.as_entire_binding() },
            ],
        });
        let mut enc = d.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("tensorop") });
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups((x.len() as u32).div_ceil(WORKGROUP), 1, 1);
        }
        enc.copy_buffer_to_buffer(&yb, 0, &staging, 0, ylen);
        enc.copy_buffer_to_buffer(&zb, 0, &staging, ylen, zlen);
        let idx = self.queue.submit([enc.finish()]);
        let bytes = self.map_read(&staging, ylen + zlen, idx)?;
        let (y, z) = bytes.split_at(ylen as usize);
        let y: Vec<u16> = y.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        let z: Vec<u32> = z.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let narrow_ok = x.iter().zip(&y).all(|(v, h)| f16::from_f32(*v).to_bits() == *h);
        let widen_ok = halves.iter().zip(&z).all(|(h, w)| {
            let v = f16::from_bits(*h).to_f32();
            if v.is_nan() {
                f32::from_bits(*w).is_nan()
            } else {
                v.to_bits() == *w
            }
        });
        Ok(narrow_ok && widen_ok)
    }
}
