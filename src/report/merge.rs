//! `tensorop merge-stats`: the `stats` of several reports merged exactly into the summary of
//! one run over all their elements (`docs/cli.md`, "merge-stats"). Reports of single pairs, of
//! parts (`--part`) and of container runs (every member) are read; each summary is rebuilt from
//! its counts, extremes, histogram and `exact_sum`, checked for consistency, and merged
//! ([`Summary::merge`]). Without `--by-dtype`, summaries merge by kind, as a container run's
//! `totals` do: every float dtype into one summary, every integer dtype into another.

use crate::dtype::DType;
use crate::report::Tool;
use crate::summary::{ExactSum, Number, Summary, WideInt};
use anyhow::{anyhow, bail, Context, Result};
use num_bigint::BigInt;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// The longest `exact_sum.significand` tensorop writes is about 700 digits (a float sum of 2^64
/// elements near float64's largest value); longer ones are refused before they are parsed.
const MAX_DIGITS: usize = 1000;

/// What `merge-stats` prints.
#[derive(Serialize)]
struct Merged<'a> {
    schema_version: u32,
    tool: Tool,
    op: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dtype: Option<&'a str>,
    /// Every dtype merged (without `--by-dtype`), in dtype order.
    #[serde(skip_serializing_if = "Option::is_none")]
    dtypes: Option<Vec<&'a str>>,
    reports: usize,
    /// Without `--by-dtype`: the one kind's summary; `null` when floats and integers are mixed.
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<Option<Summary>>,
    /// Floats and integers mixed: one summary of each, as a container run's `totals`.
    #[serde(skip_serializing_if = "Option::is_none")]
    stats_by_kind: Option<BTreeMap<&'a str, Summary>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    by_dtype: Option<BTreeMap<&'a str, &'a Summary>>,
}

/// One summary found in a report, with its dtype.
struct Found {
    dtype: DType,
    summary: Summary,
}

/// Which part of which job a report is (`--part`).
struct PartOf {
    job: String,
    index: u64,
    count: u64,
}

/// The merged summaries by dtype.
type ByDType = BTreeMap<DType, Summary>;

/// The parts seen of each job (`--part`): its part count, and the report of each part index.
type Parts = BTreeMap<String, (u64, BTreeMap<u64, String>)>;

/// `tensorop merge-stats REPORT...`: prints the merged summary as JSON on standard output.
pub fn merge_stats(reports: &[String], by_dtype: bool, out: &mut dyn Write) -> Result<()> {
    refuse_repeats(reports)?;
    let mut op: Option<(String, String)> = None;
    let mut merged = ByDType::new();
    let mut parts = Parts::new();
    for path in reports {
        let label = if path == "-" { "standard input".to_string() } else { path.clone() };
        let report = read_report(path).with_context(|| format!("report {label}"))?;
        let (this_op, found, part) = summaries(&report).with_context(|| format!("report {label}"))?;
        match &op {
            Some((first, first_label)) if *first != this_op => bail!(
                "report {label} is a {this_op} report but {first_label} is a {first} report: the statistics of \
                 different operators do not merge"
            ),
            Some(_) => {}
            None => op = Some((this_op, label.clone())),
        }
        if let Some(p) = part {
            record_part(&mut parts, &label, &p)?;
        }
        for f in found {
            merge_found(&mut merged, &label, f)?;
        }
    }
    check_parts(&parts)?;
    let op = op.map(|o| o.0).unwrap_or_default();
    print_merged(&op, reports.len(), by_dtype, &merged, out)
}

/// Refuses a report given twice (the same file by any path, or standard input twice).
fn refuse_repeats(reports: &[String]) -> Result<()> {
    let mut given = std::collections::BTreeSet::new();
    for r in reports {
        let same = if r == "-" { r.into() } else { std::fs::canonicalize(r).unwrap_or_else(|_| r.into()) };
        if !given.insert(same) {
            bail!("report {r} is given twice: its elements would be counted twice");
        }
    }
    Ok(())
}

/// Records that report `label` is part `p` of its job: each part once, every part of a job
/// agreeing on the part count.
fn record_part(parts: &mut Parts, label: &str, p: &PartOf) -> Result<()> {
    let (count, seen) = parts.entry(p.job.clone()).or_insert_with(|| (p.count, BTreeMap::new()));
    if let Some(other) = seen.insert(p.index, label.to_string()) {
        bail!(
            "report {label} is part {}/{} of job {}, and so is {other}: each part must be merged once",
            p.index,
            p.count,
            p.job
        );
    }
    if *count != p.count {
        bail!("report {label} is part {}/{} of job {}, whose other parts say {count} parts", p.index, p.count, p.job);
    }
    Ok(())
}

