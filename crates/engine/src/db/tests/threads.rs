//! Background steps on another thread: reads and writes go on meanwhile,
//! close waits, an ingest orders after writes made during a flush.

use super::*;

/// A file system whose creation of table files, once armed, waits at a
/// gate: the test sees the step arrive and decides when it goes on.
#[cfg(not(target_family = "wasm"))]
mod gated {
    use std::sync::mpsc::{channel, Receiver, Sender};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use crate::error::Result;
    use crate::fs::{File, Fs, FsLock, MemFs};

    /// Long enough never to fire in a passing run; it only keeps a broken
    /// one from hanging.
    pub const PATIENCE: Duration = Duration::from_secs(20);

    pub struct GateFs {
        inner: MemFs,
        armed: Mutex<bool>,
        arrived: Mutex<Sender<String>>,
        go: Mutex<Receiver<()>>,
    }

    impl GateFs {
        /// The file system, where table creations are announced, and where
        /// each one is let through.
        pub fn new() -> (Arc<GateFs>, Receiver<String>, Sender<()>) {
            let (arrived, arrivals) = channel();
            let (go_tx, go) = channel();
            let fs = GateFs {
                inner: MemFs::new(),
                armed: Mutex::new(false),
                arrived: Mutex::new(arrived),
                go: Mutex::new(go),
            };
            (Arc::new(fs), arrivals, go_tx)
        }

        pub fn arm(&self, on: bool) {
            *self.armed.lock().unwrap() = on;
        }
    }

    impl Fs for GateFs {
        fn open(&self, path: &str, create: bool) -> Result<Arc<dyn File>> {
            if create && path.ends_with(".sst") && *self.armed.lock().unwrap() {
                self.arrived.lock().unwrap().send(path.to_string()).unwrap();
                self.go.lock().unwrap().recv_timeout(PATIENCE).expect("the test let the table write go on");
            }
            self.inner.open(path, create)
        }
        fn exists(&self, path: &str) -> Result<bool> {
            self.inner.exists(path)
        }
        fn remove(&self, path: &str) -> Result<()> {
            self.inner.remove(path)
        }
        fn list(&self, dir: &str) -> Result<Vec<String>> {
            self.inner.list(dir)
        }
        fn create_dir_all(&self, dir: &str) -> Result<()> {
            self.inner.create_dir_all(dir)
        }
        fn lock(&self, path: &str) -> Result<Box<dyn FsLock>> {
            self.inner.lock(path)
        }
    }
}

/// Runs `f` on a thread; its result, or `None` if it is not done within
/// `wait`.
#[cfg(not(target_family = "wasm"))]
fn on_thread<T: Send + 'static>(
    wait: std::time::Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> (std::sync::mpsc::Receiver<T>, Option<T>) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    let got = rx.recv_timeout(wait).ok();
    (rx, got)
}

