//! What each command of `silt` does (main.rs has their arguments).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use clap::ValueEnum;
use silt_engine::fs::StdFs;
use silt_engine::{Db, ExportForm, ExportOptions, Options, ReadOptions};

use crate::fail::{EngineExt, Failure, ResultExt};
use crate::progress::Progress;
use crate::show::{parse, show, show_to, Format};
use crate::target::{import_file, is_backup, merge_operator, open};
use crate::{Command, Range};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Form {
    /// Tables for a whole database, entries for a range
    Auto,
    /// Every live key's value
    Entries,
    /// The table files as they are (a whole database)
    Tables,
    /// Every live key's value as RocksDB table files in a tar archive, for `tar -xf` and `ldb ingest_extern_sst`
    Rocksdb,
}

/// A range's first key (included) and the key it stops before, either open.
type Bounds = (Option<Vec<u8>>, Option<Vec<u8>>);

/// `[lower, upper)` of a range's options.
fn bounds(r: &Range) -> Result<Bounds, Failure> {
    let key = |s: &String| parse(s, r.hex_keys).map_err(Failure::usage);
    if let Some(p) = &r.prefix {
        let lower = key(p)?;
        // The first key after every key that starts with the prefix: the prefix with its last byte below 0xff raised, the rest dropped.
        let mut upper = lower.clone();
        while upper.last() == Some(&0xff) {
            upper.pop();
        }
        let upper = match upper.last_mut() {
            Some(b) => {
                *b += 1;
                Some(upper)
            }
            None => None,
        };
        return Ok((Some(lower), upper));
    }
    Ok((r.from.as_ref().map(key).transpose()?, r.to.as_ref().map(key).transpose()?))
}

fn read_options(r: &Range) -> Result<ReadOptions<'static>, Failure> {
    let (lower_bound, upper_bound) = bounds(r)?;
    Ok(ReadOptions { lower_bound, upper_bound, fill_cache: Some(false), ..ReadOptions::default() })
}

fn out() -> BufWriter<std::io::StdoutLock<'static>> {
    BufWriter::new(std::io::stdout().lock())
}

/// Writes to standard output; a closed pipe (`silt dump | head`) ends quietly.
fn written(r: std::io::Result<()>) -> Result<bool, Failure> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Failure::io("cannot write to standard output".into(), e)),
    }
}

