//! The kernel side of the report's line protocol: `Display` adapters that
//! write one `report: ` record each (grammar in `docs/report-format.md`; the
//! host parser is `xtask/src/run/report/`).
//!
//! The kernel formats a record into a fixed buffer with `core::fmt::Write`
//! and prints it with one defmt `println!("{=str}", ...)`. Names are written
//! with every character outside `A-Z a-z 0-9 _ - . / : +` replaced by `_`, so a
//! record always parses; empty summaries print 0 for every figure.

use core::fmt::{self, Display, Formatter, Write};

use fairway_sched::stats::{Log2Histogram, Summary};
use fairway_sched::task::{CpuId, TaskId};

#[cfg(test)]
mod tests;

/// A name as the protocol allows it (see the module doc).
struct Name<'a>(&'a str);

impl Display for Name<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("_");
        }
        for c in self.0.chars() {
            let allowed = c.is_ascii_alphanumeric() || "_-./:+".contains(c);
            f.write_char(if allowed { c } else { '_' })?;
        }
        Ok(())
    }
}

/// `report: run ...`: opens a section for one benchmark and configuration.
#[derive(Debug, Clone, Copy)]
pub struct RunLine<'a> {
    /// Benchmark name.
    pub name: &'a str,
    /// Configuration label.
    pub config: &'a str,
    /// CPUs booted.
    pub cpus: u16,
    /// Running under QEMU icount.
    pub icount: bool,
    /// Run time in ns.
    pub wall_ns: u64,
}

impl Display for RunLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "report: run name={} config={} cpus={} icount={} wall_ns={}",
            Name(self.name),
            Name(self.config),
            self.cpus,
            u8::from(self.icount),
            self.wall_ns
        )
    }
}

/// `report: clock ...`: the clocks behind a section's figures, right after
/// its `run` line: the generic-timer counter that times the run (and its
/// CNTFRQ_EL0 frequency), and the counter the cost figures count
/// (`pmccntr`, the PMU cycle counter, or `none` when the CPU has no PMU).
#[derive(Debug, Clone, Copy)]
pub struct ClockLine<'a> {
    /// The time base: the generic-timer count register read (`cntpct`).
    pub timer: &'a str,
    /// Its frequency (CNTFRQ_EL0), in Hz.
    pub timer_hz: u64,
    /// The counter of the cost figures (`pmccntr` or `none`).
    pub cycle_counter: &'a str,
}

impl Display for ClockLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "report: clock timer={} timer_hz={} cycle_counter={}",
            Name(self.timer),
            self.timer_hz,
            Name(self.cycle_counter)
        )
    }
}

/// Which CPU a cost or histogram line describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuScope {
    /// One CPU.
    Cpu(CpuId),
    /// All CPUs merged ([`merged_summary`](fairway_sched::stats::merged_summary),
    /// [`Log2Histogram::merge`]).
    All,
}

impl Display for CpuScope {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            CpuScope::Cpu(cpu) => write!(f, "{}", cpu.0),
            CpuScope::All => f.write_str("all"),
        }
    }
}

/// `report: cost ...`: one operation's net cost on one CPU (or all).
#[derive(Debug, Clone, Copy)]
pub struct CostLine<'a> {
    /// Which CPU.
    pub cpu: CpuScope,
    /// Operation name (`enqueue_task`, ...).
    pub op: &'a str,
    /// The net costs' summary.
    pub summary: &'a Summary,
    /// The bracket overhead that was subtracted.
    pub overhead: u64,
}

impl Display for CostLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let s = self.summary;
        write!(
            f,
            "report: cost cpu={} op={} count={} min={} p50={} p99={} max={} sum={} overhead={}",
            self.cpu,
            Name(self.op),
            s.count,
            s.min.unwrap_or(0),
            s.p50.unwrap_or(0),
            s.p99.unwrap_or(0),
            s.max.unwrap_or(0),
            s.sum,
            self.overhead
        )
    }
}

/// What a histogram line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistogramOwner {
    /// The cost of `op` on a CPU (or all).
    Cost(CpuScope),
    /// A task's wake-up latency (`op` is `wakeup_latency`).
    Task(TaskId),
}

/// `report: hist ...`: the non-empty buckets as `index:count`, or `-`.
#[derive(Debug, Clone, Copy)]
pub struct HistogramLine<'a> {
    /// What the histogram belongs to.
    pub owner: HistogramOwner,
    /// Operation name, `wakeup_latency` for tasks.
    pub op: &'a str,
    /// The histogram.
    pub histogram: &'a Log2Histogram,
}

