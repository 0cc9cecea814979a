//! The plan of one run, built once from the validated headers before any element is read: the
//! output's dtype, shape and header, each input's view strides, which inputs are first copied
//! in C order, and ([`Plan::feeds`]) how each input reaches the backend. Both backends consume
//! the same decisions; the report describes them. Pure: nothing here reads data or opens files.

use crate::dtype::DType;
use crate::npy::fortran;
use crate::npy::header::{encode_header, FileDType};
use crate::npy::input::InputTensor;
use crate::shape::{element_count, view_strides, Iteration};
use crate::spec::checks::Validation;
use anyhow::{anyhow, Context, Result};

/// Inputs up to this size that are not read in output order are loaded whole by the CPU backend
/// (the wgpu backend's limit is also bounded by what the device can bind); larger ones stream,
/// and larger Fortran-order ones are first copied in C order.
pub const RESIDENT_BYTES: u64 = 32 << 20;

/// How a backend gets one input's elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    /// Read in output order: each chunk reads its own run of the input.
    Streamed,
    /// Loaded whole, once: a broadcast input small enough, or one in Fortran order whose strides
    /// do not let a chunk's reads be bounded by the chunk's size.
    Resident,
    /// A large broadcast input: each chunk reads the windows of the input it needs.
    Windowed,
}

impl Feed {
    /// The feed of an input read in output order (`in_order`) or not, of `data_bytes`, given
    /// the backend's `resident_limit`, for an output of `elements`.
    pub fn choose(in_order: bool, data_bytes: u64, strided_fortran: bool, resident_limit: u64, elements: u64) -> Feed {
        if in_order || elements == 0 {
            Feed::Streamed
        } else if data_bytes <= resident_limit || strided_fortran {
            Feed::Resident
        } else {
            Feed::Windowed
        }
    }
}

/// What a valid run will do.
#[derive(Debug, Clone)]
pub struct Plan {
    pub dtype: DType,
    pub out_shape: Vec<u64>,
    /// Per input, the element stride of each output dimension in the file as given (0 along
    /// broadcast dimensions).
    pub strides: [Vec<u64>; 2],
    /// Output elements.
    pub elements: u64,
    /// The output's `.npy` header.
    pub header: Vec<u8>,
    /// The output's data bytes (after the header).
    pub data_bytes: u64,
    /// Per input: copied once in C order before the run, so that it streams with bounded
    /// memory (a large Fortran-order input that is not read in storage order).
    pub c_order_copy: [bool; 2],
}

impl Plan {
    /// The plan for inputs `a` and `b` that passed `validation`.
    pub fn new(validation: &Validation, inputs: [&InputTensor; 2]) -> Result<Plan> {
        let out_shape = validation
            .out_shape
            .clone()
            .ok_or_else(|| anyhow!("internal error: a valid plan without an output shape"))?;
        let FileDType::Numeric(dtype) = inputs[0].header.dtype else {
            return Err(anyhow!("internal error: a valid plan with a non-numeric dtype"));
        };
        let strides = inputs.map(|x| view_strides(&x.header.shape, x.header.fortran_order, &out_shape));
        let elements = Iteration::new(&out_shape, &strides[0], &strides[1]).count();
        let data_bytes = element_count(&out_shape)
            .and_then(|n| n.checked_mul(dtype.size() as u64))
            .ok_or_else(|| anyhow!("the output would be larger than 2^64 bytes"))?;
        let c_order_copy = inputs.map(|x| fortran::is_strided_fortran(x) && x.header.data_bytes > RESIDENT_BYTES);
        Ok(Plan {
            dtype,
            header: encode_header(dtype, &out_shape),
            out_shape,
            strides,
            elements,
            data_bytes,
            c_order_copy,
        })
    }

    /// The C-order copies the plan asks for, made now (see [`crate::npy::fortran`]); smaller
    /// Fortran-order inputs the backends hold whole.
    pub fn c_order_copies(&self, inputs: [&InputTensor; 2]) -> Result<[Option<InputTensor>; 2]> {
        let [a, b] = [0, 1].map(|i| {
            self.c_order_copy[i]
                .then(|| {
                    fortran::c_order_copy(inputs[i])
                        .with_context(|| format!("cannot copy input {} to C order", inputs[i].label))
                })
                .transpose()
        });
        Ok([a?, b?])
    }

    /// The output's size in bytes, header included.
    pub fn output_bytes(&self) -> u64 {
        self.data_bytes.saturating_add(self.header.len() as u64)
    }

    /// The iteration over `inputs` as the backend reads them (after any C-order copy).
    pub fn iteration(&self, inputs: [&InputTensor; 2]) -> Iteration {
        let s = inputs.map(|x| view_strides(&x.header.shape, x.header.fortran_order, &self.out_shape));
        Iteration::new(&self.out_shape, &s[0], &s[1])
    }

    /// How each of `inputs` (as the backend reads them) is fed over `iter` to a backend that
    /// holds inputs of up to `resident_limit` bytes whole.
    pub fn feeds(iter: &Iteration, inputs: [&InputTensor; 2], resident_limit: u64) -> [Feed; 2] {
        [0, 1].map(|i| {
            let x = inputs[i];
            let strided_fortran = fortran::is_strided_fortran(x);
            Feed::choose(iter.is_identity(i), x.header.data_bytes, strided_fortran, resident_limit, iter.count())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_in_output_order_stream_and_broadcast_ones_are_resident_or_windowed() {
        let limit = 1000;
        assert_eq!(Feed::choose(true, 1 << 40, true, limit, 10), Feed::Streamed);
        assert_eq!(Feed::choose(false, limit, false, limit, 10), Feed::Resident);
        assert_eq!(Feed::choose(false, limit + 1, false, limit, 10), Feed::Windowed);
        // A strided Fortran-order input cannot be windowed: its chunk reads are not bounded.
        assert_eq!(Feed::choose(false, limit + 1, true, limit, 10), Feed::Resident);
        // Nothing to compute: nothing is loaded.
        assert_eq!(Feed::choose(false, 8, false, limit, 0), Feed::Streamed);
    }
}
