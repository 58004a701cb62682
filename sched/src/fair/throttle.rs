//! CFS bandwidth control inside one CPU's fair run queue
//! (docs/linux-sched-reference.md §4.2): `update_curr` charges each limited
//! group's run queue, a run queue that finds its pool empty is throttled (its
//! group entity leaves the hierarchy and its subtree's PELT clocks stop), and
//! runtime granted by the pool's timers brings it back.
//!
//! ```text
//!   update_curr(q) ─► account_cfs_rq_runtime: local runtime -= delta;
//!                     at 0, a 5 ms slice from the pool; none: resched
//!   put_prev / enqueue of an idle queue ─► check_cfs_rq_runtime: 1 ns
//!                     from the pool, else throttle_cfs_rq:
//!                     freeze PELT below q, dequeue q's entity upwards
//!   grant (period or slack timer, on this CPU) ─► unthrottle_cfs_rq:
//!                     thaw PELT below q, enqueue q's entity upwards
//! ```
//!
//! A throttled run queue keeps its entities; the levels above it do not
//! count its tasks (`h_nr_running`), so enqueue, dequeue and the delayed
//! dequeue stop at a throttled level, as Linux's walks do.
//!
//! The pools belong to every CPU ([`BandwidthPools`]); this run queue takes a
//! pool's lock only on the slow paths (a slice, the last attempt, a throttle,
//! a slack return). Until a group has a quota, [`FairRunQueue::bandwidth`] is
//! `None` and `update_curr` pays one test for all of this.
//!
//! The link to the pools has three modes ([`PoolSource`]): live; live with
//! each answer kept for the core's record (the answers of `assign` and
//! `return_slack`, and the absence of a pool, on a tape allocated at the
//! attach and shared with the core, which drains it before the record of the
//! call they were given in); and replay, where the answers come from the
//! record in order and the calls without an answer do nothing. A replay thus
//! never needs the order in which the CPUs reached a pool
//! (docs/core-driver.md, "Replay").

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::Arc;

use super::{FairRunQueue, Pick};
use crate::bandwidth::MIN_CFS_RQ_RUNTIME;
use crate::bandwidth::pool::CfsBandwidth;
use crate::bandwidth::pools::{
    AnswerTape, BandwidthPools, BandwidthTimer, BandwidthTimerKind, PoolMismatch, PoolSource,
    SharedAnswerTape,
};
use crate::bandwidth::runtime::{Charge, PoolAccess, PoolAnswer, PoolCall};
use crate::class::EnqueueFlags;
use crate::fair::group::GroupError;
use crate::fair::timeline::NIL;
use crate::pelt::update::UpdateFlags;
use crate::task::{GroupId, Nanoseconds, TaskId};

/// The pools a run queue draws from, how it reaches them, and the CPU it is.
/// The mode sits behind a box, allocated at the attach: the link is two
/// words with a pointer first, as the plain link (`Arc`, CPU) was, so the
/// test every bandwidth step makes (`bandwidth.is_some()`) is the same null
/// test, and a run queue's layout does not change.
#[derive(Debug)]
pub struct BandwidthLink {
    mode: Box<LinkMode>,
    cpu: u16,
}

/// How a link reaches the pools.
#[derive(Debug)]
enum LinkMode {
    /// The shared pools.
    Live(Arc<BandwidthPools>),
    /// The shared pools, their answers kept for the record.
    Recorded(RecordedLink),
    /// The answers of a record.
    Replayed(ReplayedLink),
}

/// A live link that keeps the pools' answers for the core's record.
#[derive(Debug)]
struct RecordedLink {
    pools: Arc<BandwidthPools>,
    /// Answers since the core last drained them.
    tape: Arc<SharedAnswerTape>,
}

/// A replayed link: the recorded answers of the call being replayed.
#[derive(Debug)]
struct ReplayedLink {
    queue: VecDeque<PoolAnswer>,
    /// The first use of the pools the record contradicts.
    mismatch: Option<PoolMismatch>,
}

/// A pool reached through a recording link: each answer is kept.
struct Recorder<'a> {
    pool: &'a mut CfsBandwidth,
    group: GroupId,
    tape: &'a mut AnswerTape,
}

impl Recorder<'_> {
    fn kept(
        &mut self,
        call: PoolCall,
        (amount, timer): (Nanoseconds, Option<Nanoseconds>),
    ) -> (Nanoseconds, Option<Nanoseconds>) {
        self.tape.keep(PoolAnswer {
            group: self.group,
            call,
            amount,
            timer,
        });
        (amount, timer)
    }
}

