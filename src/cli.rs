//! Command-line syntax: clap derive structs and value enums, nothing else. No I/O happens here,
//! so `--help` and usage errors never touch a file or a GPU. The shell completions and the man
//! page are generated from these same definitions (`shell`).

use crate::spec::level::{FeatureLevel, LevelChoice};
use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsStr;

#[derive(Debug, Parser)]
#[command(
    name = "tensorop",
    version,
    about = "DirectML element-wise subtract and squared difference over .npy files",
    long_about = "DirectML element-wise subtract (DML_ELEMENT_WISE_SUBTRACT) and squared difference \
                  (DML_ELEMENT_WISE_DIFFERENCE_SQUARE, OpenVINO SquaredDifference-1) over .npy files, \
                  validated against a DirectML feature level's support matrix.",
    after_help = "Exit status: 0 success, 1 runtime error, 2 usage error, 3 validation failure, 4 results differ \
                  (compare, --verify), 5 unpaired members (containers), 128 + N ended by signal N (130: Ctrl-C; \
                  on Windows 0xC000013A). The manual: tensorop --generate man | man -l -",
    arg_required_else_help = true,
    subcommand_value_name = "COMMAND",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// Print a shell completion script or the man page on standard output, then exit
    #[arg(long, value_enum, value_name = "KIND", exclusive = true)]
    pub generate: Option<Generate>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What `--generate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    /// The man page, roff (`man -l -` reads it)
    Man,
    /// bash completions
    CompleteBash,
    /// zsh completions (install as `_tensorop` on $fpath)
    CompleteZsh,
    /// fish completions
    CompleteFish,
    /// elvish completions
    CompleteElvish,
    /// PowerShell completions
    CompletePowershell,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// out = A - B (DML_ELEMENT_WISE_SUBTRACT)
    Sub(OpArgs),
    /// out = (A - B) * (A - B) (DML_ELEMENT_WISE_DIFFERENCE_SQUARE, OpenVINO SquaredDifference-1)
    Sqdiff(OpArgs),
    /// Print the DirectML support matrix: per feature level, dtypes and ranks
    Support(SupportArgs),
    /// Print .npy headers (dtype, shape, order, byte order, format version) and the members of
    /// .npz and .safetensors containers
    Info(InfoArgs),
    /// List the GPU adapters the wgpu backend can use, and on Windows the DirectML adapters
    Devices(DevicesArgs),
    /// Run a DxDispatch model's element-wise subtract and squared difference dispatches
    Run(RunArgs),
    /// Compare two .npy results (or two containers, member by member): bit-identical or within
    /// a tolerance (exit 0), or how far apart (exit 4)
    Compare(CompareArgs),
    /// Merge the --stats summaries of several reports exactly: what one run over all their
    /// elements would report (JSON on standard output)
    MergeStats(MergeStatsArgs),
}

#[derive(Debug, Args)]
pub struct MergeStatsArgs {
    /// Reports written with --stats (`-` = standard input): single pairs, parts (--part) and
    /// container runs (every member), in any order
    #[arg(value_name = "REPORT", required = true)]
    pub reports: Vec<String>,
    /// Merge the summaries of each dtype apart (`by_dtype`) instead of refusing reports of
    /// different dtypes
    #[arg(long)]
    pub by_dtype: bool,
    /// The merged summary as JSON on standard output (the only form merge-stats prints)
    #[arg(long)]
    pub json: bool,
    /// Nothing on standard error but errors
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// First input, e.g. DirectML's output: a .npy, or an .npz or .safetensors container (`-` =
    /// standard input)
    #[arg(value_name = "A")]
    pub a: String,
    /// Second input, the reference, e.g. expected.npy (`-` = standard input); two containers
    /// are compared member by member, paired by name
    #[arg(value_name = "B", required_unless_present = "conformant")]
    pub b: Option<String>,
    /// Elements also count as equal when |a - b| <= ATOL + RTOL * |b|, as NumPy's isclose
    /// (computed exactly); ATOL alone means RTOL 0. Without --atol, --rtol and --ulps: bit
    /// equality
    #[arg(long, value_name = "ATOL", value_parser = parse_tolerance, allow_negative_numbers = true)]
    pub atol: Option<f64>,
    /// The relative part of that bound, |b| being B's element; RTOL alone means ATOL 0
    #[arg(long, value_name = "RTOL", value_parser = parse_tolerance, allow_negative_numbers = true)]
    pub rtol: Option<f64>,
    /// Elements also count as equal when at most N units in the last place apart (integers: N
    /// units of 1). With --atol or --rtol too, either bound suffices
    #[arg(long, value_name = "N", value_parser = parse_ulps, allow_negative_numbers = true)]
    pub ulps: Option<u64>,
    /// JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// Nothing on standard output or error but errors and the --json object: the exit status
    /// says whether the files are the same (as `cmp -s`)
    #[arg(short, long)]
    pub quiet: bool,
    /// Instead of B: accept, element by element, any result a conformant DirectML may give for
    /// OP on the inputs IN_A and IN_B (every float16 rule, subnormals flushed or kept, any NaN
    /// for a NaN); exit 4 for an element none gives
    #[arg(long, num_args = 3, value_names = ["OP", "IN_A", "IN_B"], conflicts_with_all = ["b", "atol", "rtol", "ulps"])]
    pub conformant: Option<Vec<String>>,
}

/// A tolerance: a finite number, zero or more.
fn parse_tolerance(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(x) if x < 0.0 => {
            Err(format!("a tolerance cannot be negative ({text}): |a - b| is never below 0; give 0 or more, e.g. 1e-6"))
        }
        _ => Err(format!("not a tolerance: {text:?} (a finite number, 0 or more, e.g. 1e-6)")),
    }
}

/// A count of units in the last place: a whole number, zero or more.
fn parse_ulps(text: &str) -> Result<u64, String> {
    match text.trim().parse::<i128>() {
        Ok(n) if n < 0 => Err(format!("a ULP count cannot be negative ({text}); give 0 or more, e.g. 1")),
        _ => text.trim().parse::<u64>().map_err(|_| format!("not a ULP count: {text:?} (a whole number, 0 or more)")),
    }
}

#[derive(Debug, Args)]
pub struct OpArgs {
    /// First input: .npy, or a .npz or .safetensors container, run member by member (`-` =
    /// standard input, a .npy or a container)
    #[arg(value_name = "A")]
    pub a: String,
    /// Second input: .npy, .npz or .safetensors (`-` = standard input)
    #[arg(value_name = "B")]
    pub b: String,
    /// Output .npy, or for containers .safetensors or .npz (`-` = standard output; the default
    /// when standard output is not a terminal)
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<String>,
    /// DirectML feature level to validate against: 1_0 ... 6_4 (also 3.1, DML_FEATURE_LEVEL_3_1),
    /// `latest` (= 6_4), or `none` for no DirectML limits (every numeric dtype and rank 0-32)
    #[arg(short = 'f', long, value_name = "L", default_value = "latest", value_parser = LevelParser,
          hide_possible_values = true)]
    pub feature_level: LevelChoice,
    /// Broadcasting rule: NumPy's multidirectional broadcasting, or identical shapes only
    /// [default: numpy; between two containers' members: none, a changed shape being a
    /// difference]
    #[arg(long, value_enum, value_name = "RULE")]
    pub broadcast: Option<BroadcastArg>,
    /// Where the arithmetic runs
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    pub backend: BackendArg,
    /// With --backend directml: also compute the CPU reference and report whether DirectML's
    /// output is bit-identical (exit 4 where it is not)
    #[arg(long)]
    pub verify: bool,
    /// float16 and bfloat16 only: round A - B to the element type before squaring (NumPy's
    /// behaviour); the same as --float16 per-step
    #[arg(long)]
    pub half_precision: bool,
    /// How float16 results are rounded from the float32 arithmetic: `nearest` (once, at the end:
    /// the default), `per-step` (also A - B before squaring, as --half-precision; bfloat16 too),
    /// `toward-zero-inf` (toward zero, beyond 65504 to infinity: DirectML 1.13 and later) or
    /// `toward-zero-saturate` (toward zero, saturating at 65504: Direct3D's written rule,
    /// DirectML 1.8 to 1.12). With --backend directml the default is the rule of the DirectML
    /// release loaded
    #[arg(long = "float16", value_enum, value_name = "RULE")]
    pub float16: Option<Float16Arg>,
    /// The DirectML release whose float16 answer to give (e.g. 1.8, 1.15.4): its rule, as
    /// --float16 (toward-zero-saturate up to 1.12, toward-zero-inf from 1.13)
    #[arg(long, value_name = "VERSION")]
    pub directml_version: Option<String>,
    /// Write a JSON report of checks and timings here (`-` = standard output)
    #[arg(long, value_name = "PATH")]
    pub report: Option<String>,
    /// The JSON report on standard output (the same as --report -)
    #[arg(long, conflicts_with = "report")]
    pub json: bool,
    /// Run every check and write the report; compute and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Summarise the result as it streams: counts, min, max, exact sum, mean (for sqdiff, the
    /// mean squared error) and a histogram; in the report and, unless -q, on standard error
    #[arg(long)]
    pub stats: bool,
    /// Count the result elements whose value a conformant DirectML may give differently, by
    /// cause: the float16 rule of its release or device, subnormal flushing, NaN payloads (two
    /// .npy files; also with --dry-run); in the report and, unless -q, on standard error
    #[arg(long)]
    pub device_dependence: bool,
    /// Flush the result (and the report) to storage before returning, so that it survives a
    /// power cut; slower, off by default
    #[arg(long)]
    pub fsync: bool,
    /// CPU worker threads (default: all cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Progress bar on standard error: `auto` shows it on a terminal for work over a second
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    pub progress: ProgressArg,
    /// Nothing on standard error but errors
    #[arg(short, long)]
    pub quiet: bool,
    /// Containers (.npz, .safetensors): only the members whose name matches PATTERN (`*` any
    /// characters, `?` one); repeat for more
    #[arg(long = "member", value_name = "PATTERN")]
    pub members: Vec<String>,
    /// Containers: run the members both inputs hold and skip (but report) the ones only one
    /// holds, instead of failing (exit 5)
    #[arg(long)]
    pub skip_unpaired: bool,
    /// Containers: with --stats, also print every member's line and the totals' histogram
    #[arg(short, long)]
    pub verbose: bool,
    /// Compute only part K of N contiguous ranges of the result (1 <= K <= N), so that N runs,
    /// on one machine or many sharing a filesystem, compute one result together; it appears
    /// at -o PATH, whole, when the last part is done (docs/parts.md)
    #[arg(long, value_name = "K/N", conflicts_with_all = ["dry_run", "dxdispatch"])]
    pub part: Option<String>,
    /// Also write the job as a DxDispatch repro into this new directory: model.json, the inputs,
    /// expected.npy (the result) and README.txt (needs a DirectML feature level)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output", "dry_run"])]
    pub dxdispatch: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The DxDispatch model (.json)
    #[arg(value_name = "MODEL")]
    pub model: String,
    /// DirectML feature level every dispatch is checked against (any spelling `sub` accepts)
    #[arg(short = 'f', long, value_name = "L", default_value = "latest", value_parser = LevelParser,
          hide_possible_values = true)]
    pub feature_level: LevelChoice,
    /// Where the arithmetic runs
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    pub backend: BackendArg,
    /// With --backend directml: also compute the CPU reference for every dispatch and report
    /// whether DirectML's output is bit-identical (exit 4 where it is not)
    #[arg(long)]
    pub verify: bool,
    /// Write a JSON report of every dispatch's checks here (`-` = standard output)
    #[arg(long, value_name = "PATH")]
    pub report: Option<String>,
    /// The JSON report on standard output (the same as --report -)
    #[arg(long, conflicts_with = "report")]
    pub json: bool,
    /// Check every dispatch and write the report; run and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Folder for the model's source files (default: the model's folder, then the current one)
    #[arg(long, value_name = "DIR")]
    pub input_path: Option<std::path::PathBuf>,
    /// Folder writeFile targets are relative to (default: the current directory, as DxDispatch)
    #[arg(long, value_name = "DIR")]
    pub output_path: Option<std::path::PathBuf>,
    /// Flush written files to storage before returning
    #[arg(long)]
    pub fsync: bool,
    /// CPU worker threads (default: all cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// How float16 results are rounded, as for sub and sqdiff: nearest (the default; with
    /// --backend directml the rule of the DirectML release loaded), per-step, toward-zero-inf
    /// or toward-zero-saturate
    #[arg(long = "float16", value_enum, value_name = "RULE")]
    pub float16: Option<Float16Arg>,
    /// The DirectML release whose float16 answer to give (e.g. 1.8, 1.15.4), as for sub
    #[arg(long, value_name = "VERSION")]
    pub directml_version: Option<String>,
    /// Nothing on standard error but errors (not even the files writeFile wrote)
    #[arg(short, long)]
    pub quiet: bool,
    /// The most bytes the model's resources may take together (they are held in temporary
    /// files): bytes, or with a binary suffix (512M, 1.5G, 2GiB); a model asking for more is
    /// refused before anything is made. The default, 8 GiB, is more than any DirectML buffer
    /// tensor of 2^32 - 1 float16 elements needs, and far less than a hostile `valueCount` asks
    #[arg(long, value_name = "BYTES", default_value = "8G", value_parser = parse_size)]
    pub resource_limit: u64,
}

#[derive(Debug, Args)]
pub struct SupportArgs {
    /// Only this operator
    #[arg(long, value_enum)]
    pub op: Option<OpArg>,
    /// Only this feature level (any spelling `--feature-level` accepts)
    #[arg(short = 'f', long, value_name = "L", value_parser = LevelParser, hide_possible_values = true)]
    pub feature_level: Option<LevelChoice>,
    /// JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Nothing on standard error but errors
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// .npy files, or .npz and .safetensors containers (`-` = standard input)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,
    /// JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// Nothing on standard error but errors
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Nothing on standard error but errors
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BroadcastArg {
    Numpy,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    Cpu,
    Wgpu,
    /// DirectML through Direct3D 12 (Windows)
    Directml,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressArg {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OpArg {
    Sub,
    Sqdiff,
}

/// `--float16`: the float16 rounding rules (`op::Float16Rule`), spelt as the report spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Float16Arg {
    Nearest,
    PerStep,
    TowardZeroInf,
    TowardZeroSaturate,
    /// The name `toward-zero-inf` had before Direct3D's written rule was told apart from it.
    #[value(hide = true)]
    D3d,
}

/// A size in bytes: a whole number, or a number with a binary suffix `K`, `M`, `G` or `T`
/// (optionally followed by `iB` or `B`; 1K = 1024), as `tensorop-dask --split-above` takes it.
fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || format!("not a size: {text:?} (e.g. 1073741824, 512M, 1.5G, 2GiB)");
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_suffix("ib").or_else(|| t.strip_suffix('b')).unwrap_or(&t);
    let units = [('k', 1u64 << 10), ('m', 1 << 20), ('g', 1 << 30), ('t', 1 << 40)];
    match units.iter().find(|(c, _)| t.ends_with(*c)) {
        None => t.parse::<u64>().map_err(|_| bad()),
        Some((_, unit)) => {
            let n: f64 = t[..t.len() - 1].parse().map_err(|_| bad())?;
            let bytes = n * *unit as f64;
            if !(0.0..=u64::MAX as f64).contains(&bytes) {
                return Err(bad());
            }
            Ok(bytes as u64)
        }
    }
}

/// Parses a feature level in any accepted spelling, and offers the canonical names (`1_0` ...
/// `6_4`, `latest`, `none`) to shell completions.
#[derive(Debug, Clone, Copy)]
struct LevelParser;

impl TypedValueParser for LevelParser {
    type Value = LevelChoice;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<LevelChoice, clap::Error> {
        StringValueParser::new().try_map(|s| s.parse::<LevelChoice>()).parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let levels = FeatureLevel::ALL.iter().map(|l| PossibleValue::new(l.to_string()));
        Some(Box::new(levels.chain(["latest", "none"].map(PossibleValue::new))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// `--help`'s one-line exit summary names every status of the one list.
    #[test]
    fn help_names_every_exit_status() {
        let help = Cli::command().render_long_help().to_string();
        for s in crate::outcome::EXIT_STATUSES.iter().take(6) {
            assert!(help.contains(&format!("{} {}", s.code, s.name)), "--help lacks \"{} {}\"", s.code, s.name);
        }
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        for (text, bytes) in [("1700", 1700), ("8G", 8 << 30), ("512M", 512 << 20), ("1.5k", 1536), ("2GiB", 2 << 30)] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in ["", "G", "1.5", "-1G", "1X", "1e30T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        let cli = Cli::try_parse_from(["tensorop", "run", "m.json"]).unwrap();
        let Some(Command::Run(args)) = cli.command else { panic!() };
        assert_eq!(args.resource_limit, 8 << 30);
    }

    #[test]
    fn parses_levels_and_rejects_bad_values() {
        let cli = Cli::try_parse_from(["tensorop", "sub", "a", "b", "-f", "DML_FEATURE_LEVEL_3_1"]).unwrap();
        let Some(Command::Sub(args)) = cli.command else { panic!() };
        assert_eq!(args.feature_level.to_string(), "3_1");
        assert!(Cli::try_parse_from(["tensorop", "sub", "a", "b", "-f", "9_9"]).is_err());
        assert!(Cli::try_parse_from(["tensorop", "sub", "a", "b", "--threads", "0"]).is_err());
        assert!(Cli::try_parse_from(["tensorop", "sub", "a"]).is_err());
    }
}
