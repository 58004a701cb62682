//! Building a simulation ([`Simulation::new`]): its tasks, its CPUs with
//! their run queues and task groups, then what the configuration adds
//! (the groups' bandwidth pools, DVFS, the load balancer, energy-aware
//! placement). Each step refuses what it cannot build, in this order.

use std::collections::{BTreeMap, BinaryHeap};

use fairway_contract::scenario::Scenario;
use fairway_contract::scenario::program::Cursor;
use fairway_contract::scenario::resources::Resources;
use fairway_sched::cpu_core::CpuCore;
use fairway_sched::run_queue::{PolicyKind, RunQueue};
use fairway_sched::task::GroupId;

use super::{Config, Cpu, SimTask, Simulation, balance, bandwidth, dvfs, eas};
use crate::SimError;
use crate::results::CpuResult;

impl<'s> Simulation<'s> {
    /// Prepares `scenario` (already validated for `config.capacities.len()` CPUs).
    pub fn new(scenario: &'s Scenario, config: Config) -> Result<Self, SimError> {
        check_config(&config)?;
        let group_paths = scenario.group_paths();
        let (mut tasks, instances_of) = sim_tasks(scenario, &config)?;
        let max_tasks = room_for_tasks(scenario, tasks.len(), group_paths.len())?;
        let (mut cpus, groups) = build_cpus(scenario, &config, &group_paths, max_tasks)?;
        let bandwidth = if matches!(
            config.policy,
            PolicyKind::RoundRobin { .. } | PolicyKind::Registered(..)
        ) {
            None
        } else {
            let mut cores: Vec<&mut CpuCore> = cpus.iter_mut().map(|c| &mut c.core).collect();
            bandwidth::BandwidthState::new(scenario, &groups, &mut cores, config.bandwidth_timer)?
        };
        for task in &mut tasks {
            if let Some((path, _)) = &task.result.taskgroup {
                task.params.group = groups.get(path).copied().unwrap_or(GroupId::ROOT);
            }
        }
        let dvfs = set_frequencies(&config, &mut cpus)?;
        let balancer = if config.balance {
            Some(balance::Balancer::new(&config.capacities)?)
        } else {
            None
        };
        let (eas, eas_off) = eas_state(&config, balancer.as_ref());
        Ok(Simulation {
            scenario,
            config,
            balancer,
            now: 0,
            cpus,
            live: tasks.len(),
            tasks,
            max_tasks,
            instances_of,
            resources: Resources::new(scenario),
            queue: BinaryHeap::new(),
            sequence: 0,
            timers: BTreeMap::new(),
            switches: Vec::new(),
            steps: 0,
            events: 0,
            groups,
            bandwidth,
            dvfs,
            eas,
            eas_off,
            trace: None,
            traced_bandwidth: std::collections::BTreeMap::new(),
            explained_throttled: std::collections::BTreeMap::new(),
            progress: None,
            rtapp_logs: None,
            explain: None,
        })
    }
}

/// The configuration's own limits: 1 to `MAX_CPUS` CPUs, a tick and a
/// sample interval above 0.
fn check_config(config: &Config) -> Result<(), SimError> {
    let nr_cpus = config.capacities.len();
    if nr_cpus == 0 || nr_cpus > fairway_sched::task::MAX_CPUS {
        return Err(SimError::Config(format!(
            "--cpus {nr_cpus} is outside 1..={}",
            fairway_sched::task::MAX_CPUS
        )));
    }
    if config.tick_ns == 0 || config.sample_interval_ns == 0 {
        return Err(SimError::Config(
            "tick and sample interval must be > 0".into(),
        ));
    }
    Ok(())
}

/// Every instance of every task of the scenario, not started, and each
/// scenario task's instances; a task that runs forever without progress, or
/// forever in a run with no end, is refused.
fn sim_tasks(
    scenario: &Scenario,
    config: &Config,
) -> Result<(Vec<SimTask>, Vec<Vec<usize>>), SimError> {
    let mut tasks = Vec::new();
    let mut instances_of = vec![Vec::new(); scenario.tasks.len()];
    for (spec_index, spec) in scenario.tasks.iter().enumerate() {
        if Cursor::runs_forever(spec) && !Cursor::makes_progress(spec) {
            return Err(SimError::NoProgress {
                task: spec.name.clone(),
            });
        }
        let forever = Cursor::runs_forever(spec);
        if forever && config.duration_ns.is_none() && scenario.global.duration_s <= 0 {
            return Err(SimError::Forever {
                task: spec.name.clone(),
            });
        }
        for instance in 0..spec.instances.max(0) {
            instances_of[spec_index].push(tasks.len());
            tasks.push(SimTask::new(
                scenario,
                spec_index,
                Scenario::instance_name(spec, instance),
            ));
        }
    }
    Ok((tasks, instances_of))
}

