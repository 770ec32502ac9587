//! Writes a table file (layout in `format.rs` and docs/format.md).

use std::sync::Arc;

use super::block::BlockBuilder;
use super::dictionary;
use super::filter::{key_hash, FilterBuilder};
use super::format::{frame_block, BlockHandle, Checksum, Compression, Footer, DICT_FORMAT_VERSION, FORMAT_VERSION};
use crate::error::Result;
use crate::format::coding::put_varint64;
use crate::format::key::{self, SequenceNumber, ValueType, MAX_SEQUENCE};
use crate::fs::File;
use crate::range_del::Tombstone;

/// How tables are written.
#[derive(Clone, Debug)]
pub struct TableOptions {
    /// Target size of an uncompressed data block.
    pub block_size: usize,
    pub restart_interval: usize,
    pub compression: Compression,
    /// Bloom filter bits per key; 0 writes no filter.
    pub bloom_bits_per_key: u32,
    /// Give data blocks a hash index of their user keys (block.rs; format 2 only).
    pub data_block_hash_index: bool,
    /// The table format to write: 2 (XXH3 checksums, hash indexes), or 1
    /// (CRC32C, LevelDB's blocks) for readers that predate format 2. A
    /// table with a compression dictionary is written as format 3.
    pub format_version: u32,
    /// The most bytes of a compression dictionary (RocksDB's
    /// `max_dict_bytes`): 0 writes none. With one, the table's first
    /// `dict_buffer_bytes` of data blocks are held back, sampled into a
    /// dictionary (`dictionary.rs`), and every data block is compressed
    /// with it. Needs LZ4 and format 2 or later; at most 64 KiB (LZ4's
    /// window).
    pub dict_bytes: usize,
    /// Bytes of uncompressed data blocks sampled for the dictionary (RocksDB's
    /// `max_dict_buffer_bytes`); the table's blocks past them are compressed
    /// as they come.
    pub dict_buffer_bytes: usize,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            restart_interval: 4,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            data_block_hash_index: true,
            format_version: FORMAT_VERSION,
            dict_bytes: 0,
            dict_buffer_bytes: DEFAULT_DICT_BUFFER_BYTES,
        }
    }
}

/// Data sampled for a dictionary by default: 1 MiB of a table's first blocks.
pub const DEFAULT_DICT_BUFFER_BYTES: usize = 1 << 20;
/// The largest useful LZ4 dictionary: its window.
pub const MAX_DICT_BYTES: usize = 64 << 10;

/// What a finished table holds, for the manifest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableInfo {
    pub file_size: u64,
    /// Point entries (puts, deletes, merge operands).
    pub num_entries: u64,
    pub num_range_deletions: u64,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub smallest_seq: SequenceNumber,
    pub largest_seq: SequenceNumber,
}

/// Names of meta blocks in the metaindex.
pub(crate) const META_FILTER: &[u8] = b"silt.filter.fastlocalbloom";
pub(crate) const META_PROPERTIES: &[u8] = b"silt.properties";
pub(crate) const META_RANGE_DEL: &[u8] = b"silt.range_del";
pub(crate) const META_COMPRESSION_DICT: &[u8] = b"silt.compression_dict";

/// Writes a table. Entries must be added in internal-key order. Output is
/// buffered and appended to the file in large pieces; the caller syncs.
pub struct TableBuilder {
    file: Arc<dyn File>,
    opts: TableOptions,
    data: BlockBuilder,
    index: BlockBuilder,
    filter: Option<FilterBuilder>,
    out: Vec<u8>,
    offset: u64,
    /// Handle of the last data block, waiting for the next key to pick its
    /// index separator.
    pending_index: Option<BlockHandle>,
    info: TableInfo,
    blocks: u64,
    tombstones: Vec<Tombstone>,
    /// Data blocks in a row that compression did not shrink.
    incompressible: u32,
    dict: DictState,
}

