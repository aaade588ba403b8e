//! SipHash-2-4 with 128-bit output (Aumasson & Bernstein), the keyed hash that turns
//! untrusted `device_id` + `seq` into seen-set fingerprints. With a secret random key
//! a sender cannot aim readings at one hash bucket, and two different inputs share
//! an output with probability 2^-128.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SipKey(pub u64, pub u64);

struct State([u64; 4]);

impl State {
    #[inline(always)]
    fn round(&mut self) {
        let v = &mut self.0;
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13);
        v[1] ^= v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16);
        v[3] ^= v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21);
        v[3] ^= v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17);
        v[1] ^= v[2];
        v[2] = v[2].rotate_left(32);
    }

    #[inline(always)]
    fn absorb(&mut self, m: u64) {
        self.0[3] ^= m;
        self.round();
        self.round();
        self.0[0] ^= m;
    }

    #[inline(always)]
    fn fold(&self) -> u64 {
        self.0[0] ^ self.0[1] ^ self.0[2] ^ self.0[3]
    }
}

/// SipHash-2-4-128 of `parts` concatenated, returned as (first, second) 64-bit halves
/// in the reference implementation's little-endian output order.
pub fn siphash128(key: SipKey, parts: &[&[u8]]) -> (u64, u64) {
    let mut s = State([
        key.0 ^ 0x736f_6d65_7073_6575,
        key.1 ^ 0x646f_7261_6e64_6f83, // 0x...6f6d ^ 0xee: the 128-bit variant's tweak
        key.0 ^ 0x6c79_6765_6e65_7261,
        key.1 ^ 0x7465_6462_7974_6573,
    ]);
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut word = [0u8; 8];
    let mut filled = 0;
    for part in parts {
        let mut bytes = *part;
        // Top up a word left partial by the previous part, then take whole words.
        while filled > 0 {
            let Some((&byte, rest)) = bytes.split_first() else {
                break;
            };
            word[filled] = byte;
            filled += 1;
            bytes = rest;
            if filled == 8 {
                s.absorb(u64::from_le_bytes(word));
                filled = 0;
            }
        }
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            s.absorb(u64::from_le_bytes(w.try_into().unwrap_or_default()));
        }
        for &byte in words.remainder() {
            word[filled] = byte;
            filled += 1;
        }
    }
    word[filled..].fill(0);
    let last = u64::from_le_bytes(word) | ((total as u64 & 0xff) << 56);
    s.absorb(last);
    s.0[2] ^= 0xee;
    for _ in 0..4 {
        s.round();
    }
    let first = s.fold();
    s.0[1] ^= 0xdd;
    for _ in 0..4 {
        s.round();
    }
    (first, s.fold())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_key() -> SipKey {
        // Key bytes 00 01 02 ... 0f, read little-endian.
        SipKey(0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908)
    }

    fn hex(out: (u64, u64)) -> String {
        let mut bytes = out.0.to_le_bytes().to_vec();
        bytes.extend_from_slice(&out.1.to_le_bytes());
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn reference_vectors() {
        // From the SipHash reference code's vectors_sip128 table: message bytes 00 .. n-1.
        let msg: Vec<u8> = (0u8..64).collect();
        assert_eq!(
            hex(siphash128(reference_key(), &[&msg[..0]])),
            "a3817f04ba25a8e66df67214c7550293"
        );
        assert_eq!(
            hex(siphash128(reference_key(), &[&msg[..1]])),
            "da87c1d86b99af44347659119b22fc45"
        );
        assert_eq!(
            hex(siphash128(reference_key(), &[&msg[..15]])),
            "5493e99933b0a8117e08ec0f97cfc3d9"
        );
    }

    #[test]
    fn parts_concatenate() {
        let k = SipKey(1, 2);
        assert_eq!(
            siphash128(k, &[b"bin-A17", &41i64.to_le_bytes()]),
            siphash128(k, &[b"bin-A1", b"7", &41i64.to_le_bytes()])
        );
        assert_ne!(siphash128(k, &[b"a"]), siphash128(SipKey(1, 3), &[b"a"]));
    }
}
