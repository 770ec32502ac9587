//! Merge operators: read-modify-write without a read. `Db::merge(key,
//! operand)` records an operand; reads, iterators and compactions combine
//! the operands of a key with its base value through the operator
//! (RocksDB's `MergeOperator`: full merge, and optional partial merge).

use crate::clock::Clock;
use crate::error::Error;
use crate::stats::{Statistics, Ticker};

/// Combines merge operands.
///
/// REQUIRES: the same operator (by name and behaviour) every time a
/// database is opened; its operands are stored, not its results.
pub trait MergeOperator: Send + Sync {
    /// A name for error messages.
    fn name(&self) -> &str;

    /// The value of `key` given its base value (`None` when the key did not
    /// exist or was deleted) and its operands, **oldest first**. An `Err`
    /// fails the read (or compaction) with `Corruption`.
    fn full_merge(&self, key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>, String>;

    /// Refuses an operand that can never merge, when it is written (so the
    /// writer learns of it, not a later reader). Default: any operand.
    fn check_operand(&self, _operand: &[u8]) -> Result<(), String> {
        Ok(())
    }

    /// Combines two adjacent operands into one (`older` then `newer`), when
    /// the operator can; `None` keeps both. Used by compaction.
    fn partial_merge(&self, _key: &[u8], _older: &[u8], _newer: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// What merges cost, counted where they run and reported once:
/// `rocksdb.merge.operation.time.nanos` (only when durations are measured)
/// and `rocksdb.number.merge.failures`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MergeStats {
    pub nanos: u64,
    pub failures: u64,
}

impl MergeStats {
    pub fn add(&mut self, other: MergeStats) {
        self.nanos += other.nanos;
        self.failures += other.failures;
    }

    pub fn report(&self, stats: &Statistics) {
        stats.add(Ticker::MergeOperationTotalTime, self.nanos);
        stats.add(Ticker::NumberMergeFailures, self.failures);
    }
}

/// Runs `op.full_merge` for `key`: every read path, flush and compaction
/// merge through here. Its time (with `clock`, when durations are measured)
/// and a failure are counted into `counted`; a failure is `Corruption`
/// naming the operator and the key.
pub(crate) fn full_merge(
    op: &dyn MergeOperator,
    key: &[u8],
    existing: Option<&[u8]>,
    operands: &[&[u8]],
    clock: Option<&dyn Clock>,
    counted: &mut MergeStats,
) -> Result<Vec<u8>, Error> {
    let t0 = clock.map(|c| c.now_nanos());
    let r = op.full_merge(key, existing, operands);
    if let (Some(t0), Some(c)) = (t0, clock) {
        counted.nanos += c.now_nanos().saturating_sub(t0);
    }
    r.map_err(|e| {
        counted.failures += 1;
        Error::corruption(
            format!("merge operator {}", op.name()),
            0,
            format!("merge of key {:?} failed: {e}", String::from_utf8_lossy(key)),
        )
    })
}

/// Adds unsigned 64-bit little-endian integers (a counter): the example
/// operator, and a useful one. An operand that is not 8 bytes is refused
/// when written (`check_operand`); a base value that is not 8 bytes (one
/// put there as something else) counts as 0, as in RocksDB's
/// `UInt64AddOperator`: refusing it would fail every flush and compaction
/// that meets the key, and with them every later write.
#[derive(Clone, Copy, Debug, Default)]
pub struct U64AddOperator;

fn as_u64(b: &[u8]) -> Result<u64, String> {
    Ok(u64::from_le_bytes(b.try_into().map_err(|_| format!("u64add: operand of {} bytes, not 8", b.len()))?))
}

impl MergeOperator for U64AddOperator {
    fn name(&self) -> &str {
        "u64add"
    }

    fn check_operand(&self, operand: &[u8]) -> Result<(), String> {
        as_u64(operand).map(|_| ())
    }

    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>, String> {
        let mut sum = existing.and_then(|b| as_u64(b).ok()).unwrap_or(0);
        for op in operands {
            sum = sum.wrapping_add(as_u64(op)?);
        }
        Ok(sum.to_le_bytes().to_vec())
    }

    fn partial_merge(&self, _key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        Some(as_u64(older).ok()?.wrapping_add(as_u64(newer).ok()?).to_le_bytes().to_vec())
    }
}

/// Appends each operand's bytes to the value (a log, a list of ids of
/// fixed size): any bytes are a valid base and operand.
#[derive(Clone, Copy, Debug, Default)]
pub struct AppendOperator;

impl MergeOperator for AppendOperator {
    fn name(&self) -> &str {
        "append"
    }

    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>, String> {
        let base = existing.unwrap_or_default();
        let mut out = Vec::with_capacity(base.len() + operands.iter().map(|o| o.len()).sum::<usize>());
        out.extend_from_slice(base);
        for op in operands {
            out.extend_from_slice(op);
        }
        Ok(out)
    }

    fn partial_merge(&self, _key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        Some([older, newer].concat())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64add_sums_counts_a_bad_base_as_zero_and_rejects_bad_operands() {
        let op = U64AddOperator;
        let enc = |v: u64| v.to_le_bytes();
        let (a, b) = (enc(2), enc(40));
        assert_eq!(op.full_merge(b"k", Some(&enc(100)), &[&a, &b]).unwrap(), enc(142));
        assert_eq!(op.full_merge(b"k", None, &[&a]).unwrap(), enc(2));
        assert_eq!(op.partial_merge(b"k", &a, &b), Some(enc(42).to_vec()));
        // A base put there as something else counts as 0 (RocksDB's rule);
        // an operand of another size is an error (refused when written).
        assert_eq!(op.full_merge(b"k", Some(b"bad"), &[&a]).unwrap(), enc(2));
        assert!(op.full_merge(b"k", None, &[b"bad"]).is_err());
        assert_eq!(op.partial_merge(b"k", b"bad", &b), None);
    }

    #[test]
    fn append_concatenates_oldest_first() {
        let op = AppendOperator;
        assert_eq!(op.full_merge(b"k", Some(b"ab"), &[b"c", b"", b"de"]).unwrap(), b"abcde");
        assert_eq!(op.full_merge(b"k", None, &[b"x"]).unwrap(), b"x");
        assert_eq!(op.partial_merge(b"k", b"1", b"2").unwrap(), b"12");
    }
}
