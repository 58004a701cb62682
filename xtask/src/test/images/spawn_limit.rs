//! The `spawn_limit` image's case (`tests/spawn_limit.rs`): every task
//! slot in use, and the limits refused.

use crate::test::Case;

/// The case of `tests/spawn_limit.rs`.
pub(crate) fn cases() -> Vec<Case> {
    vec![
        // Without load balancing: with it, spawning 10,003 tasks takes ~95 s of
        // QEMU time instead of ~10 s, because each balance pass scans every task
        // a run queue owns, asleep or not (`scheduling::balance::candidates`; Linux
        // scans only the queued ones, at most `sched_nr_migrate`). The limit is
        // what this case checks.
        Case::new("spawn-limit", "spawn_limit")
            .append("balance=0")
            .timeout(120)
            .contains("too many tasks: all 10004 task slots are in use")
            .contains("invalid argument: nice = 20 is outside -20..=19")
            .contains("spawn_limit: all 10003 tasks ran"),
    ]
}
