//! Statistics: tickers (counters) and histograms, named as RocksDB names
//! them where RocksDB has the statistic.
//!
//! Point lookups count into a small local [`GetStats`] and report once per
//! lookup (RocksDB's `GetContextStats`), so the hot path touches a few
//! plain integers and, at the end, only the counters that moved.

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! tickers {
    ($($variant:ident => $name:literal,)*) => {
        /// A counter.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(usize)]
        pub enum Ticker { $($variant,)* }

        impl Ticker {
            pub const ALL: &'static [Ticker] = &[$(Ticker::$variant,)*];

            /// The statistic's name (RocksDB's where it has one).
            pub fn name(self) -> &'static str {
                match self { $(Ticker::$variant => $name,)* }
            }
        }
    };
}

tickers! {
    BlockCacheHit => "rocksdb.block.cache.hit",
    BlockCacheMiss => "rocksdb.block.cache.miss",
    BlockCacheAdd => "rocksdb.block.cache.add",
    // Dictionaries are read once per table, at open, with its index and
    // filter (RocksDB's perf-context compression_dict_block_read_count;
    // never from the block cache, which holds data blocks only).
    CompressionDictBlockReads => "silt.compression.dict.block.read.count",
    RowCacheHit => "rocksdb.row.cache.hit",
    RowCacheMiss => "rocksdb.row.cache.miss",
    BloomFilterUseful => "rocksdb.bloom.filter.useful",
    BloomFilterFullPositive => "rocksdb.bloom.filter.full.positive",
    BloomFilterFullTruePositive => "rocksdb.bloom.filter.full.true.positive",
    MemtableHit => "rocksdb.memtable.hit",
    MemtableMiss => "rocksdb.memtable.miss",
    GetHitL0 => "rocksdb.l0.hit",
    GetHitL1 => "rocksdb.l1.hit",
    GetHitL2AndUp => "rocksdb.l2andup.hit",
    NumberKeysWritten => "rocksdb.number.keys.written",
    NumberKeysRead => "rocksdb.number.keys.read",
    BytesWritten => "rocksdb.bytes.written",
    BytesRead => "rocksdb.bytes.read",
    NumberMultiGetCalls => "rocksdb.number.multiget.get",
    NumberMultiGetKeysRead => "rocksdb.number.multiget.keys.read",
    NumberMultiGetKeysFound => "rocksdb.number.multiget.keys.found",
    NumberMultiGetBytesRead => "rocksdb.number.multiget.bytes.read",
    NumberDbSeek => "rocksdb.number.db.seek",
    NumberDbNext => "rocksdb.number.db.next",
    NumberDbPrev => "rocksdb.number.db.prev",
    IterBytesRead => "rocksdb.db.iter.bytes.read",
    CompactReadBytes => "rocksdb.compact.read.bytes",
    CompactWriteBytes => "rocksdb.compact.write.bytes",
    FlushWriteBytes => "rocksdb.flush.write.bytes",
    CompactionKeyDropNewerEntry => "rocksdb.compaction.key.drop.new",
    CompactionKeyDropObsolete => "rocksdb.compaction.key.drop.obsolete",
    CompactionKeyDropRangeDel => "rocksdb.compaction.key.drop.range_del",
    CompactionRangeDelDropObsolete => "rocksdb.compaction.range_del.drop.obsolete",
    StallMicros => "rocksdb.stall.micros",
    WriteStalls => "silt.write.stalls",
    WritesWaitingForFiles => "silt.write.waiting.for.files",
    MergeOperationTotalTime => "rocksdb.merge.operation.time.nanos",
    NumberMergeFailures => "rocksdb.number.merge.failures",
    WalBytes => "rocksdb.wal.bytes",
    WalSynced => "rocksdb.wal.synced",
    Flushes => "silt.flushes",
    Compactions => "silt.compactions",
    TrivialMoves => "silt.compaction.trivial.moves",
    IdleCompactions => "silt.compaction.idle",
    CompactionOutputsKeptOpen => "silt.compaction.outputs.kept.open",
    FileCountCompactions => "silt.compaction.for.files",
    ReadCompactionsWanted => "silt.compaction.read.wanted",
    ReadCompactions => "silt.compaction.read.triggered",
    IterAutoRefresh => "silt.iter.auto.refresh",
    IngestedKeys => "silt.ingest.keys",
    IngestedFiles => "silt.ingest.files",
    TransactionSpills => "silt.transaction.spills",
    TransactionSpilledBytes => "silt.transaction.spilled.bytes",
    TransactionsPublishedFromFiles => "silt.transaction.published.from.files",
}

/// A histogram's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Histogram {
    DbGet,
    DbWrite,
    CompactionTime,
    FlushTime,
}

impl Histogram {
    pub const ALL: &'static [Histogram] =
        &[Histogram::DbGet, Histogram::DbWrite, Histogram::CompactionTime, Histogram::FlushTime];

