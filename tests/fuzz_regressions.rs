//! Replays of the fuzz targets' committed seed corpus (`fuzz/corpus/<target>/seed-*`, written by
//! `fuzz/make_seeds.py`), so the inputs the fuzzers start from keep their meaning under plain
//! `cargo test`: every `.npy` seed opens (in place and through a pipe, with identical results) or
//! fails with its named error, every `.npz` and `.safetensors` seed opens with its members (each
//! opened and read whole, in place and through a pipe alike) or fails with its named error, and
//! every whole-run seed runs the binary to its expected exit status. Every fuzzer finding is a
//! seed (`seed-regress_*`, the input as found) and has a test below on its minimized form. See
//! `fuzz/README.md`.

use crate::common;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tensorop::container::{Container, Format, Opened};
use tensorop::npy::fortran;
use tensorop::npy::header::FileDType;
use tensorop::npy::input::{InputTensor, Source};

/// The committed seeds of one fuzz target, by name (without the `seed-` prefix).
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = common::manifest_dir().join("fuzz/corpus").join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.strip_prefix("seed-")?.to_string();
            Some((name, std::fs::read(&p).expect("read seed")))
        })
        .collect();
    out.sort();
    out
}

/// Opens `bytes` as the command line opens an input: from a regular file, and (on Unix) from a
/// pipe, by its `/dev/fd` path, as `<(...)` gives it. Both must agree; the in-place result is
/// returned. (Windows has no such path; its streamed input is tested through standard input.)
fn open_both_ways(bytes: &[u8]) -> anyhow::Result<InputTensor> {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(bytes).expect("write temp file");
    let in_place = InputTensor::open_path(file.path());
    #[cfg(unix)]
    check_streamed_agrees(file.path(), &in_place);
    in_place
}

/// Opens the file at `path` through a pipe and checks it agrees with `in_place`.
#[cfg(unix)]
fn check_streamed_agrees(path: &Path, in_place: &anyhow::Result<InputTensor>) {
    use std::os::fd::AsRawFd;
    // `cat` writes the file into a pipe, as `<(cat FILE)` would.
    let mut cat = Command::new("cat").arg(path).stdout(Stdio::piped()).spawn().expect("spawn cat");
    let pipe = cat.stdout.take().expect("cat's stdout");
    let streamed = InputTensor::open_path(format!("/dev/fd/{}", pipe.as_raw_fd()));
    drop(pipe);
    let _ = cat.wait();
    match (in_place, &streamed) {
        (Ok(a), Ok(b)) => {
            assert_eq!((&a.header.dtype, &a.header.shape), (&b.header.dtype, &b.header.shape));
            assert_eq!(read_all(a), read_all(b), "file and pipe read different data");
        }
        // The messages may differ: a file's header length is bounded by its size, a stream's is not.
        (Err(_), Err(_)) => {}
        (a, b) => panic!("file and pipe disagree: {:?} vs {:?}", a.as_ref().err(), b.as_ref().err()),
    }
}

/// Every element of a numeric input in storage order (machine byte order), as bytes.
fn read_all(input: &InputTensor) -> Vec<u8> {
    let FileDType::Numeric(dtype) = input.header.dtype else { return Vec::new() };
    let n = input.header.elements as usize;
    tensorop::with_dtype!(dtype, T => {
        let mut buf = vec![<T as bytemuck::Zeroable>::zeroed(); n];
        input.read_into(0, &mut buf).expect("read the data region");
        bytemuck::cast_slice::<T, u8>(&buf).to_vec()
    })
}

