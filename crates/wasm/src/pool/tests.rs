//! The pool on in-memory pooled files: the engine's fs contract, headers
//! across a reopen and a crash, removal while open, exhaustion, quota.

use std::sync::Arc;

use silt_engine::fs::{contract, read_all, Fs};
use silt_engine::{Db, Error, Options, ReadOptions, Recovery, WriteOptions};

use super::*;

type TestPool = Pool<Arc<MemSlot>>;

/// A pool of `n` empty files, and a second handle on each.
fn pool_of(n: usize) -> (TestPool, Vec<Arc<MemSlot>>) {
    let slots: Vec<_> = (0..n).map(|_| Arc::new(MemSlot::default())).collect();
    let pool = Pool::new();
    for (i, s) in slots.iter().enumerate() {
        pool.add(s.clone(), &format!("{i:04}.silt")).unwrap();
    }
    (pool, slots)
}

/// A new pool on what a crash would leave of `slots` (flushed bytes only).
fn after_crash(slots: &[Arc<MemSlot>]) -> (TestPool, Vec<Arc<MemSlot>>) {
    let copies: Vec<_> = slots.iter().map(|s| Arc::new(MemSlot::with_bytes(s.durable_bytes()))).collect();
    let pool = Pool::new();
    for (i, s) in copies.iter().enumerate() {
        pool.add(s.clone(), &format!("{i:04}.silt")).unwrap();
    }
    (pool, copies)
}

fn write_file(fs: &dyn Fs, path: &str, data: &[u8]) {
    let f = fs.open(path, true).unwrap();
    f.append(data).unwrap();
    f.sync().unwrap();
}

fn read_file(fs: &dyn Fs, path: &str) -> Vec<u8> {
    let f = fs.open(path, false).unwrap();
    read_all(&*f, path).unwrap()
}

#[test]
fn the_pool_keeps_the_engine_fs_contract() {
    let (pool, _) = pool_of(64);
    let failures = contract::run_all(&pool, "contract");
    assert!(failures.is_empty(), "contract failures: {failures:#?}");
}

#[test]
fn logical_files_come_back_from_their_headers_after_a_crash() {
    let (pool, slots) = pool_of(4);
    pool.create_dir_all("db").unwrap();
    write_file(&pool, "db/000001.log", b"synced bytes");
    let f = pool.open("db/000002.log", true).unwrap();
    f.append(b"never synced").unwrap();
    drop(f);

    let (again, _) = after_crash(&slots);
    let mut names = again.list("db").unwrap();
    names.sort();
    // The create was durable (the header is flushed at once); the data of
    // the second file was never synced.
    assert_eq!(names, ["000001.log", "000002.log"]);
    assert_eq!(read_file(&again, "db/000001.log"), b"synced bytes");
    assert_eq!(read_file(&again, "db/000002.log"), b"");
    assert_eq!(again.free_count(), 2);
}

#[test]
fn data_starts_after_the_header_at_4096() {
    let (pool, slots) = pool_of(1);
    write_file(&pool, "d/f", b"abc");
    let raw = slots[0].live_bytes();
    assert_eq!(raw.len(), 4096 + 3);
    assert_eq!(&raw[4096..], b"abc");
    assert_eq!(Header::decode(&raw[..4096]), Some(Header { path: Some("d/f".into()), generation: 1 }));
}

#[test]
fn a_removed_file_stays_readable_while_open_and_its_file_is_reused_only_after() {
    let (pool, slots) = pool_of(1);
    write_file(&pool, "d/old", b"still here");
    let open = pool.open("d/old", false).unwrap();
    pool.remove("d/old").unwrap();
    assert!(!pool.exists("d/old").unwrap());
    assert_eq!(read_all(&*open, "d/old").unwrap(), b"still here");
    // The only pooled file is still open: nothing is free.
    assert_eq!(pool.free_count(), 0);
    assert!(pool.open("d/new", true).is_err());
    drop(open);
    assert_eq!(pool.free_count(), 1);
    // Its space went back once the last handle was dropped.
    assert_eq!(slots[0].live_bytes().len(), 4096);
    write_file(&pool, "d/new", b"fresh");
    assert_eq!(read_file(&pool, "d/new"), b"fresh");
}

