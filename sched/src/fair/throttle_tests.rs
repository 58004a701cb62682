//! Tests of CFS bandwidth control in the fair class (docs/linux-sched-reference.md
//! §4.2): small cases of the class mechanics worked out by hand (throttle at
//! `put_prev` up a two-level hierarchy, unthrottle by a grant, a wake-up into a
//! throttled group, the frozen PELT clock, an idle CPU rescheduling at the
//! unthrottle, the last 1 ns attempt, slack paid by the slack timer, a delayed
//! group entity above a throttled run queue), and a seeded stress test of
//! several CPUs' cores sharing one set of pools, with migrations, timers fired
//! at their expiry and limits changed mid-run.

extern crate std;

use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use super::load::PELT_EPOCH;
use super::test_support::{INITIAL, MS, WAKEUP, cfs, eevdf, in_group};
use super::{FairRunQueue, PickPolicy};
use crate::bandwidth::pool::{Grant, Throttled};
use crate::bandwidth::pools::{BandwidthPools, BandwidthTimer, BandwidthTimerKind};
use crate::bandwidth::runtime::PoolCall;
use crate::bandwidth::{Bandwidth, MIN_EXPIRATION, SLACK_PERIOD, SLICE};
use crate::class::{DequeueFlags, Resched, SchedClass};
use crate::cpu_core::record::{Input, Record};
use crate::cpu_core::{CpuCore, Decision, Leaving};
use crate::fair::{CfsTunables, EevdfTunables};
use crate::run_queue::{PolicyKind, RunQueue};
use crate::task::{GroupId, Nanoseconds, Policy, TaskId, TaskParams};

// ---------------------------------------------------------------------------
// Deterministic cases
// ---------------------------------------------------------------------------

const PERIOD: Nanoseconds = 100 * MS;
const QUOTA: Nanoseconds = 3 * MS;

/// Task numbers of the hand-worked cases.
const T0: TaskId = TaskId(0); // in B
const T1: TaskId = TaskId(1); // in B
const T2: TaskId = TaskId(2); // root, SCHED_IDLE: any normal wakee preempts it
const T3: TaskId = TaskId(3); // in B, woken while B is throttled
const T4: TaskId = TaskId(4); // in A (the variant where A keeps a task)
const T5: TaskId = TaskId(5); // root, normal: the wakee that does preempt

/// One CPU, groups A (under the root) and B (under A), B limited to 3 ms per
/// 100 ms without burst (grid at 0), tasks created but not queued.
struct Case {
    fair: FairRunQueue,
    pools: Arc<BandwidthPools>,
    a: GroupId,
    b: GroupId,
}

fn case(pick: PickPolicy) -> Case {
    let mut fair = FairRunQueue::new(pick, 6, 3);
    let a = fair.create_group(GroupId::ROOT, 1024).unwrap();
    let b = fair.create_group(a, 1024).unwrap();
    let pools = Arc::new(BandwidthPools::new(3));
    let settings = Bandwidth {
        period: PERIOD,
        quota: Some(QUOTA),
        burst: 0,
    };
    settings.validate().unwrap();
    pools.set(b, settings, 0, 1);
    fair.attach_bandwidth(pools.clone(), 0);
    fair.set_group_bandwidth(b, true, 0).unwrap();
    for (task, group) in [(T0, b), (T1, b), (T3, b), (T4, a), (T5, GroupId::ROOT)] {
        fair.task_new(task, &in_group(0, group), 0).unwrap();
    }
    let idle = TaskParams {
        policy: Policy::Idle,
        ..TaskParams::default()
    };
    fair.task_new(T2, &idle, 0).unwrap();
    Case { fair, pools, a, b }
}

impl Case {
    fn h_nr_running(&self, g: GroupId) -> u32 {
        self.fair.queues[g.index()].h_nr_running
    }
    fn nr_queued(&self, g: GroupId) -> u32 {
        self.fair.queues[g.index()].nr_queued
    }
    fn entity_queued(&self, g: GroupId) -> bool {
        self.fair.entities[self.fair.group_entity(g) as usize].on_rq
    }
    fn pelt_last_update(&self, g: GroupId) -> u64 {
        self.fair.queues[g.index()].pelt.avg.last_update_time
    }
}

/// B's two tasks are queued at 0 and one of them runs until 4 ms, when
/// `put_prev_task` finds B out of runtime and throttles it. `t4_in_a`: A also
/// holds task 4 from 0, so that A stays queued. T2 is queued at 0 too.
///
/// By hand (§4.2):
/// - the first enqueue into B (`check_enqueue_throttle`, an idle run queue
///   with runtime 0) borrows min(5 ms slice, pool 3 ms): B holds 3 ms, the pool
///   0, and the period timer is asked for the first grid point after 0: 100 ms;
/// - at 4 ms `update_curr` charges B 4 ms: 3 - 4 = -1 ms, the pool gives
///   nothing (resched); `put_prev` makes the last attempt for 1 ns, gets
///   nothing and throttles B with its debt of 1 ms (FIFO: CPU 0, -1 ms);
/// - B's entity leaves A. Without T4, A is left empty and A's entity leaves the
///   root: root h_nr_running 3 → 1 (T2); with T4, A keeps T4 and stays queued:
///   A's h_nr_running 3 → 1, the root's 4 → 2. B itself still counts its 2.
fn throttle_b_at_put_prev(pick: PickPolicy, t4_in_a: bool) -> Case {
    let mut c = case(pick);
    let (a, b) = (c.a, c.b);
    c.fair.enqueue_task(T0, 0, INITIAL);
    c.fair.enqueue_task(T1, 0, INITIAL);
    assert_eq!(
        c.fair.queues[b.index()].runtime.runtime_remaining,
        3 * MS as i64
    );
    assert_eq!(c.pools.with(b, |p| p.runtime()), Some(0));
    assert_eq!(
        c.fair.take_bandwidth_timer(),
        Some(BandwidthTimer {
            group: b,
            kind: BandwidthTimerKind::Period,
            expires: PERIOD,
        })
    );
    assert_eq!(c.fair.take_bandwidth_timer(), None);
    let ran = c.fair.pick_next_task(0).unwrap();
    assert!(ran == T0 || ran == T1, "only B's tasks are queued: {ran:?}");
    c.fair.set_next_task(ran, 0);
    c.fair.enqueue_task(T2, 0, INITIAL);
    if t4_in_a {
        c.fair.enqueue_task(T4, 0, INITIAL);
    }
    let extra = u32::from(t4_in_a);
    assert_eq!(c.fair.nr_running(), 3 + extra as usize);
    assert_eq!(c.h_nr_running(a), 2 + extra);
    c.fair.check_consistency();

    c.fair.put_prev_task(ran, 4 * MS);
    c.fair.check_consistency();
    let runtime = c.fair.queues[b.index()].runtime;
    assert!(runtime.throttled);
    assert_eq!(runtime.runtime_remaining, -(MS as i64));
    assert_eq!(runtime.throttled_clock, 4 * MS);
    assert_eq!(runtime.throttle_count, 1);
    assert_eq!(c.fair.queues[a.index()].runtime.throttle_count, 0);
    let fifo: Vec<Throttled> = c
        .pools
        .with(b, |p| p.throttled().copied().collect())
        .unwrap();
    assert_eq!(
        fifo,
        [Throttled {
            cpu: 0,
            runtime_remaining: -(MS as i64)
        }]
    );
    assert_eq!(c.fair.take_bandwidth_timer(), None, "the period timer runs");
    // B keeps its entities and counts its own tasks; its entity left A.
    assert_eq!((c.nr_queued(b), c.h_nr_running(b)), (2, 2));
    assert!(!c.entity_queued(b));
    if t4_in_a {
        assert_eq!((c.nr_queued(a), c.h_nr_running(a)), (1, 1));
        assert!(c.entity_queued(a));
        assert_eq!((c.nr_queued(GroupId::ROOT), c.fair.nr_running()), (2, 2));
    } else {
        assert_eq!((c.nr_queued(a), c.h_nr_running(a)), (0, 0));
        assert!(!c.entity_queued(a), "A was left empty and left the root");
        assert_eq!((c.nr_queued(GroupId::ROOT), c.fair.nr_running()), (1, 1));
    }
    assert!(c.fair.task_throttled(T0) && c.fair.task_throttled(T1));
    assert!(!c.fair.task_throttled(T2));
    c
}

#[test]
fn throttle_at_put_prev_dequeues_the_group_entity_up_the_hierarchy() {
    for pick in [eevdf(MS), cfs()] {
        for t4_in_a in [false, true] {
            let mut c = throttle_b_at_put_prev(pick, t4_in_a);
            // Nothing of B is picked: T2 alone, or T2 and A's T4.
            let next = c.fair.pick_next_task(4 * MS).unwrap();
            if t4_in_a {
                assert!(next == T2 || next == T4, "{pick:?}: picked {next:?}");
            } else {
                assert_eq!(next, T2, "{pick:?}");
            }
            c.fair.set_next_task(next, 4 * MS);
            c.fair.check_consistency();
        }
    }
}

/// The timers the hook of [`a_hook_arms_each_request_at_once`] was given.
static HOOKED: spin::Mutex<Vec<BandwidthTimer>> = spin::Mutex::new(Vec::new());

fn hook(timer: BandwidthTimer) {
    HOOKED.lock().push(timer);
}