/// Where a table that is to have a dictionary stands.
enum DictState {
    /// No dictionary (none asked for, or it came out empty).
    Off,
    /// Data blocks held back for sampling, in order, each with its index
    /// separator once the next key gave it one; their uncompressed bytes.
    Buffering(Vec<Held>, usize),
    /// Made: every data block from here on is compressed with it.
    Made(Vec<u8>),
}

/// A data block held back until the dictionary is made.
struct Held {
    raw: Vec<u8>,
    separator: Option<Vec<u8>>,
}

const FLUSH_AT: usize = 256 * 1024;

/// After this many data blocks in a row that did not compress (random or
/// already compressed values), a table stops trying on every block...
const INCOMPRESSIBLE_RUN: u32 = 8;
/// ...and tries only every this many blocks, so that data that turns
/// compressible later in the table is compressed again.
const PROBE_EVERY: u64 = 16;

impl TableBuilder {
    pub fn new(file: Arc<dyn File>, opts: TableOptions) -> Self {
        let filter = (opts.bloom_bits_per_key > 0).then(|| FilterBuilder::new(opts.bloom_bits_per_key));
        let dict = if opts.dict_bytes > 0 && opts.compression == Compression::Lz4 && opts.format_version >= 2 {
            DictState::Buffering(Vec::new(), 0)
        } else {
            DictState::Off
        };
        TableBuilder {
            dict,
            data: if opts.data_block_hash_index && opts.format_version >= 2 {
                BlockBuilder::with_hash_index(opts.restart_interval)
            } else {
                BlockBuilder::new(opts.restart_interval)
            },
            index: BlockBuilder::new(1),
            file,
            filter,
            opts,
            out: Vec::new(),
            offset: 0,
            pending_index: None,
            info: TableInfo { smallest_seq: MAX_SEQUENCE, ..TableInfo::default() },
            blocks: 0,
            tombstones: Vec::new(),
            incompressible: 0,
        }
    }

