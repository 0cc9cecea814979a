//! `.npz`: a zip archive of `.npy` files, as `np.savez` (stored) and `np.savez_compressed`
//! (deflated) write it; member `x.npy` is the array `np.load` names `x`. The zip crate reads the
//! central directory (zip64 included); tensorop then checks what an archive could lie about:
//! every member is a `.npy` entry, stored or deflated, not encrypted, with a safe name (no
//! absolute path, no `..`), named once, whose bytes lie within the file and overlap no other
//! member's. A deflated member is inflated here, with positional reads so that members can be
//! inflated at once: it must inflate to exactly its declared size with its declared CRC-32, and
//! its declared size must be one deflate can produce from its compressed size (a zip bomb's
//! declared sizes are checked before anything is inflated, its real sizes while inflating).
//!
//! Writing: [`Writer`] writes stored members with the zip crate.

use super::{check_member_name, Container, Format, Location, Member};
use crate::npy::header::{read_header, Header, MAX_STREAM_HEADER};
use crate::npy::input::{InputTensor, RegionReader};
use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::io::{self, Read, Write};
use zip::CompressionMethod;

/// Deflate's largest expansion: 258 bytes from one 1-bit code, about 1032 to 1; with room for
/// block headers on tiny members.
const MAX_DEFLATE_RATIO: u64 = 1032;
const RATIO_SLACK: u64 = 1 << 16;

/// Opens a `.npz` file: directory read and checked, each member's `.npy` header read.
pub fn open(label: &str, file: File) -> Result<Container> {
    // The caller names the input (`input A (a.npz)`); messages here name the rule and the member.
    let size = file.metadata().context("cannot inspect the file")?.len();
    let mut members = read_directory(&file, size)?;
    let mut bytes_read = 0;
    for m in &mut members {
        let header = member_header(label, &file, m)?;
        bytes_read += header.data_offset;
        m.dtype = header.dtype;
        m.shape = header.shape;
        m.fortran_order = header.fortran_order;
        m.byte_order = header.byte_order;
        m.npy_version = Some(header.version);
        m.data_bytes = header.data_bytes;
    }
    Ok(Container { label: label.into(), format: Format::Npz, members, file, size, bytes_read })
}

/// The error for an archive that breaks `rule`.
fn invalid(rule: String) -> anyhow::Error {
    anyhow!("not a valid .npz file: {rule}")
}

/// The archive's directory, read and checked: its `.npy` members where they lie in the file of
/// `size` bytes, their headers not read yet.
fn read_directory(file: &File, size: u64) -> Result<Vec<Member>> {
    let mut archive = zip::ZipArchive::new(file).map_err(|e| invalid(format!("{e}")))?;
    if archive.has_duplicate_names() {
        return Err(invalid("a member name appears twice in the archive's directory".into()));
    }
    let mut members = Vec::with_capacity(archive.len());
    let mut ranges = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let entry = archive.by_index_raw(i).map_err(|e| invalid(format!("entry {i}: {e}")))?;
        let entry_name = entry.name().map_err(|e| invalid(format!("entry {i}: {e}")))?.into_owned();
        let bad = |rule: String| invalid(format!("member {entry_name:?}: {rule}"));
        if entry.is_dir() {
            continue;
        }
        let Some(name) = entry_name.strip_suffix(".npy") else {
            return Err(bad("not a .npy member (an .npz holds .npy files only)".into()));
        };
        // The member's name, as np.load gives it: `.npy` alone would be an empty name.
        check_member_name(name).map_err(|rule| bad(rule.into()))?;
        if entry.encrypted() {
            return Err(bad("encrypted members are not supported".into()));
        }
        let start = entry.data_start().ok_or_else(|| bad("its local header could not be read".into()))?;
        let (compressed, inflated, crc) = (entry.compressed_size(), entry.size(), entry.crc32());
        let end = start.checked_add(compressed).filter(|&e| e <= size).ok_or_else(|| {
            bad(format!("its {compressed} bytes at offset {start} lie past the end of the file ({size} bytes)"))
        })?;
        ranges.push((entry.header_start(), end, name.to_string()));
        let location = location(entry.compression(), start, compressed, inflated, crc).map_err(bad)?;
        members.push(Member {
            name: name.to_string(),
            dtype: crate::npy::header::FileDType::Other(String::new()),
            shape: vec![],
            fortran_order: false,
            byte_order: crate::npy::header::ByteOrder::NotApplicable,
            npy_version: None,
            data_bytes: 0,
            location,
        });
    }
    check_overlaps(&mut ranges).map_err(invalid)?;
    Ok(members)
}

/// Where a member of `compressed` bytes at `start` is, by how it is compressed: stored (its
/// sizes equal) or deflated (to `inflated` bytes no larger than deflate can produce); the
/// broken rule if neither.
fn location(
    method: CompressionMethod,
    start: u64,
    compressed: u64,
    inflated: u64,
    crc: u32,
) -> std::result::Result<Location, String> {
    Ok(match method {
        CompressionMethod::Stored if compressed == inflated => Location::Stored { start, len: compressed },
        CompressionMethod::Stored => {
            return Err(format!("stored with {compressed} bytes but declared as {inflated} bytes uncompressed"))
        }
        m if m == CompressionMethod::DEFLATE => {
            if inflated > compressed.saturating_mul(MAX_DEFLATE_RATIO).saturating_add(RATIO_SLACK) {
                return Err(format!(
                    "declares {inflated} bytes inflated from {compressed} compressed bytes, more than deflate \
                     can produce (a zip bomb or a corrupt directory)"
                ));
            }
            Location::Deflated { start, compressed, size: inflated, crc }
        }
        other => return Err(format!("compressed with {other}; only stored and deflated members are read")),
    })
}

