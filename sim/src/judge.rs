//! The placement judge (issue 14, docs/eas.md "Judging placements"): how
//! much energy a run's actual placement of tasks costs against the best
//! placement found by exhaustive search, as LISA's EAS behaviour tests judge
//! EAS (docs/linux-sched-reference.md §8.1).
//!
//! A workload is a [`Shape`]: tasks whose utilization (at capacity 1024 and
//! the highest frequency) changes from phase to phase. It is written as an
//! rt-app scenario of periodic tasks ([`Shape::to_scenario`]) and run in the
//! kernel or the simulator; the run's context switches give, per phase
//! window, the CPU each task ran on most ([`actual_placement`]).
//!
//! Both placements are priced with the energy model the way EAS prices
//! them (§5.2): per performance domain, the busiest CPU's utilization with
//! schedutil's 25 % headroom picks the lowest efficient state that covers
//! it, and the domain costs that state's `cost × Σ utilization` per unit of
//! time. The best placement is the cheapest assignment of the window's
//! tasks to CPUs in which every CPU's utilization fits its capacity
//! (`fits_capacity`, §5.5), or, when none does, the one with the fewest
//! CPUs over it.

use fairway_sched::energy::PerfDomainModel;
use fairway_sched::schedutil::map_util_perf;
use fairway_sched::uclamp::fits_capacity;

/// The CPUs and energy model the judge prices with.
#[derive(Clone, Debug)]
pub struct JudgeBoard {
    /// Each CPU's capacity at the highest frequency.
    pub capacities: Vec<u64>,
    /// Each performance domain: its CPUs and its energy model.
    pub domains: Vec<(Vec<usize>, PerfDomainModel)>,
}

impl JudgeBoard {
    /// The judge's view of a simulator board; `None` without an energy
    /// model for every domain.
    pub fn from_board(board: &crate::board::SimBoard) -> Option<Self> {
        let dvfs = board.dvfs.as_ref()?;
        let domains = dvfs
            .domains
            .iter()
            .zip(&dvfs.models)
            .map(|((cpus, _), model)| Some((cpus.clone(), model.clone()?)))
            .collect::<Option<Vec<_>>>()?;
        Some(JudgeBoard {
            capacities: board
                .capacities
                .iter()
                .map(|c| u64::from(c.capacity_orig))
                .collect(),
            domains,
        })
    }

    /// The energy per unit of time of CPUs running `cpu_utils` (one
    /// utilization per CPU): per domain `cost × Σ util` of the lowest
    /// efficient state covering its busiest CPU with 25 % headroom
    /// (`em_cpu_energy` as EAS calls it, §5.2).
    pub fn energy_rate(&self, cpu_utils: &[u64]) -> u64 {
        self.domains
            .iter()
            .map(|(cpus, model)| {
                let sum: u64 = cpus.iter().map(|&c| cpu_utils[c]).sum();
                let max = cpus.iter().map(|&c| cpu_utils[c]).max().unwrap_or(0);
                let cap = model.states.last().map_or(0, |s| s.performance);
                model.cpu_energy(map_util_perf(max), sum, cap)
            })
            .sum()
    }

    /// How many CPUs of `cpu_utils` do not fit their capacity.
    fn overfull(&self, cpu_utils: &[u64]) -> usize {
        cpu_utils
            .iter()
            .zip(&self.capacities)
            .filter(|&(&util, &cap)| !fits_capacity(util, cap))
            .count()
    }

    /// The per-CPU utilizations of `utils[i]` placed on `cpus[i]`.
    pub fn cpu_utils(&self, utils: &[u64], cpus: &[usize]) -> Vec<u64> {
        let mut out = vec![0; self.capacities.len()];
        for (&util, &cpu) in utils.iter().zip(cpus) {
            out[cpu] += util;
        }
        out
    }

    /// The cheapest placement of tasks of `utils`, by exhaustive search over
    /// every assignment, among those with the fewest CPUs that do not fit:
    /// the CPU of each task and the energy rate.
    pub fn best_placement(&self, utils: &[u64]) -> (Vec<usize>, u64) {
        let n = self.capacities.len();
        let mut assignment = vec![0usize; utils.len()];
        let mut best: Option<(usize, u64, Vec<usize>)> = None;
        loop {
            let cpu_utils = self.cpu_utils(utils, &assignment);
            let key = (self.overfull(&cpu_utils), self.energy_rate(&cpu_utils));
            if best
                .as_ref()
                .is_none_or(|(over, energy, _)| key < (*over, *energy))
            {
                best = Some((key.0, key.1, assignment.clone()));
            }
            // The next assignment, as an odometer over the CPUs.
            let mut i = 0;
            loop {
                if i == assignment.len() {
                    let (_, energy, cpus) = best.expect("one assignment at least");
                    return (cpus, energy);
                }
                assignment[i] += 1;
                if assignment[i] < n {
                    break;
                }
                assignment[i] = 0;
                i += 1;
            }
        }
    }
}

