//! The driver's decisions on small cases worked out by hand, and the record
//! format's round trip.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::record::{Input, Output, Record};
use super::*;
use crate::bandwidth::runtime::{PoolAnswer, PoolCall};
use crate::fair::EevdfTunables;
use crate::run_queue::PolicyKind;
use crate::task::{CpuMask, Policy};

const MS: u64 = 1_000_000;

fn core(kind: PolicyKind, hrtick: bool) -> CpuCore {
    CpuCore::new(0, RunQueue::new(kind, 8), 8, hrtick)
}

fn nice0() -> TaskParams {
    TaskParams::default()
}

#[test]
fn an_idle_cpu_reschedules_for_a_new_task_and_picks_it() {
    let mut core = core(PolicyKind::RoundRobin { slice: 4 * MS }, true);
    let decision = core.wake_up_new_task(TaskId(1), &nice0(), 0).unwrap();
    assert!(decision.resched, "an idle CPU runs what arrives");
    let switch = core.schedule(0, Leaving::Runnable);
    assert_eq!(switch.previous, None);
    assert_eq!(switch.next, Some(TaskId(1)));
    // Alone: nothing would preempt it, the timer stops.
    assert_eq!(switch.hrtick, TimerRequest::Cancel);
    assert_eq!(core.current(), Some(TaskId(1)));
}

#[test]
fn a_second_task_gives_the_first_a_slice_end_and_the_timer_ends_it() {
    let mut core = core(PolicyKind::RoundRobin { slice: 4 * MS }, true);
    let _ = core.wake_up_new_task(TaskId(1), &nice0(), 0).unwrap();
    let _ = core.schedule(0, Leaving::Runnable);
    // 1 ms later a second task arrives: round robin does not preempt, and the
    // running task's 4 ms slice ends at 4 ms.
    let decision = core.wake_up_new_task(TaskId(2), &nice0(), MS).unwrap();
    assert!(!decision.resched);
    assert_eq!(decision.hrtick, TimerRequest::Arm(4 * MS));
    let expiry = core.hrtick(4 * MS);
    assert!(expiry.resched);
    let switch = core.schedule(4 * MS, Leaving::Runnable);
    assert_eq!(switch.next, Some(TaskId(2)));
    assert_eq!(switch.hrtick, TimerRequest::Arm(8 * MS));
    // Task 1 waits at the tail; the task picked last is at the head.
    let order: Vec<TaskId> = core.cfs_tasks().from_tail(8).collect();
    assert_eq!(order, [TaskId(1), TaskId(2)]);
}

#[test]
fn hrtick_off_never_asks_for_a_timer() {
    let mut core = core(PolicyKind::RoundRobin { slice: 4 * MS }, false);
    let _ = core.wake_up_new_task(TaskId(1), &nice0(), 0).unwrap();
    let switch = core.schedule(0, Leaving::Runnable);
    assert_eq!(switch.hrtick, TimerRequest::Keep);
    let decision = core.wake_up_new_task(TaskId(2), &nice0(), MS).unwrap();
    assert_eq!(decision.hrtick, TimerRequest::Keep);
}

#[test]
fn a_sleeping_task_leaves_the_queue_and_an_exited_one_is_forgotten() {
    let mut core = core(PolicyKind::RoundRobin { slice: 4 * MS }, true);
    let _ = core.wake_up_new_task(TaskId(1), &nice0(), 0).unwrap();
    let _ = core.wake_up_new_task(TaskId(2), &nice0(), 0).unwrap();
    let _ = core.schedule(0, Leaving::Runnable);
    let switch = core.schedule(MS, Leaving::Sleeping);
    assert_eq!(switch.previous, Some(TaskId(1)));
    assert_eq!(switch.next, Some(TaskId(2)));
    assert!(!core.cfs_tasks().contains(TaskId(1)));
    let switch = core.schedule(2 * MS, Leaving::Dead);
    assert_eq!(switch.next, None, "task 1 sleeps, task 2 exited");
    assert_eq!(core.run_queue().task_class(TaskId(2)), None);
    // Task 1 wakes on the idle CPU: it preempts the idle task.
    assert!(core.try_to_wake_up(TaskId(1), 3 * MS, false).resched);
}

