//! tensorop as a library: the modules behind the `tensorop` binary, exposed so benchmarks and
//! other tools can drive the kernels, the `.npy` reader and the checks directly. The binary
//! (`main.rs`) only parses arguments and maps outcomes to exit codes.

pub mod backend;
pub mod cli;
pub mod commands;
pub mod config;
pub mod dtype;
pub mod npy;
pub mod op;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod progress;
pub mod report;
pub mod shape;
pub mod shell;
pub mod spec;
pub mod sys;
