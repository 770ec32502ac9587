//! Range tombstones: edge cases, the Get path across levels, iterators,
//! snapshots, and compaction dropping covered data. Includes the two
//! RocksDB bugs designed against: a filter saying "absent" must not hide a
//! file's tombstones, and a tombstone's end must not make a file look like
//! it holds that key.

mod common;

use common::incompressible;

use std::sync::Arc;

use silt_engine::fs::MemFs;
use silt_engine::{Db, Options, ReadOptions, WriteOptions};

const W: WriteOptions = WriteOptions { sync: false };

fn options() -> Options {
    Options { disable_auto_compactions: true, ..common::small_options() }
}

fn open() -> Db {
    Db::open(Arc::new(MemFs::new()), "db", options()).unwrap()
}

fn get(db: &Db, k: &str) -> Option<Vec<u8>> {
    db.get(&ReadOptions::default(), k.as_bytes()).unwrap()
}

fn keys(db: &Db, opts: &ReadOptions) -> Vec<String> {
    let mut it = db.iter(opts).unwrap();
    let mut out = vec![];
    it.seek_to_first();
    while it.valid() {
        out.push(String::from_utf8(it.key().to_vec()).unwrap());
        it.next();
    }
    it.status().unwrap();
    let mut back = vec![];
    it.seek_to_last();
    while it.valid() {
        back.push(String::from_utf8(it.key().to_vec()).unwrap());
        it.prev();
    }
    back.reverse();
    assert_eq!(out, back, "forward and reverse scans disagree");
    out
}

fn put_all(db: &Db, ks: &[&str]) {
    for k in ks {
        db.put(&W, k.as_bytes(), k.as_bytes()).unwrap();
    }
}

#[test]
fn empty_and_reversed_ranges_delete_nothing() {
    let db = open();
    put_all(&db, &["a", "b", "c"]);
    db.delete_range(&W, b"b", b"b").unwrap();
    db.delete_range(&W, b"c", b"a").unwrap();
    assert_eq!(keys(&db, &ReadOptions::default()), ["a", "b", "c"]);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(keys(&db, &ReadOptions::default()), ["a", "b", "c"]);
}

#[test]
fn adjacent_ranges_and_exclusive_ends() {
    let db = open();
    put_all(&db, &["a", "b", "c", "d", "e", "f"]);
    db.delete_range(&W, b"b", b"c").unwrap();
    db.delete_range(&W, b"c", b"e").unwrap();
    let want = ["a", "e", "f"];
    assert_eq!(keys(&db, &ReadOptions::default()), want);
    assert_eq!(get(&db, "e").as_deref(), Some(&b"e"[..]));
    assert_eq!(get(&db, "c"), None);
    db.flush().unwrap();
    assert_eq!(keys(&db, &ReadOptions::default()), want);
    db.compact_range(None, None).unwrap();
    assert_eq!(keys(&db, &ReadOptions::default()), want);
    assert_eq!(get(&db, "b"), None);
}

#[test]
fn writes_after_a_tombstone_are_visible_and_snapshots_before_it_see_the_old_data() {
    let db = open();
    put_all(&db, &["k1", "k2", "k3"]);
    let before = db.snapshot();
    db.delete_range(&W, b"k1", b"k9").unwrap();
    db.put(&W, b"k2", b"again").unwrap();
    let at_before = ReadOptions { snapshot: Some(&before), ..Default::default() };
    for stage in ["memtable", "flushed", "compacted"] {
        assert_eq!(keys(&db, &ReadOptions::default()), ["k2"], "{stage}");
        assert_eq!(get(&db, "k2").as_deref(), Some(&b"again"[..]), "{stage}");
        assert_eq!(keys(&db, &at_before), ["k1", "k2", "k3"], "{stage}: the snapshot predates the tombstone");
        assert_eq!(db.get(&at_before, b"k3").unwrap().as_deref(), Some(&b"k3"[..]), "{stage}");
        match stage {
            "memtable" => db.flush().unwrap(),
            "flushed" => db.compact_range(None, None).unwrap(),
            _ => {}
        }
    }
}

#[test]
fn a_filter_saying_absent_does_not_hide_the_files_tombstones() {
    let db = open();
    // "victim" goes to the last level.
    put_all(&db, &["victim"]);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // A newer L0 file holds only other point keys and a tombstone over
    // "victim": its bloom filter says "victim" is absent.
    put_all(&db, &["other1", "other2"]);
    db.delete_range(&W, b"v", b"w").unwrap();
    db.flush().unwrap();
    let props = db.properties();
    assert!(props.files_per_level[0] >= 1 && props.files_per_level[1..].iter().sum::<u64>() >= 1, "{props:?}");
    assert_eq!(get(&db, "victim"), None);
    assert!(db.statistics().ticker("rocksdb.bloom.filter.useful") >= 1, "the filter was consulted and said no");
    assert_eq!(keys(&db, &ReadOptions::default()), ["other1", "other2"]);
}