/// With the mechanism's hook, a request goes to it when it is made and none
/// waits in the queue a poll would drain: the first enqueue into B (an idle
/// run queue with no runtime, as in [`throttle_b_at_put_prev`]) asks for the
/// period timer at the first grid point, 100 ms.
#[test]
fn a_hook_arms_each_request_at_once() {
    let mut c = case(eevdf(MS));
    let b = c.b;
    c.fair.set_bandwidth_timer_hook(hook);
    c.fair.enqueue_task(T0, 0, INITIAL);
    assert_eq!(
        *HOOKED.lock(),
        [BandwidthTimer {
            group: b,
            kind: BandwidthTimerKind::Period,
            expires: PERIOD,
        }]
    );
    assert_eq!(c.fair.take_bandwidth_timer(), None);
}

/// After the throttle of [`throttle_b_at_put_prev`] (T2 running from 4 ms): a
/// task woken into B at 5 ms is counted in B only and does not preempt T2,
/// although T2 is SCHED_IDLE and a normal root task woken at the same time
/// does. At 100 ms the period timer refills 3 ms and pays B its debt + 1 ns
/// (1,000,001 ns, pool left 1,999,999 ns): B is unthrottled with 1 ns of
/// runtime after 96 ms throttled, and B's entity, then A's, come back with B's
/// 3 tasks.
#[test]
fn a_grant_unthrottles_and_a_wakee_of_a_throttled_group_waits_uncounted() {
    for pick in [eevdf(MS), cfs()] {
        for t4_in_a in [false, true] {
            let mut c = throttle_b_at_put_prev(pick, t4_in_a);
            let (a, b) = (c.a, c.b);
            let extra = u32::from(t4_in_a);
            c.fair.set_next_task(T2, 4 * MS);
            c.fair.enqueue_task(T3, 5 * MS, WAKEUP);
            c.fair.check_consistency();
            assert_eq!((c.nr_queued(b), c.h_nr_running(b)), (3, 3));
            assert!(!c.entity_queued(b));
            assert_eq!(c.h_nr_running(a), extra);
            assert_eq!(c.fair.nr_running(), 1 + extra as usize, "T3 is not counted");
            assert!(c.fair.task_throttled(T3));
            assert_eq!(c.fair.wakeup_preempt(T2, T3, 5 * MS), Resched::Keep);
            c.fair.enqueue_task(T5, 5 * MS, WAKEUP);
            assert_eq!(
                c.fair.wakeup_preempt(T2, T5, 5 * MS),
                Resched::Reschedule,
                "an idle-policy task yields to a normal wakee"
            );
            assert_eq!(c.fair.nr_running(), 2 + extra as usize);
            c.fair.check_consistency();

            let outcome = c
                .pools
                .with(b, |p| p.period_timer(|| PERIOD))
                .expect("B has a pool");
            assert_eq!(outcome.rearm, Some(2 * PERIOD));
            assert_eq!(
                outcome.grants,
                [Grant {
                    cpu: 0,
                    amount: MS + 1,
                    unthrottle: true
                }]
            );
            assert_eq!(c.pools.with(b, |p| p.runtime()), Some(2 * MS - 1));
            assert!(c.fair.distribute_runtime(b, MS + 1, true, PERIOD));
            c.fair.check_consistency();
            let runtime = c.fair.queues[b.index()].runtime;
            assert!(!runtime.throttled);
            assert_eq!(runtime.runtime_remaining, 1);
            assert_eq!(runtime.throttle_count, 0);
            assert_eq!(runtime.throttled_time_self, 96 * MS);
            assert!(c.entity_queued(b) && c.entity_queued(a));
            assert_eq!(c.h_nr_running(b), 3);
            assert_eq!(c.h_nr_running(a), 3 + extra);
            // T0, T1, T3 (B), T2, T5 and T4.
            assert_eq!(c.fair.nr_running(), 5 + extra as usize);
            assert!(!c.fair.task_throttled(T3));
            let stats = c.pools.stats(b).unwrap();
            assert_eq!(
                (stats.nr_periods, stats.nr_throttled, stats.throttled_time),
                (1, 1, 96 * MS)
            );
            assert_eq!(c.pools.with(b, |p| p.throttled().count()), Some(0));
        }
    }
}

/// PELT of the throttled B stands still (§4.2, `cfs_rq_clock_pelt`). The CPU
/// runs a task all along at capacity 1024 and full frequency, so its PELT
/// clock is the run-queue clock plus `PELT_EPOCH`. B is frozen at 4 ms with
/// its clock at 4 ms + `PELT_EPOCH`; at 5 ms (a wake-up into B) and at 50 ms
/// (blocked averages) B's clock and `pelt.avg.last_update_time` have not
/// moved, while A's (not throttled) advanced. The grant at 100 ms thaws B:
/// `throttled_clock_pelt_time` grew by the 96 ms throttled, so B's clock reads
/// 4 ms + `PELT_EPOCH` again and then runs on: at 110 ms it is 14 ms +
/// `PELT_EPOCH`, and the blocked-average update brings `last_update_time` to
/// within one 1024 ns PELT unit of it.
#[test]
fn pelt_of_a_throttled_group_queue_is_frozen_and_thawed_without_the_gap() {
    for pick in [eevdf(MS), cfs()] {
        let mut c = throttle_b_at_put_prev(pick, false);
        let (a, b) = (c.a, c.b);
        c.fair.set_next_task(T2, 4 * MS);
        let frozen_clock = 4 * MS + PELT_EPOCH;
        assert_eq!(c.fair.queue_clock_pelt(b), frozen_clock);
        assert_eq!(
            c.fair.queues[b.index()].runtime.throttled_clock_pelt,
            frozen_clock
        );
        assert_eq!(
            c.fair.queues[b.index()].runtime.throttled_clock_pelt_time,
            0
        );
        let frozen_update = c.pelt_last_update(b);
        assert!(frozen_update <= frozen_clock && frozen_update + 1024 > frozen_clock);
        let a_update = c.pelt_last_update(a);

        c.fair.enqueue_task(T3, 5 * MS, WAKEUP);
        assert_eq!(c.fair.queue_clock_pelt(b), frozen_clock);
        assert_eq!(c.pelt_last_update(b), frozen_update);
        c.fair.update_blocked_averages(50 * MS);
        assert_eq!(c.fair.clock.now(), 50 * MS + PELT_EPOCH);
        assert_eq!(c.fair.queue_clock_pelt(b), frozen_clock);
        assert_eq!(c.pelt_last_update(b), frozen_update, "{pick:?}");
        assert!(
            c.pelt_last_update(a) > a_update + 45 * MS,
            "A is not frozen"
        );
        c.fair.check_consistency();

        let outcome = c.pools.with(b, |p| p.period_timer(|| PERIOD)).unwrap();
        let grant = outcome.grants[0];
        assert!(
            c.fair
                .distribute_runtime(b, grant.amount, grant.unthrottle, PERIOD)
        );
        assert_eq!(
            c.fair.queues[b.index()].runtime.throttled_clock_pelt_time,
            96 * MS,
            "{pick:?}: the throttled time at capacity 1024"
        );
        assert_eq!(c.fair.queue_clock_pelt(b), frozen_clock);
        c.fair.update_blocked_averages(110 * MS);
        let thawed_clock = 14 * MS + PELT_EPOCH;
        assert_eq!(c.fair.queue_clock_pelt(b), thawed_clock);
        let update = c.pelt_last_update(b);
        assert!(
            update <= thawed_clock && update + 1024 > thawed_clock,
            "{pick:?}: B's last_update_time {update}, its clock {thawed_clock}"
        );
        c.fair.check_consistency();
    }
}

/// Through the driver: an idle CPU whose only fair tasks are throttled stays
/// idle; the grant that unthrottles them asks it to reschedule, and it runs
/// one of them.
#[test]
fn an_idle_cpu_reschedules_when_its_group_is_unthrottled() {
    let kind = PolicyKind::Eevdf(EevdfTunables::for_cpus(1, MS));
    let mut core = CpuCore::new(0, RunQueue::with_groups(kind, 4, 2), 4, false);
    let g = core.create_group(GroupId::ROOT, 1024, 0).unwrap();
    let pools = Arc::new(BandwidthPools::new(2));
    let settings = Bandwidth {
        period: 10 * MS,
        quota: Some(2 * MS),
        burst: 0,
    };
    pools.set(g, settings, 0, 1);
    core.attach_bandwidth(pools.clone());
    let decision = core.set_group_bandwidth(g, true, 0).unwrap();
    assert!(!decision.resched, "nothing to run");
    let decision = core
        .wake_up_new_task(TaskId(0), &in_group(0, g), 0)
        .unwrap();
    assert!(decision.resched);
    assert_eq!(core.schedule(0, Leaving::Runnable).next, Some(TaskId(0)));
    // The enqueue borrowed the whole 2 ms quota; the tick at 3 ms finds it
    // 1 ms in debt with an empty pool: resched, and the schedule throttles
    // the group. The refill at 10 ms (2 ms) pays the debt + 1 ns.
    assert!(core.sched_tick(3 * MS).resched);
    let switch = core.schedule(3 * MS, Leaving::Runnable);
    assert_eq!(switch.next, None);
    assert!(core.run_queue().task_throttled(TaskId(0)));
    let timer = core.take_bandwidth_timer().unwrap();
    assert_eq!((timer.group, timer.expires), (g, 10 * MS));
    let outcome = pools.with(g, |p| p.period_timer(|| 10 * MS)).unwrap();
    assert_eq!(outcome.grants.len(), 1);
    let grant = outcome.grants[0];
    assert_eq!(
        (grant.cpu, grant.amount, grant.unthrottle),
        (0, MS + 1, true)
    );
    let decision = core.distribute_runtime(g, grant.amount, grant.unthrottle, 10 * MS);
    assert_eq!(
        decision,
        Decision {
            resched: true,
            ..Decision::default()
        }
    );
    assert_eq!(
        core.schedule(10 * MS, Leaving::Runnable).next,
        Some(TaskId(0))
    );
    core.run_queue().fair().unwrap().check_consistency();
}

