//! RocksDB through the `rocksdb` crate, configured like Silt (feature
//! `rocksdb`; never built in CI).

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, ReadOptions, WriteBatch, WriteOptions, DB};

use crate::engines::{BenchDb, EngineOptions, Res};

pub struct Rocks {
    db: DB,
    opts: Options,
    sync: bool,
}

impl Rocks {
    pub fn open(o: &EngineOptions) -> Res<Rocks> {
        if o.fresh {
            let _ = DB::destroy(&Options::default(), &o.path);
        }
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_compression_type(if o.compression_lz4 { DBCompressionType::Lz4 } else { DBCompressionType::None });
        opts.set_write_buffer_size(o.write_buffer_size);
        opts.set_target_file_size_base(o.target_file_size_base);
        opts.set_max_bytes_for_level_base(o.max_bytes_for_level_base);
        opts.set_level_compaction_dynamic_level_bytes(true);
        opts.set_disable_auto_compactions(o.disable_auto_compactions);
        opts.enable_statistics();
        let mut t = BlockBasedOptions::default();
        t.set_block_size(o.block_size);
        if o.block_restart_interval != 0 {
            t.set_block_restart_interval(o.block_restart_interval as i32);
        }
        if o.data_block_hash_index == Some(true) {
            t.set_data_block_index_type(rocksdb::DataBlockIndexType::BinaryAndHash);
        }
        if o.bloom_bits > 0 {
            t.set_bloom_filter(f64::from(o.bloom_bits), false);
        }
        t.set_block_cache(&Cache::new_lru_cache(o.cache_size));
        t.set_format_version(5);
        opts.set_block_based_table_factory(&t);
        // Opened with the default column family named, so that cf_handle()
        // finds it (batched_multi_get_cf and delete_range_cf need it).
        // (open_cf would give that family default options: no filter, no cache.)
        let cf = rocksdb::ColumnFamilyDescriptor::new("default", opts.clone());
        let db = DB::open_cf_descriptors(&opts, &o.path, vec![cf]).map_err(|e| e.to_string())?;
        Ok(Rocks { db, opts, sync: o.sync })
    }
}

impl BenchDb for Rocks {
    fn name(&self) -> &'static str {
        "rocksdb"
    }

    fn write(&self, batch: &[(Vec<u8>, Vec<u8>)]) -> Res<()> {
        let mut b = WriteBatch::default();
        for (k, v) in batch {
            b.put(k, v);
        }
        let mut w = WriteOptions::default();
        w.set_sync(self.sync);
        self.db.write_opt(b, &w).map_err(|e| e.to_string())
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Res<()> {
        let cf = self.db.cf_handle("default").ok_or("no default column family")?;
        let mut w = WriteOptions::default();
        w.set_sync(self.sync);
        self.db.delete_range_cf_opt(&cf, start, end, &w).map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Res<Option<usize>> {
        Ok(self.db.get_pinned(key).map_err(|e| e.to_string())?.map(|v| v.len()))
    }

    fn multi_get(&self, keys: &[Vec<u8>], batched: bool) -> Res<(usize, usize)> {
        let (mut found, mut bytes) = (0, 0);
        if batched {
            let cf = self.db.cf_handle("default").ok_or("no default column family")?;
            for r in self.db.batched_multi_get_cf(&cf, keys, false) {
                if let Some(v) = r.map_err(|e| e.to_string())? {
                    found += 1;
                    bytes += v.len();
                }
            }
        } else {
            for k in keys {
                if let Some(n) = self.get(k)? {
                    found += 1;
                    bytes += n;
                }
            }
        }
        Ok((found, bytes))
    }

    fn use_snapshot(&self, explicit: bool, _auto_refresh: bool) -> Res<()> {
        if explicit {
            // The crate's snapshot borrows the DB; PR 13354's comparison is
            // Silt against itself, so the RocksDB side is not wired up.
            return Err("--explicit-snapshot is implemented for --engine silt only".into());
        }
        Ok(())
    }

    fn seek(&self, key: &[u8], nexts: usize) -> Res<(usize, usize)> {
        let mut it = self.db.raw_iterator_opt(ReadOptions::default());
        it.seek(key);
        let (mut n, mut bytes) = (0, 0);
        while it.valid() && n <= nexts {
            bytes += it.key().map_or(0, |k| k.len()) + it.value().map_or(0, |v| v.len());
            n += 1;
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        Ok((n, bytes))
    }

    fn scan(&self, limit: u64) -> Res<(u64, u64)> {
        let mut it = self.db.raw_iterator_opt(ReadOptions::default());
        it.seek_to_first();
        let (mut n, mut bytes) = (0u64, 0u64);
        while it.valid() && n < limit {
            bytes += (it.key().map_or(0, |k| k.len()) + it.value().map_or(0, |v| v.len())) as u64;
            n += 1;
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        Ok((n, bytes))
    }

    fn compact(&self) -> Res<()> {
        self.db.flush().map_err(|e| e.to_string())?;
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        self.settle()
    }

    fn settle(&self) -> Res<()> {
        self.db.flush().map_err(|e| e.to_string())?;
        while self.db.property_int_value("rocksdb.compaction-pending").ok().flatten().unwrap_or(0) > 0
            || self.db.property_int_value("rocksdb.num-running-compactions").ok().flatten().unwrap_or(0) > 0
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Ok(())
    }

    fn statistics(&self) -> String {
        self.opts.get_statistics().unwrap_or_default()
    }

    fn shape(&self) -> String {
        (0..7)
            .map(|l| {
                self.db
                    .property_value(format!("rocksdb.num-files-at-level{l}").as_str())
                    .ok()
                    .flatten()
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join(",")
            .to_string()
    }
}
