#![no_main]
//! Fuzz target `table`: see `silt_engine::fuzzing::table`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silt_engine::fuzzing::table(data);
});
