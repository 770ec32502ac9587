//! The stream's byte format: its header, its chunks and their checks,
//! and the table record (`docs/format.md` has the reasons).
//!
//! ```text
//! stream  := header chunk* end
//! header  := "SILTDUMP" version:fixed32 (1 or 2) flags:fixed32 (= 0)
//! chunk   := kind:u8 length:fixed32 crc:fixed32 payload[length]
//! crc     := version 1: masked CRC32C of kind and payload;
//!            version 2: low 32 bits of XXH3-64(payload, seed = kind)
//! kind 1 (entries, version 1): (varint32 key-length, key, varint32 value-length, value)*
//! kind 3 (table, version 2):   level:u8 size:fixed64 smallest-seq:fixed64 largest-seq:fixed64
//!                              varint32 length, smallest internal key, varint32 length, largest internal key
//! kind 4 (table bytes, v. 2):  the next bytes of the table begun last
//! kind 2 (end):                count:fixed64 sequence:fixed64, and in version 2
//!                              varint32 length, merge operator name
//! ```
//!
//! `count` is the number of entries (version 1) or tables (version 2);
//! `sequence` the sequence number the export read at (version 2: the
//! imported database's last sequence number).

use crate::format::checksum::{crc32c, crc32c_extend, mask};
use crate::format::coding::{put_fixed32, put_fixed64, put_varint32, Reader};
use crate::version::FileMeta;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The first bytes of every export.
pub const EXPORT_MAGIC: &[u8; 8] = b"SILTDUMP";
/// The newest export format this engine writes and reads: the tables form.
pub const EXPORT_VERSION: u32 = 2;
/// The format of the entries form (a range, or asked for).
pub const EXPORT_VERSION_ENTRIES: u32 = 1;
pub(super) const HEADER_LEN: usize = 16;
pub(super) const CHUNK_HEADER_LEN: usize = 9;
pub(super) const KIND_ENTRIES: u8 = 1;
pub(super) const KIND_END: u8 = 2;
pub(super) const KIND_TABLE: u8 = 3;
pub(super) const KIND_TABLE_BYTES: u8 = 4;
/// The largest chunk an import accepts (an export writes far smaller ones).
pub(super) const MAX_CHUNK: usize = 256 << 20;

/// The check of a chunk: version 1, the masked CRC32C of its kind and
/// payload; version 2, the low 32 bits of the XXH3-64 of its payload seeded
/// with its kind (the tables' own block check, several times faster than a
/// software CRC32C in wasm).
pub(super) fn chunk_check(version: u32, kind: u8, payload: &[u8]) -> u32 {
    if version == EXPORT_VERSION_ENTRIES {
        mask(crc32c_extend(crc32c(&[kind]), payload))
    } else {
        xxh3_64_with_seed(payload, u64::from(kind)) as u32
    }
}

/// The payload of a table record: `level` and what the manifest records of
/// the table.
pub(super) fn table_record(level: usize, m: &FileMeta) -> Vec<u8> {
    let mut p = Vec::with_capacity(32 + m.smallest.len() + m.largest.len());
    p.push(level as u8);
    put_fixed64(&mut p, m.file_size);
    put_fixed64(&mut p, m.smallest_seq);
    put_fixed64(&mut p, m.largest_seq);
    put_varint32(&mut p, m.smallest.len() as u32);
    p.extend_from_slice(&m.smallest);
    put_varint32(&mut p, m.largest.len() as u32);
    p.extend_from_slice(&m.largest);
    p
}

/// The level and manifest record a table record holds (its number 0), or
/// `None` if it is cut short or has bytes after the largest key.
pub(super) fn decode_table_record(p: &[u8]) -> Option<(usize, FileMeta)> {
    let mut d = Reader::new(p);
    let level = usize::from(d.u8()?);
    let (file_size, smallest_seq, largest_seq) = (d.fixed64()?, d.fixed64()?, d.fixed64()?);
    let smallest = d.length_prefixed()?.to_vec();
    let largest = d.length_prefixed()?.to_vec();
    d.is_empty().then_some((level, FileMeta { number: 0, file_size, smallest, largest, smallest_seq, largest_seq }))
}

/// Appends one chunk of `kind` around `payload`.
pub(super) fn put_chunk(out: &mut Vec<u8>, version: u32, kind: u8, payload: &[u8]) {
    out.push(kind);
    put_fixed32(out, payload.len() as u32);
    put_fixed32(out, chunk_check(version, kind, payload));
    out.extend_from_slice(payload);
}
