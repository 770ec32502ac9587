//! Reads a table: footer, index and filter at open; data blocks through the
//! block cache.

use std::sync::Arc;

use bytes::Bytes;

use super::block::{Block, BlockOrigin};
use super::builder::{META_COMPRESSION_DICT, META_FILTER, META_PROPERTIES, META_RANGE_DEL};
use super::filter::BloomFilter;
use super::flat_index::FlatIndex;
use super::format::{read_block, BlockHandle, Checksum, Footer, FOOTER_LEN};
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::format::key::{self, SequenceNumber};
use crate::fs::{read_exact_at, File};
use crate::iter::InternalIterator;
use crate::range_del::{FragmentedTombstones, Tombstone};
use crate::read::GetContext;
use crate::stats::{Statistics, Ticker};

/// An open table. Shared by every reader of the file.
pub struct Table {
    file: Arc<dyn File>,
    path: Arc<str>,
    number: u64,
    file_len: u64,
    /// How its blocks are checksummed (by its format version).
    checksum: Checksum,
    index: FlatIndex,
    filter: Option<BloomFilter>,
    tombstones: Option<Arc<FragmentedTombstones>>,
    /// Where the properties block is (checked when the table was opened).
    properties: Option<BlockHandle>,
    /// The compression dictionary its data blocks were compressed with, if
    /// any. Held by the reader from open on, with the index and filter
    /// (RocksDB's case of meta-blocks not kept in the block cache: Silt
    /// keeps none there), so no data block read waits for it.
    dict: Option<Bytes>,
    cache: Arc<BlockCache>,
    stats: Arc<Statistics>,
}

/// One key of a batched lookup: its seek key, filter hash and context.
pub struct BatchKey<'a> {
    pub user_key: &'a [u8],
    pub seek: key::LookupKey,
    pub hash: u64,
    pub ctx: GetContext<'a>,
}

/// Counts of one block read, for lookups that report once at their end.
#[derive(Default)]
pub struct BlockReadStats {
    pub hit: u64,
    pub miss: u64,
    pub add: u64,
}

impl Table {
    /// Opens the table `number` at `path`, reading footer, index and filter.
    pub fn open(
        file: Arc<dyn File>,
        path: &str,
        number: u64,
        cache: Arc<BlockCache>,
        stats: Arc<Statistics>,
    ) -> Result<Table> {
        let file_len = file.len()?;
        if file_len < FOOTER_LEN as u64 {
            return Err(Error::corruption(path, 0, format!("file of {file_len} bytes is too short to be a table")));
        }
        let mut fbuf = [0u8; FOOTER_LEN];
        let at = file_len - FOOTER_LEN as u64;
        read_exact_at(&*file, path, at, &mut fbuf)?;
        let footer = Footer::decode(&fbuf, path, at)?;
        let checksum = Checksum::of_version(footer.format_version);
        let origin = |offset| BlockOrigin { file: Arc::from(path), offset };
        let index_block =
            Block::new(read_block(&*file, path, file_len, footer.index, checksum, None)?, origin(footer.index.offset))?;
        let index = FlatIndex::decode(&index_block, path, footer.index.offset, footer.index.offset)?;
        let meta = Block::new(
            read_block(&*file, path, file_len, footer.metaindex, checksum, None)?,
            origin(footer.metaindex.offset),
        )?;
        let mut filter = None;
        let mut tombstones = None;
        let mut properties = None;
        let mut dict = None;
        let mut it = meta.iter();
        it.seek_to_first();
        while it.valid() {
            let handle = BlockHandle::decode(it.value())
                .ok_or_else(|| Error::corruption(path, footer.metaindex.offset, "bad handle in metaindex"))?;
            match it.key() {
                META_COMPRESSION_DICT => {
                    dict = Some(read_block(&*file, path, file_len, handle, checksum, None)?);
                    stats.add(Ticker::CompressionDictBlockReads, 1);
                }
                META_FILTER => filter = BloomFilter::new(read_block(&*file, path, file_len, handle, checksum, None)?),
                META_RANGE_DEL => {
                    let block =
                        Block::new(read_block(&*file, path, file_len, handle, checksum, None)?, origin(handle.offset))?;
                    tombstones = Some(Arc::new(read_tombstones(&block, path, handle.offset)?));
                }
                META_PROPERTIES => {
                    // Read to verify its checksum; nothing in it is needed to serve reads.
                    read_block(&*file, path, file_len, handle, checksum, None)?;
                    properties = Some(handle);
                }
                _ => {}
            }
            it.next();
        }
        it.status()?;
        Ok(Table {
            file,
            path: Arc::from(path),
            number,
            file_len,
            checksum,
            index,
            filter,
            tombstones,
            properties,
            dict,
            cache,
            stats,
        })
    }

