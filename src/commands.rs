//! The read-only commands: `support` (the support matrix as a table or JSON), `info` (`.npy`
//! headers, and the members of `.npz` and `.safetensors` containers) and `devices` (GPU
//! adapters).

use crate::backend::wgpu::WgpuTuning;
use crate::cli::{DevicesArgs, InfoArgs, OpArg, SupportArgs};
use crate::container::Opened;
use crate::npy::header::ByteOrder;
use crate::npy::input::Source;
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

/// What `info` found in one file: a `.npy` header, or a container's members.
enum Found {
    /// The header as the report shows it, the data's bytes, and the byte order.
    Npy(InputInfo, u64, ByteOrder),
    Container(ContainerInfo),
}

/// A container as `info --json` lists it.
#[derive(Debug, Serialize)]
struct ContainerInfo {
    path: String,
    /// `npz` or `safetensors`.
    format: &'static str,
    /// The file's size in bytes.
    file_bytes: u64,
    members: Vec<MemberInfo>,
}

/// One member of a container, from its directory (no data read, nothing inflated).
#[derive(Debug, Serialize)]
struct MemberInfo {
    name: String,
    dtype: String,
    shape: Vec<u64>,
    byte_order: &'static str,
    fortran_order: bool,
    /// An `.npz` member's `.npy` version; `null` in `.safetensors`.
    npy_version: Option<String>,
    data_bytes: u64,
    #[serde(skip)]
    order: ByteOrder,
}

/// `tensorop info`: every file's header, or every member of a container; a malformed file is an
/// error naming it, after the others are printed.
pub fn info(args: &InfoArgs, out: &mut dyn Write) -> Result<()> {
    let sources: Vec<Source> = args.files.iter().map(|f| Source::parse(f)).collect();
    if sources.iter().filter(|s| **s == Source::Stdin).count() > 1 {
        return Err(anyhow!("standard input can be read only once; name '-' at most once"));
    }
    let mut found = Vec::new();
    let mut failed = 0;
    for (f, source) in args.files.iter().zip(&sources) {
        match info_of(f, source) {
            Ok(x) => found.push(x),
            Err(e) => {
                eprintln!("tensorop: error: {f}: {e:#}");
                failed += 1;
            }
        }
    }
    if args.json {
        let list = found
            .iter()
            .map(|x| match x {
                Found::Npy(i, bytes, _) => {
                    let mut v = serde_json::to_value(i)?;
                    v["data_bytes"] = (*bytes).into();
                    Ok(v)
                }
                Found::Container(c) => serde_json::to_value(c),
            })
            .collect::<serde_json::Result<Vec<_>>>()?;
        let mut text = serde_json::to_string_pretty(&list)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
    } else {
        for x in &found {
            info_text(x, out)?;
        }
    }
    match failed {
        0 => Ok(()),
        n => Err(anyhow!("{n} of {} files could not be read", args.files.len())),
    }
}

/// Opens one file named on the command line and describes it.
fn info_of(f: &str, source: &Source) -> Result<Found> {
    Ok(match Opened::open(source)? {
        Opened::Single(x) => Found::Npy(InputInfo::new(f, &x.header), x.header.data_bytes, x.header.byte_order),
        Opened::Many(c) => Found::Container(ContainerInfo {
            path: f.to_string(),
            format: c.format.name(),
            file_bytes: c.size,
            members: c
                .members
                .iter()
                .map(|m| MemberInfo {
                    name: m.name.clone(),
                    dtype: m.dtype.name(),
                    shape: m.shape.clone(),
                    byte_order: m.byte_order.name(),
                    fortran_order: m.fortran_order,
                    npy_version: m.npy_version.map(|(major, minor)| format!("{major}.{minor}")),
                    data_bytes: m.data_bytes,
                    order: m.byte_order,
                })
                .collect(),
        }),
    })
}

