//! `GetContext`: the state of one point lookup as it walks memtables and
//! levels, newest data first (RocksDB's `GetContext::SaveValue`).
//!
//! Each source hands it the versions of the key it holds, newest first. A
//! version older than the highest covering range tombstone seen so far
//! (`max_covering_tombstone_seq`, carried down from newer sources) counts as
//! deleted. A Put or Delete ends the lookup; Merge operands are collected
//! until a base value (or the end) is reached and combined by the merge
//! operator.

use bytes::Bytes;

use crate::clock::Clock;
use crate::error::{messages, Error, Result};
use crate::format::key::{SequenceNumber, ValueType};
use crate::merge::{self, MergeOperator, MergeStats};
use crate::stats::GetStats;

/// A point entry of a type this version cannot read (a blob reference,
/// written by a newer version): every read path says so the same way,
/// never as a deletion.
pub fn unsupported_entry(ty: ValueType) -> Error {
    Error::NotSupported(format!("a point entry of type {ty:?} for this key: written by a newer version"))
}

pub struct GetContext<'a> {
    user_key: &'a [u8],
    merge_operator: Option<&'a dyn MergeOperator>,
    /// Highest sequence number of a range tombstone covering the key in the
    /// sources visited so far.
    pub max_covering_tombstone_seq: SequenceNumber,
    /// Newest first.
    operands: Vec<Bytes>,
    result: Option<Option<Bytes>>,
    /// What holds the result's bytes when they were not copied (a whole
    /// data block, or a memtable entry): the result pins it.
    holder: Option<Bytes>,
    pub stats: GetStats,
    /// What merging cost (time with a clock; failures).
    pub merge: MergeStats,
    /// Measures merges when durations are measured.
    clock: Option<&'a dyn Clock>,
    /// Whether data blocks read from a file go into the block cache
    /// (`ReadOptions::fill_cache`).
    pub fill_cache: bool,
    /// Only the newest version's sequence number is wanted
    /// ([`GetContext::for_sequence`]).
    seq_only: bool,
    /// In `seq_only` mode: the sequence number of the newest version seen.
    pub newest_seq: SequenceNumber,
    /// While a file is searched for the row cache: the versions it offered,
    /// as stored (types before any tombstone hid them).
    record: Option<Vec<(ValueType, SequenceNumber, Bytes)>>,
    /// Table files whose data a batched lookup searched for the key (its
    /// filter let it through and its index named a block, or the row cache
    /// answered), and the number of the first: what read sampling charges
    /// (`Db::sample_read`; a single Get counts its own).
    pub files_searched: u32,
    pub first_file_searched: Option<u64>,
}

impl<'a> GetContext<'a> {
    /// A lookup of `user_key`; `clock` times its merges (pass the
    /// database's `Options::timer()`).
    pub fn new(
        user_key: &'a [u8],
        merge_operator: Option<&'a dyn MergeOperator>,
        clock: Option<&'a dyn Clock>,
    ) -> Self {
        GetContext {
            user_key,
            merge_operator,
            max_covering_tombstone_seq: 0,
            operands: Vec::new(),
            result: None,
            holder: None,
            stats: GetStats::default(),
            merge: MergeStats::default(),
            clock,
            fill_cache: true,
            seq_only: false,
            newest_seq: 0,
            record: None,
            files_searched: 0,
            first_file_searched: None,
        }
    }

    /// Notes that the data of table file `number` was searched for the key.
    pub fn searched_file(&mut self, number: u64) {
        if self.files_searched == 0 {
            self.first_file_searched = Some(number);
        }
        self.files_searched += 1;
    }

    /// A lookup that stops at the key's newest version and keeps only its
    /// sequence number (`newest_seq`), for conflict checks: RocksDB's
    /// `GetLatestSequenceForKey` (D50475).
    pub fn for_sequence(user_key: &'a [u8]) -> Self {
        let mut ctx = Self::new(user_key, None, None);
        ctx.seq_only = true;
        ctx
    }

    /// Raises the covering tombstone sequence number from a source's own
    /// tombstones.
    pub fn cover(&mut self, seq: SequenceNumber) {
        self.max_covering_tombstone_seq = self.max_covering_tombstone_seq.max(seq);
    }

    /// Nothing was offered yet that matters: no answer, no operand, no
    /// covering tombstone.
    pub fn is_untouched(&self) -> bool {
        self.result.is_none() && self.operands.is_empty() && self.max_covering_tombstone_seq == 0
    }

    /// The lookup has its answer.
    pub fn is_done(&self) -> bool {
        self.result.is_some()
    }

    /// The lookup's answer is a value (not a deletion): what the level hit
    /// tickers count, as RocksDB's count found values only.
    pub fn found(&self) -> bool {
        matches!(self.result, Some(Some(_)))
    }

    /// Takes one version (newest first). Returns whether more versions are
    /// wanted.
    pub fn save(&mut self, ty: ValueType, seq: SequenceNumber, value: &Bytes) -> Result<bool> {
        if let Some(r) = self.record.as_mut() {
            r.push((ty, seq, value.clone()));
        }
        if self.seq_only {
            self.newest_seq = self.newest_seq.max(seq);
            self.result = Some(None);
            return Ok(false);
        }
        let ty = if seq < self.max_covering_tombstone_seq { ValueType::Delete } else { ty };
        match ty {
            ValueType::Put => {
                let r = if self.operands.is_empty() {
                    self.holder = Some(value.clone());
                    value.clone()
                } else {
                    self.merge(Some(value))?
                };
                self.result = Some(Some(r));
                Ok(false)
            }
            ValueType::Delete => {
                let r = if self.operands.is_empty() { None } else { Some(self.merge(None)?) };
                self.result = Some(r);
                Ok(false)
            }
            ValueType::Merge => {
                if self.merge_operator.is_none() {
                    return Err(Error::NotSupported(messages::READ_NEEDS_OPERATOR.into()));
                }
                self.operands.push(value.clone());
                Ok(true)
            }
            ValueType::RangeDelete | ValueType::BlobIndex => Err(unsupported_entry(ty)),
        }
    }

