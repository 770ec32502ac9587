//! The entries form's import gathers its entries into runs, which a table
//! job writes as table files of the last level.

use crate::error::Result;
use crate::format::key;
use crate::iter::InternalIterator;

/// Sorted entries gathered for the next table files, as internal keys.
#[derive(Default)]
pub(super) struct Run {
    /// Internal key, then value, for each entry, back to back.
    pub(super) bytes: Vec<u8>,
    /// Per entry: start of its key, start of its value, end of its value.
    pub(super) at: Vec<(u32, u32, u32)>,
}

/// An iterator over a [`Run`] (forward only: what a table job reads).
pub(super) struct RunIter {
    pub(super) run: Run,
    pub(super) pos: usize,
}

impl InternalIterator for RunIter {
    fn valid(&self) -> bool {
        self.pos < self.run.at.len()
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        self.pos = self.run.at.len().saturating_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = self
            .run
            .at
            .partition_point(|&(k, v, _)| key::compare(&self.run.bytes[k as usize..v as usize], target).is_lt());
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self
            .run
            .at
            .partition_point(|&(k, v, _)| key::compare(&self.run.bytes[k as usize..v as usize], target).is_le());
        self.pos = i.checked_sub(1).unwrap_or(self.run.at.len());
    }
    fn next(&mut self) {
        self.pos += 1;
    }
    fn prev(&mut self) {
        self.pos = self.pos.checked_sub(1).unwrap_or(self.run.at.len());
    }
    fn key(&self) -> &[u8] {
        let (k, v, _) = self.run.at[self.pos];
        &self.run.bytes[k as usize..v as usize]
    }
    fn value(&self) -> &[u8] {
        let (_, v, e) = self.run.at[self.pos];
        &self.run.bytes[v as usize..e as usize]
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
