//! A fault-injecting wrapper around any [`Fs`], after LevelDB's
//! `fault_injection_test` and redb's crash tests.
//!
//! It keeps, beside the live files of the inner file system, the *durable
//! image* of each file: its bytes as of its last `sync`. [`FaultFs::crash`]
//! replaces every live file by what a power cut would leave: the durable
//! image, optionally followed by a torn prefix of the unsynced bytes. A file
//! never synced disappears. Removal is treated as durable at once.
//!
//! [`FaultFs::fail_after`] arms a countdown: after that many mutating calls
//! (create, write, append, truncate, sync, remove) every mutating call fails
//! with `Error::Io`, as a dying disk or a killed worker would look to the
//! engine. Handles opened before a crash fail every call afterwards.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{read_all, File, Fs, FsLock};
use crate::error::{Error, Result};

/// What a crash leaves of the bytes written since a file's last sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// Every unsynced byte is lost.
    DropUnsynced,
    /// A prefix of the unsynced bytes of each file survives (chosen from
    /// `seed`), and the last surviving bytes may be garbage, as a torn write.
    TearUnsynced { seed: u64 },
}

#[derive(Default)]
struct State {
    /// Durable image per file the wrapper has seen; `None` = never synced.
    durable: HashMap<String, Option<Vec<u8>>>,
    /// Mutating calls left before injected failures start.
    countdown: Option<u64>,
    /// Number of mutating calls made so far.
    ops: u64,
    /// Bytes allowed in all files together; past it writes fail with QuotaExceeded.
    quota: Option<u64>,
    /// Creating new files fails (as an exhausted OPFS pool or a full disk
    /// would), while writes to existing files go on.
    fail_creates: bool,
    /// Every mutating call, in order, while tracing is on.
    trace: Option<Vec<FsOp>>,
    /// `sync` of files whose name contains this fails with `QuotaExceeded`
    /// (after the bytes were written), as fsync on some full file systems does.
    fail_syncs: Option<String>,
    /// The most files the directory may hold, as a pool of pre-opened files
    /// that nothing grows (see [`FaultFs::set_file_cap`]).
    file_cap: Option<(String, usize)>,
}

/// One mutating call, as recorded by [`FaultFs::trace`]: call number `n`
/// (what [`FaultFs::fail_after`]`(Some(n))` makes fail) of kind `op`
/// (create, write, append, truncate, sync, remove) on `path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsOp {
    pub n: u64,
    pub op: &'static str,
    pub path: String,
}

/// A file system wrapper that can simulate crashes and failing I/O.
#[derive(Clone)]
pub struct FaultFs {
    inner: Arc<dyn Fs>,
    state: Arc<Mutex<State>>,
    epoch: Arc<AtomicU64>,
}

