use std::sync::Arc;

use super::*;
use crate::format::key::{internal_key, seek_key, ValueType};
use crate::fs::{Fs, MemFs};
use crate::read::GetContext;
use crate::sst::format::Compression;
use crate::sst::{TableBuilder, TableOptions};
use crate::stats::Statistics;

fn ukey(i: u32) -> Vec<u8> {
    format!("user-key-{i:08}").into_bytes()
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn build(fs: &MemFs, n: u32, compression: Compression) -> (Arc<Table>, Entries) {
    build_with(fs, n, TableOptions { block_size: 512, compression, ..TableOptions::default() })
}

fn build_with(fs: &MemFs, n: u32, opts: TableOptions) -> (Arc<Table>, Entries) {
    let f = fs.open("000007.sst", true).unwrap();
    f.truncate(0).unwrap();
    let mut b = TableBuilder::new(f.clone(), opts);
    let mut entries = Vec::new();
    for i in 0..n {
        // Two versions of every 10th key.
        if i % 10 == 0 {
            let k = internal_key(&ukey(i * 2), 1000 + u64::from(i), ValueType::Put);
            b.add(&k, b"newer").unwrap();
            entries.push((k, b"newer".to_vec()));
        }
        let ty = if i % 7 == 3 { ValueType::Delete } else { ValueType::Put };
        let k = internal_key(&ukey(i * 2), u64::from(i), ty);
        let v = if ty == ValueType::Put { format!("value-{i}").repeat(3).into_bytes() } else { vec![] };
        b.add(&k, &v).unwrap();
        entries.push((k, v));
    }
    let info = b.finish().unwrap();
    assert_eq!(info.num_entries as usize, entries.len());
    assert_eq!(info.file_size, f.len().unwrap());
    let t = Table::open(f, "000007.sst", 7, Arc::new(BlockCache::new(1 << 20)), Arc::default()).unwrap();
    (Arc::new(t), entries)
}

#[derive(Debug, PartialEq)]
enum Found {
    Value(Vec<u8>),
    Deleted,
    NotHere { filtered: bool },
}

fn lookup(t: &Arc<Table>, k: &[u8], seq: u64) -> Found {
    let mut ctx = GetContext::new(k, None, None);
    t.get(&seek_key(k, seq), crate::sst::filter::key_hash(k), &mut ctx).unwrap();
    let filtered = ctx.stats.bloom_useful > 0;
    if !ctx.is_done() {
        return Found::NotHere { filtered };
    }
    match ctx.finish().unwrap() {
        Some(v) => Found::Value(v.to_vec()),
        None => Found::Deleted,
    }
}

/// The footer's format version of table file `name`.
fn format_version(fs: &MemFs, name: &str) -> u32 {
    let raw = crate::fs::read_all(&*fs.open(name, false).unwrap(), name).unwrap();
    let at = raw.len() - super::super::format::FOOTER_LEN;
    super::super::format::Footer::decode(&raw[at..], name, at as u64).unwrap().format_version
}

#[test]
fn get_finds_every_key_and_respects_snapshots() {
    let fs = MemFs::new();
    for (c, hash_index, interval, version) in [
        (Compression::None, true, 4, 2),
        (Compression::Lz4, true, 4, 2),
        (Compression::Lz4, true, 1, 2),
        (Compression::Lz4, false, 4, 2),
        // Format version 1 (CRC32C, no hash index), LevelDB's restart interval.
        (Compression::Lz4, true, 16, 1),
    ] {
        let opts = TableOptions {
            block_size: 512,
            compression: c,
            data_block_hash_index: hash_index,
            restart_interval: interval,
            format_version: version,
            ..TableOptions::default()
        };
        let (t, _) = build_with(&fs, 2000, opts);
        assert_eq!(format_version(&fs, "000007.sst"), version);
        for i in 0..2000u32 {
            let k = ukey(i * 2);
            let want = if i % 10 == 0 {
                Found::Value(b"newer".to_vec())
            } else if i % 7 == 3 {
                Found::Deleted
            } else {
                Found::Value(format!("value-{i}").repeat(3).into_bytes())
            };
            assert_eq!(lookup(&t, &k, u64::MAX >> 8), want, "key {i}");
            // At a snapshot before the key was written: not here.
            if i > 0 && i % 10 != 0 {
                assert!(matches!(lookup(&t, &k, u64::from(i) - 1), Found::NotHere { .. }), "key {i} at old snapshot");
            }
            // Odd keys were never written.
            assert!(matches!(lookup(&t, &ukey(i * 2 + 1), 1 << 40), Found::NotHere { .. }));
        }
    }
}

#[test]
fn filter_rules_out_most_missing_keys() {
    let fs = MemFs::new();
    let (t, _) = build(&fs, 2000, Compression::Lz4);
    let filtered =
        (0..2000u32).filter(|i| lookup(&t, &ukey(i * 2 + 1), 1 << 40) == Found::NotHere { filtered: true }).count();
    assert!(filtered > 1900, "only {filtered} of 2000 missing keys filtered");
}

#[test]
fn iterator_walks_every_entry_both_ways_and_seeks() {
    let fs = MemFs::new();
    let (t, entries) = build(&fs, 1500, Compression::Lz4);
    let mut it = t.iter(true);
    it.seek_to_first();
    for (k, v) in &entries {
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
        it.next();
    }
    assert!(!it.valid());
    it.seek_to_last();
    for (k, _) in entries.iter().rev() {
        assert_eq!(it.key(), &k[..]);
        it.prev();
    }
    assert!(!it.valid());
    it.seek(&seek_key(&ukey(501), 1 << 40));
    assert_eq!(key::user_key(it.key()), &ukey(502)[..]);
    it.seek_for_prev(&seek_key(&ukey(501), 0));
    assert_eq!(key::user_key(it.key()), &ukey(500)[..]);
    it.seek(&seek_key(b"zzz", 1));
    assert!(!it.valid());
    it.seek_for_prev(&seek_key(b"a", 1));
    assert!(!it.valid());
    it.status().unwrap();
}

#[test]
fn every_byte_flip_gives_an_error_or_the_right_answer() {
    let fs = MemFs::new();
    let (t, entries) = build(&fs, 60, Compression::Lz4);
    let f = fs.open("000007.sst", false).unwrap();
    let raw = crate::fs::read_all(&*f, "000007.sst").unwrap();
    drop(t);
    let mut detected = 0;
    for i in 0..raw.len() {
        let mut b = raw.clone();
        b[i] ^= 0x04;
        let g = MemFs::new();
        let file = g.open("x.sst", true).unwrap();
        file.append(&b).unwrap();
        let table = match Table::open(file, "x.sst", 1, Arc::new(BlockCache::new(0)), Arc::new(Statistics::default())) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                assert!(e.is_corruption(), "flip at {i}: {e}");
                detected += 1;
                continue;
            }
        };
        // Every get gives the right answer or corruption. `entries` holds
        // each key's newest version first.
        for (n, (k, v)) in entries.iter().enumerate() {
            let uk = key::user_key(k);
            if n > 0 && key::user_key(&entries[n - 1].0) == uk {
                continue;
            }
            let mut ctx = GetContext::new(uk, None, None);
            match table.get(&seek_key(uk, u64::MAX >> 8), crate::sst::filter::key_hash(uk), &mut ctx) {
                Err(e) => assert!(e.is_corruption(), "flip at {i}: {e}"),
                Ok(_) => {
                    assert!(ctx.is_done(), "flip at {i}: key {n} lost");
                    let want = (key::parse(k).unwrap().ty == ValueType::Put).then_some(&v[..]);
                    assert_eq!(ctx.finish().unwrap().as_deref(), want, "flip at {i}: wrong answer");
                }
            }
        }
        let mut it = table.iter(false);
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        match it.status() {
            Err(e) => {
                assert!(e.is_corruption(), "flip at {i}: {e}");
                detected += 1;
            }
            // The flip hit bytes no read depends on (e.g. a filter bit), or
            // nothing at all changed what is returned.
            Ok(()) => assert_eq!(got, entries, "flip at {i} changed the data silently"),
        }
    }
    assert!(detected > raw.len() / 2, "only {detected} of {} flips detected", raw.len());
}

