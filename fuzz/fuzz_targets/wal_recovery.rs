#![no_main]
//! Fuzz target `wal_recovery`: see `silt_engine::fuzzing::wal_recovery`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silt_engine::fuzzing::wal_recovery(data);
});
