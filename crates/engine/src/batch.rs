//! `WriteBatch`: a set of updates applied atomically, and the record the WAL
//! stores for it.
//!
//! ## Format
//! ```text
//! batch  := sequence: fixed64le   count: fixed32le   op{count}
//! op     := 0x01 key value        Put
//!         | 0x00 key              Delete
//!         | 0x02 key value        Merge
//!         | 0x03 start end        RangeDelete
//! key, value, start, end := varint64 length, bytes
//! ```
//! The sequence number is that of the first op; op *i* gets `sequence + i`.

use crate::error::{Error, Result};
use crate::format::coding::{decode_fixed32, decode_fixed64, put_length_prefixed, Reader};
use crate::format::key::{SequenceNumber, ValueType};

pub(crate) const HEADER_LEN: usize = 12;

/// The most bytes (key and value) a bookkeeping put may take.
pub const BOOKKEEPING_MAX: usize = 1024;

/// A sequence of updates applied atomically by `Db::write`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    /// Puts added with [`WriteBatch::put_bookkeeping`] (not in `rep`: a
    /// property of this write, not of the record the WAL keeps).
    bookkeeping_puts: u32,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

/// One update in a batch, borrowing from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchOp<'a> {
    Put { key: &'a [u8], value: &'a [u8] },
    Delete { key: &'a [u8] },
    Merge { key: &'a [u8], value: &'a [u8] },
    RangeDelete { start: &'a [u8], end: &'a [u8] },
}

impl BatchOp<'_> {
    pub fn value_type(&self) -> ValueType {
        match self {
            BatchOp::Put { .. } => ValueType::Put,
            BatchOp::Delete { .. } => ValueType::Delete,
            BatchOp::Merge { .. } => ValueType::Merge,
            BatchOp::RangeDelete { .. } => ValueType::RangeDelete,
        }
    }
}

impl WriteBatch {
    pub fn new() -> Self {
        WriteBatch { rep: vec![0; HEADER_LEN], bookkeeping_puts: 0 }
    }

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> &mut Self {
        self.push(ValueType::Put, key, Some(value))
    }

    /// Sets `key` to `value` as the embedder's bookkeeping, stored as a plain
    /// put: siltdb records the id of each request it applies this way, in
    /// the request's own batch. Unlike other puts, a bookkeeping put of at
    /// most [`BOOKKEEPING_MAX`] bytes does not stop a batch of deletes from
    /// counting as one that frees space, which a full database still takes
    /// (see `Db::write`); a larger one is an ordinary put.
    pub fn put_bookkeeping(&mut self, key: &[u8], value: &[u8]) -> &mut Self {
        if key.len() + value.len() <= BOOKKEEPING_MAX {
            self.bookkeeping_puts += 1;
        }
        self.put(key, value)
    }

    /// Puts added by [`WriteBatch::put_bookkeeping`].
    pub fn bookkeeping_puts(&self) -> u32 {
        self.bookkeeping_puts
    }

    /// Removes `key`.
    pub fn delete(&mut self, key: &[u8]) -> &mut Self {
        self.push(ValueType::Delete, key, None)
    }

    /// Adds a merge operand for `key` (needs `Options::merge_operator`).
    pub fn merge(&mut self, key: &[u8], operand: &[u8]) -> &mut Self {
        self.push(ValueType::Merge, key, Some(operand))
    }

