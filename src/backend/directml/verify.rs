//! `--verify`: DirectML's output against tensorop's reference, element by element, counted by
//! the comparison core (`verdict::Tally`): bits decide (a NaN equals only the same NaN), the
//! distance of differing elements is in units in the last place, and the verdict covers what it
//! compared: "identical" needs every element of the output compared (`docs/backends.md`,
//! "--verify").

use crate::backend::Job;
use crate::dtype::DType;
use crate::op::{Float16Rule, Semantics};
use crate::text::grouped;
use crate::verdict::element::Tolerance;
use crate::verdict::{Difference, Scope, Tally};
use serde::Serialize;

/// `--verify`'s verdict: DirectML's output against the CPU backend's, in the float16 rule the
/// run names, and for float16 how many elements each rule gives. Side `a` of each difference is
/// DirectML's element, side `b` the reference's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verified {
    /// The reference: the CPU backend, in this float16 rule (float16 only).
    pub reference: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub float16_rule: Option<&'static str>,
    /// Every element of the output compared, and every one bit-identical.
    pub identical: bool,
    /// Every element of the output compared (`compared` equals `elements`).
    pub complete: bool,
    /// The first differing element, in run order: its member or dispatch, index, both values
    /// and both bit patterns.
    pub first_difference: Option<Difference>,
    /// The same as `nan_mismatches` (kept for reports read by older scripts).
    pub nan_differing: u64,
    #[serde(flatten)]
    pub tally: Tally,
    /// float16: per rule, the elements whose bits DirectML's equal.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub float16_rules: Vec<RuleMatch>,
    /// Container and model runs: the members or dispatches whose output was compared, in the
    /// order they ran (a run that stopped early lists only those).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub covered: Vec<String>,
    /// `--part`: the parts whose verdict this one merges, and how many the job has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parts: Option<PartsVerified>,
}

/// `--part`, in the part that committed the job: every part's verdict, as its marker recorded
/// it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PartsVerified {
    /// The parts of the job.
    pub of: u64,
    /// The parts that ran with `--verify` and compared their whole range, in order.
    pub verified: Vec<u64>,
    /// Of those, the parts whose output is identical to the reference.
    pub identical: Vec<u64>,
    /// Over every part: elements compared, and elements that differ.
    pub compared: u64,
    pub differing: u64,
}

impl PartsVerified {
    /// From the parts' recorded verdicts (`null` for a part without one), in part order.
    pub fn from_records(records: &[serde_json::Value]) -> PartsVerified {
        let mut p = PartsVerified { of: records.len() as u64, ..PartsVerified::default() };
        for (k, r) in (1u64..).zip(records) {
            if r.is_null() {
                continue;
            }
            p.compared += r["compared"].as_u64().unwrap_or(0);
            p.differing += r["differing"].as_u64().unwrap_or(0);
            if r["complete"] == true {
                p.verified.push(k);
            }
            if r["identical"] == true {
                p.identical.push(k);
            }
        }
        p
    }

    fn all_verified(&self) -> bool {
        self.verified.len() as u64 == self.of
    }

    fn all_identical(&self) -> bool {
        self.identical.len() as u64 == self.of
    }
}

/// How many elements of DirectML's output one float16 rule gives bit for bit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleMatch {
    pub rule: &'static str,
    pub matching: u64,
}

impl Verified {
    /// Nothing compared yet of `elements` elements of `dtype`, in the float16 rule `rule`.
    pub fn empty(dtype: DType, shape: &[u64], elements: u64, rule: Float16Rule) -> Verified {
        let f16 = dtype == DType::F16;
        let mut tally = Tally::new(dtype, shape, Tolerance::default());
        tally.elements = elements;
        Verified {
            reference: "cpu",
            float16_rule: f16.then(|| rule.name()),
            identical: false,
            complete: false,
            first_difference: None,
            nan_differing: 0,
            tally,
            float16_rules: if f16 {
                Float16Rule::ALL.iter().map(|r| RuleMatch { rule: r.name(), matching: 0 }).collect()
            } else {
                vec![]
            },
            covered: Vec::new(),
            parts: None,
        }
        .settled()
    }

    /// Nothing compared yet of `job`'s elements.
    pub fn new(job: &Job) -> Verified {
        Verified::empty(job.dtype, job.shape, job.range.end - job.range.start, job.sem.float16)
    }

