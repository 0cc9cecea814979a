//! `tensorop compare` with tolerances (`--atol`, `--rtol`, `--ulps`) on float32, float16,
//! float64 and integer files, its exact largest difference, two containers member by member,
//! `info` on containers, and containers on standard input (`-`) for `sub`, `sqdiff`, `info` and
//! `compare`. Every test drives the real binary and checks the exit status and the output.

use crate::common::containers::*;
use crate::common::*;
use serde_json::Value;

/// `compare` with `args` in `dir`: the exit status, the text, and the same run's `--json`.
fn compare(dir: &Dir, args: &[&str], code: i32) -> (String, Value) {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    let text = dir.run(&all).expect_code(code).stdout_str();
    all.push("--json");
    let json = dir.run(&all).expect_code(code).stdout_json();
    (text, json)
}

fn has(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} missing from:\n{text}");
    }
}

#[test]
fn without_a_tolerance_any_difference_is_exit_4() {
    let dir = Dir::new();
    float32_pair(&dir);
    let (text, json) = compare(&dir, &["a.npy", "b.npy"], 4);
    has(&text, &["2 of 4 elements differ (50.000%), float32 [2, 2]\n", "largest absolute difference: 0.5 at [1, 1]"]);
    assert!(!text.contains("tolerance"), "{text}");
    assert_eq!((json["verdict"].as_str(), json["tolerance"].is_null()), (Some("different"), true));
    assert_eq!((json["differing"].as_u64(), json["outside_tolerance"].as_u64()), (Some(2), Some(2)));
    assert_eq!(json["max_abs_difference"], "0.5");
    // The same file twice: bit-identical, with or without a tolerance.
    let (text, json) = compare(&dir, &["a.npy", "a.npy", "--atol", "1"], 0);
    has(&text, &["a.npy and a.npy: bit-identical (float32 [2, 2], 4 elements)"]);
    assert_eq!(json["verdict"], "bit_identical");
}

#[test]
fn float32_within_atol_rtol_or_ulps_is_exit_0() {
    let dir = Dir::new();
    float32_pair(&dir);
    let (text, json) = compare(&dir, &["a.npy", "b.npy", "--atol", "0.5"], 0);
    has(&text, &["2 of 4 elements differ (50.000%), float32 [2, 2]; all within tolerance (--atol 0.5)"]);
    assert_eq!((json["verdict"].as_str(), json["outside_tolerance"].as_u64()), (Some("within_tolerance"), Some(0)));
    assert_eq!(json["tolerance"], serde_json::json!({ "atol": 0.5, "rtol": null, "ulps": null }));
    let (text, json) = compare(&dir, &["a.npy", "b.npy", "--atol", "0.4"], 4);
    has(&text, &["; 1 outside tolerance (--atol 0.4)"]);
    assert_eq!((json["verdict"].as_str(), json["outside_tolerance"].as_u64()), (Some("different"), Some(1)));
    // --rtol scales with B: 0.5 <= 0.125 * 4.5, but not 0.1 * 4.5; A as the reference is 4.
    compare(&dir, &["a.npy", "b.npy", "--rtol", "0.125"], 0);
    compare(&dir, &["a.npy", "b.npy", "--rtol", "0.1"], 4);
    compare(&dir, &["b.npy", "a.npy", "--rtol", "0.12"], 4);
    compare(&dir, &["b.npy", "a.npy", "--rtol", "0.125"], 0);
    // --ulps: the 3-ulp element passes, 4 against 4.5 does not, unless --atol covers it.
    let (text, _) = compare(&dir, &["a.npy", "b.npy", "--ulps", "3"], 4);
    has(&text, &["; 1 outside tolerance (--ulps 3)"]);
    let (text, _) = compare(&dir, &["a.npy", "b.npy", "--ulps", "2", "--atol", "1e-7"], 4);
    has(&text, &["; 2 outside tolerance (--atol 1e-7 --ulps 2)"]);
    let (text, _) = compare(&dir, &["a.npy", "b.npy", "--ulps", "3", "--atol", "0.5"], 0);
    has(&text, &["all within tolerance (--atol 0.5 --ulps 3)"]);
}

