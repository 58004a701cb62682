//! The `pipe` image's cases (`tests/pipe.rs`): pipe round trips between
//! CPUs, under icount and in real time on GICv2 at EL2.

use crate::test::Case;

/// The cases of `tests/pipe.rs`.
pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("pipe-icount", "pipe")
            .icount()
            .cpus(2)
            .contains("pipe: 10000 round trips CPU0<->CPU1, all values checked")
            .contains("pipe: context switch"),
        // Plain TCG (no icount): its wall time follows the host's load (13-17 s
        // on a busy 2-core machine, 32 s for the round trips alone once when the
        // machine ran two other QEMUs); the limit is a hang guard, not a bound.
        Case::new("pipe-gicv2-el2", "pipe")
            .cpus(4)
            .gic(2)
            .el(2)
            .timeout(180)
            .contains("all values checked"),
    ]
}
