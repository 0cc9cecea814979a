//! Counts by bit position over a stream of AVX-512 vectors (a positional population count): the
//! summary's histograms. A kernel turns each value into a word with the one bit of its bin set
//! (`1 << bin` in its lane; no bit for a value outside the bins) and feeds the words here, 16
//! vectors at a time; [`Positions::counts`] then says, for each bit position, how many words had
//! it set.
//!
//! The 16 vectors go through a tree of carry-save adders (Harley and Seal's popcount, applied to
//! every bit position at once, as the adders are bitwise): planes of ones, twos, fours and
//! eights carry the running count in binary, and each group sends out one plane of sixteens.
//! Those are counted in nibbles (four bit positions per nibble vector, each nibble up to 15),
//! and the nibbles widened into bytes every 15 groups: about two three-input logic operations
//! per vector, where a counter per bin would take an addition per bin group.

use std::arch::x86_64::*;

/// Vectors per [`Positions::add16`].
pub(super) const GROUP: usize = 16;
/// The most groups [`Positions`] counts: its bytes hold 255 planes of sixteens.
pub(super) const MAX_GROUPS: u32 = 255;

/// The running counts by bit position of every word added.
pub(super) struct Positions {
    ones: __m512i,
    twos: __m512i,
    fours: __m512i,
    eights: __m512i,
    /// Nibble t of a lane of `nib[j]`: the planes of sixteens since the last widening with bit
    /// 4t + j set in that lane (at most 15).
    nib: [__m512i; 4],
    /// Byte k of a lane of `bytes[2j + h]`: the planes of sixteens with bit 8k + 4h + j set in
    /// that lane, widened from `nib` (at most 255).
    bytes: [__m512i; 8],
    /// Groups since `nib` was last widened.
    pending: u32,
    /// Groups added in all.
    groups: u32,
}

/// A carry-save adder of three planes: (the carries, the sums), bit by bit.
#[target_feature(enable = "avx512f")]
#[inline]
fn csa(a: __m512i, b: __m512i, c: __m512i) -> (__m512i, __m512i) {
    (_mm512_ternarylogic_epi32::<0xe8>(a, b, c), _mm512_ternarylogic_epi32::<0x96>(a, b, c))
}

impl Positions {
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) fn new() -> Positions {
        let zero = _mm512_setzero_si512();
        Positions {
            ones: zero,
            twos: zero,
            fours: zero,
            eights: zero,
            nib: [zero; 4],
            bytes: [zero; 8],
            pending: 0,
            groups: 0,
        }
    }

    /// Adds 16 vectors of words, two from each call of `pair`. At most [`MAX_GROUPS`] calls in
    /// all.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) fn add16(&mut self, mut pair: impl FnMut() -> (__m512i, __m512i)) {
        debug_assert!(self.groups < MAX_GROUPS);
        let mut eights = [_mm512_setzero_si512(); 2];
        let mut ones = self.ones;
        let mut twos = self.twos;
        let mut fours = self.fours;
        for e in &mut eights {
            let mut four = [_mm512_setzero_si512(); 2];
            for f in &mut four {
                let (a, b) = pair();
                let (two_a, o) = csa(ones, a, b);
                let (a, b) = pair();
                let (two_b, o) = csa(o, a, b);
                ones = o;
                (*f, twos) = csa(twos, two_a, two_b);
            }
            (*e, fours) = csa(fours, four[0], four[1]);
        }
        let (sixteens, eights) = csa(self.eights, eights[0], eights[1]);
        (self.ones, self.twos, self.fours, self.eights) = (ones, twos, fours, eights);
        let spread = _mm512_set1_epi32(0x1111_1111);
        self.nib[0] = _mm512_add_epi32(self.nib[0], _mm512_and_si512(sixteens, spread));
        self.nib[1] = _mm512_add_epi32(self.nib[1], _mm512_and_si512(_mm512_srli_epi32::<1>(sixteens), spread));
        self.nib[2] = _mm512_add_epi32(self.nib[2], _mm512_and_si512(_mm512_srli_epi32::<2>(sixteens), spread));
        self.nib[3] = _mm512_add_epi32(self.nib[3], _mm512_and_si512(_mm512_srli_epi32::<3>(sixteens), spread));
        self.groups += 1;
        self.pending += 1;
        if self.pending == 15 {
            self.widen();
        }
    }

    /// Moves the nibbles' counts into the bytes.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn widen(&mut self) {
        let low = _mm512_set1_epi32(0x0f0f_0f0f);
        for j in 0..4 {
            let n = self.nib[j];
            self.bytes[2 * j] = _mm512_add_epi32(self.bytes[2 * j], _mm512_and_si512(n, low));
            self.bytes[2 * j + 1] =
                _mm512_add_epi32(self.bytes[2 * j + 1], _mm512_and_si512(_mm512_srli_epi32::<4>(n), low));
            self.nib[j] = _mm512_setzero_si512();
        }
        self.pending = 0;
    }

    /// The counts by bit position of the 32-bit lanes: `[even lanes, odd lanes]`, so that for
    /// words of 64 bits, bit p is `[0][p]` and bit 32 + p is `[1][p]`.
    #[target_feature(enable = "avx512f")]
    pub(super) fn counts(mut self) -> [[u64; 32]; 2] {
        self.widen();
        let mut counts = [[0u64; 32]; 2];
        // The planes, weighted, in nibbles: nibble t of `low[j]` is the count below 16 of bit
        // 4t + j (1 + 2 + 4 + 8 at most).
        let spread = _mm512_set1_epi32(0x1111_1111);
        let planes = [self.ones, self.twos, self.fours, self.eights];
        for j in 0..4 {
            let shift = _mm512_set1_epi32(j);
            let mut low = _mm512_setzero_si512();
            for (w, p) in planes.iter().enumerate() {
                let bits = _mm512_and_si512(_mm512_srlv_epi32(*p, shift), spread);
                low = _mm512_add_epi32(low, _mm512_sllv_epi32(bits, _mm512_set1_epi32(w as i32)));
            }
            // Nibbles s and s + 4 of each lane, as 16-bit fields.
            for s in 0..4 {
                let f = fields(low, 4 * s, 0x000f_000f);
                for (parity, t, n) in [(0, s, f[0]), (0, s + 4, f[1]), (1, s, f[2]), (1, s + 4, f[3])] {
                    counts[parity][4 * t + j as usize] += n;
                }
            }
        }
        for (i, v) in self.bytes.iter().enumerate() {
            let (j, h) = (i / 2, i % 2);
            // Bytes s and s + 2 of each lane, as 16-bit fields.
            for s in 0..2 {
                let f = fields(*v, 8 * s, 0x00ff_00ff);
                for (parity, k, n) in [(0, s, f[0]), (0, s + 2, f[1]), (1, s, f[2]), (1, s + 2, f[3])] {
                    counts[parity][8 * k + 4 * h + j] += 16 * n;
                }
            }
        }
        counts
    }
}

