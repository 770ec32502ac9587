//! Errors as the command line says them: what went wrong, and what to do
//! next; and the exit status (1 for a failure of the database or the
//! files, 2 for a command given wrong).

use std::fmt;

pub struct Failure {
    pub message: String,
    pub status: i32,
}

impl Failure {
    /// The command was given wrong.
    pub fn usage(message: String) -> Failure {
        Failure { message, status: 2 }
    }

    pub fn io(what: String, e: std::io::Error) -> Failure {
        Failure { message: format!("{what}: {e}"), status: 1 }
    }

    /// An engine error, with a hint where the command line can say more than the engine.
    pub fn engine(what: &str, e: &silt_engine::Error, merge: Option<&str>) -> Failure {
        let text = e.to_string();
        let mut message = format!("{what}: {text} ({})", e.code());
        if merge.is_none() && text.contains("merge") && text.contains("operator") {
            message.push_str("\nhint: give the merge operator the database was written with: --merge-operator u64add (counters) or --merge-operator append");
        }
        if e.code() == "Busy" {
            message.push_str("\nhint: another process has this database open (its LOCK file): close it first, or work on a copy or a backup");
        }
        if e.code() == "Corruption" || e.code() == "ChecksumMismatch" {
            message.push_str(
                "\nhint: `silt verify` names every damaged table; `silt repair` keeps what can still be read",
            );
        }
        Failure { message, status: 1 }
    }
}

impl Failure {
    /// An error reading a file given to be taken in (RocksDB tables): the
    /// file is at fault, not a database.
    pub fn input(what: &str, e: &silt_engine::Error) -> Failure {
        let mut message = format!("{what}: {e} ({})", e.code());
        if e.is_corruption() {
            message.push_str("\nhint: the file is damaged or was cut short: copy it again from where it came from (nothing was written)");
        }
        Failure { message, status: 1 }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// `?` with a sentence of context.
pub trait ResultExt<T> {
    fn context(self, what: impl Into<String>) -> Result<T, Failure>;
}

impl<T> ResultExt<T> for std::io::Result<T> {
    fn context(self, what: impl Into<String>) -> Result<T, Failure> {
        self.map_err(|e| Failure::io(what.into(), e))
    }
}

/// `?` on an engine result with a sentence of context and the hints.
pub trait EngineExt<T> {
    fn or_explain(self, what: &str, merge: Option<&str>) -> Result<T, Failure>;
}

impl<T> EngineExt<T> for silt_engine::Result<T> {
    fn or_explain(self, what: &str, merge: Option<&str>) -> Result<T, Failure> {
        self.map_err(|e| Failure::engine(what, &e, merge))
    }
}
