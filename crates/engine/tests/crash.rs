//! Crash tests on `FaultFs`: stop the engine at every mutating file-system
//! call of a workload of writes, range deletes and merges (every fourth
//! write a transaction's commit, some batches of puts ingested) with flushes and
//! compactions in budgeted steps, idle compactions among them (optionally
//! tearing unsynced bytes),
//! reopen, and check against the oracle:
//! - every write acknowledged with `sync` is there;
//! - what is there is exactly the state after some prefix of the attempted
//!   writes (so no batch is half-present and no older write is lost while a
//!   newer one survives);
//! - the database opens, and after a flush holds no orphaned files.

mod common;

use common::{read_all, State};

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use silt_engine::fs::{CrashMode, FaultFs, Fs, FsOp, MemFs};
use silt_engine::{Db, IngestOptions, Options, U64AddOperator, WriteBatch, WriteOptions};

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
        // Small, so that the manifest is rolled over (and crashed in) too.
        max_manifest_file_size: 256,
        // The idle compaction is off by default: on, so that it meets the rest.
        idle_compaction_max_bytes: 64 << 20,
        // Dictionaries are off by default: on, so that crashes meet their
        // tables (held-back blocks, the dictionary block, format 3), in
        // flushes too.
        compression_dict_bytes: 256,
        compression_dict_every_level: true,
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
    workload_over(seed, n, 300)
}

/// [`workload`] over `keys` keys.
fn workload_over(seed: u64, n: usize, keys: u32) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let size = if rng.random_bool(0.3) { rng.random_range(2..12) } else { 1 };
            let batch = (0..size)
                .map(|_| {
                    let k = format!("key{:04}", rng.random_range(0..keys)).into_bytes();
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

/// Runs the workload until the injected failure stops it. Returns how many
/// writes were acknowledged, and the index of the last one acknowledged
/// with sync (durable), if any.
fn run_until_failure(db: &Db, ops: &[Op], background_every: usize) -> (usize, Option<usize>) {
    run_writes(db, ops, background_every, 1, false, false)
}

/// [`run_until_failure`], with background steps of `budget` blocks; with
/// `files_may_run_short`, background work that
/// finds no file to create (`PoolExhausted`, left queued) does not end it,
/// and nothing is ingested.
fn run_writes(
    db: &Db,
    ops: &[Op],
    background_every: usize,
    budget: usize,
    files_may_run_short: bool,
    spills: bool,
) -> (usize, Option<usize>) {
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
        let opts = WriteOptions { sync: op.sync };
        // Every fourth write is an optimistic transaction's commit: all or
        // nothing, as a batch (nothing else writes, so it never conflicts).
        // Some batches of puts only are ingested instead: new table files,
        // all or nothing, durable when acknowledged.
        // (Not when files may run short: an ingest needs its files up
        // front, which siltdb's binding adds to the pool before it.)
        let ingest = !files_may_run_short && i % 25 == 12 && op.batch.iter().all(|u| matches!(u, Update::Put(..)));
        // With `spills`, a transaction of more than one write spills them
        // into files of its own before each write but the first, and its
        // commit publishes them (durably, as an ingest: one table and one
        // manifest edit).
        let spill = spills && i % 4 == 1 && op.batch.len() > 1;
        let written = if ingest {
            db.ingest(&b, &IngestOptions::default()).map(drop)
        } else if i % 4 == 1 {
            commit_in_transaction(db, &op.batch, &opts, spill)
        } else {
            db.write(&opts, b)
        };
        if written.is_err() {
            return (i, last_synced);
        }
        if op.sync || ingest || spill {
            last_synced = Some(i);
        }
        // Now and then the embedder finds the database idle: the idle
        // compaction (started only with nothing else due) goes on in the
        // background steps after it, crashed in like any compaction. (Not
        // while files run short: merging everything, it would spare the
        // workload the compactions for want of files that test is for.)
        if !files_may_run_short && i % 50 == 37 && db.start_idle_compaction().is_err() {
            return (i + 1, last_synced);
        }
        if i % background_every == 0 {
            if let Err(f) = db.do_background_work(budget) {
                if !(files_may_run_short && matches!(f.error, silt_engine::Error::PoolExhausted { .. })) {
                    return (i + 1, last_synced);
                }
            }
        }
    }
    (ops.len(), last_synced)
}

fn commit_in_transaction(db: &Db, batch: &[Update], opts: &WriteOptions, spill: bool) -> silt_engine::Result<()> {
    let mut t = db.begin_optimistic();
    if spill {
        t.set_spill_bytes(1);
    }
    for u in batch {
        match u {
            Update::Put(k, v) => t.put(k, v)?,
            Update::Delete(k) => t.delete(k)?,
            Update::Merge(k, d) => t.merge(db, k, &d.to_le_bytes())?,
            Update::DeleteRange(a, z) => t.delete_range(a, z)?,
        }
    }
    assert_eq!(t.spilled(), spill);
    t.commit(db, opts)
}

/// The step of the write or background path a mutating file-system call
/// belongs to, for the crash matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    /// Appending or syncing a write-ahead log.
    WalAppend,
    /// Creating the next WAL when the memtable is switched.
    MemtableSwitch,
    /// Writing a table (a flush's or a compaction's output).
    TableWrite,
    /// Writing the manifest for a flush, or a new manifest.
    ManifestEdit,
    /// Writing the manifest edit that installs a compaction's outputs.
    CompactionInstall,
    /// Starting a new manifest (it reached `max_manifest_file_size`).
    ManifestRollover,
    /// Removing an obsolete table, WAL or manifest.
    ObsoleteFileDeletion,
}

