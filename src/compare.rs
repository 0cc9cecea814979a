//! `tensorop compare A B`: whether two results are bit-identical, or within the tolerances given
//! (`--atol` and `--rtol` as NumPy's `isclose`, `--ulps`), and when not, how far apart
//! (`docs/dxdispatch.md`, "Compare"): the count of differing elements and of those outside the
//! tolerances, the largest absolute difference (exactly), the largest distance in units in the
//! last place (floats), and the first differences with their indices. Two containers (`.npz`,
//! `.safetensors`) are compared member by member, paired by name as runs pair them. Both sides
//! stream in chunks, in C order (a Fortran-order file is read through a C-order copy), so memory
//! stays bounded. `sub --stats` answers a different question (the distribution of `a - b`): it
//! has no bit equality, no ulps and no positions.

mod elements;

use crate::cli::CompareArgs;
use crate::container::pairs::{self, Side};
use crate::container::{Container, Opened};
use crate::dtype::DType;
use crate::npy::fortran;
use crate::npy::header::FileDType;
use crate::npy::input::{InputTensor, Source};
use crate::report::summary::{counted, float_text};
use anyhow::{bail, Context, Result};
pub use elements::Tolerance;
use elements::{abs_diff, exact, ulp_distance, value, Diff};
use serde::Serialize;
use std::io::Write;

/// Exit status when the files differ (beyond the tolerances given).
pub const DIFFER: u8 = 4;

/// Exit status when two containers' members do not pair up, as for runs.
pub const UNPAIRED: u8 = 5;

/// How many differences are listed.
const FIRST: usize = 10;

/// One differing element.
#[derive(Debug, Serialize)]
struct Difference {
    index: Vec<u64>,
    a: String,
    b: String,
    /// Units in the last place between them (floats, both finite or both infinite).
    ulps: Option<u64>,
}

/// What `compare` found for one pair of tensors.
#[derive(Debug, Serialize)]
struct Comparison {
    a: String,
    b: String,
    /// The member's name, when two containers are compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    member: Option<String>,
    dtype: &'static str,
    shape: Vec<u64>,
    elements: u64,
    identical: bool,
    /// `bit_identical`, `within_tolerance` (some elements differ, all within a tolerance given)
    /// or `different`.
    verdict: &'static str,
    /// The tolerances given (`null` when none: bit equality).
    tolerance: Option<Tolerance>,
    differing: u64,
    /// Differing elements outside every tolerance given (all of them when none is given).
    outside_tolerance: u64,
    /// Of the pairs that are numbers (not NaN) on both sides, every digit: integers, and the
    /// exact decimal expansion of a float difference; `inf` for an infinite one.
    max_abs_difference: Option<String>,
    /// The same for text: [`Diff::text`].
    #[serde(skip)]
    max_abs_text: Option<String>,
    max_abs_difference_at: Option<Vec<u64>>,
    max_ulps: Option<u64>,
    max_ulps_at: Option<Vec<u64>>,
    /// Pairs where exactly one side is NaN, or both are NaN with different bits.
    nan_mismatches: u64,
    first_differences: Vec<Difference>,
}

impl Comparison {
    /// The exit status this comparison alone gives.
    fn code(&self) -> u8 {
        if self.outside_tolerance == 0 {
            0
        } else {
            DIFFER
        }
    }
}

/// Runs `compare`; returns the exit status (0 bit-identical or within tolerance, [`DIFFER`]
/// when not, [`UNPAIRED`] for containers whose members do not pair up).
pub fn compare(args: &CompareArgs, out: &mut dyn Write) -> Result<u8> {
    if args.a == "-" && args.b == "-" {
        bail!("standard input can be read only once; name '-' at most once");
    }
    let tol = Tolerance { atol: args.atol, rtol: args.rtol, ulps: args.ulps };
    let open = |p: &str| Opened::open(&Source::parse(p)).with_context(|| p.to_string());
    match (open(&args.a)?, open(&args.b)?) {
        (Opened::Single(a), Opened::Single(b)) => {
            let c = compare_pair([&args.a, &args.b], a, b, &tol)?;
            if args.json {
                write_json(&c, out)?;
            } else {
                human(&c, out)?;
            }
            Ok(c.code())
        }
        (a @ Opened::Many(_), b @ Opened::Many(_)) => compare_containers(args, [&a, &b], &tol, out),
        _ => bail!(
            "{} and {}: one is a container and the other a .npy file; compare takes two .npy files or two \
             containers (.npz, .safetensors), whose members it pairs by name",
            args.a,
            args.b
        ),
    }
}