impl Display for HistogramLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.owner {
            HistogramOwner::Cost(cpu) => write!(f, "report: hist cpu={cpu}")?,
            HistogramOwner::Task(task) => write!(f, "report: hist task={}", task.0)?,
        }
        write!(f, " op={} buckets=", Name(self.op))?;
        let mut first = true;
        for (index, count) in self.histogram.non_empty() {
            let separator = if first { "" } else { "," };
            write!(f, "{separator}{index}:{count}")?;
            first = false;
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

/// `report: task ...`: one task's results; `wakeups` is the latency count.
#[derive(Debug, Clone, Copy)]
pub struct TaskLine<'a> {
    /// Task id.
    pub id: TaskId,
    /// Task name.
    pub name: &'a str,
    /// The CPU it last ran on.
    pub cpu: CpuId,
    /// Time running.
    pub runtime_ns: u64,
    /// Time runnable but waiting.
    pub wait_ns: u64,
    /// Wake-up-to-run latencies.
    pub latency: &'a Summary,
    /// Periods whose work did not finish in time.
    pub missed_periods: u64,
    /// Wake-ups made but not yet run when the run ended (0 or 1): the task was
    /// woken and waits for a CPU. Neither in `wakeups`, which counts wake-ups run
    /// (their latencies), nor in `missed_periods`; it tells a starved task (1)
    /// from one whose wake-up never came (0, asleep).
    pub pending_wakeups: u64,
    /// Moves to another CPU.
    pub migrations: u64,
    /// Times switched in.
    pub switches: u64,
}

impl Display for TaskLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let l = self.latency;
        write!(
            f,
            "report: task id={} name={} cpu={} runtime_ns={} wait_ns={} wakeups={} \
             lat_p50_ns={} lat_p99_ns={} lat_max_ns={} missed_periods={} pending_wakeups={} migrations={} \
             switches={}",
            self.id.0,
            Name(self.name),
            self.cpu.0,
            self.runtime_ns,
            self.wait_ns,
            l.count,
            l.p50.unwrap_or(0),
            l.p99.unwrap_or(0),
            l.max.unwrap_or(0),
            self.missed_periods,
            self.pending_wakeups,
            self.migrations,
            self.switches
        )
    }
}

/// `report: cpu ...`: one CPU's results.
#[derive(Debug, Clone, Copy)]
pub struct CpuLine {
    /// CPU id.
    pub id: CpuId,
    /// Time running tasks.
    pub busy_ns: u64,
    /// Time idle.
    pub idle_ns: u64,
    /// Context switches.
    pub switches: u64,
}

impl Display for CpuLine {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "report: cpu id={} busy_ns={} idle_ns={} switches={}",
            self.id.0, self.busy_ns, self.idle_ns, self.switches
        )
    }
}

/// `report: group ...`: one limited task group's `cpu.max` and `cpu.stat`.
///
/// The figures are cgroup v2's, in µs: the kernel converts its ns counters
/// (truncating division by 1000). `local_throttled_usec` holds one entry per
/// CPU, in CPU order, as many as the `run` line's `cpus` (the host checks);
/// an empty slice is written `-`.
#[derive(Debug, Clone, Copy)]
pub struct GroupLine<'a> {
    /// The group's path (`/a`, `/a/b`), written as a name.
    pub path: &'a str,
    /// `cpu.max`'s quota per period, in µs; `None` (no limit) is written `max`.
    pub quota_us: Option<u64>,
    /// `cpu.max`'s period, in µs.
    pub period_us: u64,
    /// `cpu.max.burst`, in µs.
    pub burst_us: u64,
    /// `cpu.stat`'s `nr_periods`: periods in which the group was active.
    pub nr_periods: u64,
    /// `cpu.stat`'s `nr_throttled`: of those, periods in which some CPU's run
    /// queue of the group was throttled.
    pub nr_throttled: u64,
    /// `cpu.stat`'s `throttled_usec`: time throttled, summed over the CPUs.
    pub throttled_usec: u64,
    /// `cpu.stat`'s `nr_bursts`: periods that used burst.
    pub nr_bursts: u64,
    /// `cpu.stat`'s `burst_usec`: burst used, summed over those periods.
    pub burst_usec: u64,
    /// `cpu.stat.local`'s `throttled_usec` of each CPU, in CPU order: the time
    /// this group itself was throttled there.
    pub local_throttled_usec: &'a [u64],
}

impl Display for GroupLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "report: group path={} quota_us=", Name(self.path))?;
        match self.quota_us {
            Some(quota) => write!(f, "{quota}")?,
            None => f.write_str("max")?,
        }
        write!(
            f,
            " period_us={} burst_us={} nr_periods={} nr_throttled={} throttled_usec={} \
             nr_bursts={} burst_usec={} local_throttled_usec=",
            self.period_us,
            self.burst_us,
            self.nr_periods,
            self.nr_throttled,
            self.throttled_usec,
            self.nr_bursts,
            self.burst_usec
        )?;
        if self.local_throttled_usec.is_empty() {
            return f.write_str("-");
        }
        for (index, usec) in self.local_throttled_usec.iter().enumerate() {
            let separator = if index == 0 { "" } else { "," };
            write!(f, "{separator}{usec}")?;
        }
        Ok(())
    }
}

/// `report: metric ...`: a named figure (unit in the name).
#[derive(Debug, Clone, Copy)]
pub struct MetricLine<'a> {
    /// Name, e.g. `ops_per_second`.
    pub name: &'a str,
    /// Value.
    pub value: u64,
}

impl Display for MetricLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "report: metric name={} value={}",
            Name(self.name),
            self.value
        )
    }
}

/// `report: end`: closes the section.
#[derive(Debug, Clone, Copy)]
pub struct EndLine;

impl Display for EndLine {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("report: end")
    }
}
