//! The command line's edge: [`main`] parses arguments, dispatches the command and maps its
//! outcome to the exit status (0 ok, 1 runtime error, 2 usage error, 3 validation failure, and
//! for `compare` 4 when the files differ);
//! nothing else. The `tensorop` binary is this function.

use crate::backend::wgpu::WgpuTuning;
use crate::cli::{Cli, Command};
use crate::config::{self, Config, UsageError};
use crate::op::Op;
use crate::output::{self, BrokenPipe};
use crate::pipeline::{self, Outcome};
use crate::{commands, shell, sys};
use clap::Parser;
use std::process::ExitCode;

/// Runs the `tensorop` command with the process's arguments.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print and succeed; everything else is a usage error (2).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let command = match (cli.generate, cli.command) {
        (Some(kind), _) => return finish(shell::generate(kind, &mut std::io::stdout().lock()).map_err(Into::into)),
        (None, Some(command)) => command,
        // clap prints the help when neither is given (arg_required_else_help).
        (None, None) => return ExitCode::from(2),
    };
    let (op, args) = match command {
        Command::Sub(args) => (Op::Sub, args),
        Command::Sqdiff(args) => (Op::SqDiff, args),
        Command::Support(args) => return finish(commands::support(&args, &mut std::io::stdout().lock())),
        Command::Info(args) => return finish(commands::info(&args, &mut std::io::stdout().lock())),
        Command::Devices(args) => {
            crate::backend::wgpu::quiet_driver_probes();
            let tuning = WgpuTuning::from_env();
            return finish(tuning.and_then(|t| commands::devices(&args, &t, &mut std::io::stdout().lock())));
        }
        Command::Compare(args) => {
            return match crate::compare::compare(&args, &mut std::io::stdout().lock()) {
                Ok(code) => ExitCode::from(code),
                Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("tensorop: error: {e:#}");
                    ExitCode::from(1)
                }
            };
        }
        Command::MergeStats(args) => {
            return finish(crate::report::merge::merge_stats(&args, &mut std::io::stdout().lock()));
        }
        Command::Run(args) => {
            if args.report.as_deref() == Some("-") && !args.dry_run {
                eprintln!("tensorop: usage error: --report - writes to standard output, which print commands use; give a path, or add --dry-run");
                return ExitCode::from(2);
            }
            if args.backend == crate::cli::BackendArg::Wgpu {
                crate::backend::wgpu::quiet_driver_probes();
            }
            clean_up_on_signals();
            return ExitCode::from(crate::dxdispatch::run(&args));
        }
    };
    let env = |name: &str| std::env::var(name).ok();
    let cfg = match Config::new(op, args, config::stdout_is_terminal(), &env) {
        Ok(cfg) => cfg,
        Err(UsageError(msg)) => {
            eprintln!("tensorop: usage error: {msg}");
            return ExitCode::from(2);
        }
    };
    if cfg.backend == crate::backend::BackendKind::Wgpu {
        // While this is the only thread (the signal thread starts next).
        crate::backend::wgpu::quiet_driver_probes();
    }
    clean_up_on_signals();
    let outcome = match cfg.dxdispatch.clone() {
        None => pipeline::run(&cfg),
        Some(dir) => match crate::dxdispatch::export::run(&cfg, &dir) {
            crate::dxdispatch::export::Exported::Done(outcome) => outcome,
            crate::dxdispatch::export::Exported::Refused(msg) => {
                eprintln!(
                    "tensorop: usage error: --dxdispatch {}: these inputs fail DirectML's checks at feature level {}, so \
                     there is no DirectML job to hand over (nothing was written):",
                    dir.display(),
                    cfg.level
                );
                for line in msg.lines() {
                    eprintln!("  {line}");
                }
                return ExitCode::from(2);
            }
        },
    };
    match &outcome {
        Outcome::Ok => {}
        Outcome::Invalid(msg) => {
            eprintln!("tensorop: validation failed (nothing was computed):");
            for line in msg.lines() {
                eprintln!("  {line}");
            }
        }
        Outcome::Error(e) => eprintln!("tensorop: error: {e:#}"),
        Outcome::Unpaired(msg) => eprintln!("tensorop: {msg}"),
    }
    ExitCode::from(outcome.exit_code())
}

/// On SIGINT, SIGTERM or SIGHUP (Unix), or Ctrl-C, Ctrl-Break or the console's closing
/// (Windows): remove the temporary output and report files, say so, and exit with the status
/// that system's tools use (130 for Ctrl-C on Unix, 0xC000013A on Windows), leaving every target
/// as it was.
fn clean_up_on_signals() {
    sys::on_interruption(|why| {
        output::remove_pending();
        eprintln!("tensorop: interrupted by {}; no output was written", why.what);
        std::process::exit(why.exit_code);
    });
}

/// Exit status of a read-only command: a closed pipe is quiet success, other errors exit 1.
fn finish(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tensorop: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.is::<BrokenPipe>()
        || e.chain()
            .any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
