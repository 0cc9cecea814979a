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

/// `--stats` on float32 squared differences of two normal-ish signals: the summary's pass over
/// each computed chunk, per element, on one thread.
fn stats(c: &mut Criterion) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut normal = || {
        // Sum of four uniforms: close enough to a normal for the spread of binades.
        (0..4)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .sum::<f32>()
    };
    let values: Vec<f32> = (0..N).map(|_| (normal() - normal()).powi(2)).collect();
    let mut g = c.benchmark_group("stats");
    g.sample_size(10)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(2));
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("float32/sqdiff", |bench| {
        bench.iter(|| {
            let mut acc = Accumulator::new(DType::F32);
            acc.add(&values);
            acc.finish()
        })
    });
    // As the CPU backend runs it: one chunk (256 KiB) at a time, just computed, so in cache.
    let chunk = &values[..1 << 16];
    g.throughput(Throughput::Elements(chunk.len() as u64));
    g.bench_function("float32/sqdiff/cached-chunk", |bench| {
        let mut acc = Accumulator::new(DType::F32);
        bench.iter(|| acc.add(std::hint::black_box(chunk)))
    });
    g.finish();
}

criterion_group!(benches, kernels, stats);
criterion_main!(benches);
