//! CFS bandwidth control in the engine (docs/linux-sched-reference.md §4.2):
//! the groups' pools, shared by every CPU's core as in the kernel, and their
//! period and slack timers as events on the CPU that armed them.
//!
//! ```text
//!   a core asks for a timer (take_bandwidth_timer) ─► Bandwidth event
//!   Bandwidth event ─► the pool decides (period_timer / slack_timer)
//!                   ─► each grant to its CPU's core (distribute_runtime)
//!                   ─► the period timer again, unless the pool went idle
//! ```

use std::sync::Arc;

use fairway_contract::scenario::Scenario;
use fairway_sched::bandwidth::pools::{BandwidthPools, BandwidthTimerKind};
use fairway_sched::bandwidth::{Bandwidth, PeriodTimerStart};
use fairway_sched::cpu_core::CpuCore;
use fairway_sched::task::{GroupId, Nanoseconds};
use fairway_trace::{CounterTrack, GroupCpuSignal};

use super::{Kind, Simulation};
use crate::SimError;
use crate::results::GroupResult;

/// The limited groups and their pools.
#[derive(Debug)]
pub(crate) struct BandwidthState {
    pools: Arc<BandwidthPools>,
    /// Groups limited at some time of the run: path and id.
    limited: Vec<(String, GroupId)>,
    /// The limits written during the run (`cpu.max.changes`), in time order:
    /// when (ns), the group and its settings.
    changes: Vec<(Nanoseconds, GroupId, String, Bandwidth)>,
    /// Where the period grids start (`bw_timer=`).
    start: PeriodTimerStart,
    /// When each group's period timer fired, by group id.
    period_timers: Vec<Vec<Nanoseconds>>,
}

impl BandwidthState {
    /// The pools of every group of `scenario` with a quota, each core told
    /// (`None`: no group has one, and bandwidth control stays out of the
    /// run queues entirely).
    pub(crate) fn new(
        scenario: &Scenario,
        groups: &std::collections::BTreeMap<String, GroupId>,
        cores: &mut [&mut CpuCore],
        start: PeriodTimerStart,
    ) -> Result<Option<Self>, SimError> {
        let ever_limited = |path: &str| {
            scenario
                .global
                .task_groups
                .iter()
                .any(|g| g.path == path && g.ever_limited())
        };
        let limited: Vec<(String, GroupId)> = groups
            .iter()
            .filter(|(path, _)| ever_limited(path))
            .map(|(path, &id)| (path.clone(), id))
            .collect();
        if limited.is_empty() {
            return Ok(None);
        }
        let pools = Arc::new(BandwidthPools::new(groups.len() + 1));
        let mut changes = Vec::new();
        for (path, id) in &limited {
            let settings = scenario.group_bandwidth(path);
            let offset = start.offset(id.0, settings.period);
            let _grid = pools.set(*id, settings, offset, cores.len());
            let group = scenario.global.task_groups.iter().find(|g| &g.path == path);
            for change in group.map_or(&[][..], |g| &g.changes) {
                let at = (change.at_us.max(0) as u64).saturating_mul(1000);
                changes.push((at, *id, path.clone(), change.bandwidth()));
            }
        }
        // Stable: a group's own changes stay in their order.
        changes.sort_by_key(|&(at, ..)| at);
        for core in cores.iter_mut() {
            core.attach_bandwidth(pools.clone());
            for (path, id) in &limited {
                let limit = scenario.group_bandwidth(path).quota.is_some();
                // At time 0 nothing runs or is throttled: nothing to carry out.
                let _idle = core
                    .set_group_bandwidth(*id, limit, 0)
                    .map_err(|e| SimError::Config(format!("task group {path}: {e}")))?;
            }
        }
        Ok(Some(BandwidthState {
            pools,
            limited,
            changes,
            start,
            period_timers: vec![Vec::new(); groups.len() + 1],
        }))
    }

