//! A model's resources as buffers: each an anonymous temporary file of its size (or, until
//! something writes it, the `.npy` or raw source file it comes from, read in place), so memory
//! stays bounded whatever their size; and the ways a dispatch reads and writes them through its
//! tensor descs (views, gathered copies, scattered results).

use super::desc::{addressed_bytes, broadcast_view_shape, for_each_offset, is_packed, sizes64};
use super::model::{BufferDesc, Init, Resource};
use super::values::{self, Scalar};
use crate::dtype::DType;
use crate::npy::input::InputTensor;
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

/// The most bytes of a buffer held in memory to gather or scatter through a tensor desc whose
/// strides are neither packed nor broadcast.
pub const STRIDED_SPAN_LIMIT: u64 = 1 << 30;

/// Elements moved per step when resources are filled, copied, gathered or printed.
pub(super) const CHUNK_ELEMENTS: usize = 1 << 16;

/// A resource's bytes: an anonymous temporary file of exactly its size.
pub(super) struct Buffer {
    pub(super) file: File,
    /// Where byte 0 of the buffer is in `file`.
    pub(super) base: u64,
    pub(super) size: u64,
    /// Bytes of the buffer `file` holds from `base`; the rest reads as zeros.
    pub(super) stored: u64,
    /// `file` is the resource's source file, read in place until something writes the buffer.
    pub(super) shared: bool,
}

impl Buffer {
    /// Reads `bytes.len()` bytes from byte `at` of the buffer.
    pub(super) fn read_at(&self, bytes: &mut [u8], at: u64) -> Result<()> {
        let from_file = self.stored.saturating_sub(at).min(bytes.len() as u64) as usize;
        crate::sys::read_exact_at(&self.file, &mut bytes[..from_file], self.base + at)
            .context("cannot read a buffer")?;
        bytes[from_file..].fill(0);
        Ok(())
    }

    /// Whether bytes `[at, at + len)` can be read straight from the file.
    pub(super) fn holds(&self, at: u64, len: u64) -> bool {
        at.checked_add(len).is_some_and(|end| end <= self.stored)
    }

