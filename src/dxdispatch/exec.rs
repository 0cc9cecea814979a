//! Running a checked model (`checks`): the resources made as buffers (`buffer`), then the
//! commands in order. A dispatch reads its inputs through the same backends as
//! `sub` and `sqdiff`: a packed or broadcast desc is a C-order view of the buffer, streamed
//! through the plan; a desc with other strides is first gathered into a packed file, through the
//! span of the buffer it addresses held in memory (at most [`super::buffer::STRIDED_SPAN_LIMIT`]). The result
//! streams into a temporary file and is then copied (packed output desc) or scattered (strided)
//! into the output buffer, so an output that aliases an input reads every input element before
//! any is overwritten.

use super::buffer::{input_view, make_buffer, store_output, Buffer, CHUNK_ELEMENTS};
use super::desc::{addressed_bytes, element_count, sizes64, streams_into_output};
use super::model::{Binding, Command, Dispatchable, Model, Resource, TENSOR_NAMES};
use super::values;
use crate::backend::{Engine, Job};
use crate::npy::header::encode_header;
use crate::npy::input::InputTensor;
use crate::op::{Float16Rule, Semantics};
use crate::output::result::ResultSink;
use crate::output::{BrokenPipe, Destination, Staged, Writing};
use crate::plan::Plan;
use crate::shape::{view_strides, Iteration};
use crate::spec::dml::dml_name;
use crate::verdict::Scope;
use anyhow::{anyhow, Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a run's work goes.
pub struct Runner<'a> {
    pub model: &'a Model,
    pub engine: &'a Engine,
    pub threads: usize,
    /// `--float16`: how float16 dispatches round.
    pub float16: Float16Rule,
    pub writing: Writing,
    /// Standard output, for `print`.
    pub out: &'a mut dyn Write,
    /// The files written, in order.
    pub written: Vec<PathBuf>,
    /// Standard output was closed by its reader: later `print`s are skipped, the rest runs.
    pub out_closed: bool,
    /// `--verify`: every dispatch's output against the CPU's reference, merged.
    pub verified: Option<crate::backend::directml::verify::Verified>,
    /// The command running now: `commands[N]`, which names a dispatch's verdict.
    pub command: usize,
}

impl Runner<'_> {
    /// Adds the verdict of dispatch `name` (the command running now) to the run's.
    fn verified(&mut self, name: &str, v: Option<crate::backend::directml::verify::Verified>) {
        let Some(v) = v else { return };
        let scope = Scope::Dispatch(format!("commands[{}] {name}", self.command), self.command as u64);
        let v = v.scoped(scope);
        match &mut self.verified {
            Some(mine) => mine.merge(&v),
            None => self.verified = Some(v),
        }
    }

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
                    self.command = i;
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
            .collect::<Result<Vec<(InputTensor, Vec<u64>)>>>()?;
        let strides = [0, 1].map(|i| view_strides(&views[i].1, false, &sizes));
        let inputs = [&views[0].0, &views[1].0];
        let iter = Iteration::new(&sizes, &strides[0], &strides[1]);
        let feeds = Plan::feeds(&iter, inputs, self.engine.resident_limit());
        let job = Job {
            sem: Semantics { op: d.op, float16: self.float16 },
            dtype,
            shape: &sizes,
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
            let mut sink = IntoBuffer { file: &target.file, at: out_offset };
            let ran = self.engine.compute_into(&job, &mut sink, &mut |_| {})?;
            self.verified(&d.name, ran.verified);
            return Ok(());
        }
        let mut result = tempfile::tempfile().context("cannot create a temporary file for the result")?;
        {
            let mut sink = IntoTemporary(std::io::BufWriter::with_capacity(1 << 20, &mut result));
            let ran = self.engine.compute_into(&job, &mut sink, &mut |_| {})?;
            self.verified(&d.name, ran.verified);
            sink.0.flush().context("cannot write the result to a temporary file")?;
        }
        store_output(out, &result, elements, target, out_offset)
    }
}

/// A dispatch's result written straight into its output buffer, from byte `at`.
struct IntoBuffer<'f> {
    file: &'f std::fs::File,
    at: u64,
}

impl ResultSink for IntoBuffer<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        crate::sys::write_all_at(self.file, bytes, self.at).context("cannot write the output buffer")?;
        self.at += bytes.len() as u64;
        Ok(())
    }
}

/// A dispatch's result written in order into a temporary file, to be stored through the
/// output desc once every input element was read.
struct IntoTemporary<W: Write>(W);

impl<W: Write> ResultSink for IntoTemporary<W> {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.0.write_all(bytes).context("cannot write the result to a temporary file")
    }
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
    let mut sink = Staged::open(&Destination::Path(target.to_path_buf()), writing)?;
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
