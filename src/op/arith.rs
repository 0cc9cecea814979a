//! The element types' arithmetic: the [`Steps`] of each type ([`Arith`]), the scalar reference
//! and the portable slice kernel every type but float16 uses (a loop per formula and operand
//! shape, which the compiler vectorises).

use super::{Formula, Operand, Steps};
use crate::dtype::Element;
use std::marker::PhantomData;

/// `f` on one pair of elements: widened, computed with `T`'s steps, narrowed.
#[inline(always)]
pub(super) fn element<T: Arith>(f: Formula, a: T, b: T) -> T {
    T::narrow(f.eval(&mut ElementSteps::<T>(PhantomData), a.widen(), b.widen()))
}

/// The arithmetic of one element type: the primitive [`Steps`] in the type the arithmetic is
/// carried out in ([`Arith::Wide`]), and the slice kernel.
pub trait Arith: Element + Copy {
    /// The arithmetic type: float32 for float16 (rounded to float16 once, at the end), the
    /// element type itself otherwise.
    type Wide: Copy;
    /// An element in the arithmetic type (exact).
    fn widen(self) -> Self::Wide;
    /// A result rounded to the element type.
    fn narrow(w: Self::Wide) -> Self;
    /// `a - b`: IEEE for floats, wrapping for integers.
    fn sub(a: Self::Wide, b: Self::Wide) -> Self::Wide;
    /// `a * b`: IEEE for floats (Rust never contracts it into a fused multiply-add), wrapping
    /// for integers.
    fn mul(a: Self::Wide, b: Self::Wide) -> Self::Wide;
    /// An intermediate rounded to the element type; the identity unless `Wide` is wider.
    #[inline(always)]
    fn round(w: Self::Wide) -> Self::Wide {
        w
    }
    /// An intermediate converted to float16 toward zero, overflowing to infinity
    /// ([`Steps::round_tz_inf`]); the identity for every type but float16.
    #[inline(always)]
    fn round_tz_inf(w: Self::Wide) -> Self::Wide {
        w
    }
    /// An intermediate converted to float16 toward zero, saturating at ±65504
    /// ([`Steps::round_tz_sat`]); the identity for every type but float16.
    #[inline(always)]
    fn round_tz_sat(w: Self::Wide) -> Self::Wide {
        w
    }
    /// The slice kernel; the default is a loop per formula that the compiler vectorises.
    fn apply_slices(f: Formula, out: &mut [Self], a: Operand<'_, Self>, b: Operand<'_, Self>) {
        crate::with_formula!(f, F => map2(out, a, b, |x, y| element(F, x, y)))
    }
}

/// [`Steps`] on `T`'s arithmetic type, as [`Arith`] defines them.
pub(super) struct ElementSteps<T>(pub(super) PhantomData<T>);

impl<T: Arith> Steps for ElementSteps<T> {
    type V = T::Wide;
    #[inline(always)]
    fn sub(&mut self, a: T::Wide, b: T::Wide) -> T::Wide {
        T::sub(a, b)
    }
    #[inline(always)]
    fn mul(&mut self, a: T::Wide, b: T::Wide) -> T::Wide {
        T::mul(a, b)
    }
    #[inline(always)]
    fn round(&mut self, v: T::Wide) -> T::Wide {
        T::round(v)
    }
    #[inline(always)]
    fn round_tz_inf(&mut self, v: T::Wide) -> T::Wide {
        T::round_tz_inf(v)
    }
    #[inline(always)]
    fn round_tz_sat(&mut self, v: T::Wide) -> T::Wide {
        T::round_tz_sat(v)
    }
}

/// `out[i] = f(a[i], b[i])`, monomorphised per operand shape so each loop vectorises.
#[inline(always)]
pub(super) fn map2<T: Copy, U: Copy, F: Fn(T, T) -> U>(out: &mut [U], a: Operand<'_, T>, b: Operand<'_, T>, f: F) {
    match (a, b) {
        (Operand::Slice(a), Operand::Slice(b)) => {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                *o = f(x, y);
            }
        }
        (Operand::Slice(a), Operand::Scalar(y)) => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = f(x, y);
            }
        }
        (Operand::Scalar(x), Operand::Slice(b)) => {
            for (o, &y) in out.iter_mut().zip(b) {
                *o = f(x, y);
            }
        }
        (Operand::Scalar(x), Operand::Scalar(y)) => out.fill(f(x, y)),
    }
}

/// `Arith` for a type computed in its own width, with the expressions for `a - b` and `a * b`.
macro_rules! impl_arith {
    ($a:ident, $b:ident => sub: $sub:expr, mul: $mul:expr; $($t:ty),*) => {$(
        impl Arith for $t {
            type Wide = $t;
            #[inline(always)]
            fn widen(self) -> $t {
                self
            }
            #[inline(always)]
            fn narrow(w: $t) -> $t {
                w
            }
            #[inline(always)]
            fn sub($a: $t, $b: $t) -> $t {
                $sub
            }
            #[inline(always)]
            fn mul($a: $t, $b: $t) -> $t {
                $mul
            }
        }
    )*};
}
impl_arith!(a, b => sub: a.wrapping_sub(b), mul: a.wrapping_mul(b); i8, i16, i32, i64, u8, u16, u32, u64);
// IEEE; Rust never contracts `a * b` after `a - b` into a fused multiply-add.
impl_arith!(a, b => sub: a - b, mul: a * b; f32, f64);
