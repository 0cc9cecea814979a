//! `sub`/`sqdiff --dxdispatch DIR`: the job as a DxDispatch repro (`docs/dxdispatch.md`,
//! "Hand a job to DirectML"). The directory is assembled beside `DIR` as
//! `.DIR.XXXXXX.tensorop-tmp` and renamed to `DIR` only when complete: a failed or interrupted
//! export leaves no half-written repro (a kill by SIGKILL can leave the hidden directory).
//!
//! The run drives it as the destination of its result ([`Repro`], a `ResultSink` around the
//! file destination of `expected.npy`): committing the result moves the directory into place
//! (with `--fsync`, every file flushed first and the parent directory after), and only then is
//! the report written, so it says whether the repro reached its name.
//!
//! It holds `a.npy` and `b.npy` (the inputs, C order, little-endian, `.npy` 1.0 or 2.0, as
//! DxDispatch reads them), `expected.npy` (tensorop's result, computed as usual by the
//! pipeline), `model.json` (whose tensor descs are the report's `dml` descriptors, with strides
//! for the C-order files) and `README.txt` (the job, with its float16 rule, and the commands to
//! run and compare).

use crate::npy::fortran;
use crate::npy::header::encode_header;
use crate::npy::input::InputTensor;
use crate::op::{Float16Rule, Semantics};
use crate::output::result::{Committed, ResultSink, ToOutput};
use crate::output::{parent_dir, Pending};
use crate::plan::Plan;
use crate::shape::view_strides;
use crate::spec::dml::{descriptors, TensorDesc};
use crate::spec::level::LevelChoice;
use crate::spec::matrix::row_for;
use anyhow::{anyhow, bail, Context, Result};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The repro's file names. The output DxDispatch writes cannot overwrite an input.
pub const MODEL: &str = "model.json";
pub const INPUTS: [&str; 2] = ["a.npy", "b.npy"];
pub use crate::config::DXDISPATCH_EXPECTED as EXPECTED;
pub const DML_OUTPUT: &str = "output.npy";
pub const README: &str = "README.txt";

/// A failed validation's message for `--dxdispatch`, whose job must be a DirectML one: the hint
/// to use `--feature-level none`, which `--dxdispatch` refuses, becomes what the user can do.
fn for_directml(msg: String) -> String {
    match msg.strip_suffix(crate::spec::checks::ONLY_NONE_HINT) {
        Some(rest) => format!(
            "{rest}no DirectML feature level accepts these inputs, so DxDispatch cannot run them; convert the inputs \
             to a dtype DirectML supports for this operator, or drop --dxdispatch and compute them with \
             --feature-level none"
        ),
        None => msg,
    }
}

/// The usage error of a `--dxdispatch DIR` run whose inputs fail DirectML's checks at `level`
/// (`msg`: the failed checks): there is no DirectML job to hand over.
pub fn refusal(dir: &Path, level: &str, msg: String) -> String {
    let mut text = format!(
        "--dxdispatch {}: these inputs fail DirectML's checks at feature level {level}, so there is no DirectML \
         job to hand over (nothing was written):",
        dir.display()
    );
    for line in for_directml(msg).lines() {
        text.push_str("\n  ");
        text.push_str(line);
    }
    text
}

/// A repro being assembled in a hidden directory beside `DIR`, removed if the run ends before
/// it is moved into place.
pub struct Repro {
    tmp: tempfile::TempDir,
    dir: PathBuf,
    _guard: Pending,
}

impl Repro {
    /// Refuses a `dir` that exists (unless it is an empty directory) and makes the hidden
    /// directory beside it.
    pub fn prepare(dir: &Path) -> Result<Repro> {
        match std::fs::symlink_metadata(dir) {
            Ok(m) if m.is_dir() && std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(false) => {}
            Ok(_) => {
                bail!("already exists; a repro is written into a new (or empty) directory: remove it or name another")
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).context("cannot inspect it"),
        }
        let name = dir.file_name().ok_or_else(|| anyhow!("names no directory"))?.to_string_lossy().to_string();
        let parent = parent_dir(dir);
        if !parent.is_dir() {
            bail!("the directory {} does not exist", parent.display());
        }
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tensorop-tmp")
            .tempdir_in(parent)
            .with_context(|| format!("cannot create a temporary directory in {}", parent.display()))?;
        let guard = Pending::directory(tmp.path());
        Ok(Repro { tmp, dir: dir.to_path_buf(), _guard: guard })
    }

