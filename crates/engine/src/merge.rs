//! Merge operators: read-modify-write without a read. `Db::merge(key,
//! operand)` records an operand; reads, iterators and compactions combine
//! the operands of a key with its base value through the operator
//! (RocksDB's `MergeOperator`: full merge, and optional partial merge).

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

    /// Combines two adjacent operands into one (`older` then `newer`), when
    /// the operator can; `None` keeps both. Used by compaction.
    fn partial_merge(&self, _key: &[u8], _older: &[u8], _newer: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// Adds unsigned 64-bit little-endian integers (a counter): the example
/// operator, and a useful one. A base or operand that is not 8 bytes is an
/// error.
#[derive(Clone, Copy, Debug, Default)]
pub struct U64AddOperator;

fn as_u64(b: &[u8]) -> Result<u64, String> {
    Ok(u64::from_le_bytes(b.try_into().map_err(|_| format!("u64add: operand of {} bytes, not 8", b.len()))?))
}

impl MergeOperator for U64AddOperator {
    fn name(&self) -> &str {
        "u64add"
    }

    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>, String> {
        let mut sum = existing.map(as_u64).transpose()?.unwrap_or(0);
        for op in operands {
            sum = sum.wrapping_add(as_u64(op)?);
        }
        Ok(sum.to_le_bytes().to_vec())
    }

    fn partial_merge(&self, _key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        Some(as_u64(older).ok()?.wrapping_add(as_u64(newer).ok()?).to_le_bytes().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64add_sums_and_rejects_bad_operands() {
        let op = U64AddOperator;
        let enc = |v: u64| v.to_le_bytes();
        let (a, b) = (enc(2), enc(40));
        assert_eq!(op.full_merge(b"k", Some(&enc(100)), &[&a, &b]).unwrap(), enc(142));
        assert_eq!(op.full_merge(b"k", None, &[&a]).unwrap(), enc(2));
        assert_eq!(op.partial_merge(b"k", &a, &b), Some(enc(42).to_vec()));
        assert!(op.full_merge(b"k", Some(b"bad"), &[&a]).is_err());
        assert_eq!(op.partial_merge(b"k", b"bad", &b), None);
    }
}
