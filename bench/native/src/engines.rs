//! The engines a benchmark can run on, behind one small interface.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use silt_engine::fs::{Fs, MemFs, StdFs};
use silt_engine::{Clock, Compression, Db, Options, ReadOptions, Recovery, WriteBatch, WriteOptions};

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
    /// 0: the engine's default.
    pub block_restart_interval: usize,
    /// None: the engine's default.
    pub data_block_hash_index: Option<bool>,
    pub disable_auto_compactions: bool,
    /// Silt's read-triggered compaction (RocksDB has none by default).
    pub read_triggered_compaction: bool,
    /// Silt's row cache, bytes (0: none).
    pub row_cache_size: usize,
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
    /// From now on iterators read at one snapshot taken now (`explicit`),
    /// refreshing their version while keeping it if `auto_refresh`.
    fn use_snapshot(&self, explicit: bool, auto_refresh: bool) -> Res<()>;
    /// Reads every entry in order, up to `limit`; returns (entries, bytes).
    fn scan(&self, limit: u64) -> Res<(u64, u64)>;
    /// Waits until flushes and compactions are done.
    fn settle(&self) -> Res<()>;
    /// Flushes and compacts the whole key range (db_bench's `compact`).
    fn compact(&self) -> Res<()>;
    /// Silt only: what a long-running iterator pins after a flush and a full
    /// compaction, without and with auto refresh.
    fn iterator_pinning(&self, _num: u64, _key_size: usize, _value_size: usize) -> Res<Pinning> {
        Err(format!("iteratorpinning is a Silt benchmark, not available for {}", self.name()))
    }
    /// Silt only: `entries` added as new table files in one step
    /// (`Db::ingest`), `sorted` or not.
    fn ingest(&self, _entries: &[(Vec<u8>, Vec<u8>)], _sorted: bool) -> Res<()> {
        Err(format!("ingest is measured for Silt only, not for {}", self.name()))
    }
    /// Statistics in RocksDB's text form.
    fn statistics(&self) -> String;
    /// The counters of `statistics()`, parsed (`NAME COUNT : N` lines).
    fn tickers(&self) -> Vec<(String, u64)> {
        self.statistics()
            .lines()
            .filter_map(|l| {
                let (name, count) = l.split_once(" COUNT : ")?;
                Some((name.trim().to_string(), count.trim().parse().ok()?))
            })
            .collect()
    }
    /// A one-line shape summary (levels, files).
    fn shape(&self) -> String;
}

