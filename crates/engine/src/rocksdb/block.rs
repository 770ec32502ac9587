//! RocksDB's block layout (table/block_based/block_builder.cc): entries
//! whose keys share a prefix with the previous key, a restart point every
//! `restart_interval` entries (where the whole key is stored), the restart
//! offsets as fixed32s, and their count last (its top bit says whether a
//! data block hash index sits before it). Index blocks of tables that say
//! so (`rocksdb.index.value.is.delta.encoded`) leave out the value length
//! and store a block handle whole at restart points and as a size delta
//! elsewhere. Layouts in docs/format.md ("RocksDB tables").

use super::BlockHandle;
use crate::error::{Error, Result};
use crate::format::coding::{decode_fixed32, put_fixed32, put_varint32, Reader};

/// Builds one block in RocksDB's layout.
pub(super) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    interval: usize,
    counter: usize,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    pub(super) fn new(interval: usize) -> Self {
        BlockBuilder { buf: Vec::new(), restarts: vec![0], interval: interval.max(1), counter: 0, last_key: Vec::new() }
    }

    /// Appends an entry; keys must come in the table's order.
    pub(super) fn add(&mut self, key: &[u8], value: &[u8]) {
        let mut shared = 0;
        if self.counter < self.interval {
            shared = self.last_key.iter().zip(key).take_while(|(a, b)| a == b).count();
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key.len() - shared) as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.counter += 1;
    }

    pub(super) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The block's size if it were finished now.
    pub(super) fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// The block's bytes (binary search only: no hash index); the builder
    /// starts over empty.
    pub(super) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for &r in &self.restarts {
            put_fixed32(&mut out, r);
        }
        put_fixed32(&mut out, self.restarts.len() as u32);
        self.restarts = vec![0];
        self.counter = 0;
        self.last_key.clear();
        out
    }
}

fn bad(what: &str) -> Error {
    Error::corruption("RocksDB table", 0, format!("a malformed block: {what}"))
}

/// Where a block's entries end and where each restart point is.
fn layout(block: &[u8]) -> Result<(usize, Vec<usize>)> {
    let n = block.len();
    let packed =
        block.get(n.wrapping_sub(4)..).and_then(decode_fixed32).ok_or_else(|| bad("shorter than its footer"))?;
    let restarts = (packed & 0x7fff_ffff) as usize;
    let mut end = n - 4;
    if packed >> 31 == 1 {
        // A data block hash index (kDataBlockBinaryAndHash): one byte per
        // bucket and their count (fixed16) between the restarts and the
        // footer. Reads here are sequential: it is skipped.
        let buckets = block.get(end.wrapping_sub(2)..end).ok_or_else(|| bad("no room for its hash index"))?;
        let buckets = u16::from_le_bytes([buckets[0], buckets[1]]) as usize;
        end = end.checked_sub(2 + buckets).ok_or_else(|| bad("a hash index larger than the block"))?;
    }
    let start =
        restarts.checked_mul(4).and_then(|r| end.checked_sub(r)).ok_or_else(|| bad("more restart points than room"))?;
    if restarts == 0 && start != 0 {
        return Err(bad("entries without a restart point"));
    }
    let offsets =
        (0..restarts).map(|i| decode_fixed32(&block[start + 4 * i..]).unwrap_or(u32::MAX) as usize).collect::<Vec<_>>();
    if offsets.iter().any(|&o| o > start) || offsets.first().is_some_and(|&o| o != 0) {
        return Err(bad("a restart point outside its entries"));
    }
    Ok((start, offsets))
}

/// Charges `n` decoded bytes to `budget` (what a table may decode to in
/// all: a key shared by many entries is copied whole for each, so a
/// small damaged or hostile block could otherwise decode to gigabytes).
pub(super) fn charge(budget: &mut u64, n: usize) -> Result<()> {
    *budget = budget.checked_sub(n as u64).ok_or_else(|| {
        Error::NotSupported(
            "a RocksDB table whose entries decode to more bytes than Silt reads from one table \
             (16 times its size, plus 256 MiB): split it into smaller tables"
                .into(),
        )
    })?;
    Ok(())
}

/// Walks a block's entries: for each, its whole key, how many bytes it
/// shares with the previous one, its value length (where entries have one:
/// `value_len`), and the reader at its value, which `each` reads.
pub(super) fn walk<'a>(
    block: &'a [u8],
    value_len: bool,
    mut each: impl FnMut(&[u8], u32, Option<u32>, &mut Reader<'a>) -> Result<()>,
) -> Result<()> {
    let (end, restarts) = layout(block)?;
    let mut key: Vec<u8> = Vec::new();
    let mut r = Reader::new(&block[..end]);
    let mut next_restart = 0;
    while !r.is_empty() {
        let at = end - r.buf.len();
        let restart = restarts.get(next_restart) == Some(&at);
        if restart {
            next_restart += 1;
        }
        let (Some(shared), Some(non_shared)) = (r.varint32(), r.varint32()) else {
            return Err(bad("a truncated entry header"));
        };
        let len = if value_len { Some(r.varint32().ok_or_else(|| bad("a truncated entry header"))?) } else { None };
        if shared as usize > key.len() || (restart && shared != 0) {
            return Err(bad("a key sharing more than the previous key has"));
        }
        key.truncate(shared as usize);
        key.extend_from_slice(r.bytes(non_shared as usize).ok_or_else(|| bad("a truncated key"))?);
        each(&key, shared, len, &mut r)?;
    }
    Ok(())
}

