//! RocksDB tables against RocksDB itself (Debian's rocksdb-tools 7.8.3,
//! installed by scripts/setup.sh): tables Silt writes pass `sst_dump`'s
//! checksum check, scan byte for byte as written, and `ldb
//! ingest_extern_sst` takes them into a RocksDB whose scan is the same;
//! tables `ldb write_extern_sst` writes (RocksDB's SstFileWriter, no
//! compression and LZ4) read back in Silt as written.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use silt_engine::rocksdb::{read_table, EntryKind, TableWriter, TableWriterOptions};

fn tool(name: &str) -> PathBuf {
    for dir in ["/usr/bin", "/usr/local/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} is missing: these tests check tables against RocksDB's own tools; run scripts/setup.sh (it installs Debian's rocksdb-tools)");
}

/// A fresh directory for one test.
fn scratch(what: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "silt-rocksdb-{}-{}-{what}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a tool; returns what it printed (stdout, then stderr). Fails the test on a non-zero exit or on
/// anything RocksDB reports as a problem on stderr (sst_dump exits 0 on
/// checksum errors).
fn run(cmd: &mut Command, stdin: Option<&str>) -> String {
    let mut child = cmd
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{cmd:?} failed ({}): {stderr}{stdout}", out.status);
    for bad in ["Corruption", "corruption", "mismatch", "Invalid", "not a valid", "error", "Error"] {
        assert!(!stderr.contains(bad), "{cmd:?} reported a problem: {stderr}");
    }
    stdout + &stderr
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Random entries, sorted and distinct: binary keys of 1 to 40 bytes
/// (shared prefixes, as real keys have), values of 0 to 3000 bytes, some
/// repetitive enough to compress.
fn entries(seed: u64, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut map = std::collections::BTreeMap::new();
    while map.len() < n {
        let mut key = match rng.random_range(0..3) {
            0 => format!("user:{:06}", rng.random_range(0..100_000)).into_bytes(),
            1 => vec![rng.random::<u8>(); rng.random_range(1..4)],
            _ => (0..rng.random_range(1..40)).map(|_| rng.random::<u8>()).collect(),
        };
        if rng.random_bool(0.1) {
            key.push(0);
        }
        let len = if rng.random_bool(0.05) { rng.random_range(1000..3000) } else { rng.random_range(0..120) };
        let value: Vec<u8> = if rng.random_bool(0.5) {
            (0..len).map(|i| b"abcabcabd"[i % 9]).collect()
        } else {
            (0..len).map(|_| rng.random::<u8>()).collect()
        };
        map.insert(key, value);
    }
    map.into_iter().collect()
}

fn write_table(path: &Path, entries: &[(Vec<u8>, Vec<u8>)], lz4: bool) {
    let mut w = TableWriter::new(TableWriterOptions { lz4, ..TableWriterOptions::default() });
    for (k, v) in entries {
        w.add(k, v).unwrap();
    }
    std::fs::write(path, w.finish().unwrap()).unwrap();
}

/// `sst_dump --command=scan --output_hex`: every entry, as (key, value).
fn sst_dump_scan(path: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let out = run(
        Command::new(tool("sst_dump"))
            .arg(format!("--file={}", path.display()))
            .args(["--command=scan", "--output_hex"]),
        None,
    );
    out.lines()
        .filter(|l| l.starts_with('\''))
        .map(|l| {
            let (key, rest) = l[1..]
                .split_once("' seq:0, type:1 => ")
                .unwrap_or_else(|| panic!("an entry not at seq 0 as a value: {l}"));
            (unhex(key), unhex(rest.trim_end()))
        })
        .collect()
}

/// `ldb scan --hex` of a RocksDB database.
fn ldb_scan(db: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let out = run(Command::new(tool("ldb")).arg(format!("--db={}", db.display())).args(["scan", "--hex"]), None);
    out.lines()
        .filter(|l| l.starts_with("0x"))
        .map(|l| {
            let (k, v) = l.split_once(" : ").unwrap();
            (unhex(&k[2..]), unhex(&v[2..]))
        })
        .collect()
}

#[test]
fn tables_silt_writes_pass_sst_dump_and_ingest_into_rocksdb() {
    for (seed, lz4) in [(1, false), (2, true)] {
        let dir = scratch("write");
        let data = entries(seed, 5000);
        let table = dir.join("000001.sst");
        write_table(&table, &data, lz4);
        let bytes = std::fs::read(&table).unwrap();
        // Compressed where it pays: the LZ4 table is smaller.
        if lz4 {
            let plain = dir.join("plain.sst");
            write_table(&plain, &data, false);
            assert!(bytes.len() < std::fs::metadata(&plain).unwrap().len() as usize * 9 / 10);
        }
        run(
            Command::new(tool("sst_dump"))
                .arg(format!("--file={}", table.display()))
                .args(["--command=check", "--verify_checksum"]),
            None,
        );
        let verify = run(
            Command::new(tool("sst_dump")).arg(format!("--file={}", table.display())).arg("--command=verify"),
            None,
        );
        assert!(verify.contains("The file is ok"), "sst_dump verify: {verify}");
        assert_eq!(sst_dump_scan(&table), data, "sst_dump's scan of the table Silt wrote (lz4: {lz4})");
        let db = dir.join("rocksdb");
        let out = run(
            Command::new(tool("ldb"))
                .arg(format!("--db={}", db.display()))
                .args(["--create_if_missing", "ingest_extern_sst"])
                .arg(&table),
            None,
        );
        assert!(out.contains("ingested"), "ldb ingest_extern_sst: {out}");
        assert_eq!(ldb_scan(&db), data, "RocksDB's scan after ingesting the table Silt wrote (lz4: {lz4})");
        // Silt reads back what it wrote.
        let read = read_table("000001.sst", &bytes).unwrap();
        let got: Vec<_> = read.entries().map(|e| (e.key.to_vec(), e.value.to_vec())).collect();
        assert_eq!(got, data);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn tables_rocksdb_writes_read_in_silt_as_written() {
    // No compression, LZ4, and LZ4 with a compression dictionary.
    for (seed, codec, dict) in [(3, "no", 0), (4, "lz4", 0), (5, "lz4", 16384)] {
        let dir = scratch("read");
        let data = entries(seed, 3000);
        let input: String = data.iter().map(|(k, v)| format!("0x{} ==> 0x{}\n", hex(k), hex(v))).collect();
        let table = dir.join("000001.sst");
        run(
            Command::new(tool("ldb"))
                .arg(format!("--db={}", dir.join("scratch-db").display()))
                .args(["--create_if_missing", "--hex", &format!("--compression_type={codec}")])
                .arg(format!("--compression_max_dict_bytes={dict}"))
                .arg("write_extern_sst")
                .arg(&table),
            Some(&input),
        );
        let bytes = std::fs::read(&table).unwrap();
        let names_a_dict = bytes.windows(24).any(|w| w == b"rocksdb.compression_dict");
        assert_eq!(names_a_dict, dict > 0, "RocksDB wrote a dictionary only where asked");
        let read = read_table("000001.sst", &bytes).unwrap();
        assert_eq!(read.format_version, 5);
        assert!(read.entries().all(|e| e.kind == EntryKind::Value && e.sequence == 0));
        let got: Vec<_> = read.entries().map(|e| (e.key.to_vec(), e.value.to_vec())).collect();
        assert_eq!(got, data, "Silt's read of the table RocksDB wrote (compression {codec})");
        // A flipped byte anywhere is refused (a checksum, a malformed
        // block or footer), never read as other entries.
        let mut rng = SmallRng::seed_from_u64(seed);
        for _ in 0..200 {
            let mut bad = bytes.clone();
            let at = rng.random_range(0..bad.len());
            bad[at] ^= 1 << rng.random_range(0..8);
            if let Ok(t) = read_table("000001.sst", &bad) {
                // Only bytes no checksum covers may change without an
                // error (the footer's padding): then what is read is unchanged.
                let same: Vec<_> = t.entries().map(|e| (e.key.to_vec(), e.value.to_vec())).collect();
                assert_eq!(same, data, "a flipped byte at {at} of {} changed what was read", bad.len());
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

use std::sync::Arc;

use silt_engine::fs::MemFs;
use silt_engine::{Db, ExportForm, ExportOptions, Options, RocksdbIngest, WriteBatch, WriteOptions};

mod common;

fn scan(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    common::read_all(db).into_iter().collect()
}

fn open_mem() -> Db {
    let options = Options { merge_operator: Some(Arc::new(silt_engine::AppendOperator)), ..Options::default() };
    Db::open(Arc::new(MemFs::new()), "db", options).unwrap()
}

/// The whole RocksDB export of `db` (pieces of `piece` bytes, joined).
fn export_rocksdb(db: &Db, target: u64, lz4: bool, piece: usize) -> Vec<u8> {
    let mut e = db
        .export(&ExportOptions { form: ExportForm::Rocksdb, target_file_size: target, lz4, ..ExportOptions::default() })
        .unwrap();
    let mut out = Vec::new();
    while let Some(c) = e.next_chunk(piece).unwrap() {
        assert!(c.len() <= piece);
        out.extend_from_slice(&c);
    }
    out
}

#[test]
fn an_export_in_the_rocksdb_form_loads_into_rocksdb_as_silt_reads_it() {
    // Writes of every kind, flushed and compacted in between, so that
    // what is exported is resolved (merges applied, deletions gone).
    let db = open_mem();
    let mut rng = SmallRng::seed_from_u64(5);
    let w = WriteOptions::default();
    for round in 0..6 {
        let mut batch = WriteBatch::new();
        for _ in 0..3000 {
            let x = rng.random_range(0..20_000);
            let k = format!("k{x:05}").into_bytes();
            match rng.random_range(0..10) {
                0 => batch.delete(&k),
                1 => batch.merge(&k, format!("+{round}").as_bytes()),
                2 if rng.random_bool(0.05) => {
                    batch.delete_range(&k, format!("k{:05}", x + rng.random_range(1..50)).as_bytes())
                }
                _ => batch.put(&k, &vec![b'a' + round as u8; rng.random_range(0..300)]),
            };
        }
        db.write(&w, batch).unwrap();
        if round % 2 == 0 {
            db.flush().unwrap();
        }
        if round == 3 {
            db.compact_range(None, None).unwrap();
        }
    }
    let want = scan(&db);
    assert!(want.len() > 5000);
    let dir = scratch("export");
    let archive = export_rocksdb(&db, 16 << 10, true, 100_000);
    std::fs::write(dir.join("export.tar"), &archive).unwrap();
    run(Command::new("tar").arg("-xf").arg(dir.join("export.tar")).arg("-C").arg(&dir), None);
    let mut tables: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    tables.sort();
    assert!(tables.len() > 1, "a 16 KiB target splits the export: {} tables", tables.len());
    let rocks = dir.join("rocksdb");
    for t in &tables {
        run(
            Command::new(tool("sst_dump"))
                .arg(format!("--file={}", t.display()))
                .args(["--command=check", "--verify_checksum"]),
            None,
        );
    }
    // ldb ingests one file per call.
    for t in &tables {
        let out = run(
            Command::new(tool("ldb"))
                .arg(format!("--db={}", rocks.display()))
                .args(["--create_if_missing", "ingest_extern_sst"])
                .arg(t),
            None,
        );
        assert!(out.contains("ingested"), "ldb ingest_extern_sst: {out}");
    }
    assert_eq!(ldb_scan(&rocks), want, "RocksDB's scan after ingesting Silt's export");

    // And back: the archive into a new Silt database, in odd pieces.
    let back = open_mem();
    let mut ingest = RocksdbIngest::new();
    for piece in archive.chunks(777) {
        ingest.push(piece).unwrap();
    }
    assert_eq!(ingest.tables(), tables.len());
    let report = ingest.finish(&back).unwrap();
    assert_eq!(report.keys, want.len() as u64);
    assert_eq!(scan(&back), want);

    // An empty database exports an archive of no table, which takes in nothing.
    let empty = open_mem();
    let archive = export_rocksdb(&empty, 0, false, 4096);
    assert_eq!(archive.len(), 1024, "two end blocks");
    let mut ingest = RocksdbIngest::new();
    ingest.push(&archive).unwrap();
    ingest.finish(&empty).unwrap();
    assert!(scan(&empty).is_empty());
    // A cut archive is refused, and writes nothing.
    let archive = export_rocksdb(&db, 64 << 10, false, 1 << 20);
    let mut ingest = RocksdbIngest::new();
    ingest.push(&archive[..archive.len() - 1024 - 512]).unwrap();
    let fresh = open_mem();
    assert!(ingest.finish(&fresh).unwrap_err().is_corruption());
    assert!(scan(&fresh).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rocksdb_tables_archived_with_tar_and_a_live_databases_tables_ingest_into_silt() {
    let dir = scratch("ingest");
    // Two external files with overlapping keys: the later one wins.
    let first = entries(6, 2000);
    let second: Vec<_> = first.iter().step_by(3).map(|(k, v)| (k.clone(), [v.as_slice(), b"!"].concat())).collect();
    for (name, data) in [("a.sst", &first), ("b.sst", &second)] {
        let input: String = data.iter().map(|(k, v)| format!("0x{} ==> 0x{}\n", hex(k), hex(v))).collect();
        run(
            Command::new(tool("ldb"))
                .arg(format!("--db={}", dir.join("scratch-db").display()))
                .args(["--create_if_missing", "--hex", "--compression_type=lz4", "write_extern_sst"])
                .arg(dir.join(name)),
            Some(&input),
        );
    }
    run(
        Command::new("tar")
            .args(["--format=ustar", "-cf"])
            .arg(dir.join("tables.tar"))
            .arg("-C")
            .arg(&dir)
            .args(["a.sst", "b.sst"]),
        None,
    );
    let archive = std::fs::read(dir.join("tables.tar")).unwrap();
    let db = open_mem();
    let mut ingest = RocksdbIngest::new();
    for piece in archive.chunks(1000) {
        ingest.push(piece).unwrap();
    }
    ingest.finish(&db).unwrap();
    let mut want: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = first.into_iter().collect();
    want.extend(second);
    assert_eq!(scan(&db), want.into_iter().collect::<Vec<_>>());

    // A RocksDB database's own table files (not external files: no global
    // sequence number; a user-key index, LZ4), loaded and compacted by
    // ldb (which leaves them at the last level, not overlapping): read as
    // its scan shows them.
    let live = dir.join("live");
    let data = entries(7, 4000);
    let input: String = data.iter().map(|(k, v)| format!("0x{} ==> 0x{}\n", hex(k), hex(v))).collect();
    run(
        Command::new(tool("ldb")).arg(format!("--db={}", live.display())).args([
            "--create_if_missing",
            "--hex",
            "--compression_type=lz4",
            "load",
        ]),
        Some(&input),
    );
    run(Command::new(tool("ldb")).arg(format!("--db={}", live.display())).arg("compact"), None);
    let db = open_mem();
    let mut ingest = RocksdbIngest::new();
    let mut n = 0;
    for e in std::fs::read_dir(&live).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sst") {
            ingest.add_table(&p.display().to_string(), &std::fs::read(&p).unwrap()).unwrap();
            n += 1;
        }
    }
    assert!(n >= 1);
    ingest.finish(&db).unwrap();
    assert_eq!(scan(&db), data);
    assert_eq!(ldb_scan(&live), data);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A table `ldb write_extern_sst` writes with RocksDB's table options
/// changed through the database's OPTIONS file: small blocks and an index
/// restart point every 4 entries, so that index entries between restart
/// points hold size deltas, or whole handles where their keys share
/// nothing with the previous one (RocksDB's rule).
fn rocksdb_table_with_options(dir: &Path, data: &[(Vec<u8>, Vec<u8>)], options: &[(&str, &str)]) -> Vec<u8> {
    let db = dir.join("options-db");
    run(
        Command::new(tool("ldb")).arg(format!("--db={}", db.display())).args(["--create_if_missing", "put", "x", "y"]),
        None,
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-"))
        .collect();
    files.sort();
    let latest = files.last().unwrap();
    let mut text = std::fs::read_to_string(latest).unwrap();
    for (name, value) in options {
        let at = text.find(&format!("\n  {name}=")).unwrap_or_else(|| panic!("no {name} in RocksDB's OPTIONS file"));
        let end = at + 1 + text[at + 1..].find('\n').unwrap();
        text.replace_range(at..end, &format!("\n  {name}={value}"));
    }
    std::fs::write(latest, text).unwrap();
    let table = dir.join("options.sst");
    let input: String = data.iter().map(|(k, v)| format!("0x{} ==> 0x{}\n", hex(k), hex(v))).collect();
    run(
        Command::new(tool("ldb"))
            .arg(format!("--db={}", db.display()))
            .args(["--try_load_options", "--hex", "--compression_type=lz4", "write_extern_sst"])
            .arg(&table),
        Some(&input),
    );
    run(
        Command::new(tool("sst_dump"))
            .arg(format!("--file={}", table.display()))
            .args(["--command=check", "--verify_checksum"]),
        None,
    );
    std::fs::read(&table).unwrap()
}

#[test]
fn tables_with_rocksdbs_table_options_read_in_silt_as_written() {
    let dir = scratch("options");
    let data = entries(8, 3000);
    for (restart, block) in [("4", "256"), ("16", "128"), ("1", "4096")] {
        let bytes = rocksdb_table_with_options(
            &dir,
            &data,
            &[("index_block_restart_interval", restart), ("block_size", block)],
        );
        let read = read_table("options.sst", &bytes)
            .unwrap_or_else(|e| panic!("index restart interval {restart}, blocks of {block}: {e}"));
        let got: Vec<_> = read.entries().map(|e| (e.key.to_vec(), e.value.to_vec())).collect();
        assert_eq!(got, data, "index restart interval {restart}, blocks of {block}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bloom filter Silt writes is RocksDB's bit for bit: for the same
/// keys, `ldb write_extern_sst --bloom_bits=10` writes the same filter
/// block; and a RocksDB reading with bloom filters finds every key of a
/// table Silt wrote.
#[test]
fn the_bloom_filter_is_rocksdbs_bit_for_bit() {
    let dir = scratch("bloom");
    for (seed, n) in [(9, 1), (10, 37), (11, 2000), (12, 5000)] {
        let data = entries(seed, n);
        let input: String = data.iter().map(|(k, v)| format!("0x{} ==> 0x{}\n", hex(k), hex(v))).collect();
        let theirs = dir.join(format!("theirs-{seed}.sst"));
        run(
            Command::new(tool("ldb"))
                .arg(format!("--db={}", dir.join(format!("scratch-{seed}")).display()))
                .args(["--create_if_missing", "--hex", "--bloom_bits=10", "--compression_type=no", "write_extern_sst"])
                .arg(&theirs),
            Some(&input),
        );
        let theirs = read_table("theirs.sst", &std::fs::read(&theirs).unwrap()).unwrap();
        let ours = dir.join(format!("{seed:06}.sst"));
        write_table(&ours, &data, false);
        let read = read_table("ours.sst", &std::fs::read(&ours).unwrap()).unwrap();
        let (Some(t), Some(o)) = (&theirs.filter, &read.filter) else { panic!("{n} keys: a filter missing") };
        assert_eq!(o.len(), t.len(), "{n} keys: the filter's size");
        assert!(o == t, "{n} keys: the filter's bits differ from RocksDB's");
    }
    // RocksDB reads through the filter: every key of an ingested table is found.
    let data = entries(13, 3000);
    let table = dir.join("000001.sst");
    write_table(&table, &data, true);
    let db = dir.join("rocksdb");
    run(
        Command::new(tool("ldb"))
            .arg(format!("--db={}", db.display()))
            .args(["--create_if_missing", "--bloom_bits=10", "ingest_extern_sst"])
            .arg(&table),
        None,
    );
    for (k, v) in data.iter().step_by(97) {
        let got = run(
            Command::new(tool("ldb"))
                .arg(format!("--db={}", db.display()))
                .args(["--bloom_bits=10", "--hex", "get"])
                .arg(format!("0x{}", hex(k))),
            None,
        );
        assert_eq!(got.trim().trim_start_matches("0x").to_uppercase(), hex(v), "ldb get of {}", hex(k));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
