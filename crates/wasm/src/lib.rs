//! wasm-bindgen bindings of the Silt engine, and its OPFS file layer.
//!
//! This crate is the only place where the engine meets JavaScript. The
//! generated glue is private to the npm package `siltdb` (`js/pkg`,
//! gitignored); users import `siltdb`, never this module.
//!
//! - `pool/`: the engine's `Fs` over a pool of pre-opened files whose
//!   headers name the logical files (pure Rust, tested natively);
//! - `opfs.rs` (wasm32): the pool on OPFS sync access handles;
//! - `database.rs`, `reads.rs`, `iterator.rs`, `batch.rs`, `options.rs`:
//!   the `Database` class and what crosses the boundary with it;
//!   `exchange.rs` and `results.rs`: zero-copy reads in one call each;
//! - `heap.rs`: the allocator, counting the heap's live bytes;
//! - `contract.rs`: the numbers and names siltdb's TypeScript reads instead
//!   of keeping its own copies (offsets, bits, error codes, the fields of
//!   every report); `report.rs`: how a report declared there becomes the
//!   object a call returns.
//!
//! Errors cross the boundary as a JavaScript `Error` whose `code` property
//! is stable (the engine's [`silt_engine::Error::code`] or the binding's own,
//! see `error.rs`); `siltdb` turns it into a typed `SiltError`.

mod backup;
mod batch;
mod contract;
mod database;
mod error;
mod exchange;
mod heap;
mod iterator;
mod leak;
#[cfg(target_arch = "wasm32")]
mod opfs;
mod options;
pub mod pool;
mod reads;
mod report;
mod results;
mod rocksdb;
mod transactions;

use std::sync::Arc;

use silt_engine::Clock;
use wasm_bindgen::prelude::*;

pub use contract::contract_json;
pub use database::Database;
pub use iterator::Iterator;
#[cfg(target_arch = "wasm32")]
pub use opfs::OpfsPool;
pub use options::OpenOptions;

/// Whether this build of the module uses WebAssembly SIMD128 instructions
/// (the bloom filter probes have a SIMD128 path). Fixed at compile time.
#[wasm_bindgen(js_name = simd128Enabled)]
pub fn simd128_enabled() -> bool {
    cfg!(target_feature = "simd128")
}

#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: heap::Counting = heap::Counting;

/// Bytes the module's heap holds now (allocated and not yet freed), unlike
/// wasm memory's size, which never shrinks: see `heap.rs`.
#[wasm_bindgen(js_name = heapBytes)]
pub fn heap_bytes() -> f64 {
    heap::live_bytes() as f64
}

/// Makes room for `bytes` more of allocations in one growth of wasm
/// memory, before a call that allocates that much in many pieces (an
/// ingest): each growth of memory makes V8 collect the JavaScript heap,
/// which with a large heap costs more than the call's work. Best effort:
/// nothing happens if the memory cannot grow that far (the call then grows
/// it as it goes, or fails as it would have).
#[wasm_bindgen(js_name = reserveMemory)]
pub fn reserve_memory(bytes: f64) {
    let mut room: Vec<u8> = Vec::new();
    // The allocator keeps the freed block and carves later allocations
    // out of it.
    let _ = room.try_reserve_exact(bytes.max(0.0) as usize);
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen(inline_js = "export function now_micros() { return performance.now() * 1000; }")]
extern "C" {
    fn now_micros() -> f64;
}

/// `performance.now()`, for the engine's duration statistics.
#[cfg(target_arch = "wasm32")]
struct PerformanceClock;

#[cfg(target_arch = "wasm32")]
impl Clock for PerformanceClock {
    fn now_micros(&self) -> u64 {
        now_micros() as u64
    }

    fn now_nanos(&self) -> u64 {
        (now_micros() * 1000.0) as u64
    }
}

/// The clock the engine gets: `performance.now()` on wasm32; natively the
/// bindings are only unit-tested, without durations.
pub(crate) fn clock() -> Option<Arc<dyn Clock>> {
    #[cfg(target_arch = "wasm32")]
    {
        Some(Arc::new(PerformanceClock))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        None
    }
}
