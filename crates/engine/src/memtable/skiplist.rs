//! The memtable's skip list, laid out in an arena (LevelDB's and RocksDB's
//! `InlineSkipList` design).
//!
//! Each entry is one *node* carved out of a large block by bumping a
//! pointer: a small header, the node's tower of next pointers, then the
//! internal key and the value, contiguous. An insert costs no allocation of
//! its own (a new 64 KiB block every few hundred entries), a key is compared
//! in the same cache lines as the links that led to it, and dropping a
//! memtable frees a few blocks instead of every entry.
//!
//! One writer at a time (the [`Writer`] behind the list's mutex) links new
//! nodes while any number of readers search and walk without locks: a node
//! is fully written before the release store that links it at level 0, and
//! readers follow links with acquire loads. Nothing is ever unlinked or
//! freed before the list itself, so a reader holding the list (the memtable,
//! behind an `Arc`) may keep a node pointer as long as it likes.
//!
//! Values outlive the list when a reader asks for them as [`Bytes`]
//! ([`Node::value_bytes`]): each block is reference-counted, and such a
//! value holds its block, not the whole memtable.
//!
//! Sequential inserts (keys in ascending order, the common bulk load) skip
//! the search: the writer remembers the predecessors at every level of the
//! last node it linked, and a key that falls right after that node is
//! linked there after two comparisons.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cmp::Ordering;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use crate::format::key::{self, SequenceNumber, ValueType, TAG_LEN};

/// Levels of the tallest tower. With a 1-in-4 chance of each level above
/// the first, 12 levels index 4^12 (16 million) entries well; a memtable
/// holds tens of thousands.
pub const MAX_HEIGHT: usize = 12;

/// Size of an arena block. A value read as `Bytes` keeps its block alive,
/// so blocks are kept small enough that a pinned value pins little.
const BLOCK_SIZE: usize = 64 << 10;

/// A node larger than this gets a block of its own, so a large value does
/// not waste the rest of the current block (LevelDB's rule).
const OWN_BLOCK_THRESHOLD: usize = BLOCK_SIZE / 4;

/// Every node starts at this alignment (the header's, which holds pointers).
const ALIGN: usize = align_of::<Node>();

/// One block of the arena: raw memory, freed when the last holder (the
/// list, or a value read out of it) lets go.
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: a block is plain memory; the list's single writer writes a node
// before publishing it, after which the node's bytes never change.
unsafe impl Send for Block {}
// SAFETY: as above.
unsafe impl Sync for Block {}