    /// Removes every key in `[start, end)`.
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) -> &mut Self {
        self.push(ValueType::RangeDelete, start, Some(end))
    }

    fn push(&mut self, ty: ValueType, key: &[u8], value: Option<&[u8]>) -> &mut Self {
        self.rep.push(ty as u8);
        put_length_prefixed(&mut self.rep, key);
        if let Some(v) = value {
            put_length_prefixed(&mut self.rep, v);
        }
        let count = self.count() + 1;
        self.rep[8..12].copy_from_slice(&count.to_le_bytes());
        self
    }

    /// Number of updates.
    pub fn count(&self) -> u32 {
        decode_fixed32(&self.rep[8..]).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Encoded size in bytes.
    pub fn approximate_size(&self) -> usize {
        self.rep.len()
    }

    /// Removes every update.
    pub fn clear(&mut self) {
        self.bookkeeping_puts = 0;
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
    }

    pub(crate) fn sequence(&self) -> SequenceNumber {
        decode_fixed64(&self.rep).unwrap_or(0)
    }

    pub(crate) fn set_sequence(&mut self, seq: SequenceNumber) {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
    }

    pub(crate) fn data(&self) -> &[u8] {
        &self.rep
    }

    /// Decodes a batch read from the WAL, checking its whole structure.
    pub(crate) fn from_record(rec: Vec<u8>, file: &str, offset: u64) -> Result<Self> {
        if rec.len() < HEADER_LEN {
            return Err(Error::corruption(file, offset, "write batch shorter than its header"));
        }
        let batch = WriteBatch { rep: rec, bookkeeping_puts: 0 };
        let mut n = 0u32;
        for op in batch.iter() {
            op.map_err(|reason| Error::corruption(file, offset, reason))?;
            n += 1;
        }
        if n != batch.count() {
            return Err(Error::corruption(
                file,
                offset,
                format!("write batch holds {n} ops, header says {}", batch.count()),
            ));
        }
        Ok(batch)
    }

    /// The updates in order.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter { r: Reader::new(&self.rep[HEADER_LEN..]) }
    }
}

/// Iterator over a batch's updates; an item is `Err` if the encoding is bad.
pub struct BatchIter<'a> {
    r: Reader<'a>,
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = std::result::Result<BatchOp<'a>, &'static str>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.r.is_empty() {
            return None;
        }
        let tag = self.r.u8()?;
        let op = (|| {
            let a = self.r.length_prefixed().ok_or("truncated key in write batch")?;
            Ok(match ValueType::from_u8(tag) {
                Some(ValueType::Delete) => BatchOp::Delete { key: a },
                Some(ValueType::Put) => {
                    BatchOp::Put { key: a, value: self.r.length_prefixed().ok_or("truncated value in write batch")? }
                }
                Some(ValueType::Merge) => {
                    BatchOp::Merge { key: a, value: self.r.length_prefixed().ok_or("truncated value in write batch")? }
                }
                Some(ValueType::RangeDelete) => BatchOp::RangeDelete {
                    start: a,
                    end: self.r.length_prefixed().ok_or("truncated range end in write batch")?,
                },
                _ => return Err("unknown op tag in write batch"),
            })
        })();
        if op.is_err() {
            self.r.buf = &[];
        }
        Some(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_through_the_encoding() {
        let mut b = WriteBatch::new();
        b.put(b"k1", b"v1").delete(b"k2").put(b"", b"");
        b.set_sequence(77);
        let back = WriteBatch::from_record(b.data().to_vec(), "wal", 0).unwrap();
        assert_eq!(back.sequence(), 77);
        assert_eq!(back.count(), 3);
        let ops: Vec<_> = back.iter().map(|o| o.unwrap()).collect();
        assert_eq!(
            ops,
            vec![
                BatchOp::Put { key: b"k1", value: b"v1" },
                BatchOp::Delete { key: b"k2" },
                BatchOp::Put { key: b"", value: b"" }
            ]
        );
    }

    #[test]
    fn damaged_records_are_corruption() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value").delete(b"other");
        let rec = b.data().to_vec();
        for cut in 0..rec.len() {
            assert!(WriteBatch::from_record(rec[..cut].to_vec(), "w", 5).is_err(), "cut {cut}");
        }
        let mut bad = rec.clone();
        bad[8] = 9; // count
        assert!(matches!(WriteBatch::from_record(bad, "w", 5), Err(Error::Corruption { offset: 5, .. })));
        let mut bad = rec;
        bad[HEADER_LEN] = 0x7f; // op tag
        assert!(WriteBatch::from_record(bad, "w", 5).is_err());
    }

    #[test]
    fn clear_empties() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"b");
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.iter().count(), 0);
    }
}
