//! The seen-set's admission-order FIFO, stored in fixed-size chunks.
//!
//! Why not `VecDeque`: it grows by doubling and copying, so while it grows the old and
//! the new buffer are both live (three times the entries), and the freed halves are
//! holes in Wasm linear memory, which never shrinks. Here memory grows one chunk
//! (≤ 1024 entries) at a time, a chunk emptied at the front is reused at the back,
//! and nothing is ever copied: at 1 M keys the entries cost their own 20 bytes.

use std::ops::{Index, IndexMut};

/// Entries per chunk, at most: 20 KiB chunks of 20-byte entries.
const MAX_CHUNK_SHIFT: u32 = 10;

#[derive(Debug, Clone)]
pub struct Ring<T> {
    chunks: Vec<Box<[T]>>,
    /// log2 of the entries per chunk.
    shift: u32,
    /// Position of the first entry in `chunks[0]`.
    head: usize,
    len: usize,
}

impl<T: Copy + Default> Ring<T> {
    /// An empty ring; chunks are sized for `max_len` (small caps get small chunks).
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

    /// Entries the allocated chunks hold.
    pub fn capacity(&self) -> usize {
        self.chunks.len() << self.shift
    }

    pub fn push_back(&mut self, v: T) {
        let at = self.head + self.len;
        if at >> self.shift == self.chunks.len() {
            self.chunks
                .push(vec![T::default(); 1 << self.shift].into_boxed_slice());
        }
        let mask = self.mask();
        self.chunks[at >> self.shift][at & mask] = v;
        self.len += 1;
    }

    pub fn pop_front(&mut self) -> Option<T> {
        let v = *self.front()?;
        self.head += 1;
        self.len -= 1;
        if self.len == 0 {
            self.head = 0;
        } else if self.head == 1 << self.shift {
            // The first chunk is used up: keep it as the one spare at the back.
            let done = self.chunks.remove(0);
            self.head = 0;
            if self.capacity() < self.len + (1 << self.shift) {
                self.chunks.push(done);
            }
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

    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks
            .iter()
            .flat_map(|c| c.iter())
            .skip(self.head)
            .take(self.len)
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        self.chunks
            .iter_mut()
            .flat_map(|c| c.iter_mut())
            .skip(self.head)
            .take(self.len)
    }

    fn mask(&self) -> usize {
        (1 << self.shift) - 1
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

    /// Random pushes and pops at both ends agree with a `VecDeque`.
    #[test]
    fn behaves_like_a_vecdeque() {
        for max in [1, 3, 16, 5000] {
            let mut ring = Ring::new(max);
            let mut model = VecDeque::new();
            let mut x = 0x2545_f491_4f6c_dd1d_u64;
            for step in 0..20_000u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match x % 7 {
                    0..=3 if model.len() < max => {
                        ring.push_back(step);
                        model.push_back(step);
                    }
                    4 => assert_eq!(ring.pop_back(), model.pop_back()),
                    _ => assert_eq!(ring.pop_front(), model.pop_front()),
                }
                assert_eq!(ring.len(), model.len());
                assert_eq!(ring.front(), model.front());
                assert_eq!(ring.back(), model.back());
                if step % 997 == 0 {
                    assert!(ring.iter().eq(model.iter()));
                    let i = (x as usize) % model.len().max(1);
                    assert_eq!(model.get(i), (i < ring.len()).then(|| &ring[i]));
                }
                assert!(ring.capacity() <= (max + 2 * 1024).next_power_of_two() * 2);
            }
        }
    }
}