impl Step {
    const ALL: [Step; 7] = [
        Step::WalAppend,
        Step::MemtableSwitch,
        Step::TableWrite,
        Step::ManifestEdit,
        Step::CompactionInstall,
        Step::ManifestRollover,
        Step::ObsoleteFileDeletion,
    ];
}

/// Classifies call `i` of a trace. A manifest write is a compaction's
/// install if tables are removed before the next manifest write (a flush's
/// install makes only a WAL obsolete).
fn classify(trace: &[FsOp], i: usize) -> Step {
    let FsOp { op, path, .. } = &trace[i];
    let name = path.rsplit('/').next().unwrap_or(path);
    if *op == "remove" {
        return Step::ObsoleteFileDeletion;
    }
    if name.ends_with(".log") {
        return if *op == "create" { Step::MemtableSwitch } else { Step::WalAppend };
    }
    if name.ends_with(".sst") {
        return Step::TableWrite;
    }
    assert!(name.starts_with("MANIFEST-"), "unexpected file in the crash workload: {path}");
    if matches!(*op, "create" | "truncate") {
        return Step::ManifestRollover;
    }
    // Up to the next manifest write after other calls: only an edit that
    // made tables obsolete (a compaction's) is followed by table removals.
    let is_manifest = |o: &FsOp| o.path.rsplit('/').next().unwrap_or("").starts_with("MANIFEST-");
    let rest = &trace[i..];
    let group_end = rest.iter().position(|o| !is_manifest(o)).unwrap_or(rest.len());
    let next_group = rest[group_end..].iter().position(is_manifest).map_or(rest.len(), |p| group_end + p);
    if rest[group_end..next_group].iter().any(|o| o.op == "remove" && o.path.ends_with(".sst")) {
        Step::CompactionInstall
    } else {
        Step::ManifestEdit
    }
}

/// Crash points tried per step and crash mode.
type Matrix = BTreeMap<(Step, &'static str), u64>;

fn mode_name(mode: CrashMode) -> &'static str {
    match mode {
        CrashMode::DropUnsynced => "drop unsynced",
        CrashMode::TearUnsynced { .. } => "tear unsynced",
    }
}

