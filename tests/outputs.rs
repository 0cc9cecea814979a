//! End-to-end tests against the real binary in temporary directories. Output safety: in-place runs,
//! nothing changed on failure, no temporary file left, dry runs. The output-target table (links,
//! devices, FIFOs...) is in `targets.rs`.

use crate::common::*;

// ---------------------------------------------------------------------------------------------
// Output safety
// ---------------------------------------------------------------------------------------------

#[test]
fn in_place_output_over_a_matches_another_path() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "c.npy"]).ok();
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "a.npy"]).ok();
    assert_eq!(dir.read("a.npy"), dir.read("c.npy"));
    assert_same_bits(&dir.output::<f32>("a.npy", &A_SHAPE), &expected_sqdiff());
    assert_eq!(dir.listing().len(), 3, "no temp files: {:?}", dir.listing());
}

#[test]
fn in_place_output_over_the_broadcast_input_b() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "b.npy"]).ok();
    assert_same_bits(&dir.output::<f32>("b.npy", &A_SHAPE), &expected_sub());
    assert_eq!(dir.listing().len(), 2, "no temp files: {:?}", dir.listing());
}

#[test]
fn in_place_with_a_big_endian_fortran_input() {
    let dir = Dir::new();
    let layout = Layout { order: Order::Big, fortran: true, version: (2, 0) };
    dir.write("a.npy", &npy_with(&A_SHAPE, &a_values(), layout));
    dir.write("b.npy", &npy(&B_SHAPE, &b_values()));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "a.npy"]).ok();
    assert_same_bits(&dir.output::<f32>("a.npy", &A_SHAPE), &expected_sub());
}

#[test]
fn existing_output_is_untouched_on_validation_failure() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[2], &[1.0f32, 2.0]));
    dir.write("b.npy", &npy(&[3], &[1.0f32, 2.0, 3.0]));
    dir.write("out.npy", b"precious previous contents");
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]).expect_code(3);
    assert_eq!(dir.read("out.npy"), b"precious previous contents");
    assert_eq!(dir.listing(), before, "no temp file left behind");
}

#[test]
fn existing_output_is_untouched_on_runtime_error() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.write("bad.npy", &npy_raw((1, 0), &f32_header("(3, 1)"), &[0; 11]));
    dir.write("out.npy", b"precious previous contents");
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "bad.npy", "-o", "out.npy", "--report", "report.json"]).expect_code(1);
    assert_eq!(dir.read("out.npy"), b"precious previous contents");
    assert_only_added(&dir, &before, &["report.json"]);
}

#[test]
fn existing_output_is_untouched_on_usage_error() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.write("out.npy", b"precious previous contents");
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--broadcast", "sideways"]).expect_code(2);
    assert_eq!(dir.read("out.npy"), b"precious previous contents");
    assert_eq!(dir.listing(), before);
}

#[test]
fn in_place_failure_leaves_the_input_intact() {
    let dir = Dir::new();
    write_ab(&dir);
    let a_before = dir.read("a.npy");
    dir.write("bad.npy", b"\x93NUMPY\x01\x00");
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "bad.npy", "-o", "a.npy"]).expect_code(1);
    assert_eq!(dir.read("a.npy"), a_before);
    assert_eq!(dir.listing(), before, "no temp file left behind");
    // float16 B against float32 A: validation failure, in place.
    dir.write("h.npy", &npy(&[3, 1], &[H(0); 3]));
    let before_h = dir.listing();
    dir.run(&["sub", "a.npy", "h.npy", "-o", "a.npy"]).expect_code(3);
    assert_eq!(dir.read("a.npy"), a_before);
    assert_eq!(dir.listing(), before_h, "no temp file left behind");
}

#[test]
fn output_into_a_missing_directory_is_a_runtime_error() {
    let dir = Dir::new();
    write_ab(&dir);
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "b.npy", "-o", "no/such/dir/out.npy", "--report", "report.json"])
        .expect_code(1)
        .expect_message();
    assert_only_added(&dir, &before, &["report.json"]);
    let r = dir.report("report.json");
    assert_eq!(r["status"], "error");
    assert!(r["output"].is_null());
}

#[test]
fn output_path_that_is_a_directory_is_a_runtime_error() {
    let dir = Dir::new();
    write_ab(&dir);
    std::fs::create_dir(dir.path("outdir")).unwrap();
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "b.npy", "-o", "outdir"]).expect_code(1).expect_message();
    assert!(dir.path("outdir").is_dir());
    assert_eq!(std::fs::read_dir(dir.path("outdir")).unwrap().count(), 0);
    assert_eq!(dir.listing(), before);
}

#[test]
fn success_leaves_no_temp_files() {
    let dir = Dir::new();
    write_ab(&dir);
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--report", "report.json"]).ok();
    assert_only_added(&dir, &before, &["out.npy", "report.json"]);
    // Overwriting an existing output replaces it completely.
    dir.write("out.npy", &vec![0xAB; 10_000]);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy"]).ok();
    assert_same_bits(&dir.output::<f32>("out.npy", &A_SHAPE), &expected_sub());
    assert_only_added(&dir, &before, &["out.npy", "report.json"]);
}

#[test]
fn dry_run_writes_no_output_and_a_valid_report() {
    let dir = Dir::new();
    write_ab(&dir);
    let before = dir.listing();
    let out = dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--dry-run", "--report", "report.json"]);
    out.ok();
    assert_only_added(&dir, &before, &["report.json"]);
    let r = dir.report("report.json");
    assert_report_keys(&r);
    assert_eq!(r["status"], "ok");
    assert_eq!(r["valid"], true);
    assert!(r["output"].is_null(), "dry run writes nothing");
    assert_eq!(r["elements"], 24);
    assert_eq!(u64s(&r["broadcast"]["shape"]), vec![2, 3, 4]);
    for id in CHECKS_NUMPY {
        assert_eq!(check_status(&r, id), "pass");
    }
    // Nothing on stdout either when no -o is given.
    let out = dir.run(&["sqdiff", "a.npy", "b.npy", "--dry-run"]);
    out.ok();
    assert!(out.stdout.is_empty(), "dry run writes no .npy to stdout");
}

