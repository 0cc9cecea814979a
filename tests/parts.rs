//! `--part K/N` (`docs/parts.md`): N runs compute one result together. Whatever order the parts
//! run in, concurrently, twice, or killed and run again, the target holds nothing new until
//! every part is done and then the whole result, bit for bit the single run's; parts that
//! disagree about the job are refused by name; and `merge-stats` over the parts' reports gives
//! the single run's `stats`.

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::{Command, Stdio};

/// A float32 pair, A `[rows, 3001]` and B broadcast `[3001]`, with NaN, infinities and signed
/// zeros; and the single run's result and report (`whole.npy`, `whole.json`).
fn job(dir: &Dir, rows: usize) {
    let n = rows * 3001;
    let a: Vec<f32> = (0..n as u32)
        .map(|i| match i % 997 {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => -0.0,
            _ => f32::from_bits(i.wrapping_mul(2_654_435_761) & 0xbf7f_ffff) * 1e-3,
        })
        .collect();
    let b: Vec<f32> = (0..3001u32).map(|i| (i % 13) as f32 * 0.125 - 0.5).collect();
    dir.write("a.npy", &npy(&[rows, 3001], &a));
    dir.write("b.npy", &npy(&[3001], &b));
    dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "whole.npy", "--stats", "--report", "whole.json", "-q"]).ok();
}

fn part_args(k: u64, n: u64, out: &str) -> Vec<String> {
    ["sqdiff", "a.npy", "b.npy", "-o", out, "--part", &format!("{k}/{n}"), "--stats", "-q", "--report"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("r{k}.json")])
        .collect()
}

fn run_part(dir: &Dir, k: u64, n: u64, extra: &[&str]) -> Out {
    let mut args = part_args(k, n, "out.npy");
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    dir.run(&args)
}

/// What the directory holds besides the inputs and the single run's files.
fn extra_files(dir: &Dir) -> BTreeSet<String> {
    let fixed = ["a.npy", "b.npy", "whole.npy", "whole.json"];
    dir.listing().into_iter().filter(|n| !fixed.contains(&n.as_str()) && !n.starts_with('r')).collect()
}

fn merged_stats(dir: &Dir, reports: &[String]) -> Value {
    let mut args = vec!["merge-stats"];
    args.extend(reports.iter().map(String::as_str));
    let out = dir.run(&args);
    out.ok();
    serde_json::from_str::<Value>(&out.stdout_str()).expect("merge-stats prints JSON")["stats"].clone()
}

#[test]
fn parts_out_of_order_appear_whole_only_after_the_last() {
    let dir = Dir::new();
    job(&dir, 40);
    let order = [5u64, 2, 7, 1, 8, 3, 6];
    for &k in &order {
        run_part(&dir, k, 8, &[]).ok();
        assert!(!dir.exists("out.npy"), "the target appeared before every part was done (after part {k})");
        assert_eq!(extra_files(&dir), BTreeSet::from([".out.npy.tensorop-parts".to_string()]));
        assert_eq!(dir.report(&format!("r{k}.json"))["part"]["committed"], false);
    }
    run_part(&dir, 4, 8, &[]).ok();
    let r4 = dir.report("r4.json");
    assert_eq!(r4["part"]["committed"], true);
    assert_eq!(r4["output"]["temporary_file"], "parts");
    assert!(dir.read("out.npy") == dir.read("whole.npy"), "the parts' result differs from the single run's");
    assert_eq!(extra_files(&dir), BTreeSet::from(["out.npy".to_string()]), "staging left behind");
    // Contiguous ranges covering every element once.
    let mut next = 0;
    for k in 1..=8 {
        let p = &dir.report(&format!("r{k}.json"))["part"];
        assert_eq!(p["first"].as_u64(), Some(next));
        next = p["end"].as_u64().expect("end");
        assert_eq!(p["job"], r4["part"]["job"]);
    }
    assert_eq!(next, 40 * 3001);
    let reports: Vec<String> = [3, 1, 8, 2, 7, 4, 6, 5].iter().map(|k| format!("r{k}.json")).collect();
    assert_eq!(merged_stats(&dir, &reports), dir.report("whole.json")["stats"], "merged part stats");
}

