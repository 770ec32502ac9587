//! Write batches: many updates across the boundary in one buffer.
//!
//! ## Format
//! A write batch from `siltdb` (little-endian):
//! ```text
//! ops  := op*
//! op   := 0x01 klen:u32 vlen:u32 key value     put
//!       | 0x00 klen:u32 key                    delete
//!       | 0x02 klen:u32 vlen:u32 key operand   merge
//!       | 0x03 slen:u32 elen:u32 start end     delete_range [start, end)
//!       | 0x81 klen:u32 vlen:u32 key value     bookkeeping put (`WriteBatch::put_bookkeeping`:
//!                                              a connect() leader's write record)
//! ```
//! (The keys of a `multiGet` travel through the exchange buffer, see
//! `exchange.rs`.)

use silt_engine::rocksdb::EntryKind;
use silt_engine::WriteBatch;

use crate::error::BindingError;

const DELETE: u8 = 0x00;
const PUT: u8 = 0x01;
const MERGE: u8 = 0x02;
const DELETE_RANGE: u8 = 0x03;
const BOOKKEEPING_PUT: u8 = 0x81;

/// Appends one op to `out` in the format above (as `siltdb`'s `WriteBatch`
/// encodes it): a delete has no `value`.
pub(crate) fn encode_op(out: &mut Vec<u8>, kind: EntryKind, key: &[u8], value: &[u8]) {
    let tag = match kind {
        EntryKind::Value => PUT,
        EntryKind::Delete => DELETE,
        EntryKind::Merge => MERGE,
        EntryKind::RangeDelete => DELETE_RANGE,
    };
    out.push(tag);
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    if tag != DELETE {
        out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(key);
    if tag != DELETE {
        out.extend_from_slice(value);
    }
}

/// `(key, value)` slices of an encoded batch.
pub(crate) type Puts<'a> = Vec<(&'a [u8], &'a [u8])>;

/// The puts of a write batch encoded by `siltdb`, as slices of it (for
/// `ingest`: no copy); any other update is refused.
pub(crate) fn decode_puts(mut buf: &[u8]) -> Result<Puts<'_>, BindingError> {
    let bad = |what: &str| BindingError::invalid(format!("malformed write batch: {what}"));
    let mut out = Vec::new();
    while let Some((&tag, rest)) = buf.split_first() {
        if tag != PUT {
            return Err(BindingError::invalid(
                "ingest() takes puts only: apply a batch with deletes or merges with db.write(batch)",
            ));
        }
        let (lens, rest) = rest.split_at_checked(8).ok_or_else(|| bad("truncated lengths"))?;
        let klen = u32::from_le_bytes([lens[0], lens[1], lens[2], lens[3]]) as usize;
        let vlen = u32::from_le_bytes([lens[4], lens[5], lens[6], lens[7]]) as usize;
        let (key, rest) = rest.split_at_checked(klen).ok_or_else(|| bad("truncated key"))?;
        let (value, rest) = rest.split_at_checked(vlen).ok_or_else(|| bad("truncated value"))?;
        out.push((key, value));
        buf = rest;
    }
    Ok(out)
}

