//! Running a model: every dispatch checked first (tensorop's checks at the level asked for, plus
//! DirectML's rules for buffer tensor descs and bindings), then the resources made, then the
//! commands in order.
//!
//! Resources are flat buffers, each an anonymous temporary file of its `sizeInBytes` (or, until
//! a dispatch writes it, the `.npy` or raw source file it comes from, read in place), so memory
//! stays bounded whatever their size. A dispatch reads its inputs through the same backends as
//! `sub` and `sqdiff`: a packed or broadcast desc is a C-order view of the buffer, streamed
//! through the plan; a desc with other strides is first gathered into a packed file, through the
//! span of the buffer it addresses held in memory (at most [`STRIDED_SPAN_LIMIT`]). The result
//! streams into a temporary file and is then copied (packed output desc) or scattered (strided)
//! into the output buffer, so an output that aliases an input reads every input element before
//! any is overwritten.

use super::model::{dml_name, Binding, Command, Dispatchable, Init, Model, Resource, TensorDesc, TENSOR_NAMES};
use super::values;
use crate::backend::{self, BackendKind, Emit, Job};
use crate::npy::header::{encode_header, FileDType};
use crate::npy::input::NpyInput;
use crate::op::Semantics;
use crate::output::{BrokenPipe, Destination, Sink, Writing};
use crate::plan::{Plan, RESIDENT_BYTES};
use crate::shape::{storage_strides, view_strides, Iteration};
use crate::spec::checks::{validate, BroadcastMode, Check, CheckId, Status, TensorSpec};
use crate::spec::dml::TensorDesc as DmlTensorDesc;
use crate::spec::level::{FeatureLevel, LevelChoice};
use crate::spec::matrix::row_for;
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The most bytes of a buffer held in memory to gather or scatter through a tensor desc whose
/// strides are neither packed nor broadcast.
pub const STRIDED_SPAN_LIMIT: u64 = 1 << 30;

/// Elements moved per step when resources are filled, copied, gathered or printed.
const CHUNK_ELEMENTS: usize = 1 << 16;

/// One dispatch's checks and descriptors, as the report lists them.
#[derive(Debug, Clone, Serialize)]
pub struct DispatchReport {
    /// The command's index in `commands`.
    pub command: usize,
    pub dispatchable: String,
    pub op: &'static str,
    pub dml_operator: &'static str,
    pub feature_level: String,
    pub support_row: Option<String>,
    #[serde(serialize_with = "level_name")]
    pub minimum_feature_level: Option<FeatureLevel>,
    pub valid: bool,
    pub checks: Vec<Check>,
    /// The three tensor descs as the model gives them (`ATensor`, `BTensor`, `OutputTensor`).
    pub tensors: serde_json::Map<String, serde_json::Value>,
    /// Per tensor, the resource and the byte offset bound to it.
    pub bindings: serde_json::Map<String, serde_json::Value>,
    pub elements: u64,
}

/// A level as the report spells it (`3_1`), or `null`.
fn level_name<S: serde::Serializer>(level: &Option<FeatureLevel>, s: S) -> Result<S::Ok, S::Error> {
    match level {
        Some(l) => s.collect_str(l),
        None => s.serialize_none(),
    }
}

/// Checks every dispatch of `model` at `level`.
pub fn check_all(model: &Model, level: LevelChoice) -> Vec<DispatchReport> {
    model
        .commands
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match c {
            Command::Dispatch { dispatchable, bindings } => {
                Some(check_dispatch(i, &model.dispatchables[*dispatchable], bindings, &model.resources, level))
            }
            _ => None,
        })
        .collect()
}

/// The elements a desc's `Sizes` describe; `None` past 2^64.
fn element_count(t: &TensorDesc) -> Option<u64> {
    t.sizes.iter().try_fold(1u64, |n, &d| n.checked_mul(u64::from(d)))
}

/// The bytes of temporary files a dispatch makes beyond its resources: the packed copies of
/// inputs whose strides are neither packed nor broadcast, and the result, unless it is written
/// straight into the output buffer. `None` past 2^64.
pub fn dispatch_temp_bytes(d: &Dispatchable, bindings: &[Binding; 3]) -> Option<u64> {
    let [a, b, out] = &d.tensors;
    let bytes = element_count(out)?.checked_mul(out.dtype.size() as u64)?;
    let gathered = [a, b].iter().filter(|t| broadcast_view_shape(t).is_none()).count() as u64;
    let result = u64::from(!streams_into_output(out, bindings));
    bytes.checked_mul(gathered + result)
}