#[test]
fn reader_seeds_open_or_fail_cleanly() {
    // (seed, expected error text; None = opens)
    let expected: &[(&str, Option<&str>)] = &[
        ("bad_magic.npy", Some("bad magic")),
        ("bool.npy", None),
        ("f2_be_fortran.npy", None),
        ("f4_c.npy", None),
        ("f8_be_3d_fortran.npy", None),
        ("huge_shape.npy", Some("truncated data")),
        ("i1_be_v3.npy", None),
        ("i2_empty.npy", None),
        ("i8_v2.npy", None),
        ("long_header_len.npy", Some("the header claims 65535 bytes")),
        ("native_order.npy", None),
        ("neg_shape.npy", Some("negative dimension")),
        ("rec.npy", None),
        ("regress_nested_brackets.npy", Some("unparsable header")),
        ("trailing.npy", Some("trailing bytes")),
        ("truncated.npy", Some("truncated data")),
        ("u1_v3_scalar.npy", None),
        ("u2_be_4d_fortran.npy", None),
        ("u4_1d.npy", None),
    ];
    let seeds = seeds("npy_reader");
    let names: Vec<&str> = seeds.iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, want, "the seed corpus and this table list different files");
    for ((name, bytes), (_, err)) in seeds.iter().zip(expected) {
        match (open_both_ways(bytes), err) {
            (Ok(input), None) => {
                let data = read_all(&input);
                if let FileDType::Numeric(_) = input.header.dtype {
                    assert_eq!(data.len() as u64, input.header.data_bytes, "{name}");
                }
                if fortran::is_strided_fortran(&input) {
                    let copy = fortran::c_order_copy(&input).expect("C-order copy");
                    assert_eq!(read_all(&copy).len(), data.len(), "{name}");
                }
            }
            (Err(e), Some(text)) => assert!(e.to_string().contains(text), "{name}: {e:#}"),
            (Ok(_), Some(text)) => panic!("{name} opened; expected an error containing {text:?}"),
            (Err(e), None) => panic!("{name} failed: {e:#}"),
        }
    }
}

/// The values NumPy wrote into the valid seeds come back (byte order and storage order undone).
#[test]
fn reader_seed_values() {
    let seeds = seeds("npy_reader");
    let get = |name: &str| {
        let bytes = &seeds.iter().find(|(n, _)| n == name).expect("seed present").1;
        open_both_ways(bytes).expect("opens")
    };
    let f8 = get("f8_be_3d_fortran.npy");
    let copy = fortran::c_order_copy(&f8).expect("C-order copy");
    let mut got = [0f64; 12];
    copy.read_into(0, &mut got).expect("read");
    assert_eq!(got, std::array::from_fn(|i| i as f64), "np.arange(12).reshape(2, 3, 2), Fortran, big-endian");
    let i8 = get("i8_v2.npy");
    let mut got = [0i64; 6];
    i8.read_into(0, &mut got).expect("read");
    assert_eq!(got, [-1, 2, 3, -4, 1 << 62, i64::MIN]);
}

/// A whole-run seed decoded: `settings | A length (big-endian u16) | A | B`.
struct RunSeed<'a> {
    settings: u8,
    a: &'a [u8],
    b: &'a [u8],
}

fn decode(data: &[u8]) -> RunSeed<'_> {
    let (settings, rest) = (data[0], &data[1..]);
    let split = (usize::from(data[1]) * 256 + usize::from(data[2])).min(rest.len() - 2);
    let (a, b) = rest[2..].split_at(split);
    RunSeed { settings, a, b }
}

