//! The kernel command line (`/chosen/bootargs`), read strictly.
//!
//! Linux refuses a bad `sched_setattr` with `EINVAL`; Fairway refuses a bad boot
//! option the same way: every option is known, appears at most once, and has a
//! value in its range, or the boot stops with a [`BootOptionError`] that names the
//! option and the value. Nothing falls back silently to a default.
//!
//! The same parser runs twice: on the host, before QEMU starts (the runner checks
//! `--append`), and in the kernel at boot (a board's boot loader can pass anything).
//! It allocates nothing, so the kernel can run it before its heap exists.
//!
//! ```text
//!   "sched=cfs hz=1000 workload=sched-pipe loops=500"
//!     -> BootOptions { sched: SchedConfig { policy: Cfs, hz: 1000, .. },
//!                      workload: SchedPipe { loops: 500, .. }, .. }
//!   "hz=abc"  -> error: hz=abc: not a number
//!   "hz=1000 hz=100" -> error: hz=100: hz is given twice
//! ```

use core::fmt;

use words::{KEYS, Words, error};

/// The longest command line the kernel keeps (bytes of `/chosen/bootargs`).
pub const MAX_BOOTARGS: usize = 1024;

/// The scheduler tick frequency without `hz=` (Linux's common `CONFIG_HZ`).
pub const DEFAULT_HZ: u64 = 250;

/// The largest `trace_switches`: the trace buffer is allocated at the start of a run.
pub const MAX_TRACE_SWITCHES: u64 = 200_000;

/// The largest `trace_records`: each CPU's trace buffer is allocated at
/// boot (24 bytes a record, so 24 MB a CPU at most).
pub const MAX_TRACE_RECORDS: u64 = 1_000_000;

/// The largest `rtapp_log_rows`: each rt-app task's log is allocated when
/// the run starts (80 bytes a row, so 80 MB a task at most).
pub const MAX_RTAPP_LOG_ROWS: u64 = 1_000_000;

/// The largest `record_core`: each CPU's record buffer is allocated at boot
/// (80 bytes a record).
pub const MAX_RECORD_CORE: u64 = 200_000;

/// The scheduling policy of every run queue (`sched=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyChoice {
    /// Round-robin (`rr`).
    RoundRobin,
    /// The fair class with the CFS pick (`cfs`).
    Cfs,
    /// The fair class with the EEVDF pick (`eevdf`, Linux ≥ 6.6).
    Eevdf,
    /// A policy registered in [`crate::policies`] (`lottery`, `stride`, ...).
    Registered(crate::policies::PolicyId),
}

impl PolicyChoice {
    /// The built-in policies' names, as `sched=` takes them.
    pub const BUILT_IN: [&'static str; 3] = ["eevdf", "cfs", "rr"];

    /// The policy `sched=` names: a built-in one, else a registered one.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "rr" => Some(PolicyChoice::RoundRobin),
            "cfs" => Some(PolicyChoice::Cfs),
            "eevdf" => Some(PolicyChoice::Eevdf),
            _ => crate::policies::PolicyId::find(name).map(PolicyChoice::Registered),
        }
    }

    /// Every name `sched=` takes, the built-ins first.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::BUILT_IN
            .into_iter()
            .chain(crate::policies::REGISTERED.iter().map(|policy| policy.name))
    }

    /// The feature switches `sched_feat=` may name under this policy
    /// ([`crate::fair::features`]); round robin, CFS and the registered
    /// policies have none.
    pub fn feature_set(self) -> Option<crate::fair::FeatureSet> {
        match self {
            PolicyChoice::RoundRobin | PolicyChoice::Cfs | PolicyChoice::Registered(_) => None,
            PolicyChoice::Eevdf => Some(crate::fair::FeatureSet::Eevdf),
        }
    }

    /// The name `sched=` takes.
    pub fn name(self) -> &'static str {
        match self {
            PolicyChoice::RoundRobin => "rr",
            PolicyChoice::Cfs => "cfs",
            PolicyChoice::Eevdf => "eevdf",
            PolicyChoice::Registered(id) => id.name(),
        }
    }
}