fn sizes64(d: &TensorDesc) -> Vec<u64> {
    d.sizes.iter().map(|&s| u64::from(s)).collect()
}

/// The checks of one dispatch at `level`: tensorop's (A's and B's data types and sizes against
/// the support row), then DirectML's rules for the descs and the bindings.
fn checks_at(
    d: &Dispatchable,
    bindings: &[Binding; 3],
    resources: &[Resource],
    level: LevelChoice,
) -> (Vec<Check>, Option<FeatureLevel>) {
    let [a, b, out] = &d.tensors;
    let (da, db) = (FileDType::Numeric(a.dtype), FileDType::Numeric(b.dtype));
    let (sa, sb) = (sizes64(a), sizes64(b));
    let spec = |name: &str, dtype, shape| TensorSpec { name: name.to_string(), dtype, shape };
    let v = validate(d.op, level, BroadcastMode::None, &spec("ATensor", &da, &sa), &spec("BTensor", &db, &sb));
    let mut checks = v.checks;
    // A desc is what DirectML sees: a level that takes only rank 4 does not pad it.
    let row = match level {
        LevelChoice::Dml(l) => row_for(d.op, l).map(|row| (l, row)),
        LevelChoice::None => None,
    };
    if let Some((l, row)) = row {
        let rank = a.sizes.len();
        if rank < row.ranks.0 {
            if let Some(c) = checks.iter_mut().find(|c| c.id == CheckId::DimensionCount) {
                c.status = Status::Fail;
                c.message = format!(
                    "ATensor has {rank} dimensions; {} at feature level {l} takes {} (support row {}): write Sizes with \
                     leading 1s, as tensorop's own export does",
                    d.op.dml_operator(),
                    row.ranks.0,
                    row.since
                );
            }
        }
    }
    checks.push(output_check(a, out));
    checks.push(desc_check(&d.tensors));
    checks.push(binding_check(&d.tensors, bindings, resources));
    (checks, v.support_row)
}

/// `output_desc`: the output has A's data type and sizes, as DirectML requires.
fn output_check(a: &TensorDesc, out: &TensorDesc) -> Check {
    let (status, message) = if out.dtype != a.dtype {
        (
            Status::Fail,
            format!(
                "OutputTensor is {} but ATensor is {}; DirectML computes in one data type",
                dml_name(out.dtype),
                dml_name(a.dtype)
            ),
        )
    } else if let Some(k) = out
        .strides
        .as_ref()
        .and_then(|st| st.iter().zip(&out.sizes).position(|(&stride, &size)| stride == 0 && size > 1))
    {
        (
            Status::Fail,
            format!(
                "OutputTensor's Strides are 0 along dimension {k} (of size {}): every element there would be written \
                 to one place; give the output its own element for each",
                out.sizes[k]
            ),
        )
    } else if out.sizes != a.sizes {
        (
            Status::Fail,
            format!(
                "OutputTensor's Sizes {:?} differ from ATensor's {:?}; DirectML requires the same sizes",
                out.sizes, a.sizes
            ),
        )
    } else {
        (Status::Pass, format!("OutputTensor is {} {:?}, as ATensor", dml_name(out.dtype), out.sizes))
    };
    Check { id: CheckId::OutputDesc, status, message }
}