/// Merges summary `f` of report `label` into the summary of its dtype.
fn merge_found(merged: &mut ByDType, label: &str, f: Found) -> Result<()> {
    let acc = merged.entry(f.dtype).or_insert_with(|| Summary::empty(f.dtype.is_float()));
    acc.merge(&f.summary, f.dtype.is_float()).with_context(|| format!("report {label}"))
}

/// Refuses a job some of whose parts' reports are missing.
fn check_parts(parts: &Parts) -> Result<()> {
    for (job, (count, seen)) in parts {
        let missing: Vec<String> = (1..=*count).filter(|k| !seen.contains_key(k)).map(|k| k.to_string()).collect();
        if !missing.is_empty() {
            bail!(
                "job {job} has {count} parts, but the report{} of part{} {} {} missing: merge every part's report",
                if missing.len() == 1 { "" } else { "s" },
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", "),
                if missing.len() == 1 { "is" } else { "are" }
            );
        }
    }
    Ok(())
}

/// Writes the merged summary of operator `op` to `out` as JSON: by kind, as a container run's
/// `totals` (every float dtype in one summary, every integer dtype in another), or with
/// `by_dtype` one summary per dtype.
fn print_merged(op: &str, reports: usize, by_dtype: bool, merged: &ByDType, out: &mut dyn Write) -> Result<()> {
    let tool = Tool { name: "tensorop", version: env!("CARGO_PKG_VERSION") };
    let empty = Merged {
        schema_version: 1,
        tool,
        op,
        dtype: None,
        dtypes: None,
        reports,
        stats: None,
        stats_by_kind: None,
        by_dtype: None,
    };
    let result = if by_dtype {
        let by = merged.iter().map(|(d, s)| (d.name(), s)).collect();
        Merged { by_dtype: Some(by), ..empty }
    } else {
        if merged.is_empty() {
            bail!("the reports hold no statistics (a container report without members); add --by-dtype for an empty result");
        }
        let mut kinds: BTreeMap<&str, Summary> = BTreeMap::new();
        for (d, s) in merged {
            let kind = if d.is_float() { "float" } else { "int" };
            kinds.entry(kind).or_insert_with(|| Summary::empty(d.is_float())).merge(s, d.is_float())?;
        }
        let dtypes: Vec<&str> = merged.keys().map(|d| d.name()).collect();
        let dtype = (dtypes.len() == 1).then(|| dtypes[0]);
        let (stats, stats_by_kind) =
            if kinds.len() == 1 { (kinds.into_values().next(), None) } else { (None, Some(kinds)) };
        Merged { dtype, dtypes: Some(dtypes), stats: Some(stats), stats_by_kind, ..empty }
    };
    let mut text = serde_json::to_string_pretty(&result).context("cannot serialise the merged statistics")?;
    text.push('\n');
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Reads one report (a file, or standard input for `-`) as JSON.
fn read_report(path: &str) -> Result<Value> {
    let mut text = Vec::new();
    if path == "-" {
        std::io::stdin().lock().read_to_end(&mut text)?;
    } else {
        std::fs::File::open(path)?.read_to_end(&mut text)?;
    }
    serde_json::from_slice(&text).context("not a JSON report")
}

/// The operator, the summaries and the part of a report.
fn summaries(report: &Value) -> Result<(String, Vec<Found>, Option<PartOf>)> {
    let tool = report.pointer("/tool/name").and_then(Value::as_str);
    if tool != Some("tensorop") || report.get("schema_version").and_then(Value::as_u64) != Some(1) {
        bail!("not a tensorop report (no tool.name \"tensorop\" with schema_version 1)");
    }
    let op = text(report, "op")?;
    if op != "sub" && op != "sqdiff" {
        bail!("a {op:?} report: only sub and sqdiff reports hold statistics");
    }
    let status = text(report, "status")?;
    if status != "ok" {
        let error = report.get("error").and_then(Value::as_str).unwrap_or("no message");
        bail!("the run it reports did not succeed (status {status:?}: {error}), so its statistics do not cover its result; run it again");
    }
    if report.get("dry_run").and_then(Value::as_bool) == Some(true) {
        bail!("a --dry-run report: nothing was computed, so it holds no statistics");
    }
    let mut found = Vec::new();
    if let Some(members) = report.get("members") {
        let members = members.as_array().ok_or_else(|| anyhow!("'members' is not a list"))?;
        for m in members {
            let name = m.get("name").and_then(Value::as_str).unwrap_or("?");
            let dtype = m.pointer("/inputs/0/dtype").and_then(Value::as_str).unwrap_or("?");
            let dtype = DType::from_name(dtype).ok_or_else(|| anyhow!("member {name:?}: unknown dtype {dtype:?}"))?;
            let stats = stats_of(m).with_context(|| format!("member {name:?}"))?;
            let summary = summary_from_json(stats, dtype).with_context(|| format!("member {name:?}: stats"))?;
            found.push(Found { dtype, summary });
        }
    } else {
        let dtype = report
            .pointer("/output/dtype")
            .or_else(|| report.pointer("/inputs/0/dtype"))
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("no output dtype"))?;
        let dtype = DType::from_name(dtype).ok_or_else(|| anyhow!("unknown dtype {dtype:?}"))?;
        let summary = summary_from_json(stats_of(report)?, dtype).context("stats")?;
        found.push(Found { dtype, summary });
    }
    let part = match report.get("part") {
        None | Some(Value::Null) => None,
        Some(p) => {
            let num = |k: &str| p.get(k).and_then(Value::as_u64).ok_or_else(|| anyhow!("part.{k} is not a count"));
            let job = p.get("job").and_then(Value::as_str).ok_or_else(|| anyhow!("part.job is not a string"))?;
            Some(PartOf { job: job.to_string(), index: num("index")?, count: num("count")? })
        }
    };
    Ok((op.to_string(), found, part))
}

