//! tensorop as a library: the modules behind the `tensorop` binary. The public surface is what
//! the binary ([`app`]), the benchmarks, the fuzz targets and the tests drive: the command line,
//! the configuration and the pipeline, the `.npy` reader, the kernels and the dtypes. The rest is
//! crate-private. `docs/architecture.md` draws how the modules fit together.

pub mod app;
pub mod arch;
pub(crate) mod backend;
pub mod cli;
pub(crate) mod commands;
pub(crate) mod compare;
pub mod config;
pub mod container;
pub mod dtype;
pub mod dxdispatch;
pub(crate) mod environment;
pub(crate) mod notices;
pub mod npy;
pub mod op;
pub mod outcome;
pub(crate) mod output;
pub mod pipeline;
pub(crate) mod plan;
pub(crate) mod progress;
pub mod report;
pub mod shape;
pub(crate) mod shell;
pub(crate) mod spec;
pub mod summary;
pub(crate) mod sys;
pub(crate) mod text;
pub(crate) mod verdict;
