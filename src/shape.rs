//! Shapes and strides: NumPy broadcasting of two shapes, each input's element strides in the
//! broadcast output's index space (0 along broadcast dimensions, the same zero-stride view a
//! DirectML caller builds with `DML_BUFFER_TENSOR_DESC.Strides`), and the coalescing of those
//! views into the fewest dimensions the kernels iterate over.

/// Formats a shape the way NumPy prints it, `[8, 1, 6, 1]`.
pub fn fmt_shape(shape: &[u64]) -> String {
    let parts: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// The number of elements of `shape`, or `None` if it overflows `u64`.
pub fn element_count(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

/// Why two shapes do not broadcast: the first incompatible dimension, counted from the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incompatible {
    /// 1 = the last dimension.
    pub from_end: usize,
    pub a: u64,
    pub b: u64,
}

/// NumPy's multidirectional broadcast of two shapes.
pub fn broadcast(a: &[u64], b: &[u64]) -> Result<Vec<u64>, Incompatible> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for k in 1..=rank {
        let da = if k <= a.len() { a[a.len() - k] } else { 1 };
        let db = if k <= b.len() { b[b.len() - k] } else { 1 };
        out[rank - k] = match (da, db) {
            _ if da == db => da,
            (1, _) => db,
            (_, 1) => da,
            _ => return Err(Incompatible { from_end: k, a: da, b: db }),
        };
    }
    Ok(out)
}

/// Element strides of an array stored contiguously in C or Fortran order.
pub fn storage_strides(shape: &[u64], fortran: bool) -> Vec<u64> {
    let mut strides = vec![0u64; shape.len()];
    let mut acc = 1u64;
    let mut set = |i: usize| {
        strides[i] = acc;
        acc = acc.saturating_mul(shape[i]);
    };
    if fortran {
        (0..shape.len()).for_each(&mut set);
    } else {
        (0..shape.len()).rev().for_each(&mut set);
    }
    strides
}

/// The element strides of an input of `shape` (stored in C or Fortran order) viewed in the
/// output's index space `out`: one per output dimension, 0 where the input is broadcast
/// (a missing leading dimension, or size 1 against a larger output size).
pub fn view_strides(shape: &[u64], fortran: bool, out: &[u64]) -> Vec<u64> {
    let own = storage_strides(shape, fortran);
    let pad = out.len() - shape.len();
    (0..out.len()).map(|k| if k < pad || (shape[k - pad] == 1 && out[k] != 1) { 0 } else { own[k - pad] }).collect()
}

/// The iteration space the kernels run over: the output shape with size-1 dimensions dropped
/// and neighbouring dimensions merged wherever every input steps through them as one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iteration {
    /// Dimension sizes, outermost first; never empty (a scalar is `[1]`).
    pub dims: Vec<u64>,
    /// Per input, the element stride of each dimension.
    pub strides: [Vec<u64>; 2],
}

impl Iteration {
    /// Builds the iteration space from the output shape and each input's view strides.
    pub fn new(out: &[u64], a: &[u64], b: &[u64]) -> Iteration {
        let mut dims: Vec<u64> = Vec::new();
        let mut sa: Vec<u64> = Vec::new();
        let mut sb: Vec<u64> = Vec::new();
        for k in 0..out.len() {
            if out[k] == 1 {
                continue;
            }
            if let (Some(&d), Some(&pa), Some(&pb)) = (dims.last(), sa.last(), sb.last()) {
                // Merge into the previous (outer) dimension when both inputs step through the
                // pair as one: outer stride == inner stride * inner size.
                if pa == a[k].saturating_mul(out[k]) && pb == b[k].saturating_mul(out[k]) {
                    let n = dims.len() - 1;
                    dims[n] = d.saturating_mul(out[k]);
                    sa[n] = a[k];
                    sb[n] = b[k];
                    continue;
                }
            }
            dims.push(out[k]);
            sa.push(a[k]);
            sb.push(b[k]);
        }
        if dims.is_empty() {
            dims.push(1);
            sa.push(0);
            sb.push(0);
        }
        Iteration { dims, strides: [sa, sb] }
    }

    /// Total number of elements.
    pub fn count(&self) -> u64 {
        self.dims.iter().product()
    }

    /// Whether input `i` is read in exactly output order (its element offset equals the output
    /// index), so a chunk of output needs one contiguous run of the input.
    pub fn is_identity(&self, i: usize) -> bool {
        let mut contiguous = 1u64;
        for (d, s) in self.dims.iter().zip(&self.strides[i]).rev() {
            if *d > 1 && *s != contiguous {
                return false;
            }
            contiguous = contiguous.saturating_mul(*d);
        }
        true
    }