/// The workload's mutating calls, without faults (the engine is
/// deterministic, so crash point `p` fails call `p` of this trace).
fn reference_trace(ops: &[Op]) -> Vec<FsOp> {
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(Arc::new(fs.clone()), "db", options()).expect("first open");
    fs.start_trace();
    let (acked, _) = run_until_failure(&db, ops, 7);
    assert_eq!(acked, ops.len(), "the workload failed without faults");
    fs.trace()
}

/// Crashes at call `point` of the workload, reopens, checks. Returns
/// whether the workload finished before the fault fired.
fn check_crash_point(seed: u64, point: u64, mode: CrashMode, ops: &[Op], reference: &[FsOp]) -> bool {
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let shared: Arc<dyn Fs> = Arc::new(fs.clone());
    let db = Db::open(shared.clone(), "db", options()).expect("first open");
    fs.start_trace();
    fs.fail_after(Some(point));
    let (acked, last_synced) = run_until_failure(&db, ops, 7);
    let reached_end = acked == ops.len();
    if !reached_end {
        let failed = &fs.trace()[point as usize];
        assert_eq!(
            (failed.op, &failed.path),
            (reference[point as usize].op, &reference[point as usize].path),
            "seed {seed} point {point}: the workload is not deterministic, so the crash matrix misnames steps"
        );
    }
    fs.crash(mode).unwrap();
    drop(db);
    check_recovered(&fs, seed, point, mode, ops, acked, last_synced);
    reached_end
}

/// After a crash: reopens, and checks the recovered state against the
/// writes (`acked` of `ops` acknowledged, `last_synced` the last durable
/// one), every checksum, and that no file is orphaned.
fn check_recovered(
    fs: &FaultFs,
    seed: u64,
    point: u64,
    mode: CrashMode,
    ops: &[Op],
    acked: usize,
    last_synced: Option<usize>,
) {
    let shared: Arc<dyn Fs> = Arc::new(fs.clone());
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
    // Every checksum of every live file holds.
    db.verify().unwrap_or_else(|e| panic!("seed {seed} point {point} {mode:?}: verify after recovery: {e}"));
    // No orphans: after a flush, only live files remain.
    db.flush().unwrap();
    while db.do_background_work(64).unwrap().work_left {}
    let props = db.properties();
    let files = FaultFs::list(fs, "db").unwrap();
    let ssts = files.iter().filter(|n| n.ends_with(".sst")).count() as u64;
    let logs = files.iter().filter(|n| n.ends_with(".log")).count();
    let manifests = files.iter().filter(|n| n.starts_with("MANIFEST-")).count();
    assert_eq!(
        ssts,
        props.files_per_level.iter().sum::<u64>(),
        "seed {seed} point {point}: orphan tables in {files:?}"
    );
    assert_eq!((logs, manifests), (1, 1), "seed {seed} point {point}: orphan logs or manifests in {files:?}");
}

/// Crashes at every mutating call of one workload; adds the points to the
/// matrix and returns how many were tried.
fn sweep(seed: u64, n_ops: usize, matrix: &mut Matrix, mode_of: impl Fn(u64) -> CrashMode) -> u64 {
    let ops = workload(seed, n_ops);
    let reference = reference_trace(&ops);
    let mut point = 0;
    loop {
        let mode = mode_of(point);
        if check_crash_point(seed, point, mode, &ops, &reference) {
            return point; // the workload finished before the fault fired
        }
        *matrix.entry((classify(&reference, point as usize), mode_name(mode))).or_default() += 1;
        point += 1;
    }
}