/// `v[key]` as a string.
fn text<'a>(v: &'a Value, key: &str) -> Result<&'a str> {
    v.get(key).and_then(Value::as_str).ok_or_else(|| anyhow!("no {key:?} string"))
}

/// The `stats` object of a report or member entry.
fn stats_of(v: &Value) -> Result<&Value> {
    match v.get("stats") {
        Some(s @ Value::Object(_)) => Ok(s),
        _ => bail!("no statistics: the run was made without --stats; run it again with --stats"),
    }
}

/// A summary of elements of `dtype`, rebuilt from its JSON form and checked: the counts add
/// up, and the rounded sum and the mean are the ones its exact sum gives.
pub fn summary_from_json(v: &Value, dtype: DType) -> Result<Summary> {
    let float = dtype.is_float();
    let count = |k: &str| v.get(k).and_then(Value::as_u64).ok_or_else(|| anyhow!("{k} is not a count"));
    let exact_sum = exact_sum_from_json(v, dtype)?;
    let hist = v.get("histogram").ok_or_else(|| anyhow!("no histogram"))?;
    let hcount = |k: &str| hist.get(k).and_then(Value::as_u64).ok_or_else(|| anyhow!("histogram.{k} is not a count"));
    let binades = binades_from_json(hist, float)?;
    let mut s = Summary {
        count: count("count")?,
        finite: count("finite")?,
        nan: count("nan")?,
        posinf: count("posinf")?,
        neginf: count("neginf")?,
        min: number_from_json(v, "min", float)?,
        max: number_from_json(v, "max", float)?,
        sum: None,
        exact_sum,
        mean: None,
        zero: hcount("zero")?,
        subnormal: hcount("subnormal")?,
        binades,
    };
    check_counts(&s, float)?;
    s.settle(float)?;
    check_rounding(v, &s, float)?;
    Ok(s)
}

