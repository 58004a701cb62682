//! Utilization clamping (uclamp): per-task and per-group requests, effective
//! values, per-run-queue buckets with max aggregation, and the clamped
//! utilization that frequency selection and fitness read (facts §3).
//!
//! ```text
//!   TaskParams.uclamp_min/max ──► request (UclampRequest, RT default boost)
//!                                   │  restricted by the task's group, limited by
//!                                   ▼  the system defaults            (effective)
//!   enqueue ──► uclamp_rq_inc ──► buckets[bucket_id(value)] ──► run-queue value
//!   dequeue ──► uclamp_rq_dec ──┘        (max aggregation, idle holding) (buckets)
//!                                                     │
//!   schedutil / util_fits_cpu ◄── clamped utilization ┘                 (util)
//! ```
//!
//! Clamp values are capacity units in `0..=1024` ([`SCHED_CAPACITY_SCALE`]).

pub mod buckets;
pub mod effective;
pub mod request;
pub mod util;

pub use buckets::{
    TaskClamp, TaskClamps, UCLAMP_BUCKETS, UCLAMP_BUCKETS_MAX, UCLAMP_BUCKETS_MIN, UclampRunQueue,
    uclamp_bucket_delta, uclamp_bucket_id,
};
pub use effective::{GroupUclamp, percent_to_util, uclamp_eff_get, uclamp_tg_restrict};
pub use request::{
    ClampId, ClampRequest, SCHED_CAPACITY_SCALE, UclampRequest, UclampSysctl, uclamp_none,
    validate_uclamp,
};
pub use util::{CpuFit, fits_capacity, uclamp_rq_util_with, util_fits_cpu};
