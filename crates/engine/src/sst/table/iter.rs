//! Iterating a table (`Table::iter`): the flat index picks data blocks,
//! a block iterator walks each.

use std::sync::Arc;

use super::Table;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::sst::block::BlockIter;
use crate::sst::format::BlockHandle;

/// Iterates a table: a position in the flat index picks data blocks, a
/// block iterator walks each.
pub struct TableIter {
    table: Arc<Table>,
    /// The current index entry; `len()` when before the first or past the last.
    index: usize,
    data: Option<BlockIter>,
    data_handle: Option<BlockHandle>,
    err: Option<Error>,
    fill_cache: bool,
}

impl TableIter {
    /// Before the first entry: a seek places it.
    pub(super) fn new(table: Arc<Table>, fill_cache: bool) -> TableIter {
        let index = table.index.len();
        TableIter { table, index, data: None, data_handle: None, err: None, fill_cache }
    }

    /// The offset in the file of the data block the iterator is in (0
    /// before the first block is read).
    pub fn block_offset(&self) -> u64 {
        self.data_handle.map_or(0, |h| h.offset)
    }

    fn index_valid(&self) -> bool {
        self.index < self.table.index.len()
    }

    /// Loads the block of the current index entry; false (and no data
    /// iterator) if the index is exhausted or the block cannot be read.
    fn load_data_block(&mut self) -> bool {
        if !self.index_valid() {
            self.data = None;
            self.data_handle = None;
            return false;
        }
        let handle = self.table.index.handle(self.index);
        if self.data_handle == Some(handle) && self.data.is_some() {
            return true;
        }
        match self.table.data_block(handle, self.fill_cache) {
            Ok(b) => {
                self.data = Some(b.iter());
                self.data_handle = Some(handle);
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    fn fail(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.data = None;
        self.data_handle = None;
    }

    fn data_valid(&self) -> bool {
        self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn check_data_status(&mut self) -> bool {
        if let Some(Err(e)) = self.data.as_ref().map(|d| d.status()) {
            self.fail(e);
            return false;
        }
        true
    }

    fn skip_empty_forward(&mut self) {
        while !self.data_valid() {
            if !self.check_data_status() || self.data.is_none() {
                self.data = None;
                return;
            }
            self.index += 1;
            if !self.load_data_block() {
                return;
            }
            if let Some(d) = self.data.as_mut() {
                d.seek_to_first();
            }
        }
    }

    fn skip_empty_backward(&mut self) {
        while !self.data_valid() {
            if !self.check_data_status() || self.data.is_none() {
                self.data = None;
                return;
            }
            // Before the first entry: `len()`, not valid.
            self.index = self.index.checked_sub(1).unwrap_or(self.table.index.len());
            if !self.load_data_block() {
                return;
            }
            if let Some(d) = self.data.as_mut() {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data_valid()
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        self.index = 0;
        if self.load_data_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek_to_first();
            }
        }
        self.skip_empty_forward();
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        self.index = self.table.index.len().saturating_sub(1);
        if self.load_data_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek_to_last();
            }
        }
        self.skip_empty_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        self.index = self.table.index.seek(target);
        if self.load_data_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek(target);
            }
        }
        self.skip_empty_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = None;
        self.index = self.table.index.seek(target);
        if !self.index_valid() {
            self.index = self.table.index.len().saturating_sub(1);
        }
        if self.load_data_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek_for_prev(target);
            }
        }
        self.skip_empty_backward();
    }

    fn next(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.next();
        }
        self.skip_empty_forward();
    }

    fn prev(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.prev();
        }
        self.skip_empty_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        self.data.as_ref().map_or(Ok(()), |d| d.status())
    }

    fn origin(&self) -> Option<(&str, u64)> {
        Some((&self.table.path, self.block_offset()))
    }
}
