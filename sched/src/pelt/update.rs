//! The fair class's PELT entry points: `update_load_avg` and its flags, removed load and sync (§2.6).
//!
//! The fair class keeps one [`RunQueueLoad`] per fair run queue and one
//! [`SchedAvg`] per entity, and calls [`update_load_avg`] wherever Linux does
//! (enqueue, dequeue, tick, put_prev, set_next, attach/detach on migration or
//! group change). The result says whether the CPU's utilization changed (the
//! schedutil hook) and whether the group's `tg->load_avg` should be refreshed.
//!
//! Wiring, as Linux does it (states are those that held *since the last update*):
//! - every event first moves the CPU's [`super::clock::PeltClock`]
//!   (`update(now, running_idle, capacity)`); `now` below is its `now()`;
//!   switching to idle calls `enter_idle(cfs + rt + dl util_sum)`;
//! - fork: [`super::attach::init_entity_runnable_average`]; first wake-up:
//!   [`super::attach::post_init_entity_util_avg`], then enqueue (which attaches);
//! - enqueue: [`UpdateFlags::ENQUEUE`] with the entity still not queued and the
//!   run queue state before it; tasks also `util_est_enqueue` on the root;
//! - dequeue: tasks first `util_est_dequeue`, then `util_est_update` with the
//!   task's *current* `util_avg`/`runnable_avg` (before this update, §2.4),
//!   then [`UpdateFlags::UPDATE_TG`] with the entity still queued/running;
//! - tick, put_prev, set_next: [`UpdateFlags::UPDATE_TG`] for the current entity;
//! - migration away of a blocked task: [`remove_entity_load_avg`], then
//!   `last_update_time = 0`; on the new CPU the enqueue attaches it;
//! - a group entity passes `Some(GroupRunQueue)` so pending changes below propagate.
//!
//! PELT time 0 means "not attached" (§2.6): the first attach must happen at a
//! PELT `now` of at least 1024 ns, so that the run queue's `last_update_time`
//! (copied into the entity) is not 0.

use super::SchedAvg;
use super::attach::{RemovedLoad, attach_entity_load_avg, detach_entity_load_avg};
use super::average::{update_entity_load_avg, update_run_queue_load_avg};
use super::propagate::{
    GroupRunQueue, ParentRunQueue, Propagation, add_tg_cfs_propagate, propagate_entity_load_avg,
};

/// A fair run queue's PELT state (`cfs_rq->avg`, `->removed`, `->propagate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunQueueLoad {
    /// The run queue's signals; `util_est.enqueued` is the sum of the queued tasks' util_est.
    pub avg: SchedAvg,
    /// Signals of entities that left without the run queue being updated.
    pub removed: RemovedLoad,
    /// Load change below a group run queue not yet given to its entity.
    pub propagation: Propagation,
}

/// The state a fair run queue had since its last update (§2.2 table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunQueueState {
    /// Sum of queued entities' weights, scaled down (nice 0 = 1024).
    pub load_weight: u64,
    /// Runnable tasks below (`h_nr_runnable`).
    pub nr_runnable: u64,
    /// The run queue has a current entity.
    pub current_running: bool,
}

/// The state an entity had since its last update (§2.2 table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntityState {
    /// `se_weight` (nice 0 = 1024; a group entity: its shares).
    pub weight: u64,
    /// The entity is queued (the running one included).
    pub on_run_queue: bool,
    /// 1 for a queued task; a group entity: `h_nr_runnable` of its group.
    pub runnable: u64,
    /// The entity is its run queue's current one.
    pub running: bool,
}

/// `update_load_avg` flags (§2.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateFlags {
    /// `UPDATE_TG`: ask for a `tg->load_avg` refresh when the run queue decayed.
    pub update_tg: bool,
    /// `SKIP_AGE_LOAD`: do not age the entity (it was just synchronised).
    pub skip_age_load: bool,
    /// `DO_ATTACH`: attach the entity if it is not attached yet.
    pub do_attach: bool,
    /// `DO_DETACH`: detach the entity.
    pub do_detach: bool,
}

impl UpdateFlags {
    /// No flag.
    pub const NONE: Self = UpdateFlags {
        update_tg: false,
        skip_age_load: false,
        do_attach: false,
        do_detach: false,
    };
    /// `UPDATE_TG`.
    pub const UPDATE_TG: Self = UpdateFlags {
        update_tg: true,
        ..Self::NONE
    };
    /// `UPDATE_TG | DO_ATTACH`, as on enqueue.
    pub const ENQUEUE: Self = UpdateFlags {
        update_tg: true,
        do_attach: true,
        ..Self::NONE
    };
    /// `DO_DETACH` (with `UPDATE_TG` semantics implied by detach).
    pub const DETACH: Self = UpdateFlags {
        do_detach: true,
        ..Self::NONE
    };
}

