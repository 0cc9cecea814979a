//! Windows: one DirectML operator per chunk shape, created from the job's descriptors,
//! compiled and initialised, with a binding table per command list in flight; and how its
//! dispatch is recorded (`stream.rs` records the copies around it; `docs/backends.md`,
//! "directml").
//!
//! Resource states: buffers on the default heap are created in `COMMON`, as Direct3D 12 creates
//! every buffer, and are back in `COMMON` when an execution completes (buffers decay), so each
//! command list moves them from `COMMON` to the state it uses them in: inputs to `COPY_DEST`
//! for their upload, then `UNORDERED_ACCESS`; the output, the temporary and the persistent
//! resources to `UNORDERED_ACCESS`, and the output then to `COPY_SOURCE` for its read-back.
//! Command lists on the one queue run one after another, so the operator's temporary and
//! persistent resources serve every slot.

use super::create::{create, data_type};
use super::device::Device;
use super::queue::Queue;
use super::resource::{buffer, transition, uav_barrier};
use super::stamps::Mark;
use crate::dtype::DType;
use crate::op::Op;
use crate::spec::dml::buffer_tensor_size;
use anyhow::{anyhow, Context, Result};
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use windows::core::Interface;
use windows::Win32::Graphics::Direct3D12::*;
use windows::Win32::AI::MachineLearning::DirectML::*;

/// A job's tensors as DirectML takes them: sizes and strides in 32 bits.
pub(super) struct Shapes {
    pub dtype: DType,
    pub op: Op,
    /// The inputs' element strides (the descriptors' own).
    pub strides: [Vec<u64>; 2],
    /// The flags the operator is compiled with, by dtype (`ExecutionFlags::of`).
    pub flags: super::ExecutionFlags,
}

fn flags(shapes: &Shapes) -> DML_EXECUTION_FLAGS {
    let mut f = DML_EXECUTION_FLAG_NONE;
    if shapes.flags.half_precision {
        f |= DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION;
    }
    if shapes.flags.no_metacommands {
        f |= DML_EXECUTION_FLAG_DISABLE_META_COMMANDS;
    }
    f
}

/// An operator compiled and initialised for one chunk shape, with a binding table per slot (a
/// table's descriptors are rewritten for each dispatch, so one in flight keeps its own).
pub(super) struct Compiled {
    op: IDMLCompiledOperator,
    heap: ID3D12DescriptorHeap,
    /// Per slot, over its own descriptors of `heap`.
    tables: Vec<IDMLBindingTable>,
    temporary: Option<(ID3D12Resource, u64)>,
    persistent: Option<(ID3D12Resource, u64)>,
    /// The tensors' `TotalTensorSizeInBytes`: the inputs' and the output's.
    pub bytes: [u64; 3],
}

fn u32s(v: &[u64], what: &str) -> Result<Vec<u32>> {
    v.iter().map(|&x| u32::try_from(x).map_err(|_| anyhow!("{what} {x} does not fit DirectML's 32 bits"))).collect()
}

/// A buffer binding that borrows `r` (no reference taken: `r` outlives the binding's use).
fn binding(r: &ID3D12Resource, size: u64) -> DML_BUFFER_BINDING {
    // SAFETY: a bitwise copy of the interface pointer inside ManuallyDrop: never released.
    DML_BUFFER_BINDING { Buffer: unsafe { std::mem::transmute_copy(r) }, Offset: 0, SizeInBytes: size }
}

fn bind(b: &DML_BUFFER_BINDING) -> DML_BINDING_DESC {
    DML_BINDING_DESC { Type: DML_BINDING_TYPE_BUFFER, Desc: b as *const _ as *const c_void }
}

fn dispatchable<T: Interface>(x: &T) -> ManuallyDrop<Option<IDMLDispatchable>> {
    // SAFETY: compiled operators and initializers are IDMLDispatchables (single inheritance, the
    // same pointer); the copy is never released.
    unsafe { std::mem::transmute_copy(x) }
}

