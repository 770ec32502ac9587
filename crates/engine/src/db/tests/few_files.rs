//! Loads many times larger than a full pool of files holds (siltdb's OPFS
//! pool): compactions keep outputs open and merge moved files.

use super::*;

/// Loads 30,000 entries of 200 incompressible bytes (6 MB) on a file system
/// of at most 20 files, paced as siltdb paces writes, with keys in order or
/// spread over the key space; then checks them, also after a reopen with no
/// cap. Returns the statistics of the load.
fn load_on_twenty_files(spread: bool) -> crate::StatisticsSnapshot {
    // 20 files of 64 KiB targets hold ~1.3 MB split at the target. Outputs
    // that find no file for the next split (or would leave fewer than
    // flushes and logs need) go on past their target, so each compaction
    // needs one free file and frees its inputs'; short of files, the picker
    // merges files that nothing else would (an ascending load's moved
    // flushes); a write that finds no file waits in its memtable, and at
    // the memtable's limit runs a compaction to its end itself. No write is
    // refused (each batch unwraps).
    let mem = MemFs::new();
    let options = Options {
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        compression: crate::Compression::None,
        ..small_options()
    };
    let fs = crate::fs::FaultFs::new(Arc::new(mem.clone()));
    fs.set_file_cap(Some(("db", 20)));
    let db = Db::open(Arc::new(fs), "db", options.clone()).unwrap();
    let value = |i: u32| incompressible(i, 200);
    let key = |i: u32| format!("k{:010}", if spread { i.wrapping_mul(2_654_435_761) } else { i });
    let n = 30_000u32;
    for chunk in 0..n / 100 {
        let mut b = WriteBatch::new();
        for i in chunk * 100..(chunk + 1) * 100 {
            b.put(key(i).as_bytes(), &value(i));
        }
        db.write(&W, b).unwrap_or_else(|e| {
            let mut files = mem.list("db").unwrap();
            files.sort();
            panic!(
                "batch {chunk}: {e}; files {files:?}; per level {:?}\n{}",
                db.properties().files_per_level,
                db.statistics()
            )
        });
        // Paced as siltdb paces writes (crates/wasm: about 4 bytes of
        // background work per byte written).
        let _ = db.do_background_work(256);
    }
    while db.do_background_work(64).unwrap().work_left {}
    let st = db.statistics();
    assert_eq!(count_entries(&db), n as usize);
    db.verify().unwrap();
    db.close().unwrap();
    let db = Db::open(Arc::new(mem), "db", options).unwrap();
    for i in (0..n).step_by(97) {
        assert_eq!(db.get(&r(), key(i).as_bytes()).unwrap().as_deref(), Some(&value(i)[..]));
    }
    st
}

#[test]
fn a_load_many_times_what_a_full_pool_of_files_holds_goes_through_as_compactions_keep_outputs_open() {
    let st = load_on_twenty_files(true);
    assert!(st.ticker("silt.compactions") >= 5, "{st}");
    assert!(st.ticker("silt.compaction.outputs.kept.open") >= 1, "{st}");
}

#[test]
fn an_ascending_load_many_times_what_a_full_pool_of_files_holds_goes_through_as_moved_files_are_merged() {
    // In order, flushes move down unread (the L0 trivial move): only the
    // picker's merges for want of files keep their number within the cap.
    let st = load_on_twenty_files(false);
    assert!(st.ticker("silt.compaction.trivial.moves") >= 1, "{st}");
    assert!(st.ticker("silt.compaction.for.files") >= 1, "{st}");
}