/// The scheduler's settings: one value, read from the kernel's command line
/// ([`BootOptions::parse`]) or from the simulator's flags of the same names
/// ([`SchedConfig::parse`]), with the same ranges and defaults (Linux's where
/// Linux has one: `CONFIG_HZ=250`, hrtick off (the `HRTICK` scheduler feature is
/// off by default: a slice ends at the first tick after it runs out,
/// docs/linux-sched-reference.md), `skew_tick=0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedConfig {
    /// `sched=eevdf|cfs|rr` or a registered policy's name.
    pub policy: PolicyChoice,
    /// `hz=` (`CONFIG_HZ`), 10..=10000.
    pub hz: u64,
    /// `hrtick=0|1`: end slices on a high-resolution timer.
    pub hrtick: bool,
    /// `skew_tick=0|1`: spread the CPUs' ticks over half a period.
    pub skew_tick: bool,
    /// `slice_us=` of the round-robin policy, 100..=1000000.
    pub slice_us: u64,
    /// `uclamp=0|1|auto`: whether uclamp is in use, i.e. its run-queue
    /// accounting runs (Linux's `sched_uclamp_used` static key, §3.2). `None`
    /// is `auto`, the default: in use exactly when the scenario sets a clamp,
    /// as Linux turns the key on at the first clamp a user sets and leaves
    /// every other workload without the cost. Resolve it with
    /// [`SchedConfig::uclamp_used`] once the scenario is known.
    pub uclamp: Option<bool>,
    /// `balance=0|1`: wake-up CPU selection and load balancing.
    pub balance: bool,
    /// `bw_timer=aligned|period10|random` and `bw_seed=N`: where each limited
    /// group's period timer grid starts (§4.6): Linux before 6.4, the 2023
    /// RFC, or Linux 6.4+ (the default; seeded so that runs repeat).
    pub bandwidth_timer: crate::bandwidth::PeriodTimerStart,
    /// `cfs_bandwidth=0|1`: the run queues are built with CFS bandwidth
    /// control (§4), so that groups may get a `cpu.max`; without it the fair
    /// class is compiled without it and costs nothing for it. A scenario
    /// with a `cpu.max` needs it (the host runner adds it), and sched-pipe's
    /// `quota_us=` implies it.
    pub cfs_bandwidth: bool,
    /// `governor=schedutil|performance|powersave`: what sets each performance
    /// domain's frequency on a board with OPP tables (§6; Linux's
    /// `cpufreq.default_governor=`).
    pub governor: crate::schedutil::Governor,
    /// `cpufreq_update=pelt|switch`: where the scheduler calls the governor
    /// (§6.2): Linux's PELT-change sites, or the 2023 proposal's context
    /// switch; both also at the tick.
    pub cpufreq_update: crate::schedutil::UpdateSites,
    /// `sched_energy_aware=0|1`: Linux's switch for energy-aware placement
    /// (§5.3); EAS runs only where the board allows it as well.
    pub energy_aware: bool,
    /// `eas_overutilized=0|1`: keep energy-aware wake-up placement while the
    /// root domain is overutilized, as the 2024 RFC does (§5.6); off by
    /// default, as in Linux.
    pub eas_overutilized: bool,
    /// `sched_feat=LIST`: Linux's feature switches of the chosen pick
    /// (`NO_RUN_TO_PARITY,PREEMPT_SHORT`; [`crate::fair::features`]); the
    /// features it does not name keep Linux's defaults (all on).
    pub features: crate::fair::SchedFeatures,
    /// `tick_seed=N`: with N > 0, each CPU's tick starts at a pseudo-random
    /// phase of the period drawn from N (added to `skew_tick`'s offset), so
    /// that runs under QEMU's icount, otherwise identical, can be perturbed
    /// on purpose and repeated exactly; 0 (the default): no such offset.
    pub tick_seed: u64,
}

impl SchedConfig {
    /// The option names, as the command line and the simulator's flags spell them.
    pub const KEYS: [&'static str; 16] = [
        "sched",
        "hz",
        "hrtick",
        "skew_tick",
        "slice_us",
        "uclamp",
        "balance",
        "bw_timer",
        "bw_seed",
        "cfs_bandwidth",
        "governor",
        "cpufreq_update",
        "sched_energy_aware",
        "eas_overutilized",
        "tick_seed",
        "sched_feat",
    ];