    /// Whether the row cache may serve and learn from this lookup (not one
    /// that only wants a sequence number).
    pub fn uses_row_cache(&self) -> bool {
        !self.seq_only
    }

    /// Offers a row cache entry's versions (newest first), as the file
    /// they came from would: tombstones and newer versions this lookup
    /// carries apply to them as to the file's own entries. A result taken
    /// from one holds its value's bytes (the entry's copy).
    pub fn replay(&mut self, versions: &[(ValueType, SequenceNumber, Bytes)]) -> Result<()> {
        for (ty, seq, v) in versions {
            if !self.save(*ty, *seq, v)? {
                break;
            }
        }
        Ok(())
    }

    /// Starts keeping the versions offered (for a row cache entry).
    pub fn start_recording(&mut self) {
        self.record = Some(Vec::new());
    }

    /// The versions offered since `start_recording`, if they are all the
    /// file holds for the key at this lookup's visibility: the lookup ran
    /// past the key's last version in the file, or stopped at a version
    /// that ends any lookup (a Put, Delete or blob reference as stored). A
    /// lookup that stopped because a tombstone hid a merge operand did not
    /// see the rest, and gives `None`.
    pub fn take_recording(&mut self) -> Option<Vec<(ValueType, SequenceNumber, Bytes)>> {
        let r = self.record.take()?;
        let last = r.last()?;
        let complete = !self.is_done() || !matches!(last.0, ValueType::Merge);
        complete.then_some(r)
    }

    /// Like [`GetContext::save`], for a value that is a slice of `holder`
    /// (the data block it was read from): a result keeps `holder` pinned.
    pub fn save_in(&mut self, ty: ValueType, seq: SequenceNumber, value: &Bytes, holder: &Bytes) -> Result<bool> {
        let more = self.save(ty, seq, value)?;
        if self.holder.is_some() {
            self.holder = Some(holder.clone());
        }
        Ok(more)
    }

    /// The answer and what holds its bytes (`None` when the value was
    /// computed, by a merge, and so is its own allocation).
    pub fn finish_pinned(&mut self) -> Result<Option<(Bytes, Option<Bytes>)>> {
        let holder = self.holder.take();
        Ok(self.finish()?.map(|v| (v, holder)))
    }

    /// The answer, once every source was visited (or the lookup ended).
    pub fn finish(&mut self) -> Result<Option<Bytes>> {
        if let Some(r) = self.result.take() {
            return Ok(r);
        }
        if self.operands.is_empty() {
            return Ok(None);
        }
        self.merge(None).map(Some)
    }

    fn merge(&mut self, base: Option<&Bytes>) -> Result<Bytes> {
        let op = self.merge_operator.ok_or_else(|| Error::NotSupported(messages::READ_NEEDS_OPERATOR.into()))?;
        let operands: Vec<&[u8]> = self.operands.iter().rev().map(|b| &b[..]).collect();
        let r = merge::full_merge(op, self.user_key, base.map(|b| &b[..]), &operands, self.clock, &mut self.merge);
        self.operands.clear();
        r.map(Bytes::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::U64AddOperator;

    fn n(v: u64) -> Bytes {
        Bytes::copy_from_slice(&v.to_le_bytes())
    }

    #[test]
    fn merges_operands_onto_the_base() {
        let op = U64AddOperator;
        let mut c = GetContext::new(b"k", Some(&op), None);
        assert!(c.save(ValueType::Merge, 9, &n(1)).unwrap());
        assert!(c.save(ValueType::Merge, 8, &n(2)).unwrap());
        assert!(!c.save(ValueType::Put, 7, &n(10)).unwrap());
        assert_eq!(c.finish().unwrap(), Some(n(13)));
    }

    #[test]
    fn tombstones_hide_older_versions_and_end_merges() {
        let op = U64AddOperator;
        let mut c = GetContext::new(b"k", Some(&op), None);
        c.cover(5);
        assert!(!c.save(ValueType::Put, 4, &n(10)).unwrap());
        assert_eq!(c.finish().unwrap(), None);
        let mut c = GetContext::new(b"k", Some(&op), None);
        assert!(c.save(ValueType::Merge, 9, &n(1)).unwrap());
        c.cover(6);
        assert!(!c.save(ValueType::Put, 4, &n(10)).unwrap());
        assert_eq!(c.finish().unwrap(), Some(n(1)));
    }

    #[test]
    fn merges_without_an_operator_are_an_error() {
        let mut c = GetContext::new(b"k", None, None);
        assert!(matches!(c.save(ValueType::Merge, 1, &n(1)), Err(Error::NotSupported(_))));
    }

    #[test]
    fn operands_without_a_base_merge_onto_nothing() {
        let op = U64AddOperator;
        let mut c = GetContext::new(b"k", Some(&op), None);
        c.save(ValueType::Merge, 3, &n(5)).unwrap();
        assert_eq!(c.finish().unwrap(), Some(n(5)));
    }
}
