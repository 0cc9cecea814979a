//! A DxDispatch model, read into types: its buffer resources, its element-wise dispatchables
//! and its commands, every name resolved and every number range-checked, before anything runs.
//! The reading follows DxDispatch's own parser (`docs/dxdispatch.md`, "How tensorop reads a
//! model"): unknown keys are ignored, `type` of a command is matched in any case, data type and
//! operator names exactly. What tensorop does not run (other operators, HLSL, ONNX, serialized
//! graphs, images, deferred or mixed-type buffers) is refused by name. Every error names the
//! key path it is about (`dispatchables.sub.desc.ATensor.Sizes[2]`).

use super::values::{self, Scalar};
use crate::dtype::DType;
use crate::op::Op;
use crate::spec::dml::dml_name;
use anyhow::{anyhow, bail, Result};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The model, resolved.
#[derive(Debug)]
pub struct Model {
    pub resources: Vec<Resource>,
    pub dispatchables: Vec<Dispatchable>,
    pub commands: Vec<Command>,
}

/// A buffer resource: `size` bytes, zero-filled, holding `init` from byte 0.
#[derive(Debug)]
pub struct Resource {
    pub name: String,
    /// `initialValuesDataType`, or the `.npy` file's.
    pub dtype: DType,
    pub init: Init,
    /// `sizeInBytes`: by default the initial data's size rounded up to 4.
    pub size: u64,
    /// Bytes of initial values, as read when the model was (what `print` shows).
    pub init_bytes: u64,
}

/// Where a resource's initial values come from.
#[derive(Debug)]
pub enum Init {
    /// An array of numbers, already encoded (little-endian).
    Bytes(Vec<u8>),
    /// `{ "valueCount", "value" }`.
    Constant { count: u32, value: Scalar },
    /// `{ "valueCount", "valueStart", "valueDelta" }`, accumulated in the element type.
    Sequence { count: u32, start: Scalar, delta: Scalar },
    /// A `.npy` file's data region.
    Npy(PathBuf),
    /// Any other file's bytes.
    Raw(PathBuf),
}

/// A `DML_OPERATOR_ELEMENT_WISE_SUBTRACT` or `..._DIFFERENCE_SQUARE` dispatchable.
#[derive(Debug)]
pub struct Dispatchable {
    pub name: String,
    pub op: Op,
    /// `ATensor`, `BTensor`, `OutputTensor`.
    pub tensors: [TensorDesc; 3],
}

/// The names of an element-wise operator's tensors, in desc order.
pub const TENSOR_NAMES: [&str; 3] = ["ATensor", "BTensor", "OutputTensor"];

/// A `DML_BUFFER_TENSOR_DESC` as the model gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorDesc {
    pub dtype: DType,
    pub sizes: Vec<u32>,
    /// `None`: packed.
    pub strides: Option<Vec<u32>>,
    pub dimension_count: u32,
    /// `DML_TENSOR_FLAG_*` names, as given.
    pub flags: Vec<String>,
    /// As given, or `DMLCalcBufferTensorSize` when absent or 0.
    pub total_size: u64,
    pub alignment: u32,
}

/// A command, in model order.
#[derive(Debug)]
pub enum Command {
    Dispatch { dispatchable: usize, bindings: [Binding; 3] },
    Print { resource: usize, verbose: bool },
    WriteFile { resource: usize, target: PathBuf, dimensions: Option<Vec<u32>> },
}

/// A resource bound to a tensor, from byte `offset` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    pub resource: usize,
    /// `elementOffset` times `elementSizeInBytes` (default: the resource's element size).
    pub offset: u64,
}

/// A JSON value and the key path that reached it, for messages.
#[derive(Clone, Copy)]
struct Node<'a, 'p> {
    v: &'a Value,
    path: &'p str,
}

fn err(path: &str, msg: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("{path}: {msg}")
}

/// `parent.key`, or `key` at the top.
fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

