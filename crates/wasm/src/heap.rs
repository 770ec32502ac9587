//! The bytes the module's heap holds: the system allocator (dlmalloc in
//! wasm32), counting what is allocated and not yet freed.
//!
//! Wasm memory only grows, so its size says how much was ever needed at
//! once, not what is held now. This count goes down as well as up: beside
//! what the engine accounts for (block cache, memtables, pinned values) it
//! tells a leak from a cache filling up (the browser soak bounds what is
//! left over, `tests/e2e/soak-bounds.ts`). Its cost is an addition per
//! allocation and one per free (wasm32 without threads: no atomic
//! instructions).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Bytes allocated and not yet freed (requested sizes, without the
/// allocator's own overhead).
pub fn live_bytes() -> usize {
    LIVE.load(Relaxed)
}

/// The global allocator in wasm32 builds (`lib.rs`); natively only its tests use it.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub struct Counting;

// SAFETY: every call goes to `System` with the caller's arguments unchanged;
// the counter is all this adds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size, Relaxed);
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_is_allocated_and_not_freed() {
        // Natively the counter is not the global allocator: drive it directly.
        let a = Counting;
        let before = live_bytes();
        let layout = Layout::from_size_align(1000, 8).unwrap();
        unsafe {
            let p = a.alloc(layout);
            assert_eq!(live_bytes() - before, 1000);
            let p = a.realloc(p, layout, 3000);
            assert_eq!(live_bytes() - before, 3000);
            a.dealloc(p, Layout::from_size_align(3000, 8).unwrap());
            let z = a.alloc_zeroed(layout);
            assert_eq!(std::slice::from_raw_parts(z, 1000).iter().sum::<u8>(), 0);
            a.dealloc(z, layout);
        }
        assert_eq!(live_bytes(), before);
    }
}
