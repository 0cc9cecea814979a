//! Verdicts that must not say "identical" when they are not: a checkpoint member whose shape
//! changed (the `--stats` digest, the report and `compare`), two `.npy` files of different
//! shapes, and an output named as a container for a `.npy` pair; and what any conformant
//! DirectML may give (`--device-dependence`, `compare --conformant`). Every test drives the real
//! binary and checks the exit status, standard error and the JSON a script would read.

use crate::common::containers::*;
use crate::common::*;

/// Two checkpoints: `w` is `[8, 8]` in A and `[1, 8]` in B with the same values (a broadcast
/// would hide the change), `v` is the same in both.
fn reshaped_checkpoints(dir: &Dir) {
    let ones = |n: usize| f32_bytes(&vec![1.0; n]);
    let v = f32_bytes(&[0.0, 1.0, 2.0, 3.0]);
    dir.write("sa.safetensors", &safetensors(&[("w", "F32", &[8, 8], ones(64)), ("v", "F32", &[4], v.clone())]));
    dir.write("sb.safetensors", &safetensors(&[("w", "F32", &[1, 8], ones(8)), ("v", "F32", &[4], v)]));
}

#[test]
fn a_member_whose_shape_changed_is_a_difference_not_identical() {
    let dir = Dir::new();
    reshaped_checkpoints(&dir);
    // The digest: not computed, named with both shapes, exit 5 as for a member without partner.
    let out = dir.run(&["sqdiff", "sa.safetensors", "sb.safetensors", "-o", NULL, "--stats", "--report", "r.json"]);
    out.expect_code(5).stderr_mentions("w: [8, 8] in A, [1, 8] in B").stderr_mentions("--skip-unpaired");
    assert!(!out.stderr.contains("identical"), "{}", out.stderr);
    let r = dir.report("r.json");
    assert_eq!(r["unpaired"]["shape_changed"], serde_json::json!([{"name": "w", "shapes": [[8, 8], [1, 8]]}]));
    assert_eq!(r["totals"]["shape_changed"], 1);
    // --skip-unpaired: the other pair computed, the changed one counted apart, never identical.
    let out = dir.run(&[
        "sqdiff",
        "sa.safetensors",
        "sb.safetensors",
        "-o",
        NULL,
        "--stats",
        "--skip-unpaired",
        "--report",
        "r.json",
    ]);
    out.ok()
        .stderr_mentions("1 member pair compared: 0 differ, 1 bit-identical")
        .stderr_mentions("1 more member changed shape, not computed");
    let r = dir.report("r.json");
    assert_eq!((r["totals"]["differing"].clone(), r["totals"]["pairs"].clone()), (1.into(), 1.into()));
    assert_eq!(r["members"].as_array().map(|m| m.len()), Some(1));
    assert_eq!(r["members"][0]["name"], "v");
}

/// The digest's "identical" is the comparison core's: A's member is B's bit for bit. The same
/// NaN is identical although NaN - NaN is NaN; +0 against -0 differs although 0 - -0 is 0.
#[test]
fn the_digest_says_identical_for_bit_identical_members_only() {
    let dir = Dir::new();
    let nan = f32_bytes(&[f32::from_bits(0x7fc0_0001), 1.0]);
    dir.write(
        "a.safetensors",
        &safetensors(&[("nan", "F32", &[2], nan.clone()), ("zero", "F32", &[1], f32_bytes(&[0.0]))]),
    );
    dir.write("b.safetensors", &safetensors(&[("nan", "F32", &[2], nan), ("zero", "F32", &[1], f32_bytes(&[-0.0]))]));
    let out = dir.run(&["sub", "a.safetensors", "b.safetensors", "-o", NULL, "--stats", "-v", "--report", "r.json"]);
    out.ok().stderr_mentions("2 member pairs compared: 1 differ, 1 bit-identical");
    let r = dir.report("r.json");
    let identical = |name: &str| {
        let m = r["members"].as_array().expect("members").iter().find(|m| m["name"] == name).cloned().expect("member");
        m["identical"].clone()
    };
    assert_eq!((identical("nan"), identical("zero")), (true.into(), false.into()));
    assert_eq!(r["totals"]["differing"], 1);
    // A .npy against a container is no diff: its result is what counts, and no bit verdict.
    dir.write("z.npy", &npy(&[1], &[0.0f32]));
    let out =
        dir.run(&["sub", "a.safetensors", "z.npy", "-o", NULL, "--stats", "--member", "zero", "--report", "r.json"]);
    out.ok().stderr_mentions("1 member pair compared: 0 differ, 1 identical (all-zero result)");
    assert_eq!(dir.report("r.json")["members"][0]["identical"], serde_json::Value::Null);
}