pub fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Info { target } => {
            let o = open(&target.path, target.merge_operator.as_deref())?;
            let m = target.merge_operator.as_deref();
            let p = o.db.properties();
            let entries = o.db.count(&ReadOptions::default()).or_explain("cannot count the entries", m)?;
            let mut w = out();
            let mut text = format!(
                "{}: {}\nentries: {entries}\nlatest sequence number: {}\ntable files: {} ({} bytes)\nmemtables: {} bytes\n",
                target.path.display(),
                if o.from_backup { "a backup file (read through a temporary copy)" } else { "a database directory" },
                p.last_sequence,
                p.files_per_level.iter().sum::<u64>(),
                p.table_bytes,
                p.memtable_bytes,
            );
            for (level, (files, bytes)) in p.files_per_level.iter().zip(&p.bytes_per_level).enumerate() {
                if *files > 0 {
                    text.push_str(&format!("  L{level}: {files} files, {bytes} bytes\n"));
                }
            }
            written(w.write_all(text.as_bytes()).and_then(|_| w.flush()))?;
            close(o.db, m)
        }
        Command::Get { target, key, range, format } => {
            let m = target.merge_operator.as_deref();
            let k = parse(&key, range.hex_keys).map_err(Failure::usage)?;
            let o = open(&target.path, m)?;
            let v = o.db.get(&ReadOptions::default(), &k).or_explain("cannot read the key", m)?;
            close(o.db, m)?;
            match v {
                Some(v) => {
                    let mut w = out();
                    written(writeln!(w, "{}", show(&v, format)).and_then(|_| w.flush()))?;
                    Ok(())
                }
                None => {
                    Err(Failure { message: format!("{} is not in the database", show(&k, Format::Auto)), status: 1 })
                }
            }
        }
        Command::Scan { target, range, limit, reverse, keys_only, format } => {
            let m = target.merge_operator.as_deref();
            let o = open(&target.path, m)?;
            scan(&o.db, &range, limit, reverse, keys_only, format, m)?;
            close(o.db, m)
        }
        Command::Dump { target, format } => {
            let m = target.merge_operator.as_deref();
            let o = open(&target.path, m)?;
            scan(&o.db, &Range::default(), None, false, false, format, m)?;
            close(o.db, m)
        }
        Command::Count { target, range } => {
            let m = target.merge_operator.as_deref();
            let o = open(&target.path, m)?;
            let n = o.db.count(&read_options(&range)?).or_explain("cannot count", m)?;
            let mut w = out();
            written(writeln!(w, "{n}").and_then(|_| w.flush()))?;
            close(o.db, m)
        }
        Command::Verify { target } => {
            let m = target.merge_operator.as_deref();
            let o = open(&target.path, m)?;
            let progress = Progress::spinner("verifying every block of every table");
            let r = o.db.verify();
            progress.done();
            let r = r.or_explain("the database is damaged", m)?;
            let mut w = out();
            written(
                writeln!(
                    w,
                    "ok: {} tables, {} entries, {} bytes, every checksum and key checked",
                    r.tables, r.entries, r.table_bytes
                )
                .and_then(|_| w.flush()),
            )?;
            close(o.db, m)
        }
        Command::Repair { path, merge_operator: m } => {
            if is_backup(&path)? {
                return Err(Failure::usage(format!("{} is a backup file: repair works on a database directory (import the backup with `silt import` first)", path.display())));
            }
            let options = Options {
                create_if_missing: false,
                merge_operator: merge_operator(m.as_deref())?,
                ..Options::default()
            };
            let progress = Progress::spinner("repairing");
            let r = silt_engine::repair(Arc::new(StdFs::new()), &path.to_string_lossy(), &options);
            progress.done();
            let r = r.or_explain(&format!("cannot repair {}", path.display()), m.as_deref())?;
            let mut text = format!(
                "repaired: {} tables intact, {} damaged ({} blocks lost), {} lost; {} log records replayed ({} already in tables), {} logs damaged; {} entries and {} range deletions kept\n",
                r.tables_intact, r.tables_damaged, r.blocks_lost, r.tables_lost, r.wal_records, r.wal_records_flushed, r.wals_damaged, r.entries, r.range_deletions
            );
            for p in &r.problems {
                text.push_str(&format!("  {p}\n"));
            }
            let mut w = out();
            written(w.write_all(text.as_bytes()).and_then(|_| w.flush()))?;
            Ok(())
        }
        Command::Stats { target } => {
            let m = target.merge_operator.as_deref();
            let o = open(&target.path, m)?;
            let text = format!("{:#?}\n{}", o.db.properties(), o.db.statistics());
            let mut w = out();
            written(w.write_all(text.as_bytes()).and_then(|_| w.flush()))?;
            close(o.db, m)
        }
        Command::Compact { path, merge_operator: m, range } => {
            if is_backup(&path)? {
                return Err(Failure::usage(format!(
                    "{} is a backup file: compact works on a database directory",
                    path.display()
                )));
            }
            let o = open(&path, m.as_deref())?;
            let (lower, upper) = bounds(&range)?;
            let before = o.db.properties().table_bytes;
            let progress = Progress::spinner("compacting");
            let r = o.db.compact_range(lower.as_deref(), upper.as_deref());
            progress.done();
            r.or_explain("cannot compact", m.as_deref())?;
            let after = o.db.properties().table_bytes;
            let mut w = out();
            written(writeln!(w, "compacted: {before} table bytes before, {after} after").and_then(|_| w.flush()))?;
            close(o.db, m.as_deref())
        }
        Command::Ingest { dir, files, merge_operator: m } => {
            if dir.is_file() {
                return Err(Failure::usage(format!(
                    "{} is a file: ingest adds tables to a database directory",
                    dir.display()
                )));
            }
            for f in &files {
                if !is_rocksdb(f)? {
                    return Err(Failure::usage(format!(
                        "{} is neither a RocksDB table nor a tar archive: ingest takes .sst files written by RocksDB \
                         (SstFileWriter, or a database's own) and archives of them (silt export --form rocksdb); \
                         a Silt backup goes in with `silt import`",
                        f.display()
                    )));
                }
            }
            let tables = read_rocksdb(&files)?;
            let o = open(&dir, m.as_deref())?;
            let (keys, tables) = write_rocksdb(&o.db, tables, m.as_deref())?;
            let mut w = out();
            written(
                writeln!(w, "ingested: {keys} keys from {tables} RocksDB tables into {}", dir.display())
                    .and_then(|_| w.flush()),
            )?;
            close(o.db, m.as_deref())
        }
        Command::Export { target, out: file, range, form, lz4, target_file_size } => {
            let m = target.merge_operator.as_deref();
            let o = open(&target.path, m)?;
            let (lower, upper) = bounds(&range)?;
            let form = match form {
                Form::Auto => ExportForm::Auto,
                Form::Entries => ExportForm::Entries,
                Form::Tables => ExportForm::Tables,
                Form::Rocksdb => ExportForm::Rocksdb,
            };
            if form != ExportForm::Rocksdb && (lz4 || target_file_size.is_some()) {
                return Err(Failure::usage("--lz4 and --target-file-size are for --form rocksdb".to_string()));
            }
            let target_file_size = target_file_size.unwrap_or(0);
            export(
                &o.db,
                &file,
                ExportOptions { lower, upper, form, lz4, target_file_size, ..ExportOptions::default() },
                m,
            )?;
            close(o.db, m)
        }
        Command::Import { file, dir, merge_operator: m } => {
            if is_rocksdb(&file)? {
                if dir.join("CURRENT").exists() {
                    return Err(Failure::usage(format!(
                        "{} already holds a database: import into a new directory, or add the tables with `silt ingest`",
                        dir.display()
                    )));
                }
                // Read and verified before the database is made: a damaged
                // table leaves no directory behind.
                let tables = read_rocksdb(std::slice::from_ref(&file))?;
                let db = new_database(&dir, m.as_deref())?;
                let r = write_rocksdb(&db, tables, m.as_deref())?;
                close(db, m.as_deref())?;
                let mut w = out();
                written(
                    writeln!(w, "imported: {} keys from {} RocksDB tables into {}", r.0, r.1, dir.display())
                        .and_then(|_| w.flush()),
                )?;
                return Ok(());
            }
            if !is_backup(&file)? {
                return Err(Failure::usage(format!(
                    "{} is a directory: give the backup file first, then the new database's directory",
                    file.display()
                )));
            }
            if dir.join("CURRENT").exists() {
                return Err(Failure::usage(format!(
                    "{} already holds a database: import into a new directory",
                    dir.display()
                )));
            }
            let db = new_database(&dir, m.as_deref())?;
            let r = import_file(&db, &file, m.as_deref())?;
            close(db, m.as_deref())?;
            let mut w = out();
            written(
                writeln!(
                    w,
                    "imported: {} entries, {} table files ({} bytes) into {}",
                    r.entries,
                    r.table_files,
                    r.table_bytes,
                    dir.display()
                )
                .and_then(|_| w.flush()),
            )?;
            Ok(())
        }
    }
}

