//! The file layer: a small synchronous trait the engine does all its I/O
//! through, shaped like LevelDB's `Env` and redb's `StorageBackend`.
//!
//! The engine never calls `std::fs`: natively it runs on [`StdFs`], in tests
//! on [`MemFs`] and [`FaultFs`], in the browser on the OPFS pool of
//! `silt-wasm`. No rename is required anywhere: OPFS has no atomic rename,
//! so the manifest switch relies on checksummed, numbered records instead.
//!
//! Paths are `/`-separated strings; a database lives in one directory and
//! only ever names files directly inside it.

#[cfg(any(test, feature = "testkit"))]
mod fault;
mod mem;
#[cfg(not(target_arch = "wasm32"))]
mod std_fs;

#[cfg(any(test, feature = "testkit"))]
pub mod contract;

use std::sync::Arc;

#[cfg(any(test, feature = "testkit"))]
pub use fault::{CrashMode, FaultFs, FsOp};
pub use mem::MemFs;
#[cfg(not(target_arch = "wasm32"))]
pub use std_fs::StdFs;

use crate::error::{Error, Result};

/// A file system the engine can run on.
///
/// REQUIRES: implementations are safe to call from several threads (the
/// native engine may pump background work from a second thread).
pub trait Fs: Send + Sync {
    /// Opens the file at `path`. With `create`, a missing file is created
    /// empty; without it, a missing file is an `Io` error.
    fn open(&self, path: &str, create: bool) -> Result<Arc<dyn File>>;

    /// Whether a file exists at `path`.
    fn exists(&self, path: &str) -> Result<bool>;

    /// Removes the file at `path`. Handles already open stay usable until
    /// dropped (POSIX semantics); removing a missing file is an error.
    fn remove(&self, path: &str) -> Result<()>;

    /// Names (not paths) of the files directly inside `dir`, in any order.
    fn list(&self, dir: &str) -> Result<Vec<String>>;

    /// Creates `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &str) -> Result<()>;

    /// Makes the creation and removal of files in `dir` durable. A no-op
    /// where the file system has no such notion.
    fn sync_dir(&self, _dir: &str) -> Result<()> {
        Ok(())
    }

    /// How many more files `open(_, true)` can create right now, where the
    /// supply is fixed for the moment (a pool of pre-opened files that its
    /// embedder grows only between calls); `None` where files are not so
    /// counted. Compactions read it to leave files for flushes and logs.
    fn files_left(&self) -> Option<usize> {
        None
    }

    /// Takes an exclusive lock named by `path`, held until the returned guard
    /// is dropped. A lock already held (by this or another process) gives
    /// `Error::Busy` at once; it never waits.
    fn lock(&self, path: &str) -> Result<Box<dyn FsLock>>;
}

/// An open file. Reads and writes are positional; `append` writes at the end.
pub trait File: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read
    /// (fewer only at the end of the file).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize>;

    /// Writes all of `data` at `offset`, extending the file if needed.
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()>;

    /// Writes all of `data` at the current end of the file.
    fn append(&self, data: &[u8]) -> Result<()>;

    /// The current length in bytes.
    fn len(&self) -> Result<u64>;

    /// Whether the file is empty.
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Cuts or extends (with zeros) the file to `len` bytes.
    fn truncate(&self, len: u64) -> Result<()>;

    /// Makes every byte written so far durable. Data not synced may be lost
    /// (or partly lost) by a crash.
    fn sync(&self) -> Result<()>;
}

/// A held lock; dropping it releases the lock.
pub trait FsLock: Send + Sync {}

/// Reads exactly `buf.len()` bytes at `offset`, or reports a truncated file
/// as `Corruption` naming `path`.
pub fn read_exact_at(file: &dyn File, path: &str, offset: u64, buf: &mut [u8]) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = file.read_at(offset + done as u64, &mut buf[done..])?;
        if n == 0 {
            return Err(Error::corruption(
                path,
                offset + done as u64,
                format!("file ends after {} of {} bytes requested", done, buf.len()),
            ));
        }
        done += n;
    }
    Ok(())
}

/// Reads a whole file into memory.
pub fn read_all(file: &dyn File, path: &str) -> Result<Vec<u8>> {
    let len = file.len()?;
    let len = usize::try_from(len).map_err(|_| Error::corruption(path, 0, "file too large"))?;
    let mut buf = vec![0u8; len];
    read_exact_at(file, path, 0, &mut buf)?;
    Ok(buf)
}

/// Joins a directory and a file name.
pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Splits a path into (directory, file name).
pub(crate) fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}
