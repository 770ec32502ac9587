//! A job that rewrites sorted input into table files: a flush (one memtable
//! into one L0 table) or a compaction (tables of two levels into tables of
//! the lower one). It runs as resumable steps: each call does about a budget
//! of bytes of work and returns, so the browser's worker can interleave it
//! with requests.
//!
//! Output tables are split at `target_file_size`, only between two user
//! keys, and only once the next output's file exists: when the file layer
//! cannot create one (a pool of files with none free), or has only a few
//! left ([`SPLIT_RESERVE_FILES`], for the flushes and logs that writes
//! wait on), the current output goes on past its target instead
//! (`outputs_kept_open`), so a compaction needs one free file, not one per
//! target's worth of output. Range tombstones are written clipped to each
//! output's share of the key space (`(-inf, k1)`, `[k1, k2)`, … `[kn,
//! +inf)` where `ki` is the first key of output `i`), so outputs of one
//! level never overlap.

use std::sync::Arc;

use bytes::Bytes;

use super::resolver::{KeyResolver, Version};
use crate::error::{Error, Result};
use crate::format::key;
use crate::fs::{File, Fs};
use crate::iter::InternalIterator;
use crate::range_del::{FragmentedTombstones, Tombstone};
use crate::sst::{TableBuilder, TableOptions};
use crate::version::{table_path, FileMeta};

/// Files a compaction leaves free when it could split its output: a
/// flush's table, a new log and a new manifest can still be made.
pub(crate) const SPLIT_RESERVE_FILES: usize = 3;

struct Output {
    number: u64,
    file: Arc<dyn File>,
    builder: TableBuilder,
}

/// What a step needs from the database.
pub struct JobEnv<'a> {
    pub fs: &'a dyn Fs,
    pub dir: &'a str,
    /// Allocates a file number and records it as a pending output.
    pub new_file: &'a mut dyn FnMut() -> u64,
}

pub struct TableJob {
    source: Box<dyn InternalIterator>,
    started: bool,
    resolver: KeyResolver,
    tombstones: FragmentedTombstones,
    target_file_size: u64,
    table_options: TableOptions,
    current: Option<Output>,
    /// Lower bound of the current output's share of the key space.
    clip_lo: Option<Vec<u8>>,
    group_key: Vec<u8>,
    key_buf: Vec<u8>,
    group: Vec<Version>,
    resolved: Vec<Version>,
    /// `resolved` holds the current group's resolution: a step retried after
    /// a failed create writes it without resolving the group again (which
    /// would count its drops and merges twice).
    group_resolved: bool,
    /// Finished, synced outputs.
    pub outputs: Vec<FileMeta>,
    /// Every file number this job allocated (finished or not).
    pub allocated: Vec<u64>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// When the job started (clock micros), for the duration histograms.
    pub started_micros: u64,
    /// Outputs that went on past their target because the next output's
    /// file could not be created, or would have left too few.
    pub outputs_kept_open: u64,
    /// After a split was put off, the current output's size at which the
    /// next try is due (a quarter of the target later: not a try per key).
    next_split_at: u64,
    /// The number of an output whose file could not be created, for the
    /// next try: failed tries use up no file numbers.
    spare_number: Option<u64>,
    /// The last step failed creating an output file, before writing to it.
    create_failed: bool,
    done: bool,
}

impl TableJob {
    pub fn new(
        source: Box<dyn InternalIterator>,
        mut resolver: KeyResolver,
        target_file_size: u64,
        table_options: TableOptions,
    ) -> Self {
        let tombstones = resolver.output_tombstones();
        TableJob {
            source,
            started: false,
            resolver,
            tombstones,
            target_file_size,
            table_options,
            current: None,
            clip_lo: None,
            group_key: Vec::new(),
            key_buf: Vec::new(),
            group: Vec::new(),
            resolved: Vec::new(),
            group_resolved: false,
            outputs: Vec::new(),
            allocated: Vec::new(),
            bytes_read: 0,
            bytes_written: 0,
            started_micros: 0,
            outputs_kept_open: 0,
            next_split_at: 0,
            spare_number: None,
            create_failed: false,
            done: false,
        }
    }

    /// Whether the last step failed only because a new output file could
    /// not be created: nothing was lost, and the step may be retried.
    pub fn create_failed(&self) -> bool {
        self.create_failed
    }

    pub fn drops(&self) -> super::resolver::DropCounts {
        self.resolver.drops
    }

    /// What merging cost since the last call (time with a clock; failures).
    pub fn take_merge_stats(&mut self) -> crate::merge::MergeStats {
        std::mem::take(&mut self.resolver.merges)
    }

