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
/// (its description, synopsis and options), then examples, the environment and the exit status
/// (the last two from the lists in [`crate::environment`] and [`crate::outcome`]).
fn man_page(mut cmd: clap::Command, out: &mut dyn Write) -> io::Result<()> {
    cmd.build();
    let mut page = Vec::new();
    let top = clap_mangen::Man::new(cmd.clone());
    top.render_title(&mut page)?;
    top.render_name_section(&mut page)?;
    writeln!(page, ".SH SYNOPSIS\n{}", synopsis("tensorop", &cmd))?;
    top.render_description_section(&mut page)?;
    top.render_options_section(&mut page)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        let name = sub.get_bin_name().unwrap_or_else(|| sub.get_name()).to_string();
        writeln!(page, ".SH \"{}\"", name.to_uppercase())?;
        let man = clap_mangen::Man::new(sub.clone());
        let mut section = Vec::new();
        man.render_description_section(&mut section)?;
        writeln!(section, ".SS SYNOPSIS\n{}", synopsis(&name, sub))?;
        man.render_options_section(&mut section)?;
        // Inside a command's section, its parts are subsections.
        let section =
            String::from_utf8_lossy(&section).replace(".SH DESCRIPTION\n", "").replace(".SH OPTIONS", ".SS OPTIONS");
        page.extend_from_slice(section.as_bytes());
    }
    page.extend_from_slice(EXAMPLES.as_bytes());
    page.extend_from_slice(crate::environment::roff().as_bytes());
    page.extend_from_slice(crate::outcome::exit_statuses_roff().as_bytes());
    top.render_version_section(&mut page)?;
    out.write_all(&page)?;
    out.flush()
}

/// A command's synopsis in roff, every option with its value's name (`[-o|--output PATH]`) and
/// every operand as it repeats (`REPORT...`), which clap's own man synopsis leaves out.
fn synopsis(name: &str, cmd: &clap::Command) -> String {
    let bold = |t: &str| format!("\\fB{}\\fR", roff(t));
    let italic = |t: &str| format!("\\fI{}\\fR", roff(t));
    let (mut words, mut operands) = (vec![bold(name)], Vec::new());
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let repeats = matches!(arg.get_action(), clap::ArgAction::Append);
        let value = arg.get_value_names().and_then(|v| v.first()).map(|v| v.to_string());
        let takes_value = arg.get_action().takes_values();
        if arg.is_positional() {
            let v = italic(&value.unwrap_or_else(|| arg.get_id().to_string()));
            let v =
                if repeats || arg.get_num_args().is_some_and(|n| n.max_values() > 1) { format!("{v}...") } else { v };
            operands.push(if arg.is_required_set() { v } else { format!("[{v}]") });
            continue;
        }
        let mut flags: Vec<String> = Vec::new();
        if let Some(c) = arg.get_short() {
            flags.push(bold(&format!("-{c}")));
        }
        if let Some(l) = arg.get_long() {
            flags.push(bold(&format!("--{l}")));
        }
        let mut word = flags.join("|");
        if takes_value {
            word.push(' ');
            word.push_str(&italic(&value.unwrap_or_else(|| arg.get_id().to_string().to_uppercase())));
        }
        let word = if repeats { format!("{word}...") } else { word };
        words.push(if arg.is_required_set() { word } else { format!("[{word}]") });
    }
    if cmd.has_subcommands() {
        operands.push(italic("COMMAND"));
    }
    words.extend(operands);
    words.join(" ")
}

/// `text` with roff's special characters escaped (`-` as `\-`).
fn roff(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

/// The man page's EXAMPLES: the README's main job and one command of each kind.
const EXAMPLES: &str = r#".SH EXAMPLES
.TP
\fBtensorop sqdiff testdata/a.npy testdata/b.npy \-o out.npy \-\-report report.json\fR
The squared difference of two arrays, checked against the newest DirectML feature level, with a JSON report.
.TP
\fBtensorop sub a.npy b.npy \-o diff.npy \-f 3_1 \-\-stats\fR
The difference at feature level 3_1, with exact statistics of the result on standard error.
.TP
\fBtensorop sqdiff old.safetensors new.safetensors \-o /dev/null \-\-stats\fR
Which members of two checkpoints differ, and how much.
.TP
\fBtensorop compare out.npy expected.npy \-\-ulps 1\fR
Whether two results are bit\-identical, or within one unit in the last place.
.TP
\fBtensorop sub a.npy b.npy \-\-dry\-run \-\-json\fR
Only the checks and the DirectML descriptors, as JSON on standard output.
.TP
\fBtensorop \-\-generate complete\-bash > /etc/bash_completion.d/tensorop\fR
Shell completion for bash.
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
        for code in ["0", "1", "2", "3", "4", "5", "128 + N"] {
            assert!(text.contains(&format!(".TP\n\\fB{code}\\fR\n")), "EXIT STATUS lacks {code}");
        }
        for sec in [".SH EXAMPLES", ".SH ENVIRONMENT", "\\fBTENSOROP_DIRECTML_DLL\\fR"] {
            assert!(text.contains(sec), "the man page lacks {sec}");
        }
        // Options with their values' names, operands as they repeat.
        assert!(text.contains("[\\fB\\-\\-generate\\fR \\fIKIND\\fR]"), "no value name for --generate");
        assert!(text.contains("[\\fB\\-o\\fR|\\fB\\-\\-output\\fR \\fIPATH\\fR]"), "no value name for -o");
        assert!(text.contains("[\\fB\\-\\-member\\fR \\fIPATTERN\\fR...]"), "--member does not repeat");
        assert!(text.contains("\\fIREPORT\\fR..."), "merge-stats does not take several reports");
    }
}
