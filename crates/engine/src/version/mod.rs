//! Versions: which table files make up the database, how that changes
//! (`VersionEdit`), and the manifest that records the changes.

mod edit;
pub(crate) mod set;

pub use edit::{FileMeta, VersionEdit};
pub use set::{Recovered, VersionSet};

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::cache::BlockCache;
use crate::error::Result;
use crate::format::key;
use crate::format::key_prefix::KeyPrefixes;
use crate::fs::{join, Fs};
use crate::sst::Table;
use crate::stats::Statistics;

/// Levels of the LSM tree. L0 files may overlap; L1+ files are disjoint.
pub const NUM_LEVELS: usize = 7;

/// A table file in a version, with its table opened lazily and kept open for
/// as long as any version holds the file.
pub struct FileMetaData {
    pub meta: FileMeta,
    table: OnceLock<Arc<Table>>,
    /// Lookups that may still search this file in vain before it is worth
    /// compacting (LevelDB's `allowed_seeks`): read-triggered compaction.
    reads_allowed: AtomicI64,
}

/// Bytes of file one lookup searched in vain is worth: LevelDB's estimate
/// that compacting 16 KiB costs about one seek.
const BYTES_PER_READ_ALLOWED: u64 = 16 << 10;
const MIN_READS_ALLOWED: i64 = 100;

impl FileMetaData {
    pub fn new(meta: FileMeta) -> Self {
        let allowed = i64::try_from(meta.file_size / BYTES_PER_READ_ALLOWED).unwrap_or(i64::MAX).max(MIN_READS_ALLOWED);
        FileMetaData { meta, table: OnceLock::new(), reads_allowed: AtomicI64::new(allowed) }
    }

    /// Charges `reads` lookups that searched this file in vain. True when
    /// this charge used up its allowance (once).
    pub fn charge_reads(&self, reads: u32) -> bool {
        let before = self.reads_allowed.fetch_sub(i64::from(reads), Ordering::Relaxed);
        before > 0 && before <= i64::from(reads)
    }

    /// Whether lookups searched this file in vain often enough that
    /// compacting it would pay.
    pub fn wants_read_compaction(&self) -> bool {
        self.reads_allowed.load(Ordering::Relaxed) <= 0
    }

    pub fn number(&self) -> u64 {
        self.meta.number
    }

    pub fn smallest_user_key(&self) -> &[u8] {
        key::user_key(&self.meta.smallest)
    }

    pub fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.meta.largest)
    }

    /// The open table, opening it on first use.
    pub fn table(&self, ctx: &TableContext) -> Result<Arc<Table>> {
        if let Some(t) = self.table.get() {
            return Ok(t.clone());
        }
        let path = table_path(&ctx.dir, self.meta.number);
        let file = ctx.fs.open(&path, false)?;
        let t = Arc::new(Table::open(file, &path, self.meta.number, ctx.cache.clone(), ctx.stats.clone())?);
        Ok(self.table.get_or_init(|| t).clone())
    }
}

impl std::fmt::Debug for FileMetaData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileMetaData")
            .field("number", &self.meta.number)
            .field("file_size", &self.meta.file_size)
            .field("smallest", &String::from_utf8_lossy(self.smallest_user_key()))
            .field("largest", &String::from_utf8_lossy(self.largest_user_key()))
            .finish()
    }
}

/// What opening a table needs.
#[derive(Clone)]
pub struct TableContext {
    pub fs: Arc<dyn Fs>,
    pub dir: String,
    pub cache: Arc<BlockCache>,
    pub stats: Arc<Statistics>,
}

/// An immutable set of files per level.
#[derive(Default)]
pub struct Version {
    /// L0 newest first; L1+ sorted by smallest key. Not changed once the
    /// version is in use: `largest` is made from it on first use.
    pub levels: [Vec<Arc<FileMetaData>>; NUM_LEVELS],
    /// Per level >= 1, integers for the files' largest user keys
    /// (`format/key_prefix.rs`), made by the first lookup in the level:
    /// `find_file`'s binary search compares them, not keys behind two
    /// pointers.
    largest: [OnceLock<KeyPrefixes>; NUM_LEVELS],
}

impl Version {
    pub fn files(&self) -> impl Iterator<Item = (usize, &Arc<FileMetaData>)> {
        self.levels.iter().enumerate().flat_map(|(l, fs)| fs.iter().map(move |f| (l, f)))
    }

    /// In a level >= 1, the only file that may hold the internal key
    /// `lookup` (a seek key). A file whose largest key is a range-tombstone
    /// sentinel for `k` (`(k, MAX_SEQUENCE, RangeDelete)`: its tombstones end
    /// before `k`) holds nothing of `k` and is never taken for it, whatever
    /// the lookup's sequence number: a seek key at `MAX_SEQUENCE` (the
    /// transaction conflict check's) sorts before the sentinel, and
    /// comparing internal keys alone would stop at that file and miss the
    /// next one, which starts with `k`.
    pub fn find_file(&self, level: usize, lookup: &[u8]) -> Option<&Arc<FileMetaData>> {
        let files = &self.levels[level];
        let user_key = key::user_key(lookup);
        let largest = self.largest[level].get_or_init(|| KeyPrefixes::new(files.iter().map(|f| f.largest_user_key())));
        // The first file whose largest key is not below `lookup`.
        let mut i = largest
            .search(0, files.len(), largest.of(user_key), |i| key::compare(&files[i].meta.largest, lookup).is_lt());
        // Files of a level are disjoint: at most the one found can end in
        // `k`'s sentinel, so it is checked once, not at every step.
        if files.get(i).is_some_and(|f| f.largest_user_key() == user_key && key::is_range_sentinel(&f.meta.largest)) {
            i += 1;
        }
        files.get(i).filter(|f| f.smallest_user_key() <= user_key)
    }
}

