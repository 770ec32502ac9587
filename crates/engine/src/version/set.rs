//! `VersionSet`: the current version, the counters the manifest keeps, and
//! the manifest itself.
//!
//! Switching manifests relies on no rename: each manifest file starts with a
//! snapshot edit (format tag + every live file + counters) and is synced
//! before any older manifest is deleted. At open, the newest manifest whose
//! first record is intact wins; one whose first record never fully reached
//! storage (a crash while it was being created) is skipped. Damage anywhere
//! before intact records is corruption, never silently skipped.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Weak};

use super::edit::VersionEdit;
use super::{manifest_name, FileMetaData, Version, NUM_LEVELS};
use crate::error::{Error, Result};
use crate::format::key;
use crate::fs::{join, Fs};
use crate::wal::{LogReader, LogWriter};

pub struct VersionSet {
    fs: Arc<dyn Fs>,
    dir: String,
    current: Arc<Version>,
    /// Every version handed out, to learn which files are still read.
    handed_out: Vec<Weak<Version>>,
    pub next_file_number: u64,
    pub last_sequence: u64,
    pub log_number: u64,
    manifest_number: u64,
    manifest: Option<LogWriter>,
    /// The next edit starts a new manifest first: the current one reached
    /// this size (see `Options::max_manifest_file_size`)...
    pub max_manifest_file_size: u64,
    /// ...or an edit failed to reach it, so it may end in a partial record
    /// (cut off again when possible, but a new manifest never depends on it).
    roll_over: bool,
}

/// Outcome of reading one manifest at open.
pub enum Recovered {
    Ok(VersionSet),
    /// The manifest's first record is missing or torn: it was being created
    /// when the process stopped.
    Incomplete,
}

impl VersionSet {
    /// The state of a new, empty database.
    pub fn new_empty(fs: Arc<dyn Fs>, dir: &str) -> Self {
        VersionSet {
            fs,
            dir: dir.to_string(),
            current: Arc::new(Version::default()),
            handed_out: Vec::new(),
            next_file_number: 1,
            last_sequence: 0,
            log_number: 0,
            manifest_number: 0,
            manifest: None,
            max_manifest_file_size: u64::MAX,
            roll_over: false,
        }
    }

    /// Rebuilds the state from manifest `number`.
    pub fn recover(fs: Arc<dyn Fs>, dir: &str, number: u64) -> Result<Recovered> {
        let path = join(dir, &manifest_name(number));
        let file = fs.open(&path, false)?;
        let mut reader = LogReader::new(file, &path)?;
        let mut files: [BTreeMap<u64, Arc<FileMetaData>>; NUM_LEVELS] = Default::default();
        let mut set = VersionSet::new_empty(fs.clone(), dir);
        let (mut log, mut next, mut last) = (None, None, None);
        let mut first = true;
        while let Some((rec, offset)) = reader.next_record()? {
            let edit = VersionEdit::decode(&rec, &path, offset)?;
            if first && !edit.has_format {
                return Err(Error::corruption(&path, offset, "manifest does not start with a snapshot"));
            }
            first = false;
            apply_to(&mut files, &edit, &path, offset)?;
            log = edit.log_number.or(log);
            next = edit.next_file_number.or(next);
            last = edit.last_sequence.or(last);
        }
        if first {
            return Ok(Recovered::Incomplete);
        }
        let missing = |what: &str| Error::corruption(&path, 0, format!("manifest has no {what}"));
        set.log_number = log.ok_or_else(|| missing("log number"))?;
        set.next_file_number = next.ok_or_else(|| missing("next file number"))?;
        set.last_sequence = last.ok_or_else(|| missing("last sequence"))?;
        set.current = Arc::new(build_version(files));
        for (_, f) in set.current.files() {
            if f.number() >= set.next_file_number {
                return Err(Error::corruption(
                    &path,
                    0,
                    format!("file {} is not below the next file number", f.number()),
                ));
            }
        }
        set.manifest_number = number;
        // A manifest that ends in whole records takes the next edits too,
        // so a clean open writes no manifest; one with a torn tail never
        // gets another record after it (open writes a new one).
        if reader.tail_corruption().is_none() {
            let file = fs.open(&path, false)?;
            let len = file.len()?;
            set.manifest = Some(LogWriter::new(file, len));
        }
        Ok(Recovered::Ok(set))
    }

    pub fn current(&mut self) -> Arc<Version> {
        let v = self.current.clone();
        self.handed_out.push(Arc::downgrade(&v));
        v
    }

    /// The current version, without registering a reader of it.
    pub fn current_ref(&self) -> &Arc<Version> {
        &self.current
    }

    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// Whether edits can be appended to the current manifest (false for a
    /// new database, or a recovered manifest that ends in a torn record).
    pub fn has_manifest_writer(&self) -> bool {
        self.manifest.is_some()
    }

    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Starts a new manifest holding a snapshot of the current state, syncs
    /// it, and makes it the one edits go to. Returns the number of the
    /// manifest it replaces (0 if none), which the caller may now delete.
    pub fn write_new_manifest(&mut self) -> Result<u64> {
        let number = self.new_file_number();
        let path = join(&self.dir, &manifest_name(number));
        let file = self.fs.open(&path, true)?;
        file.truncate(0)?;
        let mut writer = LogWriter::new(file, 0);
        let mut snap = VersionEdit {
            has_format: true,
            log_number: Some(self.log_number),
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(self.last_sequence),
            ..VersionEdit::default()
        };
        for (level, f) in self.current.files() {
            snap.added.push((level, f.meta.clone()));
        }
        writer.add_record(&snap.encode())?;
        writer.sync()?;
        self.fs.sync_dir(&self.dir)?;
        let old = self.manifest_number;
        self.manifest = Some(writer);
        self.manifest_number = number;
        Ok(old)
    }