#[test]
fn paths_are_the_logical_files_named_now_sorted() {
    let (pool, _) = pool_of(4);
    write_file(&pool, "db/000009.sst", b"t");
    write_file(&pool, "db/000002.log", b"l");
    write_file(&pool, "other/x", b"x");
    assert_eq!(pool.paths(), ["db/000002.log", "db/000009.sst", "other/x"]);
    pool.remove("db/000009.sst").unwrap();
    assert_eq!(pool.paths(), ["db/000002.log", "other/x"]);
}

#[test]
fn a_remove_is_durable_at_once() {
    let (pool, slots) = pool_of(2);
    write_file(&pool, "d/a", b"1");
    write_file(&pool, "d/b", b"2");
    pool.remove("d/a").unwrap();
    let (again, _) = after_crash(&slots);
    assert_eq!(again.list("d").unwrap(), ["b"]);
    assert_eq!(again.free_count(), 1);
}

#[test]
fn an_exhausted_pool_fails_the_create_at_once_and_works_again_when_topped_up() {
    let (pool, _) = pool_of(2);
    write_file(&pool, "d/1", b"a");
    write_file(&pool, "d/2", b"b");
    assert_eq!(pool.exhausted_count(), 0);
    let err = pool.open("d/3", true).err().expect("create in a full pool");
    match &err {
        Error::PoolExhausted { file, message } => {
            assert_eq!(file, "d/3");
            assert!(message.contains("pool is exhausted"), "{message}")
        }
        other => panic!("want PoolExhausted, got {other:?}"),
    }
    assert_eq!(pool.exhausted_count(), 1);
    assert!(!pool.exists("d/3").unwrap());
    // Opening what exists needs no free file.
    assert_eq!(read_file(&pool, "d/1"), b"a");

    pool.add(Arc::new(MemSlot::default()), "0002.silt").unwrap();
    write_file(&pool, "d/3", b"c");
    assert_eq!(read_file(&pool, "d/3"), b"c");
    assert_eq!(pool.stats().files, 3);
}

#[test]
fn a_damaged_header_makes_a_free_file() {
    let (pool, slots) = pool_of(2);
    write_file(&pool, "d/a", b"1");
    write_file(&pool, "d/b", b"2");
    let mut bytes = slots[0].durable_bytes();
    bytes[30] ^= 1; // inside the path of d/a
    let damaged = Arc::new(MemSlot::with_bytes(bytes));
    let again: TestPool = Pool::new();
    again.add(damaged, "0000.silt").unwrap();
    again.add(Arc::new(MemSlot::with_bytes(slots[1].durable_bytes())), "0001.silt").unwrap();
    assert_eq!(again.list("d").unwrap(), ["b"]);
    assert_eq!(again.free_count(), 1);
}

#[test]
fn of_two_headers_naming_one_path_the_later_generation_wins() {
    let older = Header { path: Some("d/x".into()), generation: 5 };
    let newer = Header { path: Some("d/x".into()), generation: 9 };
    let file_with = |h: &Header, body: &[u8]| {
        let mut bytes = h.encode().to_vec();
        bytes.resize(HEADER_SIZE as usize, 0);
        bytes.extend_from_slice(body);
        Arc::new(MemSlot::with_bytes(bytes))
    };
    for order in [[0, 1], [1, 0]] {
        let files = [file_with(&older, b"old"), file_with(&newer, b"new")];
        let pool: TestPool = Pool::new();
        for i in order {
            pool.add(files[i].clone(), &format!("{i}")).unwrap();
        }
        assert_eq!(read_file(&pool, "d/x"), b"new");
        assert_eq!(pool.free_count(), 1);
        // New headers are written after every generation seen.
        write_file(&pool, "d/y", b"y");
        let gen_y = (0..2)
            .filter_map(|i| Header::decode(&files[i].live_bytes()))
            .find(|h| h.path.as_deref() == Some("d/y"))
            .map(|h| h.generation);
        assert_eq!(gen_y, Some(10));
    }
}

