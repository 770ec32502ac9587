//! A writer of RocksDB tables that `IngestExternalFile` takes: what
//! RocksDB's `SstFileWriter` writes for puts (every key at sequence
//! number 0 as a value, the external-file properties that give the file
//! its global sequence number), in format_version 5 with crc32c block
//! checksums, a full-key bloom filter bit for bit as RocksDB builds it
//! (`bloom.rs`), an index of whole internal keys and handles, and data
//! blocks optionally compressed with LZ4.

use super::block::BlockBuilder;
use super::bloom::BloomBuilder;
use super::properties::Properties;
use super::{
    block_checksum, BlockHandle, CHECKSUM_CRC32C, FOOTER_LEN, FORMAT_VERSION, LZ4_COMPRESSION, MAGIC, MAX_HANDLE_LEN,
    NO_COMPRESSION, TYPE_VALUE,
};
use crate::error::{Error, Result};
use crate::format::coding::{put_fixed32, put_fixed64, put_varint32};

/// How a [`TableWriter`] builds its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableWriterOptions {
    /// Data block size before compression (RocksDB's `block_size`).
    pub block_size: usize,
    /// Compress data blocks with LZ4 where it saves at least an eighth
    /// (RocksDB's rule); off: none is compressed.
    pub lz4: bool,
    /// Bloom filter bits per key (RocksDB's `bloom_bits`; 0: no filter).
    pub bloom_bits_per_key: u32,
}

impl Default for TableWriterOptions {
    fn default() -> Self {
        TableWriterOptions { block_size: 4096, lz4: false, bloom_bits_per_key: 10 }
    }
}

/// Builds one RocksDB table in memory from keys added in ascending byte
/// order ([`TableWriter::add`]), each once.
pub struct TableWriter {
    options: TableWriterOptions,
    out: Vec<u8>,
    data: BlockBuilder,
    index: BlockBuilder,
    bloom: BloomBuilder,
    /// The last internal key added (of the block being built, or of the
    /// one just written): the order check's and the index's.
    block_last: Vec<u8>,
    props: Properties,
}

impl TableWriter {
    pub fn new(options: TableWriterOptions) -> Self {
        TableWriter::with_buffer(options, Vec::new())
    }

    /// A writer that builds its table in `buffer` (emptied first): the
    /// buffer `finish` gave for the table before, reused with the room it grew to.
    pub fn with_buffer(options: TableWriterOptions, mut buffer: Vec<u8>) -> Self {
        buffer.clear();
        TableWriter {
            options,
            out: buffer,
            data: BlockBuilder::new(16),
            index: BlockBuilder::new(1),
            bloom: BloomBuilder::new(options.bloom_bits_per_key),
            block_last: Vec::new(),
            props: Properties::default(),
        }
    }

    /// Entries added so far.
    pub fn count(&self) -> u64 {
        self.props.num_entries
    }

    /// The table's size so far (blocks written, and the one being built).
    pub fn approximate_size(&self) -> u64 {
        (self.out.len() + self.data.size_estimate()) as u64
    }

    /// Adds `key` with `value`. Keys must be strictly ascending
    /// (`InvalidArgument` otherwise: RocksDB refuses such a table).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.props.num_entries > 0 {
            let last = &self.block_last[..self.block_last.len() - 8];
            if key <= last {
                return Err(Error::InvalidArgument(format!(
                    "a RocksDB table takes keys in ascending order, each once: {key:02x?} came after {last:02x?}"
                )));
            }
        }
        // The internal key, in the buffer of the last one.
        self.block_last.clear();
        self.block_last.extend_from_slice(key);
        self.block_last.extend_from_slice(&u64::from(TYPE_VALUE).to_le_bytes());
        self.data.add(&self.block_last, value);
        self.bloom.add(key);
        self.props.num_entries += 1;
        self.props.raw_key_size += self.block_last.len() as u64;
        self.props.raw_value_size += value.len() as u64;
        if self.data.size_estimate() >= self.options.block_size {
            self.flush_block();
        }
        Ok(())
    }

    /// Writes the data block being built and indexes it by its last key.
    fn flush_block(&mut self) {
        if self.data.is_empty() {
            return;
        }
        let raw = self.data.finish();
        let handle = self.write_block(&raw, self.options.lz4);
        self.props.data_size = self.out.len() as u64;
        self.props.num_data_blocks += 1;
        self.index.add(&self.block_last, &handle.encoded());
    }

    /// Appends a block and its trailer; returns its handle.
    fn write_block(&mut self, raw: &[u8], lz4: bool) -> BlockHandle {
        let compressed = lz4.then(|| {
            let mut c = Vec::with_capacity(raw.len() / 2 + 8);
            // format_version >= 2: the uncompressed size first.
            put_varint32(&mut c, raw.len() as u32);
            c.extend_from_slice(&lz4_flex::block::compress(raw));
            c
        });
        let (bytes, kind) = match &compressed {
            Some(c) if c.len() < raw.len() - raw.len() / 8 => (c.as_slice(), LZ4_COMPRESSION),
            _ => (raw, NO_COMPRESSION),
        };
        let handle = BlockHandle { offset: self.out.len() as u64, size: bytes.len() as u64 };
        self.out.extend_from_slice(bytes);
        self.out.push(kind);
        let sum = block_checksum(CHECKSUM_CRC32C, bytes, kind).expect("crc32c is a known checksum");
        put_fixed32(&mut self.out, sum);
        handle
    }

    /// The table's bytes. An empty table is refused (RocksDB's
    /// `SstFileWriter::Finish` refuses one too).
    pub fn finish(mut self) -> Result<Vec<u8>> {
        if self.props.num_entries == 0 {
            return Err(Error::InvalidArgument("a RocksDB table needs at least one entry".into()));
        }
        self.flush_block();
        // As RocksDB orders them: the filter, the index, the properties,
        // the meta-index.
        let filter = std::mem::replace(&mut self.bloom, BloomBuilder::new(0)).finish().map(|f| {
            self.props.filter_size = f.len() as u64;
            self.props.filter_entries = self.props.num_entries;
            self.write_block(&f, false)
        });
        let index = self.index.finish();
        self.props.index_size = (index.len() + super::BLOCK_TRAILER_LEN) as u64;
        let index_handle = self.write_block(&index, false);
        let props = self.props.encode(self.options.lz4);
        let props_handle = self.write_block(&props, false);
        let mut metaindex = BlockBuilder::new(1);
        if let Some(handle) = filter {
            metaindex.add(b"fullfilter.rocksdb.BuiltinBloomFilter", &handle.encoded());
        }
        metaindex.add(b"rocksdb.properties", &props_handle.encoded());
        let metaindex = metaindex.finish();
        let metaindex_handle = self.write_block(&metaindex, false);
        // The footer: checksum type, the two handles padded to 40 bytes,
        // format_version, magic.
        let start = self.out.len();
        self.out.push(CHECKSUM_CRC32C);
        metaindex_handle.encode_to(&mut self.out);
        index_handle.encode_to(&mut self.out);
        self.out.resize(start + 1 + 2 * MAX_HANDLE_LEN, 0);
        put_fixed32(&mut self.out, FORMAT_VERSION);
        put_fixed64(&mut self.out, MAGIC);
        debug_assert_eq!(self.out.len() - start, FOOTER_LEN);
        Ok(self.out)
    }
}
