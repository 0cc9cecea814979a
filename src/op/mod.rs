//! The operators and their arithmetic: the one place that defines what `sub` and `sqdiff`
//! compute for each dtype (the arithmetic table in `docs/cli.md`).
//!
//! An operator's meaning is written once, as a [`Formula`] over five primitive [`Steps`]
//! (subtract, multiply, round an intermediate to the element type, and convert it to float16
//! toward zero, overflowing to infinity or saturating at 65504: DirectML's two float16 stores). Each way of computing
//! implements the steps, not the operators: the element types' Rust arithmetic ([`Arith`]), the
//! float16 kernels' float32 lanes, and the GPU kernels' WGSL text
//! (`backend::wgpu::shader`). Adding an operator is one [`Op`] variant, its [`Formula`], its
//! support rows and one CLI line; `docs/adding-an-operator.md` walks through it.
//!
//! Here: the operators, their formulas and the primitive steps; `arith` has the
//! element types' steps and the portable slice kernels, `f16` the float16 kernels.

mod arith;
pub mod conformant;
mod f16;

use arith::element;
pub use arith::Arith;

/// An element-wise operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `a - b` (`DML_OPERATOR_ELEMENT_WISE_SUBTRACT`).
    Sub,
    /// `(a - b) * (a - b)` (`DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE`).
    SqDiff,
}

impl Op {
    /// Every operator.
    pub const ALL: [Op; 2] = [Op::Sub, Op::SqDiff];

    /// The command name (`sub`, `sqdiff`).
    /// The name of the mean of this operator's result, where it has one of its own (`--stats`
    /// prints it).
    pub fn mean_name(self) -> Option<&'static str> {
        match self {
            Op::Sub => None,
            Op::SqDiff => Some("mean squared error"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Op::Sub => "sub",
            Op::SqDiff => "sqdiff",
        }
    }

    /// The DirectML operator type this op implements.
    pub fn dml_operator(self) -> &'static str {
        match self {
            Op::Sub => "DML_OPERATOR_ELEMENT_WISE_SUBTRACT",
            Op::SqDiff => "DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE",
        }
    }

    /// The DirectML operator desc struct a caller fills in.
    pub fn dml_desc(self) -> &'static str {
        match self {
            Op::Sub => "DML_ELEMENT_WISE_SUBTRACT_OPERATOR_DESC",
            Op::SqDiff => "DML_ELEMENT_WISE_DIFFERENCE_SQUARE_OPERATOR_DESC",
        }
    }

    /// What the operator computes under the float16 rule `rule`.
    pub const fn formula(self, rule: Float16Rule) -> Formula {
        match (self, rule) {
            (Op::Sub, Float16Rule::Nearest | Float16Rule::PerStep) => Formula::Sub,
            (Op::Sub, Float16Rule::TowardZeroInf) => Formula::SubTzInf,
            (Op::Sub, Float16Rule::TowardZeroSaturate) => Formula::SubTzSat,
            (Op::SqDiff, Float16Rule::Nearest) => Formula::SqDiff,
            (Op::SqDiff, Float16Rule::PerStep) => Formula::SqDiffRounded,
            (Op::SqDiff, Float16Rule::TowardZeroInf) => Formula::SqDiffTzInf,
            (Op::SqDiff, Float16Rule::TowardZeroSaturate) => Formula::SqDiffTzSat,
        }
    }
}

/// How a float16 result is rounded from the float32 arithmetic it is computed in
/// (`--float16`; the arithmetic table in `docs/cli.md`, and which DirectML release and kernel
/// gives which in `docs/backends.md`, "float16 by release").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Float16Rule {
    /// Rounded to nearest even once, at the end: the correctly rounded result (the default).
    #[default]
    Nearest,
    /// `sqdiff`'s difference rounded to the element type before squaring, and the square again
    /// (`--half-precision`): float16 and bfloat16.
    PerStep,
    /// Toward zero, subnormals kept, any value beyond 65504 in magnitude to infinity: DirectML
    /// 1.13 and later, float16 kernels that compute in float32. float16 only: bfloat16 rounds
    /// as [`Float16Rule::Nearest`] does.
    TowardZeroInf,
    /// Toward zero, subnormals kept, a finite value beyond 65504 in magnitude saturating at
    /// ±65504, infinities kept: Direct3D's written data-conversion rule, which DirectML 1.8 to
    /// 1.12 follow (float32-computing kernels). float16 only.
    TowardZeroSaturate,
}

impl Float16Rule {
    /// Every rule.
    pub const ALL: [Float16Rule; 4] =
        [Float16Rule::Nearest, Float16Rule::PerStep, Float16Rule::TowardZeroInf, Float16Rule::TowardZeroSaturate];