fn scan(
    db: &Db,
    range: &Range,
    limit: Option<u64>,
    reverse: bool,
    keys_only: bool,
    format: Format,
    m: Option<&str>,
) -> Result<(), Failure> {
    let mut it = db.iter(&read_options(range)?).or_explain("cannot read", m)?;
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let mut w = out();
    let mut n = 0u64;
    let mut line = String::new();
    while it.valid() && limit.is_none_or(|l| n < l) {
        line.clear();
        show_to(&mut line, it.key(), format);
        if !keys_only {
            line.push('\t');
            show_to(&mut line, it.value(), format);
        }
        line.push('\n');
        if !written(w.write_all(line.as_bytes()))? {
            return Ok(());
        }
        n += 1;
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    it.status().or_explain("cannot read every entry", m)?;
    written(w.flush())?;
    Ok(())
}

fn export(db: &Db, file: &Path, options: ExportOptions, m: Option<&str>) -> Result<(), Failure> {
    let mut e = db.export(&options).or_explain("cannot export", m)?;
    let tmp = file.with_extension("partial");
    let mut f = BufWriter::new(File::create(&tmp).context(format!("cannot create {}", tmp.display()))?);
    let progress = Progress::bytes(db.properties().table_bytes, "exporting");
    let mut bytes = 0u64;
    while let Some(piece) = e.next_chunk(1 << 20).or_explain("cannot export", m)? {
        f.write_all(&piece).context(format!("cannot write {}", tmp.display()))?;
        bytes += piece.len() as u64;
        progress.add(piece.len() as u64);
    }
    f.into_inner()
        .map_err(|e| Failure::io(format!("cannot write {}", tmp.display()), e.into_error()))?
        .sync_all()
        .context(format!("cannot sync {}", tmp.display()))?;
    // Named only once whole: a backup file is never half written.
    std::fs::rename(&tmp, file).context(format!("cannot name the backup {}", file.display()))?;
    progress.done();
    let mut w = out();
    written(
        writeln!(w, "exported: {} entries, {bytes} bytes to {}", e.count(), file.display()).and_then(|_| w.flush()),
    )?;
    Ok(())
}

/// Opens a new database (or the one) in `dir`.
fn new_database(dir: &Path, m: Option<&str>) -> Result<Db, Failure> {
    let options = Options { create_if_missing: true, merge_operator: merge_operator(m)?, ..Options::default() };
    Db::open(Arc::new(StdFs::new()), &dir.to_string_lossy(), options)
        .or_explain(&format!("cannot make a database in {}", dir.display()), m)
}

/// Reads RocksDB tables (bare, or in tar archives), every table whole and
/// verified: nothing is written yet.
fn read_rocksdb(files: &[std::path::PathBuf]) -> Result<silt_engine::RocksdbIngest, Failure> {
    use std::io::Read;
    let size = files.iter().map(|f| f.metadata().map(|m| m.len()).unwrap_or(0)).sum();
    let progress = Progress::bytes(size, "reading tables");
    let mut ingest = silt_engine::RocksdbIngest::new();
    for file in files {
        let mut f = File::open(file).context(format!("cannot open {}", file.display()))?;
        let damaged = |e: &silt_engine::Error| {
            Failure::input(&format!("{} is not a whole, intact RocksDB table or archive of tables", file.display()), e)
        };
        if silt_engine::rocksdb::tar::is_tar(&head(file)?) {
            let mut one = silt_engine::RocksdbIngest::new();
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = f.read(&mut buf).context(format!("cannot read {}", file.display()))?;
                if n == 0 {
                    break;
                }
                one.push(&buf[..n]).map_err(|e| damaged(&e))?;
                progress.add(n as u64);
            }
            ingest.append(one).map_err(|e| damaged(&e))?;
        } else {
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).context(format!("cannot read {}", file.display()))?;
            ingest.add_table(&file.display().to_string(), &bytes).map_err(|e| damaged(&e))?;
            progress.add(bytes.len() as u64);
        }
    }
    progress.done();
    Ok(ingest)
}

