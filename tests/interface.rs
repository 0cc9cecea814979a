//! End-to-end tests against the real binary in temporary directories. One interface across the
//! commands: `--json` and `-q` wherever results are printed, the same exit status for the same
//! mistake, hints for the common slips, numbers as people read them, and what a run that
//! leaves work pending says.

use crate::common::*;
use serde_json::Value;

/// A model of one SUBTRACT dispatch over 4 float32 elements, with `after` commands.
fn model(after: &str) -> String {
    format!(
        r#"{{
  "resources": {{
    "A": {{ "initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4] }},
    "B": {{ "initialValuesDataType": "FLOAT32", "initialValues": [4, 3, 2, 1] }},
    "Out": {{ "initialValuesDataType": "FLOAT32", "initialValues": {{ "valueCount": 4, "value": 0 }} }}
  }},
  "dispatchables": {{ "d": {{ "type": "DML_OPERATOR_ELEMENT_WISE_SUBTRACT", "desc": {{
    "ATensor": {{ "DataType": "FLOAT32", "Sizes": [4] }}, "BTensor": {{ "DataType": "FLOAT32", "Sizes": [4] }},
    "OutputTensor": {{ "DataType": "FLOAT32", "Sizes": [4] }} }} }} }},
  "commands": [
    {{ "type": "dispatch", "dispatchable": "d", "bindings": {{ "ATensor": "A", "BTensor": "B", "OutputTensor": "Out" }} }}
    {after}
  ]
}}"#
    )
}

