//! Task groups: the group hierarchy, shares and their validation, each group's
//! per-CPU run queue (Linux's `cfs_rq`), and the group-share computation (§2.7).
//!
//! ```text
//!   root run queue ── task, task, [group entity A] ── ...
//!                                        │ my_q
//!                         run queue of A ── task, [group entity A/B]
//!                                                        │ my_q
//!                                        run queue of A/B ── task, task
//! ```
//!
//! Every CPU's [`FairRunQueue`](super::FairRunQueue) holds, for every group, one
//! run queue and (except for the root) one group entity, in arrays indexed by
//! [`GroupId`] and sized at construction. The mechanism calls the group API
//! identically on every CPU, so ids agree across CPUs.
//!
//! **Group-wide load sum.** `calc_group_shares` needs `tg->load_avg`, the sum
//! over all CPUs of each group run queue's contribution. That is not per-CPU
//! data, so each run queue keeps its own contribution
//! (`tg_load_avg_contrib`) and the *last known* sum (`tg_load_avg`). When its
//! contribution changes (`update_tg_load_avg`, rate-limited as Linux does) it
//! adds the change to its known sum at once, which makes a single CPU exact
//! without any help. With several CPUs the mechanism sums
//! [`FairRunQueue::group_load_contribution`](super::FairRunQueue::group_load_contribution)
//! over the CPUs and hands the sum to each with
//! [`FairRunQueue::set_group_load_sum`](super::FairRunQueue::set_group_load_sum),
//! e.g. at each tick or load balance; between refreshes the sum is stale by
//! the other CPUs' changes only, as it is stale in Linux by the unflushed deltas.

use core::fmt;

use crate::bandwidth::runtime::CfsRqRuntime;
use crate::fair::timeline::{NIL, Timeline};
use crate::pelt::update::RunQueueLoad;
use crate::pelt::{add_positive, propagate};
use crate::task::{GroupId, Nanoseconds};
use crate::weight::{scale_load, scale_load_down};

/// `MIN_SHARES` (§1.1), unscaled: the smallest `cpu.shares`, and the floor of a
/// computed group weight (deliberately unscaled there, §2.7).
pub const MIN_SHARES: u64 = 2;

/// `MAX_SHARES` (§1.1), unscaled: the largest `cpu.shares`.
pub const MAX_SHARES: u64 = 1 << 18;

/// The default `cpu.shares` (§1.1): 1024, a nice-0 weight.
pub const DEFAULT_SHARES: u64 = 1024;

/// `min_vruntime`'s start value, near wrap-around on purpose (§1.3).
pub const INITIAL_MIN_VRUNTIME: u64 = (-(1i64 << 20)) as u64;

/// A group operation Linux would refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupError {
    /// `field` is `value`, outside `min..=max` (`EINVAL`).
    OutOfRange {
        /// The parameter's name (`shares`, `cpu.weight`).
        field: &'static str,
        /// The value given.
        value: u64,
        /// The smallest value accepted.
        min: u64,
        /// The largest value accepted.
        max: u64,
    },
    /// No group has this id.
    NoSuchGroup {
        /// The id given.
        group: u16,
    },
    /// Every group slot is in use.
    TooManyGroups {
        /// The number of group slots, the root included.
        capacity: usize,
    },
    /// The root group's shares cannot be changed, nor can it be removed.
    RootGroup,
    /// The group still has tasks or child groups.
    GroupBusy {
        /// The id given.
        group: u16,
    },
    /// The task is unknown to this run queue.
    UnknownTask {
        /// The id given.
        task: u16,
    },
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GroupError::OutOfRange {
                field,
                value,
                min,
                max,
            } => write!(
                f,
                "invalid argument: {field} = {value} is outside {min}..={max}"
            ),
            GroupError::NoSuchGroup { group } => write!(f, "no task group {group}"),
            GroupError::TooManyGroups { capacity } => {
                write!(f, "too many task groups: {capacity} slots")
            }
            GroupError::RootGroup => write!(f, "the root task group cannot be changed"),
            GroupError::GroupBusy { group } => write!(f, "task group {group} is not empty"),
            GroupError::UnknownTask { task } => write!(f, "unknown task {task}"),
        }
    }
}

