//! Failures the engine outlives: outputs that cannot be created, a full
//! disk, manifest rollover and its failed sync, stalls with no room.

use super::*;

#[test]
fn a_failed_output_create_is_retried_not_fatal() {
    let fault = crate::fs::FaultFs::new(Arc::new(MemFs::new()));
    let options = Options { write_buffer_size: 64 << 10, max_write_buffer_number: 3, ..Options::default() };
    let db = Db::open(Arc::new(fault.clone()), "db", options).unwrap();
    for i in 0..1500u32 {
        db.put(&W, format!("key{i:06}").as_bytes(), &[7; 64]).unwrap();
    }
    assert!(db.properties().immutable_memtables >= 1);
    fault.fail_creates(true);
    // The flush cannot create its table: the step fails, nothing is lost,
    // and the database keeps taking writes and reads.
    for _ in 0..2 {
        let f = db.do_background_work(8).unwrap_err();
        assert!(matches!(f.error, Error::QuotaExceeded { .. }), "{f:?}");
        assert_eq!(f.recovery, Recovery::FailAlone);
    }
    db.put(&W, b"during", b"the outage").unwrap();
    assert_eq!(db.get(&r(), b"key000010").unwrap(), Some(vec![7; 64]));
    fault.fail_creates(false);
    while db.do_background_work(8).unwrap().work_left {}
    db.put(&W, b"after", b"recovery").unwrap();
    db.flush().unwrap();
    for i in (0..1500u32).step_by(50) {
        assert_eq!(db.get(&r(), format!("key{i:06}").as_bytes()).unwrap(), Some(vec![7; 64]), "key {i}");
    }
    assert_eq!(db.get(&r(), b"during").unwrap().as_deref(), Some(&b"the outage"[..]));
    assert!(db.properties().files_per_level.iter().sum::<u64>() >= 1);
}

#[test]
fn a_compaction_that_cannot_create_its_output_is_retried() {
    let fault = crate::fs::FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(Arc::new(fault.clone()), "db", small_options()).unwrap();
    for i in 0..3000u32 {
        db.put(&W, format!("key{i:06}").as_bytes(), &[3; 64]).unwrap();
    }
    db.flush().unwrap();
    fault.fail_creates(true);
    assert!(db.compact_range(None, None).is_err());
    fault.fail_creates(false);
    db.compact_range(None, None).unwrap();
    let p = db.properties();
    assert_eq!(p.files_per_level[..6].iter().sum::<u64>(), 0, "{p:?}");
    assert_eq!(db.get(&r(), b"key002999").unwrap(), Some(vec![3; 64]));
}

#[test]
fn start_compact_range_runs_in_budgeted_steps() {
    let fs = MemFs::new();
    let db = open(&fs);
    for i in 0..6000u32 {
        db.put(&W, format!("key{i:06}").as_bytes(), &[(i % 251) as u8; 100]).unwrap();
    }
    while db.do_background_work(64).unwrap().work_left {}
    db.delete_range(&W, b"key001000", b"key005000").unwrap();
    db.start_compact_range(None, None).unwrap();
    assert!(db.manual_compaction_pending());
    let mut steps = 0;
    while db.do_background_work(2).unwrap().work_left {
        steps += 1;
        // Reads are served between steps.
        assert_eq!(db.get(&r(), b"key000007").unwrap(), Some(vec![7; 100]));
        assert_eq!(db.get(&r(), b"key002000").unwrap(), None);
    }
    assert!(steps >= 5, "only {steps} steps: not budgeted");
    assert!(!db.manual_compaction_pending());
    let p = db.properties();
    assert_eq!(p.files_per_level[..6].iter().sum::<u64>(), 0, "everything in the last level: {p:?}");
    assert_eq!(db.table_file_count() as u64, p.files_per_level[6]);
    let s = db.statistics();
    assert!(s.ticker("rocksdb.compaction.key.drop.range_del") >= 4000, "{s}");
    assert_eq!(count_entries(&db), 2000);
}

#[test]
fn an_iterator_that_outlives_close_fails_cleanly() {
    let fs = MemFs::new();
    let db = open(&fs);
    db.put(&W, b"a", b"1").unwrap();
    db.put(&W, b"b", b"2").unwrap();
    let mut it = db.iter(&r()).unwrap();
    it.seek_to_first();
    assert_eq!(it.key(), b"a");
    db.close().unwrap();
    it.next();
    assert!(!it.valid());
    assert!(matches!(it.status(), Err(Error::Closed(_))));
    it.seek_to_first();
    assert!(!it.valid());
    assert_eq!(it.status().unwrap_err().code(), "Closed");
}

