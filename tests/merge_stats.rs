//! `tensorop merge-stats` (`docs/cli.md`, "merge-stats"): the `stats` of reports of disjoint
//! pieces of a result, merged in any order, are the `stats` of one run over all the pieces'
//! elements, key for key; and what cannot be merged honestly is refused by name.

use crate::common::containers::safetensors;
use crate::common::*;
use serde_json::Value;

fn merge(dir: &Dir, args: &[&str]) -> Value {
    let mut all = vec!["merge-stats"];
    all.extend_from_slice(args);
    let out = dir.run(&all);
    out.ok();
    serde_json::from_str(&out.stdout_str()).expect("merge-stats prints JSON")
}

fn le<T: Elem>(values: &[T]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le()).collect()
}

/// Shards of one array, each run alone, merged, against the array run whole.
fn shards_merge_into_the_whole<T: Elem>(dir: &Dir, op: &str, a: &[T], b: &[T], cuts: &[usize]) {
    dir.write("a.npy", &npy(&[a.len()], a));
    dir.write("b.npy", &npy(&[b.len()], b));
    dir.run(&[op, "a.npy", "b.npy", "-o", "whole.npy", "-f", "none", "--stats", "--report", "whole.json", "-q"]).ok();
    let mut reports = Vec::new();
    let mut lo = 0;
    for (i, &hi) in cuts.iter().chain([a.len()].iter()).enumerate() {
        let (an, bn, r) = (format!("a{i}.npy"), format!("b{i}.npy"), format!("r{i}.json"));
        dir.write(&an, &npy(&[hi - lo], &a[lo..hi]));
        dir.write(&bn, &npy(&[hi - lo], &b[lo..hi]));
        dir.run(&[op, &an, &bn, "-o", "o.npy", "-f", "none", "--stats", "--report", &r, "-q"]).ok();
        reports.push(r);
        lo = hi;
    }
    reports.reverse();
    let args: Vec<&str> = reports.iter().map(String::as_str).collect();
    let merged = merge(dir, &args);
    let whole = dir.report("whole.json");
    assert_eq!(merged["stats"], whole["stats"], "{op} over {} shards", cuts.len() + 1);
    assert_eq!(merged["op"], op);
    assert_eq!(merged["dtype"], whole["output"]["dtype"]);
    assert_eq!(merged["reports"], cuts.len() + 1);
}

#[test]
fn shards_of_every_kind_merge_into_the_single_runs_stats() {
    let dir = Dir::new();
    // Parts whose rounded sums differ from the exact one: 2^53 + 1 + 1 rounds only once.
    let a = [9007199254740992.0f64, 1.0, 1.0, -0.0, f64::NAN, 1e308, 1e308, -1e308, 5e-324, 0.1];
    shards_merge_into_the_whole(&dir, "sub", &a, &[0.0; 10], &[1, 2, 5, 8]);
    let a: Vec<f32> = (0..5000u32).map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761) & 0xbf7f_ffff)).collect();
    let b: Vec<f32> = (0..5000u32).map(|i| i as f32 * 0.001).collect();
    shards_merge_into_the_whole(&dir, "sqdiff", &a, &b, &[1, 999, 1000, 4000]);
    let a: Vec<u64> = vec![u64::MAX; 64];
    shards_merge_into_the_whole(&dir, "sub", &a, &[0u64; 64], &[3, 40]);
    let a: Vec<i8> = (0..=255u8).map(|x| x as i8).collect();
    let b: Vec<i8> = (0..=255u8).map(|x| x.wrapping_mul(7) as i8).collect();
    shards_merge_into_the_whole(&dir, "sub", &a, &b, &[100, 101]);
    let a: Vec<H> = [0x3c00u16, 0x8000, 0x0001, 0x7c00, 0x7bff].iter().map(|&x| H(x)).collect();
    shards_merge_into_the_whole(&dir, "sqdiff", &a, &[H(0); 5], &[2]);
}

#[test]
fn the_exact_sum_is_in_every_stats_object() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[3], &[0.5f32, 0.25, -4.0]));
    dir.write("b.npy", &npy(&[1], &[0.0f32]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "--stats", "--report", "r.json", "-q"]).ok();
    // -3.25 = -13 * 2^-2: the significand odd.
    assert_eq!(dir.report("r.json")["stats"]["exact_sum"], serde_json::json!({"significand": "-13", "exp2": -2}));
    dir.write("z.npy", &npy(&[2], &[0.0f32, -0.0]));
    dir.run(&["sub", "z.npy", "b.npy", "-o", "o.npy", "--stats", "--report", "z.json", "-q"]).ok();
    assert_eq!(dir.report("z.json")["stats"]["exact_sum"], serde_json::json!({"significand": "0", "exp2": 0}));
    dir.write("i.npy", &npy(&[2], &[i64::MAX, i64::MAX]));
    dir.write("j.npy", &npy(&[1], &[1i64]));
    dir.run(&["sub", "i.npy", "j.npy", "-o", "o.npy", "-f", "none", "--stats", "--report", "i.json", "-q"]).ok();
    // 2 (2^63 - 2) = 2^64 - 4 = (2^62 - 1) * 2^2.
    assert_eq!(
        dir.report("i.json")["stats"]["exact_sum"],
        serde_json::json!({"significand": "4611686018427387903", "exp2": 2})
    );
}

