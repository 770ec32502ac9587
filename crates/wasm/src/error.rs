//! Errors as JavaScript values.
//!
//! The contract with `siltdb` (js/src/core/errors.ts): a thrown `Error` whose
//! `code` property is a string is an engine or binding error; `code` is
//! stable across releases, and `message` is readable text that names the
//! file and offset where that applies. Engine errors carry
//! [`Error::code`]; the binding adds its own codes (listed on [`Code`]);
//! `contract.rs` hands siltdb the list of both. A failed step of
//! background work also carries `recovery` (the engine's [`Recovery`]).

use silt_engine::{messages, Error, Failure, Recovery};
use wasm_bindgen::JsValue;

/// Codes the binding itself reports, besides the engine's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Code {
    /// A snapshot, value or iterator was used after `release()`.
    Released,
    /// A transaction's commit found that a key or range it depends on was
    /// written by someone else after its snapshot (the engine's `Busy`
    /// from `OptimisticTransaction::commit`); nothing was written.
    Conflict,
}

impl Code {
    pub(crate) const ALL: [Code; 2] = [Code::Released, Code::Conflict];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Code::Released => "Released",
            Code::Conflict => "Conflict",
        }
    }
}

/// An error on its way to JavaScript: a stable code and a message, and for
/// a failed step of background work what it means for the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BindingError {
    pub code: &'static str,
    pub message: String,
    pub recovery: Option<Recovery>,
}

impl BindingError {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Self {
        BindingError { code: code.as_str(), message: message.into(), recovery: None }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::from(Error::InvalidArgument(message.into()))
    }
}

impl From<Error> for BindingError {
    fn from(err: Error) -> Self {
        let code = err.code();
        let message = in_javascript_words(&err).unwrap_or_else(|| err.to_string());
        BindingError { code, message, recovery: None }
    }
}

/// The engine's errors whose fix names an option (`messages`), restated
/// with JavaScript's option and the next step: a JavaScript user never
/// sees a Rust name.
fn in_javascript_words(err: &Error) -> Option<String> {
    match err {
        Error::InvalidArgument(m) if m == messages::MERGE_NEEDS_OPERATOR => Some(
            "invalid argument: merge() needs a merge operator, and this database was opened without one: \
             open it with { mergeOperator: 'u64add' } (8-byte counters: u64(n)) or { mergeOperator: 'append' }"
                .into(),
        ),
        Error::NotSupported(m) if m == messages::READ_NEEDS_OPERATOR => Some(
            "not supported: this key holds merge operands, and the database was opened without a mergeOperator: \
             open it with the mergeOperator it was written with ('u64add' or 'append')"
                .into(),
        ),
        Error::InvalidArgument(m) if m == messages::IMPORT_NOT_EMPTY => Some(
            "invalid argument: import() fills an empty database, and this one is not empty: \
             importDatabase(name, source) makes a new one (removeDatabase(name) first to replace one)"
                .into(),
        ),
        Error::InvalidArgument(m) if m.starts_with(messages::BAD_OPERAND) && m.contains("u64add") => {
            Some(format!("invalid argument: {m}: an operand of mergeOperator 'u64add' is 8 bytes, made with u64(n)"))
        }
        _ => None,
    }
}

impl From<Failure> for BindingError {
    fn from(f: Failure) -> Self {
        BindingError { recovery: Some(f.recovery), ..BindingError::from(f.error) }
    }
}

impl From<BindingError> for JsValue {
    /// REQUIRES: running on wasm32 with the JS glue (it calls into
    /// JavaScript).
    fn from(err: BindingError) -> JsValue {
        let js = js_sys::Error::new(&err.message);
        // Setting a property on a fresh, unfrozen Error cannot fail.
        let _ = js_sys::Reflect::set(&js, &JsValue::from_str("code"), &JsValue::from_str(err.code));
        if let Some(r) = err.recovery {
            let _ = js_sys::Reflect::set(&js, &JsValue::from_str("recovery"), &JsValue::from_str(r.name()));
        }
        js.into()
    }
}

pub(crate) type JsResult<T> = Result<T, JsValue>;

/// Converts an engine error into a JavaScript `Error` with a `code`.
#[cfg(target_arch = "wasm32")]
pub(crate) fn to_js(err: Error) -> JsValue {
    BindingError::from(err).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_errors_keep_their_stable_code_and_display_text() {
        let err = BindingError::from(Error::Closed("the database was closed".to_string()));
        assert_eq!(err.code, "Closed");
        assert!(err.message.contains("the database was closed"), "{}", err.message);
        assert_eq!(BindingError::invalid("key too large").code, "InvalidArgument");
    }

    #[test]
    fn errors_whose_fix_names_an_option_say_it_in_javascripts_words() {
        for (err, option) in [
            (Error::InvalidArgument(messages::MERGE_NEEDS_OPERATOR.into()), "{ mergeOperator: 'u64add' }"),
            (Error::NotSupported(messages::READ_NEEDS_OPERATOR.into()), "mergeOperator it was written with"),
        ] {
            let code = err.code();
            let b = BindingError::from(err);
            assert_eq!(b.code, code);
            assert!(b.message.contains(option), "{}", b.message);
            assert!(!b.message.contains("merge_operator") && !b.message.contains("Options::"), "{}", b.message);
        }
        let operand =
            BindingError::from(Error::InvalidArgument(format!("{} u64add operator: 4 bytes", messages::BAD_OPERAND)));
        assert!(operand.message.ends_with("made with u64(n)"), "{}", operand.message);
        // Other messages pass as the engine wrote them.
        let other = BindingError::from(Error::InvalidArgument("merge needs more".into()));
        assert_eq!(other.message, "invalid argument: merge needs more");
    }

    #[test]
    fn binding_codes_are_their_names_and_not_the_engines() {
        assert_eq!(BindingError::new(Code::Released, "x").code, "Released");
        for c in Code::ALL {
            assert!(!Error::CODES.contains(&c.as_str()), "{c:?} is an engine code too");
        }
    }

    #[test]
    fn a_background_failure_keeps_its_recovery() {
        let f = Failure {
            error: Error::QuotaExceeded { file: "f".into(), message: "m".into() },
            recovery: Recovery::FailAlone,
        };
        let err = BindingError::from(f);
        assert_eq!((err.code, err.recovery), ("QuotaExceeded", Some(Recovery::FailAlone)));
    }
}
