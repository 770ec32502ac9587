//! Little-endian fixed integers and LEB128 varints, as LevelDB's `coding.h`.
//! Decoders never panic: they return `None` on truncated or overlong input.

pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

pub fn decode_fixed32(src: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(src.get(..4)?.try_into().ok()?))
}

pub fn decode_fixed64(src: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(src.get(..8)?.try_into().ok()?))
}

pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends a varint length followed by the bytes.
pub fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(dst, bytes.len() as u64);
    dst.extend_from_slice(bytes);
}

/// Decodes a varint64; returns (value, bytes consumed).
#[inline]
pub fn decode_varint64(src: &[u8]) -> Option<(u64, usize)> {
    match src.first() {
        Some(&b) if b < 0x80 => Some((u64::from(b), 1)),
        _ => decode_varint64_slow(src),
    }
}

fn decode_varint64_slow(src: &[u8]) -> Option<(u64, usize)> {
    let mut result = 0u64;
    for (i, &b) in src.iter().enumerate().take(10) {
        let part = u64::from(b & 0x7f);
        if i == 9 && b > 1 {
            return None; // more than 64 bits
        }
        result |= part << (7 * i);
        if b < 0x80 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Decodes a varint32; returns (value, bytes consumed).
#[inline]
pub fn decode_varint32(src: &[u8]) -> Option<(u32, usize)> {
    let (v, n) = decode_varint64(src)?;
    Some((u32::try_from(v).ok()?, n))
}

/// A cursor over a byte slice for decoders: each getter advances past what it
/// read or returns `None` without advancing.
pub struct Reader<'a> {
    pub buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn varint64(&mut self) -> Option<u64> {
        let (v, n) = decode_varint64(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }

    pub fn varint32(&mut self) -> Option<u32> {
        let (v, n) = decode_varint32(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }

    pub fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.buf.split_first()?;
        self.buf = rest;
        Some(b)
    }

    pub fn fixed64(&mut self) -> Option<u64> {
        let v = decode_fixed64(self.buf)?;
        self.buf = &self.buf[8..];
        Some(v)
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Some(head)
    }

    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let save = self.buf;
        let n = self.varint64()?;
        match usize::try_from(n).ok().and_then(|n| self.bytes(n)) {
            Some(b) => Some(b),
            None => {
                self.buf = save;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_at_every_width() {
        let mut vals = vec![0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX];
        vals.extend((0..64).map(|s| 1u64 << s));
        vals.extend((1..64).map(|s| (1u64 << s) - 1));
        for v in vals {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            assert_eq!(decode_varint64(&buf), Some((v, buf.len())), "value {v}");
            assert_eq!(decode_varint64(&buf[..buf.len() - 1]), None, "truncated {v}");
        }
    }

    #[test]
    fn varint_rejects_overlong_and_overflow() {
        assert_eq!(decode_varint64(&[0xff; 11]), None);
        assert_eq!(decode_varint64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]), None);
        let mut buf = Vec::new();
        put_varint64(&mut buf, u64::from(u32::MAX) + 1);
        assert_eq!(decode_varint32(&buf), None);
    }

    #[test]
    fn reader_does_not_advance_on_failure() {
        let mut buf = Vec::new();
        put_varint64(&mut buf, 10);
        buf.extend_from_slice(b"abc");
        let mut r = Reader::new(&buf);
        assert_eq!(r.length_prefixed(), None);
        assert_eq!(r.buf.len(), 4);
        assert_eq!(r.varint64(), Some(10));
    }

    #[test]
    fn fixed_round_trip() {
        let mut buf = Vec::new();
        put_fixed32(&mut buf, 0xdead_beef);
        put_fixed64(&mut buf, 0x0123_4567_89ab_cdef);
        assert_eq!(decode_fixed32(&buf), Some(0xdead_beef));
        assert_eq!(decode_fixed64(&buf[4..]), Some(0x0123_4567_89ab_cdef));
        assert_eq!(decode_fixed32(&buf[12..]), None);
    }
}