impl<'a> Node<'a, '_> {
    fn object(&self) -> Result<&'a Map<String, Value>> {
        self.v.as_object().ok_or_else(|| err(self.path, format!("expected an object, found {}", kind(self.v))))
    }
    fn str(&self) -> Result<&'a str> {
        self.v.as_str().ok_or_else(|| err(self.path, format!("expected a string, found {}", kind(self.v))))
    }
    fn array(&self) -> Result<&'a Vec<Value>> {
        self.v.as_array().ok_or_else(|| err(self.path, format!("expected an array, found {}", kind(self.v))))
    }
    fn u64(&self) -> Result<u64> {
        self.v.as_u64().ok_or_else(|| err(self.path, format!("expected an unsigned integer, found {}", show(self.v))))
    }
    fn u32(&self) -> Result<u32> {
        let n = self.u64()?;
        u32::try_from(n).map_err(|_| err(self.path, format!("{n} does not fit in 32 bits (at most 4294967295)")))
    }
    fn u32_array(&self) -> Result<Vec<u32>> {
        let items = self.array()?;
        items.iter().enumerate().map(|(i, v)| Node { v, path: &format!("{}[{i}]", self.path) }.u32()).collect()
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value for a message: short ones as written, long ones by kind.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 40 {
        s
    } else {
        kind(v).to_string()
    }
}

/// `obj[key]` with its path, if present.
fn get<'a>(obj: &'a Map<String, Value>, parent: &str, key: &str) -> Option<(&'a Value, String)> {
    obj.get(key).map(|v| (v, join(parent, key)))
}

fn required<'a>(obj: &'a Map<String, Value>, parent: &str, key: &str) -> Result<(&'a Value, String)> {
    get(obj, parent, key).ok_or_else(|| err(&join(parent, key), "required, but missing"))
}

/// Parses a data type name (`FLOAT32` or `DML_TENSOR_DATA_TYPE_FLOAT32`, exact case).
pub fn data_type(name: &str) -> std::result::Result<DType, String> {
    let short = name.strip_prefix("DML_TENSOR_DATA_TYPE_").unwrap_or(name);
    Ok(match short {
        "FLOAT32" => DType::F32,
        "FLOAT16" => DType::F16,
        "FLOAT64" => DType::F64,
        "UINT32" => DType::U32,
        "UINT16" => DType::U16,
        "UINT8" => DType::U8,
        "INT32" => DType::I32,
        "INT16" => DType::I16,
        "INT8" => DType::I8,
        "UINT64" => DType::U64,
        "INT64" => DType::I64,
        "UINT4" | "INT4" | "UNKNOWN" => {
            return Err(format!("{name}: DirectML's 4-bit and UNKNOWN types are not computed by tensorop"))
        }
        _ => {
            return Err(format!(
                "'{name}' is not a DirectML data type (FLOAT32, FLOAT16, FLOAT64, INT8 ... INT64, UINT8 ... \
                 UINT64; exact case, with or without DML_TENSOR_DATA_TYPE_)"
            ))
        }
    })
}

/// Where files named by the model are looked for and written.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `--input-path` (default: the model's folder), then the current directory.
    pub input: PathBuf,
    /// `--output-path` (default: the current directory).
    pub output: PathBuf,
}

impl Paths {
    /// `name` against the input folder if a file is there, else against the current directory,
    /// as DxDispatch resolves `sourcePath`.
    fn resolve_input(&self, name: &str) -> PathBuf {
        let beside = self.input.join(name);
        if beside.exists() {
            beside
        } else {
            PathBuf::from(name)
        }
    }
}

/// Reads the model `root` (already parsed JSON), opening no file but `.npy` headers (to learn
/// their data types) and checking the sizes of source files.
pub fn read(root: &Value, paths: &Paths, npy_dtype: &dyn Fn(&Path) -> Result<(DType, u64)>) -> Result<Model> {
    let top = Node { v: root, path: "(top level)" }.object()?;
    let section = |key: &str| -> Result<&Value> {
        top.get(key).ok_or_else(|| {
            anyhow!("{key}: required, but missing (a DxDispatch model has 'resources', 'dispatchables' and 'commands')")
        })
    };
    let res_obj = Node { v: section("resources")?, path: "resources" }.object()?;
    let mut resources = Vec::with_capacity(res_obj.len());
    for (name, v) in res_obj {
        let path = join("resources", name);
        resources.push(resource(name, Node { v, path: &path }, paths, npy_dtype)?);
    }
    let disp_obj = Node { v: section("dispatchables")?, path: "dispatchables" }.object()?;
    let mut dispatchables = Vec::with_capacity(disp_obj.len());
    for (name, v) in disp_obj {
        let path = join("dispatchables", name);
        dispatchables.push(dispatchable(name, Node { v, path: &path })?);
    }
    let cmds = Node { v: section("commands")?, path: "commands" }.array()?;
    let mut commands = Vec::with_capacity(cmds.len());
    for (i, v) in cmds.iter().enumerate() {
        let path = format!("commands[{i}]");
        commands.push(command(Node { v, path: &path }, &resources, &dispatchables, paths)?);
    }
    Ok(Model { resources, dispatchables, commands })
}