    /// Every setting at its default.
    pub const DEFAULT: SchedConfig = SchedConfig {
        policy: PolicyChoice::Eevdf,
        hz: DEFAULT_HZ,
        hrtick: false,
        skew_tick: false,
        slice_us: crate::round_robin::DEFAULT_SLICE_NS / 1000,
        uclamp: None,
        balance: true,
        bandwidth_timer: crate::bandwidth::PeriodTimerStart::Random { seed: 0 },
        cfs_bandwidth: false,
        governor: crate::schedutil::Governor::Schedutil,
        cpufreq_update: crate::schedutil::UpdateSites::Pelt,
        energy_aware: true,
        eas_overutilized: false,
        tick_seed: 0,
        features: crate::fair::SchedFeatures::DEFAULT,
    };

    /// Reads `key=value` words of [`SchedConfig::KEYS`] only (the simulator's
    /// flags, written as such words), as strictly as the command line.
    pub fn parse(line: &str) -> Result<SchedConfig, BootOptionError<'_>> {
        if line.len() > MAX_BOOTARGS {
            return Err(error(line, Problem::TooLong(line.len())));
        }
        let words = Words::split(line)?;
        if let Some((word, _)) = KEYS
            .iter()
            .filter(|key| !Self::KEYS.contains(key))
            .find_map(|key| words.get(key))
        {
            return Err(error(word, Problem::UnknownOption));
        }
        Self::from_words(&words)
    }

    fn from_words<'a>(words: &Words<'a>) -> Result<SchedConfig, BootOptionError<'a>> {
        let default = Self::DEFAULT;
        let policy = match words.get("sched") {
            None => default.policy,
            Some((word, name)) => {
                PolicyChoice::parse(name).ok_or(error(word, Problem::NotAPolicy))?
            }
        };
        Ok(SchedConfig {
            policy,
            hz: words.number("hz", default.hz, 10, 10_000)?,
            hrtick: words.flag("hrtick", default.hrtick)?,
            skew_tick: words.flag("skew_tick", default.skew_tick)?,
            slice_us: words.number("slice_us", default.slice_us, 100, 1_000_000)?,
            uclamp: match words.get("uclamp") {
                None => default.uclamp,
                Some((_, "auto")) => None,
                Some((_, "0")) => Some(false),
                Some((_, "1")) => Some(true),
                Some((word, _)) => return Err(error(word, Problem::NotOneOf("0, 1, auto"))),
            },
            balance: words.flag("balance", default.balance)?,
            bandwidth_timer: {
                use crate::bandwidth::PeriodTimerStart;
                let seed = words.number("bw_seed", 0, 0, u64::MAX)?;
                match words.get("bw_timer") {
                    None => PeriodTimerStart::Random { seed },
                    Some((_, "aligned")) => PeriodTimerStart::Aligned,
                    Some((_, "period10")) => PeriodTimerStart::Period10,
                    Some((_, "random")) => PeriodTimerStart::Random { seed },
                    Some((word, _)) => {
                        return Err(error(word, Problem::NotOneOf("aligned, period10, random")));
                    }
                }
            },
            cfs_bandwidth: words.flag("cfs_bandwidth", default.cfs_bandwidth)?,
            governor: match words.get("governor") {
                None => default.governor,
                Some((word, name)) => crate::schedutil::Governor::parse(name).ok_or(error(
                    word,
                    Problem::NotOneOf("schedutil, performance, powersave"),
                ))?,
            },
            cpufreq_update: match words.get("cpufreq_update") {
                None => default.cpufreq_update,
                Some((word, name)) => crate::schedutil::UpdateSites::parse(name)
                    .ok_or(error(word, Problem::NotOneOf("pelt, switch")))?,
            },
            energy_aware: words.flag("sched_energy_aware", default.energy_aware)?,
            eas_overutilized: words.flag("eas_overutilized", default.eas_overutilized)?,
            tick_seed: words.number("tick_seed", default.tick_seed, 0, u64::MAX)?,
            features: match words.get("sched_feat") {
                None => default.features,
                Some((word, list)) => {
                    let Some(set) = policy.feature_set() else {
                        return Err(error(word, Problem::NotAFeature(policy.name(), "none")));
                    };
                    crate::fair::SchedFeatures::parse(list, set).map_err(|_| {
                        error(word, Problem::NotAFeature(policy.name(), set.names()))
                    })?
                }
            },
        })
    }

    /// The feature switches in force under the chosen policy, as Linux's
    /// features file lists them (`None` for round robin, which has none).
    pub fn features_in_force(&self) -> Option<crate::fair::features::Listed> {
        let set = self.policy.feature_set()?;
        Some(crate::fair::features::Listed(self.features, set))
    }

    /// How long after the tick grid CPU `cpu` of `nr_cpus` ticks, below one
    /// period: `skew_tick`'s `cpu × (period / 2) / nr_cpus` (see the
    /// kernel's `tick_offset_ns`), plus, with a `tick_seed`, a phase drawn
    /// from the seed and the CPU (splitmix64). The kernel and the
    /// simulator both place their ticks with it.
    pub fn tick_offset_ns(&self, cpu: usize, nr_cpus: usize) -> u64 {
        tick_offset_ns(self.tick_ns(), self.skew_tick, self.tick_seed, cpu, nr_cpus)
    }

    /// The tick period in ns.
    pub const fn tick_ns(&self) -> u64 {
        1_000_000_000 / self.hz
    }

    /// The round-robin slice in ns.
    pub const fn slice_ns(&self) -> u64 {
        self.slice_us * 1000
    }

    /// Whether uclamp is in use for a run whose workload sets a clamp or not
    /// (`scenario_sets_clamp`): `uclamp=1` and `uclamp=0` decide, `auto` follows
    /// the workload (Linux's `sched_uclamp_used`, §3.2).
    pub fn uclamp_used(&self, scenario_sets_clamp: bool) -> bool {
        self.uclamp.unwrap_or(scenario_sets_clamp)
    }

    /// The run-queue policy on `nr_cpus` CPUs: round robin with the slice, or
    /// the fair class with Linux's tunables for that many CPUs (§1.4, §1.5;
    /// EEVDF's lag clamp uses the tick). The one place `sched=` becomes a policy.
    pub fn policy_kind(&self, nr_cpus: usize) -> crate::run_queue::PolicyKind {
        use crate::fair::{CfsTunables, EevdfTunables};
        use crate::run_queue::PolicyKind;
        let cpus = u32::try_from(nr_cpus).unwrap_or(u32::MAX);
        match self.policy {
            PolicyChoice::RoundRobin => PolicyKind::RoundRobin {
                slice: self.slice_ns(),
            },
            PolicyChoice::Cfs => PolicyKind::Cfs(CfsTunables::for_cpus(cpus)),
            PolicyChoice::Eevdf => PolicyKind::Eevdf(
                EevdfTunables::for_cpus(cpus, self.tick_ns()).with_features(self.features),
            ),
            PolicyChoice::Registered(id) => PolicyKind::Registered(
                id,
                crate::policies::PolicyContext {
                    // Filled in by the run queue, which knows it.
                    max_tasks: 0,
                    slice_ns: self.slice_ns(),
                    tick_ns: self.tick_ns(),
                    nr_cpus,
                    // Filled in per CPU (`PolicyKind::for_cpu`).
                    cpu: 0,
                },
            ),
        }
    }
}

