//! Helpers shared by the crate's unit tests.

/// A directory under the system temp dir, removed on drop.
#[cfg(not(target_arch = "wasm32"))]
pub struct TempDir(String);

#[cfg(not(target_arch = "wasm32"))]
impl TempDir {
    pub fn new(tag: &str) -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "silt-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir.to_str().expect("utf-8 temp path").to_string())
    }

    pub fn path(&self) -> &str {
        &self.0
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `len` bytes LZ4 cannot shrink (xorshift of `seed`): nothing in them
/// recurs, so table sizes follow the data and no dictionary is made of them.
pub fn incompressible(seed: u32, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}
