//! The model test's operations where features meet (each a data loss found
//! by review that the model test did not draw): stepped and ranged manual
//! compactions with reads between their slices, large range deletes that
//! shrink the last level, optimistic transactions (spilled or not) racing
//! other writers across flushes and compactions, reopens with a memtable at
//! its size, export and import round trips in both forms, repair of a
//! healthy database, and the idle compaction. Every read is checked against the oracle.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::Rng;
use silt_engine::fs::MemFs;
use silt_engine::{Db, Error, ExportForm, ExportOptions, IngestOptions, ReadOptions, WriteBatch, WriteOptions};

use super::{counter_key, key, merge_add, range_delete, value_for, Model};

const W: WriteOptions = WriteOptions { sync: false };

fn any_key(rng: &mut SmallRng) -> Vec<u8> {
    if rng.random_bool(0.25) {
        counter_key(rng)
    } else {
        key(rng)
    }
}

/// A few gets and one MultiGet, checked against the oracle.
pub fn check_reads(db: &Db, model: &Model, rng: &mut SmallRng, ctx: &str) {
    let r = ReadOptions::default();
    let keys: Vec<Vec<u8>> = (0..6).map(|_| any_key(rng)).collect();
    for k in &keys {
        assert_eq!(db.get(&r, k).unwrap(), model.get(k).cloned(), "{ctx}: get {k:?}");
    }
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let got = db.multi_get(&r, &refs, true).unwrap();
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(got.get(i), model.get(k).map(|v| &v[..]), "{ctx}: multi_get {k:?}");
    }
}

/// A manual compaction run in budgeted slices (as a browser embedder runs
/// it), whole or ranged, with reads between every slice.
pub fn stepped_compact_range(db: &Db, model: &Model, rng: &mut SmallRng, ctx: &str) {
    let (a, b) = (key(rng), key(rng));
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    match rng.random_range(0..3) {
        0 => db.start_compact_range(None, None).unwrap(),
        1 => db.start_compact_range(Some(&lo), Some(&hi)).unwrap(),
        _ => db.start_compact_range(None, Some(&hi)).unwrap(),
    }
    run_in_slices(db, model, rng, &format!("{ctx}: stepped compaction"));
}

/// Runs the pending manual compaction in budgeted slices, checking reads between them.
fn run_in_slices(db: &Db, model: &Model, rng: &mut SmallRng, what: &str) {
    let mut slices = 0;
    while db.manual_compaction_pending() {
        db.do_background_work(rng.random_range(1..3)).unwrap();
        slices += 1;
        check_reads(db, model, rng, &format!("{what}, after slice {slices}"));
        assert!(slices < 100_000, "{what}: never ends");
    }
}

/// The idle compaction (issue 35): background work caught up, then started
/// if the database is idle enough for one and run in budgeted slices with
/// reads between them; after it, a lookup has one sorted run to probe.
/// (The model also starts one without running it: the ops after it, writes,
/// transactions, ingests, compactions and reopens, meet it half done.)
pub fn idle_compaction(db: &Db, model: &Model, rng: &mut SmallRng, ctx: &str) {
    while db.do_background_work(8).unwrap().work_left {}
    if !db.start_idle_compaction().unwrap() {
        return;
    }
    run_in_slices(db, model, rng, &format!("{ctx}: idle compaction"));
    let l = db.properties().files_per_level;
    let runs = l[0] + l[1..].iter().filter(|&&n| n > 0).count() as u64;
    assert!(runs <= 1, "{ctx}: an idle compaction left levels {l:?}");
}

/// A range delete over a large part of the key space, compacted: the last
/// level shrinks and the base level moves down, leaving data above it.
pub fn large_range_delete(db: &Db, model: &mut Model, rng: &mut SmallRng) {
    let from = rng.random_range(0..200u32);
    let (a, b) = (format!("k{from:03}").into_bytes(), format!("k{:03}", from + 200).into_bytes());
    db.delete_range(&W, &a, &b).unwrap();
    range_delete(model, &a, &b);
    db.compact_range(Some(&a), Some(&b)).unwrap();
}

