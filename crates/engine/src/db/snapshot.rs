//! Snapshots: a sequence number the database promises to keep readable
//! while the snapshot lives.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::format::key::SequenceNumber;

/// The set of live snapshots (sequence number -> how many).
#[derive(Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SequenceNumber, usize>>,
}

impl SnapshotList {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<SequenceNumber, usize>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sequence numbers of every live snapshot, ascending.
    pub fn sequences(&self) -> Vec<SequenceNumber> {
        self.lock().keys().copied().collect()
    }
}

/// A consistent view of the database as of one moment. Reads given the
/// snapshot see exactly the writes acknowledged before it was taken.
/// Dropping it lets compaction discard versions only it could see.
pub struct Snapshot {
    seq: SequenceNumber,
    list: Arc<SnapshotList>,
}

impl Snapshot {
    pub(crate) fn new(seq: SequenceNumber, list: Arc<SnapshotList>) -> Self {
        *list.lock().entry(seq).or_insert(0) += 1;
        Snapshot { seq, list }
    }

    /// A snapshot at the sequence number `visible` reads, read while the
    /// list is locked. A flush or compaction reads the list (under that
    /// lock) when it starts, with every entry of its inputs already
    /// visible: so either it sees this snapshot, or this snapshot's number
    /// is at least every number in its inputs and it drops nothing the
    /// snapshot could see. Read before the lock, the number could be
    /// older than a version such a job then drops (RocksDB takes its
    /// snapshots under its mutex for the same reason).
    pub(crate) fn of_current(visible: impl FnOnce() -> SequenceNumber, list: Arc<SnapshotList>) -> Self {
        let seq = {
            let mut live = list.lock();
            let seq = visible();
            *live.entry(seq).or_insert(0) += 1;
            seq
        };
        Snapshot { seq, list }
    }

    /// The sequence number of the last write the snapshot sees.
    pub fn sequence(&self) -> SequenceNumber {
        self.seq
    }

    /// Whether the snapshot was taken of the database whose list is `list`.
    pub(crate) fn is_of(&self, list: &Arc<SnapshotList>) -> bool {
        Arc::ptr_eq(&self.list, list)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut live = self.list.lock();
        if let Some(n) = live.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                live.remove(&self.seq);
            }
        }
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("seq", &self.seq).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 42, item 8: the number is read while the list is locked, so a
    /// flush or compaction that reads the list (`sequences`) meanwhile waits
    /// for the snapshot to be in it. Read before the lock, a job starting in
    /// between saw no snapshot and could drop the version at that number.
    #[test]
    fn a_snapshots_number_is_read_while_nobody_can_read_the_list_without_it() {
        let list = Arc::new(SnapshotList::default());
        let other = list.clone();
        let snap = Snapshot::of_current(
            || {
                // What a job reading the list from another thread now finds.
                assert!(other.live.try_lock().is_err(), "the list could be read before the snapshot was in it");
                7
            },
            list.clone(),
        );
        assert_eq!(snap.sequence(), 7);
        assert_eq!(list.sequences(), vec![7]);
        drop(snap);
        assert!(list.sequences().is_empty());
    }
}
