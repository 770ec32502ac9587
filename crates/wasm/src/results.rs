//! Values pinned for JavaScript: the zero-copy side of `get` and
//! `multiGet`.
//!
//! A result owns the engine's pinned values: each points into the block
//! cache block or the memtable entry it was read from, which stays pinned
//! (even if compaction deletes its file) while the result lives, so those
//! bytes stay where they are in wasm linear memory and JavaScript reads
//! them through `Uint8Array` views. Results live in the database's
//! [`PinTable`] under a handle; JavaScript knows them by that handle and
//! where their values are (see `exchange.rs`), and releasing a handle lets
//! go of them. The table is kept past `close()`: a result read before
//! closing stays readable until released.

use std::cell::Cell;

use silt_engine::{PinnedResults, PinnedValue};

thread_local! {
    /// Results whose bytes are pinned right now, across all databases (of
    /// this thread: the one thread of a wasm32 build; natively, per test).
    static PINNED_RESULTS: Cell<usize> = const { Cell::new(0) };
}

/// The length in a layout that marks a key with no value.
pub const ABSENT: u32 = u32::MAX;

/// Results still pinning values (not yet released nor freed).
pub fn pinned_results() -> usize {
    PINNED_RESULTS.with(Cell::get)
}

/// Offset (a wasm32 address) and length of each value, two `u32`s per key;
/// a missing value has length [`ABSENT`].
pub(crate) fn layout<'a>(values: impl Iterator<Item = Option<&'a [u8]>>) -> Vec<u32> {
    let mut out = Vec::new();
    for v in values {
        out.extend(place(v));
    }
    out
}

/// Offset and length of one value. Addresses fit in u32 on wasm32, the
/// only target whose layouts JavaScript reads.
pub(crate) fn place(value: Option<&[u8]>) -> [u32; 2] {
    match value {
        Some(b) => [b.as_ptr() as usize as u32, b.len() as u32],
        None => [0, ABSENT],
    }
}

/// What a result pins: the values of a batch, or one value.
pub(crate) enum Pinned {
    Many(PinnedResults),
    One(#[expect(dead_code, reason = "held for its Drop: it keeps the value's block pinned")] PinnedValue),
}

/// One result in the table: its values and, for a batch, where each is.
struct Entry {
    _values: Pinned,
    /// Never resized after creation: JavaScript reads it through a view.
    layout: Vec<u32>,
}

impl Entry {
    fn new(values: Pinned) -> Self {
        let layout = match &values {
            Pinned::Many(r) => layout(r.iter()),
            Pinned::One(_) => Vec::new(),
        };
        PINNED_RESULTS.with(|n| n.set(n.get() + 1));
        Entry { _values: values, layout }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        PINNED_RESULTS.with(|n| n.set(n.get() - 1));
    }
}

/// Bits of a handle that name its slot; the rest count the slot's reuses.
const SLOT_BITS: u32 = 20;
const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;
/// Handles stay below 2^30, so that V8 keeps them as small integers (Smis):
/// a handle past that range is a heap number in JavaScript, and code that
/// had only seen Smis is deoptimized when one arrives (a get, release and
/// the release queue, once every 1,024 gets of a loop that reuses a slot).
const HANDLE_BITS: u32 = 30;
const GENERATION_MASK: u32 = (1 << (HANDLE_BITS - SLOT_BITS)) - 1;

/// One slot of the table: the result it holds, and how often it was reused.
#[derive(Default)]
struct Slot {
    entry: Option<Entry>,
    generation: u32,
}

/// The pinned results of one database, by handle (never 0): a slab, so an
/// insert and a release are an index each, with no hashing. A handle is its
/// slot (plus one) and the slot's generation, so a released handle does not
/// name the next result put in its slot (until 2^10 reuses of that slot
/// later: siltdb never releases a handle twice).
#[derive(Default)]
pub(crate) struct PinTable {
    slots: Vec<Slot>,
    /// Empty slots, the last freed first.
    free: Vec<u32>,
    live: usize,
}

impl PinTable {
    /// Keeps `values` under a new handle; returns it and the address of
    /// its layout (for a batch). Fails when 2^20 - 1 results are held at
    /// once (each pins memory: far more than any sane use).
    pub(crate) fn insert(&mut self, values: Pinned) -> Result<(u32, u32), crate::error::BindingError> {
        let index = match self.free.pop() {
            Some(i) => i,
            None if self.slots.len() < SLOT_MASK as usize => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
            None => {
                return Err(crate::error::BindingError::invalid(format!(
                    "{} results are pinned at once: release some (result.release() or `using`)",
                    self.live
                )))
            }
        };
        let entry = Entry::new(values);
        let layout_at = entry.layout.as_ptr() as usize as u32;
        let slot = &mut self.slots[index as usize];
        slot.entry = Some(entry);
        self.live += 1;
        Ok(((slot.generation << SLOT_BITS) | (index + 1), layout_at))
    }