/// `shapes.op` created over a chunk of `sizes`, and its tensors' `TotalTensorSizeInBytes`.
fn operator(dev: &Device, shapes: &Shapes, sizes: &[u64]) -> Result<(IDMLOperator, [u64; 3])> {
    let dt = data_type(shapes.dtype).ok_or_else(|| anyhow!("DirectML has no {} tensors", shapes.dtype.name()))?;
    let es = shapes.dtype.size() as u64;
    let sizes32 = u32s(sizes, "size")?;
    let strides32 = [u32s(&shapes.strides[0], "stride")?, u32s(&shapes.strides[1], "stride")?];
    let bytes = [
        buffer_tensor_size(es, sizes, Some(&shapes.strides[0])),
        buffer_tensor_size(es, sizes, Some(&shapes.strides[1])),
        buffer_tensor_size(es, sizes, None),
    ];
    let desc = |i: usize| DML_BUFFER_TENSOR_DESC {
        DataType: dt,
        Flags: DML_TENSOR_FLAG_NONE,
        DimensionCount: sizes32.len() as u32,
        Sizes: sizes32.as_ptr(),
        Strides: if i < 2 { strides32[i].as_ptr() } else { std::ptr::null() },
        TotalTensorSizeInBytes: bytes[i],
        GuaranteedBaseOffsetAlignment: 0,
    };
    let t = [desc(0), desc(1), desc(2)];
    let op = create(&dev.dml, shapes.op, [&t[0], &t[1], &t[2]]).map_err(|e| {
        anyhow!(
            "DirectML refused to create {} on these tensors (IDMLDevice::CreateOperator: {e}): sizes {:?}, \
                 strides {:?} and {:?}",
            shapes.op.dml_operator(),
            sizes,
            shapes.strides[0],
            shapes.strides[1]
        )
    })?;
    Ok((op, bytes))
}

/// A shader-visible descriptor heap of `count` descriptors (one heap for all of an operator's
/// tables: creating a heap can cost more than compiling the operator).
fn heap(dev: &Device, count: u32) -> Result<ID3D12DescriptorHeap> {
    // SAFETY: plain object creation on a live device.
    let heap = unsafe {
        dev.d3d.CreateDescriptorHeap(&D3D12_DESCRIPTOR_HEAP_DESC {
            Type: D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV,
            NumDescriptors: count.max(1),
            Flags: D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE,
            NodeMask: 0,
        })
    };
    heap.context("CreateDescriptorHeap failed")
}

/// A binding table for `what` over `count` descriptors of `heap` from descriptor `first`.
///
/// # Safety
/// `what` must be a live compiled operator or initializer, and the heap must hold
/// `first + count` descriptors.
unsafe fn table(
    dev: &Device,
    heap: &ID3D12DescriptorHeap,
    what: ManuallyDrop<Option<IDMLDispatchable>>,
    first: u32,
    count: u32,
) -> Result<IDMLBindingTable> {
    let step = dev.d3d.GetDescriptorHandleIncrementSize(D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV);
    let (cpu, gpu) = (heap.GetCPUDescriptorHandleForHeapStart(), heap.GetGPUDescriptorHandleForHeapStart());
    let desc = DML_BINDING_TABLE_DESC {
        Dispatchable: what,
        CPUDescriptorHandle: D3D12_CPU_DESCRIPTOR_HANDLE { ptr: cpu.ptr + (first * step) as usize },
        GPUDescriptorHandle: D3D12_GPU_DESCRIPTOR_HANDLE { ptr: gpu.ptr + u64::from(first * step) },
        SizeInDescriptors: count,
    };
    dev.dml.CreateBindingTable(Some(&desc)).context("CreateBindingTable failed")
}

