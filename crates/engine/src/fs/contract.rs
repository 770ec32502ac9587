//! The contract every [`Fs`] implementation must keep, as a suite of checks
//! that runs against any of them: natively on `MemFs`, `StdFs` and `FaultFs`
//! (`cargo test`), and in Chromium on the OPFS pool (`silt-wasm`).
//!
//! Each check works inside `dir`, which must exist and be empty.

use super::{join, read_all, Fs};
use crate::error::Error;

/// One named check of the contract.
pub struct Check {
    pub name: &'static str,
    pub run: fn(&dyn Fs, &str) -> Result<(), String>,
}

/// Every check of the contract, in order.
pub const CHECKS: &[Check] = &[
    Check { name: "create_write_read", run: create_write_read },
    Check { name: "open_missing_fails", run: open_missing_fails },
    Check { name: "append_and_len", run: append_and_len },
    Check { name: "write_at_extends_and_overwrites", run: write_at_extends_and_overwrites },
    Check { name: "short_read_at_end", run: short_read_at_end },
    Check { name: "truncate_shrinks_and_grows", run: truncate_shrinks_and_grows },
    Check { name: "reopen_sees_data", run: reopen_sees_data },
    Check { name: "list_names_only_direct_children", run: list_names_only_direct_children },
    Check { name: "remove_then_missing", run: remove_then_missing },
    Check { name: "remove_missing_fails", run: remove_missing_fails },
    Check { name: "lock_is_exclusive_until_dropped", run: lock_is_exclusive_until_dropped },
    Check { name: "sync_keeps_content", run: sync_keeps_content },
    Check { name: "large_file_round_trip", run: large_file_round_trip },
];

/// Runs every check, each in its own subdirectory of `dir`; returns the
/// failures as (check name, message).
pub fn run_all(fs: &dyn Fs, dir: &str) -> Vec<(&'static str, String)> {
    let mut failures = Vec::new();
    for check in CHECKS {
        let sub = join(dir, check.name);
        let result =
            fs.create_dir_all(&sub).map_err(|e| format!("create_dir_all: {e}")).and_then(|_| (check.run)(fs, &sub));
        if let Err(msg) = result {
            failures.push((check.name, msg));
        }
    }
    failures
}

fn ok<T>(r: crate::error::Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn expect(cond: bool, what: impl Into<String>) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what.into())
    }
}

fn create_write_read(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let p = join(dir, "a");
    let f = ok(fs.open(&p, true), "open")?;
    ok(f.write_at(0, b"hello world"), "write")?;
    let mut buf = [0u8; 5];
    let n = ok(f.read_at(6, &mut buf), "read")?;
    expect(n == 5 && &buf == b"world", format!("read back {:?}", &buf[..n]))?;
    expect(ok(fs.exists(&p), "exists")?, "file does not exist after create")
}

fn open_missing_fails(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let p = join(dir, "missing");
    expect(fs.open(&p, false).is_err(), "opening a missing file without create succeeded")?;
    expect(!ok(fs.exists(&p), "exists")?, "a failed open created the file")
}

fn append_and_len(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let f = ok(fs.open(&join(dir, "log"), true), "open")?;
    expect(ok(f.len(), "len")? == 0, "new file not empty")?;
    ok(f.append(b"abc"), "append")?;
    ok(f.append(b""), "append empty")?;
    ok(f.append(b"defg"), "append")?;
    expect(ok(f.len(), "len")? == 7, "len after appends")?;
    let mut buf = [0u8; 7];
    ok(f.read_at(0, &mut buf), "read")?;
    expect(&buf == b"abcdefg", "appended bytes")
}

fn write_at_extends_and_overwrites(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let f = ok(fs.open(&join(dir, "w"), true), "open")?;
    ok(f.write_at(4, b"xy"), "write past end")?;
    expect(ok(f.len(), "len")? == 6, "len after sparse write")?;
    ok(f.write_at(0, b"ab"), "overwrite")?;
    let mut buf = [9u8; 6];
    ok(f.read_at(0, &mut buf), "read")?;
    expect(&buf == b"ab\0\0xy", format!("content {buf:?}"))?;
    ok(f.append(b"z"), "append after write_at")?;
    expect(ok(f.len(), "len")? == 7, "append goes to the end")
}

fn short_read_at_end(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let f = ok(fs.open(&join(dir, "s"), true), "open")?;
    ok(f.append(b"12345"), "append")?;
    let mut buf = [0u8; 10];
    expect(ok(f.read_at(3, &mut buf), "read")? == 2, "short read length")?;
    expect(ok(f.read_at(5, &mut buf), "read")? == 0, "read at end")?;
    expect(ok(f.read_at(100, &mut buf), "read")? == 0, "read past end")
}

fn truncate_shrinks_and_grows(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let f = ok(fs.open(&join(dir, "t"), true), "open")?;
    ok(f.append(b"0123456789"), "append")?;
    ok(f.truncate(4), "truncate")?;
    expect(ok(f.len(), "len")? == 4, "len after shrink")?;
    ok(f.append(b"x"), "append")?;
    ok(f.truncate(8), "grow")?;
    let mut buf = [9u8; 8];
    ok(f.read_at(0, &mut buf), "read")?;
    expect(&buf == b"0123x\0\0\0", format!("content {buf:?}"))
}