impl PoolAccess for Recorder<'_> {
    fn assign(
        &mut self,
        runtime_remaining: i64,
        target: Nanoseconds,
        now: Nanoseconds,
    ) -> (Nanoseconds, Option<Nanoseconds>) {
        let answer = self.pool.assign(runtime_remaining, target, now);
        self.kept(PoolCall::Assign, answer)
    }
    fn throttle(&mut self, cpu: u16, runtime_remaining: i64) {
        self.pool.throttle(cpu, runtime_remaining);
    }
    fn return_slack(
        &mut self,
        runtime_remaining: i64,
        now: Nanoseconds,
    ) -> (Nanoseconds, Option<Nanoseconds>) {
        let answer = self.pool.return_slack(runtime_remaining, now);
        self.kept(PoolCall::ReturnSlack, answer)
    }
    fn add_throttled_time(&mut self, throttled_ns: Nanoseconds) {
        self.pool.add_throttled_time(throttled_ns);
    }
    fn unthrottled(&mut self, cpu: u16, throttled_ns: Nanoseconds) {
        self.pool.unthrottled(cpu, throttled_ns);
    }
}

/// A pool replayed from the record: each answer is the next one recorded.
struct Replayer<'a> {
    link: &'a mut ReplayedLink,
    group: GroupId,
}

impl Replayer<'_> {
    fn answer(&mut self, call: PoolCall) -> (Nanoseconds, Option<Nanoseconds>) {
        let link = &mut *self.link;
        match link.queue.front() {
            Some(&answer) if answer.group == self.group && answer.call == call => {
                link.queue.pop_front();
                (answer.amount, answer.timer)
            }
            Some(&recorded) => {
                link.mismatch.get_or_insert(PoolMismatch::Mismatched {
                    group: self.group,
                    call,
                    recorded,
                });
                (0, None)
            }
            None => {
                link.mismatch.get_or_insert(PoolMismatch::Unanswered {
                    group: self.group,
                    call,
                });
                (0, None)
            }
        }
    }
}

impl PoolAccess for Replayer<'_> {
    fn assign(
        &mut self,
        _runtime_remaining: i64,
        _target: Nanoseconds,
        _now: Nanoseconds,
    ) -> (Nanoseconds, Option<Nanoseconds>) {
        self.answer(PoolCall::Assign)
    }
    fn throttle(&mut self, _cpu: u16, _runtime_remaining: i64) {}
    fn return_slack(
        &mut self,
        _runtime_remaining: i64,
        _now: Nanoseconds,
    ) -> (Nanoseconds, Option<Nanoseconds>) {
        self.answer(PoolCall::ReturnSlack)
    }
    fn add_throttled_time(&mut self, _throttled_ns: Nanoseconds) {}
    fn unthrottled(&mut self, _cpu: u16, _throttled_ns: Nanoseconds) {}
}

impl BandwidthLink {
    /// The link of CPU `cpu` for `source`.
    fn new(source: PoolSource, cpu: u16) -> Self {
        let mode = match source {
            PoolSource::Live(pools) => LinkMode::Live(pools),
            PoolSource::Recorded { pools, tape } => {
                LinkMode::Recorded(RecordedLink { pools, tape })
            }
            PoolSource::Replayed => LinkMode::Replayed(ReplayedLink {
                queue: VecDeque::new(),
                mismatch: None,
            }),
        };
        BandwidthLink {
            mode: Box::new(mode),
            cpu,
        }
    }

    /// Runs `f` on `group`'s pool as this link reaches it; `None` when the
    /// group has no pool, and then `f` does not run. A recording keeps that
    /// absence as an answer ([`PoolCall::NoPool`]) and a replay gives it
    /// back: the next recorded answer is the absence of this group's pool.
    #[inline]
    fn with<R>(&mut self, group: GroupId, f: impl FnOnce(&mut dyn PoolAccess) -> R) -> Option<R> {
        match &mut *self.mode {
            LinkMode::Live(pools) => pools.with(group, |pool| f(pool)),
            LinkMode::Recorded(RecordedLink { pools, tape }) => {
                let mut tape = tape.lock();
                let result = pools.with(group, |pool| {
                    f(&mut Recorder {
                        pool,
                        group,
                        tape: &mut tape,
                    })
                });
                if result.is_none() {
                    tape.keep(PoolAnswer {
                        group,
                        call: PoolCall::NoPool,
                        amount: 0,
                        timer: None,
                    });
                }
                result
            }
            LinkMode::Replayed(link) => {
                if link
                    .queue
                    .front()
                    .is_some_and(|a| a.group == group && a.call == PoolCall::NoPool)
                {
                    link.queue.pop_front();
                    return None;
                }
                Some(f(&mut Replayer { link, group }))
            }
        }
    }