/// Checks a `cpu.shares` value (cgroup v1, unscaled) against
/// `MIN_SHARES..=MAX_SHARES` (§1.1).
pub fn validate_shares(shares: u64) -> Result<u64, GroupError> {
    if (MIN_SHARES..=MAX_SHARES).contains(&shares) {
        Ok(shares)
    } else {
        Err(GroupError::OutOfRange {
            field: "shares",
            value: shares,
            min: MIN_SHARES,
            max: MAX_SHARES,
        })
    }
}

/// The shares of a cgroup v2 `cpu.weight` in 1..=10000: `weight * 1024 / 100`,
/// rounded to nearest (§1.1).
pub fn shares_from_cpu_weight(weight: u64) -> Result<u64, GroupError> {
    if !(1..=10_000).contains(&weight) {
        return Err(GroupError::OutOfRange {
            field: "cpu.weight",
            value: weight,
            min: 1,
            max: 10_000,
        });
    }
    Ok((weight * 1024 + 50) / 100)
}

/// A group's place in the hierarchy (the same on every CPU).
#[derive(Clone, Copy, Debug)]
pub struct GroupInfo {
    /// Whether the slot is in use.
    pub exists: bool,
    /// The parent group (the root is its own parent).
    pub parent: GroupId,
    /// `tg->shares`, scaled (`scale_load(cpu.shares)`).
    pub shares: u64,
    /// 0 for the root, 1 for its children, ...
    pub depth: u32,
    /// Child groups, to refuse removing a parent.
    pub children: u32,
    /// Tasks known to this run queue that belong to the group.
    pub tasks: u32,
}

impl GroupInfo {
    /// The root group: default shares, depth 0.
    pub const fn root() -> Self {
        GroupInfo {
            exists: true,
            parent: GroupId::ROOT,
            shares: scale_load(DEFAULT_SHARES),
            depth: 0,
            children: 0,
            tasks: 0,
        }
    }

    /// A free slot.
    pub const fn unused() -> Self {
        GroupInfo {
            exists: false,
            ..GroupInfo::root()
        }
    }
}

/// One group's run queue on one CPU (Linux's `struct cfs_rq`).
#[derive(Clone, Copy, Debug)]
pub struct GroupQueue {
    /// Sum of the queued entities' scaled weights, running one included.
    pub load: u64,
    /// Entities queued directly here, running one included (`nr_queued`).
    pub nr_queued: u32,
    /// Tasks queued here or below (`h_nr_running`).
    pub h_nr_running: u32,
    /// Monotonic base of the vruntime keys (§1.3).
    pub min_vruntime: u64,
    /// EEVDF `Σ key·w` over the entities in the tree (§1.5).
    pub avg_vruntime: i64,
    /// EEVDF `Σ w` over the entities in the tree (§1.5).
    pub avg_load: u64,
    /// The queued entities other than the running one.
    pub timeline: Timeline,
    /// The running entity at this level (`cfs_rq->curr`), or [`NIL`].
    pub curr: u32,
    /// CFS skip buddy set by yield (§1.4), or [`NIL`].
    pub skip: u32,
    /// PELT state of this run queue (`cfs_rq->avg`, removed load, pending
    /// group propagation, §2.2, §2.6, §2.7).
    pub pelt: RunQueueLoad,
    /// This run queue's part of the group-wide sum (`tg_load_avg_contrib`).
    pub tg_load_avg_contrib: u64,
    /// The last known group-wide sum `tg->load_avg` (see the module doc).
    pub tg_load_avg: u64,
    /// When `tg_load_avg_contrib` last changed (rate limit, §2.7).
    pub last_update_tg_load_avg: Nanoseconds,
    /// Bandwidth control on this CPU (§4.2): local runtime, throttling, and
    /// the frozen PELT clock of a throttled subtree.
    pub runtime: CfsRqRuntime,
    /// The inputs [`Self::group_shares`] computed the shares from last, and
    /// the shares they gave.
    pub shares_memo: SharesMemo,
}