/// Runs the binary on a decoded seed in `dir` as the whole-run target assembles it (input B on
/// standard input, a pipe, when bit 6 is set); returns the exit status.
fn run_seed(dir: &Path, s: &RunSeed) -> i32 {
    std::fs::write(dir.join("a.npy"), s.a).expect("write a");
    std::fs::write(dir.join("b.npy"), s.b).expect("write b");
    let op = if s.settings & 1 == 0 { "sub" } else { "sqdiff" };
    let level = ["1_0", "3_1", "6_4", "none"][usize::from(s.settings >> 1 & 3)];
    let bcast = if s.settings & 8 == 0 { "numpy" } else { "none" };
    let threads = if s.settings & 32 == 0 { "1" } else { "2" };
    let piped = s.settings & 64 != 0;
    let mut cmd = Command::new(common::bin());
    cmd.current_dir(dir).args([op, "a.npy", if piped { "-" } else { "b.npy" }]);
    cmd.args(["-o", "out.npy", "--report", "report.json", "-f", level, "--broadcast", bcast, "--threads", threads]);
    if s.settings & 16 != 0 {
        cmd.arg("--half-precision");
    }
    cmd.stdin(if piped { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = common::spawn(&mut cmd, "tensorop (whole-run seed)");
    if let Some(mut stdin) = child.stdin.take() {
        // A run that fails before reading B closes the pipe early; that is its exit status's business.
        let _ = stdin.write_all(s.b);
    }
    common::wait_limited(&mut child, "whole-run seed").expect("exit status")
}

#[test]
fn whole_run_seeds_exit_as_expected() {
    let expected: &[(&str, i32)] = &[
        ("dtype_mix", 3),
        ("fortran_2threads", 0),
        ("i8_none", 0),
        ("mismatch", 3),
        ("pipe_b", 0),
        ("rank7", 0),
        ("regress_nested_brackets", 1),
        ("sqdiff_31_f16", 0),
        ("sqdiff_half", 0),
        ("sub_bcast", 0),
        ("u1_scalar", 3),
    ];
    let seeds = seeds("whole_run");
    let names: Vec<&str> = seeds.iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, want, "the seed corpus and this table list different files");
    for ((name, bytes), (_, code)) in seeds.iter().zip(expected) {
        let dir = tempfile::tempdir().expect("temp dir");
        let got = run_seed(dir.path(), &decode(bytes));
        assert_eq!(got, *code, "{name}");
        assert_eq!(dir.path().join("out.npy").exists(), got == 0, "{name}: output only on success");
        assert!(dir.path().join("report.json").exists(), "{name}: the report is always written");
    }
}

/// The `dxdispatch_model` seeds, run by the binary as the fuzz target runs them: in a directory
/// holding `a.npy` (float32, 6 elements) and `raw.bin` (24 zero bytes), with `--output-path`
/// there. Each exits as expected, and writes only into that directory.
#[test]
fn dxdispatch_model_seeds_exit_as_expected() {
    let expected: &[(&str, i32, &[&str])] = &[
        ("example", 0, &["out.npy", "out.bin"]),
        ("in-place", 0, &["a.bin"]),
        ("refused", 1, &[]),
        ("strided", 0, &["o.npy"]),
    ];
    let seeds = seeds("dxdispatch_model");
    let names: Vec<&str> = seeds.iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<&str> = expected.iter().map(|(n, ..)| *n).collect();
    assert_eq!(names, want, "the seed corpus and this table list different files");
    let a: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    for ((name, bytes), (_, code, files)) in seeds.iter().zip(expected) {
        let dir = common::Dir::new();
        dir.write("model.json", bytes);
        dir.write("a.npy", &common::npy(&[6], &a));
        dir.write("raw.bin", &[0u8; 24]);
        std::fs::create_dir(dir.path("out")).expect("out dir");
        let out = dir.run(&["run", "model.json", "--output-path", "out", "--threads", "1"]);
        out.expect_code(*code);
        let mut written: Vec<String> = std::fs::read_dir(dir.path("out"))
            .expect("out dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        written.sort();
        let mut want: Vec<String> = files.iter().map(|f| f.to_string()).collect();
        want.sort();
        assert_eq!(written, want, "{name}");
    }
}

/// What a `container_reader` seed gives, in place and through a pipe alike.
enum Want {
    /// A container with these members, in this order, each opened and read whole.
    Members(&'static [&'static str]),
    /// A container with these members (the first field), of which one (the second) is refused
    /// when opened, with an error containing the third.
    MemberRefused(&'static [&'static str], &'static str, &'static str),
    /// Refused, with an error containing this text.
    Refused(&'static str),
}

/// Opens `bytes` as the command line opens an input (`Opened::open`, the format sniffed from its
/// first bytes), from a regular file and (on Unix) through a pipe, by its `/dev/fd` path, as the
/// fuzz target does. Returns both (the piped one is `None` on Windows) for the caller to
/// compare; an opened container holds its file open, so its members stay readable.
fn open_container_both_ways(bytes: &[u8]) -> (anyhow::Result<Opened>, Option<anyhow::Result<Opened>>) {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(bytes).expect("write temp file");
    let in_place = Opened::open(&Source::Path(file.path().to_path_buf()));
    #[cfg(unix)]
    let streamed = {
        use std::os::fd::AsRawFd;
        let mut cat = Command::new("cat").arg(file.path()).stdout(Stdio::piped()).spawn().expect("spawn cat");
        let pipe = cat.stdout.take().expect("cat's stdout");
        let streamed = Opened::open(&Source::Path(format!("/dev/fd/{}", pipe.as_raw_fd()).into()));
        drop(pipe);
        let _ = cat.wait();
        Some(streamed)
    };
    #[cfg(not(unix))]
    let streamed = None;
    (in_place, streamed)
}

/// Every member of `c` opened and read whole (little-endian, storage order), or the member's
/// error; each opened member describes its directory entry and accounts for its bytes.
fn read_members(c: &Container) -> Vec<Result<Vec<u8>, String>> {
    (0..c.members.len())
        .map(|i| {
            let m = &c.members[i];
            let input = c.open_member(i).map_err(|e| format!("{e:#}"))?;
            let h = &input.header;
            assert_eq!((&h.dtype, &h.shape), (&m.dtype, &m.shape), "member {}", m.name);
            let whole = if c.format == Format::Safetensors { h.data_bytes } else { h.data_offset + h.data_bytes };
            assert_eq!(c.member_bytes(i), whole, "member {}: its bytes in the container", m.name);
            let mut data = vec![0u8; h.data_bytes as usize];
            input.read_le(0, &mut data).map_err(|e| format!("{e:#}"))?;
            Ok(data)
        })
        .collect()
}

/// Replays `bytes` as the `container_reader` target does and checks the outcome is `want`;
/// returns the members' data (in the directory's order) when the container opens.
fn replay_container(name: &str, bytes: &[u8], want: &Want) -> Vec<Result<Vec<u8>, String>> {
    let (in_place, streamed) = open_container_both_ways(bytes);
    let read = |o: &anyhow::Result<Opened>| match o {
        Ok(Opened::Many(c)) => {
            Ok((c.format, c.members.iter().map(|m| m.name.clone()).collect::<Vec<_>>(), read_members(c)))
        }
        Ok(Opened::Single(_)) => panic!("{name}: opened as a .npy file"),
        Err(e) => Err(format!("{e:#}")),
    };
    let got = read(&in_place);
    if let Some(streamed) = &streamed {
        let piped = read(streamed);
        match (&got, &piped) {
            (Ok(a), Ok(b)) => {
                let ok = |r: &[Result<Vec<u8>, String>]| r.iter().map(|x| x.as_ref().ok().cloned()).collect::<Vec<_>>();
                assert_eq!((a.0, &a.1, ok(&a.2)), (b.0, &b.1, ok(&b.2)), "{name}: file and pipe disagree");
            }
            (Err(_), Err(_)) => {}
            (a, b) => panic!("{name}: file and pipe disagree: {a:?} vs {b:?}"),
        }
        if let (Ok(Opened::Many(a)), Ok(Opened::Many(b))) = (&in_place, streamed) {
            let dir = |c: &Container| c.members.iter().map(|m| (m.dtype.clone(), m.shape.clone())).collect::<Vec<_>>();
            assert_eq!(dir(a), dir(b), "{name}: file and pipe read different dtypes or shapes");
        }
    }
    match (got, want) {
        (Ok((_, names, data)), Want::Members(members)) => {
            assert_eq!(names, *members, "{name}");
            data.into_iter().zip(names).map(|(d, m)| Ok(d.unwrap_or_else(|e| panic!("{name}[{m}]: {e}")))).collect()
        }
        (Ok((_, names, data)), Want::MemberRefused(members, bad, text)) => {
            assert_eq!(names, *members, "{name}");
            for (d, m) in data.iter().zip(&names) {
                match d {
                    Err(e) if m == bad => assert!(e.contains(text), "{name}[{m}]: {e}"),
                    Ok(_) if m == bad => panic!("{name}[{m}] opened; expected an error containing {text:?}"),
                    Err(e) => panic!("{name}[{m}]: {e}"),
                    Ok(_) => {}
                }
            }
            data
        }
        (Err(e), Want::Refused(text)) => {
            assert!(e.contains(text), "{name}: {e}");
            Vec::new()
        }
        (Ok((_, names, _)), Want::Refused(text)) => {
            panic!("{name} opened with members {names:?}; expected an error containing {text:?}")
        }
        (Err(e), _) => panic!("{name} failed: {e}"),
    }
}

/// The `container_reader` seeds, replayed as the fuzz target runs them.
#[test]
fn container_seeds_open_or_fail_cleanly() {
    use Want::*;
    let expected: &[(&str, Want)] = &[
        ("bf16.safetensors", Members(&["bf", "i64"])),
        ("crc_mismatch.npz", MemberRefused(&["a"], "a", "CRC-32 mismatch")),
        ("deflated.npz", Members(&["w", "be", "f", "mask"])),
        ("dotdot_name.npz", Refused("a `..` path component")),
        ("dotdot_name.safetensors", Refused("a `..` path component")),
        ("duplicate_key.safetensors", Refused("appears twice")),
        ("duplicate_names.npz", Refused("appears twice")),
        ("empty.npz", Members(&[])),
        ("empty.safetensors", Members(&[])),
        ("f8_bool.safetensors", Members(&["f8", "f8b", "flag"])),
        ("header_past_end.safetensors", Refused("the header length is 1099511627776 bytes")),
        ("metadata.safetensors", Members(&["x"])),
        ("mixed_dtypes.npz", Members(&["f8", "rec", "c8", "empty"])),
        ("nested_name.npz", Members(&["layer/0"])),
        ("not_npy_member.npz", Refused("not a .npy member")),
        ("offset_gap.safetensors", Refused("invalid offset for tensor `a`")),
        ("saved.safetensors", Members(&["ids", "w", "h", "b", "m"])),
        ("stored.npz", Members(&["a", "b", "c"])),
        ("streamed_deflated.npz", Members(&["s", "t"])),
        ("trailing.safetensors", Refused("1 bytes follow the last tensor's data")),
        ("truncated.npz", Refused("not a valid .npz file")),
        ("truncated.safetensors", Refused("the file is truncated")),
        ("truncated_member.npz", Refused("truncated data")),
        ("wrong_size.safetensors", Refused("invalid shape, data type, or offset for tensor")),
        ("zero_size.safetensors", Members(&["empty", "scalar", "v"])),
        ("zip64.npz", Members(&["z", "y"])),
        ("zip64_local.npz", Members(&["z"])),
    ];
    let seeds = seeds("container_reader");
    let names: Vec<&str> = seeds.iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, want, "the seed corpus and this table list different files");
    for ((name, bytes), (_, want)) in seeds.iter().zip(expected) {
        replay_container(name, bytes, want);
    }
}

