//! `tensorop compare A B`: whether two results are bit-identical, or within the tolerances given
//! (`--atol` and `--rtol` as NumPy's `isclose`, `--ulps`), and when not, how far apart
//! (`docs/dxdispatch.md`, "Compare"): the count of differing elements and of those outside the
//! tolerances, the largest absolute difference (exactly), the largest distance in units in the
//! last place, and the first differences with their indices, all counted by the comparison core
//! (`verdict`). Two containers (`.npz`, `.safetensors`) are compared member by member, paired by
//! name as runs pair them; a member whose shape changed is a difference. Both sides
//! stream in chunks, in C order (a Fortran-order file is read through a C-order copy), so memory
//! stays bounded. `sub --stats` answers a different question (the distribution of `a - b`): it
//! has no bit equality, no ulps and no positions.

use crate::cli::CompareArgs;
use crate::container::pairs::{self, Side};
use crate::container::{Container, Opened};
use crate::dtype::DType;
use crate::npy::fortran;
use crate::npy::header::FileDType;
use crate::npy::input::{InputTensor, Source};
use crate::text::{counted, float_text};
use crate::verdict::element::Tolerance;
use crate::verdict::Tally;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::io::Write;

mod conformant;

/// Exit status when the files differ (beyond the tolerances given).
pub const DIFFER: u8 = 4;

/// Exit status when two containers' members do not pair up, as for runs.
pub const UNPAIRED: u8 = 5;

/// What `compare` found for one pair of tensors.
#[derive(Debug, Serialize)]
struct Comparison {
    a: String,
    b: String,
    /// The member's name, when two containers are compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    member: Option<String>,
    dtype: &'static str,
    /// A's shape, which indices refer to.
    shape: Vec<u64>,
    /// Both shapes: equal for two members compared element by element, up to dimensions of
    /// size 1 for two `.npy` files.
    shapes: [Vec<u64>; 2],
    identical: bool,
    /// `bit_identical`, `within_tolerance` (some elements differ, all within a tolerance given),
    /// `different`, or `different_shape` (the shapes hold different elements: nothing compared).
    verdict: &'static str,
    /// The tolerances given (`null` when none: bit equality).
    tolerance: Option<Tolerance>,
    /// The counts, extremes and first differences (`verdict::Tally`).
    #[serde(flatten)]
    tally: Tally,
}

impl Comparison {
    /// The exit status this comparison alone gives.
    fn code(&self) -> u8 {
        if self.verdict == "bit_identical" || self.verdict == "within_tolerance" {
            0
        } else {
            DIFFER
        }
    }
}

/// Runs `compare`; returns the exit status (0 bit-identical or within tolerance, [`DIFFER`]
/// when not, [`UNPAIRED`] for containers whose members do not pair up).
pub fn compare(args: &CompareArgs, out: &mut dyn Write) -> Result<u8> {
    if let Some(job) = &args.conformant {
        return conformant::compare(args, job, out);
    }
    let b_arg = args.b.as_deref().unwrap_or_default();
    if args.a == "-" && b_arg == "-" {
        bail!("standard input can be read only once; name '-' at most once");
    }
    let tol = Tolerance { atol: args.atol, rtol: args.rtol, ulps: args.ulps };
    let open = |p: &str| Opened::open(&Source::parse(p)).with_context(|| p.to_string());
    match (open(&args.a)?, open(b_arg)?) {
        (Opened::Single(a), Opened::Single(b)) => {
            let c = compare_pair([&args.a, b_arg], a, b, &tol, false)?;
            if args.json {
                write_json(&c, out)?;
            } else {
                human(&c, out)?;
            }
            Ok(c.code())
        }
        (a @ Opened::Many(_), b @ Opened::Many(_)) => compare_containers(args, [&a, &b], &tol, out),
        _ => bail!(
            "{} and {b_arg}: one is a container and the other a .npy file; compare takes two .npy files or two \
             containers (.npz, .safetensors), whose members it pairs by name",
            args.a,
        ),
    }
}

pub(crate) fn write_json(value: &impl Serialize, out: &mut dyn Write) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// Two containers, member by member.
#[derive(Debug, Serialize)]
struct Containers {
    a: String,
    b: String,
    /// `bit_identical`, `within_tolerance`, `different`, `unpaired` or `error`: the worst found,
    /// as the exit status says.
    verdict: &'static str,
    tolerance: Option<Tolerance>,
    /// One comparison per member pair, in A's member order.
    members: Vec<Comparison>,
    only_in_a: Vec<String>,
    only_in_b: Vec<String>,
    /// Member pairs that could not be compared (different dtypes, unreadable data). Members whose
    /// shapes differ are compared, with the verdict `different_shape`.
    errors: Vec<MemberError>,
}

#[derive(Debug, Serialize)]
struct MemberError {
    member: String,
    error: String,
}

