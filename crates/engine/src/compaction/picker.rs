//! The compaction picker: a pure function from a version (and the options)
//! to what to compact next. No I/O; unit-tested on hand-made versions.
//!
//! Leveled compaction with dynamic level sizes (RocksDB's
//! `level_compaction_dynamic_level_bytes`): the last level's target is its
//! actual size; each level above it targets a tenth (the multiplier) of the
//! one below, up to the *base level*, the highest level whose target is
//! still at least `max_bytes_for_level_base`. L0 compacts into the base
//! level; levels above the base level stay empty (data found there, from a
//! time the database was larger or ingested above the last level, is
//! drained down first, and until it is, L0 compacts into the first such
//! level: [`l0_output_level`]).

use std::sync::Arc;

use crate::version::{FileMetaData, Version, NUM_LEVELS};

/// What the picker needs to know of the options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickerOptions {
    pub level0_file_num_compaction_trigger: usize,
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: u64,
    /// L0 files smaller than this are merged, never moved down as they
    /// are: small flushes (a small write buffer, data that compresses well)
    /// would otherwise pile up as many small tables, each an OPFS file of
    /// the pool (a quarter of `target_file_size_base`).
    pub min_l0_move_bytes: u64,
}

/// Target sizes per level and the level L0 compacts into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelTargets {
    pub base_level: usize,
    /// 0 for L0 and for levels above the base level.
    pub bytes: [u64; NUM_LEVELS],
}

/// Why a compaction was chosen (for statistics and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    L0FileCount,
    LevelSize,
    DrainAboveBase,
    Manual,
    /// Lookups searched a file in vain often enough (read sampling).
    ReadTriggered,
    /// The file layer is short of files ([`fewer_files`]).
    FileCount,
}

/// A compaction to run: every file of `inputs` is read and merged, the
/// result written to `output_level`.
#[derive(Clone)]
pub struct CompactionSpec {
    /// (level, files) of each input level, upper level first.
    pub inputs: Vec<(usize, Vec<Arc<FileMetaData>>)>,
    pub output_level: usize,
    pub reason: Reason,
}

impl CompactionSpec {
    pub fn input_numbers(&self) -> Vec<(usize, u64)> {
        self.inputs.iter().flat_map(|(l, fs)| fs.iter().map(move |f| (*l, f.number()))).collect()
    }
}

impl std::fmt::Debug for CompactionSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionSpec")
            .field("inputs", &self.input_numbers())
            .field("output_level", &self.output_level)
            .field("reason", &self.reason)
            .finish()
    }
}

/// The picker's decision.
#[derive(Clone, Debug)]
pub enum Choice {
    DoNothing,
    /// Move files down unchanged: one file of a level whose range nothing
    /// overlaps in the next, or every L0 file when they overlap neither
    /// each other nor anything in the base level (an ascending load: RocksDB's
    /// L0 trivial move), so it is not read and written again.
    Move {
        from: usize,
        files: Vec<Arc<FileMetaData>>,
        to: usize,
    },
    Merge(CompactionSpec),
}

pub fn level_bytes(v: &Version) -> [u64; NUM_LEVELS] {
    let mut out = [0; NUM_LEVELS];
    for (l, files) in v.levels.iter().enumerate() {
        out[l] = files.iter().map(|f| f.meta.file_size).sum();
    }
    out
}

/// The level L0 compacts into: the base level, or the first level below L0
/// that holds any file, if that is higher. Data in a level above the base
/// level (a table ingested above the last level, or what is left of an old
/// base level after the base level moved down) is older than L0's and
/// newer than what lies below it: L0 compacted past it would put newer
/// versions underneath older ones (a get stops at the older one) and make
/// the compaction look bottommost (a tombstone dropped brings back what it
/// deleted; merge operands lose their base). RocksDB bounds its base level
/// by the first non-empty level for the same reason.
pub fn l0_output_level(v: &Version, targets: &LevelTargets) -> usize {
    (1..targets.base_level).find(|&l| !v.levels[l].is_empty()).unwrap_or(targets.base_level)
}

/// Computes the dynamic level targets from the level sizes.
pub fn level_targets(sizes: &[u64; NUM_LEVELS], o: &PickerOptions) -> LevelTargets {
    let last = NUM_LEVELS - 1;
    let mult = o.max_bytes_for_level_multiplier.max(2);
    let base = o.max_bytes_for_level_base.max(1);
    let max_size = sizes[1..].iter().copied().max().unwrap_or(0);
    let mut bytes = [0u64; NUM_LEVELS];
    let mut level = last;
    let mut target = max_size.max(base);
    bytes[last] = target;
    while level > 1 && target / mult >= base {
        target /= mult;
        level -= 1;
        bytes[level] = target;
    }
    LevelTargets { base_level: level, bytes }
}

