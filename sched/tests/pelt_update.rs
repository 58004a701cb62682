//! The fair-class entry points of PELT (`update_load_avg`, removed load, group propagation) over whole scenarios.
//!
//! Expected values: Appendix A §1 of `docs/linux-sched-reference.md` for a run queue that
//! runs one task (its signals are the task's: same sums, §2.2 table), §2.5 for
//! a new task's start, and analytic invariants (a run queue's util is the sum of
//! its entities', a group entity mirrors its group, §2.7).

use fairway_sched::pelt::SchedAvg;
use fairway_sched::pelt::attach::{init_entity_runnable_average, post_init_entity_util_avg};
use fairway_sched::pelt::propagate::GroupRunQueue;
use fairway_sched::pelt::update::{
    EntityState, RunQueueLoad, RunQueueState, UpdateFlags, remove_entity_load_avg,
    update_cfs_rq_load_avg, update_load_avg,
};

const MS: u64 = 1_000_000;

const RUNNING_TASK: EntityState = EntityState {
    weight: 1024,
    on_run_queue: true,
    runnable: 1,
    running: true,
};
const SLEEPING_TASK: EntityState = EntityState {
    weight: 1024,
    on_run_queue: false,
    runnable: 0,
    running: false,
};
const BUSY: RunQueueState = RunQueueState {
    load_weight: 1024,
    nr_runnable: 1,
    current_running: true,
};
const EMPTY: RunQueueState = RunQueueState {
    load_weight: 0,
    nr_runnable: 0,
    current_running: false,
};

/// Appendix A §1 (b): a run queue running one nice-0 task from t = 0 with
/// HZ=1000 updates has the task's signals.
#[test]
fn run_queue_follows_appendix_series() {
    let rows = [
        (2, 41),
        (16, 288),
        (32, 495),
        (100, 894),
        (200, 1008),
        (400, 1024),
    ];
    let mut run_queue = RunQueueLoad::default();
    let mut next = 0;
    for t in 1..=400u64 {
        let _ = update_cfs_rq_load_avg(&mut run_queue, t * MS, BUSY);
        if rows[next].0 == t {
            assert_eq!(run_queue.avg.util_avg, rows[next].1, "t={t} util");
            assert_eq!(run_queue.avg.load_avg, rows[next].1, "t={t} load");
            assert_eq!(run_queue.avg.runnable_avg, rows[next].1, "t={t} runnable");
            next += 1;
        }
    }
    assert_eq!(next, rows.len());
}

/// A new task's life on one run queue and its migration away (§2.5, §2.6):
/// attach with the post-init util, run, sleep, be removed.
#[test]
fn new_task_run_sleep_migrate() {
    let start = 10 * MS;
    let mut run_queue = RunQueueLoad::default();
    let _ = update_cfs_rq_load_avg(&mut run_queue, start, EMPTY);
    let mut task = init_entity_runnable_average(1024, true);
    post_init_entity_util_avg(&mut task, &run_queue.avg, 1024, 1024, true, start);
    assert_eq!(task.util_avg, 512, "§2.5: half of an idle 1024 CPU");

    let enqueue = update_load_avg(
        &mut run_queue,
        EMPTY,
        &mut task,
        SLEEPING_TASK,
        None,
        start,
        UpdateFlags::ENQUEUE,
    );
    assert!(enqueue.attached && enqueue.util_changed && enqueue.update_tg_load_avg);
    assert_eq!(run_queue.avg.util_avg, 512);
    assert_eq!(run_queue.avg.load_avg, 1024);
    assert_eq!(task.last_update_time, run_queue.avg.last_update_time);
    assert!(run_queue.propagation.propagate);

    // Runs 300 ms: the run queue's util is the task's (to a unit of floor).
    for t in 1..=300u64 {
        let now = start + t * MS;
        let update = update_load_avg(
            &mut run_queue,
            BUSY,
            &mut task,
            RUNNING_TASK,
            None,
            now,
            UpdateFlags::UPDATE_TG,
        );
        assert!(!update.attached && !update.detached);
        assert!(run_queue.avg.util_avg.abs_diff(task.util_avg) <= 1, "t={t}");
        assert!(run_queue.avg.load_avg.abs_diff(task.load_avg) <= 1, "t={t}");
    }
    assert!(task.util_avg >= 1020);

    // Sleeps 50 ms: both decay alike (dequeued at `sleep`, updated at the end).
    let sleep = start + 300 * MS;
    let _ = update_load_avg(
        &mut run_queue,
        BUSY,
        &mut task,
        RUNNING_TASK,
        None,
        sleep,
        UpdateFlags::UPDATE_TG,
    );
    let _ = update_cfs_rq_load_avg(&mut run_queue, sleep + 50 * MS, EMPTY);

    // Migrates away while blocked: synchronised to the run queue's time and
    // recorded; subtracted at the run queue's next update.
    let run_queue_util = run_queue.avg.util_avg;
    let pending = run_queue.propagation.prop_runnable_sum;
    remove_entity_load_avg(&mut task, &mut run_queue, 1024);
    assert!(run_queue_util.abs_diff(task.util_avg) <= 1);
    assert!(
        task.util_avg < 400 && task.util_avg > 300,
        "~1024 * y^(50/1.048576)"
    );
    assert_eq!(run_queue.removed.nr, 1);
    assert!(
        update_cfs_rq_load_avg(&mut run_queue, sleep + 50 * MS, EMPTY),
        "removal counts as decayed"
    );
    assert!(run_queue.avg.util_avg <= 1 && run_queue.avg.load_avg <= 1);
    // The removed runnable time goes to the group's pending propagation.
    let divider = 46718 + u64::from(run_queue.avg.period_contrib);
    let removed_sum = (task.runnable_avg * divider) as i64;
    assert_eq!(
        run_queue.propagation.prop_runnable_sum,
        pending + ((-removed_sum) >> 10)
    );

    // Attached on another CPU's run queue with its util unchanged.
    task.last_update_time = 0;
    let mut other = RunQueueLoad::default();
    let _ = update_cfs_rq_load_avg(&mut other, 5 * MS, EMPTY);
    let util = task.util_avg;
    let attach = update_load_avg(
        &mut other,
        EMPTY,
        &mut task,
        SLEEPING_TASK,
        None,
        5 * MS,
        UpdateFlags::ENQUEUE,
    );
    assert!(attach.attached);
    assert_eq!((task.util_avg, other.avg.util_avg), (util, util));
}

