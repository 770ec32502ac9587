//! The header at the start of every pooled file: which logical file the
//! pooled file holds, if any.
//!
//! ## Format
//! ```text
//! offset  size  field
//!      0     8  magic "SiltPool"
//!      8     4  format version, u32 LE = 1
//!     12     4  name length n, u32 LE; 0 = the pooled file is free
//!     16     8  generation, u64 LE: larger = written later
//!     24   512  logical path, UTF-8, n bytes then zeros
//!    536     4  masked CRC32C of bytes 0..536 (the engine's checksum)
//!    540  3556  zeros, reserved
//!   4096     …  the logical file's bytes (logical offset 0 = physical 4096)
//! ```
//! A header that is all zeros, too short, of another magic or version, or
//! whose checksum does not match, reads as a free file: a header write torn
//! by a crash loses at most the file it was naming or freeing, which is
//! what a crash during a create or remove may lose on any file system.
//! Two headers naming one path (a remove not yet durable, then a create of
//! the same path) are resolved by the generation: the larger one wins.

use silt_engine::checksum::{crc32c, mask, unmask};

/// Bytes reserved for the header; logical data starts here (a 4 KiB
/// boundary, so data blocks stay aligned as the engine wrote them).
pub const HEADER_SIZE: u64 = 4096;
/// The longest logical path a header holds, in bytes.
pub const MAX_PATH_LEN: usize = 512;

const MAGIC: &[u8; 8] = b"SiltPool";
const VERSION: u32 = 1;
const NAME_AT: usize = 24;
const CRC_AT: usize = NAME_AT + MAX_PATH_LEN;
/// The part of the header that is written and checked.
pub const ENCODED_LEN: usize = CRC_AT + 4;

/// What a header says about its pooled file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The logical path held, or `None` for a free file.
    pub path: Option<String>,
    pub generation: u64,
}

impl Header {
    /// Encodes the header (`ENCODED_LEN` bytes; the rest of the reserved
    /// area stays zero).
    ///
    /// REQUIRES: the path, if any, is 1..=`MAX_PATH_LEN` bytes.
    pub fn encode(&self) -> [u8; ENCODED_LEN] {
        let mut out = [0u8; ENCODED_LEN];
        let name = self.path.as_deref().unwrap_or("").as_bytes();
        debug_assert!(name.len() <= MAX_PATH_LEN);
        let name = &name[..name.len().min(MAX_PATH_LEN)];
        out[..8].copy_from_slice(MAGIC);
        out[8..12].copy_from_slice(&VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&(name.len() as u32).to_le_bytes());
        out[16..24].copy_from_slice(&self.generation.to_le_bytes());
        out[NAME_AT..NAME_AT + name.len()].copy_from_slice(name);
        let crc = mask(crc32c(&out[..CRC_AT]));
        out[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes a header; anything but a well-formed, checksummed header of
    /// this version is `None` (the caller treats the file as free).
    pub fn decode(bytes: &[u8]) -> Option<Header> {
        let bytes = bytes.get(..ENCODED_LEN)?;
        if &bytes[..8] != MAGIC {
            return None;
        }
        let u32_at = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        if u32_at(8) != VERSION {
            return None;
        }
        if unmask(u32_at(CRC_AT)) != crc32c(&bytes[..CRC_AT]) {
            return None;
        }
        let len = u32_at(12) as usize;
        if len > MAX_PATH_LEN {
            return None;
        }
        let mut generation = [0u8; 8];
        generation.copy_from_slice(&bytes[16..24]);
        let path = match len {
            0 => None,
            _ => Some(std::str::from_utf8(&bytes[NAME_AT..NAME_AT + len]).ok()?.to_string()),
        };
        Some(Header { path, generation: u64::from_le_bytes(generation) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(path: &str, generation: u64) -> Header {
        Header { path: Some(path.to_string()), generation }
    }

    #[test]
    fn round_trips_named_and_free_headers() {
        for h in [
            named("db/000001.log", 7),
            named(&"x".repeat(MAX_PATH_LEN), u64::MAX),
            Header { path: None, generation: 3 },
        ] {
            assert_eq!(Header::decode(&h.encode()), Some(h));
        }
    }

    #[test]
    fn layout_matches_the_documented_offsets() {
        let bytes = named("db/MANIFEST-000002", 0x0102_0304_0506_0708).encode();
        assert_eq!(&bytes[..8], b"SiltPool");
        assert_eq!(&bytes[8..12], &1u32.to_le_bytes());
        assert_eq!(&bytes[12..16], &18u32.to_le_bytes());
        assert_eq!(&bytes[16..24], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(&bytes[24..42], b"db/MANIFEST-000002");
        assert!(bytes[42..536].iter().all(|&b| b == 0));
        let crc = u32::from_le_bytes(bytes[536..540].try_into().unwrap());
        assert_eq!(unmask(crc), crc32c(&bytes[..536]));
        assert_eq!(ENCODED_LEN, 540);
    }

    #[test]
    fn any_flipped_byte_reads_as_free() {
        let good = named("db/000005.sst", 9).encode();
        for i in 0..ENCODED_LEN {
            let mut bad = good;
            bad[i] ^= 0x20;
            assert_eq!(Header::decode(&bad), None, "flip at {i} was accepted");
        }
    }

    #[test]
    fn zeros_short_input_and_other_versions_read_as_free() {
        assert_eq!(Header::decode(&[0u8; ENCODED_LEN]), None);
        assert_eq!(Header::decode(&named("a", 1).encode()[..100]), None);
        let mut v2 = named("a", 1).encode();
        v2[8] = 2;
        let crc = mask(crc32c(&v2[..CRC_AT]));
        v2[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Header::decode(&v2), None);
    }

    #[test]
    fn an_oversize_length_with_a_valid_checksum_reads_as_free() {
        let mut bytes = named("a", 1).encode();
        bytes[12..16].copy_from_slice(&(MAX_PATH_LEN as u32 + 1).to_le_bytes());
        let crc = mask(crc32c(&bytes[..CRC_AT]));
        bytes[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Header::decode(&bytes), None);
    }
}
