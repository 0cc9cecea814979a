//! What any conformant DirectML may give, over a whole job (`docs/backends.md`, "What any
//! conformant device may give"): how many result elements depend on the device or the release,
//! by cause (`--device-dependence`), and whether a device's output is, element by element, one
//! of the results a conformant DirectML may give (`tensorop compare --conformant`). Both walk
//! the output's elements with their pairs of input elements, row by row, reading each input's
//! window of a row at once, so memory stays bounded; each element is judged by
//! [`crate::op::conformant::allowed`].

use super::Tally;
use crate::dtype::DType;
use crate::npy::input::InputTensor;
use crate::op::conformant::{allowed, Allowed};
use crate::op::Op;
use crate::shape::Iteration;
use anyhow::Result;
use serde::Serialize;
use std::ops::Range;

/// The most output elements read at once.
const ROW: u64 = 1 << 14;

/// How many elements of a result may depend on the device or the release, by cause (an element
/// may have several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Dependence {
    /// Elements looked at: the result's (or a part's).
    pub elements: u64,
    /// Elements with any cause.
    pub any: u64,
    /// float16: the rules of DirectML's releases and devices give different results.
    pub float16_rule: u64,
    /// A subnormal input, intermediate or result, which a device may flush to zero.
    pub subnormal: u64,
    /// A NaN result, whose payload a device may change.
    pub nan: u64,
}

impl Dependence {
    /// Counts one element of these causes.
    fn count(&mut self, c: crate::op::conformant::Causes) {
        self.any += u64::from(c.any());
        self.float16_rule += u64::from(c.float16_rule);
        self.subnormal += u64::from(c.subnormal);
        self.nan += u64::from(c.nan);
    }

    /// One line for standard error: `4,112 of 1,048,576 elements depend on the float16 rule; 0
    /// on subnormal flushing; 0 are NaN (any payload)`.
    pub fn line(&self) -> String {
        format!(
            "{} of {} elements depend on the float16 rule; {} on subnormal flushing; {} are NaN (any payload)",
            grouped(self.float16_rule),
            grouped(self.elements),
            grouped(self.subnormal),
            grouped(self.nan)
        )
    }
}

/// `n` with a comma every three digits.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A job's elements as the walk sees them: the operator, dtype, iteration space and inputs.
pub struct Walk<'a> {
    pub op: Op,
    pub dtype: DType,
    pub iter: &'a Iteration,
    pub inputs: [&'a InputTensor; 2],
}

impl Walk<'_> {
    /// Calls `visit(first, allowed)` for the output elements `range`, a row at a time, with what
    /// a conformant DirectML may give for each.
    fn each(&self, range: Range<u64>, visit: &mut dyn FnMut(u64, &[Allowed]) -> Result<()>) -> Result<()> {
        let es = self.dtype.size();
        let inner = *self.iter.dims.last().unwrap_or(&1);
        let (mut buf, mut judged) = ([Vec::new(), Vec::new()], Vec::new());
        let mut at = range.start;
        while at < range.end {
            let idx = self.iter.unravel(at);
            let k = idx.last().copied().unwrap_or(0);
            // A strided row is read as one window: at most about ROW elements of each input.
            let widest = self.iter.strides.iter().map(|s| s.last().copied().unwrap_or(0)).max().unwrap_or(1);
            let n = (inner - k).min(range.end - at).min((ROW / widest.max(1)).max(1));
            for (i, b) in buf.iter_mut().enumerate() {
                let stride = self.iter.strides[i].last().copied().unwrap_or(0);
                let span = (n - 1) * stride + 1;
                b.resize(span as usize * es, 0);
                self.inputs[i].read_le(self.iter.offset(i, &idx), b)?;
            }
            judged.clear();
            for j in 0..n {
                let bits = |i: usize| {
                    let s = self.iter.strides[i].last().copied().unwrap_or(0);
                    super::element::bits_of(&buf[i][(j * s) as usize * es..][..es])
                };
                judged.push(allowed(self.op, self.dtype, bits(0), bits(1)));
            }
            visit(at, &judged)?;
            at += n;
        }
        Ok(())
    }

    /// How many elements of `range` may depend on the device or release, by cause.
    pub fn dependence(&self, range: Range<u64>) -> Result<Dependence> {
        let mut d = Dependence { elements: range.end - range.start, ..Dependence::default() };
        self.each(range, &mut |_, judged| {
            judged.iter().for_each(|a| d.count(a.causes));
            Ok(())
        })?;
        Ok(d)
    }

    /// Compares `got` (the output in C order) with tensorop's default answer into `tally`, an
    /// element being outside when no conformant DirectML gives it; returns the dependence
    /// counts too.
    pub fn check(&self, got: &InputTensor, tally: &mut Tally) -> Result<Dependence> {
        let es = self.dtype.size();
        let mut d = Dependence { elements: tally.elements, ..Dependence::default() };
        let (mut g, mut want) = (Vec::new(), Vec::new());
        let dtype = self.dtype;
        self.each(0..tally.elements, &mut |first, judged| {
            g.resize(judged.len() * es, 0);
            got.read_le(first, &mut g)?;
            want.clear();
            for a in judged {
                want.extend_from_slice(&a.nearest.to_le_bytes()[..es]);
                d.count(a.causes);
            }
            tally.add_judged(first, &g, &want, &|i, x| judged[i].admits(dtype, super::element::bits_of(x)));
            Ok(())
        })?;
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_in_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_048_576), "1,048,576");
        let d = Dependence { elements: 1_048_576, any: 4112, float16_rule: 4112, subnormal: 0, nan: 0 };
        assert_eq!(
            d.line(),
            "4,112 of 1,048,576 elements depend on the float16 rule; 0 on subnormal flushing; 0 are NaN (any payload)"
        );
    }
}