/// What another writer touched while a transaction was open.
#[derive(Default)]
struct Touched {
    keys: Vec<Vec<u8>>,
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Touched {
    fn conflicts(&self, tracked: &[Vec<u8>], tracked_ranges: &[(Vec<u8>, Vec<u8>)]) -> bool {
        let in_range = |k: &[u8], (s, e): &(Vec<u8>, Vec<u8>)| s.as_slice() <= k && k < e.as_slice();
        tracked.iter().any(|t| self.keys.contains(t) || self.ranges.iter().any(|r| in_range(t, r)))
            || tracked_ranges.iter().any(|tr| {
                self.keys.iter().any(|k| in_range(k, tr)) || self.ranges.iter().any(|(s, e)| s < &tr.1 && &tr.0 < e)
            })
    }
}

/// One write by another writer, applied to the database and the oracle.
fn other_write(db: &Db, model: &mut Model, rng: &mut SmallRng, touched: &mut Touched) {
    match rng.random_range(0..11) {
        0..=4 => {
            let k = any_key(rng);
            let v = value_for(rng, &k);
            db.put(&W, &k, &v).unwrap();
            model.insert(k.clone(), v);
            touched.keys.push(k);
        }
        5..=6 => {
            let k = any_key(rng);
            db.delete(&W, &k).unwrap();
            model.remove(&k);
            touched.keys.push(k);
        }
        7 => {
            let k = counter_key(rng);
            db.merge(&W, &k, &3u64.to_le_bytes()).unwrap();
            merge_add(model, &k, 3);
            touched.keys.push(k);
        }
        8 => {
            let a = key(rng);
            let mut z = a.clone();
            z.push(b'~');
            db.delete_range(&W, &a, &z).unwrap();
            range_delete(model, &a, &z);
            touched.ranges.push((a, z));
        }
        9 => {
            let k = any_key(rng);
            let v = value_for(rng, &k);
            let mut b = WriteBatch::new();
            b.put(&k, &v);
            db.ingest(&b, &IngestOptions::default()).unwrap();
            model.insert(k.clone(), v);
            touched.keys.push(k);
        }
        _ => touched.keys.extend(ingest_rocksdb_tables(db, model, rng)),
    }
}

/// RocksDB tables of random puts (written by Silt's RocksDB table writer,
/// bare or in a tar archive, pushed in pieces of random size) taken into
/// the database: a later table's keys win. Returns the keys written.
pub fn ingest_rocksdb_tables(db: &Db, model: &mut Model, rng: &mut SmallRng) -> Vec<Vec<u8>> {
    use silt_engine::rocksdb::{tar, TableWriter, TableWriterOptions};
    let mut tables = Vec::new();
    let mut written = Vec::new();
    for _ in 0..rng.random_range(1..4) {
        let mut entries: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for _ in 0..rng.random_range(1..40) {
            let k = any_key(rng);
            let v = value_for(rng, &k);
            entries.insert(k, v);
        }
        let lz4 = rng.random_bool(0.5);
        let block_size = rng.random_range(64..4096);
        // With a filter or not, from the block size's last bit: a draw of
        // its own would change every seed's run (model.rs checks what each
        // seed's run reached).
        let bloom_bits_per_key = if block_size % 2 == 0 { 10 } else { 0 };
        let mut w = TableWriter::new(TableWriterOptions { lz4, block_size, bloom_bits_per_key });
        for (k, v) in &entries {
            w.add(k, v).unwrap();
        }
        tables.push(w.finish().unwrap());
        for (k, v) in entries {
            written.push(k.clone());
            model.insert(k, v);
        }
    }
    let bytes = if tables.len() == 1 && rng.random_bool(0.5) {
        tables.pop().unwrap()
    } else {
        let mut archive = Vec::new();
        for (i, t) in tables.iter().enumerate() {
            tar::put_header(&mut archive, &format!("{i:06}.sst"), t.len() as u64);
            archive.extend_from_slice(t);
            tar::put_padding(&mut archive, t.len() as u64);
        }
        tar::put_end(&mut archive);
        archive
    };
    let mut ingest = silt_engine::RocksdbIngest::new();
    for piece in bytes.chunks(rng.random_range(1..8192)) {
        ingest.push(piece).unwrap();
    }
    ingest.finish(db).unwrap();
    written
}

/// The database exported in the RocksDB form (a tar archive of RocksDB
/// tables, in pieces of random size) and taken into an empty one: the copy
/// holds what the oracle does (merges applied, deletions resolved away).
pub fn rocksdb_round_trip(db: &Db, model: &Model, rng: &mut SmallRng, ctx: &str) {
    let options = ExportOptions {
        form: ExportForm::Rocksdb,
        lz4: rng.random_bool(0.5),
        target_file_size: [0, 1, 1024, 16 << 10][rng.random_range(0..4)],
        ..ExportOptions::default()
    };
    let mut e = db.export(&options).unwrap();
    let mut archive = Vec::new();
    let piece = rng.random_range(1..64 << 10);
    while let Some(c) = e.next_chunk(piece).unwrap() {
        archive.extend_from_slice(&c);
    }
    drop(e);
    let copy = Db::open(std::sync::Arc::new(MemFs::new()), "copy", super::options()).unwrap();
    let mut ingest = silt_engine::RocksdbIngest::new();
    for p in archive.chunks(rng.random_range(1..32 << 10)) {
        ingest.push(p).unwrap();
    }
    ingest.finish(&copy).unwrap();
    assert_eq!(
        &super::common::read_all(&copy),
        model,
        "{ctx}: a RocksDB-form export taken into a new database ({options:?})"
    );
}

/// An optimistic transaction (spilled into its own files or not) that
/// reads and writes a few keys while another writer writes, flushes and
/// compacts; its commit must fail exactly when another write touched what
/// it tracks (a commit over a newer write is a lost update), and its reads
/// see its snapshot and its own writes.
pub fn transaction_race(db: &Db, model: &mut Model, rng: &mut SmallRng, ctx: &str) {
    let at_begin = model.clone();
    let mut t = db.begin_optimistic();
    if rng.random_bool(0.3) {
        t.set_spill_bytes(1);
    }
    let mut tracked: Vec<Vec<u8>> = Vec::new();
    let mut tracked_ranges: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut touched = Touched::default();
    // The transaction's own view: the snapshot plus its writes.
    let mut own = at_begin.clone();
    // Its writes, replayed on the oracle at commit.
    let mut ops: Vec<(u8, Vec<u8>, Vec<u8>)> = Vec::new();
    for _ in 0..rng.random_range(1..12) {
        match rng.random_range(0..10) {
            0..=2 => {
                let k = any_key(rng);
                let got = t.get_for_update(db, &k).unwrap();
                assert_eq!(got, own.get(&k).cloned(), "{ctx}: transaction get_for_update {k:?}");
                tracked.push(k);
            }
            3..=5 => {
                let k = any_key(rng);
                let v = value_for(rng, &k);
                t.put(&k, &v).unwrap();
                own.insert(k.clone(), v.clone());
                tracked.push(k.clone());
                ops.push((0, k, v));
            }
            6 => {
                let k = any_key(rng);
                t.delete(&k).unwrap();
                own.remove(&k);
                tracked.push(k.clone());
                ops.push((1, k, vec![]));
            }
            7 => {
                let k = counter_key(rng);
                t.merge(db, &k, &11u64.to_le_bytes()).unwrap();
                merge_add(&mut own, &k, 11);
                tracked.push(k.clone());
                ops.push((2, k, vec![]));
            }
            _ => {
                let a = key(rng);
                let mut z = a.clone();
                z.push(b'~');
                t.delete_range(&a, &z).unwrap();
                range_delete(&mut own, &a, &z);
                tracked_ranges.push((a.clone(), z.clone()));
                ops.push((3, a, z));
            }
        }
        // Meanwhile, others write, and the data moves.
        for _ in 0..rng.random_range(0..4) {
            other_write(db, model, rng, &mut touched);
        }
        match rng.random_range(0..8) {
            0 => db.flush().unwrap(),
            1 => db.compact_range(None, None).unwrap(),
            2 => {
                db.do_background_work(2).unwrap();
            }
            _ => {}
        }
    }
    let conflict = touched.conflicts(&tracked, &tracked_ranges);
    match t.commit(db, &W) {
        Ok(()) => {
            assert!(!conflict, "{ctx}: a transaction committed over a newer write (lost update)");
            for (op, a, b) in ops {
                match op {
                    0 => {
                        model.insert(a, b);
                    }
                    1 => {
                        model.remove(&a);
                    }
                    2 => merge_add(model, &a, 11),
                    _ => range_delete(model, &a, &b),
                }
            }
        }
        Err(Error::Busy(why)) => assert!(conflict, "{ctx}: a transaction failed with no conflict: {why}"),
        Err(e) => panic!("{ctx}: transaction commit: {e}"),
    }
}

/// Writes until the active memtable is at its size without being switched
/// out yet, then closes and reopens (the memtable is replayed whole), and
/// sometimes flushes and reopens once more.
pub fn reopen_with_a_full_memtable(
    db: Db,
    fs: &MemFs,
    model: &mut Model,
    rng: &mut SmallRng,
    open: &mut dyn FnMut(&MemFs, &mut SmallRng) -> Db,
) -> Db {
    let limit = 64 << 10; // options().write_buffer_size
    for _ in 0..10_000 {
        let p = db.properties();
        if p.memtable_bytes >= limit || p.immutable_memtables > 0 {
            break;
        }
        if rng.random_bool(0.3) {
            let k = counter_key(rng);
            db.merge(&W, &k, &1u64.to_le_bytes()).unwrap();
            merge_add(model, &k, 1);
        } else {
            let k = key(rng);
            let v = value_for(rng, &k);
            db.put(&W, &k, &v).unwrap();
            model.insert(k, v);
        }
    }
    db.close().unwrap();
    drop(db);
    let db = open(fs, rng);
    if rng.random_bool(0.5) {
        db.flush().unwrap();
        db.close().unwrap();
        drop(db);
        return open(fs, rng);
    }
    db
}

/// The database exported (tables or entries form, in pieces of random
/// size) and imported into an empty one: the copy holds what the oracle
/// does.
pub fn export_import_round_trip(db: &Db, model: &Model, rng: &mut SmallRng, ctx: &str) {
    let form = [ExportForm::Tables, ExportForm::Entries][rng.random_range(0..2)];
    let mut e = db.export(&ExportOptions { form, ..ExportOptions::default() }).unwrap();
    let mut stream = Vec::new();
    let piece = rng.random_range(1..64 << 10);
    while let Some(c) = e.next_chunk(piece).unwrap() {
        stream.extend_from_slice(&c);
    }
    drop(e);
    let copy = Db::open(std::sync::Arc::new(MemFs::new()), "copy", super::options()).unwrap();
    let mut imp = copy.import().unwrap();
    for p in stream.chunks(rng.random_range(1..32 << 10)) {
        imp.push(&copy, p).unwrap();
    }
    imp.finish(&copy).unwrap();
    assert_eq!(&super::common::read_all(&copy), model, "{ctx}: an import of an export ({form:?})");
    // The copy takes writes numbered above what it imported.
    copy.put(&W, b"k000", b"after").unwrap();
    assert_eq!(copy.get(&ReadOptions::default(), b"k000").unwrap().as_deref(), Some(&b"after"[..]));
}

/// Closes, repairs the healthy database, reopens: nothing is lost.
pub fn repair_healthy(
    db: Db,
    fs: &MemFs,
    model: &Model,
    rng: &mut SmallRng,
    open: &mut dyn FnMut(&MemFs, &mut SmallRng) -> Db,
    ctx: &str,
) -> Db {
    db.close().unwrap();
    drop(db);
    let fs_arc: std::sync::Arc<dyn silt_engine::fs::Fs> = std::sync::Arc::new(fs.clone());
    let report = silt_engine::repair(fs_arc, "db", &super::options()).unwrap();
    assert_eq!((report.tables_damaged, report.tables_lost, report.wals_damaged), (0, 0, 0), "{ctx}: {report:?}");
    let db = open(fs, rng);
    assert_eq!(&super::common::read_all(&db), model, "{ctx}: after repairing a healthy database ({report:?})");
    db
}
