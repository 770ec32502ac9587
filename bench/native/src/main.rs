//! silt-bench: a db_bench-like CLI. Benchmarks and flags use db_bench's
//! names (`--key_size` and `--key-size` both work); `--engine rocksdb` runs
//! the same workload on RocksDB (cargo feature `rocksdb`).
//!
//! Every run prints the machine, the options and the date; `--json` prints
//! one JSON object per benchmark instead of db_bench's text lines.

mod engines;
mod json;
#[cfg(feature = "rocksdb")]
mod rocks;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use engines::{BenchDb, EngineOptions, Res, Silt};

const BENCHMARKS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "ingest",
    "ingestrandom",
    "readrandom",
    "readhot",
    "readseq",
    "seekrandom",
    "multireadrandom",
    "readwhilewriting",
    "iteratorpinning",
    "compact",
];

#[derive(Clone, Debug)]
struct Flags {
    engine: String,
    benchmarks: Vec<String>,
    num: u64,
    reads: Option<u64>,
    key_size: usize,
    value_size: usize,
    db: Option<String>,
    use_existing_db: bool,
    compression: String,
    bloom_bits: u32,
    cache_size: usize,
    write_buffer_size: usize,
    target_file_size_base: u64,
    max_bytes_for_level_base: u64,
    block_size: usize,
    /// 0: each engine's own default (Silt 4, RocksDB 16).
    block_restart_interval: usize,
    /// None: each engine's own default (Silt binary_and_hash, RocksDB binary).
    data_block_hash_index: Option<bool>,
    disable_auto_compactions: bool,
    read_triggered_compaction: bool,
    row_cache_size: usize,
    batch_size: usize,
    multiread_stride: u64,
    multiread_batched: bool,
    multiread_get: bool,
    seek_nexts: usize,
    explicit_snapshot: bool,
    auto_refresh_iterator_with_snapshot: bool,
    range_tombstone_width: u64,
    writes_per_range_tombstone: u64,
    max_num_range_tombstones: u64,
    sync: bool,
    statistics: bool,
    warm_cache: bool,
    json: bool,
    seed: u64,
    /// `--ab OPTION`: two databases, OPTION on and off, each benchmark run
    /// on both in one process (order alternating), with their ratio.
    ab: Option<String>,
    /// How many times the running benchmark was named before it in the
    /// list (set while the list runs).
    repeat: u64,
}

impl Default for Flags {
    fn default() -> Self {
        Flags {
            engine: "silt".into(),
            benchmarks: vec!["fillseq".into(), "fillrandom".into(), "readrandom".into(), "readseq".into()],
            num: 1_000_000,
            reads: None,
            key_size: 16,
            value_size: 100,
            db: None,
            use_existing_db: false,
            compression: "lz4".into(),
            bloom_bits: 10,
            cache_size: 1 << 30,
            write_buffer_size: 64 << 20,
            target_file_size_base: 64 << 20,
            max_bytes_for_level_base: 256 << 20,
            block_size: 4096,
            block_restart_interval: 0,
            data_block_hash_index: None,
            disable_auto_compactions: false,
            read_triggered_compaction: true,
            row_cache_size: 0,
            batch_size: 1,
            multiread_stride: 0,
            multiread_batched: false,
            multiread_get: false,
            seek_nexts: 0,
            explicit_snapshot: false,
            auto_refresh_iterator_with_snapshot: false,
            range_tombstone_width: 100,
            writes_per_range_tombstone: 0,
            max_num_range_tombstones: 0,
            sync: false,
            statistics: false,
            warm_cache: false,
            json: false,
            seed: 301,
            ab: None,
            repeat: 0,
        }
    }
}

