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
    for (c, hash_index, interval, version, dict_bytes) in [
        (Compression::None, true, 4, 2, 0),
        (Compression::Lz4, true, 4, 2, 0),
        (Compression::Lz4, true, 1, 2, 0),
        (Compression::Lz4, false, 4, 2, 0),
        // Format version 1 (CRC32C, no hash index), LevelDB's restart interval.
        (Compression::Lz4, true, 16, 1, 0),
        // A compression dictionary: format version 3. Its sample is a
        // third of the table; the blocks after it are compressed as they come.
        (Compression::Lz4, true, 4, 3, 1024),
        // None without LZ4 or in format version 1.
        (Compression::None, true, 4, 2, 1024),
        (Compression::Lz4, true, 16, 1, 1024),
    ] {
        let opts = TableOptions {
            block_size: 512,
            compression: c,
            data_block_hash_index: hash_index,
            restart_interval: interval,
            format_version: version.min(2),
            dict_bytes,
            dict_buffer_bytes: 32 << 10,
            ..TableOptions::default()
        };
        let (t, _) = build_with(&fs, 2000, opts);
        assert_eq!(format_version(&fs, "000007.sst"), version);
        assert_eq!(t.dictionary_len() > 0, version == 3);
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
    // A table of plain LZ4 blocks, and one with a compression dictionary.
    for (n, dict_bytes) in [(60, 0), (120, 256)] {
        let opts = TableOptions { block_size: 512, dict_bytes, ..TableOptions::default() };
        every_byte_flip_in(build_with(&MemFs::new(), n, opts), dict_bytes > 0);
    }
}

fn every_byte_flip_in((t, entries): (Arc<Table>, Entries), with_dict: bool) {
    assert_eq!(t.dictionary_len() > 0, with_dict);
    let f = t.file.clone();
    let raw = crate::fs::read_all(&*f, "000007.sst").unwrap();
    drop(f);
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

/// JSON-like records, as apps store them: the same field names, values from
/// small sets, a unique id.
fn record(i: u32) -> Vec<u8> {
    let cities = ["Lisbon", "Osaka", "Toronto", "Nairobi", "Lima", "Oslo", "Quito"];
    format!(
        r#"{{"id":"{i:08x}","name":"Person {}","email":"person{}@example.com","city":"{}","active":{},"plan":"{}","visits":{}}}"#,
        i.wrapping_mul(7919) % 100_003,
        i.wrapping_mul(31) % 9973,
        cities[i as usize % cities.len()],
        i.is_multiple_of(3),
        ["free", "pro", "team"][i as usize % 3],
        i % 250,
    )
    .into_bytes()
}

#[test]
fn a_dictionary_makes_tables_of_records_smaller_and_reads_them_back() {
    let fs = MemFs::new();
    let mut sizes = Vec::new();
    for dict_bytes in [0, 16 << 10] {
        let name = format!("{:06}.sst", 8 + dict_bytes);
        let f = fs.open(&name, true).unwrap();
        let opts = TableOptions { dict_bytes, ..TableOptions::default() };
        let mut b = TableBuilder::new(f.clone(), opts);
        let n = 20_000u32;
        for i in 0..n {
            b.add(&internal_key(&ukey(i), 1, ValueType::Put), &record(i)).unwrap();
            // While blocks are held back, the size counts them.
            assert!(b.file_size() > 0 || i < 30);
        }
        let info = b.finish().unwrap();
        assert_eq!(info.file_size, f.len().unwrap());
        sizes.push(info.file_size);
        let stats = Arc::new(Statistics::default());
        let t = Arc::new(Table::open(f, &name, 8, Arc::new(BlockCache::new(1 << 20)), stats.clone()).unwrap());
        assert_eq!(stats.get(Ticker::CompressionDictBlockReads), u64::from(dict_bytes > 0));
        assert_eq!(t.dictionary_len() > 0, dict_bytes > 0);
        assert!(t.dictionary_len() <= 16 << 10);
        for i in (0..n).step_by(7) {
            assert_eq!(lookup(&t, &ukey(i), 5), Found::Value(record(i)), "key {i}");
        }
        let mut it = t.iter(false);
        it.seek_to_first();
        for i in 0..n {
            assert!(it.valid(), "entry {i}");
            assert_eq!((it.key(), it.value()), (&internal_key(&ukey(i), 1, ValueType::Put)[..], &record(i)[..]));
            it.next();
        }
        assert!(!it.valid());
        it.status().unwrap();
        t.verify_checksums().unwrap();
        assert_eq!(t.verify().unwrap(), u64::from(n));
    }
    // What each record repeats of the others is stored once per table, not
    // once per block.
    // (12% here; 40% on bench/browser/records.js's orders, docs/bench/bytes.md.)
    assert!((sizes[1] as f64) < sizes[0] as f64 * 0.92, "{} bytes with a dictionary, {} without", sizes[1], sizes[0]);
}

#[test]
fn a_table_with_a_dictionary_refuses_to_read_without_it() {
    // A data block of type 2 in a table whose metaindex names no dictionary
    // (the entry damaged away) is corruption, named by file and offset.
    let fs = MemFs::new();
    let f = fs.open("000009.sst", true).unwrap();
    let mut b = TableBuilder::new(f.clone(), TableOptions { dict_bytes: 4096, ..TableOptions::default() });
    for i in 0..5000u32 {
        b.add(&internal_key(&ukey(i), 1, ValueType::Put), &record(i)).unwrap();
    }
    b.finish().unwrap();
    let mut raw = crate::fs::read_all(&*f, "000009.sst").unwrap();
    let name = b"silt.compression_dict";
    let at = raw.windows(name.len()).rposition(|w| w == name).expect("the metaindex names the dictionary");
    raw[at + 5] = b'X';
    // Re-checksum the metaindex so that only the missing dictionary is wrong.
    let footer_at = raw.len() - super::super::format::FOOTER_LEN;
    let footer = super::super::format::Footer::decode(&raw[footer_at..], "x", 0).unwrap();
    let (start, end) = (footer.metaindex.offset as usize, (footer.metaindex.offset + footer.metaindex.size) as usize);
    let sum = Checksum::Xxh3.of(&raw[start..end], raw[end]);
    raw[end + 1..end + 5].copy_from_slice(&sum.to_le_bytes());
    let g = fs.open("000010.sst", true).unwrap();
    g.append(&raw).unwrap();
    let t = Arc::new(Table::open(g, "000010.sst", 10, Arc::new(BlockCache::new(1 << 20)), Arc::default()).unwrap());
    assert_eq!(t.dictionary_len(), 0);
    let mut it = t.iter(false);
    it.seek_to_first();
    let e = it.status().unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("dictionary") && e.to_string().contains("000010.sst"), "{e}");
}
