//! Fuzz target: a whole run. The input is split into a settings byte, two `.npy` files and the
//! command line is assembled from the settings (operator, feature level, broadcasting mode,
//! `--half-precision`, one or two CPU threads, input B from a pipe); then argument parsing, configuration, header parsing, the seven checks,
//! the broadcast plan and CPU execution run exactly as in the binary, writing the output and
//! report into a temporary directory. Every outcome must be a clean exit code; a successful run
//! must leave exactly the output and the report behind.
#![no_main]

use clap::Parser;
use libfuzzer_sys::fuzz_target;
use std::io::Write;
use std::os::fd::AsRawFd;
use tensorop::cli::{Cli, Command};
use tensorop::config::Config;
use tensorop::npy::header::read_header;
use tensorop::op::Op;
use tensorop::pipeline::{self, Outcome};

/// Outputs larger than this are skipped (the run would be correct, just slow to fuzz).
const MAX_OUTPUT_ELEMENTS: u64 = 1 << 18;

/// The element count a header claims (at least 1).
fn elements(bytes: &[u8]) -> Option<u64> {
    let h = read_header(&mut &bytes[..], bytes.len() as u64).ok()?;
    Some(h.elements.max(1))
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (settings, rest) = (data[0], &data[1..]);
    let split = (usize::from(data[1]) * 256 + usize::from(data[2])).min(rest.len() - 2);
    let (a, b) = rest[2..].split_at(split);
    // A broadcast output has at most as many elements as the product of the inputs' counts.
    if let (Some(ea), Some(eb)) = (elements(a), elements(b)) {
        if ea.saturating_mul(eb) > MAX_OUTPUT_ELEMENTS {
            return;
        }
    }
    let Ok(dir) = tempfile::tempdir() else { return };
    let (pa, mut pb) = (dir.path().join("a.npy"), dir.path().join("b.npy"));
    if std::fs::write(&pa, a).is_err() || std::fs::write(&pb, b).is_err() {
        return;
    }
    // Input B from a pipe, as `<(...)` gives it: the streamed (spooled) reader. The whole input
    // fits in the pipe's buffer, so it is written before the run and the writer closed.
    let _pipe = if settings & 64 != 0 && b.len() <= 16 << 10 {
        let Ok((reader, mut writer)) = std::io::pipe() else { return };
        if writer.write_all(b).is_err() {
            return;
        }
        drop(writer);
        pb = format!("/dev/fd/{}", reader.as_raw_fd()).into();
        Some(reader)
    } else {
        None
    };
    let out = dir.path().join("out.npy");
    let report = dir.path().join("report.json");
    let op = if settings & 1 == 0 { "sub" } else { "sqdiff" };
    let level = ["1_0", "3_1", "6_4", "none"][usize::from(settings >> 1 & 3)];
    let bcast = if settings & 8 == 0 { "numpy" } else { "none" };
    let mut args: Vec<String> = ["tensorop", op].iter().map(|s| s.to_string()).collect();
    for p in [&pa, &pb] {
        args.push(p.display().to_string());
    }
    for s in ["-o", &out.display().to_string(), "--report", &report.display().to_string()] {
        args.push(s.to_string());
    }
    let threads = if settings & 32 == 0 { "1" } else { "2" };
    for s in ["--feature-level", level, "--broadcast", bcast, "--threads", threads, "-q"] {
        args.push(s.to_string());
    }
    if settings & 16 != 0 {
        args.push("--half-precision".into());
    }
    let cli = Cli::try_parse_from(&args).expect("the assembled command line parses");
    let (op, args) = match cli.command {
        Some(Command::Sub(args)) => (Op::Sub, args),
        Some(Command::Sqdiff(args)) => (Op::SqDiff, args),
        _ => unreachable!("only sub and sqdiff are assembled"),
    };
    let Ok(cfg) = Config::new(op, args, false, &|_| None) else { return };
    let outcome = pipeline::run(&cfg);
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into())
        .collect();
    left.sort();
    // The report is written on every outcome; the output only on success, and nothing else.
    match outcome {
        // A `--verify` difference (DirectML only, never here) also writes the result.
        Outcome::Ok | Outcome::Differs(_) => assert_eq!(left, ["a.npy", "b.npy", "out.npy", "report.json"]),
        Outcome::Invalid(_) | Outcome::Error(_) | Outcome::Unpaired(_) | Outcome::Refused(_) => {
            assert_eq!(left, ["a.npy", "b.npy", "report.json"])
        }
    }
});
