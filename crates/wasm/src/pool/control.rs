//! What the database binding needs of a pool (`PoolControl`), whatever its
//! files are, and the guard of `Pool::use_reserve`.

use super::{Pool, PoolStats, SlotFile};

/// What the database binding needs of a pool, whatever its files are.
pub trait PoolControl {
    fn free_count(&self) -> usize;
    fn exhausted_count(&self) -> u64;
    fn stats(&self) -> PoolStats;
    fn paths(&self) -> Vec<String>;
    fn close(&self);
    fn use_reserve(&self) -> ReserveGuard;
}

impl<S: SlotFile> PoolControl for Pool<S> {
    fn free_count(&self) -> usize {
        Pool::free_count(self)
    }
    fn exhausted_count(&self) -> u64 {
        Pool::exhausted_count(self)
    }
    fn stats(&self) -> PoolStats {
        Pool::stats(self)
    }
    fn paths(&self) -> Vec<String> {
        Pool::paths(self)
    }
    fn close(&self) {
        Pool::close(self)
    }
    fn use_reserve(&self) -> ReserveGuard {
        Pool::use_reserve(self)
    }
}

/// While alive, writes to the pool may use the space reserve
/// ([`Pool::use_reserve`]).
#[must_use = "the reserve is usable only while the guard lives"]
pub struct ReserveGuard(pub(super) Box<dyn FnOnce()>);

impl Drop for ReserveGuard {
    fn drop(&mut self) {
        let release = std::mem::replace(&mut self.0, Box::new(|| {}));
        release();
    }
}