#[test]
fn parts_run_concurrently_and_twice_give_one_result() {
    let dir = Dir::new();
    job(&dir, 300);
    // Every part twice at once (a retry overlapping the first attempt), all 12 processes together.
    let mut children = Vec::new();
    for k in 1..=6u64 {
        for attempt in 0..2 {
            let out = if attempt == 0 { format!("r{k}.json") } else { format!("s{k}.json") };
            let mut args = part_args(k, 6, "out.npy");
            *args.last_mut().expect("report") = out;
            let mut cmd = Command::new(bin());
            cmd.args(&args)
                .args(["--threads", "1"])
                .current_dir(dir.root())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            children.push(spawn(&mut cmd, "a part"));
        }
    }
    for c in children {
        let out = c.wait_with_output().expect("wait for a part");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A duplicate still starting while another run commits finds the staging directory gone
        // and says so (docs/parts.md); any other failure is one.
        let vanished = stderr.contains("another run of a part committed the job");
        assert!(out.status.success() || vanished, "a concurrent part failed: {:?} {stderr}", out.status.code());
    }
    assert!(dir.read("out.npy") == dir.read("whole.npy"), "the concurrent parts' result differs from the single run's");
    // A duplicate that started only after the commit may have begun a new staging directory of
    // the same job (docs/parts.md); nothing else may be left.
    // Whatever such a duplicate left can only be this job's: its markers carry the job's digest.
    if dir.exists(".out.npy.tensorop-parts") {
        let job = dir.report("r1.json")["part"]["job"].as_str().expect("job").to_string();
        for e in std::fs::read_dir(dir.path(".out.npy.tensorop-parts")).expect("staging directory") {
            let name = e.expect("entry").file_name().to_string_lossy().into_owned();
            assert!(!name.ends_with(".done") || name.ends_with(&format!("-{job}.done")), "{name}");
        }
    }
    assert!(extra_files(&dir).iter().all(|n| n == "out.npy" || n == ".out.npy.tensorop-parts" || n.starts_with('s')));
    let committed = (1..=6)
        .flat_map(|k| [format!("r{k}.json"), format!("s{k}.json")])
        .filter(|r| dir.report(r)["part"]["committed"] == true)
        .count();
    assert_eq!(committed, 1, "exactly one part commits");
    // A part run again after the commit starts a new staging directory (it cannot know the job
    // is done); the target is untouched.
    let before = dir.read("out.npy");
    run_part(&dir, 3, 6, &[]).ok();
    assert!(dir.read("out.npy") == before, "a part after the commit changed the result");
    assert!(dir.exists(".out.npy.tensorop-parts"));
}

#[cfg(unix)]
#[test]
fn a_killed_part_leaves_the_target_alone_until_it_runs_again() {
    let dir = Dir::new();
    job(&dir, 2000);
    let start_over = || {
        std::fs::write(dir.path("out.npy"), b"old contents").expect("write");
        for k in [1u64, 3] {
            run_part(&dir, k, 3, &[]).ok();
        }
    };
    start_over();
    // Part 2, killed part way through: no marker, the target keeps its old bytes. On a loaded
    // machine the test's own sleep may oversleep until the part is done: then the job starts
    // over, and shorter delays are tried.
    let mut killed = 0;
    for delay_ms in [5u64, 15, 1, 30, 2, 50, 1, 1] {
        let args = part_args(2, 3, "out.npy");
        let mut cmd = Command::new(bin());
        cmd.args(&args).args(["--threads", "1"]).current_dir(dir.root()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = spawn(&mut cmd, "part 2");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        if child.try_wait().expect("wait").is_none() {
            killed += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
        let now = dir.read("out.npy");
        if now != b"old contents" {
            // This attempt finished before the kill and committed the whole result.
            assert!(now == dir.read("whole.npy"), "the target is neither old nor the whole result");
            if killed > 0 {
                break;
            }
            start_over();
            continue;
        }
        let markers: Vec<String> = std::fs::read_dir(dir.path(".out.npy.tensorop-parts"))
            .expect("staging directory")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".done"))
            .collect();
        assert_eq!(markers.len(), 2, "a killed part left its marker: {markers:?}");
        assert!(!markers.iter().any(|m| m.starts_with("part-2-of-3-")), "a killed part left its marker");
    }
    assert!(killed > 0, "part 2 always finished before it was killed; the test needs a larger job");
    if dir.read("out.npy") == b"old contents" {
        run_part(&dir, 2, 3, &[]).ok();
    }
    assert!(dir.read("out.npy") == dir.read("whole.npy"), "the result after the killed part ran again");
    assert_eq!(extra_files(&dir), BTreeSet::from(["out.npy".to_string()]));
}

