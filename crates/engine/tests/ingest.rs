//! Bulk ingest (`Db::ingest`): where the files go, what snapshots and every
//! read API see, sorted and unsorted input, refusals that write nothing,
//! and crashes at every file-system call of an ingest (all or nothing).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use silt_engine::fs::{CrashMode, FaultFs, Fs, MemFs};
use silt_engine::{Db, Error, IngestOptions, Options, ReadOptions, WriteBatch, WriteOptions};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        block_size: 512,
        target_file_size_base: 64 << 10,
        compression: silt_engine::Compression::None,
        max_bytes_for_level_base: 64 << 10,
        max_bytes_for_level_multiplier: 4,
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 6,
        ..Options::default()
    }
}

fn open(fs: &Arc<dyn Fs>) -> Db {
    Db::open(fs.clone(), "db", options()).unwrap()
}

fn puts(entries: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (k, v) in entries {
        b.put(&k, &v);
    }
    b
}

fn k(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn v(i: u32, tag: &str) -> Vec<u8> {
    format!("{tag}-{i}-{}", "x".repeat((i % 97) as usize)).into_bytes()
}

fn get(db: &Db, key: &[u8]) -> Option<Vec<u8>> {
    db.get(&ReadOptions::default(), key).unwrap()
}

fn scan(db: &Db, opts: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(opts).unwrap();
    it.seek_to_first();
    let mut out = vec![];
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

#[test]
fn an_ingest_into_an_empty_database_goes_to_the_last_level_in_target_size_files_and_every_read_sees_it() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let fs: Arc<dyn Fs> = Arc::new(fault.clone());
    let db = open(&fs);
    let n = 5_000;
    let report = db.ingest(&puts((0..n).map(|i| (k(i), v(i, "a")))), &IngestOptions { sorted: true }).unwrap();
    assert_eq!(report.keys, n as u64);
    assert_eq!(report.level, 6);
    assert!(report.files > 3, "{report:?}");
    assert!(!report.flushed_memtables);
    assert_eq!(report.sequence, 1);
    assert_eq!(db.latest_sequence(), 1);
    let props = db.properties();
    assert_eq!(props.files_per_level[6], report.files);
    assert_eq!(props.memtable_bytes, props.all_memtable_bytes);
    for i in (0..n).step_by(7) {
        assert_eq!(get(&db, &k(i)), Some(v(i, "a")), "get key{i}");
    }
    let keys: Vec<Vec<u8>> = (0..n).step_by(11).map(k).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|x| x.as_slice()).collect();
    for batched in [false, true] {
        let got = db.multi_get(&ReadOptions::default(), &refs, batched).unwrap();
        for (j, i) in (0..n).step_by(11).enumerate() {
            assert_eq!(got.get(j), Some(&v(i, "a")[..]), "multi_get key{i}");
        }
    }
    let all = scan(&db, &ReadOptions::default());
    assert_eq!(all.len(), n as usize);
    assert!(all.iter().enumerate().all(|(i, (key, val))| *key == k(i as u32) && *val == v(i as u32, "a")));
    let stats = db.statistics();
    assert_eq!(stats.ticker("silt.ingest.keys"), n as u64);
    assert_eq!(stats.ticker("silt.ingest.files"), report.files);
    db.verify().unwrap();
    // Durable at once: no WAL holds it, yet after a power cut (whatever was
    // not synced is gone) a reopen finds it, and later writes get later
    // sequence numbers.
    fault.crash(CrashMode::DropUnsynced).unwrap();
    drop(db);
    let db = open(&fs);
    assert_eq!(get(&db, &k(5)), Some(v(5, "a")));
    db.put(&WriteOptions::default(), &k(5), b"newer").unwrap();
    assert_eq!(get(&db, &k(5)).as_deref(), Some(&b"newer"[..]));
    assert_eq!(db.latest_sequence(), 2);
}