pub fn table_path(dir: &str, number: u64) -> String {
    join(dir, &format!("{number:06}.sst"))
}

pub fn wal_path(dir: &str, number: u64) -> String {
    join(dir, &format!("{number:06}.log"))
}

pub fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// The kinds of file a database directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Table(u64),
    Wal(u64),
    Manifest(u64),
    Lock,
}

/// Classifies a file name; `None` for names the engine did not write.
pub fn parse_file_name(name: &str) -> Option<FileKind> {
    if name == "LOCK" {
        return Some(FileKind::Lock);
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return n.parse().ok().map(FileKind::Manifest);
    }
    let (stem, ext) = name.split_once('.')?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = stem.parse().ok()?;
    match ext {
        "sst" => Some(FileKind::Table(n)),
        "log" => Some(FileKind::Wal(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip() {
        assert_eq!(parse_file_name("000012.sst"), Some(FileKind::Table(12)));
        assert_eq!(parse_file_name("1234567.log"), Some(FileKind::Wal(1_234_567)));
        assert_eq!(parse_file_name(&manifest_name(9)), Some(FileKind::Manifest(9)));
        assert_eq!(parse_file_name("LOCK"), Some(FileKind::Lock));
        for other in ["notes.txt", ".sst", "12.tmp", "MANIFEST-x", "-1.sst"] {
            assert_eq!(parse_file_name(other), None, "{other}");
        }
    }

    fn file(number: u64, smallest: Vec<u8>, largest: Vec<u8>) -> Arc<FileMetaData> {
        Arc::new(FileMetaData::new(FileMeta {
            number,
            file_size: 1,
            smallest,
            largest,
            smallest_seq: 1,
            largest_seq: 9,
        }))
    }

    /// find_file's answer, by a linear walk over the files and whole keys.
    fn linear(files: &[Arc<FileMetaData>], lookup: &[u8]) -> Option<u64> {
        let uk = key::user_key(lookup);
        files
            .iter()
            .find(|f| {
                key::compare(&f.meta.largest, lookup).is_ge()
                    && !(f.largest_user_key() == uk && key::is_range_sentinel(&f.meta.largest))
            })
            .filter(|f| f.smallest_user_key() <= uk)
            .map(|f| f.number())
    }

    #[test]
    fn find_file_agrees_with_a_linear_walk_with_a_shared_prefix_gaps_and_sentinels() {
        use key::{internal_key, seek_key, ValueType, MAX_SEQUENCE};
        let k = |s: &str| format!("!todo!{s}").into_bytes();
        // Files [a, c], [c\0.., e) ending in e's sentinel (a range
        // tombstone up to e), [e, g], a gap, [m, m] and [q, zz]: all inside
        // the prefix "!todo!" but for the targets made to leave it.
        let mut v = Version::default();
        v.levels[1] = vec![
            file(1, internal_key(&k("a"), 5, ValueType::Put), internal_key(&k("c"), 5, ValueType::Put)),
            file(
                2,
                internal_key(&k("c\0"), 5, ValueType::Put),
                internal_key(&k("e"), MAX_SEQUENCE, ValueType::RangeDelete),
            ),
            file(3, internal_key(&k("e"), 7, ValueType::Put), internal_key(&k("g"), 5, ValueType::Put)),
            file(4, internal_key(&k("m"), 5, ValueType::Put), internal_key(&k("m"), 3, ValueType::Put)),
            file(5, internal_key(&k("q"), 5, ValueType::Put), internal_key(&k("zz"), 5, ValueType::Put)),
        ];
        let mut targets: Vec<Vec<u8>> =
            ["", "a", "b", "c", "c\0", "d", "e", "f", "g", "g\0", "h", "m", "m\0", "p", "q", "zz", "zz\0", "zzz"]
                .iter()
                .map(|s| k(s))
                .collect();
        for t in ["", "!", "!todo", "!todo\x01", "!todp", "!a", "\x7f"] {
            targets.push(t.as_bytes().to_vec());
        }
        for uk in &targets {
            for seq in [0, 4, 6, MAX_SEQUENCE] {
                let lookup = seek_key(uk, seq);
                let got = v.find_file(1, &lookup).map(|f| f.number());
                assert_eq!(got, linear(&v.levels[1], &lookup), "{:?} at {seq}", String::from_utf8_lossy(uk));
            }
        }
        assert_eq!(v.find_file(1, &seek_key(&k("e"), MAX_SEQUENCE)).map(|f| f.number()), Some(3));
        assert_eq!(v.find_file(2, &seek_key(&k("e"), 1)).map(|f| f.number()), None);
    }
}
