//! Windows: DirectML's data types and `IDMLDevice::CreateOperator` on buffer tensor descs, which
//! the runs, `tensorop devices` and the agreement test share.

use crate::dtype::DType;
use crate::op::Op;
use std::ffi::c_void;
use windows::Win32::AI::MachineLearning::DirectML::*;

/// DirectML's type for `dtype`; `None` for bfloat16, which DirectML lacks.
pub(super) fn data_type(dtype: DType) -> Option<DML_TENSOR_DATA_TYPE> {
    Some(match dtype {
        DType::F32 => DML_TENSOR_DATA_TYPE_FLOAT32,
        DType::F16 => DML_TENSOR_DATA_TYPE_FLOAT16,
        DType::F64 => DML_TENSOR_DATA_TYPE_FLOAT64,
        DType::I8 => DML_TENSOR_DATA_TYPE_INT8,
        DType::I16 => DML_TENSOR_DATA_TYPE_INT16,
        DType::I32 => DML_TENSOR_DATA_TYPE_INT32,
        DType::I64 => DML_TENSOR_DATA_TYPE_INT64,
        DType::U8 => DML_TENSOR_DATA_TYPE_UINT8,
        DType::U16 => DML_TENSOR_DATA_TYPE_UINT16,
        DType::U32 => DML_TENSOR_DATA_TYPE_UINT32,
        DType::U64 => DML_TENSOR_DATA_TYPE_UINT64,
        DType::BF16 => return None,
    })
}

/// `IDMLDevice::CreateOperator` for `op` on the buffer tensors A, B and the output.
pub(super) fn create(dml: &IDMLDevice, op: Op, t: [&DML_BUFFER_TENSOR_DESC; 3]) -> windows::core::Result<IDMLOperator> {
    let td = t.map(|b| DML_TENSOR_DESC { Type: DML_TENSOR_TYPE_BUFFER, Desc: b as *const _ as *const c_void });
    let sub = DML_ELEMENT_WISE_SUBTRACT_OPERATOR_DESC { ATensor: &td[0], BTensor: &td[1], OutputTensor: &td[2] };
    let sq =
        DML_ELEMENT_WISE_DIFFERENCE_SQUARE_OPERATOR_DESC { ATensor: &td[0], BTensor: &td[1], OutputTensor: &td[2] };
    let desc = match op {
        Op::Sub => {
            DML_OPERATOR_DESC { Type: DML_OPERATOR_ELEMENT_WISE_SUBTRACT, Desc: &sub as *const _ as *const c_void }
        }
        Op::SqDiff => DML_OPERATOR_DESC {
            Type: DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE,
            Desc: &sq as *const _ as *const c_void,
        },
    };
    let mut out = None;
    // SAFETY: every pointer in `desc` points into this frame and outlives the call.
    unsafe { dml.CreateOperator(&desc, &mut out)? };
    out.ok_or_else(|| windows::core::Error::from_hresult(windows::Win32::Foundation::E_POINTER))
}
