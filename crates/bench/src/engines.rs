//! The engines a benchmark can run on, behind one small interface.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use silt_engine::fs::{Fs, MemFs, StdFs};
use silt_engine::{Clock, Compression, Db, Options, ReadOptions, WriteBatch, WriteOptions};

/// Engine options shared by every engine (db_bench's flags).
#[derive(Clone, Debug)]
pub struct EngineOptions {
    pub path: String,
    pub fresh: bool,
    pub compression_lz4: bool,
    pub bloom_bits: u32,
    pub cache_size: usize,
    pub write_buffer_size: usize,
    pub target_file_size_base: u64,
    pub max_bytes_for_level_base: u64,
    pub block_size: usize,
    pub disable_auto_compactions: bool,
    pub sync: bool,
}

pub type Res<T> = Result<T, String>;

/// What a benchmark needs of an engine.
pub trait BenchDb: Send + Sync {
    fn name(&self) -> &'static str;
    fn write(&self, batch: &[(Vec<u8>, Vec<u8>)]) -> Res<()>;
    fn delete_range(&self, start: &[u8], end: &[u8]) -> Res<()>;
    /// Looks a key up; returns the value's length if found.
    fn get(&self, key: &[u8]) -> Res<Option<usize>>;
    /// Looks up a batch; returns how many were found and their bytes.
    fn multi_get(&self, keys: &[Vec<u8>], batched: bool) -> Res<(usize, usize)>;
    /// Seeks to `key` and reads `nexts` more entries; returns entries read
    /// and their bytes.
    fn seek(&self, key: &[u8], nexts: usize) -> Res<(usize, usize)>;
    /// Reads every entry in order, up to `limit`; returns (entries, bytes).
    fn scan(&self, limit: u64) -> Res<(u64, u64)>;
    /// Waits until flushes and compactions are done.
    fn settle(&self) -> Res<()>;
    /// Statistics in RocksDB's text form.
    fn statistics(&self) -> String;
    /// A one-line shape summary (levels, files).
    fn shape(&self) -> String;
}

struct StdClock(Instant);

impl Clock for StdClock {
    fn now_micros(&self) -> u64 {
        self.0.elapsed().as_micros() as u64
    }
}

/// Silt, with a thread pumping its background work, as a native embedder
/// would.
pub struct Silt {
    db: Arc<Db>,
    stop: Arc<AtomicBool>,
    pump: Option<JoinHandle<()>>,
    sync: bool,
}

impl Silt {
    pub fn open(o: &EngineOptions) -> Res<Silt> {
        let (fs, path): (Arc<dyn Fs>, String) = match o.path.strip_prefix("mem:") {
            Some(p) => (Arc::new(MemFs::new()), p.to_string()),
            None => (Arc::new(StdFs), o.path.clone()),
        };
        if o.fresh {
            for name in fs.list(&path).unwrap_or_default() {
                let _ = fs.remove(&format!("{path}/{name}"));
            }
        }
        let options = Options {
            write_buffer_size: o.write_buffer_size,
            block_size: o.block_size,
            compression: if o.compression_lz4 { Compression::Lz4 } else { Compression::None },
            bloom_bits_per_key: o.bloom_bits,
            block_cache_capacity: o.cache_size,
            target_file_size_base: o.target_file_size_base,
            max_bytes_for_level_base: o.max_bytes_for_level_base,
            disable_auto_compactions: o.disable_auto_compactions,
            clock: Some(Arc::new(StdClock(Instant::now()))),
            ..Options::default()
        };
        let db = Arc::new(Db::open(fs, &path, options).map_err(|e| e.to_string())?);
        let stop = Arc::new(AtomicBool::new(false));
        let pump = {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match db.do_background_work(64) {
                        Ok(p) if p.work_left => {}
                        Ok(_) => std::thread::sleep(Duration::from_millis(1)),
                        Err(_) => return,
                    }
                }
            })
        };
        Ok(Silt { db, stop, pump: Some(pump), sync: o.sync })
    }
}

impl Drop for Silt {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(p) = self.pump.take() {
            let _ = p.join();
        }
    }
}

fn err(e: silt_engine::Error) -> String {
    e.to_string()
}

impl BenchDb for Silt {
    fn name(&self) -> &'static str {
        "silt"
    }

    fn write(&self, batch: &[(Vec<u8>, Vec<u8>)]) -> Res<()> {
        let mut b = WriteBatch::new();
        for (k, v) in batch {
            b.put(k, v);
        }
        self.db.write(&WriteOptions { sync: self.sync }, b).map_err(err)
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Res<()> {
        self.db.delete_range(&WriteOptions { sync: self.sync }, start, end).map_err(err)
    }

    fn get(&self, key: &[u8]) -> Res<Option<usize>> {
        Ok(self.db.get_bytes(&ReadOptions::default(), key).map_err(err)?.map(|v| v.len()))
    }

    fn multi_get(&self, keys: &[Vec<u8>], batched: bool) -> Res<(usize, usize)> {
        if batched {
            return Err("silt: batched MultiGet arrives with the MultiGet issue".into());
        }
        let (mut found, mut bytes) = (0, 0);
        for k in keys {
            if let Some(n) = self.get(k)? {
                found += 1;
                bytes += n;
            }
        }
        Ok((found, bytes))
    }

    fn seek(&self, key: &[u8], nexts: usize) -> Res<(usize, usize)> {
        let mut it = self.db.iter(&ReadOptions::default()).map_err(err)?;
        it.seek(key);
        let (mut n, mut bytes) = (0, 0);
        while it.valid() && n <= nexts {
            bytes += it.key().len() + it.value().len();
            n += 1;
            it.next();
        }
        it.status().map_err(err)?;
        Ok((n, bytes))
    }

    fn scan(&self, limit: u64) -> Res<(u64, u64)> {
        let mut it = self.db.iter(&ReadOptions::default()).map_err(err)?;
        it.seek_to_first();
        let (mut n, mut bytes) = (0u64, 0u64);
        while it.valid() && n < limit {
            bytes += (it.key().len() + it.value().len()) as u64;
            n += 1;
            it.next();
        }
        it.status().map_err(err)?;
        Ok((n, bytes))
    }

    fn settle(&self) -> Res<()> {
        while self.db.do_background_work(64).map_err(err)?.work_left {}
        Ok(())
    }

    fn statistics(&self) -> String {
        self.db.statistics().to_string()
    }

    fn shape(&self) -> String {
        let p = self.db.properties();
        format!("files per level {:?}, bytes per level {:?}", p.files_per_level, p.bytes_per_level)
    }
}
