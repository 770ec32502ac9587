//! Corruption tests: flip bytes in, and truncate, every kind of file a
//! database holds. Opening and reading must give `Corruption` (or
//! `ChecksumMismatch`) or exactly the right data — never a panic, never a
//! wrong value. Only the unsynced tail of the WAL may be lost silently,
//! because a torn write at the end of the log looks just like that.

use std::collections::BTreeMap;
use std::sync::Arc;

use silt_engine::fs::{read_all, Fs, MemFs};
use silt_engine::{Db, Error, Options, ReadOptions, WriteOptions};

type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// `SILT_SOAK=1` (scripts/soak.sh): flip a bit in every byte of every file.
fn soak() -> bool {
    std::env::var("SILT_SOAK").is_ok_and(|v| v != "0" && !v.is_empty())
}

fn options() -> Options {
    Options { write_buffer_size: 64 << 10, block_size: 512, ..Options::default() }
}

/// A database with several tables, a manifest and a WAL holding the last
/// writes. Returns its files and the list of states after each WAL write.
/// Every file of a database by path and content.
type Files = Vec<(String, Vec<u8>)>;

fn build() -> (Files, State, Vec<State>) {
    let fs = MemFs::new();
    let db = Db::open(Arc::new(fs.clone()), "db", options()).unwrap();
    let mut state = State::new();
    let w = WriteOptions::default();
    for i in 0..2500u32 {
        let k = format!("key{:05}", (i * 7919) % 3000).into_bytes();
        let v = format!("value-{i}-").repeat(1 + i as usize % 9).into_bytes();
        db.put(&w, &k, &v).unwrap();
        state.insert(k, v);
        if i % 300 == 299 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    // The last writes stay in the WAL only.
    let mut wal_states = vec![state.clone()];
    for i in 0..40u32 {
        let k = format!("key{:05}", i * 13).into_bytes();
        if i % 4 == 3 {
            db.delete(&w, &k).unwrap();
            state.remove(&k);
        } else {
            db.put(&w, &k, format!("wal-{i}").as_bytes()).unwrap();
            state.insert(k, format!("wal-{i}").into_bytes());
        }
        wal_states.push(state.clone());
    }
    db.close().unwrap();
    let files = fs
        .list("db")
        .unwrap()
        .into_iter()
        .filter(|n| n != "LOCK")
        .map(|n| {
            let p = format!("db/{n}");
            let f = fs.open(&p, false).unwrap();
            let bytes = read_all(&*f, &p).unwrap();
            (n, bytes)
        })
        .collect();
    (files, state, wal_states)
}

/// Opens a copy of the files with `file` replaced by `bytes`, and reads
/// everything back (full scan, reverse scan, and a get of every key).
fn open_and_read(files: &[(String, Vec<u8>)], file: &str, bytes: &[u8], keys: &[Vec<u8>]) -> Result<State, Error> {
    let fs = MemFs::new();
    for (n, b) in files {
        let f = fs.open(&format!("db/{n}"), true).unwrap();
        f.append(if n == file { bytes } else { b }).unwrap();
    }
    let db = Db::open(Arc::new(fs), "db", options())?;
    let mut it = db.iter(&ReadOptions::default())?;
    let mut got = State::new();
    it.seek_to_first();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status()?;
    let mut back = 0;
    it.seek_to_last();
    while it.valid() {
        back += 1;
        it.prev();
    }
    it.status()?;
    assert_eq!(back, got.len(), "reverse scan disagrees with forward scan without an error");
    for k in keys {
        let v = db.get(&ReadOptions::default(), k)?;
        assert_eq!(v.as_ref(), got.get(k), "get disagrees with scan for {k:?} without an error");
    }
    Ok(got)
}

/// Where an error says the damage is: (file, offset).
fn place(e: &Error) -> Option<(&str, u64)> {
    match e {
        Error::Corruption { file, offset, .. } | Error::ChecksumMismatch { file, offset, .. } => Some((file, *offset)),
        _ => None,
    }
}

/// Opens the files with `damaged` replaced by `bytes` and reads everything:
/// right data, or `Corruption` naming the file (and, for a bit flipped at
/// byte `flipped` of a table, the block or footer holding that byte: an
/// offset no later than it and no further before it than the largest block
/// spans). True when the damage was detected.
#[allow(clippy::too_many_arguments)]
fn check(
    files: &[(String, Vec<u8>)],
    expected: &State,
    wal_states: &[State],
    keys: &[Vec<u8>],
    damaged: &str,
    bytes: &[u8],
    what: &str,
    flipped: Option<usize>,
) -> bool {
    match open_and_read(files, damaged, bytes, keys) {
        Ok(got) => {
            let is_wal = damaged.ends_with(".log");
            let ok = &got == expected || (is_wal && wal_states.contains(&got));
            assert!(ok, "{what} in {damaged}: wrong data returned without an error ({} keys)", got.len());
            false
        }
        Err(e) => {
            assert!(e.is_corruption(), "{what} in {damaged}: want Corruption, got {e}");
            // The error names the damaged file (and, in its text, the offset).
            let text = e.to_string();
            assert!(
                text.contains(damaged) && text.contains("offset"),
                "{what} in {damaged}: the error does not say where: {text}"
            );
            if let (Some(pos), true) = (flipped, damaged.ends_with(".sst")) {
                let (file, offset) = place(&e).unwrap_or(("", u64::MAX));
                assert!(file.ends_with(damaged), "{what} in {damaged}: the error names {file}: {text}");
                assert!(offset <= pos as u64, "{what} in {damaged}: the error points past the damage: {text}");
                // The largest blocks of these tables (index, filter) are
                // about 1 KiB: the error is at the start of the damaged one.
                assert!(
                    pos as u64 - offset <= 2048,
                    "{what} in {damaged}: the error points far before the damage: {text}"
                );
            }
            true
        }
    }
}

#[test]
fn every_file_kind_detects_flipped_bytes() {
    let (files, expected, wal_states) = build();
    let keys: Vec<Vec<u8>> = (0..3100u32).step_by(3).map(|i| format!("key{i:05}").into_bytes()).collect();
    let mut kinds_seen = BTreeMap::new();
    for (name, bytes) in &files {
        let kind = name.rsplit('.').next().unwrap_or("manifest").split('-').next().unwrap_or("").to_string();
        // About 150 positions per file (every byte with SILT_SOAK=1), always
        // including the first and last bytes (footer, trailers); the bit
        // flipped varies with the position.
        let stride = if soak() { 1 } else { (bytes.len() / 150).max(1) };
        let mut positions: Vec<usize> = (0..bytes.len()).step_by(stride).collect();
        positions.extend([bytes.len().saturating_sub(1), bytes.len().saturating_sub(9)]);
        let (mut tried, mut detected) = (0, 0);
        for pos in positions.into_iter().filter(|&p| p < bytes.len()) {
            let mut b = bytes.clone();
            b[pos] ^= 1 << (pos * 5 % 8);
            tried += 1;
            detected +=
                check(&files, &expected, &wal_states, &keys, name, &b, &format!("flip at {pos}"), Some(pos)) as usize;
        }
        let e = kinds_seen.entry(kind).or_insert((0, 0));
        e.0 += tried;
        e.1 += detected;
    }
    eprintln!("flips per file kind (tried, detected): {kinds_seen:?}");
    let total: usize = kinds_seen.values().map(|(t, _)| t).sum();
    let detected: usize = kinds_seen.values().map(|(_, d)| d).sum();
    let line = format!("{{\"test\":\"corruption-bit-flips\",\"files\":{},\"flips\":{total},\"detected\":{detected},\"wrong_values\":0}}", files.len());
    eprintln!("{line}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/reliability");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("corruption.json"), format!("{line}\n"));
    for kind in ["sst", "log", "MANIFEST"] {
        let (tried, detected) = kinds_seen.get(kind).copied().unwrap_or_default();
        assert!(tried > 0, "no {kind} file was damaged");
        if kind != "log" {
            assert!(detected * 10 >= tried * 9, "{kind}: only {detected} of {tried} flips detected");
        }
    }
}

