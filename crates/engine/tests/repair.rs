//! `silt_engine::repair`: rebuilding a database from its intact parts.

mod common;

use common::{read_all, State};

use std::collections::BTreeMap;
use std::sync::Arc;

use silt_engine::fs::{self, CrashMode, FaultFs, Fs, MemFs};
use silt_engine::{repair, Db, Options, ReadOptions, U64AddOperator, WriteBatch, WriteOptions};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        block_size: 512,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..Options::default()
    }
}

/// A database spread over several levels and a WAL, with overwrites,
/// deletes, range deletes and merges. Returns the final state and every
/// value each key ever had.
fn build(fs: Arc<dyn Fs>) -> (State, BTreeMap<Vec<u8>, Vec<Vec<u8>>>) {
    let db = Db::open(fs, "db", options()).unwrap();
    let w = WriteOptions::default();
    let mut state = State::new();
    let mut history: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
    for i in 0..8000u32 {
        let k = format!("key{:05}", (i * 7919) % 4000).into_bytes();
        // Values that do not compress, so the data spans several files.
        let v: Vec<u8> =
            (0..60 + i % 80).map(|j| (i.wrapping_mul(2_654_435_761).wrapping_add(j * 40_503) >> 13) as u8).collect();
        db.put(&w, &k, &v).unwrap();
        history.entry(k.clone()).or_default().push(v.clone());
        state.insert(k, v);
        if i % 500 == 250 {
            let (a, b) = (format!("key{:05}", i % 4000), format!("key{:05}", i % 4000 + 20));
            db.delete_range(&w, a.as_bytes(), b.as_bytes()).unwrap();
            let doomed: Vec<_> = state.range(a.into_bytes()..b.into_bytes()).map(|(k, _)| k.clone()).collect();
            for k in doomed {
                state.remove(&k);
            }
        }
        if i % 97 == 0 {
            let k = format!("ctr{}", i % 5).into_bytes();
            let mut b = WriteBatch::new();
            b.merge(&k, &3u64.to_le_bytes());
            db.write(&w, b).unwrap();
            let cur = state.get(&k).map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap()));
            let v = (cur + 3).to_le_bytes().to_vec();
            history.entry(k.clone()).or_default().push(v.clone());
            state.insert(k, v);
        }
        if i % 50 == 0 && i < 6000 {
            db.do_background_work(64).unwrap();
        }
        if i == 6000 {
            // The rest stays in level 0 (and the WAL).
            db.flush().unwrap();
            while db.do_background_work(64).unwrap().work_left {}
        }
    }
    // The last writes only in the WAL.
    for i in 0..30u32 {
        let k = format!("wal{i:03}").into_bytes();
        db.put(&w, &k, b"only in the wal").unwrap();
        state.insert(k, b"only in the wal".to_vec());
    }
    let levels = db.properties().files_per_level;
    assert!(levels.iter().filter(|&&n| n > 0).count() >= 2, "the database spans one level only: {levels:?}");
    drop(db);
    (state, history)
}

fn files(fs: &dyn Fs) -> Vec<String> {
    let mut v = fs.list("db").unwrap();
    v.sort();
    v
}

#[test]
fn repairing_a_healthy_database_keeps_everything() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (state, _) = build(fs.clone());
    let report = repair(fs.clone(), "db", &options()).unwrap();
    assert!(report.tables_intact >= 2 && report.tables_damaged == 0 && report.tables_lost == 0, "{report:?}");
    assert!(report.wal_records >= 30 && report.range_deletions > 0, "{report:?}");
    let db = Db::open(fs.clone(), "db", options()).unwrap();
    assert_eq!(read_all(&db), state);
    db.verify().unwrap();
    // Writes go on, with sequence numbers above the repaired ones.
    db.put(&WriteOptions::default(), b"key00001", b"after repair").unwrap();
    assert_eq!(db.get(&ReadOptions::default(), b"key00001").unwrap().as_deref(), Some(&b"after repair"[..]));
    db.flush().unwrap();
    while db.do_background_work(64).unwrap().work_left {}
    assert_eq!(db.get(&ReadOptions::default(), b"key00001").unwrap().as_deref(), Some(&b"after repair"[..]));
}