/// `tensor_desc`: each desc is consistent: `DimensionCount` and the `Strides` match `Sizes`,
/// and `TotalTensorSizeInBytes` covers every element the desc addresses.
fn desc_check(tensors: &[TensorDesc; 3]) -> Check {
    for (name, t) in TENSOR_NAMES.iter().zip(tensors) {
        let problem = if t.sizes.is_empty() {
            Some(format!("{name}: Sizes is empty; a DirectML tensor has at least one dimension (write [1])"))
        } else if element_count(t).and_then(|n| n.checked_mul(t.dtype.size() as u64)).is_none() {
            Some(format!("{name}: Sizes {:?} describe more than 2^64 bytes", t.sizes))
        } else if t.dimension_count as usize != t.sizes.len() {
            Some(format!("{name}: DimensionCount is {} but Sizes has {} entries", t.dimension_count, t.sizes.len()))
        } else if t.strides.as_ref().is_some_and(|s| s.len() != t.sizes.len()) {
            Some(format!(
                "{name}: Strides has {} entries but Sizes has {}",
                t.strides.as_ref().map_or(0, Vec::len),
                t.sizes.len()
            ))
        } else {
            let needed = addressed_bytes(t);
            (t.total_size < needed).then(|| {
                format!("{name}: TotalTensorSizeInBytes is {} but the desc addresses {needed} bytes (DMLCalcBufferTensorSize)", t.total_size)
            })
        };
        if let Some(message) = problem {
            return Check { id: CheckId::TensorDesc, status: Status::Fail, message };
        }
    }
    Check { id: CheckId::TensorDesc, status: Status::Pass, message: "the three descs are consistent".into() }
}

/// `binding_size`: each bound range (from the binding's offset to the end of the resource) holds
/// the tensor's `TotalTensorSizeInBytes`.
fn binding_check(tensors: &[TensorDesc; 3], bindings: &[Binding; 3], resources: &[Resource]) -> Check {
    for ((name, t), b) in TENSOR_NAMES.iter().zip(tensors).zip(bindings) {
        let r = &resources[b.resource];
        let es = t.dtype.size() as u64;
        if b.offset % es != 0 {
            return Check {
                id: CheckId::BindingSize,
                status: Status::Fail,
                message: format!(
                    "{name} is bound to '{}' at byte {}, which is not a multiple of its element size ({es} bytes); \
                     give elementOffset in elements of {}",
                    r.name,
                    b.offset,
                    dml_name(t.dtype)
                ),
            };
        }
        let room = r.size - b.offset;
        if room < t.total_size {
            return Check {
                id: CheckId::BindingSize,
                status: Status::Fail,
                message: format!(
                    "{name} needs {} bytes (TotalTensorSizeInBytes) but '{}' has {room} bytes from offset {}; enlarge its \
                     sizeInBytes or bind a larger resource",
                    t.total_size, r.name, b.offset
                ),
            };
        }
    }
    Check { id: CheckId::BindingSize, status: Status::Pass, message: "every bound resource holds its tensor".into() }
}

/// The bytes from the first to one past the last element a desc addresses, rounded up to 4
/// (`DMLCalcBufferTensorSize`).
fn addressed_bytes(t: &TensorDesc) -> u64 {
    let st: Option<Vec<u64>> = t.strides.as_ref().map(|s| s.iter().map(|&x| u64::from(x)).collect());
    crate::spec::dml::buffer_tensor_size(t.dtype.size() as u64, &sizes64(t), st.as_deref())
}

fn check_dispatch(
    index: usize,
    d: &Dispatchable,
    bindings: &[Binding; 3],
    resources: &[Resource],
    level: LevelChoice,
) -> DispatchReport {
    let (checks, support_row) = checks_at(d, bindings, resources, level);
    let valid = checks.iter().all(|c| c.status != Status::Fail);
    let minimum = FeatureLevel::ALL
        .iter()
        .copied()
        .find(|&l| checks_at(d, bindings, resources, LevelChoice::Dml(l)).0.iter().all(|c| c.status != Status::Fail));
    let mut tensors = serde_json::Map::new();
    let mut bound = serde_json::Map::new();
    for ((name, t), b) in TENSOR_NAMES.iter().zip(&d.tensors).zip(bindings) {
        let desc = DmlTensorDesc {
            data_type: format!("DML_TENSOR_DATA_TYPE_{}", dml_name(t.dtype)),
            flags: if t.flags.iter().any(|f| f.ends_with("OWNED_BY_DML")) {
                "DML_TENSOR_FLAG_OWNED_BY_DML"
            } else {
                "DML_TENSOR_FLAG_NONE"
            },
            dimension_count: t.dimension_count as usize,
            sizes: sizes64(t),
            strides: t.strides.as_ref().map(|s| s.iter().map(|&x| u64::from(x)).collect()),
            total_tensor_size_in_bytes: t.total_size,
            guaranteed_base_offset_alignment: t.alignment,
        };
        tensors.insert(name.to_string(), serde_json::to_value(desc).unwrap_or_default());
        bound.insert(
            name.to_string(),
            serde_json::json!({ "resource": resources[b.resource].name, "offset_bytes": b.offset }),
        );
    }
    DispatchReport {
        command: index,
        dispatchable: d.name.clone(),
        op: d.op.name(),
        dml_operator: d.op.dml_operator(),
        feature_level: level.to_string(),
        support_row: support_row.map(|r| r.to_string()),
        minimum_feature_level: minimum,
        valid,
        checks,
        tensors,
        bindings: bound,
        elements: element_count(&d.tensors[2]).unwrap_or(u64::MAX),
    }
}

