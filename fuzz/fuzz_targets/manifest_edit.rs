#![no_main]
//! Fuzz target `manifest_edit`: see `silt_engine::fuzzing::manifest_edit`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silt_engine::fuzzing::manifest_edit(data);
});