/// Crashes at every call of one workload that is not a WAL append (the
/// flush and compaction paths, where points are rarer), each both ways.
fn sweep_background(seed: u64, n_ops: usize, matrix: &mut Matrix) -> u64 {
    let ops = workload(seed, n_ops);
    let reference = reference_trace(&ops);
    let mut tried = 0;
    for (point, _) in reference.iter().enumerate() {
        let step = classify(&reference, point);
        if step == Step::WalAppend {
            continue;
        }
        for mode in [CrashMode::DropUnsynced, CrashMode::TearUnsynced { seed: point as u64 * 31 + seed }] {
            assert!(!check_crash_point(seed, point as u64, mode, &ops, &reference), "the workload ended early");
            *matrix.entry((step, mode_name(mode))).or_default() += 1;
            tried += 1;
        }
    }
    tried
}

/// `SILT_SOAK=1` (see scripts/soak.sh): many more workloads.
fn soak() -> bool {
    std::env::var("SILT_SOAK").is_ok_and(|v| v != "0" && !v.is_empty())
}

/// Checks that every step of the matrix was crashed in, and prints it (and
/// writes it to target/reliability/ for docs/reliability.md).
fn report(name: &str, matrix: &Matrix, modes: &[&str]) {
    let mut rows = Vec::new();
    for step in Step::ALL {
        for &mode in modes {
            let n = matrix.get(&(step, mode)).copied().unwrap_or(0);
            rows.push(format!("{{\"step\":\"{step:?}\",\"mode\":\"{mode}\",\"points\":{n}}}"));
        }
    }
    let total: u64 = matrix.values().sum();
    let line = format!("{{\"test\":\"{name}\",\"crash_points\":{total},\"matrix\":[{}]}}", rows.join(","));
    eprintln!("{line}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/reliability");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("{name}.json")), format!("{line}\n"));
    for step in Step::ALL {
        for &mode in modes {
            let n = matrix.get(&(step, mode)).copied().unwrap_or(0);
            assert!(n >= 3, "{name}: only {n} crash points in {step:?} ({mode}): the workload misses a step");
        }
    }
}

#[test]
fn crash_matrix_every_point_of_the_write_and_background_paths() {
    // Each workload is crashed at every mutating call, alternately dropping
    // the unsynced bytes and tearing them (a prefix survives, maybe with
    // garbage at its end), so every step is crashed in both ways.
    let (seeds, n_ops) = if soak() { (11..41u64, 2_000) } else { (11..13u64, 900) };
    let mut matrix = Matrix::new();
    for seed in seeds {
        let points = sweep(seed, n_ops, &mut matrix, |p| {
            if p % 2 == 0 {
                CrashMode::DropUnsynced
            } else {
                CrashMode::TearUnsynced { seed: p * 7919 + seed }
            }
        });
        assert!(points > 100, "seed {seed}: only {points} crash points: the workload does too little I/O");
        assert_compactions_happen(seed, n_ops);
    }
    // More workloads, crashed only in the flush and compaction paths.
    let seeds = if soak() { 100..400u64 } else { 100..106u64 };
    for seed in seeds {
        sweep_background(seed, n_ops, &mut matrix);
    }
    report(if soak() { "crash-matrix-soak" } else { "crash-matrix" }, &matrix, &["drop unsynced", "tear unsynced"]);
}

/// Runs the workload with a second thread pumping background work, whose
/// flush and compaction steps write their tables with the state lock let
/// go, while this thread writes (and stalls, doing steps itself); crashes
/// at mutating call `point`, whichever thread makes it, and checks the
/// recovery. Returns the step the failed call belonged to and the
/// compactions done before the crash, or `None` if the workload finished
/// first.
fn check_concurrent_crash_point(seed: u64, point: u64, mode: CrashMode, ops: &[Op]) -> Option<(Step, u64)> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let db = Arc::new(Db::open(Arc::new(fs.clone()), "db", options()).expect("first open"));
    fs.start_trace();
    fs.fail_after(Some(point));
    let stop = Arc::new(AtomicBool::new(false));
    let pump = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0usize;
            while !stop.load(Ordering::Acquire) {
                match db.do_background_work(1 + i % 4) {
                    Ok(p) if !p.work_left => std::thread::yield_now(),
                    Ok(_) => {}
                    Err(_) => break,
                }
                i += 1;
            }
        })
    };
    // No inline background work: the pump does it, or a stalled write.
    let (acked, last_synced) = run_until_failure(&db, ops, usize::MAX);
    stop.store(true, Ordering::Release);
    pump.join().expect("the pump thread panicked");
    let trace = fs.trace();
    let compactions = db.statistics().ticker("silt.compactions");
    let step = (trace.len() > point as usize).then(|| (classify(&trace, point as usize), compactions));
    fs.crash(mode).unwrap();
    drop(Arc::try_unwrap(db).ok().expect("the pump let go of the database"));
    check_recovered(&fs, seed, point, mode, ops, acked, last_synced);
    step
}