#[test]
fn parts_that_disagree_about_the_job_are_refused_by_name() {
    let dir = Dir::new();
    job(&dir, 8);
    run_part(&dir, 1, 4, &[]).ok();
    // A different part count.
    run_part(&dir, 2, 5, &[]).expect_code(1).stderr_mentions("parts: the staged job has 4, this part 5");
    // A different operator.
    dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--part", "2/4", "-q"])
        .expect_code(1)
        .stderr_mentions("op: the staged job has \"sqdiff\", this part \"sub\"");
    // A different float16 rule (float16 or not: the job says what was asked).
    run_part(&dir, 2, 4, &["--float16", "d3d"])
        .expect_code(1)
        .stderr_mentions("float16_rule: the staged job has \"nearest\", this part \"toward-zero-inf\"");
    // A different input with the same header.
    let a = dir.read("a.npy");
    let mut changed = a.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    dir.write("a.npy", &changed);
    run_part(&dir, 2, 4, &[]).expect_code(1).stderr_mentions("inputs[0].").stderr_mentions("remove");
    assert!(!dir.exists("out.npy"));
    // The staged job, with its original input back, still completes.
    dir.write("a.npy", &a);
    for k in 2..=4 {
        run_part(&dir, k, 4, &[]);
    }
    // The modification time changed with the rewrite: a clear refusal, or (on a filesystem
    // whose timestamps did not move) the completed result; never a wrong one.
    if dir.exists("out.npy") {
        assert!(dir.read("out.npy") == dir.read("whole.npy"), "resumed parts");
    } else {
        run_part(&dir, 2, 4, &[]).expect_code(1).stderr_mentions("modified_ns");
    }
}

#[test]
fn part_usage_errors() {
    let dir = Dir::new();
    job(&dir, 1);
    for (args, says) in [
        (&["sub", "a.npy", "b.npy", "-o", "o.npy", "--part", "0/3"][..], "1 <= K <= N"),
        (&["sub", "a.npy", "b.npy", "-o", "o.npy", "--part", "4/3"], "1 <= K <= N"),
        (&["sub", "a.npy", "b.npy", "-o", "-", "--part", "1/3"], "not standard output"),
        (&["sub", "-", "b.npy", "-o", "o.npy", "--part", "1/3"], "not standard input"),
        (&["sub", "a.npy", "b.npy", "-o", "o.npy", "--part", "1/3", "--dry-run"], "cannot be used with"),
    ] {
        dir.run(args).expect_code(2).stderr_mentions(says);
    }
    assert!(!dir.exists("o.npy") && !dir.exists(".o.npy.tensorop-parts"));
}

#[test]
fn parts_of_a_small_result_may_be_empty_and_the_wgpu_backend_takes_parts_too() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[3], &[1.0f32, -2.0, 0.5]));
    dir.write("b.npy", &npy(&[1], &[0.25f32]));
    dir.run(&["sub", "a.npy", "b.npy", "-o", "whole.npy", "-q"]).ok();
    for k in 1..=5 {
        dir.run(&["sub", "a.npy", "b.npy", "-o", "out.npy", "--part", &format!("{k}/5"), "-q"]).ok();
    }
    assert!(dir.read("out.npy") == dir.read("whole.npy"), "empty parts");
    job(&dir, 30);
    if !gpu_available("parts_of_a_small_result_may_be_empty_and_the_wgpu_backend_takes_parts_too") {
        return;
    }
    for k in [2u64, 1, 3] {
        run_part(&dir, k, 3, &["--backend", "wgpu"]).ok();
    }
    assert!(dir.read("out.npy") == dir.read("whole.npy"), "wgpu parts");
}

#[test]
fn markers_and_bytes_left_by_another_job_never_count() {
    let dir = Dir::new();
    job(&dir, 10);
    // What an interrupted duplicate of another job could leave: its marker and stray bytes in
    // `data`, but no `job.json`.
    std::fs::create_dir(dir.path(".out.npy.tensorop-parts")).expect("mkdir");
    dir.write(".out.npy.tensorop-parts/part-1-of-2-0123456789abcdef.done", b"{}");
    let size = dir.read("whole.npy").len();
    dir.write(".out.npy.tensorop-parts/data", &vec![0xa5; size]);
    run_part(&dir, 2, 2, &[]).ok();
    assert!(!dir.exists("out.npy"), "another job's marker was counted as this job's part 1");
    assert_eq!(dir.report("r2.json")["part"]["committed"], false);
    run_part(&dir, 1, 2, &[]).ok();
    assert!(dir.read("out.npy") == dir.read("whole.npy"), "stray bytes survived in the result");
    assert_eq!(extra_files(&dir), BTreeSet::from(["out.npy".to_string()]));
}

/// The job's data file in the staging directory (`data.XXXXXX`, named by `job.json`).
fn data_file(dir: &Dir) -> std::path::PathBuf {
    let job: Value = serde_json::from_slice(&dir.read(".out.npy.tensorop-parts/job.json")).expect("job.json");
    dir.path(".out.npy.tensorop-parts").join(job["data"].as_str().expect("job.json names its data file"))
}