#[test]
fn running_out_of_space_fails_the_write_or_the_step_alone_and_never_stops_the_database() {
    let fault = crate::fs::FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(Arc::new(fault.clone()), "db", small_options()).unwrap();
    fault.set_quota(Some(400 << 10));
    let mut acked = 0u32;
    let mut step_quota = 0;
    for i in 0..50_000u32 {
        match db.put(&W, format!("key{i:06}").as_bytes(), &[(i % 251) as u8; 100]) {
            Ok(()) => acked = i + 1,
            Err(Error::QuotaExceeded { .. }) => break,
            Err(e) => panic!("put {i}: {e:?}"),
        }
        match db.do_background_work(usize::MAX) {
            Ok(_) => {}
            Err(Failure { error: Error::QuotaExceeded { .. }, recovery: Recovery::FailAlone }) => step_quota += 1,
            Err(f) => panic!("background work: {f:?}"),
        }
    }
    assert!(step_quota > 0 && acked > 0, "flushes and compactions never ran out of space");
    for i in (0..acked).step_by(11) {
        assert_eq!(db.get(&r(), format!("key{i:06}").as_bytes()).unwrap(), Some(vec![(i % 251) as u8; 100]));
    }
    // Space comes back: the dropped work is redone and writes go on.
    fault.set_quota(None);
    while db.do_background_work(8).unwrap().work_left {}
    db.put(&W, b"after", b"more space").unwrap();
    db.flush().unwrap();
    db.verify().unwrap();
    let last = acked - 1;
    assert_eq!(db.get(&r(), format!("key{last:06}").as_bytes()).unwrap(), Some(vec![(last % 251) as u8; 100]));
    assert_eq!(count_entries(&db), acked as usize + 1);
}

#[test]
fn a_write_cut_short_by_a_full_disk_leaves_the_wal_whole_for_later_writes() {
    // FaultFs writes what fits under the quota before failing, as a full disk
    // does; the WAL must cut that partial record off, or the writes after it
    // would follow garbage and the next open would refuse the log.
    let fault = crate::fs::FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(Arc::new(fault.clone()), "db", small_options()).unwrap();
    db.put(&W, b"before", b"1").unwrap();
    // A quota a few bytes above what is used: the next put's record does not fit.
    let total = {
        let mut t = 0;
        for n in fault.list("db").unwrap() {
            t += fault.open(&format!("db/{n}"), false).unwrap().len().unwrap();
        }
        t
    };
    fault.set_quota(Some(total + 10));
    match db.put(&W, b"too big", &[7u8; 1000]) {
        Err(Error::QuotaExceeded { .. }) => {}
        other => panic!("want QuotaExceeded, got {other:?}"),
    }
    fault.set_quota(None);
    db.put(&WriteOptions { sync: true }, b"after", b"2").unwrap();
    fault.crash(crate::fs::CrashMode::DropUnsynced).unwrap();
    drop(db);
    let db = Db::open(Arc::new(fault.clone()), "db", small_options()).unwrap();
    assert_eq!(db.get(&r(), b"before").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(&r(), b"after").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(&r(), b"too big").unwrap(), None);
}

