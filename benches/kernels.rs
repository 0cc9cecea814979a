//! In-memory kernel throughput per dtype and operator, elementwise (`a[i] - b[i]`) and broadcast
//! (`a[i] - b`), on one thread and split over all cores. Throughput counts three arrays (two read,
//! one written), like the STREAM-style figure `benches/e2e.py` prints, so the two compare directly.
//!
//! The `stats` group times `--stats`' summary of a computed chunk.
//!
//! `cargo bench --bench kernels [-- FILTER]`, e.g. `-- float32`, `-- threads=2` or `-- stats`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tensorop::dtype::DType;
use tensorop::op::{Arith, Float16Rule, Op, Operand, Semantics};
use tensorop::summary::Accumulator;

/// Elements per array: 2^23, so three float32 arrays (96 MiB) overflow any cache.
const N: usize = 1 << 23;

fn filled<T: Arith>(byte: u8) -> Vec<T> {
    // A repeated byte is a normal number for every float width (no subnormal slow paths).
    let mut v = vec![T::zeroed(); N];
    bytemuck::cast_slice_mut::<T, u8>(&mut v).fill(byte);
    v
}

fn run<T: Arith>(sem: Semantics, out: &mut [T], a: &[T], b: Option<&[T]>, threads: usize) {
    let per = out.len().div_ceil(threads);
    std::thread::scope(|s| {
        for (i, o) in out.chunks_mut(per).enumerate() {
            let a = &a[i * per..i * per + o.len()];
            let b = match b {
                Some(b) => Operand::Slice(&b[i * per..i * per + o.len()]),
                None => Operand::Scalar(a[0]),
            };
            if threads == 1 {
                sem.apply(o, Operand::Slice(a), b);
            } else {
                s.spawn(move || sem.apply(o, Operand::Slice(a), b));
            }
        }
    });
}

fn bench_dtype<T: Arith>(c: &mut Criterion, dtype: DType) {
    let a = filled::<T>(0x3c);
    let b = filled::<T>(0x3b);
    let mut out = filled::<T>(0);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut g = c.benchmark_group(dtype.name());
    g.sample_size(10)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(2));
    g.throughput(Throughput::Bytes((3 * N * dtype.size()) as u64));
    // float16 also under Direct3D's rule, whose conversion the kernels add to the nearest one.
    let rules: &[Float16Rule] =
        if dtype == DType::F16 { &[Float16Rule::Nearest, Float16Rule::TowardZeroInf] } else { &[Float16Rule::Nearest] };
    for (op, &float16) in Op::ALL.into_iter().flat_map(|op| rules.iter().map(move |r| (op, r))) {
        let sem = Semantics { op, float16 };
        let name = match float16 {
            Float16Rule::Nearest => op.name().to_string(),
            rule => format!("{}-{}", op.name(), rule.name()),
        };
        for threads in [1, cores] {
            for (shape, b) in [("elementwise", Some(b.as_slice())), ("broadcast", None)] {
                let id = BenchmarkId::new(format!("{name}/{shape}"), format!("threads={threads}"));
                g.bench_function(id, |bench| bench.iter(|| run(sem, &mut out, &a, b, threads)));
            }
        }
    }
    g.finish();
}

fn kernels(c: &mut Criterion) {
    for dtype in DType::ALL {
        tensorop::with_dtype!(dtype, T => bench_dtype::<T>(c, dtype));
    }
}

/// A sample value in each element type: floats rounded, integers wrapped (squares of
/// differences below 2000 fit every type but the 8- and 16-bit ones, whose values wrap).
trait Sample {
    fn from_f64(x: f64) -> Self;
    fn from_i64(x: i64) -> Self;
}

macro_rules! sample_ints {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn from_i64(x: i64) -> Self {
                x as $t
            }
        }
    )*};
}
sample_ints!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! sample_floats {
    ($($t:ty => $from:expr),*) => {$(
        impl Sample for $t {
            fn from_f64(x: f64) -> Self {
                $from(x)
            }
            fn from_i64(x: i64) -> Self {
                $from(x as f64)
            }
        }
    )*};
}
sample_floats!(f32 => |x: f64| x as f32, f64 => |x: f64| x, half::f16 => half::f16::from_f64, half::bf16 => half::bf16::from_f64);

/// A xorshift generator's next word.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Squared differences of two normal-ish signals (sums of four uniforms) in float64, and of
/// integers in [-1000, 1000): what `sqdiff` of `benches/stats.py`'s inputs gives.
fn sqdiff_values() -> (Vec<f64>, Vec<i64>) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut normal = || (0..4).map(|_| (next(&mut state) >> 11) as f64 / (1u64 << 53) as f64 - 0.5).sum::<f64>();
    let floats = (0..N).map(|_| (normal() - normal()).powi(2)).collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut int = || (next(&mut state) % 2000) as i64 - 1000;
    let ints = (0..N).map(|_| (int() - int()).pow(2)).collect();
    (floats, ints)
}

/// `--stats` on each dtype's squared differences: the summary's pass over each computed chunk,
/// per element, on one thread: over 2^23 values not in the cache, and as the CPU backend runs it,
/// one chunk (256 KiB) at a time, just computed, so in cache.
fn stats(c: &mut Criterion) {
    let (floats, ints) = sqdiff_values();
    let mut g = c.benchmark_group("stats");
    g.sample_size(10)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(2));
    for dtype in DType::ALL {
        tensorop::with_dtype!(dtype, T => {
            let values: Vec<T> = if dtype.is_float() {
                floats.iter().map(|&x| <T as Sample>::from_f64(x)).collect()
            } else {
                ints.iter().map(|&x| <T as Sample>::from_i64(x)).collect()
            };
            g.throughput(Throughput::Elements(N as u64));
            g.bench_function(format!("{}/sqdiff", dtype.name()), |bench| {
                bench.iter(|| {
                    let mut acc = Accumulator::new(dtype);
                    acc.add(&values);
                    acc.finish()
                })
            });
            let chunk = &values[..(1 << 18) / dtype.size()];
            g.throughput(Throughput::Elements(chunk.len() as u64));
            g.bench_function(format!("{}/sqdiff/cached-chunk", dtype.name()), |bench| {
                let mut acc = Accumulator::new(dtype);
                bench.iter(|| acc.add(std::hint::black_box(chunk)))
            });
        });
    }
    g.finish();
}

criterion_group!(benches, kernels, stats);
criterion_main!(benches);