impl Default for SchedConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// [`SchedConfig::tick_offset_ns`] for a tick of `period` ns.
pub fn tick_offset_ns(
    period: u64,
    skew_tick: bool,
    tick_seed: u64,
    cpu: usize,
    nr_cpus: usize,
) -> u64 {
    let skew = if skew_tick {
        (period / 2) / nr_cpus.max(1) as u64 * cpu as u64
    } else {
        0
    };
    let jitter = if tick_seed == 0 {
        0
    } else {
        splitmix64(tick_seed ^ (cpu as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) % period
    };
    (skew + jitter) % period
}

/// splitmix64's output function: a well-mixed 64-bit value of `x`.
const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What the kernel's main task runs (`workload=`), with that workload's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Two CPU-bound tasks per CPU and a pipe ping-pong between neighbours.
    Demo,
    /// An rt-app scenario the host loaded into RAM.
    RtApp(RtAppOptions),
    /// The sched-pipe ping-pong benchmark.
    SchedPipe(SchedPipeOptions),
    /// hackbench in pipe mode.
    Hackbench(HackbenchOptions),
}

impl Workload {
    /// The name `workload=` takes.
    pub fn name(&self) -> &'static str {
        match self {
            Workload::Demo => "demo",
            Workload::RtApp(_) => "rtapp",
            Workload::SchedPipe(_) => "sched-pipe",
            Workload::Hackbench(_) => "hackbench",
        }
    }
}

/// A blob the host loaded into RAM below the kernel: its address and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadedBlob {
    /// Physical address.
    pub address: u64,
    /// Bytes.
    pub size: u64,
}

