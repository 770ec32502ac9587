//! Compression dictionaries through the database: which tables get one
//! (bottommost outputs, ingests and imports; every table with
//! `compression_dict_every_level`), what they save, and that every path
//! that reads or moves tables reads them the same (reopen, verify, exports
//! in both forms, imports).

mod common;

use std::sync::Arc;

use common::read_all;
use silt_engine::fs::{Fs, MemFs};
use silt_engine::{Db, ExportForm, ExportOptions, IngestOptions, Options, ReadOptions, WriteBatch, WriteOptions};

const DICT_READS: &str = "silt.compression.dict.block.read.count";

/// JSON-like records: field names and values from small sets repeat
/// across records, ids are unique.
fn record(i: u32) -> Vec<u8> {
    let cities = ["Lisbon", "Osaka", "Toronto", "Nairobi", "Lima", "Oslo", "Quito"];
    let products = ["Ceramic mug, 350 ml", "Linen tea towel", "Cast iron skillet", "Chef knife, 20 cm"];
    format!(
        r#"{{"id":"ord_{:07x}","status":"{}","customer":{{"name":"Person {}","email":"person{}@example.com"}},"shipping":{{"city":"{}","carrier":"UPS Standard"}},"items":[{{"name":"{}","quantity":{}}}],"currency":"EUR"}}"#,
        i.wrapping_mul(2_654_435_761),
        ["pending", "paid", "shipped", "delivered"][i as usize % 4],
        i * 7 % 9973,
        i % 1000,
        cities[i as usize % cities.len()],
        products[i as usize % products.len()],
        1 + i % 4,
    )
    .into_bytes()
}

fn key(i: u32) -> Vec<u8> {
    format!("order:{i:08}").into_bytes()
}

/// Records of about 250 bytes: the bottommost table of them all holds more
/// than the 1 MiB a table samples, so its dictionary is made partway
/// through it (the blocks after are compressed as they come).
const N: u32 = 6000;

fn options(dict: usize, every_level: bool) -> Options {
    Options {
        write_buffer_size: 256 << 10,
        compression_dict_bytes: dict,
        compression_dict_every_level: every_level,
        ..Options::default()
    }
}

fn fill(db: &Db) {
    for b in (0..N).step_by(500) {
        let mut batch = WriteBatch::new();
        for i in b..(b + 500).min(N) {
            batch.put(&key(i), &record(i));
        }
        db.write(&WriteOptions::default(), batch).unwrap();
    }
    db.flush().unwrap();
}

fn has_every_record(db: &Db) {
    let r = ReadOptions::default();
    for i in (0..N).step_by(13) {
        assert_eq!(db.get(&r, &key(i)).unwrap().as_deref(), Some(&record(i)[..]), "record {i}");
    }
    let all = read_all(db);
    assert_eq!(all.len(), N as usize);
    assert!(all.iter().zip(0..).all(|((k, v), i)| *k == key(i) && *v == record(i)));
    db.verify().unwrap();
}

fn table_bytes(db: &Db) -> u64 {
    db.properties().table_bytes
}

/// A fresh database read from its files (tables opened anew, so the
/// dictionary reads are counted).
fn reopen(fs: &MemFs, opts: Options) -> Db {
    Db::open(Arc::new(fs.clone()), "db", opts).unwrap()
}

#[test]
fn bottommost_tables_get_dictionaries_and_are_smaller() {
    let mut sizes = Vec::new();
    for dict in [0, 16 << 10] {
        let fs = MemFs::new();
        let db = reopen(&fs, options(dict, false));
        fill(&db);
        // Flushes write no dictionary unless every level asks for one.
        drop(db);
        let db = reopen(&fs, options(dict, false));
        has_every_record(&db);
        assert_eq!(db.statistics().ticker(DICT_READS), 0, "a flush wrote a dictionary");
        db.compact_range(None, None).unwrap();
        sizes.push(table_bytes(&db));
        drop(db);
        let db = reopen(&fs, options(dict, false));
        has_every_record(&db);
        let tables = db.properties().files_per_level.iter().sum::<u64>();
        let dicts = db.statistics().ticker(DICT_READS);
        if dict == 0 {
            assert_eq!(dicts, 0);
        } else {
            assert_eq!(dicts, tables, "every bottommost table has a dictionary, read once");
        }
        // Read by a database that asks for none: the tables say what they hold.
        drop(db);
        has_every_record(&reopen(&fs, options(0, false)));
    }
    assert!((sizes[1] as f64) < sizes[0] as f64 * 0.8, "{} bytes with dictionaries, {} without", sizes[1], sizes[0]);
}

#[test]
fn every_level_puts_dictionaries_in_flushed_tables_too() {
    let fs = MemFs::new();
    let db = reopen(&fs, options(4096, true));
    fill(&db);
    drop(db);
    let db = reopen(&fs, options(4096, true));
    has_every_record(&db);
    assert!(db.statistics().ticker(DICT_READS) > 0);
}

#[test]
fn ingests_and_imports_write_dictionaries_and_exports_carry_them() {
    let fs = MemFs::new();
    let db = reopen(&fs, options(8192, false));
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..N).map(|i| (key(i), record(i))).collect();
    db.ingest_pairs(pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect(), &IngestOptions::default()).unwrap();
    drop(db);
    let db = reopen(&fs, options(8192, false));
    has_every_record(&db);
    assert!(db.statistics().ticker(DICT_READS) > 0, "an ingest wrote no dictionary");
    for (form, importer_dict) in [(ExportForm::Tables, 0), (ExportForm::Entries, 8192)] {
        let mut e = db.export(&ExportOptions { form, ..ExportOptions::default() }).unwrap();
        let mut stream = Vec::new();
        while let Some(piece) = e.next_chunk(64 << 10).unwrap() {
            stream.extend_from_slice(&piece);
        }
        // The tables form carries the files as they are, dictionaries and
        // all (the importer asks for none); the entries form is rewritten
        // by an importer that asks for them.
        let dst_fs = MemFs::new();
        let dst = reopen(&dst_fs, options(importer_dict, false));
        let mut imp = dst.import().unwrap();
        imp.push(&dst, &stream).unwrap();
        imp.finish(&dst).unwrap();
        drop(dst);
        let dst = reopen(&dst_fs, options(importer_dict, false));
        has_every_record(&dst);
        assert!(dst.statistics().ticker(DICT_READS) > 0, "{form:?}: the import has no dictionary");
    }
    let _ = fs.list("db").unwrap();
}
