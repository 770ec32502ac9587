//! The read-optimising idle compaction (`Db::start_idle_compaction`,
//! issue 35 item 2): started only when nothing else is due, the lookup has
//! more than one sorted run to probe and the tables are within the byte
//! bound; carried out in budgeted steps; it leaves one sorted run, never
//! rewrites the last level alone, and loses nothing where it meets writes,
//! deletes, merges, ingests above the base level and snapshots.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use silt_engine::fs::{FaultFs, Fs, MemFs};
use silt_engine::{Db, IngestOptions, Options, ReadOptions, U64AddOperator, WriteBatch, WriteOptions};

const W: WriteOptions = WriteOptions { sync: false };

fn options() -> Options {
    Options {
        max_bytes_for_level_base: 256 << 10,
        level0_file_num_compaction_trigger: 4,
        idle_compaction_max_bytes: 64 << 20,
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..common::small_options()
    }
}

fn open_with(o: Options) -> Db {
    Db::open(Arc::new(MemFs::new()), "db", o).unwrap()
}

fn levels(db: &Db) -> Vec<u64> {
    db.properties().files_per_level
}

/// Sorted runs a point lookup may probe: each L0 file, each other level that holds data.
fn runs(db: &Db) -> u64 {
    let l = levels(db);
    l[0] + l[1..].iter().filter(|&&n| n > 0).count() as u64
}

fn catch_up(db: &Db) {
    while db.do_background_work(8).unwrap().work_left {}
}

/// Runs the idle compaction in slices of `budget`; returns how many.
fn run_idle(db: &Db, budget: usize) -> usize {
    let mut slices = 0;
    while db.manual_compaction_pending() {
        db.do_background_work(budget).unwrap();
        slices += 1;
        assert!(slices < 100_000, "an idle compaction that never ends");
    }
    slices
}

/// A random fill (values of 100 bytes), its background work caught up: what
/// it leaves is L0 files over the last level.
fn random_fill(db: &Db, n: usize, seed: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut model = BTreeMap::new();
    for _ in 0..n {
        let k = format!("{:016}", rng.random_range(0..n * 4)).into_bytes();
        let v: Vec<u8> = (0..100).map(|_| rng.random()).collect();
        db.put(&W, &k, &v).unwrap();
        model.insert(k, v);
        if rng.random_bool(0.05) {
            db.do_background_work(4).unwrap();
        }
    }
    catch_up(db);
    if runs(db) == 1 {
        // Its last flush let L0 compact away: one more file over it.
        for _ in 0..10 {
            let k = format!("{:016}", rng.random_range(0..n * 4)).into_bytes();
            db.put(&W, &k, b"last").unwrap();
            model.insert(k, b"last".to_vec());
        }
        db.flush().unwrap();
        catch_up(db);
    }
    model
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model {
        assert_eq!(db.get(&ReadOptions::default(), k).unwrap().as_ref(), Some(v), "{}", String::from_utf8_lossy(k));
    }
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert_eq!(model.get(it.key()).map(Vec::as_slice), Some(it.value()));
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, model.len());
}

#[test]
fn a_random_fill_ends_as_one_sorted_run_in_budgeted_steps() {
    let db = open_with(options());
    let model = random_fill(&db, 6000, 1);
    let before = runs(&db);
    assert!(before > 1, "the fill left one run: levels {:?}", levels(&db));
    let compactions = db.statistics().ticker("silt.compactions");
    assert!(db.start_idle_compaction().unwrap());
    let slices = run_idle(&db, 2);
    assert!(slices > 3, "it ran in {slices} slices: budgeted steps yield between them");
    assert_eq!(runs(&db), 1, "levels {:?}", levels(&db));
    check(&db, &model);
    assert_eq!(db.statistics().ticker("silt.compaction.idle"), 1);
    assert!(db.statistics().ticker("silt.compactions") > compactions);
    // One run already: nothing to do.
    assert!(!db.start_idle_compaction().unwrap());
}

#[test]
fn not_while_other_work_is_due_nor_past_its_bound_nor_when_off() {
    // A flush due (an immutable memtable): that first.
    let db = open_with(options());
    let model = random_fill(&db, 3000, 2);
    assert!(runs(&db) > 1);
    for i in 0..1000u32 {
        db.put(&W, format!("x{i:05}").as_bytes(), &[0; 100]).unwrap();
    }
    assert!(db.properties().immutable_memtables > 0);
    assert!(!db.start_idle_compaction().unwrap());
    catch_up(&db);
    assert!(db.start_idle_compaction().unwrap());
    run_idle(&db, 8);
    check(
        &db,
        &model.into_iter().chain((0..1000u32).map(|i| (format!("x{i:05}").into_bytes(), vec![0; 100]))).collect(),
    );

    // Tables past the bound.
    let db = open_with(Options { idle_compaction_max_bytes: 64 << 10, ..options() });
    random_fill(&db, 3000, 3);
    assert!(runs(&db) > 1);
    assert!(!db.start_idle_compaction().unwrap());

    // Off, or with automatic compactions off.
    for o in
        [Options { idle_compaction_max_bytes: 0, ..options() }, Options { disable_auto_compactions: true, ..options() }]
    {
        let db = open_with(o);
        random_fill(&db, 3000, 4);
        assert!(runs(&db) > 1);
        assert!(!db.start_idle_compaction().unwrap());
    }
}

