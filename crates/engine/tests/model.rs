//! Model-based test: thousands of random operations on the engine, checked
//! against a `BTreeMap` oracle — puts, deletes, range deletes, merges
//! (u64 add), batches, gets, snapshots held across flushes and
//! compactions, iterators in both directions with random bounds, budgeted
//! background steps, manual compactions, reopen; and where features meet
//! (`model_ops/`): stepped compactions with reads between slices, large
//! range deletes, transactions racing other writers, reopens with a full
//! memtable, export/import round trips, repair of a healthy database, the
//! idle compaction (run in slices, or started and left to meet the rest).
//!
//! `SILT_SOAK=1` runs thousands of seeds (`SILT_MODEL_SEEDS=N` sets how many).

mod common;
mod model_ops;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use silt_engine::fs::MemFs;
use silt_engine::{
    Db, DbIterator, IngestOptions, Options, ReadOptions, Snapshot, U64AddOperator, WriteBatch, WriteOptions,
};

/// A long-lived iterator under test: what it must yield, and how far it got.
struct LiveIter {
    it: DbIterator,
    want: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
    reverse: bool,
}

impl LiveIter {
    /// Takes a few steps, checking each key and value.
    fn advance(&mut self, steps: usize, ctx: &str) -> bool {
        for _ in 0..steps {
            if self.pos == self.want.len() {
                assert!(!self.it.valid(), "{ctx}: live iterator yields more than its snapshot holds");
                self.it.status().unwrap();
                return false;
            }
            assert!(self.it.valid(), "{ctx}: live iterator ended early at {} of {}", self.pos, self.want.len());
            let (k, v) = &self.want[self.pos];
            assert_eq!((self.it.key(), self.it.value()), (&k[..], &v[..]), "{ctx}: live iterator at {}", self.pos);
            self.pos += 1;
            if self.reverse {
                self.it.prev();
            } else {
                self.it.next();
            }
        }
        true
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    // Tiny buffers, blocks, files and levels so flushes, compactions across
    // several levels, stalls and multi-block tables happen within a few
    // hundred operations.
    Options {
        write_buffer_size: 64 << 10,
        block_size: 256,
        block_restart_interval: 4,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 64 << 10,
        max_bytes_for_level_multiplier: 4,
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 6,
        merge_operator: Some(Arc::new(U64AddOperator)),
        // The idle compaction is off by default: on, so that it meets the rest.
        idle_compaction_max_bytes: 64 << 20,
        ..Options::default()
    }
}

/// Counter keys ("c…") take merges, and mostly 8-byte values (one put in
/// 16 there is of another size, which a merge counts as 0, as RocksDB's
/// `UInt64AddOperator` does); other keys take any value.
fn is_counter(k: &[u8]) -> bool {
    k.first() == Some(&b'c')
}

fn counter_key(rng: &mut SmallRng) -> Vec<u8> {
    format!("c{:02}", rng.random_range(0..40u32)).into_bytes()
}

fn merge_add(model: &mut Model, k: &[u8], delta: u64) {
    let cur = model.get(k).and_then(|v| v[..].try_into().ok()).map_or(0, u64::from_le_bytes);
    model.insert(k.to_vec(), cur.wrapping_add(delta).to_le_bytes().to_vec());
}

fn range_delete(model: &mut Model, start: &[u8], end: &[u8]) {
    let doomed: Vec<Vec<u8>> = model.range(start.to_vec()..end.to_vec()).map(|(k, _)| k.clone()).collect();
    for k in doomed {
        model.remove(&k);
    }
}

fn key(rng: &mut SmallRng) -> Vec<u8> {
    // A small key space so updates and deletes hit existing keys; varied
    // lengths and shared prefixes exercise prefix compression.
    let n = rng.random_range(0..400u32);
    if n == 399 {
        // The empty key: the first of all keys, a key like any other.
        return Vec::new();
    }
    let mut k = format!("k{:03}", n).into_bytes();
    if n % 5 == 0 {
        k.extend_from_slice(b"-long-suffix");
    }
    k
}

fn value_for(rng: &mut SmallRng, k: &[u8]) -> Vec<u8> {
    if is_counter(k) && !rng.random_ratio(1, 16) {
        rng.random::<u64>().to_le_bytes().to_vec()
    } else {
        value(rng)
    }
}

fn value(rng: &mut SmallRng) -> Vec<u8> {
    let len = match rng.random_range(0..10) {
        0 => 0,
        1 => rng.random_range(1000..5000),
        _ => rng.random_range(1..200),
    };
    if rng.random_bool(0.5) {
        // Text whose words recur across values, as records' field names do:
        // what compression dictionaries are made from.
        const WORDS: [&str; 12] = [
            "\"name\":",
            "\"email\":",
            "@example.com",
            "\"status\":",
            "shipped",
            "pending",
            "{",
            "}",
            ",",
            " ",
            "0",
            "42",
        ];
        let mut v = Vec::with_capacity(len + 16);
        while v.len() < len {
            v.extend_from_slice(WORDS[rng.random_range(0..WORDS.len())].as_bytes());
        }
        v.truncate(len);
        return v;
    }
    (0..len).map(|_| rng.random()).collect()
}

fn expected_range(model: &Model, lo: &Option<Vec<u8>>, hi: &Option<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let lo = lo.as_ref().map_or(Bound::Unbounded, |l| Bound::Included(l.clone()));
    let hi = hi.as_ref().map_or(Bound::Unbounded, |h| Bound::Excluded(h.clone()));
    if let (Bound::Included(l), Bound::Excluded(h)) = (&lo, &hi) {
        if l >= h {
            return vec![];
        }
    }
    model.range((lo, hi)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The updates in memory (`Db::unflushed_updates`): in order of sequence
/// number, none past the latest; asked from a point and within a size, the
/// newest of them that fit. Returns them all.
fn check_unflushed(db: &Db, rng: &mut SmallRng, ctx: &str) -> Vec<silt_engine::Update> {
    let all = db.unflushed_updates(0, usize::MAX);
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq), "{ctx}: updates in memory out of order");
    assert!(all.last().is_none_or(|u| u.seq <= db.latest_sequence()), "{ctx}: an update in memory past the latest");
    let after = rng.random_range(0..=db.latest_sequence());
    let max = rng.random_range(0..2_000);
    let some = db.unflushed_updates(after, max);
    let from: Vec<_> = all.iter().filter(|u| u.seq > after).cloned().collect();
    assert!(from.ends_with(&some), "{ctx}: updates after {after} within {max} bytes are not the newest");
    assert!(some.iter().map(|u| u.bytes()).sum::<usize>() <= max, "{ctx}: updates past {max} bytes");
    let next = from.len().checked_sub(some.len() + 1).map(|i| from[i].bytes());
    if let Some(b) = next {
        assert!(
            some.iter().map(|u| u.bytes()).sum::<usize>() + b > max,
            "{ctx}: fewer updates than fit in {max} bytes"
        );
    }
    all
}

fn check_iterators(db: &Db, model: &Model, snap: Option<&Snapshot>, rng: &mut SmallRng, ctx: &str) {
    let lo = rng.random_bool(0.4).then(|| key(rng));
    let hi = rng.random_bool(0.4).then(|| key(rng));
    let opts = ReadOptions { snapshot: snap, lower_bound: lo.clone(), upper_bound: hi.clone(), ..Default::default() };
    let want = expected_range(model, &lo, &hi);
    let mut it = db.iter(&opts).unwrap();
    let mut got = vec![];
    it.seek_to_first();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    assert_eq!(got, want, "{ctx}: forward scan [{lo:?}, {hi:?})");
    assert_eq!(db.count(&opts).unwrap(), want.len() as u64, "{ctx}: count [{lo:?}, {hi:?})");
    let mut back = vec![];
    it.seek_to_last();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    back.reverse();
    assert_eq!(back, want, "{ctx}: reverse scan");
    // Random seeks with a direction change after each.
    for _ in 0..4 {
        let t = key(rng);
        it.seek(&t);
        let want_seek = want.iter().find(|(k, _)| k >= &t);
        assert_eq!(it.valid().then(|| it.key().to_vec()), want_seek.map(|e| e.0.clone()), "{ctx}: seek {t:?}");
        if it.valid() {
            it.prev();
            let i = want.iter().position(|(k, _)| k >= &t).unwrap_or(want.len());
            let want_prev = i.checked_sub(1).map(|j| want[j].0.clone());
            assert_eq!(it.valid().then(|| it.key().to_vec()), want_prev, "{ctx}: prev after seek {t:?}");
        }
        it.seek_for_prev(&t);
        let want_sfp = want.iter().rev().find(|(k, _)| k <= &t);
        assert_eq!(it.valid().then(|| it.key().to_vec()), want_sfp.map(|e| e.0.clone()), "{ctx}: seek_for_prev {t:?}");
        if it.valid() {
            it.next();
            let want_next = want.iter().find(|(k, _)| k > &t).map(|e| e.0.clone());
            assert_eq!(it.valid().then(|| it.key().to_vec()), want_next, "{ctx}: next after seek_for_prev {t:?}");
            assert_eq!(it.valid().then(|| it.value().to_vec()), want.iter().find(|(k, _)| k > &t).map(|e| e.1.clone()));
        }
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let fs = MemFs::new();
    // Each open writes its tables in one of the table formats: 2 (XXH3
    // checksums) with or without data-block hash indexes, or 1 (CRC32C, what
    // older builds wrote), at a restart interval of 1, 4 or 16, so a
    // database holds tables of every kind side by side; and reads through
    // a row cache or not; and with compression dictionaries (format 3) in
    // bottommost tables, in every table, or in none.
    let mut open = |fs: &MemFs, rng: &mut SmallRng| {
        let opts = Options {
            compression_dict_bytes: [0, 0, 256, 1024][rng.random_range(0..4)],
            compression_dict_every_level: rng.random_bool(0.5),
            format_version: if rng.random_bool(0.3) { 1 } else { 2 },
            data_block_hash_index: rng.random_bool(0.7),
            block_restart_interval: [1, 4, 16][rng.random_range(0..3)],
            // A row cache half the time: a tiny one (entries evicted all the
            // time) or one that keeps everything.
            row_cache_capacity: [0, 0, 4 << 10, 1 << 20][rng.random_range(0..4)],
            ..options()
        };
        Db::open(Arc::new(fs.clone()), "db", opts).unwrap()
    };
    let mut db = open(&fs, &mut rng);
    let mut model = Model::new();
    let mut snaps: Vec<(Snapshot, Model)> = vec![];
    let mut live: Vec<LiveIter> = vec![];
    let mut refreshes = 0;
    let mut ingests = 0;
    let w = WriteOptions::default();
    for step in 0..steps {
        let ctx = format!("seed {seed} step {step}");
        // Long-lived auto-refreshing iterators move a little every step,
        // across every write, flush and compaction the run does.
        live.retain_mut(|l| l.advance(2, &ctx));
        if live.len() < 3 && rng.random_bool(0.02) {
            let snap = db.snapshot();
            let reverse = rng.random_bool(0.5);
            let opts =
                ReadOptions { snapshot: Some(&snap), auto_refresh_iterator_with_snapshot: true, ..Default::default() };
            let mut it = db.iter(&opts).unwrap();
            let mut want = expected_range(&model, &None, &None);
            if reverse {
                it.seek_to_last();
                want.reverse();
            } else {
                it.seek_to_first();
            }
            // The snapshot itself is dropped: the iterator keeps its own.
            live.push(LiveIter { it, want, pos: 0, reverse });
        }
        match rng.random_range(0..112) {
            0..=29 => {
                let k = if rng.random_bool(0.2) { counter_key(&mut rng) } else { key(&mut rng) };
                let v = value_for(&mut rng, &k);
                db.put(&w, &k, &v).unwrap();
                model.insert(k, v);
            }
            30..=36 => {
                let k = if rng.random_bool(0.2) { counter_key(&mut rng) } else { key(&mut rng) };
                db.delete(&w, &k).unwrap();
                model.remove(&k);
            }
            37..=40 => {
                let k = counter_key(&mut rng);
                let d = rng.random_range(1..1000u64);
                db.merge(&w, &k, &d.to_le_bytes()).unwrap();
                merge_add(&mut model, &k, d);
            }
            42 => {
                // A bulk ingest: new table files, placed as deep as nothing
                // above overlaps them; sorted or not, duplicates last-wins.
                let n = rng.random_range(1..80);
                let mut entries: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
                    .map(|_| {
                        let k = if rng.random_bool(0.2) { counter_key(&mut rng) } else { key(&mut rng) };
                        let v = value_for(&mut rng, &k);
                        (k, v)
                    })
                    .collect();
                let sorted = rng.random_bool(0.5);
                if sorted {
                    entries.sort_by(|a, b| a.0.cmp(&b.0));
                }
                let mut b = WriteBatch::new();
                for (k, v) in &entries {
                    b.put(k, v);
                }
                db.ingest(&b, &IngestOptions { sorted }).unwrap();
                for (k, v) in entries {
                    model.insert(k, v);
                }
                ingests += 1;
            }
            41 => {
                // Mostly narrow ranges, sometimes empty or reversed (no-ops).
                let end = |rng: &mut SmallRng| if rng.random_bool(0.3) { counter_key(rng) } else { key(rng) };
                let (a, b) = (end(&mut rng), end(&mut rng));
                let (a, b) = if rng.random_bool(0.9) && a > b { (b, a) } else { (a, b) };
                db.delete_range(&w, &a, &b).unwrap();
                if a < b {
                    range_delete(&mut model, &a, &b);
                }
            }
            43..=52 => {
                let mut b = WriteBatch::new();
                for _ in 0..rng.random_range(1..20) {
                    match rng.random_range(0..10) {
                        0..=5 => {
                            let k = key(&mut rng);
                            let v = value(&mut rng);
                            b.put(&k, &v);
                            model.insert(k, v);
                        }
                        6..=7 => {
                            let k = key(&mut rng);
                            b.delete(&k);
                            model.remove(&k);
                        }
                        8 => {
                            let k = counter_key(&mut rng);
                            b.merge(&k, &7u64.to_le_bytes());
                            merge_add(&mut model, &k, 7);
                        }
                        _ => {
                            let a = key(&mut rng);
                            let mut z = a.clone();
                            z.push(b'~');
                            b.delete_range(&a, &z);
                            range_delete(&mut model, &a, &z);
                        }
                    }
                }
                db.write(&w, b).unwrap();
            }
            53..=67 => {
                let k = if rng.random_bool(0.3) { counter_key(&mut rng) } else { key(&mut rng) };
                assert_eq!(db.get(&ReadOptions::default(), &k).unwrap(), model.get(&k).cloned(), "{ctx}: get {k:?}");
            }
            68..=71 => {
                if snaps.len() < 6 {
                    snaps.push((db.snapshot(), model.clone()));
                } else {
                    snaps.remove(rng.random_range(0..snaps.len()));
                }
            }
            72..=79 if !snaps.is_empty() => {
                let (s, m) = &snaps[rng.random_range(0..snaps.len())];
                for _ in 0..5 {
                    let k = if rng.random_bool(0.3) { counter_key(&mut rng) } else { key(&mut rng) };
                    let got = db.get(&ReadOptions { snapshot: Some(s), ..Default::default() }, &k).unwrap();
                    assert_eq!(got, m.get(&k).cloned(), "{ctx}: get {k:?} at snapshot {}", s.sequence());
                }
                if rng.random_bool(0.3) {
                    check_iterators(&db, m, Some(s), &mut rng, &ctx);
                }
            }
            80..=81 => check_iterators(&db, &model, None, &mut rng, &ctx),
            82..=84 => {
                // MultiGet, batched and not, with duplicates, at a snapshot
                // or now: the same answers as the oracle.
                let (snap, m) = match snaps.len() {
                    0 => (None, &model),
                    n if rng.random_bool(0.5) => {
                        let (s, m) = &snaps[rng.random_range(0..n)];
                        (Some(s), m)
                    }
                    _ => (None, &model),
                };
                let n = rng.random_range(1..40);
                let keys: Vec<Vec<u8>> =
                    (0..n).map(|_| if rng.random_bool(0.3) { counter_key(&mut rng) } else { key(&mut rng) }).collect();
                let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
                let opts = ReadOptions { snapshot: snap, ..Default::default() };
                for batched in [true, false] {
                    let got = db.multi_get(&opts, &refs, batched).unwrap();
                    for (i, k) in keys.iter().enumerate() {
                        assert_eq!(got.get(i), m.get(k).map(|v| &v[..]), "{ctx}: multi_get(batched={batched}) {k:?}");
                    }
                }
            }
            85..=89 => {
                db.do_background_work(rng.random_range(1..4)).unwrap();
            }
            90..=91 => {
                db.flush().unwrap();
                assert_eq!(db.unflushed_updates(0, usize::MAX), vec![], "{ctx}: updates in memory after a flush");
            }
            92 => {
                let (a, b) = (key(&mut rng), key(&mut rng));
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                match rng.random_range(0..3) {
                    0 => db.compact_range(None, None).unwrap(),
                    1 => db.compact_range(Some(&lo), Some(&hi)).unwrap(),
                    _ => db.compact_range(Some(&lo), None).unwrap(),
                }
            }
            93 => {
                // Reopen: snapshots and iterators do not survive a reopen.
                snaps.clear();
                live.clear();
                refreshes += db.statistics().ticker("silt.iter.auto.refresh");
                let before = check_unflushed(&db, &mut rng, &ctx);
                db.close().unwrap();
                drop(db);
                db = open(&fs, &mut rng);
                // What the WAL replay put back in memory is what was there.
                assert_eq!(db.unflushed_updates(0, usize::MAX), before, "{ctx}: updates in memory after a reopen");
            }
            100 => model_ops::stepped_compact_range(&db, &model, &mut rng, &ctx),
            101 => model_ops::large_range_delete(&db, &mut model, &mut rng),
            102..=103 => model_ops::transaction_race(&db, &mut model, &mut rng, &ctx),
            104 => {
                snaps.clear();
                live.clear();
                db = model_ops::reopen_with_a_full_memtable(db, &fs, &mut model, &mut rng, &mut open);
            }
            105 => model_ops::export_import_round_trip(&db, &model, &mut rng, &ctx),
            110 => model_ops::rocksdb_round_trip(&db, &model, &mut rng, &ctx),
            111 => {
                model_ops::ingest_rocksdb_tables(&db, &mut model, &mut rng);
            }
            108 => model_ops::idle_compaction(&db, &model, &mut rng, &ctx),
            109 => {
                // Started, and left to the background steps of the ops that follow.
                db.start_idle_compaction().unwrap();
            }
            106 => {
                snaps.clear();
                live.clear();
                db = model_ops::repair_healthy(db, &fs, &model, &mut rng, &mut open, &ctx);
            }
            107 => {
                // An ingest of pairs (the other form).
                let n = rng.random_range(1..30);
                let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
                    .map(|_| {
                        let k = key(&mut rng);
                        let v = value_for(&mut rng, &k);
                        (k, v)
                    })
                    .collect();
                let pairs: Vec<(&[u8], &[u8])> = entries.iter().map(|(k, v)| (&k[..], &v[..])).collect();
                db.ingest_pairs(pairs, &IngestOptions { sorted: false }).unwrap();
                for (k, v) in entries {
                    model.insert(k, v);
                }
                ingests += 1;
            }
            _ => {
                // An iterator held across writes and flushes keeps its view.
                let mut it = db.iter(&ReadOptions::default()).unwrap();
                let frozen = model.clone();
                for _ in 0..20 {
                    let k = key(&mut rng);
                    db.put(&w, &k, b"later").unwrap();
                    model.insert(k, b"later".to_vec());
                }
                db.flush().unwrap();
                let mut got = vec![];
                it.seek_to_first();
                while it.valid() {
                    got.push((it.key().to_vec(), it.value().to_vec()));
                    it.next();
                }
                it.status().unwrap();
                assert_eq!(got, expected_range(&frozen, &None, &None), "{ctx}: iterator held across writes");
            }
        }
    }
    // Live iterators run to their end; then a final full comparison, and
    // one after a reopen.
    for mut l in live.drain(..) {
        while l.advance(64, &format!("seed {seed} final")) {}
    }
    check_iterators(&db, &model, None, &mut rng, "final");
    snaps.clear();
    drop(db);
    let db = open(&fs, &mut rng);
    assert_eq!(common::read_all(&db), model, "seed {seed}: after final reopen");
    if steps >= 2000 {
        refreshes += db.statistics().ticker("silt.iter.auto.refresh");
        assert!(refreshes > 0, "seed {seed}: no live iterator ever refreshed");
        assert!(ingests > 0, "seed {seed}: no ingest ran");
    }
    let props = db.properties();
    if steps >= 2000 {
        assert!(
            props.files_per_level[1..].iter().sum::<u64>() > 0,
            "seed {seed}: the run never compacted below L0: {props:?}"
        );
    }
    drop(db);
    // Everything rewritten into tables with dictionaries reads the same.
    let opts = Options { compression_dict_bytes: 256, compression_dict_every_level: true, ..options() };
    let db = Db::open(Arc::new(fs.clone()), "db", opts).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(common::read_all(&db), model, "seed {seed}: after a compaction with dictionaries");
    if steps >= 2000 {
        let dicts = db.statistics().ticker("silt.compression.dict.block.read.count");
        assert!(dicts > 0, "seed {seed}: no table with a dictionary was read");
    }
}

#[test]
fn model_seed_1() {
    run(1, 3000);
}

#[test]
fn model_seed_2() {
    run(2, 3000);
}

#[test]
fn model_seed_3() {
    run(3, 3000);
}

#[test]
fn model_many_short_seeds() {
    // 40 seeds on every run; thousands under SILT_SOAK=1 (scripts/soak.sh).
    let soak = std::env::var("SILT_SOAK").is_ok_and(|v| v != "0" && !v.is_empty());
    let seeds =
        std::env::var("SILT_MODEL_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(if soak { 3000 } else { 40 });
    for seed in 100..100 + seeds {
        run(seed, 400);
    }
}
