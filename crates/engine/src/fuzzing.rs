//! Entry points for the fuzz targets (`fuzz/`, run with `cargo fuzz`) and the
//! corpus test (`tests/fuzz_corpus.rs`, run by `cargo test`): one function per
//! decoder of bytes read from storage. Each takes arbitrary bytes and must
//! return without panicking, whatever the bytes are; decoding errors are
//! expected. Each returns whether the input decoded entirely without error
//! (the corpus test requires that of the valid seeds, so a target that
//! stopped reaching its decoder would fail it). They are public only so that the fuzz crate can
//! call them; they are not part of the database API.
//!
//! | target          | decoder                                                              |
//! |-----------------|----------------------------------------------------------------------|
//! | `block`         | block framing (type byte, LZ4) then a data block's entries and hash index |
//! | `index`         | an index block: separators and block handles, and its flat decoding  |
//! | `filter`        | a FastLocalBloom filter block, probed one by one and in batches      |
//! | `table`         | a whole table file: footer, metaindex, properties, tombstones, data  |
//! | `wal`           | the record log (WAL format) and the write batches in its records     |
//! | `wal_recovery`  | a database's recovery replaying a WAL of these bytes                 |
//! | `manifest_edit` | one manifest edit                                                    |
//! | `manifest`      | a database's recovery from a manifest of these records               |
//! | `export_stream` | an import of a backup stream (both forms) into a new database, whole and in pieces |
//! | `rocksdb_table` | a RocksDB table read whole, and as a tar archive of tables ingested in pieces |
//!
//! The OPFS pool's file header has its own target in `silt-wasm`
//! (`silt_wasm::pool::header::Header::decode`).

use std::sync::Arc;

use bytes::Bytes;

use crate::batch::WriteBatch;
use crate::cache::BlockCache;
use crate::format::key;
use crate::fs::{Fs, MemFs};
use crate::iter::InternalIterator;
use crate::sst::block::{Block, BlockOrigin};
use crate::sst::filter::{key_hash, BloomFilter};
use crate::sst::flat_index::FlatIndex;
use crate::sst::format::{decode_block_contents, BlockHandle};
use crate::sst::Table;
use crate::stats::Statistics;
use crate::version::VersionEdit;
use crate::wal::{LogReader, LogWriter};
use crate::{Db, Options, ReadOptions};

/// Bounds the work one input may cause (entries walked per iterator).
const MAX_STEPS: usize = 1 << 16;

fn origin() -> BlockOrigin {
    BlockOrigin { file: Arc::from("fuzz"), offset: 0 }
}

/// Walks `it` forward and backward and seeks to the keys it saw (and to
/// `probe`), touching every key and value.
fn exercise(it: &mut dyn InternalIterator, probe: &[u8]) -> usize {
    let mut touched = 0usize;
    let mut seen = Vec::new();
    it.seek_to_first();
    while it.valid() && seen.len() < MAX_STEPS {
        touched = touched.wrapping_add(it.key().len() + it.value().len());
        if seen.len() < 8 {
            seen.push(it.key().to_vec());
        }
        let _ = key::parse(it.key());
        it.next();
    }
    let _ = it.status();
    it.seek_to_last();
    let mut n = 0;
    while it.valid() && n < MAX_STEPS {
        touched = touched.wrapping_add(it.value().len());
        it.prev();
        n += 1;
    }
    let _ = it.status();
    seen.push(probe.to_vec());
    for k in &seen {
        it.seek(k);
        if it.valid() {
            it.next();
        }
        it.seek_for_prev(k);
        if it.valid() {
            it.prev();
        }
    }
    touched
}

