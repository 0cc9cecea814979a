//! `--stats`: a summary of the result computed from its chunks as they stream past, never from a
//! second read (`docs/report.md`, "stats"). Counts by class, min and max, the exact sum, the
//! mean and a histogram by binade.
//!
//! The summary does not depend on how the output was cut into chunks, on the threads, on the
//! backend or on the CPU tier (`crate::arch`): partial summaries ([`Accumulator`]) merge exactly,
//! in any order. Integers sum into 192 bits (`int`, `wide`); floats sum exactly into integer
//! buckets per exponent (`float`): float16 as one fixed-point integer (`float16`), float32 and
//! bfloat16 through windows of binades summed in float64 lanes (`float32`), float64 in levels
//! split off at fixed powers of two (`float64`), and the total is
//! rounded to float64 once, at the end (`exact`). Min and max order -0.0 before +0.0, so they
//! too are the same whatever the order of the chunks. Each dtype's kernels come in tiers; the
//! AVX-512 ones count their histograms by bit position (`positions`). How a summary is printed
//! (JSON, the chart on standard error) is the report's business (`report::summary`).

mod exact;
mod float;
mod float16;
mod float32;
mod float64;
mod int;
mod merge;
#[cfg(target_arch = "x86_64")]
mod positions;
#[cfg(test)]
mod props;
mod wide;

use crate::dtype::DType;
pub use exact::ExactSum;
pub use float::FloatSum;
pub use int::IntSum;
pub(crate) use wide::WideInt;

/// A partial summary of some of the output's elements, of an integer or a float dtype;
/// `merge` adds two of the same dtype.
#[derive(Debug, Clone)]
pub enum Accumulator {
    Int(IntSum),
    Float(FloatSum),
}

impl Accumulator {
    /// An empty summary for elements of `dtype`.
    pub fn new(dtype: DType) -> Accumulator {
        match dtype {
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Accumulator::Float(FloatSum::default()),
            DType::I8 | DType::I16 | DType::I32 | DType::I64 | DType::U8 | DType::U16 | DType::U32 | DType::U64 => {
                Accumulator::Int(IntSum::default())
            }
        }
    }

    /// Adds `values` (elements of the dtype the accumulator was made for). Never inlined: it
    /// runs once per chunk, and inlined into the CPU workers' chunk loop it made the loop's own
    /// code slower (10% more CPU time on a rank-4 broadcast, `docs/history/benchmarks-2026.md`).
    #[inline(never)]
    pub fn add<T: Summarise>(&mut self, values: &[T]) {
        T::add_all(self, values);
    }

    /// Adds little-endian elements of `dtype` (as the output file holds them), whatever their
    /// alignment.
    pub(crate) fn add_le_bytes(&mut self, dtype: DType, bytes: &[u8]) {
        crate::with_dtype!(dtype, T => {
            match bytemuck::try_cast_slice::<u8, T>(bytes) {
                Ok(values) if cfg!(target_endian = "little") => self.add(values),
                _ => {
                    let mut values: Vec<T> = bytemuck::pod_collect_to_vec(bytes);
                    crate::dtype::to_little_endian(&mut values);
                    self.add(&values);
                }
            }
        });
    }

    /// Adds another partial summary of the same dtype.
    pub(crate) fn merge(&mut self, o: &Accumulator) {
        match (self, o) {
            (Accumulator::Int(a), Accumulator::Int(b)) => a.merge(b),
            (Accumulator::Float(a), Accumulator::Float(b)) => a.merge(b),
            (Accumulator::Int(_), Accumulator::Float(_)) | (Accumulator::Float(_), Accumulator::Int(_)) => {
                unreachable!("summaries of different dtypes merged")
            }
        }
    }

    /// The finished summary.
    pub fn finish(&self) -> Summary {
        match self {
            Accumulator::Int(s) => s.finish(),
            Accumulator::Float(s) => s.finish(),
        }
    }
}

/// Element types the summary takes.
pub trait Summarise: Copy {
    /// Adds `values` to `acc`, which was made for `Self`'s dtype.
    fn add_all(acc: &mut Accumulator, values: &[Self]);
}

/// A number in the summary: a float64, or an exact integer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Float(f64),
    Int(WideInt),
}

/// The finished summary, as the report holds it (`docs/report.md`, "stats").
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub(crate) count: u64,
    pub(crate) finite: u64,
    pub(crate) nan: u64,
    pub(crate) posinf: u64,
    pub(crate) neginf: u64,
    pub(crate) min: Option<Number>,
    pub(crate) max: Option<Number>,
    /// Floats: the exact sum rounded once to float64 (`None` beyond float64); integers: the
    /// exact sum.
    pub(crate) sum: Option<Number>,
    /// The exact sum of the finite elements, which summaries merge by.
    pub(crate) exact_sum: ExactSum,
    /// Floats: `sum / finite` in float64; integers: the exact sum over the count, rounded once.
    pub(crate) mean: Option<f64>,
    pub(crate) zero: u64,
    pub(crate) subnormal: u64,
    /// `(exp, count)` ascending, only binades with a count.
    pub(crate) binades: Vec<(i64, u64)>,
}