/// The last inputs and results of `calc_group_shares` on one group run queue
/// (§2.7), so that shares whose inputs did not change are not computed again:
/// most walks above a run queue find the group's shares, its run queue's
/// average, and the group's sum and this CPU's contribution to it as they
/// were (the average moves once per PELT period, the sum at most once per
/// ms), and a comparison is cheaper than the computation. The run queue's
/// weight is the input that moves most: a task that wakes and one that
/// sleeps in turn make it alternate between two values, so the memo keeps
/// the shares of the last two weights seen with the other inputs.
///
/// `calc_group_shares` is a function of its inputs alone, so a memo whose
/// inputs equal the current ones holds the shares they give, whatever
/// changed in between: nothing has to mark it stale. Kept in 32 bits (the
/// shares of one CPU's run queue fit, as every load does but for hundreds of
/// heavy tasks); inputs or shares beyond 32 bits are computed every time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharesMemo {
    /// `tg->shares`, the run queue's `load_avg`, `tg->load_avg` and
    /// `tg_load_avg_contrib`, as [`GroupQueue::group_shares`] read them.
    common: [u32; 4],
    /// Two run-queue weights (`cfs_rq->load.weight`), the latest first,
    /// each with the shares computed from it and `common`.
    weights: [u32; 2],
    /// Those shares.
    shares: [u32; 2],
}

/// The inputs of `calc_group_shares` as the memo orders them: `tg->shares`,
/// the run queue's weight, its `load_avg`, `tg->load_avg`,
/// `tg_load_avg_contrib`.
type SharesInputs = [u64; 5];

impl SharesMemo {
    /// The shares of `inputs` if they are remembered.
    #[inline(always)]
    fn recall(&self, inputs: SharesInputs) -> Option<u64> {
        // Each comparison evaluated (`&`, not `&&`): one chain of compares
        // and a single branch.
        let same = (u64::from(self.common[0]) == inputs[0])
            & (u64::from(self.common[1]) == inputs[2])
            & (u64::from(self.common[2]) == inputs[3])
            & (u64::from(self.common[3]) == inputs[4]);
        if !same {
            return None;
        }
        if u64::from(self.weights[0]) == inputs[1] {
            return Some(u64::from(self.shares[0]));
        }
        (u64::from(self.weights[1]) == inputs[1]).then_some(u64::from(self.shares[1]))
    }

    /// Remembers `shares` as the shares of `inputs`, if all fit: beside the
    /// latest weight's when the other inputs are the remembered ones, else
    /// alone (both entries).
    #[inline(always)]
    fn remember(&mut self, inputs: SharesInputs, shares: u64) {
        let narrow = |value: u64| u32::try_from(value).ok();
        let (Some(a), Some(weight), Some(c), Some(d), Some(e), Some(shares)) = (
            narrow(inputs[0]),
            narrow(inputs[1]),
            narrow(inputs[2]),
            narrow(inputs[3]),
            narrow(inputs[4]),
            narrow(shares),
        ) else {
            return;
        };
        let common = [a, c, d, e];
        *self = if common == self.common {
            SharesMemo {
                common,
                weights: [weight, self.weights[0]],
                shares: [shares, self.shares[0]],
            }
        } else {
            SharesMemo {
                common,
                weights: [weight; 2],
                shares: [shares; 2],
            }
        };
    }
}

impl Default for SharesMemo {
    /// All inputs 0, with the shares computed from them.
    fn default() -> Self {
        let shares = propagate::calc_group_shares(0, 0, 0, 0, 0) as u32;
        SharesMemo {
            common: [0; 4],
            weights: [0; 2],
            shares: [shares; 2],
        }
    }
}

impl Default for GroupQueue {
    fn default() -> Self {
        GroupQueue {
            load: 0,
            nr_queued: 0,
            h_nr_running: 0,
            min_vruntime: INITIAL_MIN_VRUNTIME,
            avg_vruntime: 0,
            avg_load: 0,
            timeline: Timeline::default(),
            curr: NIL,
            skip: NIL,
            pelt: RunQueueLoad::default(),
            tg_load_avg_contrib: 0,
            tg_load_avg: 0,
            last_update_tg_load_avg: 0,
            runtime: CfsRqRuntime::default(),
            shares_memo: SharesMemo::default(),
        }
    }
}

impl GroupQueue {
    /// `calc_group_shares()` (§2.7): the weight, scaled, of the group entity that
    /// represents this run queue in its parent, for a group of `tg_shares`
    /// (scaled).
    pub fn calc_group_shares(&self, tg_shares: u64) -> u64 {
        propagate::calc_group_shares(
            tg_shares,
            scale_load_down(self.load),
            self.pelt.avg.load_avg,
            self.tg_load_avg.min(i64::MAX as u64) as i64,
            self.tg_load_avg_contrib,
        )
    }