/// Compares two containers' members paired by name. Exit status: 1 when a member pair could not
/// be compared, else [`UNPAIRED`] when a member has no partner, else [`DIFFER`] when a pair
/// differs beyond the tolerances, else 0. Every pair is compared in each case.
fn compare_containers(args: &CompareArgs, [oa, ob]: [&Opened; 2], tol: &Tolerance, out: &mut dyn Write) -> Result<u8> {
    let pairing = pairs::pair([oa, ob], &[], pairs::Shapes::Any)?;
    let (Opened::Many(a), Opened::Many(b)) = (oa, ob) else { bail!("internal error: not two containers") };
    let mut report = Containers {
        a: args.a.clone(),
        b: args.b.clone().unwrap_or_default(),
        verdict: "bit_identical",
        tolerance: tol.given().then_some(*tol),
        members: Vec::new(),
        only_in_a: pairing.only_in_a,
        only_in_b: pairing.only_in_b,
        errors: Vec::new(),
    };
    for pair in &pairing.pairs {
        let [Side::Member(i), Side::Member(j)] = pair.sides else { continue };
        match compare_members([a, b], [i, j], tol) {
            Ok(c) => report.members.push(c),
            Err(e) => report.errors.push(MemberError { member: pair.name.clone(), error: format!("{e:#}") }),
        }
    }
    let code = if !report.errors.is_empty() {
        report.verdict = "error";
        1
    } else if !report.only_in_a.is_empty() || !report.only_in_b.is_empty() {
        report.verdict = "unpaired";
        UNPAIRED
    } else if report.members.iter().any(|c| c.code() != 0) {
        report.verdict = "different";
        DIFFER
    } else {
        if report.members.iter().any(|c| !c.identical) {
            report.verdict = "within_tolerance";
        }
        0
    };
    if args.json {
        write_json(&report, out)?;
    } else {
        human_containers(&report, out)?;
    }
    Ok(code)
}

/// Member `i` of `a` against member `j` of `b`.
fn compare_members([a, b]: [&Container; 2], [i, j]: [usize; 2], tol: &Tolerance) -> Result<Comparison> {
    let name = &a.members[i].name;
    let labels = [format!("{}[{name}]", a.label), format!("{}[{name}]", b.label)];
    let mut c = compare_pair([&labels[0], &labels[1]], a.open_member(i)?, b.open_member(j)?, tol, true)?;
    c.member = Some(name.clone());
    Ok(c)
}

fn human_containers(r: &Containers, out: &mut dyn Write) -> Result<()> {
    for c in &r.members {
        human(c, out)?;
    }
    for e in &r.errors {
        writeln!(out, "member {:?}: cannot compare: {}", e.member, e.error)?;
    }
    for (names, side, path) in [(&r.only_in_a, "A", &r.a), (&r.only_in_b, "B", &r.b)] {
        if !names.is_empty() {
            let n = counted(names.len() as u64, "member");
            writeln!(out, "{n} only in {side} ({path}), unpaired: {}", names.join(", "))?;
        }
    }
    let n = |f: &dyn Fn(&Comparison) -> bool| r.members.iter().filter(|c| f(c)).count();
    let mut line = format!(
        "{} and {}: {} compared: {} bit-identical, {} within tolerance, {} differ",
        r.a,
        r.b,
        counted(r.members.len() as u64, "member pair"),
        n(&|c| c.identical),
        n(&|c| !c.identical && c.code() == 0),
        n(&|c| c.code() != 0),
    );
    let reshaped = n(&|c| c.verdict == "different_shape");
    if reshaped > 0 {
        line += &format!(" ({reshaped} in shape)");
    }
    let unpaired = r.only_in_a.len() + r.only_in_b.len();
    if unpaired > 0 {
        line += &format!("; {} without a partner", counted(unpaired as u64, "member"));
    }
    if !r.errors.is_empty() {
        line += &format!("; {} not comparable", counted(r.errors.len() as u64, "member pair"));
    }
    writeln!(out, "{line}")?;
    Ok(())
}

