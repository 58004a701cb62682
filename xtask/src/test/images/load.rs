//! The `load` image's case (`tests/load.rs`): 1000 tasks on 8 CPUs.

use crate::test::Case;

/// The case of `tests/load.rs`.
pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("load-1000-tasks-8-cpus", "load")
            .icount()
            .cpus(8)
            .timeout(300)
            .contains("load: 1000/1000 tasks finished on 8 CPUs"),
    ]
}
