//! The database's own tests, by concern; helpers shared by all here.

use std::sync::Arc;

use super::*;
use crate::fs::MemFs;
use crate::testutil::incompressible;

fn small_options() -> Options {
    Options { write_buffer_size: 64 << 10, block_size: 512, ..Options::default() }
}

fn open(fs: &MemFs) -> Db {
    Db::open(Arc::new(fs.clone()), "db", small_options()).unwrap()
}

/// Entries a full scan yields (checking the scan's status).
fn count_entries(db: &Db) -> usize {
    let mut it = db.iter(&r()).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status().unwrap();
    n
}

const W: WriteOptions = WriteOptions { sync: false };

fn r() -> ReadOptions<'static> {
    ReadOptions::default()
}

mod basics;
mod failures;
mod few_files;
mod threads;
