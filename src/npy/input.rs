//! Opened `.npy` inputs: the header checked against the file's real size, and bulk positional
//! reads of the data region into typed buffers (byte-swapped when the file's order differs from
//! the machine's). Regular files are read in place with `pread`, never memory-mapped, so a file
//! truncated during a run is an error, not a crash. Pipes and other streams (`-`, `<(...)`) are
//! first copied to an anonymous temporary file, checked byte for byte against the header.

use crate::dtype::Element;
use crate::npy::header::{read_header, Header, MAX_STREAM_HEADER};
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{self, Read, Seek};
use std::path::{Path, PathBuf};

/// Where an input comes from, as the command line named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `-`.
    Stdin,
    Path(PathBuf),
}

impl Source {
    /// `-` is standard input; anything else is a path.
    pub fn parse(arg: &str) -> Source {
        if arg == "-" {
            Source::Stdin
        } else {
            Source::Path(PathBuf::from(arg))
        }
    }

    /// As given on the command line (`-` for standard input).
    pub fn label(&self) -> String {
        match self {
            Source::Stdin => "-".into(),
            Source::Path(p) => p.display().to_string(),
        }
    }

    /// For messages: `standard input`, or the path.
    pub fn describe(&self) -> String {
        match self {
            Source::Stdin => "standard input".into(),
            Source::Path(p) => p.display().to_string(),
        }
    }
}

/// One input tensor as the plan and the backends read it: a `.npy` file (or standard input,
/// spooled), a container's member, or a view of a DxDispatch buffer; its header parsed (or
/// given), its data region located and size-checked.
#[derive(Debug)]
pub struct InputTensor {
    /// The path as given on the command line (`-` for standard input).
    pub label: String,
    pub header: Header,
    file: File,
    /// Offset of the first data byte in `file`.
    data_start: u64,
    /// Bytes of the file this input accounts for (header and data).
    pub bytes_read: u64,
}

impl InputTensor {
    /// Opens `source`, parses its header and checks the data region's size.
    pub fn open(source: &Source) -> Result<InputTensor> {
        let file = match source {
            Source::Stdin => crate::sys::duplicate_descriptor(0).context("cannot use standard input")?,
            Source::Path(p) => File::open(p).context("cannot open the file")?,
        };
        Self::from_file(&source.label(), file)
    }

    /// Opens the file at `path` (no `-` convention).
    pub fn open_path(path: impl AsRef<Path>) -> Result<InputTensor> {
        Self::open(&Source::Path(path.as_ref().to_path_buf()))
    }