#[test]
fn unsorted_input_is_sorted_and_of_equal_keys_the_last_wins_while_sorted_input_out_of_order_is_refused() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = open(&fs);
    // Descending, with every key given twice: the second value wins.
    let entries: Vec<_> = (0..500u32).rev().flat_map(|i| [(k(i), v(i, "first")), (k(i), v(i, "second"))]).collect();
    let r = db.ingest(&puts(entries.clone()), &IngestOptions::default()).unwrap();
    assert_eq!(r.keys, 500);
    let all = scan(&db, &ReadOptions::default());
    assert_eq!(all, (0..500u32).map(|i| (k(i), v(i, "second"))).collect::<Vec<_>>());

    // Told sorted, but not: refused, nothing written, no file left behind.
    let files_before = fs.list("db").unwrap().len();
    let seq = db.latest_sequence();
    let err = db.ingest(&puts([(k(900), v(900, "x")), (k(800), v(800, "x"))]), &IngestOptions { sorted: true });
    assert!(matches!(err, Err(Error::InvalidArgument(ref m)) if m.contains("out of order")), "{err:?}");
    // Only puts.
    let mut b = puts([(k(950), v(950, "x"))]);
    b.delete(&k(951));
    assert!(matches!(db.ingest(&b, &IngestOptions::default()), Err(Error::InvalidArgument(_))));
    // An empty key is a key; an oversized one is refused like any write's.
    let too_long = vec![b'k'; silt_engine::MAX_KEY_LEN + 1];
    assert!(matches!(
        db.ingest(&puts([(too_long, vec![1])]), &IngestOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(get(&db, &k(900)), None);
    assert_eq!(db.latest_sequence(), seq);
    assert_eq!(fs.list("db").unwrap().len(), files_before);
    // An empty ingest does nothing.
    assert_eq!(db.ingest(&WriteBatch::new(), &IngestOptions::default()).unwrap().keys, 0);
    assert_eq!(db.latest_sequence(), seq);
}

#[test]
fn snapshots_and_iterators_from_before_an_ingest_do_not_see_it_and_later_writes_win() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = open(&fs);
    for i in 0..200 {
        db.put(&WriteOptions::default(), &k(i), &v(i, "old")).unwrap();
    }
    db.flush().unwrap();
    let snap = db.snapshot();
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    db.ingest(&puts((100..300).map(|i| (k(i), v(i, "new")))), &IngestOptions { sorted: true }).unwrap();
    // The open iterator reads as of its creation.
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert!(it.value().starts_with(b"old"), "an iterator from before the ingest saw it");
        n += 1;
        it.next();
    }
    assert_eq!(n, 200);
    let at_snap = ReadOptions { snapshot: Some(&snap), ..ReadOptions::default() };
    assert_eq!(db.get(&at_snap, &k(150)).unwrap(), Some(v(150, "old")));
    assert_eq!(db.get(&at_snap, &k(250)).unwrap(), None);
    assert_eq!(get(&db, &k(150)), Some(v(150, "new")));
    assert_eq!(get(&db, &k(50)), Some(v(50, "old")));
    // Newer writes and deletes hide ingested values, across compactions.
    db.put(&WriteOptions::default(), &k(120), b"after").unwrap();
    db.delete(&WriteOptions::default(), &k(130)).unwrap();
    db.delete_range(&WriteOptions::default(), &k(200), &k(210)).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(get(&db, &k(120)).as_deref(), Some(&b"after"[..]));
    assert_eq!(get(&db, &k(130)), None);
    assert_eq!(get(&db, &k(205)), None);
    assert_eq!(get(&db, &k(210)), Some(v(210, "new")));
    assert_eq!(db.get(&at_snap, &k(150)).unwrap(), Some(v(150, "old")));
    db.verify().unwrap();
}

#[test]
fn overlapping_memtables_are_flushed_first_and_the_files_go_as_deep_as_nothing_above_overlaps() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = open(&fs);
    // A memtable holding a key in the range, and one holding a range
    // tombstone over it: both flushed first, and the ingest is newer.
    db.put(&WriteOptions::default(), &k(10), b"memtable").unwrap();
    let r = db.ingest(&puts((0..20).map(|i| (k(i), v(i, "a")))), &IngestOptions::default()).unwrap();
    assert!(r.flushed_memtables);
    assert_eq!(r.level, 0, "the flush put a file in L0 over the same keys");
    assert_eq!(get(&db, &k(10)), Some(v(10, "a")));
    db.delete_range(&WriteOptions::default(), &k(0), &k(1000)).unwrap();
    let r = db.ingest(&puts([(k(500), v(500, "b"))]), &IngestOptions::default()).unwrap();
    assert!(r.flushed_memtables);
    assert_eq!(get(&db, &k(500)), Some(v(500, "b")));
    assert_eq!(get(&db, &k(10)), None);
    // A memtable elsewhere stays.
    db.put(&WriteOptions::default(), &k(5000), b"elsewhere").unwrap();
    let r = db.ingest(&puts([(k(7000), v(7000, "c"))]), &IngestOptions::default()).unwrap();
    assert!(!r.flushed_memtables);
    assert_eq!(r.level, 6, "nothing at any level overlaps key7000");
    // Move everything to the last level, then ingest over part of it: the
    // level above it.
    db.compact_range(None, None).unwrap();
    let props = db.properties();
    assert_eq!(props.files_per_level.iter().sum::<u64>(), props.files_per_level[6]);
    let r = db.ingest(&puts([(k(15), v(15, "d")), (k(6999), v(6999, "d"))]), &IngestOptions::default()).unwrap();
    assert_eq!(r.level, 5);
    assert_eq!(get(&db, &k(15)), Some(v(15, "d")));
    assert_eq!(get(&db, &k(5000)).as_deref(), Some(&b"elsewhere"[..]));
    // And once more over the same range: above that one.
    let r = db.ingest(&puts([(k(16), v(16, "e"))]), &IngestOptions::default()).unwrap();
    assert_eq!(r.level, 4);
    assert_eq!(get(&db, &k(16)), Some(v(16, "e")));
    assert_eq!(get(&db, &k(15)), Some(v(15, "d")));
    db.verify().unwrap();
    // Over keys in L0 (a flush of random keys spans them all): into L0,
    // as one file however large, so that the next write does not stall.
    db.put(&WriteOptions::default(), &k(0), b"l0").unwrap();
    db.put(&WriteOptions::default(), &k(9_999), b"l0").unwrap();
    db.flush().unwrap();
    let r = db.ingest(&puts((1..5_000).map(|i| (k(i), v(i, "f")))), &IngestOptions { sorted: true }).unwrap();
    assert_eq!((r.level, r.files), (0, 1), "{r:?}");
    assert!(r.bytes > 2 * (64 << 10), "{r:?}");
    assert_eq!(get(&db, &k(2_500)), Some(v(2_500, "f")));
    assert_eq!(get(&db, &k(0)).as_deref(), Some(&b"l0"[..]));
    db.verify().unwrap();
    // A reopen sees the same.
    drop(db);
    let db = open(&fs);
    assert_eq!(get(&db, &k(16)), Some(v(16, "f")));
    assert_eq!(get(&db, &k(500)), Some(v(500, "f")));
    assert_eq!(get(&db, &k(7000)), Some(v(7000, "c")));
}

