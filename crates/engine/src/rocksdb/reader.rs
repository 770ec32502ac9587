//! A reader of RocksDB block-based tables (format_version 0 to 5): every
//! entry of a table whose bytes are all in memory, with every block's
//! checksum verified first, for importing what RocksDB's `SstFileWriter`
//! or a RocksDB database wrote. Data blocks uncompressed or compressed
//! with LZ4 (format_version 2 and up); any other codec is refused by name.

use super::block::{charge, delta_index_entries, entries, walk};
use super::properties::Properties;
use super::{
    block_checksum, BlockHandle, BLOCK_TRAILER_LEN, CHECKSUM_NONE, FOOTER_LEN, LEGACY_FOOTER_LEN, LEGACY_MAGIC,
    LZ4_COMPRESSION, MAGIC, MAX_HANDLE_LEN, NO_COMPRESSION, TYPE_DELETION, TYPE_DELETION_WITH_TIMESTAMP, TYPE_MERGE,
    TYPE_RANGE_DELETION, TYPE_SINGLE_DELETION, TYPE_VALUE,
};
use crate::db::options::{MAX_KEY_LEN, MAX_VALUE_LEN};
use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::format::coding::{decode_fixed32, decode_fixed64, Reader};

/// The largest block Silt decompresses: one entry of the largest key and
/// value Silt stores, and room for more.
const MAX_BLOCK: usize = MAX_VALUE_LEN + MAX_KEY_LEN + (1 << 20);

/// What an entry of a RocksDB table does to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Value,
    /// A deletion (also a single deletion).
    Delete,
    Merge,
    /// Deletes `[key, value)`: the key is the range's start, the value its end.
    RangeDelete,
}

/// One entry: its user key, sequence number (the table's global one where
/// it has one), kind and value, in the table's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RocksdbEntry<'a> {
    pub key: &'a [u8],
    pub sequence: u64,
    pub kind: EntryKind,
    pub value: &'a [u8],
}

/// Where an entry's key and value are in [`RocksdbTable`]'s bytes.
#[derive(Clone, Debug)]
struct Stored {
    key: std::ops::Range<usize>,
    value: std::ops::Range<usize>,
    sequence: u64,
    kind: EntryKind,
}

/// A RocksDB table read whole: its entries' keys and values in one buffer
/// (not two allocations per entry).
#[derive(Clone, Debug, Default)]
pub struct RocksdbTable {
    pub format_version: u32,
    /// The comparator it was written with (`rocksdb.comparator`).
    pub comparator: String,
    /// The full-filter block (`fullfilter.rocksdb.BuiltinBloomFilter`), as
    /// stored (its checksum verified), if the table has one.
    pub filter: Option<Vec<u8>>,
    /// Every entry's key, then its value.
    data: Vec<u8>,
    /// Point entries in the table's order (user key ascending, newest
    /// first), then range deletions.
    stored: Vec<Stored>,
}

impl RocksdbTable {
    /// Entries (point entries and range deletions).
    pub fn len(&self) -> usize {
        self.stored.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stored.is_empty()
    }

    /// Entry `i`: point entries in the table's order (user key ascending,
    /// newest first), then range deletions.
    pub fn entry(&self, i: usize) -> RocksdbEntry<'_> {
        let s = &self.stored[i];
        RocksdbEntry {
            key: &self.data[s.key.clone()],
            sequence: s.sequence,
            kind: s.kind,
            value: &self.data[s.value.clone()],
        }
    }

    /// Every entry, in [`RocksdbTable::entry`]'s order.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = RocksdbEntry<'_>> + '_ {
        (0..self.stored.len()).map(|i| self.entry(i))
    }

    /// Appends an entry (the reader checks its order; this does not).
    fn push(&mut self, key: &[u8], sequence: u64, kind: EntryKind, value: &[u8]) {
        let at = self.data.len();
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
        let mid = at + key.len();
        self.stored.push(Stored { key: at..mid, value: mid..self.data.len(), sequence, kind });
    }

    /// A table of the given entries, as given (for tests of what reads tables).
    #[cfg(test)]
    pub(crate) fn of(entries: &[(&str, u64, EntryKind, &str)]) -> RocksdbTable {
        let mut t = RocksdbTable::default();
        for &(key, sequence, kind, value) in entries {
            t.push(key.as_bytes(), sequence, kind, value.as_bytes());
        }
        t
    }
}

