//! Load balancing in the simulator, as the kernel's `src/scheduling/balance.rs` carries out
//! `fairway_sched::balance`'s decisions: snapshots of every run queue, the source's
//! queued tasks as candidates (weighed by `task_h_load`, least recently picked or
//! enqueued first, as Linux's `detach_tasks` takes them from the tail of `cfs_tasks`),
//! and each decided task moved with its fair state and PELT signals (§2.6).
//!
//! Active balance (moving a source's running task, the stopper's job in Linux) is
//! carried out here at once for a misfit task, as the kernel does it (docs/eas.md);
//! the other active balances the core decides are not carried out yet.

use fairway_sched::balance::{
    BalanceDecision, CpuBalanceState, CpuSnapshot, Migration, MigrationType, NR_MIGRATE,
    TaskCandidate, TaskList, newidle_balance, rebalance_domains,
};
use fairway_sched::class_stack::ClassKind;
use fairway_sched::run_queue::CpuCapacity;
use fairway_sched::task::{CpuId, TaskId};
use fairway_sched::topology::{CpuDescription, Topology};
use fairway_sched::uclamp::ClampId;

use super::{Simulation, TaskState};
use crate::SimError;

/// The topology and each CPU's balancing state.
#[derive(Debug)]
pub(crate) struct Balancer {
    topology: Topology,
    states: Vec<CpuBalanceState>,
}

impl Balancer {
    /// One cluster of the given CPUs (QEMU's `virt` without a `cpu-map`, as the kernel
    /// sees it), each CPU's state fresh at time 0.
    pub(crate) fn new(capacities: &[CpuCapacity]) -> Result<Self, SimError> {
        let cpus: Vec<CpuDescription> = capacities
            .iter()
            .map(|c| CpuDescription {
                capacity: c.capacity_orig,
                cluster: 0,
            })
            .collect();
        let topology = Topology::new(&cpus)
            .map_err(|e| SimError::Config(format!("load balancing topology: {e:?}")))?;
        let states = (0..cpus.len())
            .map(|cpu| CpuBalanceState::new(&topology, CpuId(cpu as u16), 0))
            .collect();
        Ok(Balancer { topology, states })
    }

    /// The CPUs' topology.
    pub(crate) fn topology(&self) -> &Topology {
        &self.topology
    }
}

/// The run queues' `cfs_tasks` lists (kept by each CPU's driver) as balancing walks
/// them; a task the walk skipped goes back to the head, as Linux's `detach_tasks`
/// moves it.
struct Lists<'a, 's>(&'a mut Simulation<'s>);

impl TaskList for Lists<'_, '_> {
    fn candidates(&mut self, cpu: CpuId, buffer: &mut [TaskCandidate]) -> usize {
        self.0.balance_candidates(cpu.index(), buffer)
    }

    fn rotate(&mut self, cpu: CpuId, tasks: &[TaskId]) {
        for &TaskId(id) in tasks {
            let simulation = &mut *self.0;
            if simulation.tasks[usize::from(id)].cpu == Some(cpu.index()) {
                let now = simulation.now;
                simulation.cpus[cpu.index()]
                    .core
                    .cfs_tasks_rotate(TaskId(id), now);
            }
        }
    }
}