/// One task of a [`Shape`]: its name and its phases, each a utilization
/// (at capacity 1024 and the highest frequency) held for some periods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeTask {
    /// The rt-app task name.
    pub name: String,
    /// `(util, periods)` per phase, in order.
    pub phases: Vec<(u64, u64)>,
}

/// A workload of periodic tasks, all with the same period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The shape's name (for messages).
    pub name: String,
    /// The period of every task, in µs.
    pub period_us: u64,
    /// The tasks.
    pub tasks: Vec<ShapeTask>,
}

impl Shape {
    /// The shape as an rt-app scenario: each phase a `run` of
    /// `util × period / 1024` µs of work and a `timer` of the period.
    pub fn to_scenario(&self) -> String {
        let mut tasks = Vec::new();
        for task in &self.tasks {
            let phases: Vec<String> = task
                .phases
                .iter()
                .enumerate()
                .map(|(i, &(util, periods))| {
                    format!(
                        "\"p{i}\": {{ \"loop\": {periods}, \"run\": {}, \"timer\": {{ \"ref\": \"unique\", \"period\": {} }} }}",
                        util * self.period_us / 1024,
                        self.period_us
                    )
                })
                .collect();
            tasks.push(format!(
                "\"{}\": {{ \"loop\": 1, \"phases\": {{ {} }} }}",
                task.name,
                phases.join(", ")
            ));
        }
        format!(
            "// The EAS shape \"{}\" (fairway_sim::judge, docs/eas.md): periodic tasks of\n\
             // {} us whose run is util x period / 1024 us of work.\n\
             {{ \"global\": {{ \"duration\": -1, \"calibration\": \"CPU0\", \"default_policy\": \"SCHED_OTHER\" }},\n  \"tasks\": {{ {} }} }}\n",
            self.name,
            self.period_us,
            tasks.join(",\n    ")
        )
    }

    /// The windows in which every task's utilization holds still: the
    /// boundaries of every task's phases, from time 0 (the scenario's
    /// start), in ns.
    pub fn windows(&self) -> Vec<(u64, u64)> {
        let period = self.period_us * 1000;
        let mut edges = vec![0u64];
        for task in &self.tasks {
            let mut at = 0;
            for &(_, periods) in &task.phases {
                at += periods * period;
                edges.push(at);
            }
        }
        edges.sort_unstable();
        edges.dedup();
        edges.windows(2).map(|w| (w[0], w[1])).collect()
    }

    /// Each task's utilization at time `at` (0 once it has ended).
    pub fn utils_at(&self, at: u64) -> Vec<u64> {
        let period = self.period_us * 1000;
        self.tasks
            .iter()
            .map(|task| {
                let mut end = 0;
                for &(util, periods) in &task.phases {
                    end += periods * period;
                    if at < end {
                        return util;
                    }
                }
                0
            })
            .collect()
    }
}

/// The classic shapes' period, µs.
pub const PERIOD_US: u64 = 16_000;
/// The settling time the classic shapes are judged with: 10 periods (PELT
/// and util_est follow a change of utilization within a few).
pub const SETTLE_NS: u64 = 10 * PERIOD_US * 1000;
/// A small task's utilization in the classic shapes (about 3 % of a big CPU
/// at its highest frequency): best on the smallest CPUs of all three boards.
pub const SMALL: u64 = 30;
/// A big task's: it fits only the biggest CPUs of all three boards (600 ×
/// 1280 is above 498 × 1024, the Pixel 6's middle CPUs).
pub const BIG: u64 = 600;

