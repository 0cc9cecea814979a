//! A DxDispatch model, read into types: its buffer resources, its element-wise dispatchables
//! and its commands, every name resolved and every number range-checked, before anything runs.
//! The reading follows DxDispatch's own parser (`docs/dxdispatch.md`, "How tensorop reads a
//! model"): unknown keys are ignored, `type` of a command is matched in any case, data type and
//! operator names exactly. What tensorop does not run (other operators, HLSL, ONNX, serialized
//! graphs, images, deferred or mixed-type buffers) is refused by name. Every error names the
//! key path it is about (`dispatchables.sub.desc.ATensor.Sizes[2]`).
//!
//! This module holds the model's types and reads its three sections; the JSON walking with key
//! paths, each resource (one function per initializer form), each dispatchable with its tensor
//! descs, and each command with its bindings are read by submodules of their own.

mod command;
mod dispatchable;
mod node;
mod resource;

use super::values::Scalar;
use crate::dtype::DType;
use crate::op::Op;
use anyhow::{anyhow, Result};
use node::{join, Node};
use serde_json::Value;
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
    pub tensors: [BufferDesc; 3],
}

/// The names of an element-wise operator's tensors, in desc order.
pub const TENSOR_NAMES: [&str; 3] = ["ATensor", "BTensor", "OutputTensor"];

/// A `DML_BUFFER_TENSOR_DESC` as the model gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferDesc {
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
        resources.push(resource::resource(name, Node { v, path: &path }, paths, npy_dtype)?);
    }
    let disp_obj = Node { v: section("dispatchables")?, path: "dispatchables" }.object()?;
    let mut dispatchables = Vec::with_capacity(disp_obj.len());
    for (name, v) in disp_obj {
        let path = join("dispatchables", name);
        dispatchables.push(dispatchable::dispatchable(name, Node { v, path: &path })?);
    }
    let cmds = Node { v: section("commands")?, path: "commands" }.array()?;
    let mut commands = Vec::with_capacity(cmds.len());
    for (i, v) in cmds.iter().enumerate() {
        let path = format!("commands[{i}]");
        commands.push(command::command(Node { v, path: &path }, &resources, &dispatchables, paths)?);
    }
    Ok(Model { resources, dispatchables, commands })
}
