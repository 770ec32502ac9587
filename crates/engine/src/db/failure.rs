//! What a failed write, flush or compaction means for the database: the one
//! place that decides whether the work is retried as it is, fails alone, or
//! stops writes until the database is reopened.
//!
//! The write path (`mod.rs`), flushes and compactions (`background.rs`) say
//! at which [`Stage`] their work failed and act on the [`Recovery`]
//! [`Recovery::decide`] gives; [`Db::do_background_work`] hands it to the
//! embedder in a [`Failure`], so that a pump knows whether to retry (and
//! when) without reading error codes. RocksDB keeps the same decision in
//! one table too (`ErrorHandler`'s severity map).
//!
//! [`Db::do_background_work`]: super::Db::do_background_work

use crate::error::Error;

/// What the database does after a failed piece of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recovery {
    /// Nothing was written (a file could not be created, an input could
    /// not be read): the work stays queued as it was and the same call may
    /// succeed later, e.g. once the file layer has a file to give again.
    RetryLater,
    /// Out of space: this write or step failed on its own and gave back
    /// what it had written (a partial log record is cut off, a flush's or
    /// compaction's outputs are deleted). Later ones succeed once space is
    /// freed; a flush or compaction is started over.
    FailAlone,
    /// A file may now end in bytes that must never be followed (a record
    /// whose append or sync failed): every later write fails with this
    /// error until the database is reopened. Reads go on.
    StopWrites,
}

impl Recovery {
    /// Every recovery, in the order of the names JavaScript sees.
    pub const ALL: [Recovery; 3] = [Recovery::RetryLater, Recovery::FailAlone, Recovery::StopWrites];

    /// The rule. Syncs that fail may have made any part of the data
    /// durable, so they always stop writes; a lack of space never does (the
    /// file layer fails such a write before it changes a file, and the log
    /// writer cuts off what an append left); a create or read that failed
    /// wrote nothing, nor did a file layer with no file to give
    /// (`PoolExhausted` only ever comes from creating a file, wherever that
    /// happens: a table, a log, a new manifest while applying an edit); any
    /// other failed write stops writes.
    pub(crate) fn decide(stage: Stage, error: &Error) -> Recovery {
        match (stage, error) {
            (Stage::Sync, _) => Recovery::StopWrites,
            (_, Error::QuotaExceeded { .. }) => Recovery::FailAlone,
            (_, Error::PoolExhausted { .. }) => Recovery::RetryLater,
            (Stage::Create | Stage::Read, _) => Recovery::RetryLater,
            (Stage::Write, _) => Recovery::StopWrites,
        }
    }

    /// A stable name, as JavaScript sees it (`retryLater`, `failAlone`,
    /// `stopWrites`).
    pub fn name(self) -> &'static str {
        match self {
            Recovery::RetryLater => "retryLater",
            Recovery::FailAlone => "failAlone",
            Recovery::StopWrites => "stopWrites",
        }
    }
}

/// Where a piece of work failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Creating a new file (a WAL, a table), before anything was written to it.
    Create,
    /// Reading what the work needs (the input tables of a compaction).
    Read,
    /// Appending to a log or table, or applying a version edit.
    Write,
    /// Making written bytes durable.
    Sync,
}

/// A failed write, flush or compaction: the error, and what it means for
/// the database ([`Recovery`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct Failure {
    pub error: Error,
    pub recovery: Recovery,
}

impl Failure {
    pub(crate) fn new(stage: Stage, error: Error) -> Self {
        let recovery = Recovery::decide(stage, &error);
        Failure { error, recovery }
    }

    /// The file layer had no file to give (a pool of files, all in use):
    /// nothing was written and the same work goes through once it has one.
    pub(crate) fn waits_for_file(&self) -> bool {
        matches!(self.error, Error::PoolExhausted { .. })
    }

    /// A failure that already stopped writes (the database's background
    /// error), or a closed database: nothing to retry until reopened.
    pub(crate) fn stopped(error: Error) -> Self {
        Failure { error, recovery: Recovery::StopWrites }
    }
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Error {
        f.error
    }
}

/// The result of a piece of work that can fail with a [`Recovery`].
pub(crate) type Attempt<T> = std::result::Result<T, Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    fn quota() -> Error {
        Error::QuotaExceeded { file: "db/000007.sst".into(), message: "full".into() }
    }

    fn io() -> Error {
        Error::io("db/000007.sst", "write", "disk on fire")
    }

    fn pool() -> Error {
        Error::PoolExhausted { file: "db/000007.sst".into(), message: "all 8 pooled files are in use".into() }
    }

    #[test]
    fn a_failed_sync_always_stops_writes() {
        for e in [quota(), io(), pool()] {
            assert_eq!(Recovery::decide(Stage::Sync, &e), Recovery::StopWrites, "{e}");
        }
    }

    #[test]
    fn lack_of_space_fails_alone_wherever_it_happens_but_a_sync() {
        for stage in [Stage::Create, Stage::Read, Stage::Write] {
            assert_eq!(Recovery::decide(stage, &quota()), Recovery::FailAlone, "{stage:?}");
        }
    }

    #[test]
    fn creates_and_reads_that_wrote_nothing_are_retried_and_failed_writes_stop() {
        assert_eq!(Recovery::decide(Stage::Create, &pool()), Recovery::RetryLater);
        assert_eq!(Recovery::decide(Stage::Create, &io()), Recovery::RetryLater);
        assert_eq!(Recovery::decide(Stage::Read, &Error::corruption("t.sst", 4, "bad block")), Recovery::RetryLater);
        assert_eq!(Recovery::decide(Stage::Write, &io()), Recovery::StopWrites);
        // No file to give is never a partial write, even while applying an
        // edit (a new manifest that could not be created).
        assert_eq!(Recovery::decide(Stage::Write, &pool()), Recovery::RetryLater);
    }

    #[test]
    fn names_are_distinct_and_stable() {
        let names: Vec<_> = Recovery::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names, ["retryLater", "failAlone", "stopWrites"]);
    }
}
