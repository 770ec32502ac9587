//! The row cache (`Options::row_cache_capacity`): a key a table file
//! answered twice (the doorkeeper admits a key on its second miss) is
//! answered from the cache from then on, and stays right through range
//! deletes, newer writes, snapshots, merges and compactions. Counts over
//! many keys allow for a few doorkeeper slots shared by two keys.

use std::sync::Arc;

use silt_engine::fs::MemFs;
use silt_engine::{Db, Options, ReadOptions, Ticker, U64AddOperator, WriteOptions};

const W: WriteOptions = WriteOptions { sync: false };

fn r() -> ReadOptions<'static> {
    ReadOptions::default()
}

fn db() -> Db {
    let options =
        Options { row_cache_capacity: 1 << 20, merge_operator: Some(Arc::new(U64AddOperator)), ..Options::default() };
    Db::open(Arc::new(MemFs::new()), "db", options).unwrap()
}

fn ticker(db: &Db, t: Ticker) -> u64 {
    db.statistics().ticker(t.name())
}

/// Row cache hits and misses since `before`.
fn moved(db: &Db, before: (u64, u64)) -> (u64, u64) {
    (ticker(db, Ticker::RowCacheHit) - before.0, ticker(db, Ticker::RowCacheMiss) - before.1)
}

fn counts(db: &Db) -> (u64, u64) {
    (ticker(db, Ticker::RowCacheHit), ticker(db, Ticker::RowCacheMiss))
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// A database whose table holds `key(i)` = "value {i}" for `i` in `0..n`.
fn flushed(n: u32) -> Db {
    let db = db();
    for i in 0..n {
        db.put(&W, &key(i), format!("value {i}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    db
}

#[test]
fn a_second_lookup_is_a_hit_and_pins_only_its_value() {
    let db = flushed(100);
    let read_all = |db: &Db| {
        let before = counts(db);
        for i in 0..100 {
            assert_eq!(db.get(&r(), &key(i)).unwrap(), Some(format!("value {i}").into_bytes()));
        }
        moved(db, before)
    };
    assert_eq!(read_all(&db), (0, 100), "a first miss only makes the doorkeeper remember a key");
    assert_eq!(db.properties().row_cache_usage, 0);
    let (hits, misses) = read_all(&db);
    assert!(hits <= 3 && hits + misses == 100, "the second miss makes the entry: {hits} hits, {misses} misses");
    assert!(db.properties().row_cache_usage > 0);
    let (hits, _) = read_all(&db);
    assert!(hits >= 95, "{hits} hits of 100");
    // A value from the cache pins its own bytes, not a 4 KiB block.
    let pinned = db.get_pinned(&r(), &key(7)).unwrap().unwrap();
    assert_eq!(&*pinned, b"value 7");
    assert_eq!(pinned.pinned_bytes(), 7);
    assert_eq!(db.properties().pinned_bytes, 7);
    drop(pinned);
    // Keys the file does not hold are not cached.
    let before = counts(&db);
    assert_eq!(db.get(&r(), b"key0000x").unwrap(), None);
    assert_eq!(db.get(&r(), b"key0000x").unwrap(), None);
    assert_eq!(moved(&db, before).0, 0);
}

#[test]
fn a_range_delete_after_caching_hides_the_key_at_once_and_snapshots_before_it_still_see_it() {
    let db = db();
    db.put(&W, b"k", b"old").unwrap();
    db.put(&W, b"z", b"outside").unwrap();
    db.flush().unwrap();
    let before_delete = db.snapshot();
    // Cached as the file holds it (on the second lookup).
    for _ in 0..2 {
        assert_eq!(db.get(&r(), b"k").unwrap(), Some(b"old".to_vec()));
    }
    db.delete_range(&W, b"a", b"m").unwrap();
    let before = counts(&db);
    assert_eq!(db.get(&r(), b"k").unwrap(), None, "the tombstone in the memtable hides the cached entry");
    let at_snapshot = ReadOptions { snapshot: Some(&before_delete), ..ReadOptions::default() };
    // The entry, read at the snapshot, where the tombstone is not visible:
    // an entry that had the tombstone applied inside it would say deleted.
    assert_eq!(db.get(&at_snapshot, b"k").unwrap(), Some(b"old".to_vec()));
    assert_eq!(moved(&db, before), (2, 0), "both lookups were hits");
    // Flushed, the tombstone is in a file of its own: the same.
    db.flush().unwrap();
    assert_eq!(db.get(&r(), b"k").unwrap(), None);
    assert_eq!(db.get(&at_snapshot, b"k").unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get(&r(), b"z").unwrap(), Some(b"outside".to_vec()));
    assert_eq!(db.multi_get(&r(), &[b"k", b"z"], true).unwrap().get(0), None);
}

#[test]
fn newer_writes_win_and_compactions_move_keys_to_new_entries() {
    let db = db();
    for i in 0..200 {
        db.put(&W, &key(i), b"first").unwrap();
    }
    db.flush().unwrap();
    for _ in 0..2 {
        for i in 0..200 {
            db.get(&r(), &key(i)).unwrap();
        }
    }
    for i in (0..200).step_by(2) {
        db.put(&W, &key(i), b"second").unwrap();
    }
    for i in 0..200 {
        let want: &[u8] = if i % 2 == 0 { b"second" } else { b"first" };
        assert_eq!(db.get(&r(), &key(i)).unwrap().as_deref(), Some(want), "key {i}");
    }
    let used = db.properties().row_cache_usage;
    assert!(used > 0);
    db.compact_range(None, None).unwrap();
    // The old files' entries went with them.
    assert_eq!(db.properties().row_cache_usage, 0, "{used} bytes before");
    let before = counts(&db);
    for _ in 0..3 {
        for i in 0..200 {
            let want: &[u8] = if i % 2 == 0 { b"second" } else { b"first" };
            assert_eq!(db.get(&r(), &key(i)).unwrap().as_deref(), Some(want), "key {i}");
        }
    }
    let (hits, misses) = moved(&db, before);
    assert!(hits >= 190 && hits + misses == 600, "{hits} hits, {misses} misses");
}

#[test]
fn snapshots_older_than_a_files_newest_version_get_entries_of_their_own() {
    let db = db();
    db.put(&W, b"k", b"v1").unwrap();
    let s = db.snapshot();
    db.put(&W, b"k", b"v2").unwrap();
    db.flush().unwrap(); // the file holds both versions (the snapshot needs v1)
    let old = ReadOptions { snapshot: Some(&s), ..ReadOptions::default() };
    for round in 0..4 {
        assert_eq!(db.get(&r(), b"k").unwrap(), Some(b"v2".to_vec()), "round {round}");
        assert_eq!(db.get(&old, b"k").unwrap(), Some(b"v1".to_vec()), "round {round}");
    }
    assert_eq!(counts(&db), (4, 4), "two entries, each made at its second miss");
}

#[test]
fn merge_operands_are_cached_as_operands() {
    let db = db();
    let n = |v: u64| v.to_le_bytes();
    db.put(&W, b"c", &n(10)).unwrap();
    db.flush().unwrap();
    db.merge(&W, b"c", &n(1)).unwrap();
    db.merge(&W, b"c", &n(2)).unwrap();
    db.flush().unwrap(); // operands in a newer file than their base
    for _ in 0..3 {
        assert_eq!(db.get(&r(), b"c").unwrap(), Some(n(13).to_vec()));
    }
    assert_eq!(counts(&db), (2, 4), "both files answered from the cache the third time");
    db.merge(&W, b"c", &n(100)).unwrap();
    assert_eq!(db.get(&r(), b"c").unwrap(), Some(n(113).to_vec()));
    let got = db.multi_get(&r(), &[b"c", b"c", b"missing"], true).unwrap();
    assert_eq!((got.get(0), got.get(1), got.get(2)), (Some(&n(113)[..]), Some(&n(113)[..]), None));
}

#[test]
fn multi_get_reads_through_the_row_cache_both_ways() {
    let db = flushed(300);
    let keys: Vec<Vec<u8>> = (0..300).step_by(3).map(key).chain([b"absent".to_vec()]).collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    for batched in [true, false, true, false] {
        let got = db.multi_get(&r(), &refs, batched).unwrap();
        for (i, k) in refs.iter().enumerate().take(100) {
            let want = format!("value {}", i * 3);
            assert_eq!(got.get(i), Some(want.as_bytes()), "{k:?} batched {batched}");
        }
        assert_eq!(got.get(100), None);
    }
    // 100 found keys: remembered by the first call, cached by the second,
    // hits in the next two.
    let hits = counts(&db).0;
    assert!((190..=200).contains(&hits), "{hits} hits");
}

#[test]
fn fill_cache_false_reads_the_cache_but_does_not_fill_it() {
    let db = db();
    db.put(&W, b"a", b"1").unwrap();
    db.put(&W, b"b", b"2").unwrap();
    db.flush().unwrap();
    let no_fill = ReadOptions { fill_cache: Some(false), ..ReadOptions::default() };
    db.get(&no_fill, b"a").unwrap();
    db.get(&no_fill, b"a").unwrap();
    assert_eq!(counts(&db), (0, 2));
    assert_eq!(db.properties().row_cache_usage, 0);
    db.get(&r(), b"b").unwrap();
    db.get(&r(), b"b").unwrap();
    assert_eq!(db.get(&no_fill, b"b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(counts(&db), (1, 4));
}

#[test]
fn without_a_row_cache_nothing_is_counted() {
    let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    db.put(&W, b"a", b"1").unwrap();
    db.flush().unwrap();
    db.get(&r(), b"a").unwrap();
    assert_eq!(counts(&db), (0, 0));
    assert_eq!(db.properties().row_cache_usage, 0);
}

#[test]
fn a_snapshot_of_an_empty_database_never_reads_an_entry_made_for_later_lookups() {
    let db = db();
    let empty = db.snapshot(); // at sequence 0
    db.put(&W, b"k", b"v").unwrap();
    db.flush().unwrap();
    for _ in 0..3 {
        assert_eq!(db.get(&r(), b"k").unwrap(), Some(b"v".to_vec()));
    }
    let at_empty = ReadOptions { snapshot: Some(&empty), ..ReadOptions::default() };
    assert_eq!(db.get(&at_empty, b"k").unwrap(), None);
    assert_eq!(db.multi_get(&at_empty, &[b"k"], true).unwrap().get(0), None);
    assert_eq!(db.multi_get(&at_empty, &[b"k", b"k"], true).unwrap().get(1), None);
}
