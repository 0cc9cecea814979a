//! `tensorop compare GOT --conformant OP IN_A IN_B`: whether a device's output is, element by
//! element, a result a conformant DirectML may give for `OP` on the inputs (every float16 rule
//! of its releases and devices, subnormals flushed or kept, any NaN for a NaN;
//! `verdict::conformant`), so that DirectML's output can be checked without knowing the device.
//! Differences from tensorop's default answer (`--float16 nearest`) are counted too.

use super::{write_json, DIFFER};
use crate::cli::CompareArgs;
use crate::container::Opened;
use crate::npy::fortran;
use crate::npy::header::FileDType;
use crate::npy::input::{InputTensor, Source};
use crate::op::Op;
use crate::shape::{broadcast, fmt_shape, view_strides, Iteration};
use crate::text::counted;
use crate::verdict::conformant::{Dependence, Walk};
use crate::verdict::element::Tolerance;
use crate::verdict::Tally;
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use std::io::Write;

/// What `compare --conformant` found.
#[derive(Debug, Serialize)]
struct Conformance {
    a: String,
    /// The job whose results are allowed: `op`, `inputs`.
    conformant: Job,
    dtype: &'static str,
    shape: Vec<u64>,
    /// `conformant` (every element is a result a conformant DirectML may give), `not_conformant`
    /// or `different_shape` (not the job's output shape: nothing compared).
    verdict: &'static str,
    /// Bit-identical to tensorop's default answer (`--float16 nearest`).
    identical: bool,
    /// Against tensorop's default answer: `differing` elements, of which `outside_tolerance`
    /// are no result a conformant DirectML gives (`first_outside` the first of them).
    #[serde(flatten)]
    tally: Tally,
    /// The job's elements that a conformant DirectML may give differently, by cause.
    device_dependence: Dependence,
}

#[derive(Debug, Serialize)]
struct Job {
    op: &'static str,
    inputs: [String; 2],
}

/// Runs the comparison; returns the exit status (0 conformant, [`DIFFER`] when not).
pub(super) fn compare(args: &CompareArgs, job: &[String], out: &mut dyn Write) -> Result<u8> {
    let [op, ia, ib] = job else { bail!("--conformant takes three values: OP IN_A IN_B") };
    let op = match op.as_str() {
        "sub" => Op::Sub,
        "sqdiff" => Op::SqDiff,
        other => bail!("--conformant {other}: the operator is sub or sqdiff"),
    };
    if [&args.a, ia, ib].iter().filter(|p| p.as_str() == "-").count() > 1 {
        bail!("standard input can be read only once; name '-' at most once");
    }
    let open = |p: &str| -> Result<InputTensor> {
        match Opened::open(&Source::parse(p)).with_context(|| p.to_string())? {
            Opened::Single(x) => Ok(x),
            Opened::Many(_) => bail!("{p}: a container; compare --conformant takes .npy files"),
        }
    };
    let (got, a, b) = (open(&args.a)?, open(ia)?, open(ib)?);
    let got_shape = fmt_shape(&got.header.shape);
    let dtype = match [&got, &a, &b].map(|x| &x.header.dtype) {
        [FileDType::Numeric(x), FileDType::Numeric(y), FileDType::Numeric(z)] if x == y && y == z => *x,
        [x, y, z] => bail!(
            "{} is {}, {ia} {} and {ib} {}: compare --conformant needs one numeric dtype",
            args.a,
            x.name(),
            y.name(),
            z.name()
        ),
    };
    let (sa, sb) = (&a.header.shape, &b.header.shape);
    let shape = broadcast(sa, sb).map_err(|e| {
        anyhow!(
            "{ia} has shape {} and {ib} {}: they do not broadcast (dimension {} from the end is {} and {})",
            fmt_shape(sa),
            fmt_shape(sb),
            e.from_end,
            e.a,
            e.b
        )
    })?;
    let mut c = Conformance {
        a: args.a.clone(),
        conformant: Job { op: op.name(), inputs: [ia.clone(), ib.clone()] },
        dtype: dtype.name(),
        shape: shape.clone(),
        verdict: "different_shape",
        identical: false,
        tally: Tally::new(dtype, &shape, Tolerance::default()),
        device_dependence: Dependence::default(),
    };
    let squeeze = |s: &[u64]| s.iter().copied().filter(|&d| d != 1).collect::<Vec<_>>();
    if squeeze(&got.header.shape) == squeeze(&shape) {
        let got = if fortran::is_strided_fortran(&got) { fortran::c_order_copy(&got)? } else { got };
        let strides =
            [view_strides(sa, a.header.fortran_order, &shape), view_strides(sb, b.header.fortran_order, &shape)];
        let iter = Iteration::new(&shape, &strides[0], &strides[1]);
        let walk = Walk { op, dtype, iter: &iter, inputs: [&a, &b] };
        c.device_dependence = walk.check(&got, &mut c.tally)?;
        c.identical = c.tally.identical();
        c.verdict = if c.tally.within_tolerance() { "conformant" } else { "not_conformant" };
    }
    if args.json {
        write_json(&c, out)?;
    } else {
        human(&c, &got_shape, out)?;
    }
    Ok(if c.verdict == "conformant" { 0 } else { DIFFER })
}

fn human(c: &Conformance, got_shape: &str, out: &mut dyn Write) -> Result<()> {
    let job = format!("{}({}, {})", c.conformant.op, c.conformant.inputs[0], c.conformant.inputs[1]);
    let t = &c.tally;
    let n = counted(t.elements, "element");
    match c.verdict {
        "different_shape" => {
            writeln!(out, "{}: shape {got_shape}, not {}, the shape of {job}: not compared", c.a, fmt_shape(&c.shape))?;
        }
        "conformant" => writeln!(
            out,
            "{}: conformant: each of its {n} is a result a conformant DirectML may give for {job} ({} {} from \
             tensorop's default answer, --float16 nearest)",
            c.a,
            t.differing,
            if t.differing == 1 { "differs" } else { "differ" }
        )?,
        _ => {
            writeln!(
                out,
                "{}: not conformant: {} of {n} are no result a conformant DirectML gives for {job}",
                c.a, t.outside_tolerance
            )?;
            if let Some(d) = &t.first_outside {
                writeln!(
                    out,
                    "the first at {}: {} ({}), where tensorop's default answer is {} ({})",
                    fmt_shape(&d.index),
                    d.a,
                    d.a_bits,
                    d.b,
                    d.b_bits
                )?;
            }
        }
    }
    if c.verdict != "different_shape" {
        writeln!(out, "{}", c.device_dependence.line())?;
    }
    Ok(())
}