/// LISA's classic EAS shapes, scaled to about 1 s of 16 ms periods: one
/// small task, three small tasks, two big tasks, two big and three small, a
/// task that grows from small to big and back, and two tasks that alternate
/// between a small and a middling utilization.
pub fn classic_shapes() -> Vec<Shape> {
    let task = |name: String, phases: &[(u64, u64)]| ShapeTask {
        name,
        phases: phases.to_vec(),
    };
    let shape = |name: &str, tasks: Vec<ShapeTask>| Shape {
        name: name.into(),
        period_us: PERIOD_US,
        tasks,
    };
    let many = |prefix: &str, n: usize, phases: &[(u64, u64)]| -> Vec<ShapeTask> {
        (0..n)
            .map(|i| task(format!("{prefix}{i}"), phases))
            .collect()
    };
    vec![
        shape("one-small", vec![task("small".into(), &[(SMALL, 60)])]),
        shape("three-small", many("small", 3, &[(SMALL, 60)])),
        shape("two-big", many("big", 2, &[(BIG, 60)])),
        shape(
            "two-big-three-small",
            many("big", 2, &[(BIG, 60)])
                .into_iter()
                .chain(many("small", 3, &[(SMALL, 60)]))
                .collect(),
        ),
        shape(
            "ramp",
            vec![task("ramp".into(), &[(SMALL, 40), (BIG, 40), (SMALL, 40)])],
        ),
        shape(
            "alternating",
            many("alt", 2, &[(100, 30), (500, 30), (100, 30), (500, 30)]),
        ),
    ]
}

/// One stretch of a task on a CPU, from a run's context switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stretch {
    /// The task's name.
    pub task: String,
    /// The CPU.
    pub cpu: usize,
    /// From, ns since the scenario's start.
    pub start: u64,
    /// To.
    pub end: u64,
}

/// The stretches of `switches` (`(time_ns, cpu, next task name)` in time
/// order; `None` or "idle" for idle), each running until the next switch on
/// its CPU or `end`.
pub fn stretches(switches: &[(u64, usize, Option<String>)], end: u64) -> Vec<Stretch> {
    let cpus = switches.iter().map(|s| s.1 + 1).max().unwrap_or(0);
    let mut open: Vec<Option<(String, u64)>> = vec![None; cpus];
    let mut out = Vec::new();
    for (time, cpu, next) in switches {
        if let Some((task, start)) = open[*cpu].take() {
            out.push(Stretch {
                task,
                cpu: *cpu,
                start,
                end: *time,
            });
        }
        open[*cpu] = next
            .as_ref()
            .filter(|name| name.as_str() != "idle")
            .map(|name| (name.clone(), *time));
    }
    for (cpu, slot) in open.into_iter().enumerate() {
        if let Some((task, start)) = slot {
            out.push(Stretch {
                task,
                cpu,
                start,
                end: end.max(start),
            });
        }
    }
    out
}

/// Per task of `shape`, the CPU it ran on longest within `[from, to)`
/// (`None`: it did not run there).
pub fn actual_placement(
    shape: &Shape,
    stretches: &[Stretch],
    from: u64,
    to: u64,
    nr_cpus: usize,
) -> Vec<Option<usize>> {
    shape
        .tasks
        .iter()
        .map(|task| {
            let mut time = vec![0u64; nr_cpus];
            for s in stretches.iter().filter(|s| s.task == task.name) {
                let (a, b) = (s.start.max(from), s.end.min(to));
                if a < b && s.cpu < nr_cpus {
                    time[s.cpu] += b - a;
                }
            }
            let (cpu, &most) = time
                .iter()
                .enumerate()
                .max_by_key(|&(c, &t)| (t, usize::MAX - c))?;
            (most > 0).then_some(cpu)
        })
        .collect()
}

/// One window's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowVerdict {
    /// The window judged (after its settling time), ns.
    pub from: u64,
    /// Its end.
    pub to: u64,
    /// Each task's utilization in it.
    pub utils: Vec<u64>,
    /// Where each task ran most (`None`: not at all).
    pub actual: Vec<Option<usize>>,
    /// The best placement.
    pub best: Vec<usize>,
    /// Energy of the actual placement over the window (energy rate × ns).
    pub actual_energy: u128,
    /// Energy of the best placement over the window.
    pub best_energy: u128,
}

/// The judge's verdict on a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Per window.
    pub windows: Vec<WindowVerdict>,
}

