//! What DirectML allows: feature levels ([`level`]), the support matrix as data ([`matrix`]) and
//! the constraint checks run before any arithmetic ([`checks`]).

pub mod checks;
pub mod level;
pub mod matrix;
