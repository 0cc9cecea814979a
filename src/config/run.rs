//! `tensorop run`'s configuration, built as `sub`'s is: every flag and environment variable
//! read once, and usage errors (exit 2) found before any work, `--dry-run` included.

use super::{backend, threads, writing, Float16Flags, UsageError};
use crate::backend::Choice;
use crate::cli::RunArgs;
use crate::op::Float16Rule;
use crate::output::{Destination, Writing};
use crate::spec::level::LevelChoice;
use std::path::PathBuf;

/// Everything a `tensorop run` needs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The model file, as given (the report names it so).
    pub model: String,
    pub level: LevelChoice,
    /// The backend and its settings.
    pub backend: Choice,
    /// `None`: no report.
    pub report: Option<Destination>,
    pub dry_run: bool,
    /// `--input-path`: where `sourcePath`s are looked for (default: the model's folder).
    pub input_path: Option<PathBuf>,
    /// `--output-path`: where `writeFile`s write (default: the current directory).
    pub output_path: Option<PathBuf>,
    pub writing: Writing,
    pub threads: usize,
    /// `-q`: nothing on standard error but errors.
    pub quiet: bool,
    /// `--resource-limit`: the most bytes of resources and temporary results.
    pub resource_limit: u64,
    /// `--float16`: how every float16 dispatch rounds.
    pub float16: Float16Rule,
}

impl RunConfig {
    /// Resolves `args`; the environment (`env`: a variable's value, if set) is read for
    /// `TENSOROP_NAMED_TEMPFILES` and, only when the wgpu backend is chosen, for its settings.
    pub fn new(args: RunArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<RunConfig, UsageError> {
        // `--json` is `--report -`; a model whose `print` commands also write to standard
        // output is refused once it is read (`dxdispatch::run`).
        let report = args.report.as_deref().or(args.json.then_some("-")).map(Destination::parse);
        let mut backend = backend(args.backend, args.feature_level, args.verify, env)?;
        let flags = Float16Flags { arg: args.float16, half_precision: false, release: args.directml_version };
        let (float16, _) = flags.resolve(&mut backend)?;
        Ok(RunConfig {
            float16,
            model: args.model,
            level: args.feature_level,
            backend,
            report,
            dry_run: args.dry_run,
            input_path: args.input_path,
            output_path: args.output_path,
            writing: writing(args.fsync, env),
            threads: threads(args.threads),
            quiet: args.quiet,
            resource_limit: args.resource_limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(argv: &[&str]) -> RunArgs {
        let cli = Cli::try_parse_from([&["tensorop", "run", "m.json"], argv].concat()).unwrap();
        let Some(Command::Run(args)) = cli.command else { panic!() };
        args
    }

    #[test]
    fn a_bad_wgpu_setting_is_a_usage_error_with_or_without_dry_run() {
        let env = |name: &str| (name == "TENSOROP_WGPU_CHUNK_BYTES").then(|| "lots".to_string());
        for argv in [&["--backend", "wgpu"][..], &["--backend", "wgpu", "--dry-run"]] {
            let e = RunConfig::new(args(argv), &env).unwrap_err();
            assert!(e.0.contains("TENSOROP_WGPU_CHUNK_BYTES=lots"), "{}", e.0);
        }
        assert!(RunConfig::new(args(&[]), &env).is_ok(), "the cpu backend reads no wgpu setting");
    }

    /// `--json` is `--report -`; whether the model's print commands clash with it is decided
    /// once the model is read.
    #[test]
    fn json_is_the_report_on_standard_output() {
        for argv in [&["--report", "-"][..], &["--json"], &["--json", "--dry-run"]] {
            let cfg = RunConfig::new(args(argv), &|_| None).expect("accepted before the model is read");
            assert_eq!(cfg.report, Some(Destination::Stdout), "{argv:?}");
        }
    }
}
