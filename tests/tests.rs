//! The end-to-end tests, built as one test binary: one module per area, each in its own file
//! (`docs/testing.md` says what each covers), and the shared helpers in `common`, compiled
//! once. `cargo test --release --test tests results::` runs one area.
//!
//! The tests of every area run on parallel threads of this one process, so none may change
//! process-wide state (environment variables, the current directory, signal dispositions): a
//! test passes what a run needs to the child's `Command` instead.

mod common;

mod backends;
mod checks;
mod commands;
mod compare;
mod containers;
mod crosscheck;
mod dask;
mod directml;
mod dxdispatch;
mod faults;
mod fuzz_regressions;
mod inputs;
mod interface;
mod kill;
mod merge_stats;
mod messages;
mod outputs;
mod parts;
mod paths;
mod prop;
mod report;
#[cfg(unix)]
mod repro_commit;
mod results;
mod shell;
#[cfg(unix)]
mod signals;
mod stats;
#[cfg(unix)]
mod targets;
mod verdicts;
#[cfg(windows)]
mod windows;
