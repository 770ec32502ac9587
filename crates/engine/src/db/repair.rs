//! Repair: rebuilds a database that no longer opens (a damaged manifest, a
//! table with a bad block, a WAL with a bad record) from whatever is intact,
//! as LevelDB's `RepairDB` does.
//!
//! Which files: if the newest complete manifest still reads, the tables it
//! names and the WALs from its log number on; otherwise every table and WAL
//! found (then versions that a compaction had dropped, in inputs not yet
//! deleted, may come back; the report says so). WALs whose writes a table
//! holds already are left out (replaying them would apply merge operands
//! twice): with a manifest, those below its log number; without one, those
//! some table holds an entry of (see the comment in [`repair`]).
//!
//! Every table is read (block by block where it is damaged, skipping the
//! blocks that fail their checksum) and every WAL replayed up to its first
//! damaged record. All of it is merged, newest version of each key first as
//! the internal-key order has it, into one new table at level 0 (one sorted
//! run, so no question of which of several overlapping files is newer can
//! arise), with every range tombstone found. Then a new manifest names that
//! table alone and a new empty WAL, and only once that manifest is durable
//! are the old files deleted: a crash during repair leaves the old files (the
//! old manifest, if it still reads, stays the newest complete one until the
//! new one is complete) and repair can simply run again.
//!
//! What is lost is reported: blocks of tables that failed their checksum,
//! tables whose footer or index is unreadable, and WAL records after damage.

use std::collections::HashSet;
use std::sync::Arc;

use super::create_wal;
use super::transaction::OWN_SEQ_BASE;
use crate::batch::WriteBatch;
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::format::key::{self, SequenceNumber};
use crate::fs::{join, Fs};
use crate::iter::InternalIterator;
use crate::iter::MergingIterator;
use crate::memtable::MemTable;
use crate::range_del::Tombstone;
use crate::sst::{Table, TableBuilder};
use crate::stats::Statistics;
use crate::version::{
    manifest_name, parse_file_name, table_path, wal_path, FileKind, FileMeta, Recovered, VersionEdit, VersionSet,
};
use crate::wal::{LogReader, LogWriter};
use crate::Options;

/// What [`repair`] found and kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Tables read whole.
    pub tables_intact: u64,
    /// Tables with blocks that failed their checksum (the other blocks kept).
    pub tables_damaged: u64,
    /// Tables that could not be read at all (footer, index or metaindex
    /// damaged); their data is lost.
    pub tables_lost: u64,
    /// Data blocks skipped because they failed their checksum.
    pub blocks_lost: u64,
    /// WAL records replayed.
    pub wal_records: u64,
    /// WAL records left out because a table already holds them.
    pub wal_records_flushed: u64,
    /// WALs that ended in damage (records after it are lost).
    pub wals_damaged: u64,
    /// Entries (versions of keys) in the rebuilt table.
    pub entries: u64,
    /// Range tombstones in the rebuilt table.
    pub range_deletions: u64,
    /// What went wrong where, one line per damaged file.
    pub problems: Vec<String>,
}

/// A WAL replayed by [`repair`].
struct ReplayedWal {
    path: String,
    mem: Arc<MemTable>,
    records: u64,
    /// A table holds its writes already.
    flushed: bool,
}

/// The WAL whose batches took sequence number `seq`, if any; `ranges` are
/// (first, last, WAL index), sorted and disjoint.
fn wal_holding(ranges: &[(SequenceNumber, SequenceNumber, usize)], seq: SequenceNumber) -> Option<usize> {
    let i = ranges.partition_point(|&(first, _, _)| first <= seq);
    let &(first, last, w) = ranges.get(i.checked_sub(1)?)?;
    (first <= seq && seq <= last).then_some(w)
}

