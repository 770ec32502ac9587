//! A file system made of a pool of pre-opened files: the engine's `Fs` on
//! OPFS.
//!
//! OPFS gives synchronous I/O only on a `FileSystemSyncAccessHandle`, and
//! creating a file or a handle is asynchronous; the engine never awaits. So
//! the embedder opens a pool of physical files ahead of time (asynchronously,
//! between engine calls) and hands them to [`Pool::add`]; creating a logical
//! file claims a free one and writes the logical path into its header
//! (`header.rs`), removing it writes a free header back. There are no
//! renames and no directories on storage: a directory exists only as the
//! prefix of the paths it holds. This is the shape of SQLite's opfs-sahpool
//! and wa-sqlite's AccessHandlePool.
//!
//! When no free file is left, creating a file fails at once with an `Io`
//! error that says so (never a wait): the engine cannot await a top-up.
//! [`Pool::free_count`] and [`Pool::exhausted_count`] let the embedder top
//! the pool up in time and recognize that error.
//!
//! ## Size cap
//! [`Pool::set_max_bytes`] caps the bytes the pooled files take on storage
//! (headers included). A write, truncate or create that would take the
//! total past the cap fails before touching the file, with the same
//! `QuotaExceeded` error a full OPFS quota gives, so the engine meets one
//! error path for both. Ordinary writes stop a reserve short of the cap
//! ([`Pool::set_reserve`]): the rest is for work that frees space or must
//! not fail for lack of it (deletes, flushes, compactions, reopening), which
//! the embedder runs inside [`Pool::use_reserve`].
//!
//! Invariants, kept under the one state lock:
//! - a logical path names at most one pooled file (`by_path`);
//! - a pooled file is handed out for a new path only when it names nothing
//!   *and* no `File` of a removed path still has it open (POSIX semantics
//!   of remove: open handles stay usable until dropped).

mod control;
pub mod header;
mod slot;
mod space;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use silt_engine::fs::{File, Fs, FsLock};
use silt_engine::{Error, Result};

pub use control::{PoolControl, ReserveGuard};
pub use header::{Header, HEADER_SIZE, MAX_PATH_LEN};
pub use slot::{MemSlot, SlotError, SlotFile};
use space::Space;

/// The engine's `Fs` over a pool of pre-opened files. Cloning gives another
/// handle on the same pool.
pub struct Pool<S: SlotFile> {
    inner: Arc<Inner<S>>,
}

impl<S: SlotFile> Clone for Pool<S> {
    fn clone(&self) -> Self {
        Pool { inner: self.inner.clone() }
    }
}

struct Inner<S> {
    state: Mutex<State<S>>,
    locks: Mutex<HashSet<String>>,
    /// Lock order: `state`, then a slot's `size`, then `space` (a leaf).
    space: Mutex<Space>,
}

struct State<S> {
    slots: Vec<Slot<S>>,
    by_path: HashMap<String, usize>,
    dirs: HashSet<String>,
    /// Larger than every generation on storage.
    next_generation: u64,
    /// Creates refused because no file was free, since the pool was made.
    exhausted: u64,
    closed: bool,
}

struct Slot<S> {
    data: Arc<SlotData<S>>,
    /// The logical path held; `None` when free or removed.
    path: Option<String>,
    generation: u64,
    /// Live `PoolFile`s on this slot.
    open: usize,
    /// Closed by [`Pool::close_free`]: no longer a pooled file (its index
    /// stays taken, so that other slots keep theirs).
    detached: bool,
}

impl<S> Slot<S> {
    /// Free for a new logical file: names nothing, nobody has it open, and
    /// it is still part of the pool.
    fn is_free(&self) -> bool {
        self.path.is_none() && self.open == 0 && !self.detached
    }
}

struct SlotData<S> {
    file: S,
    /// The physical file's name, for messages.
    label: String,
    /// Kept here because this pool is the file's only writer.
    size: Mutex<Size>,
}

#[derive(Clone, Copy, Debug)]
struct Size {
    /// The logical file's length (for a named file: physical minus header).
    logical: u64,
    /// The physical file's size, as counted in `Space::used`.
    physical: u64,
}

