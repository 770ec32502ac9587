//! The updates still held in memtables (not yet flushed to a table), by
//! sequence number: after an open, what the WAL replay recovered. A
//! `connect()` leader that takes over from one that crashed publishes from
//! them the change records its predecessor acknowledged and did not publish
//! (issue 40, item 3). An ingest's or an import's updates are never in a
//! memtable (they go straight to tables): their sequence numbers are
//! missing here, and so is anything a flush has moved to a table.

use std::sync::Arc;

use super::Db;
use crate::format::key::{self, SequenceNumber, ValueType};
use crate::iter::InternalIterator;

/// One update held in a memtable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub seq: SequenceNumber,
    /// `Put`, `Delete`, `Merge` or `RangeDelete`.
    pub kind: ValueType,
    pub key: Vec<u8>,
    /// A range delete's end (exclusive); empty otherwise.
    pub end: Vec<u8>,
}

impl Update {
    /// Bytes it holds: its keys, and a fixed charge for the rest.
    pub fn bytes(&self) -> usize {
        self.key.len() + self.end.len() + 16
    }
}

impl Db {
    /// The updates the memtables hold with sequence numbers above `after`,
    /// oldest first: at most `max_bytes` of them (`Update::bytes`), the
    /// newest that fit. Costs a pass over every memtable: meant for once per
    /// open, not per read.
    pub fn unflushed_updates(&self, after: SequenceNumber, max_bytes: usize) -> Vec<Update> {
        let (sv, visible) = self.read_view(None);
        let mut out = Vec::new();
        for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
            let mut it = Arc::clone(mem).iter();
            it.seek_to_first();
            while it.valid() {
                if let Some(p) = key::parse(it.key()) {
                    if p.seq > after && p.seq <= visible {
                        out.push(Update { seq: p.seq, kind: p.ty, key: p.user_key.to_vec(), end: Vec::new() });
                    }
                }
                it.next();
            }
            for t in mem.range_tombstones() {
                if t.seq > after && t.seq <= visible {
                    out.push(Update { seq: t.seq, kind: ValueType::RangeDelete, key: t.start, end: t.end });
                }
            }
        }
        crate::sort::sort_by_key(&mut out, |u| u.seq);
        let mut bytes = 0;
        let mut keep = out.len();
        while keep > 0 && bytes + out[keep - 1].bytes() <= max_bytes {
            keep -= 1;
            bytes += out[keep].bytes();
        }
        out.drain(..keep);
        out
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::db::{Db, Options, WriteOptions};
    use crate::format::key::ValueType;
    use crate::fs::{CrashMode, FaultFs, MemFs};
    use crate::merge::U64AddOperator;
    use crate::WriteBatch;

    const SYNC: WriteOptions = WriteOptions { sync: true };

    #[test]
    fn an_open_after_a_crash_reports_what_the_wal_replayed_and_a_flush_takes_it_away() {
        let fault = FaultFs::new(Arc::new(MemFs::new()));
        let options = || Options { merge_operator: Some(Arc::new(U64AddOperator)), ..Options::default() };
        let db = Db::open(Arc::new(fault.clone()), "db", options()).unwrap();
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.delete(b"b");
        b.delete_range(b"c", b"d");
        db.write(&SYNC, b).unwrap();
        let mut m = WriteBatch::new();
        m.merge(b"e", &1u64.to_le_bytes());
        db.write(&SYNC, m).unwrap();
        fault.crash(CrashMode::DropUnsynced).unwrap();
        drop(db);
        let db = Db::open(Arc::new(fault.clone()), "db", options()).unwrap();
        let all = db.unflushed_updates(0, usize::MAX);
        let seen: Vec<_> = all.iter().map(|u| (u.seq, u.kind, u.key.clone(), u.end.clone())).collect();
        assert_eq!(
            seen,
            vec![
                (1, ValueType::Put, b"a".to_vec(), vec![]),
                (2, ValueType::Delete, b"b".to_vec(), vec![]),
                (3, ValueType::RangeDelete, b"c".to_vec(), b"d".to_vec()),
                (4, ValueType::Merge, b"e".to_vec(), vec![]),
            ]
        );
        assert_eq!(db.unflushed_updates(2, usize::MAX).len(), 2);
        // The newest that fit.
        let newest = db.unflushed_updates(0, 2 * 17 + 1);
        assert_eq!(newest.iter().map(|u| u.seq).collect::<Vec<_>>(), vec![3, 4]);
        db.flush().unwrap();
        assert!(db.unflushed_updates(0, usize::MAX).is_empty());
    }
}