    /// [`PoolAccess::unthrottled`] on `group`'s pool, if it has one (its
    /// absence changes nothing here, so it is not recorded; a replay does
    /// nothing).
    fn unthrottled(&mut self, group: GroupId, throttled_ns: Nanoseconds) {
        let cpu = self.cpu;
        match &*self.mode {
            LinkMode::Live(pools) | LinkMode::Recorded(RecordedLink { pools, .. }) => {
                pools.with(group, |pool| pool.unthrottled(cpu, throttled_ns));
            }
            LinkMode::Replayed(_) => {}
        }
    }

    fn replayed(&mut self) -> Option<&mut ReplayedLink> {
        match &mut *self.mode {
            LinkMode::Replayed(link) => Some(link),
            _ => None,
        }
    }
}

impl<P: Pick, const BW: bool> FairRunQueue<P, BW> {
    /// Connects this run queue, CPU `cpu`, to the groups' pools: from now on
    /// `update_curr` charges limited groups.
    ///
    /// Returns false, and leaves it unconnected, for a run queue built
    /// [`without_bandwidth`](FairRunQueue::without_bandwidth).
    pub fn attach_bandwidth(&mut self, pools: Arc<BandwidthPools>, cpu: u16) -> bool {
        self.attach_bandwidth_with(PoolSource::Live(pools), cpu)
    }

    /// As [`FairRunQueue::attach_bandwidth`], reaching the pools as `source`
    /// says: live, live with each answer kept for the core's record, or
    /// replayed from a record.
    pub fn attach_bandwidth_with(&mut self, source: PoolSource, cpu: u16) -> bool {
        if BW {
            self.bandwidth = Some(BandwidthLink::new(source, cpu));
        }
        BW
    }

    /// Queues a recorded pool answer for the replayed call that asks for
    /// it; false when the link does not replay.
    pub fn queue_pool_answer(&mut self, answer: PoolAnswer) -> bool {
        match self.bandwidth.as_mut().and_then(BandwidthLink::replayed) {
            Some(link) if BW => {
                link.queue.push_back(answer);
                true
            }
            _ => false,
        }
    }

    /// After a replayed call: the first use of the pools the record
    /// contradicted, or the first recorded answer it left unasked (the
    /// queue is then emptied for the next call).
    pub fn take_pool_mismatch(&mut self) -> Option<PoolMismatch> {
        match self.bandwidth.as_mut().and_then(BandwidthLink::replayed) {
            Some(link) if BW => {
                let mismatch = link.mismatch.take().or_else(|| {
                    link.queue
                        .front()
                        .map(|&recorded| PoolMismatch::Unasked { recorded })
                });
                link.queue.clear();
                mismatch
            }
            _ => None,
        }
    }

    /// `tg_set_cfs_bandwidth` on this CPU (§4.1): the group's run queue is
    /// limited or not, starts with no local runtime, and is unthrottled if it
    /// was throttled. Call it after the pool was set.
    pub fn set_group_bandwidth(
        &mut self,
        group: GroupId,
        limited: bool,
        now: Nanoseconds,
    ) -> Result<(), GroupError> {
        if group == GroupId::ROOT {
            return Err(GroupError::RootGroup);
        }
        if !self.groups.get(group.index()).is_some_and(|g| g.exists) {
            return Err(GroupError::NoSuchGroup { group: group.0 });
        }
        self.advance_clock(now);
        let runtime = &mut self.queues[group.index()].runtime;
        runtime.enabled = limited && self.bandwidth.is_some();
        runtime.runtime_remaining = 0;
        if runtime.throttled {
            runtime.throttled = false;
            runtime.throttled_time_self += now.saturating_sub(runtime.throttled_clock_self);
            let throttled_ns = now.saturating_sub(runtime.throttled_clock);
            if let Some(link) = &mut self.bandwidth {
                link.unthrottled(group, throttled_ns);
            }
            self.unthrottle_hierarchy(group, now);
        }
        Ok(())
    }