#[test]
fn a_tick_ends_a_round_robin_slice_only_when_it_is_used_up() {
    let mut core = core(PolicyKind::RoundRobin { slice: 4 * MS }, false);
    let _ = core.wake_up_new_task(TaskId(1), &nice0(), 0).unwrap();
    let _ = core.wake_up_new_task(TaskId(2), &nice0(), 0).unwrap();
    let _ = core.schedule(0, Leaving::Runnable);
    assert!(!core.sched_tick(2 * MS).resched);
    assert!(core.sched_tick(4 * MS).resched);
}

fn params_samples() -> [TaskParams; 3] {
    [
        TaskParams {
            policy: Policy::Normal { nice: -20 },
            uclamp_min: Some(512),
            uclamp_max: None,
            group: GroupId(3),
            affinity: CpuMask(0b1010),
            custom_slice: Some(300_000),
        },
        TaskParams {
            policy: Policy::Fifo { priority: 99 },
            ..TaskParams::default()
        },
        TaskParams {
            policy: Policy::Batch { nice: 19 },
            uclamp_max: Some(0),
            ..TaskParams::default()
        },
    ]
}

#[test]
fn every_record_survives_its_ten_words() {
    let mut inputs = Vec::new();
    for params in params_samples() {
        inputs.push(Input::TaskNew {
            task: TaskId(7),
            params,
        });
    }
    inputs.extend([
        Input::Wakeup {
            task: TaskId(2),
            flags: EnqueueFlags {
                wakeup: true,
                migrated: true,
                initial: false,
            },
        },
        Input::Enqueue {
            task: TaskId(3),
            flags: EnqueueFlags::default(),
        },
        Input::Dequeue {
            task: TaskId(4),
            flags: DequeueFlags {
                sleep: false,
                migrating: true,
            },
        },
        Input::Schedule {
            leaving: Leaving::Dead,
        },
        Input::Tick,
        Input::Hrtick,
        Input::HrtickUpdate,
        Input::Yield,
        Input::MigrateOut { task: TaskId(5) },
        Input::MigrateIn { task: TaskId(5) },
        Input::UpdateBlockedAverages,
        Input::GroupLoadSum {
            group: GroupId(2),
            sum: 123_456,
        },
        Input::CreateGroup {
            parent: GroupId::ROOT,
            shares: 2048,
        },
        Input::SetTaskGroup {
            task: TaskId(1),
            group: GroupId(2),
        },
        Input::SetTaskUclamp {
            task: TaskId(1),
            min: None,
            max: Some(1024),
        },
        Input::RtMutexSetprio {
            task: TaskId(1),
            priority: Some(50),
        },
        Input::RtMutexSetprio {
            task: TaskId(1),
            priority: None,
        },
        Input::TaskDead { task: TaskId(6) },
        Input::CfsTasksRotate { task: TaskId(6) },
        Input::AttachBandwidth,
        Input::SetGroupBandwidth {
            group: GroupId(3),
            limited: true,
        },
        Input::SetGroupBandwidth {
            group: GroupId(u16::MAX - 1),
            limited: false,
        },
        Input::DistributeRuntime {
            group: GroupId(2),
            amount: 5_000_001,
            unthrottle: true,
        },
        Input::DistributeRuntime {
            group: GroupId(2),
            amount: u64::MAX,
            unthrottle: false,
        },
        Input::PoolAnswer(PoolAnswer {
            group: GroupId(4),
            call: PoolCall::Assign,
            amount: 5 * MS,
            timer: Some(u64::MAX),
        }),
        Input::PoolAnswer(PoolAnswer {
            group: GroupId(u16::MAX),
            call: PoolCall::Assign,
            amount: 0,
            timer: Some(0),
        }),
        Input::PoolAnswer(PoolAnswer {
            group: GroupId(1),
            call: PoolCall::ReturnSlack,
            amount: u64::MAX,
            timer: None,
        }),
        Input::PoolAnswer(PoolAnswer {
            group: GroupId(5),
            call: PoolCall::NoPool,
            amount: 0,
            timer: None,
        }),
    ]);
    let outputs = [
        Output::default(),
        Output {
            resched: true,
            next: Some(TaskId(0)),
            hrtick: TimerRequest::Arm(u64::MAX - 1),
        },
        Output {
            resched: false,
            next: Some(TaskId(u16::MAX - 1)),
            hrtick: TimerRequest::Cancel,
        },
    ];
    for (index, input) in inputs.into_iter().enumerate() {
        for output in outputs {
            let record = Record {
                sequence: index as u64,
                cpu: 3,
                now: 1 << 40,
                input,
                output,
            };
            assert_eq!(Record::decode(&record.encode()), Ok(record));
        }
    }
}

