//! Optimistic transactions against other writers whose writes have gone
//! through flushes and compactions: the conflict check must find a newer
//! write wherever it now lives.

use std::sync::Arc;

use silt_engine::fs::MemFs;
use silt_engine::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};

const W: WriteOptions = WriteOptions { sync: false };

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A range delete over every key, then a put of every key: compaction
/// outputs split between keys, and the file before each split ends in the
/// tombstone's sentinel for the next file's first key. A transaction begun
/// before those writes and writing one of the keys must fail, whichever
/// file its key landed in.
#[test]
fn a_write_to_the_first_key_of_a_compaction_output_is_a_conflict() {
    let options = Options {
        write_buffer_size: 256 << 10,
        target_file_size_base: 64 << 10,
        block_size: 1024,
        compression: silt_engine::Compression::None,
        ..Options::default()
    };
    let db = Db::open(Arc::new(MemFs::new()), "db", options).unwrap();
    let n = 3000u32;
    let value = vec![b'v'; 200];
    let mut txns: Vec<_> = (0..n).map(|_| db.begin_optimistic()).collect();
    db.delete_range(&W, &key(0), &key(n)).unwrap();
    let mut b = WriteBatch::new();
    for i in 0..n {
        b.put(&key(i), &value);
    }
    db.write(&W, b).unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let files = db.properties().files_per_level.iter().sum::<u64>();
    assert!(files >= 10, "want many compaction outputs, got {files}");
    let mut committed = vec![];
    for (i, mut t) in txns.drain(..).enumerate() {
        t.put(&key(i as u32), b"from the transaction").unwrap();
        match t.commit(&db, &W) {
            Ok(()) => committed.push(i),
            Err(Error::Busy(_)) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(committed, Vec::<usize>::new(), "lost updates: these committed over a newer write");
    assert_eq!(db.get(&ReadOptions::default(), &key(0)).unwrap(), Some(value));
}
