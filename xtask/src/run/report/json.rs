//! The JSON form of a [`Report`]: borrowed mirror structs whose field order is
//! the document's key order, so equal reports give byte-identical text.

use serde::Serialize;
use serde::ser::Serializer;

use super::{
    Cost, CpuRecord, CpuScope, FORMAT, Group, Histogram, Metric, OpAggregate, Report, Run,
    TaskRecord, VERSION,
};

impl Serialize for CpuScope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CpuScope::Cpu(cpu) => serializer.serialize_u64(*cpu),
            CpuScope::All => serializer.serialize_str("all"),
        }
    }
}

#[derive(Serialize)]
struct Bucket {
    bucket: u32,
    low: u64,
    high: u64,
    count: u64,
}

fn buckets(histogram: &Option<Histogram>) -> Option<Vec<Bucket>> {
    histogram.as_ref().map(|h| {
        h.buckets
            .iter()
            .map(|&(bucket, count)| {
                let (low, high) = Histogram::range(bucket);
                Bucket {
                    bucket,
                    low,
                    high,
                    count,
                }
            })
            .collect()
    })
}

#[derive(Serialize)]
struct CostJson<'a> {
    cpu: CpuScope,
    op: &'a str,
    count: u64,
    min: u64,
    p50: u64,
    p99: u64,
    max: u64,
    sum: u64,
    overhead: u64,
    histogram: Option<Vec<Bucket>>,
}

#[derive(Serialize)]
struct OpJson<'a> {
    op: &'a str,
    cpus: u64,
    count: u64,
    min: u64,
    p50: Option<u64>,
    p99: Option<u64>,
    max: u64,
    sum: u64,
    histogram: Option<Vec<Bucket>>,
}

#[derive(Serialize)]
struct TaskJson<'a> {
    id: u64,
    name: &'a str,
    cpu: u64,
    runtime_ns: u64,
    wait_ns: u64,
    wakeups: u64,
    lat_p50_ns: u64,
    lat_p99_ns: u64,
    lat_max_ns: u64,
    missed_periods: u64,
    pending_wakeups: u64,
    migrations: u64,
    switches: u64,
    latency_histogram: Option<Vec<Bucket>>,
}

#[derive(Serialize)]
struct CpuJson {
    id: u64,
    busy_ns: u64,
    idle_ns: u64,
    switches: u64,
}

#[derive(Serialize)]
struct MetricJson<'a> {
    name: &'a str,
    value: u64,
}

/// A `group` record; `quota_us` is null for `max`.
#[derive(Serialize)]
struct GroupJson<'a> {
    path: &'a str,
    quota_us: Option<u64>,
    period_us: u64,
    burst_us: u64,
    nr_periods: u64,
    nr_throttled: u64,
    throttled_usec: u64,
    nr_bursts: u64,
    burst_usec: u64,
    local_throttled_usec: &'a [u64],
}

/// A `clock` record.
#[derive(Serialize)]
struct ClockJson<'a> {
    timer: &'a str,
    timer_hz: u64,
    cycle_counter: &'a str,
}

#[derive(Serialize)]
struct RunJson<'a> {
    name: &'a str,
    config: &'a str,
    cpus: u64,
    icount: bool,
    counter_unit: &'static str,
    wall_ns: u64,
    clock: Option<ClockJson<'a>>,
    costs: Vec<CostJson<'a>>,
    cost_by_op: Vec<OpJson<'a>>,
    cpu_stats: Vec<CpuJson>,
    tasks: Vec<TaskJson<'a>>,
    metrics: Vec<MetricJson<'a>>,
    groups: Vec<GroupJson<'a>>,
}

#[derive(Serialize)]
struct ReportJson<'a> {
    format: &'static str,
    version: u32,
    runs: Vec<RunJson<'a>>,
}

fn cost(c: &Cost) -> CostJson<'_> {
    CostJson {
        cpu: c.cpu,
        op: &c.op,
        count: c.count,
        min: c.min,
        p50: c.p50,
        p99: c.p99,
        max: c.max,
        sum: c.sum,
        overhead: c.overhead,
        histogram: buckets(&c.histogram),
    }
}

fn op(a: &OpAggregate) -> OpJson<'_> {
    OpJson {
        op: &a.op,
        cpus: a.cpus,
        count: a.count,
        min: a.min,
        p50: a.p50,
        p99: a.p99,
        max: a.max,
        sum: a.sum,
        histogram: buckets(&a.histogram),
    }
}

fn task(t: &TaskRecord) -> TaskJson<'_> {
    TaskJson {
        id: t.id,
        name: &t.name,
        cpu: t.cpu,
        runtime_ns: t.runtime_ns,
        wait_ns: t.wait_ns,
        wakeups: t.wakeups,
        lat_p50_ns: t.lat_p50_ns,
        lat_p99_ns: t.lat_p99_ns,
        lat_max_ns: t.lat_max_ns,
        missed_periods: t.missed_periods,
        pending_wakeups: t.pending_wakeups,
        migrations: t.migrations,
        switches: t.switches,
        latency_histogram: buckets(&t.latency_histogram),
    }
}

fn cpu(c: &CpuRecord) -> CpuJson {
    CpuJson {
        id: c.id,
        busy_ns: c.busy_ns,
        idle_ns: c.idle_ns,
        switches: c.switches,
    }
}

fn metric(m: &Metric) -> MetricJson<'_> {
    MetricJson {
        name: &m.name,
        value: m.value,
    }
}

fn group(g: &Group) -> GroupJson<'_> {
    GroupJson {
        path: &g.path,
        quota_us: g.quota_us,
        period_us: g.period_us,
        burst_us: g.burst_us,
        nr_periods: g.nr_periods,
        nr_throttled: g.nr_throttled,
        throttled_usec: g.throttled_usec,
        nr_bursts: g.nr_bursts,
        burst_usec: g.burst_usec,
        local_throttled_usec: &g.local_throttled_usec,
    }
}

impl Report {
    /// The report as pretty-printed JSON (newline-terminated); the layout is
    /// documented in `docs/report-format.md`.
    pub fn to_json(&self) -> String {
        let aggregates: Vec<Vec<OpAggregate>> = self.runs.iter().map(Run::cost_by_op).collect();
        let document = ReportJson {
            format: FORMAT,
            version: VERSION,
            runs: self
                .runs
                .iter()
                .zip(&aggregates)
                .map(|(run, by_op)| RunJson {
                    name: &run.name,
                    config: &run.config,
                    cpus: run.cpus,
                    icount: run.icount,
                    counter_unit: run.counter_unit(),
                    wall_ns: run.wall_ns,
                    clock: run.clock.as_ref().map(|clock| ClockJson {
                        timer: &clock.timer,
                        timer_hz: clock.timer_hz,
                        cycle_counter: &clock.cycle_counter,
                    }),
                    costs: run.costs.iter().map(cost).collect(),
                    cost_by_op: by_op.iter().map(op).collect(),
                    cpu_stats: run.cpu_records.iter().map(cpu).collect(),
                    tasks: run.tasks.iter().map(task).collect(),
                    metrics: run.metrics.iter().map(metric).collect(),
                    groups: run.groups.iter().map(group).collect(),
                })
                .collect(),
        };
        let mut text = serde_json::to_string_pretty(&document)
            .expect("plain structs of strings and integers always serialise");
        text.push('\n');
        text
    }
}