const USAGE: &str = "usage: silt-bench [--engine silt|rocksdb] [--benchmarks a,b,...] [--num N] [--reads N]
  [--key-size 16] [--value-size 100] [--db PATH | --db mem:NAME (silt only)] [--use-existing-db 0|1]
  [--compression lz4|none] [--bloom-bits 10] [--cache-size BYTES] [--write-buffer-size BYTES]
  [--target-file-size-base BYTES] [--max-bytes-for-level-base BYTES] [--block-size BYTES]
  [--block-restart-interval N (default: each engine's own)]
  [--data-block-index-type binary|binary_and_hash (default: each engine's own)]
  [--disable-auto-compactions 0|1] [--read-triggered-compaction 0|1 (silt)] [--row-cache-size BYTES (silt)] [--batch-size N] [--multiread-stride S] [--multiread-batched 0|1]
  [--multiread-get 0|1 (multireadrandom's keys, one Get each)]
  [--seek-nexts N] [--sync 0|1] [--statistics 0|1] [--json] [--seed N]
  [--ab read-triggered-compaction|row-cache|none (silt: two databases, the option on and off, every
    benchmark run on both in one process, the side going first alternating from one run of a
    benchmark to the next, both settled before each timed run, with the ratio off/on; none: both
    alike, an A/A that shows what the method itself tells apart)]
  [--warm-cache 0|1 (read every entry once, untimed, before the benchmarks)]
  [--writes-per-range-tombstone N] [--range-tombstone-width 100] [--max-num-range-tombstones N]
  [--explicit-snapshot 0|1] [--auto-refresh-iterator-with-snapshot 0|1]   (seekrandom)
benchmarks: fillseq fillrandom ingest ingestrandom (one Db::ingest of num entries, sorted or shuffled) readrandom readhot (90% of gets on 1% of the keys) readseq seekrandom multireadrandom readwhilewriting
  iteratorpinning (silt only: bytes a long-running iterator pins after a flush and a full
  compaction, without and with auto refresh) compact (flush, then compact the whole key range)";

fn parse() -> Result<Flags, String> {
    let mut f = Flags::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n.replace('_', "-"), Some(v.to_string())),
            None => (a.replace('_', "-"), None),
        };
        match name.as_str() {
            "--help" | "-h" => return Err(USAGE.into()),
            "--json" if inline.is_none() => {
                f.json = true;
                continue;
            }
            _ => {}
        }
        let v = inline.or_else(|| args.next()).ok_or_else(|| format!("{name} needs a value\n{USAGE}"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|_| format!("{name}: not a number: {v}"));
        let flag = |v: &str| match v {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            _ => Err(format!("{name}: 0 or 1, not {v}")),
        };
        match name.as_str() {
            "--engine" => f.engine = v,
            "--benchmarks" => f.benchmarks = v.split(',').filter(|s| !s.is_empty()).map(String::from).collect(),
            "--num" => f.num = num(&v)?.max(1),
            "--reads" => f.reads = Some(num(&v)?),
            "--key-size" => f.key_size = num(&v)? as usize,
            "--value-size" => f.value_size = num(&v)? as usize,
            "--db" => f.db = Some(v),
            "--use-existing-db" => f.use_existing_db = flag(&v)?,
            "--compression" | "--compression-type" => f.compression = v,
            "--bloom-bits" => f.bloom_bits = num(&v)? as u32,
            "--cache-size" => f.cache_size = num(&v)? as usize,
            "--write-buffer-size" => f.write_buffer_size = num(&v)? as usize,
            "--target-file-size-base" => f.target_file_size_base = num(&v)?,
            "--max-bytes-for-level-base" => f.max_bytes_for_level_base = num(&v)?,
            "--block-size" => f.block_size = num(&v)? as usize,
            "--block-restart-interval" => f.block_restart_interval = num(&v)? as usize,
            "--data-block-index-type" => {
                f.data_block_hash_index = Some(match v.as_str() {
                    "binary" | "0" => false,
                    "binary_and_hash" | "1" => true,
                    _ => return Err(format!("{name}: binary or binary_and_hash, not {v}")),
                })
            }
            "--disable-auto-compactions" => f.disable_auto_compactions = flag(&v)?,
            "--read-triggered-compaction" => f.read_triggered_compaction = flag(&v)?,
            "--row-cache-size" => f.row_cache_size = num(&v)? as usize,
            "--batch-size" => f.batch_size = num(&v)?.max(1) as usize,
            "--multiread-stride" => f.multiread_stride = num(&v)?,
            "--multiread-batched" => f.multiread_batched = flag(&v)?,
            "--multiread-get" => f.multiread_get = flag(&v)?,
            "--seek-nexts" => f.seek_nexts = num(&v)? as usize,
            "--explicit-snapshot" => f.explicit_snapshot = flag(&v)?,
            "--auto-refresh-iterator-with-snapshot" => f.auto_refresh_iterator_with_snapshot = flag(&v)?,
            "--range-tombstone-width" => f.range_tombstone_width = num(&v)?,
            "--writes-per-range-tombstone" => f.writes_per_range_tombstone = num(&v)?,
            "--max-num-range-tombstones" => f.max_num_range_tombstones = num(&v)?,
            "--sync" => f.sync = flag(&v)?,
            "--statistics" => f.statistics = flag(&v)?,
            "--warm-cache" => f.warm_cache = flag(&v)?,
            "--json" => f.json = flag(&v)?,
            "--seed" => f.seed = num(&v)?,
            "--ab" => f.ab = Some(v),
            _ => return Err(format!("unknown flag {name}\n{USAGE}")),
        }
    }
    if f.key_size < 8 {
        return Err("--key-size must be at least 8".into());
    }
    if !matches!(f.compression.as_str(), "lz4" | "none") {
        return Err(format!("--compression: lz4 or none, not {}", f.compression));
    }
    if let Some(b) = f.benchmarks.iter().find(|b| !BENCHMARKS.contains(&b.as_str())) {
        return Err(format!("unknown benchmark {b}\n{USAGE}"));
    }
    Ok(f)
}

/// splitmix64: reproducible key order without a dependency.
struct Rng(u64);

impl Flags {
    /// The random keys of a read benchmark: `salt` tells benchmarks apart,
    /// and a benchmark named again draws new keys each time (as db_bench's
    /// threads are seeded anew for each benchmark), so a repeated
    /// readrandom is not the same reads a cache has just learned.
    fn rng(&self, salt: u64) -> Rng {
        Rng((self.seed ^ salt).wrapping_add(self.repeat.wrapping_mul(0x2545_f491_4f6c_dd1d)))
    }
}

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// db_bench's key layout: the number big-endian in the first 8 bytes,
/// padded with '0' to the key size.
fn make_key(i: u64, size: usize) -> Vec<u8> {
    let mut k = Vec::with_capacity(size);
    k.extend_from_slice(&i.to_be_bytes());
    k.resize(size, b'0');
    k
}

/// Half-compressible, as db_bench's default compression ratio of 0.5.
fn make_value(i: u64, size: usize) -> Vec<u8> {
    let mut r = Rng(i);
    (0..size).map(|j| if j % 2 == 0 { (r.next() % 26) as u8 + b'a' } else { b'x' }).collect()
}

struct Outcome {
    ops: u64,
    found: u64,
    bytes: u64,
    secs: f64,
}

fn fill(db: &dyn BenchDb, f: &Flags, random: bool) -> Res<Outcome> {
    let mut rng = Rng(f.seed);
    let start = Instant::now();
    let mut batch = Vec::with_capacity(f.batch_size);
    let mut bytes = 0;
    for i in 0..f.num {
        let k = if random { rng.next() % f.num } else { i };
        batch.push((make_key(k, f.key_size), make_value(k, f.value_size)));
        bytes += (f.key_size + f.value_size) as u64;
        if batch.len() >= f.batch_size {
            db.write(&batch)?;
            batch.clear();
        }
        // db_bench's range tombstones: one every N writes, up to a maximum.
        let w = f.writes_per_range_tombstone;
        if w > 0 && (i + 1) % w == 0 && (i + 1) / w <= f.max_num_range_tombstones {
            let start = rng.next() % f.num;
            db.delete_range(&make_key(start, f.key_size), &make_key(start + f.range_tombstone_width, f.key_size))?;
        }
    }
    if !batch.is_empty() {
        db.write(&batch)?;
    }
    let secs = start.elapsed().as_secs_f64();
    db.settle()?;
    Ok(Outcome { ops: f.num, found: 0, bytes, secs })
}

/// `num` entries (in key order, or shuffled) added by one `ingest`, timed
/// from building the entries' batch to the durable result.
fn ingest(db: &dyn BenchDb, f: &Flags, random: bool) -> Res<Outcome> {
    let mut order: Vec<u64> = (0..f.num).collect();
    if random {
        let mut rng = Rng(f.seed);
        for i in (1..order.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
    }
    let entries: Vec<(Vec<u8>, Vec<u8>)> =
        order.iter().map(|&k| (make_key(k, f.key_size), make_value(k, f.value_size))).collect();
    let start = Instant::now();
    db.ingest(&entries, !random)?;
    let secs = start.elapsed().as_secs_f64();
    let bytes = f.num * (f.key_size + f.value_size) as u64;
    Ok(Outcome { ops: f.num, found: 0, bytes, secs })
}

fn read_random(db: &dyn BenchDb, f: &Flags, stop: Option<&AtomicBool>) -> Res<Outcome> {
    let mut rng = f.rng(0x5eed);
    let reads = f.reads.unwrap_or(f.num);
    let start = Instant::now();
    let (mut found, mut bytes) = (0, 0);
    for _ in 0..reads {
        if let Some(n) = db.get(&make_key(rng.next() % f.num, f.key_size))? {
            found += 1;
            bytes += (f.key_size + n) as u64;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    if let Some(s) = stop {
        s.store(true, Ordering::Relaxed);
    }
    Ok(Outcome { ops: reads, found, bytes, secs })
}

/// Gets of a skewed key set: 9 in 10 on the hot 1% of the keys (every
/// 100th key, spread over the whole range), the rest uniform (db_bench's
/// readrandom with a hot set, as apps read a profile or the open document).
fn read_hot(db: &dyn BenchDb, f: &Flags) -> Res<Outcome> {
    let mut rng = f.rng(0x4077);
    let reads = f.reads.unwrap_or(f.num);
    let hot = (f.num / 100).max(1);
    let start = Instant::now();
    let (mut found, mut bytes) = (0, 0);
    for _ in 0..reads {
        let i = if rng.next() % 10 < 9 { (rng.next() % hot) * 100 % f.num } else { rng.next() % f.num };
        if let Some(n) = db.get(&make_key(i, f.key_size))? {
            found += 1;
            bytes += (f.key_size + n) as u64;
        }
    }
    Ok(Outcome { ops: reads, found, bytes, secs: start.elapsed().as_secs_f64() })
}

fn multi_read_random(db: &dyn BenchDb, f: &Flags) -> Res<Outcome> {
    let mut rng = f.rng(0xbeef);
    let reads = f.reads.unwrap_or(f.num);
    let batches = reads.div_ceil(f.batch_size as u64);
    let start = Instant::now();
    let (mut found, mut bytes) = (0u64, 0u64);
    let mut keys = Vec::with_capacity(f.batch_size);
    for _ in 0..batches {
        keys.clear();
        let first = rng.next() % f.num;
        for j in 0..f.batch_size as u64 {
            let k = if f.multiread_stride == 0 { rng.next() % f.num } else { (first + j * f.multiread_stride) % f.num };
            keys.push(make_key(k, f.key_size));
        }
        let (n, b) = if f.multiread_get {
            let (mut n, mut b) = (0, 0);
            for k in &keys {
                if let Some(len) = db.get(k)? {
                    n += 1;
                    b += len;
                }
            }
            (n, b)
        } else {
            db.multi_get(&keys, f.multiread_batched)?
        };
        found += n as u64;
        bytes += b as u64;
    }
    Ok(Outcome { ops: batches * f.batch_size as u64, found, bytes, secs: start.elapsed().as_secs_f64() })
}

fn seek_random(db: &dyn BenchDb, f: &Flags) -> Res<Outcome> {
    // One snapshot for every scan, taken before timing (as RocksDB PR 13354's
    // benchmark did: taking one per scan would hide the refresh's cost).
    db.use_snapshot(f.explicit_snapshot, f.auto_refresh_iterator_with_snapshot)?;
    let mut rng = f.rng(0x5eec);
    let reads = f.reads.unwrap_or(f.num);
    let start = Instant::now();
    let (mut found, mut bytes) = (0u64, 0u64);
    for _ in 0..reads {
        let (n, b) = db.seek(&make_key(rng.next() % f.num, f.key_size), f.seek_nexts)?;
        found += u64::from(n > 0);
        bytes += b as u64;
    }
    Ok(Outcome { ops: reads, found, bytes, secs: start.elapsed().as_secs_f64() })
}

/// One writer thread writes random keys while this thread reads at random;
/// the figures are the reader's.
fn read_while_writing(db: Arc<dyn BenchDb>, f: &Flags) -> Res<Outcome> {
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop, f) = (db.clone(), stop.clone(), f.clone());
        std::thread::spawn(move || -> Res<u64> {
            let mut rng = f.rng(0x3141);
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let k = rng.next() % f.num;
                db.write(&[(make_key(k, f.key_size), make_value(k ^ n, f.value_size))])?;
                n += 1;
            }
            Ok(n)
        })
    };
    let out = read_random(&*db, f, Some(&stop));
    stop.store(true, Ordering::Relaxed);
    writer.join().map_err(|_| "writer thread panicked".to_string())??;
    out
}

fn open(f: &Flags) -> Res<Arc<dyn BenchDb>> {
    let default_path = format!("/tmp/silt-bench-{}", f.engine);
    let o = EngineOptions {
        path: f.db.clone().unwrap_or(default_path),
        fresh: !f.use_existing_db,
        compression_lz4: f.compression == "lz4",
        bloom_bits: f.bloom_bits,
        cache_size: f.cache_size,
        write_buffer_size: f.write_buffer_size,
        target_file_size_base: f.target_file_size_base,
        max_bytes_for_level_base: f.max_bytes_for_level_base,
        block_size: f.block_size,
        block_restart_interval: f.block_restart_interval,
        data_block_hash_index: f.data_block_hash_index,
        disable_auto_compactions: f.disable_auto_compactions,
        read_triggered_compaction: f.read_triggered_compaction,
        row_cache_size: f.row_cache_size,
        sync: f.sync,
    };
    if !o.path.starts_with("mem:") {
        std::fs::create_dir_all(&o.path).map_err(|e| format!("{}: {e}", o.path))?;
    }
    match f.engine.as_str() {
        "silt" => Ok(Arc::new(Silt::open(&o)?)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Arc::new(rocks::Rocks::open(&o)?)),
        #[cfg(not(feature = "rocksdb"))]
        "rocksdb" => {
            Err("this silt-bench was built without RocksDB: cargo run --release -p silt-bench --features rocksdb"
                .into())
        }
        e => Err(format!("unknown engine {e} (silt or rocksdb)")),
    }
}

fn machine() -> (String, usize) {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    (model, cpus)
}

/// UTC date and time, ISO 8601.
fn now_iso() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Runs one benchmark on `db`: its outcome, or None when it printed its
/// own report (iteratorpinning).
fn run_one(db: &Arc<dyn BenchDb>, f: &Flags, name: &str, date: &str) -> Res<Option<Outcome>> {
    let out = match name {
        "fillseq" => fill(&**db, f, false),
        "fillrandom" => fill(&**db, f, true),
        "ingest" => ingest(&**db, f, false),
        "ingestrandom" => ingest(&**db, f, true),
        "readrandom" => read_random(&**db, f, None),
        "readhot" => read_hot(&**db, f),
        "readseq" => {
            let start = Instant::now();
            db.scan(f.reads.unwrap_or(u64::MAX)).map(|(n, b)| Outcome {
                ops: n,
                found: n,
                bytes: b,
                secs: start.elapsed().as_secs_f64(),
            })
        }
        "seekrandom" => seek_random(&**db, f),
        "compact" => {
            let start = Instant::now();
            db.compact().map(|()| Outcome { ops: 1, found: 0, bytes: 0, secs: start.elapsed().as_secs_f64() })
        }
        "multireadrandom" => multi_read_random(&**db, f),
        "readwhilewriting" => read_while_writing(db.clone(), f),
        "iteratorpinning" => match db.iterator_pinning(f.num, f.key_size, f.value_size) {
            Ok(p) => {
                let line = format!(
                        "{{\"engine\":\"{}\",\"benchmark\":\"iteratorpinning\",\"num\":{},\"pinned_without_auto_refresh\":{{\"memtable_bytes\":{},\"table_bytes\":{}}},\"pinned_with_auto_refresh\":{{\"memtable_bytes\":{},\"table_bytes\":{}}},\"date\":\"{}\"}}",
                        db.name(), f.num, p.off_memtable_bytes, p.off_table_bytes, p.on_memtable_bytes, p.on_table_bytes, date
                    );
                if f.json {
                    println!("{line}");
                } else {
                    println!(
                            "iteratorpinning  : without auto refresh the iterator pins {} memtable bytes and {} table bytes; with it, {} and {}",
                            p.off_memtable_bytes, p.off_table_bytes, p.on_memtable_bytes, p.on_table_bytes
                        );
                }
                return Ok(None);
            }
            Err(e) => Err(e),
        },
        _ => unreachable!("checked in parse"),
    };
    out.map(Some)
}

/// Opens `f`'s database and settles it, or exits.
fn open_settled(f: &Flags) -> Arc<dyn BenchDb> {
    let db = match open(f) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("silt-bench: {e}");
            std::process::exit(1);
        }
    };
    // Background work left from opening (a recovered memtable to flush,
    // compactions due) is finished before anything is timed.
    if let Err(e) = db.settle() {
        eprintln!("silt-bench: settling after open: {e}");
        std::process::exit(1);
    }
    if f.warm_cache {
        if let Err(e) = db.scan(u64::MAX) {
            eprintln!("silt-bench: warming the cache: {e}");
            std::process::exit(1);
        }
    }
    db
}

/// The two sides of `--ab OPTION`: the option on, then off (each its own
/// database, at the path given with "-on" / "-off" appended).
fn ab_sides(f: &Flags, option: &str) -> Result<[(&'static str, Flags); 2], String> {
    if f.engine != "silt" {
        return Err(format!("--ab compares two settings of an option of Silt's; --engine {} has neither", f.engine));
    }
    let (mut on, mut off) = (f.clone(), f.clone());
    match option {
        "read-triggered-compaction" => {
            on.read_triggered_compaction = true;
            off.read_triggered_compaction = false;
        }
        "row-cache" => {
            on.row_cache_size = if f.row_cache_size == 0 { 16 << 20 } else { f.row_cache_size };
            off.row_cache_size = 0;
        }
        // Both sides alike: what the method itself tells apart (an A/A).
        "none" => {}
        o => return Err(format!("--ab: read-triggered-compaction, row-cache or none, not {o}")),
    }
    let base = f.db.clone().unwrap_or_else(|| format!("/tmp/silt-bench-{}", f.engine));
    on.db = Some(format!("{base}-on"));
    off.db = Some(format!("{base}-off"));
    Ok([("on", on), ("off", off)])
}

fn main() {
    let f = match parse() {
        Ok(f) => f,
        Err(msg) => {
            eprintln!("{msg}");
            std::process::exit(2);
        }
    };
    if f.ab.is_some() && f.benchmarks.iter().any(|b| b == "iteratorpinning") {
        eprintln!(
            "--ab times benchmarks on two databases; iteratorpinning is a report of its own: run it without --ab"
        );
        std::process::exit(2);
    }
    let sides: Vec<(&'static str, Flags)> = match &f.ab {
        None => vec![("", f.clone())],
        Some(option) => match ab_sides(&f, option) {
            Ok(s) => s.into(),
            Err(msg) => {
                eprintln!("{msg}");
                std::process::exit(2);
            }
        },
    };
    let dbs: Vec<Arc<dyn BenchDb>> = sides.iter().map(|(_, f)| open_settled(f)).collect();
    let db = &dbs[0];
    let (model, cpus) = machine();
    let date = now_iso();
    if !f.json {
        println!("silt-bench {}  engine: {}  date: {date}", env!("CARGO_PKG_VERSION"), db.name());
        println!("machine: {model}, {cpus} cpus");
        println!(
            "Keys: {} bytes, Values: {} bytes, Entries: {}, Compression: {}, Bloom bits: {}, Cache: {} MiB, \
             Write buffer: {} MiB, Target file: {} MiB, Level base: {} MiB, Auto compactions: {}, \
             Read-triggered compaction: {}, Row cache: {} KiB",
            f.key_size,
            f.value_size,
            f.num,
            f.compression,
            f.bloom_bits,
            f.cache_size >> 20,
            f.write_buffer_size >> 20,
            f.target_file_size_base >> 20,
            f.max_bytes_for_level_base >> 20,
            !f.disable_auto_compactions,
            f.read_triggered_compaction,
            f.row_cache_size >> 10,
        );
        println!("------------------------------------------------");
    }
    if let Some(option) = &f.ab {
        if !f.json {
            let side = |(name, f): &(&str, Flags)| {
                format!(
                    "{name}: read-triggered compaction {}, row cache {} KiB",
                    f.read_triggered_compaction,
                    f.row_cache_size >> 10
                )
            };
            println!(
                "A/B of {option} in one process ({}; {}): each benchmark runs on both databases, the side going \
                 first alternating from one run of a benchmark to the next, both settled (background work done) \
                 before each timed run",
                side(&sides[0]),
                side(&sides[1])
            );
        }
    }
    // Microseconds per op of each benchmark, per side (A/B summary).
    let mut timed: Vec<(String, [f64; 2])> = Vec::new();
    for (i, name) in f.benchmarks.iter().enumerate() {
        let mut micros_of = [0f64; 2];
        // How many times this benchmark ran before: its keys, and in an
        // A/B which side goes first (alternating per benchmark, so that
        // benchmarks taking turns each alternate too).
        let repeat = f.benchmarks[..i].iter().filter(|n| *n == name).count() as u64;
        let order: Vec<usize> =
            if repeat.is_multiple_of(2) { (0..dbs.len()).collect() } else { (0..dbs.len()).rev().collect() };
        for s in order {
            let side = sides[s].0;
            let f = &Flags { repeat, ..sides[s].1.clone() };
            let db = &dbs[s];
            // A/B: neither side's background work (flushes, compactions,
            // one its reads called for) runs into the other's timing.
            if f.ab.is_some() {
                for db in &dbs {
                    if let Err(e) = db.settle() {
                        eprintln!("silt-bench: settling before {name}: {e}");
                        std::process::exit(1);
                    }
                }
            }
            let out = match run_one(db, f, name, &date) {
                Ok(Some(o)) => o,
                Ok(None) => continue,
                Err(e) => {
                    eprintln!("silt-bench: {name}: {e}");
                    std::process::exit(1);
                }
            };
            let label = if side.is_empty() { name.clone() } else { format!("{name} [{side}]") };
            let micros = out.secs * 1e6 / out.ops.max(1) as f64;
            let ops_sec = out.ops as f64 / out.secs.max(1e-9);
            let mbs = out.bytes as f64 / 1_048_576.0 / out.secs.max(1e-9);
            micros_of[s] = micros;
            if f.json {
                let mut l = json::line(db.name(), name, f, &out, micros, ops_sec, &model, cpus, &date);
                if f.statistics {
                    l.pop();
                    l.push_str(&json::tickers(&db.tickers()));
                    l.push('}');
                }
                if !side.is_empty() || name.starts_with("fill") || name == "compact" {
                    l.pop();
                    if !side.is_empty() {
                        l.push_str(&format!(",\"side\":\"{side}\""));
                    }
                    if name.starts_with("fill") || name == "compact" {
                        l.push_str(&format!(",\"shape_after\":\"{}\"", db.shape()));
                    }
                    l.push('}');
                }
                println!("{l}");
            } else {
                let found = if name.contains("read") || name.starts_with("seek") {
                    format!(" ({} of {} found)", out.found, out.ops)
                } else {
                    String::new()
                };
                println!("{label:<16} : {micros:>10.3} micros/op {ops_sec:>10.0} ops/sec; {mbs:>7.1} MB/s{found}");
                if name.starts_with("fill") || name == "compact" {
                    println!("  shape after {label}: {}", db.shape());
                }
            }
        }
        timed.push((name.clone(), micros_of));
    }
    if let Some(option) = &f.ab {
        for (name, [on, off]) in
            timed.iter().filter(|(n, _)| n.starts_with("read") || n.starts_with("seek") || n.starts_with("multi"))
        {
            let ratio = off / on.max(1e-9);
            if f.json {
                println!(
                    "{{\"ab\":\"{option}\",\"benchmark\":\"{name}\",\"on_micros_per_op\":{on:.4},\"off_micros_per_op\":{off:.4},\"off_over_on\":{ratio:.3},\"date\":\"{date}\"}}"
                );
            } else {
                println!("A/B {name:<16}: on {on:.3} µs, off {off:.3} µs: off/on {ratio:.2}x");
            }
        }
    }
    for (s, db) in dbs.iter().enumerate() {
        if !f.json {
            let side = sides[s].0;
            println!("shape{}: {}", if side.is_empty() { String::new() } else { format!(" [{side}]") }, db.shape());
        }
        if f.statistics && !f.json {
            println!("{}", db.statistics());
        }
    }
}
