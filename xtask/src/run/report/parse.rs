//! The line grammar of the report protocol (see the parent module doc):
//! finding `report: ` lines, splitting `key=value` pairs, checking each record.
//! It also defines [`Group`], the `group` record (re-exported by the parent).

use super::{
    BUCKETS, Clock, Cost, CpuRecord, CpuScope, Histogram, Metric, Report, Run, TaskRecord,
};

/// The marker that starts a report record.
const MARKER: &str = "report: ";

/// The record kinds.
const KINDS: [&str; 9] = [
    "run", "clock", "cost", "hist", "task", "cpu", "group", "metric", "end",
];

/// A limited task group's `cpu.max` and `cpu.stat` (a `group` record), in µs
/// as cgroup v2 writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The group's path (`/a`, `/a/b`).
    pub path: String,
    /// `cpu.max`'s quota per period; `None` for `max` (no limit).
    pub quota_us: Option<u64>,
    /// `cpu.max`'s period.
    pub period_us: u64,
    /// `cpu.max.burst`.
    pub burst_us: u64,
    /// Periods in which the group was active (`nr_periods`).
    pub nr_periods: u64,
    /// Of those, periods in which some CPU's run queue was throttled
    /// (`nr_throttled`).
    pub nr_throttled: u64,
    /// Time throttled, summed over the CPUs (`throttled_usec`).
    pub throttled_usec: u64,
    /// Periods that used burst (`nr_bursts`).
    pub nr_bursts: u64,
    /// Burst used (`burst_usec`).
    pub burst_usec: u64,
    /// Per CPU, in CPU order: the time this group itself was throttled there
    /// (`cpu.stat.local`'s `throttled_usec`).
    pub local_throttled_usec: Vec<u64>,
}

impl Group {
    /// `cpu.max` as cgroup v2 writes it: `QUOTA PERIOD` or `max PERIOD`.
    pub fn cpu_max(&self) -> String {
        match self.quota_us {
            Some(quota) => format!("{quota} {}", self.period_us),
            None => format!("max {}", self.period_us),
        }
    }
}

/// The record part of `line` (after the marker), or `None` for a log line.
/// The marker counts at the start of the line or after a space.
fn payload(line: &str) -> Option<&str> {
    line.match_indices(MARKER)
        .find(|&(at, _)| at == 0 || line[..at].ends_with([' ', '\t']))
        .map(|(at, _)| &line[at + MARKER.len()..])
}

/// A record's `key=value` pairs, each taken at most once.
struct Fields<'a> {
    pairs: Vec<(&'a str, &'a str, bool)>,
}

fn is_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

fn is_name(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:+".contains(&b))
}

impl<'a> Fields<'a> {
    fn new(tokens: impl Iterator<Item = &'a str>) -> Result<Self, String> {
        let mut pairs: Vec<(&str, &str, bool)> = Vec::new();
        for token in tokens {
            let (key, value) = token
                .split_once('=')
                .ok_or_else(|| format!("'{token}' is not key=value"))?;
            if !is_key(key) {
                return Err(format!("'{key}' is not a key (a-z, 0-9, _)"));
            }
            if value.is_empty() {
                return Err(format!("key '{key}' has an empty value"));
            }
            if !value.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(format!(
                    "key '{key}': value '{value}' is not printable ASCII"
                ));
            }
            if pairs.iter().any(|&(k, _, _)| k == key) {
                return Err(format!("key '{key}' given twice"));
            }
            pairs.push((key, value, false));
        }
        Ok(Self { pairs })
    }

    fn has(&self, key: &str) -> bool {
        self.pairs.iter().any(|&(k, _, _)| k == key)
    }

    fn raw(&mut self, key: &str) -> Result<&'a str, String> {
        let pair = self
            .pairs
            .iter_mut()
            .find(|(k, _, _)| *k == key)
            .ok_or_else(|| format!("missing key '{key}'"))?;
        pair.2 = true;
        Ok(pair.1)
    }

    fn name(&mut self, key: &str) -> Result<String, String> {
        let value = self.raw(key)?;
        if !is_name(value) {
            return Err(format!(
                "{key}={value}: a name is letters, digits and _ - . / : +"
            ));
        }
        Ok(value.to_string())
    }

    fn number(&mut self, key: &str) -> Result<u64, String> {
        let value = self.raw(key)?;
        let digits = value.bytes().all(|b| b.is_ascii_digit());
        digits
            .then(|| value.parse::<u64>().ok())
            .flatten()
            .ok_or_else(|| format!("{key}={value}: not a decimal u64"))
    }

    /// A u64, or the word `max` (`None`), as in `cpu.max`.
    fn number_or_max(&mut self, key: &str) -> Result<Option<u64>, String> {
        if self.raw(key)? == "max" {
            return Ok(None);
        }
        self.number(key)
            .map(Some)
            .map_err(|message| format!("{message} or max"))
    }

    /// `-` (empty) or comma-separated u64s.
    fn numbers(&mut self, key: &str) -> Result<Vec<u64>, String> {
        let value = self.raw(key)?;
        if value == "-" {
            return Ok(Vec::new());
        }
        value
            .split(',')
            .map(|item| {
                let digits = !item.is_empty() && item.bytes().all(|b| b.is_ascii_digit());
                digits
                    .then(|| item.parse::<u64>().ok())
                    .flatten()
                    .ok_or_else(|| format!("{key}: '{item}' is not a decimal u64"))
            })
            .collect()
    }

    fn flag(&mut self, key: &str) -> Result<bool, String> {
        match self.raw(key)? {
            "0" => Ok(false),
            "1" => Ok(true),
            other => Err(format!("{key}={other}: must be 0 or 1")),
        }
    }

    fn cpu(&mut self, key: &str) -> Result<CpuScope, String> {
        if self.raw(key)? == "all" {
            return Ok(CpuScope::All);
        }
        self.number(key).map(CpuScope::Cpu)
    }

    /// Rejects keys the record kind does not define.
    fn finish(self, kind: &str) -> Result<(), String> {
        match self.pairs.iter().find(|&&(_, _, used)| !used) {
            Some((key, _, _)) => Err(format!("'{kind}' has no key '{key}'")),
            None => Ok(()),
        }
    }
}