    /// Each limited group's `cpu.stat`, with `cpu.stat.local`'s throttled
    /// time per CPU.
    pub(crate) fn results(&self, cores: &[&CpuCore]) -> Vec<GroupResult> {
        self.limited
            .iter()
            .map(|(path, id)| {
                let settings = self.pools.settings(*id);
                GroupResult {
                    path: path.clone(),
                    quota_ns: settings.and_then(|s| s.quota),
                    period_ns: settings.map_or(0, |s| s.period),
                    burst_ns: settings.map_or(0, |s| s.burst),
                    stats: self.pools.stats(*id).unwrap_or_default(),
                    period_timer_ns: self.period_timers[id.index()].clone(),
                    local_throttled_ns: cores
                        .iter()
                        .map(|core| {
                            core.run_queue()
                                .fair()
                                .and_then(|fair| fair.group_queue(*id))
                                .map_or(0, |queue| queue.runtime.throttled_time_self)
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

impl BandwidthState {
    /// The limited groups' paths, by the index the trace's group counters
    /// use.
    pub(crate) fn paths(&self) -> Vec<String> {
        self.limited.iter().map(|(path, _)| path.clone()).collect()
    }

    /// Each limited group's bandwidth state now, as the trace's counters:
    /// per CPU its run queue's `throttled` and `runtime_remaining`, and the
    /// pool's `runtime`. Reads only.
    pub(crate) fn counters(&self, cores: &[&CpuCore]) -> Vec<(CounterTrack, i64)> {
        let mut counters = Vec::new();
        for (index, (_, id)) in self.limited.iter().enumerate() {
            for (cpu, core) in cores.iter().enumerate() {
                let Some(queue) = core.run_queue().fair().and_then(|f| f.group_queue(*id)) else {
                    continue;
                };
                let runtime = &queue.runtime;
                counters.push((
                    CounterTrack::GroupCpu(index, cpu, GroupCpuSignal::Throttled),
                    i64::from(runtime.throttled),
                ));
                counters.push((
                    CounterTrack::GroupCpu(index, cpu, GroupCpuSignal::RuntimeRemaining),
                    runtime.runtime_remaining,
                ));
            }
            if let Some(runtime) = self.pools.with(*id, |pool| pool.runtime()) {
                counters.push((CounterTrack::GroupRuntime(index), runtime as i64));
            }
        }
        counters
    }
}

impl BandwidthState {
    /// Each limited group's run queues' throttled state now, with the
    /// numbers behind it, for explain mode. Reads only.
    pub(crate) fn throttle_views(
        &self,
        cores: &[&CpuCore],
    ) -> Vec<fairway_trace::explain::ThrottleView> {
        let mut views = Vec::new();
        for (path, id) in &self.limited {
            let settings = self.pools.settings(*id);
            let pool_runtime = self.pools.with(*id, |pool| pool.runtime());
            for (cpu, core) in cores.iter().enumerate() {
                let Some(queue) = core.run_queue().fair().and_then(|f| f.group_queue(*id)) else {
                    continue;
                };
                views.push(fairway_trace::explain::ThrottleView {
                    group: path.clone(),
                    cpu,
                    throttled: queue.runtime.throttled,
                    runtime_remaining: queue.runtime.runtime_remaining,
                    pool_runtime,
                    quota: settings.and_then(|s| s.quota),
                    period: settings.map_or(0, |s| s.period),
                    burst: settings.map_or(0, |s| s.burst),
                });
            }
        }
        views
    }
}

impl Simulation<'_> {
    /// Explains each run queue of a limited group that was throttled or
    /// unthrottled by the event just carried out (after each event, as the
    /// trace's group counters are recorded).
    pub(super) fn explain_bandwidth(&mut self) {
        if !self.explaining() {
            return;
        }
        let Some(state) = &self.bandwidth else { return };
        let cores: Vec<&CpuCore> = self.cpus.iter().map(|c| &c.core).collect();
        let views = state.throttle_views(&cores);
        for view in views {
            let key = (view.group.clone(), view.cpu);
            let was = self
                .explained_throttled
                .insert(key, view.throttled)
                .unwrap_or(false);
            if was != view.throttled && self.explaining() {
                for line in fairway_trace::explain::throttle_lines(self.now, &view) {
                    self.explain_line(&line);
                }
                self.explained_throttle(view);
            }
        }
    }

    /// Puts each limit change of the run on the event queue.
    pub(super) fn schedule_bandwidth_changes(&mut self) {
        let times: Vec<Nanoseconds> = self.bandwidth.as_ref().map_or_else(Vec::new, |state| {
            state.changes.iter().map(|c| c.0).collect()
        });
        for (index, at) in times.into_iter().enumerate() {
            self.push(at, Kind::BandwidthChange { index });
        }
    }

    /// The `index`-th limit change: the group's pool is set anew (its grid
    /// from the run's start, as at the start), and every CPU's core is told,
    /// which unthrottles its run queue (`tg_set_cfs_bandwidth`, §4.1).
    pub(super) fn change_bandwidth(&mut self, index: usize) -> Result<(), SimError> {
        let Some(state) = &self.bandwidth else {
            return Ok(());
        };
        let (_, group, ref path, settings) = state.changes[index];
        let path = path.clone();
        let offset = state.start.offset(group.0, settings.period);
        let _grid = state.pools.set(group, settings, offset, self.cpus.len());
        let now = self.now;
        for cpu in 0..self.cpus.len() {
            self.update_cpu(cpu);
            let decision = self.cpus[cpu]
                .core
                .set_group_bandwidth(group, settings.quota.is_some(), now)
                .map_err(|e| SimError::Config(format!("task group {path}: {e}")))?;
            self.carry_out(cpu, decision);
        }
        Ok(())
    }

    /// Turns the timers the cores asked for into events on their CPUs.
    pub(super) fn arm_bandwidth_timers(&mut self) {
        if self.bandwidth.is_none() {
            return;
        }
        for cpu in 0..self.cpus.len() {
            while let Some(timer) = self.cpus[cpu].core.take_bandwidth_timer() {
                let kind = Kind::Bandwidth {
                    cpu,
                    group: timer.group.0,
                    timer: timer.kind,
                };
                self.push(timer.expires.max(self.now), kind);
            }
        }
    }

    /// A group's period or slack timer fired on `cpu`: the pool decides, each
    /// CPU's core takes its grant, and the period timer is armed again.
    pub(super) fn bandwidth_timer(&mut self, cpu: usize, group: u16, timer: BandwidthTimerKind) {
        let now: Nanoseconds = self.now;
        let Some(state) = &mut self.bandwidth else {
            return;
        };
        let pools = state.pools.clone();
        let group = GroupId(group);
        if timer == BandwidthTimerKind::Period
            && let Some(fired) = state.period_timers.get_mut(group.index())
        {
            fired.push(now);
        }
        let (grants, rearm) = match timer {
            BandwidthTimerKind::Period => {
                match pools.with(group, |pool| pool.period_timer(|| now)) {
                    Some(outcome) => (outcome.grants, outcome.rearm),
                    None => return,
                }
            }
            BandwidthTimerKind::Slack => (
                pools
                    .with(group, |pool| pool.slack_timer(now))
                    .unwrap_or_default(),
                None,
            ),
        };
        if let Some(at) = rearm {
            self.push(
                at,
                Kind::Bandwidth {
                    cpu,
                    group: group.0,
                    timer,
                },
            );
        }
        for grant in grants {
            let target = usize::from(grant.cpu);
            if target >= self.cpus.len() {
                continue;
            }
            self.update_cpu(target);
            let decision = self.cpus[target].core.distribute_runtime(
                group,
                grant.amount,
                grant.unthrottle,
                now,
            );
            self.carry_out(target, decision);
        }
    }
}
