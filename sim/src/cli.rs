//! The `fairway-sim` command line: options, topology choice, and writing the outputs.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};

use fairway_contract::scenario::{Scenario, wire};
use fairway_sched::boot_options::SchedConfig;
use fairway_sched::run_queue::CpuCapacity;

use crate::{Config, Sampler, SimError, Simulation};

/// The usage text.
pub const USAGE: &str = "\
usage: fairway-sim SCENARIO.json [options]
  --sched eevdf|cfs|rr       run-queue policy (default eevdf)
  --cpus N                   number of CPUs (default: the topology's, else 1)
  --capacities C0,C1,...     capacity_orig per CPU, 1..=1024 (overrides global.capacities)
  --frequency-scales F0,...  frequency scale per CPU, 1..=1024 (default 1024)
  --duration T               run length (overrides global.duration), e.g. 2s, 500ms, 1500us
  --hz N                     tick frequency, 10..=10000 (default 250: a 4 ms tick)
  --slice_us N               round-robin slice in us, 100..=1000000 (default 4000)
  --hrtick 0|1               end slices on a high-resolution timer (default 0)
  --skew_tick 0|1            CPU c ticks c x (1/HZ / 2) / N later (default 0)
  --uclamp 0|1|auto          uclamp in use (its run-queue accounting); auto (the
                             default): when the scenario sets a clamp
  --balance 0|1              wake-up CPU selection and load balancing (default 1)
  --bw_timer aligned|period10|random
                             where each cpu.max group's period timer starts (default
                             random: Linux 6.4+; aligned: before 6.4; period10: RFC)
  --bw_seed N                the seed of bw_timer=random (default 0)
  --cfs_bandwidth 0|1        build the run queues with bandwidth control even when no
                             group has a cpu.max (default 0: only when one has)
  --board NAME               a board of boards/ (or a path to one), read as the kernel
                             reads it: its capacities, and with OPP tables DVFS and
                             the energy meter (docs/boards.md)
  --governor schedutil|performance|powersave
                             the governor of a --board's domains (default schedutil)
  --cpufreq_update pelt|switch
                             where the scheduler calls it (default pelt)
  --sched_energy_aware 0|1   energy-aware wake-up placement where the board allows it
                             (default 1: asymmetric capacities, schedutil, an energy model)
  --eas_overutilized 0|1     keep it while overutilized, as the 2024 RFC (default 0)
  --tick_seed N              each CPU's tick also starts at a phase drawn from N
                             (default 0: none)
  --sched_feat LIST          Linux's feature switches of the pick, e.g.
                             NO_RUN_TO_PARITY,PREEMPT_SHORT (eevdf: RUN_TO_PARITY,
                             PREEMPT_SHORT, DELAY_DEQUEUE, DELAY_ZERO; cfs: START_DEBIT,
                             GENTLE_FAIR_SLEEPERS; all on by default)
  --tick-phase T             ticks fall at T + k/HZ (default 0: at k/HZ)
  --sample-interval T        CSV sampling period (default 1ms)
  --csv FILE                 write the signals CSV
  --results FILE             write the results JSON ('-' for stdout)
  --results-switches N       context switches listed in the results JSON (default 1000)
  --switches FILE            write every context switch as CSV
  --trace FILE               write the run as a Perfetto trace (ftrace sched events,
                             util/load counters; open it in ui.perfetto.dev)
  --rtapp-logs DIR           write rt-app's per-task logs there, as rt-app names them
                             (rt-app-TASK-N.log: a row per loop of a phase)
  --explain N                print why the first N decisions were made (picks among two
                             or more tasks, wake-up placements, frequency changes)
  --check                    only parse and validate the scenario
  --encode FILE              only validate, then write the scenario (with the topology
                             options applied) as the kernel's binary blob
  --quiet                    no summary on stdout
  --verbose                  notes on what the scenario sets that has no effect here
                             (rt-app's host options, a byte-order mark), on stderr
times without a unit are seconds; units: ns, us, ms, s
--sched, --sched_feat, --hz, --slice_us, --hrtick, --skew_tick, --uclamp, --balance,
--bw_timer, --bw_seed and --cfs_bandwidth are the kernel's
boot options of the same names, read by the same parser with the same ranges and defaults";

/// Parsed command-line options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The scenario file.
    pub scenario: String,
    /// The scheduler's settings: `--sched --hz --slice_us --hrtick --skew_tick
    /// --uclamp --balance`, the kernel's boot options of the same names.
    pub sched: SchedConfig,
    /// `--board`: a folder of `boards/` (or a path to one).
    pub board: Option<String>,
    /// `--cpus`.
    pub cpus: Option<usize>,
    /// `--capacities`.
    pub capacities: Option<Vec<i64>>,
    /// `--frequency-scales`.
    pub frequency_scales: Option<Vec<i64>>,
    /// `--duration`, in ns.
    pub duration_ns: Option<u64>,
    /// `--tick-phase`, in ns.
    pub tick_phase_ns: u64,
    /// `--sample-interval`, in ns.
    pub sample_interval_ns: u64,
    /// `--csv`.
    pub csv: Option<String>,
    /// `--results`.
    pub results: Option<String>,
    /// `--results-switches`.
    pub results_switches: usize,
    /// `--switches`.
    pub switches: Option<String>,
    /// `--trace`.
    pub trace: Option<String>,
    /// `--rtapp-logs`.
    pub rtapp_logs: Option<String>,
    /// `--explain`: decisions to explain.
    pub explain: usize,
    /// `--check`.
    pub check: bool,
    /// `--encode`: the file for the binary scenario blob (`fairway_contract::scenario::wire`).
    pub encode: Option<String>,
    /// `--quiet`.
    pub quiet: bool,
    /// `--verbose`.
    pub verbose: bool,
    /// `-h` or `--help`: print the usage and do nothing else.
    pub help: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scenario: String::new(),
            sched: SchedConfig::DEFAULT,
            board: None,
            cpus: None,
            capacities: None,
            frequency_scales: None,
            duration_ns: None,
            tick_phase_ns: 0,
            sample_interval_ns: 1_000_000,
            csv: None,
            results: None,
            results_switches: 1000,
            switches: None,
            trace: None,
            rtapp_logs: None,
            explain: 0,
            check: false,
            encode: None,
            quiet: false,
            verbose: false,
            help: false,
        }
    }
}