    fn from_file(label: &str, mut file: File) -> Result<InputTensor> {
        // On Windows, a handle whose kind the system cannot tell (standard input under Wine) is
        // read as a stream.
        let meta = match file.metadata() {
            Ok(meta) => Some(meta),
            Err(_) if cfg!(windows) => None,
            Err(e) => return Err(e).context("cannot inspect the file"),
        };
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            bail!("is a directory, not a .npy file");
        }
        if let Some(meta) = meta.filter(|m| m.is_file()) {
            // Read in place: the header is bounded by the real size before anything is allocated.
            let base = file.stream_position().unwrap_or(0);
            let size = meta.len().saturating_sub(base);
            let header = read_header(&mut file, size.saturating_sub(10))?;
            let available = size - header.data_offset.min(size);
            check_size(&header, available)?;
            let data_start = base + header.data_offset;
            Ok(InputTensor { label: label.into(), header, file, data_start, bytes_read: size })
        } else {
            Self::spool(label, file)
        }
    }

    /// A `.npy` file stored whole in `file` at bytes `[start, start + len)` (a stored `.npz`
    /// member): the header is read there and the data region must fill the rest exactly.
    pub fn in_region(label: &str, file: File, start: u64, len: u64) -> Result<InputTensor> {
        let mut reader = RegionReader { file: &file, at: start, end: start.saturating_add(len) };
        let header = read_header(&mut reader, len.saturating_sub(10))?;
        let available = len - header.data_offset.min(len);
        check_size(&header, available)?;
        let data_start = start + header.data_offset;
        Ok(InputTensor { label: label.into(), header, file, data_start, bytes_read: len })
    }

    /// A `.npy` file read from `stream` (a decompressed `.npz` member), copied to an anonymous
    /// temporary file as standard input is, checked byte for byte against its header.
    pub fn from_stream(label: &str, stream: impl Read) -> Result<InputTensor> {
        Self::spool(label, stream)
    }

    /// Elements of `dtype` (or of a dtype tensorop cannot compute, for the checks to refuse by
    /// name) in C order, little-endian, stored in `file` from byte `data_start`: a
    /// `.safetensors` member. The caller has checked that `file` holds them.
    pub fn in_place(
        label: &str,
        file: File,
        data_start: u64,
        dtype: crate::npy::header::FileDType,
        shape: &[u64],
        item_size: u64,
    ) -> InputTensor {
        use crate::npy::header::ByteOrder;
        let elements = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)).unwrap_or(u64::MAX);
        let header = Header {
            version: (1, 0),
            dtype,
            byte_order: if item_size == 1 { ByteOrder::NotApplicable } else { ByteOrder::Little },
            fortran_order: false,
            shape: shape.to_vec(),
            data_offset: 0,
            item_size,
            elements,
            data_bytes: elements.saturating_mul(item_size),
        };
        InputTensor { label: label.into(), header, file, data_start, bytes_read: elements.saturating_mul(item_size) }
    }

    /// Copies a stream's data region to an anonymous temporary file so it can be read at any
    /// offset, checking it is exactly as long as the header says.
    fn spool(label: &str, mut stream: impl Read) -> Result<InputTensor> {
        let header = read_header(&mut stream, MAX_STREAM_HEADER)?;
        let mut tmp = tempfile::tempfile().context("cannot create a temporary file to hold the streamed input")?;
        let want = header.data_bytes;
        let copied = io::copy(&mut (&mut stream).take(want.saturating_add(1)), &mut tmp)
            .context("cannot copy the streamed input to a temporary file")?;
        check_size(&header, copied)?;
        let total = header.data_offset + copied;
        Ok(InputTensor { label: label.into(), header, file: tmp, data_start: 0, bytes_read: total })
    }

    /// Reads `out.len()` elements starting at element `start` of the data region (storage
    /// order), in the machine's byte order.
    pub fn read_into<T: Element>(&self, start: u64, out: &mut [T]) -> Result<()> {
        self.read_raw(start * std::mem::size_of::<T>() as u64, bytemuck::cast_slice_mut(out))?;
        if self.header.byte_order.needs_swap() {
            out.iter_mut().for_each(|x| *x = x.swap_bytes());
        }
        Ok(())
    }

    /// What tells this file from another with the same header, cheaply: its size, its
    /// modification time and a CRC-32 of the first and last 64 KiB of its data. Parts of one job
    /// (`--part`) compare it, so that parts given different files refuse to combine.
    pub(crate) fn identity(&self) -> Result<serde_json::Value> {
        let meta = self.file.metadata().with_context(|| format!("input {}: cannot inspect", self.label))?;
        let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        let sample = self.header.data_bytes.min(64 << 10);
        let mut crc = crc32fast::Hasher::new();
        let mut buf = vec![0u8; sample as usize];
        for at in [0, self.header.data_bytes - sample] {
            self.read_raw(at, &mut buf)?;
            crc.update(&buf);
        }
        Ok(serde_json::json!({
            "bytes": meta.len(),
            "modified_ns": modified.map(|d| d.as_nanos().to_string()),
            "sample_crc32": format!("{:08x}", crc.finalize()),
        }))
    }

    /// Reads `bytes.len()` bytes of the data region from byte `at`, as stored.
    pub fn read_raw(&self, at: u64, bytes: &mut [u8]) -> Result<()> {
        let offset = self.data_start + at;
        crate::sys::read_exact_at(&self.file, bytes, offset).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                anyhow::anyhow!(
                    "input {}: the file became shorter while it was being read ({} bytes wanted at offset \
                     {offset}); was it modified during the run? Run again once it is complete",
                    self.label,
                    bytes.len()
                )
            } else {
                anyhow::Error::new(e).context(format!("input {}: read failed", self.label))
            }
        })
    }

    /// Reads elements from element `start` into `bytes` (a whole number of elements),
    /// little-endian whatever the file's byte order: what `.npy` outputs and DxDispatch buffers
    /// hold.
    pub fn read_le(&self, start: u64, bytes: &mut [u8]) -> Result<()> {
        let size = self.header.item_size.max(1);
        self.read_raw(start * size, bytes)?;
        if self.header.byte_order == crate::npy::header::ByteOrder::Big {
            bytes.chunks_exact_mut(size as usize).for_each(<[u8]>::reverse);
        }
        Ok(())
    }

    /// Every data byte in storage order, little-endian, handed to `f` in chunks of whole
    /// elements (about 1 MiB), so memory stays bounded.
    pub fn for_each_le_chunk(&self, mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let size = self.header.item_size.max(1);
        let per_chunk = ((1u64 << 20) / size).max(1);
        let mut buf = vec![0u8; (per_chunk * size).min(self.header.data_bytes) as usize];
        let mut done = 0u64;
        while done < self.header.elements {
            let k = (self.header.elements - done).min(per_chunk);
            let bytes = &mut buf[..(k * size) as usize];
            self.read_le(done, bytes)?;
            f(bytes)?;
            done += k;
        }
        Ok(())
    }

    /// A C-order little-endian view of `shape` elements of `dtype` stored in `file` from byte
    /// `data_start`: how a DxDispatch buffer, addressed by a packed or broadcast tensor desc,
    /// reaches the backends. The caller has checked that `file` holds the elements.
    pub fn view(label: &str, file: File, data_start: u64, dtype: crate::dtype::DType, shape: &[u64]) -> InputTensor {
        use crate::npy::header::{ByteOrder, FileDType};
        let elements = shape.iter().product::<u64>();
        let item_size = dtype.size() as u64;
        let header = Header {
            version: (1, 0),
            dtype: FileDType::Numeric(dtype),
            byte_order: if item_size == 1 { ByteOrder::NotApplicable } else { ByteOrder::Little },
            fortran_order: false,
            shape: shape.to_vec(),
            data_offset: 0,
            item_size,
            elements,
            data_bytes: elements * item_size,
        };
        InputTensor { label: label.into(), header, file, data_start, bytes_read: 0 }
    }

    /// This input with its data replaced by `file`, which holds the same elements in C order
    /// from offset 0 (see [`crate::npy::fortran`]).
    pub fn with_c_order_data(&self, file: File) -> InputTensor {
        let mut header = self.header.clone();
        header.fortran_order = false;
        InputTensor { label: self.label.clone(), header, file, data_start: 0, bytes_read: self.bytes_read }
    }
}

