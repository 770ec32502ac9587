//! A deliberate leak, for proving that the browser soak's memory check
//! catches one (`scripts/leak-check.sh`): with the `leak-test` feature,
//! every read and write call leaks 100 bytes of wasm heap, counted by the
//! counting allocator (`heap.rs`) as any allocation is. Without the
//! feature (every build siltdb ships) it is nothing.

/// Bytes leaked per call with the `leak-test` feature.
#[cfg(feature = "leak-test")]
const LEAKED_PER_CALL: usize = 100;

/// Leaks `LEAKED_PER_CALL` bytes (the `leak-test` feature only).
#[cfg(feature = "leak-test")]
pub(crate) fn leak_per_call() {
    std::mem::forget(vec![0x5a_u8; LEAKED_PER_CALL]);
}

/// Nothing: builds without the `leak-test` feature leak nothing.
#[cfg(not(feature = "leak-test"))]
#[inline(always)]
pub(crate) fn leak_per_call() {}
