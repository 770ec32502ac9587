//! `compact_range` where data sits above the base level: a table ingested
//! above the last level, or a level left above a base level that moved
//! down after the last level shrank. L0 must never be compacted under that
//! older data (a deleted key would come back, a merge would lose its base,
//! a get would stop at the stale version), whole, ranged or stepped.

mod common;

use std::sync::Arc;

use silt_engine::fs::{Fs, MemFs};
use silt_engine::{Db, IngestOptions, Options, ReadOptions, U64AddOperator, WriteBatch, WriteOptions};

const W: WriteOptions = WriteOptions { sync: false };

fn options() -> Options {
    Options {
        compression: silt_engine::Compression::None,
        max_bytes_for_level_multiplier: 4,
        level0_file_num_compaction_trigger: 1,
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..common::small_options()
    }
}

fn open() -> Db {
    Db::open(Arc::new(MemFs::new()), "db", options()).unwrap()
}

fn get(db: &Db, k: &[u8]) -> Option<Vec<u8>> {
    db.get(&ReadOptions::default(), k).unwrap()
}

fn scan_value(db: &Db, k: &[u8]) -> Option<Vec<u8>> {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek(k);
    let v = (it.valid() && it.key() == k).then(|| it.value().to_vec());
    it.status().unwrap();
    v
}

fn ingest(db: &Db, k: &[u8], v: &[u8]) -> usize {
    let mut b = WriteBatch::new();
    b.put(k, v);
    db.ingest(&b, &IngestOptions::default()).unwrap().level
}

fn levels(db: &Db) -> Vec<u64> {
    db.properties().files_per_level
}

/// A small database whose base level is the last: one table in L6 spanning
/// `a`..`z`, then `k` ingested above it, in L5.
fn ingested_above_base() -> Db {
    let db = open();
    db.put(&W, b"a", b"1").unwrap();
    db.put(&W, b"z", b"1").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(levels(&db), [0, 0, 0, 0, 0, 0, 1]);
    assert_eq!(ingest(&db, b"k", b"ingested"), 5);
    db
}

#[test]
fn a_key_deleted_after_an_ingest_stays_deleted_through_compact_range() {
    let db = ingested_above_base();
    db.delete(&W, b"k").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(get(&db, b"k"), None, "levels {:?}", levels(&db));
    assert_eq!(scan_value(&db, b"k"), None);
}

#[test]
fn a_merge_after_an_ingest_keeps_its_base_through_compact_range() {
    let db = open();
    db.put(&W, b"a", &1u64.to_le_bytes()).unwrap();
    db.put(&W, b"z", &1u64.to_le_bytes()).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(ingest(&db, b"k", &5u64.to_le_bytes()), 5);
    db.merge(&W, b"k", &1u64.to_le_bytes()).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(get(&db, b"k"), Some(6u64.to_le_bytes().to_vec()), "levels {:?}", levels(&db));
}

#[test]
fn reads_between_stepped_compaction_slices_see_the_newest_value() {
    let db = ingested_above_base();
    db.put(&W, b"k", b"newest").unwrap();
    db.start_compact_range(None, None).unwrap();
    let mut steps = 0;
    while db.manual_compaction_pending() {
        db.do_background_work(1).unwrap();
        steps += 1;
        assert_eq!(get(&db, b"k").as_deref(), Some(&b"newest"[..]), "after step {steps}, levels {:?}", levels(&db));
        assert_eq!(scan_value(&db, b"k").as_deref(), Some(&b"newest"[..]));
        assert!(steps < 10_000);
    }
    assert_eq!(get(&db, b"k").as_deref(), Some(&b"newest"[..]));
}

#[test]
fn a_ranged_compact_range_after_an_ingest_keeps_the_newest_value() {
    let db = ingested_above_base();
    db.put(&W, b"k", b"newest").unwrap();
    db.compact_range(Some(b"j"), Some(b"l")).unwrap();
    assert_eq!(get(&db, b"k").as_deref(), Some(&b"newest"[..]), "levels {:?}", levels(&db));
}