/// EEVDF with delayed dequeue: a group entity whose dequeue was delayed
/// while the run queue below it was throttled comes back with it. A (under
/// the root) holds task T4 and the limited B (T0); T5 runs in the root.
/// T0 runs from 0 to 4 ms and throttles B (its entity leaves A, which keeps
/// T4); T4 runs from 4 to 5 ms and sleeps: A is empty, and A's entity, which
/// ran 5 ms while T5 ran none (negative lag), is not eligible: its dequeue
/// is delayed (§1.5), A's entity stays queued in the root, delayed. At 100 ms
/// the grant unthrottles B: B's entity joins A again, and A's entity must
/// finish its delayed dequeue and be enqueued again (Linux's
/// `unthrottle_cfs_rq`: "Handle any unfinished DELAY_DEQUEUE business
/// first"), or a later pick that reaches it takes it off the root with T0
/// below it: T0 would be counted but never picked. Afterwards T5 sleeps and
/// the CPU must run T0.
#[test]
fn a_delayed_group_entity_above_a_throttled_queue_comes_back_at_unthrottle() {
    let mut c = case(eevdf(MS));
    let (a, b) = (c.a, c.b);
    for task in [T0, T4, T5] {
        c.fair.enqueue_task(task, 0, INITIAL);
    }
    c.fair.set_next_task(T0, 0);
    c.fair.put_prev_task(T0, 4 * MS);
    assert!(c.fair.queues[b.index()].runtime.throttled);
    assert!(c.entity_queued(a) && !c.entity_queued(b));
    c.fair.set_next_task(T4, 4 * MS);
    c.fair.dequeue_task(T4, 5 * MS, super::test_support::SLEEP);
    c.fair.put_prev_task(T4, 5 * MS);
    let ge_a = c.fair.group_entity(a) as usize;
    assert!(
        c.fair.entities[ge_a].on_rq && c.fair.entities[ge_a].delayed,
        "the case needs A's entity delayed"
    );
    assert_eq!(c.fair.nr_running(), 1, "T5");
    c.fair.check_consistency();

    let outcome = c.pools.with(b, |p| p.period_timer(|| PERIOD)).unwrap();
    let grant = outcome.grants[0];
    assert!(
        c.fair
            .distribute_runtime(b, grant.amount, grant.unthrottle, PERIOD)
    );
    assert!(c.entity_queued(b));
    assert!(
        c.fair.entities[ge_a].on_rq && !c.fair.entities[ge_a].delayed,
        "A's entity is queued again, no longer delayed"
    );
    assert_eq!(c.fair.nr_running(), 2, "T0 and T5");
    c.fair.check_consistency();
    // T5 runs and sleeps; T0 is left, and runs.
    assert_eq!(c.fair.pick_next_task(PERIOD), Some(T5));
    c.fair.set_next_task(T5, PERIOD);
    c.fair
        .dequeue_task(T5, PERIOD + MS, super::test_support::SLEEP);
    c.fair.put_prev_task(T5, PERIOD + MS);
    assert_eq!(c.fair.nr_running(), 1);
    assert_eq!(c.fair.pick_next_task(PERIOD + MS), Some(T0));
}

/// `cpus` (at most 3) run queues sharing one pool for group G (under the
/// root) of `period`/`quota` without burst, grid at 0; task `t` in G is
/// known to run queue `t`.
fn one_limited_group(
    pick: PickPolicy,
    cpus: usize,
    period: Nanoseconds,
    quota: Nanoseconds,
) -> (Vec<FairRunQueue>, Arc<BandwidthPools>, GroupId) {
    let pools = Arc::new(BandwidthPools::new(2));
    let mut queues = Vec::new();
    let mut group = GroupId::ROOT;
    for cpu in 0..cpus {
        let mut fair = FairRunQueue::new(pick, 3, 2);
        group = fair.create_group(GroupId::ROOT, 1024).unwrap();
        if cpu == 0 {
            pools.set(
                group,
                Bandwidth {
                    period,
                    quota: Some(quota),
                    burst: 0,
                },
                0,
                cpus,
            );
        }
        fair.attach_bandwidth(pools.clone(), cpu as u16);
        fair.set_group_bandwidth(group, true, 0).unwrap();
        fair.task_new(TaskId(cpu as u16), &in_group(0, group), 0)
            .unwrap();
        queues.push(fair);
    }
    (queues, pools, group)
}

/// `check_cfs_rq_runtime`'s last attempt (§4.2 "Throttling", step 1): G has
/// 3 ms per 4 ms. Its task borrows the whole 3 ms at its enqueue at 0 and
/// runs; at 4 ms a second task's enqueue charges 4 ms (-1 ms, nothing in the
/// pool: resched), then the period timer refills 3 ms with nothing throttled
/// (no grant), then `put_prev` at 4 ms (nothing more to charge) asks for the
/// debt + 1 ns and gets it: G is not throttled, with 1 ns, and the pool keeps
/// 3 ms - 1,000,001 ns.
#[test]
fn the_last_attempt_at_put_prev_takes_what_a_refill_brought() {
    for pick in [eevdf(MS), cfs()] {
        let (mut queues, pools, g) = one_limited_group(pick, 1, 4 * MS, 3 * MS);
        let fair = &mut queues[0];
        fair.task_new(TaskId(1), &in_group(0, g), 0).unwrap();
        fair.enqueue_task(TaskId(0), 0, INITIAL);
        assert_eq!(fair.pick_next_task(0), Some(TaskId(0)));
        fair.set_next_task(TaskId(0), 0);
        fair.enqueue_task(TaskId(1), 4 * MS, WAKEUP);
        assert_eq!(
            fair.queues[g.index()].runtime.runtime_remaining,
            -(MS as i64)
        );
        assert!(fair.need_resched, "{pick:?}: out of runtime while running");
        let outcome = pools.with(g, |p| p.period_timer(|| 4 * MS)).unwrap();
        assert_eq!((outcome.grants.len(), outcome.rearm), (0, Some(8 * MS)));
        assert_eq!(pools.with(g, |p| p.runtime()), Some(3 * MS));
        fair.put_prev_task(TaskId(0), 4 * MS);
        let runtime = fair.queues[g.index()].runtime;
        assert!(!runtime.throttled, "{pick:?}");
        assert_eq!(runtime.runtime_remaining, 1);
        assert_eq!(pools.with(g, |p| p.runtime()), Some(2 * MS - 1));
        assert_eq!(fair.nr_running(), 2);
        fair.check_consistency();
    }
}

/// Slack across CPUs (§4.2 "Slack"): G has 15 ms per 100 ms on 3 CPUs. At 0
/// each CPU's task is queued and borrows a 5 ms slice (the pool is then
/// empty); only CPU 2's runs. At 6 ms it is 1 ms in debt and `put_prev`
/// throttles G there. Then the tasks of CPUs 0 and 1, which never ran, sleep:
/// each empty run queue returns what it holds above 1 ms, 4 ms. After the
/// first the pool holds 4 ms, not above a slice: no slack timer; after the
/// second 8 ms, a CPU is throttled and the refill is 94 ms away: CPU 1 asks
/// for the slack timer at 6 + 5 = 11 ms. It pays CPU 2 its debt + 1 ns
/// (1,000,001 ns), leaving 7 ms - 1 ns, and CPU 2's G comes back.
#[test]
fn slack_returned_by_other_cpus_unthrottles_through_the_slack_timer() {
    for pick in [eevdf(MS), cfs()] {
        let (mut queues, pools, g) = one_limited_group(pick, 3, 100 * MS, 15 * MS);
        for (cpu, fair) in queues.iter_mut().enumerate() {
            fair.enqueue_task(TaskId(cpu as u16), 0, INITIAL);
            assert_eq!(
                fair.queues[g.index()].runtime.runtime_remaining,
                5 * MS as i64
            );
        }
        assert_eq!(pools.with(g, |p| p.runtime()), Some(0));
        let timer = queues[0].take_bandwidth_timer().unwrap();
        assert_eq!(
            (timer.kind, timer.expires),
            (BandwidthTimerKind::Period, 100 * MS)
        );
        assert_eq!(queues[2].pick_next_task(0), Some(TaskId(2)));
        queues[2].set_next_task(TaskId(2), 0);
        queues[2].put_prev_task(TaskId(2), 6 * MS);
        assert!(queues[2].queues[g.index()].runtime.throttled, "{pick:?}");
        assert_eq!(queues[2].nr_running(), 0);

        queues[0].dequeue_task(TaskId(0), 6 * MS, super::test_support::SLEEP);
        assert_eq!(pools.with(g, |p| p.runtime()), Some(4 * MS));
        assert_eq!(
            queues[0].queues[g.index()].runtime.runtime_remaining,
            MS as i64
        );
        assert_eq!(
            queues[0].take_bandwidth_timer(),
            None,
            "4 ms: not above a slice"
        );
        queues[1].dequeue_task(TaskId(1), 6 * MS, super::test_support::SLEEP);
        assert_eq!(pools.with(g, |p| p.runtime()), Some(8 * MS));
        assert_eq!(
            queues[1].take_bandwidth_timer(),
            Some(BandwidthTimer {
                group: g,
                kind: BandwidthTimerKind::Slack,
                expires: 11 * MS,
            })
        );
        let grants = pools.with(g, |p| p.slack_timer(11 * MS)).unwrap();
        assert_eq!(
            grants,
            [Grant {
                cpu: 2,
                amount: MS + 1,
                unthrottle: true
            }]
        );
        assert_eq!(pools.with(g, |p| p.runtime()), Some(7 * MS - 1));
        assert!(queues[2].distribute_runtime(g, MS + 1, true, 11 * MS));
        assert!(!queues[2].queues[g.index()].runtime.throttled);
        assert_eq!(queues[2].queues[g.index()].runtime.runtime_remaining, 1);
        assert_eq!(queues[2].nr_running(), 1);
        for fair in &queues {
            fair.check_consistency();
        }
    }
}

