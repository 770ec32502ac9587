//! Merge operands: resolved on Get, by iterators in both directions, and by
//! flushes and compactions (full and partial merges), across snapshots.

use std::sync::Arc;

use silt_engine::fs::MemFs;
use silt_engine::{Db, Error, Options, ReadOptions, U64AddOperator, WriteOptions};

const W: WriteOptions = WriteOptions { sync: false };

fn open_with(fs: &MemFs, merge: bool) -> silt_engine::Result<Db> {
    let options = Options {
        write_buffer_size: 64 << 10,
        disable_auto_compactions: true,
        merge_operator: merge.then(|| Arc::new(U64AddOperator) as Arc<dyn silt_engine::MergeOperator>),
        ..Options::default()
    };
    Db::open(Arc::new(fs.clone()), "db", options)
}

fn n(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

fn counter(db: &Db, opts: &ReadOptions, k: &[u8]) -> Option<u64> {
    db.get(opts, k).unwrap().map(|v| u64::from_le_bytes(v.try_into().unwrap()))
}

#[test]
fn operands_combine_across_memtable_flushes_and_levels() {
    let fs = MemFs::new();
    let db = open_with(&fs, true).unwrap();
    let r = ReadOptions::default();
    db.put(&W, b"c", &n(100)).unwrap();
    db.merge(&W, b"c", &n(1)).unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap(); // base at the last level
    db.merge(&W, b"c", &n(10)).unwrap();
    db.flush().unwrap(); // operand in L0
    db.merge(&W, b"c", &n(1000)).unwrap(); // operand in the memtable
    db.merge(&W, b"fresh", &n(5)).unwrap(); // no base at all
    assert_eq!(counter(&db, &r, b"c"), Some(1111));
    assert_eq!(counter(&db, &r, b"fresh"), Some(5));
    let mut it = db.iter(&r).unwrap();
    it.seek_to_first();
    assert_eq!((it.key(), it.value()), (&b"c"[..], &n(1111)[..]));
    it.next();
    assert_eq!((it.key(), it.value()), (&b"fresh"[..], &n(5)[..]));
    it.prev();
    assert_eq!(it.value(), n(1111));
    it.seek_to_last();
    assert_eq!(it.value(), n(5));
    it.prev();
    assert_eq!((it.key(), it.value()), (&b"c"[..], &n(1111)[..]));
    drop(it);
    db.compact_range(None, None).unwrap();
    assert_eq!(counter(&db, &r, b"c"), Some(1111));
    drop(db);
    let db = open_with(&fs, true).unwrap();
    assert_eq!(counter(&db, &r, b"c"), Some(1111));
}

#[test]
fn deletes_and_snapshots_bound_what_operands_see() {
    let fs = MemFs::new();
    let db = open_with(&fs, true).unwrap();
    let r = ReadOptions::default();
    db.put(&W, b"c", &n(50)).unwrap();
    db.merge(&W, b"c", &n(1)).unwrap();
    let s1 = db.snapshot();
    db.delete(&W, b"c").unwrap();
    db.merge(&W, b"c", &n(2)).unwrap();
    let s2 = db.snapshot();
    db.merge(&W, b"c", &n(3)).unwrap();
    db.delete_range(&W, b"d", b"e").unwrap();
    db.merge(&W, b"d1", &n(9)).unwrap();
    for stage in 0..3 {
        assert_eq!(counter(&db, &r, b"c"), Some(5), "stage {stage}");
        assert_eq!(counter(&db, &ReadOptions { snapshot: Some(&s1), ..r.clone() }, b"c"), Some(51), "stage {stage}");
        assert_eq!(counter(&db, &ReadOptions { snapshot: Some(&s2), ..r.clone() }, b"c"), Some(2), "stage {stage}");
        assert_eq!(counter(&db, &r, b"d1"), Some(9), "an operand after a range delete starts from nothing");
        if stage == 0 {
            db.flush().unwrap();
        } else {
            db.compact_range(None, None).unwrap();
        }
    }
}

#[test]
fn merges_need_an_operator() {
    let fs = MemFs::new();
    {
        let db = open_with(&fs, false).unwrap();
        assert!(matches!(db.merge(&W, b"c", &n(1)), Err(Error::InvalidArgument(_))));
    }
    {
        let db = open_with(&fs, true).unwrap();
        db.merge(&W, b"c", &n(1)).unwrap();
    }
    // Reopened without the operator: the operand is replayed, and reading
    // it says what is missing instead of guessing.
    let db = open_with(&fs, false).unwrap();
    match db.get(&ReadOptions::default(), b"c") {
        Err(Error::NotSupported(msg)) => assert!(msg.contains("merge_operator"), "{msg}"),
        other => panic!("want NotSupported, got {other:?}"),
    }
}

/// An operator that fails every full merge.
struct Failing;

impl silt_engine::MergeOperator for Failing {
    fn name(&self) -> &str {
        "failing"
    }

    fn full_merge(&self, _key: &[u8], _existing: Option<&[u8]>, _operands: &[&[u8]]) -> Result<Vec<u8>, String> {
        Err("no".into())
    }

    fn partial_merge(&self, _key: &[u8], _older: &[u8], _newer: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

#[test]
fn a_failing_merge_is_reported_as_corruption() {
    let fs = MemFs::new();
    let options = Options {
        merge_operator: Some(Arc::new(Failing) as Arc<dyn silt_engine::MergeOperator>),
        ..Options::default()
    };
    let db = Db::open(Arc::new(fs.clone()), "db", options).unwrap();
    db.put(&W, b"c", b"base").unwrap();
    db.merge(&W, b"c", b"x").unwrap();
    assert!(matches!(db.get(&ReadOptions::default(), b"c"), Err(Error::Corruption { .. })));
}

/// A u64add merge onto a value put there as something else (not 8 bytes)
/// counts it as 0, as RocksDB's `UInt64AddOperator` does. It failed the
/// merge before, on reads and in every flush and compaction that met the
/// key: the first flush failed, and with it every later write (and the
/// next open replayed the same log into the same state).
#[test]
fn a_u64add_base_of_another_size_counts_as_zero_and_never_stops_writes() {
    let fs = MemFs::new();
    let db = open_with(&fs, true).unwrap();
    let r = ReadOptions::default();
    db.put(&W, b"c", b"not eight bytes").unwrap();
    db.merge(&W, b"c", &n(1)).unwrap();
    assert_eq!(counter(&db, &r, b"c"), Some(1));
    db.flush().unwrap();
    db.merge(&W, b"c", &n(2)).unwrap();
    db.put(&W, b"d", b"x").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(counter(&db, &r, b"c"), Some(3));
    drop(db);
    let db = open_with(&fs, true).unwrap();
    assert_eq!(counter(&db, &r, b"c"), Some(3));
    db.put(&W, b"e", b"y").unwrap();
    db.flush().unwrap();
}

/// A memtable at its size when the database closes (below the close-flush
/// threshold) is replayed whole into one memtable, not split in two on the
/// same WAL: a flush of the first half would leave the WAL needed, and the
/// next open would replay the half already in a table again, applying its
/// merge operands twice.
#[test]
fn a_reopen_after_a_replayed_full_memtable_applies_every_operand_once() {
    let fs = MemFs::new();
    let db = open_with(&fs, true).unwrap();
    let r = ReadOptions::default();
    let filler = vec![b'f'; 200];
    let mut merges = 0u64;
    loop {
        let p = db.properties();
        assert_eq!(p.immutable_memtables, 0);
        if p.memtable_bytes >= 64 << 10 {
            break;
        }
        db.merge(&W, b"counter", &n(1)).unwrap();
        db.put(&W, format!("filler{merges:05}").as_bytes(), &filler).unwrap();
        merges += 1;
    }
    assert_eq!(counter(&db, &r, b"counter"), Some(merges));
    drop(db);
    let db = open_with(&fs, true).unwrap();
    assert_eq!(counter(&db, &r, b"counter"), Some(merges));
    db.flush().unwrap();
    assert_eq!(counter(&db, &r, b"counter"), Some(merges));
    drop(db);
    let db = open_with(&fs, true).unwrap();
    assert_eq!(counter(&db, &r, b"counter"), Some(merges), "operands replayed twice");
    db.compact_range(None, None).unwrap();
    drop(db);
    let db = open_with(&fs, true).unwrap();
    assert_eq!(counter(&db, &r, b"counter"), Some(merges));
}
