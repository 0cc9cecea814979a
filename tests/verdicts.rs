//! Verdicts that must not say "identical" when they are not: a checkpoint member whose shape
//! changed (the `--stats` digest, the report and `compare`), two `.npy` files of different
//! shapes, and an output named as a container for a `.npy` pair. Every test drives the real
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
        .stderr_mentions("1 member pair compared: 0 differ, 1 identical")
        .stderr_mentions("1 more member changed shape, not computed");
    let r = dir.report("r.json");
    assert_eq!((r["totals"]["differing"].clone(), r["totals"]["pairs"].clone()), (1.into(), 1.into()));
    assert_eq!(r["members"].as_array().map(|m| m.len()), Some(1));
    assert_eq!(r["members"][0]["name"], "v");
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
    out.ok().stderr_mentions("1 member pair compared: 0 differ, 1 identical");
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
