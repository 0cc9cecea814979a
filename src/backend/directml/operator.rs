//! Windows: one DirectML operator per chunk shape, created from the job's descriptors,
//! compiled, initialised and dispatched chunk after chunk through staging buffers of bounded
//! size (`docs/backends.md`, "directml").
//!
//! Resource states: buffers on the default heap are created in `COMMON`, as Direct3D 12 creates
//! every buffer, and are back in `COMMON` when an execution completes (buffers decay), so each
//! command list moves them from `COMMON` to the state it uses them in: inputs to `COPY_DEST`
//! for their upload, then `UNORDERED_ACCESS`; the output, the temporary and the persistent
//! resources to `UNORDERED_ACCESS`, and the output then to `COPY_SOURCE` for its read-back.

use super::chunks::Chunk;
use super::create::{create, data_type};
use super::device::Device;
use super::queue::Queue;
use crate::dtype::DType;
use crate::op::Op;
use crate::spec::dml::buffer_tensor_size;
use anyhow::{anyhow, Context, Result};
use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use windows::core::Interface;
use windows::Win32::Graphics::Direct3D12::*;
use windows::Win32::Graphics::Dxgi::Common::{DXGI_FORMAT_UNKNOWN, DXGI_SAMPLE_DESC};
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

/// An operator compiled and initialised for one chunk shape, with its descriptor heap and
/// binding table.
struct Compiled {
    op: IDMLCompiledOperator,
    heap: ID3D12DescriptorHeap,
    table: IDMLBindingTable,
    temporary: Option<(ID3D12Resource, u64)>,
    persistent: Option<(ID3D12Resource, u64)>,
    bytes: [u64; 3],
}

fn u32s(v: &[u64], what: &str) -> Result<Vec<u32>> {
    v.iter().map(|&x| u32::try_from(x).map_err(|_| anyhow!("{what} {x} does not fit DirectML's 32 bits"))).collect()
}

fn buffer(
    d3d: &ID3D12Device,
    heap: D3D12_HEAP_TYPE,
    size: u64,
    state: D3D12_RESOURCE_STATES,
) -> Result<ID3D12Resource> {
    let props = D3D12_HEAP_PROPERTIES { Type: heap, ..Default::default() };
    let uav = heap == D3D12_HEAP_TYPE_DEFAULT;
    let desc = D3D12_RESOURCE_DESC {
        Dimension: D3D12_RESOURCE_DIMENSION_BUFFER,
        Width: size.max(256).div_ceil(256) * 256,
        Height: 1,
        DepthOrArraySize: 1,
        MipLevels: 1,
        Format: DXGI_FORMAT_UNKNOWN,
        SampleDesc: DXGI_SAMPLE_DESC { Count: 1, Quality: 0 },
        Layout: D3D12_TEXTURE_LAYOUT_ROW_MAJOR,
        Flags: if uav { D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS } else { D3D12_RESOURCE_FLAG_NONE },
        ..Default::default()
    };
    let mut out: Option<ID3D12Resource> = None;
    // SAFETY: plain resource creation with the documented structs.
    unsafe { d3d.CreateCommittedResource(&props, D3D12_HEAP_FLAG_NONE, &desc, state, None, &mut out) }
        .with_context(|| format!("cannot allocate a GPU buffer of {size} bytes"))?;
    out.ok_or_else(|| anyhow!("CreateCommittedResource returned no buffer"))
}

/// A buffer binding that borrows `r` (no reference taken: `r` outlives the binding's use).
fn binding(r: &ID3D12Resource, size: u64) -> DML_BUFFER_BINDING {
    // SAFETY: a bitwise copy of the interface pointer inside ManuallyDrop: never released.
    DML_BUFFER_BINDING { Buffer: unsafe { std::mem::transmute_copy(r) }, Offset: 0, SizeInBytes: size }
}

fn bind(b: &DML_BUFFER_BINDING) -> DML_BINDING_DESC {
    DML_BINDING_DESC { Type: DML_BINDING_TYPE_BUFFER, Desc: b as *const _ as *const c_void }
}

fn transition(
    list: &ID3D12GraphicsCommandList,
    r: &ID3D12Resource,
    from: D3D12_RESOURCE_STATES,
    to: D3D12_RESOURCE_STATES,
) {
    let b = D3D12_RESOURCE_BARRIER {
        Type: D3D12_RESOURCE_BARRIER_TYPE_TRANSITION,
        Flags: D3D12_RESOURCE_BARRIER_FLAG_NONE,
        Anonymous: D3D12_RESOURCE_BARRIER_0 {
            Transition: ManuallyDrop::new(D3D12_RESOURCE_TRANSITION_BARRIER {
                // SAFETY: a borrowed copy of the pointer (ManuallyDrop: never released).
                pResource: unsafe { std::mem::transmute_copy(r) },
                Subresource: D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES,
                StateBefore: from,
                StateAfter: to,
            }),
        },
    };
    // SAFETY: `r` is alive while the list is recorded and executed (the caller holds it).
    unsafe { list.ResourceBarrier(&[b]) };
}