/// Rebuilds the database in `dir` from its intact parts (see the module
/// documentation). The database must not be open. Afterwards
/// [`crate::Db::open`] opens it with everything that was salvaged.
pub fn repair(fs: Arc<dyn Fs>, dir: &str, options: &Options) -> Result<RepairReport> {
    options.validate()?;
    let dir = dir.trim_end_matches('/').to_string();
    let _lock = fs.lock(&join(&dir, "LOCK"))?;
    let mut names = fs.list(&dir)?;
    crate::sort::sort(&mut names);
    let kinds: Vec<(String, FileKind)> =
        names.iter().filter_map(|n| parse_file_name(n).map(|k| (n.clone(), k))).collect();
    let max_number = kinds
        .iter()
        .map(|(_, k)| match k {
            FileKind::Table(n) | FileKind::Wal(n) | FileKind::Manifest(n) => *n,
            FileKind::Lock => 0,
        })
        .max()
        .unwrap_or(0);

    let mut report = RepairReport::default();
    let cache = Arc::new(BlockCache::new(8 << 20));
    let stats = Arc::new(Statistics::default());
    let mut sources: Vec<Box<dyn InternalIterator>> = Vec::new();
    let mut tombstones: Vec<Tombstone> = Vec::new();

    // If the newest complete manifest still reads, it says which tables are
    // live and which WALs are flushed: tables it does not name (a
    // compaction's inputs not yet deleted, an unfinished job's outputs) and
    // WALs below its log number would bring back versions that compactions
    // dropped, or apply merge operands twice.
    let mut manifests: Vec<u64> =
        kinds.iter().filter_map(|(_, k)| if let FileKind::Manifest(n) = k { Some(*n) } else { None }).collect();
    crate::sort::sort_by(&mut manifests, |a, b| b.cmp(a));
    let mut live: Option<(HashSet<u64>, u64)> = None;
    for m in manifests {
        match VersionSet::recover(fs.clone(), &dir, m) {
            Ok(Recovered::Ok(mut set)) => {
                live = Some((set.live_files(), set.log_number));
                break;
            }
            Ok(Recovered::Incomplete) => continue,
            Err(e) => {
                report.problems.push(format!("{}: unreadable: {e}", manifest_name(m)));
                break;
            }
        }
    }
    if live.is_none() {
        report.problems.push(
            "no readable manifest: every table and WAL found is used, so versions that compactions had \
             dropped (in inputs not yet deleted) may come back"
                .to_string(),
        );
    }
    // Every WAL still needed, each into a memtable of its own, with the
    // ranges of sequence numbers its batches took.
    let mut replayed_wals: Vec<ReplayedWal> = Vec::new();
    let mut ranges: Vec<(SequenceNumber, SequenceNumber, usize)> = Vec::new();
    for (_, kind) in &kinds {
        let FileKind::Wal(number) = *kind else { continue };
        let path = wal_path(&dir, number);
        if live.as_ref().is_some_and(|&(_, log_number)| number < log_number) {
            report.problems.push(format!("{path}: already flushed (below the manifest's log number): left out"));
            continue;
        }
        let replayed = Arc::new(MemTable::new(number));
        let mut records = 0;
        let mut reader = match fs.open(&path, false).and_then(|f| LogReader::new(f, &path)) {
            Ok(r) => r,
            Err(e) => {
                report.wals_damaged += 1;
                report.problems.push(format!("{path}: unreadable: {e}"));
                continue;
            }
        };
        loop {
            match reader.next_record() {
                Ok(Some((rec, offset))) => match WriteBatch::from_record(rec, &path, offset) {
                    Ok(batch) => {
                        records += 1;
                        if batch.count() > 0 {
                            let first = batch.sequence();
                            ranges.push((first, first + u64::from(batch.count()) - 1, replayed_wals.len()));
                        }
                        replayed.add_batch(&batch);
                    }
                    Err(e) => {
                        report.wals_damaged += 1;
                        report.problems.push(format!("{path}: replay stopped at a bad batch: {e}"));
                        break;
                    }
                },
                Ok(None) => {
                    if let Some((offset, why)) = reader.tail_corruption() {
                        report.problems.push(format!("{path}: torn tail at offset {offset} dropped ({why})"));
                    }
                    break;
                }
                Err(e) => {
                    report.wals_damaged += 1;
                    report.problems.push(format!("{path}: replay stopped at damage: {e}"));
                    break;
                }
            }
        }
        replayed_wals.push(ReplayedWal { path, mem: replayed, records, flushed: false });
    }
    crate::sort::sort(&mut ranges);

    for (_, kind) in &kinds {
        let FileKind::Table(number) = *kind else { continue };
        let path = table_path(&dir, number);
        if live.as_ref().is_some_and(|(files, _)| !files.contains(&number)) {
            report.problems.push(format!("{path}: not named by the manifest (obsolete or unfinished): left out"));
            continue;
        }
        let table =
            match fs.open(&path, false).and_then(|f| Table::open(f, &path, number, cache.clone(), stats.clone())) {
                Ok(t) => Arc::new(t),
                // A table of a newer format (a newer build wrote it) is not
                // damage: repairing without it would throw its data away.
                // Stop before anything is moved or deleted.
                Err(e @ Error::NotSupported(_)) => return Err(e),
                Err(e) => {
                    report.tables_lost += 1;
                    report.problems.push(format!("{path}: unreadable, its data is lost: {e}"));
                    continue;
                }
            };
        let ts = table.tombstones().map(|ts| ts.to_tombstones()).unwrap_or_default();
        // The largest sequence number in the table, and whether it reads whole.
        // (Every block read and every key parsed: what verify() checks.)
        let mut table_seq = ts.iter().map(|t| t.seq).max().unwrap_or(0);
        // Which WALs it holds an entry of (read only without a manifest).
        let mut holds = vec![false; replayed_wals.len()];
        for t in &ts {
            if let Some(w) = wal_holding(&ranges, t.seq) {
                holds[w] = true;
            }
        }
        let (lost, first_error) = table.salvage(|ikey, _| match key::parse(ikey) {
            Some(p) => {
                table_seq = table_seq.max(p.seq);
                if let Some(w) = wal_holding(&ranges, p.seq) {
                    holds[w] = true;
                }
                true
            }
            None => false,
        });
        // A transaction's own file (`db/transaction/spill.rs`): writes it
        // never committed, numbered above every real write.
        if table_seq >= OWN_SEQ_BASE {
            report.problems.push(format!("{path}: an uncommitted transaction's writes (its own file): left out"));
            continue;
        }
        if live.is_none() {
            for (w, held) in replayed_wals.iter_mut().zip(holds) {
                w.flushed |= held;
            }
        }
        tombstones.extend(ts);
        if lost == 0 && first_error.is_none() {
            report.tables_intact += 1;
            sources.push(Box::new(table.iter(false)));
            continue;
        }
        // Block by block, keeping what passes its checksum.
        let salvaged = Arc::new(MemTable::new(0));
        let (blocks_lost, first_error) = table.salvage(|ikey, value| match key::parse(ikey) {
            Some(p) => {
                salvaged.add(p.seq, p.ty, p.user_key, value);
                true
            }
            None => false,
        });
        report.tables_damaged += 1;
        report.blocks_lost += blocks_lost;
        report.problems.push(format!(
            "{path}: {blocks_lost} damaged block(s) skipped{}",
            first_error.map(|e| format!(" (first: {e})")).unwrap_or_default()
        ));
        sources.push(Box::new(salvaged.iter()));
    }

    // WALs a table holds already are left out: replaying them would apply
    // their merge operands twice (a flush merges them). With a readable
    // manifest that is none of the WALs from its log number on: memtables
    // cover whole WALs and flush oldest first, and the log number moves past
    // a WAL once its memtable's table is durable. A table's sequence numbers
    // alone say nothing here: an ingest or a transaction's commit adds
    // tables numbered above writes that are still only in a WAL. Without a
    // manifest, a WAL is taken as flushed when a table holds an entry
    // numbered within one of its batches: a flush keeps the newest version
    // of every key it writes, and a table written any other way (an ingest,
    // a commit) holds only numbers no WAL batch took.
    for w in replayed_wals {
        if w.flushed {
            report.wal_records_flushed += w.records;
            report.problems.push(format!("{}: its writes are in a table already (flushed): left out", w.path));
            continue;
        }
        report.wal_records += w.records;
        if let Some(ts) = w.mem.tombstones() {
            tombstones.extend(ts.to_tombstones());
        }
        if !w.mem.is_empty() {
            sources.push(Box::new(w.mem.iter()));
        }
    }

    // One sorted run of everything, each internal key once (a WAL whose
    // memtable was flushed but not yet deleted repeats a table's entries).
    let table_number = max_number + 1;
    let wal_number = max_number + 2;
    let manifest_number = max_number + 3;
    let out_path = table_path(&dir, table_number);
    let file = fs.open(&out_path, true)?;
    file.truncate(0)?;
    let mut builder = TableBuilder::new(file.clone(), options.table_options(false));
    let mut last_seq: SequenceNumber = 0;
    let mut merged = MergingIterator::new(sources);
    merged.seek_to_first();
    let mut prev: Vec<u8> = Vec::new();
    while merged.valid() {
        let ikey = merged.key();
        if prev.as_slice() != ikey {
            if let Some(p) = key::parse(ikey) {
                last_seq = last_seq.max(p.seq);
            }
            builder.add(ikey, merged.value())?;
            report.entries += 1;
            prev.clear();
            prev.extend_from_slice(ikey);
        }
        merged.next();
    }
    merged.status()?;
    crate::sort::sort_by(&mut tombstones, |a, b| (&a.start, &a.end, a.seq).cmp(&(&b.start, &b.end, b.seq)));
    tombstones.dedup();
    for t in tombstones {
        last_seq = last_seq.max(t.seq);
        if t.start < t.end {
            report.range_deletions += 1;
        }
        builder.add_tombstone(t);
    }
    let info = builder.finish()?;
    file.sync()?;
    let has_table = info.num_entries > 0 || info.num_range_deletions > 0;

    // A new manifest whose first (snapshot) record names the table and a new
    // empty WAL: complete, and so the one Db::open uses, only once synced.
    create_wal(&*fs, &dir, wal_number)?;
    let mut snapshot = VersionEdit {
        has_format: true,
        log_number: Some(wal_number),
        next_file_number: Some(manifest_number + 1),
        last_sequence: Some(last_seq),
        ..VersionEdit::default()
    };
    if has_table {
        snapshot.added.push((0, FileMeta::of_table(table_number, info)));
    }
    let manifest_path = join(&dir, &manifest_name(manifest_number));
    let mf = fs.open(&manifest_path, true)?;
    mf.truncate(0)?;
    let mut writer = LogWriter::new(mf, 0);
    writer.add_record(&snapshot.encode())?;
    writer.sync()?;
    fs.sync_dir(&dir)?;

    // The new manifest is durable: everything else is obsolete.
    for (name, kind) in &kinds {
        if *kind != FileKind::Lock {
            fs.remove(&join(&dir, name))?;
        }
    }
    if !has_table {
        fs.remove(&out_path)?;
    }
    Ok(report)
}
