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
//! top bucket empties. Tasks with the default clamps are counted once, in
//! `nr_default`, so that while one of them is counted another's enqueue or
//! dequeue is one add ([`UclampRunQueue`] says why that gives Linux's values).

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

/// A bucket index, below [`UCLAMP_BUCKETS_MAX`] by its type: it indexes the
/// fixed bucket arrays with no bounds check on the enqueue and dequeue paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum BucketId {
    #[default]
    B0,
    B1,
    B2,
    B3,
    B4,
    B5,
    B6,
    B7,
    B8,
    B9,
    B10,
    B11,
    B12,
    B13,
    B14,
    B15,
    B16,
    B17,
    B18,
    B19,
}

impl BucketId {
    const ALL: [BucketId; UCLAMP_BUCKETS_MAX] = [
        BucketId::B0,
        BucketId::B1,
        BucketId::B2,
        BucketId::B3,
        BucketId::B4,
        BucketId::B5,
        BucketId::B6,
        BucketId::B7,
        BucketId::B8,
        BucketId::B9,
        BucketId::B10,
        BucketId::B11,
        BucketId::B12,
        BucketId::B13,
        BucketId::B14,
        BucketId::B15,
        BucketId::B16,
        BucketId::B17,
        BucketId::B18,
        BucketId::B19,
    ];

    /// `uclamp_bucket_id(value)` for a run queue of `nr_buckets` (at most
    /// [`UCLAMP_BUCKETS_MAX`], checked by [`UclampRunQueue::new`]).
    fn of(value: u16, nr_buckets: usize) -> BucketId {
        BucketId::ALL[uclamp_bucket_id(value, nr_buckets)]
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// How a task is counted on a run queue: Linux's `uc_se->active`, with the
/// counter that holds it (see [`UclampRunQueue`]'s `nr_default`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
enum Counted {
    /// Not counted (`active == 0`).
    #[default]
    No,
    /// Counted in its buckets' own `tasks`.
    InBuckets,
    /// Counted with the default clamps (0, 1024), in `nr_default`.
    AsDefault,
}

/// What the values a task holds while it is not counted are, for its next
/// enqueue (see [`TaskClamps`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
enum Next {
    /// Its effective clamps now, and they are the defaults (0, 1024).
    Default,
    /// Its effective clamps now, other than the defaults.
    Other,
    /// Not known: its effective clamps changed while it was counted, and its
    /// owner works them out again ([`UclampRunQueue::set_effective`]) before
    /// the next enqueue.
    #[default]
    Stale,
}

/// One of a task's effective clamps while it is counted on a run queue
/// (`p->uclamp[clamp_id]`, §3.1): the value and bucket it was counted with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskClamp {
    value: u16,
    bucket_id: BucketId,
    counted: Counted,
}

impl TaskClamp {
    /// The effective value the task was last counted with.
    pub const fn value(&self) -> u16 {
        self.value
    }

    /// The bucket it is (or was last) counted in.
    pub const fn bucket_id(&self) -> usize {
        self.bucket_id.index()
    }

    /// Whether it is counted on a run queue now (`uc_se->active`).
    pub const fn active(&self) -> bool {
        !matches!(self.counted, Counted::No)
    }
}

/// Both of a task's clamps (`p->uclamp[]`, §3.1), in the eight bytes the
/// pair took before, with what the next enqueue counts.
///
/// While the task is counted they are the values and buckets it was counted
/// with. While it is not, they are its effective clamps now
/// (`uclamp_eff_get` for both ids, §3.3), which depend only on its requests,
/// its group and the sysctls: its owner sets them with
/// [`UclampRunQueue::set_effective`] when one of those changes (and at
/// `task_new`) instead of at every enqueue, so an enqueue counts the same
/// values without the two bucket divisions and the group and sysctl limits
/// each time, and for a default task while another is counted
/// ([`UclampRunQueue`]) it reads one byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskClamps {
    values: [u16; 2],
    buckets: [BucketId; 2],
    /// Both ids are counted and uncounted together.
    counted: Counted,
    next: Next,
}

impl TaskClamps {
    /// The clamp `clamp_id`.
    pub const fn get(&self, clamp_id: ClampId) -> TaskClamp {
        TaskClamp {
            value: self.values[clamp_id.index()],
            bucket_id: self.buckets[clamp_id.index()],
            counted: self.counted,
        }
    }

    /// Whether the task is counted on a run queue now.
    pub const fn active(&self) -> bool {
        !matches!(self.counted, Counted::No)
    }

    /// Its effective clamps changed while it is counted: the values stay
    /// those it was counted with (its dequeue uncounts them), and its owner
    /// sets the new ones before the next enqueue.
    pub fn mark_stale(&mut self) {
        self.next = Next::Stale;
    }

    fn from_pair(pair: &[TaskClamp; 2]) -> Self {
        TaskClamps {
            values: pair.map(|clamp| clamp.value),
            buckets: pair.map(|clamp| clamp.bucket_id),
            counted: pair[0].counted,
            next: Next::Stale,
        }
    }

