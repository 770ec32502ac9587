//! Internal keys: a user key followed by an 8-byte little-endian tag
//! `seq << 8 | value type`.
//!
//! ## Format
//! ```text
//! internal key := user_key  fixed64le(sequence << 8 | type)
//! ```
//! Order: user keys ascending (bytewise), then tag *descending*, so for one
//! user key the newest version comes first.

use std::cmp::Ordering;

use super::coding::decode_fixed64;

/// A sequence number: 56 bits.
pub type SequenceNumber = u64;

/// The largest sequence number that fits beside a type byte.
pub const MAX_SEQUENCE: SequenceNumber = (1 << 56) - 1;

/// What an entry is. All five are reserved from the first format version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueType {
    Delete = 0,
    Put = 1,
    Merge = 2,
    RangeDelete = 3,
    BlobIndex = 4,
}

impl ValueType {
    pub fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            0 => ValueType::Delete,
            1 => ValueType::Put,
            2 => ValueType::Merge,
            3 => ValueType::RangeDelete,
            4 => ValueType::BlobIndex,
            _ => return None,
        })
    }
}

/// The type byte used in seek keys: larger than every real type, so that a
/// seek to (key, seq) lands on the newest entry with sequence <= seq.
pub const TYPE_FOR_SEEK: u8 = 0xff;

pub const TAG_LEN: usize = 8;

pub fn pack_tag(seq: SequenceNumber, ty: u8) -> u64 {
    debug_assert!(seq <= MAX_SEQUENCE);
    (seq << 8) | u64::from(ty)
}

/// Appends the internal key for (user_key, seq, ty) to `dst`.
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seq: SequenceNumber, ty: u8) {
    dst.reserve(user_key.len() + TAG_LEN);
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_tag(seq, ty).to_le_bytes());
}

pub fn internal_key(user_key: &[u8], seq: SequenceNumber, ty: ValueType) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TAG_LEN);
    append_internal_key(&mut v, user_key, seq, ty as u8);
    v
}

/// A seek key held on the stack when it is short (RocksDB's `LookupKey`):
/// a point lookup builds one per key without allocating.
pub type LookupKey = smallvec::SmallVec<[u8; 64]>;

/// The [`LookupKey`] for `user_key` as of snapshot `seq` (see [`seek_key`]).
pub fn lookup_key(user_key: &[u8], seq: SequenceNumber) -> LookupKey {
    let tag = pack_tag(seq, TYPE_FOR_SEEK).to_le_bytes();
    let n = user_key.len();
    if n + TAG_LEN <= 64 {
        let mut buf = [0u8; 64];
        buf[..n].copy_from_slice(user_key);
        buf[n..n + TAG_LEN].copy_from_slice(&tag);
        return LookupKey::from_buf_and_len(buf, n + TAG_LEN);
    }
    let mut v = Vec::with_capacity(n + TAG_LEN);
    v.extend_from_slice(user_key);
    v.extend_from_slice(&tag);
    LookupKey::from_vec(v)
}

/// The key to seek to for `user_key` as of snapshot `seq`.
pub fn seek_key(user_key: &[u8], seq: SequenceNumber) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TAG_LEN);
    append_internal_key(&mut v, user_key, seq, TYPE_FOR_SEEK);
    v
}

/// An internal key split into its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    pub user_key: &'a [u8],
    pub seq: SequenceNumber,
    pub ty: ValueType,
}

/// Splits an internal key; `None` if it is shorter than a tag or its type
/// byte is unknown.
pub fn parse(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    let n = ikey.len().checked_sub(TAG_LEN)?;
    let tag = decode_fixed64(&ikey[n..])?;
    Some(ParsedKey { user_key: &ikey[..n], seq: tag >> 8, ty: ValueType::from_u8(tag as u8)? })
}

/// The user key part of an internal key (all of it if malformed).
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TAG_LEN)]
}

#[inline]
fn tag(ikey: &[u8]) -> u64 {
    let n = ikey.len().saturating_sub(TAG_LEN);
    decode_fixed64(&ikey[n..]).unwrap_or(0)
}

/// Orders internal keys: user key ascending, then tag descending.
#[inline]
/// Whether `ikey` is a range-tombstone sentinel, `(k, MAX_SEQUENCE,
/// RangeDelete)`: a table's largest key set to the end of a range tombstone
/// it holds. The table holds nothing of `k` itself (its tombstones end
/// before `k`), so the next file of its level may start with `k`.
pub fn is_range_sentinel(ikey: &[u8]) -> bool {
    parse(ikey).is_some_and(|p| p.seq == MAX_SEQUENCE && p.ty == ValueType::RangeDelete)
}

pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    match bytewise(user_key(a), user_key(b)) {
        Ordering::Equal => tag(b).cmp(&tag(a)),
        o => o,
    }
}

/// Bytewise order of two byte strings, comparing 8 bytes at a time inline:
/// for the short keys of a key-value store this beats a call to `memcmp`,
/// and it is the hottest function of memtable inserts and lookups.
#[inline]
pub fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_be_bytes(a[i..i + 8].try_into().unwrap_or([0; 8]));
        let y = u64::from_be_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    match a[i..n].cmp(&b[i..n]) {
        Ordering::Equal => a.len().cmp(&b.len()),
        o => o,
    }
}

/// A short user key `k` with `start <= k < limit` (when one exists), used as
/// an index separator between two blocks. Returns `start` when no shorter key
/// fits.
pub fn shortest_separator(start: &[u8], limit: &[u8]) -> Vec<u8> {
    let common = start.iter().zip(limit).take_while(|(a, b)| a == b).count();
    if common < start.len().min(limit.len()) {
        let b = start[common];
        if b < 0xff && b + 1 < limit[common] {
            let mut out = start[..=common].to_vec();
            out[common] += 1;
            return out;
        }
    }
    start.to_vec()
}

/// A short user key `k >= key`.
pub fn short_successor(key: &[u8]) -> Vec<u8> {
    for (i, &b) in key.iter().enumerate() {
        if b != 0xff {
            let mut out = key[..=i].to_vec();
            out[i] += 1;
            return out;
        }
    }
    key.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_round_trips() {
        let k = internal_key(b"user", 12345, ValueType::Merge);
        let p = parse(&k).expect("parse");
        assert_eq!(p, ParsedKey { user_key: b"user", seq: 12345, ty: ValueType::Merge });
        assert_eq!(user_key(&k), b"user");
    }

    #[test]
    fn parse_rejects_short_and_unknown_type() {
        assert!(parse(b"short").is_none());
        let mut k = internal_key(b"k", 1, ValueType::Put);
        let n = k.len();
        k[n - 8] = 9;
        assert!(parse(&k).is_none());
    }

    #[test]
    fn order_is_user_key_then_newest_first() {
        let a1 = internal_key(b"a", 1, ValueType::Put);
        let a2 = internal_key(b"a", 2, ValueType::Put);
        let b1 = internal_key(b"b", 1, ValueType::Put);
        assert_eq!(compare(&a2, &a1), Ordering::Less);
        assert_eq!(compare(&a1, &b1), Ordering::Less);
        assert_eq!(compare(&internal_key(b"ab", 9, ValueType::Put), &b1), Ordering::Less);
        // Prefix user keys sort before longer ones, whatever the tag bytes.
        assert_eq!(
            compare(&internal_key(b"a", 0, ValueType::Put), &internal_key(b"a\0", 99, ValueType::Put)),
            Ordering::Less
        );
        // A seek key sorts before every entry of its sequence and older.
        assert_eq!(compare(&seek_key(b"a", 2), &a2), Ordering::Less);
        assert_eq!(compare(&seek_key(b"a", 1), &a2), Ordering::Greater);
    }

    #[test]
    fn bytewise_matches_slice_order() {
        let samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0xff],
            b"abcdefgh".to_vec(),
            b"abcdefgh\0".to_vec(),
            b"abcdefgi".to_vec(),
            b"abcdefghijklmnop".to_vec(),
            b"abcdefghijklmnoq".to_vec(),
            b"abcdefghijklmno".to_vec(),
            vec![0x80; 17],
            vec![0x7f; 17],
        ];
        for a in &samples {
            for b in &samples {
                assert_eq!(bytewise(a, b), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn separators_stay_between() {
        for (s, l) in [
            (&b"abcd"[..], &b"abzz"[..]),
            (b"abc", b"abd"),
            (b"a", b"b"),
            (b"a\xff", b"b"),
            (b"", b"x"),
            (b"ab", b"ab\x00"),
        ] {
            let sep = shortest_separator(s, l);
            assert!(sep.as_slice() >= s && sep.as_slice() < l, "{s:?} {l:?} -> {sep:?}");
        }
        assert_eq!(shortest_separator(b"abcd", b"abzz"), b"abd");
        assert_eq!(short_successor(b"abc"), b"b");
        assert_eq!(short_successor(b"\xff\xffx"), b"\xff\xffy");
        assert_eq!(short_successor(b"\xff"), b"\xff");
    }
}
