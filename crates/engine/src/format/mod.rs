//! Byte-level building blocks shared by every on-disk format: varints and
//! fixed-width integers, the one checksum (masked CRC32C), internal keys.

pub mod checksum;
pub mod coding;
pub mod key;
pub mod key_prefix;