#[test]
fn a_malformed_key_is_corruption_at_its_block_wherever_it_is_read() {
    // A table whose 40th entry carries a type byte no version writes; its
    // checksums are right, so only parsing the key finds it.
    let fs = MemFs::new();
    let f = fs.open("000008.sst", true).unwrap();
    let mut b = TableBuilder::new(f.clone(), TableOptions { block_size: 256, ..TableOptions::default() });
    let mut bad_key = Vec::new();
    for i in 0..60u32 {
        let mut k = internal_key(&ukey(i), 1, ValueType::Put);
        if i == 40 {
            let n = k.len();
            k[n - 8] = 0x7f;
            bad_key = k.clone();
        }
        b.add(&k, b"some value bytes").unwrap();
    }
    b.finish().unwrap();
    let t = Arc::new(Table::open(f, "000008.sst", 8, Arc::new(BlockCache::new(1 << 20)), Arc::default()).unwrap());
    // Where the iterator finds the entry is the block that holds it.
    let mut it = t.iter(true);
    it.seek(&bad_key);
    assert!(it.valid());
    assert_eq!(it.key(), bad_key.as_slice());
    let (file, block) = it.origin().unwrap();
    assert_eq!(file, "000008.sst");
    assert!(block > 0, "entry 40 of 60 is not in the first block of 256 bytes");
    // Through a merging iterator, as the database's iterators and
    // compactions read it.
    let mut merged = crate::iter::MergingIterator::new(vec![Box::new(t.iter(true))]);
    merged.seek(&bad_key);
    assert_eq!(merged.origin(), Some(("000008.sst", block)));
    match t.verify() {
        Err(Error::Corruption { file, offset, .. }) => assert_eq!((file.as_str(), offset), ("000008.sst", block)),
        other => panic!("verify gave {other:?}"),
    }
}