fn reopen_sees_data(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let p = join(dir, "r");
    {
        let f = ok(fs.open(&p, true), "open")?;
        ok(f.append(b"persist"), "append")?;
        ok(f.sync(), "sync")?;
    }
    let f = ok(fs.open(&p, false), "reopen")?;
    expect(ok(read_all(&*f, &p), "read_all")? == b"persist", "content after reopen")?;
    ok(f.append(b"!"), "append after reopen")?;
    expect(ok(f.len(), "len")? == 8, "append after reopen goes to the end")
}

fn list_names_only_direct_children(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    for n in ["x1", "x2", "x3"] {
        ok(fs.open(&join(dir, n), true), "create")?;
    }
    let sub = join(dir, "sub");
    ok(fs.create_dir_all(&sub), "mkdir")?;
    ok(fs.open(&join(&sub, "inner"), true), "create inner")?;
    let mut names = ok(fs.list(dir), "list")?;
    crate::sort::sort(&mut names);
    expect(names == ["x1", "x2", "x3"], format!("list gave {names:?}"))
}

fn remove_then_missing(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let p = join(dir, "gone");
    ok(fs.open(&p, true).and_then(|f| f.append(b"x")), "create")?;
    ok(fs.remove(&p), "remove")?;
    expect(!ok(fs.exists(&p), "exists")?, "exists after remove")?;
    expect(!ok(fs.list(dir), "list")?.iter().any(|n| n == "gone"), "listed after remove")?;
    let f = ok(fs.open(&p, true), "recreate")?;
    expect(ok(f.len(), "len")? == 0, "recreated file is not empty")
}

fn remove_missing_fails(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    expect(fs.remove(&join(dir, "never")).is_err(), "removing a missing file succeeded")
}

fn lock_is_exclusive_until_dropped(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let p = join(dir, "LOCK");
    let guard = ok(fs.lock(&p), "first lock")?;
    match fs.lock(&p) {
        Err(Error::Busy(_)) => {}
        Err(e) => return Err(format!("second lock gave {e}, want Busy")),
        Ok(_) => return Err("second lock succeeded while the first is held".into()),
    }
    drop(guard);
    ok(fs.lock(&p), "lock after release").map(|_| ())
}

fn sync_keeps_content(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let p = join(dir, "synced");
    let f = ok(fs.open(&p, true), "open")?;
    ok(f.append(b"abc"), "append")?;
    ok(f.sync(), "sync")?;
    ok(fs.sync_dir(dir), "sync_dir")?;
    expect(ok(read_all(&*f, &p), "read_all")? == b"abc", "content after sync")
}

fn large_file_round_trip(fs: &dyn Fs, dir: &str) -> Result<(), String> {
    let p = join(dir, "big");
    let f = ok(fs.open(&p, true), "open")?;
    let data: Vec<u8> = (0..(3 << 20) + 17).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    for chunk in data.chunks(100_000) {
        ok(f.append(chunk), "append")?;
    }
    ok(f.sync(), "sync")?;
    let back = ok(read_all(&*f, &p), "read_all")?;
    expect(back == data, "3 MiB round trip differs")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::fs::{FaultFs, MemFs};

    fn assert_contract(fs: &dyn Fs, dir: &str) {
        let failures = run_all(fs, dir);
        assert!(failures.is_empty(), "contract failures: {failures:#?}");
    }

    #[test]
    fn memfs_keeps_the_contract() {
        assert_contract(&MemFs::new(), "db");
    }

    #[test]
    fn faultfs_over_memfs_keeps_the_contract() {
        assert_contract(&FaultFs::new(Arc::new(MemFs::new())), "db");
    }

    #[test]
    fn a_file_cap_refuses_the_file_past_it_and_counts_what_is_left() {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        fs.create_dir_all("db").unwrap();
        assert_eq!(fs.files_left(), None, "no cap: not counted");
        fs.set_file_cap(Some(("db", 2)));
        assert_eq!(fs.files_left(), Some(2));
        fs.open("db/a", true).unwrap();
        fs.open("db/b", true).unwrap();
        assert_eq!(fs.files_left(), Some(0));
        fs.start_trace();
        assert!(matches!(fs.open("db/c", true), Err(Error::PoolExhausted { .. })));
        assert!(fs.trace().is_empty(), "a refused create is no mutating call");
        assert!(!fs.exists("db/c").unwrap());
        fs.open("db/a", true).expect("an existing file opens");
        fs.open("other/x", true).expect("another directory is not capped");
        fs.remove("db/a").unwrap();
        assert_eq!(fs.files_left(), Some(1));
        fs.open("db/c", true).unwrap();
        fs.set_file_cap(None);
        fs.open("db/d", true).unwrap();
        assert_eq!(fs.files_left(), None);
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn stdfs_keeps_the_contract() {
        let dir = crate::testutil::TempDir::new("contract-std");
        assert_contract(&crate::fs::StdFs, dir.path());
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn faultfs_over_stdfs_keeps_the_contract() {
        let dir = crate::testutil::TempDir::new("contract-fault-std");
        assert_contract(&FaultFs::new(Arc::new(crate::fs::StdFs)), dir.path());
    }
}