impl Verdict {
    /// The placement check of the classic shapes: in every window each task
    /// ran on a CPU of the capacity the best placement gives it, and the
    /// best placement itself puts [`SMALL`] tasks on the smallest CPUs and
    /// [`BIG`] ones on the biggest (the shapes' claim about the boards).
    pub fn check_placement(&self, board: &JudgeBoard) -> Result<(), String> {
        let caps = &board.capacities;
        let smallest = caps.iter().copied().min().unwrap_or(0);
        let biggest = caps.iter().copied().max().unwrap_or(0);
        for window in &self.windows {
            let tasks = window.utils.iter().zip(&window.actual).zip(&window.best);
            for (task, ((&util, &actual), &best)) in tasks.enumerate() {
                let expected = match util {
                    SMALL => Some(smallest),
                    BIG => Some(biggest),
                    _ => None,
                };
                if expected.is_some_and(|cap| caps[best] != cap) {
                    return Err(format!(
                        "the best placement puts task {task} (util {util}) on cpu{best}"
                    ));
                }
                let Some(cpu) = actual else {
                    return Err(format!(
                        "task {task} did not run in {}..{} ns",
                        window.from, window.to
                    ));
                };
                if caps[cpu] != caps[best] {
                    return Err(format!(
                        "task {task} (util {util}) ran on cpu{cpu} (capacity {}), best on \
                         capacity {} in {}..{} ns",
                        caps[cpu], caps[best], window.from, window.to
                    ));
                }
            }
        }
        Ok(())
    }

    /// Actual energy over best energy, summed over the windows.
    pub fn ratio(&self) -> f64 {
        let actual: u128 = self.windows.iter().map(|w| w.actual_energy).sum();
        let best: u128 = self.windows.iter().map(|w| w.best_energy).sum();
        if best == 0 {
            if actual == 0 { 1.0 } else { f64::INFINITY }
        } else {
            actual as f64 / best as f64
        }
    }
}

/// Judges a run of `shape` on `board` from its `stretches`: each window of
/// the shape, less its first `settle_ns` (PELT and util_est need a few
/// periods to follow a change), priced for the actual and the best
/// placement. A task that did not run in a window is priced where the best
/// placement puts it.
pub fn judge(board: &JudgeBoard, shape: &Shape, stretches: &[Stretch], settle_ns: u64) -> Verdict {
    let nr_cpus = board.capacities.len();
    let mut windows = Vec::new();
    for (start, end) in shape.windows() {
        let from = (start + settle_ns).min(end);
        if from >= end {
            continue;
        }
        let utils = shape.utils_at(start);
        let (best, best_rate) = board.best_placement(&utils);
        let actual = actual_placement(shape, stretches, from, end, nr_cpus);
        let placed: Vec<usize> = actual
            .iter()
            .zip(&best)
            .map(|(a, &b)| a.unwrap_or(b))
            .collect();
        let actual_rate = board.energy_rate(&board.cpu_utils(&utils, &placed));
        let length = u128::from(end - from);
        windows.push(WindowVerdict {
            from,
            to: end,
            utils,
            actual,
            best,
            actual_energy: u128::from(actual_rate) * length,
            best_energy: u128::from(best_rate) * length,
        });
    }
    Verdict { windows }
}

/// The judge's view of board `board` (a folder of `boards/`, read as the
/// simulator reads it).
pub fn load_board(board: &str) -> Result<JudgeBoard, crate::SimError> {
    let sched = fairway_sched::boot_options::SchedConfig::default();
    JudgeBoard::from_board(&crate::board::load(board, &sched)?).ok_or_else(|| {
        crate::SimError::Config(format!("board {board}: no energy model for every domain"))
    })
}

/// Runs the rt-app scenario `scenario` (JSON text) in the simulator on
/// `board` (a folder of `boards/`) with the scheduler's `options`, written
/// as the kernel's boot options (`"sched_energy_aware=0 tick_seed=3"`), as
/// `fairway-sim --board` does.
pub fn simulate_on(
    board: &str,
    scenario: &str,
    options: &str,
) -> Result<crate::Results, crate::SimError> {
    use fairway_sched::boot_options::SchedConfig;
    let sched = SchedConfig::parse(options)
        .map_err(|e| crate::SimError::Config(format!("options '{options}': {e}")))?;
    let sim_board = crate::board::load(board, &sched)?;
    let scenario = fairway_rtapp::parse(scenario).map_err(crate::SimError::Scenario)?;
    let cpus = sim_board.capacities.len();
    scenario
        .validate_for(cpus, false)
        .map_err(crate::SimError::Scenario)?;
    let config = crate::Config {
        policy: sched.policy_kind(cpus),
        policy_name: sched.policy.name().into(),
        capacities: sim_board.capacities,
        tick_ns: sched.tick_ns(),
        duration_ns: None,
        sample_interval_ns: 1_000_000,
        hrtick: sched.hrtick,
        tick_phase_ns: 0,
        skew_tick: sched.skew_tick,
        tick_seed: sched.tick_seed,
        balance: sched.balance,
        uclamp: crate::uclamp_used(&sched, &scenario)?,
        bandwidth_timer: sched.bandwidth_timer,
        cfs_bandwidth: sched.cfs_bandwidth,
        dvfs: sim_board.dvfs,
    };
    crate::Simulation::new(&scenario, config)?.run(None)
}