#[test]
fn a_lost_manifest_is_rebuilt_from_tables_and_wals() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (state, _) = build(fs.clone());
    for name in files(&*fs).iter().filter(|n| n.starts_with("MANIFEST-")) {
        fs.remove(&format!("db/{name}")).unwrap();
    }
    assert!(Db::open(fs.clone(), "db", options()).err().is_some_and(|e| e.is_corruption()));
    repair(fs.clone(), "db", &options()).unwrap();
    let db = Db::open(fs, "db", options()).unwrap();
    assert_eq!(read_all(&db), state);
}

#[test]
fn a_damaged_table_loses_only_its_bad_blocks() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (state, history) = build(fs.clone());
    let victim = files(&*fs).into_iter().find(|n| n.ends_with(".sst")).unwrap();
    let path = format!("db/{victim}");
    let mut bytes = fs::read_all(&*fs.open(&path, false).unwrap(), &path).unwrap();
    bytes[100] ^= 0x40; // inside the first data block
    let f = fs.open(&path, false).unwrap();
    f.truncate(0).unwrap();
    f.append(&bytes).unwrap();
    let report = repair(fs.clone(), "db", &options()).unwrap();
    assert_eq!((report.tables_damaged, report.blocks_lost), (1, 1), "{report:?}");
    assert!(report.problems.iter().any(|p| p.contains(&victim)), "{report:?}");
    let db = Db::open(fs, "db", options()).unwrap();
    db.verify().unwrap();
    let got = read_all(&db);
    // Whatever is returned was written for that key; most keys are exact.
    let mut exact = 0;
    for (k, v) in &got {
        if state.get(k) == Some(v) {
            exact += 1;
        } else {
            assert!(history.get(k).is_some_and(|h| h.contains(v)), "{k:?} has a value never written");
        }
    }
    assert!(exact * 10 >= state.len() * 9, "only {exact} of {} keys exact", state.len());
}

#[test]
fn repair_refuses_an_open_database() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = Db::open(fs.clone(), "db", options()).unwrap();
    let e = repair(fs, "db", &options()).unwrap_err();
    assert_eq!(e.code(), "Busy", "{e}");
    drop(db);
}

#[test]
fn a_crash_at_any_point_of_repair_loses_nothing() {
    let base = MemFs::new();
    let (state, _) = build(Arc::new(base.clone()));
    let snapshot: Vec<(String, Vec<u8>)> = files(&base)
        .into_iter()
        .filter(|n| n != "LOCK")
        .map(|n| {
            let p = format!("db/{n}");
            let b = fs::read_all(&*base.open(&p, false).unwrap(), &p).unwrap();
            (p, b)
        })
        .collect();
    let mut point = 0;
    loop {
        let mem = MemFs::new();
        for (p, b) in &snapshot {
            let f = mem.open(p, true).unwrap();
            f.append(b).unwrap();
            f.sync().unwrap();
        }
        let fault = FaultFs::new(Arc::new(mem));
        let fs: Arc<dyn Fs> = Arc::new(fault.clone());
        fault.fail_after(Some(point));
        let finished = repair(fs.clone(), "db", &options()).is_ok();
        fault.crash(CrashMode::TearUnsynced { seed: point }).unwrap();
        // Either the old database or the repaired one opens whole; if
        // neither does (the old manifest was removed), repair again.
        let db = match Db::open(fs.clone(), "db", options()) {
            Ok(db) => db,
            Err(_) => {
                repair(fs.clone(), "db", &options()).unwrap_or_else(|e| panic!("point {point}: repair again: {e}"));
                Db::open(fs, "db", options()).unwrap_or_else(|e| panic!("point {point}: open after repair: {e}"))
            }
        };
        assert_eq!(read_all(&db), state, "crash at point {point} of repair lost data");
        if finished {
            assert!(point > 10, "repair made only {point} mutating calls");
            break;
        }
        point += 1;
    }
}

/// The bytes of every file of `dir` but LOCK.
fn snapshot_files(fs: &dyn Fs) -> Vec<(String, Vec<u8>)> {
    files(fs)
        .into_iter()
        .filter(|n| n != "LOCK")
        .map(|n| {
            let p = format!("db/{n}");
            let b = fs::read_all(&*fs.open(&p, false).unwrap(), &p).unwrap();
            (n, b)
        })
        .collect()
}

