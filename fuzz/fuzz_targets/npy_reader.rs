//! Fuzz target: the `.npy` reader, header and data. Any byte string is opened exactly as the
//! command line opens inputs, twice: as a regular file (read in place) and through a pipe, as
//! `<(...)` or `-` give it (spooled to a temporary file). Both must accept or refuse the same
//! inputs and agree on the header and every data byte. When the header is accepted, every element
//! is read in the header's dtype (byte-swapped as needed), a Fortran-order input is copied in C
//! order and checked element by element against the original, and `info`'s description is
//! rendered. Nothing may panic, hang or allocate from an unchecked header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write;
use std::os::fd::AsRawFd;
use tensorop::npy::fortran;
use tensorop::npy::header::FileDType;
use tensorop::npy::input::InputTensor;
use tensorop::report::InputInfo;

/// Inputs up to this size also go through a pipe (they fit in its buffer, so the writer can
/// finish before the reader starts).
const PIPE_MAX: usize = 16 << 10;

/// Opens `data` through a pipe, by its `/dev/fd` path, the way a shell's `<(...)` hands it over.
fn open_piped(data: &[u8]) -> Option<anyhow::Result<InputTensor>> {
    let (reader, mut writer) = std::io::pipe().ok()?;
    writer.write_all(data).ok()?;
    drop(writer);
    let input = InputTensor::open_path(format!("/dev/fd/{}", reader.as_raw_fd()));
    Some(input)
}

/// Every data byte of `input` in storage order, read in its dtype (machine byte order), or
/// `None` for dtypes tensorop never reads.
fn read_all(input: &InputTensor) -> Option<Vec<u8>> {
    let h = &input.header;
    let FileDType::Numeric(dtype) = h.dtype else { return None };
    let mut all = Vec::new();
    tensorop::with_dtype!(dtype, T => {
        let mut buf = vec![<T as bytemuck::Zeroable>::zeroed(); h.elements.min(1 << 12) as usize];
        let mut at = 0u64;
        while at < h.elements {
            let n = (h.elements - at).min(buf.len() as u64) as usize;
            input.read_into(at, &mut buf[..n]).expect("the checked data region is readable");
            all.extend_from_slice(bytemuck::cast_slice(&buf[..n]));
            at += n as u64;
        }
    });
    assert_eq!(all.len() as u64, h.data_bytes);
    Some(all)
}

/// Reads `input` whole, checks a C-order copy of a Fortran-order input against it, renders the
/// `info` line and JSON, and returns the data bytes.
fn exercise(input: &InputTensor) -> Option<Vec<u8>> {
    let h = &input.header;
    let info = InputInfo::new(&input.label, h);
    let _ = serde_json::to_string(&info).expect("an InputInfo serializes");
    let _ = tensorop::shape::fmt_shape(&h.shape);
    let data = read_all(input)?;
    if fortran::is_strided_fortran(input) {
        let copy = fortran::c_order_copy(input).expect("a C-order copy of a checked input");
        assert!(!copy.header.fortran_order);
        let copied = read_all(&copy).expect("the copy has the same numeric dtype");
        // Element at C multi-index i of the copy = element at its Fortran offset in the input.
        let es = h.item_size as usize;
        let mut idx = vec![0u64; h.shape.len()];
        for c in 0..h.elements as usize {
            let (mut off, mut stride) = (0u64, 1u64);
            for (k, &d) in h.shape.iter().enumerate() {
                off += idx[k] * stride;
                stride *= d;
            }
            let off = off as usize * es;
            assert_eq!(copied[c * es..(c + 1) * es], data[off..off + es], "C-order copy, element {c}");
            // Next C multi-index.
            for k in (0..idx.len()).rev() {
                idx[k] += 1;
                if idx[k] < h.shape[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
    }
    Some(data)
}

fuzz_target!(|data: &[u8]| {
    let Ok(mut file) = tempfile::NamedTempFile::new() else { return };
    if file.write_all(data).is_err() {
        return;
    }
    let Some(path) = file.path().to_str() else { return };
    let in_place = InputTensor::open_path(path);
    let streamed = if data.len() <= PIPE_MAX { open_piped(data) } else { None };
    let from_file = in_place.as_ref().ok().map(exercise);
    if let Some(streamed) = streamed {
        assert_eq!(
            in_place.is_ok(),
            streamed.is_ok(),
            "file and pipe disagree: {:?} vs {:?}",
            in_place.as_ref().map(|i| &i.header).map_err(|e| format!("{e:#}")),
            streamed.as_ref().map(|i| &i.header).map_err(|e| format!("{e:#}")),
        );
        if let (Ok(a), Ok(b)) = (&in_place, &streamed) {
            let (ha, hb) = (&a.header, &b.header);
            assert_eq!(
                (&ha.dtype, ha.byte_order, ha.fortran_order, &ha.shape, ha.data_offset, ha.data_bytes),
                (&hb.dtype, hb.byte_order, hb.fortran_order, &hb.shape, hb.data_offset, hb.data_bytes)
            );
            assert_eq!(a.bytes_read, b.bytes_read);
            assert_eq!(from_file, Some(exercise(b)), "file and pipe read different data");
        }
    }
});
