//! The `hang` image's case (`tests/hang.rs`): a kernel that never exits
//! ends in the runner's timeout.

use crate::test::{Case, Expect};

/// The case of `tests/hang.rs`.
pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("hang-times-out", "hang")
            .expect(Expect::Timeout)
            .timeout(3)
            .contains("hang: spinning forever"),
    ]
}
