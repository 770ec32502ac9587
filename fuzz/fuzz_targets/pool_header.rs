#![no_main]
//! Fuzz target `pool_header`: the OPFS pool's file header
//! (`silt_wasm::pool::header`). Whatever decodes must survive an encode and
//! decode unchanged.
use libfuzzer_sys::fuzz_target;
use silt_wasm::pool::header::Header;

fuzz_target!(|data: &[u8]| {
    if let Some(h) = Header::decode(data) {
        assert_eq!(Header::decode(&h.encode()), Some(h), "a decoded header changed through encode and decode");
    }
});
