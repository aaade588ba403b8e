//! Reading stored bytes (a seen-set snapshot, a sequence window): every read checks
//! the length, so truncated or corrupt bytes are an [`Error::InvalidSnapshot`], never
//! a panic.

use crate::dedupe::error::Error;

/// A cursor over stored bytes.
pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
    /// The offset of the next read.
    pub(crate) at: usize,
}

impl Reader<'_> {
    /// The next `N` bytes.
    pub(crate) fn take<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let bytes = self
            .buf
            .get(self.at..self.at + N)
            .ok_or(Error::InvalidSnapshot("truncated"))?;
        self.at += N;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, Error> {
        self.take().map(|[b]| b)
    }

    pub(crate) fn u16(&mut self) -> Result<u16, Error> {
        self.take().map(u16::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, Error> {
        self.take().map(u64::from_le_bytes)
    }

    /// A LEB128 u64, refused unless in its shortest form.
    pub(crate) fn varint(&mut self) -> Result<u64, Error> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err(Error::InvalidSnapshot("varint too long"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                if b == 0 && shift > 0 {
                    return Err(Error::InvalidSnapshot("varint not in its shortest form"));
                }
                return Ok(v);
            }
            shift += 7;
        }
    }

    /// Ok when every byte was read.
    pub(crate) fn end(&self) -> Result<(), Error> {
        if self.at == self.buf.len() {
            Ok(())
        } else {
            Err(Error::InvalidSnapshot("trailing bytes"))
        }
    }
}

/// Appends `v` as a LEB128 varint (what [`Reader::varint`] reads).
pub(crate) fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
