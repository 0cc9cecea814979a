//! Which elements of a broadcast input a chunk of output reads. A run of output positions
//! `[start, end)` in C order splits into at most `2 * rank + 1` boxes (a fixed prefix of
//! coordinates, a range in one dimension, every later dimension whole); with non-negative strides
//! each box reads input offsets between those of its first and last corners. Merged, these
//! intervals are what the GPU backend uploads for the chunk, so a broadcast input of any size
//! streams with host and device memory bounded by the chunk: for an input stored in C order, the
//! intervals hold at most as many elements as the chunk has.

/// Inclusive intervals `(first, last)` of input element offsets that output positions
/// `[start, end)` read, through an input with element `strides` over the iteration `dims`;
/// sorted, disjoint and not adjacent. Empty when `start >= end`.
pub(super) fn intervals(dims: &[u64], strides: &[u64], start: u64, end: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if start < end {
        boxes(dims, strides, start, end, 0, &mut out);
    }
    out.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(out.len());
    for (lo, hi) in out {
        match merged.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    merged
}

/// Total elements in `intervals`.
pub(super) fn total(intervals: &[(u64, u64)]) -> u64 {
    intervals.iter().map(|(lo, hi)| hi - lo + 1).sum()
}

/// Pushes the offset span of each box of `[start, end)` (non-empty) under `base`.
fn boxes(dims: &[u64], strides: &[u64], start: u64, end: u64, base: u64, out: &mut Vec<(u64, u64)>) {
    let (Some((_, inner_dims)), Some((&s0, inner_strides))) = (dims.split_first(), strides.split_first()) else {
        // Rank 0: the single position.
        out.push((base, base));
        return;
    };
    let inner: u64 = inner_dims.iter().product();
    // Offset span of one whole inner block.
    let inner_span: u64 = inner_dims.iter().zip(inner_strides).map(|(d, s)| (d - 1) * s).sum();
    let (first, last) = (start / inner, (end - 1) / inner);
    let (head, tail) = (start % inner, (end - 1) % inner);
    if first == last {
        return boxes(inner_dims, inner_strides, head, tail + 1, base + first * s0, out);
    }
    let mut full_from = first;
    if head != 0 {
        boxes(inner_dims, inner_strides, head, inner, base + first * s0, out);
        full_from += 1;
    }
    let mut full_to = last + 1;
    if tail != inner - 1 {
        boxes(inner_dims, inner_strides, 0, tail + 1, base + last * s0, out);
        full_to -= 1;
    }
    if full_from < full_to {
        out.push((base + full_from * s0, base + (full_to - 1) * s0 + inner_span));
    }
}

#[cfg(test)]
mod tests {
    use super::{intervals, total};

    /// Every offset the positions read, by brute force.
    fn touched(dims: &[u64], strides: &[u64], start: u64, end: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (start..end)
            .map(|mut flat| {
                let mut off = 0;
                for k in (0..dims.len()).rev() {
                    off += (flat % dims[k]) * strides[k];
                    flat /= dims[k];
                }
                off
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    #[test]
    fn intervals_cover_exactly_what_is_read_and_no_more_than_the_chunk() {
        // (iteration dims, strides of an input broadcast along some of them: C order, but for
        // one with gaps between its rows)
        let cases: [(&[u64], &[u64]); 6] = [
            (&[7, 5, 3], &[3, 0, 1]),
            (&[4, 6], &[0, 1]),
            (&[4, 6], &[1, 0]),
            (&[3, 4, 5, 2], &[10, 0, 2, 1]),
            (&[2, 3, 2, 3], &[9, 0, 3, 1]),
            (&[100], &[1]),
        ];
        for (dims, strides) in cases {
            let total_out: u64 = dims.iter().product();
            // Each stride is the product of the later dimensions that are not broadcast (the
            // case with gaps, [9, 0, 3, 1], is not).
            let dense = (0..dims.len()).all(|k| {
                strides[k] == 0
                    || strides[k] == (k + 1..dims.len()).filter(|&j| strides[j] != 0).map(|j| dims[j]).product::<u64>()
            });
            for start in 0..total_out {
                for end in start + 1..=total_out {
                    let iv = intervals(dims, strides, start, end);
                    let t = touched(dims, strides, start, end);
                    // Every read offset lies in an interval.
                    for off in &t {
                        assert!(iv.iter().any(|(lo, hi)| lo <= off && off <= hi), "{dims:?} {start}..{end}: {off}");
                    }
                    // Intervals are sorted, disjoint, and no larger than the chunk.
                    assert!(iv.windows(2).all(|w| w[0].1 + 1 < w[1].0), "{iv:?}");
                    assert!(total(&iv) <= end - start, "{dims:?} {strides:?} {start}..{end}: {iv:?}");
                    // An input stored in C order without gaps: its intervals hold exactly the
                    // offsets read, so an upload has no element the chunk does not need.
                    if dense {
                        assert_eq!(total(&iv), t.len() as u64, "{dims:?} {strides:?} {start}..{end}: {iv:?}");
                    }
                    assert!(iv.len() <= 2 * dims.len() + 1);
                }
            }
        }
    }

    #[test]
    fn whole_rows_of_an_outer_broadcast_are_one_interval() {
        // A [1, 6] against an output [4, 6]: every full chunk reads the one row.
        assert_eq!(intervals(&[4, 6], &[0, 1], 0, 24), vec![(0, 5)]);
        assert_eq!(intervals(&[4, 6], &[0, 1], 4, 8), vec![(0, 1), (4, 5)]);
        // An empty or reversed run reads nothing, at the start too.
        for (start, end) in [(3, 3), (0, 0), (24, 24), (5, 2)] {
            assert!(intervals(&[4, 6], &[0, 1], start, end).is_empty(), "{start}..{end}");
        }
    }
}