/// What the pool holds, for statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pooled files.
    pub files: usize,
    /// Files free for a new logical file right now.
    pub free: usize,
    /// Removed files still open (free once their last handle is dropped).
    pub removed_open: usize,
    /// Bytes of logical data held.
    pub data_bytes: u64,
    /// Creates refused because the pool was exhausted.
    pub exhausted: u64,
    /// Bytes every pooled file takes on storage, headers included.
    pub bytes: u64,
    /// The size cap, if any ([`Pool::set_max_bytes`]).
    pub max_bytes: Option<u64>,
    /// Bytes under the cap kept for work in [`Pool::use_reserve`].
    pub reserve_bytes: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn slot_error(path: &str, op: &'static str, e: SlotError) -> Error {
    if e.quota {
        Error::QuotaExceeded { file: path.to_string(), message: e.message }
    } else {
        Error::Io { file: path.to_string(), op, message: e.message }
    }
}

impl<S: SlotFile> Default for Pool<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: SlotFile> Pool<S> {
    pub fn new() -> Self {
        Pool {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    slots: Vec::new(),
                    by_path: HashMap::new(),
                    dirs: HashSet::new(),
                    next_generation: 1,
                    exhausted: 0,
                    closed: false,
                }),
                locks: Mutex::new(HashSet::new()),
                space: Mutex::new(Space::default()),
            }),
        }
    }

    fn space(&self) -> MutexGuard<'_, Space> {
        lock(&self.inner.space)
    }

    /// Caps the bytes the pooled files may take on storage (`None`: no cap
    /// but the storage's own quota). Files already past the cap stay
    /// readable; what would grow them further fails with `QuotaExceeded`.
    pub fn set_max_bytes(&self, max: Option<u64>) {
        self.space().max = max;
    }

    /// Bytes below the cap that ordinary writes leave free, for work run
    /// inside [`Pool::use_reserve`].
    pub fn set_reserve(&self, bytes: u64) {
        self.space().reserve = bytes;
    }

    /// Lets writes use the reserve until the guard is dropped: for work
    /// that frees space (deletes, flushes, compactions) or that must not
    /// fail for lack of it (opening).
    pub fn use_reserve(&self) -> ReserveGuard {
        self.space().reserve_users += 1;
        let inner = self.inner.clone();
        ReserveGuard(Box::new(move || lock(&inner.space).reserve_users -= 1))
    }

    /// Sets the physical size of `data` to `to` through `resize`, counting
    /// the change: growth must fit under the cap first (else the quota
    /// error, and nothing is touched); on failure nothing is counted.
    fn resize_slot(
        &self,
        size: &mut Size,
        to: u64,
        resize: impl FnOnce() -> std::result::Result<(), SlotError>,
    ) -> std::result::Result<(), SlotError> {
        if to > size.physical {
            let growth = to - size.physical;
            self.space().take(growth)?;
            if let Err(e) = resize() {
                self.space().give_back(growth);
                return Err(e);
            }
        } else {
            resize()?;
            self.space().give_back(size.physical - to);
        }
        size.physical = to;
        Ok(())
    }

    fn state(&self) -> MutexGuard<'_, State<S>> {
        lock(&self.inner.state)
    }

    /// Adds a pooled file, reading its header: it either brings back the
    /// logical file it held or joins the pool as free. `label` names the
    /// physical file in messages. Fails only if the file cannot be read;
    /// an unreadable header means a free file.
    pub fn add(&self, file: S, label: &str) -> Result<()> {
        let mut head = [0u8; header::ENCODED_LEN];
        let mut got = 0;
        while got < head.len() {
            let n = file.read_at(got as u64, &mut head[got..]).map_err(|e| slot_error(label, "read header", e))?;
            if n == 0 {
                break;
            }
            got += n;
        }
        let size = file.size().map_err(|e| slot_error(label, "size", e))?;
        let header = Header::decode(&head[..got]).filter(|_| size >= HEADER_SIZE);
        let mut st = self.state();
        if st.closed {
            return Err(closed_error());
        }
        let generation = header.as_ref().map_or(0, |h| h.generation);
        st.next_generation = st.next_generation.max(generation + 1);
        let mut path = header.and_then(|h| h.path);
        let mut new_loses = false;
        if let Some(p) = &path {
            if let Some(&other) = st.by_path.get(p) {
                // A remove that did not reach storage, then a create of the
                // same path: the later header is the true one. The other file
                // is freed on storage too (docs/format.md): left naming the
                // path, it would bring the path back with its old bytes once
                // the winner is removed. Its free header is written first, so
                // that a failure leaves the pool as it was.
                if st.slots[other].generation > generation {
                    write_header(&file, None, generation).map_err(|e| slot_error(label, "free a stale header", e))?;
                    path = None;
                    new_loses = true;
                } else {
                    let data = st.slots[other].data.clone();
                    let other_generation = st.slots[other].generation;
                    write_header(&data.file, None, other_generation)
                        .map_err(|e| slot_error(&data.label, "free a stale header", e))?;
                    st.slots[other].path = None;
                    if st.slots[other].open == 0 {
                        self.shrink_to_header(&data);
                    }
                }
            }
        }
        let index = st.slots.len();
        if let Some(p) = &path {
            st.by_path.insert(p.clone(), index);
        }
        self.space().used += size;
        st.slots.push(Slot {
            data: Arc::new(SlotData {
                file,
                label: label.to_string(),
                size: Mutex::new(Size { logical: size.saturating_sub(HEADER_SIZE), physical: size }),
            }),
            path,
            generation,
            open: 0,
            detached: false,
        });
        if new_loses {
            let data = st.slots[index].data.clone();
            self.shrink_to_header(&data);
        }
        Ok(())
    }

    /// Pooled files free for a new logical file right now.
    pub fn free_count(&self) -> usize {
        self.state().slots.iter().filter(|s| s.is_free()).count()
    }

    /// Creates refused because no pooled file was free, so far. An engine
    /// error that follows an increase of this count was caused by it.
    pub fn exhausted_count(&self) -> u64 {
        self.state().exhausted
    }

    pub fn stats(&self) -> PoolStats {
        let st = self.state();
        let mut s = PoolStats { exhausted: st.exhausted, ..PoolStats::default() };
        for slot in st.slots.iter().filter(|s| !s.detached) {
            s.files += 1;
            match (&slot.path, slot.open) {
                (None, 0) => s.free += 1,
                (None, _) => s.removed_open += 1,
                (Some(_), _) => s.data_bytes += lock(&slot.data.size).logical,
            }
        }
        let space = self.space();
        s.bytes = space.used;
        s.max_bytes = space.max;
        s.reserve_bytes = space.reserve;
        s
    }

    /// The logical paths the pool holds (what the headers on storage name),
    /// sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self.state().by_path.keys().cloned().collect();
        silt_engine::sort::sort(&mut paths);
        paths
    }

    /// Closes up to `max` free pooled files and lets them go from the pool
    /// (the embedder then deletes them from storage, or finds them free at
    /// the next open: a free file holds nothing). Files never written past
    /// their header go first. Returns their labels.
    pub fn close_free(&self, max: usize) -> Vec<String> {
        let mut st = self.state();
        if st.closed {
            return Vec::new();
        }
        let mut order: Vec<usize> = (0..st.slots.len()).filter(|&i| st.slots[i].is_free()).collect();
        // Empty ones (no header yet) first, then the newest.
        silt_engine::sort::sort_by_key(&mut order, |&i| {
            (lock(&st.slots[i].data.size).physical >= HEADER_SIZE, std::cmp::Reverse(i))
        });
        order.truncate(max);
        let mut labels = Vec::with_capacity(order.len());
        for i in order {
            let slot = &mut st.slots[i];
            slot.detached = true;
            slot.data.file.close();
            let physical = lock(&slot.data.size).physical;
            labels.push(slot.data.label.clone());
            self.space().give_back(physical);
        }
        labels
    }

    /// Closes every pooled file. Every later call on the pool or on a file
    /// it handed out fails. Closing twice is fine.
    pub fn close(&self) {
        let mut st = self.state();
        st.closed = true;
        for slot in &st.slots {
            slot.data.file.close();
        }
    }

    /// Claims a free slot for `path`: empties it, then names it durably.
    /// A free file that already has its header's room costs no space, so
    /// it goes first.
    fn claim(&self, st: &mut State<S>, path: &str) -> Result<usize> {
        let free = |s: &Slot<S>| s.is_free();
        let sized = st.slots.iter().position(|s| free(s) && lock(&s.data.size).physical >= HEADER_SIZE);
        let Some(index) = sized.or_else(|| st.slots.iter().position(free)) else {
            st.exhausted += 1;
            return Err(Error::PoolExhausted {
                file: path.to_string(),
                message: format!(
                    "the OPFS file pool is exhausted: all {} pooled files are in use; \
                     the pool is topped up between calls (let the worker's event loop run), \
                     or open the database with a larger poolReserve",
                    st.slots.iter().filter(|s| !s.detached).count()
                ),
            });
        };
        let generation = st.next_generation;
        st.next_generation += 1;
        let data = st.slots[index].data.clone();
        // Truncate before naming: a crash in between leaves an empty free
        // file or an empty named one, never old bytes under a new name.
        let mut size = lock(&data.size);
        self.resize_slot(&mut size, HEADER_SIZE, || data.file.truncate(HEADER_SIZE))
            .map_err(|e| slot_error(path, "create", e))?;
        write_header(&data.file, Some(path), generation).map_err(|e| slot_error(path, "create", e))?;
        size.logical = 0;
        drop(size);
        let slot = &mut st.slots[index];
        slot.path = Some(path.to_string());
        slot.generation = generation;
        st.by_path.insert(path.to_string(), index);
        Ok(index)
    }

    fn file(&self, st: &mut State<S>, index: usize, path: &str) -> Arc<dyn File> {
        let slot = &mut st.slots[index];
        slot.open += 1;
        Arc::new(PoolFile { pool: self.clone(), index, data: slot.data.clone(), path: path.to_string() })
    }

    /// Called when a `PoolFile` is dropped.
    fn release(&self, index: usize) {
        let mut st = self.state();
        let closed = st.closed;
        let slot = &mut st.slots[index];
        slot.open -= 1;
        if slot.path.is_none() && slot.open == 0 && !closed {
            // The last handle of a removed file: give its space back now.
            // A failure only wastes space until the slot is claimed again.
            let data = slot.data.clone();
            self.shrink_to_header(&data);
        }
    }

    /// Gives back the space of a freed file; a failure only wastes space
    /// until the slot is claimed again.
    fn shrink_to_header(&self, data: &SlotData<S>) {
        let mut size = lock(&data.size);
        if size.physical > HEADER_SIZE {
            let _ = self.resize_slot(&mut size, HEADER_SIZE, || data.file.truncate(HEADER_SIZE));
        }
    }
}

