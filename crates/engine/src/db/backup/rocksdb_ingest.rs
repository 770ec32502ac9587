//! RocksDB table files taken into a database: a ustar archive of them (as
//! a RocksDB export of Silt's, or `tar --format=ustar` of tables that
//! RocksDB's `SstFileWriter` wrote) or one bare table, pushed in pieces.
//! Every table is read whole and every block's checksum verified before
//! anything is written; then all of it is written in one step: tables of
//! values only as one ingest (table files added by one manifest edit),
//! others (deletions, merge operands, range deletions) as one synced
//! write batch.
//!
//! Tables are applied in the order given, each over the ones before it (a
//! later table's keys win); within a table, entries in the order of their
//! sequence numbers (an external file's global number replaces its keys'),
//! a range deletion before the points at its own number (it covers only
//! older entries, as in RocksDB), so that of a key's versions the newest
//! wins. A RocksDB database's own table files carry sequence numbers that
//! order them only together with its manifest, which is not read here:
//! give such tables after a full compaction (`ldb compact`), when they no
//! longer overlap, or export the database with `SstFileWriter`.

use crate::batch::WriteBatch;
use crate::db::{Db, WriteOptions};
use crate::db::{IngestOptions, IngestReport};
use crate::error::{Error, Result};
use crate::rocksdb::tar::{is_tar, TarReader};
use crate::rocksdb::{read_table, EntryKind, RocksdbEntry, RocksdbTable};

/// What [`RocksdbIngest::finish`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RocksdbIngestReport {
    /// Distinct keys written (put, deleted or merged).
    pub keys: u64,
    /// RocksDB tables read.
    pub tables: u64,
    /// Silt table files written (0 when the entries went in as a write batch).
    pub files: u64,
}

/// RocksDB tables being taken in; see the module documentation.
#[derive(Default)]
pub struct RocksdbIngest {
    /// Bytes before the form is known (a ustar header is 512 bytes).
    head: Vec<u8>,
    tar: Option<TarReader>,
    /// A bare table, whole.
    bare: Option<Vec<u8>>,
    tables: Vec<RocksdbTable>,
}

impl RocksdbIngest {
    pub fn new() -> Self {
        RocksdbIngest::default()
    }

    /// Takes the next piece of the archive or bare table.
    pub fn push(&mut self, bytes: &[u8]) -> Result<()> {
        if let Some(bare) = &mut self.bare {
            bare.extend_from_slice(bytes);
            return Ok(());
        }
        if self.tar.is_none() {
            self.head.extend_from_slice(bytes);
            if self.head.len() < 512 {
                return Ok(());
            }
            let head = std::mem::take(&mut self.head);
            if is_tar(&head) {
                self.tar = Some(TarReader::default());
                return self.push(&head);
            }
            self.bare = Some(head);
            return Ok(());
        }
        let files = self.tar.as_mut().expect("an archive").push(bytes)?;
        for (name, bytes) in files {
            if name.ends_with(".sst") {
                self.add_table(&name, &bytes)?;
            }
        }
        Ok(())
    }

    /// Takes one whole table file: read and verified now.
    pub fn add_table(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.tables.push(read_table(name, bytes)?);
        Ok(())
    }

    /// Takes the tables of `other`, a whole archive or table pushed in
    /// pieces, after these (they win over these where they overlap).
    pub fn append(&mut self, mut other: RocksdbIngest) -> Result<()> {
        other.close()?;
        self.tables.append(&mut other.tables);
        Ok(())
    }

    /// Ends what was pushed: the archive must be whole, and hold a table if
    /// it holds files; a bare table is read.
    fn close(&mut self) -> Result<()> {
        if let Some(tar) = self.tar.take() {
            if !tar.finished() {
                return Err(Error::corruption(
                    "RocksDB export archive",
                    0,
                    "the archive ends before its end blocks: it was cut short",
                ));
            }
            if tar.files > 0 && self.tables.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "the archive holds {} files and no RocksDB table (a file whose name ends in .sst)",
                    tar.files
                )));
            }
        } else {
            let bytes = self.bare.take().unwrap_or_else(|| std::mem::take(&mut self.head));
            if !bytes.is_empty() {
                self.add_table("table.sst", &bytes)?;
            }
        }
        Ok(())
    }

    /// Tables taken so far.
    pub fn tables(&self) -> usize {
        self.tables.len()
    }

    /// Writes what the tables hold into `db` in one step; see the module
    /// documentation.
    pub fn finish(self, db: &Db) -> Result<RocksdbIngestReport> {
        self.plan()?.apply(db)
    }

    /// What the tables hold, in the order it is written (see the module
    /// documentation), without writing it: for a writer that applies it
    /// its own way (a `connect()` leader, which records the write).
    pub fn plan(mut self) -> Result<RocksdbPlan> {
        self.close()?;
        let tables = self.tables;
        let count = tables.len() as u64;
        if tables.iter().all(|t| t.entries().all(|e| e.kind == EntryKind::Value)) {
            let order = newest_values(&tables);
            return Ok(RocksdbPlan { keys: order.len() as u64, order, read: tables, values_only: true, tables: count });
        }
        // Table by table; in a table, by sequence number.
        let mut order: Vec<(u32, u64, u8, usize)> = Vec::new();
        for (t, table) in tables.iter().enumerate() {
            for (i, e) in table.entries().enumerate() {
                let rank = u8::from(e.kind != EntryKind::RangeDelete);
                // A table holds a key's versions newest first: reversed.
                order.push((t as u32, e.sequence, rank, usize::MAX - i));
            }
        }
        crate::sort::sort(&mut order);
        let order: Vec<(u32, u32)> = order.into_iter().map(|(t, _, _, i)| (t, (usize::MAX - i) as u32)).collect();
        let mut keys: Vec<&[u8]> = tables
            .iter()
            .flat_map(|t| t.entries())
            .filter(|e| e.kind != EntryKind::RangeDelete)
            .map(|e| e.key)
            .collect();
        crate::sort::sort(&mut keys);
        keys.dedup();
        let keys = keys.len() as u64;
        Ok(RocksdbPlan { order, read: tables, values_only: false, keys, tables: count })
    }
}

