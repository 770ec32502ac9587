//! The engine's everyday contract: writes, reads, snapshots, iterators,
//! flushes, obsolete files, verify, statistics and timers, old table formats.

use super::*;

#[test]
fn put_get_delete_and_reopen() {
    let fs = MemFs::new();
    {
        let db = open(&fs);
        db.put(&W, b"a", b"1").unwrap();
        db.put(&W, b"b", b"2").unwrap();
        db.delete(&W, b"a").unwrap();
        assert_eq!(db.get(&r(), b"a").unwrap(), None);
        assert_eq!(db.get(&r(), b"b").unwrap().as_deref(), Some(&b"2"[..]));
        db.close().unwrap();
    }
    let db = open(&fs);
    assert_eq!(db.get(&r(), b"a").unwrap(), None);
    assert_eq!(db.get(&r(), b"b").unwrap().as_deref(), Some(&b"2"[..]));
}

#[test]
fn an_ascending_load_moves_its_l0_files_down_unread_and_stays_readable() {
    let fs = MemFs::new();
    let options = Options { target_file_size_base: 64 << 10, ..small_options() };
    // Bytes that do not compress, so each flush is a table of a useful size.
    let value = |i: u32| incompressible(i, 100);
    {
        let db = Db::open(Arc::new(fs.clone()), "db", options.clone()).unwrap();
        for i in 0..20_000u32 {
            db.put(&W, format!("key{i:06}").as_bytes(), &value(i)).unwrap();
            if i % 500 == 0 {
                while db.do_background_work(64).unwrap().work_left {}
            }
        }
        while db.do_background_work(64).unwrap().work_left {}
        let st = db.statistics();
        assert!(st.ticker("silt.compaction.trivial.moves") >= 8, "{st}");
        assert_eq!(st.ticker("silt.compactions"), 0, "nothing was merged: {st}");
        // What is left in L0 is below the trigger (how much depends on
        // where the last flushes fell).
        let p = db.properties();
        assert!(p.files_per_level[0] < 4, "{p:?}");
        assert!(p.files_per_level[6] >= 8, "{p:?}");
        db.verify().unwrap();
        db.close().unwrap();
    }
    let db = Db::open(Arc::new(fs), "db", options).unwrap();
    for i in (0..20_000u32).step_by(13) {
        assert_eq!(db.get(&r(), format!("key{i:06}").as_bytes()).unwrap(), Some(value(i)), "key {i}");
    }
    assert_eq!(count_entries(&db), 20_000);
}

#[test]
fn memtables_flush_to_tables_and_stay_readable() {
    let fs = MemFs::new();
    let db = open(&fs);
    // In scattered order, so that the L0 files overlap and compaction
    // merges them (an ascending load moves them down unread).
    for j in 0..5000u32 {
        let i = j * 7919 % 5000;
        db.put(&W, format!("key{i:06}").as_bytes(), &[i as u8; 100]).unwrap();
    }
    while db.do_background_work(4).unwrap().work_left {}
    let props = db.properties();
    assert!(props.files_per_level.iter().sum::<u64>() >= 1, "{props:?}");
    assert!(props.files_per_level[0] < 4, "L0 must have been compacted: {props:?}");
    assert!(db.statistics().ticker("silt.compactions") >= 1);
    assert!(db.statistics().ticker("silt.flushes") >= 3);
    for i in (0..5000u32).step_by(7) {
        assert_eq!(db.get(&r(), format!("key{i:06}").as_bytes()).unwrap(), Some(vec![i as u8; 100]), "key {i}");
    }
    drop(db);
    let db = open(&fs);
    assert_eq!(db.get(&r(), b"key004999").unwrap(), Some(vec![(4999u32) as u8; 100]));
    assert_eq!(count_entries(&db), 5000);
}

