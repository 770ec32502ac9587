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

use silt_engine::WriteBatch;

use crate::error::BindingError;

const DELETE: u8 = 0x00;
const PUT: u8 = 0x01;
const MERGE: u8 = 0x02;
const DELETE_RANGE: u8 = 0x03;
const BOOKKEEPING_PUT: u8 = 0x81;

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
}