    /// Adds an entry. REQUIRES: `ikey` sorts after every key added before.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        if let Some(handle) = self.pending_index.take() {
            let sep = index_separator(&self.info.largest, ikey);
            self.add_index_entry(&sep, handle);
        }
        if let DictState::Buffering(held, _) = &mut self.dict {
            if let Some(last) = held.last_mut().filter(|h| h.separator.is_none()) {
                last.separator = Some(index_separator(&self.info.largest, ikey));
            }
        }
        if self.info.num_entries == 0 {
            self.info.smallest = ikey.to_vec();
        }
        self.info.largest.clear();
        self.info.largest.extend_from_slice(ikey);
        self.info.num_entries += 1;
        if let Some(p) = key::parse(ikey) {
            self.info.smallest_seq = self.info.smallest_seq.min(p.seq);
            self.info.largest_seq = self.info.largest_seq.max(p.seq);
        }
        // One hash of the user key for the filter and the block's hash index.
        let h = key_hash(key::user_key(ikey));
        if let Some(f) = self.filter.as_mut() {
            f.add_hash(h);
        }
        self.data.add_hashed(ikey, value, h);
        if self.data.estimated_size() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Adds a range tombstone (any order; stored sorted in their own block).
    pub fn add_tombstone(&mut self, t: Tombstone) {
        self.tombstones.push(t);
    }

    /// Bytes written to the file or buffered so far (blocks held back for
    /// the dictionary counted uncompressed).
    pub fn file_size(&self) -> u64 {
        match &self.dict {
            DictState::Buffering(_, bytes) => self.offset + *bytes as u64,
            _ => self.offset,
        }
    }

    fn add_index_entry(&mut self, sep: &[u8], handle: BlockHandle) {
        let mut v = Vec::with_capacity(20);
        handle.encode_to(&mut v);
        self.index.add(sep, &v);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let raw = self.data.finish();
        if let DictState::Buffering(held, bytes) = &mut self.dict {
            *bytes += raw.len();
            held.push(Held { raw, separator: None });
            if *bytes >= self.opts.dict_buffer_bytes {
                self.make_dict()?;
            }
            return Ok(());
        }
        self.write_data_block(&raw)
    }

    /// Makes the dictionary from the blocks held back, then writes them
    /// with it.
    fn make_dict(&mut self) -> Result<()> {
        if !matches!(self.dict, DictState::Buffering(..)) {
            return Ok(());
        }
        let DictState::Buffering(held, _) = std::mem::replace(&mut self.dict, DictState::Off) else {
            unreachable!("checked above")
        };
        let dict = dictionary::sample(held.iter().map(|h| h.raw.as_slice()), self.opts.dict_bytes.min(MAX_DICT_BYTES));
        if !dict.is_empty() {
            self.dict = DictState::Made(dict);
        }
        for h in held {
            self.write_data_block(&h.raw)?;
            if let Some(sep) = h.separator {
                let handle = self.pending_index.take().expect("a data block was just written");
                self.add_index_entry(&sep, handle);
            }
        }
        Ok(())
    }

    /// Writes a finished data block (compressed if that pays) and leaves its
    /// handle for the next key to index.
    fn write_data_block(&mut self, raw: &[u8]) -> Result<()> {
        // Compressing blocks that do not shrink costs most of a table's
        // build time for incompressible values: after a run of them, try
        // only now and then (a block that does not shrink by 1/8 is stored
        // as it is either way).
        let try_it = self.opts.compression != Compression::None
            && (self.incompressible < INCOMPRESSIBLE_RUN || self.blocks.is_multiple_of(PROBE_EVERY));
        let compression = if try_it { self.opts.compression } else { Compression::None };
        let handle = self.write_block(raw, compression)?;
        if try_it {
            self.incompressible = if (handle.size as usize) < raw.len() { 0 } else { self.incompressible + 1 };
        }
        self.pending_index = Some(handle);
        self.blocks += 1;
        Ok(())
    }

    fn write_block(&mut self, raw: &[u8], compression: Compression) -> Result<BlockHandle> {
        let start = self.out.len();
        // Only data blocks are compressed, so only they meet the dictionary.
        let dict = match &self.dict {
            DictState::Made(d) if compression == Compression::Lz4 => Some(d.as_slice()),
            _ => None,
        };
        let checksum = Checksum::of_version(self.opts.format_version);
        let size = frame_block(raw, compression, dict, checksum, &mut self.out);
        let handle = BlockHandle { offset: self.offset, size: size as u64 };
        self.offset += (self.out.len() - start) as u64;
        if self.out.len() >= FLUSH_AT {
            self.file.append(&self.out)?;
            self.out.clear();
        }
        Ok(handle)
    }

    /// Writes the rest of the table and returns what it holds.
    pub fn finish(mut self) -> Result<TableInfo> {
        self.flush_data_block()?;
        self.make_dict()?;
        if let Some(handle) = self.pending_index.take() {
            let sep = key::short_successor(key::user_key(&self.info.largest));
            let sep = if sep.as_slice() > key::user_key(&self.info.largest) {
                key::seek_key(&sep, MAX_SEQUENCE)
            } else {
                self.info.largest.clone()
            };
            self.add_index_entry(&sep, handle);
        }
        let mut meta = Vec::new();
        let mut format_version = self.opts.format_version;
        if let DictState::Made(dict) = std::mem::replace(&mut self.dict, DictState::Off) {
            let h = self.write_block(&dict, Compression::None)?;
            meta.push((META_COMPRESSION_DICT, h));
            format_version = format_version.max(DICT_FORMAT_VERSION);
        }
        if let Some(mut f) = self.filter.take() {
            if f.num_keys() > 0 {
                let data = f.finish();
                let h = self.write_block(&data, Compression::None)?;
                meta.push((META_FILTER, h));
            }
        }
        if !self.tombstones.is_empty() {
            let block = self.range_del_block();
            let h = self.write_block(&block, Compression::None)?;
            meta.push((META_RANGE_DEL, h));
        }
        let props = self.properties();
        let h = self.write_block(&props, Compression::None)?;
        meta.push((META_PROPERTIES, h));
        crate::sort::sort_by_key(&mut meta, |m| m.0);
        let mut mb = BlockBuilder::new(1);
        for (name, h) in meta {
            let mut v = Vec::new();
            h.encode_to(&mut v);
            mb.add(name, &v);
        }
        let metaindex = mb.finish();
        let metaindex = self.write_block(&metaindex, Compression::None)?;
        let index = self.index.finish();
        let index = self.write_block(&index, Compression::None)?;
        self.out.extend_from_slice(&Footer { metaindex, index, format_version }.encode());
        self.offset += super::format::FOOTER_LEN as u64;
        self.file.append(&self.out)?;
        self.out.clear();
        self.info.file_size = self.offset;
        if self.info.num_entries == 0 && self.tombstones.is_empty() {
            self.info.smallest_seq = 0;
        }
        Ok(self.info)
    }

    /// The range-deletion block: (start, seq, RangeDelete) -> end, sorted by
    /// internal key. Also widens the table's boundaries to cover every
    /// tombstone: the smallest key may be a tombstone start; the largest may
    /// be a tombstone end as a *sentinel* (end, MAX_SEQUENCE, RangeDelete),
    /// which sorts before every real entry of `end`, so the file does not
    /// look like it holds `end` itself.
    fn range_del_block(&mut self) -> Vec<u8> {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = self
            .tombstones
            .iter()
            .filter(|t| t.start < t.end)
            .map(|t| (key::internal_key(&t.start, t.seq, ValueType::RangeDelete), t.end.clone()))
            .collect();
        crate::sort::sort_by(&mut entries, |a, b| key::compare(&a.0, &b.0));
        entries.dedup();
        let mut b = BlockBuilder::new(1);
        for (k, end) in &entries {
            b.add(k, end);
            let sentinel = key::internal_key(end, MAX_SEQUENCE, ValueType::RangeDelete);
            if self.info.num_entries == 0 && self.info.num_range_deletions == 0 {
                self.info.smallest = k.clone();
                self.info.largest = sentinel;
            } else {
                if key::compare(k, &self.info.smallest).is_lt() {
                    self.info.smallest = k.clone();
                }
                if key::compare(&sentinel, &self.info.largest).is_gt() {
                    self.info.largest = sentinel;
                }
            }
            if let Some(p) = key::parse(k) {
                self.info.smallest_seq = self.info.smallest_seq.min(p.seq);
                self.info.largest_seq = self.info.largest_seq.max(p.seq);
            }
            self.info.num_range_deletions += 1;
        }
        b.finish()
    }

    fn properties(&self) -> Vec<u8> {
        let mut b = BlockBuilder::new(1);
        let mut put = |name: &[u8], v: u64| {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            b.add(name, &buf);
        };
        // Names in sorted order, as a block requires.
        put(b"silt.data.blocks", self.blocks);
        put(b"silt.largest.seq", self.info.largest_seq);
        put(b"silt.num.entries", self.info.num_entries);
        put(b"silt.num.range_deletions", self.info.num_range_deletions);
        put(b"silt.smallest.seq", if self.info.num_entries == 0 { 0 } else { self.info.smallest_seq });
        b.finish()
    }
}

/// An internal key k with `last <= k < next`, short where possible.
fn index_separator(last: &[u8], next: &[u8]) -> Vec<u8> {
    let (lu, nu) = (key::user_key(last), key::user_key(next));
    if lu < nu {
        let sep = key::shortest_separator(lu, nu);
        if sep.as_slice() > lu && sep.as_slice() < nu {
            return key::seek_key(&sep, MAX_SEQUENCE);
        }
    }
    last.to_vec()
}