/// `workload=rtapp` options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtAppOptions {
    /// `scenario=0xADDRESS scenario_size=BYTES`: the encoded scenario (both required).
    pub scenario: LoadedBlob,
    /// `trace_switches=N`: print the first N context switches (0 = off).
    pub trace_switches: u64,
    /// `record_core=N`: record the first N calls into each CPU's scheduler
    /// driver, with their decisions, from boot, and print them at the end
    /// (for `cargo xtask replay`; 0 = off).
    pub record_core: u64,
    /// `util_sample_us=N`: sample every task's util_avg every N µs (0 = off).
    pub util_sample_us: u64,
    /// `util_warmup_ms=M`: start sampling M ms into the run.
    pub util_warmup_ms: u64,
    /// `rtapp_log_rows=N`: keep rt-app's per-task log, up to N rows (loops
    /// of a phase) per task, and print it at the end (the runner's
    /// `--rtapp-logs DIR`; 0 = off).
    pub rtapp_log_rows: u64,
}

/// `workload=sched-pipe` options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedPipeOptions {
    /// `loops=N`: round trips, at least 1.
    pub loops: u64,
    /// `pinned=0|1`: both tasks on CPU 0.
    pub pinned: bool,
    /// `depth=0..=3`: the task-group depth of both tasks.
    pub depth: u64,
    /// `quota_us=N`: the top group of the chain gets `cpu.max` = N µs per
    /// 100 ms (issue 12's cost of bandwidth accounting); 0 = no limit.
    /// Needs `depth` ≥ 1; N ≥ 1000 (Linux's smallest quota).
    pub quota_us: u64,
}

/// `workload=hackbench` options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HackbenchOptions {
    /// `groups=G`: groups of senders and receivers.
    pub groups: u64,
    /// `fds=F`: senders (and receivers) per group.
    pub fds: u64,
    /// `loops=L`: messages each sender sends to each receiver of its group.
    pub loops: u64,
}

/// How the kernel turns the machine off at the end of a run (`power_off=`):
/// which PSCI call it makes once the verdict line is out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerOff {
    /// `off` (the default): PSCI SYSTEM_OFF.
    Off,
    /// `reset`: PSCI SYSTEM_RESET, for a rig that power-cycles nothing and
    /// wants the board back at its boot loader for the next run.
    Reset,
}

impl PowerOff {
    /// The option's value.
    pub fn name(self) -> &'static str {
        match self {
            PowerOff::Off => "off",
            PowerOff::Reset => "reset",
        }
    }
}

/// Every boot option, typed, with its default when absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootOptions {
    /// The scheduler's settings (`sched= hz= hrtick= skew_tick= slice_us=
    /// uclamp= balance=`).
    pub sched: SchedConfig,
    /// `icount=0|1`: the host ran QEMU with `-icount` (reported, not acted on).
    pub icount: bool,
    /// `trace_records=N`: keep up to N trace records per CPU for the
    /// host's `--trace` (docs/tracing.md; 0 = off). A kernel built without
    /// the `trace` feature refuses N > 0.
    pub trace_records: u64,
    /// `explain=N`: record the numbers behind the first N scheduling
    /// decisions for the host's `--explain` (explain mode; 0 = off). Needs
    /// `trace_records=` (the records share its buffers).
    pub explain: u64,
    /// `dtb=0xADDRESS dtb_size=BYTES`: a device tree loaded for the `device_tree`
    /// test image to parse.
    pub loaded_dtb: Option<LoadedBlob>,
    /// `workload=` and its options.
    pub workload: Workload,
    /// `power_off=off|reset`: PSCI SYSTEM_OFF (default) or SYSTEM_RESET at
    /// the end of a run.
    pub power_off: PowerOff,
    /// `semihosting=0|1`: `0` forbids the semihosting exit even on QEMU, so
    /// that a QEMU run ends as a board's does (verdict line, then PSCI);
    /// `1` (the default) allows it where the device tree says QEMU.
    pub semihosting: bool,
    /// `psci=0|1`: `0` ignores the firmware's PSCI as if the device tree had
    /// no `/psci` (only the boot CPU runs, and the run ends by parking it):
    /// how a test shows a board without PSCI under QEMU, which always adds
    /// its own `/psci` node. `1` (the default) uses it.
    pub psci: bool,
}

/// Why a command line was refused: the option as written and what is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootOptionError<'a> {
    /// The `key=value` word (or the bare word) as written.
    pub word: &'a str,
    /// What is wrong with it.
    pub problem: Problem,
}