/// What [`update_load_avg`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct LoadUpdate {
    /// The run queue's averages moved (removed load, a period boundary, or propagation).
    pub decayed: bool,
    /// The entity was attached to the run queue.
    pub attached: bool,
    /// The entity was detached from the run queue.
    pub detached: bool,
    /// `cfs_rq_util_change`: the CPU's utilization changed; tell the
    /// frequency governor (for the root run queue).
    pub util_changed: bool,
    /// `update_tg_load_avg` is due for this run queue (its group, if any).
    pub update_tg_load_avg: bool,
}

/// `update_cfs_rq_load_avg(now, cfs_rq)` (§2.6): subtracts removed load
/// (passing the change to the group's propagation), then ages the run queue.
/// Returns `true` if its averages changed.
#[inline(always)]
pub fn update_cfs_rq_load_avg(
    run_queue: &mut RunQueueLoad,
    now: u64,
    state: RunQueueState,
) -> bool {
    let mut decayed = false;
    if let Some(removed_sum) = run_queue.removed.apply(&mut run_queue.avg) {
        add_tg_cfs_propagate(&mut run_queue.propagation, removed_sum);
        decayed = true;
    }
    decayed |= update_run_queue_load_avg(
        &mut run_queue.avg,
        now,
        state.load_weight,
        state.nr_runnable,
        state.current_running,
    );
    decayed
}

/// `update_load_avg(cfs_rq, se, flags)` (§2.6), at PELT time `now`:
///
/// 1. age the entity, if attached and not `skip_age_load`;
/// 2. update the run queue (removed load, aging), and for a group entity
///    (`group` is `Some`) propagate its group's pending change;
/// 3. then one of: attach (not attached and `do_attach`), detach
///    (`do_detach`), or report the change if anything decayed.
///
/// Inlined into the fair class's one caller per policy: its state structs
/// then stay in registers, and the call's prologue and epilogue go (about 35
/// instructions of each of the ~5 updates in a sched-pipe round trip).
#[inline(always)]
pub fn update_load_avg(
    run_queue: &mut RunQueueLoad,
    run_queue_state: RunQueueState,
    entity: &mut SchedAvg,
    entity_state: EntityState,
    group: Option<GroupRunQueue<'_>>,
    now: u64,
    flags: UpdateFlags,
) -> LoadUpdate {
    if entity.last_update_time != 0 && !flags.skip_age_load {
        let _ = update_entity_load_avg(
            entity,
            now,
            entity_state.weight,
            entity_state.on_run_queue,
            entity_state.runnable,
            entity_state.running,
        );
    }
    let mut decayed = update_cfs_rq_load_avg(run_queue, now, run_queue_state);
    if let Some(group) = group {
        decayed |= propagate_entity_load_avg(
            ParentRunQueue {
                avg: &mut run_queue.avg,
                propagation: &mut run_queue.propagation,
            },
            entity,
            entity_state.weight,
            group,
        );
    }
    let mut result = LoadUpdate {
        decayed,
        ..LoadUpdate::default()
    };
    if entity.last_update_time == 0 && flags.do_attach {
        let added = attach_entity_load_avg(&mut run_queue.avg, entity, entity_state.weight);
        add_tg_cfs_propagate(&mut run_queue.propagation, added);
        result.attached = true;
        result.util_changed = true;
        result.update_tg_load_avg = true;
    } else if flags.do_detach {
        let removed = detach_entity_load_avg(&mut run_queue.avg, entity, entity_state.weight);
        add_tg_cfs_propagate(&mut run_queue.propagation, removed);
        result.detached = true;
        result.util_changed = true;
        result.update_tg_load_avg = true;
    } else if decayed {
        result.util_changed = true;
        result.update_tg_load_avg = flags.update_tg;
    }
    result
}

/// `sync_entity_load_avg` (§2.6): ages a blocked entity to its run queue's
/// last update, so its signals can be removed or compared without touching
/// the run queue.
pub fn sync_entity_load_avg(entity: &mut SchedAvg, run_queue: &RunQueueLoad, weight: u64) {
    let _ = update_entity_load_avg(
        entity,
        run_queue.avg.last_update_time,
        weight,
        false,
        0,
        false,
    );
}

/// `remove_entity_load_avg` (§2.6), when a blocked entity leaves (migration,
/// exit): synchronises it and records its signals for subtraction at the run
/// queue's next update. The caller then sets `entity.last_update_time = 0`
/// so that it is attached where it lands.
pub fn remove_entity_load_avg(entity: &mut SchedAvg, run_queue: &mut RunQueueLoad, weight: u64) {
    sync_entity_load_avg(entity, run_queue, weight);
    run_queue.removed.record(entity);
}
