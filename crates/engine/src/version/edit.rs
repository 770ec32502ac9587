//! `VersionEdit`: one change to the set of files, as stored in the manifest.
//!
//! ## Format
//! An edit is a sequence of tagged fields (tags are varint32):
//! ```text
//! 1  format: length-prefixed "silt.manifest.v1" (first edit of a manifest only)
//! 2  log_number: varint64        WALs numbered below it are no longer needed
//! 3  next_file_number: varint64
//! 4  last_sequence: varint64
//! 5  deleted file: level varint32, number varint64
//! 6  new file: level varint32, number varint64, file_size varint64,
//!              smallest ikey (length-prefixed), largest ikey (length-prefixed),
//!              smallest_seq varint64, largest_seq varint64
//! ```
//! An unknown tag is corruption (a newer format must change the format name).

use crate::error::{Error, Result};
use crate::format::coding::{put_length_prefixed, put_varint32, put_varint64, Reader};

use super::NUM_LEVELS;

pub const MANIFEST_FORMAT: &[u8] = b"silt.manifest.v1";

const TAG_FORMAT: u32 = 1;
const TAG_LOG_NUMBER: u32 = 2;
const TAG_NEXT_FILE: u32 = 3;
const TAG_LAST_SEQ: u32 = 4;
const TAG_DELETED: u32 = 5;
const TAG_NEW_FILE: u32 = 6;

/// What the manifest records about a table file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileMeta {
    pub number: u64,
    pub file_size: u64,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub smallest_seq: u64,
    pub largest_seq: u64,
}

impl FileMeta {
    /// What the manifest records of table file `number`, from what its
    /// builder reported.
    pub fn of_table(number: u64, info: crate::sst::TableInfo) -> Self {
        FileMeta {
            number,
            file_size: info.file_size,
            smallest: info.smallest,
            largest: info.largest,
            smallest_seq: info.smallest_seq,
            largest_seq: info.largest_seq,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    pub has_format: bool,
    pub log_number: Option<u64>,
    pub next_file_number: Option<u64>,
    pub last_sequence: Option<u64>,
    pub deleted: Vec<(usize, u64)>,
    pub added: Vec<(usize, FileMeta)>,
}

impl VersionEdit {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::new();
        if self.has_format {
            put_varint32(&mut v, TAG_FORMAT);
            put_length_prefixed(&mut v, MANIFEST_FORMAT);
        }
        for (tag, val) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE, self.next_file_number),
            (TAG_LAST_SEQ, self.last_sequence),
        ] {
            if let Some(x) = val {
                put_varint32(&mut v, tag);
                put_varint64(&mut v, x);
            }
        }
        for &(level, number) in &self.deleted {
            put_varint32(&mut v, TAG_DELETED);
            put_varint32(&mut v, level as u32);
            put_varint64(&mut v, number);
        }
        for (level, f) in &self.added {
            put_varint32(&mut v, TAG_NEW_FILE);
            put_varint32(&mut v, *level as u32);
            put_varint64(&mut v, f.number);
            put_varint64(&mut v, f.file_size);
            put_length_prefixed(&mut v, &f.smallest);
            put_length_prefixed(&mut v, &f.largest);
            put_varint64(&mut v, f.smallest_seq);
            put_varint64(&mut v, f.largest_seq);
        }
        v
    }

    /// Decodes an edit; errors name `file` and the record's `offset`.
    pub fn decode(src: &[u8], file: &str, offset: u64) -> Result<Self> {
        let corrupt = |r: &str| Error::corruption(file, offset, format!("manifest record: {r}"));
        let mut r = Reader::new(src);
        let mut e = VersionEdit::default();
        let level = |r: &mut Reader| -> Result<usize> {
            let l = r.varint32().ok_or_else(|| corrupt("truncated level"))? as usize;
            if l >= NUM_LEVELS {
                return Err(corrupt("level out of range"));
            }
            Ok(l)
        };
        while !r.is_empty() {
            let tag = r.varint32().ok_or_else(|| corrupt("truncated tag"))?;
            let num = |r: &mut Reader| r.varint64().ok_or_else(|| corrupt("truncated number"));
            match tag {
                TAG_FORMAT => {
                    let name = r.length_prefixed().ok_or_else(|| corrupt("truncated format name"))?;
                    if name != MANIFEST_FORMAT {
                        return Err(corrupt(&format!("unknown manifest format {:?}", String::from_utf8_lossy(name))));
                    }
                    e.has_format = true;
                }
                TAG_LOG_NUMBER => e.log_number = Some(num(&mut r)?),
                TAG_NEXT_FILE => e.next_file_number = Some(num(&mut r)?),
                TAG_LAST_SEQ => e.last_sequence = Some(num(&mut r)?),
                TAG_DELETED => {
                    let l = level(&mut r)?;
                    e.deleted.push((l, num(&mut r)?));
                }
                TAG_NEW_FILE => {
                    let l = level(&mut r)?;
                    let number = num(&mut r)?;
                    let file_size = num(&mut r)?;
                    let smallest = r.length_prefixed().ok_or_else(|| corrupt("truncated smallest key"))?.to_vec();
                    let largest = r.length_prefixed().ok_or_else(|| corrupt("truncated largest key"))?.to_vec();
                    let smallest_seq = num(&mut r)?;
                    let largest_seq = num(&mut r)?;
                    if crate::format::key::parse(&smallest).is_none() || crate::format::key::parse(&largest).is_none() {
                        return Err(corrupt("bad file boundary key"));
                    }
                    e.added.push((l, FileMeta { number, file_size, smallest, largest, smallest_seq, largest_seq }));
                }
                t => return Err(corrupt(&format!("unknown tag {t}"))),
            }
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::key::{internal_key, ValueType};

    fn sample() -> VersionEdit {
        VersionEdit {
            has_format: true,
            log_number: Some(7),
            next_file_number: Some(12),
            last_sequence: Some(999),
            deleted: vec![(0, 3), (2, 4)],
            added: vec![(
                1,
                FileMeta {
                    number: 11,
                    file_size: 4096,
                    smallest: internal_key(b"a", 5, ValueType::Put),
                    largest: internal_key(b"z", 9, ValueType::Delete),
                    smallest_seq: 5,
                    largest_seq: 9,
                },
            )],
        }
    }

    #[test]
    fn round_trips() {
        let e = sample();
        assert_eq!(VersionEdit::decode(&e.encode(), "m", 0).unwrap(), e);
        assert_eq!(VersionEdit::decode(&[], "m", 0).unwrap(), VersionEdit::default());
    }

    #[test]
    fn truncations_and_garbage_are_corruption() {
        let b = sample().encode();
        for cut in 1..b.len() {
            // Every proper prefix either decodes to fewer fields or fails; it
            // never panics.
            let _ = VersionEdit::decode(&b[..cut], "m", 0);
        }
        assert!(VersionEdit::decode(&[99], "m", 0).is_err());
        let mut bad = b.clone();
        bad[2] = b'X'; // format name
        assert!(VersionEdit::decode(&bad, "m", 0).is_err());
    }
}
