//! Containers end to end: `.safetensors` and `.npz` pairs member by member, a container against
//! one `.npy`, member selection, members without a partner, container outputs, the report and its
//! exactly merged totals, and hostile containers (each a clean exit 1 naming the member and the
//! rule, nothing written).

use crate::common::containers::*;
use crate::common::*;
use serde_json::Value;

fn sq(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).collect()
}

fn floats(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / u32::MAX as f32) * 8.0 - 4.0
        })
        .collect()
}

fn as_f32(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// A pair of checkpoints: `w` (3x4) and `b` (4) differ, `same` (5) does not.
fn checkpoint_pair(dir: &Dir) -> [Vec<f32>; 4] {
    let (wa, wb, ba, bb) = (floats(12, 1), floats(12, 2), floats(4, 3), floats(4, 4));
    let same = floats(5, 5);
    dir.write(
        "a.safetensors",
        &safetensors(&[
            ("w", "F32", &[3, 4], f32_bytes(&wa)),
            ("b", "F32", &[4], f32_bytes(&ba)),
            ("same", "F32", &[5], f32_bytes(&same)),
        ]),
    );
    dir.write(
        "b.safetensors",
        &safetensors(&[
            ("same", "F32", &[5], f32_bytes(&same)),
            ("w", "F32", &[3, 4], f32_bytes(&wb)),
            ("b", "F32", &[4], f32_bytes(&bb)),
        ]),
    );
    [wa, wb, ba, bb]
}

#[test]
fn safetensors_pairs_run_member_by_member_into_a_safetensors_output() {
    let dir = Dir::new();
    let [wa, wb, ba, bb] = checkpoint_pair(&dir);
    let out =
        dir.run(&["sqdiff", "a.safetensors", "b.safetensors", "-o", "c.safetensors", "--stats", "--report", "r.json"]);
    out.ok();
    let c = read_safetensors(&dir.read("c.safetensors"));
    assert_eq!(c.keys().collect::<Vec<_>>(), ["b", "same", "w"]);
    assert_eq!(c["w"].0, "F32");
    assert_eq!(c["w"].1, [3, 4]);
    assert_eq!(as_f32(&c["w"].2), sq(&wa, &wb));
    assert_eq!(as_f32(&c["b"].2), sq(&ba, &bb));
    assert!(as_f32(&c["same"].2).iter().all(|&x| x == 0.0));
    // stderr: the totals, then a line per member that differs; `same` is all zeros.
    assert!(out.stderr.contains("tensorop: w: float32"), "{}", out.stderr);
    assert!(!out.stderr.contains("tensorop: same:"), "{}", out.stderr);
    assert!(out.stderr.contains("3 member pairs compared: 2 differ, 1 bit-identical"), "{}", out.stderr);
    let r = dir.report("r.json");
    assert_eq!(r["status"], "ok");
    assert_eq!(r["inputs"][0]["format"], "safetensors");
    let names: Vec<&str> = r["members"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["w", "b", "same"], "A's order");
    let w = &r["members"][0];
    assert_eq!(w["minimum_feature_level"], "3_1");
    assert_eq!(w["output_member"], "w");
    assert_eq!(w["dml"]["operator"], "DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE", "{w}");
    assert_eq!(w["dml"]["tensors"]["ATensor"]["Sizes"], serde_json::json!([3, 4]));
    assert_eq!(w["inputs"][1]["member"], "w");
    assert_eq!(r["totals"]["pairs"], 3);
    assert_eq!(r["totals"]["differing"], 2);
    assert_eq!(r["totals"]["minimum_feature_level"], "3_1");
    assert_eq!(r["totals"]["stats"]["count"], 21);
    assert_eq!(r["output"]["format"], "safetensors");
}

#[test]
fn members_are_identical_only_bit_for_bit_to_their_last_element() {
    // 40 000 elements: the second read spans several rows. `last` differs in its last element
    // only, `zero` in the sign of a zero only; `nan` holds the same NaN on both sides.
    let dir = Dir::new();
    let base = floats(40_000, 7);
    let mut last = base.clone();
    last[39_999] = f32::from_bits(last[39_999].to_bits() ^ 1);
    let (mut zero, mut nan) = (base.clone(), base.clone());
    zero[20_000] = 0.0;
    nan[30_000] = f32::from_bits(0x7fc0_1234);
    let mut negative_zero = zero.clone();
    negative_zero[20_000] = -0.0;
    let members = |x: &[f32], z: &[f32]| {
        safetensors(&[
            ("last", "F32", &[40_000], f32_bytes(x)),
            ("nan", "F32", &[200, 200], f32_bytes(&nan)),
            ("same", "F32", &[40_000], f32_bytes(&base)),
            ("zero", "F32", &[40_000], f32_bytes(z)),
        ])
    };
    dir.write("a.safetensors", &members(&base, &zero));
    dir.write("b.safetensors", &members(&last, &negative_zero));
    let out =
        dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", "c.safetensors", "--stats", "--report", "r.json"]);
    out.ok();
    assert!(out.stderr.contains("4 member pairs compared: 2 differ, 2 bit-identical"), "{}", out.stderr);
    let r = dir.report("r.json");
    let identical: Vec<(String, Value)> = r["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| (m["name"].as_str().unwrap_or_default().to_string(), m["identical"].clone()))
        .collect();
    let want = [("last", false), ("nan", true), ("same", true), ("zero", false)];
    for (name, same) in want {
        assert!(identical.contains(&(name.to_string(), Value::Bool(same))), "{name}: {identical:?}");
    }
}

#[test]
fn merged_totals_equal_one_run_over_every_element_bit_for_bit() {
    let dir = Dir::new();
    let [wa, wb, ba, bb] = checkpoint_pair(&dir);
    let same = floats(5, 5);
    // The same elements as one .npy pair, in member order.
    let a: Vec<f32> = wa.iter().chain(&ba).chain(&same).copied().collect();
    let b: Vec<f32> = wb.iter().chain(&bb).chain(&same).copied().collect();
    dir.write("a.npy", &npy(&[a.len()], &a));
    dir.write("b.npy", &npy(&[b.len()], &b));
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "one.npy", "--stats", "--report", "one.json"]).ok();
    let one = dir.report("one.json")["stats"].clone();
    for threads in ["1", "2"] {
        dir.run(&[
            "sqdiff",
            "a.safetensors",
            "b.safetensors",
            "-o",
            NULL,
            "--stats",
            "--report",
            "r.json",
            "--threads",
            threads,
        ])
        .ok();
        let totals = dir.report("r.json")["totals"]["stats"].clone();
        assert_eq!(totals, one, "--threads {threads}");
    }
}

