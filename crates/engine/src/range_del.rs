//! Range tombstones: `delete_range(start, end)` removes every key in
//! `[start, end)` written before it.
//!
//! Each memtable and each table keeps its tombstones *fragmented*: split at
//! every start and end point into non-overlapping, sorted pieces, each with
//! the sequence numbers of the tombstones covering it (newest first). A
//! lookup is then a binary search: the Get path asks each source for the
//! highest sequence number of a tombstone covering the key (RocksDB's
//! `max_covering_tombstone_seq`, PR 4449) and carries it down the levels; no
//! aggregator is built per Get.

use std::sync::Arc;

use crate::format::key::{bytewise, SequenceNumber};

/// One tombstone as written: deletes `[start, end)` as of `seq`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tombstone {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub seq: SequenceNumber,
}

/// A piece of the key space `[start, end)` and the tombstones covering it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    /// Descending.
    pub seqs: Vec<SequenceNumber>,
}

/// Non-overlapping fragments sorted by start key, with the fragments' end
/// keys also laid out in one contiguous buffer: a lookup binary-searches
/// memory it can prefetch rather than chasing one allocation per fragment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FragmentedTombstones {
    frags: Vec<Fragment>,
    ends: Vec<u8>,
    /// `ends[end_at[i]..end_at[i + 1]]` is fragment i's end key.
    end_at: Vec<u32>,
}

impl FragmentedTombstones {
    /// Fragments `tombstones` (any order, overlaps allowed; empty ranges
    /// are ignored).
    pub fn new(tombstones: &[Tombstone]) -> Self {
        let mut points: Vec<&[u8]> = Vec::with_capacity(tombstones.len() * 2);
        for t in tombstones.iter().filter(|t| t.start < t.end) {
            points.push(&t.start);
            points.push(&t.end);
        }
        crate::sort::sort(&mut points);
        points.dedup();
        if points.len() < 2 {
            return Self::default();
        }
        let mut seqs: Vec<Vec<SequenceNumber>> = vec![Vec::new(); points.len() - 1];
        for t in tombstones.iter().filter(|t| t.start < t.end) {
            let from = points.partition_point(|p| *p < t.start.as_slice());
            let to = points.partition_point(|p| *p < t.end.as_slice());
            for s in &mut seqs[from..to] {
                s.push(t.seq);
            }
        }
        let mut frags: Vec<Fragment> = Vec::new();
        for (i, mut s) in seqs.into_iter().enumerate() {
            if s.is_empty() {
                continue;
            }
            crate::sort::sort_by(&mut s, |a, b| b.cmp(a));
            s.dedup();
            // Adjacent pieces with the same tombstones become one.
            if let Some(last) = frags.last_mut() {
                if last.end.as_slice() == points[i] && last.seqs == s {
                    last.end = points[i + 1].to_vec();
                    continue;
                }
            }
            frags.push(Fragment { start: points[i].to_vec(), end: points[i + 1].to_vec(), seqs: s });
        }
        Self::from_fragments(frags)
    }

    pub fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    pub fn fragments(&self) -> &[Fragment] {
        &self.frags
    }

    /// The fragment covering `key`, if any.
    pub fn fragment_at(&self, key: &[u8]) -> Option<&Fragment> {
        let n = self.frags.len();
        if n == 0 {
            return None;
        }
        let end = |i: usize| &self.ends[self.end_at[i] as usize..self.end_at[i + 1] as usize];
        // First fragment whose end is after the key.
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if bytewise(end(mid), key).is_le() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        self.frags.get(lo).filter(|f| bytewise(&f.start, key).is_le())
    }

    fn from_fragments(frags: Vec<Fragment>) -> Self {
        let mut ends = Vec::new();
        let mut end_at = Vec::with_capacity(frags.len() + 1);
        end_at.push(0);
        for f in &frags {
            ends.extend_from_slice(&f.end);
            end_at.push(ends.len() as u32);
        }
        FragmentedTombstones { frags, ends, end_at }
    }

    /// The highest sequence number <= `read_seq` of a tombstone covering
    /// `key`, or 0 if none does.
    pub fn max_covering_seq(&self, key: &[u8], read_seq: SequenceNumber) -> SequenceNumber {
        match self.fragment_at(key) {
            Some(f) => f.seqs.iter().copied().find(|&s| s <= read_seq).unwrap_or(0),
            None => 0,
        }
    }