#[test]
fn the_file_that_loses_a_path_is_freed_on_storage_too() {
    let older = Header { path: Some("d/x".into()), generation: 5 };
    let newer = Header { path: Some("d/x".into()), generation: 9 };
    let file_with = |h: &Header, body: &[u8]| {
        let mut bytes = h.encode().to_vec();
        bytes.resize(HEADER_SIZE as usize, 0);
        bytes.extend_from_slice(body);
        Arc::new(MemSlot::with_bytes(bytes))
    };
    let path_of = |slot: &Arc<MemSlot>| Header::decode(&slot.durable_bytes()).and_then(|h| h.path);
    for order in [[0, 1], [1, 0]] {
        let files = [file_with(&older, b"old"), file_with(&newer, b"new")];
        let pool: TestPool = Pool::new();
        for i in order {
            pool.add(files[i].clone(), &format!("{i}")).unwrap();
        }
        // Durably free, its space given back; the newer file still names the path.
        assert_eq!(path_of(&files[0]), None);
        assert_eq!(files[0].live_bytes().len() as u64, HEADER_SIZE);
        assert_eq!(path_of(&files[1]).as_deref(), Some("d/x"));
        assert_eq!(pool.free_count(), 1);
        // Removed, the path does not come back from the older file after a crash.
        pool.remove("d/x").unwrap();
        let (again, _) = after_crash(&files);
        assert!(!again.exists("d/x").unwrap());
        assert_eq!(again.free_count(), 2);
    }
}

#[test]
fn a_full_quota_is_quota_exceeded() {
    let (pool, slots) = pool_of(1);
    let f = pool.open("d/f", true).unwrap();
    slots[0].fail_writes_after(0);
    match f.append(b"x") {
        Err(Error::QuotaExceeded { file, .. }) => assert_eq!(file, "d/f"),
        other => panic!("want QuotaExceeded, got {other:?}"),
    }
}

#[test]
fn close_closes_every_pooled_file_and_later_calls_fail() {
    let (pool, slots) = pool_of(2);
    let f = pool.open("d/f", true).unwrap();
    pool.close();
    assert!(slots.iter().all(|s| s.is_closed()));
    assert!(matches!(f.append(b"x"), Err(Error::Closed(_))));
    assert!(matches!(pool.open("d/g", true), Err(Error::Closed(_))));
    drop(f); // dropping after close is fine
}

#[test]
fn an_oversize_path_is_refused() {
    let (pool, _) = pool_of(1);
    let long = format!("d/{}", "n".repeat(MAX_PATH_LEN));
    assert!(matches!(pool.open(&long, true), Err(Error::InvalidArgument(_))));
    assert_eq!(pool.free_count(), 1);
}

fn stall_options() -> Options {
    Options {
        write_buffer_size: 256 << 10,
        max_write_buffer_number: 2,
        target_file_size_base: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 4,
        compression: silt_engine::Compression::None,
        ..Options::default()
    }
}

fn stall_value(i: u32) -> Vec<u8> {
    (0..200u32).map(|j| (i.wrapping_mul(2_654_435_761) >> (j % 24)) as u8).collect()
}

/// What siltdb does between calls: top the pool up to `free` free files.
fn top_up(pool: &TestPool, free: usize) {
    while pool.free_count() < free {
        let n = PoolControl::stats(pool).files;
        pool.add(Arc::new(MemSlot::default()), &format!("{n:04}.silt")).unwrap();
    }
}