fn write_header<S: SlotFile>(file: &S, path: Option<&str>, generation: u64) -> std::result::Result<(), SlotError> {
    let header = Header { path: path.map(str::to_string), generation };
    file.write_at(0, &header.encode())?;
    // Creates and removes are rare; making each durable at once keeps the
    // pool's view of storage exact without a separate directory sync.
    file.flush()
}

fn closed_error() -> Error {
    Error::Closed("the OPFS file pool was closed".into())
}

impl<S: SlotFile> Fs for Pool<S> {
    fn files_left(&self) -> Option<usize> {
        Some(self.free_count())
    }

    fn open(&self, path: &str, create: bool) -> Result<Arc<dyn File>> {
        let mut st = self.state();
        if st.closed {
            return Err(closed_error());
        }
        if let Some(&index) = st.by_path.get(path) {
            return Ok(self.file(&mut st, index, path));
        }
        if !create {
            return Err(Error::Io { file: path.to_string(), op: "open", message: "no such file".into() });
        }
        if path.is_empty() || path.len() > MAX_PATH_LEN {
            return Err(Error::InvalidArgument(format!(
                "a pooled file's path must be 1 to {MAX_PATH_LEN} bytes, got {}",
                path.len()
            )));
        }
        let index = self.claim(&mut st, path)?;
        Ok(self.file(&mut st, index, path))
    }

