//! The `migration` image's case (`tests/migration.rs`): a task's
//! utilization moves with it.

use crate::test::Case;

/// The case of `tests/migration.rs`.
pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("migration-keeps-util", "migration")
            .icount()
            .cpus(3)
            .contains("migration: util_avg"),
    ]
}