fn corrupt(name: &str, offset: u64, why: impl Into<String>) -> Error {
    Error::corruption(name, offset, why.into())
}

struct Table<'a> {
    name: &'a str,
    bytes: &'a [u8],
    checksum: u8,
    format_version: u32,
    /// Bytes the table may still decode to (blocks decompressed, entries'
    /// keys and values): 16 times its size plus 256 MiB.
    budget: u64,
    /// The table's compression dictionary (`rocksdb.compression_dict`,
    /// RocksDB's `compression_opts.max_dict_bytes`), if it has one: the
    /// history every LZ4 block of it was compressed after.
    dict: Option<Vec<u8>>,
}

impl<'a> Table<'a> {
    /// The block at `h`, checksum verified and decompressed (uncompressed:
    /// the file's own bytes).
    fn block(&mut self, h: BlockHandle) -> Result<Cow<'a, [u8]>> {
        let end = h.offset.checked_add(h.size).and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64));
        let Some(end) = end.filter(|&e| e <= self.bytes.len() as u64) else {
            return Err(corrupt(self.name, h.offset, format!("a block of {} bytes past the file's end", h.size)));
        };
        let (start, body_end) = (h.offset as usize, (h.offset + h.size) as usize);
        let body = &self.bytes[start..body_end];
        let kind = self.bytes[body_end];
        let stored = decode_fixed32(&self.bytes[body_end + 1..end as usize]).unwrap_or(0);
        if self.checksum != CHECKSUM_NONE {
            let got = block_checksum(self.checksum, body, kind).ok_or_else(|| {
                Error::NotSupported(format!("{}: checksum type {} is not one Silt knows", self.name, self.checksum))
            })?;
            if got != stored {
                return Err(Error::ChecksumMismatch {
                    file: self.name.into(),
                    offset: h.offset,
                    expected: stored,
                    got,
                });
            }
        }
        match kind {
            NO_COMPRESSION => Ok(Cow::Borrowed(body)),
            LZ4_COMPRESSION => {
                let mut r = Reader::new(body);
                let (size, data) = if self.format_version >= 2 {
                    let size =
                        r.varint32().ok_or_else(|| corrupt(self.name, h.offset, "an LZ4 block without its size"))?;
                    (size as usize, r.buf)
                } else {
                    // format_version 0 and 1: a fixed32 size before the LZ4 block.
                    let size = decode_fixed32(body)
                        .ok_or_else(|| corrupt(self.name, h.offset, "an LZ4 block without its size"))?;
                    (size as usize, &body[8.min(body.len())..])
                };
                // LZ4 expands at most 255-fold: a larger size is damage (and
                // is not allocated), as is one past any block Silt reads.
                if size > data.len().saturating_mul(255).saturating_add(16) || size > MAX_BLOCK {
                    return Err(corrupt(
                        self.name,
                        h.offset,
                        format!("an LZ4 block of {} bytes claiming {size}", data.len()),
                    ));
                }
                charge(&mut self.budget, size)?;
                match &self.dict {
                    Some(d) => lz4_flex::block::decompress_with_dict(data, size, d),
                    None => lz4_flex::block::decompress(data, size),
                }
                .map(Cow::Owned)
                .map_err(|e| corrupt(self.name, h.offset, format!("an LZ4 block that does not decompress: {e}")))
            }
            other => Err(Error::NotSupported(format!(
                "{}: a block compressed with {}; Silt reads RocksDB tables uncompressed or compressed with LZ4: \
                 write them with compression_type=kNoCompression or kLZ4Compression",
                self.name,
                codec_name(other)
            ))),
        }
    }
}

fn codec_name(kind: u8) -> String {
    match kind {
        1 => "Snappy".into(),
        2 => "Zlib".into(),
        3 => "BZip2".into(),
        5 => "LZ4HC".into(),
        6 => "Xpress".into(),
        7 => "ZSTD".into(),
        k => format!("compression type {k:#04x}"),
    }
}

