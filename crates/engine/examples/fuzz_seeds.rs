//! Writes the fuzz targets' valid seeds (`silt_engine::fuzzing::seeds`) as
//! files `DIR/<target>/seed-<n>`, the starting corpus of `cargo fuzz`.
//!
//!   cargo run -p silt-engine --example fuzz_seeds -- fuzz/corpus
use std::collections::BTreeMap;

fn main() -> std::io::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "fuzz/corpus".into());
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (target, bytes) in silt_engine::fuzzing::seeds() {
        let n = counts.entry(target).or_default();
        std::fs::create_dir_all(format!("{dir}/{target}"))?;
        std::fs::write(format!("{dir}/{target}/seed-{n}"), bytes)?;
        *n += 1;
    }
    eprintln!("wrote {counts:?} into {dir}");
    Ok(())
}
