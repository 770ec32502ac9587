//! What `close` and a reopen promise about durability when a sync failed or
//! a process ended without closing (found by the worker layer's property
//! test over fake OPFS): a close that could not make every write durable
//! says so; a WAL a reopen goes on with is synced before anything counts on
//! it (its replayed tail may never have been, and a new manifest may name
//! it).

use std::sync::Arc;

use silt_engine::fs::{CrashMode, FaultFs, Fs, MemFs};
use silt_engine::{Db, Options, ReadOptions, WriteOptions};

fn get(db: &Db, k: &[u8]) -> Option<Vec<u8>> {
    db.get(&ReadOptions::default(), k).unwrap()
}

#[test]
fn a_close_after_a_failed_wal_sync_reports_it() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let fs: Arc<dyn Fs> = Arc::new(fault.clone());
    let db = Db::open(fs.clone(), "db", Options::default()).unwrap();
    db.put(&WriteOptions { sync: false }, b"a", b"1").unwrap();
    fault.fail_syncs(Some(".log"));
    assert!(db.put(&WriteOptions { sync: true }, b"b", b"2").is_err());
    fault.fail_syncs(None);
    // `a` was acknowledged without a sync and never made durable: the
    // close must not say all is well.
    assert!(db.close().is_err(), "close reported success with a write it could not make durable");
}

#[test]
fn a_reopen_syncs_the_wal_it_replayed_and_goes_on_with() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let fs: Arc<dyn Fs> = Arc::new(fault.clone());
    {
        let db = Db::open(fs.clone(), "db", Options::default()).unwrap();
        db.put(&WriteOptions { sync: false }, b"k", b"replayed").unwrap();
        // The process ends without a sync (its close's sync fails: the
        // bytes stay in the file, as a killed worker leaves them).
        fault.fail_syncs(Some(".log"));
        let _ = db.close();
        fault.fail_syncs(None);
    }
    {
        let db = Db::open(fs.clone(), "db", Options::default()).unwrap();
        assert_eq!(get(&db, b"k").as_deref(), Some(&b"replayed"[..]));
        db.close().unwrap(); // clean, and nothing written since the open
    }
    // A power cut now must not take away what the reopen showed and the
    // clean close stood behind.
    fault.crash(CrashMode::DropUnsynced).unwrap();
    let db = Db::open(fs, "db", Options::default()).unwrap();
    assert_eq!(get(&db, b"k").as_deref(), Some(&b"replayed"[..]), "a replayed write vanished after a clean close");
}

#[test]
fn a_wal_left_by_a_failed_first_open_is_durable_before_a_manifest_names_it() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let fs: Arc<dyn Fs> = Arc::new(fault.clone());
    // The first open creates its WAL, whose sync fails: the open fails.
    fault.fail_syncs(Some(".log"));
    assert!(Db::open(fs.clone(), "db", Options::default()).is_err());
    fault.fail_syncs(None);
    {
        let db = Db::open(fs.clone(), "db", Options::default()).unwrap();
        db.put(&WriteOptions { sync: true }, b"k", b"v").unwrap();
    }
    fault.crash(CrashMode::DropUnsynced).unwrap();
    let db = Db::open(fs, "db", Options::default())
        .unwrap_or_else(|e| panic!("a crash left a database that does not open: {e}"));
    assert_eq!(get(&db, b"k").as_deref(), Some(&b"v"[..]));
}