    /// Lets go of a result. Unknown handles (0, or released already) are
    /// ignored: a release must never fail.
    pub(crate) fn release(&mut self, handle: u32) {
        let Some(index) = (handle & SLOT_MASK).checked_sub(1) else { return };
        let Some(slot) = self.slots.get_mut(index as usize) else { return };
        if slot.entry.is_none() || slot.generation != handle >> SLOT_BITS {
            return;
        }
        slot.entry = None;
        slot.generation = (slot.generation + 1) & GENERATION_MASK;
        self.free.push(index);
        self.live -= 1;
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    use silt_engine::fs::MemFs;
    use silt_engine::{Db, Options, ReadOptions, WriteOptions};

    #[test]
    fn layout_gives_two_words_per_key_and_marks_missing_ones() {
        let values = [Some(&b"abc"[..]), None, Some(&b""[..])];
        let l = layout(values.into_iter());
        assert_eq!(l.len(), 6);
        assert_eq!([l[1], l[2], l[3], l[5]], [3, 0, ABSENT, 0]);
    }

    fn db() -> Db {
        let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        db.put(&WriteOptions::default(), b"a", b"alpha").unwrap();
        db
    }

    #[test]
    fn a_pinned_batch_lays_out_its_values_in_key_order() {
        let db = db();
        let r = db.multi_get(&ReadOptions::default(), &[b"a", b"b", b"a"], true).unwrap();
        let l = layout(r.iter());
        assert_eq!([l[1], l[3], l[5]], [5, ABSENT, 5]);
        assert_eq!(l[0], l[4], "the same pinned bytes for the same key");
    }

    #[test]
    fn results_stay_pinned_and_counted_until_released_and_handles_are_not_reused() {
        let db = db();
        db.flush().unwrap();
        let one = || Pinned::One(db.get_pinned(&ReadOptions::default(), b"a").unwrap().unwrap());
        let mut table = PinTable::default();
        let before = pinned_results();
        let (a, _) = table.insert(one()).unwrap();
        let batch = db.multi_get(&ReadOptions::default(), &[b"a", b"zz"], true).unwrap();
        let (b, layout_at) = table.insert(Pinned::Many(batch)).unwrap();
        assert!(a != 0 && b != 0 && a != b);
        assert_ne!(layout_at, 0);
        assert_eq!(pinned_results(), before + 2);
        assert!(db.properties().pinned_bytes > 0);
        table.release(a);
        table.release(a); // twice is harmless
        table.release(0);
        assert_eq!(pinned_results(), before + 1);
        let (c, _) = table.insert(one()).unwrap();
        assert!(c != a && c != b, "a reused slot gets a new handle");
        table.release(a); // a stale handle does not release its slot's new result
        assert_eq!(table.len(), 2);
        assert_eq!(table.len(), 2);
        table.release(b);
        table.release(c);
        assert_eq!(pinned_results(), before);
        assert_eq!(db.properties().pinned_bytes, 0, "the engine got its pinned blocks back");
        let (d, _) = table.insert(one()).unwrap();
        assert!(d != b && d != c);
        drop(table);
        assert_eq!(pinned_results(), before);
    }

    #[test]
    fn handles_stay_small_integers_for_javascript_however_often_a_slot_is_reused() {
        let db = db();
        let mut table = PinTable::default();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..5_000 {
            let (h, _) =
                table.insert(Pinned::One(db.get_pinned(&ReadOptions::default(), b"a").unwrap().unwrap())).unwrap();
            assert!(h != 0 && h < 1 << 30, "handle {h:#x} is not a Smi in V8");
            seen.insert(h);
            table.release(h);
        }
        assert_eq!(seen.len(), 1 << (HANDLE_BITS - SLOT_BITS), "one slot cycles through every generation");
        assert_eq!(table.len(), 0);
    }
}
