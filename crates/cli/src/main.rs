//! `silt`: a command-line tool for Silt databases (issue 37, item 3): on a
//! database directory, or on a backup file a browser downloaded (a Silt
//! export stream, read through a temporary copy). `silt --help` lists the
//! commands; docs in README.md ("The `silt` command").

mod commands;
mod fail;
mod progress;
mod show;
mod target;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::show::Format;

#[derive(Parser)]
#[command(name = "silt", version, about = "Read, check and move Silt databases and the backups a browser downloads", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where a command works: a database directory or a backup file.
#[derive(Args)]
struct Target {
    /// A Silt database directory, or a backup file (.siltdump) from a browser's db.export()
    path: PathBuf,
    /// The merge operator the database was written with (u64add, append), if it has merges
    #[arg(long, value_name = "NAME")]
    merge_operator: Option<String>,
}

/// A range of keys: from, to (excluded), or a prefix.
#[derive(Args, Default)]
struct Range {
    /// First key (included); text, or hex after 0x
    #[arg(long)]
    from: Option<String>,
    /// Key the range stops before (excluded)
    #[arg(long)]
    to: Option<String>,
    /// Every key that starts with this
    #[arg(long, conflicts_with_all = ["from", "to"])]
    prefix: Option<String>,
    /// Keys given as hex digits (no 0x needed)
    #[arg(long)]
    hex_keys: bool,
}

#[derive(Subcommand)]
enum Command {
    /// What the database holds: entries, files and bytes per level, the latest sequence number
    Info {
        #[command(flatten)]
        target: Target,
    },
    /// The value of one key
    Get {
        #[command(flatten)]
        target: Target,
        key: String,
        #[command(flatten)]
        range: Range,
        #[arg(long, value_enum, default_value = "auto")]
        format: Format,
    },
    /// Entries of a range, one per line: key, a tab, value
    Scan {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        range: Range,
        /// At most this many entries
        #[arg(long)]
        limit: Option<u64>,
        /// Last key first
        #[arg(long)]
        reverse: bool,
        /// Keys only
        #[arg(long)]
        keys_only: bool,
        #[arg(long, value_enum, default_value = "auto")]
        format: Format,
    },
    /// How many keys a range holds
    Count {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        range: Range,
    },
    /// Every entry, one per line (scan of the whole database)
    Dump {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_enum, default_value = "auto")]
        format: Format,
    },
    /// Reads every block of every table and checks every checksum
    Verify {
        #[command(flatten)]
        target: Target,
    },
    /// Rebuilds a damaged database's manifest from its files, keeping what can still be read
    Repair {
        /// The database directory
        path: PathBuf,
        #[arg(long, value_name = "NAME")]
        merge_operator: Option<String>,
    },
    /// The engine's counters and properties
    Stats {
        #[command(flatten)]
        target: Target,
    },
    /// Compacts a range (all of the database by default) into its last level
    Compact {
        /// The database directory
        path: PathBuf,
        #[arg(long, value_name = "NAME")]
        merge_operator: Option<String>,
        #[command(flatten)]
        range: Range,
    },
    /// Writes a backup file (a Silt export stream, which siltdb's importDatabase and db.import read)
    Export {
        #[command(flatten)]
        target: Target,
        /// The backup file to write
        out: PathBuf,
        #[command(flatten)]
        range: Range,
        /// Entries (every live key's value; any range), tables (the files as they are; the whole database),
        /// or rocksdb (every live key's value as RocksDB table files in a tar archive)
        #[arg(long, value_enum, default_value = "auto")]
        form: commands::Form,
        /// With --form rocksdb: compress data blocks with LZ4 where it pays
        #[arg(long)]
        lz4: bool,
        /// With --form rocksdb: each table's target size in bytes (default 32 MiB)
        #[arg(long, value_name = "BYTES")]
        target_file_size: Option<u64>,
    },
    /// Makes a new database directory from a backup file, or from RocksDB tables (a .sst file or a tar archive of them)
    Import {
        /// The backup file (.siltdump), RocksDB table (.sst) or tar archive of RocksDB tables
        file: PathBuf,
        /// The new database directory (it must not hold a database yet)
        dir: PathBuf,
        #[arg(long, value_name = "NAME")]
        merge_operator: Option<String>,
    },
    /// Adds RocksDB tables (.sst files written by SstFileWriter or a RocksDB database, or tar archives of them) to a database, in one step
    Ingest {
        /// The database directory
        dir: PathBuf,
        /// The tables or archives; a later one's keys win over an earlier one's
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long, value_name = "NAME")]
        merge_operator: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match commands::run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("silt: {f}");
            ExitCode::from(u8::try_from(f.status).unwrap_or(1))
        }
    }
}