/// A writer that stalls on a full L0 compacts it itself, in one go: that
/// compaction may need more files than the pool has free. The write does
/// not fail for it: the work stays queued as it is and the writes wait in
/// the memtable (in its WAL, durable as any other), up to 8 times its size;
/// only past that is a write refused with PoolExhausted, writing nothing.
/// Once the pool is topped up, the queued work finishes.
#[test]
fn writes_that_find_no_pooled_file_wait_in_memory_then_are_refused_writing_nothing() {
    let (pool, slots) = pool_of(12);
    let db = Db::open(Arc::new(pool.clone()), "db", stall_options()).unwrap();
    let waiting = |db: &Db| db.statistics().ticker("silt.write.waiting.for.files");
    let mut written = 0u32;
    let mut first_wait = None;
    let mut refused = None;
    for i in 0..40_000u32 {
        let sync = WriteOptions { sync: i % 1000 == 999 };
        match db.put(&sync, format!("key{i:06}").as_bytes(), &stall_value(i)) {
            Ok(()) => written = i + 1,
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
        if first_wait.is_none() && waiting(&db) > 0 {
            first_wait = Some(i);
        }
    }
    let first_wait = first_wait.expect("a burst with no background work runs the pool out");
    let err = refused.expect("the memtable holds at most 8 times its size");
    match &err {
        Error::PoolExhausted { message, .. } => assert!(message.contains("wait in memory"), "{message}"),
        other => panic!("want PoolExhausted, got {other:?}"),
    }
    assert!(pool.exhausted_count() > 0);
    // From the first write that waited to the refusal: the memtable grew
    // from its size to 8 times it (each entry ~220 bytes in memory).
    let waited = written - first_wait;
    assert!(waited > 6 * (256 << 10) / 250, "only {waited} writes waited in memory");
    assert_eq!(
        db.get(&ReadOptions::default(), format!("key{written:06}").as_bytes()).unwrap(),
        None,
        "the refused write wrote nothing"
    );
    // The writes that waited are in the WAL: a synced one and all before it
    // survive a crash.
    let (crashed, _) = after_crash(&slots);
    {
        let again = Db::open(Arc::new(crashed), "db", stall_options()).unwrap();
        let synced = written / 1000 * 1000;
        for i in (0..synced).step_by(37).chain(synced.saturating_sub(1)..synced) {
            let got = again.get(&ReadOptions::default(), format!("key{i:06}").as_bytes()).unwrap();
            assert_eq!(got, Some(stall_value(i)), "key{i:06} after a crash");
        }
    }
    // What siltdb does between calls: top the pool up, run background work.
    loop {
        top_up(&pool, 8);
        if !db.do_background_work(64).map_err(|f| f.error).unwrap().work_left {
            break;
        }
    }
    db.put(&WriteOptions::default(), b"after", b"x").unwrap();
    for i in 0..written {
        let got = db.get(&ReadOptions::default(), format!("key{i:06}").as_bytes()).unwrap();
        assert_eq!(got, Some(stall_value(i)), "key{i:06}");
    }
    db.verify().unwrap();
}

/// Through the binding, writes pay for their background work as they go: a
/// bulk load that never yields (siltdb never gets to top the pool up or pump
/// background work) keeps L0 below its stop trigger, so no write stalls to
/// compact all of L0 at once (a write may still flush a memtable), and none
/// waits for a pooled file. The same load straight into the engine (nothing
/// pumped) stalls on a full L0.
#[test]
fn a_bulk_load_through_the_binding_that_never_yields_never_stalls_nor_waits_for_files() {
    use std::rc::Rc;

    use crate::database::Database;

    let options = Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 1 << 20,
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 8,
        ..stall_options()
    };
    // 4.3 MB in random order: 65 memtables; 5 target-size tables at the
    // end, which the last compactions rewrite whole (while they are being
    // rewritten, both old and new take pooled files).
    let n = 20_000u32;
    let key = |i: u32| format!("key{:08x}", i.wrapping_mul(2_654_435_761));
    let (pool, _slots) = pool_of(24);
    let db = Database::open_with(Arc::new(pool.clone()), "db", options.clone(), Some(Rc::new(pool.clone()))).unwrap();
    let mut most_l0 = 0;
    for i in 0..n {
        if let Err(e) = db.put_inner(key(i).as_bytes(), &stall_value(i), false) {
            panic!("write {i}: {} {}", e.code, e.message);
        }
        if i % 100 == 0 {
            let l0 = db.engine(0, |e| Ok::<_, Error>(e.properties().files_per_level[0])).unwrap();
            most_l0 = most_l0.max(l0);
        }
    }
    let stats = db.engine(0, |e| Ok::<_, Error>(e.statistics())).unwrap();
    assert_eq!(stats.ticker("silt.write.waiting.for.files"), 0, "{stats}");
    assert_eq!(pool.exhausted_count(), 0);
    assert!(most_l0 < 8, "L0 reached {most_l0} files");
    for i in (0..n).step_by(13) {
        let got = db.engine(0, |e| e.get(&ReadOptions::default(), key(i).as_bytes())).unwrap();
        assert_eq!(got, Some(stall_value(i)), "{}", key(i));
    }
    db.engine(0, |e| e.verify()).unwrap();
    db.close_inner(true).unwrap();

    let (pool, _slots) = pool_of(24);
    let engine = Db::open(Arc::new(pool.clone()), "db", options).unwrap();
    for i in 0..n {
        engine.put(&WriteOptions::default(), key(i).as_bytes(), &stall_value(i)).unwrap();
    }
    // Nothing pumped: every compaction there was a write's L0 stall.
    assert!(engine.statistics().ticker("silt.compactions") > 0, "the load without paced work never stalled on L0");
}