/// What is wrong with a boot option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A word without `=`.
    NotKeyValue,
    /// A key Fairway does not know.
    UnknownOption,
    /// The key appears a second time.
    GivenTwice,
    /// Not a decimal number (or, for addresses, not `0x` and hexadecimal digits).
    NotANumber,
    /// A number outside its range.
    OutOfRange {
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
    },
    /// Not one of the listed words.
    NotOneOf(&'static str),
    /// `sched=` names no policy, built in or registered (the message lists
    /// them all).
    NotAPolicy,
    /// An option of another workload than the one chosen.
    OtherWorkload {
        /// The workloads it belongs to.
        belongs_to: &'static str,
        /// The workload chosen.
        chosen: &'static str,
    },
    /// A required option is missing (`word` is the option that requires it).
    Missing(&'static str),
    /// The command line is longer than [`MAX_BOOTARGS`].
    TooLong(usize),
    /// A `sched_feat=` list with an item that is not a feature switch of the
    /// policy (its name, then its features' names; the message names the
    /// item).
    NotAFeature(&'static str, &'static str),
}

impl BootOptionError<'_> {
    /// What is wrong, naming the word, without the `bootargs:` prefix (the
    /// simulator says it of its own flags).
    pub fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.word.split('=').next().unwrap_or(self.word);
        match self.problem {
            Problem::TooLong(length) => write!(
                f,
                "the command line is {length} bytes, more than {MAX_BOOTARGS}"
            ),
            Problem::NotKeyValue => {
                write!(f, "'{}' is not an option=value pair", self.word)
            }
            Problem::UnknownOption => write!(f, "{}: unknown option '{key}'", self.word),
            Problem::GivenTwice => write!(f, "{}: {key} is given twice", self.word),
            Problem::NotANumber => write!(f, "{}: not a number", self.word),
            Problem::OutOfRange { min, max } => {
                write!(f, "{}: outside {min}..={max}", self.word)
            }
            Problem::NotOneOf(choices) => {
                write!(f, "{}: must be one of {choices}", self.word)
            }
            Problem::NotAPolicy => {
                write!(f, "{}: must be one of ", self.word)?;
                for (index, name) in PolicyChoice::names().enumerate() {
                    let separator = if index == 0 { "" } else { ", " };
                    write!(f, "{separator}{name}")?;
                }
                Ok(())
            }
            Problem::OtherWorkload { belongs_to, chosen } => write!(
                f,
                "{}: an option of workload={belongs_to}, not of workload={chosen}",
                self.word
            ),
            Problem::Missing(needed) => {
                write!(f, "{} needs {needed} as well", self.word)
            }
            Problem::NotAFeature(policy, "none") => {
                write!(f, "{}: sched={policy} has no feature switches", self.word)
            }
            Problem::NotAFeature(policy, features) => {
                // The first item of the list that is not one of the pick's.
                let list = self.word.split_once('=').map_or("", |(_, list)| list);
                let item = PolicyChoice::parse(policy)
                    .and_then(PolicyChoice::feature_set)
                    .and_then(|set| crate::fair::SchedFeatures::parse(list, set).err())
                    .unwrap_or(list);
                write!(
                    f,
                    "{}: '{item}' is not a feature switch of sched={policy} \
                     (one of {features}, or NO_ and one of them)",
                    self.word
                )
            }
        }
    }
}

impl fmt::Display for BootOptionError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("bootargs: ")?;
        self.describe(f)
    }
}

const RTAPP_KEYS: [&str; 7] = [
    "scenario",
    "scenario_size",
    "trace_switches",
    "record_core",
    "util_sample_us",
    "util_warmup_ms",
    "rtapp_log_rows",
];
const SCHED_PIPE_KEYS: [&str; 3] = ["pinned", "depth", "quota_us"];
const HACKBENCH_KEYS: [&str; 2] = ["groups", "fds"];