/// Crashes at every mutating file-system call of an ingest, in both crash
/// modes: after a reopen the database holds all of it or none of it, and
/// after a flush no file is left that no version names.
#[test]
fn a_crash_anywhere_in_an_ingest_leaves_all_of_it_or_none() {
    let before: BTreeMap<Vec<u8>, Vec<u8>> = (0..300).map(|i| (k(i * 3), v(i, "w"))).collect();
    let ingested: Vec<(Vec<u8>, Vec<u8>)> = (0..2_000).map(|i| (k(i), v(i, "ingest"))).collect();
    let mut after = before.clone();
    after.extend(ingested.iter().cloned());
    let setup = |fs: &FaultFs| {
        let shared: Arc<dyn Fs> = Arc::new(fs.clone());
        let db = Db::open(shared, "db", Options { max_manifest_file_size: 256, ..options() }).unwrap();
        for (key, val) in &before {
            db.put(&WriteOptions { sync: true }, key, val).unwrap();
        }
        db
    };
    // The calls an ingest makes, without faults.
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let db = setup(&fs);
    let start = fs.mutating_ops();
    db.ingest(&puts(ingested.clone()), &IngestOptions::default()).unwrap();
    let calls = fs.mutating_ops() - start;
    assert!(calls > 10, "the ingest made only {calls} calls");
    drop(db);
    let mut outcomes = [0u32; 2];
    // Point `calls`: the ingest returned, then the power went.
    for point in 0..=calls {
        for mode in [CrashMode::DropUnsynced, CrashMode::TearUnsynced { seed: point }] {
            let fs = FaultFs::new(Arc::new(MemFs::new()));
            let db = setup(&fs);
            fs.fail_after(Some(point));
            let r = db.ingest(&puts(ingested.clone()), &IngestOptions::default());
            assert_eq!(r.is_err(), point < calls, "point {point}: {r:?}");
            fs.crash(mode).unwrap();
            drop(db);
            let shared: Arc<dyn Fs> = Arc::new(fs.clone());
            let db =
                Db::open(shared, "db", options()).unwrap_or_else(|e| panic!("point {point} {mode:?}: reopen: {e}"));
            let got: BTreeMap<Vec<u8>, Vec<u8>> = scan(&db, &ReadOptions::default()).into_iter().collect();
            if got == before {
                assert!(point < calls, "an acknowledged ingest was lost");
                outcomes[0] += 1;
            } else {
                assert!(
                    got == after,
                    "point {point} {mode:?}: {} keys, neither before nor after the ingest",
                    got.len()
                );
                outcomes[1] += 1;
            }
            db.verify().unwrap();
            db.flush().unwrap();
            let files = fs.list("db").unwrap();
            let ssts = files.iter().filter(|n| n.ends_with(".sst")).count() as u64;
            assert_eq!(
                ssts,
                db.properties().files_per_level.iter().sum::<u64>(),
                "point {point}: orphans in {files:?}"
            );
        }
    }
    // Crashed before its edit was durable it is gone; after, it is all there.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