    /// The CLI's spelling (`--float16 NAME`), which the report and job descriptions use too.
    pub const fn name(self) -> &'static str {
        match self {
            Float16Rule::Nearest => "nearest",
            Float16Rule::PerStep => "per-step",
            Float16Rule::TowardZeroInf => "toward-zero-inf",
            Float16Rule::TowardZeroSaturate => "toward-zero-saturate",
        }
    }

    /// The rule DirectML release `version` (`1.8`, `1.13.1`, a DLL's file version `1.15.4.0`)
    /// stores float16 by on a device without native 16-bit arithmetic, as measured
    /// (`docs/backends.md`, "float16 by release"): toward zero, saturating at 65504 up to 1.12,
    /// overflowing to infinity from 1.13 on. Releases before 1.8 were not measured; they are
    /// taken to follow Direct3D's written rule, as 1.8 does.
    pub fn of_directml(version: &str) -> Result<Float16Rule, String> {
        let mut parts = version.trim().split('.').map(|p| p.parse::<u32>());
        match (parts.next(), parts.next()) {
            (Some(Ok(1)), Some(Ok(minor))) if parts.all(|p| p.is_ok()) => {
                Ok(if minor < 13 { Float16Rule::TowardZeroSaturate } else { Float16Rule::TowardZeroInf })
            }
            _ => Err(format!(
                "DirectML {version:?}: expected a DirectML release such as 1.8, 1.12.0 or 1.15.4 (DirectML's \
                 versions are 1.x)"
            )),
        }
    }

    /// Whether results under this rule can differ from nearest's for `dtype`'s elements (the
    /// toward-zero rules: float16 alone; per-step: float16 and bfloat16).
    pub fn applies_to(self, dtype: crate::dtype::DType) -> bool {
        use crate::dtype::DType::{BF16, F16};
        match self {
            Float16Rule::Nearest => false,
            Float16Rule::PerStep => matches!(dtype, F16 | BF16),
            Float16Rule::TowardZeroInf | Float16Rule::TowardZeroSaturate => dtype == F16,
        }
    }
}

/// The primitive steps a [`Formula`] is written in, over values of type `V`: the element type's
/// arithmetic type (float32 for float16), 8 float32 lanes, or a WGSL expression. Every step rounds
/// as IEEE-754 does for floats (to nearest even, subnormals kept) and wraps for integers.
pub trait Steps {
    /// A value the steps work on.
    type V: Clone;
    /// `a - b`.
    fn sub(&mut self, a: Self::V, b: Self::V) -> Self::V;
    /// `a * b`.
    fn mul(&mut self, a: Self::V, b: Self::V) -> Self::V;
    /// `v` rounded to the element type and widened back: float16's intermediate rounding, the
    /// identity for every type computed in its own width.
    fn round(&mut self, v: Self::V) -> Self::V;
    /// `v` converted to float16 toward zero and widened back: subnormals kept, any finite value
    /// beyond 65504 in magnitude to infinity, infinities kept, a NaN made quiet with its sign and
    /// top payload bits (as the nearest conversion makes it). The identity for every other type,
    /// bfloat16 included (it has no DirectML type, and rounds to nearest at the end as ever).
    /// The final rounding then finds the value exact.
    fn round_tz_inf(&mut self, v: Self::V) -> Self::V;
    /// As [`round_tz_inf`](Self::round_tz_inf), but a finite value beyond 65504 in magnitude
    /// saturates at ±65504 (IEEE's round toward zero; Direct3D's written rule).
    fn round_tz_sat(&mut self, v: Self::V) -> Self::V;
}

/// One operator's formula: the single definition every kernel, CPU or GPU, is derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Formula {
    /// `a - b`.
    Sub,
    /// `d = a - b; d * d`: two roundings, never a fused multiply-add.
    SqDiff,
    /// `d = round(a - b); d * d`: float16 `sqdiff --half-precision`.
    SqDiffRounded,
    /// `round_tz_inf(a - b)`: float16 `sub --float16 toward-zero-inf`.
    SubTzInf,
    /// `d = a - b; round_tz_inf(d * d)`: float16 `sqdiff --float16 toward-zero-inf`.
    SqDiffTzInf,
    /// `round_tz_sat(a - b)`: float16 `sub --float16 toward-zero-saturate`.
    SubTzSat,
    /// `d = a - b; round_tz_sat(d * d)`: float16 `sqdiff --float16 toward-zero-saturate`.
    SqDiffTzSat,
}

impl Formula {
    /// Every formula.
    pub const ALL: [Formula; 7] = [
        Formula::Sub,
        Formula::SqDiff,
        Formula::SqDiffRounded,
        Formula::SubTzInf,
        Formula::SqDiffTzInf,
        Formula::SubTzSat,
        Formula::SqDiffTzSat,
    ];

