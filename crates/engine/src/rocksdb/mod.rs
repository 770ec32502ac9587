//! RocksDB's block-based table format (format_version 5, as RocksDB 7.8
//! writes it): Silt writes tables that RocksDB's `IngestExternalFile`
//! takes ([`TableWriter`]: what `SstFileWriter` writes, its bloom filter
//! included) and reads tables
//! that `SstFileWriter` or a RocksDB database wrote ([`read_table`]), so
//! that data moves between a browser's Silt and RocksDB (and the stores
//! built on its format) as table files. Nothing here is Silt's own table
//! format (`sst/`). Byte layouts in docs/format.md ("RocksDB tables").

mod block;
mod bloom;
mod properties;
mod reader;
pub mod tar;
mod writer;
mod xxph3;

pub use reader::{read_table, EntryKind, RocksdbEntry, RocksdbTable};
pub use writer::{TableWriter, TableWriterOptions};

use crate::format::coding::{put_varint64, Reader};

/// The last 8 bytes of a block-based table (`kBlockBasedTableMagicNumber`).
pub(crate) const MAGIC: u64 = 0x88e2_41b7_85f4_cff7;
/// The magic number of tables of format_version 0 (LevelDB's layout).
pub(crate) const LEGACY_MAGIC: u64 = 0xdb47_7524_8b80_fb57;
/// Footer of format_version 1 to 5: checksum type, two padded block
/// handles, format_version, magic.
pub(crate) const FOOTER_LEN: usize = 1 + 2 * MAX_HANDLE_LEN + 4 + 8;
/// Footer of format_version 0: two padded block handles and the magic.
pub(crate) const LEGACY_FOOTER_LEN: usize = 2 * MAX_HANDLE_LEN + 8;
/// Two varint64s at most.
pub(crate) const MAX_HANDLE_LEN: usize = 20;
/// A block's trailer: its compression type and its checksum.
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;
/// The format_version Silt writes (RocksDB 7.8's default).
pub(crate) const FORMAT_VERSION: u32 = 5;

/// Compression type bytes (include/rocksdb/compression_type.h).
pub(crate) const NO_COMPRESSION: u8 = 0;
pub(crate) const LZ4_COMPRESSION: u8 = 4;

/// Checksum type bytes (include/rocksdb/table.h).
pub(crate) const CHECKSUM_NONE: u8 = 0;
pub(crate) const CHECKSUM_CRC32C: u8 = 1;
pub(crate) const CHECKSUM_XXHASH: u8 = 2;
pub(crate) const CHECKSUM_XXHASH64: u8 = 3;
pub(crate) const CHECKSUM_XXH3: u8 = 4;

/// Value types of internal keys (db/dbformat.h).
pub(crate) const TYPE_DELETION: u8 = 0x0;
pub(crate) const TYPE_VALUE: u8 = 0x1;
pub(crate) const TYPE_MERGE: u8 = 0x2;
pub(crate) const TYPE_SINGLE_DELETION: u8 = 0x7;
pub(crate) const TYPE_RANGE_DELETION: u8 = 0xF;
pub(crate) const TYPE_DELETION_WITH_TIMESTAMP: u8 = 0x14;

/// Whether a file's last 8 bytes (little-endian) are a block-based
/// table's magic number.
pub fn is_table_magic(magic: u64) -> bool {
    magic == MAGIC || magic == LEGACY_MAGIC
}

/// Where a block is in the file, and its size without its trailer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    pub(crate) fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    pub(crate) fn encoded(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(MAX_HANDLE_LEN);
        self.encode_to(&mut v);
        v
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Option<BlockHandle> {
        Some(BlockHandle { offset: r.varint64()?, size: r.varint64()? })
    }
}

/// The checksum of a block and its compression type byte, as the
/// trailer stores it, for each checksum type
/// (table/block_based/block_based_table_builder.cc, ComputeBuiltinChecksum).
pub(crate) fn block_checksum(kind: u8, block: &[u8], compression: u8) -> Option<u32> {
    use crate::format::checksum::{crc32c, crc32c_extend, mask};
    Some(match kind {
        CHECKSUM_CRC32C => mask(crc32c_extend(crc32c(block), &[compression])),
        CHECKSUM_XXHASH => {
            let mut h = xxhash_rust::xxh32::Xxh32::new(0);
            h.update(block);
            h.update(&[compression]);
            h.digest()
        }
        CHECKSUM_XXHASH64 => {
            let mut h = xxhash_rust::xxh64::Xxh64::new(0);
            h.update(block);
            h.update(&[compression]);
            h.digest() as u32
        }
        // XXH3 of the block, its low half, with the type byte folded in
        // (table/format.cc, ComputeBuiltinChecksumWithLastByte).
        CHECKSUM_XXH3 => (xxhash_rust::xxh3::xxh3_64(block) as u32) ^ u32::from(compression).wrapping_mul(0x6b90_83d9),
        _ => return None,
    })
}
