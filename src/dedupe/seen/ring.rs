//! The seen-set's admission-order FIFO: one exact-size buffer while small, fixed-size
//! chunks once large.
//!
//! * **Small** (up to one chunk of entries): a single buffer holding `[head, head + len)`.
//!   When a push reaches its end, the entries move to its front if it is at most 2/3
//!   full (so a move of `len` entries buys at least `len / 2` pushes), and otherwise it
//!   grows to exactly `cap + cap / 2 + 1` entries (1, 2, 4, 7, 11, 17, 26, 40, 61, …),
//!   never past one chunk. A device holding 40 keys holds a 40-entry buffer, not a chunk.
//! * **Large**: chunks of `1 << shift` entries (at most 1 024, 20 KiB). The buffer at its
//!   full size *is* the first chunk, so the switch copies nothing; from there memory
//!   grows one chunk at a time, a chunk emptied at the front is reused at the back, and
//!   nothing is ever copied. Why not `VecDeque`: it grows by doubling and copying, so
//!   while it grows the old and the new buffer are both live, and the freed halves are
//!   holes in Wasm linear memory, which never shrinks.
//! * **Back down**: [`Ring::shrink`], which the owner calls after removals, frees the
//!   chunks past the entries but one spare (and that one too while the entries fill at
//!   most 2/3 of a chunk, so a ring down to one such chunk is small again), cuts a small
//!   buffer less than 1/4 full to `len + len / 2 + 1` entries, and frees everything once
//!   the ring is empty. The thresholds leave room both ways, so a steady ring neither grows nor
//!   shrinks.
//!
//! Both layouts index the same way (`chunks[at >> shift][at & mask]`): a small buffer is
//! never longer than a chunk, so its entries all sit in `chunks[0]`.

use std::ops::{Index, IndexMut};

/// Entries per chunk, at most: 20 KiB chunks of 20-byte entries.
const MAX_CHUNK_SHIFT: u32 = 10;

#[derive(Debug, Clone)]
pub struct Ring<T> {
    /// Small: no buffer or one buffer of up to a chunk. Large: two or more full chunks.
    chunks: Vec<Box<[T]>>,
    /// log2 of the entries per chunk.
    shift: u32,
    /// Position of the first entry in `chunks[0]`.
    head: usize,
    len: usize,
}

/// The next size of a small buffer: about 1.5 times, and never 0.
fn grown(n: usize) -> usize {
    n + n / 2 + 1
}

