//! What DirectML allows: feature levels ([`level`]), the support matrix as data ([`matrix`]) and
//! the constraint checks run before any arithmetic ([`checks`]), and the descriptors a DirectML
//! caller would pass for a job ([`dml`]).

pub mod checks;
pub mod dml;
pub mod level;
pub mod matrix;
