//! What survives of one user key's versions when they are rewritten (by a
//! flush or a compaction): RocksDB's compaction iterator rules, applied to
//! one key's versions at a time.
//!
//! Versions are grouped into *snapshot stripes*: the versions between two
//! consecutive live snapshots. No reader can tell two versions of one stripe
//! apart, so within a stripe only the newest matters:
//! - a version covered by a range tombstone of the same stripe is dropped;
//! - the newest Put or Delete of a stripe hides every older version in it;
//! - Merge operands are combined with the base value below them in their
//!   stripe (full merge), or with each other (partial merge);
//! - at the bottommost level, in the oldest stripe, a Delete (and a range
//!   tombstone) shadows nothing any more and is dropped, and operands with
//!   no base are merged onto nothing.

use std::sync::Arc;

use bytes::Bytes;

use crate::clock::Clock;
use crate::error::Result;
use crate::format::key::{SequenceNumber, ValueType};
use crate::merge::{self, MergeOperator, MergeStats};
use crate::range_del::{Fragment, FragmentedTombstones, Tombstone};

/// One version of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub seq: SequenceNumber,
    pub ty: ValueType,
    pub value: Bytes,
}

/// Counts of what was dropped, for statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropCounts {
    pub newer_entry: u64,
    pub obsolete: u64,
    pub range_del: u64,
    pub range_del_obsolete: u64,
}

pub struct KeyResolver {
    /// Live snapshots, ascending.
    snapshots: Vec<SequenceNumber>,
    tombstones: Arc<FragmentedTombstones>,
    bottommost: bool,
    merge_operator: Option<Arc<dyn MergeOperator>>,
    /// Times merges, when durations are measured.
    clock: Option<Arc<dyn Clock>>,
    pub drops: DropCounts,
    /// What merging cost, until the job reports it.
    pub merges: MergeStats,
}

impl KeyResolver {
    pub fn new(
        mut snapshots: Vec<SequenceNumber>,
        tombstones: Arc<FragmentedTombstones>,
        bottommost: bool,
        merge_operator: Option<Arc<dyn MergeOperator>>,
        clock: Option<Arc<dyn Clock>>,
    ) -> Self {
        crate::sort::sort(&mut snapshots);
        snapshots.dedup();
        KeyResolver {
            snapshots,
            tombstones,
            bottommost,
            merge_operator,
            clock,
            drops: DropCounts::default(),
            merges: MergeStats::default(),
        }
    }

    /// The stripe of `seq`: how many snapshots are older than it.
    fn stripe(&self, seq: SequenceNumber) -> usize {
        self.snapshots.partition_point(|&s| s < seq)
    }

    /// Whether a tombstone of the same stripe, newer than `seq`, covers the
    /// key in fragment `frag`.
    fn covered(&self, frag: Option<&Fragment>, seq: SequenceNumber) -> bool {
        let Some(f) = frag else { return false };
        // The oldest tombstone newer than the version decides: if it is in
        // another stripe, every newer one is too.
        match f.seqs.iter().rev().find(|&&t| t > seq) {
            Some(&t) => self.stripe(t) == self.stripe(seq),
            None => false,
        }
    }

