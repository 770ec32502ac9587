//! Background work as budgeted, resumable steps: flushing immutable
//! memtables, then compactions chosen by the picker. The embedder pumps
//! `do_background_work` (the browser worker between requests; natively a
//! thread may); writers do the work themselves when they must stall.
//!
//! A step of a flush or compaction writes its table files with the state
//! lock let go ([`StateGuard::run_job`]): natively, writers go on
//! meanwhile, and the job's output file numbers are allocated under short
//! locks. Whatever looks at the job slots
//! (`flush`, `compaction`) first waits for a running step to end
//! ([`StateGuard::wait_for_job`]), so one job runs at a time and nothing
//! decides from a slot whose job is out.

use std::sync::Arc;

use super::failure::{Attempt, Failure, Recovery, Stage};
use super::{lock, Db, DbInner, DbState, ManualCompaction, Progress, StateGuard};
use crate::compaction::job::{JobEnv, TableJob, SPLIT_RESERVE_FILES};
use crate::compaction::picker::{self, Choice, CompactionSpec};
use crate::compaction::resolver::KeyResolver;
use crate::error::{Error, Result};
use crate::iter::{InternalIterator, MergingIterator};
use crate::range_del::{self, FragmentedTombstones};
use crate::stats::{Histogram, Ticker};
use crate::version::{parse_file_name, FileKind, Version, VersionEdit, NUM_LEVELS};

/// Steps one [`Db::do_background_work`] call runs at most: e.g. two small
/// flushes (a file each) and a compaction's step (at most one file more
/// than its budget's worth of target-size files: two, with a budget below
/// the target, as the bindings' are).
const MAX_STEPS_PER_CALL: usize = 3;

impl Db {
    /// Runs background work (flushes, then compactions) for at most about
    /// `budget` data blocks' worth of bytes, then returns: a job that ends
    /// before the budget is spent (a small memtable's flush) leaves the rest
    /// to the next one. Call it again while `work_left`.
    ///
    /// A failure says what it means ([`Failure::recovery`], decided in
    /// `failure.rs`): call again later ([`Recovery::RetryLater`], e.g. once
    /// the file layer can create files again; [`Recovery::FailAlone`], once
    /// space is freed), or stop ([`Recovery::StopWrites`]: writes fail until
    /// the database is reopened; also a closed database).
    pub fn do_background_work(&self, budget: usize) -> std::result::Result<Progress, Failure> {
        self.check_open().map_err(Failure::stopped)?;
        let mut st = StateGuard::new(&self.inner);
        st.wait_for_job();
        // Closed while this call waited for the lock (or another step).
        self.check_open().map_err(Failure::stopped)?;
        if let Some(e) = &st.bg_error {
            return Err(Failure::stopped(e.clone()));
        }
        let budget = budget.max(1);
        let mut p = Progress::default();
        let mut left = self.budget_bytes(budget);
        // At most a few jobs per call, so that the files one call may create
        // stay bounded (four, with a budget below the target file size).
        for _ in 0..MAX_STEPS_PER_CALL {
            if self.inner.closed.load(std::sync::atomic::Ordering::Acquire) {
                break; // closing waits for this call's step, not for more
            }
            let before = st.work_bytes;
            let blocks = (left / self.inner.options.block_size.max(1) as u64).max(1) as usize;
            let step = match self.background_step(&mut st, blocks) {
                Ok(step) => step,
                // Work done, then no file for more: progress, not a failure.
                Err(f) if p.did_work && f.waits_for_file() => {
                    p.work_left = true;
                    break;
                }
                Err(f) => {
                    self.inner.delete_obsolete_files(&mut st);
                    return Err(f);
                }
            };
            p.did_work |= step.did_work;
            p.work_left = step.work_left;
            left = left.saturating_sub(st.work_bytes - before);
            if !step.did_work || !step.work_left || left == 0 {
                break;
            }
        }
        // Readers may have let go of old versions since the last call; and
        // a job dropped for lack of space gives its outputs back.
        self.inner.delete_obsolete_files(&mut st);
        Ok(p)
    }

