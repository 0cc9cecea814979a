//! The `.npy` file format: headers ([`header`]) and the Python literals they are written in
//! ([`literal`]), opened inputs read in bulk ([`input`]) and C-order copies of large Fortran-order
//! inputs ([`fortran`]). Results are written by `output`.

pub mod fortran;
pub mod header;
pub mod input;
pub mod literal;