/// Of tables of values only, each key's value from the last table that
/// holds it (in a table, its newest: the first), in key order: the tables
/// merged, nothing sorted (a table's entries are in order, which the reader
/// checked).
fn newest_values(tables: &[RocksdbTable]) -> Vec<(u32, u32)> {
    use std::cmp::Reverse;
    use std::collections::binary_heap::{BinaryHeap, PeekMut};
    // Each table's next entry (key, table, place): the heap's greatest is
    // the smallest key, of equal keys the last table's.
    let mut heap: BinaryHeap<(Reverse<&[u8]>, u32, u32)> = tables
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.is_empty())
        .map(|(t, table)| (Reverse(table.entry(0).key), t as u32, 0))
        .collect();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(tables.iter().map(|t| t.len()).max().unwrap_or(0));
    let mut last: Option<&[u8]> = None;
    while let Some(mut head) = heap.peek_mut() {
        let (Reverse(key), t, i) = *head;
        let table = &tables[t as usize];
        if (i as usize) + 1 < table.len() {
            *head = (Reverse(table.entry(i as usize + 1).key), t, i + 1);
        } else {
            PeekMut::pop(head);
        }
        if last != Some(key) {
            out.push((t, i));
            last = Some(key);
        }
    }
    out
}

/// What RocksDB tables hold, in the order it is written
/// ([`RocksdbIngest::plan`]).
#[derive(Clone, Debug)]
pub struct RocksdbPlan {
    /// The tables read.
    read: Vec<RocksdbTable>,
    /// Every entry applied (its table, and its place there), in the order
    /// it is applied (a later one over an earlier).
    order: Vec<(u32, u32)>,
    /// Whether every entry is a value (then it goes in as one ingest, and
    /// the entries are in key order, one per key).
    pub values_only: bool,
    /// Distinct keys written (put, deleted or merged).
    pub keys: u64,
    /// RocksDB tables read.
    pub tables: u64,
}

impl RocksdbPlan {
    /// Every entry, in the order it is applied (a later one over an earlier).
    pub fn entries(&self) -> impl ExactSizeIterator<Item = RocksdbEntry<'_>> + '_ {
        self.order.iter().map(|&(t, i)| self.read[t as usize].entry(i as usize))
    }