#[test]
fn a_crash_anywhere_while_another_thread_runs_background_work_loses_nothing() {
    // Flush and compaction steps run without the state lock while the
    // writer goes on, so which call comes at which point differs run to
    // run: points are tried at a stride over the workload's whole length,
    // some in each step of the background path.
    let (seeds, n_ops, stride) = if soak() { (200..230u64, 900, 3) } else { (200..203u64, 600, 6) };
    let mut matrix = Matrix::new();
    let mut compactions = 0;
    for seed in seeds {
        let ops = workload(seed, n_ops);
        let mut point = 0;
        loop {
            let mode = if (point / stride) % 2 == 0 {
                CrashMode::DropUnsynced
            } else {
                CrashMode::TearUnsynced { seed: point * 31 + seed }
            };
            let Some((step, done)) = check_concurrent_crash_point(seed, point, mode, &ops) else { break };
            compactions += done;
            *matrix.entry((step, mode_name(mode))).or_default() += 1;
            point += stride;
        }
    }
    let line = format!("{matrix:?}");
    let total: u64 = matrix.values().sum();
    eprintln!("concurrent crash points: {total}, {compactions} compactions before the crashes; by step: {line}");
    // (A failed install is not told from a flush's edit here: the calls
    // after it, which `classify` looks at, failed too.)
    let count = |steps: &[Step]| -> u64 { matrix.iter().filter(|((s, _), _)| steps.contains(s)).map(|(_, n)| n).sum() };
    assert!(count(&[Step::TableWrite]) >= 10, "too few concurrent crash points in table writes: {line}");
    assert!(
        count(&[Step::ManifestEdit, Step::CompactionInstall]) >= 10,
        "too few concurrent crash points in manifest edits: {line}"
    );
    assert!(compactions >= 100, "the runs compacted too little ({compactions} compactions before their crashes)");
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
    assert!(stats.ticker("silt.compaction.idle") >= 1, "the crash workload started no idle compaction:\n{stats}");
    let dicts = stats.ticker("silt.compression.dict.block.read.count");
    assert!(dicts >= 1, "the crash workload read no table with a dictionary:\n{stats}");
}

/// The state after all of `ops`.
fn state_after(ops: &[Op]) -> State {
    let mut state = State::new();
    for op in ops {
        apply(&mut state, op);
    }
    state
}

/// Runs `ops` to the end on `db` (no faults armed), the last one synced.
fn write_all(db: &Db, ops: &[Op]) {
    let (acked, _) = run_until_failure(db, ops, 7);
    assert_eq!(acked, ops.len(), "the workload failed without faults");
    let mut b = WriteBatch::new();
    b.put(b"last", b"synced");
    db.write(&WriteOptions { sync: true }, b).unwrap();
}

