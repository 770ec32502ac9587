//! The contract between this crate and siltdb's TypeScript, written once:
//! the exchange buffer's offsets, the bits `backgroundWork` returns, the
//! pooled files each kind of call needs free, every error code a call can
//! throw, the recoveries a failed background step can carry, and the
//! fields of every report a call returns (declared below; `report.rs` makes
//! the objects from the declarations, so no other field name exists).
//!
//! siltdb reads it once, when the module loads (`js/src/boundary/contract.ts`), and
//! uses these numbers instead of its own; `js/test/contract.test.ts` checks
//! that its `SiltErrorCode` union, recovery names and report interfaces are
//! exactly these, so neither side can change alone. Returned as JSON text:
//! one crossing, and natively testable.

use silt_engine::{Error, Recovery};
use wasm_bindgen::prelude::*;

use crate::database::{Prop, BACKGROUND_RESERVE, DID_WORK, OPEN_RESERVE, WAITING_FOR_POOL, WORK_LEFT, WRITE_RESERVE};
use crate::error::Code;
use crate::exchange::{HANDLES, OUT0, OUT1, RELEASES, RELEASE_SLOTS, REQUEST};
use crate::report::{report, Named};
use crate::results::ABSENT;

report! {
    /// `ingest`: what the engine's `Db::ingest` did (`IngestReport`,
    /// js/src/core/batch.ts).
    pub(crate) struct IngestReport {
        "keys" => keys: u64,
        "files" => files: u64,
        "bytes" => bytes: u64,
        "level" => level: usize,
        "sequence" => sequence: u64,
        "flushedMemtables" => flushed_memtables: bool,
    }
}

report! {
    /// `verify`: what it read and checked (`VerifyReport`,
    /// js/src/local/statistics.ts).
    pub(crate) struct VerifyReport {
        "tables" => tables: u64,
        "entries" => entries: u64,
        "tableBytes" => table_bytes: u64,
    }
}

report! {
    /// `importFinish`: what an import read and wrote (`ImportReport`,
    /// js/src/local/backup.ts).
    pub(crate) struct ImportReport {
        "entries" => entries: u64,
        "tableFiles" => table_files: u64,
        "tableBytes" => table_bytes: u64,
        "streamBytes" => stream_bytes: u64,
    }
}

report! {
    /// `rocksdbIngestFinish`: what an ingest of RocksDB tables wrote
    /// (`RocksdbIngestReport`, js/src/local/rocksdb.ts).
    pub(crate) struct RocksdbIngestReport {
        "keys" => keys: u64,
        "tables" => tables: u64,
    }
}

report! {
    /// `OpfsPool.repair`: what a repair salvaged and lost (`RepairReport`,
    /// js/src/local/open.ts).
    pub(crate) struct RepairReport {
        "tablesIntact" => tables_intact: u64,
        "tablesDamaged" => tables_damaged: u64,
        "tablesLost" => tables_lost: u64,
        "blocksLost" => blocks_lost: u64,
        "walRecords" => wal_records: u64,
        "walsDamaged" => wals_damaged: u64,
        "entries" => entries: u64,
        "rangeDeletions" => range_deletions: u64,
        "problems" => problems: Vec<String>,
    }
}

report! {
    /// `statistics`: the part of siltdb's `Statistics`
    /// (js/src/local/statistics.ts) the module builds; siltdb adds the rest.
    pub(crate) struct Statistics {
        "properties" => properties: Named<Prop>,
        "tickers" => tickers: Named<u64>,
        "histograms" => histograms: Named<Histogram>,
        "pinnedResults" => pinned_results: usize,
        /// Only on the OPFS pool, not in memory.
        "pool" => pool: Option<PoolStatistics>,
    }
}

report! {
    /// `statistics().pool`: the OPFS pool's files (`PoolStats`) and the
    /// logical files their headers name.
    pub(crate) struct PoolStatistics {
        "files" => files: usize,
        "free" => free: usize,
        "removedOpen" => removed_open: usize,
        "dataBytes" => data_bytes: u64,
        "exhausted" => exhausted: u64,
        "bytes" => bytes: u64,
        /// Only with a size cap, as is `reserve_bytes`.
        "maxBytes" => max_bytes: Option<u64>,
        "reserveBytes" => reserve_bytes: Option<u64>,
        "paths" => paths: Vec<String>,
    }
}

report! {
    /// One of `statistics().histograms`: the engine's `HistogramSummary`.
    pub(crate) struct Histogram {
        "count" => count: u64,
        "sum" => sum: u64,
        "min" => min: u64,
        "max" => max: u64,
        "p50" => p50: f64,
        "p95" => p95: f64,
        "p99" => p99: f64,
    }
}

/// Every report by the name `contract()` gives it; siltdb's `REPORT_FIELDS`
/// has the same names.
const REPORTS: [(&str, &[(&str, bool)]); 8] = [
    ("ingest", IngestReport::FIELDS),
    ("verify", VerifyReport::FIELDS),
    ("import", ImportReport::FIELDS),
    ("rocksdbIngest", RocksdbIngestReport::FIELDS),
    ("repair", RepairReport::FIELDS),
    ("statistics", Statistics::FIELDS),
    ("pool", PoolStatistics::FIELDS),
    ("histogram", Histogram::FIELDS),
];