    /// Resolves `versions` (newest first) of `user_key` into what is written,
    /// appended to `out` newest first.
    pub fn resolve(&mut self, user_key: &[u8], versions: &[Version], out: &mut Vec<Version>) -> Result<()> {
        let frag = self.tombstones.fragment_at(user_key);
        let mut i = 0;
        while i < versions.len() {
            let stripe = self.stripe(versions[i].seq);
            let mut j = i;
            while j < versions.len() && self.stripe(versions[j].seq) == stripe {
                j += 1;
            }
            let run = &versions[i..j];
            i = j;
            let mut any_covered = false;
            let visible: Vec<&Version> = run
                .iter()
                .filter(|v| {
                    let c = self.covered(frag, v.seq);
                    any_covered |= c;
                    !c
                })
                .collect();
            self.drops.range_del += (run.len() - visible.len()) as u64;
            let Some(first) = visible.first() else { continue };
            // The oldest stripe at the bottommost level: nothing older exists
            // anywhere, so deletions shadow nothing.
            let nothing_below = self.bottommost && stripe == 0;
            match first.ty {
                ValueType::Put | ValueType::Delete | ValueType::BlobIndex | ValueType::RangeDelete => {
                    if first.ty == ValueType::Delete && nothing_below {
                        self.drops.obsolete += 1;
                    } else {
                        out.push((*first).clone());
                    }
                    self.drops.newer_entry += visible.len() as u64 - 1;
                }
                ValueType::Merge => {
                    let n_ops = visible.iter().take_while(|v| v.ty == ValueType::Merge).count();
                    let base = visible.get(n_ops);
                    // A base this version cannot read (a blob reference)
                    // is kept as it is, as without an operator: reads
                    // report it, and merging onto it as if absent would
                    // change what they see.
                    let unreadable_base = base.is_some_and(|b| b.ty == ValueType::BlobIndex);
                    let Some(op) = self.merge_operator.clone().filter(|_| !unreadable_base) else {
                        // No operator: keep the operands and their base as
                        // they are; reads report the missing operator.
                        out.extend(visible[..visible.len().min(n_ops + 1)].iter().map(|v| (*v).clone()));
                        self.drops.newer_entry += visible.len().saturating_sub(n_ops + 1) as u64;
                        continue;
                    };
                    let operands: Vec<&[u8]> = visible[..n_ops].iter().rev().map(|v| &v.value[..]).collect();
                    let full = match base {
                        Some(b) if b.ty == ValueType::Put => Some(Some(&b.value[..])),
                        Some(_) => Some(None),
                        // Covered older versions, or nothing below at all,
                        // mean the base is "absent".
                        None if any_covered || nothing_below => Some(None),
                        None => None,
                    };
                    match full {
                        Some(base_value) => {
                            let merged = merge::full_merge(
                                &*op,
                                user_key,
                                base_value,
                                &operands,
                                self.clock.as_deref(),
                                &mut self.merges,
                            )?;
                            out.push(Version { seq: first.seq, ty: ValueType::Put, value: Bytes::from(merged) });
                            self.drops.newer_entry += visible.len() as u64 - 1;
                        }
                        None => {
                            // Keep operands, combining adjacent ones where the
                            // operator can (oldest first).
                            let mut kept: Vec<Version> = Vec::new();
                            for v in visible[..n_ops].iter().rev() {
                                if let Some(last) = kept.last_mut() {
                                    if let Some(m) = op.partial_merge(user_key, &last.value, &v.value) {
                                        *last = Version { seq: v.seq, ty: ValueType::Merge, value: Bytes::from(m) };
                                        continue;
                                    }
                                }
                                kept.push((*v).clone());
                            }
                            self.drops.newer_entry += (n_ops - kept.len()) as u64;
                            out.extend(kept.into_iter().rev());
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The tombstones to write: the newest per stripe of each fragment, and
    /// none of the oldest stripe at the bottommost level.
    pub fn output_tombstones(&mut self) -> FragmentedTombstones {
        let mut keep = Vec::new();
        for f in self.tombstones.fragments() {
            let mut last_stripe = None;
            for &seq in &f.seqs {
                let stripe = self.stripe(seq);
                if last_stripe == Some(stripe) {
                    continue; // an older tombstone of a stripe already covered
                }
                last_stripe = Some(stripe);
                if self.bottommost && stripe == 0 {
                    self.drops.range_del_obsolete += 1;
                    continue;
                }
                keep.push(Tombstone { start: f.start.clone(), end: f.end.clone(), seq });
            }
        }
        FragmentedTombstones::new(&keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::U64AddOperator;

    fn v(seq: u64, ty: ValueType, val: &[u8]) -> Version {
        Version { seq, ty, value: Bytes::copy_from_slice(val) }
    }

    fn n(x: u64) -> Vec<u8> {
        x.to_le_bytes().to_vec()
    }

    fn resolver(snapshots: Vec<u64>, tombs: &[(&str, &str, u64)], bottommost: bool) -> KeyResolver {
        let t: Vec<Tombstone> = tombs
            .iter()
            .map(|(s, e, q)| Tombstone { start: s.as_bytes().into(), end: e.as_bytes().into(), seq: *q })
            .collect();
        KeyResolver::new(
            snapshots,
            Arc::new(FragmentedTombstones::new(&t)),
            bottommost,
            Some(Arc::new(U64AddOperator)),
            None,
        )
    }

    fn run(r: &mut KeyResolver, versions: &[Version]) -> Vec<(u64, ValueType)> {
        let mut out = vec![];
        r.resolve(b"k", versions, &mut out).unwrap();
        out.iter().map(|v| (v.seq, v.ty)).collect()
    }

    #[test]
    fn newest_per_stripe_survives() {
        let versions = [v(9, ValueType::Put, b"c"), v(5, ValueType::Put, b"b"), v(2, ValueType::Put, b"a")];
        assert_eq!(run(&mut resolver(vec![], &[], false), &versions), vec![(9, ValueType::Put)]);
        // A snapshot at 5 sees b: it stays.
        assert_eq!(run(&mut resolver(vec![5], &[], false), &versions), vec![(9, ValueType::Put), (5, ValueType::Put)]);
        // A snapshot at 3 sees a.
        assert_eq!(run(&mut resolver(vec![3], &[], false), &versions), vec![(9, ValueType::Put), (2, ValueType::Put)]);
    }

    #[test]
    fn deletes_drop_only_at_the_bottom_of_the_oldest_stripe() {
        let versions = [v(9, ValueType::Delete, b""), v(5, ValueType::Put, b"b")];
        assert_eq!(run(&mut resolver(vec![], &[], false), &versions), vec![(9, ValueType::Delete)]);
        assert_eq!(run(&mut resolver(vec![], &[], true), &versions), vec![]);
        assert_eq!(
            run(&mut resolver(vec![6], &[], true), &versions),
            vec![(9, ValueType::Delete), (5, ValueType::Put)],
            "a snapshot at 6 still sees the put; the delete is not in the oldest stripe"
        );
    }

    #[test]
    fn range_tombstones_drop_covered_versions_of_their_stripe() {
        let versions = [v(9, ValueType::Put, b"new"), v(5, ValueType::Put, b"old")];
        // Tombstone at 7 covers the put at 5, not the one at 9.
        assert_eq!(run(&mut resolver(vec![], &[("a", "z", 7)], false), &versions), vec![(9, ValueType::Put)]);
        let only_old = [v(5, ValueType::Put, b"old")];
        let mut r = resolver(vec![], &[("a", "z", 7)], false);
        assert_eq!(run(&mut r, &only_old), vec![]);
        assert_eq!(r.drops.range_del, 1);
        // A snapshot at 6 still sees the old put.
        assert_eq!(run(&mut resolver(vec![6], &[("a", "z", 7)], false), &only_old), vec![(5, ValueType::Put)]);
        // Outside the range: untouched.
        assert_eq!(run(&mut resolver(vec![], &[("x", "z", 7)], false), &only_old), vec![(5, ValueType::Put)]);
    }

    #[test]
    fn merges_fold_into_their_base_or_each_other() {
        let ops = [v(9, ValueType::Merge, &n(1)), v(8, ValueType::Merge, &n(2)), v(5, ValueType::Put, &n(10))];
        let mut r = resolver(vec![], &[], false);
        let mut out = vec![];
        r.resolve(b"k", &ops, &mut out).unwrap();
        assert_eq!(out, vec![v(9, ValueType::Put, &n(13))]);
        // No base and not bottommost: operands combine by partial merge.
        let mut out = vec![];
        resolver(vec![], &[], false).resolve(b"k", &ops[..2], &mut out).unwrap();
        assert_eq!(out, vec![v(9, ValueType::Merge, &n(3))]);
        // At the bottom: merged onto nothing.
        let mut out = vec![];
        resolver(vec![], &[], true).resolve(b"k", &ops[..2], &mut out).unwrap();
        assert_eq!(out, vec![v(9, ValueType::Put, &n(3))]);
        // A snapshot between operands keeps them apart.
        let mut out = vec![];
        resolver(vec![8], &[], false).resolve(b"k", &ops, &mut out).unwrap();
        assert_eq!(out, vec![v(9, ValueType::Merge, &n(1)), v(8, ValueType::Put, &n(12))]);
    }

    #[test]
    fn merges_onto_a_blob_reference_keep_it_for_reads_to_refuse() {
        // A base this version cannot read: neither merged onto as if
        // absent nor dropped, at any level.
        let ops = [v(9, ValueType::Merge, &n(1)), v(5, ValueType::BlobIndex, b"blob file 7")];
        for bottommost in [false, true] {
            let mut out = vec![];
            resolver(vec![], &[], bottommost).resolve(b"k", &ops, &mut out).unwrap();
            assert_eq!(out, ops.to_vec(), "bottommost: {bottommost}");
        }
    }

    #[test]
    fn output_tombstones_keep_the_newest_per_stripe() {
        let mut r = resolver(vec![5], &[("a", "m", 3), ("a", "m", 4), ("a", "m", 9)], false);
        let f = r.output_tombstones();
        assert_eq!(f.fragments()[0].seqs, vec![9, 4]);
        let mut r = resolver(vec![], &[("a", "m", 3), ("a", "m", 9)], true);
        assert!(r.output_tombstones().is_empty());
        assert_eq!(r.drops.range_del_obsolete, 1);
    }
}