#[test]
fn npz_stored_and_deflated_pair_and_write_an_npz() {
    let dir = Dir::new();
    let (xa, xb) = (floats(6, 7), floats(6, 8));
    let ya: Vec<i32> = vec![1, -2, 3, i32::MAX];
    let yb: Vec<i32> = vec![4, 5, -6, -1];
    dir.write("a.npz", &zip(&[Entry::stored("x.npy", npy(&[2, 3], &xa)), Entry::stored("y.npy", npy(&[4], &ya))]));
    dir.write("b.npz", &zip(&[Entry::deflated("y.npy", npy(&[4], &yb)), Entry::deflated("x.npy", npy(&[2, 3], &xb))]));
    dir.run(&["sub", "a.npz", "b.npz", "-o", "c.npz"]).ok();
    let c = read_npz(&dir.read("c.npz"));
    assert_eq!(c.keys().collect::<Vec<_>>(), ["x", "y"]);
    let x = parse_npy(&c["x"]);
    assert_eq!(x.descr, "<f4");
    let expected: Vec<f32> = xa.iter().zip(&xb).map(|(p, q)| p - q).collect();
    assert_eq!(as_f32(&x.data), expected);
    let y = parse_npy(&c["y"]);
    let got: Vec<i32> = y.data.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(got, ya.iter().zip(&yb).map(|(p, q)| p.wrapping_sub(*q)).collect::<Vec<_>>());
}

#[test]
fn one_npy_against_a_container_applies_to_every_member() {
    let dir = Dir::new();
    let [wa, _, ba, _] = checkpoint_pair(&dir);
    dir.write("bias.npy", &npy(&[4], &[0.5f32, 1.0, -1.0, 2.0]));
    let out = dir.run(&[
        "sub",
        "a.safetensors",
        "bias.npy",
        "-o",
        "c.safetensors",
        "--member",
        "w",
        "--member",
        "b",
        "--report",
        "r.json",
    ]);
    out.ok();
    let c = read_safetensors(&dir.read("c.safetensors"));
    let bias = [0.5f32, 1.0, -1.0, 2.0];
    let w: Vec<f32> = wa.iter().enumerate().map(|(i, x)| x - bias[i % 4]).collect();
    assert_eq!(as_f32(&c["w"].2), w);
    assert_eq!(as_f32(&c["b"].2), ba.iter().zip(bias).map(|(x, y)| x - y).collect::<Vec<_>>());
    assert!(!c.contains_key("same"), "not selected");
    let r = dir.report("r.json");
    assert_eq!(r["inputs"][1]["format"], "npy");
    assert_eq!(r["members"][0]["inputs"][1]["member"], Value::Null);
    assert_eq!(r["members"][0]["broadcast"]["strides"][1], serde_json::json!([0, 1]));
}

