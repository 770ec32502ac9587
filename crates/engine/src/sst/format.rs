//! Table file framing: block handles, the block trailer, compression, and
//! the footer.
//!
//! ## Format
//! ```text
//! table   := data_block*  filter_block  properties_block  metaindex_block
//!            index_block  footer
//! block   := contents  type: u8  checksum: fixed32le
//! checksum := format 1: masked_crc32c(contents ++ type)
//!             format 2: low 32 bits of XXH3_64(contents, seed = type)
//! type    := 0 none | 1 lz4 (contents = raw_len: varint32 ++ lz4 block)
//!            | 2 lz4 with the table's dictionary (format 3; contents as 1)
//! handle  := offset: varint64  size: varint64      (size excludes the trailer)
//! footer  := metaindex offset,size: fixed64le x2   index offset,size: fixed64le x2
//!            format_version: fixed32le (1, 2 or 3)
//!            masked_crc32c(previous 36 bytes): fixed32le
//!            magic: fixed64le = 0x5349_4c54_5353_5401 ("SILTSST\x01" read as LE bytes)
//! ```

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::format::checksum::{crc32c, crc32c_extend, mask, unmask};
use crate::format::coding::{
    decode_fixed32, decode_fixed64, put_fixed32, put_fixed64, put_varint32, put_varint64, Reader,
};
use crate::fs::{read_exact_at, File};
use xxhash_rust::xxh3::xxh3_64_with_seed;

pub const BLOCK_TRAILER_LEN: usize = 5;
pub const FOOTER_LEN: usize = 48;
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"SILTSST\x01");
/// The table format written by default. Version 2 differs from 1 in block
/// checksums (XXH3 instead of CRC32C: in wasm, without CRC instructions,
/// CRC32C of a 4 KiB block took 3.2 us and XXH3 0.3 us) and in that data
/// blocks may carry a hash index (`block.rs`: footer bit 31).
pub const FORMAT_VERSION: u32 = 2;
/// Format 3 is format 2 with a compression dictionary: its metaindex names
/// one (`silt.compression_dict`) and its data blocks may be compressed with
/// it (type 2). Written only by tables that have a dictionary, so that a
/// reader that predates dictionaries refuses them at open, by version,
/// rather than calling their blocks corrupt.
pub const DICT_FORMAT_VERSION: u32 = 3;
/// The newest table format this reader reads.
pub const MAX_FORMAT_VERSION: u32 = DICT_FORMAT_VERSION;
/// The oldest table format this reader reads.
pub const MIN_FORMAT_VERSION: u32 = 1;
/// No block may claim to be larger than this (guards allocations on
/// corrupt input).
pub const MAX_BLOCK_LEN: u64 = 256 << 20;

/// Block compression.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    None,
    #[default]
    Lz4,
}

const TYPE_NONE: u8 = 0;
const TYPE_LZ4: u8 = 1;
const TYPE_LZ4_DICT: u8 = 2;

/// Where a block lives in its file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    pub fn decode(src: &[u8]) -> Option<Self> {
        let mut r = Reader::new(src);
        Some(BlockHandle { offset: r.varint64()?, size: r.varint64()? })
    }
}

/// The fixed-size end of every table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    pub metaindex: BlockHandle,
    pub index: BlockHandle,
    /// `MIN_FORMAT_VERSION..=MAX_FORMAT_VERSION`.
    pub format_version: u32,
}

impl Footer {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(FOOTER_LEN);
        put_fixed64(&mut v, self.metaindex.offset);
        put_fixed64(&mut v, self.metaindex.size);
        put_fixed64(&mut v, self.index.offset);
        put_fixed64(&mut v, self.index.size);
        put_fixed32(&mut v, self.format_version);
        let crc = mask(crc32c(&v));
        put_fixed32(&mut v, crc);
        put_fixed64(&mut v, TABLE_MAGIC);
        v
    }

    pub fn decode(b: &[u8], file: &str, at: u64) -> Result<Self> {
        let corrupt = |r: &str| Error::corruption(file, at, r.to_string());
        if b.len() != FOOTER_LEN {
            return Err(corrupt("footer has the wrong size"));
        }
        if decode_fixed64(&b[40..]) != Some(TABLE_MAGIC) {
            return Err(corrupt("not a Silt table (bad magic number)"));
        }
        let stored = unmask(decode_fixed32(&b[36..]).unwrap_or(0));
        let actual = crc32c(&b[..36]);
        if stored != actual {
            return Err(Error::ChecksumMismatch { file: file.to_string(), offset: at, expected: stored, got: actual });
        }
        let version = decode_fixed32(&b[32..]).unwrap_or(0);
        if version > MAX_FORMAT_VERSION {
            // A newer build wrote it (its checksum is right): not damage.
            return Err(Error::NotSupported(format!(
                "{file}: table format version {version}, written by a newer version of Silt; this build reads \
                 {MIN_FORMAT_VERSION} to {MAX_FORMAT_VERSION}: open the database with the newer version"
            )));
        }
        if version < MIN_FORMAT_VERSION {
            return Err(corrupt(&format!("table format version {version}: no build wrote it")));
        }
        let f = |i: usize| decode_fixed64(&b[i..]).unwrap_or(0);
        Ok(Footer {
            metaindex: BlockHandle { offset: f(0), size: f(8) },
            index: BlockHandle { offset: f(16), size: f(24) },
            format_version: version,
        })
    }
}

