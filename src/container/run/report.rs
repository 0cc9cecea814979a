//! What a container run tells: the `--stats` totals on standard error, the members' summaries
//! merged exactly as they finish, and the report (`report::container`).

use super::{digest, MemberRun, Trace};
use crate::backend::directml::verify::Verified;
use crate::config::Config;
use crate::container::pairs::{Pairing, Reshaped};
use crate::outcome::Outcome;
use crate::report::container::*;
use crate::report::{ms, BackendInfo, BroadcastInfo, Head, RunStatus};
use crate::spec::dml::descriptors;
use crate::spec::level::LevelChoice;
use crate::spec::matrix::row_for;
use crate::summary::{Accumulator, Summary};
use crate::verdict::Scope;
use digest::differs;
use std::time::Duration;

/// `--stats` on standard error ([`digest::print`]): the totals, then the worst members.
pub(super) fn print_summary(cfg: &Config, members: &[MemberRun], reshaped: &[Reshaped], merged: &Merged) {
    if !cfg.summarise {
        return;
    }
    let rows: Vec<digest::Row> = members
        .iter()
        .filter_map(|m| {
            Some(digest::Row {
                name: &m.pair.name,
                dtype: m.dtype.map_or("-", |d| d.name()),
                shape: m.validation.out_shape.as_deref().unwrap_or(&[]),
                shapes: m.shapes_differ().then(|| [m.inputs[0].shape.as_slice(), m.inputs[1].shape.as_slice()]),
                identical: m.identical,
                summary: m.summary.as_ref()?,
            })
        })
        .collect();
    let totals: Vec<(&str, &Summary)> = match merged {
        Merged { all: Some(s), .. } => vec![("all members", s)],
        Merged { all: None, float: Some(f), int: Some(i) } => vec![("float members", f), ("integer members", i)],
        _ => Vec::new(),
    };
    digest::print(cfg, &rows, reshaped, &totals);
}

/// The members' summaries merged: `all` when they are of one kind, else one per kind.
pub(super) struct Merged {
    all: Option<crate::summary::Summary>,
    float: Option<crate::summary::Summary>,
    int: Option<crate::summary::Summary>,
}

/// The pairs' partial summaries merged as they finish, one per kind (merging is exact and
/// order-free, so the totals do not depend on which pair finished first).
#[derive(Default)]
pub(super) struct Merging {
    float: Option<Accumulator>,
    int: Option<Accumulator>,
    /// `--verify`: every pair's verdict, merged.
    pub(super) verified: Option<Verified>,
    /// `--verify`: the verdicts merged so far (members finish in their order).
    verdicts: u64,
}

impl Merging {
    /// Adds the verdict of member `name`.
    pub(super) fn verified(&mut self, name: &str, v: Verified) {
        let v = v.scoped(Scope::Member(name.to_string(), self.verdicts));
        self.verdicts += 1;
        match &mut self.verified {
            Some(mine) => mine.merge(&v),
            None => self.verified = Some(v),
        }
    }

    pub(super) fn add(&mut self, a: &Accumulator) {
        let slot = match a {
            Accumulator::Float(_) => &mut self.float,
            Accumulator::Int(_) => &mut self.int,
        };
        match slot {
            Some(acc) => acc.merge(a),
            None => *slot = Some(a.clone()),
        }
    }

    pub(super) fn finish(&self) -> Merged {
        let [f, i] = [&self.float, &self.int].map(|a| a.as_ref().map(Accumulator::finish));
        match (f, i) {
            (Some(f), Some(i)) => Merged { all: None, float: Some(f), int: Some(i) },
            (one, other) => Merged { all: one.or(other), float: None, int: None },
        }
    }
}

