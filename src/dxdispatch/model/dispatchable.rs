//! A model's dispatchables: an element-wise subtract or squared difference operator and the
//! buffer tensor descs of its three tensors.

use super::node::{err, get, join, required, Node};
use super::{data_type, BufferDesc, Dispatchable, TENSOR_NAMES};
use crate::op::Op;
use anyhow::{anyhow, bail, Result};
use serde_json::Value;

/// Reads dispatchable `name`: its operator and its tensors' descs.
pub(super) fn dispatchable(name: &str, node: Node<'_, '_>) -> Result<Dispatchable> {
    let obj = node.object()?;
    let p = node.path;
    let (v, tpath) = required(obj, p, "type")?;
    let kind = Node { v, path: &tpath }.str()?;
    for other in ["hlsl", "onnx", "dmlSerializedGraph"] {
        if kind.eq_ignore_ascii_case(other) {
            bail!("{tpath}: '{kind}' dispatchables are not run by tensorop; it runs DML_OPERATOR_ELEMENT_WISE_SUBTRACT and DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE");
        }
    }
    // DirectML operators: `Type` before `type`, `Desc` before `desc` (the object itself if neither).
    let (tv, tpath) = get(obj, p, "Type").unwrap_or((v, tpath));
    let op_name = Node { v: tv, path: &tpath }.str()?;
    let op = match op_name.strip_prefix("DML_OPERATOR_").unwrap_or(op_name) {
        "ELEMENT_WISE_SUBTRACT" => Op::Sub,
        "ELEMENT_WISE_DIFFERENCE_SQUARE" => Op::SqDiff,
        _ => bail!(
            "{tpath}: the operator '{op_name}' is not run by tensorop; it runs DML_OPERATOR_ELEMENT_WISE_SUBTRACT and \
             DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE"
        ),
    };
    let (desc, dpath) = get(obj, p, "Desc").or_else(|| get(obj, p, "desc")).unwrap_or((node.v, p.to_string()));
    let desc_obj = Node { v: desc, path: &dpath }.object()?;
    let mut tensors = Vec::with_capacity(3);
    for t in TENSOR_NAMES {
        let (v, path) = required(desc_obj, &dpath, t)?;
        tensors.push(tensor_desc(Node { v, path: &path })?);
    }
    let tensors: [BufferDesc; 3] = tensors.try_into().map_err(|_| anyhow!("internal error: three tensors"))?;
    if let Some((v, path)) = get(obj, p, "bindings") {
        if !(Node { v, path: &path }.object()?.is_empty()) {
            bail!("{path}: initialization bindings are not used by element-wise operators; remove them");
        }
    }
    Ok(Dispatchable { name: name.to_string(), op, tensors })
}

/// Reads a `DML_BUFFER_TENSOR_DESC` (the `Desc` of a `DML_TENSOR_DESC`, or the desc itself).
fn tensor_desc(node: Node<'_, '_>) -> Result<BufferDesc> {
    let obj = node.object()?;
    let p = node.path;
    if let Some((v, path)) = get(obj, p, "Type") {
        let t = Node { v, path: &path }.str()?;
        if t != "DML_TENSOR_TYPE_BUFFER" && t != "BUFFER" {
            bail!("{path}: '{t}' tensors are not run by tensorop; only DML_TENSOR_TYPE_BUFFER");
        }
    }
    let (obj, p) = match get(obj, p, "Desc") {
        Some((v, path)) => {
            let inner = Node { v, path: &path }.object()?;
            (inner, path)
        }
        None => (obj, p.to_string()),
    };
    let p = p.as_str();
    let (v, path) = required(obj, p, "Sizes")?;
    let sizes = Node { v, path: &path }.u32_array()?;
    let strides = match get(obj, p, "Strides") {
        Some((v, path)) => Some(Node { v, path: &path }.u32_array()?).filter(|s| !s.is_empty()),
        None => None,
    };
    let (v, path) = required(obj, p, "DataType")?;
    let dtype = data_type(Node { v, path: &path }.str()?).map_err(|m| err(&path, m))?;
    let dimension_count = match get(obj, p, "DimensionCount") {
        Some((v, path)) => Node { v, path: &path }.u32()?,
        None => sizes.len() as u32,
    };
    let flags = match get(obj, p, "Flags") {
        None => vec![],
        Some((Value::String(s), _)) => vec![s.clone()],
        Some((v, path)) => {
            let items = Node { v, path: &path }.array()?;
            items
                .iter()
                .enumerate()
                .map(|(i, v)| Node { v, path: &format!("{path}[{i}]") }.str().map(str::to_string))
                .collect::<Result<_>>()?
        }
    };
    for (i, f) in flags.iter().enumerate() {
        if !matches!(f.as_str(), "NONE" | "DML_TENSOR_FLAG_NONE" | "OWNED_BY_DML" | "DML_TENSOR_FLAG_OWNED_BY_DML") {
            bail!("{}: '{f}' is not a DML_TENSOR_FLAGS value (NONE, OWNED_BY_DML)", join(p, &format!("Flags[{i}]")));
        }
    }
    let total = match get(obj, p, "TotalTensorSizeInBytes") {
        Some((v, path)) => Node { v, path: &path }.u64()?,
        None => 0,
    };
    let alignment = match get(obj, p, "GuaranteedBaseOffsetAlignment") {
        Some((v, path)) => Node { v, path: &path }.u32()?,
        None => 0,
    };
    let total_size = if total != 0 {
        total
    } else {
        let s64: Vec<u64> = sizes.iter().map(|&d| u64::from(d)).collect();
        let st64: Option<Vec<u64>> = strides.as_ref().map(|s| s.iter().map(|&d| u64::from(d)).collect());
        crate::spec::dml::buffer_tensor_size(dtype.size() as u64, &s64, st64.as_deref())
    };
    Ok(BufferDesc { dtype, sizes, strides, dimension_count, flags, total_size, alignment })
}