    pub fn name(self) -> &'static str {
        match self {
            Histogram::DbGet => "rocksdb.db.get.micros",
            Histogram::DbWrite => "rocksdb.db.write.micros",
            Histogram::CompactionTime => "rocksdb.compaction.times.micros",
            Histogram::FlushTime => "rocksdb.db.flush.micros",
        }
    }
}

/// Power-of-two buckets: bucket i holds values in [2^(i-1), 2^i).
const BUCKETS: usize = 48;

/// A histogram recorded with atomics only: recording never takes a lock.
struct HistogramData {
    count: AtomicU64,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

impl Default for HistogramData {
    fn default() -> Self {
        HistogramData {
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl HistogramData {
    fn add(&self, v: u64) {
        let b = (64 - v.leading_zeros() as usize).min(BUCKETS - 1);
        self.buckets[b].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(v, Ordering::Relaxed);
        self.min.fetch_min(v, Ordering::Relaxed);
        self.max.fetch_max(v, Ordering::Relaxed);
    }

    fn summary(&self, name: &'static str) -> HistogramSummary {
        let count = self.count.load(Ordering::Relaxed);
        let buckets: Vec<u64> = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let (min, max) =
            if count == 0 { (0, 0) } else { (self.min.load(Ordering::Relaxed), self.max.load(Ordering::Relaxed)) };
        let percentile = |p: f64| -> f64 {
            if count == 0 {
                return 0.0;
            }
            let want = (p / 100.0 * count as f64).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, &n) in buckets.iter().enumerate() {
                seen += n;
                if seen >= want {
                    // Upper edge of the bucket, clamped to what was seen.
                    let hi = if i == 0 { 0 } else { 1u64 << i.min(63) };
                    return (hi as f64).min(max as f64).max(min as f64);
                }
            }
            max as f64
        };
        HistogramSummary {
            name,
            count,
            sum: self.sum.load(Ordering::Relaxed),
            min,
            max,
            p50: percentile(50.0),
            p95: percentile(95.0),
            p99: percentile(99.0),
        }
    }
}

/// A histogram's summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramSummary {
    pub name: &'static str,
    pub count: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
}

/// A snapshot of every statistic.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatisticsSnapshot {
    pub tickers: Vec<(&'static str, u64)>,
    pub histograms: Vec<HistogramSummary>,
}

impl StatisticsSnapshot {
    /// A ticker's value by name (0 if unknown).
    pub fn ticker(&self, name: &str) -> u64 {
        self.tickers.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
    }

    /// The measured false-positive rate of the bloom filters: positives
    /// that were not true positives, over all negatives the filter saw.
    pub fn bloom_false_positive_rate(&self) -> f64 {
        let useful = self.ticker(Ticker::BloomFilterUseful.name());
        let pos = self.ticker(Ticker::BloomFilterFullPositive.name());
        let truep = self.ticker(Ticker::BloomFilterFullTruePositive.name());
        let false_pos = pos.saturating_sub(truep);
        let negatives = useful + false_pos;
        if negatives == 0 {
            0.0
        } else {
            false_pos as f64 / negatives as f64
        }
    }
}

impl std::fmt::Display for StatisticsSnapshot {
    /// RocksDB's `Statistics::ToString` layout.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (name, v) in &self.tickers {
            writeln!(f, "{name} COUNT : {v}")?;
        }
        for h in &self.histograms {
            writeln!(
                f,
                "{} P50 : {:.6} P95 : {:.6} P99 : {:.6} P100 : {} COUNT : {} SUM : {}",
                h.name, h.p50, h.p95, h.p99, h.max, h.count, h.sum
            )?;
        }
        Ok(())
    }
}

/// The statistics of one database.
pub struct Statistics {
    tickers: Vec<AtomicU64>,
    histograms: Vec<HistogramData>,
}

impl Default for Statistics {
    fn default() -> Self {
        Statistics {
            tickers: Ticker::ALL.iter().map(|_| AtomicU64::new(0)).collect(),
            histograms: Histogram::ALL.iter().map(|_| HistogramData::default()).collect(),
        }
    }
}

