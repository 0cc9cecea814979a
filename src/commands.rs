//! The read-only commands: `support` (the support matrix as a table or JSON), `info` (`.npy`
//! headers) and `devices` (GPU adapters).

use crate::backend::wgpu::WgpuTuning;
use crate::cli::{DevicesArgs, InfoArgs, OpArg, SupportArgs};
use crate::npy::input::{NpyInput, Source};
use crate::op::Op;
use crate::report::InputInfo;
use crate::spec::level::{FeatureLevel, LevelChoice};
use crate::spec::matrix::{allowed, row_for};
use anyhow::{anyhow, Result};
use serde::Serialize;
use std::io::Write;

#[derive(Debug, Serialize)]
struct LevelEntry {
    level: String,
    ops: Vec<OpEntry>,
}

#[derive(Debug, Serialize)]
struct OpEntry {
    op: &'static str,
    dml_operator: &'static str,
    available: bool,
    support_row: Option<String>,
    ranks: Option<[usize; 2]>,
    dtypes: Vec<&'static str>,
}

/// `tensorop support`.
pub fn support(args: &SupportArgs, out: &mut dyn Write) -> Result<()> {
    let levels: Vec<LevelChoice> = match args.feature_level {
        Some(l) => vec![l],
        None => FeatureLevel::ALL.iter().map(|&l| LevelChoice::Dml(l)).collect(),
    };
    let ops: Vec<Op> = match args.op {
        Some(OpArg::Sub) => vec![Op::Sub],
        Some(OpArg::Sqdiff) => vec![Op::SqDiff],
        None => Op::ALL.to_vec(),
    };
    let entries: Vec<LevelEntry> = levels
        .iter()
        .map(|&level| LevelEntry {
            level: level.to_string(),
            ops: ops
                .iter()
                .map(|&op| {
                    let a = allowed(op, level);
                    OpEntry {
                        op: op.name(),
                        dml_operator: op.dml_operator(),
                        available: a.is_some(),
                        support_row: match level {
                            LevelChoice::Dml(l) => row_for(op, l).map(|r| r.since.to_string()),
                            LevelChoice::None => None,
                        },
                        ranks: a.map(|(_, r)| [r.0, r.1]),
                        dtypes: a.map(|(d, _)| d.iter().map(|d| d.name()).collect()).unwrap_or_default(),
                    }
                })
                .collect(),
        })
        .collect();
    if args.json {
        let mut text = serde_json::to_string_pretty(&serde_json::json!({ "levels": entries }))?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
        return Ok(());
    }
    writeln!(out, "{:<6} {:<7} {:<4} {:<5} DTYPES", "LEVEL", "OP", "ROW", "RANKS")?;
    for e in &entries {
        for o in &e.ops {
            let row = o.support_row.as_deref().unwrap_or("-");
            let ranks = o
                .ranks
                .map_or("-".to_string(), |[lo, hi]| if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") });
            let dtypes = if o.available { o.dtypes.join(" ") } else { "(not available at this level)".into() };
            writeln!(out, "{:<6} {:<7} {:<4} {:<5} {dtypes}", e.level, o.op, row, ranks)?;
        }
    }
    Ok(())
}

/// `tensorop info`: every file's header; a malformed file is an error naming it, after the
/// others are printed.
pub fn info(args: &InfoArgs, out: &mut dyn Write) -> Result<()> {
    let sources: Vec<Source> = args.files.iter().map(|f| Source::parse(f)).collect();
    if sources.iter().filter(|s| **s == Source::Stdin).count() > 1 {
        return Err(anyhow!("standard input can be read only once; name '-' at most once"));
    }
    let mut infos = Vec::new();
    let mut failed = 0;
    for (f, source) in args.files.iter().zip(&sources) {
        match NpyInput::open(source) {
            Ok(input) => infos.push((InputInfo::new(f, &input.header), input.header.data_bytes)),
            Err(e) => {
                eprintln!("tensorop: error: {f}: {e:#}");
                failed += 1;
            }
        }
    }
    if args.json {
        let list: Vec<serde_json::Value> = infos
            .iter()
            .map(|(i, bytes)| {
                let mut v = serde_json::to_value(i).unwrap_or_default();
                v["data_bytes"] = (*bytes).into();
                v
            })
            .collect();
        let mut text = serde_json::to_string_pretty(&list)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
    } else {
        for (i, bytes) in &infos {
            let order = if i.fortran_order { "Fortran" } else { "C" };
            writeln!(
                out,
                "{}: {} {} ({} order, {} byte order, .npy {}, {} data bytes)",
                i.path,
                i.dtype,
                crate::shape::fmt_shape(&i.shape),
                order,
                i.byte_order.replace('_', " "),
                i.npy_version,
                bytes
            )?;
        }
    }
    match failed {
        0 => Ok(()),
        n => Err(anyhow!("{n} of {} files could not be read", args.files.len())),
    }
}

/// `tensorop devices`: the adapters the wgpu backend can use.
pub fn devices(args: &DevicesArgs, tuning: &WgpuTuning, out: &mut dyn Write) -> Result<()> {
    let adapters = crate::backend::wgpu::list_adapters(tuning)?;
    if args.json {
        let mut text = serde_json::to_string_pretty(&adapters)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
        return Ok(());
    }
    for a in &adapters {
        writeln!(out, "{} ({}, {}, {})", a.name, a.api, a.device_type, a.driver)?;
        let features = if a.features.is_empty() { "none".to_string() } else { a.features.join(" ") };
        writeln!(out, "  optional shader features: {features} (tensorop emulates what is missing)")?;
        writeln!(
            out,
            "  max storage binding {} bytes, max buffer {} bytes, {} workgroups per dimension",
            a.max_storage_buffer_binding_size, a.max_buffer_size, a.max_compute_workgroups_per_dimension
        )?;
    }
    Ok(())
}