    /// Where the result is written while the repro is assembled.
    pub fn expected(&self) -> PathBuf {
        self.tmp.path().join(EXPECTED)
    }

    /// The repro as the destination of the result, which `out` (on [`expected`](Self::expected))
    /// writes.
    pub fn around(self, out: ToOutput, durable: bool) -> InRepro {
        InRepro { repro: self, out, durable }
    }

    /// Moves the complete repro to its name (over an empty directory where the system allows).
    /// With `durable`, every file and the hidden directory are on storage before the rename,
    /// and the directory holding `DIR` after it, so the rename is too.
    fn commit(self, durable: bool) -> Result<()> {
        let Repro { tmp, dir, _guard } = self;
        if durable {
            for f in [MODEL, INPUTS[0], INPUTS[1], README] {
                std::fs::File::open(tmp.path().join(f))
                    .and_then(|f| f.sync_all())
                    .context("cannot flush to storage (--fsync)")?;
            }
            crate::sys::sync_directory(tmp.path())
                .context("cannot flush the repro's directory to storage (--fsync)")?;
        }
        let staged = tmp.keep();
        if dir.is_dir() {
            // An empty directory: Windows does not rename over one.
            let _ = std::fs::remove_dir(&dir);
        }
        std::fs::rename(&staged, &dir).map_err(|e| {
            let _ = std::fs::remove_dir_all(&staged);
            anyhow!(e).context(format!("cannot move the repro into place at {}", dir.display()))
        })?;
        if durable {
            let parent = parent_dir(&dir);
            crate::sys::sync_directory(parent)
                .with_context(|| format!("cannot flush the directory {} to storage (--fsync)", parent.display()))?;
        }
        Ok(())
    }

    /// Called once the plan is made, while the inputs are open: writes the inputs in C order and
    /// `model.json` and `README.txt` into the hidden directory.
    pub fn write_job(&self, sem: Semantics, level: LevelChoice, plan: &Plan, inputs: [&InputTensor; 2]) -> Result<()> {
        let op = sem.op;
        let LevelChoice::Dml(level) = level else {
            bail!("internal error: a DxDispatch export at --feature-level none");
        };
        let dir = self.tmp.path();
        let row = row_for(op, level).ok_or_else(|| anyhow!("internal error: no support row"))?;
        let mut c_strides: [Vec<u64>; 2] = [vec![], vec![]];
        for (i, input) in inputs.iter().enumerate() {
            write_c_order(input, &dir.join(INPUTS[i]))
                .with_context(|| format!("cannot write input {} as {}", ["A", "B"][i], INPUTS[i]))?;
            c_strides[i] = view_strides(&input.header.shape, false, &plan.out_shape);
        }
        let d = descriptors(op, row, plan.dtype, &plan.out_shape, &c_strides);
        let elements: u64 = plan.out_shape.iter().product();
        let dims: Vec<u64> = if plan.out_shape.is_empty() { vec![1] } else { plan.out_shape.clone() };
        // The short spelling DxDispatch's own examples use for buffers (the descs keep the report's).
        let dml_type = crate::spec::dml::dml_name(plan.dtype);
        let name = op.name();
        let model = json!({
            "resources": {
                "A": { "initialValues": { "sourcePath": INPUTS[0] } },
                "B": { "initialValues": { "sourcePath": INPUTS[1] } },
                "Out": { "initialValuesDataType": dml_type, "initialValues": { "valueCount": elements, "value": 0 } },
            },
            "dispatchables": {
                name: {
                    "type": d.operator,
                    "desc": {
                        "ATensor": desc_json(&d.tensors.a),
                        "BTensor": desc_json(&d.tensors.b),
                        "OutputTensor": desc_json(&d.tensors.output),
                    }
                }
            },
            "commands": [
                { "type": "dispatch", "dispatchable": name, "bindings": { "ATensor": "A", "BTensor": "B", "OutputTensor": "Out" } },
                { "type": "writeFile", "targetPath": DML_OUTPUT, "resource": "Out", "dimensions": dims },
            ]
        });
        let mut text = serde_json::to_string_pretty(&model)?;
        text.push('\n');
        std::fs::write(dir.join(MODEL), text).context("cannot write model.json")?;
        let readme = format!(
            "DxDispatch repro written by tensorop {version}\n\
             \n\
             Job: tensorop {name} --float16 {rule} ({op}), {dtype} {shape}, checked at DirectML\n\
             feature level {level}.\n\
             Inputs: a.npy, b.npy. tensorop's result: expected.npy, float16 rounded by the rule\n\
             {rule}.\n\
             \n\
             Run it with DxDispatch, from this directory (DxDispatch writes {out} into the current\n\
             directory):\n\
             \n\
             \x20   dxdispatch model.json --dml_feature_level {level}\n\
             \n\
             Compare DirectML's result with tensorop's (exit 0 when bit-identical, 4 when not):\n\
             \n\
             \x20   tensorop compare {out} expected.npy\n\
             \n\
             or accept any result a conformant DirectML may give, whatever its release and device\n\
             (float16 rules, subnormals flushed or not, NaN payloads):\n\
             \n\
             \x20   tensorop compare {out} --conformant {name} a.npy b.npy\n\
             \n\
             Run the model on any machine, without DirectML:\n\
             \n\
             \x20   tensorop run model.json --feature-level {level} --float16 {rule}\n{float16}",
            float16 = if plan.dtype == crate::dtype::DType::F16 { float16_note(sem.float16) } else { String::new() },
            version = env!("CARGO_PKG_VERSION"),
            op = op.dml_operator(),
            dtype = plan.dtype.name(),
            shape = crate::shape::fmt_shape(&plan.out_shape),
            out = DML_OUTPUT,
            rule = sem.float16.name(),
        );
        std::fs::write(dir.join(README), readme).context("cannot write README.txt")?;
        Ok(())
    }
}

