#![no_main]
//! Fuzz target `index`: see `silt_engine::fuzzing::index`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silt_engine::fuzzing::index(data);
});
