//! Commands that measure the kernel, often beside the simulator: the
//! experiments of the issues (uclamp and group depth, bandwidth timers,
//! schedutil's call sites, EAS while overutilized), the benchmarks, and the
//! comparisons of a kernel run with the simulator's (`agree`, `compare`,
//! `judge-phases`, `replay`), which the test cases use too, and the grader
//! of a policy (`policy-check`). Below the tests,
//! above the runner (see the layers in `main.rs`).

pub mod agree;
pub mod bandwidth;
pub mod bench;
pub mod compare;
pub mod compare_policies;
pub mod cpufreq;
pub mod eas;
pub mod judge_phases;
pub mod policy_check;
pub mod replay;
pub mod uclamp_depth;
