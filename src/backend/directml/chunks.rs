//! How the directml backend cuts a job into dispatches: each chunk is a block of the output's
//! outer dimensions (a run of rows along one dimension, everything inside it), so that its
//! tensors are the job's descriptors with the outer sizes narrowed and the same strides, over a
//! window of each input that starts at the chunk's first element.

/// One dispatch: output elements `start .. start + count`, whose descriptors have `sizes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub start: u64,
    pub count: u64,
    /// The job's sizes with the dimensions outside the chunk's set to 1 and its own narrowed.
    pub sizes: Vec<u64>,
    /// Per input, the element its window starts at (in storage order).
    pub base: [u64; 2],
    /// Per input, the elements from `base` that the chunk's strides address.
    pub span: [u64; 2],
}

/// The chunks of output elements `range` of a job with output `sizes` and input element
/// `strides` (the descriptors' own), at most `limit` elements each where the innermost
/// dimension allows (a single row longer than `limit` is cut along it).
pub fn chunks(sizes: &[u64], strides: &[Vec<u64>; 2], range: std::ops::Range<u64>, limit: u64) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut start = range.start;
    while start < range.end {
        let chunk = chunk_at(sizes, strides, start, range.end - start, limit.max(1));
        start += chunk.count;
        out.push(chunk);
    }
    out
}

/// The largest chunk that starts at element `start`, holds at most `left` and `limit` elements,
/// and is a block: rows of one dimension with everything inside them.
fn chunk_at(sizes: &[u64], strides: &[Vec<u64>; 2], start: u64, left: u64, limit: u64) -> Chunk {
    let rank = sizes.len();
    // inner[k]: the elements one step along dimension k covers.
    let mut inner = vec![1u64; rank];
    for k in (0..rank.saturating_sub(1)).rev() {
        inner[k] = inner[k + 1].saturating_mul(sizes[k + 1]);
    }
    let cap = left.min(limit);
    let k = (0..rank).find(|&k| start.is_multiple_of(inner[k]) && inner[k] <= cap).unwrap_or(rank - 1);
    let at = |m: usize| (start / inner[m]) % sizes[m].max(1);
    let rows = (sizes[k] - at(k)).min(cap / inner[k]).max(1);
    let mut chunk_sizes = sizes.to_vec();
    chunk_sizes[..k].iter_mut().for_each(|s| *s = 1);
    chunk_sizes[k] = rows;
    let base = [0, 1].map(|i| (0..=k).map(|m| at(m) * strides[i][m]).sum());
    let span = [0, 1].map(|i| addressed(&chunk_sizes, &strides[i]));
    Chunk { start, count: rows * inner[k], sizes: chunk_sizes, base, span }
}

/// The elements a tensor of `sizes` and `strides` addresses from its first: one past the last.
fn addressed(sizes: &[u64], strides: &[u64]) -> u64 {
    1 + sizes.iter().zip(strides).map(|(&d, &s)| d.saturating_sub(1) * s).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of `range` is in exactly one chunk, in order, each chunk within `limit`
    /// (or one row), and each chunk's windows hold exactly the input elements its output needs.
    fn check(sizes: &[u64], strides: [Vec<u64>; 2], range: std::ops::Range<u64>, limit: u64) -> Vec<Chunk> {
        let cs = chunks(sizes, &strides, range.clone(), limit);
        let mut next = range.start;
        for c in &cs {
            assert_eq!(c.start, next);
            assert_eq!(c.count, c.sizes.iter().product::<u64>());
            assert!(c.count <= limit || c.sizes.iter().rev().skip(1).all(|&s| s == 1), "{c:?}");
            // The chunk's element j is output element start + j; its input element is the base
            // plus the chunk strides, and the job's own index arithmetic must agree.
            for j in 0..c.count {
                let flat = c.start + j;
                for (i, st) in strides.iter().enumerate() {
                    let want: u64 = index(sizes, flat).iter().zip(st).map(|(x, s)| x * s).sum();
                    let local: u64 = index(&c.sizes, j).iter().zip(st).map(|(x, s)| x * s).sum();
                    assert_eq!(c.base[i] + local, want, "chunk {c:?} element {j} input {i}");
                    assert!(local < c.span[i]);
                }
            }
            next += c.count;
        }
        assert_eq!(next, range.end);
        cs
    }

    fn index(sizes: &[u64], mut flat: u64) -> Vec<u64> {
        let mut idx = vec![0; sizes.len()];
        for k in (0..sizes.len()).rev() {
            idx[k] = flat % sizes[k];
            flat /= sizes[k];
        }
        idx
    }

    #[test]
    fn a_job_that_fits_is_one_chunk_with_the_job_sizes() {
        let cs = check(&[1, 1, 3, 4], [vec![0, 0, 4, 1], vec![0, 0, 0, 1]], 0..12, 100);
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].sizes, [1, 1, 3, 4]);
        assert_eq!(cs[0].span, [12, 4]);
    }

    #[test]
    fn large_jobs_split_along_outer_dimensions_and_parts_start_anywhere() {
        let st = [vec![42, 7, 0, 1], vec![0, 0, 1, 0]];
        for limit in [1, 2, 5, 7, 13, 42, 100, 1000] {
            check(&[3, 6, 1, 7], st.clone(), 0..126, limit);
            check(&[3, 6, 1, 7], st.clone(), 5..119, limit);
        }
        let cs = check(&[3, 6, 1, 7], st, 0..126, 42);
        assert_eq!(cs.len(), 3);
        assert_eq!(cs[1].sizes, [1, 6, 1, 7]);
        assert_eq!(cs[1].base, [42, 0]);
    }

    #[test]
    fn a_row_longer_than_the_limit_is_cut_along_it() {
        let cs = check(&[1, 10], [vec![0, 1], vec![0, 0]], 0..10, 4);
        assert_eq!(cs.iter().map(|c| c.count).collect::<Vec<_>>(), [4, 4, 2]);
        assert_eq!(cs[2].base, [8, 0]);
        assert_eq!(cs[2].span, [2, 1]);
    }
}