    /// One step of whatever background work is most urgent: flushes, the
    /// running compaction, a requested manual compaction, then what the
    /// picker chooses.
    ///
    /// Files a step may create: a flush or compaction step writes at most
    /// one output file per `target_file_size_base` bytes of its budget, plus
    /// one (finishing an output and starting the next).
    pub(super) fn background_step(&self, st: &mut StateGuard, budget: usize) -> Attempt<Progress> {
        st.wait_for_job();
        let auto = !self.inner.options.disable_auto_compactions;
        let did_work = if !st.imm.is_empty() {
            // Short of files, a compaction the picker wants goes first: it
            // needs one file and gives its inputs' back, where a flush
            // takes one for good.
            let compacted =
                auto && st.compaction.is_none() && self.short_of_files() && self.pick_compaction(st, budget)?;
            if !compacted {
                match self.flush_step(st, budget) {
                    Ok(()) => {}
                    // With no file for the flush, a running compaction, which
                    // needs at most one (its outputs go on past their target:
                    // `compaction/job.rs`), goes on: its end frees its inputs'.
                    Err(f) if f.waits_for_file() && st.compaction.is_some() => self.compaction_step(st, budget)?,
                    Err(f) => return Err(f),
                }
            }
            true
        } else if st.compaction.is_some() {
            self.compaction_step(st, budget)?;
            true
        } else if st.manual.is_some() {
            self.manual_step(st, budget)?;
            true
        } else if auto {
            self.pick_compaction(st, budget)?
        } else {
            false
        };
        if did_work {
            // Something was flushed or compacted: there was room after all,
            // and a file.
            st.out_of_space = false;
            st.waiting_for_file = None;
        }
        let work_left = self.background_due(st);
        Ok(Progress { did_work, work_left })
    }

    /// Whether the file layer has only the files kept for flushes and logs
    /// left ([`SPLIT_RESERVE_FILES`]), or none.
    pub(super) fn short_of_files(&self) -> bool {
        self.inner.fs.files_left().is_some_and(|n| n <= SPLIT_RESERVE_FILES)
    }

    fn budget_bytes(&self, blocks: usize) -> u64 {
        (blocks as u64).saturating_mul(self.inner.options.block_size as u64)
    }

    /// Runs one step of `job` with the state lock let go
    /// ([`StateGuard::run_job`]; the caller took `job` out of the state
    /// after waiting for any other step), allocating output numbers under
    /// short locks. A failure is a [`Stage::Create`] one when it only failed
    /// to create the next output file (nothing written), else a
    /// [`Stage::Write`] one.
    pub(super) fn step_job(
        &self,
        st: &mut StateGuard,
        job: &mut TableJob,
        budget: usize,
    ) -> std::result::Result<bool, (Stage, Error)> {
        let inner = &*self.inner;
        // A number is pending before its file exists, so that no
        // `delete_obsolete_files` meanwhile takes the file for an orphan.
        let mut new_file = || {
            let mut st = lock(&inner.state);
            let n = st.versions.new_file_number();
            st.pending_outputs.insert(n);
            n
        };
        let mut env = JobEnv { fs: &*inner.fs, dir: &inner.dir, new_file: &mut new_file };
        let (before, kept_open) = (job.bytes_read, job.outputs_kept_open);
        let budget = self.budget_bytes(budget);
        let r = st.run_job(|| job.step(&mut env, budget));
        st.work_bytes += job.bytes_read - before;
        inner.stats.add(Ticker::CompactionOutputsKeptOpen, job.outputs_kept_open - kept_open);
        // Merges of this step, whether it succeeded or a merge failed it.
        job.take_merge_stats().report(&inner.stats);
        r.map_err(|e| (if job.create_failed() { Stage::Create } else { Stage::Write }, e))
    }