/// Reads `file` from `at` up to `end` with positional reads (the file's cursor is not used, so
/// other readers of the same file are not disturbed).
pub(crate) struct RegionReader<'a> {
    pub file: &'a File,
    pub at: u64,
    pub end: u64,
}

impl Read for RegionReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (self.end.saturating_sub(self.at)).min(buf.len() as u64) as usize;
        if n == 0 {
            return Ok(0);
        }
        crate::sys::read_exact_at(self.file, &mut buf[..n], self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// Checks that exactly `header.data_bytes` bytes follow the header.
fn check_size(header: &Header, available: u64) -> Result<()> {
    let want = header.data_bytes;
    if available < want {
        bail!(
            "truncated data: the header describes {} elements of {} bytes ({want} bytes) but only \
             {available} bytes follow it; the file is incomplete",
            header.elements,
            header.item_size
        );
    }
    if available > want {
        bail!(
            "trailing bytes after the data: the header describes {want} bytes of data but {} more \
             follow; the header and the data disagree",
            available - want
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::npy::header::encode_header;
    use std::io::Write;

    fn write_file(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    fn f32_file(vals: &[f32], extra: &[u8]) -> tempfile::NamedTempFile {
        let mut bytes = encode_header(DType::F32, &[vals.len() as u64]);
        bytes.extend(vals.iter().flat_map(|v| v.to_le_bytes()));
        bytes.extend_from_slice(extra);
        write_file(&bytes)
    }

    #[test]
    fn reads_ranges_in_bulk() {
        let f = f32_file(&[1.0, 2.0, 3.0, 4.0], &[]);
        let input = InputTensor::open_path(f.path()).unwrap();
        let mut buf = [0f32; 2];
        input.read_into(1, &mut buf).unwrap();
        assert_eq!(buf, [2.0, 3.0]);
        // Past the end: what a file truncated during the run looks like.
        let e = input.read_into(3, &mut buf).unwrap_err().to_string();
        assert!(e.contains("became shorter while it was being read"), "{e}");
    }

    #[test]
    fn swaps_big_endian() {
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let dict = "{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }\n";
        bytes.extend((dict.len() as u16).to_le_bytes());
        bytes.extend(dict.as_bytes());
        bytes.extend([0x01, 0x02, 0xff, 0x00]);
        let f = write_file(&bytes);
        let input = InputTensor::open_path(f.path()).unwrap();
        let mut buf = [0u16; 2];
        input.read_into(0, &mut buf).unwrap();
        assert_eq!(buf, [0x0102, 0xff00]); // As little-endian bytes: per element, by chunk and whole.
        let mut le = [0u8; 4];
        input.read_le(0, &mut le).unwrap();
        assert_eq!(le, [0x02, 0x01, 0x00, 0xff]);
        let mut all = Vec::new();
        input
            .for_each_le_chunk(|b| {
                all.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
        assert_eq!(all, le);
    }

    #[test]
    fn refuses_truncated_and_trailing_data() {
        let mut f = f32_file(&[1.0, 2.0], &[]);
        let full = std::fs::read(f.path()).unwrap();
        let short = write_file(&full[..full.len() - 1]);
        let e = InputTensor::open_path(short.path()).unwrap_err();
        assert!(e.to_string().contains("truncated data"), "{e}");
        f.write_all(b"x").unwrap();
        let e = InputTensor::open_path(f.path()).unwrap_err();
        assert!(e.to_string().contains("trailing bytes"), "{e}");
    }

    #[test]
    fn spools_streams_and_checks_their_length() {
        let f = f32_file(&[5.0, 6.0], &[]);
        let bytes = std::fs::read(f.path()).unwrap();
        for (data, ok) in [
            (bytes.clone(), true),
            (bytes[..bytes.len() - 2].to_vec(), false),
            ([bytes.clone(), vec![0]].concat(), false),
        ] {
            let (r, mut w) = std::io::pipe().unwrap();
            let writer = std::thread::spawn(move || {
                let _ = w.write_all(&data);
            });
            #[cfg(unix)]
            let r = File::from(std::os::fd::OwnedFd::from(r));
            #[cfg(windows)]
            let r = File::from(std::os::windows::io::OwnedHandle::from(r));
            let res = InputTensor::spool("-", r);
            writer.join().unwrap();
            assert_eq!(res.is_ok(), ok);
            if let Ok(input) = res {
                let mut buf = [0f32; 2];
                input.read_into(0, &mut buf).unwrap();
                assert_eq!(buf, [5.0, 6.0]);
                assert_eq!(input.bytes_read, bytes.len() as u64, "the report's bytes_read: header and data");
                assert_eq!(input.label, "-");
            }
        }
    }

    #[test]
    fn sources_are_labelled_as_given() {
        let f = f32_file(&[1.0], &[]);
        let input = InputTensor::open_path(f.path()).unwrap();
        assert_eq!(input.label, f.path().display().to_string());
        assert_eq!(input.bytes_read, std::fs::metadata(f.path()).unwrap().len());
        assert_eq!((Source::parse("-").label(), Source::parse("-").describe()), ("-".into(), "standard input".into()));
        let p = Source::parse("dir/a b.npy");
        assert_eq!((p.label(), p.describe()), ("dir/a b.npy".into(), "dir/a b.npy".into()));
    }
}