fn put_back(fs: &dyn Fs, name: &str, bytes: &[u8]) {
    let f = fs.open(&format!("db/{name}"), true).unwrap();
    f.truncate(0).unwrap();
    f.append(bytes).unwrap();
}

#[test]
fn flushed_wals_and_obsolete_tables_left_behind_are_not_applied_again() {
    // A crash after a flush or compaction is installed but before the old
    // files are deleted leaves them behind; repair must not apply a flushed
    // WAL's merges twice, nor bring back what a compaction dropped.
    for manifest_readable in [true, false] {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = Db::open(fs.clone(), "db", options()).unwrap();
        let w = WriteOptions::default();
        for i in 0..50u32 {
            db.put(&w, format!("gone{i:02}").as_bytes(), b"deleted later").unwrap();
        }
        db.flush().unwrap();
        let before_compaction = snapshot_files(&*fs);
        for i in 0..50u32 {
            db.delete(&w, format!("gone{i:02}").as_bytes()).unwrap();
        }
        for _ in 0..10 {
            let mut b = WriteBatch::new();
            b.merge(b"ctr", &5u64.to_le_bytes());
            db.write(&w, b).unwrap();
        }
        let wal_before_flush: Vec<_> = snapshot_files(&*fs).into_iter().filter(|(n, _)| n.ends_with(".log")).collect();
        db.compact_range(None, None).unwrap(); // flushes, then drops the puts and their deletes
        drop(db);
        // Put the flushed WAL and the compacted-away table back, as a crash would leave them.
        for (n, b) in wal_before_flush.iter().chain(before_compaction.iter().filter(|(n, _)| n.ends_with(".sst"))) {
            put_back(&*fs, n, b);
        }
        if !manifest_readable {
            for name in files(&*fs).iter().filter(|n| n.starts_with("MANIFEST-")) {
                fs.remove(&format!("db/{name}")).unwrap();
            }
        }
        let report = repair(fs.clone(), "db", &options()).unwrap();
        let db = Db::open(fs.clone(), "db", options()).unwrap();
        let got = read_all(&db);
        assert_eq!(
            got.get(&b"ctr"[..]).map(|v| u64::from_le_bytes(v[..8].try_into().unwrap())),
            Some(50),
            "manifest readable: {manifest_readable}: merges applied twice ({report:?})"
        );
        if manifest_readable {
            assert!(!got.keys().any(|k| k.starts_with(b"gone")), "a compacted-away table came back: {report:?}");
            assert!(report.problems.iter().any(|p| p.contains("not named by the manifest")), "{report:?}");
        } else {
            // Without a manifest the left-behind table cannot be told apart:
            // its versions may come back, and the report says so.
            assert!(report.wal_records_flushed > 0, "{report:?}");
            assert!(report.problems.iter().any(|p| p.contains("no readable manifest")), "{report:?}");
        }
    }
}

#[test]
fn a_transactions_own_files_left_by_a_crash_stay_out_of_a_repair() {
    // A transaction spills into files of its own, then the database closes
    // under it (they stay, for the next open to delete) and the manifest is
    // lost: repair must leave them out, keep every other write (the WAL's
    // too: its numbers stay below the own files'), and writes go on.
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let (state, _) = build(fs.clone());
    {
        let db = Db::open(fs.clone(), "db", Options { transaction_spill_bytes: 1 << 10, ..options() }).unwrap();
        let mut t = db.begin_optimistic();
        for i in 0..200u32 {
            t.put(format!("key{i:05}").as_bytes(), b"uncommitted").unwrap();
        }
        assert!(t.spilled());
        db.close().unwrap();
    }
    for name in files(&*fs).iter().filter(|n| n.starts_with("MANIFEST-")) {
        fs.remove(&format!("db/{name}")).unwrap();
    }
    let report = repair(fs.clone(), "db", &options()).unwrap();
    let left_out = report.problems.iter().filter(|p| p.contains("uncommitted transaction")).count();
    assert!(left_out >= 2, "{report:?}");
    let db = Db::open(fs, "db", options()).unwrap();
    assert_eq!(read_all(&db), state);
    let seq = db.latest_sequence();
    assert!(seq < 1 << 40, "sequence {seq}");
    db.put(&WriteOptions::default(), b"key00001", b"after repair").unwrap();
    assert_eq!(db.get(&ReadOptions::default(), b"key00001").unwrap().as_deref(), Some(&b"after repair"[..]));
}

