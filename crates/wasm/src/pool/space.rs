//! The bytes a pool's files take on storage, and the cap `Pool::set_max_bytes`
//! puts on them (see `mod.rs`, "Size cap").

use super::SlotError;

/// The bytes the pooled files take on storage, and the cap on them.
#[derive(Debug, Default)]
pub(super) struct Space {
    /// Physical bytes of every pooled file, as this pool last set them.
    pub(super) used: u64,
    /// The cap; `None` = only the storage's own quota.
    pub(super) max: Option<u64>,
    /// Bytes below `max` that only work inside `use_reserve` may use.
    pub(super) reserve: u64,
    /// `use_reserve` scopes open right now.
    pub(super) reserve_users: usize,
}

impl Space {
    /// Takes `growth` more bytes, or says why not (as a full storage would).
    pub(super) fn take(&mut self, growth: u64) -> std::result::Result<(), SlotError> {
        let Some(max) = self.max else {
            self.used += growth;
            return Ok(());
        };
        let limit = if self.reserve_users > 0 { max } else { max.saturating_sub(self.reserve) };
        if self.used.saturating_add(growth) > limit {
            let kept = if self.reserve_users > 0 || self.reserve == 0 {
                String::new()
            } else {
                format!(" (of which the last {} are kept for deletes, compactions and reopening)", self.reserve)
            };
            return Err(SlotError {
                quota: true,
                message: format!(
                    "the database's size cap is reached: its files take {} bytes, this write needs {growth} more, \
                     and maxBytes is {max}{kept}; delete data and compact it (delete or deleteRange, then \
                     compactRange), or reopen the database with a larger maxBytes",
                    self.used
                ),
            });
        }
        self.used += growth;
        Ok(())
    }

    pub(super) fn give_back(&mut self, bytes: u64) {
        self.used = self.used.saturating_sub(bytes);
    }
}