#[test]
fn a_file_of_only_tombstones_works() {
    let db = open();
    put_all(&db, &["a1", "a2", "b1"]);
    db.flush().unwrap();
    db.delete_range(&W, b"a", b"b").unwrap();
    db.flush().unwrap();
    assert_eq!(keys(&db, &ReadOptions::default()), ["b1"]);
    assert_eq!(get(&db, "a1"), None);
    db.compact_range(None, None).unwrap();
    assert_eq!(keys(&db, &ReadOptions::default()), ["b1"]);
}

#[test]
fn tombstones_at_output_file_boundaries_do_not_hide_or_claim_keys() {
    // Many small outputs: the tombstone's end lands on the first key of a
    // later file, and its start inside an earlier one.
    let db = open();
    let all: Vec<String> = (0..3000).map(|i| format!("key{i:05}")).collect();
    for (i, k) in all.iter().enumerate() {
        db.put(&W, k.as_bytes(), &incompressible(i as u64, 300)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(db.properties().files_per_level.iter().sum::<u64>() >= 5);
    for (lo, hi) in [(100, 1700), (2000, 2001), (2500, 2999)] {
        let (a, b) = (format!("key{lo:05}"), format!("key{hi:05}"));
        db.delete_range(&W, a.as_bytes(), b.as_bytes()).unwrap();
    }
    let alive = |i: usize| !((100..1700).contains(&i) || i == 2000 || (2500..2999).contains(&i));
    let want: Vec<&String> = all.iter().enumerate().filter(|(i, _)| alive(*i)).map(|(_, k)| k).collect();
    for stage in ["memtable", "flushed", "compacted", "reopened-and-compacted-again"] {
        let got = keys(&db, &ReadOptions::default());
        assert_eq!(got.len(), want.len(), "{stage}");
        assert!(got.iter().zip(&want).all(|(a, b)| a == *b), "{stage}");
        for i in [99, 100, 1699, 1700, 1999, 2000, 2001, 2499, 2500, 2998, 2999] {
            assert_eq!(get(&db, &all[i]).is_some(), alive(i), "{stage}: key {i}");
        }
        match stage {
            "memtable" => db.flush().unwrap(),
            "flushed" => db.compact_range(None, None).unwrap(),
            _ => db.compact_range(Some(b"key02000"), Some(b"key02001")).unwrap(),
        }
    }
}

#[test]
fn compaction_drops_covered_data_when_no_snapshot_needs_it() {
    let db = open();
    for i in 0..2000 {
        db.put(&W, format!("key{i:05}").as_bytes(), &incompressible(i, 200)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let full = db.properties().table_bytes;
    let snap = db.snapshot();
    db.delete_range(&W, b"key00000", b"key01900").unwrap();
    db.compact_range(None, None).unwrap();
    assert!(db.properties().table_bytes > full / 2, "the snapshot still needs the data");
    assert_eq!(
        db.get(&ReadOptions { snapshot: Some(&snap), ..Default::default() }, b"key00005").unwrap().map(|v| v.len()),
        Some(200)
    );
    drop(snap);
    db.compact_range(None, None).unwrap();
    let after = db.properties().table_bytes;
    assert!(after < full / 5, "covered data must go: {after} of {full} bytes left");
    let stats = db.statistics();
    assert!(stats.ticker("rocksdb.compaction.key.drop.range_del") >= 1900, "{stats}");
    assert_eq!(keys(&db, &ReadOptions::default()).len(), 100);
}

#[test]
fn many_tombstones_still_answer_gets_correctly() {
    let db = open();
    for i in 0..5000 {
        db.put(&W, format!("key{i:05}").as_bytes(), b"v").unwrap();
    }
    // 1,000 tombstones, each over one key of every five.
    for i in 0..1000 {
        let (a, b) = (format!("key{:05}", i * 5), format!("key{:05}", i * 5 + 1));
        db.delete_range(&W, a.as_bytes(), b.as_bytes()).unwrap();
    }
    for stage in 0..3 {
        for i in (0..5000).step_by(7) {
            assert_eq!(get(&db, &format!("key{i:05}")).is_some(), i % 5 != 0, "stage {stage} key {i}");
        }
        if stage == 0 {
            db.flush().unwrap();
        } else {
            db.compact_range(None, None).unwrap();
        }
    }
}