/// How a table's blocks are checksummed (by its format version).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checksum {
    /// Format 1 (LevelDB's): masked CRC32C of contents and type byte.
    Crc32c,
    /// Format 2: the low 32 bits of XXH3-64 of the contents, seeded with
    /// the type byte.
    Xxh3,
}

impl Checksum {
    /// The checksum of a table of `format_version` (one `Footer::decode` accepted).
    pub fn of_version(format_version: u32) -> Checksum {
        if format_version >= 2 {
            Checksum::Xxh3
        } else {
            Checksum::Crc32c
        }
    }

    /// The stored checksum of `contents` followed by the type byte `ty`.
    pub fn of(self, contents: &[u8], ty: u8) -> u32 {
        match self {
            Checksum::Crc32c => mask(crc32c_extend(crc32c(contents), &[ty])),
            Checksum::Xxh3 => xxh3_64_with_seed(contents, u64::from(ty)) as u32,
        }
    }
}

/// Frames `raw` as a block (compressing it when that saves at least 1/8;
/// with `dict`, an LZ4 dictionary, as type 2), appending contents and
/// trailer to `out`. Returns the contents' size.
pub fn frame_block(
    raw: &[u8],
    compression: Compression,
    dict: Option<&[u8]>,
    checksum: Checksum,
    out: &mut Vec<u8>,
) -> usize {
    let start = out.len();
    let mut ty = TYPE_NONE;
    if compression == Compression::Lz4 && raw.len() >= 64 {
        put_varint32(out, raw.len() as u32);
        let header = out.len() - start;
        let bound = lz4_flex::block::get_maximum_output_size(raw.len());
        out.resize(start + header + bound, 0);
        let dst = &mut out[start + header..];
        let compressed = match dict {
            // (lz4_flex's encoder reads past a dictionary under 4 bytes; the
            // sampler makes none under 32.)
            Some(d) if d.len() >= 16 => {
                lz4_flex::block::compress_into_with_dict(raw, dst, d).map(|n| (n, TYPE_LZ4_DICT))
            }
            _ => lz4_flex::block::compress_into(raw, dst).map(|n| (n, TYPE_LZ4)),
        };
        match compressed {
            Ok((n, t)) if header + n < raw.len() - raw.len() / 8 => {
                out.truncate(start + header + n);
                ty = t;
            }
            _ => out.truncate(start),
        }
    }
    if ty == TYPE_NONE {
        out.extend_from_slice(raw);
    }
    let size = out.len() - start;
    let sum = checksum.of(&out[start..], ty);
    out.push(ty);
    out.extend_from_slice(&sum.to_le_bytes());
    size
}

/// Reads the block at `handle`, checks its checksum and decompresses it
/// (with `dict`, the table's dictionary, if it was compressed with one).
pub fn read_block(
    file: &dyn File,
    path: &str,
    file_len: u64,
    handle: BlockHandle,
    checksum: Checksum,
    dict: Option<&[u8]>,
) -> Result<Bytes> {
    let corrupt = |r: String| Error::corruption(path, handle.offset, r);
    let end = handle.offset.checked_add(handle.size).and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64));
    match end {
        Some(end) if end <= file_len && handle.size <= MAX_BLOCK_LEN => {}
        _ => {
            return Err(corrupt(format!(
                "block handle {}+{} outside the file of {file_len} bytes",
                handle.offset, handle.size
            )))
        }
    }
    let mut buf = vec![0u8; handle.size as usize + BLOCK_TRAILER_LEN];
    read_exact_at(file, path, handle.offset, &mut buf)?;
    let ty = check_block(&buf, path, handle.offset, checksum)?;
    buf.truncate(handle.size as usize);
    decode_block_contents(buf, ty, dict, path, handle.offset)
}