/// `items` as the members of a JSON array of strings (none needs escaping).
fn json_strings(items: impl IntoIterator<Item = impl std::fmt::Display>) -> String {
    items.into_iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(",")
}

/// The contract as JSON (see the module doc for what it holds).
#[wasm_bindgen(js_name = contract)]
pub fn contract_json() -> String {
    let codes = json_strings(Error::CODES.iter().copied().chain(Code::ALL.iter().map(|c| c.as_str())));
    let recoveries = json_strings(Recovery::ALL.iter().map(|r| r.name()));
    // An optional field is written `name?`, as TypeScript writes it.
    let reports = REPORTS
        .iter()
        .map(|(report, fields)| {
            let names =
                fields.iter().map(|&(name, optional)| if optional { format!("{name}?") } else { name.to_owned() });
            format!("\"{report}\":[{}]", json_strings(names))
        })
        .collect::<Vec<_>>()
        .join(",");
    format!(
        concat!(
            "{{\"exchange\":{{\"releases\":{},\"out0\":{},\"out1\":{},\"handles\":{},\"releaseSlots\":{},\"request\":{},\"absent\":{}}},",
            "\"work\":{{\"didWork\":{},\"workLeft\":{},\"waitingForPool\":{}}},",
            "\"poolNeeds\":{{\"write\":{},\"background\":{},\"open\":{}}},",
            "\"errorCodes\":[{}],\"recoveries\":[{}],",
            "\"reports\":{{{}}}}}"
        ),
        RELEASES,
        OUT0,
        OUT1,
        HANDLES,
        RELEASE_SLOTS,
        REQUEST,
        ABSENT,
        DID_WORK,
        WORK_LEFT,
        WAITING_FOR_POOL,
        WRITE_RESERVE,
        BACKGROUND_RESERVE,
        OPEN_RESERVE,
        codes,
        recoveries,
        reports,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_is_json_with_every_number_and_name() {
        let c = contract_json();
        for part in [
            "\"exchange\":{\"releases\":0,\"out0\":4,\"out1\":8,\"handles\":16,\"releaseSlots\":60,\"request\":256,\"absent\":4294967295}",
            "\"work\":{\"didWork\":1,\"workLeft\":2,\"waitingForPool\":4}",
            "\"poolNeeds\":{\"write\":2,\"background\":4,\"open\":2}",
            "\"recoveries\":[\"retryLater\",\"failAlone\",\"stopWrites\"]",
            "\"PoolExhausted\"",
            "\"Released\"",
        ] {
            assert!(c.contains(part), "{part} is not in {c}");
        }
        assert!(c.starts_with('{') && c.ends_with('}'));
        // One code per engine error kind and per binding code, none twice.
        let codes = c.split("\"errorCodes\":[").nth(1).and_then(|r| r.split(']').next()).unwrap();
        let n = codes.split(',').count();
        assert_eq!(n, Error::CODES.len() + Code::ALL.len());
    }

    #[test]
    fn every_report_is_in_the_contract_with_its_optional_fields_marked() {
        let c = contract_json();
        for part in [
            "\"reports\":{\"ingest\":[\"keys\",\"files\",\"bytes\",\"level\",\"sequence\",\"flushedMemtables\"],",
            "\"verify\":[\"tables\",\"entries\",\"tableBytes\"]",
            "\"import\":[\"entries\",\"tableFiles\",\"tableBytes\",\"streamBytes\"]",
            "\"repair\":[\"tablesIntact\",\"tablesDamaged\",\"tablesLost\",\"blocksLost\",\"walRecords\",\"walsDamaged\",\"entries\",\"rangeDeletions\",\"problems\"]",
            "\"statistics\":[\"properties\",\"tickers\",\"histograms\",\"pinnedResults\",\"pool?\"]",
            "\"pool\":[\"files\",\"free\",\"removedOpen\",\"dataBytes\",\"exhausted\",\"bytes\",\"maxBytes?\",\"reserveBytes?\",\"paths\"]",
            "\"histogram\":[\"count\",\"sum\",\"min\",\"max\",\"p50\",\"p95\",\"p99\"]}}",
        ] {
            assert!(c.contains(part), "{part} is not in {c}");
        }
    }

    #[test]
    fn report_fields_are_distinct_identifiers() {
        // Plain identifiers: JSON needs no escaping and `name?` is unambiguous.
        for (report, fields) in REPORTS {
            let mut names: Vec<&str> = fields.iter().map(|&(name, _)| name).collect();
            for name in &names {
                assert!(
                    name.chars().all(|ch| ch.is_ascii_alphanumeric())
                        && name.starts_with(|ch: char| ch.is_ascii_lowercase()),
                    "{report}.{name}"
                );
            }
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), fields.len(), "{report} names a field twice");
        }
    }

    #[test]
    fn the_request_starts_after_the_release_slots() {
        assert_eq!(REQUEST, HANDLES + 4 * RELEASE_SLOTS);
    }
}