/// Random values do not compress: after a run of blocks that did not, the
/// builder tries only every 16th block; values that turn compressible later
/// in the same table are compressed again, and every entry reads back.
#[test]
fn a_table_stops_compressing_random_values_and_compresses_again_when_they_turn_compressible() {
    let fs = MemFs::new();
    let f = fs.open("000009.sst", true).unwrap();
    let opts = TableOptions { block_size: 1024, compression: Compression::Lz4, ..TableOptions::default() };
    let mut b = TableBuilder::new(f.clone(), opts);
    let mut x = 12345u32;
    let mut entries = Vec::new();
    let (random, zeros) = (2_000u32, 2_000u32);
    for i in 0..random + zeros {
        let v: Vec<u8> = if i < random {
            (0..100)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (x >> 24) as u8
                })
                .collect()
        } else {
            vec![0; 100]
        };
        let k = internal_key(&ukey(i), 1, ValueType::Put);
        b.add(&k, &v).unwrap();
        entries.push((k, v));
    }
    let info = b.finish().unwrap();
    // The random half stays about its size; the zeros compress to little.
    let raw_random = u64::from(random) * (100 + 24);
    assert!(info.file_size > raw_random, "{}", info.file_size);
    assert!(info.file_size < raw_random + raw_random / 4, "the zeros were not compressed again: {}", info.file_size);
    let t = Arc::new(Table::open(f, "000009.sst", 9, Arc::new(BlockCache::new(1 << 20)), Arc::default()).unwrap());
    for (k, v) in entries.iter().step_by(37) {
        assert_eq!(lookup(&t, key::user_key(k), 10), Found::Value(v.clone()));
    }
}