    fn exists(&self, path: &str) -> Result<bool> {
        let st = self.state();
        if st.closed {
            return Err(closed_error());
        }
        Ok(st.by_path.contains_key(path))
    }

    fn remove(&self, path: &str) -> Result<()> {
        let mut st = self.state();
        if st.closed {
            return Err(closed_error());
        }
        let Some(index) = st.by_path.remove(path) else {
            return Err(Error::Io { file: path.to_string(), op: "remove", message: "no such file".into() });
        };
        let generation = st.next_generation;
        st.next_generation += 1;
        let slot = &mut st.slots[index];
        slot.path = None;
        slot.generation = generation;
        let data = slot.data.clone();
        let open = slot.open;
        if let Err(e) = write_header(&data.file, None, generation) {
            // Storage still names the file: keep it, so the pool never hands
            // out a file whose header may come back after a crash.
            let slot = &mut st.slots[index];
            slot.path = Some(path.to_string());
            st.by_path.insert(path.to_string(), index);
            return Err(slot_error(path, "remove", e));
        }
        if open == 0 {
            self.shrink_to_header(&data);
        }
        Ok(())
    }

    fn list(&self, dir: &str) -> Result<Vec<String>> {
        let st = self.state();
        if st.closed {
            return Err(closed_error());
        }
        let dir = dir.trim_end_matches('/');
        Ok(st
            .by_path
            .keys()
            .filter_map(|p| {
                let (d, name) = p.rsplit_once('/').unwrap_or(("", p));
                (d == dir).then(|| name.to_string())
            })
            .collect())
    }

