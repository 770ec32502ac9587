//! Import over mutated real exports: a backup file is untrusted input. Each
//! case mutates an export of a database that has overwrites, deletes, range
//! deletes and merges (bytes flipped, fields of the table and end records
//! changed, chunks dropped or repeated), with the tables form's chunk checks
//! computed anew so the mutation reaches the checks behind them. Every
//! import must either fail with an error, leaving the database empty and
//! usable, or be a database the engine could have written: `verify` passes,
//! a scan is sorted and agrees with gets, and a later write changes nothing
//! but its own key (no entry numbered past the stream shows up once later
//! sequence numbers are taken).
//!
//! `SILT_SOAK=1` runs 50,000 cases instead of 5,000.

mod common;

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use silt_engine::fs::MemFs;
use silt_engine::{Db, ExportForm, ExportOptions, Options, ReadOptions, U64AddOperator, WriteBatch, WriteOptions};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        block_size: 512,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 64 << 10,
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..Options::default()
    }
}

fn source() -> Db {
    let db = Db::open(Arc::new(MemFs::new()), "db", options()).unwrap();
    let w = WriteOptions::default();
    for i in 0..600u32 {
        let k = format!("k{:04}", (i * 7) % 300);
        db.put(&w, k.as_bytes(), format!("value-{i}-{}", "x".repeat((i % 50) as usize * 5)).as_bytes()).unwrap();
        if i % 9 == 0 {
            db.delete(&w, format!("k{:04}", (i * 13) % 300).as_bytes()).unwrap();
        }
        if i % 31 == 0 {
            db.delete_range(&w, format!("k{:04}", i % 300).as_bytes(), format!("k{:04}", i % 300 + 5).as_bytes())
                .unwrap();
        }
        if i % 5 == 0 {
            db.merge(&w, format!("c{:02}", i % 20).as_bytes(), &1u64.to_le_bytes()).unwrap();
        }
        if i == 300 {
            db.flush().unwrap();
            while db.do_background_work(usize::MAX).unwrap().work_left {}
        }
    }
    db
}

fn export(db: &Db, form: ExportForm) -> Vec<u8> {
    let mut e = db.export(&ExportOptions { form, ..ExportOptions::default() }).unwrap();
    let mut out = Vec::new();
    while let Some(c) = e.next_chunk(4096).unwrap() {
        out.extend_from_slice(&c);
    }
    out
}

fn mutate(stream: &[u8], form: ExportForm, rng: &mut SmallRng) -> Vec<u8> {
    let mut s = stream.to_vec();
    let reframe = form == ExportForm::Tables && rng.random_bool(0.8);
    if reframe {
        let mut cs = common::export_chunks(&s).expect("an export parses");
        let i = rng.random_range(0..cs.len());
        match rng.random_range(0..7) {
            6 => {
                // A crafted stream: the end record's sequence number and
                // every table record's lowered together to one value, so
                // that the records agree with each other and only the
                // tables' entries can tell.
                let end = cs.iter().find(|c| c.0 == 2).map(|c| u64::from_le_bytes(c.1[8..16].try_into().unwrap()));
                let v = rng.random_range(1..=end.unwrap_or(1).max(1));
                for (kind, p) in cs.iter_mut() {
                    let at = |p: &[u8], i: usize| u64::from_le_bytes(p[i..i + 8].try_into().unwrap());
                    match *kind {
                        2 if p.len() >= 16 => p[8..16].copy_from_slice(&v.to_le_bytes()),
                        3 if p.len() >= 25 => {
                            let (lo, hi) = (at(p, 9).min(v), at(p, 17).min(v));
                            p[9..17].copy_from_slice(&lo.to_le_bytes());
                            p[17..25].copy_from_slice(&hi.to_le_bytes());
                        }
                        _ => {}
                    }
                }
            }
            0 => cs.remove(i).1.clear(),
            1 => {
                let c = cs[i].clone();
                cs.insert(i, c);
            }
            _ => {
                let p = &mut cs[i].1;
                if !p.is_empty() {
                    // A table record's fields (level, size, sequence numbers)
                    // and the end record's count and sequence are in the
                    // first 25 bytes: hit them more often.
                    let span = if rng.random_bool(0.6) { p.len().min(25) } else { p.len() };
                    for _ in 0..rng.random_range(1..4) {
                        let at = rng.random_range(0..span);
                        p[at] = match rng.random_range(0..3) {
                            0 => p[at] ^ (1 << rng.random_range(0..8)),
                            1 => p[at].wrapping_sub(1),
                            _ => rng.random(),
                        };
                    }
                }
            }
        }
        return common::export_stream_of(stream, &cs);
    }
    for _ in 0..rng.random_range(1..4) {
        let at = rng.random_range(0..s.len());
        s[at] ^= 1 << rng.random_range(0..8);
    }
    if rng.random_bool(0.1) {
        s.truncate(rng.random_range(0..s.len()));
    }
    s
}