/// The bandwidth inputs' words, as `Record::encode` documents them; a pool
/// answer with an unknown call is refused.
#[test]
fn bandwidth_records_have_the_documented_words() {
    let record = |input| Record {
        sequence: 9,
        cpu: 1,
        now: 77,
        input,
        output: Output::default(),
    };
    let words = |input| record(input).encode()[3..8].to_vec();
    assert_eq!(words(Input::AttachBandwidth), [19, 0, 0, 0, 0]);
    assert_eq!(
        words(Input::SetGroupBandwidth {
            group: GroupId(3),
            limited: true
        }),
        [20, 0, 3, 1, 0]
    );
    assert_eq!(
        words(Input::DistributeRuntime {
            group: GroupId(2),
            amount: 1234,
            unthrottle: true
        }),
        [21, 0, 2, 1234, 1]
    );
    let answer = PoolAnswer {
        group: GroupId(4),
        call: PoolCall::ReturnSlack,
        amount: 3 * MS,
        timer: Some(8 * MS),
    };
    assert_eq!(
        words(Input::PoolAnswer(answer)),
        [22, 0, 4 | 1 << 16 | 1 << 24, 3 * MS, 8 * MS]
    );
    let mut bad = record(Input::PoolAnswer(answer)).encode();
    bad[5] = 4 | 3 << 16;
    assert_eq!(Record::decode(&bad).map_err(|e| e.what), Err("pool call"));
}

#[test]
fn a_recorded_run_replays_to_the_same_decisions() {
    fn sequence() -> u64 {
        0
    }
    let kind = PolicyKind::Eevdf(EevdfTunables::for_cpus(1, 4 * MS));
    let mut original = core(kind, true);
    original.start_recording(64, sequence);
    let _ = original.wake_up_new_task(TaskId(1), &nice0(), 0).unwrap();
    let _ = original.wake_up_new_task(TaskId(2), &nice0(), 100).unwrap();
    let _ = original.schedule(200, Leaving::Runnable);
    let _ = original.sched_tick(4 * MS);
    let _ = original.hrtick(3 * MS + 200);
    let _ = original.schedule(3 * MS + 300, Leaving::Sleeping);
    let _ = original.try_to_wake_up(TaskId(1), 5 * MS, false);
    let (records, dropped) = original.records();
    assert_eq!(dropped, 0);
    assert_eq!(records.len(), 7);
    let mut replica = core(kind, true);
    let mut migrations = BTreeMap::new();
    for record in records {
        let output = replica.replay(record.now, &record.input, &mut migrations);
        assert_eq!(output, Ok(record.output), "{record:?}");
    }
    // A replica built differently decides differently somewhere: the check can fail.
    let mut different = core(PolicyKind::RoundRobin { slice: MS }, true);
    let differs = records.iter().any(|record| {
        different.replay(record.now, &record.input, &mut migrations) != Ok(record.output)
    });
    assert!(differs);
}

#[test]
fn a_full_recording_counts_what_it_drops() {
    fn sequence() -> u64 {
        0
    }
    let mut core = core(PolicyKind::RoundRobin { slice: MS }, true);
    core.start_recording(1, sequence);
    core.update_blocked_averages(0);
    core.update_blocked_averages(1);
    core.update_blocked_averages(2);
    let (records, dropped) = core.records();
    assert_eq!((records.len(), dropped), (1, 2));
}

