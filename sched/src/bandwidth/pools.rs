//! Every limited group's pool, shared by the cores of all CPUs (Linux keeps
//! one `struct cfs_bandwidth` per task group, behind `cfs_b->lock`,
//! docs/linux-sched-reference.md §4.2).
//!
//! A core takes a pool's lock while it holds its own run-queue lock (a slice,
//! the last 1 ns attempt, a throttle, a slack return), and the period and
//! slack timers take it alone; no code takes a run-queue lock while it holds a
//! pool's, so the order run queue → pool never inverts. The simulator uses the
//! same type from one thread, where the locks are never contended.

use alloc::vec::Vec;

use alloc::collections::VecDeque;
use alloc::sync::Arc;

use super::Bandwidth;
use super::pool::{BandwidthStats, CfsBandwidth};
use super::runtime::{PoolAnswer, PoolCall};
use crate::task::{GroupId, Nanoseconds};

/// How a CPU's run queue reaches the groups' pools
/// (`FairRunQueue::attach_bandwidth_with`).
#[derive(Clone, Debug)]
pub enum PoolSource {
    /// The pools shared by every CPU.
    Live(Arc<BandwidthPools>),
    /// The shared pools, and each answer they give is kept, in order, on
    /// `tape`, which the CPU's core drains into its record
    /// (`Input::PoolAnswer`, before the record of the call it was given in).
    Recorded {
        /// The pools.
        pools: Arc<BandwidthPools>,
        /// The answers, shared with the core.
        tape: Arc<SharedAnswerTape>,
    },
    /// No pools: a replay. Each answer is the next one queued from the
    /// record (`FairRunQueue::queue_pool_answer`), and the calls without an
    /// answer do nothing.
    Replayed,
}

/// What an answer tape holds at most: an operation reaches a few pools per
/// level of the group hierarchy, and the core drains the tape after each.
pub const ANSWER_TAPE_ROOM: usize = 256;

/// The pool answers a recording run queue was given since its core last
/// took them, oldest first. Its room is allocated once; an answer that does
/// not fit is counted (and the core counts a dropped record).
#[derive(Debug)]
pub struct AnswerTape {
    answers: VecDeque<PoolAnswer>,
    lost: u64,
}

/// A tape shared by one CPU's run queue (its link to the pools) and its core:
/// both use it under the CPU's run-queue lock, so its own lock is never
/// contended.
pub type SharedAnswerTape = spin::Mutex<AnswerTape>;

impl AnswerTape {
    /// An empty tape with room for [`ANSWER_TAPE_ROOM`] answers.
    pub fn new() -> Self {
        AnswerTape {
            answers: VecDeque::with_capacity(ANSWER_TAPE_ROOM),
            lost: 0,
        }
    }

    /// Keeps `answer` if there is room (never allocates).
    pub fn keep(&mut self, answer: PoolAnswer) {
        if self.answers.len() < self.answers.capacity() {
            self.answers.push_back(answer);
        } else {
            self.lost += 1;
        }
    }

    /// The oldest answer kept.
    pub fn take(&mut self) -> Option<PoolAnswer> {
        self.answers.pop_front()
    }

    /// How many answers did not fit since the last call.
    pub fn take_lost(&mut self) -> u64 {
        core::mem::take(&mut self.lost)
    }
}

impl Default for AnswerTape {
    fn default() -> Self {
        Self::new()
    }
}

/// A replayed run queue's use of its pools that the record contradicts: it
/// did not decide as the recorded one did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolMismatch {
    /// It asked `group`'s pool (`call`) and the record has no answer left
    /// for this call.
    Unanswered {
        /// The group asked.
        group: GroupId,
        /// The question.
        call: PoolCall,
    },
    /// It asked `group`'s pool (`call`) and the next recorded answer is
    /// another group's or another question's.
    Mismatched {
        /// The group asked.
        group: GroupId,
        /// The question.
        call: PoolCall,
        /// The answer recorded next.
        recorded: PoolAnswer,
    },
    /// The call ended with a recorded answer it never asked for.
    Unasked {
        /// The first answer left.
        recorded: PoolAnswer,
    },
}

