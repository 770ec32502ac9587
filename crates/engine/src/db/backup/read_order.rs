//! The tables form's last check before an import is installed: every
//! key's versions lie in the order reads meet the tables, newest first.
//!
//! A get stops at the first table, in read order (L0's newest first, then
//! L1, L2, ...), that holds a version of its key at or below its sequence
//! number; a scan merges every table and takes the newest version. The two
//! agree only if no version is newer than one in a table read before it,
//! and no range tombstone is newer than a version of a key it covers in a
//! table read before its own. The engine never writes levels otherwise
//! (newer data is always above older); an export whose levels were
//! changed, each table's own record still consistent, would be accepted
//! without this check and answer gets and scans differently.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::import::STREAM;
use crate::error::{Error, Result};
use crate::format::key::{self, ValueType};
use crate::iter::InternalIterator;
use crate::sst::Table;
use crate::version::FileMeta;

/// A table's iterator at its current entry, ordered by internal key.
struct Head {
    key: Vec<u8>,
    table: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        key::compare(&self.key, &other.key).then(self.table.cmp(&other.table))
    }
}

/// Where each of `tables` (level, record) comes in read order: L0's by
/// largest sequence number, newest first (as `sort_level` orders them),
/// then one rank per level below (its files do not overlap).
fn read_ranks(tables: &[(usize, FileMeta)]) -> Vec<usize> {
    let mut l0: Vec<usize> = (0..tables.len()).filter(|&i| tables[i].0 == 0).collect();
    crate::sort::sort_by(&mut l0, |&a, &b| {
        tables[b].1.largest_seq.cmp(&tables[a].1.largest_seq).then(tables[b].1.number.cmp(&tables[a].1.number))
    });
    let mut rank = vec![0; tables.len()];
    for (r, &i) in l0.iter().enumerate() {
        rank[i] = r;
    }
    for (i, (level, _)) in tables.iter().enumerate() {
        if *level > 0 {
            rank[i] = l0.len() + level;
        }
    }
    rank
}

fn out_of_order(what: &str, user_key: &[u8]) -> Error {
    Error::corruption(
        STREAM,
        0,
        format!(
            "{what} of key {:?} lies in a table read after an older version of it: reads would disagree (the export's levels were changed)",
            String::from_utf8_lossy(user_key)
        ),
    )
}

/// Fails with `Corruption` unless every key's versions and every range
/// tombstone of `tables` (opened as `opened`, in the same order) lie in
/// read order (see the module's documentation).
pub(super) fn check_read_order(tables: &[(usize, FileMeta)], opened: &[Arc<Table>]) -> Result<()> {
    let rank = read_ranks(tables);
    // Point entries: a merge of every table in internal-key order (user
    // key ascending, then newest first): a key's versions must come from
    // tables of non-decreasing rank.
    let mut iters: Vec<_> = opened.iter().map(|t| t.iter(false)).collect();
    let mut heap = BinaryHeap::new();
    for (i, it) in iters.iter_mut().enumerate() {
        it.seek_to_first();
        if it.valid() {
            heap.push(Reverse(Head { key: it.key().to_vec(), table: i }));
        }
    }
    let mut prev: Option<(Vec<u8>, usize)> = None;
    while let Some(Reverse(h)) = heap.pop() {
        let user = key::user_key(&h.key);
        if let Some((pk, pr)) = &prev {
            if pk.as_slice() == user && rank[h.table] < *pr {
                return Err(out_of_order("a version", user));
            }
        }
        match &mut prev {
            Some((pk, pr)) if pk.as_slice() == user => *pr = rank[h.table],
            _ => prev = Some((user.to_vec(), rank[h.table])),
        }
        let it = &mut iters[h.table];
        it.next();
        if it.valid() {
            heap.push(Reverse(Head { key: it.key().to_vec(), table: h.table }));
        }
    }
    for it in &iters {
        it.status()?;
    }
    // Range tombstones: none newer than a version it covers in a table
    // read before its own (a get would stop there and return that version).
    for (f, table) in opened.iter().enumerate() {
        for ts in table.tombstones().map(|t| t.to_tombstones()).unwrap_or_default() {
            for (g, earlier) in opened.iter().enumerate() {
                if rank[g] >= rank[f] {
                    continue;
                }
                let mut it = earlier.iter(false);
                it.seek(&key::internal_key(&ts.start, key::MAX_SEQUENCE, ValueType::RangeDelete));
                while it.valid() && key::user_key(it.key()) < ts.end.as_slice() {
                    if key::parse(it.key()).is_some_and(|p| p.seq < ts.seq) {
                        return Err(out_of_order("a range deletion", key::user_key(it.key())));
                    }
                    it.next();
                }
                it.status()?;
            }
        }
    }
    Ok(())
}
