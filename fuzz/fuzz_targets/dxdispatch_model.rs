//! Fuzz target: `tensorop run` on a DxDispatch model. One input is the model's text; it is run
//! in a temporary directory that also holds `a.npy` (float32, 6 elements) and `raw.bin` (24
//! bytes) for its `sourcePath`s, with `--output-path` there, at a feature level chosen by the
//! input's length, under a 1 MiB resource limit. Lenient JSON, every initializer, the descs and
//! bindings, the checks and the commands run exactly as in the binary. Every outcome must be
//! a clean exit status (0, 1 or 3), never a panic, hang or runaway allocation. Models that
//! could name a path outside the directory are skipped.
#![no_main]

use clap::Parser;
use libfuzzer_sys::fuzz_target;
use tensorop::cli::{Cli, Command};

/// A float32 `.npy` of [1, 2, 3, 4, 5, 6].
fn npy() -> Vec<u8> {
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }";
    let mut header = dict.to_string();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend_from_slice(&(header.len() as u16).to_le_bytes());
    v.extend_from_slice(header.as_bytes());
    for x in [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v
}

/// Whether a model could name a file outside its directory (an absolute path, `..`, or a slash
/// spelt as a JSON escape): such inputs are skipped, so the fuzzer never writes elsewhere.
fn could_escape(data: &[u8]) -> bool {
    let has = |needle: &[u8]| data.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle));
    has(b"..") || has(b"\"/") || has(b"\"\\") || has(b"\\/") || has(b"\\u00") || has(b"\"~")
}

fuzz_target!(|data: &[u8]| {
    if could_escape(data) {
        return;
    }
    let Ok(dir) = tempfile::tempdir() else { return };
    let model = dir.path().join("model.json");
    let out_dir = dir.path().join("out");
    if std::fs::write(&model, data).is_err()
        || std::fs::write(dir.path().join("a.npy"), npy()).is_err()
        || std::fs::write(dir.path().join("raw.bin"), [0u8; 24]).is_err()
        || std::fs::create_dir(&out_dir).is_err()
    {
        return;
    }
    let level = ["latest", "3_1", "1_0", "none"][data.len() % 4];
    let argv = [
        "tensorop",
        "run",
        model.to_str().unwrap_or_default(),
        "-f",
        level,
        "--output-path",
        out_dir.to_str().unwrap_or_default(),
        "--resource-limit",
        "1048576",
        "--threads",
        "1",
    ];
    let Ok(cli) = Cli::try_parse_from(argv) else { panic!("the fixed command line parses") };
    let Some(Command::Run(args)) = cli.command else { panic!("a run command") };
    let cfg = tensorop::config::run::RunConfig::new(args, &|_| None).expect("a usable run configuration");
    let code = tensorop::dxdispatch::run_to(&cfg, &mut std::io::sink()).exit_code();
    assert!(matches!(code, 0 | 1 | 3), "exit status {code}");
});
