//! Files of many tensors: `.npz` (NumPy's zip of `.npy` members, stored or deflated) and
//! `.safetensors` (a JSON header, then every tensor's bytes). An input's format is decided from
//! its first bytes, never from its name ([`sniff`]); a `.npy` file keeps the single-pair path.
//!
//! Opening a container reads its directory only: member names, and each member's dtype and shape
//! (for a deflated `.npz` member, from the first inflated bytes). A member's data is reached when
//! the member runs, as an [`InputTensor`]: a `.safetensors` member and a stored `.npz` member are byte
//! ranges of the file, read in place; a deflated member is inflated as a stream into an
//! anonymous temporary file, checked against its CRC and its declared sizes as it goes.
//!
//! Every rule a hostile file could break (lengths past the end, overlapping or out-of-range byte
//! ranges, duplicate names, members with paths, inflated sizes beyond the declared ones) is a
//! clean error naming the file, the member and the rule; nothing is allocated from what the file
//! claims before it is checked against the file's real size. `docs/containers.md` has the rules.

pub mod npz;
pub mod pairs;
pub mod run;
pub mod safetensors;
pub mod write;

use crate::npy::header::{ByteOrder, FileDType};
use crate::npy::input::{InputTensor, Source};
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{Read, Seek, Write};

/// The on-disk format of an input, as its first bytes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Npy,
    Npz,
    Safetensors,
}

impl Format {
    /// The report's and the messages' name (`npy`, `npz`, `safetensors`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Npy => "npy",
            Format::Npz => "npz",
            Format::Safetensors => "safetensors",
        }
    }
}

/// The format `first` (a file's first bytes, up to 16) starts, if any: `.npy`'s magic string, a
/// zip's local file header or end of central directory (an empty archive), or a safetensors
/// header length followed by the JSON object's `{`.
pub fn sniff(first: &[u8]) -> Option<Format> {
    if first.starts_with(b"\x93NUMPY") {
        Some(Format::Npy)
    } else if first.starts_with(b"PK\x03\x04") || first.starts_with(b"PK\x05\x06") {
        Some(Format::Npz)
    } else if first.len() >= 9 && first[8] == b'{' {
        Some(Format::Safetensors)
    } else {
        None
    }
}

/// Where a member's bytes are in its container.
#[derive(Debug, Clone)]
enum Location {
    /// A `.safetensors` tensor: little-endian C-order elements at `start`.
    Raw { start: u64, dtype: FileDType, item_size: u64 },
    /// A stored `.npz` member: a whole `.npy` file at `[start, start + len)`.
    Stored { start: u64, len: u64 },
    /// A deflated `.npz` member: `compressed` bytes at `start` that inflate to `size` bytes
    /// with CRC-32 `crc`.
    Deflated { start: u64, compressed: u64, size: u64, crc: u32 },
}

/// One tensor of a container, as its directory describes it.
#[derive(Debug, Clone)]
pub struct Member {
    /// The member's name: the safetensors key, or the `.npz` entry without `.npy` (as `np.load`
    /// names it).
    pub name: String,
    /// The dtype and shape, from the header (for `.npz`, the member's own `.npy` header).
    pub dtype: FileDType,
    pub shape: Vec<u64>,
    /// Stored in Fortran order (an `.npz` member's own header says so; never in `.safetensors`).
    pub fortran_order: bool,
    /// The elements' byte order (`.safetensors`: little-endian, or none for 1-byte elements).
    pub byte_order: ByteOrder,
    /// An `.npz` member's `.npy` format version; `None` in `.safetensors`.
    pub npy_version: Option<(u8, u8)>,
    /// The bytes its elements take (the data alone, not an `.npz` member's `.npy` header).
    pub data_bytes: u64,
    location: Location,
}

/// An opened container: its directory read and checked, no data read.
#[derive(Debug)]
pub struct Container {
    /// The path as given on the command line.
    pub label: String,
    pub format: Format,
    pub members: Vec<Member>,
    file: File,
    /// The file's size in bytes.
    pub size: u64,
    /// Bytes read to open it (headers and directory).
    pub bytes_read: u64,
}

/// An input as opened: a single `.npy`, or a container of members.
#[derive(Debug)]
pub enum Opened {
    Single(InputTensor),
    Many(Container),
}

impl Opened {
    /// Opens `source`, deciding its format from its first bytes. A regular file is read in
    /// place (standard input redirected from one too, when it is at the file's start); a
    /// container that is not (a pipe on standard input, a FIFO, `<(...)`) is first copied to an
    /// anonymous temporary file, since its directory may be at its end.
    pub fn open(source: &Source) -> Result<Opened> {
        let label = source.label();
        let file = match source {
            Source::Stdin => crate::sys::duplicate_descriptor(0).context("cannot use standard input")?,
            Source::Path(path) => File::open(path).context("cannot open the file")?,
        };
        // A handle whose kind the system cannot tell (standard input under Wine) is a stream.
        let meta = file.metadata().ok();
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            bail!("is a directory, not a .npy, .npz or .safetensors file");
        }
        if meta.as_ref().is_some_and(|m| m.is_file()) {
            // Standard input redirected from a file starts at its current offset.
            let base = match source {
                Source::Stdin => (&file).stream_position().context("cannot inspect standard input")?,
                Source::Path(_) => 0,
            };
            let mut first = [0u8; 16];
            let n = read_prefix_at(&file, base, &mut first)?;
            // On Windows a positional read moves the handle's position, which standard input's
            // duplicates share: put it back for the reader that follows.
            if *source == Source::Stdin {
                (&file).seek(std::io::SeekFrom::Start(base)).context("cannot rewind standard input")?;
            }
            match sniff(&first[..n]) {
                Some(Format::Npz) if base == 0 => return Ok(Opened::Many(npz::open(&label, file)?)),
                Some(Format::Safetensors) if base == 0 => return Ok(Opened::Many(safetensors::open(&label, file)?)),
                // A container past the start of standard input's file: copied from there, below.
                Some(Format::Npz | Format::Safetensors) => {}
                // `.npy`, or nothing known: the `.npy` reader says what is wrong.
                _ => return Ok(Opened::Single(InputTensor::open(source)?)),
            }
        }
        open_stream(&label, file)
    }
}