/// Writes what `read_rocksdb` read into `db` in one step. Returns the keys written and the tables read.
fn write_rocksdb(db: &Db, ingest: silt_engine::RocksdbIngest, m: Option<&str>) -> Result<(u64, usize), Failure> {
    let r = ingest.finish(db).or_explain("cannot write the tables' entries", m)?;
    Ok((r.keys, r.tables as usize))
}

/// The first 512 bytes of `file` (fewer if it is shorter).
fn head(file: &Path) -> Result<Vec<u8>, Failure> {
    use std::io::Read;
    let mut head = Vec::with_capacity(512);
    File::open(file)
        .and_then(|f| f.take(512).read_to_end(&mut head))
        .context(format!("cannot read {}", file.display()))?;
    Ok(head)
}

/// Whether `file` is a RocksDB table or a tar archive (of tables), not a Silt backup.
fn is_rocksdb(file: &Path) -> Result<bool, Failure> {
    use std::io::{Read, Seek, SeekFrom};
    if file.is_dir() {
        return Ok(false);
    }
    if silt_engine::rocksdb::tar::is_tar(&head(file)?) {
        return Ok(true);
    }
    let mut f = File::open(file).context(format!("cannot open {}", file.display()))?;
    let mut magic = [0u8; 8];
    if f.seek(SeekFrom::End(-8)).is_err() || f.read_exact(&mut magic).is_err() {
        return Ok(false);
    }
    Ok(silt_engine::rocksdb::is_table_magic(u64::from_le_bytes(magic)))
}

/// Closes `db`, so that what it wrote (a compaction, an import) is synced.
fn close(db: Db, m: Option<&str>) -> Result<(), Failure> {
    db.close().or_explain("cannot close the database", m)
}