    /// Decides what a failure at `stage` means (`failure.rs`) and, when it
    /// stops writes, records it as the database's background error.
    pub(super) fn fail(&self, st: &mut DbState, stage: Stage, error: Error) -> Failure {
        let f = Failure::new(stage, error);
        if f.recovery == Recovery::StopWrites {
            st.bg_error = Some(f.error.clone());
        }
        f
    }

    /// Starts (if needed) and advances the flush of the oldest immutable
    /// memtable. On a failure, as [`Recovery`] says: the job stays queued
    /// as it is (`RetryLater`: a create failed, nothing written), or is
    /// dropped with its unfinished outputs deleted and started over later
    /// (`FailAlone`: out of space; the memtable stays queued), or writes
    /// stop (`StopWrites`; partial files are orphans the next open deletes).
    pub(super) fn flush_step(&self, st: &mut StateGuard, budget: usize) -> Attempt<()> {
        let Err((stage, e)) = self.flush_step_inner(st, budget) else { return Ok(()) };
        let f = self.fail(st, stage, e);
        match f.recovery {
            Recovery::RetryLater => {}
            Recovery::FailAlone => {
                if let Some(job) = st.flush.take() {
                    self.abandon_job(st, job);
                }
            }
            Recovery::StopWrites => st.flush = None,
        }
        Err(f)
    }

    /// Drops a job that ran out of space and deletes its outputs, which no
    /// version names, giving their space back.
    pub(super) fn abandon_job(&self, st: &mut DbState, job: TableJob) {
        let allocated = job.allocated.clone();
        drop(job); // closes its open output
        for n in &allocated {
            st.pending_outputs.remove(n);
        }
        self.inner.delete_obsolete_files(st);
    }

    /// The flush step; a failure leaves the job in `st.flush` for
    /// [`Db::flush_step`] to keep or drop.
    fn flush_step_inner(&self, st: &mut StateGuard, budget: usize) -> std::result::Result<(), (Stage, Error)> {
        let inner = &*self.inner;
        st.wait_for_job();
        let mut job = match st.flush.take() {
            Some(job) => job,
            None => {
                let Some(mem) = st.imm.front().cloned() else { return Ok(()) };
                let tombstones = mem.tombstones().unwrap_or_default();
                let resolver = KeyResolver::new(
                    inner.snapshots.sequences(),
                    tombstones,
                    false,
                    inner.options.merge_operator.clone(),
                    inner.options.timer_owned(),
                );
                let mut job =
                    TableJob::new(Box::new(mem.iter()), resolver, u64::MAX, inner.options.table_options(false));
                job.started_micros = inner.options.now_micros();
                job
            }
        };
        let done = match self.step_job(st, &mut job, budget) {
            Ok(done) => done,
            Err(e) => {
                st.flush = Some(job);
                return Err(e);
            }
        };
        if !done {
            st.flush = Some(job);
            return Ok(());
        }
        let mut edit = VersionEdit::default();
        edit.added.extend(job.outputs.iter().map(|m| (0, m.clone())));
        // WALs older than the oldest memtable still unflushed are done with.
        edit.log_number = Some(st.imm.get(1).map_or(st.mem.wal_number(), |m| m.wal_number()));
        if let Err(e) = st.versions.log_and_apply(edit) {
            st.flush = Some(job);
            return Err((Stage::Write, e));
        }
        st.imm.pop_front();
        for n in &job.allocated {
            st.pending_outputs.remove(n);
        }
        self.install_super_version(st);
        let stats = &inner.stats;
        stats.add(Ticker::Flushes, 1);
        stats.add(Ticker::FlushWriteBytes, job.bytes_written);
        if inner.options.timer().is_some() {
            stats.record(Histogram::FlushTime, inner.options.now_micros().saturating_sub(job.started_micros));
        }
        self.inner.delete_obsolete_files(st);
        Ok(())
    }

