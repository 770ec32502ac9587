use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::Error;
use crate::fs::MemFs;
use crate::{Db, Options, ReadOptions, U64AddOperator, WriteOptions};

const W: WriteOptions = WriteOptions { sync: false };

fn db() -> Db {
    let options =
        Options { write_buffer_size: 64 << 10, merge_operator: Some(Arc::new(U64AddOperator)), ..Options::default() };
    Db::open(Arc::new(MemFs::new()), "db", options).unwrap()
}

fn get(db: &Db, key: &[u8]) -> Option<Vec<u8>> {
    db.get(&ReadOptions::default(), key).unwrap()
}

fn n(x: u64) -> Vec<u8> {
    x.to_le_bytes().to_vec()
}

/// A small seeded generator: `rnd(m)` is in `0..m`.
fn xorshift(mut x: u64) -> impl FnMut(u64) -> u64 {
    move |m| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    }
}

fn busy(r: crate::Result<()>) -> bool {
    matches!(r, Err(Error::Busy(_)))
}

#[test]
fn reads_see_the_snapshot_with_the_transactions_own_writes_on_top() {
    let db = db();
    db.put(&W, b"a", b"old").unwrap();
    db.put(&W, b"c", &n(1)).unwrap();
    let mut t = db.begin_optimistic();
    db.put(&W, b"a", b"newer, by someone else").unwrap(); // after the snapshot
    assert_eq!(t.get(&db, b"a").unwrap().as_deref(), Some(&b"old"[..]));
    t.put(b"a", b"mine").unwrap();
    t.delete(b"b").unwrap();
    t.merge(&db, b"c", &n(5)).unwrap(); // on the snapshot's 1
    t.merge(&db, b"c", &n(10)).unwrap();
    assert_eq!(t.get(&db, b"a").unwrap().as_deref(), Some(&b"mine"[..]));
    assert_eq!(t.get(&db, b"b").unwrap(), None);
    assert_eq!(t.get(&db, b"c").unwrap(), Some(n(16)));
    // A range delete hides earlier own writes and the snapshot; a later put shows.
    t.delete_range(b"a", b"z").unwrap();
    assert_eq!(t.get(&db, b"a").unwrap(), None);
    assert_eq!(t.get(&db, b"c").unwrap(), None);
    t.put(b"c", &n(2)).unwrap();
    t.merge(&db, b"c", &n(3)).unwrap();
    assert_eq!(t.get(&db, b"c").unwrap(), Some(n(5)));
    t.merge(&db, b"d", &n(7)).unwrap(); // on the range delete: no base
    assert_eq!(t.get(&db, b"d").unwrap(), Some(n(7)));
    // Nothing shows outside until commit.
    assert_eq!(get(&db, b"c"), Some(n(1)));
    assert!(busy(t.commit(&db, &W))); // "a" was written by someone else: tracked by the put
    assert_eq!(get(&db, b"c"), Some(n(1)));
    assert_eq!(get(&db, b"a").as_deref(), Some(&b"newer, by someone else"[..]));
}

#[test]
fn a_commit_applies_everything_atomically_when_nothing_conflicts() {
    let db = db();
    db.put(&W, b"x", b"1").unwrap();
    let mut t = db.begin_optimistic();
    assert_eq!(t.get_for_update(&db, b"x").unwrap().as_deref(), Some(&b"1"[..]));
    db.put(&W, b"untracked", b"someone else").unwrap();
    t.put(b"x", b"2").unwrap();
    t.put(b"y", b"3").unwrap();
    t.commit(&db, &W).unwrap();
    assert_eq!(get(&db, b"x").as_deref(), Some(&b"2"[..]));
    assert_eq!(get(&db, b"y").as_deref(), Some(&b"3"[..]));
}