    /// Every (fragment, seq) pair as a tombstone: the fragmented form, which
    /// is what tables store.
    pub fn to_tombstones(&self) -> Vec<Tombstone> {
        let mut out = Vec::new();
        for f in &self.frags {
            for &seq in &f.seqs {
                out.push(Tombstone { start: f.start.clone(), end: f.end.clone(), seq });
            }
        }
        out
    }

    /// A copy keeping only tombstones with seq <= `read_seq`.
    pub fn visible_at(&self, read_seq: SequenceNumber) -> Self {
        let frags = self
            .frags
            .iter()
            .filter_map(|f| {
                let seqs: Vec<_> = f.seqs.iter().copied().filter(|&s| s <= read_seq).collect();
                (!seqs.is_empty()).then(|| Fragment { start: f.start.clone(), end: f.end.clone(), seqs })
            })
            .collect();
        Self::from_fragments(frags)
    }
}

/// Merges several fragmented lists into one (for iterators and compaction).
pub fn merge_all<'a>(lists: impl IntoIterator<Item = &'a Arc<FragmentedTombstones>>) -> FragmentedTombstones {
    let all: Vec<Tombstone> = lists.into_iter().flat_map(|l| l.to_tombstones()).collect();
    FragmentedTombstones::new(&all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str, e: &str, seq: u64) -> Tombstone {
        Tombstone { start: s.into(), end: e.into(), seq }
    }

    #[test]
    fn overlapping_tombstones_fragment_into_disjoint_pieces() {
        let f = FragmentedTombstones::new(&[t("a", "e", 10), t("c", "g", 20), t("x", "z", 5)]);
        let pieces: Vec<_> = f.fragments().iter().map(|f| (f.start.clone(), f.end.clone(), f.seqs.clone())).collect();
        assert_eq!(
            pieces,
            vec![
                (b"a".to_vec(), b"c".to_vec(), vec![10]),
                (b"c".to_vec(), b"e".to_vec(), vec![20, 10]),
                (b"e".to_vec(), b"g".to_vec(), vec![20]),
                (b"x".to_vec(), b"z".to_vec(), vec![5]),
            ]
        );
    }

    #[test]
    fn covering_seq_respects_bounds_and_snapshots() {
        let f = FragmentedTombstones::new(&[t("b", "d", 10), t("c", "f", 20)]);
        assert_eq!(f.max_covering_seq(b"a", 100), 0);
        assert_eq!(f.max_covering_seq(b"b", 100), 10);
        assert_eq!(f.max_covering_seq(b"c", 100), 20);
        assert_eq!(f.max_covering_seq(b"c", 15), 10);
        assert_eq!(f.max_covering_seq(b"c", 9), 0);
        assert_eq!(f.max_covering_seq(b"e", 100), 20);
        assert_eq!(f.max_covering_seq(b"f", 100), 0, "end is exclusive");
    }

    #[test]
    fn empty_and_adjacent_ranges() {
        let f = FragmentedTombstones::new(&[t("c", "c", 5), t("d", "a", 6)]);
        assert!(f.is_empty());
        let f = FragmentedTombstones::new(&[t("a", "c", 5), t("c", "e", 5)]);
        assert_eq!(f.fragments().len(), 1, "adjacent equal pieces join: {f:?}");
        assert_eq!(f.max_covering_seq(b"c", 9), 5);
        let f = FragmentedTombstones::new(&[t("a", "c", 5), t("c", "e", 6)]);
        assert_eq!(f.fragments().len(), 2);
    }

    #[test]
    fn round_trips_through_fragmented_tombstones() {
        let f = FragmentedTombstones::new(&[t("a", "e", 10), t("c", "g", 20), t("c", "g", 20)]);
        assert_eq!(FragmentedTombstones::new(&f.to_tombstones()), f);
        let v = f.visible_at(15);
        assert_eq!(v.max_covering_seq(b"d", 100), 10);
        assert_eq!(v.max_covering_seq(b"f", 100), 0);
    }
}
