//! The properties block of a RocksDB table: a block of name → value
//! entries in name order, numbers as varint64s, names and collector
//! properties as bytes (table/meta_blocks.cc). What Silt writes is what
//! `SstFileWriter` writes for a table of puts; what it reads is what it
//! needs to read every entry.

use super::block::{entries, BlockBuilder};
use crate::error::{Error, Result};
use crate::format::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64, put_varint64, Reader};

/// `TablePropertiesCollectorFactory::Context::kUnknownColumnFamily`: a
/// table for any column family.
const UNKNOWN_COLUMN_FAMILY: u64 = 0x7fff_ffff;

/// A table's properties, as far as Silt writes or reads them.
#[derive(Clone, Debug, Default)]
pub(super) struct Properties {
    pub num_entries: u64,
    pub raw_key_size: u64,
    pub raw_value_size: u64,
    pub data_size: u64,
    pub index_size: u64,
    pub filter_size: u64,
    pub num_data_blocks: u64,
    /// Keys the bloom filter holds (0: none).
    pub filter_entries: u64,
    // Read only:
    pub comparator: String,
    pub index_key_is_user_key: bool,
    pub index_value_delta_encoded: bool,
    /// `rocksdb.block.based.table.index.type` (0: binary search).
    pub index_type: u32,
    /// The external file's global sequence number (version 2 files).
    pub global_seqno: Option<u64>,
    pub num_range_deletions: u64,
    /// `rocksdb.external_sst_file.version`, where it is an external file.
    pub external_version: Option<u32>,
}

impl Properties {
    /// The block, for a table of `num_entries` puts (no deletions, merges
    /// or range deletions) at sequence number 0, with a bloom filter where
    /// `filter_entries` is not 0.
    pub(super) fn encode(&self, lz4: bool) -> Vec<u8> {
        let num = |v: u64| {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            b
        };
        let mut version = Vec::new();
        put_fixed32(&mut version, 2);
        let mut seqno = Vec::new();
        put_fixed64(&mut seqno, 0);
        let mut index_type = Vec::new();
        put_fixed32(&mut index_type, 0);
        let mut props: Vec<(&str, Vec<u8>)> = vec![
            ("rocksdb.block.based.table.index.type", index_type),
            ("rocksdb.block.based.table.prefix.filtering", b"0".to_vec()),
            ("rocksdb.block.based.table.whole.key.filtering", b"1".to_vec()),
            ("rocksdb.column.family.id", num(UNKNOWN_COLUMN_FAMILY)),
            ("rocksdb.comparator", b"leveldb.BytewiseComparator".to_vec()),
            ("rocksdb.compression", if lz4 { b"LZ4".to_vec() } else { b"NoCompression".to_vec() }),
            ("rocksdb.creating.db.identity", b"SST Writer".to_vec()),
            ("rocksdb.creation.time", num(0)),
            ("rocksdb.data.size", num(self.data_size)),
            ("rocksdb.deleted.keys", num(0)),
            ("rocksdb.external_sst_file.global_seqno", seqno),
            ("rocksdb.external_sst_file.version", version),
            ("rocksdb.filter.size", num(self.filter_size)),
            ("rocksdb.fixed.key.length", num(0)),
            ("rocksdb.format.version", num(0)),
            ("rocksdb.index.key.is.user.key", num(0)),
            ("rocksdb.index.size", num(self.index_size)),
            ("rocksdb.index.value.is.delta.encoded", num(0)),
            ("rocksdb.merge.operands", num(0)),
            ("rocksdb.merge.operator", b"nullptr".to_vec()),
            ("rocksdb.num.data.blocks", num(self.num_data_blocks)),
            ("rocksdb.num.entries", num(self.num_entries)),
            ("rocksdb.num.range-deletions", num(0)),
            ("rocksdb.oldest.key.time", num(0)),
            ("rocksdb.prefix.extractor.name", b"nullptr".to_vec()),
            ("rocksdb.property.collectors", b"[]".to_vec()),
            ("rocksdb.raw.key.size", num(self.raw_key_size)),
            ("rocksdb.raw.value.size", num(self.raw_value_size)),
        ];
        if self.filter_entries > 0 {
            props.push(("rocksdb.filter.policy", b"bloomfilter".to_vec()));
            props.push(("rocksdb.num.filter_entries", num(self.filter_entries)));
        }
        crate::sort::sort_by(&mut props, |a, b| a.0.cmp(b.0));
        let mut b = BlockBuilder::new(usize::MAX);
        for (name, value) in &props {
            b.add(name.as_bytes(), value);
        }
        b.finish()
    }

    /// The properties Silt reads from a properties block.
    pub(super) fn decode(block: &[u8], budget: &mut u64) -> Result<Properties> {
        let mut p = Properties::default();
        let num = |v: &[u8]| Reader::new(v).varint64();
        let mut last: Option<Vec<u8>> = None;
        for (name, value) in entries(block, budget)? {
            if last.as_ref().is_some_and(|l| *l >= name) {
                return Err(Error::corruption("RocksDB table", 0, "its properties are not in name order"));
            }
            match name.as_slice() {
                b"rocksdb.num.entries" => p.num_entries = num(value).unwrap_or(0),
                b"rocksdb.num.range-deletions" => p.num_range_deletions = num(value).unwrap_or(0),
                b"rocksdb.comparator" => p.comparator = String::from_utf8_lossy(value).into_owned(),
                b"rocksdb.index.key.is.user.key" => p.index_key_is_user_key = num(value).unwrap_or(0) != 0,
                b"rocksdb.index.value.is.delta.encoded" => p.index_value_delta_encoded = num(value).unwrap_or(0) != 0,
                b"rocksdb.block.based.table.index.type" => p.index_type = decode_fixed32(value).unwrap_or(0),
                b"rocksdb.external_sst_file.global_seqno" => p.global_seqno = decode_fixed64(value),
                b"rocksdb.external_sst_file.version" => p.external_version = decode_fixed32(value),
                _ => {}
            }
            last = Some(name);
        }
        // Only version 2 external files carry a global sequence number.
        if p.external_version != Some(2) {
            p.global_seqno = None;
        }
        Ok(p)
    }
}
