//! An iterator over a transaction's snapshot with its own writes on top
//! (RocksDB's `WriteBatchWithIndex::NewIteratorWithBase`).
//!
//! Two cursors: the database iterator at the transaction's snapshot (the
//! base, which applies the bounds, snapshot visibility, tombstones and
//! merges of committed data), and the transaction's written keys in its
//! `BTreeMap`, found again by a range query at every step. The current key is
//! the smaller (forward) or larger (reverse) of the two; what the overlay
//! makes of it decides whether it shows and with which value: the own value,
//! hidden (an own delete, or inside an own range delete), or the own merge
//! operands applied to the base value. On a change of direction the base is
//! repositioned by a seek around the current key, as LevelDB's DBIter does.

use std::ops::Bound;

use super::{Overlay, Own};
use crate::db::DbIterator;
use crate::error::{Error, Result};

/// See the module documentation. Positioning never fails; check `status()`
/// when `valid()` turns false.
pub struct TransactionIterator {
    base: DbIterator,
    overlay: Overlay,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    forward: bool,
    valid: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    err: Option<Error>,
}

impl TransactionIterator {
    pub(super) fn new(base: DbIterator, overlay: Overlay, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> Self {
        TransactionIterator {
            base,
            overlay,
            lower,
            upper,
            forward: true,
            valid: false,
            key: Vec::new(),
            value: Vec::new(),
            err: None,
        }
    }

    pub fn valid(&self) -> bool {
        self.valid
    }

    /// REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        assert!(self.valid, "key() of an iterator that is not valid");
        &self.key
    }

    /// REQUIRES: `valid()`.
    pub fn value(&self) -> &[u8] {
        assert!(self.valid, "value() of an iterator that is not valid");
        &self.value
    }

    pub fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => self.base.status(),
        }
    }

    fn base_key(&self) -> Option<Vec<u8>> {
        self.base.valid().then(|| self.base.key().to_vec())
    }

    /// The first own key after `from`, below the upper bound.
    fn own_after(&self, from: Bound<&[u8]>) -> Option<Vec<u8>> {
        let upper = match &self.upper {
            Some(u) => Bound::Excluded(u.as_slice()),
            None => Bound::Unbounded,
        };
        if let (Bound::Included(f) | Bound::Excluded(f), Bound::Excluded(u)) = (from, upper) {
            if f >= u {
                return None;
            }
        }
        self.overlay.own.range::<[u8], _>((from, upper)).next().map(|(k, _)| k.clone())
    }

    /// The last own key before `to`, at or above the lower bound.
    fn own_before(&self, to: Bound<&[u8]>) -> Option<Vec<u8>> {
        let lower = match &self.lower {
            Some(l) => Bound::Included(l.as_slice()),
            None => Bound::Unbounded,
        };
        let to = match (&self.upper, to) {
            (Some(u), Bound::Included(t) | Bound::Excluded(t)) if t >= u.as_slice() => Bound::Excluded(u.as_slice()),
            (Some(u), Bound::Unbounded) => Bound::Excluded(u.as_slice()),
            _ => to,
        };
        if let (Bound::Included(l), Bound::Included(t) | Bound::Excluded(t)) = (lower, to) {
            if t < l {
                return None;
            }
        }
        self.overlay.own.range::<[u8], _>((lower, to)).next_back().map(|(k, _)| k.clone())
    }

    /// What `key` reads as: `None` hides it. `base` is its value in the
    /// base, when the base is at it.
    fn resolve(&self, key: &[u8], base: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        match self.overlay.state(key) {
            None => Ok(base.map(|b| b.to_vec())),
            Some(Own::Value(v)) => Ok(Some(v)),
            Some(Own::Deleted) => Ok(None),
            Some(Own::Operands(ops)) => {
                let refs: Vec<&[u8]> = ops.iter().map(|o| o.as_slice()).collect();
                self.base.full_merge(key, base, &refs).map(Some)
            }
        }
    }

    fn stop(&mut self, err: Option<Error>) {
        self.valid = false;
        self.key.clear();
        self.value.clear();
        if err.is_some() {
            self.err = err;
        }
    }

    /// Moves from the base's position and the own keys past `bound` (after
    /// it forward, before it in reverse) to the first key that shows.
    fn settle(&mut self, forward: bool, mut bound: Bound<Vec<u8>>) {
        self.forward = forward;
        loop {
            let base = self.base_key();
            let own = match forward {
                true => self.own_after(bound.as_ref().map(|k| k.as_slice())),
                false => self.own_before(bound.as_ref().map(|k| k.as_slice())),
            };
            let candidate = match (base.as_ref(), own) {
                (None, None) => return self.stop(None),
                (Some(b), Some(o)) if forward => o.min(b.clone()),
                (Some(b), Some(o)) => o.max(b.clone()),
                (Some(b), None) => b.clone(),
                (None, Some(o)) => o,
            };
            let at_base = base.as_deref() == Some(candidate.as_slice());
            let value = match self.resolve(&candidate, at_base.then(|| self.base.value())) {
                Ok(v) => v,
                Err(e) => return self.stop(Some(e)),
            };
            if let Some(v) = value {
                self.valid = true;
                self.key = candidate;
                self.value = v;
                return;
            }
            match (at_base, forward) {
                (true, true) => self.base.next(),
                (true, false) => self.base.prev(),
                (false, _) => {}
            }
            bound = Bound::Excluded(candidate);
        }
    }

    fn start(&mut self) {
        self.err = None;
    }

    /// Positions at the first key >= `target` (and >= the lower bound).
    pub fn seek(&mut self, target: &[u8]) {
        self.start();
        let target = match &self.lower {
            Some(l) if target < l.as_slice() => l.clone(),
            _ => target.to_vec(),
        };
        self.base.seek(&target);
        self.settle(true, Bound::Included(target));
    }

    /// Positions at the last key <= `target` (and < the upper bound).
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.start();
        self.base.seek_for_prev(target);
        self.settle(false, Bound::Included(target.to_vec()));
    }

    pub fn seek_to_first(&mut self) {
        self.start();
        self.base.seek_to_first();
        let from = self.lower.clone().map_or(Bound::Unbounded, Bound::Included);
        self.settle(true, from);
    }

    pub fn seek_to_last(&mut self) {
        self.start();
        self.base.seek_to_last();
        self.settle(false, Bound::Unbounded);
    }

    /// Moves to the next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        let current = std::mem::take(&mut self.key);
        if !self.forward {
            // The base is at or before the current key: put it after.
            self.base.seek(&current);
        }
        if self.base.valid() && self.base.key() == current.as_slice() {
            self.base.next();
        }
        self.settle(true, Bound::Excluded(current));
    }

    /// Moves to the previous key. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        let current = std::mem::take(&mut self.key);
        if self.forward {
            // The base is at or after the current key: put it before.
            self.base.seek_for_prev(&current);
        }
        if self.base.valid() && self.base.key() == current.as_slice() {
            self.base.prev();
        }
        self.settle(false, Bound::Excluded(current));
    }
}
