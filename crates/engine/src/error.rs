//! The one error type of the engine.
//!
//! `NotFound` is not an error: lookups return `Option`. Every variant a caller
//! can act on carries what went wrong and where; `code()` gives a stable name
//! that the JavaScript layer exposes as `SiltError.code`.

use std::fmt;

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
}

impl Error {
    /// A stable, machine-readable name for the kind of error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Corruption { .. } => "Corruption",
            Error::ChecksumMismatch { .. } => "ChecksumMismatch",
            Error::Io { .. } => "IoError",
            Error::QuotaExceeded { .. } => "QuotaExceeded",
            Error::InvalidArgument(_) => "InvalidArgument",
            Error::Busy(_) => "Busy",
            Error::Closed(_) => "Closed",
            Error::NotSupported(_) => "NotSupported",
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