/// The report of the run.
pub(super) fn report(
    cfg: &Config,
    inputs: [ContainerInput; 2],
    pairing: &Pairing,
    members: Vec<MemberRun>,
    trace: Trace,
    outcome: &Outcome,
    total: Duration,
) -> ContainerReport {
    let (status, error) = outcome.status();
    let merged = trace.merging.finish();
    let verify = trace.merging.verified;
    let computed = trace.execute.is_some();
    let minimum = if members.iter().all(|m| m.validation.minimum_level.is_some()) {
        members.iter().filter_map(|m| m.validation.minimum_level).max().map(|l| l.to_string())
    } else {
        None
    };
    let summaries: Vec<Option<Summary>> = members.iter().map(|m| m.summary.clone()).collect();
    let totals = Totals {
        pairs: members.len(),
        ok: members.iter().filter(|m| m.validation.valid()).count(),
        invalid: members.iter().filter(|m| !m.validation.valid()).count(),
        unpaired: pairing.only_in_a.len() + pairing.only_in_b.len(),
        shape_changed: pairing.reshaped.len(),
        minimum_feature_level: minimum,
        elements: members.iter().map(|m| m.elements).sum(),
        differing: (cfg.summarise && computed).then(|| differing(&members) + pairing.reshaped.len()),
        stats: merged.all,
        stats_by_kind: match (merged.float, merged.int) {
            (Some(float), Some(int)) => Some(StatsByKind { float, int }),
            _ => None,
        },
    };
    let named: Vec<(&str, Option<&Summary>)> =
        members.iter().zip(&summaries).map(|(m, s)| (m.pair.name.as_str(), s.as_ref())).collect();
    let ranks = digest::ranks(cfg.sem.op, &named);
    let entries =
        members.into_iter().zip(summaries).zip(ranks).map(|((m, stats), rank)| entry(cfg, m, stats, rank)).collect();
    let gpu = cfg.backend.kind().on_gpu();
    ContainerReport {
        head: Head::new(status, status == RunStatus::Ok && totals.invalid == 0, error),
        op: cfg.sem.op.name(),
        dml_operator: cfg.sem.op.dml_operator(),
        float16_rule: cfg.sem.float16.name(),
        feature_level: cfg.level.to_string(),
        inputs,
        members: entries,
        unpaired: Unpaired {
            only_in_a: pairing.only_in_a.clone(),
            only_in_b: pairing.only_in_b.clone(),
            shape_changed: pairing
                .reshaped
                .iter()
                .map(|r| ShapeChanged { name: r.name.clone(), shapes: r.shapes.clone() })
                .collect(),
            skipped: cfg.skip_unpaired,
        },
        totals,
        verify,
        output: trace.output,
        backend: BackendInfo {
            name: cfg.backend.name(),
            device: trace.device,
            threads: (!gpu).then_some(cfg.threads),
            threads_used: trace.threads_used.filter(|_| !gpu),
        },
        bytes_read: trace.bytes_read,
        bytes_written: trace.bytes_written,
        dry_run: cfg.dry_run,
        timings_ms: ContainerTimings {
            open: ms(trace.open),
            validate: ms(trace.validate),
            execute: trace.execute.map_or(0.0, ms),
            total: ms(total),
        },
    }
}

/// The computed member pairs that differ: two containers' members not bit-identical (or of
/// different shapes), a `.npy` against a member whose result is not all zeros.
fn differing(members: &[MemberRun]) -> usize {
    let pair_differs = |m: &MemberRun| match m.identical {
        Some(same) => !same,
        None => m.summary.as_ref().is_some_and(|s| differs(s) || m.shapes_differ()),
    };
    members.iter().filter(|m| m.summary.is_some() && pair_differs(m)).count()
}

/// A member pair's entry in the report.
pub(super) fn entry(cfg: &Config, m: MemberRun, stats: Option<Summary>, rank: Option<usize>) -> MemberEntry {
    let valid = m.validation.valid();
    let dml = match (cfg.level, m.dtype, &m.validation.out_shape, &m.strides) {
        (LevelChoice::Dml(level), Some(dtype), Some(shape), Some(strides)) => {
            row_for(cfg.sem.op, level).map(|row| descriptors(cfg.sem.op, row, dtype, shape, strides))
        }
        _ => None,
    };
    MemberEntry {
        status: if valid { RunStatus::Ok } else { RunStatus::Invalid },
        shapes_differ: m.shapes_differ(),
        identical: m.identical,
        inputs: m.inputs,
        support_row: m.validation.support_row.map(|r| r.to_string()),
        minimum_feature_level: m.validation.minimum_level.map(|l| l.to_string()),
        broadcast: match (&m.validation.out_shape, m.strides) {
            (Some(shape), Some(strides)) => {
                Some(BroadcastInfo { mode: m.broadcast.name(), shape: shape.clone(), strides })
            }
            _ => None,
        },
        checks: m.validation.checks,
        dml,
        elements: m.elements,
        stats,
        rank,
        output_member: m.written.then(|| m.pair.name.clone()),
        name: m.pair.name,
    }
}