    /// The PELT clock of run queue `q` (`cfs_rq_clock_pelt`): the CPU's,
    /// less the time its subtree spent throttled, and stopped while it is.
    pub(super) fn queue_clock_pelt(&self, q: GroupId) -> Nanoseconds {
        let runtime = &self.queues[q.index()].runtime;
        if runtime.throttle_count > 0 {
            runtime
                .throttled_clock_pelt
                .saturating_sub(runtime.throttled_clock_pelt_time)
        } else {
            self.clock
                .now()
                .saturating_sub(runtime.throttled_clock_pelt_time)
        }
    }

    /// Whether `q` is throttled (`cfs_rq_throttled`).
    #[inline(always)]
    pub(super) fn queue_throttled(&self, q: GroupId) -> bool {
        BW && self.queues[q.index()].runtime.throttled
    }

    /// Whether `task`'s run queue or one above it is throttled here
    /// (`throttled_hierarchy`): it is queued but cannot run.
    pub fn task_throttled(&self, task: TaskId) -> bool {
        BW && self
            .entities
            .get(self.task_se(task) as usize)
            .is_some_and(|entity| self.queues[entity.queue.index()].runtime.throttle_count > 0)
    }

    /// The next timer request of this CPU's run queues, if any (a
    /// mechanism without a hook drains them after each call).
    pub fn take_bandwidth_timer(&mut self) -> Option<BandwidthTimer> {
        self.bandwidth_timers.pop()
    }

    /// Gives the function that arms a requested period or slack timer on
    /// this CPU at once (the kernel's high-resolution timer queue). It is
    /// called under the caller's run-queue lock, never under a pool's. The
    /// requests come only from the cold bandwidth paths, so a mechanism with
    /// a hook makes no per-operation poll: with no quota, bandwidth control
    /// adds nothing to its hot paths.
    pub fn set_bandwidth_timer_hook(&mut self, hook: fn(BandwidthTimer)) {
        self.bandwidth_timer_hook = Some(hook);
    }

    /// A timer request (at most one per group and timer per operation: the
    /// pool hands out a request only while its timer is idle), armed by the
    /// hook or queued for the mechanism's poll.
    fn request(&mut self, group: GroupId, kind: BandwidthTimerKind, expires: Option<Nanoseconds>) {
        let Some(expires) = expires else {
            return;
        };
        let timer = BandwidthTimer {
            group,
            kind,
            expires,
        };
        match self.bandwidth_timer_hook {
            Some(arm) => arm(timer),
            None => self.bandwidth_timers.push(timer),
        }
    }

    /// `account_cfs_rq_runtime` from `update_curr` (§4.2): `delta` ns ran on
    /// `q`; at the end of the local runtime a slice comes from the pool, and
    /// when none is left the running entity must give up the CPU. Only the
    /// end of the local runtime takes the pool's lock.
    #[inline(always)]
    pub(super) fn account_cfs_rq_runtime(&mut self, q: GroupId, delta: u64, now: Nanoseconds) {
        let runtime = &mut self.queues[q.index()].runtime;
        if !runtime.enabled {
            return;
        }
        if runtime.throttled || runtime.runtime_remaining > delta as i64 {
            runtime.runtime_remaining -= delta as i64;
            return;
        }
        self.assign_cfs_rq_runtime(q, delta, now);
    }

    /// The slow half of `account_cfs_rq_runtime`: a slice from the pool.
    #[cold]
    #[inline(never)]
    fn assign_cfs_rq_runtime(&mut self, q: GroupId, delta: u64, now: Nanoseconds) {
        let Some(link) = self.bandwidth.as_mut() else {
            return;
        };
        let runtime = &mut self.queues[q.index()].runtime;
        let charge = link.with(q, |pool| runtime.charge(delta, pool, now));
        let timer = match charge {
            Some(Charge::Refilled { timer }) => timer,
            Some(Charge::Exhausted { timer }) => {
                if self.queues[q.index()].curr != NIL {
                    self.need_resched = true;
                }
                timer
            }
            Some(Charge::Runs) | None => None,
        };
        self.request(q, BandwidthTimerKind::Period, timer);
    }

    /// `check_cfs_rq_runtime` (§4.2): `q` is out of runtime; one last attempt
    /// for 1 ns, then it is throttled. Returns whether it is throttled now.
    #[cold]
    #[inline(never)]
    pub(super) fn check_cfs_rq_runtime(&mut self, q: GroupId, now: Nanoseconds) -> bool {
        let Some(link) = self.bandwidth.as_mut() else {
            return false;
        };
        let runtime = &mut self.queues[q.index()].runtime;
        if !runtime.enabled || runtime.throttled || runtime.runtime_remaining > 0 {
            return runtime.throttled;
        }
        let cpu = link.cpu;
        let Some((throttled, timer)) =
            link.with(q, |pool| runtime.throttle_if_needed(pool, cpu, now))
        else {
            return false;
        };
        self.request(q, BandwidthTimerKind::Period, timer);
        if throttled {
            self.throttle_hierarchy(q, now);
        }
        throttled
    }

