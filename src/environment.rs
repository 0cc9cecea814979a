//! Every environment variable the `tensorop` binary reads, in one list: the man page's
//! ENVIRONMENT section is generated from it, and a test holds `docs/cli.md`'s table
//! ("Environment") to it and every `TENSOROP_*` name in the source to it, so the documented
//! list cannot drift from what the code reads. The variables themselves are read where they
//! take effect (`Config::new`, the backends' settings), never below them.

/// One environment variable: its name, the values it takes, and what it does.
pub struct Variable {
    pub name: &'static str,
    /// The values it takes, for the table: `1`, `N`, `PATH`, `vulkan|metal|dx12|gl`.
    pub value: &'static str,
    pub effect: &'static str,
}

/// Every variable the binary reads, in the order the docs list them.
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "TMPDIR",
        value: "DIR",
        effect:
            "where anonymous temporary files go (copies of piped inputs, C-order copies of large Fortran-order inputs, \
                 unpacked compressed `.npz` members)",
    },
    Variable {
        name: "TENSOROP_NAMED_TEMPFILES",
        value: "1",
        effect: "write results into named temporary files beside the target instead of unnamed ones (`O_TMPFILE`), \
                 as on filesystems without them",
    },
    Variable {
        name: "TENSOROP_CPU_TIER",
        value: "portable|avx2|avx512",
        effect: "the highest CPU tier whose kernels the CPU backend and `--stats` use (default: the best the CPU \
                 has; a higher name than the CPU has changes nothing): every tier gives the same bits, and tests use \
                 it to cover the slower ones",
    },
    Variable {
        name: "TENSOROP_WGPU_BACKEND",
        value: "vulkan|metal|dx12|gl",
        effect: "the wgpu API to request instead of the platform's default",
    },
    Variable {
        name: "TENSOROP_WGPU_EMULATE",
        value: "1",
        effect: "mask the adapter's optional shader features, as on a device that has none; tests use it to cover the \
                 emulated paths",
    },
    Variable {
        name: "TENSOROP_WGPU_WIDE",
        value: "1",
        effect: "force the 64-bit offset path of outputs of 2^32 elements or more, for tests on small inputs",
    },
    Variable {
        name: "TENSOROP_WGPU_CHUNK_BYTES",
        value: "N",
        effect: "shrink the output chunk (default at most 4 MiB), so small tests cover many chunks",
    },
    Variable {
        name: "TENSOROP_WGPU_MAX_GROUPS",
        value: "N",
        effect: "cap the workgroups per dispatch dimension (default: the device's limit), so small tests cover the \
                 two-dimensional dispatch that larger chunks need",
    },
    Variable {
        name: "TENSOROP_WGPU_RESIDENT_BYTES",
        value: "N",
        effect: "shrink the bound (32 MiB) below which broadcast inputs are uploaded whole, so small tests cover \
                 windowed inputs",
    },
    Variable {
        name: "TENSOROP_WGSL_DIR",
        value: "DIR",
        effect: "builds with the `wgsl-mutants` feature only (the shader mutation runner): WGSL files there replace \
                 the compiled-in shaders; release builds ignore it",
    },
    Variable {
        name: "TENSOROP_DIRECTML_DLL",
        value: "PATH",
        effect: "the `DirectML.dll` the directml backend loads, instead of the one beside `tensorop.exe` or the \
                 system's; made absolute, and refused if there is no such file",
    },
    Variable {
        name: "TENSOROP_D3D12_DLL",
        value: "PATH",
        effect: "the `d3d12.dll` the directml backend loads instead of the system's (System32's, the only one it \
                 loads otherwise: never one beside `tensorop.exe` or in the current directory); made absolute, and \
                 refused if there is no such file; the report's `backend.d3d12` names the one loaded",
    },
    Variable {
        name: "TENSOROP_DIRECTML_DEBUG",
        value: "1",
        effect: "the directml backend turns on the Direct3D 12 debug layer (an error where it is not installed) and, \
                 where `DirectML.Debug.dll` is beside `DirectML.dll`, DirectML's debug device; any error message \
                 they report fails the run; the report's `backend.debug` says what was on",
    },
    Variable {
        name: "TENSOROP_DIRECTML_DISABLE_METACOMMANDS",
        value: "1",
        effect: "compile DirectML's operators with `DML_EXECUTION_FLAG_DISABLE_META_COMMANDS`: a driver's \
                 metacommands can change results by vendor; the report's `backend.execution_flags` says so",
    },
    Variable {
        name: "TENSOROP_DIRECTML_TIMEOUT_S",
        value: "SECONDS",
        effect: "the longest the directml backend waits for one dispatch (default 60): work that takes longer is \
                 an error naming the chunk and the device's state, never a hang",
    },
    Variable {
        name: "TENSOROP_DIRECTML_ADAPTER",
        value: "N",
        effect:
            "the DXGI adapter the directml backend runs on, by its index in `tensorop devices` (default: the first \
                 that is not a software adapter)",
    },
    Variable {
        name: "TENSOROP_DIRECTML_CHUNK_BYTES",
        value: "N",
        effect: "shrink the directml backend's output chunk (default at most 16 MiB), so small tests cover many \
                 dispatches",
    },
    Variable {
        name: "TENSOROP_DIRECTML_IN_FLIGHT",
        value: "1|2|3",
        effect: "the directml backend's chunks in flight at once (default 3; 1: one at a time, to compare)",
    },
];

/// Variables only the test suites read (they turn a skip into a failure, or name a binary);
/// the binary never reads them. `docs/testing.md` lists them.
#[cfg(test)]
pub const TEST_ONLY: &[&str] = &["TENSOROP_REQUIRE_GPU", "TENSOROP_REQUIRE_DIRECTML", "TENSOROP_TEST_DIRECTML_1_8"];

/// The list as a Markdown table, as `docs/cli.md` ("Environment") holds it.
#[cfg(test)]
pub fn markdown() -> String {
    let mut out = String::from("| variable | effect |\n|---|---|\n");
    for v in VARIABLES {
        let value = v.value.replace('|', "\\|");
        out.push_str(&format!("| `{}={value}` | {} |\n", v.name, v.effect));
    }
    out
}

/// The list as the man page's ENVIRONMENT section (roff).
pub fn roff() -> String {
    let mut out = String::from(".SH ENVIRONMENT\n");
    for v in VARIABLES {
        let effect = v.effect.replace('`', "").replace('\\', "\\e").replace('-', "\\-");
        out.push_str(&format!(".TP\n\\fB{}\\fR=\\fI{}\\fR\n{effect}\n", v.name, v.value.replace('-', "\\-")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn read(path: &str) -> String {
        let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
    }

    #[test]
    fn the_docs_table_is_the_list() {
        let table = markdown();
        assert!(
            read("docs/cli.md").contains(&table),
            "docs/cli.md's \"Environment\" table is not the list in src/environment.rs; it should read:\n{table}"
        );
    }

    /// Every `TENSOROP_*` name the source spells is in the list (or read by tests only), so a
    /// new variable cannot go undocumented.
    #[test]
    fn every_variable_in_the_source_is_listed() {
        let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
        let mut unlisted = Vec::new();
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for (i, _) in text.match_indices("\"TENSOROP_") {
                    let name: String = text[i + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit())
                        .collect();
                    let known = VARIABLES.iter().any(|v| v.name == name) || TEST_ONLY.contains(&name.as_str());
                    if !known && !name.ends_with('_') {
                        unlisted.push(format!("{}: {name}", path.display()));
                    }
                }
            }
        }
        assert!(unlisted.is_empty(), "not in src/environment.rs: {unlisted:?}");
    }
}