/// Bytes pinned by one long-running iterator: memtables already flushed,
/// and table files already compacted away.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pinning {
    pub off_memtable_bytes: u64,
    pub off_table_bytes: u64,
    pub on_memtable_bytes: u64,
    pub on_table_bytes: u64,
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
    snapshot: std::sync::Mutex<Option<silt_engine::Snapshot>>,
    auto_refresh: AtomicBool,
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
            block_restart_interval: if o.block_restart_interval == 0 {
                Options::default().block_restart_interval
            } else {
                o.block_restart_interval
            },
            data_block_hash_index: o.data_block_hash_index.unwrap_or(Options::default().data_block_hash_index),
            compression: if o.compression_lz4 { Compression::Lz4 } else { Compression::None },
            bloom_bits_per_key: o.bloom_bits,
            block_cache_capacity: o.cache_size,
            target_file_size_base: o.target_file_size_base,
            max_bytes_for_level_base: o.max_bytes_for_level_base,
            disable_auto_compactions: o.disable_auto_compactions,
            read_triggered_compaction: o.read_triggered_compaction,
            row_cache_capacity: o.row_cache_size,
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
                        // Writes report this error from now on.
                        Err(f) if f.recovery == Recovery::StopWrites => return,
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
        };
        Ok(Silt {
            db,
            snapshot: std::sync::Mutex::new(None),
            auto_refresh: AtomicBool::new(false),
            stop,
            pump: Some(pump),
            sync: o.sync,
        })
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

    fn ingest(&self, entries: &[(Vec<u8>, Vec<u8>)], sorted: bool) -> Res<()> {
        let mut b = WriteBatch::new();
        for (k, v) in entries {
            b.put(k, v);
        }
        self.db.ingest(&b, &silt_engine::IngestOptions { sorted }).map(drop).map_err(err)
    }

    fn get(&self, key: &[u8]) -> Res<Option<usize>> {
        Ok(self.db.get_bytes(&ReadOptions::default(), key).map_err(err)?.map(|v| v.len()))
    }

    fn multi_get(&self, keys: &[Vec<u8>], batched: bool) -> Res<(usize, usize)> {
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let r = self.db.multi_get(&ReadOptions::default(), &refs, batched).map_err(err)?;
        let (mut found, mut bytes) = (0, 0);
        for v in r.iter().flatten() {
            found += 1;
            bytes += v.len();
        }
        Ok((found, bytes))
    }

    fn use_snapshot(&self, explicit: bool, auto_refresh: bool) -> Res<()> {
        *self.snapshot.lock().map_err(|_| "poisoned")? = explicit.then(|| self.db.snapshot());
        self.auto_refresh.store(auto_refresh, Ordering::Relaxed);
        Ok(())
    }

    fn seek(&self, key: &[u8], nexts: usize) -> Res<(usize, usize)> {
        let snap = self.snapshot.lock().map_err(|_| "poisoned")?;
        let opts = ReadOptions {
            snapshot: snap.as_ref(),
            auto_refresh_iterator_with_snapshot: self.auto_refresh.load(Ordering::Relaxed),
            ..Default::default()
        };
        let mut it = self.db.iter(&opts).map_err(err)?;
        drop(opts);
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
        while self.db.do_background_work(64).map_err(|f| err(f.error))?.work_left {}
        Ok(())
    }

    fn compact(&self) -> Res<()> {
        self.db.flush().map_err(err)?;
        self.db.compact_range(None, None).map_err(err)?;
        self.settle()
    }

    fn iterator_pinning(&self, num: u64, key_size: usize, value_size: usize) -> Res<Pinning> {
        // Extra bytes held beyond what the current version needs.
        let pinned = |db: &Db| {
            let p = db.properties();
            (p.all_memtable_bytes - p.memtable_bytes, p.live_table_bytes - p.table_bytes)
        };
        let snap = self.db.snapshot();
        let mut off = self.db.iter(&ReadOptions { snapshot: Some(&snap), ..Default::default() }).map_err(err)?;
        let mut on = self
            .db
            .iter(&ReadOptions {
                snapshot: Some(&snap),
                auto_refresh_iterator_with_snapshot: true,
                ..Default::default()
            })
            .map_err(err)?;
        off.seek_to_first();
        on.seek_to_first();
        // New writes fill the memtable; then everything is flushed and
        // compacted while both iterators are mid-scan.
        for i in 0..num / 10 {
            let mut k = (i * 7 % num).to_be_bytes().to_vec();
            k.resize(key_size, b'0');
            self.db.put(&WriteOptions::default(), &k, &vec![b'n'; value_size]).map_err(err)?;
        }
        self.db.compact_range(None, None).map_err(err)?;
        self.settle()?;
        off.next();
        on.next();
        let both = pinned(&self.db);
        drop(off);
        let on_only = pinned(&self.db);
        Ok(Pinning {
            off_memtable_bytes: both.0 - on_only.0,
            off_table_bytes: both.1 - on_only.1,
            on_memtable_bytes: on_only.0,
            on_table_bytes: on_only.1,
        })
    }

    fn statistics(&self) -> String {
        self.db.statistics().to_string()
    }

    fn shape(&self) -> String {
        let p = self.db.properties();
        format!("files per level {:?}, bytes per level {:?}", p.files_per_level, p.bytes_per_level)
    }
}