    /// `check_enqueue_throttle`: the first entity was just queued on `q`,
    /// which is not running: without runtime it is throttled at once, before
    /// its group entity joins the level above. Returns whether it is.
    #[cold]
    #[inline(never)]
    pub(super) fn check_enqueue_throttle(&mut self, q: GroupId, now: Nanoseconds) -> bool {
        let queue = &self.queues[q.index()];
        if !queue.runtime.enabled || queue.curr != NIL || queue.nr_queued != 1 {
            return queue.runtime.throttled;
        }
        if queue.runtime.throttled {
            return true;
        }
        self.account_cfs_rq_runtime(q, 0, now);
        self.check_cfs_rq_runtime(q, now)
    }

    /// `return_cfs_rq_runtime` (§4.2): `q` has nothing queued any more; what
    /// it holds above 1 ms goes back to the pool.
    #[cold]
    #[inline(never)]
    pub(super) fn return_cfs_rq_runtime(&mut self, q: GroupId, now: Nanoseconds) {
        let Some(link) = self.bandwidth.as_mut() else {
            return;
        };
        let queue = &mut self.queues[q.index()];
        let runtime = &mut queue.runtime;
        if !runtime.enabled
            || queue.nr_queued != 0
            || runtime.runtime_remaining <= MIN_CFS_RQ_RUNTIME as i64
        {
            return;
        }
        let timer = link
            .with(q, |pool| runtime.return_slack(pool, now))
            .flatten();
        self.request(q, BandwidthTimerKind::Slack, timer);
    }

    /// The bandwidth steps of `enqueue_task`, after its walks
    /// (`check_enqueue_throttle` at each of the `levels` run queues the walk
    /// queued an entity on, from the task's up): the first that must be
    /// throttled is, and its group entity leaves the levels above.
    #[inline(never)]
    pub(super) fn enqueue_throttle_pass(&mut self, task: u32, levels: u32, now: Nanoseconds) {
        let mut level = Some(task);
        for _ in 0..levels {
            let Some(se) = level else {
                return;
            };
            let q = self.entities[se as usize].queue;
            let queue = &self.queues[q.index()];
            if queue.runtime.enabled && queue.nr_queued == 1 && self.check_enqueue_throttle(q, now)
            {
                return;
            }
            level = self.parent_entity(se);
        }
    }

    /// The bandwidth step of `put_prev_task`, after its walk
    /// (`put_prev_entity`'s `check_cfs_rq_runtime` at each level, from the
    /// task's run queue up): a run queue out of runtime is throttled.
    #[inline(never)]
    pub(super) fn put_prev_throttle_pass(&mut self, task: u32, now: Nanoseconds) {
        let mut q = self.entities[task as usize].queue;
        while q != GroupId::ROOT {
            let runtime = &self.queues[q.index()].runtime;
            if runtime.enabled && !runtime.throttled && runtime.runtime_remaining <= 0 {
                self.check_cfs_rq_runtime(q, now);
            }
            q = self.groups[q.index()].parent;
        }
    }

    /// The bandwidth step of `dequeue_entities`, after its walks
    /// (`return_cfs_rq_runtime` of `dequeue_entity`): every limited run queue
    /// from `start`'s up that is left empty returns its slack.
    #[inline(never)]
    pub(super) fn return_slack_pass(&mut self, start: u32, now: Nanoseconds) {
        let mut q = self.entities[start as usize].queue;
        while q != GroupId::ROOT {
            let queue = &self.queues[q.index()];
            if queue.runtime.enabled
                && queue.nr_queued == 0
                && queue.runtime.runtime_remaining > MIN_CFS_RQ_RUNTIME as i64
            {
                self.return_cfs_rq_runtime(q, now);
            }
            q = self.groups[q.index()].parent;
        }
    }