#[test]
fn broadcasting_members_on_purpose_still_counts_them_as_differing() {
    let dir = Dir::new();
    reshaped_checkpoints(&dir);
    let out = dir.run(&[
        "sqdiff",
        "sa.safetensors",
        "sb.safetensors",
        "-o",
        NULL,
        "--stats",
        "--broadcast",
        "numpy",
        "--report",
        "r.json",
    ]);
    out.ok()
        .stderr_mentions("2 member pairs compared: 1 differ, 1 identical")
        .stderr_mentions("w: float32 [8, 8] (broadcast: [8, 8] in A, [1, 8] in B)");
    let r = dir.report("r.json");
    assert_eq!(r["totals"]["differing"], 1);
    let w = r["members"].as_array().expect("members").iter().find(|m| m["name"] == "w").cloned().expect("w");
    assert_eq!((w["shapes_differ"].clone(), w["broadcast"]["mode"].clone()), (true.into(), "numpy".into()));
    // A .npy against a container broadcasts by design, and the default stays NumPy's rule.
    dir.write("row.npy", &npy(&[8], &[1.0f32; 8]));
    let out =
        dir.run(&["sub", "sa.safetensors", "row.npy", "-o", NULL, "--member", "w", "--stats", "--report", "r.json"]);
    out.ok().stderr_mentions("1 member pair compared: 0 differ, 1 identical (all-zero result)");
    assert_eq!(dir.report("r.json")["members"][0]["shapes_differ"], false);
}

#[test]
fn compare_reports_changed_shapes_as_differences() {
    let dir = Dir::new();
    reshaped_checkpoints(&dir);
    let out = dir.run(&["compare", "sa.safetensors", "sb.safetensors"]);
    let text = out.expect_code(4).stdout_str();
    assert!(text.contains("sa.safetensors[w] and sb.safetensors[w]: different shapes, [8, 8] and [1, 8]"), "{text}");
    assert!(text.contains("1 bit-identical, 0 within tolerance, 1 differ (1 in shape)"), "{text}");
    let json = dir.run(&["compare", "sa.safetensors", "sb.safetensors", "--json"]).expect_code(4).stdout_json();
    assert_eq!(json["verdict"], "different");
    let w = json["members"].as_array().expect("members").iter().find(|m| m["member"] == "w").cloned().expect("w");
    assert_eq!(w["verdict"], "different_shape");
    assert_eq!(w["shapes"], serde_json::json!([[8, 8], [1, 8]]));
    assert_eq!((w["identical"].clone(), w["compared"].clone()), (false.into(), 0.into()));
    // Two .npy files of different elements: a difference (exit 4), not an error.
    dir.write("p.npy", &npy(&[2, 3], &[0i32; 6]));
    dir.write("q.npy", &npy(&[3, 2], &[0i32; 6]));
    let json = dir.run(&["compare", "p.npy", "q.npy", "--json"]).expect_code(4).stdout_json();
    assert_eq!(
        (json["verdict"].clone(), json["shapes"].clone()),
        ("different_shape".into(), serde_json::json!([[2, 3], [3, 2]]))
    );
    // Equal up to dimensions of size 1 (a DirectML output padded to rank 4): compared.
    dir.write("r.npy", &npy(&[1, 1, 2, 3], &[0i32; 6]));
    let json = dir.run(&["compare", "r.npy", "p.npy", "--json"]).ok().stdout_json();
    assert_eq!((json["verdict"].clone(), json["compared"].clone()), ("bit_identical".into(), 6.into()));
}

