//! The one checksum of every format: CRC32C, masked as LevelDB masks it so a
//! CRC stored inside checksummed data does not checksum to a fixed point.

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Extends `crc` with `data`.
pub fn crc32c_extend(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// The stored form of a CRC.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_crc32c_values() {
        // RFC 3720 test vectors.
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62a8_ab43);
        let ascending: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&ascending), 0x46dd_794e);
    }

    #[test]
    fn extend_equals_whole() {
        assert_eq!(crc32c_extend(crc32c(b"hello "), b"world"), crc32c(b"hello world"));
    }

    #[test]
    fn mask_round_trips_and_changes_value() {
        let c = crc32c(b"foo");
        assert_ne!(mask(c), c);
        assert_eq!(unmask(mask(c)), c);
        assert_ne!(mask(mask(c)), mask(c));
    }
}