#[test]
fn a_crash_anywhere_in_the_flush_at_close_loses_nothing() {
    // close() flushes memtables above flush_on_close_bytes after syncing
    // the WAL; crash at every call of that flush, reopen: every write is
    // there, and a clean reopen after a finished close replays no WAL.
    let opts = || Options { flush_on_close_bytes: 1 << 10, ..options() };
    let ops = workload(21, 250);
    let mut want = state_after(&ops);
    want.insert(b"last".to_vec(), b"synced".to_vec());
    // The mutating calls of a whole close.
    let close_calls = {
        let probe = FaultFs::new(Arc::new(MemFs::new()));
        let db = Db::open(Arc::new(probe.clone()), "db", opts()).unwrap();
        write_all(&db, &ops);
        let before = probe.mutating_ops();
        db.close().unwrap();
        probe.mutating_ops() - before
    };
    assert!(close_calls > 10, "close made only {close_calls} calls: it flushed nothing");
    for point in 0..=close_calls {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        let shared: Arc<dyn Fs> = Arc::new(fs.clone());
        let db = Db::open(shared.clone(), "db", opts()).unwrap();
        write_all(&db, &ops);
        fs.fail_after(Some(point));
        let _ = db.close();
        let mode = if point % 2 == 0 { CrashMode::DropUnsynced } else { CrashMode::TearUnsynced { seed: point } };
        fs.crash(mode).unwrap();
        drop(db);
        let db = Db::open(shared.clone(), "db", opts())
            .unwrap_or_else(|e| panic!("crash at close call {point}: reopen: {e}"));
        assert_eq!(read_all(&db), want, "crash at close call {point} lost or changed data");
        db.verify().unwrap();
        if point == close_calls {
            // The close finished: its WAL holds nothing to replay.
            let props = db.properties();
            assert_eq!((props.immutable_memtables, props.last_sequence > 0), (0, true));
            for name in FaultFs::list(&fs, "db").unwrap().iter().filter(|n| n.ends_with(".log")) {
                let path = format!("db/{name}");
                assert!(
                    fs.open(&path, false).unwrap().is_empty().unwrap(),
                    "{name} still holds records after a flush at close"
                );
            }
        }
    }
}

#[test]
fn a_clean_reopen_writes_nothing_and_new_writes_go_on_in_its_wal() {
    let opts = || Options { flush_on_close_bytes: usize::MAX, ..options() };
    let ops = workload(22, 120);
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let shared: Arc<dyn Fs> = Arc::new(fs.clone());
    let db = Db::open(shared.clone(), "db", opts()).unwrap();
    write_all(&db, &ops[..60]);
    db.close().unwrap();
    drop(db);
    let files = FaultFs::list(&fs, "db").unwrap();
    let before = fs.mutating_ops();
    fs.start_trace();
    let db = Db::open(shared.clone(), "db", opts()).unwrap();
    // It syncs the WAL it goes on with (the process before may have ended
    // without a close), and writes nothing.
    let trace = fs.trace();
    assert!(trace.iter().all(|op| op.op.starts_with("sync")), "a clean open wrote to storage: {trace:?}");
    assert!(fs.mutating_ops() - before <= 2, "{trace:?}");
    assert_eq!(FaultFs::list(&fs, "db").unwrap(), files);
    // Writes after it append to the WAL it replayed; crash at each of them.
    let mut want = state_after(&ops[..60]);
    want.insert(b"last".to_vec(), b"synced".to_vec());
    drop(db);
    for point in 0..40u64 {
        let copy = FaultFs::new(Arc::new(MemFs::new()));
        for name in FaultFs::list(&fs, "db").unwrap() {
            let path = format!("db/{name}");
            let data = silt_engine::fs::read_all(&*fs.open(&path, false).unwrap(), &path).unwrap();
            let f = copy.open(&path, true).unwrap();
            f.append(&data).unwrap();
            f.sync().unwrap();
        }
        copy.sync_dir("db").unwrap();
        let shared: Arc<dyn Fs> = Arc::new(copy.clone());
        let db = Db::open(shared.clone(), "db", opts()).unwrap();
        copy.fail_after(Some(point));
        let (acked, last_synced) = run_until_failure(&db, &ops[60..], 7);
        copy.crash(CrashMode::TearUnsynced { seed: point }).unwrap();
        drop(db);
        let db =
            Db::open(shared, "db", opts()).unwrap_or_else(|e| panic!("crash at {point} after a clean reopen: {e}"));
        let got = read_all(&db);
        let mut state = want.clone();
        let min = last_synced.map_or(0, |i| i + 1);
        let mut matched = min == 0 && state == got;
        for (i, op) in ops[60..60 + (acked + 1).min(ops.len() - 60)].iter().enumerate() {
            apply(&mut state, op);
            matched |= i + 1 >= min && state == got;
        }
        assert!(matched, "crash at {point} after a clean reopen: the state is no prefix of the writes");
    }
}

