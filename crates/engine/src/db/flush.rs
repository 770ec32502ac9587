//! Flushing an immutable memtable to an L0 table, as a resumable job that
//! writes at most a budget of data blocks per step.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Db, DbState};
use crate::error::Result;
use crate::format::key;
use crate::fs::File;
use crate::iter::InternalIterator;
use crate::memtable::MemTable;
use crate::sst::TableBuilder;
use crate::version::{table_path, FileMeta, VersionEdit};

/// A flush in progress.
pub(super) struct FlushJob {
    mem: Arc<MemTable>,
    number: u64,
    file: Arc<dyn File>,
    builder: Option<TableBuilder>,
    /// The last internal key visited; the next step resumes after it.
    resume: Option<Vec<u8>>,
    /// User key and snapshot stripe of the last visited entry.
    last_user_key: Option<Vec<u8>>,
    last_stripe: usize,
    /// Live snapshots when the job started, ascending.
    snapshots: Vec<u64>,
}

impl Db {
    /// Starts (if needed) and advances the flush of the oldest immutable
    /// memtable by about `budget` data blocks. On failure the database stops
    /// taking writes (`bg_error`); the partial file is an orphan that the
    /// next open deletes.
    pub(super) fn flush_step(&self, st: &mut DbState, budget: usize) -> Result<()> {
        let result = self.flush_step_inner(st, budget);
        if let Err(e) = &result {
            st.bg_error = Some(e.clone());
            st.flush = None;
        }
        result
    }

    fn flush_step_inner(&self, st: &mut DbState, budget: usize) -> Result<()> {
        let inner = &*self.inner;
        if st.flush.is_none() {
            let Some(mem) = st.imm.front().cloned() else {
                return Ok(());
            };
            let number = st.versions.new_file_number();
            st.pending_outputs.insert(number);
            let file = inner.fs.open(&table_path(&inner.dir, number), true)?;
            file.truncate(0)?;
            st.flush = Some(FlushJob {
                mem,
                number,
                builder: Some(TableBuilder::new(
                    file.clone(),
                    inner.options.table_options(),
                )),
                file,
                resume: None,
                last_user_key: None,
                last_stripe: 0,
                snapshots: inner.snapshots.sequences(),
            });
        }
        let Some(job) = st.flush.as_mut() else {
            return Ok(());
        };
        let Some(builder) = job.builder.as_mut() else {
            return Ok(());
        };
        let mut it = job.mem.iter();
        match &job.resume {
            Some(k) => {
                it.seek(k);
                if it.valid() && it.key() == k.as_slice() {
                    it.next();
                }
            }
            None => it.seek_to_first(),
        }
        let start_blocks = builder.blocks_written();
        while it.valid() && builder.blocks_written() - start_blocks < budget as u64 {
            let ikey = it.key();
            if let Some(p) = key::parse(ikey) {
                // Keep the newest version of a key in each snapshot stripe
                // (the versions between two consecutive snapshots): older
                // ones in the same stripe are visible to no reader.
                let stripe = job.snapshots.partition_point(|&s| s < p.seq);
                let same_key = job.last_user_key.as_deref() == Some(p.user_key);
                if !(same_key && stripe == job.last_stripe) {
                    builder.add(ikey, it.value())?;
                }
                if !same_key {
                    job.last_user_key = Some(p.user_key.to_vec());
                }
                job.last_stripe = stripe;
            }
            job.resume = Some(ikey.to_vec());
            it.next();
        }
        if it.valid() {
            return Ok(()); // budget spent; resume next step
        }
        let Some(builder) = job.builder.take() else {
            return Ok(());
        };
        let info = builder.finish()?;
        job.file.sync()?;
        inner.fs.sync_dir(&inner.dir)?;
        let number = job.number;
        let mut edit = VersionEdit::default();
        if info.num_entries > 0 {
            edit.added.push((
                0,
                FileMeta {
                    number,
                    file_size: info.file_size,
                    smallest: info.smallest,
                    largest: info.largest,
                    smallest_seq: info.smallest_seq,
                    largest_seq: info.largest_seq,
                },
            ));
        }
        // WALs older than the oldest memtable still unflushed are done with.
        edit.log_number = Some(
            st.imm
                .get(1)
                .map_or(st.mem.wal_number(), |m| m.wal_number()),
        );
        st.versions.log_and_apply(edit)?;
        st.imm.pop_front();
        st.flush = None;
        st.pending_outputs.remove(&number);
        self.install_super_version(st);
        inner.counters.flushes.fetch_add(1, Ordering::Relaxed);
        self.delete_obsolete_files(st);
        Ok(())
    }
}