impl BootOptions {
    /// Reads a command line; every word must be a known `key=value`, given once,
    /// with a value in range, and belong to the chosen workload.
    pub fn parse(line: &str) -> Result<BootOptions, BootOptionError<'_>> {
        if line.len() > MAX_BOOTARGS {
            return Err(error(line, Problem::TooLong(line.len())));
        }
        let words = Words::split(line)?;
        let mut sched = SchedConfig::from_words(&words)?;
        let workload_name = words.get("workload").map_or("demo", |(_, name)| name);
        let workload = match workload_name {
            "demo" => {
                words.refuse(&RTAPP_KEYS, "rtapp", "demo")?;
                words.refuse(&["loops"], "sched-pipe or hackbench", "demo")?;
                words.refuse(&SCHED_PIPE_KEYS, "sched-pipe", "demo")?;
                words.refuse(&HACKBENCH_KEYS, "hackbench", "demo")?;
                Workload::Demo
            }
            "rtapp" => {
                words.refuse(&["loops"], "sched-pipe or hackbench", "rtapp")?;
                words.refuse(&SCHED_PIPE_KEYS, "sched-pipe", "rtapp")?;
                words.refuse(&HACKBENCH_KEYS, "hackbench", "rtapp")?;
                let Some(scenario) = words.blob("scenario", "scenario_size")? else {
                    let word = words.get("workload").map_or("workload=rtapp", |(w, _)| w);
                    return Err(error(
                        word,
                        Problem::Missing("scenario=0xADDRESS scenario_size=BYTES"),
                    ));
                };
                Workload::RtApp(RtAppOptions {
                    scenario,
                    trace_switches: words.number("trace_switches", 0, 0, MAX_TRACE_SWITCHES)?,
                    record_core: words.number("record_core", 0, 0, MAX_RECORD_CORE)?,
                    util_sample_us: words.number("util_sample_us", 0, 0, 10_000_000)?,
                    util_warmup_ms: words.number("util_warmup_ms", 1000, 0, 3_600_000)?,
                    rtapp_log_rows: words.number("rtapp_log_rows", 0, 0, MAX_RTAPP_LOG_ROWS)?,
                })
            }
            "sched-pipe" => {
                words.refuse(&RTAPP_KEYS, "rtapp", "sched-pipe")?;
                words.refuse(&HACKBENCH_KEYS, "hackbench", "sched-pipe")?;
                let depth = words.number("depth", 0, 0, 3)?;
                let quota_us = words.number("quota_us", 0, 0, crate::bandwidth::MAX_BW)?;
                if let Some((word, _)) = words.get("quota_us")
                    && quota_us != 0
                {
                    if quota_us < 1000 {
                        return Err(error(
                            word,
                            Problem::OutOfRange {
                                min: 1000,
                                max: crate::bandwidth::MAX_BW,
                            },
                        ));
                    }
                    if depth == 0 {
                        return Err(error(word, Problem::Missing("depth=1..3")));
                    }
                    // A quota needs bandwidth control in the run queues.
                    if let Some((off, "0")) = words.get("cfs_bandwidth") {
                        return Err(error(off, Problem::NotOneOf("1 (quota_us needs it)")));
                    }
                    sched.cfs_bandwidth = true;
                }
                Workload::SchedPipe(SchedPipeOptions {
                    loops: words.number("loops", 100_000, 1, 100_000_000)?,
                    pinned: words.flag("pinned", false)?,
                    depth,
                    quota_us,
                })
            }
            "hackbench" => {
                words.refuse(&RTAPP_KEYS, "rtapp", "hackbench")?;
                words.refuse(&SCHED_PIPE_KEYS, "sched-pipe", "hackbench")?;
                Workload::Hackbench(HackbenchOptions {
                    groups: words.number("groups", 4, 1, 40)?,
                    fds: words.number("fds", 10, 1, 20)?,
                    loops: words.number("loops", 50, 1, 100_000)?,
                })
            }
            _ => {
                let word = words.get("workload").map_or("workload", |(w, _)| w);
                return Err(error(
                    word,
                    Problem::NotOneOf("demo, rtapp, sched-pipe, hackbench"),
                ));
            }
        };
        Ok(BootOptions {
            sched,
            icount: words.flag("icount", false)?,
            trace_records: words.number("trace_records", 0, 0, MAX_TRACE_RECORDS)?,
            explain: words.number("explain", 0, 0, MAX_TRACE_RECORDS)?,
            loaded_dtb: words.blob("dtb", "dtb_size")?,
            workload,
            power_off: match words.get("power_off") {
                None | Some((_, "off")) => PowerOff::Off,
                Some((_, "reset")) => PowerOff::Reset,
                Some((word, _)) => return Err(error(word, Problem::NotOneOf("off, reset"))),
            },
            semihosting: words.flag("semihosting", true)?,
            psci: words.flag("psci", true)?,
        })
    }
}

mod display;
#[cfg(test)]
mod tests;
mod words;
