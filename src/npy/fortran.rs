//! Fortran-order inputs rewritten in C order. A C-order walk of the output reads a Fortran-order
//! input with large strides, so the backends could only stream it by holding it whole. Large
//! ones are instead copied once into an anonymous temporary file in C order, tile by tile: for
//! each combination of the middle coordinates, the plane of the first and last dimensions is a
//! strided 2-D transpose, read as runs of the first dimension (contiguous in the file) and written
//! as runs of the last (contiguous in the copy). Memory is two tiles, whatever the input's size;
//! consecutive runs that are adjacent in the file are read or written with one call.

use crate::npy::input::InputTensor;
use crate::shape::storage_strides;
use anyhow::{Context, Result};

/// Elements per tile (two tile buffers are held).
const TILE_ELEMENTS: u64 = 1 << 20;

/// Whether `input` is stored in Fortran order with more than one dimension of size above 1 (only
/// then does its storage order differ from C order).
pub fn is_strided_fortran(input: &InputTensor) -> bool {
    let h = &input.header;
    h.fortran_order && h.shape.iter().filter(|&&d| d > 1).count() > 1
}

/// A copy of `input` in C order, backed by an anonymous temporary file (same dtype and byte
/// order; the header says C order).
pub fn c_order_copy(input: &InputTensor) -> Result<InputTensor> {
    c_order_copy_with(input, TILE_ELEMENTS)
}

/// [`c_order_copy`] with tiles of about `tile` elements (tests use small ones).
fn c_order_copy_with(input: &InputTensor, tile: u64) -> Result<InputTensor> {
    let h = &input.header;
    let es = h.item_size;
    // Size-1 dimensions do not move anything: drop them.
    let dims: Vec<u64> = h.shape.iter().copied().filter(|&d| d > 1).collect();
    let tmp = tempfile::tempfile().context("cannot create a temporary file for the C-order copy")?;
    if dims.len() >= 2 {
        let r = dims.len();
        let (d0, dl) = (dims[0], dims[r - 1]);
        let middle: u64 = dims[1..r - 1].iter().product();
        // Strides in elements: Fortran order in the input, C order in the copy.
        let (fs, cs) = (storage_strides(&dims, true), storage_strides(&dims, false));
        let (f_last, c_first) = (fs[r - 1], cs[0]);
        let (t0, tl) = tile_shape(d0, dl, tile);
        // 8-byte words, so the tiles can be viewed as any element type.
        let words = (t0 * tl * es).div_ceil(8) as usize;
        let (mut src, mut dst) = (vec![0u64; words], vec![0u64; words]);
        for m in 0..middle {
            // The middle coordinates' offsets, from m's multi-index over dims[1..r-1].
            let (mut src_base, mut dst_base, mut rem) = (0u64, 0u64, m);
            for k in (1..r - 1).rev() {
                let c = rem % dims[k];
                rem /= dims[k];
                src_base += c * fs[k];
                dst_base += c * cs[k];
            }
            for a0 in (0..d0).step_by(t0 as usize) {
                let n0 = t0.min(d0 - a0);
                for al in (0..dl).step_by(tl as usize) {
                    let nl = tl.min(dl - al);
                    // Read rows al.. of the plane: runs of n0 elements, f_last apart.
                    let runs = (0..nl).map(|j| (src_base + a0 + (al + j) * f_last, n0));
                    for_each_merged(runs, |at, elems, pos| {
                        input.read_raw(
                            at * es,
                            &mut bytes_mut(&mut src)[(pos * es) as usize..((pos + elems) * es) as usize],
                        )
                    })?;
                    // Transpose the n0 x nl tile (row j of src holds c0 = a0.., row i of dst
                    // holds cl = al..).
                    let len = (n0 * nl * es) as usize;
                    let (s, d) = (&bytes(&src)[..len], &mut bytes_mut(&mut dst)[..len]);
                    match es {
                        1 => transpose::<u8>(s, d, n0 as usize, nl as usize),
                        2 => transpose::<u16>(s, d, n0 as usize, nl as usize),
                        4 => transpose::<u32>(s, d, n0 as usize, nl as usize),
                        _ => transpose::<u64>(s, d, n0 as usize, nl as usize),
                    }
                    let runs = (0..n0).map(|i| (dst_base + (a0 + i) * c_first + al, nl));
                    for_each_merged(runs, |at, elems, pos| {
                        crate::sys::write_all_at(
                            &tmp,
                            &bytes(&dst)[(pos * es) as usize..((pos + elems) * es) as usize],
                            at * es,
                        )
                        .context("cannot write the C-order copy of a Fortran-order input")
                    })?;
                }
            }
        }
    }
    Ok(input.with_c_order_data(tmp))
}

fn bytes(v: &[u64]) -> &[u8] {
    bytemuck::cast_slice(v)
}

fn bytes_mut(v: &mut [u64]) -> &mut [u8] {
    bytemuck::cast_slice_mut(v)
}

/// `dst[i * nl + j] = src[j * n0 + i]` for elements of `T` (element sizes 1, 2, 4 and 8: tensorop's
/// dtypes), on byte slices aligned for `T`.
fn transpose<T: bytemuck::Pod>(src: &[u8], dst: &mut [u8], n0: usize, nl: usize) {
    let (src, dst): (&[T], &mut [T]) = (bytemuck::cast_slice(src), bytemuck::cast_slice_mut(dst));
    for (i, row) in dst.chunks_exact_mut(nl).enumerate().take(n0) {
        for (j, x) in row.iter_mut().enumerate() {
            *x = src[j * n0 + i];
        }
    }
}