/// Parses `buckets=`: `-` or `index:count,...` with increasing indices < 64.
fn parse_buckets(text: &str) -> Result<Histogram, String> {
    let mut histogram = Histogram::default();
    if text == "-" {
        return Ok(histogram);
    }
    for item in text.split(',') {
        let parsed = item.split_once(':').and_then(|(index, count)| {
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            (digits(index) && digits(count))
                .then(|| Some((index.parse::<u32>().ok()?, count.parse::<u64>().ok()?)))
                .flatten()
        });
        let (index, count) =
            parsed.ok_or_else(|| format!("buckets: '{item}' is not index:count"))?;
        if index as usize >= BUCKETS {
            return Err(format!("buckets: index {index} is not below {BUCKETS}"));
        }
        if histogram
            .buckets
            .last()
            .is_some_and(|&(last, _)| last >= index)
        {
            return Err(format!(
                "buckets: index {index} is not above the one before"
            ));
        }
        histogram.buckets.push((index, count));
    }
    Ok(histogram)
}

fn check_cpu(run: &Run, key: &str, cpu: u64) -> Result<(), String> {
    if cpu >= run.cpus {
        return Err(format!("{key}={cpu}: the run has {} CPUs", run.cpus));
    }
    Ok(())
}

fn check_order(what: &str, figures: &[(&str, u64)]) -> Result<(), String> {
    for pair in figures.windows(2) {
        if pair[0].1 > pair[1].1 {
            return Err(format!(
                "{what}: {}={} is above {}={}",
                pair[0].0, pair[0].1, pair[1].0, pair[1].1
            ));
        }
    }
    Ok(())
}

/// Applies one record to the open run (or opens/closes one): `run` opens
/// one, every other kind needs one open and goes to its own function.
fn apply(
    kind: &str,
    fields: Fields,
    open: &mut Option<Run>,
    report: &mut Report,
) -> Result<(), String> {
    if kind == "run" {
        return open_run(fields, open);
    }
    let run = open
        .as_mut()
        .ok_or_else(|| format!("'{kind}' outside a run (no 'run' line before it)"))?;
    match kind {
        "end" => {
            fields.finish(kind)?;
            report.runs.extend(open.take());
        }
        "clock" => apply_clock(fields, run)?,
        "cost" => apply_cost(fields, run)?,
        "hist" => apply_hist(fields, run)?,
        "task" => apply_task(fields, run)?,
        "cpu" => apply_cpu(fields, run)?,
        "group" => apply_group(fields, run)?,
        "metric" => apply_metric(fields, run)?,
        other => return Err(format!("unknown record kind '{other}'")),
    }
    Ok(())
}

