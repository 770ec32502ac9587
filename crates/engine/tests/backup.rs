//! An export written by siltdb in Chromium (tests/e2e/backup.spec.ts, which
//! checks that Chromium still writes exactly these bytes), imported here by
//! the native engine: the same format in the browser and natively.

use std::sync::Arc;

use silt_engine::fs::MemFs;
use silt_engine::{Db, ExportOptions, Options, ReadOptions};

const FIXTURE: &[u8] = include_bytes!("fixtures/chromium-export-v1.siltdump");

fn import(db: &Db, bytes: &[u8]) -> silt_engine::Result<silt_engine::ImportReport> {
    let mut imp = db.import()?;
    imp.push(db, bytes)?;
    imp.finish(db)
}

#[test]
fn an_export_from_chromium_imports_natively_with_every_entry() {
    let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    let report = import(&db, FIXTURE).unwrap();
    // 500 keys, the empty key, and one key of the sublevel "notes".
    assert_eq!(report.entries, 502);
    let r = ReadOptions::default();
    for i in 0..500 {
        let k = format!("fixture-{i:04}");
        let want = format!("value-{i}-{}", ".".repeat(i % 37));
        assert_eq!(db.get(&r, k.as_bytes()).unwrap().as_deref(), Some(want.as_bytes()), "{k}");
    }
    assert_eq!(db.get(&r, b"").unwrap().as_deref(), Some(&b"the empty key"[..]));
    assert_eq!(db.get(&r, b"!notes!n1").unwrap().as_deref(), Some(&br#"{"title":"from Chromium"}"#[..]));
    assert_eq!(db.count(&r).unwrap(), 502);
    db.verify().unwrap();

    // Exported again natively: the same bytes, but for the sequence number
    // in the end record (this database read at its own).
    let mut e = db.export(&ExportOptions::default()).unwrap();
    let mut again = Vec::new();
    while let Some(piece) = e.next_chunk(256 * 1024).unwrap() {
        again.extend_from_slice(&piece);
    }
    assert_eq!(again.len(), FIXTURE.len());
    let end = FIXTURE.len() - 16 - 9; // the end record: kind, length, crc, count, sequence
    assert_eq!(again[..end], FIXTURE[..end]);
    assert_eq!(again[end + 9..end + 17], FIXTURE[end + 9..end + 17], "the same count");
}