/// Decodes a write batch encoded by `siltdb`. Keys and values are checked
/// by the engine when the batch is written.
pub(crate) fn decode_batch(mut buf: &[u8]) -> Result<WriteBatch, BindingError> {
    let mut batch = WriteBatch::new();
    let bad = |what: &str| BindingError::invalid(format!("malformed write batch: {what}"));
    fn take<'a>(buf: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if buf.len() < n {
            return None;
        }
        let (head, rest) = buf.split_at(n);
        *buf = rest;
        Some(head)
    }
    fn u32_of(buf: &mut &[u8]) -> Option<usize> {
        take(buf, 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
    while let Some(tag) = take(&mut buf, 1) {
        match tag[0] {
            tag @ (PUT | MERGE | BOOKKEEPING_PUT) => {
                let klen = u32_of(&mut buf).ok_or_else(|| bad("truncated key length"))?;
                let vlen = u32_of(&mut buf).ok_or_else(|| bad("truncated value length"))?;
                let key = take(&mut buf, klen).ok_or_else(|| bad("truncated key"))?;
                let value = take(&mut buf, vlen).ok_or_else(|| bad("truncated value"))?;
                if tag == PUT {
                    batch.put(key, value);
                } else if tag == MERGE {
                    batch.merge(key, value);
                } else {
                    batch.put_bookkeeping(key, value);
                }
            }
            DELETE => {
                let klen = u32_of(&mut buf).ok_or_else(|| bad("truncated key length"))?;
                let key = take(&mut buf, klen).ok_or_else(|| bad("truncated key"))?;
                batch.delete(key);
            }
            DELETE_RANGE => {
                let slen = u32_of(&mut buf).ok_or_else(|| bad("truncated start length"))?;
                let elen = u32_of(&mut buf).ok_or_else(|| bad("truncated end length"))?;
                let start = take(&mut buf, slen).ok_or_else(|| bad("truncated start"))?;
                let end = take(&mut buf, elen).ok_or_else(|| bad("truncated end"))?;
                batch.delete_range(start, end);
            }
            other => return Err(bad(&format!("unknown op 0x{other:02x}"))),
        }
    }
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use silt_engine::BatchOp;

    use super::*;

    fn put(key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut b = vec![PUT];
        b.extend_from_slice(&(key.len() as u32).to_le_bytes());
        b.extend_from_slice(&(value.len() as u32).to_le_bytes());
        b.extend_from_slice(key);
        b.extend_from_slice(value);
        b
    }

    fn delete(key: &[u8]) -> Vec<u8> {
        let mut b = vec![DELETE];
        b.extend_from_slice(&(key.len() as u32).to_le_bytes());
        b.extend_from_slice(key);
        b
    }

    fn delete_range(start: &[u8], end: &[u8]) -> Vec<u8> {
        let mut b = put(start, end);
        b[0] = DELETE_RANGE;
        b
    }

    fn merge(key: &[u8], operand: &[u8]) -> Vec<u8> {
        let mut b = put(key, operand);
        b[0] = MERGE;
        b
    }

    #[test]
    fn decodes_puts_and_deletes_in_order() {
        let buf = [put(b"a", b"1"), delete(b"b"), put(b"c", b""), delete_range(b"d", b"f"), merge(b"g", b"+")].concat();
        let batch = decode_batch(&buf).unwrap();
        let ops: Vec<_> = batch.iter().map(|op| op.unwrap()).collect();
        assert_eq!(
            ops,
            [
                BatchOp::Put { key: b"a", value: b"1" },
                BatchOp::Delete { key: b"b" },
                BatchOp::Put { key: b"c", value: b"" },
                BatchOp::RangeDelete { start: b"d", end: b"f" },
                BatchOp::Merge { key: b"g", value: b"+" },
            ]
        );
        assert!(decode_batch(&[]).unwrap().is_empty());
    }

    /// `encode_op` writes what the decoder (and siltdb's WriteBatch) reads.
    #[test]
    fn encoded_ops_are_the_format() {
        let mut buf = Vec::new();
        encode_op(&mut buf, EntryKind::Value, b"a", b"1");
        encode_op(&mut buf, EntryKind::Delete, b"b", b"ignored");
        encode_op(&mut buf, EntryKind::RangeDelete, b"d", b"f");
        encode_op(&mut buf, EntryKind::Merge, b"g", b"+");
        assert_eq!(buf, [put(b"a", b"1"), delete(b"b"), delete_range(b"d", b"f"), merge(b"g", b"+")].concat());
    }

    #[test]
    fn every_truncation_and_unknown_tags_are_invalid_arguments() {
        let buf = [put(b"key", b"value"), delete(b"gone"), delete_range(b"a", b"b")].concat();
        for cut in 1..buf.len() {
            let whole = [put(b"key", b"value").len(), put(b"key", b"value").len() + delete(b"gone").len()];
            if whole.contains(&cut) {
                continue; // whole ops make a valid batch
            }
            let err = decode_batch(&buf[..cut]).err().unwrap_or_else(|| panic!("cut at {cut} accepted"));
            assert_eq!(err.code, "InvalidArgument");
        }
        assert!(decode_batch(&[7, 0, 0, 0, 0]).unwrap_err().message.contains("unknown op 0x07"));
    }

    #[test]
    fn puts_for_ingest_are_slices_of_the_buffer_and_anything_else_is_refused() {
        let buf = [put(b"a", b"1"), put(b"c", b""), put(b"", b"empty key")].concat();
        let puts = decode_puts(&buf).unwrap();
        assert_eq!(puts, [(&b"a"[..], &b"1"[..]), (&b"c"[..], &b""[..]), (&b""[..], &b"empty key"[..])]);
        assert!(decode_puts(&[]).unwrap().is_empty());
        for other in [delete(b"b"), merge(b"g", b"+"), delete_range(b"d", b"f")] {
            let err = decode_puts(&[put(b"a", b"1"), other].concat()).unwrap_err();
            assert!(err.message.contains("puts only"), "{}", err.message);
        }
        let whole = put(b"key", b"value");
        for cut in 1..whole.len() {
            assert_eq!(decode_puts(&whole[..cut]).unwrap_err().code, "InvalidArgument", "cut at {cut}");
        }
    }
}
