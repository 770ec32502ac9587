//! Iterators that refresh their SuperVersion while keeping their snapshot
//! (RocksDB's `auto_refresh_iterator_with_snapshot`, PR 13354), including
//! the test RocksDB's reviewer asked for (`DBIteratorTest.AutoRefreshIterator`).

use std::collections::BTreeSet;
use std::sync::Arc;

use silt_engine::fs::{Fs, MemFs};
use silt_engine::{Db, DbIterator, Options, ReadOptions, WriteOptions};

const W: WriteOptions = WriteOptions { sync: false };

fn open(fs: &MemFs) -> Db {
    let options = Options { disable_auto_compactions: true, ..Options::default() };
    Db::open(Arc::new(fs.clone()), "db", options).unwrap()
}

fn table_files(fs: &MemFs) -> BTreeSet<String> {
    fs.list("db").unwrap().into_iter().filter(|n| n.ends_with(".sst")).collect()
}

/// L-last holds k0, L0 holds k1, the memtable 1,000 keys (with values of
/// 100 bytes, so the entries and not the memtable's bloom filter make up
/// most of its bytes).
fn setup(fs: &MemFs) -> Db {
    let db = open(fs);
    db.put(&W, b"k0", b"v0").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.put(&W, b"k1", b"v1").unwrap();
    db.flush().unwrap();
    for i in 0..1000 {
        db.put(&W, format!("m{i:04}").as_bytes(), &[b'v'; 100]).unwrap();
    }
    let p = db.properties();
    assert_eq!(p.files_per_level[0], 1, "{p:?}");
    assert_eq!(p.files_per_level[1..].iter().sum::<u64>(), 1, "{p:?}");
    db
}

fn expected(reverse: bool) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = vec![b"k0".to_vec(), b"k1".to_vec()];
    v.extend((0..1000).map(|i| format!("m{i:04}").into_bytes()));
    if reverse {
        v.reverse();
    }
    v
}

/// Iterates the whole range, doing a flush + full compaction + background
/// work at step 500. Returns the keys seen and what was observed right
/// after the step that follows.
struct Observed {
    keys: Vec<Vec<u8>>,
    sv_moved: bool,
    memtable_bytes_dropped: bool,
    old_files_gone: bool,
    old_files_gone_after_drop: bool,
}

fn run(reverse: bool, with_snapshot: bool, auto_refresh: bool) -> Observed {
    let fs = MemFs::new();
    let db = setup(&fs);
    let snap = db.snapshot();
    db.put(&W, b"after", b"must stay invisible").unwrap();
    let opts = ReadOptions {
        snapshot: with_snapshot.then_some(&snap),
        auto_refresh_iterator_with_snapshot: auto_refresh,
        ..Default::default()
    };
    let mut it: DbIterator = db.iter(&opts).unwrap();
    let start_files = table_files(&fs);
    let start_sv = it.super_version_number();
    let mut keys = vec![];
    let mut o = Observed {
        keys: vec![],
        sv_moved: false,
        memtable_bytes_dropped: false,
        old_files_gone: false,
        old_files_gone_after_drop: false,
    };
    let mut memtable_bytes_before = 0;
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let mut step = 0;
    while it.valid() {
        keys.push(it.key().to_vec());
        if step == 500 {
            memtable_bytes_before = db.properties().all_memtable_bytes;
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
            while db.do_background_work(64).unwrap().work_left {}
        }
        if reverse {
            it.prev();
        } else {
            it.next();
        }
        if step == 500 {
            o.sv_moved = it.super_version_number() != start_sv;
            o.memtable_bytes_dropped = db.properties().all_memtable_bytes < memtable_bytes_before / 2;
            o.old_files_gone = table_files(&fs).is_disjoint(&start_files);
        }
        step += 1;
    }
    it.status().unwrap();
    drop(it);
    o.old_files_gone_after_drop = table_files(&fs).is_disjoint(&start_files);
    o.keys = keys;
    o
}