/// For a float16 job, README.txt's word on the rule `expected.npy` follows: DirectML's float16
/// bits depend on its release and device (`docs/backends.md`, "float16 by release").
fn float16_note(rule: Float16Rule) -> String {
    format!(
        "\n\
         float16: DirectML's bits depend on its release and device, and expected.npy follows the\n\
         rule {rule}. DirectML 1.8 to 1.12 store float16 toward zero, saturating at 65504\n\
         (toward-zero-saturate); 1.13 and later toward zero, overflowing to infinity\n\
         (toward-zero-inf); a device with native 16-bit arithmetic may round each step\n\
         (per-step). For the answer of the DirectML you run, export again with its version\n\
         (tensorop ... --directml-version 1.15.4 --dxdispatch DIR), run the model with it:\n\
         \n\
         \x20   tensorop run model.json --directml-version 1.15.4\n\
         \n\
         or use compare --conformant above, which accepts every rule.\n",
        rule = rule.name()
    )
}

/// The result's destination inside a repro: its finish commits `expected.npy`, then moves the
/// directory to its name.
pub struct InRepro {
    repro: Repro,
    out: ToOutput,
    durable: bool,
}

impl ResultSink for InRepro {
    fn in_place(&mut self, bytes: u64) -> Result<Option<std::fs::File>> {
        self.out.in_place(bytes)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write(bytes)
    }

    fn finish(self: Box<Self>, verdict: Option<serde_json::Value>) -> Result<Committed> {
        let InRepro { repro, out, durable } = *self;
        let committed = Box::new(out).finish(verdict)?;
        let label = format!("DxDispatch repro {}", repro.dir.display());
        repro.commit(durable).context(label)?;
        Ok(committed)
    }
}

/// A tensor desc as a model writes it: the report's fields, `Strides` only where given.
fn desc_json(t: &TensorDesc) -> serde_json::Value {
    let mut v = json!({
        "DataType": t.data_type,
        "Flags": t.flags,
        "DimensionCount": t.dimension_count,
        "Sizes": t.sizes,
        "TotalTensorSizeInBytes": t.total_tensor_size_in_bytes,
        "GuaranteedBaseOffsetAlignment": t.guaranteed_base_offset_alignment,
    });
    if let (Some(s), Some(obj)) = (&t.strides, v.as_object_mut()) {
        obj.insert("Strides".into(), json!(s));
    }
    v
}

/// Writes `input` to `path` as a little-endian C-order `.npy` (a Fortran-order input is first
/// copied in C order).
fn write_c_order(input: &InputTensor, path: &Path) -> Result<()> {
    let copy = if fortran::is_strided_fortran(input) { Some(fortran::c_order_copy(input)?) } else { None };
    let src = copy.as_ref().unwrap_or(input);
    let crate::npy::header::FileDType::Numeric(dtype) = src.header.dtype else {
        bail!("internal error: a non-numeric input");
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    w.write_all(&encode_header(dtype, &src.header.shape))?;
    src.for_each_le_chunk(|bytes| Ok(w.write_all(bytes)?))?;
    w.flush()?;
    Ok(())
}