/// A block's framing (first byte: the type) and then its entries. A block
/// of type 2 (compressed with its table's dictionary) brings the dictionary
/// along: `2, dictionary length: u32 le, dictionary, contents` (a table may
/// carry a dictionary of any length; one of up to 1 MiB is tried).
pub fn block(data: &[u8]) -> bool {
    let Some((&ty, mut rest)) = data.split_first() else { return false };
    let mut dict = None;
    if ty == 2 {
        let Some((len, after)) = rest.split_first_chunk::<4>() else { return false };
        let len = u32::from_le_bytes(*len) as usize;
        if len > 1 << 20 {
            return false;
        }
        let Some((d, after)) = after.split_at_checked(len) else { return false };
        (dict, rest) = (Some(d), after);
    }
    let Ok(raw) = decode_block_contents(rest.to_vec(), ty, dict, "fuzz", 0) else { return false };
    let Ok(b) = Block::new(raw, origin()) else { return false };
    let mut it = b.iter();
    exercise(&mut it, data);
    let mut ok = it.status().is_ok();
    // Point lookups through the block's hash index (block.rs), for the first
    // keys it holds and for the input: in a block that decoded whole, each
    // key is found where it is.
    let mut keys = Vec::new();
    it.seek_to_first();
    while it.valid() && keys.len() < 8 {
        keys.push(it.key().to_vec());
        it.next();
    }
    for k in &keys {
        it.seek_for_get(k, key_hash(key::user_key(k)));
        ok &= it.valid() && it.key() == k.as_slice() && it.status().is_ok();
    }
    it.seek_for_get(&key::seek_key(rest, 7), key_hash(rest));
    let _ = it.status();
    // Bytewise seeks too: the range-deletion and metaindex blocks use them.
    let mut it = b.iter();
    it.seek_by(rest, key::bytewise);
    it.seek_for_prev_by(rest, key::bytewise);
    ok
}

/// An index block: every value must decode as a block handle or be refused.
pub fn index(data: &[u8]) -> bool {
    let Ok(b) = Block::new(Bytes::copy_from_slice(data), origin()) else { return false };
    let mut it = b.iter();
    it.seek_to_first();
    let (mut n, mut ok) = (0, true);
    while it.valid() && n < MAX_STEPS {
        ok &= BlockHandle::decode(it.value()).is_some_and(|h| h.offset.checked_add(h.size).is_some());
        ok &= key::parse(it.key()).is_some();
        it.next();
        n += 1;
    }
    ok &= it.status().is_ok();
    exercise(&mut b.iter(), data);
    // The flat index a table decodes at open (flat_index.rs): whatever it
    // accepts, a seek from any earlier position lands where a whole search
    // does, at an entry at or after the target.
    match FlatIndex::decode(&b, "fuzz", u64::MAX, u64::MAX) {
        Ok(flat) => {
            let mut targets: Vec<Vec<u8>> = (0..flat.len().min(8)).map(|i| flat.key(i).to_vec()).collect();
            targets.push(key::seek_key(data, 7));
            for t in &targets {
                let at = flat.seek(t);
                assert!(at == flat.len() || key::compare(flat.key(at), t).is_ge(), "flat index seek past its target");
                assert!(at == 0 || key::compare(flat.key(at - 1), t).is_lt(), "flat index seek short of its target");
                assert_eq!(flat.seek_from(at / 2, t), at, "galloping and binary flat index seeks disagree");
            }
        }
        Err(_) => ok = false,
    }
    ok
}

