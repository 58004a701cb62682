//! Every QEMU case of the test command: the kernel's test images' cases
//! (`images/`, a file per `tests/NAME.rs`), then the `fairway` kernel's by
//! area (`areas/`); and the cases of `--gaps`.

use crate::test::{Case, areas, images};

/// The cases the test command runs (`--only NAME` keeps those whose name
/// contains NAME).
pub(crate) fn cases() -> Vec<Case> {
    [
        images::boot::cases(),
        images::timer::cases(),
        images::preempt::cases(),
        images::pipe::cases(),
        images::spawn_limit::cases(),
        images::panic::cases(),
        images::exception::cases(),
        images::hang::cases(),
        images::device_tree::cases(),
        images::migration::cases(),
        images::load::cases(),
        images::timeline_bench::cases(),
        areas::bootargs::cases(),
        areas::workloads::cases(),
        areas::boards::cases(),
        areas::agreement::cases(),
        areas::replay::cases(),
        areas::rtapp::cases(),
        areas::fairness::cases(),
        areas::groups::cases(),
        areas::bandwidth::cases(),
        areas::eas::cases(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The cases of what Fairway does not achieve yet (`--gaps`).
pub(crate) fn known_gaps() -> Vec<Case> {
    [
        areas::groups::known_gaps(),
        areas::eas::known_gaps(),
        areas::agreement::known_gaps(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
