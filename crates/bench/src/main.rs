//! silt-bench: a db_bench-like CLI for Silt (native).
//!
//! This first version runs the write and read benchmarks the foundation
//! supports: fillseq, fillrandom, readrandom, readseq. Flags use db_bench's
//! names. The rest of db_bench's set (seekrandom, multireadrandom,
//! readwhilewriting, `--engine rocksdb`) arrives with the compaction issue.

use std::io::Write;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use silt_engine::fs::{Fs, MemFs, StdFs};
use silt_engine::{Clock, Compression, Db, Options, ReadOptions, WriteBatch, WriteOptions};

struct Flags {
    benchmarks: Vec<String>,
    num: u64,
    reads: Option<u64>,
    key_size: usize,
    value_size: usize,
    db: Option<String>,
    use_existing_db: bool,
    compression: Compression,
    bloom_bits: u32,
    cache_size: usize,
    write_buffer_size: usize,
    block_size: usize,
    batch_size: usize,
    sync: bool,
    json: bool,
    seed: u64,
}

impl Default for Flags {
    fn default() -> Self {
        Flags {
            benchmarks: vec![
                "fillseq".into(),
                "fillrandom".into(),
                "readrandom".into(),
                "readseq".into(),
            ],
            num: 1_000_000,
            reads: None,
            key_size: 16,
            value_size: 100,
            db: None,
            use_existing_db: false,
            compression: Compression::Lz4,
            bloom_bits: 10,
            cache_size: 512 << 20,
            write_buffer_size: 64 << 20,
            block_size: 4096,
            batch_size: 1,
            sync: false,
            json: false,
            seed: 301,
        }
    }
}

const USAGE: &str =
    "usage: silt-bench [--benchmarks fillseq,fillrandom,readrandom,readseq] [--num N] [--reads N] \
[--key-size 16] [--value-size 100] [--db PATH (default: in memory)] [--use-existing-db 0|1] \
[--compression lz4|none] [--bloom-bits 10] [--cache-size BYTES] [--write-buffer-size BYTES] \
[--block-size BYTES] [--batch-size N] [--sync 0|1] [--json] [--seed N]";

fn parse() -> Result<Flags, String> {
    let mut f = Flags::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        if name == "--json" {
            f.json = inline.is_none_or(|v| v != "0" && v != "false");
            continue;
        }
        if name == "--help" || name == "-h" {
            return Err(USAGE.into());
        }
        let v = match inline.or_else(|| args.next()) {
            Some(v) => v,
            None => return Err(format!("{name} needs a value\n{USAGE}")),
        };
        let num = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{name}: not a number: {v}"))
        };
        let flag = |v: &str| Ok::<bool, String>(matches!(v, "1" | "true"));
        match name.as_str() {
            "--benchmarks" => {
                f.benchmarks = v
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            }
            "--num" => f.num = num(&v)?,
            "--reads" => f.reads = Some(num(&v)?),
            "--key-size" => f.key_size = num(&v)? as usize,
            "--value-size" => f.value_size = num(&v)? as usize,
            "--db" => f.db = Some(v),
            "--use-existing-db" => f.use_existing_db = flag(&v)?,
            "--compression" => {
                f.compression = match v.as_str() {
                    "lz4" => Compression::Lz4,
                    "none" => Compression::None,
                    _ => return Err(format!("--compression: lz4 or none, not {v}")),
                }
            }
            "--bloom-bits" => f.bloom_bits = num(&v)? as u32,
            "--cache-size" => f.cache_size = num(&v)? as usize,
            "--write-buffer-size" => f.write_buffer_size = num(&v)? as usize,
            "--block-size" => f.block_size = num(&v)? as usize,
            "--batch-size" => f.batch_size = num(&v)?.max(1) as usize,
            "--sync" => f.sync = flag(&v)?,
            "--seed" => f.seed = num(&v)?,
            _ => return Err(format!("unknown flag {name}\n{USAGE}")),
        }
    }
    if f.key_size < 8 {
        return Err("--key-size must be at least 8".into());
    }
    Ok(f)
}

struct StdClock(Instant);
impl Clock for StdClock {
    fn now_micros(&self) -> u64 {
        self.0.elapsed().as_micros() as u64
    }
}

/// splitmix64: reproducible key order without a dependency.
struct Rng(u64);
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
fn make_key(i: u64, size: usize, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&i.to_be_bytes());
    out.resize(size, b'0');
}

fn make_value(i: u64, size: usize) -> Vec<u8> {
    // Half-compressible, as db_bench's default compression ratio of 0.5.
    let mut r = Rng(i);
    (0..size)
        .map(|j| {
            if j % 2 == 0 {
                (r.next() % 26) as u8 + b'a'
            } else {
                b'x'
            }
        })
        .collect()
}

struct Outcome {
    ops: u64,
    found: u64,
    bytes: u64,
    secs: f64,
}

