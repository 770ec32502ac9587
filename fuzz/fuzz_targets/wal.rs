#![no_main]
//! Fuzz target `wal`: see `silt_engine::fuzzing::wal`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silt_engine::fuzzing::wal(data);
});