#[test]
fn synced_writes_still_only_in_the_wal_survive_a_repair_after_an_ingest_or_a_spilled_commit() {
    // An ingest and a spilled transaction's commit add tables numbered above
    // writes that are still only in the WAL (they flush only the memtables
    // their keys overlap). Repair must keep those writes, with the manifest
    // and without it.
    for spilled in [false, true] {
        for manifest_readable in [true, false] {
            let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
            let db = Db::open(fs.clone(), "db", Options { transaction_spill_bytes: 1 << 10, ..options() }).unwrap();
            let sync = WriteOptions { sync: true };
            db.put(&sync, b"a", b"synced").unwrap();
            db.merge(&sync, b"ctr", &7u64.to_le_bytes()).unwrap();
            if spilled {
                let mut t = db.begin_optimistic();
                for i in 0..200u32 {
                    t.put(format!("z{i:05}").as_bytes(), b"committed").unwrap();
                }
                assert!(t.spilled());
                t.commit(&db, &sync).unwrap();
            } else {
                let mut b = WriteBatch::new();
                b.put(b"z", b"ingested");
                db.ingest(&b, &silt_engine::IngestOptions::default()).unwrap();
            }
            db.close().unwrap();
            drop(db);
            if !manifest_readable {
                for name in files(&*fs).iter().filter(|n| n.starts_with("MANIFEST-")) {
                    fs.remove(&format!("db/{name}")).unwrap();
                }
            }
            let report = repair(fs.clone(), "db", &options()).unwrap();
            let what = format!("spilled {spilled}, manifest readable {manifest_readable}: {report:?}");
            assert_eq!(report.wal_records_flushed, 0, "{what}");
            let db = Db::open(fs.clone(), "db", options()).unwrap();
            let r = ReadOptions::default();
            assert_eq!(db.get(&r, b"a").unwrap().as_deref(), Some(&b"synced"[..]), "{what}");
            assert_eq!(db.get(&r, b"ctr").unwrap(), Some(7u64.to_le_bytes().to_vec()), "{what}");
            let z = if spilled { &b"z00007"[..] } else { &b"z"[..] };
            assert!(db.get(&r, z).unwrap().is_some(), "{what}");
        }
    }
}

/// LevelDB's masked CRC32C (bitwise: a test needs no speed).
fn masked_crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0x82f6_3b78 } else { crc >> 1 };
        }
    }
    let crc = !crc;
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

#[test]
fn a_table_of_a_newer_format_stops_repair_before_it_deletes_anything() {
    // What an older build meets after a newer one wrote tables it cannot
    // read (format version past its own, the footer's checksum right): not
    // damage to repair away, but NotSupported, every file left as it was.
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    build(fs.clone());
    let table = files(&*fs).into_iter().find(|n| n.ends_with(".sst")).unwrap();
    let path = format!("db/{table}");
    let mut bytes = silt_engine::fs::read_all(&*fs.open(&path, false).unwrap(), &path).unwrap();
    let footer = bytes.len() - 48;
    bytes[footer + 32..footer + 36].copy_from_slice(&99u32.to_le_bytes());
    let crc = masked_crc32c(&bytes[footer..footer + 36]);
    bytes[footer + 36..footer + 40].copy_from_slice(&crc.to_le_bytes());
    put_back(&*fs, &table, &bytes);
    let before = snapshot_files(&*fs);
    let e = repair(fs.clone(), "db", &options()).unwrap_err();
    assert!(matches!(e, silt_engine::Error::NotSupported(_)) && e.to_string().contains("newer version"), "{e}");
    assert_eq!(snapshot_files(&*fs), before, "repair changed files before refusing");
    // Reads of the table say the same.
    let db = Db::open(fs.clone(), "db", options()).unwrap();
    let e = db.verify().unwrap_err();
    assert!(matches!(e, silt_engine::Error::NotSupported(_)), "{e}");
}