fn uav_barrier(list: &ID3D12GraphicsCommandList) {
    let b = D3D12_RESOURCE_BARRIER {
        Type: D3D12_RESOURCE_BARRIER_TYPE_UAV,
        Flags: D3D12_RESOURCE_BARRIER_FLAG_NONE,
        Anonymous: D3D12_RESOURCE_BARRIER_0 {
            UAV: ManuallyDrop::new(D3D12_RESOURCE_UAV_BARRIER { pResource: ManuallyDrop::new(None) }),
        },
    };
    // SAFETY: a barrier on all UAV accesses.
    unsafe { list.ResourceBarrier(&[b]) };
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

impl Compiled {
    /// Creates, compiles and initialises `shapes.op` over a chunk of `sizes`.
    fn new(dev: &Device, q: &mut Queue, shapes: &Shapes, sizes: &[u64]) -> Result<Compiled> {
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
            let count = ip.RequiredDescriptorCount.max(ep.RequiredDescriptorCount).max(1);
            let heap: ID3D12DescriptorHeap = dev.d3d.CreateDescriptorHeap(&D3D12_DESCRIPTOR_HEAP_DESC {
                Type: D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV,
                NumDescriptors: count,
                Flags: D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE,
                NodeMask: 0,
            })?;
            let mut table_desc = DML_BINDING_TABLE_DESC {
                Dispatchable: dispatchable(&init),
                CPUDescriptorHandle: heap.GetCPUDescriptorHandleForHeapStart(),
                GPUDescriptorHandle: heap.GetGPUDescriptorHandleForHeapStart(),
                SizeInDescriptors: count,
            };
            let table: IDMLBindingTable =
                dev.dml.CreateBindingTable(Some(&table_desc)).context("CreateBindingTable failed")?;
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
            for (r, _) in temporary.iter().chain(&persistent) {
                transition(&q.list, r, common, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
            }
            q.list.SetDescriptorHeaps(&[Some(heap.clone())]);
            if let (Some((r, n)), true) = (&temporary, ip.TemporaryResourceSize > 0) {
                let b = binding(r, *n);
                table.BindTemporaryResource(Some(&bind(&b)));
            }
            if let Some((r, n)) = &persistent {
                let b = binding(r, *n);
                table.BindOutputs(Some(&[bind(&b)]));
            }
            q.recorder.RecordDispatch(&q.list, &init, &table);
            uav_barrier(&q.list);
            q.execute([&dev.d3d, &dev.dml], dev.timeout, "initialising the DirectML operator")?;
            table_desc.Dispatchable = dispatchable(&op);
            table.Reset(Some(&table_desc)).context("IDMLBindingTable::Reset failed")?;
            Ok(Compiled { op, heap, table, temporary, persistent, bytes })
        }
    }
}

impl Compiled {
    /// Binds the inputs `ins`, the output and the operator's own resources to its table.
    fn bind(&self, ins: &[ID3D12Resource; 2], output: &ID3D12Resource) {
        let bs = [binding(&ins[0], self.bytes[0]), binding(&ins[1], self.bytes[1])];
        let bo = binding(output, self.bytes[2]);
        // SAFETY: the bindings borrow resources the caller holds until the dispatch finished.
        unsafe {
            self.table.BindInputs(Some(&[bind(&bs[0]), bind(&bs[1])]));
            self.table.BindOutputs(Some(&[bind(&bo)]));
            if let Some((r, n)) = &self.temporary {
                let b = binding(r, *n);
                self.table.BindTemporaryResource(Some(&bind(&b)));
            }
            if let Some((r, n)) = &self.persistent {
                let b = binding(r, *n);
                self.table.BindPersistentResource(Some(&bind(&b)));
            }
        }
    }
}

/// The GPU buffers a run reuses from chunk to chunk, grown when a chunk needs more.
#[derive(Default)]
pub(super) struct Buffers {
    upload: Option<(ID3D12Resource, u64)>,
    inputs: [Option<(ID3D12Resource, u64)>; 2],
    output: Option<(ID3D12Resource, u64)>,
    readback: Option<(ID3D12Resource, u64)>,
    compiled: HashMap<Vec<u64>, Compiled>,
}

fn ensure<'a>(
    slot: &'a mut Option<(ID3D12Resource, u64)>,
    d3d: &ID3D12Device,
    heap: D3D12_HEAP_TYPE,
    size: u64,
    state: D3D12_RESOURCE_STATES,
) -> Result<&'a ID3D12Resource> {
    if slot.as_ref().is_none_or(|(_, n)| *n < size) {
        *slot = Some((buffer(d3d, heap, size, state)?, size));
    }
    Ok(&slot.as_ref().ok_or_else(|| anyhow!("internal error: no buffer"))?.0)
}