    /// Writes the plan into `db` in one step: one ingest of values only, or
    /// one synced write batch.
    pub fn apply(&self, db: &Db) -> Result<RocksdbIngestReport> {
        let (keys, tables) = (self.keys, self.tables);
        if self.values_only {
            let pairs = self.entries().map(|e| (e.key, e.value)).collect();
            let r: IngestReport = db.ingest_pairs(pairs, &IngestOptions { sorted: true })?;
            return Ok(RocksdbIngestReport { keys, tables, files: r.files });
        }
        let mut batch = WriteBatch::new();
        for e in self.entries() {
            match e.kind {
                EntryKind::Value => batch.put(e.key, e.value),
                EntryKind::Delete => batch.delete(e.key),
                EntryKind::Merge => batch.merge(e.key, e.value),
                EntryKind::RangeDelete => batch.delete_range(e.key, e.value),
            };
        }
        db.write(&WriteOptions { sync: true }, batch)?;
        Ok(RocksdbIngestReport { keys, tables, files: 0 })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::fs::MemFs;
    use crate::{Options, ReadOptions};

    fn entry(key: &'static str, sequence: u64, kind: EntryKind, value: &'static str) -> Entry {
        (key, sequence, kind, value)
    }

    type Entry = (&'static str, u64, EntryKind, &'static str);

    fn table(entries: Vec<Entry>) -> RocksdbTable {
        RocksdbTable::of(&entries)
    }

    fn get(db: &Db, key: &str) -> Option<String> {
        db.get(&ReadOptions::default(), key.as_bytes()).unwrap().map(|v| String::from_utf8(v.to_vec()).unwrap())
    }

    /// Deletions, merges and range deletions are applied table by table,
    /// and in a table as RocksDB orders them: by sequence number, range
    /// deletions before the points at their own number.
    #[test]
    fn entries_apply_in_rocksdb_order() {
        let options = Options { merge_operator: Some(Arc::new(crate::AppendOperator)), ..Options::default() };
        let db = Db::open(Arc::new(MemFs::new()), "db", options).unwrap();
        db.put(&WriteOptions::default(), b"old", b"there").unwrap();
        db.put(&WriteOptions::default(), b"m", b"base").unwrap();
        let mut ingest = RocksdbIngest::new();
        // An external file: every entry at its global number 0, so its own
        // range deletion leaves its own points ("b") alone.
        ingest.tables.push(table(vec![
            entry("a", 0, EntryKind::Value, "a1"),
            entry("b", 0, EntryKind::Value, "b1"),
            entry("m", 0, EntryKind::Merge, "x"),
            entry("a", 0, EntryKind::RangeDelete, "z"),
        ]));
        // A later table: its deletion of "b" wins; a key's versions newest
        // first: "c" at 9 wins over "c" at 3, and over "d" at 7 its range
        // deletion at 8 (but not the "d" at 8 beside it).
        ingest.tables.push(table(vec![
            entry("b", 0, EntryKind::Delete, ""),
            entry("c", 9, EntryKind::Value, "c9"),
            entry("c", 3, EntryKind::Value, "c3"),
            entry("d", 8, EntryKind::Value, "d8"),
            entry("e", 7, EntryKind::Value, "e7"),
            entry("old", 0, EntryKind::Delete, ""),
            entry("d", 8, EntryKind::RangeDelete, "f"),
        ]));
        // A table given last wins, whatever its sequence numbers: "c" at 0.
        ingest.tables.push(table(vec![entry("c", 0, EntryKind::Value, "c-last")]));
        let report = ingest.finish(&db).unwrap();
        assert_eq!((report.keys, report.tables), (7, 3));
        assert_eq!(get(&db, "a").as_deref(), Some("a1"));
        assert_eq!(get(&db, "b"), None);
        assert_eq!(get(&db, "c").as_deref(), Some("c-last"));
        assert_eq!(get(&db, "d").as_deref(), Some("d8"));
        assert_eq!(get(&db, "e"), None);
        assert_eq!(get(&db, "old"), None);
        // The range deletion [a, z) took the merge's base away first.
        assert_eq!(get(&db, "m").as_deref(), Some("x"));
    }

    #[test]
    fn values_only_go_in_as_one_ingest() {
        let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        let mut ingest = RocksdbIngest::new();
        ingest.tables.push(table(vec![entry("k", 0, EntryKind::Value, "1"), entry("l", 0, EntryKind::Value, "2")]));
        ingest.tables.push(table(vec![entry("k", 0, EntryKind::Value, "3")]));
        let report = ingest.finish(&db).unwrap();
        assert_eq!((report.keys, report.files), (2, 1));
        assert_eq!(get(&db, "k").as_deref(), Some("3"));
        assert_eq!(get(&db, "l").as_deref(), Some("2"));
    }

    /// Tables of values only are merged: of a key, the last table's value,
    /// and in a table its newest (first) version; the plan is in key order.
    #[test]
    fn values_only_plan_is_merged_in_key_order() {
        let mut ingest = RocksdbIngest::new();
        let v = EntryKind::Value;
        ingest.tables.push(table(vec![entry("a", 0, v, "a1"), entry("c", 0, v, "c1"), entry("e", 0, v, "e1")]));
        ingest.tables.push(table(vec![
            entry("b", 0, v, "b2"),
            entry("c", 7, v, "c2-new"),
            entry("c", 4, v, "c2-old"),
            entry("f", 0, v, "f2"),
        ]));
        ingest.tables.push(table(vec![]));
        ingest.tables.push(table(vec![entry("e", 0, v, "e4"), entry("f", 9, v, "f4-new"), entry("f", 2, v, "f4")]));
        let plan = ingest.plan().unwrap();
        assert!(plan.values_only);
        let got: Vec<(String, String)> = plan
            .entries()
            .map(|e| (String::from_utf8(e.key.to_vec()).unwrap(), String::from_utf8(e.value.to_vec()).unwrap()))
            .collect();
        let want = [("a", "a1"), ("b", "b2"), ("c", "c2-new"), ("e", "e4"), ("f", "f4-new")];
        assert_eq!(got, want.map(|(k, v)| (k.to_string(), v.to_string())));
        assert_eq!((plan.keys, plan.tables), (5, 4));
    }
}