/// Runs `shape` in the simulator on board `board` (a folder of `boards/`)
/// with the kernel's options `options` (`key=value` words), and judges it
/// with `settle_ns` of settling per window: the verdict, the board and the
/// results.
pub fn simulate_and_judge(
    board: &str,
    shape: &Shape,
    options: &str,
    settle_ns: u64,
) -> Result<(Verdict, JudgeBoard, crate::Results), crate::SimError> {
    let judge_board = load_board(board)?;
    let results = simulate_on(board, &shape.to_scenario(), options)?;
    let switches = results.named_switches();
    let verdict = judge(
        &judge_board,
        shape,
        &stretches(&switches, results.end_ns),
        settle_ns,
    );
    Ok((verdict, judge_board, results))
}

/// One shape's verdicts on one board across tick phases: the energy ratio
/// of each run, and the seeds whose run fails the placement check.
#[derive(Clone, Debug)]
pub struct PhaseSpread {
    /// The `tick_seed` of each run (0: every CPU ticks at `k/HZ`).
    pub seeds: Vec<u64>,
    /// Each run's energy ratio, actual over best, in the order of `seeds`.
    pub ratios: Vec<f64>,
    /// The seeds whose run fails [`Verdict::check_placement`].
    pub placement_failures: Vec<u64>,
}

impl PhaseSpread {
    /// The highest energy ratio of the runs.
    pub fn worst_ratio(&self) -> f64 {
        self.ratios.iter().copied().fold(0.0, f64::max)
    }

    /// The seeds whose run is above `limit` (LISA's is 1.05).
    pub fn above(&self, limit: f64) -> Vec<u64> {
        self.seeds
            .iter()
            .zip(&self.ratios)
            .filter(|(_, r)| **r > limit)
            .map(|(s, _)| *s)
            .collect()
    }
}