/// Where a run's work goes.
pub struct Runner<'a> {
    pub model: &'a Model,
    pub backend: BackendKind,
    pub gpu: Option<&'a backend::wgpu::Gpu>,
    pub threads: usize,
    pub writing: Writing,
    /// Standard output, for `print`.
    pub out: &'a mut dyn Write,
    /// The files written, in order.
    pub written: Vec<PathBuf>,
    /// Standard output was closed by its reader: later `print`s are skipped, the rest runs.
    pub out_closed: bool,
}

/// A resource's bytes: an anonymous temporary file of exactly its size.
struct Buffer {
    file: File,
    /// Where byte 0 of the buffer is in `file`.
    base: u64,
    size: u64,
    /// Bytes of the buffer `file` holds from `base`; the rest reads as zeros.
    stored: u64,
    /// `file` is the resource's source file, read in place until something writes the buffer.
    shared: bool,
}

impl Buffer {
    /// Reads `bytes.len()` bytes from byte `at` of the buffer.
    fn read_at(&self, bytes: &mut [u8], at: u64) -> Result<()> {
        let from_file = self.stored.saturating_sub(at).min(bytes.len() as u64) as usize;
        crate::sys::read_exact_at(&self.file, &mut bytes[..from_file], self.base + at)
            .context("cannot read a buffer")?;
        bytes[from_file..].fill(0);
        Ok(())
    }

    /// Whether bytes `[at, at + len)` can be read straight from the file.
    fn holds(&self, at: u64, len: u64) -> bool {
        at.checked_add(len).is_some_and(|end| end <= self.stored)
    }

    /// Makes the buffer a temporary file of its own before it is written (a source file is
    /// never changed).
    fn own(&mut self) -> Result<()> {
        if !self.shared {
            return Ok(());
        }
        let file = tempfile::tempfile().context("cannot create a temporary file to hold a buffer")?;
        file.set_len(self.size).with_context(|| format!("cannot make a temporary file of {} bytes", self.size))?;
        let mut chunk = vec![0u8; 1 << 20];
        let mut at = 0u64;
        while at < self.stored {
            let k = (self.stored - at).min(chunk.len() as u64) as usize;
            crate::sys::read_exact_at(&self.file, &mut chunk[..k], self.base + at).context("cannot read a buffer")?;
            crate::sys::write_all_at(&file, &chunk[..k], at).context("cannot write a buffer")?;
            at += k as u64;
        }
        *self = Buffer { file, base: 0, size: self.size, stored: self.size, shared: false };
        Ok(())
    }
}