#[test]
fn the_engine_recovers_its_synced_writes_from_the_pool_after_a_crash() {
    let (pool, slots) = pool_of(16);
    let options = Options { write_buffer_size: 64 << 10, ..Options::default() };
    {
        let db = Db::open(Arc::new(pool.clone()), "db", options.clone()).unwrap();
        for i in 0..2_000u32 {
            let sync = WriteOptions { sync: i % 100 == 99 };
            db.put(&sync, format!("key{i:05}").as_bytes(), &[i as u8; 100]).unwrap();
            while db.do_background_work(4).unwrap().work_left {}
        }
        // No close: the crash image is whatever was flushed.
        std::mem::forget(db);
    }
    let (again, _) = after_crash(&slots);
    let db = Db::open(Arc::new(again), "db", options).unwrap();
    for i in 0..2_000u32 {
        let got = db.get(&ReadOptions::default(), format!("key{i:05}").as_bytes()).unwrap();
        assert_eq!(got, Some(vec![i as u8; 100]), "key{i:05}, written with sync at the end");
    }
    assert!(db.properties().files_per_level.iter().sum::<u64>() > 0, "flushes went to pooled tables");
}

/// A pool of `n` empty files capped at `max` bytes, `reserve` of them kept
/// for work inside `use_reserve`.
fn capped_pool(n: usize, max: u64, reserve: u64) -> (TestPool, Vec<Arc<MemSlot>>) {
    let (pool, slots) = pool_of(n);
    pool.set_max_bytes(Some(max));
    pool.set_reserve(reserve);
    (pool, slots)
}

fn quota_message(r: Result<()>) -> String {
    match r {
        Err(Error::QuotaExceeded { message, .. }) => message,
        other => panic!("want QuotaExceeded, got {other:?}"),
    }
}

#[test]
fn the_size_cap_counts_headers_and_refuses_growth_before_writing() {
    let (pool, slots) = capped_pool(3, 2 * HEADER_SIZE + 100, 0);
    let f = pool.open("d/a", true).unwrap();
    f.append(&[1; 60]).unwrap();
    assert_eq!(pool.stats().bytes, HEADER_SIZE + 60);
    let g = pool.open("d/b", true).unwrap();
    g.append(&[2; 40]).unwrap();
    assert_eq!(pool.stats().bytes, 2 * HEADER_SIZE + 100);
    // One byte more is refused, as a full OPFS quota would refuse it, and
    // the file is untouched.
    let message = quota_message(f.append(&[3]));
    assert!(message.contains("maxBytes is 8292"), "{message}");
    assert!(message.contains("take 8292 bytes"), "{message}");
    assert!(message.contains("compactRange"), "{message}");
    assert_eq!(slots[0].live_bytes().len() as u64, HEADER_SIZE + 60);
    assert_eq!(f.len().unwrap(), 60);
    // Overwriting within the file needs no space; growing by truncate does.
    f.write_at(0, &[9; 60]).unwrap();
    assert!(matches!(f.truncate(61), Err(Error::QuotaExceeded { .. })));
    // A new file needs its header's room.
    assert!(matches!(pool.open("d/c", true), Err(Error::QuotaExceeded { .. })));
    assert!(!pool.exists("d/c").unwrap());
    // Space given back (a shrink, a remove) can be used again.
    g.truncate(0).unwrap();
    f.append(&[4; 40]).unwrap();
    drop(g);
    pool.remove("d/b").unwrap();
    assert_eq!(pool.stats().bytes, 2 * HEADER_SIZE + 100);
    f.append(&[5; 10]).unwrap_err();
    assert_eq!(read_file(&pool, "d/a").len(), 100);
}

#[test]
fn a_freed_file_with_its_header_room_is_reused_before_an_empty_one() {
    let (pool, _) = capped_pool(2, HEADER_SIZE + 10, 0);
    write_file(&pool, "d/a", b"x");
    pool.remove("d/a").unwrap();
    assert_eq!(pool.stats().bytes, HEADER_SIZE);
    // The empty file comes first in the pool, but claiming it would cost a
    // header's room; the freed one costs nothing.
    write_file(&pool, "d/b", b"y");
    assert_eq!(pool.stats().bytes, HEADER_SIZE + 1);
}

