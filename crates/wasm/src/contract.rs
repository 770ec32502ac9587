//! The contract between this crate and siltdb's TypeScript, written once:
//! the exchange buffer's offsets, the bits `backgroundWork` returns, the
//! pooled files each kind of call needs free, every error code a call can
//! throw, and the recoveries a failed background step can carry.
//!
//! siltdb reads it once, when the module loads (`js/src/boundary/contract.ts`), and
//! uses these numbers instead of its own; `js/test/contract.test.ts` checks
//! that its `SiltErrorCode` union and recovery names are exactly these, so
//! neither side can change alone. Returned as JSON text: one crossing, and
//! natively testable.

use silt_engine::{Error, Recovery};
use wasm_bindgen::prelude::*;

use crate::database::{BACKGROUND_RESERVE, DID_WORK, OPEN_RESERVE, WAITING_FOR_POOL, WORK_LEFT, WRITE_RESERVE};
use crate::error::Code;
use crate::exchange::{HANDLES, OUT0, OUT1, RELEASES, RELEASE_SLOTS, REQUEST};
use crate::results::ABSENT;

/// The contract as JSON (see the module doc for what it holds).
#[wasm_bindgen(js_name = contract)]
pub fn contract_json() -> String {
    let list = |items: &mut dyn Iterator<Item = &str>| items.map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(",");
    let codes = list(&mut Error::CODES.iter().copied().chain(Code::ALL.iter().map(|c| c.as_str())));
    let recoveries = list(&mut Recovery::ALL.iter().map(|r| r.name()));
    format!(
        concat!(
            "{{\"exchange\":{{\"releases\":{},\"out0\":{},\"out1\":{},\"handles\":{},\"releaseSlots\":{},\"request\":{},\"absent\":{}}},",
            "\"work\":{{\"didWork\":{},\"workLeft\":{},\"waitingForPool\":{}}},",
            "\"poolNeeds\":{{\"write\":{},\"background\":{},\"open\":{}}},",
            "\"errorCodes\":[{}],\"recoveries\":[{}]}}"
        ),
        RELEASES,
        OUT0,
        OUT1,
        HANDLES,
        RELEASE_SLOTS,
        REQUEST,
        ABSENT,
        DID_WORK,
        WORK_LEFT,
        WAITING_FOR_POOL,
        WRITE_RESERVE,
        BACKGROUND_RESERVE,
        OPEN_RESERVE,
        codes,
        recoveries,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_is_json_with_every_number_and_name() {
        let c = contract_json();
        for part in [
            "\"exchange\":{\"releases\":0,\"out0\":4,\"out1\":8,\"handles\":16,\"releaseSlots\":60,\"request\":256,\"absent\":4294967295}",
            "\"work\":{\"didWork\":1,\"workLeft\":2,\"waitingForPool\":4}",
            "\"poolNeeds\":{\"write\":2,\"background\":4,\"open\":2}",
            "\"recoveries\":[\"retryLater\",\"failAlone\",\"stopWrites\"]",
            "\"PoolExhausted\"",
            "\"Released\"",
        ] {
            assert!(c.contains(part), "{part} is not in {c}");
        }
        assert!(c.starts_with('{') && c.ends_with('}'));
        // One code per engine error kind and per binding code, none twice.
        let codes = c.split("\"errorCodes\":[").nth(1).and_then(|r| r.split(']').next()).unwrap();
        let n = codes.split(',').count();
        assert_eq!(n, Error::CODES.len() + Code::ALL.len());
    }

    #[test]
    fn the_request_starts_after_the_release_slots() {
        assert_eq!(REQUEST, HANDLES + 4 * RELEASE_SLOTS);
    }
}
