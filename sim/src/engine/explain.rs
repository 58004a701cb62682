//! `--explain N`: why the first N decisions were made, for teaching
//! (docs/tracing.md, "Explain mode"). Each is printed as `explain:` lines:
//!
//! - a pick among two or more fair tasks on a CPU: every candidate with its
//!   vruntime, and under EEVDF its deadline, its lag against its queue's V
//!   and whether it is eligible (docs/linux-sched-reference.md §1.5), or
//!   under CFS its vruntime key (§1.4); then the task chosen;
//! - a wake-up with placement on: each CPU's capacity, util and spare
//!   capacity as placement saw them, and the CPU chosen;
//!   under EAS, each energy estimate `find_energy_efficient_cpu` made (the
//!   numbers it gave `em_cpu_energy` and what it returned, §5.2, §5.4);
//! - a frequency change: the domain's CPUs' util and capacity, and the
//!   frequency chosen (schedutil, §6.1);
//! - a throttle: the group's run queue on the CPU, its `runtime_remaining`,
//!   the pool's `runtime` and the group's quota and period (§4.2);
//! - under round robin, a pick among two or more tasks: the FIFO run queue
//!   in order, head first (the task chosen), the task that was running at
//!   its tail with the time it ran of its slice (expired: rotated), and the
//!   slice the chosen task starts;
//! - under a registered policy (`sched/src/policies/`), a pick among two or
//!   more tasks: the candidates as the policy's `explain_pick` notes them,
//!   the chosen one first, with the number the policy decided by (a
//!   lottery's tickets, a stride's pass), then the task chosen.
//!
//! Explaining reads state and changes none.

use fairway_sched::eas::EnergyEstimate;
use fairway_sched::task::{GroupId, TaskId};

use super::{Simulation, TaskState};

pub use fairway_trace::explain::{Candidate, Competitor, RrCandidate};
use fairway_trace::explain::{DomainCpuView, PlacementView, PolicyCandidate};

/// Explain mode's state: decisions left to explain, and what was printed.
#[derive(Debug, Default)]
pub(super) struct Explain {
    left: usize,
    /// Recorded only, not printed ([`Simulation::with_explain_recorded`]).
    quiet: bool,
    /// The picks explained, with the task chosen (for tests).
    pub(super) picks: Vec<ExplainedPick>,
    /// The wake-ups explained with energy estimates (for tests).
    pub(super) wakes: Vec<ExplainedWake>,
    /// The round-robin picks explained, with the task chosen (for tests).
    pub(super) rr_picks: Vec<ExplainedRrPick>,
    /// The throttles and unthrottles explained (for tests).
    pub(super) throttles: Vec<(u64, fairway_trace::explain::ThrottleView)>,
    /// The picks of registered policies explained, with the task chosen
    /// (for tests).
    pub(super) policy_picks: Vec<ExplainedPolicyPick>,
}

/// A wake-up explained under EAS, for tests: what it printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExplainedWake {
    /// The task woken.
    pub task: usize,
    /// The CPU it last ran on (`prev_cpu`).
    pub previous: usize,
    /// The CPU chosen.
    pub chosen: usize,
    /// `task_util_est(p)`, `max(util_avg, util_est)` synced as
    /// `find_energy_efficient_cpu` reads them (§5.4 step 4).
    pub task_util_est: u64,
    /// Each domain's CPUs, by the estimates' domain index.
    pub domains: Vec<Vec<usize>>,
    /// The estimates, in the order they were made.
    pub estimates: Vec<EnergyEstimate>,
}