/// The values NumPy and the safetensors package wrote into the container seeds come back, as
/// little-endian bytes (a big-endian `.npz` member swapped, a Fortran-order one as stored).
#[test]
fn container_seed_values() {
    let seeds = seeds("container_reader");
    let get = |name: &str, members: &'static [&'static str]| {
        let bytes = &seeds.iter().find(|(n, _)| n == name).expect("seed present").1;
        let data = replay_container(name, bytes, &Want::Members(members));
        data.into_iter().map(|d| d.expect("member read")).collect::<Vec<_>>()
    };
    let le = |v: &[u64], size: usize| v.iter().flat_map(|x| x.to_le_bytes()[..size].to_vec()).collect::<Vec<u8>>();
    let stored = get("stored.npz", &["a", "b", "c"]);
    let quarters: Vec<u8> = (0..6).flat_map(|i| (i as f32 / 4.0).to_le_bytes()).collect();
    assert_eq!(stored[0], quarters, "np.arange(6).reshape(2, 3) / 4");
    assert_eq!(stored[1], [(-1i64).to_le_bytes(), (1i64 << 62).to_le_bytes(), i64::MIN.to_le_bytes()].concat());
    assert_eq!(stored[2], [7]);
    let deflated = get("deflated.npz", &["w", "be", "f", "mask"]);
    assert_eq!(deflated[1], le(&[0, 1, 2, 3, 4], 4), "big-endian uint32, swapped");
    assert_eq!(deflated[2], le(&[0, 3, 1, 4, 2, 5], 2), "Fortran order, as stored");
    assert_eq!(deflated[3], [1, 0, 1]);
    let zip64 = get("zip64.npz", &["z", "y"]);
    assert_eq!(zip64[0], le(&[0, 1, 2, 3], 2));
    let bf16 = get("bf16.safetensors", &["bf", "i64"]);
    assert_eq!(bf16[0], le(&[0x3F80, 0xBF80, 0x4000, 0], 2));
    let zero = get("zero_size.safetensors", &["empty", "scalar", "v"]);
    assert_eq!(zero, [vec![], (-5i32).to_le_bytes().to_vec(), le(&[1, 65535], 2)]);
}

