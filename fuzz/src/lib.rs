//! The properties the fuzz targets check, one module a target, as plain functions
//! (`check(data)`) so that `cargo test` on stable replays them over the seed corpora
//! ([`seeds`]), the committed regressions (`regressions/<target>/`) and seeded
//! pseudo-random inputs, and `cargo fuzz run <target>` explores them on nightly.
//!
//! A failed property panics: libFuzzer records the input as a crash.

pub mod codec;
pub mod reading;
pub mod seeds;
pub mod seen_ops;
pub mod snapshot;
pub mod uplink;

/// Reads an input front to back; past its end every read gives zeros, so any byte
/// string decodes (libFuzzer's inputs are often short).
pub struct Src<'a> {
    data: &'a [u8],
}

impl<'a> Src<'a> {
    pub fn new(data: &'a [u8]) -> Src<'a> {
        Src { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        b.iter_mut().for_each(|x| *x = self.u8());
        u64::from_le_bytes(b)
    }

    /// Up to `n` bytes (fewer at the end of the input).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// One of `items`, chosen by the next byte.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[usize::from(self.u8()) % items.len()]
    }
}

/// Writes what [`Src`] reads, for the seed corpora.
#[derive(Default)]
pub struct Sink(pub Vec<u8>);

impl Sink {
    pub fn u8(&mut self, v: u8) -> &mut Sink {
        self.0.push(v);
        self
    }
    pub fn u16(&mut self, v: u16) -> &mut Sink {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Sink {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Sink {
        self.0.extend_from_slice(v);
        self
    }
}