impl Block {
    fn new(size: usize) -> Arc<Block> {
        let layout = Layout::from_size_align(size, ALIGN).unwrap_or_else(|_| panic!("arena block of {size} bytes"));
        // SAFETY: `size` is never zero (a node has at least its header).
        let raw = unsafe { alloc(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| handle_alloc_error(layout));
        Arc::new(Block { ptr, layout })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated in `Block::new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// A node's fixed header. In memory it is followed by `height` next
/// pointers (`AtomicPtr<Node>`), then the internal key, then the value.
#[repr(C)]
pub struct Node {
    /// The block the node lives in (kept alive by the arena).
    block: *const Block,
    key_len: u32,
    value_len: u32,
    height: u32,
}

impl Node {
    fn size(height: usize, key_len: usize, value_len: usize) -> usize {
        size_of::<Node>() + height * size_of::<AtomicPtr<Node>>() + key_len + value_len
    }

    #[inline]
    fn link(&self, level: usize) -> &AtomicPtr<Node> {
        debug_assert!(level < self.height as usize);
        // SAFETY: the tower of `height` pointers follows the header (same
        // alignment), inside the node's allocation; `level < height`.
        unsafe { &*(self as *const Node).add(1).cast::<AtomicPtr<Node>>().add(level) }
    }

    /// The next node at `level` (null at the end).
    #[inline]
    fn next(&self, level: usize) -> *const Node {
        self.link(level).load(AtomicOrdering::Acquire)
    }

    #[inline]
    fn data(&self) -> *const u8 {
        // SAFETY: the key and value follow the tower, inside the node.
        unsafe { (self as *const Node).add(1).cast::<AtomicPtr<Node>>().add(self.height as usize).cast::<u8>() }
    }

    /// The node's internal key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        // SAFETY: `key_len` bytes written before the node was published.
        unsafe { std::slice::from_raw_parts(self.data(), self.key_len as usize) }
    }

    /// The node's value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        // SAFETY: `value_len` bytes after the key, written before the node
        // was published.
        unsafe { std::slice::from_raw_parts(self.data().add(self.key_len as usize), self.value_len as usize) }
    }

    /// The value as `Bytes` that keeps the node's block alive (no copy).
    pub fn value_bytes(&self) -> Bytes {
        if self.value_len == 0 {
            return Bytes::new();
        }
        // SAFETY: `block` points into an `Arc<Block>` the arena holds for as
        // long as the list lives, and the caller borrows a node of a live
        // list; taking another strong reference keeps it past the list.
        let block = unsafe {
            Arc::increment_strong_count(self.block);
            Arc::from_raw(self.block)
        };
        let v = self.value();
        Bytes::from_owner(PinnedValue { _block: block, ptr: v.as_ptr(), len: v.len() })
    }
}

/// A value that holds its arena block.
struct PinnedValue {
    _block: Arc<Block>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: points into the immutable bytes of a block it keeps alive.
unsafe impl Send for PinnedValue {}
// SAFETY: as above.
unsafe impl Sync for PinnedValue {}

impl AsRef<[u8]> for PinnedValue {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the value's bytes inside `_block`, never written again.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// Bump allocation out of blocks. Writer-only.
struct Arena {
    blocks: Vec<Arc<Block>>,
    cur: *mut u8,
    left: usize,
    cur_block: *const Block,
}

impl Arena {
    fn new() -> Arena {
        Arena { blocks: Vec::new(), cur: ptr::null_mut(), left: 0, cur_block: ptr::null() }
    }

    /// `size` bytes aligned to [`ALIGN`], and the block they are in.
    fn alloc(&mut self, size: usize) -> (*mut u8, *const Block) {
        let size = size.next_multiple_of(ALIGN);
        if size > self.left {
            if size > OWN_BLOCK_THRESHOLD {
                let b = Block::new(size);
                let out = (b.ptr.as_ptr(), Arc::as_ptr(&b));
                self.blocks.push(b);
                return out;
            }
            let b = Block::new(BLOCK_SIZE);
            self.cur = b.ptr.as_ptr();
            self.left = BLOCK_SIZE;
            self.cur_block = Arc::as_ptr(&b);
            self.blocks.push(b);
        }
        let p = self.cur;
        // SAFETY: `size <= left`, so this stays inside the current block.
        self.cur = unsafe { self.cur.add(size) };
        self.left -= size;
        (p, self.cur_block)
    }
}

/// The writer's state: the arena, the height generator and the splice
/// (where the last node went).
pub struct Writer {
    arena: Arena,
    rng: u32,
    /// The last node linked (null before the first).
    last: *const Node,
    /// The predecessor at each level of a key right after `last`.
    prev: [*const Node; MAX_HEIGHT],
}

// SAFETY: the writer's pointers point into blocks its arena owns.
unsafe impl Send for Writer {}

pub struct SkipList {
    head: *const Node,
    /// The tallest tower linked so far (readers start their search there).
    height: AtomicUsize,
    writer: Mutex<Writer>,
    /// Bytes of the nodes (headers, towers, keys and values).
    bytes: AtomicUsize,
}

// SAFETY: readers only follow published links (acquire loads) to nodes
// that never change again; writing goes through the `writer` mutex.
unsafe impl Send for SkipList {}
// SAFETY: as above.
unsafe impl Sync for SkipList {}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl SkipList {
    pub fn new() -> SkipList {
        let mut arena = Arena::new();
        let head = new_node(&mut arena, MAX_HEIGHT, 0, 0);
        SkipList {
            head,
            height: AtomicUsize::new(1),
            writer: Mutex::new(Writer { arena, rng: 0x2545_f491, last: ptr::null(), prev: [head; MAX_HEIGHT] }),
            bytes: AtomicUsize::new(0),
        }
    }

    /// The writer; inserts go through it ([`SkipList::insert`]).
    pub fn writer(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes taken by entries.
    pub fn bytes(&self) -> usize {
        self.bytes.load(AtomicOrdering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.first().is_none()
    }

    fn head(&self) -> &Node {
        // SAFETY: the head is allocated in the arena and lives as long as
        // the list.
        unsafe { &*self.head }
    }

    /// Links the entry (`user_key` at `seq` of type `ty`, with `value`);
    /// returns the bytes it took, 0 if that internal key was already there
    /// (the same update: nothing is ever replaced). `w` must be this list's
    /// writer.
    pub fn insert(&self, w: &mut Writer, user_key: &[u8], seq: SequenceNumber, ty: ValueType, value: &[u8]) -> usize {
        let height = random_height(&mut w.rng);
        let key_len = user_key.len() + TAG_LEN;
        let node = new_node(&mut w.arena, height, key_len, value.len());
        // SAFETY: `node` was just allocated with room for this key and
        // value; no reader can see it yet.
        unsafe {
            let data = (*node).data().cast_mut();
            ptr::copy_nonoverlapping(user_key.as_ptr(), data, user_key.len());
            let tag = key::pack_tag(seq, ty as u8).to_le_bytes();
            ptr::copy_nonoverlapping(tag.as_ptr(), data.add(user_key.len()), TAG_LEN);
            ptr::copy_nonoverlapping(value.as_ptr(), data.add(key_len), value.len());
        }
        // SAFETY: as above; the node stays valid for the list's lifetime.
        let node_ref = unsafe { &*node };
        let ikey = node_ref.key();

        let mut prev = [self.head; MAX_HEIGHT];
        // SAFETY: `last` and `prev` point at nodes of this list.
        let after_last = !w.last.is_null() && {
            let last = unsafe { &*w.last };
            key::compare(ikey, last.key()) == Ordering::Greater && {
                let next = last.next(0);
                next.is_null() || key::compare(unsafe { (*next).key() }, ikey) == Ordering::Greater
            }
        };
        if after_last {
            prev = w.prev;
        } else {
            let mut x = self.head();
            let mut level = self.height.load(AtomicOrdering::Relaxed) - 1;
            loop {
                let next = x.next(level);
                // SAFETY: a published link points at a live node.
                let ord = if next.is_null() { Ordering::Greater } else { key::compare(unsafe { (*next).key() }, ikey) };
                match ord {
                    Ordering::Less => x = unsafe { &*next },
                    Ordering::Equal => return 0,
                    Ordering::Greater => {
                        prev[level] = x;
                        if level == 0 {
                            break;
                        }
                        level -= 1;
                    }
                }
            }
        }

        if height > self.height.load(AtomicOrdering::Relaxed) {
            // A reader that sees the new height before the links finds
            // null at the head's new levels and simply drops a level.
            self.height.store(height, AtomicOrdering::Relaxed);
        }
        for (level, p) in prev.iter().enumerate().take(height) {
            // SAFETY: `p` is a live node at least `level + 1` tall.
            let p = unsafe { &**p };
            node_ref.link(level).store(p.link(level).load(AtomicOrdering::Relaxed), AtomicOrdering::Relaxed);
            // Publishes the node (its bytes and its own link at this level).
            p.link(level).store(node.cast_mut(), AtomicOrdering::Release);
        }
        for (level, slot) in w.prev.iter_mut().enumerate() {
            *slot = if level < height { node } else { prev[level] };
        }
        w.last = node;
        let size = Node::size(height, key_len, value.len());
        self.bytes.fetch_add(size, AtomicOrdering::Relaxed);
        size
    }

    /// The last node whose key satisfies `before` (a prefix of the order:
    /// true for every key below some point), or `None` if there is none.
    fn last_where(&self, before: impl Fn(&[u8]) -> bool) -> Option<&Node> {
        let mut x = self.head();
        let mut level = self.height.load(AtomicOrdering::Relaxed) - 1;
        loop {
            let next = x.next(level);
            // SAFETY: a published link points at a live node.
            if !next.is_null() && before(unsafe { (*next).key() }) {
                x = unsafe { &*next };
            } else if level == 0 {
                return (!ptr::eq(x, self.head)).then_some(x);
            } else {
                level -= 1;
            }
        }
    }

    /// The first node whose key is at or after `target`.
    pub fn seek(&self, target: &[u8]) -> Option<&Node> {
        let before = self.last_where(|k| key::compare(k, target) == Ordering::Less);
        // SAFETY: a published link points at a live node.
        unsafe { before.unwrap_or(self.head()).next(0).as_ref() }
    }

    /// The last node whose key is at or before `target`.
    pub fn seek_for_prev(&self, target: &[u8]) -> Option<&Node> {
        self.last_where(|k| key::compare(k, target) != Ordering::Greater)
    }

    /// The last node whose key is before `target`.
    pub fn before(&self, target: &[u8]) -> Option<&Node> {
        self.last_where(|k| key::compare(k, target) == Ordering::Less)
    }

    pub fn first(&self) -> Option<&Node> {
        // SAFETY: a published link points at a live node.
        unsafe { self.head().next(0).as_ref() }
    }

    pub fn last(&self) -> Option<&Node> {
        self.last_where(|_| true)
    }

    /// The node after `n` (null-safe form of its level-0 link).
    pub fn next<'a>(&'a self, n: &'a Node) -> Option<&'a Node> {
        // SAFETY: a published link points at a live node of this list.
        unsafe { n.next(0).as_ref() }
    }
}

fn new_node(arena: &mut Arena, height: usize, key_len: usize, value_len: usize) -> *const Node {
    let key_len32 = u32::try_from(key_len).unwrap_or_else(|_| panic!("memtable key of {key_len} bytes"));
    let value_len32 = u32::try_from(value_len).unwrap_or_else(|_| panic!("memtable value of {value_len} bytes"));
    let (p, block) = arena.alloc(Node::size(height, key_len, value_len));
    let node = p.cast::<Node>();
    // SAFETY: `p` is aligned for `Node` and has room for the header and
    // the tower; the tower starts out null.
    unsafe {
        node.write(Node { block, key_len: key_len32, value_len: value_len32, height: height as u32 });
        let tower = node.add(1).cast::<AtomicPtr<Node>>();
        for i in 0..height {
            tower.add(i).write(AtomicPtr::new(ptr::null_mut()));
        }
    }
    node
}

/// 1 plus one more level with probability 1/4 each, up to [`MAX_HEIGHT`].
fn random_height(rng: &mut u32) -> usize {
    let mut h = 1;
    while h < MAX_HEIGHT {
        // xorshift32
        let mut x = *rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *rng = x;
        if !x.is_multiple_of(4) {
            break;
        }
        h += 1;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ikey(k: &[u8], seq: u64) -> Vec<u8> {
        key::internal_key(k, seq, ValueType::Put)
    }

    fn keys(l: &SkipList) -> Vec<Vec<u8>> {
        let mut out = vec![];
        let mut n = l.first();
        while let Some(x) = n {
            out.push(x.key().to_vec());
            n = l.next(x);
        }
        out
    }

    #[test]
    fn ordered_both_ways_with_every_seek() {
        let l = SkipList::new();
        assert!(l.is_empty() && l.first().is_none() && l.last().is_none());
        let mut w = l.writer();
        let mut model = std::collections::BTreeSet::new();
        let mut rng = 7u32;
        for i in 0..3000u32 {
            let k = (random_height(&mut rng) as u32 * 7919 + i * 104_729) % 1000;
            let k = format!("{k:05}").into_bytes();
            let seq = u64::from(i % 5);
            let ik = ikey(&k, seq);
            let took = l.insert(&mut w, &k, seq, ValueType::Put, &k);
            assert_eq!(took == 0, !model.insert(KeyOrd(ik)), "duplicate detection");
        }
        drop(w);
        let want: Vec<Vec<u8>> = model.iter().map(|k| k.0.clone()).collect();
        assert_eq!(keys(&l), want);
        for (i, k) in want.iter().enumerate() {
            assert_eq!(l.seek(k).map(|n| n.key().to_vec()).as_ref(), Some(k));
            assert_eq!(l.seek_for_prev(k).map(|n| n.key().to_vec()).as_ref(), Some(k));
            assert_eq!(l.before(k).map(|n| n.key().to_vec()), i.checked_sub(1).map(|j| want[j].clone()));
            assert_eq!(l.seek(k).unwrap().value(), key::user_key(k), "value is the user key");
        }
        assert_eq!(l.last().map(|n| n.key().to_vec()), want.last().cloned());
        // Between keys: a seek key for user key "00500a" sorts after every
        // version of "00500" and before "00501".
        let mid = key::seek_key(b"00500a", 0);
        let after = l.seek(&mid).map(|n| key::user_key(n.key()).to_vec());
        assert!(after.is_none_or(|k| k.as_slice() > b"00500a".as_slice()));
    }

    #[test]
    fn ascending_inserts_take_the_splice_and_stay_correct() {
        let l = SkipList::new();
        let mut w = l.writer();
        for i in 0..10_000u32 {
            let k = i.to_be_bytes();
            assert!(l.insert(&mut w, &k, 1, ValueType::Put, b"v") > 0);
            // Now and then a key out of order breaks the run.
            if i % 1000 == 999 {
                let back = (i - 500).to_be_bytes();
                assert!(l.insert(&mut w, &back, 2, ValueType::Put, b"w") > 0);
            }
        }
        drop(w);
        let got = keys(&l);
        let mut want = got.clone();
        want.sort_by(|a, b| key::compare(a, b));
        assert_eq!(got, want);
        assert_eq!(got.len(), 10_010);
        for level in 0..MAX_HEIGHT {
            // Every level is sorted too.
            let mut x = l.head().next(level);
            let mut prev: Option<Vec<u8>> = None;
            while !x.is_null() {
                let n = unsafe { &*x };
                if let Some(p) = &prev {
                    assert_eq!(key::compare(p, n.key()), Ordering::Less, "level {level}");
                }
                prev = Some(n.key().to_vec());
                x = if level < n.height as usize { n.next(level) } else { ptr::null() };
            }
        }
    }

    #[test]
    fn values_read_as_bytes_outlive_the_list() {
        let big = vec![7u8; OWN_BLOCK_THRESHOLD + 1];
        let l = SkipList::new();
        {
            let mut w = l.writer();
            l.insert(&mut w, b"a", 1, ValueType::Put, b"small");
            l.insert(&mut w, b"b", 2, ValueType::Put, &big);
            l.insert(&mut w, b"c", 3, ValueType::Delete, b"");
        }
        let a = l.seek(&key::seek_key(b"a", 9)).unwrap().value_bytes();
        let b = l.seek(&key::seek_key(b"b", 9)).unwrap().value_bytes();
        let c = l.seek(&key::seek_key(b"c", 9)).unwrap().value_bytes();
        drop(l);
        assert_eq!(&a[..], b"small");
        assert_eq!(b, big);
        assert!(c.is_empty());
    }

    #[cfg(not(target_family = "wasm"))]
    #[test]
    fn readers_see_whole_entries_while_the_writer_inserts() {
        let l = Arc::new(SkipList::new());
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (l, done) = (l.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut scans = 0;
                    while !done.load(AtomicOrdering::Acquire) || scans == 0 {
                        let mut prev: Option<&[u8]> = None;
                        let mut n = l.first();
                        while let Some(x) = n {
                            let k = key::user_key(x.key());
                            assert_eq!(x.value(), k, "value matches its key");
                            if let Some(p) = prev {
                                assert!(p < k);
                            }
                            prev = Some(k);
                            n = l.next(x);
                        }
                        scans += 1;
                    }
                })
            })
            .collect();
        for i in 0..50_000u32 {
            let mut w = l.writer();
            // An odd multiplier permutes u32: every key is new.
            let k = i.wrapping_mul(2_654_435_761).to_be_bytes();
            l.insert(&mut w, &k, u64::from(i) + 1, ValueType::Put, &k);
        }
        done.store(true, AtomicOrdering::Release);
        for r in readers {
            r.join().unwrap();
        }
    }

    /// Internal keys ordered as the memtable orders them.
    #[derive(PartialEq, Eq)]
    struct KeyOrd(Vec<u8>);
    impl PartialOrd for KeyOrd {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for KeyOrd {
        fn cmp(&self, o: &Self) -> Ordering {
            key::compare(&self.0, &o.0)
        }
    }
}