#[test]
fn every_kind_of_newer_write_to_a_tracked_key_fails_the_commit_and_writes_nothing() {
    type Other = fn(&Db);
    let others: [(&str, Other); 5] = [
        ("put", |db| db.put(&W, b"k", b"theirs").unwrap()),
        ("delete", |db| db.delete(&W, b"k").unwrap()),
        ("merge", |db| db.merge(&W, b"k", &n(1)).unwrap()),
        ("range delete", |db| db.delete_range(&W, b"j", b"l").unwrap()),
        ("delete of a key never written", |db| db.delete(&W, b"k").unwrap()),
    ];
    // The newer write in the memtable, flushed to L0, or compacted to the
    // last level (the transaction's snapshot keeps it from being dropped).
    for place in ["memtable", "L0", "last level"] {
        for (what, other) in others {
            let db = db();
            if what != "delete of a key never written" {
                db.put(&W, b"k", &n(1)).unwrap();
            }
            let mut t = db.begin_optimistic();
            t.get_for_update(&db, b"k").unwrap();
            t.put(b"mine", b"1").unwrap();
            other(&db);
            if place != "memtable" {
                db.flush().unwrap();
            }
            if place == "last level" {
                db.compact_range(None, None).unwrap();
            }
            assert!(busy(t.commit(&db, &W)), "{what} after the snapshot, in the {place}, must fail the commit");
            assert_eq!(get(&db, b"mine"), None, "{what}: a failed commit wrote something");
        }
    }
}

#[test]
fn a_conflict_is_found_after_the_newer_write_left_the_memtable_for_the_tables() {
    for compact in [false, true] {
        let db = db();
        db.put(&W, b"k", b"1").unwrap();
        db.flush().unwrap();
        let mut t = db.begin_optimistic();
        t.get_for_update(&db, b"k").unwrap();
        db.put(&W, b"k", b"2").unwrap();
        db.flush().unwrap(); // the memtable no longer has the key's history
        if compact {
            db.compact_range(None, None).unwrap();
        }
        assert_eq!(db.latest_sequence_for_key(b"k").unwrap(), Some(db.latest_sequence()));
        t.put(b"k", b"mine").unwrap();
        assert!(busy(t.commit(&db, &W)), "compacted: {compact}");
        assert_eq!(get(&db, b"k").as_deref(), Some(&b"2"[..]));
        // Without the newer write, a key only in the tables does not conflict.
        let mut t = db.begin_optimistic();
        t.get_for_update(&db, b"k").unwrap();
        t.put(b"k", b"3").unwrap();
        t.commit(&db, &W).unwrap();
        assert_eq!(get(&db, b"k").as_deref(), Some(&b"3"[..]));
    }
}

#[test]
fn a_range_delete_in_a_transaction_conflicts_with_newer_writes_inside_its_range_only() {
    let db = db();
    let mut t = db.begin_optimistic();
    t.delete_range(b"b", b"d").unwrap();
    db.put(&W, b"e", b"outside").unwrap();
    let mut u = db.begin_optimistic();
    u.delete_range(b"b", b"d").unwrap();
    t.commit(&db, &W).unwrap();
    // u's snapshot predates t's range delete, which overlaps u's range.
    db.put(&W, b"c", b"inside").unwrap();
    assert!(busy(u.commit(&db, &W)));
    assert_eq!(get(&db, b"c").as_deref(), Some(&b"inside"[..]));
    // Tables too.
    let mut v = db.begin_optimistic();
    v.delete_range(b"a", b"f").unwrap();
    db.put(&W, b"d", b"x").unwrap();
    db.flush().unwrap();
    assert_eq!(db.latest_sequence_in_range(b"a", b"f").unwrap(), Some(db.latest_sequence()));
    assert!(busy(v.commit(&db, &W)));
}

#[test]
fn two_transactions_on_one_counter_one_commits_and_the_other_retries() {
    let db = db();
    db.put(&W, b"counter", &n(0)).unwrap();
    let bump = |db: &Db, t: &mut crate::OptimisticTransaction| {
        let v = u64::from_le_bytes(t.get_for_update(db, b"counter").unwrap().unwrap().try_into().unwrap());
        t.put(b"counter", &n(v + 1)).unwrap();
    };
    let mut a = db.begin_optimistic();
    let mut b = db.begin_optimistic();
    bump(&db, &mut a);
    bump(&db, &mut b);
    a.commit(&db, &W).unwrap();
    assert!(busy(b.commit(&db, &W)));
    let mut b = db.begin_optimistic();
    bump(&db, &mut b);
    b.commit(&db, &W).unwrap();
    assert_eq!(get(&db, b"counter"), Some(n(2)));
}