// ---------------------------------------------------------------------------
// Seeded stress over several CPUs
// ---------------------------------------------------------------------------

/// HZ=1000, no hrtick: runtime is charged at each 1 ms tick.
const TICK: Nanoseconds = MS;

/// xorshift64 (Marsaglia), seeded.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// In `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn percent(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Asleep until then.
    Sleeping(Nanoseconds),
    /// Queued (maybe throttled), not running.
    Queued,
    /// Running on its CPU.
    Running,
}

#[derive(Clone, Copy, Debug)]
struct Task {
    group: GroupId,
    /// The core that knows it (where it runs, is queued, or last was).
    cpu: usize,
    state: State,
    /// CPU time left before it sleeps (a CPU-bound task never does).
    demand: Nanoseconds,
    cpu_bound: bool,
    ran: Nanoseconds,
}

/// A pending bandwidth timer, armed on the CPU that asked for it; a limit
/// set again cancels the group's timers (`generation`).
#[derive(Clone, Copy, Debug)]
struct PendingTimer {
    timer: BandwidthTimer,
    cpu: usize,
    generation: u64,
}

/// A stretch of time during which a group had one limit: its pool was set
/// (made, or refilled with the new settings) at `start` with `settings`.
#[derive(Clone, Copy, Debug)]
struct Epoch {
    group: GroupId,
    start: Nanoseconds,
    end: Nanoseconds,
    settings: Bandwidth,
}

/// A task ran on a CPU over `[start, end)`.
#[derive(Clone, Copy, Debug)]
struct Run {
    task: usize,
    start: Nanoseconds,
    end: Nanoseconds,
}

struct Stress {
    what: String,
    rng: XorShift,
    cores: Vec<CpuCore>,
    pools: Arc<BandwidthPools>,
    /// Non-root groups and their parents.
    groups: Vec<(GroupId, GroupId)>,
    tasks: Vec<Task>,
    /// The group most tasks belong to.
    busy: GroupId,
    timers: Vec<PendingTimer>,
    generation: Vec<u64>,
    /// When each group's period timer fired (by group index): the refills.
    refills: Vec<Vec<Nanoseconds>>,
    /// The open epoch of each limited group (by group index).
    open: Vec<Option<Epoch>>,
    epochs: Vec<Epoch>,
    runs: Vec<Run>,
    /// When each core's running task started running.
    since: Vec<Nanoseconds>,
    next_tick: Vec<Nanoseconds>,
    next_action: Nanoseconds,
    next_limit_change: Nanoseconds,
    next_load_sum: Nanoseconds,
    now: Nanoseconds,
    step: u64,
    /// The last events (step, time, event), for the report of a failure.
    trace: VecDeque<(u64, Nanoseconds, Event)>,
    /// What the run went through, to check that it exercised throttling:
    /// which run queues were throttled after the last step (by CPU and
    /// group index), and how many throttles were seen.
    throttled: Vec<Vec<bool>>,
    throttles: u64,
    grants: u64,
    unthrottles_by_limit: u64,
    migrations: u64,
}

/// The next event of the loop (ties: in this order).
#[derive(Clone, Copy, Debug)]
enum Event {
    Timer(usize),
    RunEnd(usize),
    Tick(usize),
    Wake(usize),
    Action,
    LimitChange,
    LoadSum,
}

/// The group slots of the stress run's cores.
const STRESS_GROUPS: usize = 6;

/// The stress run's core of CPU `cpu`.
fn stress_core(cpu: usize, kind: PolicyKind, nr_tasks: usize) -> CpuCore {
    CpuCore::new(
        cpu as u16,
        RunQueue::with_groups(kind, nr_tasks, STRESS_GROUPS),
        nr_tasks,
        false,
    )
}

impl Stress {
    fn new(seed: u64, nr_cpus: usize, kind: PolicyKind, label: &str) -> Self {
        Self::build(seed, nr_cpus, kind, label, None)
    }

    /// As [`Stress::new`], each core recording its calls from the start
    /// (room for `records` each).
    fn recorded(seed: u64, nr_cpus: usize, kind: PolicyKind, label: &str, records: usize) -> Self {
        Self::build(seed, nr_cpus, kind, label, Some(records))
    }

    fn build(
        seed: u64,
        nr_cpus: usize,
        kind: PolicyKind,
        label: &str,
        records: Option<usize>,
    ) -> Self {
        let mut rng = XorShift::new(seed);
        let nr_tasks = rng.range(8, 16) as usize;
        let max_groups = STRESS_GROUPS;
        let mut cores: Vec<CpuCore> = (0..nr_cpus)
            .map(|cpu| {
                let mut core = stress_core(cpu, kind, nr_tasks);
                if let Some(records) = records {
                    core.start_recording(records, next_sequence);
                }
                core
            })
            .collect();
        // A ─ B ─ D, C, E under the root: two levels of nesting below A.
        let mut groups = Vec::new();
        let mut create = |parent: GroupId, cores: &mut Vec<CpuCore>| {
            let ids: Vec<GroupId> = cores
                .iter_mut()
                .map(|core| core.create_group(parent, 1024, 0).unwrap())
                .collect();
            assert!(ids.iter().all(|&id| id == ids[0]));
            groups.push((ids[0], parent));
            ids[0]
        };
        let a = create(GroupId::ROOT, &mut cores);
        let b = create(a, &mut cores);
        let _c = create(GroupId::ROOT, &mut cores);
        let _d = create(b, &mut cores);
        let _e = create(GroupId::ROOT, &mut cores);
        let pools = Arc::new(BandwidthPools::new(max_groups));
        for core in &mut cores {
            core.attach_bandwidth(pools.clone());
        }
        let mut stress = Stress {
            what: format!("seed {seed}, {label}, {nr_cpus} CPUs"),
            rng,
            cores,
            pools,
            groups,
            tasks: Vec::new(),
            busy: GroupId::ROOT,
            timers: Vec::new(),
            generation: vec![0; max_groups],
            refills: vec![Vec::new(); max_groups],
            open: vec![None; max_groups],
            epochs: Vec::new(),
            runs: Vec::new(),
            since: vec![0; nr_cpus],
            next_tick: (0..nr_cpus as u64).map(|c| TICK + c * TICK / 4).collect(),
            next_action: 0,
            next_limit_change: 0,
            next_load_sum: 4 * MS,
            now: 0,
            step: 0,
            trace: VecDeque::new(),
            throttled: vec![vec![false; max_groups]; nr_cpus],
            throttles: 0,
            grants: 0,
            unthrottles_by_limit: 0,
            migrations: 0,
        };
        // Tasks: one in each group and one in the root, the others mostly
        // in one "busy" group (so that its run queues on several CPUs hold
        // runtime, return slack and throttle at once); about a third are
        // CPU-bound.
        let all_groups: Vec<GroupId> = core::iter::once(GroupId::ROOT)
            .chain(stress.groups.iter().map(|&(g, _)| g))
            .collect();
        let busy = all_groups[stress.rng.range(1, all_groups.len() as u64 - 1) as usize];
        stress.busy = busy;
        // A, B and D limited at first (nested limits), C and E not; the
        // limit changes later switch any of them on, off or to new values.
        for (g, _) in stress.groups.clone() {
            if g.0 != 3 && g.0 != 5 {
                stress.set_limit(g, true);
            }
        }
        stress.next_action = stress.rng.range(MS / 2, 3 * MS);
        stress.next_limit_change = stress.rng.range(100 * MS, 400 * MS);
        for t in 0..nr_tasks {
            let group = if t < all_groups.len() {
                all_groups[t]
            } else if stress.rng.percent(60) {
                busy
            } else {
                all_groups[stress.rng.range(1, all_groups.len() as u64 - 1) as usize]
            };
            let cpu_bound = stress.rng.percent(35);
            let cpu = stress.rng.range(0, nr_cpus as u64 - 1) as usize;
            let nice = stress.rng.range(0, 10) as i8 - 5;
            let task = Task {
                group,
                cpu,
                state: State::Queued,
                demand: 0,
                cpu_bound,
                ran: 0,
            };
            stress.tasks.push(task);
            stress.tasks[t].demand = stress.new_demand(t);
            let decision = stress
                .call(cpu, |core, now| {
                    core.wake_up_new_task(TaskId(t as u16), &in_group(nice, group), now)
                })
                .unwrap();
            stress.after_call(cpu, decision);
        }
        stress.check();
        stress
    }

    fn nr_cpus(&self) -> usize {
        self.cores.len()
    }

    fn new_demand(&mut self, t: usize) -> Nanoseconds {
        if self.tasks[t].cpu_bound {
            u64::MAX
        } else {
            // Half of the bursts are short (most in the busy group): a run
            // queue that empties after one keeps most of the slice it
            // borrowed and returns the slack.
            let short = if self.tasks[t].group == self.busy {
                80
            } else {
                50
            };
            let most = if self.rng.percent(short) { MS } else { 25 * MS };
            self.rng.range(MS / 4, most)
        }
    }