fn two_cpu_cluster() -> crate::topology::Topology {
    use crate::topology::{CpuDescription, Topology};
    let cpu = CpuDescription {
        capacity: 1024,
        cluster: 0,
    };
    Topology::new(&[cpu, cpu]).unwrap()
}

fn snapshot(cpu: u16, nr_running: u32) -> crate::balance::CpuSnapshot {
    crate::balance::CpuSnapshot {
        cpu: crate::task::CpuId(cpu),
        capacity: 1024,
        nr_running,
        idle: nr_running == 0,
        load_avg: u64::from(nr_running) * 1024,
        util_avg: u64::from(nr_running) * 512,
        runnable_avg: u64::from(nr_running) * 512,
        util_est: 0,
        misfit_task_load: 0,
        uclamp: [0, 1024],
        uclamp_idle: nr_running == 0,
        rt_runnable: false,
    }
}

/// `select_task_rq` asked of the waking task's last CPU, by Linux's
/// `select_idle_sibling` rule (not in the reference document; kernel/sched/fair.c
/// as documented in `sched/src/balance/wake.rs`): an idle previous CPU keeps the
/// task; a busy one sends it to an idle CPU of the same cluster, unless its
/// affinity forbids that CPU.
#[test]
fn a_wake_up_goes_to_an_idle_cpu_of_the_cluster() {
    use crate::task::CpuId;
    let topology = two_cpu_cluster();
    let mut core = core(PolicyKind::RoundRobin { slice: 4 * MS }, false);
    let _ = core.wake_up_new_task(TaskId(1), &nice0(), 0).unwrap();
    let _ = core.schedule(0, Leaving::Runnable);
    let _ = core.schedule(MS, Leaving::Sleeping);
    let wake = |snapshots: &[crate::balance::CpuSnapshot], affinity: u64| {
        core.select_task_rq(
            TaskId(1),
            CpuId(0),
            CpuMask(affinity),
            0,
            &topology,
            snapshots,
            None,
        )
        .cpu
    };
    // The previous CPU is idle: it stays.
    assert_eq!(wake(&[snapshot(0, 0), snapshot(1, 1)], 0b11), CpuId(0));
    // The previous CPU is busy and CPU 1 idle: CPU 1.
    assert_eq!(wake(&[snapshot(0, 2), snapshot(1, 0)], 0b11), CpuId(1));
    // Only CPU 0 is allowed: CPU 0, busy or not.
    assert_eq!(wake(&[snapshot(0, 2), snapshot(1, 0)], 0b01), CpuId(0));
}

/// Balancing's move: the detached task leaves the source's `cfs_tasks`, keeps
/// its place nowhere, joins the destination's list, and an idle destination
/// reschedules for it. Round robin picks in arrival order, so task 1 runs
/// first and goes to the head of the list (Linux's `cfs_tasks`: enqueue and
/// pick move a task to the head; balancing takes candidates from the tail).
#[test]
fn a_balancing_move_carries_the_task_between_the_cpus_lists() {
    let kind = PolicyKind::RoundRobin { slice: 4 * MS };
    let mut source = core(kind, true);
    let mut destination = CpuCore::new(1, RunQueue::new(kind, 8), 8, true);
    for task in 1..=3 {
        let _ = source.wake_up_new_task(TaskId(task), &nice0(), 0).unwrap();
    }
    let tail_first = |core: &CpuCore| core.cfs_tasks().from_tail(8).collect::<Vec<_>>();
    assert_eq!(tail_first(&source), [TaskId(1), TaskId(2), TaskId(3)]);
    let switch = source.schedule(0, Leaving::Runnable);
    assert_eq!(switch.next, Some(TaskId(1)));
    assert_eq!(tail_first(&source), [TaskId(2), TaskId(3), TaskId(1)]);
    let migration = source
        .detach_task(TaskId(2), MS)
        .expect("queued, not running");
    assert_eq!(tail_first(&source), [TaskId(3), TaskId(1)]);
    destination
        .migrate_task_in(TaskId(2), &migration, MS)
        .unwrap();
    let decision = destination.attach_task(TaskId(2), MS);
    assert!(decision.resched, "an idle CPU runs what arrives");
    assert_eq!(tail_first(&destination), [TaskId(2)]);
}