/// Member `m`'s `.npy` header, read in place (stored) or from the start of its inflated bytes
/// (deflated, whose header must describe the member's declared size).
fn member_header(label: &str, file: &File, m: &Member) -> Result<Header> {
    let label = format!("{label}[{}]", m.name);
    let member = format!("member {:?}", m.name);
    Ok(match m.location {
        Location::Stored { start, len } => {
            let input =
                InputTensor::in_region(&label, file.try_clone()?, start, len).with_context(|| member.clone())?;
            input.header
        }
        Location::Deflated { start, compressed, size, .. } => {
            let mut inflated = inflater(file, start, compressed).take(size);
            let header = read_header(&mut inflated, MAX_STREAM_HEADER.min(size))
                .with_context(|| format!("{member}: its .npy header"))?;
            let whole = header.data_offset.checked_add(header.data_bytes);
            if whole != Some(size) {
                bail!(
                    "{member}: its .npy header describes {} bytes but the archive declares the member as \
                     {size} bytes; the archive is corrupt",
                    whole.map_or("more than 2^64".into(), |w| w.to_string())
                );
            }
            header
        }
        Location::Raw { .. } => unreachable!("an .npz member is stored or deflated"),
    })
}

/// Refuses members whose bytes (local header to end of data) overlap: an archive that reuses
/// bytes for several members (the overlapping zip bomb).
fn check_overlaps(ranges: &mut [(u64, u64, String)]) -> std::result::Result<(), String> {
    ranges.sort();
    for w in ranges.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(format!("members {:?} and {:?} share bytes of the file (overlapping members)", w[0].2, w[1].2));
        }
    }
    Ok(())
}

/// The inflated bytes of the deflate stream of `compressed` bytes at `start`.
fn inflater(file: &File, start: u64, compressed: u64) -> flate2::read::DeflateDecoder<RegionReader<'_>> {
    flate2::read::DeflateDecoder::new(RegionReader { file, at: start, end: start + compressed })
}

/// A reader that counts and checksums what passes through it.
struct Checked<R> {
    inner: R,
    crc: crc32fast::Hasher,
    count: u64,
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

/// Inflates a deflated member into a temporary file and opens it: its size and CRC-32 must be
/// the declared ones. The temporary directory must have room for it first.
pub(super) fn inflate_member(
    label: &str,
    file: &File,
    start: u64,
    compressed: u64,
    size: u64,
    crc: u32,
) -> Result<InputTensor> {
    let tmp = std::env::temp_dir();
    if let Some(free) = crate::sys::available_bytes(&tmp) {
        if size > free {
            bail!(
                "input {label}: the member inflates to {size} bytes but the temporary directory {} has {free} bytes \
                 free; set TMPDIR to a directory with room",
                tmp.display()
            );
        }
    }
    // One byte more than declared is read, to tell a member that inflates to more.
    let mut reader = Checked {
        inner: inflater(file, start, compressed).take(size.saturating_add(1)),
        crc: crc32fast::Hasher::new(),
        count: 0,
    };
    let input = InputTensor::from_stream(label, &mut reader);
    let more =
        || anyhow!("input {label}: the member inflates to more than its declared {size} bytes; the archive is corrupt");
    // The .npy reader stops one byte past the data it expects: a member that inflates to more
    // than declared fails there, and is named for what it is.
    let input = match input {
        Err(_) if reader.count > size => return Err(more()),
        other => other.with_context(|| format!("input {label}"))?,
    };
    io::copy(&mut reader, &mut io::sink()).with_context(|| format!("input {label}: cannot inflate"))?;
    if reader.count > size {
        return Err(more());
    }
    if reader.count != size {
        bail!(
            "input {label}: the member inflates to {} bytes, fewer than its declared {size}; the archive is corrupt",
            reader.count
        );
    }
    let got = reader.crc.finalize();
    if got != crc {
        bail!("input {label}: CRC-32 mismatch (the archive says {crc:08x}, the data gives {got:08x}); the archive is corrupt");
    }
    Ok(input)
}

/// An `.npz` being written: each member a stored `NAME.npy`, streamed (sizes and CRC in data
/// descriptors after each member's data), so any ordered target can take it.
///
/// The zip writer is kept out of `Drop`: dropped unfinished (a failed run), it would try to
/// write the directory to a target that just failed and print its own error. A writer dropped
/// without [`Writer::finish`] is abandoned instead, with the partial output it was writing.
pub struct Writer<W: Write> {
    zip: std::mem::ManuallyDrop<zip::ZipWriter<zip::write::StreamWriter<W>>>,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Writer<W> {
        Writer { zip: std::mem::ManuallyDrop::new(zip::ZipWriter::new_stream(out)) }
    }

    /// Starts member `name` (`name.npy` in the archive) of `len` bytes (a `.npy` file's).
    pub fn start(&mut self, name: &str, len: u64) -> Result<()> {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .large_file(len >= u32::MAX as u64);
        self.zip.start_file(format!("{name}.npy"), options).map_err(|e| match e {
            // The target's own error (a closed standard output stays a `BrokenPipe`).
            zip::result::ZipError::Io(io) => crate::output::from_io(io),
            other => anyhow!("member {name}: {other}"),
        })
    }

    /// Writes the current member's next bytes.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.zip.write_all(bytes).map_err(crate::output::from_io)
    }

    /// Writes the central directory.
    pub fn finish(self) -> Result<()> {
        let zip = std::mem::ManuallyDrop::into_inner(self.zip);
        zip.finish().map_err(|e| match e {
            zip::result::ZipError::Io(io) => crate::output::from_io(io),
            other => anyhow!("cannot write: {other}"),
        })?;
        Ok(())
    }
}