    fn pair(&self) -> [TaskClamp; 2] {
        ClampId::ALL.map(|clamp_id| self.get(clamp_id))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Bucket {
    /// The local max: the largest value counted since the bucket was empty.
    value: u16,
    /// The tasks counted here, but for those in `nr_default` (see
    /// [`UclampRunQueue`]).
    tasks: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ClampRunQueue {
    value: u16,
    buckets: [Bucket; UCLAMP_BUCKETS_MAX],
}

/// One CPU's clamp aggregation (`rq->uclamp[]` and `rq->uclamp_flags`).
///
/// Tasks with the default clamps (0 and 1024, the clamps of every task until
/// a user, a group or the sysctls set one) sit in bucket 0 of the floor and
/// the top bucket of the ceiling. Their count is kept once, in `nr_default`,
/// rather than in those two buckets' `tasks`: a bucket's count is its own
/// `tasks` plus `nr_default` for those two buckets, and every rule of §3.2 is
/// applied to that sum, so the counts, the local maxima, the run-queue values
/// and the idle flag are Linux's. The sum only saves work: while one default
/// task is counted, counting or uncounting another leaves every value as it
/// is in Linux (bucket 0 and the top bucket stay non-empty, their local
/// maxima and the run-queue values cannot move for a 0 floor or a 1024
/// ceiling: the ceiling is 1024 already, and the flag is not idle), so those
/// enqueues and dequeues change `nr_default` alone. The first default task
/// in and the last one out go through the full `uclamp_rq_inc_id` and
/// `uclamp_rq_dec_id` on the sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UclampRunQueue {
    nr_buckets: usize,
    /// The bucket of 1024, `nr_buckets - 1`: the default ceiling's.
    top: BucketId,
    clamps: [ClampRunQueue; 2],
    /// Tasks counted with the default clamps, in bucket 0 of the floor and
    /// `top` of the ceiling.
    nr_default: u32,
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
            top: BucketId::of(SCHED_CAPACITY_SCALE, nr_buckets),
            clamps: ClampId::ALL.map(|clamp_id| ClampRunQueue {
                value: uclamp_none(clamp_id),
                buckets: [Bucket::default(); UCLAMP_BUCKETS_MAX],
            }),
            nr_default: 0,
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
        let tasks = match BucketId::ALL.get(bucket_id) {
            Some(&id) => self.tasks(clamp_id, id),
            None => bucket.tasks,
        };
        (bucket.value, tasks)
    }

    /// Sets the effective clamps of a task that is not counted: `effective`
    /// (`uclamp_eff_get` for both ids, indexed by [`ClampId`], §3.3), with
    /// their buckets on this run queue, for its next [`Self::inc_task`].
    pub fn set_effective(&self, task: &mut TaskClamps, effective: [u16; 2]) {
        debug_assert!(!task.active(), "effective clamps set while counted");
        task.values = effective.map(|value| value.min(SCHED_CAPACITY_SCALE));
        task.buckets = task
            .values
            .map(|value| BucketId::of(value, self.nr_buckets));
        let default = ClampId::ALL
            .iter()
            .all(|&clamp_id| task.values[clamp_id.index()] == uclamp_none(clamp_id));
        task.next = if default { Next::Default } else { Next::Other };
    }

    /// `uclamp_rq_inc` (§3.2): counts a task whose effective values are
    /// `effective` (indexed by [`ClampId`]), recording them in `task`, then
    /// clears the idle flag. The task must not be counted already.
    pub fn inc(&mut self, task: &mut [TaskClamp; 2], effective: [u16; 2]) {
        let mut clamps = TaskClamps::from_pair(task);
        self.set_effective(&mut clamps, effective);
        let counted = self.inc_task(&mut clamps);
        debug_assert!(counted, "effective clamps just set");
        *task = clamps.pair();
    }

    /// [`Self::inc`] with the effective clamps set by
    /// [`Self::set_effective`]. A default task while another is counted
    /// changes `nr_default` alone (see [`UclampRunQueue`]). Returns false,
    /// counting nothing, when the clamps are stale ([`TaskClamps::mark_stale`]):
    /// the owner sets them and calls again. (The test is off the default
    /// task's path: stale clamps are never `Default`.)
    #[inline]
    #[must_use = "stale clamps are not counted"]
    pub fn inc_task(&mut self, task: &mut TaskClamps) -> bool {
        debug_assert!(!task.active(), "uclamp counted twice");
        if task.next == Next::Default && self.nr_default > 0 {
            task.counted = Counted::AsDefault;
            self.nr_default += 1;
            return true;
        }
        self.inc_buckets(task)
    }

    /// `uclamp_rq_inc` on the buckets, for the first default task or any
    /// other (§3.2). Out of line, so that the enqueue path around a default
    /// task's count keeps its few registers.
    #[inline(never)]
    fn inc_buckets(&mut self, task: &mut TaskClamps) -> bool {
        if task.next == Next::Stale {
            return false;
        }
        if task.next == Next::Default {
            task.counted = Counted::AsDefault;
            self.nr_default += 1;
        } else {
            task.counted = Counted::InBuckets;
            for clamp_id in ClampId::ALL {
                let bucket_id = task.buckets[clamp_id.index()].index();
                self.clamps[clamp_id.index()].buckets[bucket_id].tasks += 1;
            }
        }
        for clamp_id in ClampId::ALL {
            self.inc_id(clamp_id, task.get(clamp_id));
        }
        self.idle = false;
        true
    }

    /// `uclamp_rq_inc_id` after the task was counted in its bucket (§3.2).
    fn inc_id(&mut self, clamp_id: ClampId, task: TaskClamp) {
        let tasks = self.tasks(clamp_id, task.bucket_id);
        let idle = self.idle;
        let clamp = &mut self.clamps[clamp_id.index()];
        let bucket = &mut clamp.buckets[task.bucket_id.index()];
        let value = task.value;
        // uclamp_idle_reset: the held max is dropped by the first new task.
        if clamp_id == ClampId::Max && idle {
            clamp.value = value;
        }
        if tasks == 1 || value > bucket.value {
            bucket.value = value;
        }
        if value > clamp.value {
            clamp.value = value;
        }
    }

    /// `uclamp_rq_dec` (§3.2): uncounts a task counted by [`Self::inc`].
    /// A task that is not counted is left alone.
    pub fn dec(&mut self, task: &mut [TaskClamp; 2]) {
        let mut clamps = TaskClamps::from_pair(task);
        self.dec_task(&mut clamps);
        *task = clamps.pair();
    }

    /// [`Self::dec`] for a task counted by [`Self::inc_task`]; its values
    /// stay (they are its effective clamps for the next enqueue unless they
    /// were marked stale). A default task while another stays counted
    /// changes `nr_default` alone (see [`UclampRunQueue`]).
    #[inline]
    pub fn dec_task(&mut self, task: &mut TaskClamps) {
        if task.counted == Counted::AsDefault && self.nr_default > 1 {
            task.counted = Counted::No;
            self.nr_default -= 1;
            return;
        }
        self.dec_buckets(task);
    }

    /// [`Self::dec_task`] but for a default task while another stays
    /// counted: the counts, then `uclamp_rq_dec_id` for both ids.
    #[inline(never)]
    fn dec_buckets(&mut self, task: &mut TaskClamps) {
        match task.counted {
            Counted::No => return,
            Counted::AsDefault => self.nr_default -= 1,
            Counted::InBuckets => {
                for clamp_id in ClampId::ALL {
                    let bucket_id = task.buckets[clamp_id.index()].index();
                    self.clamps[clamp_id.index()].buckets[bucket_id].tasks -= 1;
                }
            }
        }
        task.counted = Counted::No;
        for clamp_id in ClampId::ALL {
            self.dec_id(clamp_id, task.get(clamp_id));
        }
    }

    fn dec_id(&mut self, clamp_id: ClampId, task: TaskClamp) {
        let tasks = self.tasks(clamp_id, task.bucket_id);
        let clamp = &self.clamps[clamp_id.index()];
        let bucket = clamp.buckets[task.bucket_id.index()];
        // A bucket with tasks left keeps its (maybe stale) local max (§3.2).
        if tasks > 0 || bucket.value < clamp.value {
            return;
        }
        let value = self.max_value(clamp_id, task.value);
        self.clamps[clamp_id.index()].value = value;
    }

    /// The tasks counted in a bucket: its own and, for the default clamps'
    /// buckets, `nr_default`.
    fn tasks(&self, clamp_id: ClampId, bucket_id: BucketId) -> u32 {
        let own = self.clamps[clamp_id.index()].buckets[bucket_id.index()].tasks;
        if bucket_id == self.default_bucket(clamp_id) {
            own + self.nr_default
        } else {
            own
        }
    }

    /// The bucket of `uclamp_none(clamp_id)`: 0 for the floor, the top one
    /// for the ceiling.
    fn default_bucket(&self, clamp_id: ClampId) -> BucketId {
        match clamp_id {
            ClampId::Min => BucketId::B0,
            ClampId::Max => self.top,
        }
    }

    /// `uclamp_rq_max_value`: the value of the highest bucket with tasks, or
    /// the idle value: for the ceiling the last task's value is held and the
    /// run queue marked idle; the floor drops to 0 (§3.2).
    fn max_value(&mut self, clamp_id: ClampId, last_value: u16) -> u16 {
        let top = BucketId::ALL[..self.nr_buckets]
            .iter()
            .rev()
            .copied()
            .find(|&bucket_id| self.tasks(clamp_id, bucket_id) > 0);
        if let Some(bucket_id) = top {
            return self.clamps[clamp_id.index()].buckets[bucket_id.index()].value;
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
