//! The `.npy` file format: headers ([`header`]), opened inputs read in bulk ([`input`]) and the
//! atomic output sink ([`output`]).

pub mod header;
pub mod input;
pub mod output;