#[test]
fn float16_tolerances_count_float16_ulps_and_values() {
    let dir = Dir::new();
    // 1 and its neighbour 1 + 2^-10; 2 and 2.
    dir.write("a.npy", &npy(&[2], &[H(0x3c00), H(0x4000)]));
    dir.write("b.npy", &npy(&[2], &[H(0x3c01), H(0x4000)]));
    let (text, json) = compare(&dir, &["a.npy", "b.npy"], 4);
    has(&text, &["1 of 2 elements differ", "largest distance: 1 ulp at [0]", "[0]: 1 vs 1.001 (1 ulp)"]);
    assert_eq!(json["max_abs_difference"], "0.0009765625");
    compare(&dir, &["a.npy", "b.npy", "--ulps", "1"], 0);
    compare(&dir, &["a.npy", "b.npy", "--ulps", "0"], 4);
    compare(&dir, &["a.npy", "b.npy", "--atol", "0.0009765625"], 0);
    compare(&dir, &["a.npy", "b.npy", "--atol", "0.0009"], 4);
}

#[test]
fn float64_differences_are_exact_and_bounds_decided_exactly() {
    let dir = Dir::new();
    let next = f64::from_bits(1e300f64.to_bits() + 1);
    dir.write("a.npy", &npy(&[2], &[1e300f64, 0.1 + 0.2]));
    dir.write("b.npy", &npy(&[2], &[next, 0.3]));
    let (text, json) = compare(&dir, &["a.npy", "b.npy"], 4);
    // 1e300 and its neighbour are 2^944 apart: every one of its 285 digits, no padding zeros.
    has(&text, &["largest absolute difference: 1.487016908477783e284 at [0]", "[0]: 1e300 vs 1.0000000000000002e300"]);
    let digits = json["max_abs_difference"].as_str().unwrap();
    assert_eq!(digits.len(), 285, "{digits}");
    assert!(digits.starts_with("14870169084777830627") && digits.ends_with("1468416"), "{digits}");
    // 0.1 + 0.2 against 0.3: exactly 2^-54 apart, which --atol 2^-54 allows (on the bound).
    dir.write("c.npy", &npy(&[1], &[0.1f64 + 0.2]));
    dir.write("d.npy", &npy(&[1], &[0.3f64]));
    let (_, json) = compare(&dir, &["c.npy", "d.npy"], 4);
    assert_eq!(json["max_abs_difference"], "0.000000000000000055511151231257827021181583404541015625");
    compare(&dir, &["c.npy", "d.npy", "--atol", "5.551115123125783e-17"], 0);
    compare(&dir, &["c.npy", "d.npy", "--atol", "5.551115123125782e-17"], 4);
    // A difference no float64 holds: the text says the shown value is rounded.
    dir.write("e.npy", &npy(&[1], &[1.0f64]));
    dir.write("f.npy", &npy(&[1], &[2f64.powi(-60)]));
    let (text, json) = compare(&dir, &["e.npy", "f.npy"], 4);
    has(&text, &["largest absolute difference: 1 (rounded to float64; --json gives every digit)"]);
    assert_eq!(json["max_abs_difference"], "0.999999999999999999132638262011596452794037759304046630859375");
}

#[test]
fn integer_tolerances_apply_to_exact_differences() {
    let dir = Dir::new();
    // Beyond 2^53, where float64 would call 2^60 + 3 and 2^60 equal.
    dir.write("a.npy", &npy(&[2], &[(1i64 << 60) + 3, -5]));
    dir.write("b.npy", &npy(&[2], &[1i64 << 60, -5]));
    let (text, json) = compare(&dir, &["a.npy", "b.npy"], 4);
    has(
        &text,
        &[
            "1 of 2 elements differ",
            "largest absolute difference: 3 at [0]",
            "[0]: 1152921504606846979 vs 1152921504606846976",
        ],
    );
    // Integers are their difference apart: the spacing of integers is 1.
    assert_eq!(json["max_ulps"], 3, "{json}");
    compare(&dir, &["a.npy", "b.npy", "--atol", "3"], 0);
    compare(&dir, &["a.npy", "b.npy", "--atol", "2.99"], 4);
    compare(&dir, &["a.npy", "b.npy", "--ulps", "3"], 0);
    compare(&dir, &["a.npy", "b.npy", "--ulps", "2"], 4);
    // rtol * |b| exactly: 2^-60 * 2^60 = 1 allows a difference of 1, not 3.
    compare(&dir, &["a.npy", "b.npy", "--rtol", "8.673617379884035e-19"], 4);
    compare(&dir, &["a.npy", "b.npy", "--rtol", "2.6020852139652106e-18"], 0);
    // int8 and uint64 extremes: exact differences of any size.
    dir.write("i.npy", &npy(&[1], &[-128i8]));
    dir.write("j.npy", &npy(&[1], &[127i8]));
    let (_, json) = compare(&dir, &["i.npy", "j.npy"], 4);
    assert_eq!(json["max_abs_difference"], "255");
    compare(&dir, &["i.npy", "j.npy", "--atol", "255"], 0);
    dir.write("u.npy", &npy(&[1], &[u64::MAX]));
    dir.write("z.npy", &npy(&[1], &[0u64]));
    let (_, json) = compare(&dir, &["u.npy", "z.npy", "--rtol", "1"], 4);
    assert_eq!(json["max_abs_difference"], "18446744073709551615");
    compare(&dir, &["z.npy", "u.npy", "--rtol", "1"], 0);
    // int32 and --rtol: 10 <= 0.1 * 100, 11 is not.
    dir.write("p.npy", &npy(&[2], &[110i32, 111]));
    dir.write("q.npy", &npy(&[2], &[100i32, 100]));
    let (text, _) = compare(&dir, &["p.npy", "q.npy", "--rtol", "0.1"], 4);
    has(&text, &["2 of 2 elements differ", "; 1 outside tolerance (--rtol 0.1)"]);
}

