//! The `panic` image's cases (`tests/panic.rs`): a panic fails the run,
//! also when only the verdict line carries it (PSCI's exit).

use crate::test::checks::last_exit_lines;
use crate::test::{Case, Expect};

/// The cases of `tests/panic.rs`.
pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("panic-fails", "panic")
            .expect(Expect::Failure)
            .contains("panic on CPU 0 at tests/panic.rs:")
            .contains("the deliberate panic of tests/panic.rs"),
        // Status 0 although the kernel failed: only the line carries it.
        Case::new("exit-psci-failure-verdict-on-the-line", "panic")
            .append("semihosting=0")
            .contains("the deliberate panic of tests/panic.rs")
            .check(|lines| last_exit_lines(lines, &["exit: failure"])),
    ]
}