/// Random transactions interleaved with plain writes, against a model: a
/// commit succeeds exactly when no key it tracked was written after its
/// snapshot, and the database then equals the model.
#[test]
fn random_interleavings_match_a_model() {
    let mut rnd = xorshift(0x9e3779b97f4a7c15);
    let db = db();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    // Per key, the sequence number of its last write (model side).
    let mut written: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let key = |i: u64| format!("k{i:02}").into_bytes();
    let mut commits = 0;
    let mut conflicts = 0;
    let mut spills = 0;
    for round in 0..300u64 {
        let mut t = db.begin_optimistic();
        // Some transactions spill (before every write but the first, or
        // every few), their commits then published from their own files.
        t.set_spill_bytes([0, 1, 60][round as usize % 3]);
        let snap = db.latest_sequence();
        let mut tracked = Vec::new();
        let mut mine: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        for _ in 0..1 + rnd(4) {
            let k = key(rnd(20));
            match rnd(4) {
                0 => {
                    let seen = t.get_for_update(&db, &k).unwrap();
                    let expect =
                        mine.iter().rev().find(|(mk, _)| *mk == k).map(|(_, v)| v.clone()).unwrap_or_else(|| {
                            // The snapshot's value: the model as of the snapshot is
                            // the model now minus later writes, which this check
                            // only makes for keys nobody wrote since.
                            if written.get(&k).is_some_and(|&s| s > snap) {
                                seen.clone()
                            } else {
                                model.get(&k).cloned()
                            }
                        });
                    assert_eq!(seen, expect, "round {round}");
                    tracked.push(k);
                }
                1 | 2 => {
                    let v = format!("v{round}").into_bytes();
                    t.put(&k, &v).unwrap();
                    mine.push((k.clone(), Some(v)));
                    tracked.push(k);
                }
                _ => {
                    t.delete(&k).unwrap();
                    mine.push((k.clone(), None));
                    tracked.push(k);
                }
            }
            // Someone else writes meanwhile, sometimes.
            if rnd(3) == 0 {
                let k = key(rnd(20));
                let v = format!("other{round}").into_bytes();
                db.put(&W, &k, &v).unwrap();
                model.insert(k.clone(), v);
                written.insert(k, db.latest_sequence());
            }
            if rnd(10) == 0 {
                db.flush().unwrap();
            }
        }
        let conflict = tracked.iter().any(|k| written.get(k).is_some_and(|&s| s > snap));
        spills += usize::from(t.spilled());
        let r = t.commit(&db, &W);
        assert_eq!(busy(r.clone()), conflict, "round {round}: {r:?}");
        if conflict {
            conflicts += 1;
        } else {
            r.unwrap();
            commits += 1;
            let first = db.latest_sequence() + 1 - mine.len() as u64;
            for (i, (k, v)) in mine.into_iter().enumerate() {
                match v {
                    Some(v) => model.insert(k.clone(), v),
                    None => model.remove(&k),
                };
                written.insert(k, first + i as u64);
            }
        }
        for i in 0..20 {
            assert_eq!(get(&db, &key(i)), model.get(&key(i)).cloned(), "round {round}, key {i}");
        }
    }
    assert!(commits > 50 && conflicts > 20, "{commits} commits, {conflicts} conflicts");
    assert!(spills > 40, "{spills} transactions spilled");
}

