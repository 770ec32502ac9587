//! The fuzz targets' corpus, run as a test: every decoder of stored bytes
//! (`silt_engine::fuzzing`) gets the valid seeds made by a real database,
//! the committed corpus `fuzz/corpus/<target>/` (inputs `cargo fuzz` kept),
//! and seeded mutations of each: bit flips, byte overwrites, truncations,
//! spliced and duplicated spans. No input may panic; the valid seeds must
//! decode entirely (so a target that stopped reaching its decoder fails).
//!
//! Each valid seed gets 5,000 mutations, each committed corpus file 20
//! (`SILT_SOAK=1`: 200,000 and 2,000). The totals are printed as one JSON
//! line and written to target/reliability/fuzz-corpus.json.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use silt_engine::fuzzing::{seeds, TARGETS};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

/// The committed corpus of one target (empty if there is none yet).
fn committed(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir().join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut out: Vec<_> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

/// One seeded mutation of `input`.
fn mutate(input: &[u8], rng: &mut SmallRng) -> Vec<u8> {
    let mut v = input.to_vec();
    if v.is_empty() {
        return vec![rng.random(); rng.random_range(1..64)];
    }
    for _ in 0..rng.random_range(1..=3) {
        let len = v.len().max(1);
        match rng.random_range(0..6) {
            0 | 1 => {
                let i = rng.random_range(0..len);
                if let Some(b) = v.get_mut(i) {
                    *b ^= 1 << rng.random_range(0..8);
                }
            }
            2 => {
                let i = rng.random_range(0..len);
                if let Some(b) = v.get_mut(i) {
                    *b = [0, 0xff, 0x7f, 0x80, rng.random()][rng.random_range(0..5)];
                }
            }
            3 => v.truncate(rng.random_range(0..len)),
            4 => {
                // Duplicate a span somewhere else.
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(1..64)).min(v.len());
                let span = v[a.min(v.len())..b].to_vec();
                let at = rng.random_range(0..=v.len());
                v.splice(at..at, span);
            }
            _ => {
                // Remove a span.
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(1..64)).min(v.len());
                if a < b {
                    v.drain(a..b);
                }
            }
        }
    }
    v
}

#[test]
fn every_decoder_survives_its_corpus_and_mutations() {
    let soak = std::env::var("SILT_SOAK").is_ok_and(|v| v != "0" && !v.is_empty());
    // The valid seeds get many mutations; the committed corpus (inputs the
    // fuzzer found interesting, already varied) a few each.
    let (per_seed, per_corpus_file) = if soak { (200_000, 2_000) } else { (5_000, 20) };
    let targets: BTreeMap<&str, fn(&[u8]) -> bool> = TARGETS.iter().copied().collect();
    let mut inputs: BTreeMap<&str, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    let mut seed_count: BTreeMap<&str, usize> = BTreeMap::new();
    for (target, bytes) in seeds() {
        let n = seed_count.entry(target).or_default();
        // Valid inputs must decode entirely.
        assert!(targets[target](&bytes), "target {target}: valid seed {n} did not decode");
        inputs.entry(target).or_default().push((format!("builtin-seed-{n}"), bytes));
        *n += 1;
    }
    for name in targets.keys() {
        assert!(seed_count.get(name).copied().unwrap_or(0) > 0, "target {name} has no valid seed");
        inputs.entry(name).or_default().extend(committed(name));
    }

    let mut executions: BTreeMap<&str, u64> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(0x5117);
    for (target, list) in &inputs {
        let run = targets[target];
        for (name, bytes) in list {
            let mut check = |input: &[u8], what: &str| {
                if catch_unwind(AssertUnwindSafe(|| run(input))).is_err() {
                    let path = std::env::temp_dir().join(format!("silt-fuzz-{target}-crash"));
                    std::fs::write(&path, input).unwrap();
                    panic!("target {target} panicked on {what} of {name} (input saved to {})", path.display());
                }
                *executions.entry(target).or_default() += 1;
            };
            check(bytes, "the input itself");
            let mutations = if name.starts_with("builtin-seed-") { per_seed } else { per_corpus_file };
            for m in 0..mutations {
                check(&mutate(bytes, &mut rng), &format!("mutation {m}"));
            }
        }
    }
    let total: u64 = executions.values().sum();
    let per_target: Vec<String> = executions.iter().map(|(t, n)| format!("\"{t}\":{n}")).collect();
    let line = format!("{{\"fuzz_corpus_executions\":{total},\"per_target\":{{{}}}}}", per_target.join(","));
    eprintln!("{line}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/reliability");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("fuzz-corpus.json"), format!("{line}\n"));
}