    /// Whether [`Db::do_background_work`] has anything to do now: a flush
    /// or compaction is in progress or due. Cheap enough to ask after every
    /// write (siltdb's worker runs a step after a write only then, instead
    /// of a task per write that finds nothing).
    pub fn background_work_due(&self) -> bool {
        let st = lock(&self.inner.state);
        self.background_due(&st)
    }

    /// Whether a flush or compaction is in progress or due: a memtable
    /// waits, a job or a manual compaction runs, or (with automatic
    /// compactions) the picker wants one.
    pub(super) fn background_due(&self, st: &DbState) -> bool {
        !st.imm.is_empty()
            || st.compaction.is_some()
            || st.manual.is_some()
            || st.job_running
            || (!self.inner.options.disable_auto_compactions
                && !matches!(
                    picker::choose(st.versions.current_ref(), &self.inner.options.picker_options(), &st.cursors),
                    Choice::DoNothing
                ))
    }

    /// Asks the picker for work; applies a trivial move at once, or starts a
    /// compaction job and runs its first step. Returns whether it did work.
    pub(super) fn pick_compaction(&self, st: &mut StateGuard, budget: usize) -> Attempt<bool> {
        let v = st.versions.current_ref().clone();
        let o = self.inner.options.picker_options();
        let mut choice = picker::choose(&v, &o, &st.cursors);
        if matches!(choice, Choice::DoNothing) && self.short_of_files() {
            choice = picker::fewer_files(&v, &o);
        }
        match choice {
            Choice::DoNothing => Ok(false),
            Choice::Move { from, files, to } => {
                let mut edit = VersionEdit::default();
                for file in &files {
                    edit.deleted.push((from, file.number()));
                    edit.added.push((to, file.meta.clone()));
                }
                self.apply_edit(st, edit)?;
                if let Some(last) = files.iter().map(|f| f.largest_user_key()).max() {
                    st.cursors[from] = last.to_vec();
                }
                self.inner.stats.add(Ticker::TrivialMoves, files.len() as u64);
                self.install_super_version(st);
                Ok(true)
            }
            Choice::Merge(spec) => {
                if let Some((level, files)) = spec.inputs.first() {
                    if *level > 0 {
                        if let Some(f) = files.last() {
                            st.cursors[*level] = f.largest_user_key().to_vec();
                        }
                    }
                }
                self.start_compaction(st, spec).map_err(|e| self.fail(st, Stage::Read, e))?;
                self.compaction_step(st, budget)?;
                Ok(true)
            }
        }
    }

    /// Applies `edit`, a [`Stage::Write`]. Out of space, the current version
    /// is as it was: the record went in one append that failed and whose
    /// partial bytes the log writer cut off, and the next edit starts a new
    /// manifest anyway (`VersionSet::log_and_apply`). A sync that failed
    /// comes back from there as an `Io` error, which stops writes.
    fn apply_edit(&self, st: &mut DbState, edit: VersionEdit) -> Attempt<()> {
        st.versions.log_and_apply(edit).map(drop).map_err(|e| self.fail(st, Stage::Write, e))
    }

    fn start_compaction(&self, st: &mut DbState, spec: CompactionSpec) -> Result<()> {
        let inner = &*self.inner;
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut tombstones: Vec<Arc<FragmentedTombstones>> = Vec::new();
        for (_, files) in &spec.inputs {
            for f in files {
                let t = f.table(&inner.tables)?;
                if let Some(ts) = t.tombstones() {
                    tombstones.push(ts.clone());
                }
                children.push(Box::new(t.iter(false)));
            }
        }
        let all = spec.inputs.iter().flat_map(|(_, fs)| fs.iter());
        let (lo, hi) = picker::key_range(all).unwrap_or_default();
        let bottommost = picker::is_bottommost(st.versions.current_ref(), spec.output_level, &lo, &hi);
        let resolver = KeyResolver::new(
            inner.snapshots.sequences(),
            Arc::new(range_del::merge_all(&tombstones)),
            bottommost,
            inner.options.merge_operator.clone(),
            inner.options.timer_owned(),
        );
        let mut job = TableJob::new(
            Box::new(MergingIterator::new(children)),
            resolver,
            inner.options.target_file_size_base,
            inner.options.table_options(bottommost),
        );
        job.started_micros = inner.options.now_micros();
        st.compaction = Some((spec, job));
        Ok(())
    }