/// Runs `shape` on `board` once per tick phase, `tick_seed` = each of
/// `seeds` (0: the ticks of every CPU at `k/HZ`; N > 0: each CPU's tick
/// starts at a phase drawn from N, as the kernel's `tick_seed=N`), with the
/// kernel's `options` besides, and judges every run.
///
/// Why: a run's placement is a chain of one-task-at-a-time choices, each
/// decided by PELT signals sampled at a tick, a wake-up or a PELT period
/// boundary, so two runs that differ only in where the ticks fall can end in
/// different placements. One run's verdict says what that phase gave; the
/// spread says what the model gives (docs/eas.md, "Verdicts across tick
/// phases").
pub fn phase_spread(
    board: &str,
    shape: &Shape,
    options: &str,
    seeds: core::ops::Range<u64>,
    settle_ns: u64,
) -> Result<PhaseSpread, crate::SimError> {
    let mut spread = PhaseSpread {
        seeds: Vec::new(),
        ratios: Vec::new(),
        placement_failures: Vec::new(),
    };
    for seed in seeds {
        let options = format!("{options} tick_seed={seed}");
        let (verdict, judge_board, _) = simulate_and_judge(board, shape, &options, settle_ns)?;
        spread.seeds.push(seed);
        spread.ratios.push(verdict.ratio());
        if verdict.check_placement(&judge_board).is_err() {
            spread.placement_failures.push(seed);
        }
    }
    Ok(spread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairway_sched::energy::OperatingPoint;

    /// Juno r0 (§7.2): LITTLE CPUs 0, 3, 4, 5 (capacity 446), big CPUs 1, 2.
    fn juno_r0() -> JudgeBoard {
        let model = |table: &[(u64, u64)], coefficient, cap| {
            let points: Vec<OperatingPoint> = table
                .iter()
                .map(|&(mhz, mv)| OperatingPoint {
                    hz: mhz * 1_000_000,
                    microvolt: mv * 1000,
                })
                .collect();
            PerfDomainModel::from_operating_points(&points, coefficient, cap).unwrap()
        };
        JudgeBoard {
            capacities: vec![446, 1024, 1024, 446, 446, 446],
            domains: vec![
                (
                    vec![0, 3, 4, 5],
                    model(
                        &[(450, 820), (575, 850), (700, 900), (775, 950), (850, 1000)],
                        140,
                        446,
                    ),
                ),
                (
                    vec![1, 2],
                    model(
                        &[(450, 820), (625, 850), (800, 900), (950, 950), (1100, 1000)],
                        530,
                        1024,
                    ),
                ),
            ],
        }
    }

    /// §7.2's costs: a util-100 task costs 100 × 1,794 on a LITTLE CPU
    /// (125 → 450 MHz, performance 236) and 100 × 3,836 on a big one; §5.2's
    /// worked vector, utils 250 and 50 on two LITTLE CPUs, costs 300 × 2,162
    /// (312 → 700 MHz).
    #[test]
    fn energy_rate_matches_the_model() {
        let board = juno_r0();
        assert_eq!(board.energy_rate(&[100, 0, 0, 0, 0, 0]), 179_400);
        assert_eq!(board.energy_rate(&[0, 100, 0, 0, 0, 0]), 383_600);
        assert_eq!(board.energy_rate(&[250, 0, 0, 50, 0, 0]), 648_600);
        assert_eq!(board.energy_rate(&[0; 6]), 0);
    }

    /// The best placements, by hand: a small task on a LITTLE CPU; two
    /// util-600 tasks (which fit no LITTLE CPU: 600 × 1280 > 446 × 1024)
    /// one per big CPU, where 600 × 1.25 = 750 is above 800 MHz's
    /// performance 744, so 950 MHz (performance 884, cost 5,140): 1,200 ×
    /// 5,140; three util-100 tasks one per LITTLE CPU (450 MHz), 300 × 1,794.
    #[test]
    fn best_placement_by_hand() {
        let board = juno_r0();
        let (cpus, energy) = board.best_placement(&[100]);
        assert_eq!((board.capacities[cpus[0]], energy), (446, 179_400));
        let (mut cpus, energy) = board.best_placement(&[600, 600]);
        cpus.sort_unstable();
        assert_eq!((cpus, energy), (vec![1, 2], 1_200 * 5_140));
        let (cpus, energy) = board.best_placement(&[100, 100, 100]);
        assert!(cpus.iter().all(|&c| board.capacities[c] == 446), "{cpus:?}");
        let mut distinct = cpus.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!((distinct.len(), energy), (3, 300 * 1_794));
    }

    /// A run that kept a util-100 task on big CPU 1 for its whole single
    /// window: the judge prices it 383,600 against 179,400 per ns.
    #[test]
    fn judge_prices_the_actual_placement() {
        let board = juno_r0();
        let shape = Shape {
            name: "one".into(),
            period_us: 16_000,
            tasks: vec![ShapeTask {
                name: "t".into(),
                phases: vec![(100, 10)],
            }],
        };
        let switches = [
            (0, 1, Some("t".to_string())),
            (5_000_000, 1, None),
            (16_000_000, 1, Some("t".to_string())),
            (21_000_000, 1, Some("idle".to_string())),
        ];
        let verdict = judge(&board, &shape, &stretches(&switches, 160_000_000), 0);
        assert_eq!(verdict.windows.len(), 1);
        assert_eq!(verdict.windows[0].actual, vec![Some(1)]);
        assert_eq!(verdict.windows[0].actual_energy, 383_600 * 160_000_000);
        assert_eq!(verdict.windows[0].best_energy, 179_400 * 160_000_000);
        assert!((verdict.ratio() - 383_600.0 / 179_400.0).abs() < 1e-9);
    }

    #[test]
    fn windows_split_at_every_phase_edge() {
        let shape = Shape {
            name: "two".into(),
            period_us: 1_000,
            tasks: vec![
                ShapeTask {
                    name: "a".into(),
                    phases: vec![(10, 3), (20, 2)],
                },
                ShapeTask {
                    name: "b".into(),
                    phases: vec![(30, 4)],
                },
            ],
        };
        assert_eq!(
            shape.windows(),
            vec![
                (0, 3_000_000),
                (3_000_000, 4_000_000),
                (4_000_000, 5_000_000)
            ]
        );
        assert_eq!(shape.utils_at(3_500_000), vec![20, 30]);
        assert_eq!(shape.utils_at(4_500_000), vec![20, 0]);
    }
}