impl<T: Copy + Default> Ring<T> {
    /// An empty ring that allocates nothing; chunks are sized for `max_len` (small caps
    /// get small chunks).
    pub fn new(max_len: usize) -> Ring<T> {
        Ring {
            chunks: Vec::new(),
            shift: max_len
                .next_power_of_two()
                .trailing_zeros()
                .min(MAX_CHUNK_SHIFT),
            head: 0,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entries the allocated buffer or chunks hold.
    pub fn capacity(&self) -> usize {
        match self.chunks.as_slice() {
            [only] => only.len(),
            chunks => chunks.len() << self.shift,
        }
    }

    /// Whether the ring is in its chunked layout (two or more chunks).
    pub fn is_chunked(&self) -> bool {
        self.chunks.len() > 1
    }

    pub fn push_back(&mut self, v: T) {
        if self.head + self.len == self.capacity() {
            self.make_room();
        }
        let at = self.head + self.len;
        let mask = self.mask();
        self.chunks[at >> self.shift][at & mask] = v;
        self.len += 1;
    }

    /// Room for one more entry at the back, the end of the storage being reached.
    #[cold]
    fn make_room(&mut self) {
        let chunk = 1 << self.shift;
        let cap = self.capacity();
        let crowded = self.len * 3 > cap * 2;
        if self.is_chunked() || cap == chunk && crowded {
            self.chunks
                .push(vec![T::default(); chunk].into_boxed_slice());
        } else if crowded || cap == 0 {
            self.resize(grown(cap).min(chunk));
        } else if let Some(only) = self.chunks.first_mut() {
            // Small, with at least a third free at the front: move the entries there.
            only.copy_within(self.head..self.head + self.len, 0);
            self.head = 0;
        }
    }

    /// Moves a small ring's entries into a new buffer of exactly `cap >= len` entries.
    fn resize(&mut self, cap: usize) {
        debug_assert!(!self.is_chunked() && cap >= self.len);
        let mut buf = vec![T::default(); cap].into_boxed_slice();
        if let Some(old) = self.chunks.first() {
            buf[..self.len].copy_from_slice(&old[self.head..self.head + self.len]);
        }
        self.chunks.clear();
        self.chunks.reserve_exact(1); // one pointer, not the four a first push reserves
        self.chunks.push(buf);
        self.head = 0;
    }

    /// Gives memory back after removals (see the module docs). Cheap when there is
    /// nothing to do.
    #[inline]
    pub fn shrink(&mut self) {
        if self.len == 0 {
            if !self.chunks.is_empty() {
                self.chunks = Vec::new();
                self.head = 0;
            }
            return;
        }
        if self.is_chunked() {
            let chunk = 1 << self.shift;
            let used = (self.head + self.len).div_ceil(chunk);
            let keep = used + usize::from(self.len * 3 > chunk * 2);
            if self.chunks.len() > keep {
                self.chunks.truncate(keep);
            }
        }
        if !self.is_chunked() && self.len * 4 < self.capacity() {
            self.resize(grown(self.len));
        }
    }

    pub fn pop_front(&mut self) -> Option<T> {
        let v = *self.front()?;
        self.head += 1;
        self.len -= 1;
        if self.len == 0 {
            self.head = 0;
        } else if self.head == 1 << self.shift {
            // The first chunk is used up (the ring is large): it becomes the spare at
            // the back, and [`Self::shrink`] frees it if it is not needed.
            self.chunks.rotate_left(1);
            self.head = 0;
        }
        Some(v)
    }

    pub fn pop_back(&mut self) -> Option<T> {
        let v = *self.back()?;
        self.len -= 1;
        if self.len == 0 {
            self.head = 0;
        }
        Some(v)
    }

    pub fn front(&self) -> Option<&T> {
        (self.len > 0).then(|| &self[0])
    }

    pub fn back(&self) -> Option<&T> {
        self.len.checked_sub(1).map(|i| &self[i])
    }

    /// The entries as contiguous slices, oldest first: one while the ring is small.
    pub fn slices(&self) -> impl Iterator<Item = &[T]> + '_ {
        let held = self.held();
        self.chunks
            .iter()
            .enumerate()
            .map(move |(c, chunk)| &chunk[held(c, chunk.len())])
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.slices().flatten()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        let held = self.held();
        self.chunks
            .iter_mut()
            .enumerate()
            .flat_map(move |(c, chunk)| {
                let range = held(c, chunk.len());
                chunk[range].iter_mut()
            })
    }

    /// Which part of chunk `c` (of its length) holds entries.
    fn held(&self) -> impl Fn(usize, usize) -> std::ops::Range<usize> {
        let (shift, head, end) = (self.shift, self.head, self.head + self.len);
        move |c, chunk_len| {
            let clamp = |at: usize| at.saturating_sub(c << shift).min(chunk_len);
            clamp(head)..clamp(end)
        }
    }

    fn mask(&self) -> usize {
        (1 << self.shift) - 1
    }

    /// Panics unless the memory held fits the entries as [`Self::shrink`] leaves it.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn check_fit(&self) {
        let chunk = 1 << self.shift;
        assert!(
            self.head + self.len <= self.capacity(),
            "entries past the storage"
        );
        if self.is_chunked() {
            assert!(self.chunks.iter().all(|c| c.len() == chunk), "chunk size");
            assert!(self.head < chunk, "a used-up chunk at the front");
            let used = (self.head + self.len).div_ceil(chunk);
            assert!(self.chunks.len() <= used + 1, "more than one spare chunk");
        } else {
            let cap = self.capacity();
            assert!(
                cap <= chunk.min(4 * self.len),
                "small buffer over 4x its entries"
            );
        }
    }
}

impl<T: Copy + Default> Index<usize> for Ring<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        debug_assert!(i < self.len);
        let at = self.head + i;
        &self.chunks[at >> self.shift][at & self.mask()]
    }
}