impl Runner<'_> {
    /// Makes the resources and runs the commands.
    pub fn run(&mut self) -> Result<()> {
        let mut buffers = Vec::with_capacity(self.model.resources.len());
        for r in &self.model.resources {
            buffers.push(make_buffer(r).with_context(|| format!("resource '{}'", r.name))?);
        }
        for (i, c) in self.model.commands.iter().enumerate() {
            match c {
                Command::Dispatch { dispatchable, bindings } => {
                    let d = &self.model.dispatchables[*dispatchable];
                    self.dispatch(d, bindings, &mut buffers)
                        .with_context(|| format!("commands[{i}]: dispatch '{}'", d.name))?;
                }
                Command::Print { .. } if self.out_closed => {}
                Command::Print { resource, verbose } => {
                    let r = &self.model.resources[*resource];
                    match print(r, &buffers[*resource], *verbose, self.out) {
                        Err(e) if e.is::<BrokenPipe>() => self.out_closed = true,
                        other => other.with_context(|| format!("commands[{i}]: print '{}'", r.name))?,
                    }
                }
                Command::WriteFile { resource, target, dimensions } => {
                    // A source file about to be replaced is copied first: its buffer keeps the
                    // values it had (and Windows does not replace a file that is open).
                    for b in buffers.iter_mut().filter(|b| b.shared) {
                        if crate::sys::same_file(&b.file, target) {
                            b.own()?;
                        }
                    }
                    let r = &self.model.resources[*resource];
                    write_file(r, &buffers[*resource], target, dimensions.as_deref(), self.writing)
                        .with_context(|| format!("commands[{i}]: writeFile '{}' to {}", r.name, target.display()))?;
                    self.written.push(target.clone());
                }
            }
        }
        Ok(())
    }

    fn dispatch(&mut self, d: &Dispatchable, bindings: &[Binding; 3], buffers: &mut [Buffer]) -> Result<()> {
        let [a, b, out] = &d.tensors;
        let sizes = sizes64(out);
        let dtype = a.dtype;
        let elements = element_count(out).ok_or_else(|| anyhow!("the output has more than 2^64 elements"))?;
        if elements == 0 {
            return Ok(());
        }
        // A source file read in place serves the inputs whose elements it holds; the output's
        // buffer gets a file of its own.
        for (t, bnd) in [(a, bindings[0]), (b, bindings[1])] {
            let buf = &mut buffers[bnd.resource];
            if buf.shared && !buf.holds(bnd.offset, addressed_bytes(t).min(buf.size - bnd.offset)) {
                buf.own()?;
            }
        }
        buffers[bindings[2].resource].own()?;
        let buffers: &[Buffer] = buffers;
        let views = [(a, bindings[0]), (b, bindings[1])]
            .into_iter()
            .enumerate()
            .map(|(i, (t, bnd))| input_view(TENSOR_NAMES[i], t, &buffers[bnd.resource], bnd.offset))
            .collect::<Result<Vec<(NpyInput, Vec<u64>)>>>()?;
        let strides = [0, 1].map(|i| view_strides(&views[i].1, false, &sizes));
        let inputs = [&views[0].0, &views[1].0];
        let iter = Iteration::new(&sizes, &strides[0], &strides[1]);
        let resident = self.gpu.map_or(RESIDENT_BYTES, |g| g.resident_limit());
        let feeds = Plan::feeds(&iter, inputs, resident);
        let job = Job {
            sem: Semantics { op: d.op, half_precision: false },
            dtype,
            range: 0..iter.count(),
            iter,
            inputs,
            feeds,
            threads: self.threads,
            summarise: false,
            positional: None,
        };
        let target = &buffers[bindings[2].resource];
        let out_offset = bindings[2].offset;
        // A packed output that aliases no input is written straight into its buffer, in order;
        // otherwise the result goes to a temporary file first, so that every input element is
        // read before any output element is written.
        if streams_into_output(out, bindings) {
            let mut at = out_offset;
            let mut emit = |e: Emit<'_>| -> Result<()> {
                if let Emit::Bytes(bytes) = e {
                    crate::sys::write_all_at(&target.file, bytes, at).context("cannot write the output buffer")?;
                    at += bytes.len() as u64;
                }
                Ok(())
            };
            return self.compute(&job, &mut emit);
        }
        let mut result = tempfile::tempfile().context("cannot create a temporary file for the result")?;
        {
            let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut result);
            let mut emit = |e: Emit<'_>| -> Result<()> {
                if let Emit::Bytes(bytes) = e {
                    w.write_all(bytes).context("cannot write the result to a temporary file")?;
                }
                Ok(())
            };
            self.compute(&job, &mut emit)?;
            w.flush().context("cannot write the result to a temporary file")?;
        }
        store_output(out, &result, elements, target, out_offset)
    }

    /// Runs `job` on the chosen backend, its bytes in output order to `emit`.
    fn compute(&self, job: &Job, emit: &mut dyn FnMut(Emit<'_>) -> Result<()>) -> Result<()> {
        match (self.backend, self.gpu) {
            (BackendKind::Wgpu, Some(gpu)) => backend::wgpu::run(gpu, job, &mut |bytes| emit(Emit::Bytes(bytes)))?,
            _ => backend::cpu::run(job, emit)?,
        };
        Ok(())
    }
}

