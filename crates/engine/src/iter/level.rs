//! One level of sorted, non-overlapping table files as one iterator
//! (RocksDB's `LevelIterator`): a scan merges one child per level instead
//! of one per file, and opens a file's iterator only when it gets there.
//! L0's files overlap each other, so each stays a child of its own.

use std::sync::Arc;

use super::InternalIterator;
use crate::error::{Error, Result};
use crate::format::key;
use crate::sst::TableIter;
use crate::version::{FileMetaData, TableContext};

pub struct LevelIter {
    files: Vec<Arc<FileMetaData>>,
    tables: TableContext,
    fill_cache: bool,
    /// The file `current` reads; `files.len()` when none.
    index: usize,
    current: Option<TableIter>,
    err: Option<Error>,
}

impl LevelIter {
    /// REQUIRES: `files` sorted by key and not overlapping (a level >= 1).
    pub fn new(files: Vec<Arc<FileMetaData>>, tables: TableContext, fill_cache: bool) -> Self {
        let n = files.len();
        LevelIter { files, tables, fill_cache, index: n, current: None, err: None }
    }

    /// Opens the iterator of file `i` (none past the ends).
    fn open(&mut self, i: usize) {
        self.index = i;
        self.current = None;
        if let Some(f) = self.files.get(i) {
            match f.table(&self.tables) {
                Ok(t) => self.current = Some(t.iter(self.fill_cache)),
                Err(e) => {
                    self.err.get_or_insert(e);
                    self.index = self.files.len();
                }
            }
        }
    }

    fn current_valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    /// Keeps an error of the file left behind, so that a damaged file is
    /// reported rather than silently skipped.
    fn keep_status(&mut self) -> bool {
        if let Some(Err(e)) = self.current.as_ref().map(|c| c.status()) {
            self.err.get_or_insert(e);
            self.current = None;
            self.index = self.files.len();
            return false;
        }
        true
    }

    fn skip_empty_forward(&mut self) {
        while self.current.is_some() && !self.current_valid() {
            if !self.keep_status() {
                return;
            }
            self.open(self.index + 1);
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_empty_backward(&mut self) {
        while self.current.is_some() && !self.current_valid() {
            if !self.keep_status() {
                return;
            }
            match self.index.checked_sub(1) {
                Some(i) => {
                    self.open(i);
                    if let Some(c) = self.current.as_mut() {
                        c.seek_to_last();
                    }
                }
                None => self.current = None,
            }
        }
    }
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.current_valid()
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        self.open(0);
        if let Some(c) = self.current.as_mut() {
            c.seek_to_first();
        }
        self.skip_empty_forward();
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        self.open(self.files.len().saturating_sub(1));
        if let Some(c) = self.current.as_mut() {
            c.seek_to_last();
        }
        self.skip_empty_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        // The first file whose largest key is at or after the target.
        let i = self.files.partition_point(|f| key::compare(&f.meta.largest, target).is_lt());
        self.open(i);
        if let Some(c) = self.current.as_mut() {
            c.seek(target);
        }
        self.skip_empty_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = None;
        // The last file whose smallest key is at or before the target.
        let i = self.files.partition_point(|f| key::compare(&f.meta.smallest, target).is_le());
        match i.checked_sub(1) {
            Some(i) => {
                self.open(i);
                if let Some(c) = self.current.as_mut() {
                    c.seek_for_prev(target);
                }
                self.skip_empty_backward();
            }
            None => self.open(self.files.len()),
        }
    }

    fn next(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.next();
        }
        self.skip_empty_forward();
    }

    fn prev(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.prev();
        }
        self.skip_empty_backward();
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.key())
    }

    fn origin(&self) -> Option<(&str, u64)> {
        self.current.as_ref().and_then(|c| c.origin())
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.value())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        self.current.as_ref().map_or(Ok(()), |c| c.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::BlockCache;
    use crate::format::key::{internal_key, seek_key, user_key, ValueType};
    use crate::fs::{Fs, MemFs};
    use crate::sst::{TableBuilder, TableOptions};
    use crate::stats::Statistics;
    use crate::version::{table_path, FileMeta};

    /// A level of `files` tables of 50 keys each ("k000" to ...), even
    /// numbers only, so odd ones fall between entries and between files.
    fn level(files: u64) -> (Vec<Arc<FileMetaData>>, TableContext) {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let tables = TableContext {
            fs: fs.clone(),
            dir: "db".into(),
            cache: Arc::new(BlockCache::new(1 << 20)),
            stats: Arc::new(Statistics::default()),
        };
        let mut out = Vec::new();
        for n in 0..files {
            let path = table_path("db", n + 1);
            let file = fs.open(&path, true).unwrap();
            let mut b = TableBuilder::new(file.clone(), TableOptions { block_size: 256, ..TableOptions::default() });
            for i in 0..50 {
                let k = format!("k{:03}", 2 * (n * 50 + i));
                b.add(&internal_key(k.as_bytes(), 1, ValueType::Put), k.as_bytes()).unwrap();
            }
            let info = b.finish().unwrap();
            file.sync().unwrap();
            out.push(Arc::new(FileMetaData::new(FileMeta {
                number: n + 1,
                file_size: info.file_size,
                smallest: info.smallest,
                largest: info.largest,
                smallest_seq: 1,
                largest_seq: 1,
            })));
        }
        (out, tables)
    }

    fn key_of(it: &LevelIter) -> String {
        String::from_utf8(user_key(it.key()).to_vec()).unwrap()
    }

    #[test]
    fn walks_every_file_both_ways() {
        let (files, tables) = level(3);
        let mut it = LevelIter::new(files, tables, true);
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            assert_eq!(key_of(&it), format!("k{:03}", 2 * n));
            n += 1;
            it.next();
        }
        assert_eq!(n, 150);
        it.seek_to_last();
        while it.valid() {
            n -= 1;
            assert_eq!(key_of(&it), format!("k{:03}", 2 * n));
            it.prev();
        }
        assert_eq!(n, 0);
        assert!(it.status().is_ok());
    }

    #[test]
    fn seeks_cross_file_boundaries() {
        let (files, tables) = level(3);
        let mut it = LevelIter::new(files, tables, true);
        for target in 0..302u64 {
            let t = seek_key(format!("k{target:03}").as_bytes(), 5);
            it.seek(&t);
            let want = target.div_ceil(2) * 2;
            if want < 300 {
                assert_eq!(key_of(&it), format!("k{want:03}"), "seek {target}");
            } else {
                assert!(!it.valid(), "seek {target}");
            }
            // Sequence 0 sorts after every version of its user key.
            it.seek_for_prev(&seek_key(format!("k{target:03}").as_bytes(), 0));
            assert_eq!(key_of(&it), format!("k{:03}", (target.min(298) / 2) * 2), "seek_for_prev {target}");
            // And on from there, across the next file boundary.
            it.next();
            if target < 298 {
                assert_eq!(key_of(&it), format!("k{:03}", (target / 2) * 2 + 2), "next after {target}");
            }
        }
        it.seek_for_prev(&seek_key(b"a", 5));
        assert!(!it.valid());
        assert!(it.status().is_ok());
    }

    #[test]
    fn a_missing_file_is_an_error_not_a_gap() {
        let (files, tables) = level(3);
        tables.fs.remove(&table_path("db", 2)).unwrap();
        let mut it = LevelIter::new(files, tables, true);
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        assert_eq!(n, 50, "the first file reads, then the scan stops");
        assert!(it.status().is_err());
    }
}