    /// Runs `operation` on core `cpu` and drains its timer requests. A run
    /// queue throttled by the operation found its pool empty: `put_prev`
    /// and the enqueue of an idle run queue throttle only after the last
    /// 1 ns attempt failed (§4.2), and nothing else in one core's operation
    /// puts runtime into that group's pool before it (only a run queue of
    /// the group with runtime above 1 ms returns some, and on this CPU that
    /// is the run queue that throttled).
    fn call<R>(&mut self, cpu: usize, operation: impl FnOnce(&mut CpuCore, Nanoseconds) -> R) -> R {
        let before: Vec<bool> = (0..self.generation.len())
            .map(|g| self.queue_throttled(cpu, GroupId(g as u16)))
            .collect();
        let result = operation(&mut self.cores[cpu], self.now);
        self.drain_timers(cpu);
        for (g, &was) in before.iter().enumerate() {
            let g = GroupId(g as u16);
            if !was && self.queue_throttled(cpu, g) {
                let pool = self.pools.with(g, |p| p.runtime());
                assert_eq!(
                    pool,
                    Some(0),
                    "{}: step {} at {}: {g:?} was throttled on CPU {cpu} while its pool held runtime",
                    self.what,
                    self.step,
                    self.now
                );
            }
        }
        result
    }

    /// Drains the timer requests of core `cpu` into the pending timers.
    fn drain_timers(&mut self, cpu: usize) {
        while let Some(timer) = self.cores[cpu].take_bandwidth_timer() {
            assert!(
                timer.expires >= self.now,
                "{}: timer {timer:?} in the past at {}",
                self.what,
                self.now
            );
            self.timers.push(PendingTimer {
                timer,
                cpu,
                generation: self.generation[timer.group.index()],
            });
        }
    }

    /// Carries out a core's decision: a resched runs `schedule` at once.
    fn after_call(&mut self, cpu: usize, decision: Decision) {
        self.drain_timers(cpu);
        if decision.resched {
            self.schedule(cpu);
        }
    }

    /// Closes the running task's stretch on `cpu`.
    fn account(&mut self, cpu: usize) {
        if let Some(current) = self.cores[cpu].current() {
            let t = current.index();
            let ran = self.now - self.since[cpu];
            if ran > 0 {
                self.runs.push(Run {
                    task: t,
                    start: self.since[cpu],
                    end: self.now,
                });
            }
            let task = &mut self.tasks[t];
            task.ran += ran;
            if !task.cpu_bound {
                task.demand = task.demand.saturating_sub(ran);
            }
        }
        self.since[cpu] = self.now;
    }

    /// `__schedule` on `cpu`: the running task stays runnable, or sleeps when
    /// its demand is used up.
    fn schedule(&mut self, cpu: usize) {
        self.account(cpu);
        let previous = self.cores[cpu].current();
        let leaving = match previous {
            Some(p) if self.tasks[p.index()].demand == 0 => Leaving::Sleeping,
            _ => Leaving::Runnable,
        };
        let switch = self.call(cpu, |core, now| core.schedule(now, leaving));
        if let Some(p) = previous {
            let p = p.index();
            self.tasks[p].state = if leaving == Leaving::Sleeping {
                let most = if self.rng.percent(50) {
                    5 * MS
                } else {
                    30 * MS
                };
                let sleep = self.rng.range(MS / 4, most);
                State::Sleeping(self.now + sleep)
            } else {
                State::Queued
            };
        }
        if let Some(next) = switch.next {
            let t = next.index();
            assert_eq!(self.tasks[t].cpu, cpu, "{}: picked a stranger", self.what);
            assert_ne!(
                self.tasks[t].state,
                State::Running,
                "{}: {next:?} picked twice",
                self.what
            );
            assert!(
                matches!(self.tasks[t].state, State::Queued),
                "{}: step {}: picked {next:?}, which is {:?}",
                self.what,
                self.step,
                self.tasks[t].state
            );
            self.tasks[t].state = State::Running;
        }
        self.since[cpu] = self.now;
        self.drain_timers(cpu);
    }

    /// `tg_set_cfs_bandwidth`: the group's pool is set again (or removed),
    /// its pending timers cancelled, then every core is told.
    fn set_limit(&mut self, g: GroupId, limited: bool) {
        let settings = if limited {
            let period = self.rng.range(5, 100) * MS;
            // Mostly below half the period (throttling on one CPU), at times
            // up to one and a half periods (throttling only on several).
            let most = if self.rng.percent(70) {
                (period / 2).max(MS)
            } else {
                period * 3 / 2
            };
            let quota = self.rng.range(MS, most);
            let quota = quota / 1000 * 1000;
            let burst = if self.rng.percent(50) {
                0
            } else {
                self.rng.range(0, quota / 1000) * 1000
            };
            Bandwidth {
                period,
                quota: Some(quota),
                burst,
            }
        } else {
            Bandwidth::UNLIMITED
        };
        settings.validate().unwrap();
        if let Some(mut epoch) = self.open[g.index()].take() {
            epoch.end = self.now;
            assert_eq!(
                self.pools.settings(g),
                Some(epoch.settings),
                "{}: the period was never scaled up",
                self.what
            );
            self.epochs.push(epoch);
        }
        let was_throttled = (0..self.nr_cpus()).any(|c| self.queue_throttled(c, g));
        // A write keeps the pool's timers armed (`tg_set_cfs_bandwidth`); a
        // first quota's grid starts at a random offset.
        let offset = self.rng.range(0, settings.period - 1);
        self.pools.set(g, settings, offset, self.nr_cpus());
        for cpu in 0..self.nr_cpus() {
            let decision = self
                .call(cpu, |core, now| core.set_group_bandwidth(g, limited, now))
                .unwrap();
            self.after_call(cpu, decision);
        }
        self.unthrottles_by_limit += u64::from(was_throttled);
        if limited {
            self.open[g.index()] = Some(Epoch {
                group: g,
                start: self.now,
                end: u64::MAX,
                settings,
            });
        }
    }

    fn queue_throttled(&self, cpu: usize, g: GroupId) -> bool {
        self.cores[cpu]
            .run_queue()
            .fair()
            .and_then(|fair| fair.group_queue(g))
            .is_some_and(|q| q.runtime.throttled)
    }

    /// The earliest event; at equal times the first considered wins:
    /// timers, ends of runs, ticks, wake-ups, limit changes, load sums, other
    /// actions.
    fn next_event(&self) -> (Nanoseconds, Event) {
        let mut best: Option<(Nanoseconds, Event)> = None;
        let mut consider = |at: Nanoseconds, event: Event| {
            if best.is_none_or(|(first, _)| at < first) {
                best = Some((at, event));
            }
        };
        for (i, pending) in self.timers.iter().enumerate() {
            consider(pending.timer.expires, Event::Timer(i));
        }
        for cpu in 0..self.nr_cpus() {
            if let Some(current) = self.cores[cpu].current() {
                let task = &self.tasks[current.index()];
                if !task.cpu_bound {
                    consider(self.since[cpu] + task.demand, Event::RunEnd(cpu));
                }
            }
        }
        for cpu in 0..self.nr_cpus() {
            consider(self.next_tick[cpu], Event::Tick(cpu));
        }
        for (t, task) in self.tasks.iter().enumerate() {
            if let State::Sleeping(until) = task.state {
                consider(until, Event::Wake(t));
            }
        }
        consider(self.next_limit_change, Event::LimitChange);
        consider(self.next_load_sum, Event::LoadSum);
        consider(self.next_action, Event::Action);
        best.unwrap()
    }