    /// The storage offset of input `i` at each dimension's index `idx`.
    pub fn offset(&self, i: usize, idx: &[u64]) -> u64 {
        idx.iter().zip(&self.strides[i]).map(|(x, s)| x * s).sum()
    }

    /// The multi-index of flat output position `flat`.
    pub fn unravel(&self, mut flat: u64) -> Vec<u64> {
        let mut idx = vec![0; self.dims.len()];
        for k in (0..self.dims.len()).rev() {
            idx[k] = flat % self.dims[k];
            flat /= self.dims[k];
        }
        idx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasts_like_numpy() {
        assert_eq!(broadcast(&[8, 1, 6, 1], &[7, 1, 5]), Ok(vec![8, 7, 6, 5]));
        assert_eq!(broadcast(&[], &[3, 4]), Ok(vec![3, 4]));
        assert_eq!(broadcast(&[], &[]), Ok(vec![]));
        assert_eq!(broadcast(&[2, 3, 4, 5], &[5]), Ok(vec![2, 3, 4, 5]));
        assert_eq!(broadcast(&[1, 0], &[3, 1]), Ok(vec![3, 0]));
        assert_eq!(broadcast(&[2, 3], &[4]), Err(Incompatible { from_end: 1, a: 3, b: 4 }));
        assert_eq!(broadcast(&[2, 1], &[8, 4, 3]), Err(Incompatible { from_end: 2, a: 2, b: 4 }));
        assert!(broadcast(&[0], &[2]).is_err());
    }

    #[test]
    fn view_strides_zero_broadcast_dims() {
        let out = [8, 7, 6, 5];
        assert_eq!(view_strides(&[8, 1, 6, 1], false, &out), vec![6, 0, 1, 0]);
        assert_eq!(view_strides(&[7, 1, 5], false, &out), vec![0, 5, 0, 1]);
        assert_eq!(view_strides(&[2, 3], true, &[2, 3]), vec![1, 2]);
        assert_eq!(view_strides(&[], false, &[3]), vec![0]);
        assert_eq!(storage_strides(&[2, 3, 4], false), vec![12, 4, 1]);
        assert_eq!(storage_strides(&[2, 3, 4], true), vec![1, 2, 6]);
    }

    #[test]
    fn coalesces_contiguous_and_keeps_broadcast_structure() {
        let out = [4, 5, 6];
        let a = view_strides(&out, false, &out);
        let it = Iteration::new(&out, &a, &a);
        assert_eq!(it.dims, vec![120]);
        assert!(it.is_identity(0) && it.is_identity(1));

        let b = view_strides(&[6], false, &out);
        let it = Iteration::new(&out, &a, &b);
        assert_eq!(it.dims, vec![20, 6]);
        assert_eq!(it.strides, [vec![6, 1], vec![0, 1]]);
        assert!(it.is_identity(0) && !it.is_identity(1));

        // A column vector [4,1,1] against [4,5,6]: B steps once per 30 outputs.
        let c = view_strides(&[4, 1, 1], false, &out);
        let it = Iteration::new(&out, &a, &c);
        assert_eq!(it.dims, vec![4, 30]);
        assert_eq!(it.strides[1], vec![1, 0]);

        // Fortran order never merges with C order.
        let f = view_strides(&out, true, &out);
        let it = Iteration::new(&out, &a, &f);
        assert_eq!(it.dims, vec![4, 5, 6]);
        assert_eq!(it.strides[1], vec![1, 4, 20]);

        // A scalar output.
        let it = Iteration::new(&[], &[], &[]);
        assert_eq!((it.dims.clone(), it.count()), (vec![1], 1));
        assert!(it.is_identity(0));
    }

    #[test]
    fn unravel_and_offset_agree_with_strides() {
        let out = [3, 4, 5];
        let a = view_strides(&[3, 1, 5], false, &out);
        let b = view_strides(&out, true, &out);
        let it = Iteration::new(&out, &a, &b);
        for flat in 0..60u64 {
            let (i, j, k) = (flat / 20, flat / 5 % 4, flat % 5);
            let idx = it.unravel(flat);
            assert_eq!(it.offset(0, &idx), i * 5 + k);
            assert_eq!(it.offset(1, &idx), i + j * 3 + k * 12);
        }
    }

    #[test]
    fn counts_elements_without_overflow() {
        assert_eq!(element_count(&[]), Some(1));
        assert_eq!(element_count(&[3, 0]), Some(0));
        assert_eq!(element_count(&[1 << 62, 8]), None);
        assert_eq!(fmt_shape(&[8, 1]), "[8, 1]");
    }
}