/// A summary's `exact_sum` (`significand * 2^exp2`), refused when the significand is too long
/// to come from tensorop, the exponent out of range for `dtype`, or the pair not normalised.
fn exact_sum_from_json(v: &Value, dtype: DType) -> Result<ExactSum> {
    let float = dtype.is_float();
    let exact = v.get("exact_sum").ok_or_else(|| {
        anyhow!("no exact_sum: written by a tensorop older than merge-stats; run it again with this version")
    })?;
    let digits = exact
        .get("significand")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("exact_sum.significand is not a string"))?;
    if digits.len() > MAX_DIGITS {
        bail!("exact_sum.significand has {} digits, more than any sum of 2^64 elements", digits.len());
    }
    let significand = BigInt::parse_bytes(digits.as_bytes(), 10)
        .filter(|_| digits.bytes().all(|b| b.is_ascii_digit() || b == b'-'))
        .ok_or_else(|| anyhow!("exact_sum.significand {digits:?} is not a decimal integer"))?;
    let exp2 = exact.get("exp2").and_then(Value::as_i64).ok_or_else(|| anyhow!("exact_sum.exp2 is not an integer"))?;
    // Float sums are multiples of 2^-1074; integer sums are integers below 2^192.
    if !(-1074..=2200).contains(&exp2) || (!float && exp2 < 0) {
        bail!("exact_sum.exp2 {exp2} is out of range for {}", dtype.name());
    }
    let exact_sum = ExactSum::new(significand, exp2);
    if exact_sum.exp2 != exp2 || exact_sum.significand.to_string() != digits {
        bail!("exact_sum {digits} * 2^{exp2} is not normalised (the significand is odd, or 0 with exp2 0)");
    }
    Ok(exact_sum)
}

/// `v[k]` (`min` or `max`) as a number of the summary's kind: `None` for null.
fn number_from_json(v: &Value, k: &str, float: bool) -> Result<Option<Number>> {
    match v.get(k) {
        None => bail!("no {k}"),
        Some(Value::Null) => Ok(None),
        Some(x) if float => x.as_f64().map(|f| Some(Number::Float(f))).ok_or_else(|| anyhow!("{k} is not a number")),
        Some(x) => {
            let i = x.as_i64().map(i128::from).or_else(|| x.as_u64().map(i128::from));
            i.map(|i| Some(Number::Int(WideInt::small(i)))).ok_or_else(|| anyhow!("{k} is not an integer of the dtype"))
        }
    }
}

/// The histogram's binades, `(exp, count)`: each in range for the summary's kind, with a
/// count, in ascending order.
fn binades_from_json(hist: &Value, float: bool) -> Result<Vec<(i64, u64)>> {
    let mut binades = Vec::new();
    for b in hist.get("binades").and_then(Value::as_array).ok_or_else(|| anyhow!("histogram.binades is not a list"))? {
        let exp = b.get("exp").and_then(Value::as_i64).ok_or_else(|| anyhow!("a binade's exp is not an integer"))?;
        let n = b.get("count").and_then(Value::as_u64).ok_or_else(|| anyhow!("a binade's count is not a count"))?;
        let range = if float { -1022..=1023 } else { 0..=63 };
        if !range.contains(&exp) || n == 0 || binades.last().is_some_and(|&(e, _)| e >= exp) {
            bail!("histogram.binades: exp {exp} with count {n} is out of range or out of order");
        }
        binades.push((exp, n));
    }
    Ok(binades)
}

/// Refuses counts that do not add up, and an integer summary with float-only classes.
fn check_counts(s: &Summary, float: bool) -> Result<()> {
    let classes = [s.finite, s.nan, s.posinf, s.neginf].iter().try_fold(0u64, |a, &b| a.checked_add(b));
    let histogram = s.binades.iter().map(|b| b.1).chain([s.zero, s.subnormal]).try_fold(0u64, |a, b| a.checked_add(b));
    if classes != Some(s.count)
        || histogram != Some(s.finite)
        || (s.min.is_none() != (s.finite == 0))
        || (s.max.is_none() != (s.finite == 0))
    {
        bail!("the counts do not add up (count = finite + nan + posinf + neginf, finite = the histogram's total, min and max present when finite > 0)");
    }
    if !float && (s.nan, s.posinf, s.neginf, s.subnormal) != (0, 0, 0, 0) {
        bail!("an integer summary with NaN, infinities or subnormals");
    }
    Ok(())
}

/// Refuses a report whose `sum` (floats) or `mean` is not what the settled summary `s`, rebuilt
/// from its exact sum, gives.
fn check_rounding(v: &Value, s: &Summary, float: bool) -> Result<()> {
    let given_mean = v.get("mean").and_then(Value::as_f64);
    let given_sum = match v.get("sum") {
        Some(Value::Null) => Some(None),
        Some(x) if float => x.as_f64().map(|f| Some(f.to_bits())),
        _ => None,
    };
    let sum_bits = match s.sum {
        Some(Number::Float(f)) => Some(f.to_bits()),
        _ => None,
    };
    if given_mean.map(f64::to_bits) != s.mean.map(f64::to_bits) || (float && given_sum != Some(sum_bits)) {
        bail!("sum or mean is not what exact_sum gives: the report was changed after it was written");
    }
    Ok(())
}
