//! Iterators over internal keys, and the merging iterator that combines
//! memtables and tables into one sorted stream.

mod level;
mod merging;

pub use level::LevelIter;
pub use merging::MergingIterator;

use crate::error::Result;

/// A cursor over entries sorted by internal key.
///
/// `key()` and `value()` may only be called while `valid()`; positioning
/// calls never fail: an error makes the iterator invalid and shows in
/// `status()`.
pub trait InternalIterator: Send {
    fn valid(&self) -> bool;
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    /// Positions at the first entry >= `target` (an internal key).
    fn seek(&mut self, target: &[u8]);
    /// Positions at the last entry <= `target` (an internal key).
    fn seek_for_prev(&mut self, target: &[u8]);
    fn next(&mut self);
    fn prev(&mut self);
    fn key(&self) -> &[u8];
    fn value(&self) -> &[u8];
    fn status(&self) -> Result<()>;

    /// Where the current entry is stored, for error messages about it: a
    /// table file and the offset of its data block in it. `None` for an
    /// entry in memory (a memtable, a batch).
    fn origin(&self) -> Option<(&str, u64)> {
        None
    }
}

/// An iterator over nothing, or over an error.
pub struct EmptyIterator(pub Result<()>);

impl InternalIterator for EmptyIterator {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) {}
    fn seek_to_last(&mut self) {}
    fn seek(&mut self, _: &[u8]) {}
    fn seek_for_prev(&mut self, _: &[u8]) {}
    fn next(&mut self) {}
    fn prev(&mut self) {}
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> Result<()> {
        self.0.clone()
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::InternalIterator;
    use crate::format::key;

    /// An iterator over a sorted vector, for tests of iterator combinators.
    pub struct VecIter {
        pub entries: Vec<(Vec<u8>, Vec<u8>)>,
        pub pos: Option<usize>,
    }

    impl VecIter {
        pub fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
            entries.sort_by(|a, b| key::compare(&a.0, &b.0));
            VecIter { entries, pos: None }
        }
    }

    impl InternalIterator for VecIter {
        fn valid(&self) -> bool {
            self.pos.is_some()
        }
        fn seek_to_first(&mut self) {
            self.pos = (!self.entries.is_empty()).then_some(0);
        }
        fn seek_to_last(&mut self) {
            self.pos = self.entries.len().checked_sub(1);
        }
        fn seek(&mut self, t: &[u8]) {
            let i = self.entries.partition_point(|e| key::compare(&e.0, t).is_lt());
            self.pos = (i < self.entries.len()).then_some(i);
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            let i = self.entries.partition_point(|e| key::compare(&e.0, t).is_le());
            self.pos = i.checked_sub(1);
        }
        fn next(&mut self) {
            self.pos = self.pos.and_then(|p| (p + 1 < self.entries.len()).then_some(p + 1));
        }
        fn prev(&mut self) {
            self.pos = self.pos.and_then(|p| p.checked_sub(1));
        }
        fn key(&self) -> &[u8] {
            &self.entries[self.pos.unwrap_or(0)].0
        }
        fn value(&self) -> &[u8] {
            &self.entries[self.pos.unwrap_or(0)].1
        }
        fn status(&self) -> crate::Result<()> {
            Ok(())
        }
    }
}