#[test]
fn a_late_part_never_starts_a_second_data_file() {
    let dir = Dir::new();
    job(&dir, 10);
    run_part(&dir, 1, 2, &[]).ok();
    // The data file moved away, as a committing part's claim moves it: a part joining now must
    // not create another under its name (whose committed result would lack part 1's bytes).
    let data = data_file(&dir);
    std::fs::rename(&data, dir.path("claimed")).expect("move data");
    run_part(&dir, 2, 2, &[])
        .expect_code(1)
        .stderr_mentions("data file")
        .stderr_mentions("another run of a part committed");
    assert!(!data.exists() && !dir.exists("out.npy"), "a second data file, or a torn result");
    // Given back (as a claim that could not commit gives it back), the job completes.
    std::fs::rename(dir.path("claimed"), &data).expect("put data back");
    run_part(&dir, 2, 2, &[]).ok();
    assert!(dir.read("out.npy") == dir.read("whole.npy"), "the result after part 2 ran again");
    assert_eq!(extra_files(&dir), BTreeSet::from(["out.npy".to_string()]));
}

#[test]
fn a_marker_counts_only_for_the_data_file_it_names() {
    let dir = Dir::new();
    job(&dir, 10);
    run_part(&dir, 1, 2, &[]).ok();
    // Part 1's marker rewritten as a part of an earlier staging of the same job would have left
    // it: naming another data file, whose bytes are not in this one.
    let staging = dir.path(".out.npy.tensorop-parts");
    let marker = std::fs::read_dir(&staging)
        .expect("staging directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "done"))
        .expect("part 1's marker");
    let mut record: Value = serde_json::from_slice(&std::fs::read(&marker).expect("marker")).expect("JSON");
    record["data"] = "data.elsewhere".into();
    std::fs::write(&marker, record.to_string()).expect("rewrite marker");
    run_part(&dir, 2, 2, &[]).ok();
    assert!(!dir.exists("out.npy"), "committed a file that part 1 never wrote into");
    assert_eq!(dir.report("r2.json")["part"]["committed"], false);
    run_part(&dir, 1, 2, &[]).ok();
    assert!(dir.read("out.npy") == dir.read("whole.npy"), "the result after part 1 ran again");
    assert_eq!(extra_files(&dir), BTreeSet::from(["out.npy".to_string()]));
}

/// Two FUSE views (bindfs) of one directory, each with a device number of its own, as two NFS
/// clients see one export; unmounted when dropped.
struct Views {
    mounts: Vec<std::path::PathBuf>,
}

impl Drop for Views {
    fn drop(&mut self) {
        for m in &self.mounts {
            let _ = Command::new("fusermount").arg("-u").arg(m).status();
        }
    }
}

/// Mounts `views` bindfs views of `src` inside `dir`, or says why not (bindfs or FUSE missing,
/// or not root); a failure where `TENSOROP_REQUIRE_FUSE=1`.
fn bindfs_views(dir: &Dir, src: &std::path::Path, views: &[&str], test: &str) -> Option<Views> {
    let why = if !cfg!(target_os = "linux") {
        Some("FUSE views are tested on Linux")
    } else if Command::new("bindfs").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        Some("bindfs is not installed (Debian package bindfs)")
    } else if !std::path::Path::new("/dev/fuse").exists() {
        Some("/dev/fuse is missing")
    } else {
        None
    };
    if let Some(why) = why {
        skip(test, "TENSOROP_REQUIRE_FUSE", why);
        return None;
    }
    let mut mounted = Views { mounts: Vec::new() };
    for v in views {
        let at = dir.path(v);
        std::fs::create_dir(&at).expect("mount point");
        let ok = Command::new("bindfs").arg(src).arg(&at).status().is_ok_and(|s| s.success());
        if !ok {
            skip(test, "TENSOROP_REQUIRE_FUSE", "bindfs could not mount (FUSE needs root or the fuse group)");
            return None;
        }
        mounted.mounts.push(at);
    }
    Some(mounted)
}

#[test]
fn parts_through_two_views_of_one_directory_commit_together() {
    let test = "parts_through_two_views_of_one_directory_commit_together";
    let dir = Dir::new();
    job(&dir, 40);
    let shared = dir.path("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    let Some(_views) = bindfs_views(&dir, &shared, &["view1", "view2"], test) else { return };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let dev = |v: &str| std::fs::metadata(dir.path(v)).expect("view").dev();
        assert_ne!(dev("view1"), dev("view2"), "the two views must look like two machines' mounts");
    }
    // Parts 1 and 3 through one view, 2 and 4 through the other, as on two machines.
    for k in [1u64, 2, 3, 4] {
        let view = if k % 2 == 1 { "view1" } else { "view2" };
        let out = format!("{view}/out.npy");
        let args: Vec<String> = part_args(k, 4, &out);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        dir.run(&args).ok();
        assert_eq!(dir.exists("shared/out.npy"), k == 4, "after part {k}");
    }
    assert!(dir.read("shared/out.npy") == dir.read("whole.npy"), "the parts' result differs from the single run's");
    assert_eq!(dir.report("r4.json")["part"]["committed"], true);
    let left: Vec<_> = std::fs::read_dir(&shared).expect("shared").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(left, ["out.npy"], "the staging directory was left behind");
}