/// Splits an internal key into its user key, sequence number and type.
fn split_internal<'k>(name: &str, offset: u64, ikey: &'k [u8]) -> Result<(&'k [u8], u64, u8)> {
    if ikey.len() < 8 {
        return Err(corrupt(name, offset, "an internal key shorter than its 8-byte trailer"));
    }
    let at = ikey.len() - 8;
    let tag = decode_fixed64(&ikey[at..]).unwrap_or(0);
    Ok((&ikey[..at], tag >> 8, (tag & 0xff) as u8))
}

/// Reads a whole RocksDB table: `name` is for errors. Every block's
/// checksum is verified before anything is returned.
pub fn read_table(name: &str, bytes: &[u8]) -> Result<RocksdbTable> {
    let n = bytes.len();
    let magic = bytes.get(n.wrapping_sub(8)..).and_then(decode_fixed64);
    let (checksum, format_version, handles_at) = match magic {
        Some(MAGIC) if n >= FOOTER_LEN => {
            let footer = &bytes[n - FOOTER_LEN..];
            let version = decode_fixed32(&footer[1 + 2 * MAX_HANDLE_LEN..]).unwrap_or(u32::MAX);
            if version > 5 {
                return Err(Error::NotSupported(format!(
                    "{name}: a RocksDB table of format_version {version}; Silt reads 0 to 5 (RocksDB 7.x writes 5 by default: \
                     write with format_version=5 or lower)"
                )));
            }
            (footer[0], version, n - FOOTER_LEN + 1)
        }
        Some(LEGACY_MAGIC) if n >= LEGACY_FOOTER_LEN => (super::CHECKSUM_CRC32C, 0, n - LEGACY_FOOTER_LEN),
        _ => {
            return Err(corrupt(
                name,
                n as u64,
                "not a RocksDB block-based table: no block-based table magic number at its end",
            ))
        }
    };
    let mut r = Reader::new(&bytes[handles_at..handles_at + 2 * MAX_HANDLE_LEN]);
    let (Some(metaindex), Some(index)) = (BlockHandle::decode(&mut r), BlockHandle::decode(&mut r)) else {
        return Err(corrupt(name, handles_at as u64, "a footer without its block handles"));
    };
    let budget = (bytes.len() as u64).saturating_mul(16).saturating_add(256 << 20);
    let mut table = Table { name, bytes, checksum, format_version, budget, dict: None };

    // The meta-index: the properties and any range deletions.
    let mut props = Properties::default();
    let mut range_del = None;
    let mut filter = None;
    let mut last_meta: Option<Vec<u8>> = None;
    let meta_block = table.block(metaindex)?;
    for (key, value) in entries(&meta_block, &mut table.budget)? {
        // In name order, each once (RocksDB finds them by binary search).
        if last_meta.as_ref().is_some_and(|l| *l >= key) {
            return Err(corrupt(name, metaindex.offset, "a meta-index whose names are not in order"));
        }
        last_meta = Some(key.clone());
        let handle = BlockHandle::decode(&mut Reader::new(value))
            .ok_or_else(|| corrupt(name, metaindex.offset, "a meta-index entry without a handle"))?;
        match key.as_slice() {
            b"rocksdb.properties" | b"rocksdb.stats" => {
                let block = table.block(handle)?;
                props = Properties::decode(&block, &mut table.budget)?;
            }
            // Stored uncompressed; before every data block that needs it.
            b"rocksdb.compression_dict" => table.dict = Some(table.block(handle)?.into_owned()),
            b"fullfilter.rocksdb.BuiltinBloomFilter" => filter = Some(table.block(handle)?.into_owned()),
            b"rocksdb.range_del" => range_del = Some(handle),
            _ => {} // other meta-blocks (partitioned filters, a hash index's): not needed to read every entry
        }
    }
    if !props.comparator.is_empty() && props.comparator != "leveldb.BytewiseComparator" {
        return Err(Error::NotSupported(format!(
            "{name}: a RocksDB table ordered by comparator {:?}; Silt orders keys bytewise (leveldb.BytewiseComparator)",
            props.comparator
        )));
    }
    let global = props.global_seqno;

    if props.index_type != 0 {
        return Err(Error::NotSupported(format!(
            "{name}: a RocksDB table with a {} index; Silt reads the binary search index (index_type=kBinarySearch)",
            match props.index_type {
                1 => "hash search".into(),
                2 => "two-level (partitioned)".into(),
                3 => "binary search with first key".into(),
                t => format!("type {t}"),
            }
        )));
    }
    let index_block = table.block(index)?;
    let handles = if props.index_value_delta_encoded {
        delta_index_entries(&index_block, &mut table.budget)?.into_iter().map(|(_, h)| h).collect::<Vec<_>>()
    } else {
        let mut v = Vec::new();
        for (_, value) in entries(&index_block, &mut table.budget)? {
            v.push(
                BlockHandle::decode(&mut Reader::new(value))
                    .ok_or_else(|| corrupt(name, index.offset, "an index entry without a handle"))?,
            );
        }
        v
    };
    // Data blocks in file order, none overlapping another: a damaged
    // index that names one block many times is refused, not read again.
    for w in handles.windows(2) {
        let end = w[0].offset.saturating_add(w[0].size).saturating_add(BLOCK_TRAILER_LEN as u64);
        if w[1].offset < end {
            return Err(corrupt(name, index.offset, "an index whose blocks overlap or are out of order"));
        }
    }

    // Room for the entries as the properties count them, which nothing has
    // checked yet: at most twice the file's size for their bytes and one
    // entry per 32 bytes of it (more grows as entries are decoded, within
    // the budget), and none where the memory is not there.
    let mut out = RocksdbTable::default();
    let raw = props.raw_key_size.saturating_add(props.raw_value_size);
    let room = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let _ = out.data.try_reserve(room(raw.min((bytes.len() as u64).saturating_mul(2))));
    let _ = out.stored.try_reserve(room(props.num_entries.min(bytes.len() as u64 / 32)));
    // The last point entry's sequence number as stored (not the global one).
    let mut last_seq = 0;
    for h in handles {
        let block = table.block(h)?;
        walk(&block, true, |ikey, _, len, r| {
            let value =
                r.bytes(len.unwrap_or(0) as usize).ok_or_else(|| corrupt(name, h.offset, "a truncated value"))?;
            charge(&mut table.budget, ikey.len() + value.len())?;
            let (key, seq, ty) = split_internal(name, h.offset, ikey)?;
            if key.len() > MAX_KEY_LEN || value.len() > MAX_VALUE_LEN {
                return Err(Error::NotSupported(format!(
                    "{name}: an entry of a {}-byte key and a {}-byte value, past what Silt stores \
                     ({MAX_KEY_LEN}-byte keys, {MAX_VALUE_LEN}-byte values)",
                    key.len(),
                    value.len()
                )));
            }
            let kind = match ty {
                TYPE_VALUE => EntryKind::Value,
                TYPE_DELETION | TYPE_SINGLE_DELETION => EntryKind::Delete,
                TYPE_MERGE => EntryKind::Merge,
                TYPE_DELETION_WITH_TIMESTAMP => {
                    return Err(Error::NotSupported(format!("{name}: keys with user-defined timestamps")))
                }
                t => {
                    return Err(Error::NotSupported(format!(
                    "{name}: an entry of value type {t:#04x} (a blob reference or a wide column); Silt reads values, \
                         deletions and merge operands"
                )))
                }
            };
            // Internal key order: user key ascending, then sequence descending.
            if let Some(last) = out.stored.last() {
                let lk = &out.data[last.key.clone()];
                if key < lk || (key == lk && seq >= last_seq) {
                    return Err(corrupt(name, h.offset, "entries out of order"));
                }
            }
            last_seq = seq;
            out.push(key, global.unwrap_or(seq), kind, value);
            Ok(())
        })?;
    }
    if let Some(h) = range_del {
        let block = table.block(h)?;
        for (ikey, end) in entries(&block, &mut table.budget)? {
            let (start, seq, ty) = split_internal(name, h.offset, &ikey)?;
            if ty != TYPE_RANGE_DELETION {
                return Err(corrupt(name, h.offset, "a range deletion block entry that is not a range deletion"));
            }
            out.push(start, global.unwrap_or(seq), EntryKind::RangeDelete, end);
        }
    }
    // rocksdb.num.entries counts range deletions too.
    if props.num_entries != 0 && props.num_entries != out.len() as u64 {
        return Err(corrupt(
            name,
            0,
            format!("{} entries read where its properties count {}", out.len(), props.num_entries),
        ));
    }
    out.format_version = format_version;
    out.comparator = props.comparator;
    out.filter = filter;
    Ok(out)
}
