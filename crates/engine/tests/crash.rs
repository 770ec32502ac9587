//! Crash tests on `FaultFs`: stop the engine at every mutating file-system
//! call of a workload of writes, range deletes and merges with flushes and
//! compactions in budgeted steps (optionally tearing unsynced bytes),
//! reopen, and check against the oracle:
//! - every write acknowledged with `sync` is there;
//! - what is there is exactly the state after some prefix of the attempted
//!   writes (so no batch is half-present and no older write is lost while a
//!   newer one survives);
//! - the database opens, and after a flush holds no orphaned files.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use silt_engine::fs::{CrashMode, FaultFs, Fs, MemFs};
use silt_engine::{Db, Options, ReadOptions, U64AddOperator, WriteBatch, WriteOptions};

type State = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        block_size: 512,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 64 << 10,
        max_bytes_for_level_multiplier: 4,
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 6,
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..Options::default()
    }
}

#[derive(Clone)]
enum Update {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// Adds to a u64 counter.
    Merge(Vec<u8>, u64),
    DeleteRange(Vec<u8>, Vec<u8>),
}

/// One write of the workload and whether it asks for sync.
struct Op {
    batch: Vec<Update>,
    sync: bool,
}

fn workload(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let size = if rng.random_bool(0.3) { rng.random_range(2..12) } else { 1 };
            let batch = (0..size)
                .map(|_| {
                    let k = format!("key{:04}", rng.random_range(0..300u32)).into_bytes();
                    match rng.random_range(0..20) {
                        0..=13 => Update::Put(k, vec![rng.random::<u8>(); rng.random_range(10..400)]),
                        14..=16 => Update::Delete(k),
                        17..=18 => Update::Merge(
                            format!("ctr{}", rng.random_range(0..10u32)).into_bytes(),
                            rng.random_range(1..100),
                        ),
                        _ => {
                            let mut end = k.clone();
                            end[5] = b'9';
                            Update::DeleteRange(k, end)
                        }
                    }
                })
                .collect();
            Op { batch, sync: rng.random_bool(0.2) }
        })
        .collect()
}

fn apply(state: &mut State, op: &Op) {
    for u in &op.batch {
        match u {
            Update::Put(k, v) => {
                state.insert(k.clone(), v.clone());
            }
            Update::Delete(k) => {
                state.remove(k);
            }
            Update::Merge(k, d) => {
                let cur = state.get(k).map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap()));
                state.insert(k.clone(), cur.wrapping_add(*d).to_le_bytes().to_vec());
            }
            Update::DeleteRange(a, b) => {
                let doomed: Vec<_> = state.range(a.clone()..b.clone()).map(|(k, _)| k.clone()).collect();
                for k in doomed {
                    state.remove(&k);
                }
            }
        }
    }
}

fn read_all(db: &Db) -> State {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut out = State::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}

/// Runs the workload until the injected failure stops it. Returns how many
/// writes were acknowledged, and the index of the last one acknowledged
/// with sync (durable), if any.
fn run_until_failure(db: &Db, ops: &[Op], background_every: usize) -> (usize, Option<usize>) {
    let mut last_synced = None;
    for (i, op) in ops.iter().enumerate() {
        let mut b = WriteBatch::new();
        for u in &op.batch {
            match u {
                Update::Put(k, v) => b.put(k, v),
                Update::Delete(k) => b.delete(k),
                Update::Merge(k, d) => b.merge(k, &d.to_le_bytes()),
                Update::DeleteRange(a, z) => b.delete_range(a, z),
            };
        }
        if db.write(&WriteOptions { sync: op.sync }, b).is_err() {
            return (i, last_synced);
        }
        if op.sync {
            last_synced = Some(i);
        }
        if i % background_every == 0 && db.do_background_work(1).is_err() {
            return (i + 1, last_synced);
        }
    }
    (ops.len(), last_synced)
}