#[test]
fn ordinary_writes_stop_short_of_the_reserve_and_use_reserve_may_fill_it() {
    let (pool, _) = capped_pool(2, HEADER_SIZE + 1000, 400);
    let f = pool.open("d/a", true).unwrap();
    f.append(&[1; 600]).unwrap();
    let message = quota_message(f.append(&[1]));
    assert!(message.contains("the last 400 are kept for deletes, compactions and reopening"), "{message}");
    {
        let _space = pool.use_reserve();
        f.append(&[2; 400]).unwrap();
        // The cap itself holds even for the reserve's users.
        assert!(!quota_message(f.append(&[3])).contains("kept for"));
    }
    f.truncate(600).unwrap();
    assert!(matches!(f.append(&[4]), Err(Error::QuotaExceeded { .. })), "the reserve is closed again");
    let stats = pool.stats();
    assert_eq!((stats.bytes, stats.max_bytes, stats.reserve_bytes), (HEADER_SIZE + 600, Some(HEADER_SIZE + 1000), 400));
}

#[test]
fn files_added_past_the_cap_stay_readable() {
    let (pool, slots) = pool_of(1);
    write_file(&pool, "d/a", &[7; 500]);
    let again: TestPool = Pool::new();
    again.set_max_bytes(Some(1000));
    again.add(Arc::new(MemSlot::with_bytes(slots[0].durable_bytes())), "0000.silt").unwrap();
    assert_eq!(again.stats().bytes, HEADER_SIZE + 500);
    assert_eq!(read_file(&again, "d/a"), vec![7; 500]);
    let f = again.open("d/a", false).unwrap();
    assert!(matches!(f.append(b"more"), Err(Error::QuotaExceeded { .. })));
}

/// Fills a capped pool through the engine until a put fails, pumping
/// background work as the browser does (with the reserve open). Returns the
/// keys acknowledged.
fn fill_until_full(db: &Db, pool: &TestPool) -> (u32, Error) {
    let w = WriteOptions::default();
    for i in 0..1_000_000u32 {
        if let Err(e) = db.put(&w, format!("key{i:07}").as_bytes(), &[(i % 251) as u8; 200]) {
            return (i, e);
        }
        if i % 16 == 0 {
            let _space = pool.use_reserve();
            // Background work may run out of space too: that is retried.
            while let Ok(p) = db.do_background_work(8) {
                if !p.work_left {
                    break;
                }
            }
        }
    }
    panic!("a 1 MiB cap never filled");
}

#[test]
fn the_engine_on_a_capped_pool_fails_writes_with_quota_exceeded_keeps_every_acked_write_and_recovers() {
    let max = 1 << 20;
    let (pool, slots) = capped_pool(64, max, max / 4);
    let options = Options { write_buffer_size: 64 << 10, ..Options::default() };
    let space = pool.use_reserve();
    let db = Db::open(Arc::new(pool.clone()), "db", options.clone()).unwrap();
    drop(space);
    let (acked, err) = fill_until_full(&db, &pool);
    assert!(matches!(err, Error::QuotaExceeded { .. }), "{err:?}");
    assert!(err.to_string().contains("maxBytes is 1048576"), "{err}");
    assert!(acked > 1000, "only {acked} puts fit");
    assert!(pool.stats().bytes <= max);
    // The failed put is not there; every acknowledged one is, and the
    // tables check out.
    let r = ReadOptions::default();
    assert_eq!(db.get(&r, format!("key{acked:07}").as_bytes()).unwrap(), None);
    for i in (0..acked).step_by(7) {
        assert_eq!(db.get(&r, format!("key{i:07}").as_bytes()).unwrap(), Some(vec![(i % 251) as u8; 200]), "key{i}");
    }
    db.verify().unwrap();
    // Not wedged into a stale error: the same put again gets the same
    // clear error, and a put small enough for what is left goes through.
    let retry = db.put(&WriteOptions::default(), format!("key{acked:07}").as_bytes(), &[(acked % 251) as u8; 200]);
    assert!(matches!(retry, Err(Error::QuotaExceeded { .. })), "{retry:?}");
    db.put(&WriteOptions::default(), b"k", b"").unwrap();

    // Reopening a full database works (the reserve has room for it).
    db.close().unwrap();
    let (again, _) = after_crash(&slots);
    again.set_max_bytes(Some(max));
    again.set_reserve(max / 4);
    let space = again.use_reserve();
    let db = Db::open(Arc::new(again.clone()), "db", options).unwrap();
    drop(space);
    assert_eq!(
        db.get(&r, format!("key{:07}", acked - 1).as_bytes()).unwrap(),
        Some(vec![((acked - 1) % 251) as u8; 200])
    );

    // Deleting most keys and compacting gives the space back.
    {
        let _space = again.use_reserve();
        db.delete_range(&WriteOptions::default(), b"key0000000", format!("key{:07}", acked - 100).as_bytes()).unwrap();
        db.compact_range(None, None).unwrap();
    }
    assert!(again.stats().bytes < max / 2, "{:?}", again.stats());
    for i in 0..1000u32 {
        db.put(&WriteOptions::default(), format!("new{i:05}").as_bytes(), &[1; 200]).unwrap();
    }
    db.flush().unwrap();
    db.verify().unwrap();
    assert_eq!(db.get(&r, b"new00999").unwrap(), Some(vec![1; 200]));
    assert_eq!(db.get(&r, b"key0000005").unwrap(), None);
    assert_eq!(
        db.get(&r, format!("key{:07}", acked - 1).as_bytes()).unwrap(),
        Some(vec![((acked - 1) % 251) as u8; 200])
    );
}

