//! What any conformant DirectML may give, over a whole job (`docs/backends.md`, "What any
//! conformant device may give"): how many result elements depend on the device or the release,
//! by cause (`--device-dependence`), and whether a device's output is, element by element, one
//! of the results a conformant DirectML may give (`tensorop compare --conformant`); and, with
//! [`inputs_identical`], whether two inputs of one shape are identical (the container digest's
//! verdict). All walk the output's elements with their pairs of input elements, row by row,
//! reading each input's window of a row at once, so memory stays bounded ([`pairs`]); each
//! element's allowed results come from [`crate::op::conformant::allowed`].

use super::Tally;
use crate::dtype::DType;
use crate::npy::input::InputTensor;
use crate::op::conformant::{allowed, Allowed};
use crate::op::Op;
use crate::shape::Iteration;
use crate::text::grouped;
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

/// A job's elements as the walk sees them: the operator, dtype, iteration space and inputs.
pub struct Walk<'a> {
    pub op: Op,
    pub dtype: DType,
    pub iter: &'a Iteration,
    pub inputs: [&'a InputTensor; 2],
}

/// What [`pairs`] hands a row to: its first element's position, and A's and B's elements.
pub type RowVisit<'v> = dyn FnMut(u64, &[u8], &[u8]) -> Result<()> + 'v;

/// Calls `visit(first, a, b)` for the output elements `range` of a job over `inputs` in the
/// iteration space `iter`, a row at a time: `a` and `b` hold the row's input elements, one per
/// output element, little-endian, each input's window of the row read at once.
pub fn pairs(
    iter: &Iteration,
    inputs: [&InputTensor; 2],
    dtype: DType,
    range: Range<u64>,
    visit: &mut RowVisit<'_>,
) -> Result<()> {
    let es = dtype.size();
    let inner = *iter.dims.last().unwrap_or(&1);
    let stride = |i: usize| iter.strides[i].last().copied().unwrap_or(0);
    // A strided row is read as one window: at most about ROW elements of each input.
    let widest = stride(0).max(stride(1)).max(1);
    let (mut window, mut row) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    let mut at = range.start;
    while at < range.end {
        let idx = iter.unravel(at);
        let k = idx.last().copied().unwrap_or(0);
        let n = (inner - k).min(range.end - at).min((ROW / widest).max(1));
        for i in 0..2 {
            let s = stride(i);
            if s == 1 {
                // A contiguous row is its own window.
                row[i].resize(n as usize * es, 0);
                inputs[i].read_le(iter.offset(i, &idx), &mut row[i])?;
                continue;
            }
            window[i].resize(((n - 1) * s + 1) as usize * es, 0);
            inputs[i].read_le(iter.offset(i, &idx), &mut window[i])?;
            row[i].clear();
            for j in 0..n {
                row[i].extend_from_slice(&window[i][(j * s) as usize * es..][..es]);
            }
        }
        visit(at, &row[0], &row[1])?;
        at += n;
    }
    Ok(())
}

/// Why [`inputs_identical`] stopped reading: a row differs.
#[derive(Debug)]
struct Differs;

impl std::fmt::Display for Differs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the inputs differ")
    }
}

impl std::error::Error for Differs {}

/// Whether input A's elements equal input B's bit for bit, in the output's order (the two
/// tensors of one shape): the comparison core's `bit_identical` verdict, with the reading
/// stopped at the first row that differs.
pub fn inputs_identical(iter: &Iteration, inputs: [&InputTensor; 2], dtype: DType) -> Result<bool> {
    let end = iter.count();
    match pairs(iter, inputs, dtype, 0..end, &mut |_, a, b| if a == b { Ok(()) } else { Err(Differs.into()) }) {
        Ok(()) => Ok(true),
        Err(e) if e.is::<Differs>() => Ok(false),
        Err(e) => Err(e),
    }
}

impl Walk<'_> {
    /// Calls `visit(first, allowed)` for the output elements `range`, a row at a time, with what
    /// a conformant DirectML may give for each.
    fn each(&self, range: Range<u64>, visit: &mut dyn FnMut(u64, &[Allowed]) -> Result<()>) -> Result<()> {
        let es = self.dtype.size();
        let mut judged = Vec::new();
        pairs(self.iter, self.inputs, self.dtype, range, &mut |first, a, b| {
            judged.clear();
            for (x, y) in a.chunks_exact(es).zip(b.chunks_exact(es)) {
                let bits = super::element::bits_of;
                judged.push(allowed(self.op, self.dtype, bits(x), bits(y)));
            }
            visit(first, &judged)
        })
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
            tally.add_judged(first, &g, &want, &|i, x, _| judged[i].admits(dtype, super::element::bits_of(x)));
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
        let d = Dependence { elements: 1_048_576, any: 4112, float16_rule: 4112, subnormal: 0, nan: 0 };
        assert_eq!(
            d.line(),
            "4,112 of 1,048,576 elements depend on the float16 rule; 0 on subnormal flushing; 0 are NaN (any payload)"
        );
    }
}
