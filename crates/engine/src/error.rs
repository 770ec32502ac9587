//! The one error type of the engine.
//!
//! `NotFound` is not an error: lookups return `Option`. Every variant a caller
//! can act on carries what went wrong and where; `code()` gives a stable name
//! that the JavaScript layer exposes as `SiltError.code`.

use std::fmt;

/// Messages of errors whose fix a binding names in its own API's words
/// (crates/wasm/src/error.rs restates them for JavaScript): each is the
/// whole reason of its error, so that a binding can tell it by equality.
pub mod messages {
    /// A merge written to a database opened without a merge operator.
    pub const MERGE_NEEDS_OPERATOR: &str = "merge needs Options::merge_operator";
    /// A read met merge operands, and the database has no merge operator.
    pub const READ_NEEDS_OPERATOR: &str = "the database holds merge operands but no merge_operator is configured";
    /// The start of the reason of an operand its merge operator refuses
    /// (followed by the operator's name and why).
    pub const BAD_OPERAND: &str = "merge operand for the";
    /// An import into a database that is not empty.
    pub const IMPORT_NOT_EMPTY: &str = "the database is not empty: an import makes a new database";
}

/// Result alias used across the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bytes on storage are not what the engine wrote: a file is damaged,
    /// truncated or missing. `offset` is the byte offset in `file` where the
    /// problem was detected (0 when it concerns the whole file).
    #[error("corruption in {file} at offset {offset}: {reason}")]
    Corruption { file: String, offset: u64, reason: String },

    /// A stored checksum does not match the bytes it covers.
    #[error("checksum mismatch in {file} at offset {offset}: expected {expected:#010x}, got {got:#010x}")]
    ChecksumMismatch { file: String, offset: u64, expected: u32, got: u32 },

    /// The file layer failed (the OS, OPFS, or an injected fault).
    #[error("I/O error on {file} during {op}: {message}")]
    Io { file: String, op: &'static str, message: String },

    /// The storage is out of space (OPFS quota, a capped test file system).
    #[error("quota exceeded on {file}: {message}")]
    QuotaExceeded { file: String, message: String },

    /// The file layer has no file to give right now: creating `file` was
    /// refused because its pool of pre-opened files is used up (the OPFS
    /// pool of `silt-wasm`, which can only add files asynchronously, between
    /// calls). Nothing was written; retry once the pool has been topped up.
    #[error("cannot create {file}: {message}")]
    PoolExhausted { file: String, message: String },

    /// The caller passed something the engine does not accept.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The resource is held by someone else (another process or tab holds the
    /// database lock).
    #[error("busy: {0}")]
    Busy(String),

    /// The database was closed, or a previous fatal error stopped writes.
    #[error("database closed: {0}")]
    Closed(String),

    /// The operation is not supported by this build or configuration.
    #[error("not supported: {0}")]
    NotSupported(String),

    /// The database to open does not exist, and `create_if_missing` is off.
    #[error("not found: {0}")]
    NotFound(String),

    /// The database to create exists already, and `error_if_exists` is on.
    #[error("already exists: {0}")]
    AlreadyExists(String),
}

impl Error {
    /// Every value [`Error::code`] can return. The JavaScript package's
    /// `SiltErrorCode` union is checked against this list by a test
    /// (js/test/contract.test.ts), through the wasm module's `contract()`.
    pub const CODES: &'static [&'static str] = &[
        "Corruption",
        "ChecksumMismatch",
        "IoError",
        "QuotaExceeded",
        "PoolExhausted",
        "InvalidArgument",
        "Busy",
        "Closed",
        "NotSupported",
        "NotFound",
        "AlreadyExists",
    ];

    /// A stable, machine-readable name for the kind of error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Corruption { .. } => "Corruption",
            Error::ChecksumMismatch { .. } => "ChecksumMismatch",
            Error::Io { .. } => "IoError",
            Error::QuotaExceeded { .. } => "QuotaExceeded",
            Error::PoolExhausted { .. } => "PoolExhausted",
            Error::InvalidArgument(_) => "InvalidArgument",
            Error::Busy(_) => "Busy",
            Error::Closed(_) => "Closed",
            Error::NotSupported(_) => "NotSupported",
            Error::NotFound(_) => "NotFound",
            Error::AlreadyExists(_) => "AlreadyExists",
        }
    }

    /// True for errors that mean stored bytes are damaged.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. } | Error::ChecksumMismatch { .. })
    }

    pub(crate) fn corruption(file: impl fmt::Display, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption { file: file.to_string(), offset, reason: reason.into() }
    }

    pub(crate) fn io(file: impl fmt::Display, op: &'static str, message: impl fmt::Display) -> Self {
        Error::Io { file: file.to_string(), op, message: message.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of every kind. A new variant makes `code()` fail to
    /// compile until it has a code; it then needs a line here and in CODES.
    fn one_of_each() -> Vec<Error> {
        vec![
            Error::corruption("f", 1, "r"),
            Error::ChecksumMismatch { file: "f".into(), offset: 1, expected: 2, got: 3 },
            Error::io("f", "read", "m"),
            Error::QuotaExceeded { file: "f".into(), message: "m".into() },
            Error::PoolExhausted { file: "f".into(), message: "m".into() },
            Error::InvalidArgument("m".into()),
            Error::Busy("m".into()),
            Error::Closed("m".into()),
            Error::NotSupported("m".into()),
            Error::NotFound("m".into()),
            Error::AlreadyExists("m".into()),
        ]
    }

    #[test]
    fn codes_lists_every_code_once() {
        let codes: Vec<&str> = one_of_each().iter().map(Error::code).collect();
        assert_eq!(codes, Error::CODES);
        let mut unique = codes.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), codes.len());
    }
}