#[test]
fn json_puts_the_report_on_standard_output_for_every_computing_command() {
    let dir = Dir::new();
    write_ab(&dir);
    for op in ["sub", "sqdiff"] {
        let out = dir.run(&[op, "a.npy", "b.npy", "-o", "o.npy", "--json"]);
        let r: Value = serde_json::from_str(&out.ok().stdout_str()).expect("--json prints the report");
        assert_eq!((r["op"].as_str(), r["status"].as_str()), (Some(op), Some("ok")));
    }
    dir.run(&["sub", "a.npy", "b.npy", "--json"]).expect_code(2).stderr_mentions("--json");
    dir.run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "--json", "--report", "r.json"]).expect_code(2);
    // A model that prints nothing can have its report on standard output; one that prints cannot.
    dir.write("m.json", model("").as_bytes());
    let r: Value = serde_json::from_str(&dir.run(&["run", "m.json", "--json"]).ok().stdout_str()).expect("JSON");
    assert_eq!(r["status"], "ok");
    let r: Value = serde_json::from_str(&dir.run(&["run", "m.json", "--report", "-"]).ok().stdout_str()).expect("JSON");
    assert_eq!(r["status"], "ok");
    dir.write("p.json", model(r#", { "type": "print", "resource": "Out" }"#).as_bytes());
    dir.run(&["run", "p.json", "--json"]).expect_code(2).stderr_mentions("print");
}

#[test]
fn every_command_that_prints_results_takes_json_and_quiet() {
    let dir = Dir::new();
    write_ab(&dir);
    dir.run(&["sub", "a.npy", "b.npy", "-o", "o.npy", "--stats", "--report", "r.json", "-q"]).ok();
    for args in [
        &["support", "--json", "-q"][..],
        &["info", "a.npy", "--json", "-q"],
        &["compare", "a.npy", "a.npy", "--json", "-q"],
        &["merge-stats", "r.json", "--json", "-q"],
    ] {
        let out = dir.run(args);
        serde_json::from_str::<Value>(&out.ok().stdout_str()).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(out.stderr, "", "{args:?} -q");
    }
    // compare -q: the exit status alone, as cmp -s.
    let same = dir.run(&["compare", "a.npy", "a.npy", "-q"]);
    assert_eq!((same.ok().stdout_str(), same.stderr.as_str()), (String::new(), ""));
    let differ = dir.run(&["compare", "a.npy", "o.npy", "-q"]);
    differ.expect_code(4);
    assert_eq!(differ.stdout_str(), "");
}

#[test]
fn the_same_mistake_gets_the_same_exit_status_everywhere() {
    let dir = Dir::new();
    write_ab(&dir);
    for args in
        [&["info", "-", "-"][..], &["compare", "-", "-"], &["merge-stats", "-", "-"], &["sub", "-", "-", "-o", "x.npy"]]
    {
        dir.run(args).expect_code(2).stderr_mentions("only once");
    }
    // --part needs a file: standard output and a special file (a private FIFO standing in for
    // a device) are the same usage error, decided before anything opens the FIFO.
    dir.run(&["sub", "a.npy", "b.npy", "--part", "1/2", "-o", "-"]).expect_code(2);
    #[cfg(unix)]
    {
        mkfifo(&dir.path("fifo"));
        dir.run(&["sub", "a.npy", "b.npy", "--part", "1/2", "-o", "fifo"])
            .expect_code(2)
            .stderr_mentions("not a regular file");
    }
    // A failed check is a validation failure with or without --dxdispatch.
    dir.run(&["sqdiff", "a.npy", "b.npy", "-f", "3_0", "-o", "x.npy"]).expect_code(3);
    dir.run(&["sqdiff", "a.npy", "b.npy", "-f", "3_0", "--dxdispatch", "r"]).expect_code(3);
}

#[test]
fn slips_get_a_hint_that_names_the_fix() {
    let dir = Dir::new();
    write_ab(&dir);
    let out = dir.run(&["sub", "a.npy", "b.npy", "c.npy"]);
    out.expect_code(2).stderr_mentions("use -o c.npy");
    assert!(!out.stderr.contains("--output <PATH>"), "-o is optional: {}", out.stderr);
    assert!(!dir.exists("c.npy"));
    for (flag, value) in [("--atol", "-1"), ("--rtol", "-0.5"), ("--ulps", "-1")] {
        let out = dir.run(&["compare", "a.npy", "b.npy", flag, value]);
        out.expect_code(2).stderr_mentions("cannot be negative");
        assert!(!out.stderr.contains("-- "), "{flag} {value}: no `-- {value}` tip: {}", out.stderr);
    }
    dir.run(&["--generate", "bash"]).expect_code(2).stderr_mentions("did you mean --generate complete-bash?");
}

/// Standard input on a terminal is refused with a hint, before anything waits on it. Needs
/// `script` (util-linux) for a terminal.
#[cfg(target_os = "linux")]
#[test]
fn an_interactive_standard_input_is_refused_with_a_hint() {
    let script = "script";
    if std::process::Command::new(script).arg("--version").output().is_err() {
        eprintln!("skipping an_interactive_standard_input_is_refused_with_a_hint: no `script` command for a terminal");
        return;
    }
    let dir = Dir::new();
    write_ab(&dir);
    let bin = bin();
    let typescript = dir.path("typescript");
    for args in ["info -", "sub - b.npy -o o.npy", "compare a.npy -"] {
        let out = std::process::Command::new(script)
            .arg("-qec")
            .arg(format!("timeout 20 {} {args}", bin.display()))
            .arg(&typescript)
            .current_dir(dir.root())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("script");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{args}: {text}");
        assert!(text.contains("which is a terminal here") && text.contains("< a.npy"), "{args}: {text}");
    }
}

#[test]
fn stats_text_prints_values_in_the_results_dtype_and_groups_counts() {
    let dir = Dir::new();
    let a: Vec<f32> = (0..1500).map(|i| 0.001 * i as f32).collect();
    let b: Vec<f32> = (0..1500).map(|i| 0.0003 * i as f32).collect();
    dir.write("a.npy", &npy(&[1500], &a));
    dir.write("b.npy", &npy(&[1500], &b));
    let out = dir.run(&["sqdiff", "a.npy", "b.npy", "-o", "o.npy", "--stats", "--report", "r.json"]);
    let text = out.ok().stderr.clone();
    assert!(text.contains("(float32, 1,500 elements)") && text.contains("1,500 finite"), "{text}");
    let r = dir.report("r.json");
    assert_eq!(r["stats"]["count"], 1500, "JSON keeps plain numbers");
    // The maximum in float32's shortest digits: it reads back as the same float32, in fewer
    // digits than float64 needs.
    let max = r["stats"]["max"].as_f64().expect("max") as f32;
    let shown = text.split("max ").nth(1).and_then(|t| t.split_whitespace().next()).expect("max in the text");
    assert_eq!(shown.parse::<f32>().ok(), Some(max), "{text}");
    assert!(shown.len() <= format!("{max:e}").len().max(format!("{max}").len()), "{shown} for {max}");
}

#[test]
fn a_part_says_what_it_did_and_what_is_pending() {
    let dir = Dir::new();
    write_ab(&dir);
    let part = |k: &str| dir.run(&["sub", "a.npy", "b.npy", "--part", k, "-o", "p.npy", "--report", "r.json"]);
    part("1/3").ok().stderr_mentions("part 1 of 3 done; parts 2-3 still to run");
    assert_eq!(dir.report("r.json")["part"]["pending"], serde_json::json!([[2, 3]]));
    part("3/3").ok().stderr_mentions("part 3 of 3 done; part 2 still to run");
    part("2/3").ok().stderr_mentions("part 2 of 3 done, the last: p.npy holds the whole result");
    assert_eq!(dir.report("r.json")["part"]["pending"], serde_json::json!([]));
    assert!(dir.run(&["sub", "a.npy", "b.npy", "--part", "1/2", "-o", "q.npy", "-q"]).ok().stderr.is_empty());
}

#[test]
fn run_dry_run_says_what_it_checked() {
    let dir = Dir::new();
    dir.write("m.json", model(r#", { "type": "writeFile", "targetPath": "out.npy", "resource": "Out" }"#).as_bytes());
    let out = dir.run(&["run", "m.json", "--dry-run"]);
    out.ok()
        .stderr_mentions("1 dispatch passed every check at feature level 6_4")
        .stderr_mentions("1 writeFile planned")
        .stderr_mentions("3 resources")
        .stderr_mentions("nothing was run or written");
    assert!(!dir.exists("out.npy"));
    assert!(dir.run(&["run", "m.json", "--dry-run", "-q"]).ok().stderr.is_empty());
}

#[test]
fn info_names_structured_dtypes_with_their_fields() {
    let dir = Dir::new();
    let header = "{'descr': [('a', '>f8'), ('b', '<i2')], 'fortran_order': False, 'shape': (3,), }";
    dir.write("s.npy", &npy_raw((1, 0), header, &[0u8; 30]));
    let out = dir.run(&["info", "s.npy"]);
    out.ok();
    let text = out.stdout_str();
    assert!(text.contains("structured (a: >f8, b: <i2)") && text.contains("byte order per field"), "{text}");
    assert!(!text.contains("1-byte elements"), "{text}");
    let v: Value = serde_json::from_str(&dir.run(&["info", "s.npy", "--json"]).ok().stdout_str()).expect("JSON");
    assert_eq!(
        (v[0]["dtype"].as_str(), v[0]["byte_order"].as_str()),
        (Some("structured (a: >f8, b: <i2)"), Some("per_field"))
    );
}