/// The 16-bit fields `(v >> shift) & mask` of the 32-bit lanes (`mask` keeps at most 8 bits of
/// each 16), summed over the lanes of each parity: `[even lanes' low field, even lanes' high
/// field, odd lanes' low field, odd lanes' high field]`. A 64-bit lane holds an even and an odd
/// lane, so one sum of the 8 64-bit lanes keeps the four fields apart (each below 8 * 2^8).
#[target_feature(enable = "avx512f")]
fn fields(v: __m512i, shift: usize, mask: i32) -> [u64; 4] {
    let f = _mm512_and_si512(_mm512_srlv_epi32(v, _mm512_set1_epi32(shift as i32)), _mm512_set1_epi32(mask));
    let t = _mm512_reduce_add_epi64(f) as u64;
    [t & 0xffff, t >> 16 & 0xffff, t >> 32 & 0xffff, t >> 48]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words of 32-bit lanes with random bits, fed through [`Positions`] and counted one by one.
    #[target_feature(enable = "avx512f")]
    fn check(groups: u32, density: u32) {
        let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(groups * 31 + density);
        let mut word = || {
            let mut w = u32::MAX;
            for _ in 0..density {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                w &= state as u32;
            }
            w
        };
        let words: Vec<u32> = (0..groups as usize * GROUP * 16).map(|_| word()).collect();
        let mut want = [[0u64; 32]; 2];
        for (i, w) in words.iter().enumerate() {
            (0..32).filter(|b| w >> b & 1 == 1).for_each(|b| want[i & 1][b] += 1);
        }
        let mut p = Positions::new();
        let mut vectors = words.chunks_exact(16);
        for _ in 0..groups {
            p.add16(|| {
                let mut v = || {
                    let c = vectors.next().unwrap_or(&[0; 16]);
                    // SAFETY: `c` holds 16 words, one vector.
                    unsafe { _mm512_loadu_si512(c.as_ptr().cast()) }
                };
                (v(), v())
            });
        }
        assert_eq!(p.counts(), want, "{groups} groups, density {density}");
    }

    #[test]
    fn counts_every_bit_position_up_to_the_most_groups() {
        if !crate::arch::Supported::all().iter().any(|s| s.tier() == crate::arch::Tier::Avx512) {
            eprintln!("skipped: the AVX-512 positional count, which this CPU cannot run");
            return;
        }
        for groups in [0, 1, 2, 14, 15, 16, 31, 100, MAX_GROUPS] {
            for density in [0, 1, 3] {
                // SAFETY: the CPU has the AVX-512 tier.
                unsafe { check(groups, density) };
            }
        }
    }
}