#[test]
fn every_file_kind_detects_truncation() {
    let (files, expected, wal_states) = build();
    let keys: Vec<Vec<u8>> = (0..3100u32).step_by(11).map(|i| format!("key{i:05}").into_bytes()).collect();
    for (name, bytes) in &files {
        let n = bytes.len();
        for cut in [0, 1, n / 3, n / 2, n.saturating_sub(48), n.saturating_sub(5), n.saturating_sub(1)] {
            if cut >= n {
                continue;
            }
            let detected = check(
                &files,
                &expected,
                &wal_states,
                &keys,
                name,
                &bytes[..cut],
                &format!("truncation to {cut}"),
                None,
            );
            if name.ends_with(".sst") || (name.starts_with("MANIFEST") && cut > 0) {
                assert!(detected, "truncating {name} to {cut} of {n} bytes went unnoticed");
            }
        }
    }
}

#[test]
fn a_missing_manifest_with_tables_present_is_corruption() {
    let (files, _, _) = build();
    let fs = MemFs::new();
    for (n, b) in files.iter().filter(|(n, _)| !n.starts_with("MANIFEST")) {
        fs.open(&format!("db/{n}"), true).unwrap().append(b).unwrap();
    }
    match Db::open(Arc::new(fs), "db", options()) {
        Err(e) => assert!(e.is_corruption(), "{e}"),
        Ok(_) => panic!("opened a database whose manifest is gone as if it were new"),
    }
}