    /// Advances the running compaction; installs its result when done. On a
    /// failure, as [`Recovery`] says: the job is kept (`RetryLater`), or its
    /// outputs are dropped and it starts over later (`FailAlone`: out of
    /// space; its inputs are intact), or writes stop (`StopWrites`).
    pub(super) fn compaction_step(&self, st: &mut StateGuard, budget: usize) -> Attempt<()> {
        st.wait_for_job();
        let Some((spec, mut job)) = st.compaction.take() else { return Ok(()) };
        match self.step_job(st, &mut job, budget) {
            Err((stage, e)) => {
                let f = self.fail(st, stage, e);
                match f.recovery {
                    Recovery::RetryLater => st.compaction = Some((spec, job)),
                    Recovery::FailAlone => self.abandon_compaction(st, &spec, job),
                    Recovery::StopWrites => {}
                }
                Err(f)
            }
            Ok(false) => {
                st.compaction = Some((spec, job));
                Ok(())
            }
            Ok(true) => {
                let edit = VersionEdit {
                    deleted: spec.input_numbers(),
                    added: job.outputs.iter().map(|m| (spec.output_level, m.clone())).collect(),
                    ..VersionEdit::default()
                };
                if let Err(f) = self.apply_edit(st, edit) {
                    match f.recovery {
                        // Done, but not installed (no file for a new
                        // manifest): the next step installs it.
                        Recovery::RetryLater => st.compaction = Some((spec, job)),
                        Recovery::FailAlone => self.abandon_compaction(st, &spec, job),
                        Recovery::StopWrites => {}
                    }
                    return Err(f);
                }
                for n in &job.allocated {
                    st.pending_outputs.remove(n);
                }
                self.install_super_version(st);
                let inner = &*self.inner;
                let s = &inner.stats;
                let drops = job.drops();
                s.add(Ticker::Compactions, 1);
                match spec.reason {
                    picker::Reason::ReadTriggered => s.add(Ticker::ReadCompactions, 1),
                    picker::Reason::FileCount => s.add(Ticker::FileCountCompactions, 1),
                    _ => {}
                }
                s.add(Ticker::CompactReadBytes, job.bytes_read);
                s.add(Ticker::CompactWriteBytes, job.bytes_written);
                s.add(Ticker::CompactionKeyDropNewerEntry, drops.newer_entry);
                s.add(Ticker::CompactionKeyDropObsolete, drops.obsolete);
                s.add(Ticker::CompactionKeyDropRangeDel, drops.range_del);
                s.add(Ticker::CompactionRangeDelDropObsolete, drops.range_del_obsolete);
                if inner.options.timer().is_some() {
                    s.record(Histogram::CompactionTime, inner.options.now_micros().saturating_sub(job.started_micros));
                }
                self.inner.delete_obsolete_files(st);
                Ok(())
            }
        }
    }

    /// Drops a compaction that ran out of space. A manual compaction of the
    /// last level (which `manual_step` marks done when it starts) is
    /// started again by its next step.
    fn abandon_compaction(&self, st: &mut DbState, spec: &CompactionSpec, job: TableJob) {
        if st.manual.as_ref().is_some_and(|m| m.skip_bottommost) {
            // An idle compaction is an optimisation: out of space, it is
            // dropped, not retried (and the picker's work goes on); none
            // starts again until a step goes through (`out_of_space`).
            st.manual = None;
            st.out_of_space = true;
        } else if let (Some(m), Some((level, _))) = (st.manual.as_mut(), spec.inputs.first()) {
            m.level = m.level.min(*level);
        }
        self.abandon_job(st, job);
    }

