//! An in-memory file system for tests and for databases that need no
//! persistence.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{split, File, Fs, FsLock};
use crate::error::{Error, Result};

type Data = Arc<Mutex<Vec<u8>>>;

#[derive(Default)]
struct State {
    files: HashMap<String, Data>,
    dirs: HashSet<String>,
}

/// A file system held entirely in memory. Cloning gives another handle on
/// the same files.
#[derive(Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
    locks: Arc<Mutex<HashSet<String>>>,
}

impl MemFs {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Total bytes held by all files (for tests and statistics).
    pub fn total_bytes(&self) -> u64 {
        let st = self.state();
        st.files.values().map(|d| lock(d).len() as u64).sum()
    }
}

fn lock(d: &Data) -> MutexGuard<'_, Vec<u8>> {
    d.lock().unwrap_or_else(|p| p.into_inner())
}

impl Fs for MemFs {
    fn open(&self, path: &str, create: bool) -> Result<Arc<dyn File>> {
        let mut st = self.state();
        let data = match st.files.get(path) {
            Some(d) => d.clone(),
            None if create => {
                let d: Data = Arc::default();
                st.files.insert(path.to_string(), d.clone());
                d
            }
            None => return Err(Error::io(path, "open", "no such file")),
        };
        Ok(Arc::new(MemFile { data }))
    }

    fn exists(&self, path: &str) -> Result<bool> {
        Ok(self.state().files.contains_key(path))
    }

    fn remove(&self, path: &str) -> Result<()> {
        match self.state().files.remove(path) {
            Some(_) => Ok(()),
            None => Err(Error::io(path, "remove", "no such file")),
        }
    }

    fn list(&self, dir: &str) -> Result<Vec<String>> {
        let dir = dir.trim_end_matches('/');
        let st = self.state();
        Ok(st
            .files
            .keys()
            .filter_map(|p| {
                let (d, name) = split(p);
                (d == dir).then(|| name.to_string())
            })
            .collect())
    }

    fn create_dir_all(&self, dir: &str) -> Result<()> {
        self.state().dirs.insert(dir.to_string());
        Ok(())
    }

    fn lock(&self, path: &str) -> Result<Box<dyn FsLock>> {
        let mut held = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        if !held.insert(path.to_string()) {
            return Err(Error::Busy(format!("lock {path} is held")));
        }
        Ok(Box::new(MemLock { locks: self.locks.clone(), path: path.to_string() }))
    }
}

struct MemLock {
    locks: Arc<Mutex<HashSet<String>>>,
    path: String,
}

impl FsLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.locks.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.path);
    }
}

struct MemFile {
    data: Data,
}

impl File for MemFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let d = lock(&self.data);
        let len = d.len() as u64;
        if offset >= len {
            return Ok(0);
        }
        let start = offset as usize;
        let n = buf.len().min(d.len() - start);
        buf[..n].copy_from_slice(&d[start..start + n]);
        Ok(n)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let mut d = lock(&self.data);
        let start = offset as usize;
        let end = start + data.len();
        if d.len() < end {
            d.resize(end, 0);
        }
        d[start..end].copy_from_slice(data);
        Ok(())
    }

    fn append(&self, data: &[u8]) -> Result<()> {
        lock(&self.data).extend_from_slice(data);
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        Ok(lock(&self.data).len() as u64)
    }

    fn truncate(&self, len: u64) -> Result<()> {
        lock(&self.data).resize(len as usize, 0);
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }
}