    fn run(&mut self, end: Nanoseconds) {
        loop {
            let (at, event) = self.next_event();
            if at >= end {
                break;
            }
            assert!(at >= self.now, "{}: time went back", self.what);
            self.now = at;
            self.step += 1;
            if self.trace.len() == 24 {
                self.trace.pop_front();
            }
            self.trace.push_back((self.step, at, event));
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.handle(event);
                self.check();
            }));
            if run.is_err() {
                panic!(
                    "{}: failed at step {} ({event:?} at {} ns); the last events:\n{:#?}",
                    self.what, self.step, self.now, self.trace
                );
            }
            self.observe_throttles();
        }
        self.now = end;
        for cpu in 0..self.nr_cpus() {
            self.account(cpu);
        }
        for g in 0..self.open.len() {
            if let Some(mut epoch) = self.open[g].take() {
                epoch.end = end;
                assert_eq!(self.pools.settings(epoch.group), Some(epoch.settings));
                self.epochs.push(epoch);
            }
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Timer(i) => self.fire_timer(i),
            Event::RunEnd(cpu) => self.schedule(cpu),
            Event::Tick(cpu) => {
                self.next_tick[cpu] += TICK;
                let decision = self.call(cpu, |core, now| core.sched_tick(now));
                self.after_call(cpu, decision);
            }
            Event::Wake(t) => self.wake(t),
            Event::Action => {
                self.next_action = self.now + self.rng.range(MS / 5, 3 * MS);
                let t = self.rng.range(0, self.tasks.len() as u64 - 1) as usize;
                if self.nr_cpus() > 1 && self.rng.percent(60) {
                    let mut to = self.rng.range(0, self.nr_cpus() as u64 - 2) as usize;
                    if to >= self.tasks[t].cpu {
                        to += 1;
                    }
                    self.migrate(t, to);
                } else if let State::Running = self.tasks[t].state {
                    // The running task yields the CPU (a voluntary schedule).
                    let cpu = self.tasks[t].cpu;
                    self.schedule(cpu);
                }
            }
            Event::LimitChange => {
                self.next_limit_change = self.now + self.rng.range(100 * MS, 400 * MS);
                let i = self.rng.range(0, self.groups.len() as u64 - 1) as usize;
                let g = self.groups[i].0;
                let limited = self.open[g.index()].is_none() || self.rng.percent(70);
                self.set_limit(g, limited);
            }
            Event::LoadSum => {
                self.next_load_sum = self.now + 4 * MS;
                for (g, _) in self.groups.clone() {
                    let sum: u64 = self
                        .cores
                        .iter()
                        .map(|core| core.run_queue().group_load_contribution(g))
                        .sum();
                    for core in &mut self.cores {
                        core.set_group_load_sum(g, sum, self.now);
                    }
                }
                for cpu in 0..self.nr_cpus() {
                    self.call(cpu, |core, now| core.update_blocked_averages(now));
                }
            }
        }
    }

    /// A bandwidth timer fires at its expiry on the pool (unless the limit
    /// was set again since: cancelled); the grants go to their CPUs, and a
    /// grant that unthrottles leaves the run queue unthrottled.
    fn fire_timer(&mut self, i: usize) {
        let pending = self.timers.swap_remove(i);
        let g = pending.timer.group;
        if pending.generation != self.generation[g.index()] {
            return;
        }
        let now = self.now;
        let (grants, distributed) = match pending.timer.kind {
            BandwidthTimerKind::Period => {
                self.refills[g.index()].push(now);
                let outcome = self
                    .pools
                    .with(g, |pool| pool.period_timer(|| now))
                    .expect("a limited group has a pool");
                assert!(!outcome.scaled_up, "{}: period scaled up", self.what);
                if let Some(at) = outcome.rearm {
                    self.timers.push(PendingTimer {
                        timer: BandwidthTimer {
                            expires: at,
                            ..pending.timer
                        },
                        ..pending
                    });
                }
                (outcome.grants, true)
            }
            BandwidthTimerKind::Slack => {
                let grants = self
                    .pools
                    .with(g, |pool| pool.slack_timer(now))
                    .expect("a limited group has a pool");
                let distributed = !grants.is_empty();
                (grants, distributed)
            }
        };
        // Right after the pool's decision: a refill, or slack above one
        // slice, was paid out in FIFO order while it lasted (§4.2
        // `distribute_cfs_runtime`), so a run queue still waiting means the
        // pool is empty.
        let (left, waiting) = self
            .pools
            .with(g, |p| (p.runtime(), p.throttled().count()))
            .unwrap();
        if distributed {
            assert!(
                waiting == 0 || left == 0,
                "{}: step {} at {now}: {waiting} run queue(s) of {g:?} still throttled after its \
                 {:?} timer (armed on CPU {}) with {left} ns in the pool",
                self.what,
                self.step,
                pending.timer.kind,
                pending.cpu
            );
        }
        for grant in grants {
            self.grants += 1;
            let cpu = usize::from(grant.cpu);
            let decision = self.call(cpu, |core, now| {
                core.distribute_runtime(g, grant.amount, grant.unthrottle, now)
            });
            self.after_call(cpu, decision);
            if grant.unthrottle {
                assert!(
                    !self.queue_throttled(cpu, g),
                    "{}: step {}: a grant of {} ns did not unthrottle {g:?} on CPU {cpu}",
                    self.what,
                    self.step,
                    grant.amount
                );
            }
        }
    }

    /// A sleeping task wakes, on its CPU or (sometimes) on another one.
    fn wake(&mut self, t: usize) {
        let mut cpu = self.tasks[t].cpu;
        let mut migrated = false;
        if self.nr_cpus() > 1 && self.rng.percent(30) {
            let to = self.rng.range(0, self.nr_cpus() as u64 - 1) as usize;
            if to != cpu {
                self.move_task(t, to);
                cpu = to;
                migrated = true;
            }
        }
        self.tasks[t].demand = self.new_demand(t);
        self.tasks[t].state = State::Queued;
        let decision = self.call(cpu, |core, now| {
            core.try_to_wake_up(TaskId(t as u16), now, migrated)
        });
        self.after_call(cpu, decision);
    }

    /// `migrate_task_out` / `migrate_task_in` of a task that is not queued.
    fn move_task(&mut self, t: usize, to: usize) {
        let from = self.tasks[t].cpu;
        let id = TaskId(t as u16);
        let migration = self.call(from, |core, now| core.migrate_task_out(id, now));
        let migration =
            migration.unwrap_or_else(|| panic!("{}: {id:?} cannot leave CPU {from}", self.what));
        self.call(to, |core, now| core.migrate_task_in(id, &migration, now))
            .unwrap();
        self.tasks[t].cpu = to;
        self.migrations += 1;
    }

    /// Moves task `t` to CPU `to`, whatever it is doing: a sleeping task's
    /// state moves; a queued or running one is dequeued (`migrating`), moved
    /// and attached there (the running one leaves its CPU, which schedules).
    fn migrate(&mut self, t: usize, to: usize) {
        let from = self.tasks[t].cpu;
        let id = TaskId(t as u16);
        match self.tasks[t].state {
            State::Sleeping(_) => self.move_task(t, to),
            State::Queued | State::Running => {
                let running = self.tasks[t].state == State::Running;
                if running {
                    self.account(from);
                }
                let flags = DequeueFlags {
                    migrating: true,
                    ..DequeueFlags::default()
                };
                self.call(from, |core, now| core.dequeue_task(id, now, flags));
                self.tasks[t].state = State::Queued;
                self.move_task(t, to);
                let decision = self.call(to, |core, now| core.attach_task(id, now));
                self.after_call(to, decision);
                if running {
                    assert_eq!(self.cores[from].current(), None);
                    self.schedule(from);
                }
            }
        }
    }

    /// The invariants after every step: the CPUs', the tasks' (a), the
    /// groups' and their pools' (b).
    fn check(&self) {
        self.check_cpus();
        self.check_tasks();
        self.check_groups();
    }

    /// Each CPU's run queue is consistent, an idle CPU has nothing runnable,
    /// and no CPU runs a task in a throttled hierarchy.
    fn check_cpus(&self) {
        let what = &self.what;
        let step = self.step;
        let now = self.now;
        for (cpu, core) in self.cores.iter().enumerate() {
            let fair = core.run_queue().fair().expect("a fair run queue");
            fair.check_consistency();
            // An idle CPU has nothing runnable: every resched was carried out,
            // the one after an unthrottle included.
            let root = fair.group_queue(GroupId::ROOT).unwrap();
            if core.current().is_none() {
                assert_eq!(
                    root.h_nr_running, 0,
                    "{what}: step {step} at {now}: CPU {cpu} idles with runnable tasks"
                );
            }
            if let Some(current) = core.current() {
                assert!(
                    !core.run_queue().task_throttled(current),
                    "{what}: step {step}: CPU {cpu} runs {current:?} in a throttled hierarchy"
                );
            }
        }
    }

    /// (a) No task is lost, and the CPUs count the runnable tasks outside
    /// throttled hierarchies.
    fn check_tasks(&self) {
        let what = &self.what;
        let step = self.step;
        // (a) No task is lost: each is known to exactly its CPU, and is
        // running there, queued there (not delayed), or asleep.
        let mut runnable_unthrottled = 0;
        for (t, task) in self.tasks.iter().enumerate() {
            let id = TaskId(t as u16);
            for (cpu, core) in self.cores.iter().enumerate() {
                let entity = core.run_queue().fair().unwrap().task_entity(id);
                if cpu != task.cpu {
                    assert!(
                        entity.is_none(),
                        "{what}: step {step}: task {t} is known to CPU {cpu} and {}",
                        task.cpu
                    );
                    assert_ne!(core.current(), Some(id));
                    continue;
                }
                let entity = entity
                    .unwrap_or_else(|| panic!("{what}: step {step}: task {t} is lost (CPU {cpu})"));
                let queued = entity.on_rq && !entity.delayed;
                let running = core.current() == Some(id);
                match task.state {
                    State::Running => assert!(
                        running && queued,
                        "{what}: step {step}: task {t} should run on CPU {cpu}"
                    ),
                    State::Queued => assert!(
                        queued && !running,
                        "{what}: step {step}: task {t} should be queued on CPU {cpu}"
                    ),
                    State::Sleeping(_) => assert!(
                        !queued && !running,
                        "{what}: step {step}: task {t} should sleep"
                    ),
                }
                if queued && !core.run_queue().task_throttled(id) {
                    runnable_unthrottled += 1;
                }
            }
        }
        let counted: usize = self
            .cores
            .iter()
            .map(|core| {
                let fair = core.run_queue().fair().unwrap();
                fair.group_queue(GroupId::ROOT).unwrap().h_nr_running as usize
            })
            .sum();
        assert_eq!(
            counted, runnable_unthrottled,
            "{what}: step {step}: the CPUs count the runnable tasks outside throttled hierarchies"
        );
    }

    /// (b) Throttled run queues and the pools agree, and none is left behind
    /// while its pool has runtime.
    fn check_groups(&self) {
        let what = &self.what;
        let step = self.step;
        let now = self.now;
        // (b) Throttled run queues and the pools agree, and none is left
        // behind while its pool has runtime (§4.2):
        // - a group with a pool has its run queues limited, and exactly its
        //   throttled ones wait in the pool's FIFO, with the debt they have;
        //   a group without a pool is never throttled;
        // - a run queue is throttled only when its last 1 ns attempt finds
        //   the pool empty (checked at each core operation, `call`), and each
        //   timer pays the FIFO while the pool lasts (`fire_timer`), so while
        //   a run queue is throttled the pool holds only runtime that CPUs
        //   returned since (slack). Linux pays that out by the slack timer
        //   when the pool holds more than a slice, unless the refill comes
        //   within 7 ms (5 ms slack period + 2 ms): so a pool above one slice
        //   beside a throttled run queue has its slack timer pending, or its
        //   period timer due within 7 ms;
        // - a throttled run queue always has its period timer pending, which
        //   refills the pool and pays the FIFO at the latest.
        for &(g, _) in &self.groups {
            // A lifted limit leaves the pool, unlimited.
            let fifo: Option<Vec<Throttled>> = self
                .pools
                .with(g, |p| {
                    p.settings()
                        .quota
                        .is_some()
                        .then(|| p.throttled().copied().collect())
                })
                .flatten();
            for (cpu, core) in self.cores.iter().enumerate() {
                let queue = core.run_queue().fair().unwrap().group_queue(g).unwrap();
                assert_eq!(
                    queue.runtime.enabled,
                    fifo.is_some(),
                    "{what}: step {step}: {g:?} on CPU {cpu}: limited iff its pool has a quota"
                );
                let entry = fifo
                    .as_ref()
                    .and_then(|fifo| fifo.iter().find(|e| usize::from(e.cpu) == cpu));
                match entry {
                    Some(entry) => {
                        assert!(
                            queue.runtime.throttled,
                            "{what}: step {step}: {g:?} on CPU {cpu} waits in the FIFO unthrottled"
                        );
                        assert_eq!(
                            entry.runtime_remaining, queue.runtime.runtime_remaining,
                            "{what}: step {step}: {g:?} on CPU {cpu}: the debt in the FIFO"
                        );
                    }
                    None => assert!(
                        !queue.runtime.throttled,
                        "{what}: step {step}: {g:?} on CPU {cpu} is throttled outside the FIFO"
                    ),
                }
            }
            let throttled = fifo.as_ref().is_some_and(|fifo| !fifo.is_empty());
            if throttled {
                let pending = |kind: BandwidthTimerKind| {
                    self.timers
                        .iter()
                        .filter(|p| {
                            p.timer.group == g
                                && p.timer.kind == kind
                                && p.generation == self.generation[g.index()]
                        })
                        .map(|p| p.timer.expires)
                        .min()
                };
                let period = pending(BandwidthTimerKind::Period);
                assert!(
                    period.is_some(),
                    "{what}: step {step} at {now}: {g:?} is throttled with no period timer armed"
                );
                let pool = self.pools.with(g, |p| p.runtime()).unwrap();
                let refill_soon = period.is_some_and(|at| at - now < SLACK_PERIOD + MIN_EXPIRATION);
                assert!(
                    pool <= SLICE || pending(BandwidthTimerKind::Slack).is_some() || refill_soon,
                    "{what}: step {step} at {now}: {g:?} stays throttled beside {pool} ns in its \
                     pool, with no slack timer and the refill at {period:?}"
                );
            }
        }
    }

    /// Whether group `g` is `ancestor` or below it.
    fn in_subtree(&self, mut g: GroupId, ancestor: GroupId) -> bool {
        loop {
            if g == ancestor {
                return true;
            }
            if g == GroupId::ROOT {
                return false;
            }
            g = self.groups.iter().find(|&&(id, _)| id == g).unwrap().1;
        }
    }

    /// (c) The bound per period window of every limited stretch.
    ///
    /// From §4.2: in a window between two refills of the group's pool (its
    /// period timer's firings, clipped to the stretch during which one limit
    /// held; a write refills too), the group's tasks ran on runtime that came
    /// from
    /// - the pool as the refill left it: at most `quota + burst` (the refill
    ///   caps it there; until the next refill the pool only shrinks, or takes
    ///   back runtime a CPU returned as slack, which that CPU no longer
    ///   holds). A write also resets every CPU's local runtime to 0;
    /// - what each CPU's run queue still held when the window began: at most
    ///   one slice (a borrow tops it up to the 5 ms slice, a grant to debt +
    ///   1 ns, a slack return leaves 1 ms);
    /// - an overrun at the end: runtime is charged at ticks (every level
    ///   at each 1 ms tick), and a run queue that finds no runtime makes the
    ///   running task reschedule at the latest at the next tick, so a CPU
    ///   runs at most one tick past its runtime (left as debt, repaid by the
    ///   next grant).
    ///
    /// So: ran ≤ quota + burst + nr_cpus × (SLICE + TICK), counting the tasks
    /// of the group and of the groups below it (a quota covers the subtree).
    fn check_bound(&self) {
        let nr_cpus = self.nr_cpus() as u64;
        let mut windows = 0;
        for epoch in &self.epochs {
            let Bandwidth { quota, burst, .. } = epoch.settings;
            let bound = quota.unwrap() + burst + nr_cpus * (SLICE + TICK);
            let mut cuts: Vec<Nanoseconds> = core::iter::once(epoch.start)
                .chain(
                    self.refills[epoch.group.index()]
                        .iter()
                        .copied()
                        .filter(|&at| epoch.start < at && at < epoch.end),
                )
                .collect();
            cuts.push(epoch.end);
            for cut in cuts.windows(2) {
                let (start, end) = (cut[0], cut[1]);
                windows += 1;
                let ran: u64 = self
                    .runs
                    .iter()
                    .filter(|run| self.in_subtree(self.tasks[run.task].group, epoch.group))
                    .map(|run| run.end.min(end).saturating_sub(run.start.max(start)))
                    .sum();
                assert!(
                    ran <= bound,
                    "{}: {:?} ({epoch:?}) ran {ran} ns in [{start}, {end}), bound {bound}",
                    self.what,
                    epoch.group
                );
            }
        }
        assert!(windows > 0);
    }
}

