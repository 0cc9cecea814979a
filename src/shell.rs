//! Shell integration: completion scripts for bash, zsh, fish, elvish and PowerShell, and the man
//! page, all generated from the clap definitions in [`crate::cli`] (`tensorop --generate KIND`),
//! so they can never disagree with the parser. See `docs/cli.md`, "Shell integration".

use crate::cli::{Cli, Generate};
use clap::CommandFactory;
use clap_complete::Shell;
use std::io::{self, Write};

/// Writes what `kind` asks for to `out`.
pub fn generate(kind: Generate, out: &mut dyn Write) -> io::Result<()> {
    let mut cmd = Cli::command();
    let shell = match kind {
        Generate::Man => return man_page(cmd, out),
        Generate::CompleteBash => Shell::Bash,
        Generate::CompleteZsh => Shell::Zsh,
        Generate::CompleteFish => Shell::Fish,
        Generate::CompleteElvish => Shell::Elvish,
        Generate::CompletePowershell => Shell::PowerShell,
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "tensorop", &mut buf);
    out.write_all(&buf)?;
    out.flush()
}

/// One page for the whole tool: the top-level synopsis and options, then a section per command
/// (its description, synopsis and options), then the exit status.
fn man_page(mut cmd: clap::Command, out: &mut dyn Write) -> io::Result<()> {
    cmd.build();
    let mut page = Vec::new();
    let top = clap_mangen::Man::new(cmd.clone());
    top.render_title(&mut page)?;
    top.render_name_section(&mut page)?;
    top.render_synopsis_section(&mut page)?;
    top.render_description_section(&mut page)?;
    top.render_options_section(&mut page)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        let name = sub.get_bin_name().unwrap_or_else(|| sub.get_name()).to_string();
        writeln!(page, ".SH \"{}\"", name.to_uppercase())?;
        let man = clap_mangen::Man::new(sub.clone());
        let mut section = Vec::new();
        man.render_description_section(&mut section)?;
        man.render_synopsis_section(&mut section)?;
        man.render_options_section(&mut section)?;
        // Inside a command's section, its parts are subsections.
        let section = String::from_utf8_lossy(&section)
            .replace(".SH DESCRIPTION\n", "")
            .replace(".SH SYNOPSIS", ".SS SYNOPSIS")
            .replace(".SH OPTIONS", ".SS OPTIONS");
        page.extend_from_slice(section.as_bytes());
    }
    page.extend_from_slice(EXIT_STATUS.as_bytes());
    top.render_version_section(&mut page)?;
    out.write_all(&page)?;
    out.flush()
}

const EXIT_STATUS: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
success (for \fB\-\-dry\-run\fR: every check passed)
.TP
\fB1\fR
runtime error: unreadable or malformed input, I/O failure, backend failure
.TP
\fB2\fR
usage error: a bad flag or value
.TP
\fB3\fR
validation failure: a check of the chosen feature level failed; nothing was computed
.TP
\fB128+N\fR
ended by signal N (130 for Ctrl\-C); no output was written
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_kind_names_every_command() {
        for kind in Generate::value_variants() {
            let mut out = Vec::new();
            generate(*kind, &mut out).expect("generate");
            let text = String::from_utf8(out).expect("UTF-8");
            for sub in ["sub", "sqdiff", "support", "info", "devices"] {
                assert!(text.contains(sub), "{kind:?} does not name {sub}");
            }
            assert!(text.contains("feature-level") || text.contains("feature\\-level"), "{kind:?}");
        }
    }

    #[test]
    fn the_man_page_has_a_section_per_command() {
        let mut out = Vec::new();
        generate(Generate::Man, &mut out).expect("generate");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(text.contains("\n.TH tensorop 1 "), "no title line");
        for sec in
            ["TENSOROP SUB", "TENSOROP SQDIFF", "TENSOROP SUPPORT", "TENSOROP INFO", "TENSOROP DEVICES", "EXIT STATUS"]
        {
            assert!(text.contains(&format!(".SH \"{sec}\"")), "missing section {sec}");
        }
    }
}