/// A resource's buffer: its source file read in place (a little-endian `.npy`, or a raw file,
/// that is a regular file), else a temporary file filled with its initial values from byte 0
/// (zeros after them).
fn make_buffer(r: &Resource) -> Result<Buffer> {
    let regular = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file());
    match &r.init {
        Init::Npy(path) if regular(path) => {
            let input = NpyInput::open_path(path).with_context(|| path.display().to_string())?;
            if !input.header.byte_order.needs_swap() {
                let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
                let h = &input.header;
                return Ok(Buffer {
                    file,
                    base: h.data_offset,
                    size: r.size,
                    stored: h.data_bytes.min(r.size),
                    shared: true,
                });
            }
        }
        Init::Raw(path) if regular(path) => {
            let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            let len = file.metadata().context("cannot inspect it")?.len();
            if len > r.size {
                bail!("{} grew since the model was read; run again once it is complete", path.display());
            }
            return Ok(Buffer { file, base: 0, size: r.size, stored: len, shared: true });
        }
        _ => {}
    }
    let file = tempfile::tempfile().context("cannot create a temporary file to hold it")?;
    file.set_len(r.size).with_context(|| format!("cannot make a temporary file of {} bytes", r.size))?;
    let put =
        |at: u64, bytes: &[u8]| crate::sys::write_all_at(&file, bytes, at).context("cannot write its temporary file");
    let n = r.dtype.size();
    match &r.init {
        Init::Bytes(bytes) => put(0, bytes)?,
        // A new file reads as zeros: a zero constant needs no writing.
        Init::Constant { value, .. } if value.bytes(r.dtype).iter().all(|&b| b == 0) => {}
        Init::Constant { count, value } => {
            let one = value.bytes(r.dtype);
            let chunk: Vec<u8> = one.iter().copied().cycle().take(n * CHUNK_ELEMENTS.min(*count as usize)).collect();
            let mut at = 0u64;
            let total = u64::from(*count) * n as u64;
            while at < total {
                let len = (total - at).min(chunk.len() as u64) as usize;
                put(at, &chunk[..len])?;
                at += len as u64;
            }
        }
        Init::Sequence { count, start, delta } => {
            let mut value = *start;
            let mut chunk = Vec::with_capacity(n * CHUNK_ELEMENTS);
            let mut at = 0u64;
            for i in 0..*count {
                chunk.extend_from_slice(value.bytes(r.dtype));
                value = values::step(r.dtype, value, *delta);
                if chunk.len() == chunk.capacity() || i + 1 == *count {
                    put(at, &chunk)?;
                    at += chunk.len() as u64;
                    chunk.clear();
                }
            }
        }
        Init::Npy(path) => {
            let input = NpyInput::open_path(path).with_context(|| path.display().to_string())?;
            let mut at = 0u64;
            input.for_each_le_chunk(|bytes| {
                put(at, bytes)?;
                at += bytes.len() as u64;
                Ok(())
            })?;
        }
        Init::Raw(path) => {
            let mut src = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            let mut buf = vec![0u8; 1 << 20];
            let mut at = 0u64;
            loop {
                let k = src.read(&mut buf).with_context(|| format!("cannot read {}", path.display()))?;
                if k == 0 {
                    break;
                }
                if at + k as u64 > r.size {
                    bail!("{} grew while it was being read; run again once it is complete", path.display());
                }
                put(at, &buf[..k])?;
                at += k as u64;
            }
        }
    }
    Ok(Buffer { file, base: 0, size: r.size, stored: r.size, shared: false })
}

/// The shape of a C-order array whose elements a desc addresses as a broadcast view, when its
/// strides allow one: each dimension is either broadcast (stride 0, size 1 in the array) or has
/// the packed stride of the array.
fn broadcast_view_shape(t: &TensorDesc) -> Option<Vec<u64>> {
    let sizes = sizes64(t);
    let Some(strides) = &t.strides else { return Some(sizes) };
    let shape: Vec<u64> = sizes.iter().zip(strides).map(|(&n, &s)| if s == 0 { 1 } else { n }).collect();
    let packed = storage_strides(&shape, false);
    let ok = shape.iter().zip(strides).zip(&packed).all(|((&n, &s), &p)| s == 0 || n == 1 || u64::from(s) == p);
    ok.then_some(shape)
}