#[test]
fn dry_run_with_a_failing_check_exits_3() {
    let dir = Dir::new();
    write_ab(&dir);
    let r = run_invalid(
        &dir,
        &["sqdiff", "a.npy", "b.npy", "-o", "out.npy", "--dry-run", "--report", "report.json", "-f", "3_0"],
    );
    assert_eq!(check_status(&r, "operator_available"), "fail");
}

/// What a killed run left beside a target (an unwritten, unlocked `.NAME.XXXXXX.tensorop-tmp`)
/// goes with the next run to that target, which says so on standard error (not with `-q`) and in
/// the report; a young one, another target's and other names stay.
#[test]
fn leftovers_of_killed_runs_are_removed_by_the_next_run_to_the_target() {
    let dir = Dir::new();
    write_ab(&dir);
    let aged = |name: &str| {
        std::fs::write(dir.path(name), b"partial").unwrap();
        age_past_leftover_limit(&dir.path(name));
    };
    aged(".c.npy.Kill01.tensorop-tmp");
    aged(".c.npy.Kill02.tensorop-tmp");
    aged(".r.json.Kill03.tensorop-tmp");
    aged(".a.npy.Kill04.tensorop-tmp");
    aged(".c.npy.toolong.tensorop-tmp");
    std::fs::write(dir.path(".c.npy.Young1.tensorop-tmp"), b"a live run's").unwrap();

    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "c.npy", "--report", "r.json"]);
    out.ok();
    for (name, target) in [(".r.json.Kill03.tensorop-tmp", "r.json"), (".c.npy.Kill01.tensorop-tmp", "c.npy")] {
        let line = format!("tensorop: removed {name}, left beside {target} by an interrupted run");
        assert!(out.stderr.contains(&line), "no {line:?} in {}", out.stderr);
    }
    let r = dir.report("r.json");
    assert_eq!(
        r["output"]["removed_leftovers"],
        serde_json::json!([".c.npy.Kill01.tensorop-tmp", ".c.npy.Kill02.tensorop-tmp"])
    );
    let listing: Vec<String> = dir.listing().into_iter().collect();
    assert_eq!(
        listing,
        [
            ".a.npy.Kill04.tensorop-tmp",
            ".c.npy.Young1.tensorop-tmp",
            ".c.npy.toolong.tensorop-tmp",
            "a.npy",
            "b.npy",
            "c.npy",
            "r.json"
        ]
    );

    // Quietly with -q; nothing to remove is an empty list.
    aged(".c.npy.Kill05.tensorop-tmp");
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "c.npy", "-q", "--report", "r.json"]);
    out.ok();
    assert_eq!(out.stderr, "", "-q");
    assert_eq!(dir.report("r.json")["output"]["removed_leftovers"], serde_json::json!([".c.npy.Kill05.tensorop-tmp"]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "c.npy", "--report", "r.json"]).ok();
    assert_eq!(dir.report("r.json")["output"]["removed_leftovers"], serde_json::json!([]));
}

/// Gives `path` the permission bits `mode`.
#[cfg(unix)]
fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The permission bits of `path`.
#[cfg(unix)]
fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

/// The report says how the result reached its name and whether `--fsync` made it durable; the
/// result and (on Unix) its permissions are the same every way, in place too.
#[test]
fn temporary_file_and_fsync_are_reported() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "expected.npy"]).ok();
    let unnamed = if cfg!(target_os = "linux") { "unnamed" } else { "named" };
    for (args, env, staging, fsync) in [
        (&["-o", "c.npy"][..], "0", unnamed, false),
        (&["-o", "c.npy", "--fsync"], "0", unnamed, true),
        (&["-o", "c.npy", "--fsync"], "1", "named", true),
        (&["-o", "c.npy"], "1", "named", false),
        (&["-o", "a.npy", "--fsync"], "0", unnamed, true),
    ] {
        let in_place = args[1] == "a.npy";
        if !in_place {
            std::fs::write(dir.path(args[1]), b"old").unwrap();
        }
        #[cfg(unix)]
        set_mode(&dir.path(args[1]), 0o600);
        let all = [&["sub", "a.npy", "b.npy", "--report", "r.json"][..], args].concat();
        dir.run_env(&all, &[("TENSOROP_NAMED_TEMPFILES", env)]).ok();
        let r = dir.report("r.json");
        let what = format!("{args:?}, TENSOROP_NAMED_TEMPFILES={env}");
        assert_eq!(r["output"]["temporary_file"], staging, "{what}");
        assert_eq!(r["output"]["fsync"], fsync, "{what}");
        assert_eq!(dir.read(args[1]), dir.read("expected.npy"), "{what}");
        #[cfg(unix)]
        assert_eq!(mode_of(&dir.path(args[1])), 0o600, "{what}: the replaced file's permissions");
        assert_eq!(dir.listing().len(), if in_place { 4 } else { 5 }, "{what}: {:?}", dir.listing());
        std::fs::remove_file(dir.path("c.npy")).ok();
    }
    // Standard output is written in order: no temporary file, and a pipe cannot be synced.
    let out = dir.run(&["sub", "a.npy", "b.npy", "-o", "-", "--fsync", "--report", "r.json"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(dir.report("r.json")["output"]["temporary_file"], serde_json::Value::Null);
    assert_eq!(dir.report("r.json")["output"]["fsync"], false);
}