    /// Records `edit` durably in the manifest, then makes the version it
    /// describes current. On error nothing changes in memory.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        if let Some(l) = edit.log_number {
            debug_assert!(l >= self.log_number);
        }
        edit.next_file_number = Some(self.next_file_number);
        edit.last_sequence = Some(self.last_sequence);
        let mut files: [BTreeMap<u64, Arc<FileMetaData>>; NUM_LEVELS] = Default::default();
        for (level, f) in self.current.files() {
            files[level].insert(f.number(), f.clone());
        }
        let manifest_path = join(&self.dir, &manifest_name(self.manifest_number));
        apply_to(&mut files, &edit, &manifest_path, 0)?;
        let full = self.manifest.as_ref().is_some_and(|w| w.len() >= self.max_manifest_file_size);
        if (self.roll_over || full) && self.manifest.is_some() {
            // A snapshot of the current state (without this edit) in a new
            // manifest; the old one is obsolete once that is durable.
            match self.write_new_manifest() {
                Ok(_) => {
                    self.roll_over = false;
                    edit.next_file_number = Some(self.next_file_number);
                }
                // Only grown past its size, the manifest takes this edit
                // too when the file layer has no file for a new one yet
                // (nothing was written); a later edit rolls over.
                Err(Error::PoolExhausted { .. }) if !self.roll_over => {}
                Err(e) => return Err(e),
            }
        }
        let writer = self.manifest.as_mut().ok_or_else(|| Error::Closed("no manifest is open for writing".into()))?;
        if let Err(e) = writer.add_record(&edit.encode()) {
            // Nothing recorded: the writer cut off any partial bytes.
            self.roll_over = true;
            return Err(e);
        }
        if let Err(e) = writer.sync() {
            // The edit is in the file and may be durable: never report that as
            // a lack of space, whose callers drop the edit's new files.
            self.roll_over = true;
            return Err(match e {
                Error::QuotaExceeded { file, message } => {
                    Error::io(&file, "sync", format!("syncing the manifest after writing an edit failed: {message}"))
                }
                e => e,
            });
        }
        if let Some(l) = edit.log_number {
            self.log_number = l;
        }
        self.current = Arc::new(build_version(files));
        Ok(self.current())
    }

    /// Bytes of every table file some live version still holds (obsolete
    /// files pinned by readers included).
    pub fn live_file_bytes(&mut self) -> u64 {
        self.handed_out.retain(|w| w.strong_count() > 0);
        let mut sizes: std::collections::HashMap<u64, u64> =
            self.current.files().map(|(_, f)| (f.number(), f.meta.file_size)).collect();
        for v in self.handed_out.iter().filter_map(Weak::upgrade) {
            sizes.extend(v.files().map(|(_, f)| (f.number(), f.meta.file_size)));
        }
        sizes.values().sum()
    }

    /// Numbers of every table file some live version still holds.
    pub fn live_files(&mut self) -> HashSet<u64> {
        self.handed_out.retain(|w| w.strong_count() > 0);
        let mut live: HashSet<u64> = self.current.files().map(|(_, f)| f.number()).collect();
        for v in self.handed_out.iter().filter_map(Weak::upgrade) {
            live.extend(v.files().map(|(_, f)| f.number()));
        }
        live
    }
}

fn apply_to(
    files: &mut [BTreeMap<u64, Arc<FileMetaData>>; NUM_LEVELS],
    edit: &VersionEdit,
    path: &str,
    offset: u64,
) -> Result<()> {
    for &(level, number) in &edit.deleted {
        if files[level].remove(&number).is_none() {
            return Err(Error::corruption(
                path,
                offset,
                format!("edit deletes file {number} that L{level} does not hold"),
            ));
        }
    }
    for (level, meta) in &edit.added {
        if files.iter().any(|l| l.contains_key(&meta.number)) {
            return Err(Error::corruption(path, offset, format!("edit adds file {} twice", meta.number)));
        }
        files[*level].insert(meta.number, Arc::new(FileMetaData::new(meta.clone())));
    }
    Ok(())
}

fn build_version(files: [BTreeMap<u64, Arc<FileMetaData>>; NUM_LEVELS]) -> Version {
    let mut v = Version::default();
    for (level, map) in files.into_iter().enumerate() {
        let mut list: Vec<_> = map.into_values().collect();
        sort_level(level, &mut list);
        v.levels[level] = list;
    }
    v
}

/// Puts the files of `level` in a version's order: L0 newest data first,
/// the levels below by smallest key.
pub(crate) fn sort_level(level: usize, list: &mut [Arc<FileMetaData>]) {
    if level == 0 {
        crate::sort::sort_by(list, |a, b| {
            b.meta.largest_seq.cmp(&a.meta.largest_seq).then(b.number().cmp(&a.number()))
        });
    } else {
        crate::sort::sort_by(list, |a, b| match key::compare(&a.meta.smallest, &b.meta.smallest) {
            Ordering::Equal => a.number().cmp(&b.number()),
            o => o,
        });
    }
}