fn bad(option: &str, value: &str, why: &str) -> SimError {
    SimError::Config(format!("{option} {value}: {why}"))
}

/// Parses a time such as `2s`, `500ms`, `1500us`, `10ns` or `1.5` (seconds) into ns.
pub fn parse_time(option: &str, text: &str) -> Result<u64, SimError> {
    let (number, scale) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, *scale)))
        .unwrap_or((text, 1e9));
    let value: f64 = number
        .parse()
        .map_err(|_| bad(option, text, "not a time (e.g. 2s, 500ms)"))?;
    if !value.is_finite() || value < 0.0 || value * scale > 1e18 {
        return Err(bad(option, text, "outside 0..=1e18 ns"));
    }
    Ok((value * scale).round() as u64)
}

fn parse_list(option: &str, text: &str) -> Result<Vec<i64>, SimError> {
    text.split(',')
        .map(|v| {
            v.trim()
                .parse()
                .map_err(|_| bad(option, text, "not a comma-separated list of integers"))
        })
        .collect()
}

/// Parses the arguments after the program name.
pub fn parse_args(args: &[String]) -> Result<Options, SimError> {
    let mut options = Options::default();
    let mut scenario = None;
    // The scheduler's settings, as the kernel's command line writes them.
    let mut sched_words = String::new();
    // Help first, whatever else the line holds (every command takes -h and --help).
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        options.help = true;
        return Ok(options);
    }
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if !arg.starts_with("--") {
            if scenario.replace(arg.clone()).is_some() {
                return Err(SimError::Config(format!(
                    "{arg}: only one scenario file\n{USAGE}"
                )));
            }
            continue;
        }
        match arg.as_str() {
            "--check" => {
                options.check = true;
                continue;
            }
            "--quiet" => {
                options.quiet = true;
                continue;
            }
            "--verbose" => {
                options.verbose = true;
                continue;
            }
            _ => {}
        }
        let value = iter
            .next()
            .ok_or_else(|| SimError::Config(format!("{arg} needs a value\n{USAGE}")))?;
        let count = |v: &str| -> Result<usize, SimError> {
            v.parse().map_err(|_| bad(arg, v, "not a count"))
        };
        match arg.as_str() {
            "--cpus" => options.cpus = Some(count(value)?),
            "--capacities" => options.capacities = Some(parse_list(arg, value)?),
            "--frequency-scales" => options.frequency_scales = Some(parse_list(arg, value)?),
            "--duration" => {
                let duration = parse_time(arg, value)?;
                if duration == 0 {
                    return Err(bad(
                        arg,
                        value,
                        "must be above 0 (a run of no time simulates nothing)",
                    ));
                }
                options.duration_ns = Some(duration);
            }
            "--tick-phase" => options.tick_phase_ns = parse_time(arg, value)?,
            "--sample-interval" => {
                options.sample_interval_ns = parse_time(arg, value)?;
                if options.sample_interval_ns == 0 {
                    return Err(bad(arg, value, "must be above 0"));
                }
            }
            "--csv" => options.csv = Some(value.clone()),
            "--board" => options.board = Some(value.clone()),
            "--results" => options.results = Some(value.clone()),
            "--results-switches" => options.results_switches = count(value)?,
            "--switches" => options.switches = Some(value.clone()),
            "--trace" => options.trace = Some(value.clone()),
            "--rtapp-logs" => options.rtapp_logs = Some(value.clone()),
            "--explain" => options.explain = count(value)?,
            "--encode" => options.encode = Some(value.clone()),
            _ => match arg
                .strip_prefix("--")
                .filter(|key| SchedConfig::KEYS.contains(key))
            {
                Some(key) => {
                    // A value with white space would split into two words.
                    if value.is_empty() || value.contains(char::is_whitespace) {
                        return Err(bad(arg, value, "not a value"));
                    }
                    sched_words.push_str(&format!("{key}={value} "));
                }
                None => return Err(SimError::Config(format!("{arg}: unknown option\n{USAGE}"))),
            },
        }
    }
    options.sched = SchedConfig::parse(&sched_words).map_err(|error| {
        let (key, value) = error.word.split_once('=').unwrap_or((error.word, ""));
        let problem = error.to_string();
        let problem = problem
            .strip_prefix("bootargs: ")
            .and_then(|text| text.strip_prefix(error.word))
            .unwrap_or(&problem);
        SimError::Config(format!("--{key} {value}{problem}"))
    })?;
    if options.board.is_some() && options.frequency_scales.is_some() {
        return Err(SimError::Config(
            "--frequency-scales: a --board's frequencies are its governor's".into(),
        ));
    }
    if options.board.is_some() && options.capacities.is_some() {
        return Err(SimError::Config(
            "--capacities: a --board's capacities come from its device tree".into(),
        ));
    }
    options.scenario =
        scenario.ok_or_else(|| SimError::Config(format!("no scenario file\n{USAGE}")))?;
    Ok(options)
}

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