#[test]
fn snapshots_see_their_moment_across_flushes() {
    let fs = MemFs::new();
    let db = open(&fs);
    db.put(&W, b"k", b"v1").unwrap();
    let s1 = db.snapshot();
    db.put(&W, b"k", b"v2").unwrap();
    db.delete(&W, b"gone").unwrap();
    let s2 = db.snapshot();
    db.delete(&W, b"k").unwrap();
    db.flush().unwrap();
    let at = |s: &Snapshot| db.get(&ReadOptions { snapshot: Some(s), ..r() }, b"k").unwrap();
    assert_eq!(at(&s1).as_deref(), Some(&b"v1"[..]));
    assert_eq!(at(&s2).as_deref(), Some(&b"v2"[..]));
    assert_eq!(db.get(&r(), b"k").unwrap(), None);
}

#[test]
fn iterator_bounds_and_directions() {
    let fs = MemFs::new();
    let db = open(&fs);
    for k in ["a", "b", "c", "d", "e"] {
        db.put(&W, k.as_bytes(), k.as_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.delete(&W, b"c").unwrap();
    let opts = ReadOptions { lower_bound: Some(b"b".to_vec()), upper_bound: Some(b"e".to_vec()), ..r() };
    let mut it = db.iter(&opts).unwrap();
    let mut fwd = vec![];
    it.seek_to_first();
    while it.valid() {
        fwd.push(it.key().to_vec());
        it.next();
    }
    assert_eq!(fwd, vec![b"b".to_vec(), b"d".to_vec()]);
    let mut back = vec![];
    it.seek_to_last();
    while it.valid() {
        back.push(it.key().to_vec());
        it.prev();
    }
    assert_eq!(back, vec![b"d".to_vec(), b"b".to_vec()]);
    it.seek(b"c");
    assert_eq!(it.key(), b"d");
    it.prev();
    assert_eq!(it.key(), b"b");
    it.next();
    assert_eq!(it.key(), b"d");
    it.seek_for_prev(b"c");
    assert_eq!(it.key(), b"b");
    it.seek_for_prev(b"zz");
    assert_eq!(it.key(), b"d");
    it.seek(b"a");
    assert_eq!(it.key(), b"b");
}

#[test]
fn the_empty_key_is_a_key_in_memtables_tables_and_ranges() {
    let fs = MemFs::new();
    let db = open(&fs);
    assert_eq!(db.get(&r(), b"").unwrap(), None);
    db.put(&W, b"", b"first").unwrap();
    db.put(&W, b"a", b"second").unwrap();
    assert_eq!(db.get(&r(), b"").unwrap().as_deref(), Some(&b"first"[..]));
    db.flush().unwrap();
    drop(db);
    let db = open(&fs);
    assert_eq!(db.get(&r(), b"").unwrap().as_deref(), Some(&b"first"[..]));
    let mut it = db.iter(&r()).unwrap();
    it.seek_to_first();
    assert_eq!(it.key(), b"");
    it.seek_to_last();
    it.prev();
    assert_eq!((it.key(), it.value()), (&b""[..], &b"first"[..]));
    drop(it);
    // A range delete from the empty key covers it.
    db.delete_range(&W, b"", b"a").unwrap();
    assert_eq!(db.get(&r(), b"").unwrap(), None);
    assert_eq!(count_entries(&db), 1);
}

#[test]
fn bad_input_and_use_after_close() {
    let fs = MemFs::new();
    let db = open(&fs);
    assert!(matches!(db.put(&W, &vec![0u8; MAX_KEY_LEN + 1], b"x"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.get(&r(), &vec![0u8; MAX_KEY_LEN + 1]), Err(Error::InvalidArgument(_))));
    db.close().unwrap();
    assert!(matches!(db.put(&W, b"k", b"v"), Err(Error::Closed(_))));
    assert!(matches!(db.get(&r(), b"k"), Err(Error::Closed(_))));
    assert_eq!(db.put(&W, b"k", b"v").unwrap_err().code(), "Closed");
    let bad = Options { write_buffer_size: 10, ..Options::default() };
    assert!(matches!(Db::open(Arc::new(MemFs::new()), "x", bad), Err(Error::InvalidArgument(_))));
}

#[test]
fn a_missing_database_is_not_found_and_an_existing_one_already_exists() {
    let fs = MemFs::new();
    let missing = Db::open(Arc::new(fs.clone()), "db", Options { create_if_missing: false, ..small_options() });
    assert_eq!(missing.err().map(|e| e.code()), Some("NotFound"));
    open(&fs).close().unwrap();
    let exists = Db::open(Arc::new(fs.clone()), "db", Options { error_if_exists: true, ..small_options() });
    assert_eq!(exists.err().map(|e| e.code()), Some("AlreadyExists"));
}

#[test]
fn second_open_is_busy_until_close() {
    let fs = MemFs::new();
    let db = open(&fs);
    let again = Db::open(Arc::new(fs.clone()), "db", small_options());
    assert!(matches!(again, Err(Error::Busy(_))));
    db.close().unwrap();
    open(&fs);
}

#[test]
fn obsolete_files_are_deleted_once_no_reader_holds_them() {
    let fs = MemFs::new();
    let db = open(&fs);
    for i in 0..3000u32 {
        db.put(&W, format!("key{i:06}").as_bytes(), &[1; 100]).unwrap();
    }
    db.flush().unwrap();
    let logs = |fs: &MemFs| fs.list("db").unwrap().iter().filter(|n| n.ends_with(".log")).count();
    assert_eq!(logs(&fs), 1, "flushed WALs must be deleted: {:?}", fs.list("db"));
    let manifests = fs.list("db").unwrap().iter().filter(|n| n.starts_with("MANIFEST")).count();
    assert_eq!(manifests, 1);
}

#[test]
fn missing_table_file_is_reported_at_open() {
    let fs = MemFs::new();
    {
        let db = open(&fs);
        db.put(&W, b"k", b"v").unwrap();
        db.flush().unwrap();
    }
    let sst = fs.list("db").unwrap().into_iter().find(|n| n.ends_with(".sst")).unwrap();
    fs.remove(&format!("db/{sst}")).unwrap();
    match Db::open(Arc::new(fs.clone()), "db", small_options()) {
        Err(Error::Corruption { file, .. }) => assert!(file.ends_with(&sst), "{file}"),
        Err(e) => panic!("want Corruption, got {e}"),
        Ok(_) => panic!("want Corruption, got an open database"),
    }
}

#[test]
fn empty_batch_and_large_values() {
    let fs = MemFs::new();
    let db = open(&fs);
    db.write(&W, WriteBatch::new()).unwrap();
    let big = vec![7u8; 300_000];
    db.put(&W, b"big", &big).unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(&r(), b"big").unwrap(), Some(big));
}

#[test]
fn verify_checks_every_table_and_reports_damage() {
    let fs = MemFs::new();
    let db = open(&fs);
    for i in 0..2000u32 {
        db.put(&W, format!("key{i:06}").as_bytes(), &[3; 50]).unwrap();
    }
    db.flush().unwrap();
    let report = db.verify().unwrap();
    assert!(report.tables >= 1 && report.entries == 2000, "{report:?}");
    drop(db);
    // Damage a data block in the middle of a table: open still works (the
    // block is not read), verify finds it.
    let sst = fs.list("db").unwrap().into_iter().find(|n| n.ends_with(".sst")).unwrap();
    let f = fs.open(&format!("db/{sst}"), false).unwrap();
    f.write_at(100, &[0xEE; 4]).unwrap();
    let db = open(&fs);
    match db.verify() {
        Err(Error::ChecksumMismatch { file, .. }) => assert!(file.ends_with(&sst)),
        other => panic!("want ChecksumMismatch, got {other:?}"),
    }
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn works_on_the_native_file_system() {
    let dir = crate::testutil::TempDir::new("db-std");
    let fs: Arc<dyn crate::fs::Fs> = Arc::new(crate::fs::StdFs);
    let path = format!("{}/db", dir.path());
    {
        let db = Db::open(fs.clone(), &path, small_options()).unwrap();
        for i in 0..3000u32 {
            db.put(&WriteOptions { sync: i % 500 == 0 }, format!("k{i:05}").as_bytes(), &[9; 64]).unwrap();
        }
        db.flush().unwrap();
        db.put(&W, b"after-flush", b"in the wal").unwrap();
        // A second handle on the same directory is refused by the OS lock.
        assert!(matches!(Db::open(fs.clone(), &path, small_options()), Err(Error::Busy(_))));
    }
    let db = Db::open(fs, &path, small_options()).unwrap();
    assert_eq!(db.get(&r(), b"k02999").unwrap(), Some(vec![9; 64]));
    assert_eq!(db.get(&r(), b"after-flush").unwrap().as_deref(), Some(&b"in the wal"[..]));
    assert_eq!(db.verify().unwrap().entries, 3000);
}

#[test]
fn writers_stall_and_compact_themselves_when_l0_is_full() {
    let fs = MemFs::new();
    let options = Options {
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 3,
        max_write_buffer_number: 2,
        ..Options::default()
    };
    let db = Db::open(Arc::new(fs), "db", options).unwrap();
    // Nobody pumps background work: only stalls can keep L0 bounded.
    for i in 0..20_000u32 {
        db.put(&W, format!("key{:06}", (i * 7919) % 20_000).as_bytes(), &[i as u8; 64]).unwrap();
        assert!(db.properties().files_per_level[0] < 3 + 1, "L0 grew past the stop trigger");
    }
    let stats = db.statistics();
    assert!(stats.ticker("silt.write.stalls") >= 1, "{stats}");
    assert!(stats.ticker("silt.compactions") >= 1, "{stats}");
    assert_eq!(db.get(&r(), b"key000000").unwrap().map(|v| v.len()), Some(64));
}

#[test]
fn statistics_count_reads_filters_and_cache() {
    let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    for i in 0..3000u32 {
        db.put(&W, format!("key{i:06}").as_bytes(), &[1; 32]).unwrap();
    }
    db.flush().unwrap();
    for i in 0..3000u32 {
        // Even keys exist, odd ones were never written.
        let k = if i % 2 == 0 { format!("key{i:06}") } else { format!("key{i:06}x") };
        db.get(&r(), k.as_bytes()).unwrap();
    }
    let s = db.statistics();
    assert_eq!(s.ticker("rocksdb.number.keys.read"), 3000);
    assert_eq!(s.ticker("rocksdb.number.keys.written"), 3000);
    let useful = s.ticker("rocksdb.bloom.filter.useful");
    let positive = s.ticker("rocksdb.bloom.filter.full.positive");
    let true_positive = s.ticker("rocksdb.bloom.filter.full.true.positive");
    assert!(true_positive >= 1500, "{s}");
    assert!(useful >= 1400, "{s}");
    assert_eq!(db.properties().files_per_level.iter().sum::<u64>(), 1);
    // Every lookup probed the one table's filter once, but "key002999x",
    // past the table's largest key, which never reached the filter.
    assert_eq!(useful + positive, 2999, "{s}");
    assert!(s.bloom_false_positive_rate() < 0.05, "{s}");
    assert!(s.ticker("rocksdb.block.cache.hit") + s.ticker("rocksdb.block.cache.miss") >= 1500, "{s}");
    assert!(s.to_string().contains("rocksdb.bloom.filter.useful COUNT : "));
}

/// A clock that counts how often it is read.
struct CountingClock(std::sync::atomic::AtomicU64);

impl crate::clock::Clock for CountingClock {
    fn now_micros(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

#[test]
fn timers_read_the_clock_only_when_the_stats_level_asks_for_them() {
    for level in [super::StatsLevel::ExceptTimers, super::StatsLevel::All] {
        let clock = Arc::new(CountingClock(std::sync::atomic::AtomicU64::new(0)));
        let options = Options { clock: Some(clock.clone()), stats_level: level, ..Options::default() };
        let db = Db::open(Arc::new(MemFs::new()), "db", options).unwrap();
        for i in 0..50u32 {
            db.put(&W, format!("key{i:03}").as_bytes(), b"v").unwrap();
            db.get(&r(), format!("key{i:03}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
        let gets = db.statistics().histograms.iter().find(|h| h.name == "rocksdb.db.get.micros").map_or(0, |h| h.count);
        let reads = clock.0.load(std::sync::atomic::Ordering::Relaxed);
        match level {
            super::StatsLevel::ExceptTimers => assert_eq!((reads, gets), (0, 0), "the default never reads the clock"),
            super::StatsLevel::All => assert!(reads >= 200 && gets == 50, "{reads} clock reads, {gets} timed gets"),
        }
    }
}