#[test]
fn a_flush_or_compaction_that_runs_out_of_space_is_dropped_and_retried_not_fatal() {
    // No reserve: background work hits the cap itself.
    let max = 600 << 10;
    let (pool, _) = capped_pool(64, max, 0);
    let options = Options { write_buffer_size: 64 << 10, max_write_buffer_number: 4, ..Options::default() };
    let db = Db::open(Arc::new(pool.clone()), "db", options).unwrap();
    let w = WriteOptions::default();
    let mut acked = 0u32;
    let mut background_quota = 0;
    for i in 0..100_000u32 {
        match db.put(&w, format!("key{i:07}").as_bytes(), &[(i % 251) as u8; 200]) {
            Ok(()) => acked = i + 1,
            Err(Error::QuotaExceeded { .. }) => break,
            Err(e) => panic!("put {i}: want success or QuotaExceeded, got {e:?}"),
        }
        match db.do_background_work(usize::MAX) {
            Ok(_) => {}
            Err(f) if matches!(f.error, Error::QuotaExceeded { .. }) && f.recovery == Recovery::FailAlone => {
                background_quota += 1
            }
            Err(f) => panic!("background work: want success or QuotaExceeded failing alone, got {f:?}"),
        }
    }
    assert!(background_quota > 0, "background work never hit the cap");
    assert!(pool.stats().bytes <= max);
    // Every acknowledged write is readable; nothing half-written is in a
    // version; the failed work left no table behind.
    let r = ReadOptions::default();
    for i in (0..acked).step_by(5) {
        assert_eq!(db.get(&r, format!("key{i:07}").as_bytes()).unwrap(), Some(vec![(i % 251) as u8; 200]), "key{i}");
    }
    db.verify().unwrap();
    // Without a reserve nothing here can free space, as with a browser
    // quota used up by other data; once space is freed outside (a larger
    // cap), the queued work finishes and writes go through again.
    pool.set_max_bytes(Some(2 * max));
    while db.do_background_work(8).unwrap().work_left {}
    db.put(&w, b"after", b"space was freed").unwrap();
    db.delete_range(&w, b"key", format!("key{:07}", acked / 2).as_bytes()).unwrap();
    db.compact_range(None, None).unwrap();
    assert!(pool.stats().bytes < max, "{:?}", pool.stats());
    assert_eq!(db.get(&r, b"after").unwrap().as_deref(), Some(&b"space was freed"[..]));
    let last = acked - 1;
    assert_eq!(db.get(&r, format!("key{last:07}").as_bytes()).unwrap(), Some(vec![(last % 251) as u8; 200]));
    db.verify().unwrap();
}

