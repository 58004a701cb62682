//! A run prepared as the command prepares it: the scenario read and
//! validated, the CPUs' capacities from the options, the scenario or a
//! `--board`, and the simulation's configuration.

use fairway_contract::scenario::Scenario;
use fairway_sched::run_queue::CpuCapacity;

use super::{Options, parse_args};
use crate::{Config, Results, SimError, Simulation};

/// The CPU capacities for `scenario` under `options`: `--capacities`, else
/// `global.capacities`, else `--cpus` (default 1) CPUs of capacity 1024; the same for the
/// frequency scales. The scenario is validated against the CPU count.
pub fn capacities(scenario: &Scenario, options: &Options) -> Result<Vec<CpuCapacity>, SimError> {
    let scenario = with_topology(scenario, options);
    let topology = [
        &scenario.global.capacities,
        &scenario.global.frequency_scales,
    ]
    .iter()
    .map(|v| v.len())
    .max()
    .unwrap_or(0);
    let nr_cpus = match (options.cpus, topology) {
        (Some(n), _) => n,
        (None, 0) => 1,
        (None, n) => n,
    };
    if nr_cpus == 0 || nr_cpus > fairway_sched::task::MAX_CPUS {
        return Err(SimError::Config(format!(
            "--cpus {nr_cpus}: outside 1..={}",
            fairway_sched::task::MAX_CPUS
        )));
    }
    scenario
        .validate_for(nr_cpus, options.duration_ns.is_some())
        .map_err(|error| {
            // A CPU number beyond the one CPU the simulator takes by default:
            // say where that one CPU came from and how to have more.
            let names_a_cpu = error.path.contains(".cpus") || error.path == "global.calibration";
            if options.cpus.is_none() && topology == 0 && names_a_cpu {
                SimError::Config(format!(
                    "{error} (the machine has 1 CPU: the simulator's default without --cpus N, \
                     --board NAME or global.capacities)"
                ))
            } else {
                SimError::Scenario(error)
            }
        })?;
    let pick = |v: &Vec<i64>, i: usize| v.get(i).map_or(1024, |&x| x as u32);
    Ok((0..nr_cpus)
        .map(|i| CpuCapacity {
            capacity_orig: pick(&scenario.global.capacities, i),
            frequency_scale: pick(&scenario.global.frequency_scales, i),
        })
        .collect())
}

/// `scenario` with `--capacities` and `--frequency-scales` written into its `global`.
pub fn with_topology(scenario: &Scenario, options: &Options) -> Scenario {
    let mut scenario = scenario.clone();
    if let Some(c) = &options.capacities {
        scenario.global.capacities = c.clone();
    }
    if let Some(f) = &options.frequency_scales {
        scenario.global.frequency_scales = f.clone();
    }
    scenario
}

/// A scenario read and validated, with the options a `--board` completed
/// and the simulation's configuration: what [`run`] runs, and what other
/// tools (`cargo xtask compare`) run the same way.
pub struct Prepared {
    /// The scenario as read.
    pub scenario: Scenario,
    /// The options, with the board's capacities and CPU count.
    pub options: Options,
    /// Each CPU's capacity.
    pub capacities: Vec<CpuCapacity>,
    /// The board's frequency domains and energy model, with `--board`.
    pub dvfs: Option<crate::engine::Dvfs>,
}

impl Prepared {
    /// The simulation's configuration (an error where the options and the
    /// scenario disagree, as a clamp with `--uclamp 0`).
    pub fn config(&self) -> Result<Config, SimError> {
        let options = &self.options;
        Ok(Config {
            policy: options.sched.policy_kind(self.capacities.len()),
            policy_name: options.sched.policy.name().into(),
            capacities: self.capacities.clone(),
            tick_ns: options.sched.tick_ns(),
            duration_ns: options.duration_ns,
            sample_interval_ns: options.sample_interval_ns,
            hrtick: options.sched.hrtick,
            tick_phase_ns: options.tick_phase_ns,
            skew_tick: options.sched.skew_tick,
            tick_seed: options.sched.tick_seed,
            balance: options.sched.balance,
            uclamp: crate::uclamp_used(&options.sched, &self.scenario)?,
            bandwidth_timer: options.sched.bandwidth_timer,
            cfs_bandwidth: options.sched.cfs_bandwidth,
            dvfs: self.dvfs.clone(),
        })
    }

    /// Runs the prepared simulation to its end, after `adjust` has asked it
    /// for what it should record (`|s| s.with_explain_recorded(n)`, or `|s| s`
    /// for nothing more): how tools run the simulator without its printing.
    pub fn simulate(
        &self,
        adjust: impl FnOnce(Simulation<'_>) -> Simulation<'_>,
    ) -> Result<Results, SimError> {
        adjust(Simulation::new(&self.scenario, self.config()?)?).run(None)
    }
}

/// The command's arguments read and the run prepared as [`prepare`]
/// prepares it: what a tool that runs the simulator as the command line
/// would (`cargo xtask compare`, the policy checks) starts from.
pub fn prepare_args(args: &[String]) -> Result<Prepared, SimError> {
    prepare(&parse_args(args)?)
}

/// Reads the scenario and the board, and configures the simulation, as the
/// command does.
pub fn prepare(options: &Options) -> Result<Prepared, SimError> {
    let text = std::fs::read_to_string(&options.scenario)
        .map_err(|e| SimError::Config(format!("{}: {e}", options.scenario)))?;
    let fairway_rtapp::Parsed {
        scenario,
        notes,
        reinterpreted,
    } = fairway_rtapp::parse_with_notes(&text)?;
    // Always: the file runs as rt-app reads it, which may not be as it reads.
    for note in &reinterpreted {
        eprintln!("fairway-sim: {}: {note}", options.scenario);
    }
    if options.verbose {
        for note in &notes {
            eprintln!("fairway-sim: note: {note}");
        }
    }
    let board = match &options.board {
        Some(name) => Some(crate::board::load(name, &options.sched)?),
        None => None,
    };
    let mut options = options.clone();
    if let Some(board) = &board {
        if options.cpus.is_some_and(|n| n != board.capacities.len()) {
            return Err(SimError::Config(format!(
                "--cpus {}: board {} has {} CPUs",
                options.cpus.unwrap_or(0),
                options.board.as_deref().unwrap_or(""),
                board.capacities.len()
            )));
        }
        options.capacities = Some(
            board
                .capacities
                .iter()
                .map(|c| i64::from(c.capacity_orig))
                .collect(),
        );
    }
    let capacities = capacities(&scenario, &options)?;
    Ok(Prepared {
        scenario,
        options,
        capacities,
        dvfs: board.and_then(|b| b.dvfs),
    })
}
