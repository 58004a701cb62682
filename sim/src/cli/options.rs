//! The command line's options: the usage text and its parser.

use fairway_sched::boot_options::SchedConfig;

use crate::SimError;

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
  --sched_feat LIST          Linux's feature switches of EEVDF, e.g.
                             NO_RUN_TO_PARITY,PREEMPT_SHORT (RUN_TO_PARITY, PREEMPT_SHORT,
                             DELAY_DEQUEUE, DELAY_ZERO; all on by default)
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