impl Compiled {
    /// Creates, compiles and initialises `shapes.op` over a chunk of `sizes` (on slot 0 of
    /// `q`, waiting for it), with binding tables for `slots` slots.
    pub(super) fn new(dev: &Device, q: &mut Queue, shapes: &Shapes, sizes: &[u64], slots: usize) -> Result<Compiled> {
        let (op, bytes) = operator(dev, shapes, sizes)?;
        // SAFETY: COM calls on live objects; every resource bound outlives the execution below.
        unsafe {
            let mut compiled: Option<IDMLCompiledOperator> = None;
            dev.dml.CompileOperator(&op, flags(shapes), &mut compiled).context("IDMLDevice::CompileOperator failed")?;
            let op = compiled.ok_or_else(|| anyhow!("CompileOperator returned nothing"))?;
            let init: IDMLOperatorInitializer = dev
                .dml
                .CreateOperatorInitializer(Some(&[Some(op.clone())]))
                .context("CreateOperatorInitializer failed")?;
            let (ip, ep) = (init.GetBindingProperties(), op.GetBindingProperties());
            // The initializer's descriptors first, then each slot's.
            let (ic, ec) = (ip.RequiredDescriptorCount.max(1), ep.RequiredDescriptorCount.max(1));
            let heap = heap(dev, ic + ec * slots as u32)?;
            let init_table = table(dev, &heap, dispatchable(&init), 0, ic)?;
            let temp_size = ip.TemporaryResourceSize.max(ep.TemporaryResourceSize);
            let common = D3D12_RESOURCE_STATE_COMMON;
            let temporary = match temp_size {
                0 => None,
                n => Some((buffer(&dev.d3d, D3D12_HEAP_TYPE_DEFAULT, n, common)?, n)),
            };
            let persistent = match ep.PersistentResourceSize {
                0 => None,
                n => Some((buffer(&dev.d3d, D3D12_HEAP_TYPE_DEFAULT, n, common)?, n)),
            };
            let list = q.list(0);
            for (r, _) in temporary.iter().chain(&persistent) {
                transition(list, r, common, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
            }
            list.SetDescriptorHeaps(&[Some(heap.clone())]);
            if let (Some((r, n)), true) = (&temporary, ip.TemporaryResourceSize > 0) {
                let b = binding(r, *n);
                init_table.BindTemporaryResource(Some(&bind(&b)));
            }
            if let Some((r, n)) = &persistent {
                let b = binding(r, *n);
                init_table.BindOutputs(Some(&[bind(&b)]));
            }
            q.recorder.RecordDispatch(list, &init, &init_table);
            uav_barrier(list);
            q.execute(0, [&dev.d3d, &dev.dml], dev.timeout, "initialising the DirectML operator")?;
            let tables = (0..slots as u32)
                .map(|k| table(dev, &heap, dispatchable(&op), ic + ec * k, ec))
                .collect::<Result<Vec<_>>>()?;
            Ok(Compiled { op, heap, tables, temporary, persistent, bytes })
        }
    }

    /// Records the dispatch on `ins` into `output` in slot `slot`'s list, between the
    /// timestamps `mark` takes.
    pub(super) fn record(
        &self,
        q: &Queue,
        slot: usize,
        ins: &[ID3D12Resource; 2],
        output: &ID3D12Resource,
        mark: &dyn Fn(Mark),
    ) -> Result<()> {
        let list = q.list(slot);
        let table = self.tables.get(slot).ok_or_else(|| anyhow!("internal error: no binding table for slot {slot}"))?;
        for (r, _) in self.temporary.iter().chain(&self.persistent) {
            transition(list, r, D3D12_RESOURCE_STATE_COMMON, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
        }
        let bs = [binding(&ins[0], self.bytes[0]), binding(&ins[1], self.bytes[1])];
        let bo = binding(output, self.bytes[2]);
        // SAFETY: the bindings borrow resources the caller holds until the dispatch finished;
        // the table belongs to this slot, whose previous dispatch finished.
        unsafe {
            list.SetDescriptorHeaps(&[Some(self.heap.clone())]);
            table.BindInputs(Some(&[bind(&bs[0]), bind(&bs[1])]));
            table.BindOutputs(Some(&[bind(&bo)]));
            if let Some((r, n)) = &self.temporary {
                let b = binding(r, *n);
                table.BindTemporaryResource(Some(&bind(&b)));
            }
            if let Some((r, n)) = &self.persistent {
                let b = binding(r, *n);
                table.BindPersistentResource(Some(&bind(&b)));
            }
            mark(Mark::DispatchStart);
            q.recorder.RecordDispatch(list, &self.op, table);
            uav_barrier(list);
            mark(Mark::DispatchEnd);
        }
        Ok(())
    }
}