/// An input as the backends read it, and the shape of the C-order array it is: a view of the
/// buffer for a packed or broadcast desc, else a packed copy gathered through the desc.
fn input_view(name: &str, t: &TensorDesc, buf: &Buffer, offset: u64) -> Result<(NpyInput, Vec<u64>)> {
    let label = format!("{name} (buffer)");
    if let Some(shape) = broadcast_view_shape(t) {
        let file = buf.file.try_clone().context("cannot reopen a buffer")?;
        return Ok((NpyInput::view(&label, file, buf.base + offset, t.dtype, &shape), shape));
    }
    let sizes = sizes64(t);
    let strides: Vec<u64> = t.strides.as_ref().map(|s| s.iter().map(|&x| u64::from(x)).collect()).unwrap_or_default();
    let es = t.dtype.size() as u64;
    let span = span_bytes(t, buf, offset)?;
    let mut mem = vec![0u8; span as usize];
    buf.read_at(&mut mem, offset)?;
    let mut packed = tempfile::tempfile().context("cannot create a temporary file")?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut packed);
    for_each_offset(&sizes, &strides, |off| {
        let at = (off * es) as usize;
        w.write_all(&mem[at..at + es as usize])
    })
    .context("cannot write a temporary file")?;
    w.flush().context("cannot write a temporary file")?;
    drop(w);
    Ok((NpyInput::view(&label, packed, 0, t.dtype, &sizes), sizes))
}

/// The bytes of `buf` from `offset` that a strided desc addresses, refused past
/// [`STRIDED_SPAN_LIMIT`].
fn span_bytes(t: &TensorDesc, buf: &Buffer, offset: u64) -> Result<u64> {
    let span = addressed_bytes(t).min(buf.size - offset);
    if span > STRIDED_SPAN_LIMIT {
        bail!(
            "its Strides address {span} bytes, more than the {STRIDED_SPAN_LIMIT} bytes tensorop holds in memory for a desc \
             that is neither packed nor broadcast"
        );
    }
    Ok(span)
}

/// Calls `f` with the element offset of every element of `sizes`/`strides`, in C order.
fn for_each_offset(
    sizes: &[u64],
    strides: &[u64],
    mut f: impl FnMut(u64) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if sizes.contains(&0) {
        return Ok(());
    }
    let mut idx = vec![0u64; sizes.len()];
    let mut off = 0u64;
    loop {
        f(off)?;
        let mut k = sizes.len();
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            idx[k] += 1;
            off += strides[k];
            if idx[k] < sizes[k] {
                break;
            }
            off -= strides[k] * sizes[k];
            idx[k] = 0;
        }
    }
}

/// Whether a dispatch's result streams straight into its output buffer: a packed output desc
/// whose resource is not also an input's (else the result goes through a temporary file).
fn streams_into_output(out: &TensorDesc, bindings: &[Binding; 3]) -> bool {
    is_packed(out) && bindings[..2].iter().all(|b| b.resource != bindings[2].resource)
}

/// Whether a desc addresses its elements packed, in C order.
fn is_packed(t: &TensorDesc) -> bool {
    let sizes = sizes64(t);
    let packed = storage_strides(&sizes, false);
    t.strides
        .as_ref()
        .is_none_or(|s| s.iter().zip(&packed).zip(&sizes).all(|((&st, &p), &n)| n == 1 || u64::from(st) == p))
}

/// Puts a packed result of `elements` into the output buffer through the output desc.
fn store_output(out: &TensorDesc, result: &File, elements: u64, target: &Buffer, offset: u64) -> Result<()> {
    let es = out.dtype.size() as u64;
    let sizes = sizes64(out);
    let mut chunk = vec![0u8; (CHUNK_ELEMENTS as u64 * es) as usize];
    if is_packed(out) {
        let total = elements * es;
        let mut at = 0u64;
        while at < total {
            let k = (total - at).min(chunk.len() as u64) as usize;
            crate::sys::read_exact_at(result, &mut chunk[..k], at).context("cannot read the result")?;
            crate::sys::write_all_at(&target.file, &chunk[..k], offset + at)
                .context("cannot write the output buffer")?;
            at += k as u64;
        }
        return Ok(());
    }
    let strides: Vec<u64> = out.strides.as_ref().map(|s| s.iter().map(|&x| u64::from(x)).collect()).unwrap_or_default();
    let span = span_bytes(out, target, offset)?;
    let mut mem = vec![0u8; span as usize];
    crate::sys::read_exact_at(&target.file, &mut mem, offset).context("cannot read the output buffer")?;
    let mut result = result;
    std::io::Seek::seek(&mut result, std::io::SeekFrom::Start(0)).context("cannot read the result")?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, result);
    let mut one = vec![0u8; es as usize];
    for_each_offset(&sizes, &strides, |off| {
        reader.read_exact(&mut one)?;
        let at = (off * es) as usize;
        mem[at..at + es as usize].copy_from_slice(&one);
        Ok(())
    })
    .context("cannot read the result")?;
    crate::sys::write_all_at(&target.file, &mem, offset).context("cannot write the output buffer")
}

