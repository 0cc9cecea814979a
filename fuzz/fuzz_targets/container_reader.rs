//! Fuzz target: the `.npz` and `.safetensors` readers. Any byte string is opened exactly as the
//! command line opens an input (`Opened::open`, the format sniffed from its first bytes), twice:
//! as a regular file (read in place) and through a pipe by its `/dev/fd` path, as `<(...)` gives
//! it (a container from a stream is spooled to a temporary file). Both must accept or refuse the
//! same bytes and agree on the format, every member's name, dtype and shape. For an accepted
//! container, every member is opened (`open_member`: a byte range of the file, or a deflated
//! `.npz` member inflated and checked against its CRC) in both, with the same outcome; an opened
//! member must describe the directory's dtype and shape, account for exactly the bytes the
//! directory gave it, and read back whole, with the same bytes from the file and the pipe.
//! Members whose data exceed 1 MiB are opened but not read (a cap on the fuzzer, not on the
//! library). Nothing may panic, hang or allocate from an unchecked header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write;
use std::os::fd::AsRawFd;
use tensorop::container::{Container, Format, Opened};
use tensorop::npy::header::FileDType;
use tensorop::npy::input::{InputTensor, Source};

/// Inputs up to this size also go through a pipe (they fit in its buffer, so the writer can
/// finish before the reader starts).
const PIPE_MAX: usize = 16 << 10;

/// Members with more data bytes than this are opened but not read.
const READ_MAX: u64 = 1 << 20;

/// Opens `data` through a pipe, by its `/dev/fd` path, the way a shell's `<(...)` hands it over.
fn open_piped(data: &[u8]) -> Option<anyhow::Result<Opened>> {
    let (reader, mut writer) = std::io::pipe().ok()?;
    writer.write_all(data).ok()?;
    drop(writer);
    let path = format!("/dev/fd/{}", reader.as_raw_fd());
    Some(Opened::open(&Source::Path(path.into())))
}

/// Every data byte of `input` in storage order, little-endian, read in runs of whole elements;
/// `None` when there are more than [`READ_MAX`].
fn read_all(input: &InputTensor) -> Option<Vec<u8>> {
    let h = &input.header;
    if h.data_bytes > READ_MAX {
        return None;
    }
    let mut all = vec![0u8; h.data_bytes as usize];
    if h.item_size > 0 {
        let mut at = 0u64;
        while at < h.elements {
            let k = (h.elements - at).min(1 << 12);
            let from = (at * h.item_size) as usize;
            let to = from + (k * h.item_size) as usize;
            input.read_le(at, &mut all[from..to]).unwrap_or_else(|e| panic!("{}: {e:#}", input.label));
            at += k;
        }
    }
    if let FileDType::Numeric(_) = h.dtype {
        // The chunked reader the exports use gives the same bytes.
        let mut chunks = Vec::with_capacity(all.len());
        input
            .for_each_le_chunk(|b| {
                chunks.extend_from_slice(b);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{}: {e:#}", input.label));
        assert_eq!(chunks, all, "{}: read_le and for_each_le_chunk disagree", input.label);
    }
    Some(all)
}

/// Opens member `i` of `c` and reads it: `Err` (the message) when the member is refused,
/// `Ok(None)` when it is too large to read here.
fn read_member(c: &Container, i: usize) -> Result<Option<Vec<u8>>, String> {
    let m = &c.members[i];
    let input = c.open_member(i).map_err(|e| format!("{e:#}"))?;
    let h = &input.header;
    assert_eq!((&h.dtype, &h.shape), (&m.dtype, &m.shape), "member {:?}: directory and member disagree", m.name);
    let elements = h.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    assert_eq!(Some(h.elements), elements, "member {:?}: element count", m.name);
    assert_eq!(Some(h.data_bytes), h.elements.checked_mul(h.item_size), "member {:?}: data bytes", m.name);
    // The bytes the directory gives the member: the data alone (safetensors), or a whole `.npy`
    // file, header and data (npz).
    let whole = match c.format {
        Format::Safetensors => h.data_bytes,
        _ => h.data_offset + h.data_bytes,
    };
    assert_eq!(c.member_bytes(i), whole, "member {:?}: its size in the container", m.name);
    assert_eq!(input.bytes_read, whole, "member {:?}: bytes read", m.name);
    Ok(read_all(&input))
}

/// Checks what an opened container says about itself; returns each member's outcome.
fn exercise(c: &Container) -> Vec<Result<Option<Vec<u8>>, String>> {
    assert_ne!(c.format, Format::Npy);
    if c.format == Format::Safetensors {
        let total = (0..c.members.len()).try_fold(c.bytes_read, |n, i| n.checked_add(c.member_bytes(i)));
        // The header, then every tensor's bytes, contiguous, to the end of the file.
        assert_eq!(total, Some(c.size), "safetensors: the header and the tensors fill the file");
    }
    let mut names: Vec<&str> = c.members.iter().map(|m| m.name.as_str()).collect();
    names.sort_unstable();
    assert!(names.windows(2).all(|w| w[0] != w[1]), "a name appears twice: {names:?}");
    (0..c.members.len()).map(|i| read_member(c, i)).collect()
}

/// A container's directory as the comparisons see it: format, size, bytes read to open it, and
/// each member's name, dtype and shape.
type Directory<'a> = (Format, u64, u64, Vec<(&'a str, &'a FileDType, &'a [u64])>);

fn directory(c: &Container) -> Directory<'_> {
    let members = c.members.iter().map(|m| (m.name.as_str(), &m.dtype, m.shape.as_slice())).collect();
    (c.format, c.size, c.bytes_read, members)
}

fuzz_target!(|data: &[u8]| {
    let Ok(mut file) = tempfile::NamedTempFile::new() else { return };
    if file.write_all(data).is_err() {
        return;
    }
    let in_place = Opened::open(&Source::Path(file.path().to_path_buf()));
    let streamed = if data.len() <= PIPE_MAX { open_piped(data) } else { None };
    let from_file = match &in_place {
        Ok(Opened::Many(c)) => {
            assert_eq!(c.label, file.path().display().to_string());
            Some(exercise(c))
        }
        _ => None,
    };
    let Some(streamed) = streamed else { return };
    match (&in_place, &streamed) {
        (Ok(Opened::Many(a)), Ok(Opened::Many(b))) => {
            assert_eq!(directory(a), directory(b), "file and pipe read different directories");
            let from_pipe = exercise(b);
            let from_file = from_file.expect("exercised above");
            for (i, (x, y)) in from_file.iter().zip(&from_pipe).enumerate() {
                match (x, y) {
                    (Ok(x), Ok(y)) => {
                        assert_eq!(x, y, "member {:?}: file and pipe read different data", a.members[i].name)
                    }
                    (Err(_), Err(_)) => {}
                    _ => panic!("member {:?}: file and pipe disagree: {x:?} vs {y:?}", a.members[i].name),
                }
            }
        }
        (Ok(Opened::Single(a)), Ok(Opened::Single(b))) => {
            let (ha, hb) = (&a.header, &b.header);
            assert_eq!((&ha.dtype, &ha.shape, ha.data_bytes), (&hb.dtype, &hb.shape, hb.data_bytes));
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!(
            "file and pipe disagree: {:?} vs {:?}",
            a.as_ref().map(kind).map_err(|e| format!("{e:#}")),
            b.as_ref().map(kind).map_err(|e| format!("{e:#}")),
        ),
    }
});

/// What an opened input is, for messages.
fn kind(o: &Opened) -> &'static str {
    match o {
        Opened::Single(_) => "a .npy file",
        Opened::Many(c) => c.format.name(),
    }
}
