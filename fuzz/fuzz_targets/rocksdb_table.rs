#![no_main]
//! Fuzz target `rocksdb_table`: see `silt_engine::fuzzing::rocksdb_table`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silt_engine::fuzzing::rocksdb_table(data);
});
