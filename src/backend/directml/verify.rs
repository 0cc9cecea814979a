//! `--verify`: DirectML's output against tensorop's reference, element by element. Bits decide
//! (a NaN equals only the same NaN); where they differ, the distance is counted in units in the
//! last place (ULPs: adjacent floats of the type are 1 apart; integers by their difference).

use crate::backend::{cpu, Emit, Job};
use crate::dtype::DType;
use crate::op::{Float16Rule, Semantics};
use anyhow::Result;
use serde::Serialize;

/// `--verify`'s verdict: DirectML's output against the CPU backend's, in the float16 rule the
/// run names, and for float16 how many elements each rule gives.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Verified {
    /// The reference: the CPU backend, in this float16 rule (float16 only).
    pub reference: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub float16_rule: Option<&'static str>,
    pub identical: bool,
    #[serde(flatten)]
    pub tally: Tally,
    /// float16: per rule, the elements whose bits DirectML's equal.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub float16_rules: Vec<RuleMatch>,
}

/// How many elements of DirectML's output one float16 rule gives bit for bit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleMatch {
    pub rule: &'static str,
    pub matching: u64,
}

impl Verified {
    pub fn new(job: &Job) -> Verified {
        let f16 = job.dtype == DType::F16;
        Verified {
            reference: "cpu",
            float16_rule: f16.then(|| job.sem.float16.name()),
            identical: true,
            tally: Tally::default(),
            float16_rules: if f16 {
                Float16Rule::ALL.iter().map(|r| RuleMatch { rule: r.name(), matching: 0 }).collect()
            } else {
                vec![]
            },
        }
    }

    /// Compares `got`, DirectML's output elements `range` of `job`, with the reference
    /// (computed into `want`); for float16, also with the other rules' results.
    pub fn check(&mut self, job: &Job, range: std::ops::Range<u64>, got: &[u8], want: &mut Vec<u8>) -> Result<()> {
        reference(job, job.sem, range.clone(), want)?;
        self.tally.add(job.dtype, range.start, got, want);
        self.identical = self.tally.identical();
        let own = matching(job.dtype, got, want);
        for (m, rule) in self.float16_rules.iter_mut().zip(Float16Rule::ALL) {
            m.matching += if rule == job.sem.float16 {
                own
            } else {
                reference(job, Semantics { op: job.sem.op, float16: rule }, range.clone(), want)?;
                matching(job.dtype, got, want)
            };
        }
        Ok(())
    }

    /// One line on how DirectML's output differs from the reference.
    pub fn describe(&self) -> String {
        let t = &self.tally;
        let mut s = format!(
            "--verify: DirectML's output differs from the CPU reference{} in {} of {} elements (the first is element {}); \
             at most {} ULPs apart",
            self.float16_rule.map(|r| format!(" (float16 rule {r})")).unwrap_or_default(),
            t.differing,
            t.elements,
            t.first_difference.unwrap_or(0),
            t.max_ulps,
        );
        if t.nan_differing > 0 {
            s.push_str(&format!(", {} where one side is NaN", t.nan_differing));
        }
        if let Some(r) = self.float16_rules.iter().find(|r| r.matching == t.elements) {
            s.push_str(&format!("; its float16 bits follow rule {} (--float16 {})", r.rule, r.rule));
        }
        s
    }

    /// Adds another part's verdict.
    /// Verdicts of different dtypes (container members) merge their tallies; the float16
    /// rule counts, which then describe only some elements, are dropped.
    pub fn merge(&mut self, o: &Verified) {
        let same = self.float16_rule == o.float16_rule && self.float16_rules.len() == o.float16_rules.len();
        self.tally.merge(&o.tally);
        self.identical = self.tally.identical();
        if same {
            for (m, n) in self.float16_rules.iter_mut().zip(&o.float16_rules) {
                m.matching += n.matching;
            }
        } else {
            self.float16_rule = None;
            self.float16_rules.clear();
        }
    }
}

/// The CPU backend's result for output elements `range` of `job` in `sem`, in `out`.
fn reference(job: &Job, sem: Semantics, range: std::ops::Range<u64>, out: &mut Vec<u8>) -> Result<()> {
    let sub = Job {
        sem,
        dtype: job.dtype,
        shape: job.shape,
        iter: job.iter.clone(),
        range,
        inputs: job.inputs,
        feeds: job.feeds,
        threads: job.threads,
        summarise: false,
        positional: None,
    };
    out.clear();
    cpu::run(&sub, &mut |e| {
        if let Emit::Bytes(b) = e {
            out.extend_from_slice(b);
        }
        Ok(())
    })?;
    Ok(())
}

