//! Opening a database: lock, pick the manifest, replay the WALs, go on
//! with the newest WAL (synced first) and the manifest (or, after a crash
//! tore them, start new ones), delete what is obsolete. A clean open
//! writes nothing (it syncs the WAL it goes on with).

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

use super::snapshot::SnapshotList;
use super::{Db, DbInner, DbState, Options, SuperVersion};
use crate::batch::WriteBatch;
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::fs::{join, Fs};
use crate::memtable::MemTable;
use crate::stats::Statistics;
use crate::version::{parse_file_name, wal_path, FileKind, TableContext, VersionSet};
use crate::version::{Recovered, VersionEdit};
use crate::wal::{LogReader, LogWriter};

pub(super) fn open(fs: Arc<dyn Fs>, dir: &str, options: Options) -> Result<Db> {
    options.validate()?;
    let dir = dir.trim_end_matches('/').to_string();
    if dir.is_empty() {
        return Err(Error::InvalidArgument("database directory name is empty".into()));
    }
    if options.create_if_missing {
        fs.create_dir_all(&dir)?;
    }
    let db_lock = fs.lock(&join(&dir, "LOCK")).map_err(|e| match e {
        Error::Busy(_) => Error::Busy(format!("database {dir} is already open (by this process or another)")),
        e => e,
    })?;
    let names = fs.list(&dir)?;
    let kinds: Vec<FileKind> = names.iter().filter_map(|n| parse_file_name(n)).collect();
    let mut manifests: Vec<u64> =
        kinds.iter().filter_map(|k| if let FileKind::Manifest(n) = k { Some(*n) } else { None }).collect();
    crate::sort::sort_by(&mut manifests, |a, b| b.cmp(a));
    let max_number = kinds
        .iter()
        .map(|k| match k {
            FileKind::Table(n) | FileKind::Wal(n) | FileKind::Manifest(n) => *n,
            FileKind::Lock => 0,
        })
        .max()
        .unwrap_or(0);

    let mut versions = None;
    for &m in &manifests {
        match VersionSet::recover(fs.clone(), &dir, m)? {
            Recovered::Ok(v) => {
                versions = Some(v);
                break;
            }
            // Created but never completed before a crash: an older one is the
            // real manifest.
            Recovered::Incomplete => continue,
        }
    }
    let recovered = versions.is_some();
    let mut versions = match versions {
        Some(v) => {
            if options.error_if_exists {
                return Err(Error::AlreadyExists(format!("database {dir} already exists (error_if_exists)")));
            }
            v
        }
        None => {
            // Without a manifest, only empty logs may exist (a first open that
            // stopped before its manifest was complete).
            let mut has_data = kinds.iter().any(|k| matches!(k, FileKind::Table(_)));
            for k in &kinds {
                if let FileKind::Wal(n) = k {
                    has_data |= !fs.open(&wal_path(&dir, *n), false)?.is_empty()?;
                }
            }
            if has_data {
                let found: Vec<String> = manifests.iter().map(|&m| crate::version::manifest_name(m)).collect();
                return Err(Error::corruption(
                    &dir,
                    0,
                    format!(
                        "table or log files exist but no complete manifest describes them (manifests found: {})",
                        if found.is_empty() {
                            "none".to_string()
                        } else {
                            found.join(", ") + ", each empty or incomplete"
                        }
                    ),
                ));
            }
            if !options.create_if_missing {
                return Err(Error::NotFound(format!("database {dir} does not exist (create_if_missing is off)")));
            }
            VersionSet::new_empty(fs.clone(), &dir)
        }
    };
    // Files numbered after the manifest's counter (a WAL created just before a
    // crash) must never be reused.
    versions.next_file_number = versions.next_file_number.max(max_number + 1);

    // Every table the manifest names must be there.
    for (_, f) in versions.current().files() {
        let path = crate::version::table_path(&dir, f.number());
        if !fs.exists(&path)? {
            return Err(Error::corruption(path, 0, "table file named by the manifest is missing"));
        }
    }

    // The WAL of the oldest unflushed memtable is deleted only after an edit
    // moving log_number past it is durable. If it is gone, that edit was
    // lost: the manifest's tail was damaged, not torn by a crash.
    if recovered && !fs.exists(&wal_path(&dir, versions.log_number))? {
        return Err(Error::corruption(
            join(&dir, &crate::version::manifest_name(versions.manifest_number())),
            0,
            format!("manifest names WAL {} as still needed, but it is missing", versions.log_number),
        ));
    }

    // Replay WALs not yet flushed, oldest first, into memtables.
    let mut wals: Vec<u64> = kinds
        .iter()
        .filter_map(|k| if let FileKind::Wal(n) = k { Some(*n) } else { None })
        .filter(|&n| n >= versions.log_number)
        .collect();
    crate::sort::sort(&mut wals);
    let mut imm: VecDeque<Arc<MemTable>> = VecDeque::new();
    let mut mem: Option<MemTable> = None;
    let mut last_seq = versions.last_sequence;
    // The newest WAL, if it ends in whole records: it takes the new writes.
    let mut reusable = None;
    for (i, &number) in wals.iter().enumerate() {
        let path = wal_path(&dir, number);
        let file = fs.open(&path, false)?;
        let mut reader = LogReader::new(file.clone(), &path)?;
        while let Some((rec, offset)) = reader.next_record()? {
            let batch = WriteBatch::from_record(rec, &path, offset)?;
            let m = mem.get_or_insert_with(|| MemTable::with_bloom(number, options.memtable_bloom_bytes()));
            last_seq = last_seq.max(m.add_batch(&batch));
        }
        // Synced before readers see what it holds: the process before may
        // have ended without a sync, and what a reopen showed must not be
        // lost to a later crash (a clean close syncs only what it wrote).
        file.sync()?;
        if i + 1 == wals.len() {
            if reader.tail_corruption().is_none() {
                let len = file.len()?;
                reusable = Some((number, file, len));
            }
        } else if mem.as_ref().is_some_and(|m| m.approximate_memory_usage() >= options.write_buffer_size) {
            // A memtable is switched out only between WALs, never within
            // one: a flush moves the log number past whole WALs only, so a
            // WAL split between two memtables would be replayed from its
            // start after the first one's flush, and its entries already
            // in a table (merge operands among them) would apply twice.
            imm.extend(mem.take().map(Arc::new));
        }
    }
    versions.last_sequence = last_seq;

    // A clean open writes nothing: the newest WAL goes on taking writes
    // (its memtable stays the active one) and edits go on into the
    // recovered manifest. After a crash that tore the newest WAL, or in a
    // new database, a fresh WAL and a fresh manifest (no record is ever
    // appended after a torn one); the recovered memtables then wait for
    // the background work to flush them.
    let (mem, wal_number, wal) = match reusable {
        Some((number, file, len)) => {
            // Synced above; and its name too, before a new manifest names
            // it (a WAL a failed first open left, never synced).
            fs.sync_dir(&dir)?;
            let mem = mem.take().unwrap_or_else(|| MemTable::with_bloom(number, options.memtable_bloom_bytes()));
            (Arc::new(mem), number, LogWriter::new(file, len))
        }
        None => {
            imm.extend(mem.take().filter(|m| !m.is_empty()).map(Arc::new));
            let number = versions.new_file_number();
            let file = super::create_wal(&*fs, &dir, number)?;
            (Arc::new(MemTable::with_bloom(number, options.memtable_bloom_bytes())), number, LogWriter::new(file, 0))
        }
    };
    versions.max_manifest_file_size = options.max_manifest_file_size;
    // The oldest WAL still needed: the oldest memtable's.
    let needed = imm.front().map_or(mem.wal_number(), |m| m.wal_number());
    if !versions.has_manifest_writer() {
        versions.log_number = needed;
        versions.write_new_manifest()?;
    } else if needed > versions.log_number {
        // A new WAL replaced a torn one that held nothing to keep: record
        // that the older WALs are done with, so they can go.
        versions.log_and_apply(VersionEdit { log_number: Some(needed), ..VersionEdit::default() })?;
    }

    let cache = Arc::new(BlockCache::new(options.block_cache_capacity));
    let row_cache =
        (options.row_cache_capacity > 0).then(|| crate::read::row_cache::RowCache::new(options.row_cache_capacity));
    let stats = Arc::new(Statistics::default());
    let version = versions.current();
    let l0_files = version.levels[0].len();
    let sv = SuperVersion { mem: mem.clone(), imm: imm.iter().rev().cloned().collect(), version, number: 1 };
    let state = DbState {
        mem,
        imm,
        wal,
        wal_number,
        wal_dirty: false,
        versions,
        flush: None,
        compaction: None,
        manual: None,
        cursors: Default::default(),
        bg_error: None,
        pending_outputs: HashSet::new(),
        out_of_space: false,
        work_bytes: 0,
        waiting_for_file: None,
        job_running: false,
    };
    let db = Db {
        inner: Arc::new(DbInner {
            tables: TableContext { fs: fs.clone(), dir: dir.clone(), cache, stats: stats.clone() },
            stats,
            fs,
            dir,
            options,
            state: Mutex::new(state),
            job_done: std::sync::Condvar::new(),
            current: Mutex::new(Arc::new(sv)),
            sv_number: AtomicU64::new(1),
            l0_files: std::sync::atomic::AtomicUsize::new(l0_files),
            visible_seq: AtomicU64::new(last_seq),
            snapshots: Arc::new(SnapshotList::default()),
            closed: AtomicBool::new(false),
            lock: Mutex::new(Some(db_lock)),
            memtables: Mutex::new(Vec::new()),
            pinned: Arc::default(),
            read_samples: std::sync::atomic::AtomicU32::new(0),
            row_cache,
        }),
    };
    {
        let st = super::lock(&db.inner.state);
        db.inner.track_memtable(&st.mem);
        for m in &st.imm {
            db.inner.track_memtable(m);
        }
        drop(st);
        let mut st = super::lock(&db.inner.state);
        db.inner.delete_obsolete_files(&mut st);
    }
    Ok(db)
}