/// `print`: `Resource 'NAME': v0, v1, ...` over the initial values' element count, or the
/// verbose form, one element a line with its index and bits.
fn print(r: &Resource, buf: &Buffer, verbose: bool, out: &mut dyn Write) -> Result<()> {
    let es = r.dtype.size();
    let count = r.init_bytes.min(buf.size) / es as u64;
    let io = |e: std::io::Error| -> anyhow::Error {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            anyhow::Error::new(BrokenPipe)
        } else {
            anyhow::Error::new(e).context("cannot write to standard output")
        }
    };
    let mut w = std::io::BufWriter::new(out);
    if verbose {
        writeln!(w, "Resource '{}':", r.name).map_err(io)?;
    } else {
        write!(w, "Resource '{}': ", r.name).map_err(io)?;
    }
    let width = count.max(1).ilog10() as usize + 1;
    let mut chunk = vec![0u8; CHUNK_ELEMENTS * es];
    let mut i = 0u64;
    while i < count {
        let k = (count - i).min(CHUNK_ELEMENTS as u64) as usize;
        buf.read_at(&mut chunk[..k * es], i * es as u64)?;
        for (j, e) in chunk[..k * es].chunks_exact(es).enumerate() {
            let n = i + j as u64;
            let text = values::format(r.dtype, e);
            if verbose {
                writeln!(w, "[{n:>width$}] {text} (0x{:>w2$X})", values::bits(e), w2 = 2 * es).map_err(io)?;
            } else if n + 1 < count {
                write!(w, "{text}, ").map_err(io)?;
            } else {
                write!(w, "{text}").map_err(io)?;
            }
        }
        i += k as u64;
    }
    writeln!(w).map_err(io)?;
    w.flush().map_err(io)
}

/// What a `writeFile` of `r` writes: for `.npy`, the header and `dimensions`' elements (the
/// whole buffer, 1-D, by default); raw bytes of the whole buffer otherwise.
pub fn write_plan(r: &Resource, target: &Path, dimensions: Option<&[u32]>) -> Result<(Option<Vec<u8>>, u64)> {
    let is_npy = target.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    if !is_npy {
        return Ok((None, r.size));
    }
    let es = r.dtype.size() as u64;
    let shape: Vec<u64> = match dimensions {
        Some(d) => d.iter().map(|&x| u64::from(x)).collect(),
        None => vec![r.size / es],
    };
    let bytes = shape.iter().try_fold(es, |n, &d| n.checked_mul(d));
    match bytes {
        Some(b) if b <= r.size => Ok((Some(encode_header(r.dtype, &shape)), b)),
        _ => Err(anyhow!(
            "dimensions {:?} describe {} of {} but the resource has {} bytes; give dimensions that fit",
            shape,
            bytes.map_or("more than 2^64 bytes".to_string(), |b| format!("{b} bytes")),
            dml_name(r.dtype),
            r.size
        )),
    }
}

fn write_file(r: &Resource, buf: &Buffer, target: &Path, dimensions: Option<&[u32]>, writing: Writing) -> Result<()> {
    let (header, bytes) = write_plan(r, target, dimensions)?;
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create the directory {}", parent.display()))?;
    }
    let mut sink = Sink::open(&Destination::Path(target.to_path_buf()), writing)?;
    if let Some(h) = header {
        sink.write(&h)?;
    }
    let mut chunk = vec![0u8; 1 << 20];
    let mut at = 0u64;
    while at < bytes {
        let k = (bytes - at).min(chunk.len() as u64) as usize;
        buf.read_at(&mut chunk[..k], at)?;
        sink.write(&chunk[..k])?;
        at += k as u64;
    }
    sink.commit()?;
    Ok(())
}
