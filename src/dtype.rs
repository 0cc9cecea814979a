//! Element data types: the twelve numeric dtypes tensorop computes on (bfloat16, which `.npy`
//! has no type for, only in containers), their names, sizes and `.npy` type strings, the [`Element`] trait every kernel is generic over, and the one macro
//! ([`with_dtype!`](crate::with_dtype)) that turns a runtime [`DType`] into a Rust type.

use half::{bf16, f16};
use std::fmt;

/// A numeric dtype tensorop can compute on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DType {
    F16,
    /// bfloat16 (float32's exponent, 7 stored mantissa bits): `.safetensors` members only.
    BF16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

impl DType {
    /// Every numeric dtype, in the order the support matrix lists them.
    pub const ALL: [DType; 12] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U64,
        DType::U32,
        DType::U16,
        DType::U8,
    ];

    /// NumPy's name for the dtype (`float32`, `uint8`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
        }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// The NumPy kind character (`f`, `i`, `u`); bfloat16, which NumPy has no type for, is
    /// written as raw 2-byte values (`V`).
    fn kind(self) -> char {
        match self {
            DType::BF16 => 'V',
            DType::F16 | DType::F32 | DType::F64 => 'f',
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => 'i',
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => 'u',
        }
    }

    /// Looks a dtype up by NumPy kind character and byte size (never bfloat16: a `.npy` file
    /// cannot say that its raw 2-byte values are bfloat16).
    pub fn from_kind_size(kind: char, size: u64) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.in_npy() && d.kind() == kind && d.size() as u64 == size)
    }

    /// Whether `.npy` has a type for the dtype (every one but bfloat16).
    pub fn in_npy(self) -> bool {
        self != DType::BF16
    }

    /// Whether the dtype is a floating-point one.
    pub fn is_float(self) -> bool {
        self.kind() == 'f' || self == DType::BF16
    }

    /// The little-endian `.npy` type string tensorop writes (`<f4`, `|u1`, ...).
    pub fn npy_descr(self) -> String {
        let order = if self.size() == 1 { '|' } else { '<' };
        format!("{order}{}{}", self.kind(), self.size())
    }

    /// Parses NumPy's name (`float32`).
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that holds one element of a [`DType`].
///
/// `Pod` lets buffers be read and written as bytes without copies; `swap_bytes` converts between
/// the file's byte order and the machine's.
pub trait Element: bytemuck::Pod + Send + Sync + PartialEq + fmt::Debug + 'static {
    /// Reverses the byte order.
    fn swap_bytes(self) -> Self;
}

/// Elements in native byte order made little-endian, the byte order of output files and of GPU
/// buffers: nothing to do on little-endian machines, a swap of each element on big-endian ones.
/// The one place where tensorop converts to little-endian.
pub(crate) fn to_little_endian<T: Element>(buf: &mut [T]) {
    if cfg!(target_endian = "big") {
        buf.iter_mut().for_each(|x| *x = x.swap_bytes());
    }
}

macro_rules! impl_element {
    ($($t:ty),* $(,)?) => {$(
        impl Element for $t {
            #[inline]
            fn swap_bytes(self) -> Self {
                <$t>::swap_bytes(self)
            }
        }
    )*};
}
impl_element!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Element for f16 {
    #[inline]
    fn swap_bytes(self) -> Self {
        f16::from_bits(self.to_bits().swap_bytes())
    }
}
impl Element for bf16 {
    #[inline]
    fn swap_bytes(self) -> Self {
        bf16::from_bits(self.to_bits().swap_bytes())
    }
}
impl Element for f32 {
    #[inline]
    fn swap_bytes(self) -> Self {
        f32::from_bits(self.to_bits().swap_bytes())
    }
}
impl Element for f64 {
    #[inline]
    fn swap_bytes(self) -> Self {
        f64::from_bits(self.to_bits().swap_bytes())
    }
}

/// Runs `$body` with `$T` bound to the Rust element type of the runtime dtype `$dt`.
///
/// This is the single place where a runtime [`DType`] becomes a static type.
#[macro_export]
macro_rules! with_dtype {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::dtype::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::dtype::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::dtype::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::dtype::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::dtype::DType::U64 => {
                type $T = u64;
                $body
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sizes_and_descrs_round_trip() {
        for d in DType::ALL.into_iter().filter(|d| d.in_npy()) {
            assert_eq!(DType::from_name(d.name()), Some(d));
            let descr = d.npy_descr();
            let kind = descr.chars().nth(1).unwrap();
            let size: u64 = descr[2..].parse().unwrap();
            assert_eq!(DType::from_kind_size(kind, size), Some(d));
            assert_eq!(with_dtype!(d, T => std::mem::size_of::<T>()), d.size());
        }
        assert_eq!(DType::U8.npy_descr(), "|u1");
        assert_eq!(DType::F16.npy_descr(), "<f2");
        assert_eq!(DType::from_kind_size('f', 16), None);
        // bfloat16 has no .npy type: raw 2-byte values never read back as bfloat16.
        assert_eq!(DType::BF16.npy_descr(), "<V2");
        assert_eq!(DType::from_kind_size('V', 2), None);
        assert_eq!(DType::from_name("bfloat16"), Some(DType::BF16));
        assert_eq!(with_dtype!(DType::BF16, T => std::mem::size_of::<T>()), 2);
    }

    #[test]
    fn displays_numpy_names() {
        // Check messages and errors print dtypes this way ("a.npy is float64; ...").
        for d in DType::ALL {
            assert_eq!(d.to_string(), d.name());
        }
        assert_eq!(format!("{} and {}", DType::F16, DType::U8), "float16 and uint8");
    }

    #[test]
    fn swap_bytes_reverses() {
        assert_eq!(Element::swap_bytes(0x0102_0304u32), 0x0403_0201);
        assert_eq!(Element::swap_bytes(1.0f32).to_bits(), 0x0000_803f);
        assert_eq!(Element::swap_bytes(f16::from_bits(0x3c00)).to_bits(), 0x003c);
    }
}
