//! Tests (Windows, with DirectML): tensorop's checks of a dispatch (`spec::checks`) against
//! DirectML's own validation, case by case at the highest level the DLL reports: what tensorop
//! accepts, DirectML must create; what tensorop refuses for a reason DirectML checks, DirectML
//! must refuse (`docs/backends.md`, "What DirectML accepts"). Skipped where DirectML cannot
//! start, unless `TENSOROP_REQUIRE_DIRECTML=1`.

use super::create::{create, data_type};
use super::device::Device;
use super::Settings;
use crate::dtype::DType;
use crate::op::Op;
use crate::spec::checks::{validate_dispatch, Bound, Desc, Dispatch, Status};
use crate::spec::dml::buffer_tensor_size;
use crate::spec::level::LevelChoice;
use windows::Win32::AI::MachineLearning::DirectML::*;

/// One tensor of a case: type, sizes, strides (`None`: packed) and `TotalTensorSizeInBytes`
/// (`None`: what the desc addresses).
#[derive(Clone)]
struct T {
    dtype: DType,
    sizes: Vec<u32>,
    strides: Option<Vec<u32>>,
    total: Option<u64>,
}

fn t(dtype: DType, sizes: &[u32]) -> T {
    T { dtype, sizes: sizes.to_vec(), strides: None, total: None }
}

fn strided(dtype: DType, sizes: &[u32], strides: &[u32]) -> T {
    T { strides: Some(strides.to_vec()), ..t(dtype, sizes) }
}

struct Case {
    what: String,
    op: Op,
    tensors: [T; 3],
}

fn case(what: impl Into<String>, op: Op, a: T, b: T, out: T) -> Case {
    Case { what: what.into(), op, tensors: [a, b, out] }
}

fn cases() -> Vec<Case> {
    use DType::*;
    let mut v = Vec::new();
    for op in Op::ALL {
        for d in DType::ALL {
            v.push(case(format!("{} {}", op.name(), d.name()), op, t(d, &[2, 3]), t(d, &[2, 3]), t(d, &[2, 3])));
        }
        for rank in 0..=9usize {
            let s = vec![2u32; rank];
            v.push(case(format!("{} rank {rank}", op.name()), op, t(F32, &s), t(F32, &s), t(F32, &s)));
        }
        let o = || t(F32, &[2, 3]);
        v.push(case("B broadcast by zero strides", op, o(), strided(F32, &[2, 3], &[0, 1]), o()));
        v.push(case(
            "A and B broadcast by zero strides",
            op,
            strided(F32, &[2, 3], &[1, 0]),
            strided(F32, &[2, 3], &[0, 0]),
            o(),
        ));
        v.push(case("padded strides", op, strided(F32, &[2, 3], &[8, 2]), strided(F32, &[2, 3], &[3, 1]), o()));
        v.push(case("overlapping input strides", op, strided(F32, &[2, 3], &[1, 1]), o(), o()));
        v.push(case("sizes that disagree", op, o(), t(F32, &[3, 2]), o()));
        v.push(case("B of sizes [1, 3] (no implicit broadcast)", op, o(), t(F32, &[1, 3]), o()));
        v.push(case("ranks that disagree", op, o(), t(F32, &[1, 2, 3]), o()));
        v.push(case("output of another type", op, o(), o(), t(F16, &[2, 3])));
        v.push(case("B of another type", op, o(), t(F16, &[2, 3]), o()));
        v.push(case("output sizes that differ", op, o(), o(), t(F32, &[3, 2])));
        v.push(case("output broadcast by a zero stride", op, o(), o(), strided(F32, &[2, 3], &[0, 1])));
        v.push(case("a size of 0", op, t(F32, &[0, 3]), t(F32, &[0, 3]), t(F32, &[0, 3])));
        let mut short = o();
        short.total = Some(20);
        v.push(case("TotalTensorSizeInBytes below what A addresses", op, short, o(), o()));
        let odd = |d| T { total: Some(3), ..t(d, &[3]) };
        v.push(case("TotalTensorSizeInBytes not a multiple of 4", op, odd(U8), odd(U8), odd(U8)));
        let wide = strided(F32, &[65536, 65536], &[0, 0]);
        v.push(case("2^32 elements broadcast from one", op, wide.clone(), wide, t(F32, &[65536, 65536])));
    }
    v
}

fn sizes64(s: &[u32]) -> Vec<u64> {
    s.iter().map(|&x| u64::from(x)).collect()
}

