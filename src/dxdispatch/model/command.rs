//! A model's commands: dispatches with their bindings, prints and file writes, each naming
//! resources and dispatchables by name.

use super::node::{err, get, join, kind, required, show, Node};
use super::{Binding, Command, Dispatchable, Paths, Resource, TENSOR_NAMES};
use anyhow::{anyhow, bail, Result};
use serde_json::Value;
use std::path::Path;

/// Reads a command, resolving the names it gives against the model's resources and dispatchables.
pub(super) fn command(
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

/// Reads the resource bound to one tensor of a dispatch: a name, or an object with an element offset.
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