    /// Sets the derived keys from the tally (and, for a committing part, every part's verdict).
    fn settle(&mut self) {
        self.identical = self.tally.identical() && self.parts.as_ref().is_none_or(PartsVerified::all_identical);
        self.complete = self.tally.complete() && self.parts.as_ref().is_none_or(PartsVerified::all_verified);
        self.first_difference = self.tally.first().cloned();
        self.nan_differing = self.tally.nan_mismatches;
    }

    /// [`settle`](Self::settle), by value.
    fn settled(mut self) -> Verified {
        self.settle();
        self
    }

    /// Names what this verdict covers: a member or a dispatch, the `n`th of the run.
    pub fn scoped(self, scope: Scope) -> Verified {
        let name = match &scope {
            Scope::Whole => None,
            Scope::Member(n, _) | Scope::Dispatch(n, _) => Some(n.clone()),
        };
        let mut v = Verified { tally: self.tally.scoped(scope), ..self };
        v.covered.extend(name);
        v.settled()
    }

    /// Compares `got`, DirectML's output elements from `start`, with `wants`: the reference's
    /// results for them under [`semantics`]`(job)`, in that order (the run's own rule first);
    /// for float16, also counts the elements each rule gives. A reference shorter than `got`
    /// leaves the rest uncompared (the verdict is then incomplete).
    pub fn check(&mut self, job: &Job, start: u64, got: &[u8], wants: &[Vec<u8>]) {
        let Some(own) = wants.first() else { return };
        self.tally.add(start, got, own);
        let mut others = wants[1..].iter();
        for (m, rule) in self.float16_rules.iter_mut().zip(Float16Rule::ALL) {
            let want = if rule == job.sem.float16 { Some(own) } else { others.next() };
            m.matching += want.map_or(0, |w| matching(job.dtype, got, w));
        }
        self.settle();
    }

    /// One line on how DirectML's output differs from the reference, or what was not compared.
    pub fn describe(&self) -> String {
        let t = &self.tally;
        let rule = self.float16_rule.map(|r| format!(" (float16 rule {r})")).unwrap_or_default();
        if let Some(p) = self.parts.as_ref().filter(|p| !p.all_identical() && t.identical()) {
            let missing: Vec<u64> = (1..=p.of).filter(|k| !p.identical.contains(k)).collect();
            return format!(
                "--verify: this part's output is identical to the CPU reference{rule}, but parts {missing:?} of {} \
                 were not verified identical ({} of their elements differ; a part run without --verify, or stopped \
                 early, is not verified): the committed result is not verified",
                p.of, p.differing
            );
        }
        if !self.complete && t.differing == 0 {
            return format!(
                "--verify: not verified: {} of {} elements were compared with the CPU reference{rule}, and they \
                 agree; the rest were not compared (the run stopped early)",
                grouped(t.compared),
                grouped(t.elements)
            );
        }
        let mut s = format!(
            "--verify: DirectML's output differs from the CPU reference{rule} in {} of {} elements",
            grouped(t.differing),
            grouped(t.compared)
        );
        if let Some(d) = &self.first_difference {
            s.push_str(&format!(
                " (the first at {}: {} against {}, bits {} against {})",
                d.place(),
                d.a,
                d.b,
                d.a_bits,
                d.b_bits
            ));
        }
        if let Some(u) = t.max_ulps {
            s.push_str(&format!("; at most {u} ULPs apart"));
        }
        if t.nan_mismatches > 0 {
            s.push_str(&format!(", {} where a NaN differs", t.nan_mismatches));
        }
        if !self.complete {
            s.push_str(&format!("; {} elements were not compared", grouped(t.elements - t.compared)));
        }
        if let Some(r) = self.float16_rules.iter().find(|r| r.matching == t.compared && t.compared > 0) {
            s.push_str(&format!("; its float16 bits follow rule {} (--float16 {})", r.rule, r.rule));
        }
        s
    }

    /// Adds another member's, dispatch's or part's verdict. Verdicts of different dtypes
    /// (container members) merge their tallies; the float16 rule counts, which then describe
    /// only some elements, are dropped.
    pub fn merge(&mut self, o: &Verified) {
        let same = self.float16_rule == o.float16_rule && self.float16_rules.len() == o.float16_rules.len();
        self.tally.merge(&o.tally);
        self.covered.extend(o.covered.iter().cloned());
        if same {
            for (m, n) in self.float16_rules.iter_mut().zip(&o.float16_rules) {
                m.matching += n.matching;
            }
        } else {
            self.float16_rule = None;
            self.float16_rules.clear();
        }
        self.settle();
    }

