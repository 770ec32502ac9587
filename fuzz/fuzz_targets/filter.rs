#![no_main]
//! Fuzz target `filter`: see `silt_engine::fuzzing::filter`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silt_engine::fuzzing::filter(data);
});
