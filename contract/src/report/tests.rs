//! Tests of the report lines against the example in `docs/report-format.md`
//! (the merged summary's tests are the statistics', in `fairway-sched`).

use alloc::string::ToString;

use fairway_sched::stats::{CostStats, LatencyStats};

use super::*;

#[test]
fn lines_match_the_documented_example() {
    // docs/report-format.md, "Example". The costs 100, 120, 120, 300 give
    // count 4, sum 640; sorted, p50 is rank ceil(0.5 * 4) = 2 -> 120 and p99
    // rank ceil(0.99 * 4) = 4 -> 300; buckets 100, 120 -> 6, 300 -> 8.
    let run = RunLine {
        name: "sched-pipe",
        config: "depth0-uclamp-off",
        cpus: 2,
        icount: true,
        wall_ns: 5_000_000,
    };
    assert_eq!(
        run.to_string(),
        "report: run name=sched-pipe config=depth0-uclamp-off cpus=2 icount=1 wall_ns=5000000"
    );
    let mut cost = CostStats::new("enqueue_task", 16).unwrap();
    cost.set_overhead(22);
    [122, 142, 142, 322]
        .iter()
        .for_each(|&raw| cost.record(raw));
    let summary = cost.summary();
    let line = CostLine {
        cpu: CpuScope::Cpu(CpuId(0)),
        op: cost.name,
        summary: &summary,
        overhead: cost.overhead(),
    };
    assert_eq!(
        line.to_string(),
        "report: cost cpu=0 op=enqueue_task count=4 min=100 p50=120 p99=300 max=300 sum=640 overhead=22"
    );
    let hist = HistogramLine {
        owner: HistogramOwner::Cost(CpuScope::Cpu(CpuId(0))),
        op: cost.name,
        histogram: &cost.histogram,
    };
    assert_eq!(
        hist.to_string(),
        "report: hist cpu=0 op=enqueue_task buckets=6:3,8:1"
    );
    // Latencies 2000, 2000, 5000: p50 rank 2 -> 2000, p99 rank 3 -> 5000;
    // 2000 is in [1024, 2047] (bucket 10), 5000 in [4096, 8191] (bucket 12).
    let mut latency = LatencyStats::new(16).unwrap();
    [2000, 5000, 2000].iter().for_each(|&ns| latency.record(ns));
    let summary = latency.summary();
    let task = TaskLine {
        id: TaskId(1),
        name: "ping",
        cpu: CpuId(0),
        runtime_ns: 2_000_000,
        wait_ns: 100_000,
        latency: &summary,
        missed_periods: 0,
        pending_wakeups: 1,
        migrations: 1,
        switches: 4,
    };
    assert_eq!(
        task.to_string(),
        "report: task id=1 name=ping cpu=0 runtime_ns=2000000 wait_ns=100000 wakeups=3 \
         lat_p50_ns=2000 lat_p99_ns=5000 lat_max_ns=5000 missed_periods=0 pending_wakeups=1 migrations=1 \
         switches=4"
    );
    let hist = HistogramLine {
        owner: HistogramOwner::Task(TaskId(1)),
        op: "wakeup_latency",
        histogram: &latency.histogram,
    };
    assert_eq!(
        hist.to_string(),
        "report: hist task=1 op=wakeup_latency buckets=10:2,12:1"
    );
    let cpu = CpuLine {
        id: CpuId(0),
        busy_ns: 4_000_000,
        idle_ns: 1_000_000,
        switches: 7,
    };
    assert_eq!(
        cpu.to_string(),
        "report: cpu id=0 busy_ns=4000000 idle_ns=1000000 switches=7"
    );
    let metric = MetricLine {
        name: "ops_per_second",
        value: 200_000,
    };
    assert_eq!(
        metric.to_string(),
        "report: metric name=ops_per_second value=200000"
    );
    assert_eq!(EndLine.to_string(), "report: end");
}

#[test]
fn empty_figures_and_bad_names_still_parse() {
    let empty = Summary::default();
    let line = CostLine {
        cpu: CpuScope::All,
        op: "pelt update",
        summary: &empty,
        overhead: 0,
    };
    assert_eq!(
        line.to_string(),
        "report: cost cpu=all op=pelt_update count=0 min=0 p50=0 p99=0 max=0 sum=0 overhead=0"
    );
    let histogram = Log2Histogram::new();
    let hist = HistogramLine {
        owner: HistogramOwner::Cost(CpuScope::All),
        op: "",
        histogram: &histogram,
    };
    assert_eq!(hist.to_string(), "report: hist cpu=all op=_ buckets=-");
    let metric = MetricLine {
        name: "energy=µJ x",
        value: 1,
    };
    assert_eq!(
        metric.to_string(),
        "report: metric name=energy__J_x value=1"
    );
}

#[test]
fn group_line_matches_the_documented_example() {
    // docs/report-format.md, "group" and "Example": 25 ms per 100 ms on two
    // CPUs, a task that would use a whole CPU throttled for 75 ms in each of
    // 10 periods, on CPU 0.
    let group = GroupLine {
        path: "/a",
        quota_us: Some(25_000),
        period_us: 100_000,
        burst_us: 0,
        nr_periods: 10,
        nr_throttled: 10,
        throttled_usec: 750_000,
        nr_bursts: 0,
        burst_usec: 0,
        local_throttled_usec: &[750_000, 0],
    };
    assert_eq!(
        group.to_string(),
        "report: group path=/a quota_us=25000 period_us=100000 burst_us=0 nr_periods=10 \
         nr_throttled=10 throttled_usec=750000 nr_bursts=0 burst_usec=0 \
         local_throttled_usec=750000,0"
    );
    let unlimited = GroupLine {
        path: "/a/b c",
        quota_us: None,
        local_throttled_usec: &[],
        ..group
    };
    assert_eq!(
        unlimited.to_string(),
        "report: group path=/a/b_c quota_us=max period_us=100000 burst_us=0 nr_periods=10 \
         nr_throttled=10 throttled_usec=750000 nr_bursts=0 burst_usec=0 \
         local_throttled_usec=-"
    );
}

#[test]
fn group_line_worst_case_length() {
    // docs/report-format.md, "Writing the lines": 464 bytes plus the path
    // with 8 CPUs, 21 more per further CPU.
    let max = [u64::MAX; 8];
    let group = GroupLine {
        path: "/g",
        quota_us: Some(u64::MAX),
        period_us: u64::MAX,
        burst_us: u64::MAX,
        nr_periods: u64::MAX,
        nr_throttled: u64::MAX,
        throttled_usec: u64::MAX,
        nr_bursts: u64::MAX,
        burst_usec: u64::MAX,
        local_throttled_usec: &max,
    };
    assert_eq!(group.to_string().len(), 464 + 2);
}

#[test]
fn the_clock_line_names_the_time_base_and_the_cost_counter() {
    let clock = ClockLine {
        timer: "cntpct",
        timer_hz: 62_500_000,
        cycle_counter: "pmccntr",
    };
    assert_eq!(
        clock.to_string(),
        "report: clock timer=cntpct timer_hz=62500000 cycle_counter=pmccntr"
    );
}
