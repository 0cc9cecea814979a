//! The command line's edge: [`main`] parses arguments, builds the command's configuration,
//! dispatches it and exits with its outcome's status (`outcome::Outcome::exit_code`; `compare`
//! has its own, 4 when the files differ); nothing else. The `tensorop` binary is this function.

use crate::backend::wgpu::WgpuTuning;
use crate::backend::BackendKind;
use crate::cli::{Cli, Command, OpArgs, RunArgs};
use crate::config::run::RunConfig;
use crate::config::{self, Config, UsageError};
use crate::op::Op;
use crate::outcome::Outcome;
use crate::output::{self, is_broken_pipe};
use crate::pipeline;
use crate::{commands, shell, sys};
use clap::Parser;
use std::io::IsTerminal;
use std::process::ExitCode;

mod usage;

/// Runs the `tensorop` command with the process's arguments.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print and succeed; everything else is a usage error (2).
            let subcommand = std::env::args().nth(1);
            match usage::hint(&e, subcommand.as_deref()) {
                Some(msg) => eprintln!("tensorop: usage error: {msg}\n\nFor more information, try '--help'."),
                None => drop(e.print()),
            }
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    // The CPU tier cap applies to every command that computes or compares (`crate::arch`).
    if let Err(msg) = crate::arch::limit_from(std::env::var(crate::arch::TIER_ENV).ok().as_deref()) {
        Outcome::Refused(msg).tell("");
        return ExitCode::from(2);
    }
    let command = match (cli.generate, cli.command) {
        (Some(kind), _) => return finish(shell::generate(kind, &mut std::io::stdout().lock()).map_err(Into::into)),
        (None, Some(command)) => command,
        // clap prints the help when neither is given (arg_required_else_help).
        (None, None) => return ExitCode::from(2),
    };
    if let Err(msg) = usage::refuse_stdin(&command, std::io::stdin().is_terminal()) {
        Outcome::Refused(msg).tell("");
        return ExitCode::from(2);
    }
    let env = |name: &str| std::env::var(name).ok();
    let (outcome, not_done) = match command {
        Command::Sub(args) => (compute(Op::Sub, args, &env), "nothing was computed"),
        Command::Sqdiff(args) => (compute(Op::SqDiff, args, &env), "nothing was computed"),
        Command::Run(args) => (run_model(args, &env), "nothing was run or written"),
        other => return read_only(other),
    };
    outcome.tell(not_done);
    ExitCode::from(outcome.exit_code())
}

/// `sub` or `sqdiff`: the configuration (usage errors before any work), then the run.
fn compute(op: Op, args: OpArgs, env: &dyn Fn(&str) -> Option<String>) -> Outcome {
    let cfg = match Config::new(op, args, config::stdout_is_terminal(), env) {
        Ok(cfg) => cfg,
        Err(UsageError(msg)) => return Outcome::Refused(msg),
    };
    start_up(cfg.backend.kind());
    pipeline::run(&cfg)
}

/// `tensorop run`: the configuration (usage errors before any work), then the model.
fn run_model(args: RunArgs, env: &dyn Fn(&str) -> Option<String>) -> Outcome {
    let cfg = match RunConfig::new(args, env) {
        Ok(cfg) => cfg,
        Err(UsageError(msg)) => return Outcome::Refused(msg),
    };
    start_up(cfg.backend.kind());
    crate::dxdispatch::run(&cfg)
}

/// What every computing command does before it starts: quiet the GPU drivers' probes while
/// this is the only thread (the signal thread starts next), and clean up on signals.
fn start_up(backend: BackendKind) {
    if backend == BackendKind::Wgpu {
        crate::backend::wgpu::quiet_driver_probes();
    }
    clean_up_on_signals();
}

/// The commands that only read and print: `support`, `info`, `devices`, `compare`,
/// `merge-stats`.
fn read_only(command: Command) -> ExitCode {
    let out = &mut std::io::stdout().lock();
    match command {
        Command::Support(args) => finish(commands::support(&args, out)),
        Command::Info(args) => finish(commands::info(&args, out)),
        Command::Devices(args) => {
            crate::backend::wgpu::quiet_driver_probes();
            let env = |name: &str| std::env::var(name).ok();
            finish(WgpuTuning::from_env().and_then(|t| commands::devices(&args, &t, &env, out)))
        }
        // -q: the exit status alone says whether the files are the same (`cmp -s`).
        Command::Compare(args) if args.quiet && !args.json => {
            match crate::compare::compare(&args, &mut std::io::sink()) {
                Ok(code) => ExitCode::from(code),
                Err(e) => finish(Err(e)),
            }
        }
        Command::Compare(args) => match crate::compare::compare(&args, out) {
            Ok(code) => ExitCode::from(code),
            Err(e) => finish(Err(e)),
        },
        Command::MergeStats(args) => finish(crate::report::merge::merge_stats(&args.reports, args.by_dtype, out)),
        Command::Sub(_) | Command::Sqdiff(_) | Command::Run(_) => ExitCode::from(2),
    }
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

/// Exit status of a read-only command, through the one [`Outcome`] mapping: a closed pipe
/// (these commands write standard output directly) is quiet success, other errors exit 1.
fn finish(result: anyhow::Result<()>) -> ExitCode {
    let outcome = match result {
        Ok(()) => Outcome::Ok,
        Err(e) if is_broken_pipe(&e) => Outcome::Ok,
        Err(e) => Outcome::Error(e),
    };
    outcome.tell("");
    ExitCode::from(outcome.exit_code())
}