/// tensorop's verdict: every check of the dispatch at `level` passes.
fn tensorop_accepts(c: &Case, level: LevelChoice) -> bool {
    const NAMES: [&str; 3] = ["ATensor", "BTensor", "OutputTensor"];
    let info: Vec<(Vec<u64>, Option<Vec<u64>>, u64, u64)> = c
        .tensors
        .iter()
        .map(|x| {
            let es = x.dtype.size() as u64;
            let st = x.strides.as_deref().map(sizes64);
            let addressed = buffer_tensor_size(es, &sizes64(&x.sizes), st.as_deref());
            (sizes64(&x.sizes), st, addressed, x.total.unwrap_or(addressed))
        })
        .collect();
    let descs: Vec<Desc> = c
        .tensors
        .iter()
        .zip(&info)
        .enumerate()
        .map(|(i, (x, (s, _, addressed, total)))| Desc {
            name: NAMES[i],
            dtype: x.dtype,
            sizes: &x.sizes,
            strides: x.strides.as_deref(),
            dimension_count: x.sizes.len() as u32,
            total_size: *total,
            bytes: s.iter().try_fold(x.dtype.size() as u64, |n, &d| n.checked_mul(d)),
            addressed: *addressed,
        })
        .collect();
    let bound: Vec<Bound> =
        info.iter().enumerate().map(|(i, inf)| Bound { resource: NAMES[i], size: inf.3.max(4), offset: 0 }).collect();
    let d = Dispatch {
        op: c.op,
        descs: [descs[0], descs[1], descs[2]],
        bound: [bound[0].clone(), bound[1].clone(), bound[2].clone()],
    };
    validate_dispatch(&d, level).checks.iter().all(|k| k.status != Status::Fail)
}

/// DirectML's verdict: `CreateOperator` succeeds.
fn directml_accepts(dev: &Device, c: &Case) -> bool {
    let Some(types) = c.tensors.iter().map(|x| data_type(x.dtype)).collect::<Option<Vec<_>>>() else {
        return false;
    };
    let descs: Vec<DML_BUFFER_TENSOR_DESC> = c
        .tensors
        .iter()
        .zip(&types)
        .map(|(x, &dt)| {
            let es = x.dtype.size() as u64;
            let st = x.strides.as_deref().map(sizes64);
            DML_BUFFER_TENSOR_DESC {
                DataType: dt,
                Flags: DML_TENSOR_FLAG_NONE,
                DimensionCount: x.sizes.len() as u32,
                Sizes: x.sizes.as_ptr(),
                Strides: x.strides.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
                TotalTensorSizeInBytes: x.total.unwrap_or(buffer_tensor_size(es, &sizes64(&x.sizes), st.as_deref())),
                GuaranteedBaseOffsetAlignment: 0,
            }
        })
        .collect();
    create(&dev.dml, c.op, [&descs[0], &descs[1], &descs[2]]).is_ok()
}

/// Cases where the two verdicts are known to differ, and why (docs/backends.md says so too).
const KNOWN: &[(&str, &str)] = &[];

#[test]
fn tensorops_checks_agree_with_directmls_validation() {
    let env = |name: &str| std::env::var(name).ok();
    let required = env("TENSOROP_REQUIRE_DIRECTML").as_deref() == Some("1");
    let Ok(listing) = Settings::listing(&env) else { panic!("bad DirectML settings in the environment") };
    let top = match Device::open(&listing) {
        Ok(d) => d.max_level,
        Err(e) => {
            assert!(!required, "DirectML does not start: {e:#}");
            eprintln!("skipped: DirectML does not start here: {e:#}");
            return;
        }
    };
    let dev = match Device::open(&Settings { level: top, ..listing }) {
        Ok(d) => d,
        Err(e) => panic!("DirectML at its own highest level {top}: {e:#}"),
    };
    let mut disagree = Vec::new();
    let all = cases();
    for c in &all {
        let (ours, theirs) = (tensorop_accepts(c, LevelChoice::Dml(top)), directml_accepts(&dev, c));
        let line = format!(
            "{} ({}): tensorop {}, DirectML {}",
            c.what,
            c.op.name(),
            if ours { "accepts" } else { "refuses" },
            if theirs { "creates it" } else { "refuses" }
        );
        eprintln!("{line}");
        if ours != theirs && !KNOWN.iter().any(|(what, _)| c.what == *what) {
            disagree.push(line);
        }
    }
    assert!(
        disagree.is_empty(),
        "{} of {} cases disagree at {top}:\n{}",
        disagree.len(),
        all.len(),
        disagree.join("\n")
    );
}