/// Checks a block read with its trailer (`block` = contents, type byte,
/// checksum) against its checksum; returns its type byte. `path` and
/// `offset` name the block in the error.
pub fn check_block(block: &[u8], path: &str, offset: u64, checksum: Checksum) -> Result<u8> {
    let n = block.len() - BLOCK_TRAILER_LEN;
    let ty = block[n];
    let stored = decode_fixed32(&block[n + 1..]).unwrap_or(0);
    let actual = checksum.of(&block[..n], ty);
    if stored != actual {
        return Err(Error::ChecksumMismatch { file: path.to_string(), offset, expected: stored, got: actual });
    }
    Ok(ty)
}

/// Turns a block's checked contents and its type byte into the block's raw
/// bytes (decompressing if needed, with `dict` for type 2). `path` and
/// `offset` name the block in errors.
pub fn decode_block_contents(buf: Vec<u8>, ty: u8, dict: Option<&[u8]>, path: &str, offset: u64) -> Result<Bytes> {
    let corrupt = |r: String| Error::corruption(path, offset, r);
    // Only type 2 is decompressed with the dictionary; it needs one.
    let dict = match ty {
        TYPE_LZ4_DICT => {
            Some(dict.ok_or_else(|| corrupt("block compressed with a dictionary in a table that has none".into()))?)
        }
        _ => None,
    };
    match ty {
        TYPE_NONE => Ok(Bytes::from(buf)),
        TYPE_LZ4 | TYPE_LZ4_DICT => {
            let mut r = Reader::new(&buf);
            let raw_len = r.varint32().ok_or_else(|| corrupt("bad lz4 block header".into()))? as u64;
            if raw_len > MAX_BLOCK_LEN {
                return Err(corrupt(format!("lz4 block claims {raw_len} bytes")));
            }
            let mut raw = vec![0u8; raw_len as usize];
            let got = match dict {
                Some(d) => lz4_flex::block::decompress_into_with_dict(r.buf, &mut raw, d),
                None => lz4_flex::block::decompress_into(r.buf, &mut raw),
            };
            match got {
                Ok(got) if got as u64 == raw_len => Ok(Bytes::from(raw)),
                Ok(got) => Err(corrupt(format!("lz4 block gave {got} bytes, expected {raw_len}"))),
                Err(e) => Err(corrupt(format!("lz4: {e}"))),
            }
        }
        t => Err(corrupt(format!("unknown block compression type {t}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{Fs, MemFs};

    fn write(bytes: &[u8]) -> std::sync::Arc<dyn File> {
        let fs = MemFs::new();
        let f = fs.open("x", true).unwrap();
        f.append(bytes).unwrap();
        f
    }

    #[test]
    fn blocks_round_trip_with_and_without_compression() {
        let compressible = vec![b'a'; 4000];
        let random: Vec<u8> = (0..4000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8).collect();
        for raw in [&compressible[..], &random[..], b"tiny"] {
            for c in [Compression::None, Compression::Lz4] {
                let mut out = Vec::new();
                let size = frame_block(raw, c, None, Checksum::Xxh3, &mut out);
                let f = write(&out);
                let h = BlockHandle { offset: 0, size: size as u64 };
                assert_eq!(&read_block(&*f, "x", out.len() as u64, h, Checksum::Xxh3, None).unwrap()[..], raw);
            }
        }
        let mut out = Vec::new();
        let size = frame_block(&compressible, Compression::Lz4, None, Checksum::Xxh3, &mut out);
        assert!(size < 200, "lz4 did not compress a run: {size}");
    }

    #[test]
    fn blocks_compressed_with_a_dictionary_need_it() {
        let dict = b"\"name\":\"\"email\":\"@example.com\"plan\":\"free\"".repeat(8);
        let raw: Vec<u8> = (0..40)
            .flat_map(|i| format!(r#"{{"name":"n{i}","email":"u{i}@example.com","plan":"free"}}"#).into_bytes())
            .collect();
        let mut with = Vec::new();
        let size = frame_block(&raw, Compression::Lz4, Some(&dict), Checksum::Xxh3, &mut with);
        assert_eq!(with[size], TYPE_LZ4_DICT);
        let mut plain = Vec::new();
        frame_block(&raw, Compression::Lz4, None, Checksum::Xxh3, &mut plain);
        assert!(with.len() < plain.len(), "{} with the dictionary, {} without", with.len(), plain.len());
        let f = write(&with);
        let h = BlockHandle { offset: 0, size: size as u64 };
        assert_eq!(&read_block(&*f, "x", with.len() as u64, h, Checksum::Xxh3, Some(&dict)).unwrap()[..], raw);
        let r = read_block(&*f, "x", with.len() as u64, h, Checksum::Xxh3, None);
        assert!(r.is_err_and(|e| e.is_corruption() && e.to_string().contains("dictionary")));
        // Another dictionary gives other bytes or an error, never the block.
        let other = vec![b'z'; dict.len()];
        let r = read_block(&*f, "x", with.len() as u64, h, Checksum::Xxh3, Some(&other));
        assert!(r.is_err() || r.is_ok_and(|b| b[..] != raw[..]));
        // Incompressible bytes stay plain (type 0) with a dictionary too.
        let noise = crate::testutil::incompressible(0x9e37_79b9, 4000);
        let mut out = Vec::new();
        let n = frame_block(&noise, Compression::Lz4, Some(&dict), Checksum::Xxh3, &mut out);
        assert_eq!(out[n], TYPE_NONE);
    }

    #[test]
    fn every_flipped_byte_is_caught() {
        let raw: Vec<u8> = (0..500u32).map(|i| (i % 7) as u8).collect();
        for checksum in [Checksum::Crc32c, Checksum::Xxh3] {
            let mut out = Vec::new();
            let size = frame_block(&raw, Compression::Lz4, None, checksum, &mut out);
            let f = write(&out);
            let h = BlockHandle { offset: 0, size: size as u64 };
            assert_eq!(&read_block(&*f, "x", out.len() as u64, h, checksum, None).unwrap()[..], raw);
            // The other checksum does not pass for this one.
            let other = if checksum == Checksum::Xxh3 { Checksum::Crc32c } else { Checksum::Xxh3 };
            assert!(read_block(&*f, "x", out.len() as u64, h, other, None).is_err_and(|e| e.is_corruption()));
            for i in 0..out.len() {
                let mut b = out.clone();
                b[i] ^= 0x10;
                let f = write(&b);
                let r = read_block(&*f, "x", b.len() as u64, h, checksum, None);
                assert!(r.as_ref().is_err_and(|e| e.is_corruption()), "{checksum:?}: flip at {i} gave {r:?}");
            }
        }
    }

    #[test]
    fn crc32c_checksums_are_leveldbs_masked_crc() {
        // Format 1 blocks keep LevelDB's trailer: mask(crc32c(contents ++ type)).
        let sum = Checksum::Crc32c.of(b"abc", 1);
        assert_eq!(sum, mask(crc32c(b"abc\x01")));
        assert_ne!(Checksum::Xxh3.of(b"abc", 1), Checksum::Xxh3.of(b"abc", 0), "the type byte is in the checksum");
    }

    #[test]
    fn footer_round_trips_and_rejects_damage() {
        let f = Footer {
            metaindex: BlockHandle { offset: 1, size: 2 },
            index: BlockHandle { offset: 3, size: 4 },
            format_version: FORMAT_VERSION,
        };
        let b = f.encode();
        assert_eq!(b.len(), FOOTER_LEN);
        assert_eq!(Footer::decode(&b, "x", 0).unwrap(), f);
        for i in 0..b.len() {
            let mut d = b.clone();
            d[i] ^= 1;
            assert!(Footer::decode(&d, "x", 0).is_err(), "flip at {i}");
        }
    }

    #[test]
    fn a_newer_format_version_is_not_supported_not_corruption() {
        let f = Footer {
            metaindex: BlockHandle { offset: 1, size: 2 },
            index: BlockHandle { offset: 3, size: 4 },
            format_version: MAX_FORMAT_VERSION + 1,
        };
        let e = Footer::decode(&f.encode(), "000012.sst", 0).unwrap_err();
        assert!(matches!(e, Error::NotSupported(_)) && e.to_string().contains("newer version"), "{e}");
        let e = Footer::decode(&Footer { format_version: 0, ..f }.encode(), "x", 0).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        for v in MIN_FORMAT_VERSION..=MAX_FORMAT_VERSION {
            assert_eq!(Footer::decode(&Footer { format_version: v, ..f }.encode(), "x", 0).unwrap().format_version, v);
        }
    }

    #[test]
    fn handles_outside_the_file_are_corruption() {
        let f = write(&[0u8; 100]);
        let r = read_block(&*f, "x", 100, BlockHandle { offset: 90, size: 20 }, Checksum::Xxh3, None);
        assert!(matches!(r, Err(Error::Corruption { .. })));
        let r = read_block(&*f, "x", 100, BlockHandle { offset: u64::MAX - 2, size: 20 }, Checksum::Xxh3, None);
        assert!(matches!(r, Err(Error::Corruption { .. })));
    }
}