#[test]
fn compare_locates_the_first_difference_with_both_bit_patterns() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2, 2], &[1.0f32, 2.0, 3.0, f32::INFINITY]));
    dir.write("b.npy", &npy(&[2, 2], &[1.0f32, 2.0, 3.0000002, f32::MAX]));
    let json = dir.run(&["compare", "a.npy", "b.npy", "--json"]).expect_code(4).stdout_json();
    let first = &json["first_differences"][0];
    assert_eq!((first["element"].clone(), first["index"].clone()), (2.into(), serde_json::json!([1, 0])));
    assert_eq!((first["a_bits"].clone(), first["b_bits"].clone()), ("0x40400000".into(), "0x40400001".into()));
    assert_eq!(first["ulps"], 1);
    // An infinity is no number of ULPs from a finite value: the largest distance is the 1.
    assert_eq!((json["max_ulps"].clone(), json["max_abs_difference"].clone()), (1.into(), "inf".into()));
    assert_eq!(json["first_differences"][1]["ulps"], serde_json::Value::Null);
}

#[test]
fn a_npy_pair_is_never_written_under_a_containers_name() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[3], &[1.0f32, 2.0, 3.0]));
    dir.write("b.npy", &npy(&[3], &[0.0f32; 3]));
    for out in ["x.safetensors", "x.npz", "X.NPZ"] {
        dir.run(&["sub", "a.npy", "b.npy", "-o", out]).expect_code(2).stderr_mentions("-o OUT.npy");
        assert!(!dir.exists(out), "{out} was written");
        let part = dir.run(&["sub", "a.npy", "b.npy", "-o", out, "--part", "1/2"]);
        part.expect_code(2).stderr_mentions("a container");
        assert!(!dir.exists(out) && !dir.exists(&format!(".{out}.tensorop-parts")), "{out}: part staged");
    }
    dir.run(&["sub", "a.npy", "b.npy", "-o", "x.npy"]).ok();
}

/// float16 elements built for each cause: a tie that toward zero breaks the other way, an
/// overflow (infinity from DirectML 1.13, 65504 before), subnormals, a NaN payload, and none.
fn dependence_inputs(dir: &Dir) {
    let a = [H(0x3c02), H(0x7bff), H(0x0003), H(0x7e01), H(0x4000)];
    let b = [H(0x1000), H(0xbc00), H(0x0001), H(0x3c00), H(0x3c00)];
    dir.write("a.npy", &npy(&[5], &a));
    dir.write("b.npy", &npy(&[5], &b));
}

#[test]
fn device_dependence_counts_each_cause() {
    let dir = Dir::new();
    dependence_inputs(&dir);
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "c.npy", "--device-dependence", "--report", "r.json"]);
    out.ok()
        .stderr_mentions("2 of 5 elements depend on the float16 rule; 1 on subnormal flushing; 1 are NaN (any payload)")
        .stderr_mentions("this result follows --float16 nearest");
    let d = dir.report("r.json")["device_dependence"].clone();
    assert_eq!(d, serde_json::json!({"elements": 5, "any": 4, "float16_rule": 2, "subnormal": 1, "nan": 1}));
    // The same counts without computing anything; none for float32 values with none.
    let out = dir.run(&["sub", "a.npy", "b.npy", "--dry-run", "--device-dependence"]);
    out.ok().stderr_mentions("2 of 5 elements depend on the float16 rule");
    dir.write("f.npy", &npy(&[3], &[1.0f32, 2.0, 3.0]));
    let out = dir.run(&["sqdiff", "f.npy", "f.npy", "-o", "g.npy", "--device-dependence"]);
    out.ok().stderr_mentions("0 of 3 elements depend on the float16 rule; 0 on subnormal flushing; 0 are NaN");
    assert!(!out.stderr.contains("this result follows"), "{}", out.stderr);
    // Without the flag: no counting, no key.
    dir.run(&["sub", "a.npy", "b.npy", "-o", "c.npy", "--report", "r.json"]).ok();
    assert!(dir.report("r.json").get("device_dependence").is_none());
    // Containers: refused, naming the way out.
    dir.write("m.safetensors", &safetensors(&[("w", "F32", &[1], f32_bytes(&[1.0]))]));
    let out = dir.run(&["sub", "m.safetensors", "m.safetensors", "-o", NULL, "--device-dependence"]);
    out.expect_code(2).stderr_mentions("give two .npy files");
}

