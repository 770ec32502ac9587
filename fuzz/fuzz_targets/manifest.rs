#![no_main]
//! Fuzz target `manifest`: see `silt_engine::fuzzing::manifest`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silt_engine::fuzzing::manifest(data);
});