/// Seeds of the stress test, and how long each run lasts.
const SEEDS: u64 = 20;
const RUN: Nanoseconds = 3_000 * MS;

fn policies(nr: u32) -> [(PolicyKind, &'static str); 3] {
    let eevdf = EevdfTunables::for_cpus(nr, TICK);
    [
        (PolicyKind::Eevdf(eevdf), "EEVDF"),
        (PolicyKind::Cfs(CfsTunables::for_cpus(nr)), "CFS"),
        (
            PolicyKind::Eevdf(EevdfTunables {
                delay_dequeue: false,
                ..eevdf
            }),
            "EEVDF without delayed dequeue",
        ),
    ]
}

/// Seeded stress of bandwidth control over 1-4 CPUs sharing one set of pools:
/// nested groups (A ─ B ─ D, C, E), limits with random periods (5-100 ms),
/// quotas (1 ms up to half a period, at times up to 1.5 periods) and bursts,
/// changed, lifted and set again mid-run; tasks that run, sleep, wake, yield and migrate between CPUs
/// (asleep, queued or running); 1 ms ticks; the pools' timers fired at their
/// expiry. After every step: every run queue's consistency (with the
/// throttling rules of `check_consistency`), (a) no task lost, (b) throttled
/// run queues agree with the pools' FIFOs and are never stranded, and at the
/// end (c) the per-period bound.
///
/// Every configuration runs; the failures are listed together at the end
/// (each with its seed, step and last events).
#[test]
fn bandwidth_stress_over_cores_with_migrations_and_limit_changes() {
    let mut totals = [0u64; 4];
    let mut failures: Vec<String> = Vec::new();
    for seed in 1..=SEEDS {
        // 2, 3, 4, 1, 2, 3, ... CPUs.
        let nr_cpus = (seed % 4 + 1) as usize;
        for (i, (kind, label)) in policies(nr_cpus as u32).into_iter().enumerate() {
            if i == 2 && seed % 2 == 0 {
                continue;
            }
            let run = std::panic::catch_unwind(|| {
                let mut stress = Stress::new(seed, nr_cpus, kind, label);
                stress.run(RUN);
                stress.check_bound();
                for (t, task) in stress.tasks.iter().enumerate() {
                    assert!(task.ran > 0, "{}: task {t} never ran", stress.what);
                }
                [
                    stress.throttles,
                    stress.grants,
                    stress.unthrottles_by_limit,
                    stress.migrations,
                ]
            });
            match run {
                Ok(counts) => {
                    for (total, count) in totals.iter_mut().zip(counts) {
                        *total += count;
                    }
                }
                Err(payload) => failures.push(
                    payload
                        .downcast_ref::<String>()
                        .cloned()
                        .unwrap_or_else(|| format!("seed {seed}, {label}: {payload:?}")),
                ),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} run(s) failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // The runs exercised what the invariants are about.
    let [throttles, grants, by_limit, migrations] = totals;
    assert!(throttles > 500, "throttles {throttles}");
    assert!(grants > 500, "grants {grants}");
    assert!(by_limit > 0, "unthrottled by a limit change {by_limit}");
    assert!(migrations > 1000, "migrations {migrations}");
}

impl Stress {
    /// Counts the run queues throttled since the last step.
    fn observe_throttles(&mut self) {
        for cpu in 0..self.nr_cpus() {
            for (g, _) in self.groups.clone() {
                let throttled = self.queue_throttled(cpu, g);
                if throttled && !self.throttled[cpu][g.index()] {
                    self.throttles += 1;
                }
                self.throttled[cpu][g.index()] = throttled;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Replay of a recorded multi-core run
// ---------------------------------------------------------------------------

static SEQUENCE: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// The order of records across the cores (one counter for every test: only
/// the order matters).
fn next_sequence() -> u64 {
    SEQUENCE.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
}

/// A stress run's records of every core, in the recorded order.
fn recorded_stress(
    seed: u64,
    nr_cpus: usize,
    kind: PolicyKind,
    label: &str,
) -> (Vec<Record>, usize) {
    let mut stress = Stress::recorded(seed, nr_cpus, kind, label, 60_000);
    stress.run(RUN / 2);
    let mut records = Vec::new();
    for core in &mut stress.cores {
        let (taken, dropped) = core.take_records();
        assert_eq!(dropped, 0, "{}: records dropped", stress.what);
        records.extend(taken);
    }
    records.sort_by_key(|record| record.sequence);
    assert!(
        stress.throttles > 0 && stress.grants > 0,
        "{}: no throttling",
        stress.what
    );
    (records, stress.tasks.len())
}

/// Replays `records` through fresh cores built as the stress run's, with no
/// pools: the number of records that agree, and the first difference.
fn replay_stress(
    records: &[Record],
    nr_cpus: usize,
    kind: PolicyKind,
    nr_tasks: usize,
) -> (usize, Option<String>) {
    let mut cores: Vec<CpuCore> = (0..nr_cpus)
        .map(|cpu| stress_core(cpu, kind, nr_tasks))
        .collect();
    let mut migrations = alloc::collections::BTreeMap::new();
    for (index, record) in records.iter().enumerate() {
        let core = &mut cores[usize::from(record.cpu)];
        let replayed = core.replay(record.now, &record.input, &mut migrations);
        // The timers the replayed pools asked for are the recorded ones'.
        while core.take_bandwidth_timer().is_some() {}
        if replayed != Ok(record.output) {
            return (
                index,
                Some(format!("record {index} {record:?}: replayed {replayed:?}")),
            );
        }
    }
    (records.len(), None)
}

/// The seeded stress (nested limits changed mid-run, throttles, grants,
/// slack, migrations) over 2-4 CPUs, recorded: every record replays through
/// fresh cores with the same decision and no pools, each pool answer taken
/// from the record. The pools' answers depend on the CPUs' order of access;
/// the record carries them.
#[test]
fn a_recorded_bandwidth_stress_run_replays_without_the_pools() {
    let mut answers = [0usize; 3];
    let mut grants = 0;
    for seed in 1..=6u64 {
        let nr_cpus = (seed % 3 + 2) as usize;
        for (kind, label) in policies(nr_cpus as u32) {
            let (records, nr_tasks) = recorded_stress(seed, nr_cpus, kind, label);
            let (agreeing, divergence) = replay_stress(&records, nr_cpus, kind, nr_tasks);
            assert_eq!(
                divergence,
                None,
                "seed {seed}, {label}, {nr_cpus} CPUs: {agreeing} of {} records agree",
                records.len()
            );
            for record in &records {
                match record.input {
                    Input::PoolAnswer(answer) => match answer.call {
                        PoolCall::Assign => answers[0] += 1,
                        PoolCall::ReturnSlack => answers[1] += 1,
                        PoolCall::NoPool => answers[2] += 1,
                    },
                    Input::DistributeRuntime { .. } => grants += 1,
                    _ => {}
                }
            }
        }
    }
    let [assigns, returns, _absent] = answers;
    assert!(assigns > 1000, "assign answers {assigns}");
    assert!(returns > 100, "return_slack answers {returns}");
    assert!(grants > 100, "grants {grants}");
}

/// A changed pool answer is found: the replayed core decides otherwise, or
/// asks its pool a question the record does not answer, at the changed
/// answer's call or after it. A missing answer is found at its call.
#[test]
fn a_changed_pool_answer_is_found_by_the_replay() {
    let kind = PolicyKind::Eevdf(EevdfTunables::for_cpus(2, TICK));
    let (records, nr_tasks) = recorded_stress(3, 2, kind, "EEVDF");
    assert_eq!(replay_stress(&records, 2, kind, nr_tasks).1, None);
    // A slice granted in full, half-way through the run, is refused instead.
    let at = records
        .iter()
        .enumerate()
        .skip(records.len() / 2)
        .find(|(_, r)| {
            matches!(r.input, Input::PoolAnswer(a) if a.call == PoolCall::Assign && a.amount >= SLICE)
        })
        .map(|(index, _)| index)
        .expect("a full slice granted");
    let mut changed = records.clone();
    let Input::PoolAnswer(answer) = &mut changed[at].input else {
        unreachable!()
    };
    answer.amount = 0;
    let (agreeing, divergence) = replay_stress(&changed, 2, kind, nr_tasks);
    assert!(divergence.is_some(), "a refused slice changed nothing");
    assert!(
        agreeing > at,
        "found at {agreeing}, before the change at {at}"
    );
    // Without the answer, its call asks and finds none.
    let mut missing = records.clone();
    missing.remove(at);
    let call = missing[at..]
        .iter()
        .position(|r| r.cpu == records[at].cpu && !matches!(r.input, Input::PoolAnswer(_)))
        .map(|offset| at + offset)
        .unwrap();
    let (agreeing, divergence) = replay_stress(&missing, 2, kind, nr_tasks);
    assert_eq!(agreeing, call, "{divergence:?}");
    assert!(
        divergence
            .as_deref()
            .is_some_and(|d| d.contains("Unanswered") || d.contains("Mismatched")),
        "{divergence:?}"
    );
}

/// The link to the pools is two words in every mode, as the plain link was:
/// a run queue without bandwidth control keeps its layout.
#[test]
fn the_bandwidth_link_stays_two_words() {
    assert_eq!(
        core::mem::size_of::<Option<super::throttle::BandwidthLink>>(),
        core::mem::size_of::<(Arc<BandwidthPools>, u64)>()
    );
}

/// A group whose limit was lifted on the pools before this CPU was told:
/// its pool stays, unlimited (§4.1), and a grant made before arrives and
/// unthrottles. A group the pools never had a quota for, which a core was
/// told is limited (a mechanism out of order): its charges find no pool
/// (nothing charged). The recording keeps each absence as an answer, and the
/// replay, without pools, does the same.
#[test]
fn a_missing_pool_is_recorded_and_replayed() {
    let kind = PolicyKind::Eevdf(EevdfTunables::for_cpus(1, MS));
    let new_core = || CpuCore::new(0, RunQueue::with_groups(kind, 4, 3), 4, false);
    let mut core = new_core();
    core.start_recording(64, next_sequence);
    let g = core.create_group(GroupId::ROOT, 1024, 0).unwrap();
    let pools = Arc::new(BandwidthPools::new(3));
    let settings = Bandwidth {
        period: 10 * MS,
        quota: Some(2 * MS),
        burst: 0,
    };
    pools.set(g, settings, 0, 1);
    assert!(core.attach_bandwidth(pools.clone()));
    let _ = core.set_group_bandwidth(g, true, 0).unwrap();
    let _ = core
        .wake_up_new_task(TaskId(0), &in_group(0, g), 0)
        .unwrap();
    assert_eq!(core.schedule(0, Leaving::Runnable).next, Some(TaskId(0)));
    assert!(core.sched_tick(3 * MS).resched);
    assert_eq!(core.schedule(3 * MS, Leaving::Runnable).next, None);
    assert!(core.run_queue().task_throttled(TaskId(0)));
    // The limit is lifted: the pool goes first, then each CPU is told. A
    // grant made before arrives in between and unthrottles.
    pools.set(g, Bandwidth::UNLIMITED, 0, 1);
    let decision = core.distribute_runtime(g, MS + 1, true, 10 * MS);
    assert!(decision.resched, "the grant unthrottles");
    assert!(!core.run_queue().task_throttled(TaskId(0)));
    let _ = core.set_group_bandwidth(g, false, 11 * MS).unwrap();
    assert_eq!(
        core.schedule(11 * MS, Leaving::Runnable).next,
        Some(TaskId(0))
    );
    // A group without a pool that the core is told is limited: the first
    // enqueue into it and the tick that ends its first runtime find none.
    let h = core.create_group(GroupId::ROOT, 1024, 12 * MS).unwrap();
    let _ = core.set_group_bandwidth(h, true, 12 * MS).unwrap();
    let _ = core
        .wake_up_new_task(TaskId(1), &in_group(0, h), 12 * MS)
        .unwrap();
    let _ = core.schedule(12 * MS, Leaving::Runnable);
    let _ = core.sched_tick(13 * MS);
    let _ = core.sched_tick(14 * MS);
    while core.take_bandwidth_timer().is_some() {}
    let (records, dropped) = core.take_records();
    assert_eq!(dropped, 0);
    let absent = |r: &Record| matches!(r.input, Input::PoolAnswer(a) if a.call == PoolCall::NoPool);
    // h's first enqueue asks twice (the charge that finds its runtime at 0,
    // then the last 1 ns attempt), and each tick's charge once.
    assert_eq!(
        records.iter().filter(|r| absent(r)).count(),
        4,
        "{records:#?}"
    );
    let mut replica = new_core();
    let mut migrations = alloc::collections::BTreeMap::new();
    for record in &records {
        let replayed = replica.replay(record.now, &record.input, &mut migrations);
        assert_eq!(replayed, Ok(record.output), "{record:?}");
    }
    // Without the answers, the replayed enqueue into h asks a question the
    // record does not answer: found.
    let mut replica = new_core();
    let mut found = None;
    for record in records.iter().filter(|r| !absent(r)) {
        if replica.replay(record.now, &record.input, &mut migrations) != Ok(record.output) {
            found = Some(record.input);
            break;
        }
    }
    assert!(
        matches!(
            found,
            Some(Input::TaskNew {
                task: TaskId(1),
                ..
            })
        ),
        "{found:?}"
    );
}
