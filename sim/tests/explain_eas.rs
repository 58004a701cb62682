//! Explain mode under EAS (`--explain` with `--board juno-r2`): every energy
//! it prints for a wake-up is checked against `em_cpu_energy` worked from the
//! board's device tree by the formulas of docs/linux-sched-reference.md §5.1
//! and §5.2, written out here, not through the simulator's energy model:
//!
//! - a state's power is `C × mV² × MHz / 10^6` µW (`dynamic-power-coefficient`
//!   C), its performance `cpu_cap × f / fmax`, its cost `power × 10 /
//!   performance`, and a state costing at least as much as a faster one is
//!   inefficient;
//! - the energy is the cost of the lowest efficient state whose performance
//!   covers `max_util` (capped at `cpu_cap`), else the highest, times
//!   `sum_util`; 0 when `sum_util` is 0;
//! - with the task placed, `sum_util` is the base's plus `task_util_est`, at
//!   most the domain's capacity (`compute_energy`, §5.4).

use fairway_sched::boot_options::SchedConfig;
use fairway_sim::{Config, Simulation};

const MS: u64 = 1_000_000;

/// `boards/juno-r2/cpus.dtsi`: per domain the `dynamic-power-coefficient`
/// and the OPPs (MHz, mV).
const LITTLE: (u64, [(u64, u64); 3]) = (140, [(450, 820), (800, 900), (950, 1000)]);
const BIG: (u64, [(u64, u64); 3]) = (450, [(600, 820), (1000, 900), (1200, 1000)]);

/// `em_cpu_energy` from the device tree's numbers.
fn em_cpu_energy(
    domain: (u64, [(u64, u64); 3]),
    cpu_cap: u64,
    max_util: u64,
    sum_util: u64,
) -> u64 {
    if sum_util == 0 {
        return 0;
    }
    let (coefficient, opps) = domain;
    let fmax = opps[2].0;
    let states: Vec<(u64, u64)> = opps
        .iter()
        .map(|&(mhz, mv)| {
            let power = coefficient * mv * mv * mhz / 1_000_000;
            let performance = cpu_cap * mhz / fmax;
            (performance, power * 10 / performance)
        })
        .collect();
    let efficient = |i: usize| states[i + 1..].iter().all(|s| s.1 > states[i].1);
    let max_util = max_util.min(cpu_cap);
    let cost = (0..states.len())
        .find(|&i| states[i].0 >= max_util && efficient(i))
        .map_or(states[states.len() - 1].1, |i| states[i].1);
    cost * sum_util
}

#[test]
fn each_explained_energy_is_em_cpu_energy_of_the_device_tree() {
    let sched = SchedConfig::parse("").unwrap();
    let board = fairway_sim::board::load("juno-r2", &sched).unwrap();
    let path = format!(
        "{}/../tests/scenarios/eas-workload-a.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let scenario = fairway_rtapp::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cpus = board.capacities.len();
    scenario.validate_for(cpus, false).unwrap();
    let config = Config {
        policy: sched.policy_kind(cpus),
        policy_name: sched.policy.name().into(),
        capacities: board.capacities,
        tick_ns: sched.tick_ns(),
        duration_ns: Some(300 * MS),
        sample_interval_ns: MS,
        hrtick: sched.hrtick,
        tick_phase_ns: 0,
        skew_tick: sched.skew_tick,
        tick_seed: sched.tick_seed,
        balance: sched.balance,
        uclamp: fairway_sim::uclamp_used(&sched, &scenario).unwrap(),
        bandwidth_timer: sched.bandwidth_timer,
        cfs_bandwidth: false,
        dvfs: board.dvfs,
    };
    let results = Simulation::new(&scenario, config)
        .unwrap()
        .with_explain(400)
        .run(None)
        .unwrap();
    let wakes = &results.explained_wakes;
    assert!(wakes.len() >= 20, "only {} wake-ups explained", wakes.len());
    let mut checked = 0;
    let mut moved = 0;
    for wake in wakes {
        let mut base = None;
        for e in &wake.estimates {
            let domain_cpus = &wake.domains[e.domain];
            let model = if domain_cpus.contains(&1) {
                BIG
            } else {
                LITTLE
            };
            assert_eq!(
                e.energy,
                em_cpu_energy(model, e.cpu_cap, e.max_util, e.sum_util),
                "{e:?}"
            );
            match e.dst {
                None => base = Some(e.sum_util),
                Some(cpu) => {
                    assert!(domain_cpus.contains(&cpu.index()), "{e:?}");
                    let pd_cap = e.cpu_cap * domain_cpus.len() as u64;
                    let base = base.expect("the base is priced first");
                    assert_eq!(e.sum_util, (base + wake.task_util_est).min(pd_cap), "{e:?}");
                }
            }
            checked += 1;
        }
        moved += usize::from(wake.chosen != wake.previous);
    }
    assert!(checked >= 60, "only {checked} estimates");
    // Some wake-ups move the task, so CPUs other than prev_cpu were priced.
    assert!(moved > 0);
}
