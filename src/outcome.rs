//! How a run ended, for every kind of run (`sub`/`sqdiff` on a pair, on containers, in parts,
//! with `--dxdispatch`, and `tensorop run`): one [`Outcome`], its one mapping to the exit status
//! (`docs/cli.md`, "Exit status"), how it is told on standard error, and how the report is
//! delivered beside it.

use crate::backend::directml::verify::Verified;
use crate::output::{BrokenPipe, Destination, Staged};
use crate::report::RunStatus;
use anyhow::{Context, Result};

/// How a run ended.
#[derive(Debug)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// A check failed: exit 3. Holds the failed checks' messages, one per line.
    Invalid(String),
    /// A runtime error: exit 1.
    Error(anyhow::Error),
    /// Containers: members that only one input holds, without `--skip-unpaired`: exit 5.
    Unpaired(String),
    /// A request that cannot be carried out, found once the inputs were read (a container
    /// output for two `.npy` files, a `--report` naming a model's file): a usage error, exit 2.
    /// Holds the whole message.
    Refused(String),
    /// `--verify`: the run completed, and DirectML's output differs from the CPU's reference:
    /// exit 4, as `compare` gives for results that differ. Holds how.
    Differs(String),
}

impl Outcome {
    /// The outcome of a run that completed with `--verify`'s verdict `v` (if any): success where
    /// DirectML's output is the reference's, bit for bit; otherwise exit 4 and what differs.
    pub fn verified(v: Option<&Verified>) -> Outcome {
        match v {
            Some(v) if !v.identical => Outcome::Differs(v.describe()),
            _ => Outcome::Ok,
        }
    }

    /// `--verify`: the outcome of a run that got as far as computing (succeeded, failed, or was
    /// told its output differs), with `verified` (its verdict, or `empty` where none came back)
    /// counted against the `elements` it was to compare; a run whose verdict is not identical,
    /// because it differs or stopped early, does not succeed. Other outcomes are as they were.
    pub fn with_verdict(
        self,
        verified: &mut Option<Verified>,
        elements: u64,
        empty: impl FnOnce() -> Verified,
    ) -> Outcome {
        if !matches!(self, Outcome::Ok | Outcome::Error(_) | Outcome::Differs(_)) {
            return self;
        }
        let v = verified.take().unwrap_or_else(empty).expecting(elements);
        let outcome = match self {
            Outcome::Ok => Outcome::verified(Some(&v)),
            other => other,
        };
        *verified = Some(v);
        outcome
    }

    /// The process's exit status for this outcome. (An interruption by a signal exits from the
    /// signal handler, with the status its system's tools use: `sys::on_interruption`.)
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Error(_) => 1,
            Outcome::Refused(_) => 2,
            Outcome::Invalid(_) => 3,
            Outcome::Differs(_) => 4,
            Outcome::Unpaired(_) => 5,
        }
    }

    /// A run's result as an outcome: an error is a runtime error, except that the reader of
    /// standard output going away ends the run early, as intended, with success (a
    /// `BrokenPipe`, which only writers of standard output give; a FIFO or socket named by a
    /// path whose reader leaves is an error).
    pub fn of(result: Result<Outcome>) -> Outcome {
        match result {
            Ok(o) => o,
            Err(e) if e.is::<BrokenPipe>() => Outcome::Ok,
            Err(e) => Outcome::Error(e),
        }
    }

    /// The report's `status` and `error`. A refusal is reported as the failure it refuses
    /// (`invalid`); a run whose `--verify` found differences completed (`ok`: its `verify` key
    /// says how they differ).
    pub fn status(&self) -> (RunStatus, Option<String>) {
        match self {
            Outcome::Ok | Outcome::Differs(_) => (RunStatus::Ok, None),
            Outcome::Invalid(msg) | Outcome::Refused(msg) => (RunStatus::Invalid, Some(msg.clone())),
            Outcome::Error(e) => (RunStatus::Error, Some(format!("{e:#}"))),
            Outcome::Unpaired(msg) => (RunStatus::Unpaired, Some(msg.clone())),
        }
    }

    /// Says on standard error how the run ended, unless it succeeded. `not_done` says what a
    /// failed check prevented ("nothing was computed").
    pub fn tell(&self, not_done: &str) {
        match self {
            Outcome::Ok => {}
            Outcome::Invalid(msg) => {
                eprintln!("tensorop: validation failed ({not_done}):");
                for line in msg.lines() {
                    eprintln!("  {line}");
                }
            }
            Outcome::Error(e) => eprintln!("tensorop: error: {e:#}"),
            Outcome::Unpaired(msg) => eprintln!("tensorop: {msg}"),
            Outcome::Refused(msg) => eprintln!("tensorop: usage error: {msg}"),
            Outcome::Differs(msg) => eprintln!("tensorop: {msg}"),
        }
    }

    /// Writes the report (when asked for: `report`) with `write` and returns the outcome: a
    /// failure to write it fails a run that succeeded, and is printed beside the error of one
    /// that failed.
    pub fn with_report(
        self,
        report: Option<(&Destination, Staged)>,
        write: impl FnOnce(Staged) -> Result<()>,
    ) -> Outcome {
        let Some((dest, sink)) = report else { return self };
        match (write(sink).with_context(|| format!("report {}", dest.label())), self) {
            (Ok(()), outcome) => outcome,
            (Err(e), Outcome::Ok | Outcome::Differs(_)) => Outcome::Error(e),
            (Err(e), other) => {
                eprintln!("tensorop: error: {e:#}");
                other
            }
        }
    }
}