#[test]
fn members_without_a_partner_fail_the_run_unless_skipped() {
    let dir = Dir::new();
    dir.write(
        "a.safetensors",
        &safetensors(&[("x", "F32", &[2], f32_bytes(&[1.0, 2.0])), ("only_a", "F32", &[1], f32_bytes(&[1.0]))]),
    );
    dir.write(
        "b.safetensors",
        &safetensors(&[("x", "F32", &[2], f32_bytes(&[1.0, 1.0])), ("only_b", "F32", &[1], f32_bytes(&[1.0]))]),
    );
    let out = dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", "c.safetensors", "--report", "r.json"]);
    out.expect_code(5).stderr_mentions("only_a").stderr_mentions("only_b").stderr_mentions("--skip-unpaired");
    assert!(!dir.exists("c.safetensors"), "nothing written");
    let r = dir.report("r.json");
    assert_eq!(r["status"], "unpaired");
    assert_eq!(r["unpaired"]["only_in_a"], serde_json::json!(["only_a"]));
    assert_eq!(r["unpaired"]["only_in_b"], serde_json::json!(["only_b"]));
    let out = dir.run(&[
        "sub",
        "a.safetensors",
        "b.safetensors",
        "-o",
        "c.safetensors",
        "--skip-unpaired",
        "--report",
        "r.json",
    ]);
    out.ok().stderr_mentions("only_a");
    assert_eq!(read_safetensors(&dir.read("c.safetensors")).len(), 1);
    assert_eq!(dir.report("r.json")["unpaired"]["skipped"], true);
    // Selecting the common members leaves nothing unpaired.
    dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", "d.safetensors", "--member", "x"]).ok();
}

#[test]
fn member_patterns_select_and_a_pattern_that_selects_nothing_is_an_error() {
    let dir = Dir::new();
    checkpoint_pair(&dir);
    dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", "c.safetensors", "--member", "s*", "--member", "?"]).ok();
    assert_eq!(read_safetensors(&dir.read("c.safetensors")).keys().collect::<Vec<_>>(), ["b", "same", "w"]);
    dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", "d.safetensors", "--member", "s*"]).ok();
    assert_eq!(read_safetensors(&dir.read("d.safetensors")).keys().collect::<Vec<_>>(), ["same"]);
    let out = dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", "e.safetensors", "--member", r"C:\w"]);
    out.expect_code(1).stderr_mentions(r"C:\\w").stderr_mentions("matches no member");
    assert!(!dir.exists("e.safetensors"));
}

#[test]
fn a_container_pair_refuses_an_npy_output_and_discards_into_the_null_device() {
    let dir = Dir::new();
    checkpoint_pair(&dir);
    let out = dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", "c.npy"]);
    out.expect_code(1).stderr_mentions("-o OUT.safetensors");
    assert!(!dir.exists("c.npy"));
    let out = dir.run(&["sqdiff", "a.safetensors", "b.safetensors", "-o", NULL, "--stats", "--report", "r.json"]);
    out.ok().stderr_mentions("mean squared error");
    let r = dir.report("r.json");
    assert_eq!(r["output"], Value::Null);
    assert_eq!(r["bytes_written"], 0);
    assert_eq!(r["members"][0]["output_member"], Value::Null);
    assert!(r["members"][0]["stats"]["count"].as_u64() == Some(12));
}

#[test]
fn a_container_written_to_standard_output_is_whole() {
    let dir = Dir::new();
    let [wa, wb, ..] = checkpoint_pair(&dir);
    let out = dir.run(&["sqdiff", "a.safetensors", "b.safetensors", "-o", "-"]);
    out.ok();
    let c = read_safetensors(&out.stdout);
    assert_eq!(as_f32(&c["w"].2), sq(&wa, &wb));
    let dir2 = Dir::new();
    dir2.write("a.npz", &zip(&[Entry::stored("x.npy", npy(&[2], &[1.0f32, 2.0]))]));
    let out = dir2.run(&["sub", "a.npz", "a.npz", "-o", "-"]);
    out.ok();
    assert_eq!(as_f32(&parse_npy(&read_npz(&out.stdout)["x"]).data), [0.0, 0.0]);
}

#[test]
fn failed_member_checks_fail_the_run_with_every_member_reported() {
    let dir = Dir::new();
    let ints: Vec<u8> = [1i64, 2].iter().flat_map(|x| x.to_le_bytes()).collect();
    let st = safetensors(&[("ok", "F32", &[2], f32_bytes(&[1.0, 2.0])), ("wide", "I64", &[2], ints.clone())]);
    dir.write("a.safetensors", &st);
    let out =
        dir.run(&["sub", "a.safetensors", "a.safetensors", "-o", "c.safetensors", "-f", "3_1", "--report", "r.json"]);
    out.expect_code(3).stderr_mentions("wide").stderr_mentions("datatype_supported");
    assert!(!dir.exists("c.safetensors"));
    let r = dir.report("r.json");
    assert_eq!(r["status"], "invalid");
    assert_eq!(r["members"][0]["status"], "ok");
    assert_eq!(r["members"][0]["minimum_feature_level"], "1_0");
    assert_eq!(r["members"][1]["status"], "invalid");
    assert_eq!(r["members"][1]["minimum_feature_level"], "4_1");
    assert_eq!(r["totals"]["invalid"], 1);
    assert_eq!(r["totals"]["minimum_feature_level"], "4_1", "the newest of the members' minimum levels");
    // sqdiff has no int64 row at any level: the pair of checkpoints passes at none.
    dir.run(&["sqdiff", "a.safetensors", "a.safetensors", "-o", "c.safetensors", "--report", "r.json"]).expect_code(3);
    assert_eq!(dir.report("r.json")["totals"]["minimum_feature_level"], Value::Null);
    // Dtypes tensorop cannot compute are refused by name.
    dir.write("f8.safetensors", &safetensors(&[("q", "F8_E4M3", &[2], vec![1, 2]), ("m", "BOOL", &[1], vec![1])]));
    let out = dir.run(&["sub", "f8.safetensors", "f8.safetensors", "-o", "c.safetensors", "-f", "none"]);
    out.expect_code(3).stderr_mentions("F8_E4M3");
}

