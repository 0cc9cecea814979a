//! A model's resources: buffers, their initial values (a list of numbers, a constant, a
//! sequence, or a `.npy` or raw source file, each read by a function of its own), their size
//! and where the values go in them.

use super::node::{err, get, join, kind, required, Node};
use super::{data_type, Init, Paths, Resource};
use crate::dtype::DType;
use crate::dxdispatch::values::{self, Scalar};
use crate::spec::dml::dml_name;
use anyhow::{bail, Result};
use serde_json::{Map, Value};
use std::path::Path;

/// A resource's data type, its initial values and their size in bytes.
type Initial = (DType, Init, u64);

/// The data type a resource declares (`initialValuesDataType`), if any, and the resource's key
/// path, for the initializers that need it.
#[derive(Clone, Copy)]
struct Declared<'p> {
    dtype: Option<DType>,
    path: &'p str,
}

impl Declared<'_> {
    /// The declared data type, which `what` (an initializer form) requires.
    fn need(self, what: &str) -> Result<DType> {
        self.dtype
            .ok_or_else(|| err(&join(self.path, "initialValuesDataType"), format!("required for {what}, but missing")))
    }
}

/// Reads resource `name`: a buffer, its initial values, its size and the offset of the values.
pub(super) fn resource(
    name: &str,
    node: Node<'_, '_>,
    paths: &Paths,
    npy_dtype: &dyn Fn(&Path) -> Result<(DType, u64)>,
) -> Result<Resource> {
    let obj = node.object()?;
    let p = node.path;
    if let Some((v, path)) = get(obj, p, "type") {
        let t = Node { v, path: &path }.str()?;
        if !t.eq_ignore_ascii_case("buffer") {
            bail!("{path}: '{t}' resources (textures) are not run by tensorop; only buffers are");
        }
    }
    let declared = match get(obj, p, "initialValuesDataType") {
        Some((v, path)) => Some(data_type(Node { v, path: &path }.str()?).map_err(|m| err(&path, m))?),
        None => None,
    };
    let declared = Declared { dtype: declared, path: p };
    let (v, ipath) = required(obj, p, "initialValues")?;
    let (dtype, init, data_bytes) = match v {
        Value::String(s) if s == "deferred" => {
            bail!("{ipath}: deferred buffers belong to ONNX dispatchables, which tensorop does not run")
        }
        Value::Array(items) => list(items, &ipath, declared)?,
        Value::Object(init) => generator(init, &ipath, declared, paths, npy_dtype)?,
        other => bail!("{ipath}: expected an array of numbers, an object or \"deferred\", found {}", kind(other)),
    };
    if data_bytes == 0 {
        bail!("{ipath}: the initial values are empty; a buffer needs at least one");
    }
    let size = buffer_size(obj, p, data_bytes)?;
    Ok(Resource { name: name.to_string(), dtype, init, size, init_bytes: data_bytes })
}

/// The buffer's size (`sizeInBytes`, by default the initial values' `data_bytes` rounded up to
/// 4), checked to hold the initial values at their offset (`initialValuesOffsetInBytes`).
fn buffer_size(obj: &Map<String, Value>, p: &str, data_bytes: u64) -> Result<u64> {
    let size = match get(obj, p, "sizeInBytes") {
        Some((v, path)) => {
            let size = Node { v, path: &path }.u64()?;
            if size < data_bytes {
                bail!("{path}: {size} bytes is too small for the initial values ({data_bytes} bytes)");
            }
            size
        }
        None => data_bytes.div_ceil(4).saturating_mul(4),
    };
    if let Some((v, path)) = get(obj, p, "initialValuesOffsetInBytes") {
        let offset = Node { v, path: &path }.u64()?;
        if offset.checked_add(data_bytes).is_none_or(|end| end > size) {
            bail!("{path}: the initial values ({data_bytes} bytes) at offset {offset} do not fit in {size} bytes");
        }
    }
    Ok(size)
}

/// Initial values given as a list of numbers of the declared data type, encoded.
fn list(items: &[Value], ipath: &str, declared: Declared<'_>) -> Result<Initial> {
    let Some(dtype) = declared.dtype else {
        bail!(
            "{ipath}: a list without 'initialValuesDataType' is a mixed-type list, which tensorop does not run; \
             give initialValuesDataType"
        );
    };
    let mut bytes = Vec::with_capacity(items.len() * dtype.size());
    for (i, item) in items.iter().enumerate() {
        let s = values::parse(dtype, item).map_err(|m| err(&format!("{ipath}[{i}]"), m))?;
        bytes.extend_from_slice(s.bytes(dtype));
    }
    let n = bytes.len() as u64;
    Ok((dtype, Init::Bytes(bytes), n))
}