impl FaultFs {
    /// Wraps `inner`. Files already present count as durable.
    pub fn new(inner: Arc<dyn Fs>) -> Self {
        FaultFs { inner, state: Arc::default(), epoch: Arc::new(AtomicU64::new(0)) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// After `n` more mutating calls succeed, every further one fails.
    /// `None` disarms.
    pub fn fail_after(&self, n: Option<u64>) {
        self.state().countdown = n;
    }

    /// Makes the creation of new files fail (`QuotaExceeded`) while set.
    pub fn fail_creates(&self, fail: bool) {
        self.state().fail_creates = fail;
    }

    /// Mutating calls made so far (to enumerate crash points).
    pub fn mutating_ops(&self) -> u64 {
        self.state().ops
    }

    /// Makes `sync` of every file whose path contains `name_part` fail with
    /// `QuotaExceeded` (`None`: none); the bytes written stay in the file.
    pub fn fail_syncs(&self, name_part: Option<&str>) {
        self.state().fail_syncs = name_part.map(str::to_string);
    }

    /// Caps the files directory `dir` may hold at `cap` (`None` lifts the
    /// cap), as an OPFS pool that nothing grows between calls: creating one
    /// more fails with `PoolExhausted` (writing nothing, no mutating call),
    /// and [`Fs::files_left`] says how many may still be made.
    pub fn set_file_cap(&self, cap: Option<(&str, usize)>) {
        self.state().file_cap = cap.map(|(dir, n)| (dir.to_string(), n));
    }

    /// Starts recording every mutating call (see [`FaultFs::trace`]).
    pub fn start_trace(&self) {
        self.state().trace = Some(Vec::new());
    }

    /// The mutating calls made since [`FaultFs::start_trace`], failed ones
    /// included, in order.
    pub fn trace(&self) -> Vec<FsOp> {
        self.state().trace.clone().unwrap_or_default()
    }

    /// Caps the bytes all files may hold together; `None` lifts the cap. An
    /// append past the cap writes what fits and then fails with
    /// `QuotaExceeded`, as a full disk does.
    pub fn set_quota(&self, bytes: Option<u64>) {
        self.state().quota = bytes;
    }

    /// Simulates a power cut: every file goes back to its durable image (see
    /// [`CrashMode`]); handles opened before fail from now on; the countdown
    /// is disarmed.
    pub fn crash(&self, mode: CrashMode) -> Result<()> {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        let mut st = self.state();
        st.countdown = None;
        let mut rng = mode_rng(mode);
        let mut paths: Vec<_> = st.durable.keys().cloned().collect();
        paths.sort();
        for path in paths {
            let durable = st.durable.get(&path).cloned().flatten();
            if !self.inner.exists(&path)? {
                st.durable.remove(&path);
                continue;
            }
            let file = self.inner.open(&path, false)?;
            let live = read_all(&*file, &path)?;
            let base = durable.clone().unwrap_or_default();
            let mut keep = base.clone();
            if let Some(rng) = rng.as_mut() {
                // Only an append-shaped tail can be torn; an overwrite of
                // synced bytes is either durable or not.
                if live.len() > base.len() && live.starts_with(&base) {
                    let tail = &live[base.len()..];
                    let n = (rng.next() % (tail.len() as u64 + 1)) as usize;
                    keep.extend_from_slice(&tail[..n]);
                    if n > 0 && rng.next() % 4 == 0 {
                        let garbage = (n as u64).min(1 + rng.next() % 8) as usize;
                        let len = keep.len();
                        for b in &mut keep[len - garbage..] {
                            *b = rng.next() as u8;
                        }
                    }
                }
            }
            if durable.is_none() && keep.is_empty() {
                drop(file);
                self.inner.remove(&path)?;
                st.durable.remove(&path);
                continue;
            }
            file.truncate(0)?;
            file.write_at(0, &keep)?;
            file.sync()?;
            // What survived a crash is durable from now on.
            st.durable.insert(path, Some(keep));
        }
        Ok(())
    }

    /// Counts a mutating call and fails it if the countdown has run out.
    fn tick(&self, path: &str, op: &'static str) -> Result<()> {
        let mut st = self.state();
        let n = st.ops;
        st.ops += 1;
        if let Some(t) = st.trace.as_mut() {
            t.push(FsOp { n, op, path: path.to_string() });
        }
        match st.countdown {
            Some(0) => Err(Error::io(path, op, "injected fault")),
            Some(n) => {
                st.countdown = Some(n - 1);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Bytes left under the quota (`u64::MAX` without one).
    fn quota_room(&self) -> u64 {
        let Some(q) = self.state().quota else { return u64::MAX };
        let used: u64 = self
            .all_paths()
            .unwrap_or_default()
            .iter()
            .filter_map(|name| self.inner.open(name, false).ok()?.len().ok())
            .sum();
        q.saturating_sub(used)
    }

    fn check_quota(&self, path: &str, growth: u64) -> Result<()> {
        let quota = self.state().quota;
        if let Some(q) = quota {
            let mut used = 0;
            for name in self.all_paths()? {
                if let Ok(f) = self.inner.open(&name, false) {
                    used += f.len()?;
                }
            }
            if used + growth > q {
                return Err(Error::QuotaExceeded {
                    file: path.to_string(),
                    message: format!("{used} + {growth} bytes exceed the quota of {q}"),
                });
            }
        }
        Ok(())
    }

    fn all_paths(&self) -> Result<Vec<String>> {
        Ok(self.state().durable.keys().cloned().collect())
    }
}

/// A small deterministic generator (splitmix64) so crashes replay exactly.
struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn mode_rng(mode: CrashMode) -> Option<SplitMix> {
    match mode {
        CrashMode::DropUnsynced => None,
        CrashMode::TearUnsynced { seed } => Some(SplitMix(seed)),
    }
}

impl Fs for FaultFs {
    fn open(&self, path: &str, create: bool) -> Result<Arc<dyn File>> {
        let existed = self.inner.exists(path)?;
        if !existed && create {
            if self.state().fail_creates {
                return Err(Error::QuotaExceeded {
                    file: path.to_string(),
                    message: "creating files is failing (injected)".into(),
                });
            }
            let cap = self.state().file_cap.clone();
            if let Some((dir, cap)) = cap.filter(|(dir, _)| super::split(path).0 == dir.as_str()) {
                if self.inner.list(&dir)?.len() >= cap {
                    return Err(Error::PoolExhausted {
                        file: path.to_string(),
                        message: format!("all {cap} files in use"),
                    });
                }
            }
            self.tick(path, "create")?;
        }
        let file = self.inner.open(path, create)?;
        {
            let mut st = self.state();
            if !st.durable.contains_key(path) {
                // A file the wrapper has not seen: new ones are not durable
                // until synced; ones that were there before count as durable.
                let image = if existed { Some(read_all(&*file, path)?) } else { None };
                st.durable.insert(path.to_string(), image);
            }
        }
        Ok(Arc::new(FaultFile {
            fs: self.clone(),
            inner: file,
            path: path.to_string(),
            epoch: self.epoch.load(Ordering::SeqCst),
        }))
    }

    fn exists(&self, path: &str) -> Result<bool> {
        self.inner.exists(path)
    }

    fn remove(&self, path: &str) -> Result<()> {
        self.tick(path, "remove")?;
        self.inner.remove(path)?;
        self.state().durable.remove(path);
        Ok(())
    }

    fn list(&self, dir: &str) -> Result<Vec<String>> {
        self.inner.list(dir)
    }

    fn create_dir_all(&self, dir: &str) -> Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &str) -> Result<()> {
        self.inner.sync_dir(dir)
    }

    fn files_left(&self) -> Option<usize> {
        let cap = self.state().file_cap.clone();
        match cap {
            Some((dir, cap)) => Some(cap.saturating_sub(self.inner.list(&dir).ok()?.len())),
            None => self.inner.files_left(),
        }
    }

    fn lock(&self, path: &str) -> Result<Box<dyn FsLock>> {
        self.inner.lock(path)
    }
}

struct FaultFile {
    fs: FaultFs,
    inner: Arc<dyn File>,
    path: String,
    epoch: u64,
}

impl FaultFile {
    fn alive(&self, op: &'static str) -> Result<()> {
        if self.fs.epoch.load(Ordering::SeqCst) != self.epoch {
            return Err(Error::io(&self.path, op, "handle opened before a simulated crash"));
        }
        Ok(())
    }
}

impl File for FaultFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.alive("read")?;
        self.inner.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.alive("write")?;
        let growth = (offset + data.len() as u64).saturating_sub(self.inner.len()?);
        self.fs.check_quota(&self.path, growth)?;
        self.fs.tick(&self.path, "write")?;
        self.inner.write_at(offset, data)
    }

    fn append(&self, data: &[u8]) -> Result<()> {
        self.alive("append")?;
        if let Err(e) = self.fs.check_quota(&self.path, data.len() as u64) {
            // As a full disk does: what fits is written, then the call fails.
            let room = self.fs.quota_room();
            if room > 0 {
                self.inner.append(&data[..(room as usize).min(data.len())])?;
            }
            return Err(e);
        }
        self.fs.tick(&self.path, "append")?;
        self.inner.append(data)
    }

    fn len(&self) -> Result<u64> {
        self.alive("len")?;
        self.inner.len()
    }

    fn truncate(&self, len: u64) -> Result<()> {
        self.alive("truncate")?;
        self.fs.tick(&self.path, "truncate")?;
        self.inner.truncate(len)
    }

    fn sync(&self) -> Result<()> {
        self.alive("sync")?;
        self.fs.tick(&self.path, "sync")?;
        if self.fs.state().fail_syncs.as_ref().is_some_and(|p| self.path.contains(p.as_str())) {
            return Err(Error::QuotaExceeded {
                file: self.path.clone(),
                message: "sync failed: no space (injected)".into(),
            });
        }
        self.inner.sync()?;
        let image = read_all(&*self.inner, &self.path)?;
        let mut st = self.fs.state();
        // A file removed meanwhile stays removed.
        if st.durable.contains_key(&self.path) {
            st.durable.insert(self.path.clone(), Some(image));
        }
        Ok(())
    }
}