#[test]
fn nans_equal_only_bit_for_bit_infinities_only_themselves_and_zeros_by_value() {
    let dir = Dir::new();
    let nan = |bits: u32| f32::from_bits(bits);
    dir.write("a.npy", &npy(&[3], &[nan(0x7fc0_0000), f32::INFINITY, 0.0]));
    dir.write("b.npy", &npy(&[3], &[nan(0x7fc0_0001), f32::NEG_INFINITY, -0.0]));
    let (text, json) = compare(&dir, &["a.npy", "b.npy", "--atol", "1e30", "--rtol", "1"], 4);
    has(
        &text,
        &["3 of 3 elements differ", "; 2 outside tolerance", "NaN on one side only (or NaNs of different bits): 1"],
    );
    assert_eq!(json["max_abs_difference"], "inf");
    // +0 and -0: different bits (exit 4 without a tolerance), equal values (--atol 0).
    dir.write("c.npy", &npy(&[1], &[0.0f32]));
    dir.write("d.npy", &npy(&[1], &[-0.0f32]));
    compare(&dir, &["c.npy", "d.npy"], 4);
    let (_, json) = compare(&dir, &["c.npy", "d.npy", "--atol", "0"], 0);
    assert_eq!(json["verdict"], "within_tolerance");
    // The same NaN bits: bit-identical.
    compare(&dir, &["a.npy", "a.npy"], 0);
}

#[test]
fn tolerances_must_be_finite_and_not_negative() {
    let dir = Dir::new();
    float32_pair(&dir);
    for bad in [["--atol", "-1"], ["--rtol", "nan"], ["--atol", "inf"], ["--ulps", "-1"], ["--atol", "x"]] {
        dir.run(&["compare", "a.npy", "b.npy", bad[0], bad[1]]).expect_code(2).expect_message();
    }
}

/// a.safetensors and b.safetensors: `same` bit-identical, `near` 1 ulp apart, `far` 0.5 apart.
fn container_pair(dir: &Dir, b_extra: Option<(&str, Vec<u8>)>) {
    let one_up = f32::from_bits(1.0f32.to_bits() + 1);
    dir.write(
        "a.safetensors",
        &safetensors(&[
            ("same", "F32", &[2], f32_bytes(&[1.0, 2.0])),
            ("near", "F32", &[2], f32_bytes(&[1.0, 3.0])),
            ("far", "F32", &[1], f32_bytes(&[1.0])),
        ]),
    );
    let mut b: Vec<(&str, &str, &[usize], Vec<u8>)> = vec![
        ("far", "F32", &[1], f32_bytes(&[1.5])),
        ("near", "F32", &[2], f32_bytes(&[one_up, 3.0])),
        ("same", "F32", &[2], f32_bytes(&[1.0, 2.0])),
    ];
    if let Some((name, bytes)) = b_extra {
        b.push((name, "F32", &[1], bytes));
    }
    dir.write("b.safetensors", &safetensors(&b));
}