    /// Runtime granted to `group`'s run queue here by the pool's period or
    /// slack timer (`distribute_cfs_runtime`); `unthrottle`: it has runtime
    /// again and comes back (`unthrottle_cfs_rq`). Returns whether it was
    /// unthrottled.
    pub fn distribute_runtime(
        &mut self,
        group: GroupId,
        amount: Nanoseconds,
        unthrottle: bool,
        now: Nanoseconds,
    ) -> bool {
        let Some(link) = self.bandwidth.as_mut() else {
            return false;
        };
        let Some(queue) = self.queues.get_mut(group.index()) else {
            return false;
        };
        let runtime = &mut queue.runtime;
        if !runtime.enabled || !runtime.throttled {
            // The limit changed since the grant was made: set_group_bandwidth
            // unthrottled it already.
            return false;
        }
        let unthrottled = link
            .with(group, |pool| runtime.grant(amount, unthrottle, pool, now))
            .unwrap_or(false);
        if unthrottled {
            self.advance_clock(now);
            self.unthrottle_hierarchy(group, now);
        }
        unthrottled
    }

    /// Whether group `g` is `q` or below it.
    fn in_subtree(&self, mut g: GroupId, q: GroupId) -> bool {
        loop {
            if g == q {
                return true;
            }
            if g == GroupId::ROOT {
                return false;
            }
            g = self.groups[g.index()].parent;
        }
    }

    /// `throttle_cfs_rq` after the decision: `tg_throttle_down` freezes the
    /// PELT clocks of `q` and every group below it, then `q`'s group entity
    /// leaves the level above, and every level above loses `q`'s tasks.
    fn throttle_hierarchy(&mut self, q: GroupId, now: Nanoseconds) {
        let pelt_now = self.clock.now();
        for g in 1..self.groups.len() {
            if self.groups[g].exists && self.in_subtree(GroupId(g as u16), q) {
                self.queues[g].runtime.freeze(pelt_now);
            }
        }
        let task_delta = self.queues[q.index()].h_nr_running;
        let mut level = Some(self.group_entity(q));
        while let Some(se) = level {
            if !self.entities[se as usize].on_rq {
                return;
            }
            let parent = self.entities[se as usize].queue;
            let delayed = self.entities[se as usize].delayed;
            self.dequeue_entity_special(parent, se, delayed, now);
            self.queues[parent.index()].h_nr_running -= task_delta;
            self.return_cfs_rq_runtime(parent, now);
            level = self.parent_entity(se);
            if self.queues[parent.index()].load != 0 {
                break;
            }
        }
        while let Some(se) = level {
            if !self.entities[se as usize].on_rq {
                return;
            }
            let parent = self.entities[se as usize].queue;
            self.update_entity_load(parent, se, UpdateFlags::UPDATE_TG, now);
            self.update_group_entity_weight(se, now);
            self.queues[parent.index()].h_nr_running -= task_delta;
            level = self.parent_entity(se);
        }
    }

    /// `unthrottle_cfs_rq` after the decision: the subtree's PELT clocks run
    /// again, without the frozen time, and `q`'s group entity comes back up
    /// to the first level that is queued or throttled.
    fn unthrottle_hierarchy(&mut self, q: GroupId, now: Nanoseconds) {
        let pelt_now = self.clock.now();
        for g in 1..self.groups.len() {
            if self.groups[g].exists && self.in_subtree(GroupId(g as u16), q) {
                self.queues[g].runtime.thaw(pelt_now);
            }
        }
        if self.queues[q.index()].load == 0 {
            return;
        }
        let task_delta = self.queues[q.index()].h_nr_running;
        let mut level = Some(self.group_entity(q));
        while let Some(se) = level {
            if self.entities[se as usize].on_rq {
                // A group entity above that was left delayed (its run queue
                // emptied while this one was throttled) is runnable again
                // (Linux: "Handle any unfinished DELAY_DEQUEUE business").
                if self.entities[se as usize].delayed {
                    self.requeue_delayed_entity(se, now);
                }
                break;
            }
            let parent = self.entities[se as usize].queue;
            let flags = EnqueueFlags {
                wakeup: true,
                ..EnqueueFlags::default()
            };
            self.enqueue_entity(parent, se, flags, now);
            self.queues[parent.index()].h_nr_running += task_delta;
            if self.queue_throttled(parent) {
                return;
            }
            level = self.parent_entity(se);
        }
        while let Some(se) = level {
            let parent = self.entities[se as usize].queue;
            self.update_entity_load(parent, se, UpdateFlags::UPDATE_TG, now);
            self.update_group_entity_weight(se, now);
            self.queues[parent.index()].h_nr_running += task_delta;
            if self.queue_throttled(parent) {
                return;
            }
            level = self.parent_entity(se);
        }
    }
}