/// Opens a stream (a pipe, a FIFO): its first bytes decide its format, and are put back in front
/// of the rest. A `.npy` is spooled by its reader; a container is copied whole, in bounded
/// memory, to an anonymous temporary file in the temporary directory, which it is then read
/// from and which disappears with it.
fn open_stream(label: &str, mut stream: File) -> Result<Opened> {
    let mut first = Vec::with_capacity(16);
    (&mut stream).take(16).read_to_end(&mut first).context("cannot read the input")?;
    let mut whole = std::io::Cursor::new(first.clone()).chain(stream);
    let format = match sniff(&first) {
        Some(f @ (Format::Npz | Format::Safetensors)) => f,
        _ => return Ok(Opened::Single(InputTensor::from_stream(label, whole)?)),
    };
    let mut tmp = tempfile::tempfile().context("cannot create a temporary file to hold the streamed container")?;
    std::io::copy(&mut whole, &mut tmp).context("cannot copy the streamed container to a temporary file")?;
    tmp.flush().context("cannot copy the streamed container to a temporary file")?;
    Ok(Opened::Many(match format {
        Format::Npz => npz::open(label, tmp)?,
        _ => safetensors::open(label, tmp)?,
    }))
}

/// Reads up to `buf.len()` bytes of `file` from byte `at`; returns how many there were.
fn read_prefix_at(file: &File, at: u64, buf: &mut [u8]) -> Result<usize> {
    let len = file.metadata().context("cannot inspect the file")?.len().saturating_sub(at);
    let n = buf.len().min(usize::try_from(len).unwrap_or(usize::MAX));
    crate::sys::read_exact_at(file, &mut buf[..n], at).context("cannot read the file")?;
    Ok(n)
}

impl Container {
    /// The member `i`'s data as an input the pipeline reads: a byte range of the file, or (for a
    /// deflated `.npz` member) its inflated bytes in a temporary file.
    pub fn open_member(&self, i: usize) -> Result<InputTensor> {
        let m = &self.members[i];
        let label = format!("{}[{}]", self.label, m.name);
        let file = self.file.try_clone().context("cannot reopen the file")?;
        let input = match &m.location {
            Location::Raw { start, dtype, item_size } => {
                InputTensor::in_place(&label, file, *start, dtype.clone(), &m.shape, *item_size)
            }
            Location::Stored { start, len } => InputTensor::in_region(&label, file, *start, *len)?,
            Location::Deflated { start, compressed, size, crc } => {
                npz::inflate_member(&label, &file, *start, *compressed, *size, *crc)?
            }
        };
        Ok(input)
    }

    /// The bytes the member's data takes once read (inflated, for a deflated `.npz` member).
    pub fn member_bytes(&self, i: usize) -> u64 {
        match &self.members[i].location {
            Location::Raw { item_size, .. } => {
                self.members[i].shape.iter().try_fold(*item_size, |n, &d| n.checked_mul(d)).unwrap_or(u64::MAX)
            }
            Location::Stored { len, .. } => *len,
            Location::Deflated { size, .. } => *size,
        }
    }
}

/// Whether `name` is safe as a member name: not empty, no NUL, not absolute, no drive letter and
/// no `..` component (a zip entry `../x.npy` would escape the folder of anyone who unpacks it).
/// `Err` says which rule it breaks.
pub fn check_member_name(name: &str) -> std::result::Result<(), &'static str> {
    if name.is_empty() {
        return Err("an empty name");
    }
    if name.contains('\0') {
        return Err("a NUL character in the name");
    }
    if name.starts_with('/') || name.starts_with('\\') {
        return Err("an absolute path");
    }
    let b = name.as_bytes();
    if b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic() {
        return Err("a drive letter");
    }
    if name.split(['/', '\\']).any(|c| c == "..") {
        return Err("a `..` path component");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_apart_by_their_first_bytes() {
        assert_eq!(sniff(b"\x93NUMPY\x01\x00"), Some(Format::Npy));
        assert_eq!(sniff(b"PK\x03\x04\x14\x00"), Some(Format::Npz));
        assert_eq!(sniff(b"PK\x05\x06\0\0\0\0"), Some(Format::Npz));
        assert_eq!(sniff(b"\x40\0\0\0\0\0\0\0{\"a\":"), Some(Format::Safetensors));
        assert_eq!(sniff(b"\x40\0\0\0\0\0\0\0["), None);
        assert_eq!(sniff(b"hello"), None);
        assert_eq!(sniff(b""), None);
    }

    #[test]
    fn member_names_that_escape_a_folder_are_refused() {
        for ok in ["w", "layer.0.weight", "a/b", "dots..inside"] {
            assert_eq!(check_member_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", "../x", "a/../../x", "/etc/x", "\\x", "C:x", "a\\..\\x", "a\0b"] {
            assert!(check_member_name(bad).is_err(), "{bad:?}");
        }
    }
}