/// Compares two tensors element by element; `la` and `lb` name them. Two `.npy` files hold the
/// same elements when their shapes are equal up to dimensions of size 1 (`strict` false: a
/// DirectML output padded to rank 4 against NumPy's); two members of containers when their
/// shapes are equal (`strict`). Shapes that differ are a difference, not an error.
fn compare_pair(
    [la, lb]: [&str; 2],
    a: InputTensor,
    b: InputTensor,
    tol: &Tolerance,
    strict: bool,
) -> Result<Comparison> {
    let c_order = |input: InputTensor, label: &str| -> Result<InputTensor> {
        if fortran::is_strided_fortran(&input) {
            return fortran::c_order_copy(&input).with_context(|| format!("{label}: cannot copy to C order"));
        }
        Ok(input)
    };
    let dtype = match (&a.header.dtype, &b.header.dtype) {
        (FileDType::Numeric(x), FileDType::Numeric(y)) if x == y => *x,
        (x, y) => {
            bail!("{la} is {} and {lb} is {}: compare needs two tensors of one numeric dtype", x.name(), y.name())
        }
    };
    let squeeze = |s: &[u64]| s.iter().copied().filter(|&d| d != 1).collect::<Vec<_>>();
    let (sa, sb) = (&a.header.shape, &b.header.shape);
    let same = if strict { sa == sb } else { squeeze(sa) == squeeze(sb) };
    let mut c = Comparison {
        a: la.to_string(),
        b: lb.to_string(),
        member: None,
        dtype: dtype.name(),
        shape: sa.clone(),
        shapes: [sa.clone(), sb.clone()],
        identical: false,
        verdict: "different_shape",
        tolerance: tol.given().then_some(*tol),
        tally: Tally::new(dtype, sa, *tol),
    };
    if !same {
        return Ok(c);
    }
    let (a, b) = (c_order(a, la)?, c_order(b, lb)?);
    scan(&mut c.tally, [&a, &b], dtype)?;
    c.identical = c.tally.identical();
    c.verdict = c.tally.verdict();
    Ok(c)
}

/// Streams both tensors in chunks into `tally`.
fn scan(tally: &mut Tally, [a, b]: [&InputTensor; 2], dtype: DType) -> Result<()> {
    let es = dtype.size();
    let chunk = 1usize << 16;
    let (mut ba, mut bb) = (vec![0u8; chunk * es], vec![0u8; chunk * es]);
    let mut at = 0u64;
    while at < tally.elements {
        let k = (tally.elements - at).min(chunk as u64) as usize;
        a.read_le(at, &mut ba[..k * es])?;
        b.read_le(at, &mut bb[..k * es])?;
        tally.add(at, &ba[..k * es], &bb[..k * es]);
        at += k as u64;
    }
    Ok(())
}

fn human(c: &Comparison, out: &mut dyn Write) -> Result<()> {
    let shape = crate::shape::fmt_shape(&c.shape);
    let t = &c.tally;
    let elements = counted(t.elements, "element");
    if c.verdict == "different_shape" {
        let [sa, sb] = c.shapes.clone().map(|s| crate::shape::fmt_shape(&s));
        writeln!(out, "{} and {}: different shapes, {sa} and {sb} ({}): not compared", c.a, c.b, c.dtype)?;
        return Ok(());
    }
    if c.identical {
        writeln!(out, "{} and {}: bit-identical ({} {shape}, {elements})", c.a, c.b, c.dtype)?;
        return Ok(());
    }
    let pct = 100.0 * t.differing as f64 / t.elements.max(1) as f64;
    let verdict = match t.outside_tolerance {
        _ if c.tolerance.is_none() => String::new(),
        0 => format!("; all within tolerance ({})", tolerance_text(c)),
        n => format!("; {n} outside tolerance ({})", tolerance_text(c)),
    };
    writeln!(
        out,
        "{} and {}: {} of {elements} differ ({pct:.3}%), {} {shape}{verdict}",
        c.a, c.b, t.differing, c.dtype
    )?;
    let idx = |i: &Option<Vec<u64>>| i.as_ref().map(|v| crate::shape::fmt_shape(v)).unwrap_or_default();
    if let Some(d) = t.max_abs_text() {
        writeln!(out, "largest absolute difference: {d} at {}", idx(&t.max_abs_difference_at))?;
    }
    if let Some(u) = t.max_ulps {
        writeln!(out, "largest distance: {u} ulp at {}", idx(&t.max_ulps_at))?;
    }
    if t.nan_mismatches > 0 {
        writeln!(out, "NaN on one side only (or NaNs of different bits): {}", t.nan_mismatches)?;
    }
    writeln!(out, "first differences (index: {} vs {}):", c.a, c.b)?;
    for d in &t.first_differences {
        let ulps = d.ulps.map(|u| format!(" ({u} ulp)")).unwrap_or_default();
        writeln!(out, "  {}: {} vs {}{ulps}", crate::shape::fmt_shape(&d.index), d.a, d.b)?;
    }
    Ok(())
}

/// The tolerances given, as flags: `--atol 1e-6 --ulps 2`.
fn tolerance_text(c: &Comparison) -> String {
    let Some(t) = &c.tolerance else { return String::new() };
    let mut parts = Vec::new();
    if let Some(x) = t.atol {
        parts.push(format!("--atol {}", float_text(x)));
    }
    if let Some(x) = t.rtol {
        parts.push(format!("--rtol {}", float_text(x)));
    }
    if let Some(n) = t.ulps {
        parts.push(format!("--ulps {n}"));
    }
    parts.join(" ")
}
