//! The `fairway` kernel's cases (the image `src/main.rs` builds: its
//! workloads, boot options and boards), one file per area; then the test
//! command's checks that are not QEMU cases: traces, rt-app's logs, the
//! board runner's rehearsal and the lab sheets.

pub(crate) mod agreement;
pub(crate) mod bandwidth;
pub(crate) mod boards;
pub(crate) mod bootargs;
pub(crate) mod eas;
pub(crate) mod fairness;
pub(crate) mod groups;
pub(crate) mod replay;
pub(crate) mod rtapp;
pub(crate) mod workloads;

pub(crate) mod board_runner;
pub(crate) mod labs;
pub(crate) mod rtapp_log_checks;
pub(crate) mod trace_checks;
