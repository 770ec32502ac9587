//! Engine errors as JavaScript values.
//!
//! The contract with `siltdb` (js/src/errors.ts): a thrown `Error` whose
//! `code` property is a string is an engine error; `code` is
//! [`Error::code`], stable across releases, and `message` is the engine's
//! `Display` text, which names the file and offset where that applies.

use silt_engine::Error;
use wasm_bindgen::JsValue;

/// The `code` and `message` an engine error carries across the boundary.
pub(crate) fn js_error_fields(err: &Error) -> (&'static str, String) {
    (err.code(), err.to_string())
}

/// Converts an engine error into a JavaScript `Error` with a `code`.
///
/// REQUIRES: running on wasm32 with the JS glue (it calls into JavaScript).
pub(crate) fn to_js(err: Error) -> JsValue {
    let (code, message) = js_error_fields(&err);
    let js = js_sys::Error::new(&message);
    // Setting a property on a fresh, unfrozen Error object cannot fail.
    let _ = js_sys::Reflect::set(&js, &JsValue::from_str("code"), &JsValue::from_str(code));
    js.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_carry_the_stable_code_and_the_display_text() {
        let err = Error::Closed("the database was closed".to_string());
        let (code, message) = js_error_fields(&err);
        assert_eq!(code, "Closed");
        assert!(message.contains("the database was closed"), "{message}");

        let err = Error::InvalidArgument("key too large".to_string());
        assert_eq!(js_error_fields(&err).0, "InvalidArgument");
    }
}