impl Simulation<'_> {
    /// Every CPU's run queue as balancing sees it.
    pub(super) fn balance_snapshots(&self) -> Vec<CpuSnapshot> {
        (0..self.cpus.len())
            .map(|cpu| self.balance_snapshot(cpu))
            .collect()
    }

    /// CPU `cpu`'s run queue as balancing and EAS see it.
    pub(super) fn balance_snapshot(&self, index: usize) -> CpuSnapshot {
        let cpu = &self.cpus[index];
        let queue = cpu.core.run_queue();
        let signals = queue.signals();
        let mut snapshot = CpuSnapshot::from_signals(
            CpuId(index as u16),
            u64::from(cpu.capacity.capacity_orig),
            &signals,
        );
        snapshot.idle = cpu.current.is_none() && signals.nr_running == 0;
        snapshot.uclamp = [
            queue.uclamp_value(ClampId::Min),
            queue.uclamp_value(ClampId::Max),
        ];
        snapshot.uclamp_idle = queue.uclamp_idle();
        snapshot.rt_runnable = queue.rt().highest_queued_priority().is_some();
        snapshot.misfit_task_load = self.misfit_of(index);
        snapshot
    }

    /// `update_misfit_status` (§5.5): the `misfit_task_load` of `cpu`'s
    /// running fair task, 0 when none or on symmetric CPUs.
    fn misfit_of(&self, cpu: usize) -> u64 {
        let Some(balancer) = &self.balancer else {
            return 0;
        };
        let state = &self.cpus[cpu];
        let affinity = state.current.map_or(fairway_sched::task::CpuMask(0), |t| {
            self.tasks[t].params.affinity
        });
        state.core.misfit_task_load(
            &balancer.topology,
            affinity,
            u64::from(state.capacity.capacity_orig),
        )
    }

    /// The tasks on `source`'s run queue (Linux's `cfs_tasks`: the queued ones and the
    /// running one), least recently picked or enqueued first, into `buffer`; how many.
    fn balance_candidates(&self, source: usize, buffer: &mut [TaskCandidate]) -> usize {
        let cpu = &self.cpus[source];
        let queued = cpu
            .core
            .cfs_tasks()
            .from_tail(usize::MAX)
            .map(TaskId::index)
            .filter(|&t| {
                let task = &self.tasks[t];
                // A task of a throttled group stays (`throttled_lb_pair`, §4.2).
                task.cpu == Some(source)
                    && matches!(task.state, TaskState::Runnable | TaskState::Running)
                    && !cpu.core.run_queue().task_throttled(TaskId(t as u16))
            });
        let mut count = 0;
        for (slot, t) in buffer.iter_mut().zip(queued) {
            let task = &self.tasks[t];
            *slot = cpu.core.balance_candidate(
                TaskId(t as u16),
                task.params.affinity,
                cpu.current == Some(t),
                self.now,
                task.exec_start,
            );
            count += 1;
        }
        count
    }

    /// Periodic balancing of `cpu` at its tick, when due.
    pub(super) fn periodic_balance(&mut self, cpu: usize) -> Result<(), SimError> {
        if self.balancer.is_none() {
            return Ok(());
        }
        // Taken before the balancer leaves `self`: the misfit status reads
        // its topology.
        let snapshots = self.balance_snapshots();
        let energy_aware = self.energy_aware_balance();
        let Some(mut balancer) = self.balancer.take() else {
            return Ok(());
        };
        let decision = if balancer.states[cpu].balance_due(self.now) {
            balancer.states[cpu].energy_aware = energy_aware;
            rebalance_domains(
                &balancer.topology,
                &mut balancer.states[cpu],
                CpuId(cpu as u16),
                self.now,
                &snapshots,
                &mut Lists(self),
            )
            .ok()
        } else {
            None
        };
        self.balancer = Some(balancer);
        if decision.is_some() {
            // Load balancing recomputes the root domain's state (§5.5).
            self.recompute_overutilized();
        }
        match decision {
            Some(decision) => self.apply(&decision),
            None => Ok(()),
        }
    }

    /// Carries a decision's migration out.
    fn apply(&mut self, decision: &BalanceDecision) -> Result<(), SimError> {
        match &decision.migration {
            Some(migration) => self.carry_out_migration(migration),
            None => Ok(()),
        }
    }

    /// Newly-idle balancing of `cpu`, which found nothing to run.
    pub(super) fn newidle_balance(&mut self, cpu: usize) -> Result<(), SimError> {
        if self.balancer.is_none() {
            return Ok(());
        }
        let snapshots = self.balance_snapshots();
        let energy_aware = self.energy_aware_balance();
        let Some(mut balancer) = self.balancer.take() else {
            return Ok(());
        };
        balancer.states[cpu].energy_aware = energy_aware;
        let decision = newidle_balance(
            &balancer.topology,
            &mut balancer.states[cpu],
            CpuId(cpu as u16),
            &snapshots,
            &mut Lists(self),
        )
        .ok();
        self.balancer = Some(balancer);
        if decision.is_some() {
            // Load balancing recomputes the root domain's state (§5.5).
            self.recompute_overutilized();
        }
        match decision {
            Some(decision) => self.apply(&decision),
            None => Ok(()),
        }
    }

    /// Active balance (Linux's `active_load_balance_cpu_stop`): the source's
    /// stopper preempts its running task and pushes it to the destination,
    /// if it is a fair task that may run there and is not throttled. Linux
    /// moves the first such task of the source's list; the running one is
    /// the one balancing could not move otherwise (a misfit task, §5.5).
    fn active_balance(&mut self, source: usize, destination: usize) -> Result<(), SimError> {
        let Some(t) = self.cpus[source].current else {
            return Ok(());
        };
        let id = TaskId(t as u16);
        let queue = self.cpus[source].core.run_queue();
        if source == destination
            || self.tasks[t].state != TaskState::Running
            || queue.task_class(id) != Some(ClassKind::Fair)
            || queue.task_throttled(id)
            || !self.tasks[t]
                .params
                .affinity
                .contains(CpuId(destination as u16))
        {
            return Ok(());
        }
        self.move_running(t, source, destination)?;
        // `migrate_task_rq_fair`: a task that moved is no longer cache hot.
        self.tasks[t].exec_start = 0;
        Ok(())
    }

    /// Moves the decided tasks that are still queued, not running, on the source.
    fn carry_out_migration(&mut self, migration: &Migration) -> Result<(), SimError> {
        if migration.active {
            // Only a misfit task's active balance is carried out, as in the
            // kernel (`is_misfit_push` in src/scheduling/balance.rs).
            if migration.migration_type == MigrationType::Misfit {
                return self
                    .active_balance(migration.source.index(), migration.destination.index());
            }
            return Ok(());
        }
        let (source, destination) = (migration.source.index(), migration.destination.index());
        debug_assert!(migration.tasks.len() <= NR_MIGRATE);
        for &TaskId(id) in migration.tasks.as_slice() {
            let task = usize::from(id);
            let t = &self.tasks[task];
            if t.cpu != Some(source)
                || t.state != TaskState::Runnable
                || self.cpus[source].current == Some(task)
                || !t.params.affinity.contains(CpuId(destination as u16))
            {
                continue;
            }
            self.update_cpu(source);
            self.update_cpu(destination);
            let now = self.now;
            let migration = self.cpus[source].core.detach_task(TaskId(id), now);
            let Some(migration) = migration else {
                continue;
            };
            self.cpus[destination]
                .core
                .migrate_task_in(TaskId(id), &migration, now)
                .map_err(|error| SimError::Params {
                    task: self.tasks[task].name.clone(),
                    error,
                })?;
            self.tasks[task].result.migrations += 1;
            self.trace_event(
                destination,
                fairway_trace::Event::Migrate {
                    task,
                    orig_cpu: source,
                    dest_cpu: destination,
                },
            );
            // `migrate_task_rq_fair`: a task that moved is no longer cache hot.
            self.tasks[task].exec_start = 0;
            // It waited on the source until now; `attach` starts a new wait.
            let waited = now - self.tasks[task].runnable_since;
            self.tasks[task].result.wait_ns += waited;
            self.attach(task, destination);
        }
        Ok(())
    }
}