impl Simulation<'_> {
    /// Explains the first `decisions` decisions on standard output.
    pub fn with_explain(mut self, decisions: usize) -> Self {
        self.explain = Some(Explain {
            left: decisions,
            ..Explain::default()
        });
        self
    }

    /// Explains the first `decisions` decisions as
    /// [`with_explain`](Self::with_explain) does, keeping them in the
    /// results (`explained_picks`, `explained_policy_picks`, ...) without
    /// printing them: for a check that compares them with the kernel's.
    pub fn with_explain_recorded(mut self, decisions: usize) -> Self {
        self.explain = Some(Explain {
            left: decisions,
            quiet: true,
            ..Explain::default()
        });
        self
    }

    /// Prints one explain line, unless the explanation is only recorded.
    pub(super) fn explain_line(&self, line: &str) {
        if self.explain.as_ref().is_none_or(|explain| !explain.quiet) {
            println!("{line}");
        }
    }

    pub(super) fn explaining(&self) -> bool {
        self.explain.as_ref().is_some_and(|e| e.left > 0)
    }

    /// A throttle or unthrottle explained, at `now`.
    pub(super) fn explained_throttle(&mut self, view: fairway_trace::explain::ThrottleView) {
        let now = self.now;
        if let Some(explain) = &mut self.explain {
            explain.left = explain.left.saturating_sub(1);
            explain.throttles.push((now, view));
        }
    }

    /// The fair tasks that competed in the pick just made on `cpu`, where
    /// `previous` was running: those still queued (the one picked
    /// included), read right after the pick, when the task that went to
    /// sleep has left and V is the pick's; `None` when not explaining or
    /// fewer than two competed.
    pub(super) fn explain_candidates(
        &self,
        cpu: usize,
        previous: Option<usize>,
    ) -> Option<Vec<Candidate>> {
        if !self.explaining() {
            return None;
        }
        let queue = self.cpus[cpu].core.run_queue();
        let view = queue.fair()?;
        let running = previous;
        let path = |group: GroupId| {
            (group != GroupId::ROOT).then(|| {
                self.groups
                    .iter()
                    .find(|(_, id)| **id == group)
                    .map_or_else(|| format!("group{}", group.0), |(path, _)| path.clone())
            })
        };
        // The groups above the task that was running: their entities are
        // their queues' current ones.
        let running_groups: Vec<GroupId> = running
            .and_then(|task| view.task_entity(TaskId(task as u16)))
            .map(|entity| view.groups_above(entity.queue).collect())
            .unwrap_or_default();
        let mut groups_seen: Vec<GroupId> = Vec::new();
        let mut candidates = Vec::new();
        let mut tasks = 0;
        for (task, state) in self.tasks.iter().enumerate() {
            // Tasks that are going to sleep or exiting leave at this pick.
            if state.cpu != Some(cpu)
                || !matches!(state.state, TaskState::Runnable | TaskState::Running)
            {
                continue;
            }
            let Some(entity) = view.task_entity(TaskId(task as u16)) else {
                continue;
            };
            if !entity.on_rq || entity.delayed {
                continue;
            }
            let v = queue.avg_vruntime(entity.queue)?;
            let lag = v.wrapping_sub(entity.vruntime) as i64;
            candidates.push(Candidate {
                who: Competitor::Task(task),
                queue: path(entity.queue),
                vruntime: entity.vruntime,
                deadline: entity.deadline,
                lag,
                eligible: lag >= 0,
                protected: (running == Some(task))
                    .then_some(entity.protected_deadline == entity.deadline),
            });
            tasks += 1;
            // The group entities above it, each once (§2.6).
            for group in view.groups_above(entity.queue) {
                if groups_seen.contains(&group) {
                    break;
                }
                groups_seen.push(group);
                let Some(entity) = view.group_entity_of(group) else {
                    break;
                };
                if entity.on_rq && !entity.delayed {
                    let v = queue.avg_vruntime(entity.queue)?;
                    let lag = v.wrapping_sub(entity.vruntime) as i64;
                    candidates.push(Candidate {
                        who: Competitor::Group(path(group).unwrap_or_default()),
                        queue: path(entity.queue),
                        vruntime: entity.vruntime,
                        deadline: entity.deadline,
                        lag,
                        eligible: lag >= 0,
                        protected: running_groups
                            .contains(&group)
                            .then_some(entity.protected_deadline == entity.deadline),
                    });
                }
            }
        }
        (tasks >= 2).then_some(candidates)
    }

    /// Under round robin, the tasks of the pick just made on `cpu`, where
    /// `previous` was running and `next` was chosen: read right after the
    /// pick, `next` (the FIFO's head, which the pick took out) and then the
    /// FIFO in order, where `previous`, still runnable, was put back at the
    /// tail, with the time it ran of its slice. `None` when not explaining,
    /// when the pick was not round robin's (an RT task, or idle) or fewer
    /// than two competed.
    pub(super) fn explain_rr_candidates(
        &self,
        cpu: usize,
        previous: Option<usize>,
        next: Option<usize>,
    ) -> Option<Vec<RrCandidate>> {
        if !self.explaining() {
            return None;
        }
        let rr = self.cpus[cpu].core.run_queue().round_robin()?;
        let next = next?;
        if rr.current() != Some(TaskId(next as u16)) || previous == Some(next) {
            return None;
        }
        let ran = |task: usize| {
            (previous == Some(task))
                .then(|| rr.slice_start(TaskId(task as u16)))
                .flatten()
                .map(|start| self.now.saturating_sub(start))
        };
        let candidates: Vec<RrCandidate> = core::iter::once(next)
            .chain(rr.fifo().map(|task| task.index()))
            .map(|task| RrCandidate {
                task,
                ran: ran(task),
            })
            .collect();
        (candidates.len() >= 2).then_some(candidates)
    }

    /// Prints a round-robin pick on `cpu` among `candidates` (FIFO order),
    /// which chose `next`.
    pub(super) fn explain_rr_pick(
        &mut self,
        cpu: usize,
        candidates: Vec<RrCandidate>,
        next: Option<usize>,
    ) {
        let slice = self.cpus[cpu]
            .core
            .run_queue()
            .round_robin()
            .map_or(0, |rr| rr.slice());
        let lines = fairway_trace::explain::rr_pick_lines(
            self.now,
            cpu,
            slice,
            &candidates,
            |task| self.tasks[task].name.clone(),
            next,
        );
        for line in lines {
            self.explain_line(&line);
        }
        if let Some(explain) = &mut self.explain {
            explain.left -= 1;
            explain.rr_picks.push((candidates, next));
        }
    }

    /// Under a registered policy, prints the pick just made on `cpu`, which
    /// chose `next` while `previous` was running, as the policy explains it
    /// ([`fairway_sched::policies::Policy::explain_pick`]). False when not
    /// explaining, when the pick was not the policy's (an RT task, idle) or
    /// fewer than two competed.
    pub(super) fn explain_policy_pick(
        &mut self,
        cpu: usize,
        previous: Option<usize>,
        next: Option<usize>,
    ) -> bool {
        if !self.explaining() {
            return false;
        }
        let Some(class) = self.cpus[cpu].core.run_queue().registered() else {
            return false;
        };
        let Some(next) = next else { return false };
        let picked = TaskId(next as u16);
        if class.current() != Some(picked) || previous == Some(next) {
            return false;
        }
        let notes = class.explain_pick(picked);
        if notes.len() < 2 {
            return false;
        }
        let registered = class.id().registered();
        let candidates = policy_candidates(&notes);
        let lines = fairway_trace::explain::policy_pick_lines(
            self.now,
            cpu,
            (registered.name, registered.summary),
            &candidates,
            |task| self.tasks[task].name.clone(),
            Some(next),
        );
        for line in lines {
            self.explain_line(&line);
        }
        if let Some(explain) = &mut self.explain {
            explain.left -= 1;
            explain.policy_picks.push((notes, Some(next)));
        }
        true
    }

    /// Prints a pick on `cpu` among `candidates`, which chose `next`.
    pub(super) fn explain_pick(
        &mut self,
        cpu: usize,
        candidates: Vec<Candidate>,
        next: Option<usize>,
    ) {
        let eevdf = self.config.policy_name == "eevdf";
        let lines = fairway_trace::explain::pick_lines(
            self.now,
            cpu,
            eevdf,
            &candidates,
            |task| self.tasks[task].name.clone(),
            next,
        );
        for line in lines {
            self.explain_line(&line);
        }
        if let Some(explain) = &mut self.explain {
            explain.left -= 1;
            explain.picks.push((candidates, next));
        }
    }

    /// Prints a wake-up's placement: `task` woken, `target` chosen, with
    /// `find_energy_efficient_cpu`'s `estimates` when EAS ran.
    pub(super) fn explain_wake(
        &mut self,
        task: usize,
        previous: usize,
        target: usize,
        estimates: Vec<EnergyEstimate>,
    ) {
        if !self.explaining() || self.balancer.is_none() {
            return;
        }
        let views: Vec<PlacementView> = self
            .balance_snapshots()
            .iter()
            .map(|snapshot| PlacementView {
                cpu: snapshot.cpu.index(),
                capacity: snapshot.capacity,
                util: snapshot
                    .util_avg
                    .max(snapshot.util_est)
                    .min(snapshot.capacity),
                nr_running: u64::from(snapshot.nr_running),
                idle: snapshot.idle,
            })
            .collect();
        let head =
            fairway_trace::explain::wake_lines(self.now, &self.tasks[task].name, previous, &views);
        for line in head {
            self.explain_line(&line);
        }
        if !estimates.is_empty() {
            self.explain_energy(task, previous, target, estimates);
        }
        self.explain_line(&fairway_trace::explain::chose_cpu_line(target));
        if let Some(explain) = &mut self.explain {
            explain.left -= 1;
        }
    }

    /// The energy lines of a wake-up under EAS: per performance domain the
    /// estimate without the task (the base), then with it on each CPU
    /// priced, as `find_energy_efficient_cpu` made them.
    fn explain_energy(
        &mut self,
        task: usize,
        previous: usize,
        chosen: usize,
        estimates: Vec<EnergyEstimate>,
    ) {
        let signals = self.cpus[previous]
            .core
            .run_queue()
            .task_signals_synced(TaskId(task as u16));
        let task_util_est = signals.util_avg.max(signals.util_est);
        let views: Vec<fairway_trace::explain::EnergyView> = estimates
            .iter()
            .map(|e| fairway_trace::explain::EnergyView {
                domain: e.domain,
                dst: e.dst.map(|cpu| cpu.index()),
                max_util: e.max_util,
                sum_util: e.sum_util,
                cpu_cap: e.cpu_cap,
                energy: e.energy,
            })
            .collect();
        for line in fairway_trace::explain::energy_lines(task_util_est, previous, &views) {
            self.explain_line(&line);
        }
        let domains = self
            .eas
            .as_ref()
            .map_or_else(Vec::new, |eas| eas.domain_cpus(self.cpus.len()));
        if let Some(explain) = &mut self.explain {
            explain.wakes.push(ExplainedWake {
                task,
                previous,
                chosen,
                task_util_est,
                domains,
                estimates,
            });
        }
    }

    /// Prints a frequency change of `domain` (its CPUs `cpus`) to `khz`.
    pub(super) fn explain_frequency(&mut self, domain: usize, cpus: &[usize], khz: u64) {
        if !self.explaining() {
            return;
        }
        let views: Vec<DomainCpuView> = cpus
            .iter()
            .map(|&cpu| {
                let snapshot = self.balance_snapshot(cpu);
                DomainCpuView {
                    cpu,
                    capacity_orig: u64::from(self.cpus[cpu].capacity.capacity_orig),
                    util_avg: snapshot.util_avg,
                    util_est: snapshot.util_est,
                }
            })
            .collect();
        for line in fairway_trace::explain::frequency_lines(self.now, domain, khz, &views) {
            self.explain_line(&line);
        }
        if let Some(explain) = &mut self.explain {
            explain.left -= 1;
        }
    }
}

/// A pick explained, for tests: its candidates and the task chosen.
pub type ExplainedPick = (Vec<Candidate>, Option<usize>);

/// A round-robin pick explained, for tests: its candidates in FIFO order
/// and the task chosen.
pub type ExplainedRrPick = (Vec<RrCandidate>, Option<usize>);

/// A registered policy's `explain_pick` notes as the printed explanation
/// (`fairway_trace::explain::policy_pick_lines`) reads them: what the
/// simulator prints and what the kernel-explain check compares with.
pub fn policy_candidates(notes: &[fairway_sched::policies::CandidateNote]) -> Vec<PolicyCandidate> {
    notes
        .iter()
        .map(|note| PolicyCandidate {
            task: note.task.index(),
            label: note.label.to_string(),
            value: note.value,
        })
        .collect()
}

/// A registered policy's pick explained, for tests: the policy's notes on
/// its candidates (the chosen one first) and the task chosen.
pub type ExplainedPolicyPick = (Vec<fairway_sched::policies::CandidateNote>, Option<usize>);