/// `info`'s text: one line per `.npy` file; a container's line, then one indented line per member.
fn info_text(found: &Found, out: &mut dyn Write) -> Result<()> {
    let order = |fortran: bool| if fortran { "Fortran order" } else { "C order" };
    match found {
        Found::Npy(i, bytes, byte_order) => {
            writeln!(
                out,
                "{}: {} {} ({}, {}, .npy {}, {} data bytes)",
                i.path,
                i.dtype,
                crate::shape::fmt_shape(&i.shape),
                order(i.fortran_order),
                byte_order.describe(),
                i.npy_version,
                crate::text::grouped(*bytes),
            )?;
        }
        Found::Container(c) => {
            let members = crate::text::counted(c.members.len() as u64, "member");
            writeln!(out, "{}: {}, {members}, {} bytes", c.path, c.format, crate::text::grouped(c.file_bytes))?;
            for m in &c.members {
                let version = m.npy_version.as_ref().map(|v| format!(", .npy {v}")).unwrap_or_default();
                writeln!(
                    out,
                    "  {}: {} {} ({}, {}{version}, {} data bytes)",
                    m.name,
                    m.dtype,
                    crate::shape::fmt_shape(&m.shape),
                    order(m.fortran_order),
                    m.order.describe(),
                    crate::text::grouped(m.data_bytes)
                )?;
            }
        }
    }
    Ok(())
}

/// `tensorop devices`: the adapters the wgpu backend can use, then (Windows) what DirectML
/// reports on each DXGI adapter; `env` gives the directml backend's settings.
pub fn devices(
    args: &DevicesArgs,
    tuning: &WgpuTuning,
    env: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> Result<()> {
    let directml = cfg!(windows).then(|| crate::backend::directml::list(env));
    // Where DirectML opens on an adapter, wgpu's finding none is no error.
    let usable = matches!(&directml, Some(Ok(l)) if l.iter().any(|d| d.max_feature_level.is_some()));
    let (adapters, none) = match crate::backend::wgpu::list_adapters(tuning) {
        Ok(a) => (a, None),
        Err(e) => (vec![], Some(e)),
    };
    if args.json {
        // Valid JSON whatever is found: an API that lists nothing is an entry with the reason.
        let mut all: Vec<Entry> = adapters.iter().map(Entry::Wgpu).collect();
        if let Some(e) = &none {
            all.push(Entry::Missing { api: "wgpu", error: format!("{e:#}") });
        }
        match &directml {
            Some(Ok(list)) => all.extend(list.iter().map(Entry::Directml)),
            Some(Err(e)) => all.push(Entry::Missing { api: "DirectML", error: format!("{e:#}") }),
            None => {}
        }
        let mut text = serde_json::to_string_pretty(&all)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
    }
    match none {
        Some(e) if !usable => return Err(e),
        _ if args.json => return Ok(()),
        _ => {}
    }
    print_wgpu(&adapters, out)?;
    match &directml {
        Some(Ok(list)) => list.iter().try_for_each(|d| print_directml(d, out))?,
        Some(Err(e)) => writeln!(out, "DirectML: not available: {e:#}")?,
        None => {}
    }
    Ok(())
}

/// One entry of `devices --json`.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Wgpu(&'a crate::backend::wgpu::AdapterEntry),
    Directml(&'a crate::backend::directml::Listed),
    /// An API that lists no adapter, and why.
    Missing {
        api: &'static str,
        error: String,
    },
}

fn print_directml(d: &crate::backend::directml::Listed, out: &mut dyn Write) -> Result<()> {
    let list = |v: &[&str]| if v.is_empty() { "none".to_string() } else { v.join(" ") };
    writeln!(out, "{} (DirectML {} from {})", d.adapter, d.dll_version, d.dll)?;
    match &d.max_feature_level {
        Some(level) => {
            writeln!(out, "  DirectML feature levels up to {level}")?;
            writeln!(out, "  sub: {}", list(&d.sub))?;
            writeln!(out, "  sqdiff: {}", list(&d.sqdiff))?;
        }
        None => writeln!(out, "  no DirectML device: {}", d.error.as_deref().unwrap_or("no reason given"))?,
    }
    Ok(())
}

fn print_wgpu(adapters: &[crate::backend::wgpu::AdapterEntry], out: &mut dyn Write) -> Result<()> {
    for a in adapters {
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
