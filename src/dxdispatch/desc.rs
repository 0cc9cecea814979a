//! What a buffer tensor desc addresses: its element count, the bytes it spans
//! (`DMLCalcBufferTensorSize`), whether it is packed or a broadcast view of a C-order array, and
//! the element offsets it walks; and from these, what temporary space a dispatch needs.

use super::model::{Binding, BufferDesc, Dispatchable};
use crate::shape::storage_strides;

/// The elements a desc's `Sizes` describe; `None` past 2^64.
pub(super) fn element_count(t: &BufferDesc) -> Option<u64> {
    t.sizes.iter().try_fold(1u64, |n, &d| n.checked_mul(u64::from(d)))
}

/// The bytes of temporary files a dispatch makes beyond its resources: the packed copies of
/// inputs whose strides are neither packed nor broadcast, and the result, unless it is written
/// straight into the output buffer. `None` past 2^64.
pub fn dispatch_temp_bytes(d: &Dispatchable, bindings: &[Binding; 3]) -> Option<u64> {
    let [a, b, out] = &d.tensors;
    let bytes = element_count(out)?.checked_mul(out.dtype.size() as u64)?;
    let gathered = [a, b].iter().filter(|t| broadcast_view_shape(t).is_none()).count() as u64;
    let result = u64::from(!streams_into_output(out, bindings));
    bytes.checked_mul(gathered + result)
}

pub(super) fn sizes64(d: &BufferDesc) -> Vec<u64> {
    d.sizes.iter().map(|&s| u64::from(s)).collect()
}

/// The bytes from the first to one past the last element a desc addresses, rounded up to 4
/// (`DMLCalcBufferTensorSize`).
pub(super) fn addressed_bytes(t: &BufferDesc) -> u64 {
    let st: Option<Vec<u64>> = t.strides.as_ref().map(|s| s.iter().map(|&x| u64::from(x)).collect());
    crate::spec::dml::buffer_tensor_size(t.dtype.size() as u64, &sizes64(t), st.as_deref())
}

/// The shape of a C-order array whose elements a desc addresses as a broadcast view, when its
/// strides allow one: each dimension is either broadcast (stride 0, size 1 in the array) or has
/// the packed stride of the array.
pub(super) fn broadcast_view_shape(t: &BufferDesc) -> Option<Vec<u64>> {
    let sizes = sizes64(t);
    let Some(strides) = &t.strides else { return Some(sizes) };
    let shape: Vec<u64> = sizes.iter().zip(strides).map(|(&n, &s)| if s == 0 { 1 } else { n }).collect();
    let packed = storage_strides(&shape, false);
    let ok = shape.iter().zip(strides).zip(&packed).all(|((&n, &s), &p)| s == 0 || n == 1 || u64::from(s) == p);
    ok.then_some(shape)
}

/// Calls `f` with the element offset of every element of `sizes`/`strides`, in C order.
pub(super) fn for_each_offset(
    sizes: &[u64],
    strides: &[u64],
    mut f: impl FnMut(u64) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if sizes.contains(&0) {
        return Ok(());
    }
    let mut idx = vec![0u64; sizes.len()];
    let mut off = 0u64;
    loop {
        f(off)?;
        let mut k = sizes.len();
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            idx[k] += 1;
            off += strides[k];
            if idx[k] < sizes[k] {
                break;
            }
            off -= strides[k] * sizes[k];
            idx[k] = 0;
        }
    }
}

/// Whether a dispatch's result streams straight into its output buffer: a packed output desc
/// whose resource is not also an input's (else the result goes through a temporary file).
pub(super) fn streams_into_output(out: &BufferDesc, bindings: &[Binding; 3]) -> bool {
    is_packed(out) && bindings[..2].iter().all(|b| b.resource != bindings[2].resource)
}

/// Whether a desc addresses its elements packed, in C order.
pub(super) fn is_packed(t: &BufferDesc) -> bool {
    let sizes = sizes64(t);
    let packed = storage_strides(&sizes, false);
    t.strides
        .as_ref()
        .is_none_or(|s| s.iter().zip(&packed).zip(&sizes).all(|((&st, &p), &n)| n == 1 || u64::from(st) == p))
}
