//! Shell integration, end to end: `tensorop --generate KIND` prints a man page and completion
//! scripts for bash, zsh, fish, elvish and PowerShell. Each must parse in its own shell (or
//! formatter) and name every command; bash and fish are also asked for real completions.
//!
//! A shell or tool that is not installed makes its test print why it skips, unless
//! `TENSOROP_REQUIRE_SHELLS=1` (as CI sets, after installing them) makes that a failure.
//! PowerShell has no Debian package, so its script is checked by its structure only.

use crate::common::*;
use std::path::Path;
use std::process::Command;

const COMMANDS: [&str; 5] = ["sub", "sqdiff", "support", "info", "devices"];

/// The text `tensorop --generate kind` prints, checked to exit 0 with nothing on stderr.
fn generate(kind: &str) -> String {
    let out = Dir::new().run(&["--generate", kind]);
    out.ok();
    assert_eq!(out.stderr, "", "--generate {kind} wrote to stderr");
    let text = out.stdout_str();
    for c in COMMANDS {
        assert!(text.contains(c), "--generate {kind} does not name the command {c}");
    }
    text
}

/// Whether `tool` runs here; a missing one fails when TENSOROP_REQUIRE_SHELLS=1.
fn have(tool: &str, test: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
        || skip(test, "TENSOROP_REQUIRE_SHELLS", &format!("{tool} is not installed"))
}

/// Runs `tool args`, returning stdout; panics with stderr unless it succeeds.
fn run_tool(tool: &str, args: &[&str], dir: &Path) -> String {
    let out = Command::new(tool).args(args).current_dir(dir).output().unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(
        out.status.success(),
        "`{tool} {}` failed: {}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn generate_refuses_unknown_kinds_and_other_arguments() {
    let d = Dir::new();
    d.run(&["--generate", "complete-tcsh"]).expect_code(2).stderr_mentions("complete-bash");
    d.run(&["--generate", "man", "support"]).expect_code(2);
    // No command at all: the help, as a usage error.
    d.run(&[]).expect_code(2).stderr_mentions("--generate");
}

#[test]
fn bash_completion_parses_and_completes_commands_and_levels() {
    let script = generate("complete-bash");
    if !have("bash", "bash_completion_parses_and_completes_commands_and_levels") {
        return;
    }
    let d = Dir::new();
    d.write("c.bash", script.as_bytes());
    run_tool("bash", &["-n", "c.bash"], d.root());
    let probe = r#"source ./c.bash
COMP_WORDS=(tensorop sq); COMP_CWORD=1; _tensorop tensorop sq tensorop; echo "cmd: ${COMPREPLY[*]}"
COMP_WORDS=(tensorop sub -f ""); COMP_CWORD=3; _tensorop tensorop "" -f; echo "level: ${COMPREPLY[*]}"
COMP_WORDS=(tensorop sub a b --backend ""); COMP_CWORD=5; _tensorop tensorop "" --backend; echo "backend: ${COMPREPLY[*]}""#;
    let got = run_tool("bash", &["-c", probe], d.root());
    assert!(got.contains("cmd: sqdiff\n"), "{got}");
    assert!(got.contains("level: 1_0 2_0 2_1 3_0 3_1 4_0 4_1 5_0 5_1 5_2 6_0 6_1 6_2 6_3 6_4 latest none\n"), "{got}");
    assert!(got.contains("backend: cpu wgpu directml\n"), "{got}");
}

#[test]
fn zsh_completion_parses() {
    let script = generate("complete-zsh");
    assert!(script.starts_with("#compdef tensorop"), "zsh completion must start with #compdef");
    if !have("zsh", "zsh_completion_parses") {
        return;
    }
    let d = Dir::new();
    d.write("_tensorop", script.as_bytes());
    run_tool("zsh", &["-n", "_tensorop"], d.root());
}

#[test]
fn fish_completion_parses_and_completes() {
    let script = generate("complete-fish");
    if !have("fish", "fish_completion_parses_and_completes") {
        return;
    }
    let d = Dir::new();
    d.write("c.fish", script.as_bytes());
    run_tool("fish", &["--no-execute", "c.fish"], d.root());
    let got = run_tool(
        "fish",
        &["-c", "source c.fish; complete -C 'tensorop sq'; complete -C 'tensorop sub a b --feature-level 6_'"],
        d.root(),
    );
    assert!(got.lines().any(|l| l.starts_with("sqdiff\t")), "{got}");
    for level in ["6_0", "6_4"] {
        assert!(got.lines().any(|l| l == level), "{level} not offered: {got}");
    }
}

#[test]
fn elvish_completion_compiles() {
    let script = generate("complete-elvish");
    assert!(script.contains("edit:completion:arg-completer[tensorop]"));
    if !have("elvish", "elvish_completion_compiles") {
        return;
    }
    // The `edit:` module exists only in an interactive shell: compile the script against a
    // stand-in map, so every other line is checked.
    let d = Dir::new();
    let standalone =
        format!("var arg-completer = [&]\n{}", script.replace("edit:completion:arg-completer", "arg-completer"));
    d.write("c.elv", standalone.as_bytes());
    run_tool("elvish", &["-compileonly", "c.elv"], d.root());
}

#[test]
fn powershell_completion_registers_every_command() {
    let script = generate("complete-powershell");
    assert!(script.contains("Register-ArgumentCompleter -Native -CommandName 'tensorop'"), "{script}");
    for c in COMMANDS {
        assert!(script.contains(&format!("'tensorop;{c}'")), "no completions after `tensorop {c}`");
    }
    assert!(script.contains("'latest'") || script.contains("latest"), "levels offered");
}

#[test]
fn man_page_renders_without_warnings_and_documents_every_command() {
    let page = generate("man");
    assert!(page.starts_with(".ie") || page.starts_with(".TH"), "not roff: {}", &page[..40.min(page.len())]);
    if !have("groff", "man_page_renders_without_warnings_and_documents_every_command") {
        return;
    }
    let d = Dir::new();
    d.write("tensorop.1", page.as_bytes());
    let out = Command::new("groff").args(["-man", "-Tutf8", "-ww", "-z", "tensorop.1"]).current_dir(d.root()).output();
    let out = out.expect("groff");
    assert!(out.status.success() && out.stderr.is_empty(), "groff: {}", String::from_utf8_lossy(&out.stderr));
    let text = run_tool("groff", &["-man", "-Tutf8", "-P-cbou", "tensorop.1"], d.root());
    for c in COMMANDS {
        assert!(text.contains(&format!("TENSOROP {}", c.to_uppercase())), "no section for {c}");
    }
    for needle in ["--feature-level", "--report", "--generate", "EXIT STATUS", "128 + N", "EXAMPLES", "ENVIRONMENT"] {
        assert!(text.contains(needle), "the rendered page lacks {needle:?}");
    }
    if have("man", "man_page_renders_without_warnings_and_documents_every_command") {
        let shown = run_tool("man", &["-l", "tensorop.1"], d.root());
        assert!(shown.contains("TENSOROP SQDIFF"), "man -l: {shown}");
    }
}