    /// Makes the buffer a temporary file of its own before it is written (a source file is
    /// never changed).
    pub(super) fn own(&mut self) -> Result<()> {
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

/// A resource's buffer: its source file read in place (a little-endian `.npy`, or a raw file,
/// that is a regular file), else a temporary file filled with its initial values from byte 0
/// (zeros after them).
pub(super) fn make_buffer(r: &Resource) -> Result<Buffer> {
    if let Some(buffer) = source_in_place(r)? {
        return Ok(buffer);
    }
    let file = tempfile::tempfile().context("cannot create a temporary file to hold it")?;
    file.set_len(r.size).with_context(|| format!("cannot make a temporary file of {} bytes", r.size))?;
    match &r.init {
        Init::Bytes(bytes) => put(&file, 0, bytes)?,
        // A new file reads as zeros: a zero constant needs no writing.
        Init::Constant { value, .. } if value.bytes(r.dtype).iter().all(|&b| b == 0) => {}
        Init::Constant { count, value } => fill_constant(&file, r.dtype, *count, value)?,
        Init::Sequence { count, start, delta } => fill_sequence(&file, r.dtype, *count, *start, *delta)?,
        Init::Npy(path) => fill_npy(&file, path)?,
        Init::Raw(path) => fill_raw(&file, path, r.size)?,
    }
    Ok(Buffer { file, base: 0, size: r.size, stored: r.size, shared: false })
}

/// The buffer of a resource whose source file is read in place: a regular `.npy` file in
/// little-endian order (its data region), or a regular raw file; `None` for any other.
fn source_in_place(r: &Resource) -> Result<Option<Buffer>> {
    let regular = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file());
    match &r.init {
        Init::Npy(path) if regular(path) => {
            let input = InputTensor::open_path(path).with_context(|| path.display().to_string())?;
            if !input.header.byte_order.needs_swap() {
                let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
                let h = &input.header;
                return Ok(Some(Buffer {
                    file,
                    base: h.data_offset,
                    size: r.size,
                    stored: h.data_bytes.min(r.size),
                    shared: true,
                }));
            }
        }
        Init::Raw(path) if regular(path) => {
            let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            let len = file.metadata().context("cannot inspect it")?.len();
            if len > r.size {
                bail!("{} grew since the model was read; run again once it is complete", path.display());
            }
            return Ok(Some(Buffer { file, base: 0, size: r.size, stored: len, shared: true }));
        }
        _ => {}
    }
    Ok(None)
}

/// Writes `bytes` at byte `at` of a buffer's new temporary file.
fn put(file: &File, at: u64, bytes: &[u8]) -> Result<()> {
    crate::sys::write_all_at(file, bytes, at).context("cannot write its temporary file")
}

/// Fills `file` with `count` copies of the (non-zero) constant `value` of `dtype`.
fn fill_constant(file: &File, dtype: DType, count: u32, value: &Scalar) -> Result<()> {
    let n = dtype.size();
    let one = value.bytes(dtype);
    let chunk: Vec<u8> = one.iter().copied().cycle().take(n * CHUNK_ELEMENTS.min(count as usize)).collect();
    let mut at = 0u64;
    let total = u64::from(count) * n as u64;
    while at < total {
        let len = (total - at).min(chunk.len() as u64) as usize;
        put(file, at, &chunk[..len])?;
        at += len as u64;
    }
    Ok(())
}

/// Fills `file` with the sequence of `count` values of `dtype` from `start`, `delta` apart.
fn fill_sequence(file: &File, dtype: DType, count: u32, start: Scalar, delta: Scalar) -> Result<()> {
    let mut value = start;
    let mut chunk = Vec::with_capacity(dtype.size() * CHUNK_ELEMENTS);
    let mut at = 0u64;
    for i in 0..count {
        chunk.extend_from_slice(value.bytes(dtype));
        value = values::step(dtype, value, delta);
        if chunk.len() == chunk.capacity() || i + 1 == count {
            put(file, at, &chunk)?;
            at += chunk.len() as u64;
            chunk.clear();
        }
    }
    Ok(())
}

/// Fills `file` with the data of the `.npy` file `path`, in little-endian order.
fn fill_npy(file: &File, path: &Path) -> Result<()> {
    let input = InputTensor::open_path(path).with_context(|| path.display().to_string())?;
    let mut at = 0u64;
    input.for_each_le_chunk(|bytes| {
        put(file, at, bytes)?;
        at += bytes.len() as u64;
        Ok(())
    })
}

/// Fills `file` with the bytes of the raw file `path`, which must still fit in the buffer's
/// `size` bytes.
fn fill_raw(file: &File, path: &Path, size: u64) -> Result<()> {
    let mut src = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    loop {
        let k = src.read(&mut buf).with_context(|| format!("cannot read {}", path.display()))?;
        if k == 0 {
            break;
        }
        if at + k as u64 > size {
            bail!("{} grew while it was being read; run again once it is complete", path.display());
        }
        put(file, at, &buf[..k])?;
        at += k as u64;
    }
    Ok(())
}

/// An input as the backends read it, and the shape of the C-order array it is: a view of the
/// buffer for a packed or broadcast desc, else a packed copy gathered through the desc.
pub(super) fn input_view(name: &str, t: &BufferDesc, buf: &Buffer, offset: u64) -> Result<(InputTensor, Vec<u64>)> {
    let label = format!("{name} (buffer)");
    if let Some(shape) = broadcast_view_shape(t) {
        let file = buf.file.try_clone().context("cannot reopen a buffer")?;
        return Ok((InputTensor::view(&label, file, buf.base + offset, t.dtype, &shape), shape));
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
    Ok((InputTensor::view(&label, packed, 0, t.dtype, &sizes), sizes))
}

/// The bytes of `buf` from `offset` that a strided desc addresses, refused past
/// [`STRIDED_SPAN_LIMIT`].
pub(super) fn span_bytes(t: &BufferDesc, buf: &Buffer, offset: u64) -> Result<u64> {
    let span = addressed_bytes(t).min(buf.size - offset);
    if span > STRIDED_SPAN_LIMIT {
        bail!(
            "its Strides address {span} bytes, more than the {STRIDED_SPAN_LIMIT} bytes tensorop holds in memory for a desc \
             that is neither packed nor broadcast"
        );
    }
    Ok(span)
}

/// Puts a packed result of `elements` into the output buffer through the output desc.
pub(super) fn store_output(out: &BufferDesc, result: &File, elements: u64, target: &Buffer, offset: u64) -> Result<()> {
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
