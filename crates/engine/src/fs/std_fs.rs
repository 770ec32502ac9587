//! The native file system (`std::fs`). The only place the engine touches
//! `std::fs`; not built for wasm32.

use std::fs::{self, OpenOptions, TryLockError};
use std::io::ErrorKind;
use std::sync::{Arc, Mutex};

use super::{File, Fs, FsLock};
use crate::error::{Error, Result};

/// Files on the host's file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFs;

impl StdFs {
    pub fn new() -> Self {
        StdFs
    }
}

fn io_err(path: &str, op: &'static str, e: std::io::Error) -> Error {
    // ENOSPC / EDQUOT surface as StorageFull / QuotaExceeded.
    match e.kind() {
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => {
            Error::QuotaExceeded { file: path.to_string(), message: e.to_string() }
        }
        _ => Error::io(path, op, e),
    }
}

impl Fs for StdFs {
    fn open(&self, path: &str, create: bool) -> Result<Arc<dyn File>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)
            .map_err(|e| io_err(path, "open", e))?;
        let len = file.metadata().map_err(|e| io_err(path, "stat", e))?.len();
        Ok(Arc::new(StdFile { file, path: path.to_string(), len: Mutex::new(len) }))
    }

    fn exists(&self, path: &str) -> Result<bool> {
        match fs::metadata(path) {
            Ok(m) => Ok(m.is_file()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io_err(path, "stat", e)),
        }
    }

    fn remove(&self, path: &str) -> Result<()> {
        fs::remove_file(path).map_err(|e| io_err(path, "remove", e))
    }

    fn list(&self, dir: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| io_err(dir, "list", e))? {
            let entry = entry.map_err(|e| io_err(dir, "list", e))?;
            let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
            if let (true, Some(name)) = (is_file, entry.file_name().to_str()) {
                out.push(name.to_string());
            }
        }
        Ok(out)
    }

    fn create_dir_all(&self, dir: &str) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| io_err(dir, "mkdir", e))
    }

    fn sync_dir(&self, dir: &str) -> Result<()> {
        #[cfg(unix)]
        {
            let d = fs::File::open(if dir.is_empty() { "." } else { dir }).map_err(|e| io_err(dir, "open dir", e))?;
            d.sync_all().map_err(|e| io_err(dir, "sync dir", e))?;
        }
        #[cfg(not(unix))]
        let _ = dir;
        Ok(())
    }

    fn lock(&self, path: &str) -> Result<Box<dyn FsLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io_err(path, "open lock", e))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(StdLock { _file: file })),
            Err(TryLockError::WouldBlock) => Err(Error::Busy(format!("{path} is locked by another process"))),
            Err(TryLockError::Error(e)) => Err(io_err(path, "lock", e)),
        }
    }
}

struct StdLock {
    _file: fs::File,
}

impl FsLock for StdLock {}

struct StdFile {
    file: fs::File,
    path: String,
    /// Logical length; `append` writes here. Guarded so appends from one
    /// handle never interleave.
    len: Mutex<u64>,
}

#[cfg(unix)]
fn pread(f: &fs::File, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, off)
}
#[cfg(unix)]
fn pwrite_all(f: &fs::File, buf: &[u8], off: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, buf, off)
}
#[cfg(windows)]
fn pread(f: &fs::File, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(f, buf, off)
}
#[cfg(windows)]
fn pwrite_all(f: &fs::File, mut buf: &[u8], mut off: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(f, buf, off)?;
        buf = &buf[n..];
        off += n as u64;
    }
    Ok(())
}

impl File for StdFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match pread(&self.file, &mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err(&self.path, "read", e)),
            }
        }
        Ok(done)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let mut len = self.len.lock().unwrap_or_else(|p| p.into_inner());
        pwrite_all(&self.file, data, offset).map_err(|e| io_err(&self.path, "write", e))?;
        *len = (*len).max(offset + data.len() as u64);
        Ok(())
    }

    fn append(&self, data: &[u8]) -> Result<()> {
        let mut len = self.len.lock().unwrap_or_else(|p| p.into_inner());
        pwrite_all(&self.file, data, *len).map_err(|e| io_err(&self.path, "append", e))?;
        *len += data.len() as u64;
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        Ok(*self.len.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn truncate(&self, new_len: u64) -> Result<()> {
        let mut len = self.len.lock().unwrap_or_else(|p| p.into_inner());
        self.file.set_len(new_len).map_err(|e| io_err(&self.path, "truncate", e))?;
        *len = new_len;
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| io_err(&self.path, "sync", e))
    }
}
