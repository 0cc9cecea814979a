//! End-to-end tests: nothing silent, nothing misleading. A dry run that passes says so; flags that
//! do nothing for the inputs given are named; `run` says which files it wrote; the statistics
//! alone are one flag away on a terminal; counts agree with their nouns; a hint names a level
//! that works for the command given.

use crate::common::*;

#[test]
fn a_passing_dry_run_says_what_it_would_have_done() {
    let dir = Dir::new();
    write_ab(&dir);
    let out = dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "d.npy", "--dry-run", "-f", "5_0"]);
    out.ok().stderr_mentions("dry run: every check passes at feature level 5_0 (and at every level from 3_1)");
    let err = out.stderr.clone();
    assert!(
        err.contains("float32 [2, 3, 4]") && err.contains("at d.npy") && err.contains("nothing was computed"),
        "{err}"
    );
    assert!(!dir.exists("d.npy"));
    dir.run(&["sub", "a.npy", "b.npy", "--dry-run", "-f", "1_0"])
        .ok()
        .stderr_mentions("at feature level 1_0, the oldest that accepts these inputs");
    dir.run(&["sub", "a.npy", "b.npy", "--dry-run", "-f", "none"]).ok().stderr_mentions("with --feature-level none");
    assert_eq!(dir.run(&["sub", "a.npy", "b.npy", "--dry-run", "-q"]).ok().stderr, "");
}

#[test]
fn flags_that_do_nothing_for_these_inputs_are_named() {
    let dir = Dir::new();
    write_ab(&dir);
    let out =
        dir.run(&["sub", "a.npy", "b.npy", "-o", "c.npy", "--member", "w*", "--skip-unpaired", "--half-precision"]);
    out.ok()
        .stderr_mentions("warning: --member applies to containers")
        .stderr_mentions("warning: --skip-unpaired applies to containers")
        .stderr_mentions("warning: --float16 per-step applies to float16 and bfloat16");
    for rule in ["toward-zero-inf", "toward-zero-saturate"] {
        dir.run(&["sub", "a.npy", "b.npy", "-o", "c.npy", "--float16", rule])
            .ok()
            .stderr_mentions(&format!("warning: --float16 {rule} applies to float16 (not bfloat16); it does nothing"));
    }
    // The old name of toward-zero-inf is warned about by its name today.
    dir.run(&["sub", "a.npy", "b.npy", "-o", "c.npy", "--float16", "d3d"])
        .ok()
        .stderr_mentions("warning: --float16 toward-zero-inf applies to float16");
    let plain = dir.run(&["sub", "a.npy", "b.npy", "-o", "c.npy", "--float16", "nearest"]);
    assert!(!plain.ok().stderr.contains("warning"), "the default rule is never idle: {}", plain.stderr);
    let quiet = dir.run(&["sub", "a.npy", "b.npy", "-o", "c.npy", "--member", "w*", "-q"]);
    assert_eq!(quiet.ok().stderr, "");
    // float16 is what --half-precision is for: no warning.
    let h = npy(&[2], &[H(0x3c00), H(0x4000)]);
    dir.write("h.npy", &h);
    for rule in [&["--half-precision"][..], &["--float16", "toward-zero-inf"], &["--directml-version", "1.8"]] {
        let out = dir.run(&[&["sqdiff", "h.npy", "h.npy", "-o", "hh.npy"][..], rule].concat());
        assert!(!out.ok().stderr.contains("warning"), "{}", out.stderr);
    }
}

#[test]
fn the_statistics_alone_are_one_flag_away_on_a_terminal() {
    // Standard output is not a terminal here, so the refusal and its hint (-o /dev/null) are
    // checked where they are made (config's unit tests); here, the statistics' counts. No test
    // writes to the real null device by path: a file stands in for it.
    let dir = Dir::new();
    write_ab(&dir);
    let out = dir.run(&["sqdiff", "a.npy", "b.npy", "--stats", "-o", "d.npy"]);
    out.ok().stderr_mentions("stats of sqdiff (float32, 24 elements)");
    let one = npy(&[1], &[1.5f32]);
    dir.write("one.npy", &one);
    dir.run(&["sub", "one.npy", "one.npy", "--stats", "-o", "d1.npy"]).ok().stderr_mentions("(float32, 1 element)");
}

#[test]
fn a_dxdispatch_hint_names_what_works_with_dxdispatch() {
    let dir = Dir::new();
    let a = npy(&[3], &[1i8, 2, 3]);
    dir.write("a.npy", &a);
    let out = dir.run(&["sqdiff", "a.npy", "a.npy", "--dxdispatch", "repro"]);
    out.expect_code(3).stderr_mentions("so DxDispatch cannot run them").stderr_mentions("drop --dxdispatch");
    assert!(!out.stderr.ends_with("use --feature-level none\n"), "{}", out.stderr);
    // A level that works is still named as the fix.
    dir.run(&["sub", "a.npy", "a.npy", "-f", "4_1", "--dxdispatch", "repro"])
        .expect_code(3)
        .stderr_mentions("use --feature-level 5_1");
    assert!(!dir.exists("repro"));
}

#[test]
fn run_says_which_files_it_wrote() {
    let dir = Dir::new();
    let constant = r#"{ "valueCount": 4, "value": 3 }"#;
    let model = subtract_model(constant, constant, "output.npy");
    dir.write("model.json", model.as_bytes());
    dir.run(&["run", "model.json"]).ok().stderr_mentions("tensorop: wrote output.npy");
    assert_eq!(dir.run(&["run", "model.json", "-q"]).ok().stderr, "");
    assert!(dir.exists("output.npy"));
}