#[test]
fn container_reports_merge_member_by_member_and_by_dtype() {
    let dir = Dir::new();
    let x: Vec<f32> = (0..300).map(|i| i as f32 * 0.37 - 20.0).collect();
    let y: Vec<f32> = (0..300).map(|i| (i % 17) as f32).collect();
    let h: Vec<H> = (0..50u16).map(|i| H(0x3c00 + i * 7)).collect();
    let a = safetensors(&[
        ("w1", "F32", &[100], le(&x[..100])),
        ("w2", "F32", &[200], le(&x[100..])),
        ("h", "F16", &[50], le(&h)),
    ]);
    let b = safetensors(&[
        ("w1", "F32", &[100], le(&y[..100])),
        ("w2", "F32", &[200], le(&y[100..])),
        ("h", "F16", &[50], le(&[H(0); 50])),
    ]);
    dir.write("a.safetensors", &a);
    dir.write("b.safetensors", &b);
    dir.write("x.npy", &npy(&[300], &x));
    dir.write("y.npy", &npy(&[300], &y));
    let null = if cfg!(windows) { "NUL" } else { "/dev/null" };
    dir.run(&["sqdiff", "a.safetensors", "b.safetensors", "-o", null, "--stats", "--report", "c.json", "-q"]).ok();
    dir.run(&["sqdiff", "x.npy", "y.npy", "-o", "o.npy", "--stats", "--report", "f32.json", "-q"]).ok();
    // float16 and float32 members merge by kind, as the run's own totals did.
    let c = dir.report("c.json");
    let kinds = merge(&dir, &["c.json"]);
    assert_eq!(kinds["stats"], c["totals"]["stats"], "merge-stats reproduces the container run's totals");
    assert_eq!(kinds["dtypes"], serde_json::json!(["float16", "float32"]));
    assert!(kinds.get("dtype").is_none(), "two dtypes have no one dtype: {kinds}");
    let by = merge(&dir, &["--by-dtype", "c.json"]);
    assert_eq!(by["by_dtype"]["float32"], dir.report("f32.json")["stats"], "the float32 members merged");
    assert_eq!(by["by_dtype"]["float16"], dir.report("c.json")["members"][2]["stats"]);
    assert!(by.get("stats").is_none() && by.get("dtype").is_none());
}

#[test]
fn what_cannot_be_merged_is_refused_by_name() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[4], &[1.0f32, 2.0, 3.0, 4.0]));
    dir.write("b.npy", &npy(&[4], &[0.5f32; 4]));
    dir.write("i.npy", &npy(&[4], &[1i32, 2, 3, 4]));
    dir.write("bad.npy", &npy(&[3], &[1.0f32, 2.0, 3.0]));
    let run = |args: &[&str]| dir.run(args);
    run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "--stats", "--report", "sub.json", "-q"]).ok();
    run(&["sqdiff", "a.npy", "b.npy", "-o", "o.npy", "--stats", "--report", "sq.json", "-q"]).ok();
    run(&["sub", "i.npy", "i.npy", "-o", "o.npy", "--stats", "--report", "int.json", "-q"]).ok();
    run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "--report", "nostats.json", "-q"]).ok();
    run(&["sub", "a.npy", "b.npy", "--dry-run", "--stats", "--report", "dry.json", "-q"]).ok();
    run(&["sub", "a.npy", "bad.npy", "-o", "o.npy", "--stats", "--report", "invalid.json", "-q"]).expect_code(3);
    let refuse = |args: &[&str], says: &[&str]| {
        let mut all = vec!["merge-stats"];
        all.extend_from_slice(args);
        let out = dir.run(&all);
        out.expect_code(1);
        for s in says {
            out.stderr_mentions(s);
        }
        assert_eq!(out.stdout_str(), "", "nothing printed on a refusal");
    };
    refuse(&["sub.json", "sq.json"], &["sq.json is a sqdiff report", "sub.json is a sub report"]);
    // Floats and integers: one summary of each kind, as a container run's totals.
    let mixed = merge(&dir, &["sub.json", "int.json"]);
    assert!(mixed["stats"].is_null(), "{mixed}");
    assert_eq!(mixed["stats_by_kind"]["float"], dir.report("sub.json")["stats"]);
    assert_eq!(mixed["stats_by_kind"]["int"], dir.report("int.json")["stats"]);
    refuse(&["sub.json", "nostats.json"], &["nostats.json", "--stats"]);
    refuse(&["dry.json"], &["dry.json", "--dry-run"]);
    refuse(&["invalid.json"], &["invalid.json", "invalid"]);
    refuse(&["sub.json", "sub.json"], &["sub.json is given twice"]);
    refuse(&["missing.json"], &["missing.json"]);
    // A report changed after it was written: its sum no longer matches its exact sum.
    let mut r = dir.report("sub.json");
    r["stats"]["exact_sum"]["significand"] = "7".into();
    dir.write("changed.json", serde_json::to_string(&r).expect("json").as_bytes());
    refuse(&["changed.json"], &["changed.json", "changed after it was written"]);
    let mut r = dir.report("sub.json");
    r["stats"]["count"] = 5.into();
    dir.write("counts.json", serde_json::to_string(&r).expect("json").as_bytes());
    refuse(&["counts.json"], &["counts.json", "do not add up"]);
    dir.write("text.json", b"not json");
    refuse(&["text.json"], &["text.json", "not a JSON report"]);
    // Standard input, once.
    let out = dir.run_piped(&["merge-stats", "-"], &dir.read("sub.json"));
    out.ok();
    let merged: Value = serde_json::from_str(&out.stdout_str()).expect("json");
    assert_eq!(merged["stats"], dir.report("sub.json")["stats"]);
}