/// A `run` record: opens a run, if the one before it was closed.
fn open_run(mut fields: Fields, open: &mut Option<Run>) -> Result<(), String> {
    if let Some(run) = open {
        return Err(format!(
            "run {} ({}) has no 'end' line",
            run.name, run.config
        ));
    }
    let run = Run {
        name: fields.name("name")?,
        config: fields.name("config")?,
        cpus: fields.number("cpus")?,
        icount: fields.flag("icount")?,
        wall_ns: fields.number("wall_ns")?,
        clock: None,
        costs: Vec::new(),
        cpu_records: Vec::new(),
        tasks: Vec::new(),
        metrics: Vec::new(),
        groups: Vec::new(),
    };
    fields.finish("run")?;
    *open = Some(run);
    Ok(())
}

/// A `clock` record: the run's timer and cycle counter, once.
fn apply_clock(mut fields: Fields, run: &mut Run) -> Result<(), String> {
    let clock = Clock {
        timer: fields.name("timer")?,
        timer_hz: fields.number("timer_hz")?,
        cycle_counter: fields.name("cycle_counter")?,
    };
    fields.finish("clock")?;
    if run.clock.is_some() {
        return Err("clock given twice in one run".to_string());
    }
    run.clock = Some(clock);
    Ok(())
}

/// A `cost` record: one operation's cost on one CPU (or all), its
/// percentiles in order, once per CPU and operation.
fn apply_cost(mut fields: Fields, run: &mut Run) -> Result<(), String> {
    let cost = Cost {
        cpu: fields.cpu("cpu")?,
        op: fields.name("op")?,
        count: fields.number("count")?,
        min: fields.number("min")?,
        p50: fields.number("p50")?,
        p99: fields.number("p99")?,
        max: fields.number("max")?,
        sum: fields.number("sum")?,
        overhead: fields.number("overhead")?,
        histogram: None,
    };
    fields.finish("cost")?;
    if let CpuScope::Cpu(cpu) = cost.cpu {
        check_cpu(run, "cpu", cpu)?;
    }
    let figures = [
        ("min", cost.min),
        ("p50", cost.p50),
        ("p99", cost.p99),
        ("max", cost.max),
    ];
    check_order("cost", &figures)?;
    if run
        .costs
        .iter()
        .any(|c| c.cpu == cost.cpu && c.op == cost.op)
    {
        return Err(format!("cost for op={} given twice on that CPU", cost.op));
    }
    run.costs.push(cost);
    Ok(())
}

/// A `hist` record: the histogram of a cost (`cpu=`) or of a task's wake-up
/// latency (`task=`) given before it, its buckets adding up to the count.
fn apply_hist(mut fields: Fields, run: &mut Run) -> Result<(), String> {
    let op = fields.name("op")?;
    let histogram = parse_buckets(fields.raw("buckets")?)?;
    let (owner, slot, expected) = match (fields.has("cpu"), fields.has("task")) {
        (true, false) => {
            let cpu = fields.cpu("cpu")?;
            let cost = run
                .costs
                .iter_mut()
                .find(|c| c.cpu == cpu && c.op == op)
                .ok_or_else(|| format!("hist op={op}: no cost line before it"))?;
            ("cost count", &mut cost.histogram, cost.count)
        }
        (false, true) => {
            let id = fields.number("task")?;
            if op != "wakeup_latency" {
                return Err(format!("hist task={id}: op={op}, expected wakeup_latency"));
            }
            let task = run
                .tasks
                .iter_mut()
                .find(|t| t.id == id)
                .ok_or_else(|| format!("hist task={id}: no task line before it"))?;
            ("task wakeups", &mut task.latency_histogram, task.wakeups)
        }
        _ => return Err("hist needs exactly one of cpu= and task=".into()),
    };
    fields.finish("hist")?;
    if slot.is_some() {
        return Err(format!("hist op={op} given twice"));
    }
    if histogram.total() != expected {
        return Err(format!(
            "hist op={op}: buckets add up to {}, the {owner} is {expected}",
            histogram.total()
        ));
    }
    *slot = Some(histogram);
    Ok(())
}

