//! The `.npy` file format: headers ([`header`]) and the Python literals they are written in
//! ([`literal`]), opened inputs read in bulk ([`input`]), C-order copies of large Fortran-order
//! inputs ([`fortran`]) and the atomic output sink ([`output`]).

pub mod fortran;
pub mod header;
pub mod input;
pub mod literal;
pub mod output;