/// Writes the validated `scenario` as a wire blob to `path` (`--encode`).
fn write_blob(scenario: &Scenario, options: &Options, path: &str) -> Result<(), SimError> {
    let blob = wire::encode(&with_topology(scenario, options))
        .map_err(|e| SimError::Config(format!("{}: {e}", options.scenario)))?;
    std::fs::write(path, &blob).map_err(|e| SimError::Config(format!("{path}: {e}")))?;
    if !options.quiet {
        println!(
            "{path}: {} bytes, format version {}",
            blob.len(),
            wire::VERSION
        );
    }
    Ok(())
}

/// Makes folder `dir` if needed and checks that a file can be written in it
/// (the simulator's and the runner's output folders, before their runs).
pub fn check_folder(dir: &std::path::Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".fairway-sim-{}", std::process::id()));
    File::create(&probe)?;
    std::fs::remove_file(&probe)
}

/// Opens output `path` of `option` (`-`: standard output); an error names both.
fn create(option: &str, path: &str) -> Result<Box<dyn Write>, SimError> {
    if path == "-" {
        return Ok(Box::new(io::stdout()));
    }
    let file = File::create(path).map_err(|e| SimError::Config(format!("{option} {path}: {e}")))?;
    Ok(Box::new(BufWriter::new(file)))
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

/// Runs the command.
pub fn run(options: &Options) -> Result<(), SimError> {
    if options.help {
        print!("{USAGE}");
        return Ok(());
    }
    let prepared = prepare(options)?;
    let (scenario, options) = (&prepared.scenario, &prepared.options);
    if let Some(path) = &options.encode {
        return write_blob(scenario, options, path);
    }
    if options.check {
        println!(
            "{}: valid, {} task instance(s), {} CPU(s)",
            options.scenario,
            scenario.instance_count(),
            prepared.capacities.len()
        );
        return Ok(());
    }
    let config = prepared.config()?;
    let mut simulation = Simulation::new(scenario, config)?;
    if options.trace.is_some() {
        simulation = simulation.with_trace();
    }
    if options.rtapp_logs.is_some() {
        simulation = simulation.with_rtapp_logs();
    }
    if options.explain > 0 {
        simulation = simulation.with_explain(options.explain);
    }
    if !options.quiet && io::stderr().is_terminal() && std::env::var_os("CI").is_none() {
        simulation = simulation.with_progress();
    }
    if !options.quiet
        && options.sched.features != SchedConfig::DEFAULT.features
        && let Some(features) = options.sched.features_in_force()
    {
        println!("sched_feat: {features}");
    }
    if options.board.is_some() && !options.quiet {
        // As the kernel says at boot (docs/eas.md).
        match simulation.eas_status() {
            Ok(domains) if options.sched.eas_overutilized => println!(
                "eas: on ({domains} perf domains), also when overutilized (eas_overutilized=1)"
            ),
            Ok(domains) => println!("eas: on ({domains} perf domains)"),
            Err(Some(reason)) => println!("eas: off: {reason}"),
            Err(None) => println!("eas: off: balance=0 (no wake-up placement)"),
        }
    }
    if let Some(path) = &options.csv {
        check_csv_size(path, scenario, options, prepared.capacities.len())?;
    }
    // Every output is opened (a log folder made and written to) before the
    // run, so that an unwritable path is refused at once, not after a run
    // of many minutes.
    let mut switches_out = options
        .switches
        .as_deref()
        .map(|p| create("--switches", p))
        .transpose()?;
    let mut trace_out = options
        .trace
        .as_deref()
        .map(|p| create("--trace", p))
        .transpose()?;
    let mut results_out = options
        .results
        .as_deref()
        .map(|p| create("--results", p))
        .transpose()?;
    if let Some(dir) = &options.rtapp_logs {
        check_folder(std::path::Path::new(dir))
            .map_err(|e| SimError::Config(format!("--rtapp-logs {dir}: {e}")))?;
    }
    let mut csv_cut = None;
    let results = match &options.csv {
        Some(path) => {
            let mut out = create("--csv", path)?;
            let mut sampler = Sampler::new(&mut *out);
            let results = simulation.run(Some(&mut sampler))?;
            if let Some(time_ns) = sampler.cut_at() {
                csv_cut = Some((path, time_ns, sampler.written()));
            }
            out.flush()?;
            results
        }
        None => simulation.run(None)?,
    };
    if let Some(out) = &mut switches_out {
        results.write_switches(&mut **out)?;
        out.flush()?;
    }
    if let (Some(dir), Some(logs)) = (&options.rtapp_logs, &results.rtapp_logs) {
        let tasks = results.tasks.iter().enumerate().map(|(index, task)| {
            let rows = logs.get(index).map_or(&[][..], Vec::as_slice);
            (task.name.as_str(), rows)
        });
        crate::rtapp_log::write_logs(std::path::Path::new(dir), tasks)
            .map_err(|e| SimError::Config(format!("--rtapp-logs: {e}")))?;
    }
    if let (Some(out), Some(trace)) = (&mut trace_out, &results.trace) {
        out.write_all(&trace.to_perfetto())?;
        out.flush()?;
    }
    if let Some(out) = &mut results_out {
        let json = results.to_json(options.results_switches);
        serde_json::to_writer_pretty(&mut **out, &json).map_err(io::Error::other)?;
        writeln!(out)?;
        out.flush()?;
    }
    if !options.quiet {
        results.write_summary(&mut io::stdout().lock())?;
    }
    // Every other output is whole; the run still fails, as its CSV is not.
    if let Some((path, time_ns, written)) = csv_cut {
        return Err(SimError::Config(format!(
            "--csv {path}: cut at {time_ns} ns, after {written} bytes: the next sample would \
             pass the cap of {} bytes; the file ends on the last whole sample and every other \
             output is whole; sample less often (--sample-interval) or simulate fewer tasks",
            crate::sampler::MAX_CSV_BYTES
        )));
    }
    Ok(())
}

/// Refuses, before the run, a signals CSV sure to pass its cap
/// ([`crate::sampler::least_csv_bytes`]); a run with no set end is left to the cap.
fn check_csv_size(
    path: &str,
    scenario: &Scenario,
    options: &Options,
    nr_cpus: usize,
) -> Result<(), SimError> {
    let Some(end_ns) = crate::engine::run_end(options.duration_ns, scenario) else {
        return Ok(());
    };
    let interval = options.sample_interval_ns;
    let least = crate::sampler::least_csv_bytes(scenario, nr_cpus, end_ns, interval);
    let cap = crate::sampler::MAX_CSV_BYTES;
    if least > cap {
        return Err(SimError::Config(format!(
            "--csv {path}: the signals CSV would hold at least {least} bytes (a row per CPU and \
             per never-ending task every {interval} ns for {end_ns} ns), past the cap of {cap} \
             bytes; sample less often (--sample-interval), or simulate fewer tasks or less time"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// `tests/scenarios/pending-wakeup.json`, whose figures its comment derives:
    /// a task woken at 600 ms and starved by a FIFO hog to the end at 1 s is one
    /// pending wake-up with 400 ms of wait, none run, none missed; a task asleep
    /// on a timer that has not fired is none pending.
    #[test]
    fn a_woken_task_starved_to_the_end_is_one_pending_wake_up() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/scenarios/pending-wakeup.json"
        );
        let prepared = prepare(&parse_args(&args(&[path, "--cpus", "2"])).unwrap()).unwrap();
        let results = Simulation::new(&prepared.scenario, prepared.config().unwrap())
            .unwrap()
            .run(None)
            .unwrap();
        let task = |name: &str| results.tasks.iter().find(|t| t.name == name).unwrap();
        let periodic = task("periodic");
        assert_eq!(
            (
                periodic.runtime_ns,
                periodic.wait_ns,
                periodic.wakeup_latency.count,
                periodic.pending_wakeups,
                periodic.missed_periods
            ),
            (1_000_000, 400_000_000, 0, 1, 0)
        );
        let sleeper = task("sleeper");
        assert_eq!(
            (sleeper.wakeup_latency.count, sleeper.pending_wakeups),
            (0, 0)
        );
    }

    #[test]
    fn a_csv_sure_to_pass_its_cap_is_refused_before_the_run() {
        // 10,000 never-ending tasks sampled every millisecond for 60 s: at least
        // 60,000 samples of 10,000 rows of about 20 bytes, 12 GB, past 1 GiB.
        let text = r#"{"global": {"duration": 60},
                       "tasks": {"t": {"instance": 10000, "run": 10, "sleep": 990}}}"#;
        let scenario = fairway_rtapp::parse_and_validate(text, 1).unwrap();
        let options = parse_args(&args(&["s.json", "--csv", "out.csv"])).unwrap();
        let error = check_csv_size("out.csv", &scenario, &options, 1)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("--csv out.csv: the signals CSV would hold at least "),
            "{error}"
        );
        assert!(
            error.contains("past the cap of 1073741824 bytes"),
            "{error}"
        );
        // Every 100 ms it fits: 600 samples.
        let options = parse_args(&args(&[
            "s.json",
            "--csv",
            "out.csv",
            "--sample-interval",
            "100ms",
        ]))
        .unwrap();
        check_csv_size("out.csv", &scenario, &options, 1).unwrap();
    }

    #[test]
    fn times_take_units() {
        assert_eq!(parse_time("--duration", "2").unwrap(), 2_000_000_000);
        assert_eq!(parse_time("--duration", "1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_time("--duration", "500ms").unwrap(), 500_000_000);
        assert_eq!(parse_time("--duration", "1500us").unwrap(), 1_500_000);
        assert_eq!(parse_time("--duration", "10ns").unwrap(), 10);
        assert_eq!(
            parse_time("--duration", "-1").unwrap_err().to_string(),
            "--duration -1: outside 0..=1e18 ns"
        );
        assert!(parse_time("--duration", "soon").is_err());
    }

    fn readme() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
    }

    /// sim/README.md shows the options as `--help` prints them, whole.
    #[test]
    fn the_readme_shows_the_usage_as_the_tool_prints_it() {
        assert!(
            readme().contains(&format!("```text\n{USAGE}\n```")),
            "sim/README.md's Options must be USAGE, verbatim"
        );
    }

    /// sim/README.md's results JSON lists the keys a run writes, in their order
    /// (objects depth-first, an array by its first element): a run with a limited
    /// group on a board with an energy model, so that every key is there.
    #[test]
    fn the_readme_lists_the_results_keys_in_order() {
        fn keys(value: &serde_json::Value, out: &mut Vec<String>) {
            match value {
                serde_json::Value::Object(map) => {
                    for (key, value) in map {
                        out.push(key.clone());
                        keys(value, out);
                    }
                }
                serde_json::Value::Array(values) => {
                    if let Some(first) = values.first() {
                        keys(first, out);
                    }
                }
                _ => {}
            }
        }
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/scenarios/bandwidth-25-100.json"
        );
        let options = parse_args(&args(&[path, "--board", "juno-r2", "--quiet"])).unwrap();
        let prepared = prepare(&options).unwrap();
        let mut config = prepared.config().unwrap();
        config.duration_ns = Some(300_000_000);
        let results = Simulation::new(&prepared.scenario, config)
            .unwrap()
            .run(None)
            .unwrap();
        let mut written = Vec::new();
        keys(&results.to_json(10), &mut written);
        let text = readme();
        let start = text.find("**Results JSON**").unwrap();
        let block = &text[start..];
        let block = &block[block.find("```").unwrap() + 3..];
        let block = &block[..block.find("```").unwrap()];
        let listed: Vec<String> = block
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        assert_eq!(listed, written);
    }

    #[test]
    fn dash_h_and_dash_dash_help_ask_for_the_usage() {
        for line in [&["-h"][..], &["--help"], &["s.json", "--cpus", "2", "-h"]] {
            assert!(parse_args(&args(line)).unwrap().help, "{line:?}");
        }
        assert!(!parse_args(&args(&["s.json"])).unwrap().help);
    }

    #[test]
    fn options_are_parsed() {
        let options = parse_args(&args(&[
            "s.json",
            "--cpus",
            "4",
            "--hz",
            "1000",
            "--capacities",
            "446,1024",
            "--csv",
            "out.csv",
            "--check",
        ]))
        .unwrap();
        assert_eq!(options.scenario, "s.json");
        assert_eq!(options.cpus, Some(4));
        assert_eq!(options.sched.hz, 1000);
        assert_eq!(options.capacities, Some(vec![446, 1024]));
        assert_eq!(options.csv.as_deref(), Some("out.csv"));
        assert!(options.check);
        assert!(parse_args(&args(&["--cpus"])).is_err());
        assert_eq!(
            parse_args(&args(&["s.json", "--duration", "0"]))
                .unwrap_err()
                .to_string(),
            "--duration 0: must be above 0 (a run of no time simulates nothing)"
        );
        assert!(parse_args(&args(&["s.json", "--bogus", "1"])).is_err());
    }

    #[test]
    fn example_scenarios_round_trip_through_the_wire_format() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
        let mut count = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let scenario = fairway_rtapp::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let nr_cpus = capacities(&scenario, &Options::default()).unwrap().len();
            let blob = wire::encode(&scenario).unwrap();
            assert_eq!(wire::decode(&blob).as_ref(), Ok(&scenario), "{path:?}");
            assert_eq!(wire::decode_and_validate(&blob, nr_cpus), Ok(scenario));
            count += 1;
        }
        assert!(count >= 3);
    }

    #[test]
    fn encode_option_writes_the_blob_with_topology_overrides() {
        let out = std::env::temp_dir().join(format!("fairway-wire-{}.bin", std::process::id()));
        let scenario_path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/taskgroups.json");
        let options = parse_args(&args(&[
            scenario_path,
            "--capacities",
            "512,1024,1024,512",
            "--encode",
            out.to_str().unwrap(),
            "--quiet",
        ]))
        .unwrap();
        run(&options).unwrap();
        let blob = std::fs::read(&out).unwrap();
        std::fs::remove_file(&out).unwrap();
        let mut expected =
            fairway_rtapp::parse(&std::fs::read_to_string(scenario_path).unwrap()).unwrap();
        expected.global.capacities = vec![512, 1024, 1024, 512];
        assert_eq!(wire::decode_and_validate(&blob, 4), Ok(expected));
        // An invalid scenario writes nothing.
        let refused = Options {
            cpus: Some(3),
            ..options
        };
        assert!(run(&refused).is_err());
        assert!(!out.exists());
    }

    #[test]
    fn policies_map_to_linux_defaults_for_the_cpu_count() {
        use fairway_sched::boot_options::PolicyChoice;
        use fairway_sched::run_queue::PolicyKind;
        let with = |policy, hz| SchedConfig {
            policy,
            hz,
            ..SchedConfig::DEFAULT
        };
        assert_eq!(
            with(PolicyChoice::RoundRobin, 250).policy_kind(1),
            PolicyKind::RoundRobin { slice: 4_000_000 }
        );
        // §1.4: 6 ms latency × (1 + ilog2(4)) = 18 ms on 4 CPUs.
        match with(PolicyChoice::Cfs, 250).policy_kind(4) {
            PolicyKind::Cfs(t) => assert_eq!(t.latency, 18_000_000),
            other => panic!("{other:?}"),
        }
        // §1.5: a 4-CPU machine gets a 2.10 ms base slice (v6.15).
        match with(PolicyChoice::Eevdf, 1000).policy_kind(4) {
            PolicyKind::Eevdf(t) => assert_eq!((t.base_slice, t.tick), (2_100_000, 1_000_000)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_kernels_option_names_ranges_and_defaults() {
        let options = parse_args(&args(&["s.json"])).unwrap();
        assert_eq!(options.sched, SchedConfig::DEFAULT);
        let options = parse_args(&args(&[
            "s.json",
            "--sched",
            "cfs",
            "--hz",
            "1000",
            "--balance",
            "0",
            "--slice_us",
            "2000",
        ]))
        .unwrap();
        assert_eq!(
            options.sched.to_string(),
            "sched=cfs hz=1000 hrtick=0 skew_tick=0 slice_us=2000 uclamp=auto balance=0 \
             bw_timer=random bw_seed=0 cfs_bandwidth=0 governor=schedutil cpufreq_update=pelt \
             sched_energy_aware=1 eas_overutilized=0 tick_seed=0 \
             sched_feat=START_DEBIT,GENTLE_FAIR_SLEEPERS"
        );
        for (flag, value, message) in [
            ("--hz", "abc", "--hz abc: not a number"),
            ("--balance", "2", "--balance 2: must be one of 0, 1"),
            (
                "--sched",
                "foo",
                "--sched foo: must be one of eevdf, cfs, rr",
            ),
            ("--hz", "5", "--hz 5: outside 10..=10000"),
            ("--hz", "", "--hz : not a value"),
            (
                "--governor",
                "ondemand",
                "--governor ondemand: must be one of schedutil, performance, powersave",
            ),
            (
                "--sched_feat",
                "NO_RUN_TO_PARITY,START_DEBIT",
                "--sched_feat NO_RUN_TO_PARITY,START_DEBIT: 'START_DEBIT' is not a feature \
                 switch of sched=eevdf (one of RUN_TO_PARITY, PREEMPT_SHORT, DELAY_DEQUEUE, \
                 DELAY_ZERO, or NO_ and one of them)",
            ),
        ] {
            let error = parse_args(&args(&["s.json", flag, value])).unwrap_err();
            assert_eq!(error.to_string(), message);
        }
        let error = parse_args(&args(&["s.json", "--hz", "100", "--hz", "1000"])).unwrap_err();
        assert_eq!(error.to_string(), "--hz 1000: hz is given twice");
    }

    #[test]
    fn topology_comes_from_options_then_scenario() {
        let scenario = fairway_rtapp::parse(
            r#"{"global": {"capacities": [446, 1024]}, "tasks": {"t": {"loop": 1, "run": 5}}}"#,
        )
        .unwrap();
        let from_scenario = capacities(&scenario, &Options::default()).unwrap();
        assert_eq!(
            from_scenario
                .iter()
                .map(|c| c.capacity_orig)
                .collect::<Vec<_>>(),
            [446, 1024]
        );
        let options = Options {
            capacities: Some(vec![512]),
            ..Options::default()
        };
        assert_eq!(
            capacities(&scenario, &options).unwrap()[0].capacity_orig,
            512
        );
        let mismatch = Options {
            cpus: Some(3),
            ..Options::default()
        };
        assert_eq!(
            capacities(&scenario, &mismatch).unwrap_err().to_string(),
            "global.capacities: the list has 2 values for a machine of 3 CPUs: one per CPU"
        );
    }

    /// Every output is opened before the run: an unwritable one is refused
    /// naming the option and the path, and no other output is written.
    #[test]
    fn an_unwritable_output_is_refused_before_the_run() {
        let scenario = format!(
            "{}/../tests/scenarios/periodic-30pct-20ms.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let folder = std::env::temp_dir().join(format!("fairway-sim-out-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let switches = folder.join("switches.csv");
        let options = parse_args(&args(&[
            &scenario,
            "--quiet",
            "--switches",
            switches.to_str().unwrap(),
            "--results",
            "/nonexistent-folder/results.json",
        ]))
        .unwrap();
        let error = run(&options).unwrap_err().to_string();
        assert!(
            error.starts_with("--results /nonexistent-folder/results.json: "),
            "{error}"
        );
        let written = std::fs::metadata(&switches).map_or(0, |m| m.len());
        assert_eq!(written, 0, "no run, so no switch written");
        let options =
            parse_args(&args(&[&scenario, "--rtapp-logs", "/proc/no-such-folder"])).unwrap();
        let error = run(&options).unwrap_err().to_string();
        assert!(
            error.starts_with("--rtapp-logs /proc/no-such-folder: "),
            "{error}"
        );
        let _ = std::fs::remove_dir_all(&folder);
    }

    /// A CPU number refused on the default machine of 1 CPU says where that
    /// one CPU came from; with `--cpus` it is the scenario's own error.
    #[test]
    fn a_cpu_beyond_the_default_machine_names_the_default() {
        let scenario = fairway_rtapp::parse(
            r#"{"global": {"duration": 1}, "tasks": {"t": {"cpus": [1], "run": 5}}}"#,
        )
        .unwrap();
        assert_eq!(
            capacities(&scenario, &Options::default())
                .unwrap_err()
                .to_string(),
            "tasks.t.cpus.0: 1 is outside 0..=0 (the machine has 1 CPU: the simulator's \
             default without --cpus N, --board NAME or global.capacities)"
        );
        assert!(
            capacities(
                &scenario,
                &Options {
                    cpus: Some(2),
                    ..Options::default()
                }
            )
            .is_ok()
        );
    }
}
