//! Per-run-queue clamp buckets and their max aggregation, with idle holding
//! (`struct uclamp_rq`, `uclamp_rq_inc`/`uclamp_rq_dec`, facts §3.1, §3.2).
//!
//! ```text
//!  value:   0 ──── 204 │ 205 ── 409 │ 410 ── 614 │ 615 ── 819 │ 820 ── 1024
//!  bucket:      0      │      1     │      2     │      3     │      4
//!           {value, tasks} per bucket; run-queue value = value of the
//!           highest bucket with tasks (each bucket keeps a local max)
//! ```
//!
//! Storage is a fixed array of [`UCLAMP_BUCKETS_MAX`] buckets per clamp; nothing
//! allocates, and inc/dec are O(1) plus a scan of at most 20 buckets when the
//! top bucket empties.

use super::request::{ClampId, SCHED_CAPACITY_SCALE, uclamp_none};
use crate::task::ParamError;

/// `CONFIG_UCLAMP_BUCKETS_COUNT`'s default (§3.1).
pub const UCLAMP_BUCKETS: usize = 5;
/// The fewest buckets Linux allows.
pub const UCLAMP_BUCKETS_MIN: usize = 5;
/// The most buckets Linux allows.
pub const UCLAMP_BUCKETS_MAX: usize = 20;

/// `UCLAMP_BUCKET_DELTA = DIV_ROUND_CLOSEST(1024, nr_buckets)` (§3.1): the
/// width of one bucket (205 for 5 buckets). `nr_buckets` must be at least 1.
pub const fn uclamp_bucket_delta(nr_buckets: usize) -> u16 {
    ((SCHED_CAPACITY_SCALE as usize + nr_buckets / 2) / nr_buckets) as u16
}

/// `uclamp_bucket_id` (§3.1): `min(value / delta, nr_buckets - 1)`, so the
/// last bucket also holds the values above `nr_buckets * delta` (up to 1024).
pub const fn uclamp_bucket_id(value: u16, nr_buckets: usize) -> usize {
    let id = (value / uclamp_bucket_delta(nr_buckets)) as usize;
    if id < nr_buckets { id } else { nr_buckets - 1 }
}

/// A task's effective clamp while it is counted on a run queue
/// (`p->uclamp[clamp_id]`, §3.1): the value and bucket it was counted with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskClamp {
    value: u16,
    bucket_id: u8,
    active: bool,
}

impl TaskClamp {
    /// The effective value the task was last counted with.
    pub const fn value(&self) -> u16 {
        self.value
    }

    /// The bucket it is (or was last) counted in.
    pub const fn bucket_id(&self) -> usize {
        self.bucket_id as usize
    }

