//! Turns parsed arguments into a [`Config`] (`sub`, `sqdiff`) or a [`run::RunConfig`]
//! (`tensorop run`): paths, level, backend and modes resolved, every flag and environment
//! variable read once, and usage rules that clap cannot express enforced, before any work. Nothing after this module sees clap; nothing in it
//! opens a file for its data: it only asks what the paths it was given name
//! (`output::identity`), so that a report never replaces an input or the result.

use crate::backend::directml;
use crate::backend::wgpu::WgpuTuning;
use crate::backend::Choice;
use crate::cli::{BackendArg, BroadcastArg, Float16Arg, OpArgs, ProgressArg};
use crate::npy::input::Source;
use crate::op::{Float16Rule, Op, Semantics};
use crate::output::identity::{self, Named, Role, Use};
use crate::output::parts::PartSpec;
use crate::output::{Destination, Writing, NAMED_TEMPFILES_ENV};
use crate::progress::ProgressMode;
use crate::spec::checks::BroadcastMode;
use crate::spec::level::LevelChoice;
use std::io::IsTerminal;

/// The name of the result in a `--dxdispatch DIR` repro (`docs/dxdispatch.md`): the job's output
/// goes to `DIR/expected.npy`. The export's other names are its own.
pub const DXDISPATCH_EXPECTED: &str = "expected.npy";

pub mod run;

/// A usage error: exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UsageError {}

/// Everything a `sub` or `sqdiff` run needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub sem: Semantics,
    /// Whether a flag named the float16 rule (`--float16`, `--half-precision`,
    /// `--directml-version`): only then is a rule that does nothing for the inputs worth a
    /// warning.
    pub float16_given: bool,
    pub inputs: [Source; 2],
    pub output: Destination,
    pub level: LevelChoice,
    /// `--broadcast`, `numpy` when not given.
    pub broadcast: BroadcastMode,
    /// Whether `--broadcast` was given: two containers' members broadcast only when it says so
    /// (`container::run`).
    pub broadcast_given: bool,
    /// The backend and its settings (wgpu's and directml's from the environment).
    pub backend: Choice,
    /// `None`: no report.
    pub report: Option<Destination>,
    pub dry_run: bool,
    /// `--stats`: summarise the result.
    pub summarise: bool,
    /// `--device-dependence`: count the elements a conformant DirectML may give differently.
    pub device_dependence: bool,
    /// How the output and the report are written: `--fsync`, and unnamed temporary files
    /// unless `TENSOROP_NAMED_TEMPFILES=1`.
    pub writing: Writing,
    /// `-q`: nothing on standard error but errors.
    pub quiet: bool,
    pub threads: usize,
    pub progress: ProgressMode,
    /// `--dxdispatch DIR`: also write the job as a DxDispatch repro there.
    pub dxdispatch: Option<std::path::PathBuf>,
    /// Containers: `--member` patterns (empty: every member).
    pub members: Vec<String>,
    /// Containers: `--skip-unpaired`.
    pub skip_unpaired: bool,
    /// `-v`: containers print every member's stats line and the totals' histogram.
    pub verbose: bool,
    /// `--part K/N`.
    pub part: Option<PartSpec>,
}