#[test]
fn containers_compare_member_by_member() {
    let dir = Dir::new();
    container_pair(&dir, None);
    let (text, json) = compare(&dir, &["a.safetensors", "b.safetensors"], 4);
    has(
        &text,
        &[
            "a.safetensors[same] and b.safetensors[same]: bit-identical (float32 [2], 2 elements)",
            "a.safetensors[near] and b.safetensors[near]: 1 of 2 elements differ",
            "a.safetensors[far] and b.safetensors[far]: 1 of 1 element differ",
            "a.safetensors and b.safetensors: 3 member pairs compared: 1 bit-identical, 0 within tolerance, 2 differ\n",
        ],
    );
    assert_eq!(json["verdict"], "different");
    let verdicts: Vec<(&str, &str)> = json["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["member"].as_str().unwrap(), m["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(verdicts, [("same", "bit_identical"), ("near", "different"), ("far", "different")]);
    let (text, json) = compare(&dir, &["a.safetensors", "b.safetensors", "--ulps", "1"], 4);
    has(&text, &["1 bit-identical, 1 within tolerance, 1 differ"]);
    assert_eq!(json["members"][1]["verdict"], "within_tolerance");
    let (_, json) = compare(&dir, &["a.safetensors", "b.safetensors", "--atol", "0.5"], 0);
    assert_eq!(json["verdict"], "within_tolerance");
    // An .npz against the .safetensors: the formats mix, as in runs.
    let npz = zip(&[
        Entry::stored("far.npy", npy(&[1], &[1.5f32])),
        Entry::deflated("same.npy", npy(&[2], &[1.0f32, 2.0])),
        Entry::stored("near.npy", npy(&[2], &[1.0f32, 3.0])),
    ]);
    dir.write("c.npz", &npz);
    let (text, _) = compare(&dir, &["c.npz", "a.safetensors"], 4);
    has(&text, &["3 member pairs compared: 2 bit-identical, 0 within tolerance, 1 differ"]);
    compare(&dir, &["c.npz", "b.safetensors", "--ulps", "1"], 0);
}

#[test]
fn containers_with_unpaired_or_incomparable_members() {
    let dir = Dir::new();
    container_pair(&dir, Some(("extra", f32_bytes(&[0.0]))));
    // A member only B holds: exit 5, as runs; the pairs are still compared and listed.
    let (text, json) = compare(&dir, &["a.safetensors", "b.safetensors", "--atol", "1"], 5);
    has(
        &text,
        &[
            "1 member only in B (b.safetensors), unpaired: extra",
            "3 member pairs compared: 1 bit-identical, 2 within tolerance, 0 differ; 1 member without a partner",
        ],
    );
    assert_eq!((json["verdict"].as_str(), json["only_in_b"].clone()), (Some("unpaired"), serde_json::json!(["extra"])));
    assert_eq!(json["members"].as_array().map(Vec::len), Some(3));
    // A pair of different dtypes cannot be compared: exit 1, the others still compared.
    dir.write(
        "c.safetensors",
        &safetensors(&[("same", "F16", &[2], vec![0; 4]), ("far", "F32", &[1], f32_bytes(&[1.0]))]),
    );
    dir.write(
        "d.safetensors",
        &safetensors(&[("same", "F32", &[2], f32_bytes(&[0.0, 0.0])), ("far", "F32", &[1], f32_bytes(&[1.0]))]),
    );
    let (text, json) = compare(&dir, &["c.safetensors", "d.safetensors"], 1);
    has(
        &text,
        &[
            "member \"same\": cannot compare: ",
            "is float16 and",
            "1 bit-identical, 0 within tolerance, 0 differ; 1 member pair not comparable",
        ],
    );
    assert_eq!((json["verdict"].as_str(), json["errors"][0]["member"].as_str()), (Some("error"), Some("same")));
    // A container against a .npy: refused (exit 1), naming both.
    dir.write("x.npy", &npy(&[1], &[1.0f32]));
    dir.run(&["compare", "x.npy", "a.safetensors"]).expect_code(1).stderr_mentions("one is a container");
}

#[test]
fn info_lists_a_containers_members() {
    let dir = Dir::new();
    dir.write(
        "m.safetensors",
        &safetensors(&[("w", "F32", &[2, 2], f32_bytes(&[0.0; 4])), ("q", "U8", &[3], vec![1, 2, 3])]),
    );
    let big = npy_with(&[2, 3], &[1i32; 6], Layout::big());
    dir.write("m.npz", &zip(&[Entry::deflated("d/x.npy", big), Entry::stored("y.npy", npy(&[2], &[1.0f64, 2.0]))]));
    dir.write("u.npy", &npy(&[2], &[7u8, 8]));
    let out = dir.run(&["info", "m.safetensors", "m.npz", "u.npy"]);
    let text = out.ok().stdout_str();
    let size = |name: &str| dir.read(name).len();
    let expected = format!(
        "m.safetensors: safetensors, 2 members, {} bytes\n  \
         w: float32 [2, 2] (C order, little byte order, 16 data bytes)\n  \
         q: uint8 [3] (C order, no byte order (1-byte elements), 3 data bytes)\n\
         m.npz: npz, 2 members, {} bytes\n  \
         d/x: int32 [2, 3] (C order, big byte order, .npy 1.0, 24 data bytes)\n  \
         y: float64 [2] (C order, little byte order, .npy 1.0, 16 data bytes)\n\
         u.npy: uint8 [2] (C order, no byte order (1-byte elements), .npy 1.0, 2 data bytes)\n",
        size("m.safetensors"),
        size("m.npz")
    );
    assert_eq!(text, expected);
    let json = dir.run(&["info", "m.safetensors", "m.npz", "u.npy", "--json"]).ok().stdout_json();
    assert_eq!(json[0]["format"], "safetensors");
    assert_eq!(json[0]["members"][1]["name"], "q");
    assert_eq!(json[0]["members"][1]["byte_order"], "not_applicable");
    assert!(json[0]["members"][0]["npy_version"].is_null());
    assert_eq!(json[1]["members"][0]["name"], "d/x");
    assert_eq!(json[1]["members"][0]["byte_order"], "big");
    assert_eq!(json[1]["members"][0]["shape"], serde_json::json!([2, 3]));
    assert_eq!(json[1]["members"][0]["npy_version"], "1.0");
    // A .npy keeps its keys, byte order included.
    assert_eq!(json[2]["byte_order"], "not_applicable");
    assert!(json[2].get("format").is_none(), "{}", json[2]);
}

#[test]
fn a_container_on_standard_input_runs_as_the_same_file_would() {
    let dir = Dir::new();
    container_pair(&dir, None);
    let a = dir.read("a.safetensors");
    dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", "by_path.safetensors"]).ok();
    dir.run_piped(&["sub", "-", "b.safetensors", "-o", "piped.safetensors"], &a).ok();
    dir.run_redirected(&["sub", "-", "b.safetensors", "-o", "redirected.safetensors"], "a.safetensors").ok();
    assert_eq!(dir.read("piped.safetensors"), dir.read("by_path.safetensors"));
    assert_eq!(dir.read("redirected.safetensors"), dir.read("by_path.safetensors"));
    // An .npz on standard input as B, to sqdiff.
    let npz =
        zip(&[Entry::deflated("far.npy", npy(&[1], &[1.5f32])), Entry::stored("near.npy", npy(&[2], &[2.0f32, 3.0]))]);
    dir.write("b.npz", &npz);
    dir.write(
        "a.npz",
        &zip(&[Entry::stored("far.npy", npy(&[1], &[1.0f32])), Entry::stored("near.npy", npy(&[2], &[1.0f32, 1.0]))]),
    );
    dir.run(&["sqdiff", "a.npz", "b.npz", "-o", "by_path.npz"]).ok();
    dir.run_piped(&["sqdiff", "a.npz", "-", "-o", "piped.npz"], &npz).ok();
    assert_eq!(read_npz(&dir.read("piped.npz")), read_npz(&dir.read("by_path.npz")));
    // info and compare read it too.
    let out = dir.run_piped(&["info", "-"], &a);
    assert!(out.ok().stdout_str().starts_with("-: safetensors, 3 members, "), "{}", out.stdout_str());
    let out = dir.run_piped(&["compare", "-", "a.safetensors"], &a);
    assert!(out.ok().stdout_str().contains("3 member pairs compared: 3 bit-identical"), "{}", out.stdout_str());
    // A .npy on standard input is read as before.
    dir.write("x.npy", &npy(&[2], &[1.0f32, 2.0]));
    dir.run_piped(&["compare", "x.npy", "-"], &dir.read("x.npy")).ok();
}