fn write_json(value: &impl Serialize, out: &mut dyn Write) -> Result<()> {
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
    /// Member pairs that could not be compared (different dtypes or shapes, unreadable data).
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
    let pairing = pairs::pair([oa, ob], &[])?;
    let (Opened::Many(a), Opened::Many(b)) = (oa, ob) else { bail!("internal error: not two containers") };
    let mut report = Containers {
        a: args.a.clone(),
        b: args.b.clone(),
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
    let mut c = compare_pair([&labels[0], &labels[1]], a.open_member(i)?, b.open_member(j)?, tol)?;
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

/// Compares two tensors element by element; `la` and `lb` name them.
fn compare_pair([la, lb]: [&str; 2], a: InputTensor, b: InputTensor, tol: &Tolerance) -> Result<Comparison> {
    let c_order = |input: InputTensor, label: &str| -> Result<InputTensor> {
        if fortran::is_strided_fortran(&input) {
            return fortran::c_order_copy(&input).with_context(|| format!("{label}: cannot copy to C order"));
        }
        Ok(input)
    };
    let (a, b) = (c_order(a, la)?, c_order(b, lb)?);
    let dtype = match (&a.header.dtype, &b.header.dtype) {
        (FileDType::Numeric(x), FileDType::Numeric(y)) if x == y => *x,
        (x, y) => {
            bail!("{la} is {} and {lb} is {}: compare needs two tensors of one numeric dtype", x.name(), y.name())
        }
    };
    let squeeze = |s: &[u64]| s.iter().copied().filter(|&d| d != 1).collect::<Vec<_>>();
    if squeeze(&a.header.shape) != squeeze(&b.header.shape) {
        bail!(
            "{la} has shape {} and {lb} has shape {}: not the same elements",
            crate::shape::fmt_shape(&a.header.shape),
            crate::shape::fmt_shape(&b.header.shape)
        );
    }
    let mut c = Comparison {
        a: la.to_string(),
        b: lb.to_string(),
        member: None,
        dtype: dtype.name(),
        elements: a.header.elements,
        shape: a.header.shape.clone(),
        identical: true,
        verdict: "bit_identical",
        tolerance: tol.given().then_some(*tol),
        differing: 0,
        outside_tolerance: 0,
        max_abs_difference: None,
        max_abs_text: None,
        max_abs_difference_at: None,
        max_ulps: None,
        max_ulps_at: None,
        nan_mismatches: 0,
        first_differences: Vec::new(),
    };
    let max_abs = scan(&mut c, [&a, &b], dtype, tol)?;
    c.verdict = match (c.identical, c.outside_tolerance) {
        (true, _) => "bit_identical",
        (false, 0) => "within_tolerance",
        _ => "different",
    };
    if let Some(d) = max_abs {
        c.max_abs_difference = Some(d.decimal());
        c.max_abs_text = Some(d.text());
    }
    Ok(c)
}

/// The largest absolute difference so far: its float64 estimate (rounded once from the exact
/// value, so it orders as the exact values do, but for ties) and its exact value.
type Largest = Option<(f64, Diff)>;

/// Streams both tensors in chunks, recording every difference in `c`; returns the largest
/// absolute difference of the pairs that are numbers on both sides.
fn scan(c: &mut Comparison, [a, b]: [&InputTensor; 2], dtype: DType, tol: &Tolerance) -> Result<Option<Diff>> {
    let shape = c.shape.clone();
    let unravel = |flat: u64| -> Vec<u64> {
        let mut idx = vec![0u64; shape.len()];
        let mut rest = flat;
        for k in (0..shape.len()).rev() {
            idx[k] = rest % shape[k].max(1);
            rest /= shape[k].max(1);
        }
        idx
    };
    let es = dtype.size();
    let chunk = 1usize << 16;
    let (mut ba, mut bb) = (vec![0u8; chunk * es], vec![0u8; chunk * es]);
    let mut largest: Largest = None;
    let mut at = 0u64;
    while at < c.elements {
        let k = (c.elements - at).min(chunk as u64) as usize;
        a.read_le(at, &mut ba[..k * es])?;
        b.read_le(at, &mut bb[..k * es])?;
        for (i, (x, y)) in ba[..k * es].chunks_exact(es).zip(bb[..k * es].chunks_exact(es)).enumerate() {
            if x == y {
                continue;
            }
            let flat = at + i as u64;
            c.identical = false;
            c.differing += 1;
            if !tol.allows(dtype, x, y) {
                c.outside_tolerance += 1;
            }
            let (vx, vy) = (value(dtype, x), value(dtype, y));
            if vx.is_nan() || vy.is_nan() {
                c.nan_mismatches += 1;
            } else if outgrows(&mut largest, dtype, [x, y]) {
                c.max_abs_difference_at = Some(unravel(flat));
            }
            let ulps = ulp_distance(dtype, x, y);
            if let Some(u) = ulps {
                if c.max_ulps.is_none_or(|m| u > m) {
                    c.max_ulps = Some(u);
                    c.max_ulps_at = Some(unravel(flat));
                }
            }
            if c.first_differences.len() < FIRST {
                c.first_differences.push(Difference {
                    index: unravel(flat),
                    a: exact(dtype, x),
                    b: exact(dtype, y),
                    ulps,
                });
            }
        }
        at += k as u64;
    }
    Ok(largest.map(|(_, d)| d))
}

/// Whether the difference of `x` and `y` (not NaN) is larger than `largest`, which it then
/// becomes. Floats are first compared by `|x - y|` in float64, rounded once from the exact
/// difference, so it orders as the exact differences do but for ties: only a tie (or a new
/// largest) needs the exact difference.
fn outgrows(largest: &mut Largest, dtype: DType, [x, y]: [&[u8]; 2]) -> bool {
    let int = (!dtype.is_float()).then(|| abs_diff(dtype, x, y));
    let estimate = match &int {
        Some(Diff::Int(d)) => *d as f64,
        _ => (value(dtype, x) - value(dtype, y)).abs(),
    };
    let exact_diff = || int.clone().unwrap_or_else(|| abs_diff(dtype, x, y));
    let larger = match largest {
        None => true,
        Some((m, _)) if estimate < *m => false,
        Some((m, _)) if estimate > *m => true,
        Some((_, m)) => exact_diff().cmp_exact(m).is_gt(),
    };
    if larger {
        *largest = Some((estimate, exact_diff()));
    }
    larger
}

fn human(c: &Comparison, out: &mut dyn Write) -> Result<()> {
    let shape = crate::shape::fmt_shape(&c.shape);
    let elements = counted(c.elements, "element");
    if c.identical {
        writeln!(out, "{} and {}: bit-identical ({} {shape}, {elements})", c.a, c.b, c.dtype)?;
        return Ok(());
    }
    let pct = 100.0 * c.differing as f64 / c.elements.max(1) as f64;
    let verdict = match c.outside_tolerance {
        _ if c.tolerance.is_none() => String::new(),
        0 => format!("; all within tolerance ({})", tolerance_text(c)),
        n => format!("; {n} outside tolerance ({})", tolerance_text(c)),
    };
    writeln!(
        out,
        "{} and {}: {} of {elements} differ ({pct:.3}%), {} {shape}{verdict}",
        c.a, c.b, c.differing, c.dtype
    )?;
    let idx = |i: &Option<Vec<u64>>| i.as_ref().map(|v| crate::shape::fmt_shape(v)).unwrap_or_default();
    if let Some(d) = &c.max_abs_text {
        writeln!(out, "largest absolute difference: {d} at {}", idx(&c.max_abs_difference_at))?;
    }
    if let Some(u) = c.max_ulps {
        writeln!(out, "largest distance: {u} ulp at {}", idx(&c.max_ulps_at))?;
    }
    if c.nan_mismatches > 0 {
        writeln!(out, "NaN on one side only (or NaNs of different bits): {}", c.nan_mismatches)?;
    }
    writeln!(out, "first differences (index: {} vs {}):", c.a, c.b)?;
    for d in &c.first_differences {
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
