//! A container output: the members' results written in order through the output `Staged`, so
//! the container reaches its name whole or not at all, as a single result does, and any ordered
//! target (standard output, a FIFO) can take it. `.safetensors`: the header (every member's
//! dtype, shape and byte range, known before anything runs), then each member's elements.
//! `.npz`: each member a stored `NAME.npy` (the `.npy` header, then the elements), then the zip
//! directory.

use super::npz;
use super::safetensors;
use crate::dtype::DType;
use crate::output::from_io;
use crate::output::{BrokenPipe, Staged};
use anyhow::{bail, Context, Result};
use std::io::{self, Write};

/// The format of a container output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutFormat {
    Safetensors,
    Npz,
}

impl OutFormat {
    pub fn name(self) -> &'static str {
        match self {
            OutFormat::Safetensors => "safetensors",
            OutFormat::Npz => "npz",
        }
    }
}

/// One member of the output: its name, dtype and shape.
#[derive(Debug, Clone)]
pub struct OutMember {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
}

/// The container being written.
pub struct ContainerWriter<'a> {
    inner: Inner<'a>,
    /// How errors name the output (`output c.safetensors`).
    label: String,
    /// Bytes handed to the sink.
    pub written: u64,
}

enum Inner<'a> {
    Safetensors(SinkWriter<'a>),
    Npz(Box<npz::Writer<SinkWriter<'a>>>),
}

impl<'a> ContainerWriter<'a> {
    /// Starts a container of `members` in `format` on `sink`: a `.safetensors` header is
    /// written at once. A member `.npz` cannot hold (bfloat16: `.npy` has no such type) is
    /// refused before anything is written.
    pub fn begin(
        format: OutFormat,
        members: &[OutMember],
        sink: &'a mut Staged,
        label: String,
    ) -> Result<ContainerWriter<'a>> {
        let mut w = SinkWriter { sink, written: 0 };
        let inner = match format {
            OutFormat::Safetensors => {
                let list: Vec<_> = members.iter().map(|m| (m.name.clone(), m.dtype, m.shape.clone())).collect();
                let (header, _) = safetensors::header(&list)?;
                w.write_all(&header).map_err(from_io)?;
                Inner::Safetensors(w)
            }
            OutFormat::Npz => {
                if let Some(m) = members.iter().find(|m| !npy_has(m.dtype)) {
                    bail!(
                        "member {}: an .npz holds .npy files, and .npy has no {} type; write a .safetensors output",
                        m.name,
                        m.dtype
                    );
                }
                Inner::Npz(Box::new(npz::Writer::new(w)))
            }
        };
        Ok(ContainerWriter { inner, label, written: 0 })
    }

    /// Starts the next member, whose `.npy` header (for `.npz`) is `npy_header` and whose data
    /// takes `data_bytes`.
    pub fn start_member(&mut self, name: &str, npy_header: &[u8], data_bytes: u64) -> Result<()> {
        if let Inner::Npz(z) = &mut self.inner {
            let label = &self.label;
            z.start(name, npy_header.len() as u64 + data_bytes).with_context(|| format!("output {label}"))?;
            z.write(npy_header).with_context(|| format!("output {label}"))?;
            self.written += npy_header.len() as u64;
        }
        Ok(())
    }

    /// Writes the current member's next data bytes.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let written = match &mut self.inner {
            Inner::Safetensors(w) => w.write_all(bytes).map_err(from_io),
            Inner::Npz(z) => z.write(bytes),
        };
        written.with_context(|| format!("output {}", self.label))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Ends the container (the `.npz` directory); the caller then commits the sink.
    pub fn finish(self) -> Result<()> {
        match self.inner {
            Inner::Safetensors(mut w) => w.flush().map_err(from_io),
            Inner::Npz(z) => z.finish(),
        }
    }
}

impl crate::output::result::ResultSink for ContainerWriter<'_> {
    /// The current member's next data bytes.
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        ContainerWriter::write(self, bytes)
    }
}

/// Whether `.npy` has a type for `dtype` (its type string reads back as the same dtype).
fn npy_has(dtype: DType) -> bool {
    let descr = dtype.npy_descr();
    let kind = descr.chars().nth(1).unwrap_or(' ');
    DType::from_kind_size(kind, descr[2..].parse().unwrap_or(0)) == Some(dtype)
}

/// The sink as an [`io::Write`], for the zip writer; a closed standard output stays a
/// [`BrokenPipe`] through the `io::Error`.
struct SinkWriter<'a> {
    sink: &'a mut Staged,
    written: u64,
}

impl Write for SinkWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sink.write(buf).map_err(|e| {
            if e.is::<BrokenPipe>() {
                io::Error::new(io::ErrorKind::BrokenPipe, BrokenPipe)
            } else {
                io::Error::other(format!("{e:#}"))
            }
        })?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
