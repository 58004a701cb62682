//! The questions other CPUs ask of this one: where a waking task goes
//! ([`CpuCore::select_task_rq`], with energy-aware placement when the board
//! allows it) and how load balancing weighs a task.

use super::{CpuCore, FeecOutcome, WakePlacement};
use crate::balance::{CpuLoads, CpuSnapshot, WakeRequest};
use crate::run_queue::TaskSignals;
use crate::task::{CpuId, CpuMask, Nanoseconds, TaskId};
use crate::topology::Topology;

impl CpuCore {
    /// `task` as load balancing weighs it: its PELT signals with its load as
    /// the root run queue sees it through its groups (`task_h_load`, §2.7)
    /// and its effective clamps (§3.3; `[0, 1024]` while uclamp is off).
    pub fn balance_candidate(
        &self,
        task: TaskId,
        affinity: CpuMask,
        running: bool,
        now: Nanoseconds,
        exec_start: Nanoseconds,
    ) -> crate::balance::TaskCandidate {
        let queue = &self.run_queue;
        let mut signals = queue.task_signals(task);
        signals.load_avg = queue.task_h_load(task);
        crate::balance::TaskCandidate::from_signals(
            task,
            &signals,
            affinity,
            running,
            now,
            exec_start,
            self.task_clamps(task),
        )
    }

    /// `update_misfit_status` (§5.5): the `misfit_task_load` of this CPU's
    /// running fair task, whose allowed CPUs are `affinity`, on a CPU of
    /// `capacity_of` `capacity`; 0 when none. The task's `task_h_load` is
    /// computed only when it is misfit.
    pub fn misfit_task_load(&self, topology: &Topology, affinity: CpuMask, capacity: u64) -> u64 {
        let Some(task) = self.state.current else {
            return 0;
        };
        if !topology.is_asymmetric()
            || self.run_queue.task_class(task) != Some(crate::class_stack::ClassKind::Fair)
        {
            return 0;
        }
        let mut signals = self.run_queue.task_signals(task);
        // Weighed below only if misfit: any nonzero load tells.
        signals.load_avg = 1;
        let candidate = crate::balance::TaskCandidate::from_signals(
            task,
            &signals,
            affinity,
            true,
            0,
            0,
            self.task_clamps(task),
        );
        let cpu = CpuId(self.state.cpu);
        if crate::balance::misfit_task_load(topology, cpu, capacity, &candidate) == 0 {
            return 0;
        }
        self.run_queue.task_h_load(task).max(1)
    }

    /// `task`'s effective `[uclamp_min, uclamp_max]`, or `[0, 1024]` while
    /// uclamp is off.
    fn task_clamps(&self, task: TaskId) -> [u16; 2] {
        use crate::uclamp::ClampId;
        let queue = &self.run_queue;
        if queue.uclamp_enabled() {
            [
                queue.uclamp_eff_value(task, ClampId::Min).unwrap_or(0),
                queue.uclamp_eff_value(task, ClampId::Max).unwrap_or(1024),
            ]
        } else {
            [0, 1024]
        }
    }

    /// Linux's `select_task_rq` at `try_to_wake_up`, asked of the core of the
    /// CPU the waking `task` last ran on (its state is here): the CPU it
    /// should wake on. With EAS on (`energy`) and the root domain not
    /// overutilized (or overutilized, with the 2024 RFC's option, §5.6, as
    /// long as some CPU fits), `find_energy_efficient_cpu` chooses (§5.4); otherwise,
    /// or when it has no say, the wake-up balancing rules of
    /// [`crate::balance::select_task_rq`] over every CPU's `snapshots`. Both
    /// read the task's util_est and effective clamps (§2.4, §3.3). The
    /// task's own CPU when no other is chosen. Not recorded: its inputs are
    /// the other CPUs' published loads.
    ///
    /// With a cost counter set, the placement also reports what
    /// `find_energy_efficient_cpu` cost when it ran (issue 14's budget).
    #[allow(clippy::too_many_arguments)]
    pub fn select_task_rq(
        &self,
        task: TaskId,
        waker_cpu: CpuId,
        affinity: CpuMask,
        waker_load: u64,
        topology: &Topology,
        snapshots: &[CpuSnapshot],
        energy: Option<crate::eas::EnergyContext<'_>>,
    ) -> WakePlacement {
        self.select_task_rq_observed(
            task,
            waker_cpu,
            affinity,
            waker_load,
            topology,
            snapshots,
            energy,
            |_| {},
        )
    }

    /// [`CpuCore::select_task_rq`], telling `observe` each energy estimate
    /// `find_energy_efficient_cpu` makes (the simulator's `--explain` prints
    /// them): the same decision, by the same code.
    #[allow(clippy::too_many_arguments)]
    pub fn select_task_rq_observed(
        &self,
        task: TaskId,
        waker_cpu: CpuId,
        affinity: CpuMask,
        waker_load: u64,
        topology: &Topology,
        snapshots: &[CpuSnapshot],
        energy: Option<crate::eas::EnergyContext<'_>>,
        observe: impl FnMut(crate::eas::EnergyEstimate),
    ) -> WakePlacement {
        let energy = energy.map(|context| (context, snapshots));
        self.place_waking(
            task, waker_cpu, affinity, waker_load, topology, snapshots, energy, observe,
        )
    }