#[test]
fn a_batch_of_deletes_goes_through_a_stall_that_has_no_room_to_do_its_work() {
    let fault = crate::fs::FaultFs::new(Arc::new(MemFs::new()));
    let options = Options {
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 4,
        max_write_buffer_number: 2,
        ..small_options()
    };
    let db = Db::open(Arc::new(fault.clone()), "db", options).unwrap();
    // L0 at the stop trigger: nobody pumped background work. Every file
    // holds "key9" too, so they overlap and only a merge (which needs
    // space) can bring L0 down.
    for f in 0..4u32 {
        for i in 0..100u32 {
            db.put(&W, format!("key{f}{i:05}").as_bytes(), &[1; 100]).unwrap();
        }
        db.put(&W, b"key9", &[f as u8]).unwrap();
        db.flush().unwrap();
    }
    assert_eq!(db.properties().files_per_level[0], 4);
    // No space for the compaction the stall must run: a put fails...
    fault.set_quota(Some(0));
    assert!(matches!(db.put(&W, b"more", b"data"), Err(Error::QuotaExceeded { .. })));
    fault.set_quota(None);
    let used: u64 =
        fault.list("db").unwrap().iter().map(|n| fault.open(&format!("db/{n}"), false).unwrap().len().unwrap()).sum();
    fault.set_quota(Some(used + 256));
    // ...but deletes, which free space, go through, and the data is gone.
    db.delete_range(&W, b"key0", b"key3").unwrap();
    db.delete(&W, b"key300000").unwrap();
    assert_eq!(db.get(&r(), b"key100007").unwrap(), None);
    assert_eq!(db.get(&r(), b"key300000").unwrap(), None);
    assert_eq!(db.get(&r(), b"key300001").unwrap(), Some(vec![1; 100]));
    assert!(matches!(db.put(&W, b"more", b"data"), Err(Error::QuotaExceeded { .. })));
    // A batch of deletes with a small bookkeeping put (siltdb's write
    // record) frees space too; with an ordinary put, or a bookkeeping put
    // past BOOKKEEPING_MAX, it does not.
    let mut b = WriteBatch::new();
    b.delete(b"key300001").put_bookkeeping(b"record", b"42");
    db.write(&W, b).unwrap();
    assert_eq!(db.get(&r(), b"key300001").unwrap(), None);
    assert_eq!(db.get(&r(), b"record").unwrap().as_deref(), Some(&b"42"[..]));
    let mut b = WriteBatch::new();
    b.delete(b"key300002").put(b"record", b"43");
    assert!(matches!(db.write(&W, b), Err(Error::QuotaExceeded { .. })));
    let mut b = WriteBatch::new();
    b.delete(b"key300002").put_bookkeeping(b"record", &[0; crate::BOOKKEEPING_MAX]);
    assert!(matches!(db.write(&W, b), Err(Error::QuotaExceeded { .. })));
    assert_eq!(db.get(&r(), b"key300002").unwrap(), Some(vec![1; 100]));
}

#[test]
fn the_manifest_rolls_over_at_its_size_limit_and_nothing_is_lost() {
    let fs = MemFs::new();
    let opts = Options { max_manifest_file_size: 4 << 10, ..small_options() };
    let db = Db::open(Arc::new(fs.clone()), "db", opts.clone()).unwrap();
    let manifests = |fs: &MemFs| -> Vec<(String, u64)> {
        let mut v: Vec<_> = fs
            .list("db")
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with("MANIFEST-"))
            .map(|n| {
                let len = fs.open(&format!("db/{n}"), false).unwrap().len().unwrap();
                (n, len)
            })
            .collect();
        v.sort();
        v
    };
    let first = manifests(&fs);
    for i in 0..400u32 {
        db.put(&W, format!("key{:05}", i * 37 % 400).as_bytes(), &[i as u8; 300]).unwrap();
        if i % 5 == 4 {
            db.flush().unwrap();
            while db.do_background_work(64).unwrap().work_left {}
            let now = manifests(&fs);
            assert_eq!(now.len(), 1, "old manifests left behind: {now:?}");
            assert!(now[0].1 < (4 << 10) + 1024, "manifest past its limit: {now:?}");
        }
    }
    assert_ne!(manifests(&fs)[0].0, first[0].0, "80 flushes never rolled the manifest over");
    drop(db);
    let db = Db::open(Arc::new(fs.clone()), "db", opts).unwrap();
    assert_eq!(count_entries(&db), 400);
    db.verify().unwrap();
}

#[test]
fn a_manifest_sync_that_fails_for_lack_of_space_keeps_the_files_its_edit_names() {
    // The edit is in the manifest when its sync fails: the files it names
    // must not be deleted as if nothing had been recorded.
    let fault = crate::fs::FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(Arc::new(fault.clone()), "db", small_options()).unwrap();
    for i in 0..3000u32 {
        db.put(&W, format!("key{i:05}").as_bytes(), &[(i % 251) as u8; 100]).unwrap();
    }
    fault.fail_syncs(Some("MANIFEST"));
    let e = db.flush().unwrap_err();
    assert_ne!(e.code(), "QuotaExceeded", "a failed manifest sync was reported as retryable: {e}");
    // The database refuses writes (its manifest's tail is uncertain) but reads go on.
    assert!(db.put(&W, b"more", b"x").is_err());
    assert_eq!(db.get(&r(), b"key00007").unwrap(), Some(vec![7; 100]));
    drop(db);
    fault.fail_syncs(None);
    fault.crash(crate::fs::CrashMode::TearUnsynced { seed: 3 }).unwrap();
    let db = Db::open(Arc::new(fault.clone()), "db", small_options()).unwrap();
    db.verify().unwrap();
    assert_eq!(db.get(&r(), b"key00007").unwrap(), Some(vec![7; 100]));
}