/// What `--verify` found over a run (chunks and parts add up).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Elements compared.
    pub elements: u64,
    /// Elements whose bits differ.
    pub differing: u64,
    /// The first differing element (its index in the output).
    pub first_difference: Option<u64>,
    /// The largest distance in ULPs between differing elements that are both numbers.
    pub max_ulps: u64,
    /// Differing elements where one side is NaN (no distance).
    pub nan_differing: u64,
}

impl Tally {
    /// Compares `got` with `want` (little-endian elements of `dtype`, the output's elements
    /// from index `first`).
    pub fn add(&mut self, dtype: DType, first: u64, got: &[u8], want: &[u8]) {
        let es = dtype.size();
        for (j, (g, w)) in got.chunks_exact(es).zip(want.chunks_exact(es)).enumerate() {
            self.elements += 1;
            if g == w {
                continue;
            }
            self.differing += 1;
            self.first_difference.get_or_insert(first + j as u64);
            match distance(dtype, word(g), word(w)) {
                Some(d) => self.max_ulps = self.max_ulps.max(d),
                None => self.nan_differing += 1,
            }
        }
    }

    /// Adds another part's tally (parts in any order: the first difference is the smallest).
    pub fn merge(&mut self, o: &Tally) {
        self.elements += o.elements;
        self.differing += o.differing;
        self.max_ulps = self.max_ulps.max(o.max_ulps);
        self.nan_differing += o.nan_differing;
        self.first_difference = match (self.first_difference, o.first_difference) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    pub fn identical(&self) -> bool {
        self.differing == 0
    }
}

/// The elements of `got` equal to `want`'s, bit for bit.
pub fn matching(dtype: DType, got: &[u8], want: &[u8]) -> u64 {
    let es = dtype.size();
    got.chunks_exact(es).zip(want.chunks_exact(es)).filter(|(g, w)| g == w).count() as u64
}

fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(w)
}

/// The distance between two elements' values in ULPs; `None` where either is a NaN.
fn distance(dtype: DType, a: u64, b: u64) -> Option<u64> {
    let bits = dtype.size() as u32 * 8;
    let (x, y) = match dtype {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            let exp_bits = match dtype {
                DType::F16 => 5,
                DType::BF16 | DType::F32 => 8,
                _ => 11,
            };
            (ordered(a, bits, exp_bits)?, ordered(b, bits, exp_bits)?)
        }
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => (signed(a, bits), signed(b, bits)),
        _ => (a as i128, b as i128),
    };
    Some(u64::try_from((x - y).unsigned_abs()).unwrap_or(u64::MAX))
}

/// A float's bits as a number that counts ULPs: +0 and -0 are both 0, the next float up is 1.
fn ordered(bits_value: u64, bits: u32, exp_bits: u32) -> Option<i128> {
    let sign = 1u64 << (bits - 1);
    let magnitude = bits_value & (sign - 1);
    let mantissa_bits = bits - 1 - exp_bits;
    let inf = ((1u64 << exp_bits) - 1) << mantissa_bits;
    if magnitude > inf {
        return None;
    }
    Some(if bits_value & sign != 0 { -(magnitude as i128) } else { magnitude as i128 })
}

fn signed(v: u64, bits: u32) -> i128 {
    let shift = 64 - bits;
    (((v << shift) as i64) >> shift) as i128
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16s(v: &[u16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn float16_distances_and_nans() {
        let mut t = Tally::default();
        // 0x3bff vs 0x3c00: adjacent; +0 vs -0: 0 apart but differing bits; inf vs 65504: 1;
        // a NaN against a number: no distance; the same NaN: equal.
        t.add(
            DType::F16,
            10,
            &f16s(&[0x3bff, 0x0000, 0x7c00, 0x7e00, 0x7e01]),
            &f16s(&[0x3c00, 0x8000, 0x7bff, 0x3c00, 0x7e01]),
        );
        assert_eq!(t, Tally { elements: 5, differing: 4, first_difference: Some(10), max_ulps: 1, nan_differing: 1 });
        let mut u = Tally::default();
        u.add(DType::F16, 2, &f16s(&[0xc000]), &f16s(&[0x4000]));
        t.merge(&u);
        assert_eq!((t.first_difference, t.max_ulps, t.differing), (Some(2), 2 * 0x4000, 5));
    }

    #[test]
    fn integers_count_their_difference() {
        let mut t = Tally::default();
        t.add(DType::I8, 0, &[0x80, 5], &[0x7f, 5]);
        assert_eq!((t.differing, t.max_ulps), (1, 255));
        let mut t = Tally::default();
        t.add(DType::U64, 0, &u64::MAX.to_le_bytes(), &0u64.to_le_bytes());
        assert_eq!(t.max_ulps, u64::MAX);
        assert_eq!(matching(DType::U8, &[1, 2, 3], &[1, 0, 3]), 2);
    }
}