/// The run queues' room for tasks: the scenario's `tasks`, or as many as a
/// scenario may have when it forks; with the `groups`, within the
/// scheduling entities a CPU holds.
fn room_for_tasks(scenario: &Scenario, tasks: usize, groups: usize) -> Result<usize, SimError> {
    // `fork` creates tasks at run time: room for as many as a scenario may have.
    let forks = scenario.tasks.iter().any(|t| scenario.is_forked(&t.name));
    let max_tasks = if forks {
        fairway_contract::scenario::MAX_TASKS
    } else {
        tasks.max(1)
    };
    let entities = max_tasks + groups;
    if entities > fairway_sched::fair::timeline::MAX_ENTITIES {
        return Err(SimError::Config(format!(
            "{max_tasks} tasks and {groups} task groups need {entities} scheduling entities per CPU; \
             the limit is {}",
            fairway_sched::fair::timeline::MAX_ENTITIES
        )));
    }
    Ok(max_tasks)
}

/// One CPU per capacity, its core's run queue built for the policy (with
/// bandwidth control when asked or when a group has a quota), and every task
/// group created on it in the same order, so the ids agree: the CPUs and the
/// groups by path.
fn build_cpus(
    scenario: &Scenario,
    config: &Config,
    group_paths: &[String],
    max_tasks: usize,
) -> Result<(Vec<Cpu>, BTreeMap<String, GroupId>), SimError> {
    let mut groups = BTreeMap::new();
    let bandwidth_control = config.cfs_bandwidth
        || group_paths
            .iter()
            .any(|path| scenario.group_bandwidth(path).quota.is_some());
    let cpus = config
        .capacities
        .iter()
        .enumerate()
        .map(|(index, &capacity)| {
            let mut run_queue = RunQueue::build(
                config.policy.for_cpu(index),
                max_tasks,
                group_paths.len() + 1,
                config.uclamp,
                bandwidth_control,
            );
            run_queue.set_cpu_capacity(capacity);
            let mut core = CpuCore::new(index as u16, run_queue, max_tasks, config.hrtick);
            for path in group_paths {
                let parent = match path.rfind('/') {
                    Some(0) | None => GroupId::ROOT,
                    Some(at) => groups[&path[..at]],
                };
                let shares = scenario.group_shares(path) as u64;
                let id = core
                    .create_group(parent, shares, 0)
                    .map_err(|e| SimError::Config(format!("task group {path}: {e}")))?;
                if *groups.entry(path.clone()).or_insert(id) != id {
                    return Err(SimError::Config(format!(
                        "task group {path}: ids differ between CPUs"
                    )));
                }
            }
            Ok(Cpu {
                core,
                current: None,
                capacity,
                last_update: 0,
                need_resched: false,
                generation: 0,
                hrtick_generation: 0,
                result: CpuResult {
                    cpu: index,
                    capacity_orig: capacity.capacity_orig,
                    frequency_scale: capacity.frequency_scale,
                    ..CpuResult::default()
                },
            })
        })
        .collect::<Result<Vec<Cpu>, SimError>>()?;
    Ok((cpus, groups))
}

/// With the board's performance domains (`config.dvfs`), their state, each
/// CPU's frequency scale set to its domain's first.
fn set_frequencies(config: &Config, cpus: &mut [Cpu]) -> Result<Option<dvfs::DvfsState>, SimError> {
    let Some(spec) = &config.dvfs else {
        return Ok(None);
    };
    let (state, scales) = dvfs::DvfsState::new(spec, cpus.len()).map_err(SimError::Config)?;
    for (cpu, scale) in cpus.iter_mut().zip(scales) {
        cpu.capacity.frequency_scale = scale;
        cpu.result.frequency_scale = scale;
        let queue = cpu.core.run_queue_mut();
        let mut capacity = queue.cpu_capacity();
        capacity.frequency_scale = scale;
        queue.set_cpu_capacity(capacity);
    }
    Ok(Some(state))
}

/// Energy-aware placement's state when the board allows it, else why it is
/// off (`None` reason: wake-up placement itself is off, no balancer).
fn eas_state(
    config: &Config,
    balancer: Option<&balance::Balancer>,
) -> (
    Option<eas::EasState>,
    Option<fairway_sched::eas::EasUnavailable>,
) {
    match (&config.dvfs, balancer) {
        (Some(dvfs), Some(balancer)) => match eas::EasState::new(dvfs, balancer.topology()) {
            Ok(state) => (Some(state), None),
            Err(reason) => (None, Some(reason)),
        },
        // Without a board's domains the load tracking is not frequency-invariant.
        (None, Some(balancer)) => (
            None,
            Some(if balancer.topology().is_asymmetric() {
                fairway_sched::eas::EasUnavailable::NotFrequencyInvariant {
                    cpus: balancer.topology().all_cpus(),
                }
            } else {
                fairway_sched::eas::EasUnavailable::SymmetricCapacities
            }),
        ),
        (_, None) => (None, None),
    }
}