/// Copies `bytes` into the mapped upload buffer at `at`.
fn fill(upload: &ID3D12Resource, parts: [&[u8]; 2], at: [u64; 2]) -> Result<()> {
    let mut p = std::ptr::null_mut();
    // SAFETY: the upload buffer holds at[1] + parts[1].len() bytes (`ensure`); the mapping is
    // released before the copy that reads it is executed.
    unsafe {
        upload.Map(0, Some(&D3D12_RANGE { Begin: 0, End: 0 }), Some(&mut p)).context("cannot map the upload buffer")?;
        for (bytes, &offset) in parts.iter().zip(&at) {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), (p as *mut u8).add(offset as usize), bytes.len());
        }
        upload.Unmap(0, None);
    }
    Ok(())
}

/// Runs one chunk: uploads the input windows `windows`, dispatches, and returns the output's
/// `count * element size` bytes through `out`.
pub(super) fn dispatch(
    dev: &Device,
    bufs: &mut Buffers,
    shapes: &Shapes,
    chunk: &Chunk,
    windows: [&[u8]; 2],
    out: &mut Vec<u8>,
) -> Result<()> {
    let mut q = dev.queue.lock().map_err(|_| anyhow!("internal error: the DirectML queue was poisoned"))?;
    let q = &mut *q;
    if !bufs.compiled.contains_key(&chunk.sizes) {
        let c = Compiled::new(dev, q, shapes, &chunk.sizes)?;
        bufs.compiled.insert(chunk.sizes.clone(), c);
    }
    let c = bufs.compiled.get(&chunk.sizes).ok_or_else(|| anyhow!("internal error: no operator"))?;
    let (common, uav, dst, src) = (
        D3D12_RESOURCE_STATE_COMMON,
        D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
        D3D12_RESOURCE_STATE_COPY_DEST,
        D3D12_RESOURCE_STATE_COPY_SOURCE,
    );
    let second = (windows[0].len() as u64).div_ceil(256) * 256;
    let d3d = &dev.d3d;
    let upload = ensure(
        &mut bufs.upload,
        d3d,
        D3D12_HEAP_TYPE_UPLOAD,
        second + windows[1].len() as u64,
        D3D12_RESOURCE_STATE_GENERIC_READ,
    )?
    .clone();
    fill(&upload, windows, [0, second])?;
    let ins = [
        ensure(&mut bufs.inputs[0], d3d, D3D12_HEAP_TYPE_DEFAULT, c.bytes[0], common)?.clone(),
        ensure(&mut bufs.inputs[1], d3d, D3D12_HEAP_TYPE_DEFAULT, c.bytes[1], common)?.clone(),
    ];
    let output = ensure(&mut bufs.output, d3d, D3D12_HEAP_TYPE_DEFAULT, c.bytes[2], common)?.clone();
    let readback = ensure(&mut bufs.readback, d3d, D3D12_HEAP_TYPE_READBACK, c.bytes[2], dst)?.clone();
    let list = &q.list;
    // SAFETY: every resource recorded is held (cloned) until `execute` has waited for the GPU.
    unsafe {
        for (i, r) in ins.iter().enumerate() {
            transition(list, r, common, dst);
            list.CopyBufferRegion(r, 0, &upload, [0, second][i], windows[i].len() as u64);
            transition(list, r, dst, uav);
        }
        transition(list, &output, common, uav);
        for (r, _) in c.temporary.iter().chain(&c.persistent) {
            transition(list, r, common, uav);
        }
        list.SetDescriptorHeaps(&[Some(c.heap.clone())]);
        c.bind(&ins, &output);
        q.recorder.RecordDispatch(list, &c.op, &c.table);
        uav_barrier(list);
        transition(list, &output, uav, src);
        let n = chunk.count * shapes.dtype.size() as u64;
        list.CopyBufferRegion(&readback, 0, &output, 0, n);
        let what = format!(
            "the DirectML dispatch of output elements {} to {}",
            chunk.start,
            chunk.start + chunk.count.saturating_sub(1)
        );
        q.execute([d3d, &dev.dml], dev.timeout, &what)?;
        let mut p = std::ptr::null_mut();
        readback
            .Map(0, Some(&D3D12_RANGE { Begin: 0, End: n as usize }), Some(&mut p))
            .context("cannot map the readback buffer")?;
        out.clear();
        out.extend_from_slice(std::slice::from_raw_parts(p as *const u8, n as usize));
        readback.Unmap(0, Some(&D3D12_RANGE { Begin: 0, End: 0 }));
    }
    Ok(())
}
