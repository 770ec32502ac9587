//! MultiGet: batched and per-key paths agree with Get everywhere (file
//! boundaries, overlapping L0 files, duplicates, deletes, range deletes);
//! values are pinned, survive the deletion of their files, and the pins are
//! given back when the result is dropped.

mod common;

use std::sync::Arc;

use silt_engine::fs::MemFs;
use silt_engine::{Db, Options, ReadOptions, WriteOptions};

const W: WriteOptions = WriteOptions { sync: false };

fn open() -> Db {
    let options = Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        block_size: 1024,
        disable_auto_compactions: true,
        ..Options::default()
    };
    Db::open(Arc::new(MemFs::new()), "db", options).unwrap()
}

fn k(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn v(i: u32) -> Vec<u8> {
    common::incompressible(u64::from(i), 120)
}

fn check_all_paths(db: &Db, keys: &[Vec<u8>]) {
    let r = ReadOptions::default();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let batched = db.multi_get(&r, &refs, true).unwrap();
    let single = db.multi_get(&r, &refs, false).unwrap();
    assert_eq!(batched.len(), keys.len());
    for (i, key) in keys.iter().enumerate() {
        let want = db.get(&r, key).unwrap();
        assert_eq!(batched.get(i), want.as_deref(), "batched, key {:?}", String::from_utf8_lossy(key));
        assert_eq!(single.get(i), want.as_deref(), "per key, key {:?}", String::from_utf8_lossy(key));
    }
}

#[test]
fn batched_agrees_with_get_across_levels_and_file_boundaries() {
    let db = open();
    for i in 0..6000 {
        db.put(&W, &k(i * 2), &v(i * 2)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let p = db.properties();
    assert!(p.files_per_level[6] >= 5, "want several last-level files: {p:?}");
    // Overlapping L0 files over the same range, with overwrites and deletes.
    for round in 0..3u32 {
        for i in (round..6000).step_by(7) {
            db.put(&W, &k(i * 2), &v(i + 100_000 * (round + 1))).unwrap();
        }
        for i in (round..6000).step_by(31) {
            db.delete(&W, &k(i * 2)).unwrap();
        }
        db.flush().unwrap();
    }
    db.delete_range(&W, &k(3000), &k(3400)).unwrap();
    assert!(db.properties().files_per_level[0] >= 3);
    // Every key on both sides of every file boundary, absent keys between,
    // and duplicates.
    let mut keys: Vec<Vec<u8>> = (0..12_001).step_by(97).map(k).collect();
    keys.extend((0..12_000).step_by(1001).map(k));
    keys.extend([k(0), k(11_998), k(11_999), k(12_000), k(3000), k(3399), k(3400)]);
    check_all_paths(&db, &keys);
    // Dense runs (stride 1 and 2): many keys per block.
    check_all_paths(&db, &(5000..5300).map(k).collect::<Vec<_>>());
    check_all_paths(&db, &(7000..7600).step_by(2).map(k).collect::<Vec<_>>());
}

#[test]
fn pinned_values_survive_their_files_and_release_their_pins() {
    let db = open();
    for i in 0..3000 {
        db.put(&W, &k(i), &v(i)).unwrap();
    }
    db.flush().unwrap();
    // Sixty keys over 120 neighbouring entries: about 18 data blocks.
    let keys: Vec<Vec<u8>> = (1000..1120).step_by(2).map(k).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let results = db.multi_get(&ReadOptions::default(), &refs, true).unwrap();
    let single = db.get_pinned(&ReadOptions::default(), &k(7)).unwrap().unwrap();
    let pinned = db.properties().pinned_bytes;
    assert!(pinned > 0 && pinned == results.pinned_bytes() + single.pinned_bytes(), "{pinned}");
    // Keys that share a block share one pin: about 18 blocks, not 60.
    assert!(results.pinned_bytes() < 25 * 1100, "{} bytes pinned for 60 values", results.pinned_bytes());
    // Rewrite everything: the files the values came from are deleted.
    db.compact_range(None, None).unwrap();
    for i in 0..3000 {
        db.put(&W, &k(i), b"overwritten").unwrap();
    }
    db.compact_range(None, None).unwrap();
    for (i, key) in keys.iter().enumerate() {
        let n = std::str::from_utf8(&key[3..]).unwrap().parse::<u32>().unwrap();
        assert_eq!(results.get(i), Some(&v(n)[..]), "pinned value changed under compaction");
    }
    assert_eq!(&*single, &v(7)[..]);
    drop(results);
    assert_eq!(db.properties().pinned_bytes, single.pinned_bytes());
    drop(single);
    assert_eq!(db.properties().pinned_bytes, 0, "every pin is given back");
}

#[test]
fn memtable_values_and_misses_and_statistics() {
    let db = open();
    db.put(&W, b"mem", b"from the memtable").unwrap();
    let r = db.multi_get(&ReadOptions::default(), &[b"mem", b"nope", b"mem"], true).unwrap();
    assert_eq!(r.get(0), Some(&b"from the memtable"[..]));
    assert_eq!(r.get(1), None);
    assert_eq!(r.get(2), Some(&b"from the memtable"[..]));
    let s = db.statistics();
    assert_eq!(s.ticker("rocksdb.number.multiget.keys.read"), 3);
    assert_eq!(s.ticker("rocksdb.number.multiget.keys.found"), 2);
    assert_eq!(db.multi_get(&ReadOptions::default(), &[b""], true).unwrap().get(0), None, "the empty key is a key");
    db.put(&W, b"", b"empty").unwrap();
    let r = db.multi_get(&ReadOptions::default(), &[b"", b"mem"], true).unwrap();
    assert_eq!(r.get(0), Some(&b"empty"[..]));
}