fn overlaps(f: &FileMetaData, lo: &[u8], hi: &[u8]) -> bool {
    f.smallest_user_key() <= hi && f.largest_user_key() >= lo
}

/// The user-key range covered by `files`.
pub fn key_range<'a>(files: impl IntoIterator<Item = &'a Arc<FileMetaData>>) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut range: Option<(Vec<u8>, Vec<u8>)> = None;
    for f in files {
        let (s, l) = (f.smallest_user_key(), f.largest_user_key());
        range = Some(match range {
            None => (s.to_vec(), l.to_vec()),
            Some((lo, hi)) => {
                (if s < lo.as_slice() { s.to_vec() } else { lo }, if l > hi.as_slice() { l.to_vec() } else { hi })
            }
        });
    }
    range
}

/// Files of `level` overlapping the user-key range [lo, hi].
pub fn overlapping(v: &Version, level: usize, lo: &[u8], hi: &[u8]) -> Vec<Arc<FileMetaData>> {
    v.levels[level].iter().filter(|f| overlaps(f, lo, hi)).cloned().collect()
}

/// Whether no two of `files` overlap.
fn disjoint(files: &[Arc<FileMetaData>]) -> bool {
    let mut by_start: Vec<_> = files.iter().collect();
    crate::sort::sort_by(&mut by_start, |a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
    by_start.windows(2).all(|w| w[0].largest_user_key() < w[1].smallest_user_key())
}

/// Builds a compaction of `upper` (files of `level`) into `output_level`,
/// adding every file of the output level that overlaps them; or a move of
/// `upper` when nothing needs merging (see [`Choice::Move`]).
fn merge_into(
    v: &Version,
    o: &PickerOptions,
    level: usize,
    upper: Vec<Arc<FileMetaData>>,
    output_level: usize,
    reason: Reason,
) -> Choice {
    let Some((lo, hi)) = key_range(&upper) else { return Choice::DoNothing };
    let lower = overlapping(v, output_level, &lo, &hi);
    // Nothing of the output level may overlap a file moved. L0 files must
    // not overlap each other either (they become files of one level), and
    // may straddle output files that sit between them.
    let movable = reason != Reason::Manual
        && match level {
            0 => {
                upper.iter().all(|f| f.meta.file_size >= o.min_l0_move_bytes)
                    && disjoint(&upper)
                    && upper
                        .iter()
                        .all(|f| overlapping(v, output_level, f.smallest_user_key(), f.largest_user_key()).is_empty())
            }
            _ => upper.len() == 1 && lower.is_empty(),
        };
    if movable {
        return Choice::Move { from: level, files: upper, to: output_level };
    }
    let mut inputs = vec![(level, upper)];
    if !lower.is_empty() {
        inputs.push((output_level, lower));
    }
    Choice::Merge(CompactionSpec { inputs, output_level, reason })
}

/// Chooses the next compaction. `cursors[l]` is the largest user key of the
/// file last compacted out of level `l` (round-robin through the level).
pub fn choose(v: &Version, o: &PickerOptions, cursors: &[Vec<u8>; NUM_LEVELS]) -> Choice {
    let sizes = level_bytes(v);
    let targets = level_targets(&sizes, o);
    let last = NUM_LEVELS - 1;
    // Score every level; the highest score >= 1 wins.
    let mut best: Option<(f64, usize)> = None;
    let mut consider = |score: f64, level: usize| {
        if score >= 1.0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, level));
        }
    };
    let trigger = o.level0_file_num_compaction_trigger.max(1);
    consider(v.levels[0].len() as f64 / trigger as f64, 0);
    for (level, &size) in sizes.iter().enumerate().take(last).skip(1) {
        if v.levels[level].is_empty() {
            continue;
        }
        if level < targets.base_level {
            consider(1000.0, level);
        } else {
            consider(size as f64 / targets.bytes[level].max(1) as f64, level);
        }
    }
    let Some((_, level)) = best else { return read_triggered(v, o, &targets) };
    if level == 0 {
        return merge_into(v, o, 0, v.levels[0].clone(), l0_output_level(v, &targets), Reason::L0FileCount);
    }
    let reason = if level < targets.base_level { Reason::DrainAboveBase } else { Reason::LevelSize };
    // Round-robin: the first file past the cursor, wrapping around.
    let files = &v.levels[level];
    let cursor = &cursors[level];
    let pick = files
        .iter()
        .find(|f| cursor.is_empty() || f.smallest_user_key() > cursor.as_slice())
        .unwrap_or(&files[0])
        .clone();
    merge_into(v, o, level, vec![pick], level + 1, reason)
}