/// Threads bump one counter through transactions, retrying on `Busy`: the
/// check and the write are one step under the write lock, so no increment
/// is lost. (Native only: wasm32-wasip1 has no threads.)
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn concurrent_read_modify_write_loses_no_update() {
    let db = db();
    db.put(&W, b"counter", &n(0)).unwrap();
    let (threads, each) = (4u64, 200u64);
    let retries = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..each {
                    loop {
                        let mut t = db.begin_optimistic();
                        let v =
                            u64::from_le_bytes(t.get_for_update(&db, b"counter").unwrap().unwrap().try_into().unwrap());
                        t.put(b"counter", &n(v + 1)).unwrap();
                        match t.commit(&db, &W) {
                            Ok(()) => break,
                            Err(Error::Busy(_)) => {
                                retries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            });
        }
    });
    assert_eq!(get(&db, b"counter"), Some(n(threads * each)));
    eprintln!("{} retries", retries.into_inner());
}

#[test]
fn a_transaction_is_refused_by_another_database_and_after_close() {
    let one = db();
    let other = db();
    let mut t = one.begin_optimistic();
    t.put(b"k", b"v").unwrap();
    assert!(matches!(t.get(&other, b"k"), Err(Error::InvalidArgument(_))));
    assert!(matches!(one.begin_optimistic().commit(&other, &W), Err(Error::InvalidArgument(_))));
    one.close().unwrap();
    assert!(matches!(t.commit(&one, &W), Err(Error::Closed(_))));
}

/// Every read API over a transaction's own writes (puts, deletes, merges and
/// range deletes, on a base spread over memtable and tables, with newer
/// writes by others it must not see) equals a model: `get`, `multi_get`,
/// and iterators walked at random both ways within random bounds.
#[test]
fn every_read_api_sees_the_snapshot_with_own_writes_on_top_like_a_model() {
    let mut rnd = xorshift(0x2545f4914f6cdd1d);
    let key = |i: u64| format!("k{i:02}").into_bytes();
    let add = |a: Option<&Vec<u8>>, b: u64| n(a.map_or(0, |a| u64::from_le_bytes(a[..].try_into().unwrap())) + b);
    let mut published = 0;
    for round in 0..120u64 {
        let db = db();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for _ in 0..rnd(40) {
            let k = key(rnd(30));
            if rnd(4) == 0 {
                db.delete(&W, &k).unwrap();
                model.remove(&k);
            } else {
                let v = n(rnd(100));
                db.put(&W, &k, &v).unwrap();
                model.insert(k, v);
            }
            if rnd(8) == 0 {
                db.flush().unwrap();
            }
        }
        let mut t = db.begin_optimistic();
        // A quarter of the rounds keep every write in memory; the others
        // spill them into own files, before every write or every few.
        t.set_spill_bytes([0, 1, 40, 200][round as usize % 4]);
        // Others write after the snapshot: not seen.
        for _ in 0..rnd(5) {
            db.put(&W, &key(rnd(30)), b"later").unwrap();
        }
        // Keys the transaction writes or range-deletes.
        let mut touched = std::collections::BTreeSet::new();
        for _ in 0..1 + rnd(12) {
            let k = key(rnd(30));
            match rnd(5) {
                0 => {
                    let v = n(1000 + rnd(100));
                    t.put(&k, &v).unwrap();
                    touched.insert(k.clone());
                    model.insert(k, v);
                }
                1 => {
                    t.delete(&k).unwrap();
                    touched.insert(k.clone());
                    model.remove(&k);
                }
                2 | 3 => {
                    let d = rnd(50);
                    t.merge(&db, &k, &n(d)).unwrap();
                    let v = add(model.get(&k), d);
                    touched.insert(k.clone());
                    model.insert(k, v);
                }
                _ => {
                    let (a, b) = (rnd(30), rnd(30));
                    let (s, e) = (key(a.min(b)), key(a.max(b)));
                    t.delete_range(&s, &e).unwrap();
                    touched.extend((a.min(b)..a.max(b)).map(key));
                    model.retain(|k, _| !(s.as_slice() <= k.as_slice() && k.as_slice() < e.as_slice()));
                }
            }
        }
        for i in 0..30 {
            assert_eq!(t.get(&db, &key(i)).unwrap(), model.get(&key(i)).cloned(), "round {round}, get {i}");
        }
        let keys: Vec<Vec<u8>> = (0..12).map(|_| key(rnd(32))).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).cloned()).collect();
        assert_eq!(t.multi_get(&db, &refs).unwrap(), want, "round {round}, multi_get");
        for _ in 0..4 {
            let lower = (rnd(3) == 0).then(|| key(rnd(32)));
            let upper = (rnd(3) == 0).then(|| key(rnd(32)));
            let opts = ReadOptions { lower_bound: lower.clone(), upper_bound: upper.clone(), ..ReadOptions::default() };
            let view: Vec<(Vec<u8>, Vec<u8>)> = model
                .iter()
                .filter(|(k, _)| lower.as_ref().is_none_or(|l| *k >= l) && upper.as_ref().is_none_or(|u| *k < u))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut it = t.iter(&db, &opts).unwrap();
            // Position: None = not valid; Some(i) = at view[i].
            let mut at: Option<usize> = None;
            for step in 0..40 {
                match rnd(6) {
                    0 => {
                        it.seek_to_first();
                        at = (!view.is_empty()).then_some(0);
                    }
                    1 => {
                        it.seek_to_last();
                        at = view.len().checked_sub(1);
                    }
                    2 => {
                        let target = key(rnd(32));
                        it.seek(&target);
                        at = view.iter().position(|(k, _)| *k >= target);
                    }
                    3 => {
                        let target = key(rnd(32));
                        it.seek_for_prev(&target);
                        at = view.iter().rposition(|(k, _)| *k <= target);
                    }
                    4 if at.is_some() => {
                        it.next();
                        at = at.map(|i| i + 1).filter(|&i| i < view.len());
                    }
                    _ if at.is_some() => {
                        it.prev();
                        at = at.and_then(|i| i.checked_sub(1));
                    }
                    _ => continue,
                }
                it.status().unwrap();
                match at {
                    None => assert!(!it.valid(), "round {round}, step {step}: want not valid"),
                    Some(i) => {
                        assert!(it.valid(), "round {round}, step {step}: want {:?}", view[i].0);
                        assert_eq!(
                            (it.key(), it.value()),
                            (&view[i].0[..], &view[i].1[..]),
                            "round {round}, step {step}"
                        );
                    }
                }
            }
        }
        // The commit writes what the transaction read, unless someone
        // else wrote a key it touched (then nothing).
        let spilled = t.spilled();
        match t.commit(&db, &W) {
            Ok(()) => {
                published += usize::from(spilled);
                for k in &touched {
                    assert_eq!(
                        get(&db, k),
                        model.get(k).cloned(),
                        "round {round} (spilled: {spilled}), committed {k:?}"
                    );
                }
            }
            Err(Error::Busy(_)) => {}
            Err(e) => panic!("round {round}: {e}"),
        }
    }
    assert!(published > 20, "{published} spilled transactions committed");
}