impl<T: Copy + Default> IndexMut<usize> for Ring<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.len);
        let at = self.head + i;
        let mask = self.mask();
        &mut self.chunks[at >> self.shift][at & mask]
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;
    use std::collections::VecDeque;

    /// Random pushes and pops at both ends, each pop followed by a shrink as the
    /// seen-set does, agree with a `VecDeque`; the memory held follows the entries held.
    #[test]
    fn behaves_like_a_vecdeque() {
        for max in [1, 3, 16, 100, 5000] {
            let mut ring = Ring::new(max);
            let chunk = 1 << ring.shift;
            let mut model = VecDeque::new();
            let mut rng = fastrand::Rng::with_seed(max as u64);
            let (mut was_chunked, mut small_again) = (false, false);
            for step in 0..48_000u32 {
                // Phases of mostly pushes, then mostly pops, so the ring crosses between
                // its small and large layouts in both directions.
                let filling = (step / 8000) % 2 == 0;
                let op = rng.u8(..8);
                match op {
                    0..=4 if model.len() < max && (filling || op == 0) => {
                        ring.push_back(step);
                        model.push_back(step);
                    }
                    5 => {
                        assert_eq!(ring.pop_back(), model.pop_back());
                        ring.shrink();
                    }
                    _ => {
                        assert_eq!(ring.pop_front(), model.pop_front());
                        ring.shrink();
                    }
                }
                assert_eq!(ring.len(), model.len());
                assert_eq!(ring.front(), model.front());
                assert_eq!(ring.back(), model.back());
                if step % 997 == 0 {
                    assert!(ring.iter().eq(model.iter()));
                    assert!(ring.iter_mut().map(|v| *v).eq(model.iter().copied()));
                    let i = rng.usize(..model.len().max(1));
                    assert_eq!(model.get(i), (i < ring.len()).then(|| &ring[i]));
                }
                ring.check_fit();
                was_chunked |= ring.is_chunked();
                small_again |= was_chunked && !ring.is_chunked();
            }
            if max > chunk {
                assert!(was_chunked && small_again, "max {max}");
            }
        }
    }

    /// A small ring grows to exactly the sizes 1, 2, 4, 7, … up to a chunk, then by
    /// whole chunks; the full buffer becomes the first chunk without a copy.
    #[test]
    fn grows_exactly_then_by_chunks() {
        let mut ring = Ring::new(100_000);
        let mut caps = vec![ring.capacity()];
        let mut first_chunk = None;
        for i in 0..3000u32 {
            ring.push_back(i);
            if ring.capacity() != caps[caps.len() - 1] {
                caps.push(ring.capacity());
            }
            if ring.capacity() == 1024 {
                first_chunk = Some(ring.chunks[0].as_ptr());
            }
        }
        assert_eq!(
            caps,
            [0, 1, 2, 4, 7, 11, 17, 26, 40, 61, 92, 139, 209, 314, 472, 709, 1024, 2048, 3072]
        );
        assert_eq!(first_chunk, Some(ring.chunks[0].as_ptr()));
        assert!(ring.iter().copied().eq(0..3000));
    }

    /// A small ring rolling over a steady window keeps its size: entries move to the
    /// front instead of the buffer growing.
    #[test]
    fn a_steady_window_moves_instead_of_growing() {
        let mut ring = Ring::new(100_000);
        (0..36u32).for_each(|i| ring.push_back(i));
        for i in 36..10_000u32 {
            ring.pop_front();
            ring.shrink();
            ring.push_back(i);
        }
        assert!(ring.iter().copied().eq(10_000 - 36..10_000));
        assert!(
            !ring.is_chunked() && ring.capacity() <= 61,
            "{}",
            ring.capacity()
        );
    }

    /// From large back to small, then smaller, then nothing.
    #[test]
    fn shrinks_back_to_small_and_to_nothing() {
        let mut ring = Ring::new(100_000);
        (0..5000u32).for_each(|i| ring.push_back(i));
        assert!(ring.is_chunked());
        for _ in 0..4900 {
            ring.pop_front();
            ring.shrink();
        }
        assert!(!ring.is_chunked());
        assert!(ring.capacity() <= 4 * 100, "{}", ring.capacity());
        assert!(ring.iter().copied().eq(4900..5000));
        while ring.pop_front().is_some() {
            ring.shrink();
        }
        assert_eq!(ring.capacity(), 0);
        ring.push_back(7);
        assert_eq!((ring.capacity(), ring.front()), (1, Some(&7)));
    }
}