/// Initial values given by a generator object: a constant (`value`), a sequence
/// (`valueStart`) or a file (`sourcePath`), one of them.
fn generator(
    init: &Map<String, Value>,
    ipath: &str,
    declared: Declared<'_>,
    paths: &Paths,
    npy_dtype: &dyn Fn(&Path) -> Result<(DType, u64)>,
) -> Result<Initial> {
    let has = |k: &str| init.contains_key(k);
    if has("value") {
        if has("valueStart") || has("sourcePath") {
            bail!("{ipath}: 'value', 'valueStart' and 'sourcePath' exclude one another");
        }
        constant(init, ipath, declared.need("a constant")?)
    } else if has("valueStart") {
        sequence(init, ipath, declared.need("a sequence")?)
    } else if has("sourcePath") {
        source_file(init, ipath, declared, paths, npy_dtype)
    } else {
        bail!("{ipath}: unknown generator: give 'value' (constant), 'valueStart' (sequence) or 'sourcePath' (file)");
    }
}

/// `{ "valueCount", "value" }`: `valueCount` copies of one value.
fn constant(init: &Map<String, Value>, ipath: &str, dtype: DType) -> Result<Initial> {
    let count = count_of(init, ipath)?;
    let (v, path) = required(init, ipath, "value")?;
    let value = values::parse(dtype, v).map_err(|m| err(&path, m))?;
    Ok((dtype, Init::Constant { count, value }, u64::from(count) * dtype.size() as u64))
}

/// `{ "valueCount", "valueStart", "valueDelta" }`: `valueCount` values from `valueStart`,
/// `valueDelta` apart.
fn sequence(init: &Map<String, Value>, ipath: &str, dtype: DType) -> Result<Initial> {
    let count = count_of(init, ipath)?;
    let scalar = |key: &str| -> Result<Scalar> {
        let (v, path) = required(init, ipath, key)?;
        values::parse(dtype, v).map_err(|m| err(&path, m))
    };
    let (start, delta) = (scalar("valueStart")?, scalar("valueDelta")?);
    Ok((dtype, Init::Sequence { count, start, delta }, u64::from(count) * dtype.size() as u64))
}

/// `{ "sourcePath" }`: a `.npy` file's data (its data type its own, which a declared one must
/// match) or any other file's bytes (of the declared data type); images are refused.
fn source_file(
    init: &Map<String, Value>,
    ipath: &str,
    declared: Declared<'_>,
    paths: &Paths,
    npy_dtype: &dyn Fn(&Path) -> Result<(DType, u64)>,
) -> Result<Initial> {
    let (v, spath) = required(init, ipath, "sourcePath")?;
    let source = Node { v, path: &spath }.str()?;
    let file = paths.resolve_input(source);
    let ext = file.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "npy" => {
            let (dtype, bytes) = npy_dtype(&file).map_err(|e| err(&spath, format!("{}: {e:#}", file.display())))?;
            if let Some(d) = declared.dtype.filter(|&d| d != dtype) {
                bail!(
                    "{}: the file {} holds {}, but initialValuesDataType says {}",
                    join(declared.path, "initialValuesDataType"),
                    file.display(),
                    dml_name(dtype),
                    dml_name(d)
                );
            }
            Ok((dtype, Init::Npy(file), bytes))
        }
        "jpg" | "png" => bail!("{spath}: image files ({source}) are not read by tensorop"),
        _ => {
            let dtype = declared.need("a raw file")?;
            let meta = std::fs::metadata(&file).map_err(|e| err(&spath, format!("{}: {e}", file.display())))?;
            if !meta.is_file() {
                bail!("{spath}: {} is not a regular file", file.display());
            }
            Ok((dtype, Init::Raw(file), meta.len()))
        }
    }
}

/// `valueCount`, a 32-bit count.
fn count_of(init: &Map<String, Value>, path: &str) -> Result<u32> {
    let (v, path) = required(init, path, "valueCount")?;
    Node { v, path: &path }.u32()
}