impl core::fmt::Display for PoolMismatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PoolMismatch::Unanswered { group, call } => write!(
                f,
                "the replay asked group {}'s pool ({call:?}) where the record has no answer",
                group.0
            ),
            PoolMismatch::Mismatched {
                group,
                call,
                recorded,
            } => write!(
                f,
                "the replay asked group {}'s pool ({call:?}) where the record answered {recorded:?}",
                group.0
            ),
            PoolMismatch::Unasked { recorded } => write!(
                f,
                "the replay did not ask for the recorded pool answer {recorded:?}"
            ),
        }
    }
}

/// Which of a group's timers a request or an expiry is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BandwidthTimerKind {
    /// The period timer: refill and pay the throttled run queues.
    Period,
    /// The slack timer: pay returned runtime out before the refill.
    Slack,
}

/// A request to arm one of a group's timers, raised by the CPU whose run
/// queue started it; the mechanism arms it on that CPU (Linux pins both
/// hrtimers to the CPU that starts them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BandwidthTimer {
    /// The group.
    pub group: GroupId,
    /// Which timer.
    pub kind: BandwidthTimerKind,
    /// When it fires.
    pub expires: Nanoseconds,
}

/// One pool per group slot; `None` for a group that never had a quota. A
/// group whose limit was lifted (`max`) keeps its pool, unlimited, with its
/// grid and its counters, as Linux keeps the group's `cfs_bandwidth`.
#[derive(Debug)]
pub struct BandwidthPools {
    pools: Vec<spin::Mutex<Option<CfsBandwidth>>>,
}

impl BandwidthPools {
    /// Room for `max_groups` groups (the root's slot stays empty: the root
    /// group has no limit in cgroup v2).
    pub fn new(max_groups: usize) -> Self {
        BandwidthPools {
            pools: (0..max_groups).map(|_| spin::Mutex::new(None)).collect(),
        }
    }

    /// `tg_set_cfs_bandwidth` for the pool (§4.1): `settings` (validated)
    /// replace the group's and the pool is refilled (`runtime += quota`, kept
    /// up to quota + burst). A group's first quota makes its pool, full, with
    /// its period grid at `offset + k × period`. A pool that exists keeps its
    /// grid and its timers, as Linux keeps the period timer's expiry: an
    /// armed timer fires when it was due, and the next periods follow the new
    /// length. It also keeps its throttled queues and its counters; a lifted
    /// limit (`max`) leaves it unlimited, and its period timer goes idle when
    /// it next fires. Each CPU's core is told next
    /// (`CpuCore::set_group_bandwidth`), which unthrottles its run queue.
    ///
    /// Returns where the group's periods fall: a point of its grid (the
    /// timer's next expiry when armed), on which the refills fall at whole
    /// periods; `None` while it has no pool.
    pub fn set(
        &self,
        group: GroupId,
        settings: Bandwidth,
        offset: Nanoseconds,
        max_cpus: usize,
    ) -> Option<Nanoseconds> {
        let mut slot = self.pools.get(group.index())?.lock();
        match slot.as_mut() {
            Some(pool) => pool.rewrite(settings),
            None if settings.quota.is_some() => {
                *slot = Some(CfsBandwidth::new(settings, offset, max_cpus));
            }
            None => {}
        }
        slot.as_ref().map(CfsBandwidth::grid)
    }

    /// Runs `f` on the group's pool under its lock; `None`: no pool.
    pub fn with<R>(&self, group: GroupId, f: impl FnOnce(&mut CfsBandwidth) -> R) -> Option<R> {
        self.pools.get(group.index())?.lock().as_mut().map(f)
    }

    /// The group's `cpu.stat` counters, if it has or had a quota.
    pub fn stats(&self, group: GroupId) -> Option<BandwidthStats> {
        self.with(group, |pool| pool.stats())
    }

    /// The settings in force (they double when the period is too short), if
    /// it has or had a quota.
    pub fn settings(&self, group: GroupId) -> Option<Bandwidth> {
        self.with(group, |pool| pool.settings())
    }
}