    /// Applies the formula to `a` and `b` with `steps`. With a constant `self` (see
    /// [`with_formula!`](crate::with_formula!)) and inlined steps, this compiles to the bare arithmetic.
    #[inline(always)]
    pub fn eval<S: Steps>(self, steps: &mut S, a: S::V, b: S::V) -> S::V {
        match self {
            Formula::Sub => steps.sub(a, b),
            Formula::SqDiff => {
                let d = steps.sub(a, b);
                steps.mul(d.clone(), d)
            }
            Formula::SqDiffRounded => {
                let d = steps.sub(a, b);
                let d = steps.round(d);
                steps.mul(d.clone(), d)
            }
            Formula::SubTzInf => {
                let d = steps.sub(a, b);
                steps.round_tz_inf(d)
            }
            Formula::SqDiffTzInf => {
                let d = steps.sub(a, b);
                let s = steps.mul(d.clone(), d);
                steps.round_tz_inf(s)
            }
            Formula::SubTzSat => {
                let d = steps.sub(a, b);
                steps.round_tz_sat(d)
            }
            Formula::SqDiffTzSat => {
                let d = steps.sub(a, b);
                let s = steps.mul(d.clone(), d);
                steps.round_tz_sat(s)
            }
        }
    }

    /// The formula with this [`id`](Self::id), for const-generic kernels; evaluated in a
    /// `const` block there, so an id outside [`Formula::ALL`] does not compile.
    pub const fn from_id(id: u8) -> Formula {
        Formula::ALL[id as usize]
    }

    /// A number for const generics (`Formula::from_id(f.id()) == f`).
    pub const fn id(self) -> u8 {
        self as u8
    }
}

// `ALL` lists every formula in id order, which `from_id` relies on.
const _: () = {
    let mut i = 0;
    while i < Formula::ALL.len() {
        assert!(Formula::ALL[i] as usize == i, "Formula::ALL must list the formulas in declaration order");
        i += 1;
    }
};

/// Expands `$body` once per formula with `$F` a `const` of that formula, so that each copy of a
/// hot loop is compiled (and vectorised) for one formula, with no branch per element. The one
/// place that lists the formulas for dispatch: a new variant is a compile error here.
#[macro_export]
macro_rules! with_formula {
    ($formula:expr, $F:ident => $body:expr) => {
        match $formula {
            $crate::op::Formula::Sub => {
                const $F: $crate::op::Formula = $crate::op::Formula::Sub;
                $body
            }
            $crate::op::Formula::SqDiff => {
                const $F: $crate::op::Formula = $crate::op::Formula::SqDiff;
                $body
            }
            $crate::op::Formula::SqDiffRounded => {
                const $F: $crate::op::Formula = $crate::op::Formula::SqDiffRounded;
                $body
            }
            $crate::op::Formula::SubTzInf => {
                const $F: $crate::op::Formula = $crate::op::Formula::SubTzInf;
                $body
            }
            $crate::op::Formula::SqDiffTzInf => {
                const $F: $crate::op::Formula = $crate::op::Formula::SqDiffTzInf;
                $body
            }
            $crate::op::Formula::SubTzSat => {
                const $F: $crate::op::Formula = $crate::op::Formula::SubTzSat;
                $body
            }
            $crate::op::Formula::SqDiffTzSat => {
                const $F: $crate::op::Formula = $crate::op::Formula::SqDiffTzSat;
                $body
            }
        }
    };
}

/// What a kernel computes: the operator and the float16 rounding rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Semantics {
    pub op: Op,
    /// How float16 (and, for [`Float16Rule::PerStep`], bfloat16) results are rounded
    /// (`--float16`, `--half-precision`); no other dtype depends on it.
    pub float16: Float16Rule,
}

impl Semantics {
    /// `op` with the default float16 rule, [`Float16Rule::Nearest`].
    pub const fn nearest(op: Op) -> Semantics {
        Semantics { op, float16: Float16Rule::Nearest }
    }

    /// The formula a kernel applies.
    pub fn formula(self) -> Formula {
        self.op.formula(self.float16)
    }

    /// Applies the operator to one pair of elements: the scalar reference every kernel matches.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn scalar<T: Arith>(self, a: T, b: T) -> T {
        element(self.formula(), a, b)
    }

    /// Computes `out[i] = op(a[i], b[i])` where each operand is a slice as long as `out` or a
    /// single broadcast value.
    pub fn apply<T: Arith>(self, out: &mut [T], a: Operand<'_, T>, b: Operand<'_, T>) {
        debug_assert!(a.fits(out.len()) && b.fits(out.len()));
        T::apply_slices(self.formula(), out, a, b);
    }
}

/// One operand of a slice kernel.
#[derive(Debug, Clone, Copy)]
pub enum Operand<'a, T> {
    /// One element per output element.
    Slice(&'a [T]),
    /// The same element for every output element (a stride-0 input).
    Scalar(T),
}

impl<T> Operand<'_, T> {
    fn fits(&self, n: usize) -> bool {
        match self {
            Operand::Slice(s) => s.len() == n,
            Operand::Scalar(_) => true,
        }
    }
}

#[cfg(test)]
mod tests;