impl Config {
    /// Resolves `args` for `op`. `stdout_is_terminal` and the environment (`env`: a variable's
    /// value, if set) are passed in so the rules are testable. The environment is read for
    /// `TENSOROP_NAMED_TEMPFILES` (how outputs are staged) and, only when the wgpu backend is
    /// chosen, for that backend's settings.
    pub fn new(
        op: Op,
        args: OpArgs,
        stdout_is_terminal: bool,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, UsageError> {
        let inputs = [&args.a, &args.b].map(|a| Source::parse(a));
        if let (Some(dir), LevelChoice::None) = (&args.dxdispatch, args.feature_level) {
            return Err(UsageError(format!(
                "--dxdispatch {}: --feature-level none is not a DirectML job, so there is nothing to hand to \
                 DxDispatch; give a DirectML feature level (the default, latest, or e.g. --feature-level 3_1)",
                dir.display()
            )));
        }
        if inputs == [Source::Stdin, Source::Stdin] {
            return Err(UsageError("only one input can be read from standard input; give a path for the other".into()));
        }
        let output = match (args.output.as_deref(), &args.dxdispatch) {
            // The result goes into the repro (the export names the file).
            (_, Some(dir)) => Destination::Path(dir.join(DXDISPATCH_EXPECTED)),
            (Some(p), None) => Destination::parse(p),
            (None, None) if stdout_is_terminal && !args.dry_run => return Err(no_terminal_output(args.stats)),
            (None, None) => Destination::Stdout,
        };
        // `--json` is `--report -`.
        let report = args.report.as_deref().or(args.json.then_some("-")).map(Destination::parse);
        check_report(report.as_ref(), &inputs, &output, &args)?;
        let part = args.part.as_deref().map(PartSpec::parse).transpose().map_err(UsageError)?;
        if let Some(p) = part {
            check_part(p, &inputs, &output)?;
        }
        let quiet = args.quiet;
        let mut backend = backend(args.backend, args.feature_level, args.verify, env)?;
        let flags =
            Float16Flags { arg: args.float16, half_precision: args.half_precision, release: args.directml_version };
        let (float16, float16_given) = flags.resolve(&mut backend)?;
        Ok(Config {
            sem: Semantics { op, float16 },
            float16_given,
            inputs,
            output,
            level: args.feature_level,
            broadcast: match args.broadcast {
                Some(BroadcastArg::Numpy) | None => BroadcastMode::Numpy,
                Some(BroadcastArg::None) => BroadcastMode::None,
            },
            broadcast_given: args.broadcast.is_some(),
            backend,
            report,
            dry_run: args.dry_run,
            summarise: args.stats,
            device_dependence: args.device_dependence,
            writing: writing(args.fsync, env),
            quiet,
            threads: threads(args.threads),
            progress: match (quiet, args.progress) {
                (true, _) | (_, ProgressArg::Never) => ProgressMode::Never,
                (_, ProgressArg::Always) => ProgressMode::Always,
                (_, ProgressArg::Auto) => ProgressMode::Auto,
            },
            dxdispatch: args.dxdispatch,
            members: args.members,
            skip_unpaired: args.skip_unpaired,
            verbose: args.verbose,
            part,
        })
    }
}

/// Refuses a report that would go where the result goes, or replace an input or the result.
fn check_report(
    report: Option<&Destination>,
    inputs: &[Source; 2],
    output: &Destination,
    args: &OpArgs,
) -> Result<(), UsageError> {
    if report == Some(&Destination::Stdout) && *output == Destination::Stdout && !args.dry_run {
        return Err(UsageError(
            "--report - (or --json) and the output both go to standard output; write the output to a file with -o, \
             or the report with --report PATH"
                .into(),
        ));
    }
    if let Some(Destination::Path(r)) = report {
        let roles = report_roles(inputs, output, args.dxdispatch.as_deref(), args.dry_run);
        if let Some(msg) = identity::refuse_report_over(r, &roles) {
            return Err(UsageError(msg));
        }
    }
    Ok(())
}

/// `--part K/N` needs an output file and inputs every part can read.
fn check_part(p: PartSpec, inputs: &[Source; 2], output: &Destination) -> Result<(), UsageError> {
    if *output == Destination::Stdout {
        return Err(UsageError(format!(
            "--part {}/{}: parts write into one file that appears when the last part is done; give it with \
             -o PATH (not standard output)",
            p.index, p.count
        )));
    }
    if inputs.contains(&Source::Stdin) {
        return Err(UsageError(format!(
            "--part {}/{}: every part reads the inputs, so they must be files, not standard input",
            p.index, p.count
        )));
    }
    // A device, FIFO or socket is no file for parts to fill: refused here, as standard output
    // is (a path that cannot be resolved yet is the run's to report).
    if let Destination::Path(path) = output {
        if let Ok(t) = crate::output::target::Target::resolve(path) {
            if !matches!(t, crate::output::target::Target::Replace { .. }) {
                return Err(UsageError(format!(
                    "--part {}/{}: parts write into one file that appears when the last part is done; {} is not a \
                     regular file: give -o PATH of a file",
                    p.index,
                    p.count,
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// The float16 rule when no flag names one: `nearest` (the contract's arithmetic), except on
/// the directml backend, where the rule is only `--verify`'s reference: the rule of the
/// DirectML release the backend loads, which it picks itself once loaded (this is the newest
/// releases' rule, until then; `docs/backends.md`, "float16 by release").
fn float16_default(backend: &Choice) -> Float16Rule {
    match backend {
        Choice::Directml(_) => Float16Rule::TowardZeroInf,
        Choice::Cpu | Choice::Wgpu(_) => Float16Rule::Nearest,
    }
}

/// The flags that name a float16 rule: `--float16`, `--half-precision` and
/// `--directml-version`.
pub(crate) struct Float16Flags {
    pub(crate) arg: Option<Float16Arg>,
    pub(crate) half_precision: bool,
    pub(crate) release: Option<String>,
}

impl Float16Flags {
    /// The rule, and whether a flag named it; a rule given to the directml backend too, which
    /// otherwise picks the rule of the release it loads. Flags naming different rules are a
    /// usage error.
    pub(crate) fn resolve(self, backend: &mut Choice) -> Result<(Float16Rule, bool), UsageError> {
        let flag = float16_rule(self.arg, self.half_precision)?;
        let release = match &self.release {
            Some(v) => Some(Float16Rule::of_directml(v).map_err(|e| UsageError(format!("--directml-version: {e}")))?),
            None => None,
        };
        let given = match (flag, release) {
            (Some(f), Some(r)) if f != r => {
                return Err(UsageError(format!(
                    "--directml-version {} stores float16 by the rule {}, which contradicts --float16 {}; give one of \
                     them",
                    self.release.unwrap_or_default(),
                    r.name(),
                    f.name()
                )))
            }
            (f, r) => f.or(r),
        };
        if let Choice::Directml(s) = backend {
            s.float16 = given;
        }
        Ok((given.unwrap_or_else(|| float16_default(backend)), given.is_some()))
    }
}

/// `--float16 RULE` and `--half-precision` (`--float16 per-step`): the rule, `None` when
/// neither is given; both, naming different rules, are a usage error.
fn float16_rule(arg: Option<Float16Arg>, half_precision: bool) -> Result<Option<Float16Rule>, UsageError> {
    match (arg.map(Float16Rule::from), half_precision) {
        (None, false) => Ok(None),
        (None, true) => Ok(Some(Float16Rule::PerStep)),
        (Some(rule), false) | (Some(rule @ Float16Rule::PerStep), true) => Ok(Some(rule)),
        (Some(rule), true) => Err(UsageError(format!(
            "--half-precision is --float16 per-step, which contradicts --float16 {}; give one of them",
            rule.name()
        ))),
    }
}

impl From<Float16Arg> for Float16Rule {
    fn from(arg: Float16Arg) -> Float16Rule {
        match arg {
            Float16Arg::Nearest => Float16Rule::Nearest,
            Float16Arg::PerStep => Float16Rule::PerStep,
            Float16Arg::TowardZeroInf | Float16Arg::D3d => Float16Rule::TowardZeroInf,
            Float16Arg::TowardZeroSaturate => Float16Rule::TowardZeroSaturate,
        }
    }
}

/// `--threads N`, or every core the process may use.
fn threads(n: Option<u16>) -> usize {
    match n {
        Some(n) => usize::from(n),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// `--backend` and `--verify`, with the chosen backend's settings read from the environment
/// (only that backend's): a bad setting, `--verify` without DirectML, and DirectML where there
/// is none (not Windows) or no DirectML job (`--feature-level none`) are usage errors before
/// any work.
fn backend(
    arg: BackendArg,
    level: LevelChoice,
    verify: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Choice, UsageError> {
    let usage = |e: anyhow::Error| UsageError(format!("{e:#}"));
    if verify && arg != BackendArg::Directml {
        return Err(UsageError(
            "--verify compares the directml backend's output with the CPU's reference; add --backend directml".into(),
        ));
    }
    match arg {
        BackendArg::Cpu => Ok(Choice::cpu()),
        BackendArg::Wgpu => {
            let tuning = WgpuTuning::from_lookup(env).map_err(usage)?;
            Ok(Choice::Wgpu(tuning))
        }
        BackendArg::Directml => {
            if let Some(msg) = directml::unavailable() {
                return Err(UsageError(msg));
            }
            let LevelChoice::Dml(level) = level else {
                return Err(UsageError(
                    "--backend directml: --feature-level none is not a DirectML job, so DirectML cannot run it; give a \
                     DirectML feature level (the default, latest, or e.g. --feature-level 3_1)"
                        .into(),
                ));
            };
            let settings = directml::Settings::from_lookup(level, verify, env).map_err(usage)?;
            Ok(Choice::Directml(settings))
        }
    }
}

/// How results and reports are written: `--fsync`, and unnamed temporary files unless
/// `TENSOROP_NAMED_TEMPFILES=1`.
fn writing(fsync: bool, env: &dyn Fn(&str) -> Option<String>) -> Writing {
    Writing { durable: fsync, unnamed: env(NAMED_TEMPFILES_ENV).as_deref() != Some("1") }
}

/// The refusal of a result on a terminal, with the way to the statistics alone for `--stats`.
fn no_terminal_output(stats: bool) -> UsageError {
    let null = if cfg!(windows) { "NUL" } else { "/dev/null" };
    let alone = if stats { format!("; for the statistics alone, keep no result: -o {null}") } else { String::new() };
    UsageError(format!(
        "refusing to write binary .npy data to a terminal; give an output path with -o OUT.npy (or pipe the \
         output, or use -o - to force standard output){alone}"
    ))
}

/// The paths a report must not replace: the inputs, and the result (the output, or the
/// `--dxdispatch` directory and everything in it). A dry run writes no result, but its `-o`
/// still names the user's result file, which a report must not replace either; standard output
/// carries nothing in a dry run.
fn report_roles<'a>(
    inputs: &'a [Source; 2],
    output: &'a Destination,
    dxdispatch: Option<&'a std::path::Path>,
    dry_run: bool,
) -> Vec<Role<'a>> {
    let mut roles: Vec<Role> = inputs
        .iter()
        .zip(["A", "B"])
        .map(|(source, which)| match source {
            Source::Stdin => {
                Role { what: format!("input {which} (standard input)"), named: Named::Stdin, used: Use::Read }
            }
            Source::Path(p) => {
                Role { what: format!("input {which} ({})", p.display()), named: Named::Path(p), used: Use::Read }
            }
        })
        .collect();
    roles.push(match (dxdispatch, output) {
        (Some(dir), _) => Role {
            what: format!("the --dxdispatch directory {}", dir.display()),
            named: Named::Path(dir),
            used: Use::Directory,
        },
        (None, Destination::Path(p)) => {
            Role { what: format!("the result (-o {})", p.display()), named: Named::Path(p), used: Use::Write }
        }
        (None, Destination::Stdout) if !dry_run => {
            Role { what: "the result (standard output)".into(), named: Named::Stdout, used: Use::Write }
        }
        (None, Destination::Stdout) => return roles,
    });
    roles
}

/// Whether standard output is a terminal.
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn config(argv: &[&str], tty: bool) -> Result<Config, UsageError> {
        let cli = Cli::try_parse_from([&["tensorop", "sub"], argv].concat()).unwrap();
        let Some(Command::Sub(args)) = cli.command else { panic!() };
        Config::new(Op::Sub, args, tty, &|_| None)
    }

    #[test]
    fn output_defaults_to_stdout_only_off_a_terminal() {
        assert_eq!(config(&["a", "b"], false).unwrap().output, Destination::Stdout);
        assert!(config(&["a", "b"], true).unwrap_err().0.contains("-o OUT.npy"));
        assert_eq!(config(&["a", "b", "-o", "-"], true).unwrap().output, Destination::Stdout);
        assert!(config(&["a", "b", "--dry-run"], true).is_ok());
        let stats = config(&["a", "b", "--stats"], true).unwrap_err().0;
        assert!(stats.contains("for the statistics alone, keep no result: -o "), "{stats}");
    }

    #[test]
    fn float16_rule_from_either_flag_and_both_only_when_they_agree() {
        let rule = |argv: &[&str]| config(&[&["a", "b", "-o", "c"], argv].concat(), false).map(|c| c.sem.float16);
        assert_eq!(rule(&[]).unwrap(), Float16Rule::Nearest);
        assert_eq!(rule(&["--half-precision"]).unwrap(), Float16Rule::PerStep);
        for r in Float16Rule::ALL {
            assert_eq!(rule(&["--float16", r.name()]).unwrap(), r);
        }
        assert_eq!(rule(&["--float16", "per-step", "--half-precision"]).unwrap(), Float16Rule::PerStep);
        for other in ["nearest", "toward-zero-inf"] {
            let e = rule(&["--half-precision", "--float16", other]).unwrap_err().0;
            assert!(e.contains(&format!("contradicts --float16 {other}")), "{e}");
        }
        // The old name of toward-zero-inf still works.
        assert_eq!(rule(&["--float16", "d3d"]).unwrap(), Float16Rule::TowardZeroInf);
        // A DirectML release names its rule: saturating up to 1.12, to infinity from 1.13.
        for (v, r) in [("1.8", Float16Rule::TowardZeroSaturate), ("1.12.0", Float16Rule::TowardZeroSaturate)] {
            assert_eq!(rule(&["--directml-version", v]).unwrap(), r, "{v}");
        }
        for v in ["1.13", "1.15.4", "1.15.4.0"] {
            assert_eq!(rule(&["--directml-version", v]).unwrap(), Float16Rule::TowardZeroInf, "{v}");
        }
        assert_eq!(
            rule(&["--directml-version", "1.8", "--float16", "toward-zero-saturate"]).unwrap().name(),
            "toward-zero-saturate"
        );
        let e = rule(&["--directml-version", "1.8", "--float16", "nearest"]).unwrap_err().0;
        assert!(e.contains("toward-zero-saturate, which contradicts --float16 nearest"), "{e}");
        for bad in ["2.0", "1", "latest", "1.x"] {
            let e = rule(&["--directml-version", bad]).unwrap_err().0;
            assert!(e.contains("expected a DirectML release such as 1.8"), "{bad}: {e}");
        }
    }

    #[test]
    fn refuses_two_stdouts_and_two_stdins() {
        assert!(config(&["a", "b", "--report", "-"], false).is_err());
        assert!(config(&["a", "b", "--report", "-", "-o", "c.npy"], false).is_ok());
        assert!(config(&["-", "-", "-o", "c"], false).is_err());
        assert!(config(&["a", "b", "-o", "c", "--report", "c"], false).unwrap_err().0.contains("the result (-o c)"));
    }

    #[test]
    fn wgpu_settings_are_read_only_for_the_wgpu_backend() {
        let cli = |backend: &str| {
            let cli = Cli::try_parse_from(["tensorop", "sub", "a", "b", "-o", "c", "--backend", backend]).unwrap();
            let Some(Command::Sub(args)) = cli.command else { panic!() };
            args
        };
        let env = |name: &str| (name == "TENSOROP_WGPU_CHUNK_BYTES").then(|| "lots".to_string());
        assert!(Config::new(Op::Sub, cli("cpu"), false, &env).is_ok());
        let e = Config::new(Op::Sub, cli("wgpu"), false, &env).unwrap_err();
        assert!(e.0.contains("TENSOROP_WGPU_CHUNK_BYTES=lots"), "{}", e.0);
        let env = |name: &str| (name == "TENSOROP_WGPU_CHUNK_BYTES").then(|| "64".to_string());
        let Choice::Wgpu(tuning) = Config::new(Op::Sub, cli("wgpu"), false, &env).unwrap().backend else {
            panic!("not the wgpu backend")
        };
        assert_eq!(tuning.chunk_bytes, 64);
    }

    #[test]
    fn quiet_turns_progress_off() {
        let c = config(&["a", "b", "-o", "c", "-q", "--progress", "always"], false).unwrap();
        assert_eq!(c.progress, ProgressMode::Never);
        let c = config(&["a", "b", "-o", "c", "--threads", "3"], false).unwrap();
        assert_eq!(c.threads, 3);
    }
}