/// An iterator keeps the own writes as they were when it was made; the
/// transaction's later writes show in the next iterator.
#[test]
fn an_iterator_sees_own_writes_as_of_its_creation() {
    let db = db();
    db.put(&W, b"a", b"1").unwrap();
    let mut t = db.begin_optimistic();
    t.put(b"b", b"2").unwrap();
    let mut it = t.iter(&db, &ReadOptions::default()).unwrap();
    t.put(b"c", b"3").unwrap();
    t.delete(b"a").unwrap();
    let mut seen = Vec::new();
    it.seek_to_first();
    while it.valid() {
        seen.push(it.key().to_vec());
        it.next();
    }
    assert_eq!(seen, [b"a".to_vec(), b"b".to_vec()]);
    let mut it = t.iter(&db, &ReadOptions::default()).unwrap();
    it.seek_to_last();
    assert_eq!(it.key(), b"c");
    it.prev();
    assert_eq!(it.key(), b"b");
    it.prev();
    assert!(!it.valid());
}

/// Table files in the database's directory.
fn tables(fs: &MemFs) -> usize {
    use crate::fs::Fs;
    fs.list("db").unwrap().iter().filter(|n| n.ends_with(".sst")).count()
}

fn spilling_db(fs: &Arc<MemFs>) -> Db {
    let options = Options {
        write_buffer_size: 64 << 10,
        merge_operator: Some(Arc::new(U64AddOperator)),
        transaction_spill_bytes: 16 << 10,
        ..Options::default()
    };
    Db::open(fs.clone(), "db", options).unwrap()
}

