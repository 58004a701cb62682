//! The `exception` image's case (`tests/exception.rs`): an unexpected
//! exception is reported with its syndrome and addresses.

use crate::test::{Case, Expect};

/// The case of `tests/exception.rs`.
pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("exception-reported", "exception")
            .expect(Expect::Failure)
            .contains("unexpected synchronous exception from EL1 on CPU 0: ESR=0xf2000042 (EC=0x3c: BRK) FAR=")
            .contains("ELR="),
    ]
}