    /// The bytes of the compression dictionary its data blocks use (0: none).
    #[cfg(test)]
    pub fn dictionary_len(&self) -> usize {
        self.dict.as_ref().map_or(0, |d| d.len())
    }

    /// Checks the checksum of every data block, without decompressing or
    /// parsing any (opening the table checked the index and meta blocks):
    /// a whole table's checksums for the cost of reading it. Reads spans of
    /// adjacent blocks at once.
    pub fn verify_checksums(&self) -> Result<()> {
        const SPAN: u64 = 1 << 20;
        let trailer = super::format::BLOCK_TRAILER_LEN as u64;
        let n = self.index.len();
        let mut buf = Vec::new();
        let mut i = 0;
        while i < n {
            // Blocks i..j lie back to back (a table's data blocks do).
            let start = self.index.handle(i).offset;
            let mut end = start;
            let mut j = i;
            while j < n {
                let h = self.index.handle(j);
                let block_end = h.offset.checked_add(h.size + trailer).filter(|&e| e <= self.file_len);
                let Some(block_end) = block_end.filter(|_| h.offset == end) else {
                    if j == i {
                        return Err(Error::corruption(&*self.path, h.offset, "block handle outside the file"));
                    }
                    break;
                };
                if j > i && block_end - start > SPAN {
                    break;
                }
                end = block_end;
                j += 1;
            }
            buf.resize((end - start) as usize, 0);
            read_exact_at(&*self.file, &self.path, start, &mut buf)?;
            for b in i..j {
                let h = self.index.handle(b);
                let at = (h.offset - start) as usize;
                let block = &buf[at..at + h.size as usize + trailer as usize];
                super::format::check_block(block, &self.path, h.offset, self.checksum)?;
            }
            i = j;
        }
        Ok(())
    }

    /// A numeric property the table's builder recorded (`silt.num.entries`,
    /// `silt.smallest.seq`, ...), if the table has it.
    pub fn property(&self, name: &[u8]) -> Result<Option<u64>> {
        let Some(handle) = self.properties else { return Ok(None) };
        let origin = BlockOrigin { file: self.path.clone(), offset: handle.offset };
        let block =
            Block::new(read_block(&*self.file, &self.path, self.file_len, handle, self.checksum, None)?, origin)?;
        // A handful of entries: read in order (its keys are plain names).
        let mut it = block.iter();
        it.seek_to_first();
        while it.valid() {
            if it.key() == name {
                return Ok(crate::format::coding::decode_varint64(it.value()).map(|(v, _)| v));
            }
            it.next();
        }
        it.status()?;
        Ok(None)
    }

    /// Where the data for keys from `user_key` on starts in the file,
    /// approximately, from the index alone with no block read (RocksDB's
    /// `ApproximateOffsetOf`): the start of the data block that may hold
    /// `user_key`, or with `to_block_end` the end of that block (so that a
    /// range ending inside a block counts the block). Past the last key:
    /// the end of the data blocks.
    pub fn approximate_offset_of(&self, user_key: &[u8], to_block_end: bool) -> u64 {
        let block_end = |h: BlockHandle| h.offset + h.size + super::format::BLOCK_TRAILER_LEN as u64;
        let i = self.index.seek(&key::lookup_key(user_key, key::MAX_SEQUENCE));
        if i < self.index.len() {
            let h = self.index.handle(i);
            if to_block_end {
                block_end(h)
            } else {
                h.offset
            }
        } else {
            self.index.len().checked_sub(1).map_or(0, |last| block_end(self.index.handle(last)))
        }
    }