/// Tile sides `(along the first dimension, along the last)` of about `tile` elements, whole
/// dimensions where one side is small so runs merge.
fn tile_shape(d0: u64, dl: u64, tile: u64) -> (u64, u64) {
    let side = ((tile as f64).sqrt() as u64).max(1);
    if d0.saturating_mul(dl) <= tile {
        (d0, dl)
    } else if dl <= side {
        ((tile / dl).max(1), dl)
    } else if d0 <= side {
        (d0, (tile / d0).max(1))
    } else {
        (side, side)
    }
}

/// Calls `f(file offset, elements, position in the buffer)` for the runs `(file offset,
/// elements)` laid out one after another in a buffer, merging runs adjacent in the file.
fn for_each_merged(
    runs: impl Iterator<Item = (u64, u64)>,
    mut f: impl FnMut(u64, u64, u64) -> Result<()>,
) -> Result<()> {
    let mut cur: Option<(u64, u64, u64)> = None;
    let mut pos = 0;
    for (at, n) in runs {
        cur = match cur {
            Some((s, len, p)) if s + len == at => Some((s, len + n, p)),
            Some((s, len, p)) => {
                f(s, len, p)?;
                Some((at, n, pos))
            }
            None => Some((at, n, pos)),
        };
        pos += n;
    }
    if let Some((s, len, p)) = cur {
        f(s, len, p)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A Fortran-order file of unsigned integers of `size` bytes (1, 2, 4 or 8) whose element at
    /// C multi-index c holds its C-order position (below 256 in the tests).
    fn fortran_file(shape: &[u64], size: usize) -> tempfile::NamedTempFile {
        let n: u64 = shape.iter().product();
        let mut data = vec![0u64; n as usize];
        for flat in 0..n {
            // C multi-index of flat, then its Fortran storage offset.
            let (mut rem, mut off, mut f) = (flat, 0u64, 1u64);
            let mut idx = vec![0u64; shape.len()];
            for k in (0..shape.len()).rev() {
                idx[k] = rem % shape[k];
                rem /= shape[k];
            }
            for k in 0..shape.len() {
                off += idx[k] * f;
                f *= shape[k];
            }
            data[off as usize] = flat;
        }
        let shape_s: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let descr = if size == 1 { "|u1".to_string() } else { format!("<u{size}") };
        let dict = format!("{{'descr': '{descr}', 'fortran_order': True, 'shape': ({},), }}", shape_s.join(", "));
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((dict.len() as u16).to_le_bytes());
        bytes.extend(dict.as_bytes());
        bytes.extend(data.iter().flat_map(|v| v.to_le_bytes()[..size].to_vec()));
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        f.write_all(&bytes).expect("write");
        f
    }

    #[test]
    fn copies_are_in_c_order_for_any_tile_and_element_size() {
        // Middle dimensions [2, 3] are coprime: a wrong unravelling of the middle coordinates
        // can still visit each once. [2, 2] and [4, 6] are not.
        let shapes: [&[u64]; 8] =
            [&[3, 5], &[7, 1, 4], &[2, 3, 4], &[5, 2, 1, 3, 2], &[3, 2, 2, 5], &[2, 4, 6, 3], &[33, 3], &[3, 40]];
        for size in [1, 2, 4, 8] {
            for shape in shapes {
                let f = fortran_file(shape, size);
                let input = InputTensor::open_path(f.path()).expect("open");
                assert!(is_strided_fortran(&input));
                for tile in [1, 2, 5, 16, 1 << 20] {
                    let copy = c_order_copy_with(&input, tile).expect("copy");
                    assert!(!copy.header.fortran_order);
                    let n = copy.header.elements;
                    let mut got = vec![0u8; n as usize * size];
                    copy.read_raw(0, &mut got).expect("read copy");
                    let want: Vec<u8> = (0..n).flat_map(|i| i.to_le_bytes()[..size].to_vec()).collect();
                    assert_eq!(got, want, "{shape:?}, {size}-byte elements, tile {tile}");
                }
            }
        }
    }

    /// The memory bound: a tile never holds more than `tile` elements, yet fills at least a
    /// quarter of it (or the whole plane), and takes whole rows or columns where one side is
    /// short, so that runs merge.
    #[test]
    fn tiles_are_bounded_and_filled() {
        let sizes = [1u64, 2, 3, 7, 100, 1000, 1 << 20, 5_000_003];
        for tile in [1u64, 2, 5, 16, 1000, 1 << 20] {
            let side = ((tile as f64).sqrt() as u64).max(1);
            for d0 in sizes {
                for dl in sizes {
                    let (t0, tl) = tile_shape(d0, dl, tile);
                    let what = format!("plane {d0} x {dl}, tile {tile}: {t0} x {tl}");
                    assert!((1..=d0).contains(&t0) && (1..=dl).contains(&tl), "{what}");
                    assert!(t0 * tl <= tile.max(1), "{what}: over the bound");
                    assert!(4 * t0 * tl >= tile.min(d0 * dl), "{what}: the tile is mostly empty");
                    if dl <= side {
                        assert_eq!(tl, dl, "{what}: whole rows");
                    } else if d0 <= side {
                        assert_eq!(t0, d0, "{what}: whole columns");
                    }
                }
            }
        }
    }

    #[test]
    fn merges_only_adjacent_runs() {
        let mut calls = Vec::new();
        for_each_merged([(0, 2), (2, 3), (10, 1), (11, 1)].into_iter(), |at, n, pos| {
            calls.push((at, n, pos));
            Ok(())
        })
        .expect("no error");
        assert_eq!(calls, vec![(0, 5, 0), (10, 2, 5)]);
    }
}