#[test]
fn formats_are_read_from_the_content_not_the_name() {
    let dir = Dir::new();
    dir.write("model.bin", &safetensors(&[("x", "F32", &[2], f32_bytes(&[3.0, 4.0]))]));
    dir.write("other.npy", &zip(&[Entry::stored("x.npy", npy(&[2], &[1.0f32, 1.0]))]));
    dir.run(&["sub", "model.bin", "other.npy", "-o", "c.safetensors"]).ok();
    assert_eq!(as_f32(&read_safetensors(&dir.read("c.safetensors"))["x"].2), [2.0, 3.0]);
}

#[cfg(unix)]
#[test]
fn a_container_from_a_fifo_is_read() {
    let dir = Dir::new();
    let bytes = safetensors(&[("x", "F32", &[2], f32_bytes(&[3.0, 4.0]))]);
    dir.write("a.safetensors", &bytes);
    let fifo = dir.path("pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    let writer = std::thread::spawn(move || std::fs::write(fifo, bytes));
    dir.run(&["sub", "pipe", "a.safetensors", "-o", "c.safetensors"]).ok();
    writer.join().unwrap().expect("fifo write");
    assert_eq!(as_f32(&read_safetensors(&dir.read("c.safetensors"))["x"].2), [0.0, 0.0]);
}

/// Runs `sub` with `a` as A and a valid B, expecting a clean exit 1 whose message holds every
/// one of `needles`, and nothing written.
fn refused(name: &str, a: &[u8], needles: &[&str]) {
    let dir = Dir::new();
    dir.write(name, a);
    dir.write("ok.safetensors", &safetensors(&[("x", "F32", &[2], f32_bytes(&[1.0, 2.0]))]));
    let before = dir.listing();
    let out = dir.run(&["sub", name, "ok.safetensors", "-o", "c.safetensors", "--skip-unpaired"]);
    out.expect_code(1);
    for n in needles {
        assert!(out.stderr.contains(n), "{name}: {n:?} missing from: {}", out.stderr);
    }
    assert_eq!(dir.listing(), before, "{name}: nothing written");
}

#[test]
fn hostile_safetensors_files_are_clean_errors() {
    let x = f32_bytes(&[1.0, 2.0]);
    let mut past = safetensors(&[("x", "F32", &[2], x.clone())]);
    past[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    refused("past.safetensors", &past, &["header length", "truncated"]);
    let overlap = r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#;
    refused("overlap.safetensors", &safetensors_raw(overlap, &[0; 12]), &["overlap.safetensors", "y"]);
    let out_of_range = r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    refused("range.safetensors", &safetensors_raw(out_of_range, &[0; 4]), &["truncated"]);
    refused("trailing.safetensors", &safetensors_raw(out_of_range, &[0; 12]), &["4 bytes follow"]);
    let dup = r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    refused("dup.safetensors", &safetensors_raw(dup, &[0; 8]), &["\"x\"", "twice"]);
    let size = r#"{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#;
    refused("size.safetensors", &safetensors_raw(size, &[0; 8]), &["size.safetensors"]);
    let huge = r#"{"x":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}}"#;
    refused("huge.safetensors", &safetensors_raw(huge, &[0; 8]), &["huge.safetensors"]);
    let path = r#"{"../x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    refused("path.safetensors", &safetensors_raw(path, &[0; 8]), &["../x", ".."]);
    refused("short.safetensors", &[7, 0, 0, 0, 0, 0, 0, 0, b'{'], &["short.safetensors"]);
}

#[test]
fn hostile_npz_files_are_clean_errors() {
    let x = npy(&[2], &[1.0f32, 2.0]);
    refused("path.npz", &zip(&[Entry::stored("../x.npy", x.clone())]), &["../x.npy", "`..`"]);
    refused("abs.npz", &zip(&[Entry::stored("/x.npy", x.clone())]), &["/x.npy", "absolute"]);
    refused("dup.npz", &zip(&[Entry::stored("x.npy", x.clone()), Entry::stored("x.npy", x.clone())]), &["twice"]);
    refused("txt.npz", &zip(&[Entry::stored("x.txt", b"hello".to_vec())]), &["x.txt", "not a .npy member"]);
    let whole = zip(&[Entry::stored("x.npy", x.clone())]);
    refused("cut.npz", &whole[..whole.len() - 30], &["cut.npz"]);
    // A deflated member that inflates to more than its directory says: a zip bomb.
    let zeros = npy(&[1 << 20], &vec![0.0f32; 1 << 20]);
    let mut bomb = Entry::deflated("x.npy", zeros.clone());
    bomb.declared_size = Some(1000);
    refused("bomb.npz", &zip(&[bomb]), &["x", "1000 bytes"]);
    // Declaring far more than deflate can make from the compressed bytes.
    let mut liar = Entry::deflated("x.npy", x.clone());
    liar.declared_size = Some(u32::MAX);
    refused("liar.npz", &zip(&[liar]), &["more than deflate can produce"]);
    let mut crc = Entry::deflated("x.npy", x.clone());
    crc.declared_crc = Some(0x1234_5678);
    refused("crc.npz", &zip(&[crc]), &["CRC-32"]);
    let mut crc_stored = Entry::stored("x.npy", x.clone());
    crc_stored.declared_crc = Some(0x1234_5678);
    // A stored member is read in place and never whole at once: its CRC is not checked.
    let dir = Dir::new();
    dir.write("s.npz", &zip(&[crc_stored]));
    dir.run(&["sub", "s.npz", "s.npz", "-o", "c.npz"]).ok();
}

#[test]
fn overlapping_zip_members_are_refused() {
    // Two directory entries that point at the same local header and data.
    let x = npy(&[2], &[1.0f32, 2.0]);
    let mut bytes = zip(&[Entry::stored("x.npy", x.clone()), Entry::stored("y.npy", x)]);
    // Point y's directory entry (the second) at x's local header (offset 0): find the second
    // central header and zero its local-header offset.
    let cd = bytes.windows(4).position(|w| w == b"PK\x01\x02").expect("central directory");
    let second = cd + 4 + bytes[cd + 4..].windows(4).position(|w| w == b"PK\x01\x02").expect("second entry");
    bytes[second + 42..second + 46].copy_from_slice(&0u32.to_le_bytes());
    let dir = Dir::new();
    dir.write("o.npz", &bytes);
    let out = dir.run(&["sub", "o.npz", "o.npz", "-o", "c.npz"]);
    out.expect_code(1).expect_message();
    assert!(!dir.exists("c.npz"));
}

/// bfloat16 rounded from float32 by hand: nearest even on the bits, NaN made quiet.
fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

fn bf16_value(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// float16's formulas with bfloat16's rounding: one rounding at the end, or (`half`) one more
/// after the difference.
fn bf16_ref(sqdiff: bool, half: bool, a: u16, b: u16) -> u16 {
    let d = bf16_value(a) - bf16_value(b);
    match (sqdiff, half) {
        (false, _) => bf16_bits(d),
        (true, false) => bf16_bits(d * d),
        (true, true) => {
            let h = bf16_value(bf16_bits(d));
            bf16_bits(h * h)
        }
    }
}

/// bfloat16 bit patterns with seams: zeros, subnormals, the smallest normal, ±1 and neighbours,
/// the largest finite, infinities, NaNs, and values whose differences or squares round on a tie.
const BF16_EDGES: [u16; 24] = [
    0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x0081, 0x3f80, 0xbf80, 0x3f81, 0x3f7f, 0x7f7f, 0xff7f, 0x7f80,
    0xff80, 0x7fc0, 0xffc1, 0x4000, 0x5f80, 0x1f80, 0x3e4d, 0xc2f7, 0x4380, 0x3b80,
];

/// A `.safetensors` pair of bfloat16 members: every edge against every edge, and a broadcast one.
fn bf16_pair(dir: &Dir) -> (Vec<u16>, Vec<u16>) {
    let n = BF16_EDGES.len();
    let a: Vec<u16> = (0..n * n).map(|i| BF16_EDGES[i / n]).collect();
    let b: Vec<u16> = (0..n * n).map(|i| BF16_EDGES[i % n]).collect();
    let bytes = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let row: Vec<u16> = BF16_EDGES[..n].to_vec();
    dir.write(
        "a.safetensors",
        &safetensors(&[("edges", "BF16", &[n, n], bytes(&a)), ("bcast", "BF16", &[n, n], bytes(&a))]),
    );
    dir.write(
        "b.safetensors",
        &safetensors(&[("edges", "BF16", &[n, n], bytes(&b)), ("bcast", "BF16", &[n], bytes(&row))]),
    );
    (a, b)
}

fn as_u16(bytes: &[u8]) -> Vec<u16> {
    bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

fn same_bf16(what: &str, got: &[u16], want: &[u16]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let nan = |h: u16| h & 0x7fff > 0x7f80;
        assert!(g == w || nan(g) && nan(w), "{what} at {i}: got {g:#06x}, want {w:#06x}");
    }
}

/// The pair of `bf16_pair` broadcasts its member `bcast` on purpose: two containers' members
/// broadcast only when `--broadcast` says so.
const BCAST: &str = "--broadcast=numpy";

#[test]
fn bfloat16_members_compute_at_level_none_with_float16s_arithmetic() {
    let dir = Dir::new();
    let (a, b) = bf16_pair(&dir);
    for (args, sqdiff, half) in [
        (&["sub"][..], false, false),
        (&["sqdiff"][..], true, false),
        (&["sqdiff", "--half-precision"][..], true, true),
    ] {
        let cmd =
            [args, &["a.safetensors", "b.safetensors", "-f", "none", "-o", "c.safetensors", "--stats", "-q", BCAST]]
                .concat();
        dir.run(&cmd).ok();
        let c = read_safetensors(&dir.read("c.safetensors"));
        assert_eq!(c["edges"].0, "BF16", "{args:?}");
        let want: Vec<u16> = a.iter().zip(&b).map(|(&x, &y)| bf16_ref(sqdiff, half, x, y)).collect();
        same_bf16(&format!("{args:?} edges"), &as_u16(&c["edges"].2), &want);
        // The broadcast member: B's row against every row of A, which is `edges` again.
        same_bf16(&format!("{args:?} bcast"), &as_u16(&c["bcast"].2), &want);
    }
    // --stats over bfloat16 results: counts by class from the bits.
    dir.run(&[
        "sub",
        "a.safetensors",
        "b.safetensors",
        "-f",
        "none",
        "-o",
        NULL,
        "--stats",
        "--report",
        "r.json",
        BCAST,
    ])
    .ok();
    let r = dir.report("r.json");
    let want: Vec<u16> = a.iter().zip(&b).map(|(&x, &y)| bf16_ref(false, false, x, y)).collect();
    let nan = want.iter().filter(|&&h| h & 0x7fff > 0x7f80).count() as u64;
    assert_eq!(r["members"][0]["stats"]["count"], want.len() as u64);
    assert_eq!(r["members"][0]["stats"]["nan"], nan);
    assert_eq!(r["members"][0]["inputs"][0]["dtype"], "bfloat16");
}

#[test]
fn bfloat16_is_refused_at_every_directml_level_and_in_npz_outputs() {
    let dir = Dir::new();
    bf16_pair(&dir);
    for level in ["1_0", "3_1", "latest"] {
        let out = dir.run(&[
            "sub",
            "a.safetensors",
            "b.safetensors",
            "-f",
            level,
            "-o",
            "c.safetensors",
            "--report",
            "r.json",
            BCAST,
        ]);
        out.expect_code(3).stderr_mentions("DirectML has no bfloat16").stderr_mentions("--feature-level none");
        assert!(!dir.exists("c.safetensors"), "{level}: nothing written");
        let r = dir.report("r.json");
        assert_eq!(r["members"][0]["minimum_feature_level"], Value::Null, "{level}");
        let failed: Vec<&str> = r["members"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "fail")
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert!(failed.contains(&"datatype_supported"), "{level}: {failed:?}");
    }
    // .npy (and so .npz) has no bfloat16 type: refused before anything is written.
    let out = dir.run(&["sub", "a.safetensors", "b.safetensors", "-f", "none", "-o", "c.npz", BCAST]);
    out.expect_code(1).stderr_mentions("bfloat16").stderr_mentions(".safetensors");
    assert!(!dir.exists("c.npz"));
}

#[test]
fn bfloat16_on_wgpu_matches_the_cpu_bit_for_bit() {
    if !gpu_available("bfloat16_on_wgpu_matches_the_cpu_bit_for_bit") {
        return;
    }
    let dir = Dir::new();
    bf16_pair(&dir);
    for args in [&["sub"][..], &["sqdiff"], &["sqdiff", "--half-precision"]] {
        let cmd = [args, &["a.safetensors", "b.safetensors", "-f", "none", "-o", "-", "-q", BCAST]].concat();
        let cpu = dir.run(&cmd);
        cpu.ok();
        let cpu = read_safetensors(&cpu.stdout);
        // Native float32 where the device keeps subnormals, and float32 on its bits (as on a
        // device that flushes them).
        for env in [&[][..], &[("TENSOROP_WGPU_EMULATE", "1")]] {
            let gpu = dir.run_env(&[&cmd[..], &["--backend", "wgpu"]].concat(), env);
            gpu.ok();
            let gpu = read_safetensors(&gpu.stdout);
            for name in ["edges", "bcast"] {
                same_bf16(&format!("{args:?} {name} {env:?}"), &as_u16(&gpu[name].2), &as_u16(&cpu[name].2));
            }
        }
    }
}

#[test]
fn a_container_output_may_replace_an_input_in_place() {
    let dir = Dir::new();
    let [wa, wb, ..] = checkpoint_pair(&dir);
    let out = dir.run(&["sqdiff", "a.safetensors", "b.safetensors", "-o", "a.safetensors"]);
    out.ok();
    let c = read_safetensors(&dir.read("a.safetensors"));
    assert_eq!(as_f32(&c["w"].2), sq(&wa, &wb));
    // Another spelling of the null device only summarises: nothing is written anywhere.
    let null = if cfg!(windows) { "nul:" } else { "null-link" };
    #[cfg(unix)]
    std::os::unix::fs::symlink("/dev/null", dir.path(null)).expect("symlink");
    let before = dir.listing();
    let out = dir.run(&["sqdiff", "a.safetensors", "b.safetensors", "-o", null, "--stats", "--report", "r.json"]);
    out.ok();
    assert_eq!(dir.report("r.json")["output"], Value::Null, "summarised only");
    let mut after = dir.listing();
    after.retain(|f| f != "r.json");
    assert_eq!(after, before);
}

#[test]
fn a_dry_run_reports_every_members_descriptors_and_writes_nothing() {
    let dir = Dir::new();
    checkpoint_pair(&dir);
    dir.write("bias.npy", &npy(&[4], &[0.5f32, 1.0, -1.0, 2.0]));
    let before = dir.listing();
    let out =
        dir.run(&["sqdiff", "a.safetensors", "bias.npy", "--member", "w", "-f", "3_1", "--dry-run", "--report", "-"]);
    out.ok();
    let r: Value = serde_json::from_slice(&out.stdout).expect("report");
    let w = &r["members"][0];
    assert_eq!(w["broadcast"]["strides"], serde_json::json!([[4, 1], [0, 1]]));
    assert_eq!(w["dml"]["tensors"]["BTensor"]["Strides"], serde_json::json!([0, 1]), "{w}");
    assert_eq!(r["dry_run"], true);
    assert_eq!(dir.listing(), before, "nothing written");
}

#[test]
fn member_order_and_output_bytes_do_not_vary_between_runs() {
    let dir = Dir::new();
    // Empty tensors share their byte ranges: the order must still be the same every run.
    let mut members: Vec<(String, &str, Vec<usize>, Vec<u8>)> =
        (0..6).map(|i| (format!("e{i}"), "F32", vec![0], vec![])).collect();
    members.push(("w".into(), "F32", vec![2], f32_bytes(&[1.0, 2.0])));
    let members: Vec<_> = members.iter().map(|(n, d, s, b)| (n.as_str(), *d, s.as_slice(), b.clone())).collect();
    dir.write("a.safetensors", &safetensors(&members));
    let mut outputs = Vec::new();
    for _ in 0..4 {
        dir.run(&["sub", "a.safetensors", "a.safetensors", "-f", "none", "-o", "c.safetensors", "--report", "r.json"])
            .ok();
        let names: Vec<String> =
            dir.report("r.json")["members"].as_array().unwrap().iter().map(|m| m["name"].to_string()).collect();
        outputs.push((dir.read("c.safetensors"), names));
    }
    assert!(
        outputs.windows(2).all(|w| w[0] == w[1]),
        "runs differ: {:?}",
        outputs.iter().map(|o| &o.1).collect::<Vec<_>>()
    );
}

#[test]
fn names_and_dtypes_the_output_cannot_hold_are_refused_before_any_work() {
    let dir = Dir::new();
    let x = npy(&[2], &[1.0f32, 2.0]);
    dir.write("meta.npz", &zip(&[Entry::stored("__metadata__.npy", x.clone())]));
    let out = dir.run(&["sub", "meta.npz", "meta.npz", "-o", "c.safetensors", "--dry-run"]);
    out.expect_code(1).stderr_mentions("__metadata__").stderr_mentions("-o OUT.npz");
    dir.run(&["sub", "meta.npz", "meta.npz", "-o", "c.npz"]).ok();
    // An entry named `.npy` would be a member without a name.
    refused("anon.npz", &zip(&[Entry::stored(".npy", x)]), &["\".npy\"", "an empty name"]);
    // bfloat16 has no .npy type: refused under --dry-run too.
    bf16_pair(&dir);
    let out = dir.run(&["sub", "a.safetensors", "b.safetensors", "-f", "none", "-o", "c2.npz", "--dry-run", BCAST]);
    out.expect_code(1).stderr_mentions("bfloat16");
    assert!(!dir.exists("c.safetensors") && !dir.exists("c2.npz"));
    // Sub-byte safetensors dtypes are refused by name when the file is opened.
    let f4 = safetensors(&[("packed", "F4", &[2], vec![0x11])]);
    refused("f4.safetensors", &f4, &["packed", "F4"]);
}

#[test]
fn a_forced_progress_bar_goes_to_standard_error_only() {
    let dir = Dir::new();
    let [wa, wb, ..] = checkpoint_pair(&dir);
    let out = dir.run(&["sqdiff", "a.safetensors", "b.safetensors", "-o", "-", "--progress", "always"]);
    out.ok();
    assert!(out.stderr.contains("B/"), "a bar counting bytes: {}", out.stderr);
    assert_eq!(as_f32(&read_safetensors(&out.stdout)["w"].2), sq(&wa, &wb), "standard output holds only the container");
    let quiet = dir.run(&["sqdiff", "a.safetensors", "b.safetensors", "-o", "-", "--progress", "always", "-q"]);
    quiet.ok();
    assert_eq!(quiet.stderr, "", "-q draws nothing");
}

/// 30 members `m00`..`m29`, each of 4 float32 elements: A all zeros, B `v` in the first 25
/// (every `v` different but `m03`'s and `m20`'s, and a NaN in `m11`), A's values in the last 5.
/// Returns the 25 differing names, worst first: `m11` (NaN), then by `v` (which orders both
/// sqdiff's mean squared error `v * v` and sub's max |difference| `v`), equal ones by name.
fn ranked_pair(dir: &Dir) -> Vec<String> {
    let v = |i: usize| match i {
        11 => f32::NAN,
        20 => v_of(3),
        _ => v_of(i),
    };
    fn v_of(i: usize) -> f32 {
        ((i * 7) % 25) as f32 + 1.0
    }
    let names: Vec<String> = (0..30).map(|i| format!("m{i:02}")).collect();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (i, name) in names.iter().enumerate() {
        let same = [1.0f32, 2.0, 3.0, 4.0];
        let (x, y) = if i < 25 { ([0.0; 4], [v(i); 4]) } else { (same, same) };
        a.push((name.as_str(), "F32", &[4usize][..], f32_bytes(&x)));
        b.push((name.as_str(), "F32", &[4usize][..], f32_bytes(&y)));
    }
    dir.write("a.safetensors", &safetensors(&a));
    dir.write("b.safetensors", &safetensors(&b));
    let mut worst: Vec<(f32, &String)> = names[..25].iter().enumerate().map(|(i, n)| (v(i), n)).collect();
    worst.sort_by(|x, y| match (x.0.is_nan(), y.0.is_nan()) {
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => y.0.partial_cmp(&x.0).unwrap_or(std::cmp::Ordering::Equal).then(x.1.cmp(y.1)),
    });
    worst.into_iter().map(|(_, n)| n.clone()).collect()
}

/// The members standard error lists, in its order.
fn listed(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("tensorop: m").filter(|r| r.as_bytes().get(2) == Some(&b':')))
        .map(|r| format!("m{}", &r[..2]))
        .collect()
}

#[test]
fn stats_print_the_totals_then_the_ten_worst_members_and_the_report_has_every_member_ranked() {
    let dir = Dir::new();
    let worst = ranked_pair(&dir);
    // By hand: the NaN, then v = 25, 24, 23, and the tie at 22 by name.
    assert_eq!(worst[..6], ["m11", "m07", "m14", "m21", "m03", "m20"]);
    let out = dir.run(&["sqdiff", "a.safetensors", "b.safetensors", "-o", NULL, "--stats", "--report", "r.json"]);
    out.ok();
    let err = &out.stderr;
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines[0], "tensorop: 30 member pairs compared: 25 differ, 5 bit-identical", "{err}");
    assert!(lines[1].starts_with("tensorop: stats of sqdiff (all members, 120 elements)"), "{err}");
    assert!(lines[2].contains("(mean squared error)"), "{err}");
    assert_eq!(
        lines[3],
        "tensorop: the 10 worst of 25 differing members, worst first by mean squared error (NaN first, equal ones by \
         name):",
        "{err}"
    );
    assert_eq!(listed(err), worst[..10], "{err}");
    assert!(lines[4].starts_with("tensorop: m11: float32 [4]: 4 of 4 elements non-zero (4 NaN)"), "{err}");
    assert_eq!(
        lines.last().copied(),
        Some(
            "tensorop: 15 more differing members not shown: -v prints them all; the report (r.json) lists every member"
        ),
        "{err}"
    );
    assert_eq!(lines.len(), 15, "{err}");
    // The report: every member, in A's order, each ranked as -v lists them.
    let r = dir.report("r.json");
    let members = r["members"].as_array().expect("members");
    assert_eq!(members.len(), 30);
    for (i, m) in members.iter().enumerate() {
        assert_eq!(m["name"], format!("m{i:02}"));
        assert_eq!(m["stats"]["count"], 4, "{m}");
    }
    let by_rank = |r: &Value| {
        let mut ranked: Vec<(u64, String)> = r["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["rank"].as_u64().expect("a rank"), m["name"].as_str().unwrap().to_string()))
            .collect();
        ranked.sort();
        assert_eq!(ranked.iter().map(|x| x.0).collect::<Vec<_>>(), (1..=30).collect::<Vec<_>>());
        ranked.into_iter().map(|x| x.1).collect::<Vec<_>>()
    };
    assert_eq!(by_rank(&r)[..25], worst[..]);
    assert_eq!(r["totals"]["differing"], 25);
    // -v: every member, the identical ones last by name, and no line for members left out.
    let out = dir.run(&["sqdiff", "a.safetensors", "b.safetensors", "-o", NULL, "--stats", "-v"]);
    out.ok();
    let all: Vec<String> = worst.iter().cloned().chain((25..30).map(|i| format!("m{i:02}"))).collect();
    assert_eq!(listed(&out.stderr), all, "{}", out.stderr);
    assert!(out.stderr.contains("every member pair (30), worst first"), "{}", out.stderr);
    assert!(!out.stderr.contains("not shown"), "{}", out.stderr);
    assert!(out.stderr.contains("|x| by binade"), "-v draws the histogram: {}", out.stderr);
    // sub ranks by max |difference|; without --report, the last line says how to get one.
    let out = dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", NULL, "--stats", "--report", "s.json"]);
    out.ok().stderr_mentions("worst first by max |difference|");
    assert_eq!(listed(&out.stderr), worst[..10], "{}", out.stderr);
    assert_eq!(by_rank(&dir.report("s.json")), all);
    let out = dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", NULL, "--stats"]);
    out.ok().stderr_mentions("15 more differing members not shown: -v prints them all; --report PATH writes every");
    // Without --stats: no rank, and nothing on standard error.
    let out = dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", NULL, "--report", "n.json"]);
    out.ok();
    assert_eq!(out.stderr, "");
    assert_eq!(dir.report("n.json")["members"][0]["rank"], Value::Null);
}
