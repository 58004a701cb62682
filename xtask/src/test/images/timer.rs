//! The `timer` image's cases (`tests/timer.rs`): sleeps under icount, at
//! the default HZ and at HZ 1000.

use crate::test::Case;

/// The cases of `tests/timer.rs`.
pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("timer-icount", "timer")
            .icount()
            .contains("timer: 1600 sleeps on 4 CPUs: early 0"),
        Case::new("timer-icount-hz1000", "timer")
            .icount()
            .cpus(2)
            .append("hz=1000")
            .contains("at HZ=1000"),
    ]
}