/// Found by review and confirmed by the `container_reader` target: a safetensors tensor whose
/// dtype packs an element in fewer than 8 bits (F4, F6_E2M3, F6_E3M2) was given a whole byte per
/// element, so the member claimed 2 or 4/3 times the bytes its `data_offsets` hold and its reads
/// ran into the next tensor's bytes or past the end of the file. Fixed: such a tensor is refused
/// by name when the file is opened.
#[test]
fn sub_byte_safetensors_tensors_keep_to_their_bytes() {
    use common::containers::safetensors;
    for (dtype, elements, bytes) in [("F4", 2, 1), ("F6_E2M3", 4, 3), ("F6_E3M2", 4, 3)] {
        for followed in [false, true] {
            let mut members = vec![("packed", dtype, vec![elements], vec![0x11; bytes])];
            if followed {
                members.push(("next", "U8", vec![1], vec![0xEE]));
            }
            let members: Vec<_> = members.iter().map(|(n, d, s, b)| (*n, *d, s.as_slice(), b.clone())).collect();
            let what = format!("{dtype}, followed by a tensor: {followed}");
            match open_container_both_ways(&safetensors(&members)).0 {
                Err(e) => assert!(format!("{e:#}").contains("packed"), "{what}: {e:#}"),
                Ok(Opened::Many(c)) => {
                    let total = (0..c.members.len()).map(|i| c.member_bytes(i)).sum::<u64>() + c.bytes_read;
                    assert_eq!(total, c.size, "{what}: the members claim bytes the file does not give them");
                    for (m, data) in c.members.iter().zip(read_members(&c)) {
                        let data = data.unwrap_or_else(|e| panic!("{what}: member {}: {e}", m.name));
                        if m.name == "next" {
                            assert_eq!(data, [0xEE], "{what}");
                        }
                    }
                }
                Ok(Opened::Single(_)) => panic!("{what}: opened as a .npy file"),
            }
        }
    }
}