    /// Flushes every memtable (the active one included) to table files and
    /// waits for that to finish.
    pub fn flush(&self) -> Result<()> {
        self.check_open()?;
        let mut st = StateGuard::new(&self.inner);
        Ok(self.flush_locked(&mut st)?)
    }

    pub(super) fn flush_locked(&self, st: &mut StateGuard) -> Attempt<()> {
        if let Some(e) = &st.bg_error {
            return Err(Failure::stopped(e.clone()));
        }
        if !st.mem.is_empty() {
            self.switch_memtable(st)?;
        }
        while !st.imm.is_empty() {
            self.flush_step(st, usize::MAX)?;
        }
        Ok(())
    }

    /// Compacts every key in `[begin, end]` (`None` = unbounded) down to the
    /// last level, rewriting every table file that holds such keys: after
    /// it, deleted and overwritten data in the range takes no space (unless a
    /// snapshot still needs it). Flushes the memtables first; runs to
    /// completion. [`Db::start_compact_range`] does the same in steps.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.check_open()?;
        let mut st = StateGuard::new(&self.inner);
        self.flush_locked(&mut st)?;
        st.wait_for_job();
        while st.compaction.is_some() {
            self.compaction_step(&mut st, usize::MAX)?;
        }
        st.manual = Some(ManualCompaction {
            begin: begin.map(<[u8]>::to_vec),
            end: end.map(<[u8]>::to_vec),
            level: 0,
            skip_bottommost: false,
        });
        while st.manual.is_some() || st.compaction.is_some() {
            self.background_step(&mut st, usize::MAX)?;
        }
        self.inner.delete_obsolete_files(&mut st);
        Ok(())
    }

    /// Starts a `compact_range` that `do_background_work` carries out in
    /// budgeted steps (the active memtable is switched out now and flushed
    /// first), so that an embedder with one thread stays responsive.
    /// `Progress::work_left` stays true until it is done.
    pub fn start_compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.check_open()?;
        let mut st = lock(&self.inner.state);
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        if !st.mem.is_empty() {
            self.switch_memtable(&mut st)?;
        }
        st.manual = Some(ManualCompaction {
            begin: begin.map(<[u8]>::to_vec),
            end: end.map(<[u8]>::to_vec),
            level: 0,
            skip_bottommost: false,
        });
        Ok(())
    }

    /// Starts a read-optimising compaction if the database is idle enough
    /// for one (the embedder calls this once it has been idle a while): no
    /// other background work is due, automatic compactions are on, a point
    /// lookup may have to probe more than one sorted run (L0 files, and
    /// each level that holds data), and the tables total at most
    /// [`Options::idle_compaction_max_bytes`]. It compacts what lies above
    /// the last level holding data down into it, and never rewrites that
    /// level alone; `do_background_work` carries it out in budgeted steps
    /// (as it does `start_compact_range`'s), and a write meanwhile does not
    /// stop it. Returns whether it started.
    ///
    /// [`Options::idle_compaction_max_bytes`]: crate::Options::idle_compaction_max_bytes
    pub fn start_idle_compaction(&self) -> Result<bool> {
        self.check_open()?;
        let max = self.inner.options.idle_compaction_max_bytes;
        if max == 0 || self.inner.options.disable_auto_compactions {
            return Ok(false);
        }
        let mut st = StateGuard::new(&self.inner);
        st.wait_for_job();
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        // Nothing else due, and room: the last job did not run out of
        // space, and there are files to spare.
        if self.background_due(&st) || st.out_of_space || self.short_of_files() {
            return Ok(false);
        }
        let v = st.versions.current_ref().clone();
        let bytes: u64 = v.levels.iter().flatten().map(|f| f.meta.file_size).sum();
        if is_one_run_from(&v, 0) || bytes > max {
            return Ok(false);
        }
        st.manual = Some(ManualCompaction { begin: None, end: None, level: 0, skip_bottommost: true });
        self.inner.stats.add(Ticker::IdleCompactions, 1);
        Ok(true)
    }

    /// Whether a manual compaction started by [`Db::start_compact_range`]
    /// is still running.
    pub fn manual_compaction_pending(&self) -> bool {
        lock(&self.inner.state).manual.is_some()
    }

    /// Advances the manual compaction: starts the next compaction of its
    /// range, level by level down to the last level (rewritten in place,
    /// once), and runs its first step.
    fn manual_step(&self, st: &mut StateGuard, budget: usize) -> Attempt<()> {
        let last = NUM_LEVELS - 1;
        loop {
            let state: &mut DbState = st;
            let v = state.versions.current_ref().clone();
            let Some(m) = state.manual.as_mut() else { break };
            if m.level > last || (m.skip_bottommost && is_one_run_from(&v, m.level)) {
                state.manual = None;
                break;
            }
            let choice =
                picker::manual(&v, &self.inner.options.picker_options(), m.level, m.begin.as_deref(), m.end.as_deref());
            match choice {
                Choice::DoNothing => m.level += 1,
                Choice::Move { .. } => {
                    let e = Error::NotSupported("manual compaction never moves files".into());
                    return Err(self.fail(st, Stage::Read, e));
                }
                Choice::Merge(spec) => {
                    if m.level == last || (m.skip_bottommost && m.level == 0) {
                        // The last level is rewritten once; and an idle
                        // compaction takes L0 once, as it was: files that
                        // writes flush meanwhile are left to the picker, so
                        // that a steady writer never keeps it going.
                        m.level += 1;
                    }
                    self.start_compaction(st, spec).map_err(|e| self.fail(st, Stage::Read, e))?;
                    return self.compaction_step(st, budget);
                }
            }
        }
        Ok(())
    }
}