#[test]
fn auto_refresh_moves_to_the_new_version_keeping_the_snapshot_forward() {
    let o = run(false, true, true);
    assert_eq!(o.keys, expected(false), "every key of the snapshot exactly once, in order");
    assert!(o.sv_moved, "the iterator's SuperVersion must move on");
    assert!(o.memtable_bytes_dropped, "the flushed memtable must be released");
    assert!(o.old_files_gone, "every table file live at the start must be deleted during the scan");
}

#[test]
fn auto_refresh_moves_to_the_new_version_keeping_the_snapshot_reverse() {
    let o = run(true, true, true);
    assert_eq!(o.keys, expected(true));
    assert!(o.sv_moved && o.memtable_bytes_dropped && o.old_files_gone);
}

#[test]
fn without_the_option_the_iterator_pins_its_version_until_dropped() {
    for reverse in [false, true] {
        let o = run(reverse, true, false);
        assert_eq!(o.keys, expected(reverse));
        assert!(!o.sv_moved && !o.memtable_bytes_dropped && !o.old_files_gone, "reverse={reverse}");
        assert!(o.old_files_gone_after_drop, "dropping the iterator releases the old files");
    }
}

#[test]
fn without_a_snapshot_the_option_has_no_effect() {
    for reverse in [false, true] {
        let o = run(reverse, false, true);
        assert!(!o.sv_moved && !o.old_files_gone, "reverse={reverse}");
        assert!(o.old_files_gone_after_drop);
        // The implicit view is the moment the iterator was made: "after"
        // was written before it, so it is seen.
        assert_eq!(o.keys.len(), 1003);
    }
}

#[test]
fn explicit_refresh_switches_snapshot_and_needs_a_seek() {
    let fs = MemFs::new();
    let db = setup(&fs);
    let s1 = db.snapshot();
    db.put(&W, b"a-new", b"x").unwrap();
    let mut it = db.iter(&ReadOptions { snapshot: Some(&s1), ..Default::default() }).unwrap();
    it.seek_to_first();
    assert_eq!(it.key(), b"k0");
    let s2 = db.snapshot();
    it.refresh(Some(&s2)).unwrap();
    assert!(!it.valid(), "a refreshed iterator is unpositioned");
    it.seek_to_first();
    assert_eq!(it.key(), b"a-new");
    it.refresh(Some(&s1)).unwrap();
    it.seek_to_first();
    assert_eq!(it.key(), b"k0");
    db.close().unwrap();
    assert!(it.refresh(None).is_err(), "refreshing after close fails cleanly");
}

#[test]
fn range_tombstones_and_merges_survive_a_refresh() {
    let fs = MemFs::new();
    let options = Options {
        disable_auto_compactions: true,
        merge_operator: Some(Arc::new(silt_engine::U64AddOperator)),
        ..Options::default()
    };
    let db = Db::open(Arc::new(fs.clone()), "db", options).unwrap();
    for i in 0..200u64 {
        db.put(&W, format!("k{i:03}").as_bytes(), &i.to_le_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.delete_range(&W, b"k050", b"k100").unwrap();
    for i in (0..200u64).step_by(3) {
        db.merge(&W, format!("k{i:03}").as_bytes(), &1000u64.to_le_bytes()).unwrap();
    }
    let snap = db.snapshot();
    let want: Vec<(Vec<u8>, u64)> = (0..200u64)
        .filter(|i| !(50..100).contains(i) || i % 3 == 0)
        .map(|i| {
            let v = if (50..100).contains(&i) {
                1000
            } else if i % 3 == 0 {
                i + 1000
            } else {
                i
            };
            (format!("k{i:03}").into_bytes(), v)
        })
        .collect();
    let opts = ReadOptions { snapshot: Some(&snap), auto_refresh_iterator_with_snapshot: true, ..Default::default() };
    let mut it = db.iter(&opts).unwrap();
    it.seek_to_first();
    let mut got = vec![];
    while it.valid() {
        got.push((it.key().to_vec(), u64::from_le_bytes(it.value().try_into().unwrap())));
        if got.len() % 40 == 0 {
            db.put(&W, b"k075", b"later").unwrap();
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
        }
        it.next();
    }
    it.status().unwrap();
    assert_eq!(got, want);
    assert!(db.statistics().ticker("silt.iter.auto.refresh") >= 3);
}
