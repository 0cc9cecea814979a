//! The usage rules every command shares, decided before any work (exit 2, `docs/cli.md`, "Exit
//! status"): standard input named at most once and never read from a terminal, and the hints
//! for the mistakes clap alone words poorly (a third path where `-o` was meant, a `--generate`
//! kind without its prefix).

use crate::cli::{Command, Generate};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::ValueEnum;

/// The operands of `command` that read standard input (`-`), with what each is.
fn stdin_operands(command: &Command) -> Vec<&str> {
    let mut named: Vec<&str> = match command {
        Command::Sub(a) | Command::Sqdiff(a) => vec![&a.a, &a.b],
        Command::Info(a) => a.files.iter().map(String::as_str).collect(),
        Command::Compare(a) => {
            let mut v = vec![a.a.as_str()];
            v.extend(a.b.as_deref());
            v.extend(a.conformant.iter().flatten().skip(1).map(String::as_str));
            v
        }
        Command::MergeStats(a) => a.reports.iter().map(String::as_str).collect(),
        Command::Run(a) => vec![&a.model],
        Command::Support(_) | Command::Devices(_) => vec![],
    };
    named.retain(|n| *n == "-");
    named
}

/// Refuses, before any work, what no command can do with standard input: read it twice, or
/// read it from a terminal, where a `.npy` cannot be typed (as a result is never written to
/// one). `stdin_is_terminal` is passed in so the rule is testable.
pub(super) fn refuse_stdin(command: &Command, stdin_is_terminal: bool) -> Result<(), String> {
    let named = stdin_operands(command).len();
    if named > 1 {
        return Err("standard input can be read only once; name '-' at most once and give a path for the rest".into());
    }
    if named == 1 && stdin_is_terminal {
        return Err("'-' reads standard input, which is a terminal here: pipe or redirect a file into tensorop \
                    (e.g. `< a.npy` or `cat a.npy |`), or name the file instead of '-'"
            .into());
    }
    Ok(())
}

/// A better word than clap's for a parse error, where there is one: a third path given to
/// `sub` or `sqdiff` (the output, without `-o`), and a `--generate` kind missing its
/// `complete-` prefix or misspelt.
pub(super) fn hint(error: &clap::Error, subcommand: Option<&str>) -> Option<String> {
    let value = |kind| match error.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    match error.kind() {
        ErrorKind::UnknownArgument if matches!(subcommand, Some("sub" | "sqdiff")) => {
            let arg = value(ContextKind::InvalidArg)?;
            if arg.starts_with('-') && arg != "-" {
                return None;
            }
            let op = subcommand.unwrap_or("sub");
            Some(format!(
                "unexpected argument '{arg}': {op} takes two inputs, A and B; to write the result to {arg}, use \
                 -o {arg}\n\nUsage: tensorop {op} A B [-o OUT] [OPTIONS]"
            ))
        }
        ErrorKind::InvalidValue => {
            let arg = value(ContextKind::InvalidArg)?;
            if !arg.starts_with("--generate") {
                return None;
            }
            let given = value(ContextKind::InvalidValue)?;
            let kinds: Vec<String> = Generate::value_variants()
                .iter()
                .filter_map(|k| k.to_possible_value().map(|p| p.get_name().to_string()))
                .collect();
            let nearest = nearest(&given, &kinds)?;
            Some(format!(
                "--generate {given}: no such kind; did you mean --generate {nearest}? (kinds: {})",
                kinds.join(", ")
            ))
        }
        _ => None,
    }
}

/// The kind `given` most likely meant: one that ends with it (`bash` for `complete-bash`), else
/// the closest by edit distance, if any is close.
fn nearest<'a>(given: &str, kinds: &'a [String]) -> Option<&'a str> {
    let g = given.to_ascii_lowercase();
    if g.is_empty() {
        return None;
    }
    if let Some(k) = kinds.iter().find(|k| k.ends_with(&format!("-{g}")) || k.starts_with(&g)) {
        return Some(k);
    }
    kinds
        .iter()
        .map(|k| (distance(&g, k.strip_prefix("complete-").unwrap_or(k)).min(distance(&g, k)), k))
        .filter(|(d, _)| *d <= 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// Levenshtein distance between two short strings.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn command(args: &[&str]) -> Command {
        let mut argv = vec!["tensorop"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv) {
            Ok(Cli { command: Some(c), .. }) => c,
            other => panic!("{args:?} does not parse: {other:?}"),
        }
    }

    fn parse_error(args: &[&str]) -> (clap::Error, Option<String>) {
        let mut argv = vec!["tensorop"];
        argv.extend_from_slice(args);
        let e = Cli::try_parse_from(argv).expect_err("a parse error");
        (e, args.first().map(|s| s.to_string()))
    }

    #[test]
    fn standard_input_is_read_once_and_never_from_a_terminal() {
        for args in [&["info", "-", "-"][..], &["compare", "-", "-"], &["merge-stats", "-", "-"], &["sub", "-", "-"]] {
            let e = refuse_stdin(&command(args), false).expect_err("refused");
            assert!(e.contains("only once"), "{args:?}: {e}");
        }
        for args in [&["info", "-"][..], &["sub", "-", "b.npy"], &["compare", "a.npy", "-"], &["merge-stats", "-"]] {
            assert!(refuse_stdin(&command(args), false).is_ok(), "{args:?} from a pipe");
            let e = refuse_stdin(&command(args), true).expect_err("a terminal is refused");
            assert!(e.contains("terminal") && e.contains("< a.npy"), "{args:?}: {e}");
        }
        assert!(refuse_stdin(&command(&["info", "a.npy"]), true).is_ok(), "no '-', no rule");
    }

    #[test]
    fn a_third_path_suggests_dash_o() {
        let (e, sub) = parse_error(&["sub", "a.npy", "b.npy", "c.npy"]);
        let h = hint(&e, sub.as_deref()).expect("a hint");
        assert!(h.contains("use -o c.npy"), "{h}");
        assert!(!h.contains("--output <PATH>"), "the usage line shows -o as optional: {h}");
        let (e, sub) = parse_error(&["sqdiff", "a.npy", "b.npy", "--nonsense"]);
        assert_eq!(hint(&e, sub.as_deref()), None, "an unknown flag keeps clap's own message");
    }

    #[test]
    fn generate_suggests_the_nearest_kind() {
        for (given, meant) in [("bash", "complete-bash"), ("zsh", "complete-zsh"), ("powershel", "complete-powershell")]
        {
            let (e, _) = parse_error(&["--generate", given]);
            let h = hint(&e, None).expect("a hint");
            assert!(h.contains(&format!("did you mean --generate {meant}?")), "{given}: {h}");
        }
        let (e, _) = parse_error(&["--generate", "xyzzy-quux"]);
        assert_eq!(hint(&e, None), None, "nothing near: clap's list of kinds");
    }
}