#[test]
fn compare_conformant_accepts_every_release_and_refuses_the_rest() {
    let dir = Dir::new();
    dependence_inputs(&dir);
    for rule in [
        &["--float16", "nearest"][..],
        &["--directml-version", "1.8"],
        &["--directml-version", "1.15.4"],
        &["--float16", "per-step"],
    ] {
        dir.run(&[&["sub", "a.npy", "b.npy", "-o", "got.npy", "-q"][..], rule].concat()).ok();
        let out = dir.run(&["compare", "got.npy", "--conformant", "sub", "a.npy", "b.npy"]);
        assert!(out.ok().stdout_str().contains("got.npy: conformant: each of its 5 elements"), "{rule:?}");
    }
    // 1.15.4's answer: infinity at [1], which no rule gives for 2 - 1 at [4].
    dir.write("bad.npy", &npy(&[5], &[H(0x3c01), H(0x7c00), H(0x0002), H(0x7e00), H(0x3c01)]));
    let out = dir.run(&["compare", "bad.npy", "--conformant", "sub", "a.npy", "b.npy"]);
    let text = out.expect_code(4).stdout_str();
    assert!(text.contains("not conformant: 1 of 5 elements are no result"), "{text}");
    assert!(text.contains("the first at [4]: 1.001 (0x3C01), where tensorop's default answer is 1 (0x3C00)"), "{text}");
    let json = dir
        .run(&["compare", "bad.npy", "--conformant", "sub", "a.npy", "b.npy", "--json"])
        .expect_code(4)
        .stdout_json();
    assert_eq!((json["verdict"].clone(), json["outside_tolerance"].clone()), ("not_conformant".into(), 1.into()));
    assert_eq!(json["first_outside"]["index"], serde_json::json!([4]));
    // float32: a subnormal difference may be flushed to zero of its sign, a NaN be any NaN;
    // integers have one answer.
    let tiny = f32::from_bits(1);
    dir.write("x.npy", &npy(&[3], &[tiny, f32::NAN, 1.0f32]));
    dir.write("y.npy", &npy(&[3], &[0.0f32, 1.0, 0.5]));
    for got in [[tiny, f32::NAN, 0.5f32], [0.0, f32::from_bits(0xffc0_0001), 0.5]] {
        dir.write("g.npy", &npy(&[3], &got));
        dir.run(&["compare", "g.npy", "--conformant", "sub", "x.npy", "y.npy"]).ok();
    }
    dir.write("g.npy", &npy(&[3], &[-0.0f32, f32::NAN, 0.5]));
    dir.run(&["compare", "g.npy", "--conformant", "sub", "x.npy", "y.npy"]).expect_code(4);
    dir.write("i.npy", &npy(&[2], &[7i32, -1]));
    dir.write("j.npy", &npy(&[2], &[5i32, i32::MAX]));
    // (-1 - (2^31 - 1))^2 = 2^62 wraps to 0.
    dir.write("k.npy", &npy(&[2], &[4i32, 0]));
    dir.run(&["compare", "k.npy", "--conformant", "sqdiff", "i.npy", "j.npy"]).ok();
    dir.write("k.npy", &npy(&[2], &[4i32, 2]));
    dir.run(&["compare", "k.npy", "--conformant", "sqdiff", "i.npy", "j.npy"]).expect_code(4);
    // Another shape, an unknown operator, B beside --conformant.
    dir.write("short.npy", &npy(&[4], &[H(0); 4]));
    let json = dir
        .run(&["compare", "short.npy", "--conformant", "sub", "a.npy", "b.npy", "--json"])
        .expect_code(4)
        .stdout_json();
    assert_eq!(json["verdict"], "different_shape");
    dir.run(&["compare", "bad.npy", "--conformant", "mul", "a.npy", "b.npy"])
        .expect_code(1)
        .stderr_mentions("sub or sqdiff");
    dir.run(&["compare", "bad.npy", "got.npy", "--conformant", "sub", "a.npy", "b.npy"]).expect_code(2);
}
