//! The engine's source of time, a module of its own so that the places that
//! read it (merges, lookups, compaction) need not import the database.

/// A source of time, for statistics that measure durations. wasm32 has no
/// clock in `std`; the embedder supplies one (`performance.now()` in the
/// browser, `Instant` natively).
pub trait Clock: Send + Sync {
    /// Microseconds since an arbitrary, fixed origin.
    fn now_micros(&self) -> u64;

    /// Nanoseconds since the same origin, for durations shorter than a
    /// microsecond (a merge). Default: the microseconds, scaled.
    fn now_nanos(&self) -> u64 {
        self.now_micros().saturating_mul(1000)
    }
}