#[test]
fn a_database_closed_keeping_its_pool_reopens_on_it_and_a_clean_reopen_writes_nothing() {
    use std::rc::Rc;

    use crate::database::Database;
    use crate::options::OpenOptions;

    let (pool, slots) = pool_of(24);
    let options = || OpenOptions { write_buffer_size: 1 << 20, ..OpenOptions::default() }.to_engine(None);
    let open =
        |pool: &TestPool| Database::open_with(Arc::new(pool.clone()), "db", options(), Some(Rc::new(pool.clone())));
    // Small data (left to the WAL at close), then enough that close flushes it.
    for (round, n) in [(0u32, 50u32), (1, 3_000)] {
        let db = open(&pool).unwrap();
        for i in 0..n {
            db.put(format!("r{round}-{i:05}").as_bytes(), &[i as u8; 100], false).unwrap();
        }
        db.close_inner(false).unwrap();
        // The pool is still open: its files are there for the next open.
        assert_eq!(PoolControl::stats(&pool).files, 24);
        let files_before = PoolControl::paths(&pool);
        for s in &slots {
            s.fail_writes_after(0);
        }
        let db = open(&pool).unwrap_or_else(|e| panic!("round {round}: a clean reopen wrote: {}", e.message));
        assert_eq!(PoolControl::paths(&pool), files_before, "round {round}: a clean reopen changed the files");
        for i in (0..n).step_by(7) {
            let k = format!("r{round}-{i:05}");
            let got = db.engine(0, |e| e.get(&ReadOptions::default(), k.as_bytes())).unwrap();
            assert_eq!(got, Some(vec![i as u8; 100]), "round {round} key {i}");
        }
        for s in &slots {
            s.fail_writes_after(usize::MAX);
        }
        if round == 1 {
            // The flush at close left nothing in the WAL.
            let props = db.engine(0, |e| Ok::<_, Error>(e.properties())).unwrap();
            assert_eq!(props.immutable_memtables, 0);
            assert!(props.files_per_level[0] > 0, "close flushed nothing");
        }
        db.close_inner(false).unwrap();
    }
    pool.close();
}

#[test]
fn close_free_closes_only_free_files_and_they_leave_the_pool() {
    let (pool, slots) = pool_of(5);
    write_file(&pool, "d/kept", b"data");
    // A removed file still open is not free: it must stay.
    write_file(&pool, "d/gone", b"old");
    let open = pool.open("d/gone", false).unwrap();
    pool.remove("d/gone").unwrap();
    assert_eq!(pool.stats().free, 3);

    let closed = pool.close_free(2);
    assert_eq!(closed.len(), 2);
    let stats = pool.stats();
    assert_eq!((stats.files, stats.free, stats.removed_open), (3, 1, 1));
    let closed_slots = slots.iter().filter(|s| s.is_closed()).count();
    assert_eq!(closed_slots, 2, "the two files let go are closed");
    // Asking for more than are free closes what is free, nothing else.
    assert_eq!(pool.close_free(10).len(), 1);
    assert_eq!(pool.free_count(), 0);
    assert_eq!(read_file(&pool, "d/kept"), b"data");
    assert_eq!(read_all(&*open, "d/gone").unwrap(), b"old");
    drop(open);
    // The removed file is free once let go of, and can be closed in turn.
    assert_eq!(pool.free_count(), 1);
    assert_eq!(pool.close_free(1).len(), 1);
    assert!(matches!(pool.open("d/new", true), Err(Error::PoolExhausted { .. })));
    // A file added later is used, and the closed ones never again.
    pool.add(Arc::new(MemSlot::default()), "0009.silt").unwrap();
    write_file(&pool, "d/new", b"n");
    assert_eq!(read_file(&pool, "d/new"), b"n");
    assert_eq!(pool.stats().files, 2);
    assert_eq!(pool.close_free(3), Vec::<String>::new());
}

#[test]
fn close_free_gives_the_space_of_the_files_back_and_prefers_empty_ones() {
    let (pool, _) = pool_of(3);
    write_file(&pool, "d/a", &[7u8; 1000]);
    pool.remove("d/a").unwrap();
    // One free file with a header's room (once used), two never used.
    let before = pool.stats().bytes;
    assert!(before >= HEADER_SIZE);
    let closed = pool.close_free(2);
    assert_eq!(closed.len(), 2);
    assert!(!closed.contains(&"0000.silt".to_string()), "the used one goes last: {closed:?}");
    assert_eq!(pool.stats().bytes, before, "the empty ones took no space");
    assert_eq!(pool.close_free(1), vec!["0000.silt".to_string()]);
    assert_eq!(pool.stats().bytes, 0);
}