/// §2.6 flags: SKIP_AGE_LOAD leaves the entity as it is; DO_DETACH takes it
/// out; an attached entity is not attached twice.
#[test]
fn flags() {
    let mut run_queue = RunQueueLoad::default();
    let _ = update_cfs_rq_load_avg(&mut run_queue, MS, EMPTY);
    let mut task = SchedAvg {
        load_avg: 1024,
        util_avg: 300,
        runnable_avg: 300,
        ..SchedAvg::default()
    };
    let _ = update_load_avg(
        &mut run_queue,
        EMPTY,
        &mut task,
        SLEEPING_TASK,
        None,
        MS,
        UpdateFlags::ENQUEUE,
    );
    let again = update_load_avg(
        &mut run_queue,
        EMPTY,
        &mut task,
        SLEEPING_TASK,
        None,
        MS,
        UpdateFlags::ENQUEUE,
    );
    assert!(!again.attached);
    assert_eq!(run_queue.avg.util_avg, 300, "not added twice");

    let before = task;
    let skip = UpdateFlags {
        skip_age_load: true,
        ..UpdateFlags::NONE
    };
    let _ = update_load_avg(
        &mut run_queue,
        BUSY,
        &mut task,
        RUNNING_TASK,
        None,
        20 * MS,
        skip,
    );
    assert_eq!(task, before, "SKIP_AGE_LOAD: entity not aged");

    let detach = update_load_avg(
        &mut run_queue,
        BUSY,
        &mut task,
        RUNNING_TASK,
        None,
        20 * MS,
        UpdateFlags::DETACH,
    );
    // DO_DETACH ages the entity first (1 ms -> 20 ms running, as the run queue
    // was), so what it takes out is everything the run queue holds.
    assert!(detach.detached && detach.util_changed);
    assert!(task.util_avg > 300, "aged while running");
    assert!(
        run_queue.avg.util_avg <= 1,
        "left: {}",
        run_queue.avg.util_avg
    );
    assert!(
        run_queue.avg.load_avg <= 1,
        "left: {}",
        run_queue.avg.load_avg
    );
}

/// §2.7: a task in a group; the group entity (shares 1024) on the root run
/// queue. After the attach propagates, the group entity mirrors the group's
/// util, and the root's util follows (each within a few units of floor).
#[test]
fn group_entity_mirrors_group() {
    let mut root = RunQueueLoad::default();
    let mut group = RunQueueLoad::default();
    let mut group_entity = SchedAvg::default();
    let group_entity_state = EntityState {
        weight: 1024,
        on_run_queue: true,
        runnable: 1,
        running: true,
    };
    let t0 = 5 * MS;
    let _ = update_cfs_rq_load_avg(&mut root, t0, EMPTY);
    let _ = update_cfs_rq_load_avg(&mut group, t0, EMPTY);
    // The group entity is attached to the root, the task to the group.
    let _ = update_load_avg(
        &mut root,
        EMPTY,
        &mut group_entity,
        SLEEPING_TASK,
        None,
        t0,
        UpdateFlags::ENQUEUE,
    );
    root.propagation = Default::default();
    let mut task = init_entity_runnable_average(1024, true);
    post_init_entity_util_avg(&mut task, &group.avg, 1024, 1024, true, t0);
    let _ = update_load_avg(
        &mut group,
        EMPTY,
        &mut task,
        SLEEPING_TASK,
        None,
        t0,
        UpdateFlags::ENQUEUE,
    );
    assert_eq!(group.avg.util_avg, 512);

    for t in 0..=200u64 {
        let now = t0 + t * MS;
        let _ = update_load_avg(
            &mut group,
            BUSY,
            &mut task,
            RUNNING_TASK,
            None,
            now,
            UpdateFlags::UPDATE_TG,
        );
        let group_view = GroupRunQueue {
            avg: &group.avg,
            load: fairway_sched::weight::scale_load(1024),
            propagation: &mut group.propagation,
        };
        let update = update_load_avg(
            &mut root,
            BUSY,
            &mut group_entity,
            group_entity_state,
            Some(group_view),
            now,
            UpdateFlags::UPDATE_TG,
        );
        if t == 0 {
            assert!(update.decayed, "the attach below propagated");
            assert_eq!(group_entity.util_avg, 512);
            assert_eq!(
                group_entity.load_avg, 1024,
                "a newly loaded group entity is fully loaded"
            );
            assert_eq!((root.avg.util_avg, root.avg.load_avg), (512, 1024));
            assert!(
                root.propagation.propagate,
                "passed up to the root's parent side"
            );
        }
        assert!(
            group_entity.util_avg.abs_diff(group.avg.util_avg) <= 2,
            "t={t}"
        );
        assert!(root.avg.util_avg.abs_diff(group.avg.util_avg) <= 2, "t={t}");
        assert!(group.avg.util_avg.abs_diff(task.util_avg) <= 1, "t={t}");
    }
}