fn big_key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A transaction past its spill size keeps only the newest writes in
/// memory; no one else sees its own files' data before commit; the commit
/// publishes all of it at once, numbered as a batch's entries would be,
/// durably; the own files are gone after it.
#[test]
fn a_large_transaction_spills_and_its_commit_publishes_everything_at_once() {
    let fs = Arc::new(MemFs::new());
    let db = spilling_db(&fs);
    db.put(&W, &big_key(5), b"before").unwrap();
    db.put(&W, b"counter", &n(10)).unwrap();
    let before = tables(&fs);
    let mut t = db.begin_optimistic();
    let value = vec![7u8; 100];
    for i in 0..2_000 {
        t.put(&big_key(i), &value).unwrap();
        assert!(t.approximate_size() < 17 << 10, "held {} bytes in memory", t.approximate_size());
    }
    t.delete(&big_key(3)).unwrap();
    t.delete_range(&big_key(100), &big_key(200)).unwrap();
    t.merge(&db, b"counter", &n(5)).unwrap();
    t.put(&big_key(150), b"after the range delete").unwrap();
    assert!(t.spilled());
    assert!(tables(&fs) > before + 5, "own files: {}", tables(&fs) - before);
    assert!(db.statistics().ticker(crate::stats::Ticker::TransactionSpills.name()) > 5);
    // Others see none of it.
    assert_eq!(get(&db, &big_key(5)), Some(b"before".to_vec()));
    assert_eq!(get(&db, &big_key(6)), None);
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    assert_eq!(it.key(), b"counter");
    it.next();
    assert_eq!(it.key(), &big_key(5)[..]);
    it.next();
    assert!(!it.valid());
    drop(it);
    // The transaction sees all of it.
    assert_eq!(t.get(&db, &big_key(5)).unwrap(), Some(value.clone()));
    assert_eq!(t.get(&db, &big_key(3)).unwrap(), None);
    assert_eq!(t.get(&db, &big_key(150)).unwrap(), Some(b"after the range delete".to_vec()));
    assert_eq!(t.get(&db, &big_key(151)).unwrap(), None);
    assert_eq!(t.get(&db, b"counter").unwrap(), Some(n(15)));
    let seq = db.latest_sequence();
    t.commit(&db, &W).unwrap();
    // 2,000 puts, a delete, a range delete, a merge and a put.
    assert_eq!(db.latest_sequence(), seq + 2_004);
    assert_eq!(db.statistics().ticker(crate::stats::Ticker::TransactionsPublishedFromFiles.name()), 1);
    assert_eq!(tables(&fs), db.table_file_count(), "own files left behind");
    let check = |db: &Db| {
        assert_eq!(get(db, &big_key(0)), Some(value.clone()));
        assert_eq!(get(db, &big_key(3)), None);
        assert_eq!(get(db, &big_key(5)), Some(value.clone()));
        assert_eq!(get(db, &big_key(150)), Some(b"after the range delete".to_vec()));
        assert_eq!(get(db, &big_key(199)), None);
        assert_eq!(get(db, &big_key(1_999)), Some(value.clone()));
        assert_eq!(get(db, b"counter"), Some(n(15)));
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        let mut count = 0;
        it.seek_to_first();
        while it.valid() {
            count += 1;
            it.next();
        }
        // 2,000 keys, less one deleted and 99 range-deleted, and the counter.
        assert_eq!(count, 2_000 - 1 - 99 + 1);
    };
    check(&db);
    drop(db);
    let db = spilling_db(&fs);
    check(&db);
}