fn check_crash_point(seed: u64, point: u64, mode: CrashMode, ops: &[Op]) -> bool {
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let shared: Arc<dyn Fs> = Arc::new(fs.clone());
    let db = Db::open(shared.clone(), "db", options()).expect("first open");
    fs.fail_after(Some(point));
    let (acked, last_synced) = run_until_failure(&db, ops, 7);
    let reached_end = acked == ops.len();
    fs.crash(mode).unwrap();
    drop(db);
    let db = Db::open(shared, "db", options())
        .unwrap_or_else(|e| panic!("seed {seed} point {point} {mode:?}: reopen failed: {e}"));
    let got = read_all(&db);
    // The recovered state must equal the state after some prefix of the
    // attempted writes, no shorter than the last synced one. The write that
    // failed may have reached the WAL, so it counts as attempted.
    let attempted = (acked + 1).min(ops.len());
    let min_prefix = last_synced.map_or(0, |i| i + 1);
    let mut state = State::new();
    let mut matched = None;
    for p in 0..=attempted {
        if p > 0 {
            apply(&mut state, &ops[p - 1]);
        }
        if p >= min_prefix && state == got {
            matched = Some(p);
        }
    }
    assert!(
        matched.is_some(),
        "seed {seed} point {point} {mode:?}: recovered state is no prefix of the writes \
         (acked {acked}, last synced {last_synced:?}, {} keys recovered)",
        got.len()
    );
    // No orphans: after a flush, only live files remain.
    db.flush().unwrap();
    while db.do_background_work(64).unwrap().work_left {}
    let props = db.properties();
    let files = FaultFs::list(&fs, "db").unwrap();
    let ssts = files.iter().filter(|n| n.ends_with(".sst")).count() as u64;
    let logs = files.iter().filter(|n| n.ends_with(".log")).count();
    let manifests = files.iter().filter(|n| n.starts_with("MANIFEST-")).count();
    assert_eq!(
        ssts,
        props.files_per_level.iter().sum::<u64>(),
        "seed {seed} point {point}: orphan tables in {files:?}"
    );
    assert_eq!((logs, manifests), (1, 1), "seed {seed} point {point}: orphan logs or manifests in {files:?}");
    reached_end
}

fn sweep(seed: u64, n_ops: usize, mode_of: impl Fn(u64) -> CrashMode) -> u64 {
    let ops = workload(seed, n_ops);
    let mut point = 0;
    loop {
        if check_crash_point(seed, point, mode_of(point), &ops) {
            return point; // the workload finished before the fault fired
        }
        point += 1;
    }
}

#[test]
fn crash_at_every_point_dropping_unsynced_bytes() {
    let points = sweep(11, 900, |_| CrashMode::DropUnsynced);
    eprintln!("crash points tried (drop unsynced): {points}");
    assert!(points > 100, "only {points} crash points: the workload does too little I/O");
    assert_compactions_happen(11, 900);
}

#[test]
fn crash_at_every_point_tearing_unsynced_bytes() {
    let points = sweep(12, 900, |p| CrashMode::TearUnsynced { seed: p * 7919 + 1 });
    eprintln!("crash points tried (torn unsynced): {points}");
    assert!(points > 100, "only {points} crash points");
}

#[test]
fn crash_during_recovery_itself() {
    // Crash, then crash again at every point of the reopen, then reopen.
    let ops = workload(13, 300);
    let base = FaultFs::new(Arc::new(MemFs::new()));
    let shared: Arc<dyn Fs> = Arc::new(base.clone());
    {
        let db = Db::open(shared.clone(), "db", options()).unwrap();
        run_until_failure(&db, &ops, 5);
        base.crash(CrashMode::TearUnsynced { seed: 5 }).unwrap();
    }
    let mut reference: Option<State> = None;
    for point in 0.. {
        base.fail_after(Some(point));
        let opened = Db::open(shared.clone(), "db", options());
        let finished = opened.is_ok();
        if let Ok(db) = &opened {
            let _ = db.flush();
        }
        base.crash(CrashMode::DropUnsynced).unwrap();
        drop(opened);
        let db = Db::open(shared.clone(), "db", options()).unwrap_or_else(|e| panic!("nested crash at {point}: {e}"));
        let got = read_all(&db);
        match &reference {
            None => reference = Some(got),
            Some(r) => assert_eq!(&got, r, "nested crash at {point} changed the recovered data"),
        }
        drop(db);
        if finished && point > 200 {
            break;
        }
    }
}

/// The sweeps are meant to crash inside compactions too: check the workload
/// really compacts.
fn assert_compactions_happen(seed: u64, n: usize) {
    let db = Db::open(Arc::new(MemFs::new()), "db", options()).unwrap();
    run_until_failure(&db, &workload(seed, n), 7);
    let stats = db.statistics();
    assert!(stats.ticker("silt.compactions") >= 1, "the crash workload ran no compaction:\n{stats}");
    assert!(stats.ticker("silt.flushes") >= 3, "the crash workload flushed too little:\n{stats}");
}