#[test]
fn a_crash_anywhere_in_the_background_flush_of_recovered_memtables_loses_nothing() {
    // A torn WAL leaves recovered memtables for the background work to
    // flush after open (the JavaScript pump runs it at once); crash at
    // every call of that work, reopen, compare.
    let ops = workload(23, 300);
    let base = FaultFs::new(Arc::new(MemFs::new()));
    let shared: Arc<dyn Fs> = Arc::new(base.clone());
    {
        let db = Db::open(shared.clone(), "db", options()).unwrap();
        run_until_failure(&db, &ops, 1_000_000);
        base.crash(CrashMode::TearUnsynced { seed: 9 }).unwrap();
    }
    let reference = read_all(&Db::open(shared.clone(), "db", options()).unwrap());
    let image = FaultFs::list(&base, "db").unwrap();
    let mut flushed = 0;
    for point in 0.. {
        let copy = FaultFs::new(Arc::new(MemFs::new()));
        for name in &image {
            let path = format!("db/{name}");
            let data = silt_engine::fs::read_all(&*base.open(&path, false).unwrap(), &path).unwrap();
            let f = copy.open(&path, true).unwrap();
            f.append(&data).unwrap();
            f.sync().unwrap();
        }
        let shared: Arc<dyn Fs> = Arc::new(copy.clone());
        let db = Db::open(shared.clone(), "db", options()).unwrap();
        assert!(db.properties().immutable_memtables > 0 || point > 0, "nothing recovered to flush");
        copy.fail_after(Some(point));
        let mut finished = false;
        while let Ok(w) = db.do_background_work(4) {
            if !w.work_left {
                finished = true;
                break;
            }
        }
        copy.crash(CrashMode::DropUnsynced).unwrap();
        drop(db);
        let db = Db::open(shared, "db", options())
            .unwrap_or_else(|e| panic!("crash at {point} of the recovered flush: {e}"));
        assert_eq!(read_all(&db), reference, "crash at {point} of the recovered flush changed the data");
        flushed += 1;
        if finished {
            break;
        }
    }
    assert!(flushed > 5, "only {flushed} crash points in the recovered flush");
}

/// Crashes a workload (`ops`, written by `run` on a database `open` makes)
/// at every mutating call of its `reference` trace that is not a WAL
/// append, dropping and then tearing unsynced bytes; after each crash
/// `before_reopen` readies the file system, and the recovery is checked.
/// Returns the points tried.
fn crash_off_the_wal_path(
    seed: u64,
    ops: &[Op],
    reference: &[FsOp],
    open: impl Fn(&FaultFs) -> Db,
    run: impl Fn(&Db) -> (usize, Option<usize>),
    before_reopen: impl Fn(&FaultFs),
) -> u64 {
    let mut tried = 0;
    for (point, _) in reference.iter().enumerate() {
        if classify(reference, point) == Step::WalAppend {
            continue;
        }
        for mode in [CrashMode::DropUnsynced, CrashMode::TearUnsynced { seed: point as u64 * 31 + seed }] {
            let fs = FaultFs::new(Arc::new(MemFs::new()));
            let db = open(&fs);
            fs.start_trace();
            fs.fail_after(Some(point as u64));
            let (acked, last_synced) = run(&db);
            assert!(acked < ops.len(), "point {point}: the workload ended before the fault");
            let failed = &fs.trace()[point];
            assert_eq!(
                (failed.op, &failed.path),
                (reference[point].op, &reference[point].path),
                "point {point}: not deterministic"
            );
            fs.crash(mode).unwrap();
            drop(db);
            before_reopen(&fs);
            check_recovered(&fs, seed, point as u64, mode, ops, acked, last_synced);
            tried += 1;
        }
    }
    tried
}