/// With no size-triggered work due: the first file (from the top) that
/// lookups searched in vain often enough (`FileMetaData::wants_read_compaction`)
/// and whose compaction would leave lookups fewer files to search: L0 files
/// (with all of L0) into the base level; a file of a lower level into the
/// next, where files overlap it. A file with nothing below it to merge with
/// is left alone (moving it down would spare no lookup).
fn read_triggered(v: &Version, o: &PickerOptions, targets: &LevelTargets) -> Choice {
    let last = NUM_LEVELS - 1;
    for (level, files) in v.levels.iter().enumerate().take(last) {
        for f in files.iter().filter(|f| f.wants_read_compaction()) {
            if level == 0 {
                return merge_into(v, o, 0, v.levels[0].clone(), l0_output_level(v, targets), Reason::ReadTriggered);
            }
            if !overlapping(v, level + 1, f.smallest_user_key(), f.largest_user_key()).is_empty() {
                return merge_into(v, o, level, vec![f.clone()], level + 1, Reason::ReadTriggered);
            }
        }
    }
    Choice::DoNothing
}

/// When the file layer is short of files (a pool its embedder grows only
/// between calls) and nothing else is due: a compaction whose output, one
/// file, replaces two or more. All of L0 with what it overlaps in the base
/// level, when L0 has two files or more; else the two adjacent files of a
/// level below L0 whose merge writes least, into one file of that same
/// level (adjacent: no file of the level lies between them, so the output
/// overlaps no other). `DoNothing` when no level has two files.
pub fn fewer_files(v: &Version, o: &PickerOptions) -> Choice {
    if v.levels[0].len() >= 2 {
        let base = l0_output_level(v, &level_targets(&level_bytes(v), o));
        let mut inputs = vec![(0, v.levels[0].clone())];
        if let Some((lo, hi)) = key_range(&v.levels[0]) {
            let lower = overlapping(v, base, &lo, &hi);
            if !lower.is_empty() {
                inputs.push((base, lower));
            }
        }
        return Choice::Merge(CompactionSpec { inputs, output_level: base, reason: Reason::FileCount });
    }
    let mut best: Option<(u64, usize, usize)> = None;
    for (level, files) in v.levels.iter().enumerate().skip(1) {
        for (i, pair) in files.windows(2).enumerate() {
            let bytes = pair[0].meta.file_size + pair[1].meta.file_size;
            if best.is_none_or(|(b, _, _)| bytes < b) {
                best = Some((bytes, level, i));
            }
        }
    }
    let Some((_, level, i)) = best else { return Choice::DoNothing };
    Choice::Merge(CompactionSpec {
        inputs: vec![(level, v.levels[level][i..i + 2].to_vec())],
        output_level: level,
        reason: Reason::FileCount,
    })
}

/// The manual compaction of level `level`'s files overlapping [lo, hi]
/// (`None` = unbounded) into the next level (L0 into [`l0_output_level`]; the
/// last level into itself). Never a trivial move: manual compaction
/// rewrites every file it touches.
pub fn manual(v: &Version, o: &PickerOptions, level: usize, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Choice {
    let files: Vec<_> = v.levels[level]
        .iter()
        .filter(|f| lo.is_none_or(|lo| f.largest_user_key() >= lo) && hi.is_none_or(|hi| f.smallest_user_key() <= hi))
        .cloned()
        .collect();
    if files.is_empty() {
        return Choice::DoNothing;
    }
    if level == NUM_LEVELS - 1 {
        // The last level compacts into itself, dropping what is obsolete.
        return Choice::Merge(CompactionSpec {
            inputs: vec![(level, files)],
            output_level: level,
            reason: Reason::Manual,
        });
    }
    let (files, output_level) = if level == 0 {
        // All of L0: its files overlap each other, and a newer file left
        // behind would sort below older data moved down.
        (v.levels[0].clone(), l0_output_level(v, &level_targets(&level_bytes(v), o)))
    } else {
        (files, level + 1)
    };
    merge_into(v, o, level, files, output_level, Reason::Manual)
}

/// Whether no level below `output_level` holds data in [lo, hi]: deletions
/// and tombstones written there shadow nothing and may be dropped.
pub fn is_bottommost(v: &Version, output_level: usize, lo: &[u8], hi: &[u8]) -> bool {
    (output_level + 1..NUM_LEVELS).all(|l| overlapping(v, l, lo, hi).is_empty())
}

#[cfg(test)]
mod tests;