/// Every entry of a block, in order, with its whole key; the keys' and
/// values' bytes charged to `budget`.
pub(super) fn entries<'a>(block: &'a [u8], budget: &mut u64) -> Result<Vec<(Vec<u8>, &'a [u8])>> {
    let mut out = Vec::new();
    walk(block, true, |key, _, len, r| {
        let value = r.bytes(len.unwrap_or(0) as usize).ok_or_else(|| bad("a truncated value"))?;
        charge(budget, key.len() + value.len())?;
        out.push((key.to_vec(), value));
        Ok(())
    })?;
    Ok(out)
}

/// Every entry of an index block whose values are delta encoded
/// (block_builder.cc): an entry whose key shares bytes with the previous
/// one holds the zigzag varint of its block's size change (the block
/// follows the previous one and its trailer); any other (each restart
/// point, and any key sharing nothing) holds a whole handle.
pub(super) fn delta_index_entries(block: &[u8], budget: &mut u64) -> Result<Vec<(Vec<u8>, BlockHandle)>> {
    let mut out: Vec<(Vec<u8>, BlockHandle)> = Vec::new();
    walk(block, false, |key, shared, _, r| {
        let handle = match out.last() {
            Some((_, prev)) if shared != 0 => {
                let delta = r.varint64().ok_or_else(|| bad("a truncated size delta"))?;
                // A zigzag-encoded signed varint (util/coding.h's PutVarsignedint64).
                let delta = ((delta >> 1) as i64) ^ -((delta & 1) as i64);
                let size = (prev.size as i64)
                    .checked_add(delta)
                    .filter(|s| *s >= 0)
                    .ok_or_else(|| bad("a negative block size"))?;
                let offset =
                    prev.offset.checked_add(prev.size).and_then(|o| o.checked_add(super::BLOCK_TRAILER_LEN as u64));
                BlockHandle { offset: offset.ok_or_else(|| bad("a block past any file's end"))?, size: size as u64 }
            }
            _ => BlockHandle::decode(r).ok_or_else(|| bad("a truncated block handle"))?,
        };
        charge(budget, key.len() + 16)?;
        out.push((key.to_vec(), handle));
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_back_with_their_keys_whole() {
        let mut b = BlockBuilder::new(3);
        let keys: Vec<Vec<u8>> = (0..10).map(|i| format!("key{i:03}").into_bytes()).collect();
        for (i, k) in keys.iter().enumerate() {
            b.add(k, format!("v{i}").as_bytes());
        }
        let block = b.finish();
        let got = entries(&block, &mut u64::MAX.clone()).unwrap();
        assert_eq!(got.len(), 10);
        for (i, (k, v)) in got.iter().enumerate() {
            assert_eq!(k, &keys[i]);
            assert_eq!(*v, format!("v{i}").as_bytes());
        }
        // Restart points every 3 entries: 0, 3, 6, 9.
        assert_eq!(decode_fixed32(&block[block.len() - 4..]), Some(4));
    }

    #[test]
    fn damaged_blocks_are_refused_not_misread() {
        let mut b = BlockBuilder::new(16);
        b.add(b"abc", b"1");
        b.add(b"abd", b"2");
        let block = b.finish();
        for cut in 0..block.len() {
            let _ = entries(&block[..cut], &mut u64::MAX.clone());
        }
        let mut bad_count = block.clone();
        let n = bad_count.len();
        bad_count[n - 4..].copy_from_slice(&1000u32.to_le_bytes());
        assert!(entries(&bad_count, &mut u64::MAX.clone()).is_err());
    }

    /// A key shared by many entries is copied whole for each: what a
    /// block may decode to is bounded.
    #[test]
    fn a_block_decoding_to_more_than_its_budget_is_refused() {
        let mut b = BlockBuilder::new(1 << 20);
        let long = vec![b'k'; 10_000];
        for i in 0..100u32 {
            let mut k = long.clone();
            k.extend_from_slice(&i.to_be_bytes());
            b.add(&k, b"");
        }
        let block = b.finish();
        assert!(block.len() < 20_000);
        assert_eq!(entries(&block, &mut 2_000_000).unwrap().len(), 100);
        assert!(matches!(entries(&block, &mut 500_000), Err(Error::NotSupported(_))));
    }
}