/// Files the short-of-files crash test allows: the workload's live tables,
/// logs and manifest fit, with too few left over to split outputs freely.
const SHORT_CAP: usize = 10;

#[test]
fn a_crash_anywhere_while_files_run_short_loses_nothing() {
    // On a file system of SHORT_CAP files (FaultFs::set_file_cap),
    // compactions keep outputs open past their target, run before flushes,
    // and merge files for want of files (Reason::FileCount): crash at every
    // mutating call of the flush and compaction paths, both ways, and
    // recover (without the cap).
    // 3,000 keys: live tables of several target sizes.
    let ops = workload_over(21, 900, 3000);
    let open_short = |fs: &FaultFs| {
        fs.set_file_cap(Some(("db", SHORT_CAP)));
        // Uncompressed: the workload's values (one byte repeated) would
        // shrink to nothing, and no output would reach its target.
        Db::open(Arc::new(fs.clone()), "db", Options { compression: silt_engine::Compression::None, ..options() })
            .expect("first open")
    };
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let db = open_short(&fs);
    fs.start_trace();
    let (acked, _) = run_writes(&db, &ops, 7, 64, true, false);
    assert_eq!(acked, ops.len(), "the workload failed without faults");
    let reference = fs.trace();
    let stats = db.statistics();
    assert!(
        stats.ticker("silt.compaction.outputs.kept.open") >= 1,
        "no output was kept open: per level {:?}, files {:?}\n{stats}",
        db.properties().files_per_level,
        FaultFs::list(&fs, "db")
    );
    assert!(stats.ticker("silt.compactions") >= 3, "{stats}");
    assert!(stats.ticker("silt.compaction.for.files") >= 1, "no compaction for want of files:\n{stats}");
    drop(db);
    let run = |db: &Db| run_writes(db, &ops, 7, 64, true, false);
    let tried = crash_off_the_wal_path(21, &ops, &reference, open_short, run, |fs| fs.set_file_cap(None));
    eprintln!("short of files: {tried} crash points in the flush and compaction paths");
    assert!(tried >= 100, "only {tried} crash points in the background paths");
}

#[test]
fn a_crash_anywhere_in_a_large_transaction_loses_nothing() {
    // Transactions that spill their writes into files of their own before
    // every write but the first: crash at every mutating call that is not
    // a WAL append (the spills, the commits' publishing, flushes and
    // compactions), both ways, and recover: a commit is all or nothing,
    // durable once acknowledged, and no own file outlives the crash.
    let ops = workload(31, 300);
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(Arc::new(fs.clone()), "db", options()).expect("first open");
    fs.start_trace();
    let (acked, _) = run_writes(&db, &ops, 7, 1, false, true);
    assert_eq!(acked, ops.len(), "the workload failed without faults");
    let reference = fs.trace();
    let stats = db.statistics();
    let (spills, published) =
        (stats.ticker("silt.transaction.spills"), stats.ticker("silt.transaction.published.from.files"));
    assert!(spills >= 50 && published >= 15, "{spills} spills, {published} published");
    drop(db);
    let open = |fs: &FaultFs| Db::open(Arc::new(fs.clone()), "db", options()).expect("first open");
    let run = |db: &Db| run_writes(db, &ops, 7, 1, false, true);
    let tried = crash_off_the_wal_path(31, &ops, &reference, open, run, |_| {});
    eprintln!("large transactions: {tried} crash points ({spills} spills, {published} commits published from files)");
    assert!(tried >= 200, "only {tried} crash points");
}
