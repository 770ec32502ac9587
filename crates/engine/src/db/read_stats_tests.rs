//! Statistics and errors of the read paths that must tell the truth (issue
//! 18): merge time and failures on every path that merges, MultiGet's hit
//! levels, `fill_cache: false` on Get and MultiGet, and a blob reference
//! refused alike by every read path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::*;
use crate::clock::Clock;
use crate::format::key::{internal_key, ValueType};
use crate::fs::{Fs, MemFs};
use crate::merge::U64AddOperator;
use crate::sst::{TableBuilder, TableOptions};

const W: WriteOptions = WriteOptions { sync: false };

fn r() -> ReadOptions<'static> {
    ReadOptions::default()
}

/// A clock whose every reading is one microsecond after the previous one.
struct TickingClock(AtomicU64);

impl Clock for TickingClock {
    fn now_micros(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

fn counter_db(level: StatsLevel) -> Db {
    counter_db_with(level, Arc::new(U64AddOperator))
}

/// u64add that refuses a base of another size (u64add counts it as 0): a
/// merge that fails, for the failure counts.
struct StrictU64Add;

impl crate::merge::MergeOperator for StrictU64Add {
    fn name(&self) -> &str {
        "u64add"
    }

    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        if existing.is_some_and(|b| b.len() != 8) {
            return Err("a base of another size".into());
        }
        U64AddOperator.full_merge(key, existing, operands)
    }

    fn partial_merge(&self, key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        U64AddOperator.partial_merge(key, older, newer)
    }
}

fn counter_db_with(level: StatsLevel, op: Arc<dyn crate::merge::MergeOperator>) -> Db {
    let options = Options {
        merge_operator: Some(op),
        clock: Some(Arc::new(TickingClock(AtomicU64::new(0)))),
        stats_level: level,
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    Db::open(Arc::new(MemFs::new()), "db", options).unwrap()
}

fn ticker(db: &Db, t: Ticker) -> u64 {
    db.statistics().ticker(t.name())
}

fn n(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

/// Scans every key, forward or backward; the scan's error if it fails.
fn scan(db: &Db, reverse: bool) -> Result<usize> {
    let mut it = db.iter(&r())?;
    let mut count = 0;
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    while it.valid() {
        count += 1;
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    it.status().map(|()| count)
}

#[test]
fn merge_time_is_counted_in_nanoseconds_on_every_path_that_merges() {
    let db = counter_db(StatsLevel::All);
    let time = |db: &Db| ticker(db, Ticker::MergeOperationTotalTime);
    db.put(&W, b"a", &n(10)).unwrap();
    db.merge(&W, b"a", &n(1)).unwrap();
    db.merge(&W, b"b", &n(2)).unwrap();
    let mut last = time(&db);
    assert_eq!(last, 0);
    let mut moved = |db: &Db, path: &str| {
        let now = time(db);
        // The clock ticks a microsecond a reading: each merge is >= 1,000 ns.
        assert!(now >= last + 1000, "{path}: merge time went from {last} to {now} ns");
        last = now;
    };
    assert_eq!(db.get(&r(), b"a").unwrap(), Some(n(11).to_vec()));
    moved(&db, "get");
    let both = db.multi_get(&r(), &[b"a", b"b"], true).unwrap();
    assert_eq!((both.get(0), both.get(1)), (Some(&n(11)[..]), Some(&n(2)[..])));
    drop(both);
    moved(&db, "batched multi_get");
    db.multi_get(&r(), &[b"a", b"b"], false).unwrap();
    moved(&db, "multi_get key by key");
    assert_eq!(scan(&db, false).unwrap(), 2);
    moved(&db, "forward iteration");
    assert_eq!(scan(&db, true).unwrap(), 2);
    moved(&db, "reverse iteration");
    let mut tx = db.begin_optimistic();
    tx.merge(&db, b"a", &n(5)).unwrap();
    assert_eq!(tx.get(&db, b"a").unwrap(), Some(n(16).to_vec()));
    moved(&db, "a transaction's read");
    tx.commit(&db, &W).unwrap();
    // The flush merges each key's operands onto its base.
    let before = time(&db);
    db.flush().unwrap();
    assert!(time(&db) > before, "flush: merge time stayed at {before} ns");
    assert_eq!(db.get(&r(), b"a").unwrap(), Some(n(16).to_vec()));
}

#[test]
fn without_timers_merges_take_no_time_but_failures_are_counted_on_every_path() {
    let db = counter_db_with(StatsLevel::ExceptTimers, Arc::new(StrictU64Add));
    // A base the operator refuses.
    db.put(&W, b"bad", b"not eight bytes").unwrap();
    db.merge(&W, b"bad", &n(1)).unwrap();
    db.put(&W, b"good", &n(1)).unwrap();
    db.merge(&W, b"good", &n(1)).unwrap();
    let failures = |db: &Db| ticker(db, Ticker::NumberMergeFailures);
    let corrupt = |e: Error, path: &str| {
        assert!(e.is_corruption(), "{path}: {e:?}");
        assert!(e.to_string().contains("merge operator u64add"), "{path}: {e}");
    };
    corrupt(db.get(&r(), b"bad").unwrap_err(), "get");
    assert_eq!(failures(&db), 1);
    corrupt(db.multi_get(&r(), &[b"bad", b"good"], true).err().unwrap(), "batched multi_get");
    assert_eq!(failures(&db), 2);
    corrupt(db.multi_get(&r(), &[b"good", b"bad"], false).err().unwrap(), "multi_get key by key");
    assert_eq!(failures(&db), 3);
    corrupt(scan(&db, false).unwrap_err(), "forward iteration");
    assert_eq!(failures(&db), 4);
    corrupt(scan(&db, true).unwrap_err(), "reverse iteration");
    assert_eq!(failures(&db), 5);
    let tx = db.begin_optimistic();
    // The transaction reads the base through the database, which merges.
    corrupt(tx.get(&db, b"bad").unwrap_err(), "a transaction's read");
    assert_eq!(failures(&db), 6);
    // The successful merges of all that took no time: no clock is read.
    assert_eq!(db.get(&r(), b"good").unwrap(), Some(n(2).to_vec()));
    assert_eq!(ticker(&db, Ticker::MergeOperationTotalTime), 0);
}

#[test]
fn multi_get_reports_where_it_found_each_key_as_get_does() {
    for batched in [true, false] {
        let fs = MemFs::new();
        let db = Db::open(Arc::new(fs), "db", Options { write_buffer_size: 64 << 10, ..Options::default() }).unwrap();
        for i in 0..20u32 {
            db.put(&W, format!("t{i:02}").as_bytes(), b"in a table").unwrap();
        }
        db.flush().unwrap();
        for i in 0..5u32 {
            db.put(&W, format!("m{i:02}").as_bytes(), b"in the memtable").unwrap();
        }
        let keys: Vec<Vec<u8>> = (0..5u32)
            .map(|i| format!("m{i:02}"))
            .chain((0..20).map(|i| format!("t{i:02}")))
            .map(String::into_bytes)
            .collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).chain([&b"absent"[..]]).collect();
        let l0 = db.properties().files_per_level.first().copied().unwrap_or(0);
        assert_eq!(l0, 1, "the flush left one file in L0");
        let before = db.statistics();
        let got = db.multi_get(&r(), &refs, batched).unwrap();
        assert_eq!(got.iter().filter(|v| v.is_some()).count(), 25);
        drop(got);
        let after = db.statistics();
        let moved = |t: Ticker| after.ticker(t.name()) - before.ticker(t.name());
        assert_eq!(moved(Ticker::MemtableHit), 5, "batched: {batched}");
        assert_eq!(moved(Ticker::MemtableMiss), 21, "batched: {batched}");
        assert_eq!(moved(Ticker::GetHitL0), 20, "batched: {batched}");
        // A get of one key counts the same way.
        db.get(&r(), b"t03").unwrap();
        assert_eq!(db.statistics().ticker(Ticker::GetHitL0.name()) - after.ticker(Ticker::GetHitL0.name()), 1);
        // Compacted into a lower level, the hits move there.
        db.compact_range(None, None).unwrap();
        let before = db.statistics();
        db.multi_get(&r(), &refs, batched).unwrap();
        let after = db.statistics();
        let moved = |t: Ticker| after.ticker(t.name()) - before.ticker(t.name());
        assert_eq!(moved(Ticker::GetHitL0), 0, "batched: {batched}");
        assert_eq!(moved(Ticker::GetHitL1) + moved(Ticker::GetHitL2AndUp), 25, "batched: {batched}");
    }
}

#[test]
fn a_key_asked_twice_counts_twice_where_it_was_found_batched_or_not() {
    for batched in [true, false] {
        let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        db.put(&W, b"t03", b"in a table").unwrap();
        db.flush().unwrap();
        db.put(&W, b"m", b"in the memtable").unwrap();
        let before = db.statistics();
        let got = db.multi_get(&r(), &[b"t03", b"m", b"t03", b"m", b"t03"], batched).unwrap();
        assert_eq!(got.iter().filter(|v| v.is_some()).count(), 5);
        drop(got);
        let after = db.statistics();
        let moved = |t: Ticker| after.ticker(t.name()) - before.ticker(t.name());
        assert_eq!(moved(Ticker::MemtableHit), 2, "batched: {batched}");
        assert_eq!(moved(Ticker::MemtableMiss), 3, "batched: {batched}");
        assert_eq!(moved(Ticker::GetHitL0), 3, "batched: {batched}");
        assert_eq!(moved(Ticker::NumberMultiGetKeysFound), 5, "batched: {batched}");
    }
}

#[test]
fn bytes_read_are_the_bytes_of_the_values_returned_wherever_they_were_found() {
    for batched in [true, false] {
        let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        db.put(&W, b"hidden", &[1; 100]).unwrap();
        db.put(&W, b"table", &[2; 30]).unwrap();
        db.flush().unwrap();
        db.delete_range(&W, b"hidden", b"hidden\0").unwrap();
        db.flush().unwrap();
        db.put(&W, b"memtable", &[3; 7]).unwrap();
        let bytes = |t: Ticker| db.statistics().ticker(t.name());
        let b0 = bytes(Ticker::BytesRead);
        assert_eq!(db.get(&r(), b"hidden").unwrap(), None);
        assert_eq!(bytes(Ticker::BytesRead), b0, "a value a tombstone hides is not returned");
        db.get(&r(), b"memtable").unwrap();
        db.get(&r(), b"table").unwrap();
        assert_eq!(bytes(Ticker::BytesRead), b0 + 7 + 30);
        let m0 = bytes(Ticker::NumberMultiGetBytesRead);
        db.multi_get(&r(), &[b"hidden", b"memtable", b"table", b"table", b"absent"], batched).unwrap();
        assert_eq!(bytes(Ticker::NumberMultiGetBytesRead), m0 + 7 + 30 + 30, "batched: {batched}");
    }
}

#[test]
fn fill_cache_false_keeps_get_and_multi_get_out_of_the_block_cache() {
    let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    for i in 0..100u32 {
        db.put(&W, format!("key{i:03}").as_bytes(), &[i as u8; 50]).unwrap();
    }
    db.flush().unwrap();
    let no_fill = ReadOptions { fill_cache: Some(false), ..ReadOptions::default() };
    let (adds, misses) = (|| ticker(&db, Ticker::BlockCacheAdd), || ticker(&db, Ticker::BlockCacheMiss));
    let (a0, m0) = (adds(), misses());
    for _ in 0..3 {
        assert_eq!(db.get(&no_fill, b"key007").unwrap(), Some(vec![7; 50]));
        db.multi_get(&no_fill, &[b"key001", b"key050"], true).unwrap();
        db.multi_get(&no_fill, &[b"key001", b"key050"], false).unwrap();
    }
    assert_eq!(adds(), a0, "nothing was added to the cache");
    assert!(misses() >= m0 + 9, "every read went to the file: {} misses", misses() - m0);
    // The default fills it: the second read is a hit.
    db.get(&r(), b"key007").unwrap();
    assert_eq!(adds(), a0 + 1);
    let hits = ticker(&db, Ticker::BlockCacheHit);
    db.get(&r(), b"key007").unwrap();
    assert_eq!(ticker(&db, Ticker::BlockCacheHit), hits + 1);
}

#[test]
fn a_blob_reference_is_refused_alike_by_get_multi_get_iterators_and_count() {
    // A table written by a newer version, holding a blob reference for "b",
    // brought into a database by repair (which adopts every table it finds
    // once the manifest is gone).
    let fs = MemFs::new();
    {
        let db = Db::open(Arc::new(fs.clone()), "db", Options::default()).unwrap();
        db.put(&W, b"a", b"1").unwrap();
        db.put(&W, b"c", b"3").unwrap();
        db.flush().unwrap();
    }
    let f = fs.open("db/000900.sst", true).unwrap();
    let mut b = TableBuilder::new(f, TableOptions::default());
    b.add(&internal_key(b"b", 1_000, ValueType::BlobIndex), b"blob file 7, offset 0").unwrap();
    b.finish().unwrap();
    for name in fs.list("db").unwrap() {
        if name.starts_with("MANIFEST") {
            fs.remove(&format!("db/{name}")).unwrap();
        }
    }
    repair(Arc::new(fs.clone()), "db", &Options::default()).unwrap();
    let db = Db::open(Arc::new(fs), "db", Options::default()).unwrap();
    let refused = |e: Error, path: &str| {
        assert!(matches!(&e, Error::NotSupported(m) if m.contains("BlobIndex")), "{path}: {e:?}");
    };
    refused(db.get(&r(), b"b").unwrap_err(), "get");
    refused(db.multi_get(&r(), &[b"a", b"b"], true).err().unwrap(), "batched multi_get");
    refused(db.multi_get(&r(), &[b"b"], false).err().unwrap(), "multi_get key by key");
    refused(scan(&db, false).unwrap_err(), "forward iteration");
    refused(scan(&db, true).unwrap_err(), "reverse iteration");
    refused(db.count(&r()).unwrap_err(), "count");
    // The keys around it read as ever.
    assert_eq!(db.get(&r(), b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(&r(), b"c").unwrap(), Some(b"3".to_vec()));
    // A range that leaves it out scans.
    let upto_b = ReadOptions { upper_bound: Some(b"b".to_vec()), ..ReadOptions::default() };
    assert_eq!(db.count(&upto_b).unwrap(), 1);
}

/// A database whose last level holds `k0000`..`k1999` and whose L0 holds
/// one file of other keys in the same range, without bloom filters (so
/// every lookup of a last-level key searches the L0 file in vain).
fn overlapping_db(read_triggered_compaction: bool) -> Db {
    let options =
        Options { write_buffer_size: 64 << 10, bloom_bits_per_key: 0, read_triggered_compaction, ..Options::default() };
    let db = Db::open(Arc::new(MemFs::new()), "db", options).unwrap();
    for i in 0..2000u32 {
        db.put(&W, format!("k{i:04}").as_bytes(), &[1; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in (0..2000u32).step_by(10) {
        db.put(&W, format!("k{i:04}x").as_bytes(), &[2; 100]).unwrap();
    }
    db.flush().unwrap();
    let files = db.properties().files_per_level;
    assert_eq!(files[0], 1, "{files:?}");
    assert!(matches!(db.do_background_work(64), Ok(Progress { did_work: false, work_left: false })));
    db
}

#[test]
fn lookups_that_search_a_file_in_vain_get_it_compacted() {
    let db = overlapping_db(true);
    let mut lookups = 0u32;
    while ticker(&db, Ticker::ReadCompactionsWanted) == 0 {
        let i = (lookups * 7) % 2000;
        assert_eq!(db.get(&r(), format!("k{i:04}").as_bytes()).unwrap(), Some(vec![1; 100]));
        lookups += 1;
        assert!(lookups < 10_000, "no file was charged up");
    }
    // One lookup in 16 that searched two files is sampled and charges 16;
    // the L0 file, under 16 KiB, allows 100: the 7th sampled lookup uses
    // that up, the 97th to search two files, the 98th in all (the first,
    // of k0000, sorts before the L0 file's first key and searched one).
    assert_eq!(lookups, 98);
    let p = db.do_background_work(64).unwrap();
    assert!(p.did_work);
    while db.do_background_work(64).unwrap().work_left {}
    assert_eq!(ticker(&db, Ticker::ReadCompactions), 1);
    assert_eq!(db.properties().files_per_level[0], 0, "L0 was compacted into the last level");
    for i in (0..2000u32).step_by(10) {
        assert_eq!(db.get(&r(), format!("k{i:04}x").as_bytes()).unwrap(), Some(vec![2; 100]));
        assert_eq!(db.get(&r(), format!("k{i:04}").as_bytes()).unwrap(), Some(vec![1; 100]));
    }
}

#[test]
fn batched_multi_gets_that_search_a_file_in_vain_get_it_compacted_as_gets_do() {
    let db = overlapping_db(true);
    let mut looked_up = 0u32;
    while ticker(&db, Ticker::ReadCompactionsWanted) == 0 {
        // Batches of 7 keys, in the order the Get test looks them up.
        let keys: Vec<Vec<u8>> =
            (looked_up..looked_up + 7).map(|n| format!("k{:04}", (n * 7) % 2000).into_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let got = db.multi_get(&r(), &refs, true).unwrap();
        assert!(got.iter().all(|v| v == Some(&[1u8; 100][..])));
        looked_up += 7;
        assert!(looked_up < 10_000, "no file was charged up");
    }
    // As for Gets: the 98th key looked up uses the allowance up (in the
    // batch of keys 92 to 98).
    assert_eq!(looked_up, 98);
    while db.do_background_work(64).unwrap().work_left {}
    assert_eq!(ticker(&db, Ticker::ReadCompactions), 1);
    assert_eq!(db.properties().files_per_level[0], 0, "L0 was compacted into the last level");
}

#[test]
fn without_read_triggered_compaction_lookups_charge_nothing() {
    let db = overlapping_db(false);
    for _ in 0..20 {
        for i in (0..2000u32).step_by(7) {
            db.get(&r(), format!("k{i:04}").as_bytes()).unwrap();
        }
        let keys: Vec<Vec<u8>> = (0..2000u32).step_by(7).map(|i| format!("k{i:04}").into_bytes()).collect();
        db.multi_get(&r(), &keys.iter().map(|k| k.as_slice()).collect::<Vec<_>>(), true).unwrap();
    }
    assert_eq!(ticker(&db, Ticker::ReadCompactionsWanted), 0);
    assert!(!db.do_background_work(64).unwrap().did_work);
    assert_eq!(db.properties().files_per_level[0], 1);
}

#[test]
fn a_key_found_deleted_in_a_level_counts_no_hit_there() {
    // RocksDB counts rocksdb.l0.hit (and l1, l2andup) for values found only.
    let db = Db::open(Arc::new(MemFs::new()), "db", Options { disable_auto_compactions: true, ..Options::default() })
        .unwrap();
    let w = crate::WriteOptions::default();
    db.put(&w, b"k", b"v").unwrap();
    db.flush().unwrap();
    db.delete(&w, b"k").unwrap();
    db.flush().unwrap();
    let hits = |db: &Db| db.statistics().ticker(Ticker::GetHitL0.name());
    let before = hits(&db);
    assert_eq!(db.get(&ReadOptions::default(), b"k").unwrap(), None);
    assert_eq!(db.multi_get(&ReadOptions::default(), &[&b"k"[..]], true).unwrap().get(0), None);
    assert_eq!(db.multi_get(&ReadOptions::default(), &[&b"k"[..]], false).unwrap().get(0), None);
    assert_eq!(hits(&db), before, "a deletion counted as a hit");
    db.put(&w, b"k", b"again").unwrap();
    db.flush().unwrap();
    assert!(db.get(&ReadOptions::default(), b"k").unwrap().is_some());
    assert_eq!(hits(&db), before + 1);
}

#[test]
fn background_work_pending_counts_a_compaction_the_picker_wants() {
    let db =
        Db::open(Arc::new(MemFs::new()), "db", Options { level0_file_num_compaction_trigger: 2, ..Options::default() })
            .unwrap();
    let w = crate::WriteOptions::default();
    for i in 0..2 {
        db.put(&w, format!("k{i}").as_bytes(), b"v").unwrap();
        db.flush().unwrap();
    }
    // Two L0 files at a trigger of 2: due, though no job has started.
    assert_eq!(db.level0_file_count(), 2);
    assert!(db.properties().background_work_pending);
    assert!(db.background_work_due());
    while db.do_background_work(usize::MAX).unwrap().work_left {}
    assert!(!db.properties().background_work_pending);
    assert!(!db.background_work_due());
    // A write that fills no memtable leaves nothing due; one that fills it
    // (the memtable switched, a flush waits) does.
    db.put(&w, b"k9", b"v").unwrap();
    assert!(!db.background_work_due());
    let big = vec![b'x'; 1000];
    for i in 0.. {
        if db.properties().immutable_memtables > 0 {
            break;
        }
        assert!(!db.background_work_due());
        db.put(&w, format!("big{i}").as_bytes(), &big).unwrap();
    }
    assert!(db.background_work_due());
}