    fn create_dir_all(&self, dir: &str) -> Result<()> {
        let mut st = self.state();
        if st.closed {
            return Err(closed_error());
        }
        // Directories are path prefixes; nothing to store.
        st.dirs.insert(dir.trim_end_matches('/').to_string());
        Ok(())
    }

    /// Exclusive within this pool. Across tabs and workers, the embedder
    /// holds a Web Lock on the whole pool before opening any of its files
    /// (and OPFS lets one access handle at a time open each file).
    fn lock(&self, path: &str) -> Result<Box<dyn FsLock>> {
        let mut held = lock(&self.inner.locks);
        if !held.insert(path.to_string()) {
            return Err(Error::Busy(format!("lock {path} is held")));
        }
        Ok(Box::new(PoolLock { inner: self.inner.clone(), path: path.to_string() }))
    }
}

struct PoolLock<S> {
    inner: Arc<Inner<S>>,
    path: String,
}

impl<S: SlotFile> FsLock for PoolLock<S> {}

impl<S> Drop for PoolLock<S> {
    fn drop(&mut self) {
        lock(&self.inner.locks).remove(&self.path);
    }
}

/// A logical file: a pooled file seen past its header.
struct PoolFile<S: SlotFile> {
    pool: Pool<S>,
    index: usize,
    data: Arc<SlotData<S>>,
    path: String,
}

impl<S: SlotFile> PoolFile<S> {
    fn check_open(&self) -> Result<()> {
        if self.pool.state().closed {
            return Err(closed_error());
        }
        Ok(())
    }

    fn write(&self, offset: Option<u64>, bytes: &[u8]) -> Result<()> {
        self.check_open()?;
        let mut size = lock(&self.data.size);
        let offset = offset.unwrap_or(size.logical);
        let end = HEADER_SIZE + offset + bytes.len() as u64;
        let file = &self.data.file;
        let write = || file.write_at(HEADER_SIZE + offset, bytes);
        let written = if end > size.physical { self.pool.resize_slot(&mut size, end, write) } else { write() };
        written.map_err(|e| slot_error(&self.path, "write", e))?;
        size.logical = size.logical.max(offset + bytes.len() as u64);
        Ok(())
    }
}

impl<S: SlotFile> File for PoolFile<S> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.check_open()?;
        let len = lock(&self.data.size).logical;
        if offset >= len {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(len - offset).unwrap_or(usize::MAX));
        let mut done = 0;
        while done < want {
            let n = self
                .data
                .file
                .read_at(HEADER_SIZE + offset + done as u64, &mut buf[done..want])
                .map_err(|e| slot_error(&self.path, "read", e))?;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.write(Some(offset), data)
    }

    fn append(&self, data: &[u8]) -> Result<()> {
        self.write(None, data)
    }

    fn len(&self) -> Result<u64> {
        self.check_open()?;
        Ok(lock(&self.data.size).logical)
    }

    fn truncate(&self, len: u64) -> Result<()> {
        self.check_open()?;
        let mut size = lock(&self.data.size);
        let file = &self.data.file;
        self.pool
            .resize_slot(&mut size, HEADER_SIZE + len, || file.truncate(HEADER_SIZE + len))
            .map_err(|e| slot_error(&self.path, "truncate", e))?;
        size.logical = len;
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.check_open()?;
        self.data.file.flush().map_err(|e| slot_error(&self.path, "sync", e))
    }
}

impl<S: SlotFile> Drop for PoolFile<S> {
    fn drop(&mut self) {
        self.pool.release(self.index);
    }
}

impl<S: SlotFile> std::fmt::Debug for PoolFile<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PoolFile({} in {})", self.path, self.data.label)
    }
}

#[cfg(test)]
mod tests;