impl DbInner {
    /// Deletes files no live version, memtable or job needs. Failures are
    /// left for the next call (an orphan is harmless; it is retried).
    pub(super) fn delete_obsolete_files(&self, st: &mut DbState) {
        let inner = self;
        let mut live = st.versions.live_files();
        live.extend(st.pending_outputs.iter().copied());
        let Ok(mut names) = inner.fs.list(&inner.dir) else { return };
        // In name order, so that a run's file-system calls are the same every
        // time (the crash matrix relies on it; listings come in any order).
        crate::sort::sort(&mut names);
        for name in names {
            let obsolete = match parse_file_name(&name) {
                Some(FileKind::Table(n)) => !live.contains(&n),
                Some(FileKind::Wal(n)) => n < st.versions.log_number && n != st.wal_number,
                Some(FileKind::Manifest(n)) => n != st.versions.manifest_number(),
                Some(FileKind::Lock) | None => false,
            };
            if obsolete && inner.fs.remove(&crate::fs::join(&inner.dir, &name)).is_ok() {
                if let Some(FileKind::Table(n)) = parse_file_name(&name) {
                    inner.tables.cache.erase_file(n);
                    if let Some(rc) = &inner.row_cache {
                        rc.erase_file(n);
                    }
                }
            }
        }
    }
}

/// Whether what levels `level` and below hold is one sorted run at most: a
/// point lookup there probes one table (L0 counts once per file, its files
/// overlap; each deeper level that holds data once).
fn is_one_run_from(v: &Version, level: usize) -> bool {
    let runs: usize = (level..NUM_LEVELS)
        .map(|l| if l == 0 { v.levels[0].len() } else { usize::from(!v.levels[l].is_empty()) })
        .sum();
    runs <= 1
}