    /// Whether the filter allows `hash` (always true without a filter).
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain_hash(hash))
    }

    /// The table's range tombstones, fragmented (`None` if it has none).
    pub fn tombstones(&self) -> Option<&Arc<FragmentedTombstones>> {
        self.tombstones.as_ref()
    }

    /// The highest sequence number <= `read_seq` of a tombstone in this
    /// table covering `user_key` (0 if none). Independent of the filter: a
    /// filter saying "absent" says nothing about tombstones.
    pub fn max_covering_tombstone_seq(&self, user_key: &[u8], read_seq: SequenceNumber) -> SequenceNumber {
        self.tombstones.as_ref().map_or(0, |t| t.max_covering_seq(user_key, read_seq))
    }

    /// Reads (or finds in the cache) the data block at `handle`, counting
    /// into `counts`.
    pub fn data_block_counted(
        &self,
        handle: BlockHandle,
        fill_cache: bool,
        counts: &mut BlockReadStats,
    ) -> Result<Block> {
        if let Some(b) = self.cache.get(self.number, handle.offset) {
            counts.hit += 1;
            return Ok(b);
        }
        counts.miss += 1;
        let data = read_block(&*self.file, &self.path, self.file_len, handle, self.checksum, self.dict.as_deref())?;
        let block = Block::new(data, BlockOrigin { file: self.path.clone(), offset: handle.offset })?;
        if fill_cache {
            self.cache.insert(self.number, handle.offset, block.clone());
            counts.add += 1;
        }
        Ok(block)
    }

    /// Reads (or finds in the cache) the data block at `handle`, counting
    /// straight into the statistics.
    pub fn data_block(&self, handle: BlockHandle, fill_cache: bool) -> Result<Block> {
        let mut c = BlockReadStats::default();
        let r = self.data_block_counted(handle, fill_cache, &mut c);
        self.stats.add(Ticker::BlockCacheHit, c.hit);
        self.stats.add(Ticker::BlockCacheMiss, c.miss);
        self.stats.add(Ticker::BlockCacheAdd, c.add);
        r
    }

    /// Feeds the versions of the key of `seek_key` (visible at its sequence)
    /// to `ctx`, newest first, until it has its answer. `hash` is the filter
    /// hash of the user key. The caller has already added this table's
    /// covering tombstone to `ctx`. Returns whether a data block was
    /// searched (the filter let the key through and the index named a
    /// block): what read-triggered compaction charges.
    pub fn get(self: &Arc<Self>, seek_key: &[u8], hash: u64, ctx: &mut GetContext) -> Result<bool> {
        if self.filtered_out(hash, ctx) {
            return Ok(false);
        }
        self.search(seek_key, hash, ctx)
    }

    /// Whether the filter rules out the key whose filter hash is `hash`,
    /// counted into the lookup's statistics.
    pub fn filtered_out(&self, hash: u64, ctx: &mut GetContext) -> bool {
        if !self.may_contain_hash(hash) {
            ctx.stats.bloom_useful += 1;
            return true;
        }
        if self.filter.is_some() {
            ctx.stats.bloom_positive += 1;
        }
        false
    }

    /// Counts a key the filter let through as really there (the row cache
    /// found it without the search that would have counted it); with
    /// `positive`, the filter's positive too (a probe made uncounted).
    pub fn count_true_positive(&self, ctx: &mut GetContext, positive: bool) {
        if self.filter.is_some() {
            ctx.stats.bloom_positive += u64::from(positive);
            ctx.stats.bloom_true_positive += 1;
        }
    }

    /// [`Table::get`] past the filter: the index, then the data block.
    pub fn search(self: &Arc<Self>, seek_key: &[u8], hash: u64, ctx: &mut GetContext) -> Result<bool> {
        let i = self.index.seek(seek_key);
        if i == self.index.len() {
            return Ok(false);
        }
        let handle = self.index.handle(i);
        let block = self.block_for(handle, ctx)?;
        self.lookup_in_block(&block, handle, seek_key, hash, ctx).map(|()| true)
    }

    /// Looks up a batch of keys, sorted by user key, each with its own
    /// context (RocksDB's batched MultiGet within one file): the filter is
    /// probed for the whole batch, the index position is reused between
    /// close keys, and each data block is looked up once for all the keys it
    /// serves. Tombstones cover each key before its filter is consulted.
    pub fn multi_get(self: &Arc<Self>, keys: &mut [&mut BatchKey], read_seq: SequenceNumber) -> Result<()> {
        // Filter answers for up to 64 keys at a time, on the stack.
        const CHUNK: usize = 64;
        for chunk in keys.chunks_mut(CHUNK) {
            let mut may = [true; CHUNK];
            if let Some(f) = &self.filter {
                let mut hashes = [0u64; CHUNK];
                for (h, k) in hashes.iter_mut().zip(chunk.iter()) {
                    *h = k.hash;
                }
                f.may_contain_batch(&hashes[..chunk.len()], &mut may[..chunk.len()]);
            }
            self.multi_get_chunk(chunk, &may[..chunk.len()], read_seq)?;
        }
        Ok(())
    }

    fn multi_get_chunk(
        self: &Arc<Self>,
        keys: &mut [&mut BatchKey],
        may: &[bool],
        read_seq: SequenceNumber,
    ) -> Result<()> {
        // Keys come sorted: each search gallops on from the previous key's
        // entry, so close keys cost a compare or two.
        let mut from = 0;
        let mut current: Option<(BlockHandle, Block)> = None;
        for (k, &may) in keys.iter_mut().zip(may) {
            k.ctx.cover(self.max_covering_tombstone_seq(k.user_key, read_seq));
            if !may {
                k.ctx.stats.bloom_useful += 1;
                continue;
            }
            if self.filter.is_some() {
                k.ctx.stats.bloom_positive += 1;
            }
            let i = self.index.seek_from(from, &k.seek);
            from = i;
            if i == self.index.len() {
                continue;
            }
            k.ctx.searched_file(self.number);
            let handle = self.index.handle(i);
            if current.as_ref().map(|c| c.0) != Some(handle) {
                current = Some((handle, self.block_for(handle, &mut k.ctx)?));
            }
            if let Some((handle, block)) = &current {
                self.lookup_in_block(block, *handle, &k.seek, k.hash, &mut k.ctx)?;
            }
        }
        Ok(())
    }

    /// The data block at `handle`, counted into the lookup's statistics.
    fn block_for(&self, handle: BlockHandle, ctx: &mut GetContext) -> Result<Block> {
        let mut counts = BlockReadStats::default();
        let block = self.data_block_counted(handle, ctx.fill_cache, &mut counts);
        ctx.stats.cache_hit += counts.hit;
        ctx.stats.cache_miss += counts.miss;
        ctx.stats.cache_add += counts.add;
        block
    }

    /// Feeds the versions of the key of `seek_key` (whose user key's
    /// `key_hash` is `hash`) found from `block` on to `ctx`, newest first,
    /// until it has its answer.
    fn lookup_in_block(
        self: &Arc<Self>,
        block: &Block,
        handle: BlockHandle,
        seek_key: &[u8],
        hash: u64,
        ctx: &mut GetContext,
    ) -> Result<()> {
        let mut it = block.iter();
        it.seek_for_get(seek_key, hash);
        let user_key = key::user_key(seek_key);
        let mut first = true;
        let mut last_key = Vec::new();
        while it.valid() {
            let parsed = key::parse(it.key())
                .ok_or_else(|| Error::corruption(&self.path, handle.offset, "bad internal key in data block"))?;
            if parsed.user_key != user_key {
                return it.status();
            }
            if first && self.filter.is_some() {
                ctx.stats.bloom_true_positive += 1;
            }
            first = false;
            if !ctx.save_in(parsed.ty, parsed.seq, &it.value_bytes(), block.data())? {
                return Ok(());
            }
            last_key.clear();
            last_key.extend_from_slice(it.key());
            it.next();
        }
        it.status()?;
        if first {
            return Ok(());
        }
        // More versions (merge operands) continue in the next block.
        let mut ti = self.iter(ctx.fill_cache);
        ti.seek(&last_key);
        if ti.valid() && ti.key() == last_key.as_slice() {
            ti.next();
        }
        while ti.valid() {
            let parsed = key::parse(ti.key())
                .ok_or_else(|| Error::corruption(&self.path, ti.block_offset(), "bad internal key in data block"))?;
            if parsed.user_key != user_key {
                break;
            }
            let value = Bytes::copy_from_slice(ti.value());
            if !ctx.save(parsed.ty, parsed.seq, &value)? {
                return Ok(());
            }
            ti.next();
        }
        ti.status()
    }

    /// A two-level iterator over the table's entries.
    pub fn iter(self: &Arc<Self>, fill_cache: bool) -> TableIter {
        TableIter::new(self.clone(), fill_cache)
    }

    /// Walks every data block the index names, passing each entry to `f`
    /// (which returns false for an entry it refuses), and skips blocks that
    /// cannot be read or decoded. Returns the blocks skipped and the first
    /// error met. For repair: what a damaged table still holds.
    pub fn salvage(&self, mut f: impl FnMut(&[u8], &[u8]) -> bool) -> (u64, Option<Error>) {
        let (mut lost, mut first) = (0u64, None);
        for i in 0..self.index.len() {
            match self.data_block(self.index.handle(i), false) {
                Ok(b) => {
                    let mut it = b.iter();
                    it.seek_to_first();
                    let mut ok = true;
                    while it.valid() {
                        ok &= f(it.key(), it.value());
                        it.next();
                    }
                    if let Err(e) = it.status() {
                        first.get_or_insert(e);
                        ok = false;
                    }
                    lost += u64::from(!ok);
                }
                Err(e) => {
                    first.get_or_insert(e);
                    lost += 1;
                }
            }
        }
        (lost, first)
    }

    /// Reads and checks every block of the table.
    pub fn verify(self: &Arc<Self>) -> Result<u64> {
        let mut it = self.iter(false);
        let mut n = 0;
        it.seek_to_first();
        while it.valid() {
            if key::parse(it.key()).is_none() {
                return Err(Error::corruption(&self.path, it.block_offset(), "bad internal key in data block"));
            }
            n += 1;
            it.next();
        }
        it.status()?;
        Ok(n)
    }
}

/// Decodes a range-deletion block into fragments.
fn read_tombstones(block: &Block, path: &str, offset: u64) -> Result<FragmentedTombstones> {
    let mut all = Vec::new();
    let mut it = block.iter();
    it.seek_to_first();
    while it.valid() {
        let p = key::parse(it.key())
            .ok_or_else(|| Error::corruption(path, offset, "bad internal key in range-deletion block"))?;
        if p.ty != crate::format::key::ValueType::RangeDelete || p.user_key >= it.value() {
            return Err(Error::corruption(path, offset, "bad entry in range-deletion block"));
        }
        all.push(Tombstone { start: p.user_key.to_vec(), end: it.value().to_vec(), seq: p.seq });
        it.next();
    }
    it.status()?;
    Ok(FragmentedTombstones::new(&all))
}

mod iter;
#[cfg(test)]
mod tests;

pub use iter::TableIter;