fn scan(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

/// What an accepted import must be: see the module documentation.
fn check_accepted(db: &Db, case: &str) {
    db.verify().unwrap_or_else(|e| panic!("{case}: an accepted import fails verify: {e}"));
    let before = scan(db);
    assert!(before.windows(2).all(|w| w[0].0 < w[1].0), "{case}: a scan out of order");
    let r = ReadOptions::default();
    for (k, v) in before.iter().step_by(7) {
        assert_eq!(db.get(&r, k).unwrap().as_deref(), Some(&v[..]), "{case}: get and scan disagree on {k:?}");
    }
    // Later writes take sequence numbers past the stream's: nothing but
    // their own keys may change.
    let w = WriteOptions::default();
    for i in 0..20 {
        let mut b = WriteBatch::new();
        b.put(format!("zz-after-{i:02}").as_bytes(), b"later");
        db.write(&w, b).unwrap();
    }
    db.flush().unwrap();
    while db.do_background_work(usize::MAX).unwrap().work_left {}
    let after: Vec<_> = scan(db).into_iter().filter(|(k, _)| !k.starts_with(b"zz-after-")).collect();
    if after != before {
        let first = after.iter().zip(&before).position(|(a, b)| a != b).unwrap_or(after.len().min(before.len()));
        panic!(
            "{case}: entries appeared or changed once later sequence numbers were taken: {} entries before, {} after, first difference at {first}: {:?} against {:?}",
            before.len(),
            after.len(),
            after.get(first).map(|e| String::from_utf8_lossy(&e.0).into_owned()),
            before.get(first).map(|e| String::from_utf8_lossy(&e.0).into_owned()),
        );
    }
}

#[test]
fn an_accepted_import_of_a_mutated_export_is_a_database_the_engine_could_have_written() {
    let soak = std::env::var("SILT_SOAK").is_ok_and(|v| v != "0" && !v.is_empty());
    let cases = if soak { 50_000 } else { 5_000 };
    let src = source();
    let streams = [
        (ExportForm::Tables, export(&src, ExportForm::Tables)),
        (ExportForm::Entries, export(&src, ExportForm::Entries)),
    ];
    let mut rng = SmallRng::seed_from_u64(0x5117);
    let (mut accepted, mut refused) = (0u32, 0u32);
    for case in 0..cases {
        let (form, stream) = &streams[case % 2];
        let mutated = mutate(stream, *form, &mut rng);
        let db = Db::open(Arc::new(MemFs::new()), "db", options()).unwrap();
        let label = format!("case {case} ({form:?})");
        let result = db.import().and_then(|mut imp| {
            for piece in mutated.chunks(rng.random_range(1..8192)) {
                if let Err(e) = imp.push(&db, piece) {
                    imp.abort(&db);
                    return Err(e);
                }
            }
            imp.finish(&db)
        });
        match result {
            Ok(_) => {
                accepted += 1;
                check_accepted(&db, &label);
            }
            Err(_) => {
                refused += 1;
                // Refused: nothing of it is left, and the database works.
                assert!(scan(&db).is_empty(), "{label}: a refused import left entries");
                db.put(&WriteOptions::default(), b"k", b"v").unwrap();
                assert_eq!(db.get(&ReadOptions::default(), b"k").unwrap().as_deref(), Some(&b"v"[..]));
            }
        }
    }
    println!("{{\"cases\":{cases},\"accepted\":{accepted},\"refused\":{refused}}}");
    assert!(refused > cases as u32 / 2, "most mutations must be refused: {refused} of {cases}");
}