#[test]
fn the_last_level_is_never_rewritten_alone() {
    let db = open_with(options());
    for i in 0..2000u32 {
        db.put(&W, format!("{i:08}").as_bytes(), &[1; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(runs(&db), 1, "levels {:?}", levels(&db));
    assert!(!db.start_idle_compaction().unwrap(), "one run: nothing to do");
    // One L0 file over it: one compaction, L0 into the last level, and no
    // second pass over the last level.
    db.put(&W, b"00000500", b"new").unwrap();
    db.flush().unwrap();
    assert_eq!(runs(&db), 2);
    let compactions = db.statistics().ticker("silt.compactions");
    assert!(db.start_idle_compaction().unwrap());
    run_idle(&db, 8);
    assert_eq!(runs(&db), 1, "levels {:?}", levels(&db));
    assert_eq!(db.statistics().ticker("silt.compactions") - compactions, 1);
    assert_eq!(db.get(&ReadOptions::default(), b"00000500").unwrap().as_deref(), Some(&b"new"[..]));
}

#[test]
fn deletes_and_merges_over_older_and_ingested_data_survive_it() {
    let db = open_with(Options { level0_file_num_compaction_trigger: 8, ..options() });
    db.put(&W, b"a", &1u64.to_le_bytes()).unwrap();
    db.put(&W, b"z", &1u64.to_le_bytes()).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(levels(&db), [0, 0, 0, 0, 0, 0, 1]);
    for (k, v) in [(&b"k"[..], 5u64), (b"m", 7)] {
        let mut b = WriteBatch::new();
        b.put(k, &v.to_le_bytes());
        assert_eq!(db.ingest(&b, &IngestOptions::default()).unwrap().level, 5);
    }
    db.delete(&W, b"k").unwrap();
    db.merge(&W, b"m", &1u64.to_le_bytes()).unwrap();
    db.flush().unwrap();
    let snap = db.snapshot();
    // Caught up (as the worker is before it starts one): the ingested level
    // above the base drains into the last; the L0 file with the delete and
    // the merge stays over them.
    catch_up(&db);
    assert_eq!(levels(&db), [1, 0, 0, 0, 0, 0, 1]);
    assert!(db.start_idle_compaction().unwrap());
    run_idle(&db, 1);
    assert_eq!(runs(&db), 1, "levels {:?}", levels(&db));
    let get = |k: &[u8], opts: &ReadOptions| db.get(opts, k).unwrap();
    assert_eq!(get(b"k", &ReadOptions::default()), None);
    assert_eq!(get(b"m", &ReadOptions::default()), Some(8u64.to_le_bytes().to_vec()));
    let at = ReadOptions { snapshot: Some(&snap), ..Default::default() };
    assert_eq!(get(b"k", &at), None);
    assert_eq!(get(b"m", &at), Some(8u64.to_le_bytes().to_vec()));
}

#[test]
fn writes_deletes_and_flushes_between_its_steps_are_kept() {
    let db = open_with(options());
    let mut model = random_fill(&db, 5000, 5);
    let mut rng = SmallRng::seed_from_u64(6);
    assert!(db.start_idle_compaction().unwrap());
    let mut slices = 0;
    while db.manual_compaction_pending() {
        db.do_background_work(1).unwrap();
        slices += 1;
        for _ in 0..20 {
            let k = format!("{:016}", rng.random_range(0..20_000)).into_bytes();
            if rng.random_bool(0.3) {
                db.delete(&W, &k).unwrap();
                model.remove(&k);
            } else {
                db.put(&W, &k, b"during").unwrap();
                model.insert(k, b"during".to_vec());
            }
        }
        if slices % 7 == 0 {
            db.flush().unwrap();
        }
        assert!(slices < 100_000);
    }
    catch_up(&db);
    check(&db, &model);
    db.close().unwrap();
}

#[test]
fn out_of_space_it_is_dropped_not_retried_and_files_short_it_does_not_start() {
    let mem = Arc::new(MemFs::new());
    let fs = FaultFs::new(mem.clone());
    let db = Db::open(Arc::new(fs.clone()), "db", options()).unwrap();
    let model = random_fill(&db, 6000, 7);
    assert!(runs(&db) > 1);
    // No room for its outputs: the step fails alone, and the idle
    // compaction is dropped (an optimisation), leaving the picker's work.
    fs.set_quota(Some(mem.total_bytes() + 4096));
    assert!(db.start_idle_compaction().unwrap());
    let mut failures = 0;
    for _ in 0..50 {
        match db.do_background_work(64) {
            Ok(p) if !p.work_left => break,
            Ok(_) => {}
            Err(f) => {
                assert_eq!(f.recovery, silt_engine::Recovery::FailAlone, "{}", f.error);
                failures += 1;
            }
        }
    }
    assert_eq!(failures, 1, "dropped after its first failure, not retried");
    assert!(!db.manual_compaction_pending());
    // Out of space, it does not start again.
    assert!(!db.start_idle_compaction().unwrap());
    fs.set_quota(None);
    check(&db, &model);
    drop(db);

    // Files short (the pool nearly used up): it does not start.
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(Arc::new(fs.clone()), "db", options()).unwrap();
    random_fill(&db, 6000, 8);
    assert!(runs(&db) > 1);
    fs.set_file_cap(Some(("db", fs.list("db").unwrap().len() + 1)));
    assert!(!db.start_idle_compaction().unwrap());
    fs.set_file_cap(None);
    assert!(db.start_idle_compaction().unwrap());
}
