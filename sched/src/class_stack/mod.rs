//! The class stack: one CPU's RT, fair and idle classes behind the single
//! [`SchedClass`] interface, with the core's uclamp run-queue accounting
//! (Linux's `core.c` around `for_each_class`, facts §3.2).
//!
//! ```text
//!   pick order:  rt  ──►  fair (F)  ──►  idle (None: run the idle loop)
//!   enqueue:     uclamp_rq_inc ─► class.enqueue_task      (as core enqueue_task)
//!   dequeue:     uclamp_rq_dec ─► class.dequeue_task      (as core dequeue_task)
//!   other ops:   dispatched to the task's class, recorded from its Policy at task_new
//! ```
//!
//! A wake-up preempts the running task when the woken task's class is above
//! the running one's (an RT wake-up preempts a fair task; a fair wake-up never
//! preempts RT); within one class, that class decides.

use alloc::vec;
use alloc::vec::Vec;

use crate::class::{DequeueFlags, EnqueueFlags, Resched, SchedClass};
use crate::idle_class::IdleClass;
use crate::rt::{RtClass, rt_priority};
use crate::task::{Nanoseconds, ParamError, Policy, TaskId, TaskParams};
use crate::uclamp::{
    ClampId, GroupUclamp, TaskClamps, UclampRequest, UclampRunQueue, UclampSysctl, uclamp_eff_get,
    uclamp_none,
};

/// The class a task belongs to, in pick order (earlier runs first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClassKind {
    /// SCHED_FIFO and SCHED_RR.
    Realtime,
    /// SCHED_NORMAL, SCHED_BATCH and SCHED_IDLE.
    Fair,
}