/// Rollback (or dropping the transaction) deletes its own files; an
/// iterator made before keeps them readable until it is dropped.
#[test]
fn a_spilled_transactions_files_go_with_the_last_reader() {
    let fs = Arc::new(MemFs::new());
    let db = spilling_db(&fs);
    let before = tables(&fs);
    let mut t = db.begin_optimistic();
    for i in 0..1_000 {
        t.put(&big_key(i), &[1u8; 100]).unwrap();
    }
    assert!(tables(&fs) > before);
    let mut it = t.iter(&db, &ReadOptions::default()).unwrap();
    t.rollback();
    // Others write meanwhile, and files come and go.
    for i in 0..2_000 {
        db.put(&W, &big_key(i * 7), &[2u8; 100]).unwrap();
    }
    db.flush().unwrap();
    let mut seen = 0;
    it.seek_to_first();
    while it.valid() {
        if it.key().starts_with(b"key") && it.value() == [1u8; 100] {
            seen += 1;
        }
        it.next();
    }
    it.status().unwrap();
    assert_eq!(seen, 1_000);
    drop(it);
    assert_eq!(tables(&fs), db.table_file_count(), "own files left behind");
    for i in 0..1_000 {
        assert_ne!(get(&db, &big_key(i)), Some(vec![1u8; 100]));
    }
}

/// A spilled transaction conflicts like any other: a newer write by
/// someone else of a key it wrote fails the commit, and nothing of it
/// shows, whether that write is in a memtable or in a table.
#[test]
fn a_spilled_transaction_conflicts_and_publishes_nothing() {
    for flush in [false, true] {
        let fs = Arc::new(MemFs::new());
        let db = spilling_db(&fs);
        let mut t = db.begin_optimistic();
        for i in 0..1_000 {
            t.put(&big_key(i), &[1u8; 100]).unwrap();
        }
        db.put(&W, &big_key(500), b"theirs").unwrap();
        if flush {
            db.flush().unwrap();
        }
        let seq = db.latest_sequence();
        assert!(busy(t.commit(&db, &W)), "flush: {flush}");
        assert_eq!(db.latest_sequence(), seq);
        assert_eq!(get(&db, &big_key(500)), Some(b"theirs".to_vec()));
        assert_eq!(get(&db, &big_key(1)), None);
        assert_eq!(tables(&fs), db.table_file_count(), "own files left behind");
    }
}

/// Published into an empty range below L0, a spilled transaction's writes
/// become tables of the target size with disjoint key ranges at the
/// deepest level; with a range delete among them, one table holds all.
#[test]
fn a_published_transaction_is_split_into_tables_of_the_target_size_below_l0() {
    for with_range_delete in [false, true] {
        let fs = Arc::new(MemFs::new());
        let options = Options {
            transaction_spill_bytes: 16 << 10,
            target_file_size_base: 64 << 10,
            compression: crate::Compression::None,
            ..Options::default()
        };
        let db = Db::open(fs.clone(), "db", options).unwrap();
        let mut t = db.begin_optimistic();
        for i in 0..6_000 {
            t.put(&big_key(i), &[i as u8; 100]).unwrap();
        }
        if with_range_delete {
            t.delete_range(&big_key(10), &big_key(20)).unwrap();
        }
        t.commit(&db, &W).unwrap();
        let per_level = db.properties().files_per_level;
        let last = per_level.len() - 1;
        assert_eq!(per_level.iter().sum::<u64>(), per_level[last], "range delete {with_range_delete}: {per_level:?}");
        if with_range_delete {
            assert_eq!(per_level[last], 1);
        } else {
            // About 660 KB of entries in tables of about 64 KiB.
            assert!(per_level[last] >= 8, "{per_level:?}");
        }
        db.verify().unwrap();
        for i in (0..6_000).step_by(7) {
            let want = (!with_range_delete || !(10..20).contains(&i)).then(|| vec![i as u8; 100]);
            assert_eq!(get(&db, &big_key(i)), want, "key {i}");
        }
        assert_eq!(db.count(&ReadOptions::default()).unwrap(), if with_range_delete { 5_990 } else { 6_000 });
    }
}
