//! What a command works on: a database directory, or a backup file (a
//! Silt export stream, `.siltdump`, as a browser's `db.export()` downloads
//! it), which is imported into a temporary directory first and read there.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use silt_engine::fs::StdFs;
use silt_engine::{AppendOperator, Db, MergeOperator, Options, U64AddOperator, EXPORT_MAGIC};
use tempfile::TempDir;

use crate::fail::{EngineExt, Failure, ResultExt};
use crate::progress::Progress;

/// The merge operators a database may have been written with.
pub fn merge_operator(name: Option<&str>) -> Result<Option<Arc<dyn MergeOperator>>, Failure> {
    match name {
        None => Ok(None),
        Some("u64add") => Ok(Some(Arc::new(U64AddOperator))),
        Some("append") => Ok(Some(Arc::new(AppendOperator))),
        Some(other) => Err(Failure::usage(format!(
            "unknown merge operator {other:?}: give u64add or append (the ones siltdb has)"
        ))),
    }
}

/// An open database, and the temporary directory behind it when it was a backup file.
pub struct Opened {
    pub db: Db,
    /// Whether it is a backup file's copy: what is written to it is not kept.
    pub from_backup: bool,
    _temp: Option<TempDir>,
}

/// Whether `path` is a backup file (a Silt export stream) rather than a database directory.
pub fn is_backup(path: &Path) -> Result<bool, Failure> {
    if path.is_dir() {
        return Ok(false);
    }
    let mut head = vec![0u8; EXPORT_MAGIC.len()];
    let mut f = File::open(path).map_err(|e| {
        Failure::usage(format!(
            "cannot open {}: {e}: give a database directory or a backup file (.siltdump)",
            path.display()
        ))
    })?;
    let n = f.read(&mut head).context(format!("cannot read {}", path.display()))?;
    if n == head.len() && head[..] == EXPORT_MAGIC[..] {
        Ok(true)
    } else {
        Err(Failure::usage(format!(
            "{} is neither a database directory nor a Silt backup file (it does not start with Silt's export magic): give the directory a Silt database lives in, or a file a browser's db.export() downloaded",
            path.display()
        )))
    }
}

/// Opens `path`: a database directory (it must exist), or a backup file imported into a temporary one.
pub fn open(path: &Path, merge: Option<&str>) -> Result<Opened, Failure> {
    let options = Options { create_if_missing: false, merge_operator: merge_operator(merge)?, ..Options::default() };
    if is_backup(path)? {
        return match open_backup(path, merge) {
            // Written with a merge operator the command was not given: the
            // backup names it (its end record), and a copy is read with it.
            Err(f) if merge.is_none() => match named_operator(&f.message) {
                Some(name) => {
                    eprintln!(
                        "silt: {} was written with merge operator {name:?}: reading it with that",
                        path.display()
                    );
                    open_backup(path, Some(name))
                }
                None => Err(f),
            },
            r => r,
        };
    }
    let db = Db::open(Arc::new(StdFs::new()), &path.to_string_lossy(), options)
        .or_explain(&format!("cannot open the database in {}", path.display()), merge)?;
    Ok(Opened { db, from_backup: false, _temp: None })
}

/// Backup file `path` imported into a temporary database.
fn open_backup(path: &Path, merge: Option<&str>) -> Result<Opened, Failure> {
    let temp = tempfile::tempdir().context("cannot make a temporary directory to read the backup in")?;
    let dir = temp.path().join("db");
    let options = Options { create_if_missing: true, merge_operator: merge_operator(merge)?, ..Options::default() };
    let db = Db::open(Arc::new(StdFs::new()), &dir.to_string_lossy(), options)
        .or_explain("cannot open a temporary database to read the backup in", merge)?;
    import_file(&db, path, merge)?;
    Ok(Opened { db, from_backup: true, _temp: Some(temp) })
}

/// The merge operator an import refused for want of (the engine's message names it), if it is one siltdb has.
fn named_operator(message: &str) -> Option<&'static str> {
    let rest = message.split("the export is of a database with merge operator \"").nth(1)?;
    let name = rest.split('"').next()?;
    ["u64add", "append"].into_iter().find(|n| *n == name)
}

/// Imports backup file `path` into `db` (empty), piece by piece, with a progress bar.
pub fn import_file(db: &Db, path: &Path, merge: Option<&str>) -> Result<silt_engine::ImportReport, Failure> {
    let mut f = File::open(path).context(format!("cannot open {}", path.display()))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let progress = Progress::bytes(size, "importing");
    let mut imp = db.import().or_explain("cannot import", merge)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                imp.abort(db);
                return Err(Failure::io(format!("cannot read {}", path.display()), e));
            }
        };
        if let Err(e) = imp.push(db, &buf[..n]) {
            imp.abort(db);
            return Err(Failure::engine(&format!("{} is not a whole, intact backup", path.display()), &e, merge));
        }
        progress.add(n as u64);
    }
    let report = imp.finish(db).or_explain(&format!("{} is not a whole, intact backup", path.display()), merge)?;
    progress.done();
    Ok(report)
}
