//! `--verify`'s reference: the CPU backend's results for ranges of a job's output, under
//! several semantics at once (for float16, every rule), on the calling thread. The resident
//! inputs are loaded once for the run, and each range's input elements are read once for all
//! the semantics (`docs/backends.md`, "--verify").

// Only the directml backend (Windows) runs a reference; it is tested everywhere.
#![cfg_attr(not(windows), allow(dead_code))]

use super::worker::Worker;
use super::{resident_inputs, CHUNK_BYTES};
use crate::backend::Job;
use crate::dtype::to_little_endian;
use crate::op::{Arith, Semantics};
use crate::summary::Summarise;
use anyhow::Result;

/// The reference of one job: [`compute`](Self::compute) a range at a time.
pub struct Reference<'j> {
    typed: Box<dyn Compute + 'j>,
}

impl<'j> Reference<'j> {
    /// The reference of `job` under each of `sems`, its resident inputs loaded.
    pub fn new(job: &'j Job<'j>, sems: Vec<Semantics>) -> Result<Reference<'j>> {
        let typed: Box<dyn Compute + 'j> = crate::with_dtype!(job.dtype, T => Box::new(Typed::<T> {
            job,
            resident: resident_inputs::<T>(job)?,
            bufs: vec![Vec::new(); sems.len()],
            sems,
        }));
        Ok(Reference { typed })
    }

    /// Output elements `range`, little-endian, under each semantics `new` was given, in order:
    /// `outs[k]` for the `k`th.
    pub fn compute(&mut self, range: std::ops::Range<u64>, outs: &mut [Vec<u8>]) -> Result<()> {
        self.typed.compute(range, outs)
    }
}

/// [`Reference::compute`] for elements of one type.
trait Compute {
    fn compute(&mut self, range: std::ops::Range<u64>, outs: &mut [Vec<u8>]) -> Result<()>;
}

struct Typed<'j, T> {
    job: &'j Job<'j>,
    resident: [Option<Vec<T>>; 2],
    sems: Vec<Semantics>,
    /// One chunk of results per semantics.
    bufs: Vec<Vec<T>>,
}

impl<T: Arith + Summarise> Compute for Typed<'_, T> {
    fn compute(&mut self, range: std::ops::Range<u64>, outs: &mut [Vec<u8>]) -> Result<()> {
        let Typed { job, resident, sems, bufs } = self;
        let chunk = (CHUNK_BYTES / std::mem::size_of::<T>()).max(1);
        let mut w = Worker::new(job, resident, chunk);
        outs.iter_mut().for_each(Vec::clear);
        let mut start = range.start;
        while start < range.end {
            let n = usize::try_from(range.end - start).map_or(chunk, |left| left.min(chunk));
            bufs.iter_mut().for_each(|b| b.resize(n, T::zeroed()));
            w.fill_with(start, n, &mut |at, len, a, b| {
                for (sem, buf) in sems.iter().zip(bufs.iter_mut()) {
                    sem.apply(&mut buf[at..at + len], a, b);
                }
            })?;
            for (buf, out) in bufs.iter_mut().zip(outs.iter_mut()) {
                to_little_endian(buf);
                out.extend_from_slice(bytemuck::cast_slice(buf));
            }
            start += n as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{cpu, Emit};
    use crate::dtype::DType;
    use crate::npy::input::InputTensor;
    use crate::op::{Float16Rule, Op};
    use crate::plan::{Plan, RESIDENT_BYTES};
    use crate::shape::{view_strides, Iteration};
    use std::io::Write;

    fn input(label: &str, values: &[u16], shape: &[u64]) -> InputTensor {
        let mut f = tempfile::tempfile().expect("a temporary file");
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        f.write_all(&bytes).expect("written");
        InputTensor::view(label, f, 0, DType::F16, shape)
    }

    /// Every rule's reference, for a range inside a broadcast float16 job, is the CPU backend's
    /// own result for that range in that rule: one read of the inputs serves all the rules.
    #[test]
    fn every_rules_reference_is_the_cpu_backends_result() {
        // Values near the float16 limits, so that the rules differ on some elements.
        let a: Vec<u16> =
            (0..5 * 7).map(|i| [0x7bff, 0xfbff, 0x3c01, 0x0001, 0x7bfe][i % 5] ^ (i as u16 & 3)).collect();
        let b: Vec<u16> = (0..7).map(|i| [0xfbff, 0x7bff, 0xbc00, 0x8001, 0x3555, 0x0000, 0x7c00][i]).collect();
        let (x, y) = (input("a", &a, &[5, 7]), input("b", &b, &[7]));
        let shape = [5u64, 7];
        let strides = [view_strides(&[5, 7], false, &shape), view_strides(&[7], false, &shape)];
        let iter = Iteration::new(&shape, &strides[0], &strides[1]);
        let feeds = Plan::feeds(&iter, [&x, &y], RESIDENT_BYTES);
        for op in Op::ALL {
            let sem = Semantics { op, float16: Float16Rule::ALL[1] };
            let job = Job {
                sem,
                dtype: DType::F16,
                shape: &shape,
                range: 0..35,
                iter: iter.clone(),
                inputs: [&x, &y],
                feeds,
                threads: 1,
                summarise: false,
                positional: None,
            };
            let sems = crate::backend::directml::verify::semantics(&job);
            assert_eq!(sems.len(), 4);
            let mut r = Reference::new(&job, sems.clone()).expect("a reference");
            let mut outs = vec![Vec::new(); sems.len()];
            r.compute(3..30, &mut outs).expect("computed");
            for (sem, got) in sems.iter().zip(&outs) {
                let part = Job { range: 3..30, ..job.with_sem(*sem) };
                let mut want = Vec::new();
                cpu::run(&part, &mut |e| {
                    if let Emit::Bytes(b) = e {
                        want.extend_from_slice(b);
                    }
                    Ok(())
                })
                .expect("the CPU backend ran");
                assert_eq!(got, &want, "{op:?} {sem:?}");
            }
            assert_ne!(outs[0], outs[2], "the rules differ on these values");
        }
    }
}