fn resource(
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
    let (v, ipath) = required(obj, p, "initialValues")?;
    let need_type = |what: &str| {
        declared.ok_or_else(|| err(&join(p, "initialValuesDataType"), format!("required for {what}, but missing")))
    };
    let (dtype, init, data_bytes) = match v {
        Value::String(s) if s == "deferred" => {
            bail!("{ipath}: deferred buffers belong to ONNX dispatchables, which tensorop does not run")
        }
        Value::Array(items) => {
            let Some(dtype) = declared else {
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
            (dtype, Init::Bytes(bytes), n)
        }
        Value::Object(init) => {
            let has = |k: &str| init.contains_key(k);
            if has("value") {
                if has("valueStart") || has("sourcePath") {
                    bail!("{ipath}: 'value', 'valueStart' and 'sourcePath' exclude one another");
                }
                let dtype = need_type("a constant")?;
                let count = count_of(init, &ipath)?;
                let (v, path) = required(init, &ipath, "value")?;
                let value = values::parse(dtype, v).map_err(|m| err(&path, m))?;
                (dtype, Init::Constant { count, value }, u64::from(count) * dtype.size() as u64)
            } else if has("valueStart") {
                let dtype = need_type("a sequence")?;
                let count = count_of(init, &ipath)?;
                let scalar = |key: &str| -> Result<Scalar> {
                    let (v, path) = required(init, &ipath, key)?;
                    values::parse(dtype, v).map_err(|m| err(&path, m))
                };
                let (start, delta) = (scalar("valueStart")?, scalar("valueDelta")?);
                (dtype, Init::Sequence { count, start, delta }, u64::from(count) * dtype.size() as u64)
            } else if has("sourcePath") {
                let (v, spath) = required(init, &ipath, "sourcePath")?;
                let source = Node { v, path: &spath }.str()?;
                let file = paths.resolve_input(source);
                let ext = file.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
                match ext.as_str() {
                    "npy" => {
                        let (dtype, bytes) =
                            npy_dtype(&file).map_err(|e| err(&spath, format!("{}: {e:#}", file.display())))?;
                        if let Some(d) = declared.filter(|&d| d != dtype) {
                            bail!(
                                "{}: the file {} holds {}, but initialValuesDataType says {}",
                                join(p, "initialValuesDataType"),
                                file.display(),
                                dml_name(dtype),
                                dml_name(d)
                            );
                        }
                        (dtype, Init::Npy(file), bytes)
                    }
                    "jpg" | "png" => bail!("{spath}: image files ({source}) are not read by tensorop"),
                    _ => {
                        let dtype = need_type("a raw file")?;
                        let meta =
                            std::fs::metadata(&file).map_err(|e| err(&spath, format!("{}: {e}", file.display())))?;
                        if !meta.is_file() {
                            bail!("{spath}: {} is not a regular file", file.display());
                        }
                        (dtype, Init::Raw(file), meta.len())
                    }
                }
            } else {
                bail!("{ipath}: unknown generator: give 'value' (constant), 'valueStart' (sequence) or 'sourcePath' (file)");
            }
        }
        other => bail!("{ipath}: expected an array of numbers, an object or \"deferred\", found {}", kind(other)),
    };
    if data_bytes == 0 {
        bail!("{ipath}: the initial values are empty; a buffer needs at least one");
    }
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
    Ok(Resource { name: name.to_string(), dtype, init, size, init_bytes: data_bytes })
}

fn count_of(init: &Map<String, Value>, path: &str) -> Result<u32> {
    let (v, path) = required(init, path, "valueCount")?;
    Node { v, path: &path }.u32()
}

fn dispatchable(name: &str, node: Node<'_, '_>) -> Result<Dispatchable> {
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
    let tensors: [TensorDesc; 3] = tensors.try_into().map_err(|_| anyhow!("internal error: three tensors"))?;
    if let Some((v, path)) = get(obj, p, "bindings") {
        if !(Node { v, path: &path }.object()?.is_empty()) {
            bail!("{path}: initialization bindings are not used by element-wise operators; remove them");
        }
    }
    Ok(Dispatchable { name: name.to_string(), op, tensors })
}

fn tensor_desc(node: Node<'_, '_>) -> Result<TensorDesc> {
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
    Ok(TensorDesc { dtype, sizes, strides, dimension_count, flags, total_size, alignment })
}

fn command(
    node: Node<'_, '_>,
    resources: &[Resource],
    dispatchables: &[Dispatchable],
    paths: &Paths,
) -> Result<Command> {
    let obj = node.object()?;
    let p = node.path;
    let (v, tpath) = required(obj, p, "type")?;
    let kind = Node { v, path: &tpath }.str()?;
    let resource_named = |key: &str| -> Result<usize> {
        let (v, path) = required(obj, p, key)?;
        let name = Node { v, path: &path }.str()?;
        // The last resource of a name wins, as in DxDispatch.
        resources
            .iter()
            .rposition(|r| r.name == name)
            .ok_or_else(|| err(&path, format!("there is no resource '{name}' in the model")))
    };
    if kind.eq_ignore_ascii_case("dispatch") {
        let (v, dpath) = required(obj, p, "dispatchable")?;
        let name = Node { v, path: &dpath }.str()?;
        let d = dispatchables
            .iter()
            .rposition(|d| d.name == name)
            .ok_or_else(|| err(&dpath, format!("there is no dispatchable '{name}' in the model")))?;
        let (v, bpath) = required(obj, p, "bindings")?;
        let bindings = Node { v, path: &bpath }.object()?;
        let mut bound = Vec::with_capacity(3);
        for t in TENSOR_NAMES {
            let (v, path) = get(bindings, &bpath, t)
                .ok_or_else(|| err(&join(&bpath, t), format!("required: bind a resource to {t}")))?;
            bound.push(binding(Node { v, path: &path }, resources)?);
        }
        let bindings: [Binding; 3] = bound.try_into().map_err(|_| anyhow!("internal error: three bindings"))?;
        Ok(Command::Dispatch { dispatchable: d, bindings })
    } else if kind.eq_ignore_ascii_case("print") {
        let resource = resource_named("resource")?;
        let verbose = match get(obj, p, "verbose") {
            Some((Value::Bool(b), _)) => *b,
            Some((v, path)) => bail!("{path}: expected true or false, found {}", show(v)),
            None => false,
        };
        Ok(Command::Print { resource, verbose })
    } else if kind.eq_ignore_ascii_case("writeFile") {
        let resource = resource_named("resource")?;
        let (v, path) = required(obj, p, "targetPath")?;
        let target = Node { v, path: &path }.str()?;
        if target.is_empty() {
            bail!("{path}: empty");
        }
        let ext = Path::new(target).extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
        if matches!(ext.as_deref(), Some("png" | "jpg")) {
            bail!("{path}: image files ({target}) are not written by tensorop; write .npy or raw bytes");
        }
        let dimensions = match get(obj, p, "dimensions") {
            Some((v, path)) => Some(Node { v, path: &path }.u32_array()?).filter(|d| !d.is_empty()),
            None => None,
        };
        Ok(Command::WriteFile { resource, target: paths.output.join(target), dimensions })
    } else {
        bail!("{tpath}: unknown command '{kind}' (DxDispatch's commands are dispatch, print and writeFile)")
    }
}

fn binding(node: Node<'_, '_>, resources: &[Resource]) -> Result<Binding> {
    let one = match node.v {
        Value::Array(items) if items.len() == 1 => (&items[0], format!("{}[0]", node.path)),
        Value::Array(items) => {
            bail!("{}: an element-wise tensor takes one resource, {} were bound", node.path, items.len())
        }
        _ => (node.v, node.path.to_string()),
    };
    let (v, path) = (one.0, one.1.as_str());
    let (name, offset_elems, elem_size) = match v {
        Value::String(name) => (name.as_str(), 0, None),
        Value::Object(obj) => {
            let (nv, npath) = required(obj, path, "name")?;
            let name = Node { v: nv, path: &npath }.str()?;
            let field = |key: &str| -> Result<Option<u64>> {
                get(obj, path, key).map(|(v, p)| Node { v, path: &p }.u64()).transpose()
            };
            (name, field("elementOffset")?.unwrap_or(0), field("elementSizeInBytes")?.filter(|&s| s != 0))
        }
        other => bail!("{path}: expected a resource name or a binding object, found {}", kind(other)),
    };
    let resource = resources
        .iter()
        .rposition(|r| r.name == name)
        .ok_or_else(|| err(path, format!("there is no resource '{name}' in the model")))?;
    let size = elem_size.unwrap_or(resources[resource].dtype.size() as u64);
    let offset = offset_elems.checked_mul(size).filter(|&o| o <= resources[resource].size).ok_or_else(|| {
        err(
            path,
            format!("elementOffset {offset_elems} is past the end of '{name}' ({} bytes)", resources[resource].size),
        )
    })?;
    Ok(Binding { resource, offset })
}
