#![no_main]
//! Fuzz target `block`: see `silt_engine::fuzzing::block`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silt_engine::fuzzing::block(data);
});