    /// Counts the whole run's output, `elements` in all, as what must be compared: a run that
    /// stopped before computing every member or dispatch is then incomplete.
    pub fn expecting(mut self, elements: u64) -> Verified {
        self.tally.elements = elements;
        self.settled()
    }

    /// `--part`, in the part that committed the job: the verdict holds only if every part's
    /// does (`records`: each part's verdict as its marker recorded it).
    pub fn with_parts(mut self, records: &[serde_json::Value]) -> Verified {
        self.parts = Some(PartsVerified::from_records(records));
        self.settled()
    }
}

/// The semantics `--verify`'s reference is computed in for `job`: the run's own, then, for
/// float16, every other rule in [`Float16Rule::ALL`]'s order.
pub fn semantics(job: &Job) -> Vec<Semantics> {
    let mut sems = vec![job.sem];
    if job.dtype == DType::F16 {
        let others = Float16Rule::ALL.into_iter().filter(|&r| r != job.sem.float16);
        sems.extend(others.map(|float16| Semantics { float16, ..job.sem }));
    }
    sems
}

/// The elements of `got` equal to `want`'s, bit for bit.
pub fn matching(dtype: DType, got: &[u8], want: &[u8]) -> u64 {
    let es = dtype.size();
    got.chunks_exact(es).zip(want.chunks_exact(es)).filter(|(g, w)| g == w).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16s(v: &[u16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn float16_verdicts_locate_the_first_difference_and_cover_the_output() {
        let mut v = Verified::empty(DType::F16, &[2, 3], 6, Float16Rule::Nearest);
        v.tally.add(0, &f16s(&[0x3c00, 0x3bff, 0x7c00]), &f16s(&[0x3c00, 0x3c00, 0x7bff]));
        let v = v.settled();
        assert_eq!((v.identical, v.complete, v.tally.differing, v.tally.max_ulps), (false, false, 2, Some(1)));
        let d = v.first_difference.clone().expect("a difference");
        assert_eq!((d.index, d.a_bits.as_str(), d.b_bits.as_str()), (vec![0, 1], "0x3BFF", "0x3C00"));
        assert!(v.describe().contains("in 2 of 3 elements"), "{}", v.describe());
        assert!(v.describe().contains("3 elements were not compared"), "{}", v.describe());
    }

    #[test]
    fn an_incomplete_verdict_is_never_identical() {
        // Half the output compared, all equal: not identical, and the line says why.
        let mut v = Verified::empty(DType::U8, &[4], 4, Float16Rule::Nearest);
        v.tally.add(0, &[1, 2], &[1, 2]);
        let v = v.settled();
        assert!(!v.identical && !v.complete);
        assert!(v.describe().contains("not verified: 2 of 4 elements"), "{}", v.describe());
        // A reference shorter than DirectML's chunk: the rest stays uncompared.
        let mut v = Verified::empty(DType::U8, &[4], 4, Float16Rule::Nearest);
        v.tally.add(0, &[1, 2, 3, 4], &[1, 2, 3]);
        assert!(!v.settled().identical);
        // Members that ran, against the whole run's elements.
        let mut a = Verified::empty(DType::U8, &[2], 2, Float16Rule::Nearest);
        a.tally.add(0, &[1, 2], &[1, 2]);
        let a = a.scoped(Scope::Member("w".into(), 0));
        assert!(a.identical);
        let run = a.clone().expecting(5);
        assert_eq!((run.identical, run.covered.clone()), (false, vec!["w".to_string()]));
    }

    #[test]
    fn merged_verdicts_name_the_member_of_the_first_difference() {
        let mut a = Verified::empty(DType::U8, &[2], 2, Float16Rule::Nearest);
        a.tally.add(0, &[1, 2], &[1, 2]);
        let mut b = Verified::empty(DType::I8, &[2], 2, Float16Rule::Nearest);
        b.tally.add(0, &[0x80, 5], &[0x7f, 5]);
        let (a, b) = (a.scoped(Scope::Member("x".into(), 0)), b.scoped(Scope::Member("y".into(), 1)));
        let mut all = b.clone();
        all.merge(&a);
        let d = all.first_difference.clone().expect("a difference");
        assert_eq!((d.member.as_deref(), all.tally.max_ulps, all.complete), (Some("y"), Some(255), true));
        assert!(all.describe().contains("member \"y\", element [0]"), "{}", all.describe());
        assert_eq!(matching(DType::U8, &[1, 2, 3], &[1, 0, 3]), 2);
    }
}