impl ClassKind {
    /// The class of `policy` (SCHED_IDLE tasks are fair, as in Linux).
    pub const fn of(policy: Policy) -> ClassKind {
        if rt_priority(policy).is_some() {
            ClassKind::Realtime
        } else {
            ClassKind::Fair
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct TaskSlot {
    class: Option<ClassKind>,
    policy: Policy,
    request: UclampRequest,
    group: Option<GroupUclamp>,
    /// As counted, or, while not counted, `uclamp_eff_get` for both ids
    /// (§3.3), set again whenever the request, the group or the sysctls
    /// change: what the next enqueue counts.
    clamps: TaskClamps,
}

/// One CPU's classes: RT above the fair class `F` above idle.
#[derive(Debug)]
pub struct ClassStack<F: SchedClass> {
    rt: RtClass,
    fair: F,
    idle: IdleClass,
    tasks: Vec<TaskSlot>,
    uclamp: UclampRunQueue,
    sysctl: UclampSysctl,
    /// Whether the bucket accounting runs at all (Linux's `sched_uclamp_used`
    /// static key; off, enqueue and dequeue skip it entirely).
    uclamp_enabled: bool,
    /// Brackets around the uclamp updates (issue 4's cost counters).
    pub probe: crate::stats::probe::CostProbe,
}

impl<F: SchedClass> ClassStack<F> {
    /// A stack for task ids below `max_tasks` around `fair` (built for the same
    /// ids), with the default RR slice, 5 uclamp buckets and default sysctls.
    pub fn new(max_tasks: usize, fair: F) -> Self {
        ClassStack {
            rt: RtClass::new(max_tasks),
            fair,
            idle: IdleClass::new(),
            tasks: vec![TaskSlot::default(); max_tasks],
            uclamp: UclampRunQueue::default(),
            sysctl: UclampSysctl::default(),
            uclamp_enabled: true,
            probe: crate::stats::probe::CostProbe::default(),
        }
    }

    /// As [`ClassStack::new`] with an RT class and uclamp settings of choice.
    pub fn with_parts(
        max_tasks: usize,
        rt: RtClass,
        fair: F,
        uclamp: UclampRunQueue,
        sysctl: UclampSysctl,
    ) -> Self {
        ClassStack {
            rt,
            fair,
            idle: IdleClass::new(),
            tasks: vec![TaskSlot::default(); max_tasks],
            uclamp,
            sysctl,
            uclamp_enabled: true,
            probe: crate::stats::probe::CostProbe::default(),
        }
    }

    /// The RT class.
    pub fn rt(&self) -> &RtClass {
        &self.rt
    }

    /// The fair class.
    pub fn fair(&self) -> &F {
        &self.fair
    }

    /// The fair class, for its own set-up calls (e.g. task groups).
    pub fn fair_mut(&mut self) -> &mut F {
        &mut self.fair
    }

    /// The idle slot.
    pub fn idle(&self) -> &IdleClass {
        &self.idle
    }

    /// The policy `task` was created with, if it is known.
    pub fn task_policy(&self, task: TaskId) -> Option<Policy> {
        let slot = self.known_slot(task).ok()?;
        Some(slot.policy)
    }

    /// Whether the uclamp bucket accounting runs.
    pub fn uclamp_enabled(&self) -> bool {
        self.uclamp_enabled
    }

    /// Turns the uclamp bucket accounting on or off. Off, every counted task
    /// is uncounted and the run-queue clamps read as [`uclamp_none`]
    /// (uclamp compiled out); on, the tasks for which `is_queued` holds are
    /// counted with their effective values at once.
    pub fn set_uclamp_enabled(&mut self, enabled: bool, mut is_queued: impl FnMut(TaskId) -> bool) {
        if enabled == self.uclamp_enabled {
            return;
        }
        self.uclamp_enabled = enabled;
        for index in 0..self.tasks.len() {
            let task = TaskId(index as u16);
            if enabled {
                if self.tasks[index].class.is_some() && is_queued(task) {
                    self.uclamp_rq_inc(task);
                }
            } else {
                self.uclamp.dec_task(&mut self.tasks[index].clamps);
            }
        }
    }

    /// The class `task` was created in, if it is known.
    pub fn task_class(&self, task: TaskId) -> Option<ClassKind> {
        self.tasks.get(task.index())?.class
    }

    /// The mechanism found nothing to run (`pick_next_task` gave `None`) and
    /// enters its idle loop at `now`.
    pub fn set_next_idle(&mut self, now: Nanoseconds) {
        self.fair.settle_switch(now);
        self.idle.set_next_idle(now);
    }

    /// `put_prev_task` at a context switch: [`FairClass::put_prev_task_for_switch`]
    /// for a fair task (the pick and `set_next_task` or `set_next_idle`
    /// follow under the same lock).
    #[inline(always)]
    pub fn put_prev_task_for_switch(&mut self, task: TaskId, now: Nanoseconds) {
        match self.class_of(task) {
            Some(ClassKind::Realtime) => self.rt.put_prev_task(task, now),
            Some(ClassKind::Fair) => self.fair.put_prev_task_for_switch(task, now),
            None => {}
        }
    }

    /// When the RT period timer must fire next (`None`: stopped); see
    /// [`RtClass::period_timer`].
    pub fn rt_period_timer_deadline(&self) -> Option<Nanoseconds> {
        self.rt.period_timer_deadline()
    }

    /// The RT period timer fires at `now` (RT throttling, `sched-rt-group`).
    #[must_use = "an unthrottle must reschedule the CPU"]
    pub fn rt_period_timer(&mut self, now: Nanoseconds) -> Resched {
        self.rt.period_timer(now)
    }

    /// The run queue's clamp `clamp_id` (`uclamp_rq_get`, §3.2): the max over
    /// the queued tasks' effective values (bucket-wise), held when idle.
    pub fn uclamp_rq_value(&self, clamp_id: ClampId) -> u16 {
        if self.uclamp_enabled {
            self.uclamp.value(clamp_id)
        } else {
            uclamp_none(clamp_id)
        }
    }

    /// The run queue's clamp aggregation, for the clamped-utilization helpers.
    pub fn uclamp_run_queue(&self) -> &UclampRunQueue {
        &self.uclamp
    }

    /// `uclamp_eff_value(p, clamp_id)` (§3.3): the counted value while the
    /// task is queued, else what it would be counted with now; `None` for an
    /// unknown task.
    pub fn uclamp_eff_value(&self, task: TaskId, clamp_id: ClampId) -> Option<u16> {
        let slot = self.known_slot(task).ok()?;
        let counted = slot.clamps.get(clamp_id);
        Some(if counted.active() {
            counted.value()
        } else {
            self.effective(slot, clamp_id)
        })
    }

    /// New system settings. RT tasks without a user floor take the new RT
    /// default boost (§3.3); queued tasks are counted with their new effective
    /// values at their next enqueue, as in Linux.
    pub fn set_uclamp_sysctl(&mut self, sysctl: UclampSysctl) {
        self.sysctl = sysctl;
        for index in 0..self.tasks.len() {
            let slot = &mut self.tasks[index];
            if slot.class.is_some() {
                slot.request
                    .update_util_min_rt_default(slot.policy, &sysctl);
                self.update_effective(index);
            }
        }
    }

    /// `sched_setattr` with new clamps for `task` (`None` resets to the
    /// default). A queued task is re-counted at once (`uclamp_update_active`).
    pub fn set_task_uclamp(
        &mut self,
        task: TaskId,
        uclamp_min: Option<u16>,
        uclamp_max: Option<u16>,
    ) -> Result<(), ParamError> {
        let slot = self.known_slot(task)?;
        let params = TaskParams {
            policy: slot.policy,
            uclamp_min,
            uclamp_max,
            ..TaskParams::default()
        };
        let request = UclampRequest::from_params(&params, &self.sysctl)?;
        self.tasks[task.index()].request = request;
        self.update_effective(task.index());
        self.update_active(task);
        Ok(())
    }

    /// Moves `task` into a task group with clamps `group` (`None` is the root
    /// group). A queued task is re-counted at once (as a cgroup change does).
    pub fn set_task_group_uclamp(
        &mut self,
        task: TaskId,
        group: Option<GroupUclamp>,
    ) -> Result<(), ParamError> {
        self.known_slot(task)?;
        self.tasks[task.index()].group = group;
        self.update_effective(task.index());
        self.update_active(task);
        Ok(())
    }

    /// Priority inheritance moves `task` between classes (`rt_mutex_setprio`'s
    /// `__setscheduler_prio`, docs/linux-sched-reference.md §1.6): to the RT
    /// class as `rt_policy` (`Some`), or back to the fair class (`None`). The
    /// task is neither queued nor running. Its policy and clamp requests stay
    /// what `sched_setattr` set (Linux keeps `uclamp_req` across a boost); the
    /// fair class's side of the move is the caller's, which takes the fair
    /// state out before a boost and gives it back after the deboost.
    pub fn set_pi_class(
        &mut self,
        task: TaskId,
        rt_policy: Option<Policy>,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        self.known_slot(task)?;
        let class = match rt_policy {
            Some(policy) => {
                let params = TaskParams {
                    policy,
                    ..TaskParams::default()
                };
                self.rt.task_new(task, &params, now)?;
                ClassKind::Realtime
            }
            None => {
                self.rt.task_dead(task);
                ClassKind::Fair
            }
        };
        self.tasks[task.index()].class = Some(class);
        Ok(())
    }

    /// Priority inheritance changes the RT priority of an RT-class `task`
    /// (see [`RtClass::change_priority`]).
    pub fn set_rt_priority(&mut self, task: TaskId, priority: u8) {
        self.rt.change_priority(task, priority);
    }

    fn known_slot(&self, task: TaskId) -> Result<&TaskSlot, ParamError> {
        match self.tasks.get(task.index()) {
            Some(slot) if slot.class.is_some() => Ok(slot),
            Some(_) => Err(ParamError::UnknownTask { task: task.0 }),
            None => Err(ParamError::TooManyTasks {
                task: task.0,
                capacity: self.tasks.len(),
            }),
        }
    }

    fn effective(&self, slot: &TaskSlot, clamp_id: ClampId) -> u16 {
        uclamp_eff_get(&slot.request, clamp_id, slot.group.as_ref(), &self.sysctl)
    }

    /// Works out again the effective clamps of the task in slot `index`
    /// after its request, its group or the sysctls changed (§3.3); while it
    /// is counted, at its next enqueue instead (its dequeue uncounts the
    /// values it was counted with).
    fn update_effective(&mut self, index: usize) {
        let slot = &self.tasks[index];
        if slot.clamps.active() {
            self.tasks[index].clamps.mark_stale();
            return;
        }
        let effective = ClampId::ALL.map(|clamp_id| self.effective(slot, clamp_id));
        self.uclamp
            .set_effective(&mut self.tasks[index].clamps, effective);
    }

    /// `uclamp_rq_inc` for one task, with its effective clamps as last
    /// worked out (they are `uclamp_eff_get`'s now, §3.3).
    #[inline]
    fn uclamp_rq_inc(&mut self, task: TaskId) {
        let index = task.index();
        if !self.uclamp.inc_task(&mut self.tasks[index].clamps) {
            // Stale: they changed while the task was counted.
            self.update_effective(index);
            let counted = self.uclamp.inc_task(&mut self.tasks[index].clamps);
            debug_assert!(counted, "effective clamps just set");
        }
    }

    /// `uclamp_rq_dec` for one task.
    #[inline]
    fn uclamp_rq_dec(&mut self, task: TaskId) {
        self.uclamp.dec_task(&mut self.tasks[task.index()].clamps);
    }

    /// [`Self::uclamp_rq_inc`] or [`Self::uclamp_rq_dec`] in a probe
    /// bracket, out of line: the uninstrumented path tests the probe once and
    /// keeps its registers.
    #[inline(never)]
    fn uclamp_update_probed(&mut self, task: TaskId, inc: bool) {
        let start = self.probe.start();
        if inc {
            self.uclamp_rq_inc(task);
        } else {
            self.uclamp_rq_dec(task);
        }
        self.probe.end_uclamp(start);
    }

    /// `uclamp_update_active`: dec then inc a counted task.
    fn update_active(&mut self, task: TaskId) {
        if self.tasks[task.index()].clamps.active() {
            self.uclamp_rq_dec(task);
            self.uclamp_rq_inc(task);
        }
    }

    /// The class of a known task; unknown ids are a mechanism bug.
    fn class_of(&self, task: TaskId) -> Option<ClassKind> {
        let class = self.task_class(task);
        debug_assert!(class.is_some(), "unknown task {task:?}");
        class
    }
}

impl<F: SchedClass> SchedClass for ClassStack<F> {
    fn task_new(
        &mut self,
        task: TaskId,
        params: &TaskParams,
        now: Nanoseconds,
    ) -> Result<(), ParamError> {
        let capacity = self.tasks.len();
        if task.index() >= capacity {
            return Err(ParamError::TooManyTasks {
                task: task.0,
                capacity,
            });
        }
        debug_assert!(
            !self.tasks[task.index()].clamps.active(),
            "task_new of queued {task:?}"
        );
        params.validate()?;
        let request = UclampRequest::from_params(params, &self.sysctl)?;
        let class = ClassKind::of(params.policy);
        match class {
            ClassKind::Realtime => self.rt.task_new(task, params, now)?,
            ClassKind::Fair => self.fair.task_new(task, params, now)?,
        }
        self.tasks[task.index()] = TaskSlot {
            class: Some(class),
            policy: params.policy,
            request,
            ..TaskSlot::default()
        };
        self.update_effective(task.index());
        Ok(())
    }

    fn task_dead(&mut self, task: TaskId) {
        match self.class_of(task) {
            Some(ClassKind::Realtime) => self.rt.task_dead(task),
            Some(ClassKind::Fair) => self.fair.task_dead(task),
            None => return,
        }
        self.tasks[task.index()] = TaskSlot::default();
    }

    #[inline]
    fn enqueue_task(&mut self, task: TaskId, now: Nanoseconds, flags: EnqueueFlags) {
        let Some(class) = self.class_of(task) else {
            return;
        };
        if self.uclamp_enabled {
            if self.probe.counting() {
                self.uclamp_update_probed(task, true);
            } else {
                self.uclamp_rq_inc(task);
            }
        }
        match class {
            ClassKind::Realtime => self.rt.enqueue_task(task, now, flags),
            ClassKind::Fair => self.fair.enqueue_task(task, now, flags),
        }
    }

    #[inline]
    fn dequeue_task(&mut self, task: TaskId, now: Nanoseconds, flags: DequeueFlags) {
        let Some(class) = self.class_of(task) else {
            return;
        };
        if self.uclamp_enabled {
            if self.probe.counting() {
                self.uclamp_update_probed(task, false);
            } else {
                self.uclamp_rq_dec(task);
            }
        }
        match class {
            ClassKind::Realtime => self.rt.dequeue_task(task, now, flags),
            ClassKind::Fair => self.fair.dequeue_task(task, now, flags),
        }
    }

    #[inline]
    fn pick_next_task(&mut self, now: Nanoseconds) -> Option<TaskId> {
        self.rt
            .pick_next_task(now)
            .or_else(|| self.fair.pick_next_task(now))
            .or_else(|| self.idle.pick_next_task())
    }

    #[inline]
    fn put_prev_task(&mut self, task: TaskId, now: Nanoseconds) {
        match self.class_of(task) {
            Some(ClassKind::Realtime) => self.rt.put_prev_task(task, now),
            Some(ClassKind::Fair) => self.fair.put_prev_task(task, now),
            None => {}
        }
    }

    #[inline]
    fn set_next_task(&mut self, task: TaskId, now: Nanoseconds) {
        self.idle.put_prev_idle(now);
        match self.class_of(task) {
            Some(ClassKind::Realtime) => {
                self.fair.settle_switch(now);
                self.rt.set_next_task(task, now)
            }
            Some(ClassKind::Fair) => self.fair.set_next_task(task, now),
            None => {}
        }
    }

    fn task_tick(&mut self, task: TaskId, now: Nanoseconds) -> Resched {
        match self.class_of(task) {
            Some(ClassKind::Realtime) => self.rt.task_tick(task, now),
            Some(ClassKind::Fair) => self.fair.task_tick(task, now),
            None => Resched::Keep,
        }
    }

    #[inline]
    fn wakeup_preempt(&mut self, current: TaskId, woken: TaskId, now: Nanoseconds) -> Resched {
        match (self.class_of(current), self.class_of(woken)) {
            (Some(ClassKind::Realtime), Some(ClassKind::Realtime)) => {
                self.rt.wakeup_preempt(current, woken, now)
            }
            (Some(ClassKind::Fair), Some(ClassKind::Fair)) => {
                self.fair.wakeup_preempt(current, woken, now)
            }
            // A class above the running one's preempts it; one below never does.
            (Some(running), Some(waking)) if waking < running => Resched::Reschedule,
            _ => Resched::Keep,
        }
    }

    fn yield_task(&mut self, task: TaskId, now: Nanoseconds) {
        match self.class_of(task) {
            Some(ClassKind::Realtime) => self.rt.yield_task(task, now),
            Some(ClassKind::Fair) => self.fair.yield_task(task, now),
            None => {}
        }
    }

    #[inline]
    fn nr_running(&self) -> usize {
        self.rt.nr_running() + self.fair.nr_running()
    }

    fn reserve_tasks(&mut self, count: usize) {
        crate::task::grow_table(&mut self.tasks, count, TaskSlot::default());
        self.rt.reserve_tasks(count);
        self.fair.reserve_tasks(count);
    }

    fn task_storage_bytes(&self) -> usize {
        crate::task::table_bytes(&self.tasks)
            + self.rt.task_storage_bytes()
            + self.fair.task_storage_bytes()
    }

    #[inline]
    fn slice_remaining(&self, task: TaskId, now: Nanoseconds) -> Option<Nanoseconds> {
        match self.task_class(task)? {
            ClassKind::Realtime => self.rt.slice_remaining(task, now),
            ClassKind::Fair => self.fair.slice_remaining(task, now),
        }
    }
}

#[cfg(test)]
mod tests;