/// A `task` record: one task's figures, its latencies in order, once per id.
fn apply_task(mut fields: Fields, run: &mut Run) -> Result<(), String> {
    let task = TaskRecord {
        id: fields.number("id")?,
        name: fields.name("name")?,
        cpu: fields.number("cpu")?,
        runtime_ns: fields.number("runtime_ns")?,
        wait_ns: fields.number("wait_ns")?,
        wakeups: fields.number("wakeups")?,
        lat_p50_ns: fields.number("lat_p50_ns")?,
        lat_p99_ns: fields.number("lat_p99_ns")?,
        lat_max_ns: fields.number("lat_max_ns")?,
        missed_periods: fields.number("missed_periods")?,
        pending_wakeups: fields.number("pending_wakeups")?,
        migrations: fields.number("migrations")?,
        switches: fields.number("switches")?,
        latency_histogram: None,
    };
    fields.finish("task")?;
    check_cpu(run, "cpu", task.cpu)?;
    let figures = [
        ("lat_p50_ns", task.lat_p50_ns),
        ("lat_p99_ns", task.lat_p99_ns),
        ("lat_max_ns", task.lat_max_ns),
    ];
    check_order("task", &figures)?;
    if run.tasks.iter().any(|t| t.id == task.id) {
        return Err(format!("task id={} given twice", task.id));
    }
    run.tasks.push(task);
    Ok(())
}

/// A `cpu` record: one CPU's busy and idle time, once per CPU of the run.
fn apply_cpu(mut fields: Fields, run: &mut Run) -> Result<(), String> {
    let cpu = CpuRecord {
        id: fields.number("id")?,
        busy_ns: fields.number("busy_ns")?,
        idle_ns: fields.number("idle_ns")?,
        switches: fields.number("switches")?,
    };
    fields.finish("cpu")?;
    check_cpu(run, "id", cpu.id)?;
    if run.cpu_records.iter().any(|c| c.id == cpu.id) {
        return Err(format!("cpu id={} given twice", cpu.id));
    }
    run.cpu_records.push(cpu);
    Ok(())
}

/// A `group` record: a limited group's `cpu.max` and `cpu.stat`, one local
/// figure per CPU of the run, once per path.
fn apply_group(mut fields: Fields, run: &mut Run) -> Result<(), String> {
    let group = Group {
        path: fields.name("path")?,
        quota_us: fields.number_or_max("quota_us")?,
        period_us: fields.number("period_us")?,
        burst_us: fields.number("burst_us")?,
        nr_periods: fields.number("nr_periods")?,
        nr_throttled: fields.number("nr_throttled")?,
        throttled_usec: fields.number("throttled_usec")?,
        nr_bursts: fields.number("nr_bursts")?,
        burst_usec: fields.number("burst_usec")?,
        local_throttled_usec: fields.numbers("local_throttled_usec")?,
    };
    fields.finish("group")?;
    if !group.path.starts_with('/') {
        return Err(format!("path={}: a group path starts with '/'", group.path));
    }
    let figures = [
        ("nr_throttled", group.nr_throttled),
        ("nr_periods", group.nr_periods),
    ];
    check_order("group", &figures)?;
    let entries = group.local_throttled_usec.len();
    if entries as u64 != run.cpus {
        return Err(format!(
            "local_throttled_usec: {entries} entries, the run has {} CPUs",
            run.cpus
        ));
    }
    if run.groups.iter().any(|g| g.path == group.path) {
        return Err(format!("group path={} given twice", group.path));
    }
    run.groups.push(group);
    Ok(())
}

/// A `metric` record: one named figure, once per name.
fn apply_metric(mut fields: Fields, run: &mut Run) -> Result<(), String> {
    let metric = Metric {
        name: fields.name("name")?,
        value: fields.number("value")?,
    };
    fields.finish("metric")?;
    if run.metrics.iter().any(|m| m.name == metric.name) {
        return Err(format!("metric name={} given twice", metric.name));
    }
    run.metrics.push(metric);
    Ok(())
}

/// Parses every `report: ` line of a decoded transcript (other lines are
/// skipped). Errors name the 1-based line number and quote the line.
/// A transcript without report lines gives an empty report.
pub fn parse_report(lines: &[String]) -> Result<Report, String> {
    let mut report = Report::default();
    let mut open: Option<Run> = None;
    for (number, line) in lines.iter().enumerate() {
        let Some(record) = payload(line) else {
            continue;
        };
        let mut tokens = record.split_whitespace();
        let result = match tokens.next() {
            None => Err("a report line without a record kind".to_string()),
            Some(kind) if !KINDS.contains(&kind) => Err(format!(
                "unknown record kind '{kind}' (expected run, clock, cost, hist, task, cpu, group, metric or end)"
            )),
            Some(kind) => {
                Fields::new(tokens).and_then(|fields| apply(kind, fields, &mut open, &mut report))
            }
        };
        result.map_err(|message| format!("line {}: {message}: {line}", number + 1))?;
    }
    if let Some(run) = open {
        return Err(format!(
            "run {} ({}) has no 'end' line: transcript cut short?",
            run.name, run.config
        ));
    }
    Ok(report)
}