fn run(name: &str, db: &Db, f: &Flags) -> Result<Outcome, String> {
    let mut rng = Rng(f.seed);
    let mut key = Vec::with_capacity(f.key_size);
    let w = WriteOptions { sync: f.sync };
    let r = ReadOptions::default();
    let start = Instant::now();
    let (mut ops, mut found, mut bytes) = (0u64, 0u64, 0u64);
    match name {
        "fillseq" | "fillrandom" => {
            let mut batch = WriteBatch::new();
            for i in 0..f.num {
                let k = if name == "fillseq" { i } else { rng.next() % f.num };
                make_key(k, f.key_size, &mut key);
                batch.put(&key, &make_value(k, f.value_size));
                bytes += (f.key_size + f.value_size) as u64;
                if batch.count() as usize >= f.batch_size {
                    db.write(&w, std::mem::take(&mut batch)).map_err(|e| e.to_string())?;
                }
                ops += 1;
            }
            if !batch.is_empty() {
                db.write(&w, batch).map_err(|e| e.to_string())?;
            }
            while db.do_background_work(64).map_err(|e| e.to_string())?.work_left {}
        }
        "readrandom" => {
            for _ in 0..f.reads.unwrap_or(f.num) {
                make_key(rng.next() % f.num, f.key_size, &mut key);
                if let Some(v) = db.get_bytes(&r, &key).map_err(|e| e.to_string())? {
                    found += 1;
                    bytes += (key.len() + v.len()) as u64;
                }
                ops += 1;
            }
        }
        "readseq" => {
            let mut it = db.iter(&r).map_err(|e| e.to_string())?;
            it.seek_to_first();
            let limit = f.reads.unwrap_or(u64::MAX);
            while it.valid() && ops < limit {
                bytes += (it.key().len() + it.value().len()) as u64;
                found += 1;
                ops += 1;
                it.next();
            }
            it.status().map_err(|e| e.to_string())?;
        }
        other => return Err(format!("unknown benchmark {other} (this version runs fillseq, fillrandom, readrandom, readseq)")),
    }
    Ok(Outcome {
        ops,
        found,
        bytes,
        secs: start.elapsed().as_secs_f64(),
    })
}

fn main() {
    let f = match parse() {
        Ok(f) => f,
        Err(msg) => {
            eprintln!("{msg}");
            std::process::exit(2);
        }
    };
    let (fs, path): (Arc<dyn Fs>, String) = match &f.db {
        Some(p) => (Arc::new(StdFs), p.clone()),
        None => (Arc::new(MemFs::new()), "silt-bench".into()),
    };
    if let (Some(p), false) = (&f.db, f.use_existing_db) {
        // db_bench starts from an empty database unless told otherwise.
        for name in fs.list(p).unwrap_or_default() {
            let _ = fs.remove(&format!("{p}/{name}"));
        }
    }
    let options = Options {
        write_buffer_size: f.write_buffer_size,
        block_size: f.block_size,
        compression: f.compression,
        bloom_bits_per_key: f.bloom_bits,
        block_cache_capacity: f.cache_size,
        clock: Some(Arc::new(StdClock(Instant::now()))),
        ..Options::default()
    };
    let db = match Db::open(fs, &path, options) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("silt-bench: cannot open {path}: {e}");
            std::process::exit(1);
        }
    };
    let date = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let machine = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    if !f.json {
        println!(
            "silt-bench {}  date (unix): {date}  machine: {machine}, {cpus} cpus",
            env!("CARGO_PKG_VERSION")
        );
        println!(
            "Keys: {} bytes, Values: {} bytes, Entries: {}, Compression: {:?}, Bloom bits: {}, Cache: {} MiB, DB: {}",
            f.key_size,
            f.value_size,
            f.num,
            f.compression,
            f.bloom_bits,
            f.cache_size >> 20,
            f.db.as_deref().unwrap_or("in memory (MemFs)")
        );
        println!("------------------------------------------------");
    }
    for name in &f.benchmarks {
        let out = match run(name, &db, &f) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("silt-bench: {name}: {e}");
                std::process::exit(1);
            }
        };
        let micros = out.secs * 1e6 / out.ops.max(1) as f64;
        let ops_sec = out.ops as f64 / out.secs.max(1e-9);
        let mbs = out.bytes as f64 / 1048576.0 / out.secs.max(1e-9);
        if f.json {
            println!(
                "{{\"engine\":\"silt\",\"benchmark\":\"{name}\",\"num\":{},\"reads\":{},\"micros_per_op\":{micros:.4},\"ops_per_sec\":{ops_sec:.0},\"mb_per_sec\":{mbs:.2},\"found\":{},\"batch_size\":{},\"key_size\":{},\"value_size\":{},\"compression\":\"{:?}\",\"bloom_bits\":{},\"cache_size\":{},\"write_buffer_size\":{},\"db\":\"{}\",\"date_unix\":{date},\"machine\":\"{machine}\",\"cpus\":{cpus}}}",
                f.num,
                f.reads.unwrap_or(f.num),
                out.found,
                f.batch_size,
                f.key_size,
                f.value_size,
                f.compression,
                f.bloom_bits,
                f.cache_size,
                f.write_buffer_size,
                f.db.as_deref().unwrap_or("mem"),
            );
        } else {
            let found = if name.starts_with("read") {
                format!(" ({} of {} found)", out.found, out.ops)
            } else {
                String::new()
            };
            println!("{name:<12} : {micros:>11.3} micros/op {ops_sec:>9.0} ops/sec; {mbs:>6.1} MB/s{found}");
        }
        let _ = std::io::stdout().flush();
    }
    if !f.json {
        let p = db.properties();
        println!("files per level: {:?}, table bytes: {}, flushes: {}, stalls: {} ({} us), block cache hits/misses: {}/{}, bloom useful: {}",
            p.files_per_level, p.table_bytes, p.flushes, p.write_stalls, p.stall_micros, p.block_cache_hits, p.block_cache_misses, p.bloom_useful);
    }
}
