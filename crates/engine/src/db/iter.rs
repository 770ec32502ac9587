//! The user-facing iterator: merges memtables and tables, hides versions the
//! snapshot cannot see, deleted keys and older versions (LevelDB's DBIter).

use std::sync::Arc;

use super::options::ReadOptions;
use super::SuperVersion;
use crate::error::{Error, Result};
use crate::format::key::{self, SequenceNumber, ValueType, MAX_SEQUENCE};
use crate::iter::{EmptyIterator, InternalIterator, MergingIterator};
use crate::version::TableContext;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// The merged iterator is at the entry that yields the current key.
    Forward,
    /// The merged iterator is just before all entries of the current key,
    /// which is held in `saved_key` / `saved_value`.
    Reverse,
}

/// Iterates user keys in order, as of one sequence number.
///
/// It holds the SuperVersion it was created on (memtables and table files
/// stay alive while it lives). Positioning never fails; check `status()`
/// when `valid()` turns false.
pub struct DbIterator {
    sv: Arc<SuperVersion>,
    iter: MergingIterator,
    seq: SequenceNumber,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    direction: Direction,
    valid: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    err: Option<Error>,
}

impl DbIterator {
    pub(super) fn new(
        sv: Arc<SuperVersion>,
        seq: SequenceNumber,
        opts: &ReadOptions,
        tables: &TableContext,
    ) -> Self {
        let fill = opts.fill_cache();
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        children.push(Box::new(sv.mem.iter()));
        for m in &sv.imm {
            children.push(Box::new(m.iter()));
        }
        for (_, f) in sv.version.files() {
            match f.table(tables) {
                Ok(t) => children.push(Box::new(t.iter(fill))),
                Err(e) => children.push(Box::new(EmptyIterator(Err(e)))),
            }
        }
        DbIterator {
            sv,
            iter: MergingIterator::new(children),
            seq,
            lower: opts.lower_bound.clone(),
            upper: opts.upper_bound.clone(),
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            err: None,
        }
    }

    /// The number of the SuperVersion this iterator reads.
    pub fn super_version_number(&self) -> u64 {
        self.sv.number
    }

    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key. REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        match self.direction {
            Direction::Forward => key::user_key(self.iter.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// The current value. REQUIRES: `valid()`.
    pub fn value(&self) -> &[u8] {
        match self.direction {
            Direction::Forward => self.iter.value(),
            Direction::Reverse => &self.saved_value,
        }
    }

    /// `Ok` unless reading failed (then `valid()` is false).
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        self.iter.status()
    }

    fn above_upper(&self, user_key: &[u8]) -> bool {
        self.upper.as_deref().is_some_and(|u| user_key >= u)
    }

    fn below_lower(&self, user_key: &[u8]) -> bool {
        self.lower.as_deref().is_some_and(|l| user_key < l)
    }

    fn corrupt_key(&mut self) {
        self.err = Some(Error::corruption("iterator", 0, "malformed internal key"));
        self.valid = false;
    }

    /// Moves forward to the newest visible non-deleted version of the next
    /// user key; with `skipping`, user keys <= `saved_key` are passed over.
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        while self.iter.valid() {
            let Some(p) = key::parse(self.iter.key()) else {
                return self.corrupt_key();
            };
            if p.seq <= self.seq {
                if self.above_upper(p.user_key) {
                    break;
                }
                match p.ty {
                    ValueType::Delete => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        skipping = true;
                    }
                    ValueType::Put if !(skipping && p.user_key <= self.saved_key.as_slice()) => {
                        self.valid = true;
                        self.saved_key.clear();
                        return;
                    }
                    _ => {}
                }
            }
            self.iter.next();
        }
        self.saved_key.clear();
        self.valid = false;
    }

    /// Moves backward to the newest visible version of the previous user
    /// key that is not deleted, leaving it in `saved_key`/`saved_value`.
    fn find_prev_user_entry(&mut self) {
        let mut found = false;
        while self.iter.valid() {
            let Some(p) = key::parse(self.iter.key()) else {
                return self.corrupt_key();
            };
            if p.seq <= self.seq {
                if found && p.user_key < self.saved_key.as_slice() {
                    break; // saved_key's newest visible version is in hand
                }
                if !found && self.below_lower(p.user_key) {
                    break;
                }
                match p.ty {
                    ValueType::Delete => {
                        found = false;
                        self.saved_key.clear();
                        self.saved_value.clear();
                    }
                    ValueType::Put => {
                        found = true;
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(self.iter.value());
                    }
                    _ => {}
                }
            }
            self.iter.prev();
        }
        if found {
            self.valid = true;
            self.direction = Direction::Reverse;
        } else {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
            self.direction = Direction::Forward;
        }
    }

    /// Positions at the first key >= `target` (and >= the lower bound).
    pub fn seek(&mut self, target: &[u8]) {
        self.err = None;
        self.direction = Direction::Forward;
        self.saved_value.clear();
        let target = match self.lower.as_deref() {
            Some(l) if target < l => l.to_vec(),
            _ => target.to_vec(),
        };
        self.iter
            .seek(&key::seek_key(&target, self.seq.min(MAX_SEQUENCE)));
        self.find_next_user_entry(false);
    }

    /// Positions at the last key <= `target` (and < the upper bound).
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        if self.above_upper(target) {
            return self.seek_to_last();
        }
        self.err = None;
        self.saved_value.clear();
        // The largest internal key of `target` is its oldest possible version.
        self.iter
            .seek_for_prev(&key::internal_key(target, 0, ValueType::Delete));
        self.find_prev_user_entry();
    }

    pub fn seek_to_first(&mut self) {
        match self.lower.clone() {
            Some(l) => self.seek(&l),
            None => {
                self.err = None;
                self.direction = Direction::Forward;
                self.saved_value.clear();
                self.iter.seek_to_first();
                self.find_next_user_entry(false);
            }
        }
    }

    pub fn seek_to_last(&mut self) {
        self.err = None;
        self.saved_value.clear();
        match self.upper.clone() {
            // Every entry of `upper` sorts after its seek key at MAX_SEQUENCE.
            Some(u) => self.iter.seek_for_prev(&key::seek_key(&u, MAX_SEQUENCE)),
            None => self.iter.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    /// Moves to the next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Reverse {
            self.direction = Direction::Forward;
            // The merged iterator is before the current key's entries: step
            // into them and skip them below (saved_key holds the key).
            if self.iter.valid() {
                self.iter.next();
            } else {
                self.iter.seek_to_first();
            }
        } else {
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(key::user_key(self.iter.key()));
            self.iter.next();
        }
        if !self.iter.valid() {
            self.valid = false;
            self.saved_key.clear();
            return;
        }
        self.find_next_user_entry(true);
    }

    /// Moves to the previous key. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            // Back up to before every entry of the current key.
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(key::user_key(self.iter.key()));
            loop {
                self.iter.prev();
                if !self.iter.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                    return;
                }
                if key::user_key(self.iter.key()) < self.saved_key.as_slice() {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }
}
