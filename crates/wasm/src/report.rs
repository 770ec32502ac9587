//! How a report becomes the plain object a call returns to JavaScript.
//!
//! A report is declared once with [`report!`] (the declarations are in
//! `contract.rs`): a struct whose every field is paired with the name
//! JavaScript sees. The object gets exactly those properties, set from the
//! struct's named fields, so a property the declaration does not list
//! cannot be set and the compiler refuses a report with a field left out.
//! `contract()` hands the same names to siltdb, whose contract test checks
//! its TypeScript interfaces against them (js/test/contract.test.ts).

use wasm_bindgen::JsValue;

/// What a report's field can hold, and how JavaScript sees it.
pub(crate) trait FieldValue {
    /// Whether the property can be absent (an `Option`, left out when
    /// `None`): the contract writes its name `name?`.
    const OPTIONAL: bool = false;

    /// The property's value; `None` leaves the property out.
    ///
    /// REQUIRES: running on wasm32 with the JS glue (it calls into
    /// JavaScript).
    fn into_js(self) -> Option<JsValue>;
}

/// Properties whose names the engine chooses at run time (gauges, tickers,
/// histograms): an object keyed by them, in this order. Only the field
/// holding it is in the contract, not its keys.
pub(crate) type Named<T> = Vec<(&'static str, T)>;

/// Sets `object[name] = value`.
pub(crate) fn set(object: &js_sys::Object, name: &str, value: &JsValue) {
    // Setting a property on a fresh plain object cannot fail.
    let _ = js_sys::Reflect::set(object, &JsValue::from_str(name), value);
}

// Numbers cross as f64: exact up to 2^53, more than any count or byte size
// a report holds.
macro_rules! number {
    ($($t:ty),*) => {$(
        impl FieldValue for $t {
            fn into_js(self) -> Option<JsValue> {
                Some(JsValue::from_f64(self as f64))
            }
        }
    )*};
}
number!(u32, u64, usize, f64);

impl FieldValue for bool {
    fn into_js(self) -> Option<JsValue> {
        Some(JsValue::from_bool(self))
    }
}

impl FieldValue for Vec<String> {
    fn into_js(self) -> Option<JsValue> {
        Some(self.iter().map(|s| JsValue::from_str(s)).collect::<js_sys::Array>().into())
    }
}

impl<T: FieldValue> FieldValue for Named<T> {
    fn into_js(self) -> Option<JsValue> {
        let object = js_sys::Object::new();
        for (name, value) in self {
            if let Some(v) = value.into_js() {
                set(&object, name, &v);
            }
        }
        Some(object.into())
    }
}

impl<T: FieldValue> FieldValue for Option<T> {
    const OPTIONAL: bool = true;

    fn into_js(self) -> Option<JsValue> {
        self.and_then(T::into_js)
    }
}

/// Declares a report:
///
/// ```text
/// report! {
///     /// What it reports.
///     pub(crate) struct VerifyReport {
///         "tables" => tables: u64,
///         "tableBytes" => table_bytes: u64,
///     }
/// }
/// ```
///
/// gives the struct, `VerifyReport::FIELDS` (each JavaScript name with
/// whether it can be absent: what `contract()` lists), `into_object`, and
/// `From<VerifyReport> for JsValue`. A report can be another's field.
macro_rules! report {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($(#[$field_meta:meta])* $js:literal => $field:ident: $ty:ty),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
        }

        impl $name {
            /// The object's properties as JavaScript sees them, each with
            /// whether it can be absent.
            pub const FIELDS: &'static [(&'static str, bool)] =
                &[$(($js, <$ty as $crate::report::FieldValue>::OPTIONAL)),*];

            /// The plain object JavaScript gets.
            ///
            /// REQUIRES: running on wasm32 with the JS glue.
            pub fn into_object(self) -> js_sys::Object {
                let object = js_sys::Object::new();
                $(
                    if let Some(value) = $crate::report::FieldValue::into_js(self.$field) {
                        $crate::report::set(&object, $js, &value);
                    }
                )*
                object
            }
        }

        impl $crate::report::FieldValue for $name {
            fn into_js(self) -> Option<wasm_bindgen::JsValue> {
                Some(self.into_object().into())
            }
        }

        impl From<$name> for wasm_bindgen::JsValue {
            fn from(report: $name) -> Self {
                report.into_object().into()
            }
        }
    };
}

pub(crate) use report;
