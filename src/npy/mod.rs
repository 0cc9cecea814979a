//! The `.npy` file format: headers ([`header`]), opened inputs read in bulk ([`input`]), C-order
//! copies of large Fortran-order inputs ([`fortran`]) and the atomic output sink ([`output`]).

pub mod fortran;
pub mod header;
pub mod input;
pub mod output;