/// One exit status the tool gives, for the documented tables.
pub struct ExitStatus {
    /// `0`, `128 + N`, `0xC000013A`.
    pub code: &'static str,
    /// What it means, in the words every table starts its row with.
    pub name: &'static str,
    /// When it happens.
    pub detail: &'static str,
}

/// Every exit status, in order: [`Outcome::exit_code`] gives 0 to 5, signals the rest. The man
/// page's EXIT STATUS section is generated from this list; tests hold the tables of the README,
/// `docs/cli.md` and `docs/report.md` to it.
pub const EXIT_STATUSES: &[ExitStatus] = &[
    ExitStatus {
        code: "0",
        name: "success",
        detail: "with --dry-run: every check passed; also when the reader of standard output closed it early (| head)",
    },
    ExitStatus {
        code: "1",
        name: "runtime error",
        detail: "unreadable or malformed input, I/O failure, refused output path, backend failure",
    },
    ExitStatus {
        code: "2",
        name: "usage error",
        detail: "a bad flag, value or combination, decided before any work (or, for an output a pair of inputs \
                 cannot fill, once their first bytes are read)",
    },
    ExitStatus {
        code: "3",
        name: "validation failure",
        detail: "a check of the chosen feature level failed; nothing was computed, nothing written but the report",
    },
    ExitStatus {
        code: "4",
        name: "results differ",
        detail:
            "compare: the files differ beyond the tolerances given, or in shape; --verify: DirectML's output is not \
                 verified identical to the CPU reference (DirectML's result was written)",
    },
    ExitStatus {
        code: "5",
        name: "unpaired members",
        detail: "containers: members only one input holds, or whose shape changed, without --skip-unpaired; nothing \
                 was computed, nothing written but the report",
    },
    ExitStatus {
        code: "128 + N",
        name: "ended by signal N",
        detail: "130 (SIGINT, Ctrl-C), 143 (SIGTERM), 129 (SIGHUP); temporary files removed, targets as they were",
    },
    ExitStatus {
        code: "0xC000013A",
        name: "ended by Ctrl-C on Windows",
        detail:
            "Ctrl-C, Ctrl-Break or the console's closing (STATUS_CONTROL_C_EXIT); temporary files removed, targets \
                 as they were",
    },
];

/// The list as the man page's EXIT STATUS section (roff).
pub fn exit_statuses_roff() -> String {
    let esc = |t: &str| t.replace('\\', "\\e").replace('-', "\\-").replace('\'', "\\(aq");
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for s in EXIT_STATUSES {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}: {}\n", esc(s.code), esc(s.name), esc(s.detail)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str) -> String {
        let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
    }

    /// The rows of the first Markdown table after `heading` in `doc`: its cells, trimmed.
    fn table(doc: &str, heading: &str) -> Vec<Vec<String>> {
        let text = read(doc);
        let start = text.find(heading).unwrap_or_else(|| panic!("{doc} has no {heading:?}"));
        text[start..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .map(|l| l.replace("\\|", "¦").split('|').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect())
            .collect()
    }

    fn every_outcome() -> Vec<Outcome> {
        let m = || "m".to_string();
        vec![
            Outcome::Ok,
            Outcome::Error(anyhow::anyhow!("e")),
            Outcome::Refused(m()),
            Outcome::Invalid(m()),
            Outcome::Differs(m()),
            Outcome::Unpaired(m()),
        ]
    }

    #[test]
    fn every_outcome_has_a_listed_exit_status() {
        for o in every_outcome() {
            let code = o.exit_code().to_string();
            assert!(EXIT_STATUSES.iter().any(|s| s.code == code), "{o:?} exits {code}, which is not listed");
        }
    }

    /// The exit tables of the README and `docs/cli.md` list every status, in order, each row
    /// starting with its name.
    #[test]
    fn the_documented_exit_tables_are_the_list() {
        for (doc, heading) in [("README.md", "## Exit codes"), ("docs/cli.md", "## Exit status")] {
            let rows = table(doc, heading);
            let codes: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
            let listed: Vec<&str> = EXIT_STATUSES.iter().map(|s| s.code).collect();
            assert_eq!(codes, listed, "{doc}'s exit table lists other statuses than src/outcome.rs");
            for (row, s) in rows.iter().zip(EXIT_STATUSES) {
                assert!(
                    row[1].starts_with(s.name),
                    "{doc}: exit {} should start with {:?}: {:?}",
                    s.code,
                    s.name,
                    row[1]
                );
            }
        }
    }

    /// `docs/report.md`'s outcome table has a row for every outcome a pair's run can end with,
    /// with the exit status and the report's `status` the code gives it.
    #[test]
    fn the_report_outcome_table_is_the_mapping() {
        let rows = table("docs/report.md", "## Outcomes at a glance");
        for o in every_outcome().into_iter().filter(|o| !matches!(o, Outcome::Unpaired(_))) {
            let code = o.exit_code().to_string();
            let status = serde_json::to_value(o.status().0).map(|v| v.as_str().unwrap_or_default().to_string());
            let status = format!("`{}`", status.unwrap_or_default());
            assert!(
                rows.iter().any(|r| r.len() > 2 && r[1] == code && r[2] == status),
                "docs/report.md's outcome table has no row with exit {code} and status {status} ({o:?})"
            );
        }
        for r in &rows {
            assert!(EXIT_STATUSES.iter().any(|s| s.code == r[1]), "docs/report.md lists exit {}", r[1]);
        }
    }

    #[test]
    fn the_man_page_section_lists_every_status() {
        let roff = exit_statuses_roff();
        for s in EXIT_STATUSES {
            assert!(roff.contains(&format!("\\fB{}\\fR", s.code.replace('-', "\\-"))), "{}", s.code);
        }
    }
}
