#![no_main]
//! Fuzz target `export_stream`: see `silt_engine::fuzzing::export_stream`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silt_engine::fuzzing::export_stream(data);
});