/// An exiting task is dequeued and forgotten at its last `schedule`
/// (`do_task_dead`); its id can then serve a new task.
#[test]
fn an_exited_task_is_forgotten_and_its_id_serves_again() {
    let mut core = core(PolicyKind::RoundRobin { slice: 4 * MS }, true);
    let _ = core.wake_up_new_task(TaskId(1), &nice0(), 0).unwrap();
    let _ = core.schedule(0, Leaving::Runnable);
    let switch = core.schedule(MS, Leaving::Dead);
    assert_eq!((switch.previous, switch.next), (Some(TaskId(1)), None));
    assert!(switch.newidle_balance());
    assert_eq!(core.run_queue().task_class(TaskId(1)), None);
    assert!(!core.cfs_tasks().contains(TaskId(1)));
    assert!(core.wake_up_new_task(TaskId(1), &nice0(), 2 * MS).is_ok());
}

/// An active balance takes the running task off its run queue before the
/// switch (the kernel's `take_push`), then moves it once switched out.
#[test]
fn a_running_task_dequeued_for_a_push_can_leave() {
    let kind = PolicyKind::Eevdf(EevdfTunables::for_cpus(1, 4 * MS));
    for others in [0u16, 1, 2] {
        let mut core = core(kind, true);
        let _ = core.wake_up_new_task(TaskId(1), &nice0(), 0).unwrap();
        for other in 0..others {
            let _ = core
                .wake_up_new_task(TaskId(2 + other), &nice0(), 0)
                .unwrap();
        }
        let switch = core.schedule(0, Leaving::Runnable);
        let running = switch.next.unwrap();
        let flags = crate::class::DequeueFlags {
            migrating: true,
            ..crate::class::DequeueFlags::default()
        };
        core.dequeue_task(running, 3 * MS, flags);
        let switch = core.schedule(3 * MS, Leaving::Runnable);
        assert_ne!(switch.next, Some(running));
        assert!(
            core.migrate_task_out(running, 3 * MS).is_some(),
            "{others} others"
        );
    }
}

#[test]
fn tables_grow_with_the_tasks_created_and_only_then() {
    // Built for 8 task ids: a ninth id is refused (as Linux refuses a fork
    // past its limit), until the mechanism makes room on this CPU.
    let mut core = core(PolicyKind::RoundRobin { slice: 4 * MS }, true);
    let built = core.task_storage_bytes();
    assert!(built > 0);
    assert!(matches!(
        core.wake_up_new_task(TaskId(70), &nice0(), 0),
        Err(ParamError::TooManyTasks { task: 70, .. })
    ));
    core.reserve_tasks(71);
    // Whole blocks of 64 ids: 128 entries in every table, 16 times the 8
    // each was built with (every table holds one entry per id).
    assert_eq!(core.task_storage_bytes(), built * 16);
    let decision = core.wake_up_new_task(TaskId(70), &nice0(), 0).unwrap();
    assert!(decision.resched, "an idle CPU runs what arrives");
    let switch = core.schedule(0, Leaving::Runnable);
    assert_eq!(switch.next, Some(TaskId(70)));
    // Room that exists already is not allocated again, and nothing shrinks.
    core.reserve_tasks(20);
    assert_eq!(core.task_storage_bytes(), built * 16);
    // Whole blocks again: 129 ids take 192 entries (24 times 8).
    core.reserve_tasks(129);
    assert_eq!(core.task_storage_bytes(), built * 24);
    // 1,025 ids: 1,088 entries (17 blocks; a quarter more than 192 is less).
    core.reserve_tasks(1025);
    assert_eq!(core.task_storage_bytes(), built * 136);
    // One block more would be 1,152; a quarter more than 1,088 is 1,360.
    core.reserve_tasks(1089);
    assert_eq!(core.task_storage_bytes(), built * 170);
}