/// Found by review and confirmed by the `container_reader` target: tensors whose
/// `data_offsets` end near 2^64 (each valid alone: eight `U8` tensors of 2^61 - 1 bytes,
/// contiguous) made `safetensors::open` add the data's length to its start without a check: a
/// panic where overflow checks are on (debug builds, the fuzzer), and in a release build a
/// wrapped sum that reported bytes "following the last tensor" in a file that holds none. Fixed:
/// the sum is checked and such a file is refused as truncated.
#[test]
fn safetensors_offsets_near_2_pow_64_are_refused_as_truncated() {
    let n = (1u64 << 61) - 1;
    let tensors: Vec<String> = (0..8u64)
        .map(|i| format!(r#""t{i}":{{"dtype":"U8","shape":[{n}],"data_offsets":[{},{}]}}"#, i * n, (i + 1) * n))
        .collect();
    let file = common::containers::safetensors_raw(&format!("{{{}}}", tensors.join(",")), &[]);
    let (in_place, streamed) = open_container_both_ways(&file);
    for opened in std::iter::once(in_place).chain(streamed) {
        let e = format!("{:#}", opened.map(|_| ()).expect_err("refused"));
        assert!(e.contains("the file is truncated"), "{e}");
    }
}

/// Runs `f` on another thread; fails the test if it takes longer than `limit` (a hang would
/// otherwise stall the whole suite).
fn within<T: Send + 'static>(limit: Duration, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).unwrap_or_else(|_| panic!("{what} took longer than {limit:?}"))
}

/// Finding 1 (whole_run, timeout after 13 s on a 282-byte input): a header whose `descr` opens
/// nested brackets. The header's Python literal was parsed by `py_literal`, whose grammar
/// re-parses the last element of every list, tuple and dict, doubling the time with each level
/// (nearly tripling for `{`): 84 unclosed `[` would have run for ages, and so did 25 closed ones.
/// Fixed by parsing header literals in one linear pass with nesting limited to 32 levels
/// (`src/npy/literal.rs`). Minimized: `{'descr': ` followed by brackets.
#[test]
fn finding_1_nested_brackets_in_a_header_fail_fast() {
    let mut cases = Vec::new();
    for open in ["[", "{", "(", "[('a', ", "{1: "] {
        for depth in [24, 84, 5000] {
            cases.push((format!("{{'descr': {}", open.repeat(depth)), "unparsable header"));
        }
    }
    let closed = |n: usize| {
        format!("{{'descr': {}'<f4'{}, 'fortran_order': False, 'shape': (), }}", "[".repeat(n), "]".repeat(n))
    };
    cases.push((closed(25), "invalid record dtype"));
    cases.push((closed(40), "nested more than 32 levels"));
    for (text, want) in cases {
        let bytes = common::npy_raw((1, 0), &text, &[]);
        let start = Instant::now();
        let e = within(Duration::from_secs(10), &text, move || open_both_ways(&bytes).map(|_| ()));
        let e = format!("{:#}", e.expect_err("refused"));
        assert!(e.contains(want), "{text}: {e}");
        assert!(start.elapsed() < Duration::from_secs(2), "{text}: {:?}", start.elapsed());
    }
    // The input as found, through the binary: a runtime error (exit 1), promptly.
    let seeds = seeds("whole_run");
    let found = seeds.iter().find(|(n, _)| n == "regress_nested_brackets").expect("seed present").1.clone();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_path_buf();
    let start = Instant::now();
    assert_eq!(within(Duration::from_secs(30), "the found input", move || run_seed(&path, &decode(&found))), 1);
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
}
