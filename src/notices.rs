//! What a `sub` or `sqdiff` run says on standard error besides errors and `--stats`, so that it
//! is never silent and never silently does nothing: the verdict of a dry run that passed, and
//! the flags that do nothing for the inputs given. `-q` silences both.

use crate::config::Config;
use crate::npy::input::InputTensor;
use crate::op::Float16Rule;
use crate::output::Destination;
use crate::plan::Plan;
use crate::spec::checks::Validation;
use crate::spec::level::LevelChoice;

/// `--device-dependence` on standard error: the counts in one line, and where the float16 rules
/// disagree, the rule this result follows and how to get another DirectML's.
pub(crate) fn device_dependence(cfg: &Config, d: &crate::verdict::conformant::Dependence) {
    eprintln!("tensorop: {}", d.line());
    if d.float16_rule > 0 {
        eprintln!(
            "tensorop: this result follows --float16 {}; where the rules disagree, DirectML gives another answer by \
             its release and device: --directml-version V (or --float16) gives release V's, and tensorop compare \
             --conformant accepts any",
            cfg.sem.float16.name()
        );
    }
}

/// What a dry run that passed would have done, for standard error: a dry run is never silent.
pub(crate) fn dry_run_verdict(cfg: &Config, plan: &Plan, validation: &Validation) -> String {
    let level = match cfg.level {
        LevelChoice::None => "with --feature-level none".to_string(),
        LevelChoice::Dml(l) => match validation.minimum_level {
            Some(oldest) if oldest == l => format!("at feature level {l}, the oldest that accepts these inputs"),
            Some(oldest) => format!("at feature level {l} (and at every level from {oldest})"),
            None => format!("at feature level {l}"),
        },
    };
    format!(
        "dry run: every check passes {level}; the result would be {} {} ({} bytes){}; nothing was computed or \
         written",
        plan.dtype.name(),
        crate::shape::fmt_shape(&plan.out_shape),
        plan.output_bytes(),
        match &cfg.output {
            Destination::Path(p) => format!(" at {}", p.display()),
            Destination::Stdout => String::new(),
        }
    )
}

/// Says on standard error (unless `--quiet`) which flags do nothing for these inputs: `--member`,
/// `--skip-unpaired` and `-v` for two `.npy` files, a float16 rule a flag named for a dtype it
/// does not apply to (`per-step`: float16 and bfloat16; the toward-zero rules: float16 alone).
/// A rule no flag named (the directml backend's own) is never warned about.
pub(crate) fn idle_flags(cfg: &Config, inputs: &[InputTensor]) {
    if cfg.quiet {
        return;
    }
    let mut idle = Vec::new();
    if !cfg.members.is_empty() {
        idle.push("--member");
    }
    if cfg.skip_unpaired {
        idle.push("--skip-unpaired");
    }
    if cfg.verbose {
        idle.push("--verbose");
    }
    for flag in idle {
        eprintln!(
            "tensorop: warning: {flag} applies to containers (.npz, .safetensors); it does nothing for two .npy files"
        );
    }
    use crate::npy::header::FileDType::Numeric;
    let rule = cfg.sem.float16;
    let to = match rule {
        _ if !cfg.float16_given => return,
        Float16Rule::Nearest => return,
        Float16Rule::PerStep => "float16 and bfloat16",
        Float16Rule::TowardZeroInf | Float16Rule::TowardZeroSaturate => "float16 (not bfloat16)",
    };
    let applies = |x: &InputTensor| matches!(x.header.dtype, Numeric(d) if rule.applies_to(d));
    if !inputs.iter().any(applies) {
        eprintln!("tensorop: warning: --float16 {} applies to {to}; it does nothing for these inputs", rule.name());
    }
}

/// What a `--part` run did and what remains: `part 2 of 4 done; parts 1 and 4 still to run
/// (the result appears at out.npy when the last is done)`, or that it was the last.
pub(crate) fn part_done(cfg: &Config, p: &crate::report::PartInfo) -> String {
    let out = cfg.output.label();
    if p.committed {
        return format!("part {} of {} done, the last: {out} holds the whole result", p.index, p.count);
    }
    let count: u64 = p.pending.iter().map(|[a, b]| b - a + 1).sum();
    let mut list: Vec<String> =
        p.pending.iter().take(6).map(|[a, b]| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    if p.pending.len() > 6 {
        list.push("...".into());
    }
    let pending = match (count, list.split_last()) {
        (0, _) | (_, None) => "the other parts are done; the part finishing beside this one commits it".to_string(),
        (1, _) => format!("part {} still to run", list[0]),
        (_, Some((last, []))) => format!("parts {last} still to run"),
        (n, Some((last, rest))) => format!("{n} parts, {} and {last}, still to run", rest.join(", ")),
    };
    format!("part {} of {} done; {pending} (the result appears at {out} when the last is done)", p.index, p.count)
}