    /// Does about `budget` bytes of work. Returns true once every output is
    /// written and synced (the caller then installs them).
    pub fn step(&mut self, env: &mut JobEnv, budget: u64) -> Result<bool> {
        if self.done {
            return Ok(true);
        }
        self.create_failed = false;
        if !self.started {
            self.source.seek_to_first();
            self.started = true;
        }
        let mut work = 0u64;
        while self.source.valid() {
            if work >= budget {
                self.bytes_read += work;
                return Ok(false);
            }
            let mut k = std::mem::take(&mut self.key_buf);
            k.clear();
            k.extend_from_slice(self.source.key());
            let Some(p) = key::parse(&k) else {
                let (file, offset) = self.source.origin().unwrap_or(("compaction input", 0));
                return Err(Error::corruption(file, offset, "malformed internal key"));
            };
            if p.user_key != self.group_key.as_slice() && !self.group.is_empty() {
                if let Err(e) = self.write_group(env) {
                    self.bytes_read += work;
                    return Err(e);
                }
            }
            if self.group.is_empty() {
                self.group_key.clear();
                self.group_key.extend_from_slice(p.user_key);
            }
            let value = self.source.value();
            work += (k.len() + value.len()) as u64;
            self.group.push(Version { seq: p.seq, ty: p.ty, value: Bytes::copy_from_slice(value) });
            self.key_buf = k;
            self.source.next();
        }
        self.source.status()?;
        self.bytes_read += work;
        if !self.group.is_empty() {
            self.write_group(env)?;
        }
        if self.current.is_none() && self.has_tombstones_from(self.clip_lo.as_deref()) {
            self.open_output(env)?;
        }
        self.finish_output(None)?;
        env.fs.sync_dir(env.dir)?;
        self.done = true;
        Ok(true)
    }

    fn has_tombstones_from(&self, lo: Option<&[u8]>) -> bool {
        self.tombstones.fragments().iter().any(|f| lo.is_none_or(|lo| f.end.as_slice() > lo))
    }

    /// Starts a new output file. If the file cannot be created (no space,
    /// an exhausted file pool) nothing was written: the job stays as it was
    /// and the step can be retried ([`TableJob::create_failed`]).
    fn open_output(&mut self, env: &mut JobEnv) -> Result<()> {
        let number = match self.spare_number.take() {
            Some(n) => n,
            None => {
                let n = (env.new_file)();
                self.allocated.push(n);
                n
            }
        };
        let file = match env.fs.open(&table_path(env.dir, number), true) {
            Ok(file) => file,
            Err(e) => {
                self.create_failed = true;
                self.spare_number = Some(number);
                return Err(e);
            }
        };
        file.truncate(0)?;
        let builder = TableBuilder::new(file.clone(), self.table_options.clone());
        self.current = Some(Output { number, file, builder });
        Ok(())
    }

    /// Resolves the buffered versions of one user key and writes them.
    fn write_group(&mut self, env: &mut JobEnv) -> Result<()> {
        if !self.group_resolved {
            self.resolved.clear();
            self.resolver.resolve(&self.group_key, &self.group, &mut self.resolved)?;
            self.group_resolved = true;
        }
        if self.resolved.is_empty() {
            self.group.clear();
            self.group_resolved = false;
            return Ok(());
        }
        let split_at = self.target_file_size.max(self.next_split_at);
        if self.current.as_ref().is_some_and(|o| o.builder.file_size() >= split_at) {
            // The next output's file first: without one, or when creating
            // it would leave too few for flushes and logs, the current
            // output takes this group too (see the module's comment).
            let short = env.fs.files_left().is_some_and(|n| n <= SPLIT_RESERVE_FILES);
            let previous = self.current.take();
            match (!short).then(|| self.open_output(env)) {
                Some(Ok(())) => {
                    self.next_split_at = 0;
                    let next = std::mem::replace(&mut self.current, previous);
                    let split = self.group_key.clone();
                    self.finish_output(Some(&split))?;
                    self.clip_lo = Some(split);
                    self.current = next;
                }
                None | Some(Err(Error::PoolExhausted { .. })) => {
                    self.create_failed = false;
                    self.current = previous;
                    if self.next_split_at == 0 {
                        self.outputs_kept_open += 1;
                    }
                    let size = self.current.as_ref().map_or(0, |o| o.builder.file_size());
                    self.next_split_at = size.saturating_add((self.target_file_size / 4).max(1));
                }
                Some(Err(e)) => {
                    self.current = previous;
                    return Err(e);
                }
            }
        }
        if self.current.is_none() {
            // The group stays buffered until its output exists, so a failed
            // create can be retried without losing it.
            self.open_output(env)?;
        }
        self.group.clear();
        self.group_resolved = false;
        let Some(out) = self.current.as_mut() else { return Ok(()) };
        let mut ikey = Vec::with_capacity(self.group_key.len() + key::TAG_LEN);
        for v in &self.resolved {
            ikey.clear();
            key::append_internal_key(&mut ikey, &self.group_key, v.seq, v.ty as u8);
            out.builder.add(&ikey, &v.value)?;
        }
        Ok(())
    }

    /// Finishes the current output (if any) with its share [clip_lo, hi) of
    /// the tombstones, and syncs it.
    fn finish_output(&mut self, hi: Option<&[u8]>) -> Result<()> {
        let Some(mut out) = self.current.take() else { return Ok(()) };
        let lo = self.clip_lo.as_deref();
        for f in self.tombstones.fragments() {
            let start = match lo {
                Some(lo) if lo > f.start.as_slice() => lo,
                _ => f.start.as_slice(),
            };
            let end = match hi {
                Some(hi) if hi < f.end.as_slice() => hi,
                _ => f.end.as_slice(),
            };
            if start < end {
                for &seq in &f.seqs {
                    out.builder.add_tombstone(Tombstone { start: start.to_vec(), end: end.to_vec(), seq });
                }
            }
        }
        let info = out.builder.finish()?;
        out.file.sync()?;
        self.bytes_written += info.file_size;
        if info.num_entries == 0 && info.num_range_deletions == 0 {
            // Nothing survived: the file is left for obsolete-file deletion.
            return Ok(());
        }
        self.outputs.push(FileMeta::of_table(out.number, info));
        Ok(())
    }
}
