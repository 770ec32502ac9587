//! The `silt` binary as a user runs it: on a database directory the engine
//! wrote, and on backup files, one of them written by siltdb in Chromium
//! (the engine's fixture): what each command prints, its exit status, and
//! what its errors say to do.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use silt_engine::fs::StdFs;
use silt_engine::{Db, Options, U64AddOperator, WriteOptions};

const CHROMIUM_BACKUP: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../engine/tests/fixtures/chromium-export-v1.siltdump");

fn silt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_silt")).args(args).output().expect("the silt binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(args: &[&str]) -> String {
    let o = silt(args);
    assert!(o.status.success(), "silt {args:?} failed: {}", stderr(&o));
    stdout(&o)
}

/// A database of 100 keys `k000`..`k099` (values `v0`..`v99`), a key with bytes that are not text, and a counter.
fn database(dir: &Path) -> PathBuf {
    let path = dir.join("db");
    let options =
        Options { merge_operator: Some(Arc::new(U64AddOperator)), write_buffer_size: 64 << 10, ..Options::default() };
    let db = Db::open(Arc::new(StdFs::new()), &path.to_string_lossy(), options).unwrap();
    let w = WriteOptions::default();
    for i in 0..100 {
        db.put(&w, format!("k{i:03}").as_bytes(), format!("v{i}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.put(&w, b"bin\x00\xff", b"\x01\x02").unwrap();
    db.merge(&w, b"counter", &5u64.to_le_bytes()).unwrap();
    db.merge(&w, b"counter", &2u64.to_le_bytes()).unwrap();
    db.close().unwrap();
    path
}

#[test]
fn reads_a_database_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let d = db.to_str().unwrap();
    let m = ["--merge-operator", "u64add"];
    let info = ok(&[&["info", d], &m[..]].concat());
    assert!(info.contains("entries: 102"), "{info}");
    assert!(info.contains("a database directory"), "{info}");
    assert_eq!(ok(&["get", d, "k007"]), "v7\n");
    assert_eq!(ok(&[&["get", d, "counter", "--format", "hex"], &m[..]].concat()), "0700000000000000\n");
    assert_eq!(ok(&["get", d, "0x62696e00ff", "--format", "hex"]), "0102\n");
    assert_eq!(ok(&["scan", d, "--prefix", "k05", "--limit", "3"]), "k050\tv50\nk051\tv51\nk052\tv52\n");
    assert_eq!(ok(&["scan", d, "--from", "k098", "--keys-only"]), "k098\nk099\n");
    assert_eq!(
        ok(&[&["scan", d, "--to", "counter", "--reverse", "--format", "utf8"], &m[..]].concat()),
        "bin\\x00\\xff\t\\x01\\x02\n"
    );
    // A read that meets merge operands without the operator: refused, with the hint.
    let o = silt(&["scan", d, "--to", "k001"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--merge-operator u64add"), "the hint: {}", stderr(&o));
    assert_eq!(ok(&["count", d, "--prefix", "k0"]), "100\n");
    let dump = ok(&[&["dump", d], &m[..]].concat());
    assert_eq!(dump.lines().count(), 102);
    assert!(dump.starts_with("0x62696e00ff\t0x0102\ncounter\t0x0700000000000000\nk000\tv0\n"), "{dump}");
    assert!(ok(&["verify", d]).starts_with("ok: "));
    assert!(ok(&[&["stats", d], &m[..]].concat()).contains("last_sequence"));
    assert!(ok(&[&["compact", d], &m[..]].concat()).starts_with("compacted: "));
    assert_eq!(ok(&["get", d, "k099"]), "v99\n");
}

#[test]
fn exports_imports_and_reads_backup_files() {
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let d = db.to_str().unwrap();
    let backup = tmp.path().join("db.siltdump");
    let b = backup.to_str().unwrap();
    // The whole database, in the tables form: its merge operands travel, so the operator is needed to read it.
    assert!(ok(&["export", d, b, "--merge-operator", "u64add"]).starts_with("exported: "));
    // A backup file read as it is; the merge operator it names is used (and said).
    let o = silt(&["get", b, "counter", "--format", "hex"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "0700000000000000\n");
    assert!(stderr(&o).contains("was written with merge operator \"u64add\""), "{}", stderr(&o));
    assert_eq!(ok(&["get", b, "k042", "--merge-operator", "u64add"]), "v42\n");
    let copy = tmp.path().join("copy");
    let c = copy.to_str().unwrap();
    assert!(ok(&["import", b, c, "--merge-operator", "u64add"]).starts_with("imported: "));
    assert_eq!(ok(&["count", c, "--merge-operator", "u64add"]), "102\n");
    // A range, in the entries form (merges applied: no operator needed to read it).
    let part = tmp.path().join("part.siltdump");
    ok(&["export", d, part.to_str().unwrap(), "--prefix", "k01", "--form", "entries", "--merge-operator", "u64add"]);
    assert_eq!(ok(&["count", part.to_str().unwrap()]), "10\n");
    // What a browser's db.export() downloaded (siltdb in Chromium: the engine's fixture).
    assert_eq!(ok(&["get", CHROMIUM_BACKUP, "!notes!n1"]), "{\"title\":\"from Chromium\"}\n");
    assert_eq!(ok(&["count", CHROMIUM_BACKUP]), "502\n");
    assert!(ok(&["info", CHROMIUM_BACKUP]).contains("a backup file"));
}

#[test]
fn errors_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let o = silt(&["info", tmp.path().join("nothing").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("give a database directory or a backup file"), "{}", stderr(&o));
    let junk = tmp.path().join("junk.bin");
    std::fs::write(&junk, b"not a backup at all").unwrap();
    let o = silt(&["count", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("neither a database directory nor a Silt backup file"), "{}", stderr(&o));
    let db = database(tmp.path());
    let d = db.to_str().unwrap();
    let o = silt(&["get", d, "missing"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("missing is not in the database"));
    let o = silt(&["scan", d, "--from", "0xzz"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not hex"));
    let o = silt(&["import", d, tmp.path().join("x").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("give the backup file first"), "{}", stderr(&o));
    // A truncated backup: refused, nothing half read.
    let backup = tmp.path().join("db.siltdump");
    ok(&["export", d, backup.to_str().unwrap(), "--form", "entries", "--merge-operator", "u64add"]);
    let bytes = std::fs::read(&backup).unwrap();
    let cut = tmp.path().join("cut.siltdump");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = silt(&["count", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is not a whole, intact backup"), "{}", stderr(&o));
}

#[test]
fn verify_names_damage_and_repair_keeps_what_can_be_read() {
    let tmp = tempfile::tempdir().unwrap();
    // 100 keys of 200-byte values: a table of several 4 KiB blocks.
    let db = tmp.path().join("db");
    let d = db.to_str().unwrap();
    let engine = Db::open(Arc::new(StdFs::new()), d, Options::default()).unwrap();
    for i in 0..100 {
        engine
            .put(&WriteOptions::default(), format!("k{i:03}").as_bytes(), format!("v{i}{}", ".".repeat(200)).as_bytes())
            .unwrap();
    }
    engine.flush().unwrap();
    engine.close().unwrap();
    // One byte of the table's data flipped.
    let table = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .expect("a table file");
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[20] ^= 0xff;
    std::fs::write(&table, bytes).unwrap();
    let o = silt(&["verify", d]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("silt repair"), "the hint: {}", stderr(&o));
    let report = ok(&["repair", d]);
    assert!(report.starts_with("repaired: "), "{report}");
    assert!(report.contains("1 damaged"), "{report}");
    assert!(ok(&["verify", d]).starts_with("ok: "));
    // What was outside the damaged block is still there.
    assert_eq!(ok(&["get", d, "k099", "--format", "utf8"]), format!("v99{}\n", ".".repeat(200)));
    let o = silt(&["get", d, "k000"]);
    assert_eq!(o.status.code(), Some(1), "k000 was in the damaged block");
}

/// Runs one of RocksDB's tools (Debian's rocksdb-tools, from scripts/setup.sh).
fn rocksdb_tool(args: &[&str], stdin: Option<&str>) -> String {
    use std::io::Write;
    let tool = Path::new("/usr/bin").join(args[0]);
    assert!(tool.exists(), "{} is missing: run scripts/setup.sh (it installs Debian's rocksdb-tools)", tool.display());
    let mut child = Command::new(&tool)
        .args(&args[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success() && !text.contains("Corruption"), "{args:?}: {text}");
    text
}

#[test]
fn from_a_database_to_rocksdb_and_back() {
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let d = db.to_str().unwrap();
    let m = ["--merge-operator", "u64add"];
    // The recipe in the README: an archive of RocksDB tables, unpacked and ingested by ldb.
    let archive = tmp.path().join("export.tar");
    let a = archive.to_str().unwrap();
    let said = ok(&[&["export", d, a, "--form", "rocksdb", "--lz4"], &m[..]].concat());
    assert!(said.contains("exported: 102 entries"), "{said}");
    let unpacked = tmp.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    assert!(Command::new("tar").arg("-xf").arg(&archive).arg("-C").arg(&unpacked).status().unwrap().success());
    let rocks = tmp.path().join("rocksdb");
    let table = unpacked.join("000001.sst");
    rocksdb_tool(&["sst_dump", &format!("--file={}", table.display()), "--command=check", "--verify_checksum"], None);
    rocksdb_tool(
        &[
            "ldb",
            &format!("--db={}", rocks.display()),
            "--create_if_missing",
            "ingest_extern_sst",
            table.to_str().unwrap(),
        ],
        None,
    );
    let scanned = rocksdb_tool(&["ldb", &format!("--db={}", rocks.display()), "scan", "--hex"], None);
    let silt_scan = ok(&[&["scan", d, "--format", "hex"], &m[..]].concat());
    let ours: Vec<(String, String)> = silt_scan
        .lines()
        .map(|l| l.split_once('\t').unwrap())
        .map(|(k, v)| (k.to_lowercase(), v.to_lowercase()))
        .collect();
    let theirs: Vec<(String, String)> = scanned
        .lines()
        .filter_map(|l| l.split_once(" : "))
        .map(|(k, v)| (k.trim_start_matches("0x").to_lowercase(), v.trim_start_matches("0x").to_lowercase()))
        .collect();
    assert_eq!(ours.len(), 102);
    assert_eq!(theirs, ours);
    // And back: the archive makes a new database; a table RocksDB wrote is ingested into it.
    let back = tmp.path().join("back");
    let said = ok(&["import", a, back.to_str().unwrap()]);
    assert!(said.contains("imported: 102 keys from 1 RocksDB tables"), "{said}");
    let sst = tmp.path().join("more.sst");
    rocksdb_tool(
        &[
            "ldb",
            &format!("--db={}", tmp.path().join("scratch").display()),
            "--create_if_missing",
            "--compression_type=lz4",
            "write_extern_sst",
            sst.to_str().unwrap(),
        ],
        Some("k000 ==> from rocksdb\nzz ==> new\n"),
    );
    let said = ok(&["ingest", back.to_str().unwrap(), sst.to_str().unwrap()]);
    assert!(said.contains("ingested: 2 keys from 1 RocksDB tables"), "{said}");
    assert_eq!(ok(&["get", back.to_str().unwrap(), "k000"]).trim(), "from rocksdb");
    assert_eq!(ok(&["get", back.to_str().unwrap(), "zz"]).trim(), "new");
    assert_eq!(ok(&["get", back.to_str().unwrap(), "k001"]).trim(), "v1");
    // A damaged table is refused whole, naming the file, and writes nothing:
    // neither into a database nor a new directory.
    let other = tmp.path().join("other.sst");
    rocksdb_tool(
        &[
            "ldb",
            &format!("--db={}", tmp.path().join("scratch").display()),
            "--compression_type=lz4",
            "write_extern_sst",
            other.to_str().unwrap(),
        ],
        Some("k000 ==> changed\nzz ==> changed\n"),
    );
    let mut bytes = std::fs::read(&other).unwrap();
    bytes[10] ^= 0x40;
    std::fs::write(&other, &bytes).unwrap();
    let o = silt(&["ingest", back.to_str().unwrap(), sst.to_str().unwrap(), other.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("other.sst") && stderr(&o).contains("copy it again"), "{}", stderr(&o));
    assert_eq!(ok(&["get", back.to_str().unwrap(), "zz"]).trim(), "new");
    assert_eq!(ok(&["get", back.to_str().unwrap(), "k000"]).trim(), "from rocksdb");
    let never = tmp.path().join("never");
    assert!(!silt(&["import", other.to_str().unwrap(), never.to_str().unwrap()]).status.success());
    assert!(!never.exists(), "a refused import leaves no directory");
}