#[test]
#[cfg(not(target_family = "wasm"))]
fn writes_and_reads_go_on_while_a_flush_writes_its_table_and_a_second_job_waits() {
    use std::time::Duration;
    let (fs, arrivals, go) = gated::GateFs::new();
    let db = Arc::new(Db::open(fs.clone(), "db", small_options()).unwrap());
    db.put(&W, b"a", b"1").unwrap();
    fs.arm(true);
    // A flush, held at the creation of its table.
    let (first, _) = on_thread(Duration::ZERO, {
        let db = db.clone();
        move || db.flush()
    });
    let table = arrivals.recv_timeout(gated::PATIENCE).expect("the flush reached its table");
    assert!(table.ends_with(".sst"));
    // Meanwhile a write (taking the state lock) and a read go through.
    let (_, put) = on_thread(gated::PATIENCE, {
        let db = db.clone();
        move || db.put(&W, b"b", b"2")
    });
    put.expect("a write went through while the flush wrote its table").unwrap();
    assert_eq!(db.get(&r(), b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert!(db.properties().background_work_pending);
    // A second flush switches the memtable, then waits for the first job:
    // no second job starts while one is out (its table would pass the gate).
    let (second, done) = on_thread(Duration::from_millis(300), {
        let db = db.clone();
        move || db.flush()
    });
    assert!(done.is_none(), "the second flush ran while the first one's step was out");
    assert!(arrivals.try_recv().is_err(), "a second job started while the first one's step was out");
    fs.arm(false);
    go.send(()).unwrap();
    first.recv_timeout(gated::PATIENCE).expect("the first flush ended").unwrap();
    second.recv_timeout(gated::PATIENCE).expect("the second flush ended").unwrap();
    assert_eq!(db.properties().files_per_level[0], 2);
    assert_eq!(db.get(&r(), b"a").unwrap().as_deref(), Some(&b"1"[..]));
    let db = Arc::try_unwrap(db).ok().unwrap();
    db.close().unwrap();
    let db = Db::open(fs.clone(), "db", small_options()).unwrap();
    assert_eq!(count_entries(&db), 2);
    assert_eq!(db.verify().unwrap().tables, 2);
}

#[test]
#[cfg(not(target_family = "wasm"))]
fn close_waits_for_a_step_running_on_another_thread_which_then_stops() {
    use std::time::Duration;
    let (fs, arrivals, go) = gated::GateFs::new();
    let db = Arc::new(Db::open(fs.clone(), "db", small_options()).unwrap());
    for i in 0..2_000u32 {
        db.put(&W, format!("k{i:05}").as_bytes(), &[7u8; 100]).unwrap();
    }
    assert!(db.properties().immutable_memtables > 0, "the load switched memtables");
    fs.arm(true);
    // A pump, held in its flush's step.
    let (pump, _) = on_thread(Duration::ZERO, {
        let db = db.clone();
        move || {
            let mut steps = 0;
            while let Ok(p) = db.do_background_work(64) {
                steps += 1;
                if !p.work_left {
                    break;
                }
            }
            steps
        }
    });
    arrivals.recv_timeout(gated::PATIENCE).expect("the pump's flush reached its table");
    let (closed, done) = on_thread(Duration::from_millis(300), {
        let db = db.clone();
        move || db.close()
    });
    assert!(done.is_none(), "close returned while a step wrote a table");
    fs.arm(false);
    go.send(()).unwrap();
    closed.recv_timeout(gated::PATIENCE).expect("close ended").unwrap();
    // The pump's call ended with that step and the next call saw the close.
    assert_eq!(pump.recv_timeout(gated::PATIENCE).expect("the pump stopped"), 1);
    drop(db);
    let db = Db::open(fs.clone(), "db", small_options()).unwrap();
    assert_eq!(count_entries(&db), 2_000);
    db.verify().unwrap();
}

#[test]
#[cfg(not(target_family = "wasm"))]
fn an_ingest_is_newer_than_a_write_made_while_its_flush_wrote_a_table() {
    use std::time::Duration;
    let (fs, arrivals, go) = gated::GateFs::new();
    let db = Arc::new(Db::open(fs.clone(), "db", small_options()).unwrap());
    db.put(&W, b"k", b"old").unwrap();
    fs.arm(true);
    // The ingest overlaps the memtable, so it flushes first; held there.
    let (ingest, _) = on_thread(Duration::ZERO, {
        let db = db.clone();
        move || {
            let mut b = WriteBatch::new();
            b.put(b"k", b"ingested");
            db.ingest(&b, &IngestOptions::default())
        }
    });
    arrivals.recv_timeout(gated::PATIENCE).expect("the ingest's flush reached its table");
    // A write into the range while the flush's step is out, acknowledged
    // before the ingest is.
    let (_, put) = on_thread(gated::PATIENCE, {
        let db = db.clone();
        move || db.put(&W, b"k", b"meanwhile")
    });
    put.expect("the write went through during the flush").unwrap();
    fs.arm(false);
    go.send(()).unwrap();
    let report = ingest.recv_timeout(gated::PATIENCE).expect("the ingest ended").unwrap();
    assert!(report.flushed_memtables);
    assert_eq!(db.get(&r(), b"k").unwrap().as_deref(), Some(&b"ingested"[..]));
    let db = Arc::try_unwrap(db).ok().unwrap();
    db.close().unwrap();
    let db = Db::open(fs.clone(), "db", small_options()).unwrap();
    assert_eq!(db.get(&r(), b"k").unwrap().as_deref(), Some(&b"ingested"[..]));
}