#[test]
fn deletes_only_batches_do_not_redo_work_that_cannot_fit_and_stop_at_twice_the_memtable() {
    let fault = crate::fs::FaultFs::new(Arc::new(MemFs::new()));
    let opts = Options { max_write_buffer_number: 2, ..small_options() };
    let db = Db::open(Arc::new(fault.clone()), "db", opts.clone()).unwrap();
    for i in 0..4000u32 {
        db.put(&W, format!("key{i:05}").as_bytes(), &[1u8; 100]).unwrap();
    }
    // No room for anything new: flushes fail, puts fail, deletes get through.
    fault.fail_creates(true);
    let mut deleted = 0u32;
    let mut refused = None;
    for i in 0..40_000u32 {
        match db.delete(&W, format!("key{:05}", i % 4000).as_bytes()) {
            Ok(()) => deleted += 1,
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let e = refused.expect("deletes were taken past twice the memtable size");
    assert_eq!(e.code(), "QuotaExceeded", "{e}");
    assert!(deleted > 100, "only {deleted} deletes got through");
    assert!(db.properties().all_memtable_bytes <= 4 * opts.write_buffer_size as u64 + (64 << 10));
    // Room again: everything is flushed and writes go on.
    fault.fail_creates(false);
    while db.do_background_work(64).unwrap().work_left {}
    db.put(&W, b"after", b"room").unwrap();
    db.verify().unwrap();
}

#[test]
fn a_pinned_get_is_counted_as_a_get_not_a_multiget() {
    let fs = MemFs::new();
    let db = open(&fs);
    db.put(&W, b"k", b"value").unwrap();
    let before = db.statistics();
    let v = db.get_pinned(&r(), b"k").unwrap().unwrap();
    assert_eq!(&*v, b"value");
    assert!(db.properties().pinned_bytes > 0);
    assert!(db.get_pinned(&r(), b"absent").unwrap().is_none());
    let after = db.statistics();
    let delta = |name: &str| after.ticker(name) - before.ticker(name);
    assert_eq!(delta("rocksdb.number.keys.read"), 2);
    assert_eq!(delta("rocksdb.memtable.hit"), 1);
    assert_eq!(delta("rocksdb.number.multiget.get"), 0);
    drop(v);
    assert_eq!(db.properties().pinned_bytes, 0);
}

#[test]
fn tables_of_format_version_1_read_the_same_and_compact_into_version_2() {
    // A database written in table format 1 (CRC32C, no data-block hash
    // indexes, as builds before format 2 wrote), opened by one that writes 2.
    let fs = MemFs::new();
    let v1 = Options { format_version: 1, ..small_options() };
    let key = |i: u32| format!("key{:06}", i * 7 % 3000).into_bytes();
    let value = |i: u32| format!("value {i}").repeat(1 + i as usize % 5).into_bytes();
    {
        let db = Db::open(Arc::new(fs.clone()), "db", v1).unwrap();
        for i in 0..3000 {
            db.put(&W, &key(i), &value(i)).unwrap();
        }
        db.delete(&W, &key(5)).unwrap();
        db.flush().unwrap();
        while db.do_background_work(64).unwrap().work_left {}
        db.close().unwrap();
    }
    let versions = |fs: &MemFs| -> Vec<u32> {
        let mut v: Vec<u32> = fs
            .list("db")
            .unwrap()
            .iter()
            .filter(|n| n.ends_with(".sst"))
            .map(|n| {
                let path = format!("db/{n}");
                let raw = crate::fs::read_all(&*fs.open(&path, false).unwrap(), &path).unwrap();
                let at = raw.len() - crate::sst::format::FOOTER_LEN;
                crate::sst::format::Footer::decode(&raw[at..], &path, at as u64).unwrap().format_version
            })
            .collect();
        v.dedup();
        v
    };
    assert_eq!(versions(&fs), [1]);
    let check = |db: &Db| {
        for i in 0..3000 {
            let want = (i != 5).then(|| value(i));
            assert_eq!(db.get(&r(), &key(i)).unwrap(), want, "key {i}");
        }
        assert_eq!(count_entries(db), 2999);
    };
    let db = open(&fs);
    check(&db);
    db.compact_range(None, None).unwrap();
    assert_eq!(versions(&fs), [2]);
    check(&db);
}