    /// Whether it is counted on a run queue now (`uc_se->active`).
    pub const fn active(&self) -> bool {
        self.active
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Bucket {
    /// The local max: the largest value counted since the bucket was empty.
    value: u16,
    tasks: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ClampRunQueue {
    value: u16,
    buckets: [Bucket; UCLAMP_BUCKETS_MAX],
}

/// One CPU's clamp aggregation (`rq->uclamp[]` and `rq->uclamp_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UclampRunQueue {
    nr_buckets: usize,
    clamps: [ClampRunQueue; 2],
    /// `UCLAMP_FLAG_IDLE`: no task is counted; the max value is held (§3.2).
    idle: bool,
}

impl Default for UclampRunQueue {
    /// A run queue with the default 5 buckets.
    fn default() -> Self {
        Self::with_buckets(UCLAMP_BUCKETS)
    }
}

impl UclampRunQueue {
    /// A run queue with `nr_buckets` buckets per clamp (Linux allows 5..=20).
    pub fn new(nr_buckets: usize) -> Result<Self, ParamError> {
        if !(UCLAMP_BUCKETS_MIN..=UCLAMP_BUCKETS_MAX).contains(&nr_buckets) {
            return Err(ParamError::OutOfRange {
                field: "uclamp_buckets",
                value: nr_buckets as i64,
                min: UCLAMP_BUCKETS_MIN as i64,
                max: UCLAMP_BUCKETS_MAX as i64,
            });
        }
        Ok(Self::with_buckets(nr_buckets))
    }

    /// As at boot (§3.1): each value is `uclamp_none`, and the flag is idle.
    fn with_buckets(nr_buckets: usize) -> Self {
        UclampRunQueue {
            nr_buckets,
            clamps: ClampId::ALL.map(|clamp_id| ClampRunQueue {
                value: uclamp_none(clamp_id),
                buckets: [Bucket::default(); UCLAMP_BUCKETS_MAX],
            }),
            idle: true,
        }
    }

    /// The number of buckets per clamp.
    pub const fn nr_buckets(&self) -> usize {
        self.nr_buckets
    }

    /// The run queue's clamp (`uclamp_rq_get`): the max over the counted
    /// tasks' values, bucket-wise; with no task, the held value (§3.2).
    pub const fn value(&self, clamp_id: ClampId) -> u16 {
        self.clamps[clamp_id.index()].value
    }

    /// `UCLAMP_FLAG_IDLE`: no task has been counted since the last one left.
    pub const fn is_idle(&self) -> bool {
        self.idle
    }

    /// A bucket's local max value and task count, for reports and tests.
    pub fn bucket(&self, clamp_id: ClampId, bucket_id: usize) -> (u16, u32) {
        let bucket = self.clamps[clamp_id.index()].buckets[bucket_id];
        (bucket.value, bucket.tasks)
    }

    /// `uclamp_rq_inc` (§3.2): counts a task whose effective values are
    /// `effective` (indexed by [`ClampId`]), recording them in `task`, then
    /// clears the idle flag. The task must not be counted already.
    pub fn inc(&mut self, task: &mut [TaskClamp; 2], effective: [u16; 2]) {
        for clamp_id in ClampId::ALL {
            let i = clamp_id.index();
            self.inc_id(clamp_id, &mut task[i], effective[i]);
        }
        self.idle = false;
    }

    /// `uclamp_rq_dec` (§3.2): uncounts a task counted by [`Self::inc`].
    /// A task that is not counted is left alone.
    pub fn dec(&mut self, task: &mut [TaskClamp; 2]) {
        for clamp_id in ClampId::ALL {
            self.dec_id(clamp_id, &mut task[clamp_id.index()]);
        }
    }

    fn inc_id(&mut self, clamp_id: ClampId, task: &mut TaskClamp, value: u16) {
        debug_assert!(!task.active, "uclamp counted twice");
        let value = value.min(SCHED_CAPACITY_SCALE);
        let bucket_id = uclamp_bucket_id(value, self.nr_buckets);
        *task = TaskClamp {
            value,
            bucket_id: bucket_id as u8,
            active: true,
        };
        let idle = self.idle;
        let clamp = &mut self.clamps[clamp_id.index()];
        let bucket = &mut clamp.buckets[bucket_id];
        bucket.tasks += 1;
        // uclamp_idle_reset: the held max is dropped by the first new task.
        if clamp_id == ClampId::Max && idle {
            clamp.value = value;
        }
        if bucket.tasks == 1 || value > bucket.value {
            bucket.value = value;
        }
        if value > clamp.value {
            clamp.value = value;
        }
    }

    fn dec_id(&mut self, clamp_id: ClampId, task: &mut TaskClamp) {
        if !task.active {
            return;
        }
        task.active = false;
        let clamp = &mut self.clamps[clamp_id.index()];
        let bucket = &mut clamp.buckets[task.bucket_id()];
        bucket.tasks -= 1;
        // A bucket with tasks left keeps its (maybe stale) local max (§3.2).
        if bucket.tasks > 0 || bucket.value < clamp.value {
            return;
        }
        let value = self.max_value(clamp_id, task.value);
        self.clamps[clamp_id.index()].value = value;
    }

    /// `uclamp_rq_max_value`: the value of the highest bucket with tasks, or
    /// the idle value: for the ceiling the last task's value is held and the
    /// run queue marked idle; the floor drops to 0 (§3.2).
    fn max_value(&mut self, clamp_id: ClampId, last_value: u16) -> u16 {
        let buckets = &self.clamps[clamp_id.index()].buckets[..self.nr_buckets];
        if let Some(bucket) = buckets.iter().rev().find(|bucket| bucket.tasks > 0) {
            return bucket.value;
        }
        match clamp_id {
            ClampId::Max => {
                self.idle = true;
                last_value
            }
            ClampId::Min => uclamp_none(ClampId::Min),
        }
    }
}

#[cfg(test)]
mod tests;