/// The base level moves down when the last level shrinks (a large range
/// delete compacted away), leaving the old base level's data above it.
#[test]
fn compact_range_never_puts_l0_under_a_level_left_above_a_base_that_moved_down() {
    let db = open();
    let r = ReadOptions::default();
    // About 680 KB in L6: the base level is L5 (680K / 4 / 4 < 64K).
    let value = vec![b'x'; 200];
    let mut b = WriteBatch::new();
    for i in 0..3400u32 {
        b.put(format!("m{i:06}").as_bytes(), &value);
    }
    db.write(&W, b).unwrap();
    db.compact_range(None, None).unwrap();
    assert!(db.properties().bytes_per_level[6] > 600 << 10);
    // k = v1 through L0 into the base level, L5.
    db.put(&W, b"k", b"v1").unwrap();
    db.flush().unwrap();
    while db.do_background_work(usize::MAX).unwrap().work_left {}
    assert_eq!(levels(&db)[5], 1, "levels {:?}", levels(&db));
    // Most of L6 deleted and compacted away: the base level moves to L6,
    // below the L5 file that holds k.
    db.delete_range(&W, b"m000100", b"n").unwrap();
    db.compact_range(Some(b"m"), Some(b"n")).unwrap();
    assert_eq!(levels(&db)[5], 1, "levels {:?}", levels(&db));
    assert!(db.properties().bytes_per_level[6] < 64 << 10);
    db.put(&W, b"a1", b"x").unwrap();
    db.put(&W, b"k", b"v2").unwrap();
    db.compact_range(Some(b"a"), Some(b"b")).unwrap();
    assert_eq!(db.get(&r, b"k").unwrap().as_deref(), Some(&b"v2"[..]), "levels {:?}", levels(&db));
    assert_eq!(scan_value(&db, b"k").as_deref(), Some(&b"v2"[..]));
}

/// The compaction drop counter of a full compact_range over two L0 tables
/// that each hold every key, the first output's create refused once with
/// `PoolExhausted` when `refuse_first_create` (the step is retried once the
/// cap is lifted, as siltdb retries after topping its pool up).
fn drops_of_a_compaction(refuse_first_create: bool) -> (u64, u64) {
    let mem = MemFs::new();
    let fs = Arc::new(silt_engine::fs::FaultFs::new(Arc::new(mem.clone())));
    let opts = Options { level0_file_num_compaction_trigger: 8, ..options() };
    let db = Db::open(fs.clone(), "db", opts).unwrap();
    for round in 0..2u64 {
        for k in 0..50u64 {
            db.put(&W, format!("k{k:03}").as_bytes(), &round.to_le_bytes()).unwrap();
        }
        db.flush().unwrap();
    }
    if refuse_first_create {
        fs.set_file_cap(Some(("db", mem.list("db").unwrap().len())));
    }
    db.start_compact_range(None, None).unwrap();
    let (mut refused, mut steps) = (0, 0);
    while db.manual_compaction_pending() {
        match db.do_background_work(1) {
            Ok(_) => {}
            Err(f) if matches!(f.error, silt_engine::Error::PoolExhausted { .. }) => {
                refused += 1;
                fs.set_file_cap(None);
            }
            Err(f) => panic!("{}", f.error),
        }
        steps += 1;
        assert!(steps < 10_000);
    }
    for k in 0..50u64 {
        assert_eq!(get(&db, format!("k{k:03}").as_bytes()), Some(1u64.to_le_bytes().to_vec()));
    }
    (db.statistics().ticker("rocksdb.compaction.key.drop.new"), refused)
}

#[test]
fn a_compaction_output_created_again_after_pool_exhausted_counts_its_drops_once() {
    let (plain, refused_plain) = drops_of_a_compaction(false);
    let (retried, refused) = drops_of_a_compaction(true);
    assert_eq!((refused_plain, refused), (0, 1), "the first create was refused once");
    assert_eq!(plain, 50, "each key's older version is dropped once");
    assert_eq!(retried, plain, "the group buffered across the retry is resolved once");
}