/// A filter block, probed with hashes derived from the input.
pub fn filter(data: &[u8]) -> bool {
    let Some(f) = BloomFilter::new(Bytes::copy_from_slice(data)) else { return false };
    let mut hashes: Vec<u64> = data
        .chunks(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .take(64)
        .collect();
    hashes.extend([0, u64::MAX, 1 << 32, 0x9e37_79b9_7f4a_7c15]);
    let mut out = vec![false; hashes.len()];
    f.may_contain_batch(&hashes, &mut out);
    for (h, batched) in hashes.iter().zip(&out) {
        let one = f.may_contain_hash(*h);
        assert_eq!(one, *batched, "batched and single filter probes disagree on hash {h:#x}");
    }
    let _ = f.may_contain_hash(crate::sst::filter::key_hash(data));
    true
}

/// A whole table file.
pub fn table(data: &[u8]) -> bool {
    let fs = MemFs::new();
    let Ok(file) = fs.open("t.sst", true) else { return false };
    if file.append(data).is_err() {
        return false;
    }
    let cache = Arc::new(BlockCache::new(1 << 20));
    let Ok(t) = Table::open(file, "t.sst", 1, cache, Arc::new(Statistics::default())) else { return false };
    let t = Arc::new(t);
    let ok = t.verify().is_ok();
    let mut it = t.iter(true);
    exercise(&mut it, &key::seek_key(data.get(..16).unwrap_or(data), u64::MAX >> 8));
    // Point lookups (filter, flat index, the blocks' hash indexes) of the
    // first keys and of the input.
    let mut keys = vec![data.get(..16).unwrap_or(data).to_vec()];
    it.seek_to_first();
    while it.valid() && keys.len() < 9 {
        keys.push(key::user_key(it.key()).to_vec());
        it.next();
    }
    let mut gets_ok = true;
    for (n, k) in keys.iter().enumerate() {
        let mut ctx = crate::read::GetContext::new(k, None, None);
        let r = t.get(&key::seek_key(k, u64::MAX >> 8), key_hash(k), &mut ctx);
        // Every key the iterator saw is found.
        gets_ok &= r.is_ok() && (n == 0 || ctx.is_done());
    }
    if let Some(ts) = t.tombstones() {
        let _ = ts.max_covering_seq(b"k", u64::MAX >> 8);
        let _ = ts.max_covering_seq(data, 1);
    }
    ok && gets_ok && it.status().is_ok()
}

/// The record log and the write batches in its records.
pub fn wal(data: &[u8]) -> bool {
    let fs = MemFs::new();
    let Ok(file) = fs.open("000001.log", true) else { return false };
    if file.append(data).is_err() {
        return false;
    }
    let Ok(mut reader) = LogReader::new(file, "000001.log") else { return false };
    let (mut n, mut ok) = (0, true);
    loop {
        match reader.next_record() {
            Ok(Some((rec, offset))) => {
                // from_record walks every op of the batch.
                ok &= WriteBatch::from_record(rec, "000001.log", offset).is_ok();
            }
            Ok(None) => break,
            Err(_) => {
                ok = false;
                break;
            }
        }
        n += 1;
        if n > MAX_STEPS {
            break;
        }
    }
    ok && reader.tail_corruption().is_none()
}

fn small_options() -> Options {
    Options { write_buffer_size: 64 << 10, ..Options::default() }
}

/// The table files of a new database with `opts` after `entries` were put
/// and flushed.
fn flushed_tables(opts: Options, entries: impl Iterator<Item = (String, String)>) -> Vec<Vec<u8>> {
    use crate::fs::read_all;
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = Db::open(fs.clone(), "db", opts).expect("seed database opens");
    for (k, v) in entries {
        db.put(&crate::WriteOptions::default(), k.as_bytes(), v.as_bytes()).expect("seed write");
    }
    db.flush().expect("seed flush");
    let names = fs.list("db").expect("seed list");
    let tables = names.iter().filter(|n| n.ends_with(".sst")).map(|name| {
        let path = format!("db/{name}");
        read_all(&*fs.open(&path, false).expect("seed open"), &path).expect("seed read")
    });
    tables.collect()
}

/// Reads everything of a database; whether all of it read without error.
fn read_db(db: &Db) -> bool {
    let mut ok = match db.iter(&ReadOptions::default()) {
        Ok(mut it) => {
            it.seek_to_first();
            let mut n = 0;
            while it.valid() && n < MAX_STEPS {
                n += 1;
                it.next();
            }
            it.status().is_ok()
        }
        Err(_) => false,
    };
    ok &= db.get(&ReadOptions::default(), b"k").is_ok();
    ok && db.verify().is_ok()
}

/// A database's recovery replaying a WAL that holds `data`.
pub fn wal_recovery(data: &[u8]) -> bool {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let Ok(db) = Db::open(fs.clone(), "db", small_options()) else { return false };
    let _ = db.close();
    drop(db);
    let Ok(names) = fs.list("db") else { return false };
    for name in names.iter().filter(|n| n.ends_with(".log")) {
        let path = format!("db/{name}");
        let _ = fs.remove(&path);
        if let Ok(f) = fs.open(&path, true) {
            let _ = f.append(data);
        }
    }
    match Db::open(fs, "db", small_options()) {
        Ok(db) => read_db(&db) && db.flush().is_ok(),
        Err(_) => false,
    }
}

/// One manifest edit.
pub fn manifest_edit(data: &[u8]) -> bool {
    let Ok(edit) = VersionEdit::decode(data, "MANIFEST-000001", 0) else { return false };
    // What decodes must encode and decode to the same edit.
    let again = VersionEdit::decode(&edit.encode(), "MANIFEST-000001", 0)
        .expect("an edit that decoded must decode again after encoding");
    assert_eq!(edit, again, "an edit changed through encode and decode");
    true
}

/// A database's recovery from a manifest whose records are the input split
/// at 2-byte little-endian lengths.
pub fn manifest(data: &[u8]) -> bool {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let path = "db/MANIFEST-000001";
    let Ok(file) = fs.open(path, true) else { return false };
    let mut w = LogWriter::new(file, 0);
    let mut rest = data;
    while rest.len() >= 2 {
        let len = (u16::from_le_bytes([rest[0], rest[1]]) as usize).min(rest.len() - 2);
        if w.add_record(&rest[2..2 + len]).is_err() {
            return false;
        }
        rest = &rest[2 + len..];
    }
    // Empty WALs for the first file numbers, so that a manifest naming one of
    // them as its WAL gets past that check to the rest of recovery.
    for n in 1..=8 {
        let _ = fs.open(&format!("db/{n:06}.log"), true);
    }
    match Db::open(fs, "db", small_options()) {
        Ok(db) => read_db(&db),
        Err(_) => false,
    }
}

/// An import of an export stream of these bytes (an untrusted backup: a
/// user picks any file) into a new database: pushed whole, and again in
/// pieces of 37 bytes (the importer keeps chunks that pieces split). Both
/// must end alike, with the same entries and tables; an import that
/// finished must read whole and verify. Memory stays bounded by what the
/// stream sends (`docs/format.md`, "Export stream": the limits).
pub fn export_stream(data: &[u8]) -> bool {
    let whole = import_in_pieces(data, data.len().max(1));
    let pieces = import_in_pieces(data, 37);
    let shape = |r: &Option<crate::ImportReport>| r.map(|r| (r.entries, r.table_files, r.table_bytes));
    assert_eq!(shape(&whole), shape(&pieces), "an import's outcome depended on where its stream was cut");
    whole.is_some()
}

/// The import of `data` pushed in pieces of `piece` bytes, if it finished
/// and the database then read whole and verified.
fn import_in_pieces(data: &[u8], piece: usize) -> Option<crate::ImportReport> {
    let db = Db::open(Arc::new(MemFs::new()), "db", small_options()).ok()?;
    let mut importer = db.import().ok()?;
    for p in data.chunks(piece) {
        // A failed push leaves the importer to be dropped: it deletes what it wrote.
        importer.push(&db, p).ok()?;
    }
    let report = importer.finish(&db).ok()?;
    (read_db(&db) && db.verify().is_ok()).then_some(report)
}

/// A RocksDB table of these bytes (a file a user picks: `silt ingest`,
/// `importDatabase(..., { format: 'rocksdb' })`): read whole, then
/// ingested into a new database as a bare table and, when it is a tar
/// archive, in pieces of 61 bytes; both ingests must end alike.
pub fn rocksdb_table(data: &[u8]) -> bool {
    let read = crate::rocksdb::read_table("fuzz.sst", data).is_ok();
    let ingest = |piece: usize| {
        let db = Db::open(Arc::new(MemFs::new()), "db", small_options()).ok()?;
        let mut ingest = crate::RocksdbIngest::new();
        for p in data.chunks(piece.max(1)) {
            ingest.push(p).ok()?;
        }
        let report = ingest.finish(&db).ok()?;
        read_db(&db).then_some(report.keys)
    };
    let whole = ingest(data.len());
    assert_eq!(whole, ingest(61), "an ingest's outcome depended on where its bytes were cut");
    if crate::rocksdb::tar::is_tar(data) {
        whole.is_some()
    } else {
        read && whole.is_some()
    }
}

/// A fuzz target: decodes `data` every way it can; true when it decoded.
pub type Target = fn(&[u8]) -> bool;

/// Every target by name, for the corpus test and the fuzz crate.
pub const TARGETS: &[(&str, Target)] = &[
    ("block", block),
    ("index", index),
    ("filter", filter),
    ("table", table),
    ("wal", wal),
    ("wal_recovery", wal_recovery),
    ("manifest_edit", manifest_edit),
    ("manifest", manifest),
    ("export_stream", export_stream),
    ("rocksdb_table", rocksdb_table),
];

/// Valid inputs for every target, made by a real database and the real
/// builders: the starting corpus (`cargo test` mutates them; `cargo fuzz`
/// starts from them, see `fuzz/README.md`). Pairs of target name and bytes.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    use crate::format::key::{internal_key, ValueType};
    use crate::fs::read_all;
    use crate::sst::block::BlockBuilder;
    use crate::sst::filter::FilterBuilder;
    use crate::sst::format::{frame_block, Checksum};
    use crate::{Compression, WriteOptions};

    let mut out = Vec::new();
    // Blocks, as the table builder makes them: framed plain and with LZ4,
    // with a hash index (format version 2) and without (version 1, LevelDB's
    // restart interval).
    for (mut b, count) in [(BlockBuilder::with_hash_index(4), 100u64), (BlockBuilder::new(16), 200)] {
        for i in 0..count {
            let k = internal_key(format!("key{i:05}").as_bytes(), 1000 - i, ValueType::Put);
            let v = format!("value of key {i} {}", "x".repeat((i % 7) as usize * 10));
            b.add_hashed(&k, v.as_bytes(), key_hash(key::user_key(&k)));
        }
        let raw = b.finish();
        for compression in [Compression::None, Compression::Lz4] {
            let mut framed = Vec::new();
            let n = frame_block(&raw, compression, None, Checksum::Xxh3, &mut framed);
            let mut seed = vec![framed[n]];
            seed.extend_from_slice(&framed[..n]);
            out.push(("block", seed));
        }
        // With a dictionary (type 2), which the input carries.
        let dict = b"value of key \x00 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx key0 key00".repeat(4);
        let mut framed = Vec::new();
        let n = frame_block(&raw, Compression::Lz4, Some(&dict), Checksum::Xxh3, &mut framed);
        assert_eq!(framed[n], 2, "the seed block compressed with its dictionary");
        let mut seed = vec![2];
        seed.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        seed.extend_from_slice(&dict);
        seed.extend_from_slice(&framed[..n]);
        out.push(("block", seed));
    }
    let mut ix = BlockBuilder::new(1);
    for i in 0..50u64 {
        let mut handle = Vec::new();
        BlockHandle { offset: i * 4096, size: 4000 + i }.encode_to(&mut handle);
        ix.add(&internal_key(format!("sep{i:04}").as_bytes(), u64::MAX >> 8, ValueType::Put), &handle);
    }
    out.push(("index", ix.finish()));
    for bits in [4, 10, 20] {
        let mut f = FilterBuilder::new(bits);
        for i in 0..500u32 {
            f.add_key(format!("key{i:05}").as_bytes());
        }
        out.push(("filter", f.finish()));
    }
    // A database's files: tables (with range tombstones), WAL, manifest.
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let opts = Options { write_buffer_size: 64 << 10, block_size: 512, ..Options::default() };
    let db = Db::open(fs.clone(), "db", opts).expect("seed database opens");
    let w = WriteOptions::default();
    for i in 0..3000u32 {
        db.put(&w, format!("key{:05}", (i * 7919) % 3000).as_bytes(), format!("value {i}").repeat(3).as_bytes())
            .expect("seed write");
        if i % 97 == 0 {
            db.delete_range(&w, format!("key{i:05}").as_bytes(), format!("key{:05}", i + 5).as_bytes())
                .expect("seed range delete");
        }
        if i % 31 == 0 {
            db.delete(&w, format!("key{:05}", i / 2).as_bytes()).expect("seed delete");
        }
    }
    db.flush().expect("seed flush");
    while db.do_background_work(64).expect("seed background work").work_left {}
    for i in 0..40u32 {
        db.put(&w, format!("late{i:03}").as_bytes(), b"in the wal").expect("seed write");
    }
    let files = fs.list("db").expect("seed list");
    for name in &files {
        let path = format!("db/{name}");
        let bytes = read_all(&*fs.open(&path, false).expect("seed open"), &path).expect("seed read");
        if name.ends_with(".sst") {
            out.push(("table", bytes));
        } else if name.ends_with(".log") {
            out.push(("wal", bytes.clone()));
            out.push(("wal_recovery", bytes));
        } else if name.starts_with("MANIFEST-") {
            for (rec, _) in manifest_records(&*fs, &path) {
                out.push(("manifest_edit", rec));
            }
        }
    }
    // A small table too (a few blocks): the fuzzer mutates small inputs
    // much faster than the tens of kilobytes of the one above.
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let opts = Options { block_size: 256, ..small_options() };
    let db = Db::open(fs.clone(), "db", opts).expect("seed database opens");
    for i in 0..60u32 {
        db.put(&w, format!("k{i:03}").as_bytes(), format!("small value {i}").as_bytes()).expect("seed write");
    }
    db.delete_range(&w, b"k010", b"k015").expect("seed range delete");
    db.flush().expect("seed flush");
    // Its backups, in both forms (a few kilobytes each): `export_stream`.
    for form in [crate::ExportForm::Tables, crate::ExportForm::Entries] {
        let mut exporter = db.export(&crate::ExportOptions { form, ..Default::default() }).expect("seed export");
        let mut stream = Vec::new();
        while let Some(chunk) = exporter.next_chunk(1 << 16).expect("seed export chunk") {
            stream.extend_from_slice(&chunk);
        }
        out.push(("export_stream", stream));
    }
    // RocksDB tables (plain and LZ4) and an export of them as an archive.
    for lz4 in [false, true] {
        let mut t = crate::rocksdb::TableWriter::new(crate::rocksdb::TableWriterOptions {
            lz4,
            block_size: 256,
            bloom_bits_per_key: 10,
        });
        for i in 0..40u32 {
            t.add(format!("rk{i:03}").as_bytes(), format!("rocksdb value {i}").repeat(2).as_bytes()).expect("seed add");
        }
        out.push(("rocksdb_table", t.finish().expect("seed table")));
    }
    let mut exporter = db
        .export(&crate::ExportOptions {
            form: crate::ExportForm::Rocksdb,
            target_file_size: 1024,
            ..Default::default()
        })
        .expect("seed export");
    let mut archive = Vec::new();
    while let Some(chunk) = exporter.next_chunk(1 << 16).expect("seed export chunk") {
        archive.extend_from_slice(&chunk);
    }
    out.push(("rocksdb_table", archive));
    drop(db);
    // A table with a compression dictionary (format version 3).
    let opts = Options {
        block_size: 512,
        compression_dict_bytes: 1024,
        compression_dict_every_level: true,
        ..small_options()
    };
    let records = (0..600u32).map(|i| {
        let v = format!(r#"{{"id":{i},"name":"user {}","plan":"{}"}}"#, i * 31 % 97, ["free", "pro"][i as usize % 2]);
        (format!("rec{i:04}"), v)
    });
    for bytes in flushed_tables(opts, records) {
        assert_eq!(bytes[bytes.len() - 16], 3, "the seed table has a dictionary");
        out.push(("table", bytes));
    }
    // And one in format version 1 (no hash index in its data blocks).
    let opts = Options { block_size: 256, format_version: 1, ..small_options() };
    for bytes in flushed_tables(opts, (0..30u32).map(|i| (format!("v1k{i:03}"), format!("small value {i}")))) {
        out.push(("table", bytes));
    }

    // The `manifest` target opens the manifest alone, so its seed comes from
    // a database with no table files (its tables would be missing).
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = Db::open(fs.clone(), "db", small_options()).expect("seed database opens");
    db.put(&w, b"k", b"v").expect("seed write");
    drop(db);
    let name = fs.list("db").expect("seed list").into_iter().find(|n| n.starts_with("MANIFEST-")).expect("a manifest");
    let mut joined = Vec::new();
    for (rec, _) in manifest_records(&*fs, &format!("db/{name}")) {
        joined.extend_from_slice(&(rec.len() as u16).to_le_bytes());
        joined.extend_from_slice(&rec);
    }
    out.push(("manifest", joined));
    out
}

fn manifest_records(fs: &dyn Fs, path: &str) -> Vec<(Vec<u8>, u64)> {
    let mut reader = LogReader::new(fs.open(path, false).expect("seed open"), path).expect("seed manifest reader");
    std::iter::from_fn(|| reader.next_record().expect("seed manifest record")).collect()
}