    /// [`Self::calc_group_shares`], not computed again when its inputs are
    /// the ones it was last computed from ([`SharesMemo`]).
    #[inline(always)]
    pub fn group_shares(&mut self, tg_shares: u64) -> u64 {
        let inputs = [
            tg_shares,
            self.load,
            self.pelt.avg.load_avg,
            self.tg_load_avg,
            self.tg_load_avg_contrib,
        ];
        if let Some(shares) = self.shares_memo.recall(inputs) {
            return shares;
        }
        let shares = self.calc_group_shares(tg_shares);
        self.shares_memo.remember(inputs, shares);
        shares
    }

    /// `update_tg_load_avg()` (§2.7): publish this run queue's load when it moved
    /// by more than 1/64 of the last contribution, at most once per ms.
    pub fn update_tg_load_avg(&mut self, now: Nanoseconds) {
        let load_avg = self.pelt.avg.load_avg;
        if let Some(delta) = propagate::tg_load_avg_delta(
            load_avg,
            self.tg_load_avg_contrib,
            now,
            self.last_update_tg_load_avg,
        ) {
            // This CPU's change is applied to the known sum at once (exact on
            // one CPU); other CPUs' changes arrive with set_group_load_sum.
            self.tg_load_avg = add_positive(self.tg_load_avg, delta);
            self.tg_load_avg_contrib = load_avg;
            self.last_update_tg_load_avg = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue_with(load_down: u64, contrib: u64, sum: u64) -> GroupQueue {
        let mut queue = GroupQueue {
            load: scale_load(load_down),
            tg_load_avg_contrib: contrib,
            tg_load_avg: sum,
            ..GroupQueue::default()
        };
        queue.pelt.avg.load_avg = load_down;
        queue
    }

    /// §2.7 worked vectors: 512/512 for one task on each of two CPUs, 1024 when
    /// all the load is on one CPU, 768/256 for 3 + 1 tasks.
    #[test]
    fn calc_group_shares_vectors() {
        let shares = scale_load(1024);
        let each = queue_with(1024, 1024, 2048);
        assert_eq!(scale_load_down(each.calc_group_shares(shares)), 512);
        let alone = queue_with(1024, 1024, 1024);
        assert_eq!(scale_load_down(alone.calc_group_shares(shares)), 1024);
        let three = queue_with(3072, 3072, 4096);
        let one = queue_with(1024, 1024, 4096);
        assert_eq!(scale_load_down(three.calc_group_shares(shares)), 768);
        assert_eq!(scale_load_down(one.calc_group_shares(shares)), 256);
        // Floor: MIN_SHARES, unscaled (§2.7).
        let empty = queue_with(0, 0, 1 << 30);
        assert_eq!(empty.calc_group_shares(shares), MIN_SHARES);
    }

    /// The memo of `calc_group_shares` (`group_shares`) gives the shares of
    /// the current inputs: the same as computed afresh after each of the five
    /// inputs changes alone, back to the remembered inputs, and with inputs
    /// beyond 32 bits (computed, not remembered), with two weights in turn
    /// (both remembered); a memo that returned its last shares after any
    /// change, or the other weight's shares, would fail here.
    #[test]
    fn group_shares_follow_each_input() {
        let mut queue = queue_with(1024, 1024, 2048);
        let shares = scale_load(1024);
        let check = |queue: &mut GroupQueue, tg_shares: u64| {
            let fresh = queue.calc_group_shares(tg_shares);
            assert_eq!(queue.group_shares(tg_shares), fresh, "{queue:?}");
            // Asked again with nothing changed: the remembered shares.
            assert_eq!(queue.group_shares(tg_shares), fresh, "{queue:?}");
            fresh
        };
        assert_eq!(scale_load_down(check(&mut queue, shares)), 512);
        // Each input alone, then back.
        assert_eq!(scale_load_down(check(&mut queue, 2 * shares)), 1024);
        assert_eq!(scale_load_down(check(&mut queue, shares)), 512);
        queue.load = scale_load(3072);
        assert_eq!(scale_load_down(check(&mut queue, shares)), 768);
        queue.load = scale_load(1024);
        assert_eq!(scale_load_down(check(&mut queue, shares)), 512);
        queue.pelt.avg.load_avg = 3072;
        assert_eq!(scale_load_down(check(&mut queue, shares)), 768);
        queue.pelt.avg.load_avg = 1024;
        assert_eq!(scale_load_down(check(&mut queue, shares)), 512);
        queue.tg_load_avg = 1024;
        assert_eq!(scale_load_down(check(&mut queue, shares)), 1024);
        queue.tg_load_avg = 2048;
        assert_eq!(scale_load_down(check(&mut queue, shares)), 512);
        queue.tg_load_avg_contrib = 2048;
        assert_eq!(scale_load_down(check(&mut queue, shares)), 1024);
        queue.tg_load_avg_contrib = 1024;
        assert_eq!(scale_load_down(check(&mut queue, shares)), 512);
        // An input beyond 32 bits: computed each time, and the memo of the
        // last inputs that fit still answers for them.
        queue.tg_load_avg = 1 << 40;
        let wide = check(&mut queue, shares);
        assert_eq!(wide, queue.calc_group_shares(shares));
        queue.tg_load_avg = 2048;
        assert_eq!(scale_load_down(check(&mut queue, shares)), 512);
        // Two weights in turn (a task waking and sleeping): both remembered,
        // each with its own shares; a third weight, then the other inputs
        // changing, replace them.
        queue.load = scale_load(2048);
        assert_eq!(scale_load_down(check(&mut queue, shares)), 682);
        queue.load = scale_load(1024);
        assert_eq!(scale_load_down(check(&mut queue, shares)), 512);
        queue.load = scale_load(2048);
        assert_eq!(scale_load_down(check(&mut queue, shares)), 682);
        queue.load = scale_load(3072);
        assert_eq!(scale_load_down(check(&mut queue, shares)), 768);
        queue.load = scale_load(1024);
        assert_eq!(scale_load_down(check(&mut queue, shares)), 512);
        queue.tg_load_avg = 1024;
        queue.load = scale_load(3072);
        assert_eq!(scale_load_down(check(&mut queue, shares)), 1024);
        queue.tg_load_avg = 2048;
        queue.load = scale_load(1024);
        assert_eq!(scale_load_down(check(&mut queue, shares)), 512);
        // The first call on a new run queue: the memo starts at all-zero
        // inputs with their own shares.
        let mut empty = GroupQueue::default();
        assert_eq!(check(&mut empty, 0), MIN_SHARES);
        assert_eq!(check(&mut empty, shares), MIN_SHARES);
    }

    /// §1.1: shares in 2..=262144; cpu.weight 1..=10000 maps to weight*1024/100
    /// rounded (100 → 1024, 1 → 10, 10000 → 102400).
    #[test]
    fn shares_validation() {
        assert_eq!(validate_shares(2), Ok(2));
        assert_eq!(validate_shares(1 << 18), Ok(1 << 18));
        assert_eq!(
            validate_shares(1),
            Err(GroupError::OutOfRange {
                field: "shares",
                value: 1,
                min: 2,
                max: 262_144
            })
        );
        assert!(validate_shares((1 << 18) + 1).is_err());
        assert_eq!(shares_from_cpu_weight(100), Ok(1024));
        assert_eq!(shares_from_cpu_weight(1), Ok(10));
        assert_eq!(shares_from_cpu_weight(10_000), Ok(102_400));
        assert!(matches!(
            shares_from_cpu_weight(0),
            Err(GroupError::OutOfRange {
                field: "cpu.weight",
                value: 0,
                ..
            })
        ));
    }

    /// §2.7: the contribution moves only past 1/64 and at most once per ms.
    #[test]
    fn tg_load_avg_rate_limit() {
        let mut queue = GroupQueue::default();
        queue.pelt.avg.load_avg = 1000;
        queue.update_tg_load_avg(5_000_000);
        assert_eq!((queue.tg_load_avg_contrib, queue.tg_load_avg), (1000, 1000));
        queue.pelt.avg.load_avg = 1010; // |10| <= 1000/64 = 15: no update
        queue.update_tg_load_avg(7_000_000);
        assert_eq!(queue.tg_load_avg, 1000);
        queue.pelt.avg.load_avg = 1100; // within 1 ms of the last update: no update
        queue.update_tg_load_avg(5_500_000);
        assert_eq!(queue.tg_load_avg, 1000);
        queue.update_tg_load_avg(6_000_000);
        assert_eq!((queue.tg_load_avg_contrib, queue.tg_load_avg), (1100, 1100));
    }
}