    /// [`CpuCore::select_task_rq`] without EAS (`energy` `None`), reading
    /// the CPUs' loads through `loads`, which may read only the fields and
    /// CPUs the wake-up balancing rules ask for (the kernel's view of the
    /// published loads) rather than every CPU's whole snapshot: the same
    /// decision, by the same code.
    pub fn select_task_rq_balanced<L: CpuLoads + ?Sized>(
        &self,
        task: TaskId,
        waker_cpu: CpuId,
        affinity: CpuMask,
        waker_load: u64,
        topology: &Topology,
        loads: &L,
    ) -> WakePlacement {
        self.place_waking(
            task,
            waker_cpu,
            affinity,
            waker_load,
            topology,
            loads,
            None,
            |_| {},
        )
    }

    /// The body of [`CpuCore::select_task_rq_observed`]: `loads` for the
    /// wake-up balancing rules, and with EAS on, its context and every CPU's
    /// snapshot for `find_energy_efficient_cpu`.
    #[allow(clippy::too_many_arguments)]
    fn place_waking<L: CpuLoads + ?Sized>(
        &self,
        task: TaskId,
        waker_cpu: CpuId,
        affinity: CpuMask,
        waker_load: u64,
        topology: &Topology,
        loads: &L,
        energy: Option<(crate::eas::EnergyContext<'_>, &[CpuSnapshot])>,
        observe: impl FnMut(crate::eas::EnergyEstimate),
    ) -> WakePlacement {
        let prev_cpu = CpuId(self.state.cpu);
        // Linux ages the sleeping task's PELT to its run queue's last update
        // (`sync_entity_load_avg`) in feec before anything else reads it
        // (§5.4 step 4), and in `select_idle_sibling` on asymmetric CPUs,
        // after wake-affine has weighed its unsynced load. Identical CPUs
        // without EAS read only the unsynced load and util.
        let (task_load, task_util, synced) = if energy.is_some() || topology.is_asymmetric() {
            let synced = self.run_queue.task_signals_synced(task);
            let load = if energy.is_some() {
                synced.load_avg
            } else {
                self.run_queue.task_wake_load(task).0
            };
            (load, synced.util_avg.max(synced.util_est), synced)
        } else {
            let (load, util) = self.run_queue.task_wake_load(task);
            (load, util, TaskSignals::default())
        };
        let uclamp_used = self.run_queue.uclamp_enabled();
        // Only EAS and the capacity fits of asymmetric CPUs read the clamps;
        // identical CPUs do not pay for computing a sleeping task's
        // effective values (a few hundred instructions per wake-up).
        let uclamp = if energy.is_some() || topology.is_asymmetric() {
            self.task_clamps(task)
        } else {
            [0, 1024]
        };
        let mut feec_cost = None;
        let mut feec = FeecOutcome::NotRun;
        if let Some((energy, snapshots)) = energy.filter(|(e, _)| e.places_wakeups()) {
            let waking = crate::eas::WakingTask {
                prev_cpu,
                affinity,
                util_avg: synced.util_avg,
                util_est: synced.util_est,
                uclamp,
                uclamp_used,
            };
            let (choice, cost) = self
                .energy_aware_placement(topology, snapshots, &energy, &waking, waker_cpu, observe);
            feec_cost = cost;
            if let Some(cpu) = choice {
                return WakePlacement {
                    cpu,
                    feec_cost,
                    feec: FeecOutcome::Placed,
                };
            }
            feec = FeecOutcome::Declined;
        }
        let request = WakeRequest {
            prev_cpu,
            waker_cpu,
            affinity,
            sync: false,
            wake_wide: false,
            task_load,
            task_util,
            uclamp,
            waker_load,
        };
        let cpu = crate::balance::select_task_rq(topology, loads, &request)
            .map_or(prev_cpu, |target| target.cpu);
        WakePlacement {
            cpu,
            feec_cost,
            feec,
        }
    }

    /// `find_energy_efficient_cpu` for [`CpuCore::select_task_rq`], out of
    /// line so that wake-ups without EAS (identical CPUs) do not carry its
    /// code: the CPU it chose, if it placed the task (the 2024 RFC's feec,
    /// run while overutilized, gives up when no CPU fits, §5.6), and what it
    /// cost with a cost counter set.
    #[inline(never)]
    #[cold]
    fn energy_aware_placement(
        &self,
        topology: &Topology,
        snapshots: &[CpuSnapshot],
        energy: &crate::eas::EnergyContext<'_>,
        waking: &crate::eas::WakingTask,
        waker_cpu: CpuId,
        observe: impl FnMut(crate::eas::EnergyEstimate),
    ) -> (Option<CpuId>, Option<u64>) {
        let start = self.state.cost_counter.map(|counter| counter());
        let choice = crate::eas::find_energy_efficient_cpu_observed(
            topology,
            energy.domains,
            snapshots,
            waking,
            waker_cpu,
            observe,
        );
        let cost = self
            .state
            .cost_counter
            .zip(start)
            .map(|(counter, start)| counter().wrapping_sub(start));
        let gives_up = energy.overutilized && choice.nothing_fits;
        let cpu = choice
            .cpu
            .filter(|&cpu| waking.affinity.contains(cpu) && !gives_up);
        (cpu, cost)
    }
}