impl Statistics {
    #[inline]
    pub fn add(&self, t: Ticker, n: u64) {
        if n != 0 {
            self.tickers[t as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    pub fn get(&self, t: Ticker) -> u64 {
        self.tickers[t as usize].load(Ordering::Relaxed)
    }

    pub fn record(&self, h: Histogram, v: u64) {
        self.histograms[h as usize].add(v);
    }

    pub fn snapshot(&self) -> StatisticsSnapshot {
        StatisticsSnapshot {
            tickers: Ticker::ALL.iter().map(|&t| (t.name(), self.get(t))).collect(),
            histograms: Histogram::ALL.iter().map(|&h| self.histograms[h as usize].summary(h.name())).collect(),
        }
    }
}

/// What one point lookup counts, reported once at its end.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetStats {
    pub cache_hit: u64,
    pub cache_miss: u64,
    pub cache_add: u64,
    pub row_cache_hit: u64,
    pub row_cache_miss: u64,
    pub bloom_useful: u64,
    pub bloom_positive: u64,
    pub bloom_true_positive: u64,
    pub memtable_hit: bool,
    /// Level the value came from, if it came from a table.
    pub hit_level: Option<usize>,
}

impl GetStats {
    /// Adds this lookup's block and filter counts to `stats`: only what
    /// moved.
    pub(crate) fn report_blocks_and_filters(&self, stats: &Statistics) {
        stats.add(Ticker::BlockCacheHit, self.cache_hit);
        stats.add(Ticker::BlockCacheMiss, self.cache_miss);
        stats.add(Ticker::BlockCacheAdd, self.cache_add);
        stats.add(Ticker::RowCacheHit, self.row_cache_hit);
        stats.add(Ticker::RowCacheMiss, self.row_cache_miss);
        stats.add(Ticker::BloomFilterUseful, self.bloom_useful);
        stats.add(Ticker::BloomFilterFullPositive, self.bloom_positive);
        stats.add(Ticker::BloomFilterFullTruePositive, self.bloom_true_positive);
    }

    /// Reports a Get whose value, if it found one, is `value_len` bytes
    /// long (`rocksdb.bytes.read`: the bytes of the values Gets returned,
    /// as RocksDB counts them).
    pub fn report(&self, stats: &Statistics, value_len: Option<usize>) {
        self.report_blocks_and_filters(stats);
        let mut hits = HitCounts::default();
        hits.count(self);
        hits.report(stats);
        stats.add(Ticker::NumberKeysRead, 1);
        if let Some(n) = value_len {
            stats.add(Ticker::BytesRead, n as u64);
        }
    }

    /// Reports the summed counts of a MultiGet of `keys` keys, `found` of
    /// them found, whose values are `bytes` long together.
    pub fn report_batch(&self, stats: &Statistics, keys: u64, found: u64, bytes: u64) {
        self.report_blocks_and_filters(stats);
        stats.add(Ticker::NumberMultiGetCalls, 1);
        stats.add(Ticker::NumberMultiGetKeysRead, keys);
        stats.add(Ticker::NumberMultiGetKeysFound, found);
        stats.add(Ticker::NumberMultiGetBytesRead, bytes);
    }
}

/// Where point lookups found their answers (RocksDB's memtable hit/miss and
/// per-level hit tickers), summed over the keys of a lookup or a batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HitCounts {
    pub memtable_hit: u64,
    pub memtable_miss: u64,
    pub l0: u64,
    pub l1: u64,
    pub l2_and_up: u64,
}

impl HitCounts {
    /// Counts one key's lookup.
    pub fn count(&mut self, s: &GetStats) {
        if s.memtable_hit {
            self.memtable_hit += 1;
        } else {
            self.memtable_miss += 1;
        }
        match s.hit_level {
            Some(0) => self.l0 += 1,
            Some(1) => self.l1 += 1,
            Some(_) => self.l2_and_up += 1,
            None => {}
        }
    }

    pub fn report(&self, stats: &Statistics) {
        stats.add(Ticker::MemtableHit, self.memtable_hit);
        stats.add(Ticker::MemtableMiss, self.memtable_miss);
        stats.add(Ticker::GetHitL0, self.l0);
        stats.add(Ticker::GetHitL1, self.l1);
        stats.add(Ticker::GetHitL2AndUp, self.l2_and_up);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_rocksdb_style() {
        let mut names: Vec<_> = Ticker::ALL.iter().map(|t| t.name()).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
        assert_eq!(Ticker::BloomFilterUseful.name(), "rocksdb.bloom.filter.useful");
    }

    #[test]
    fn get_stats_report_once_and_fp_rate_is_computed() {
        let s = Statistics::default();
        let g = GetStats { bloom_useful: 98, bloom_positive: 10, bloom_true_positive: 8, ..GetStats::default() };
        g.report(&s, None);
        let snap = s.snapshot();
        assert_eq!(snap.ticker("rocksdb.bloom.filter.full.positive"), 10);
        assert_eq!(snap.ticker("rocksdb.number.keys.read"), 1);
        assert!((snap.bloom_false_positive_rate() - 0.02).abs() < 1e-9);
    }

    #[test]
    fn histogram_percentiles_are_ordered() {
        let s = Statistics::default();
        for v in 1..=1000 {
            s.record(Histogram::DbGet, v);
        }
        let h = &s.snapshot().histograms[0];
        assert_eq!((h.count, h.min, h.max), (1000, 1, 1000));
        assert!(h.p50 <= h.p95 && h.p95 <= h.p99 && h.p99 <= 1000.0, "{h:?}");
        assert!(h.p50 >= 256.0 && h.p50 <= 1000.0, "{h:?}");
        assert!(s.snapshot().to_string().contains("rocksdb.db.get.micros P50"));
    }
}
