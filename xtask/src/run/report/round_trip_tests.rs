//! Round trip: records written by the kernel-side formatters of
//! `fairway_contract::report` from seeded random measurements, parsed
//! here, must carry every figure of the samplers they came from.

use fairway_contract::report::{
    ClockLine, CostLine, CpuLine, CpuScope as LineScope, EndLine, GroupLine, HistogramLine,
    HistogramOwner, MetricLine, RunLine, TaskLine,
};
use fairway_sched::stats::{CostStats, LatencyStats, Log2Histogram, merged_summary};
use fairway_sched::task::{CpuId, TaskId};

use super::{CpuScope, Group, parse_report};

/// SplitMix64, so the measurements are the same on every run.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const OPS: [&str; 6] = [
    "enqueue_task",
    "dequeue_task",
    "pick_next_task",
    "pelt_update",
    "uclamp_update",
    "context_switch",
];

/// Seeded `cpu.max` and `cpu.stat` figures of two groups on two CPUs, the
/// second without a limit (`max`); any u64, with `nr_throttled <= nr_periods`.
fn groups(state: &mut u64) -> Vec<Group> {
    ["/batch", "/batch/low"]
        .iter()
        .map(|path| {
            let nr_periods = next(state);
            Group {
                path: path.to_string(),
                quota_us: (*path == "/batch").then(|| next(state)),
                period_us: next(state),
                burst_us: next(state),
                nr_periods,
                nr_throttled: next(state) % nr_periods.saturating_add(1),
                throttled_usec: next(state),
                nr_bursts: next(state),
                burst_usec: next(state),
                local_throttled_usec: vec![next(state), next(state)],
            }
        })
        .collect()
}

/// The lines, each CPU's cost samplers, the task's latencies, the groups.
type Transcript = (Vec<String>, Vec<Vec<CostStats>>, LatencyStats, Vec<Group>);

/// A two-CPU transcript; the samplers hold 32 samples so some decimate.
fn transcript(seed: u64) -> Transcript {
    let mut state = seed;
    let mut lines = vec![
        RunLine {
            name: "sched-pipe",
            config: "depth1-uclamp-on-eevdf",
            cpus: 2,
            icount: true,
            wall_ns: 123_456,
        }
        .to_string(),
        ClockLine {
            timer: "cntpct",
            timer_hz: 62_500_000,
            cycle_counter: "pmccntr",
        }
        .to_string(),
    ];
    let mut per_cpu: Vec<Vec<CostStats>> = (0..2)
        .map(|_| {
            OPS.iter()
                .map(|op| CostStats::new(op, 32).unwrap())
                .collect()
        })
        .collect();
    for (cpu, costs) in per_cpu.iter_mut().enumerate() {
        for (i, cost) in costs.iter_mut().enumerate() {
            cost.set_overhead(20);
            for _ in 0..(10 + 25 * i) {
                cost.record(next(&mut state) % (1 << (6 + i)));
            }
            let summary = cost.summary();
            let scope = LineScope::Cpu(CpuId(cpu as u16));
            lines.push(
                CostLine {
                    cpu: scope,
                    op: cost.name,
                    summary: &summary,
                    overhead: cost.overhead(),
                }
                .to_string(),
            );
            lines.push(
                HistogramLine {
                    owner: HistogramOwner::Cost(scope),
                    op: cost.name,
                    histogram: &cost.histogram,
                }
                .to_string(),
            );
        }
    }
    for (i, op) in OPS.iter().enumerate() {
        let samplers: Vec<_> = per_cpu.iter().map(|c| &c[i].sampler).collect();
        let summary = merged_summary(&samplers);
        let mut histogram = Log2Histogram::new();
        per_cpu
            .iter()
            .for_each(|c| histogram.merge(&c[i].histogram));
        lines.push(
            CostLine {
                cpu: LineScope::All,
                op,
                summary: &summary,
                overhead: 20,
            }
            .to_string(),
        );
        lines.push(
            HistogramLine {
                owner: HistogramOwner::Cost(LineScope::All),
                op,
                histogram: &histogram,
            }
            .to_string(),
        );
    }
    let mut latency = LatencyStats::new(16).unwrap();
    for _ in 0..40 {
        latency.record(next(&mut state) % 100_000);
    }
    let summary = latency.summary();
    lines.push(format!(
        "0.000001 INFO  {}",
        TaskLine {
            id: TaskId(3),
            name: "ping",
            cpu: CpuId(1),
            runtime_ns: 1000,
            wait_ns: 2000,
            latency: &summary,
            missed_periods: 1,
            pending_wakeups: 1,
            migrations: 2,
            switches: 40,
        }
    ));
    lines.push(
        HistogramLine {
            owner: HistogramOwner::Task(TaskId(3)),
            op: "wakeup_latency",
            histogram: &latency.histogram,
        }
        .to_string(),
    );
    lines.push(
        CpuLine {
            id: CpuId(1),
            busy_ns: 10,
            idle_ns: 20,
            switches: 30,
        }
        .to_string(),
    );
    let groups = groups(&mut state);
    for g in &groups {
        lines.push(
            GroupLine {
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
            .to_string(),
        );
    }
    lines.push(
        MetricLine {
            name: "ops_per_second",
            value: 42,
        }
        .to_string(),
    );
    lines.push(EndLine.to_string());
    (lines, per_cpu, latency, groups)
}

#[test]
fn kernel_lines_parse_back_to_the_same_figures() {
    let (lines, mut per_cpu, mut latency, _) = transcript(11);
    let report = parse_report(&lines).unwrap_or_else(|e| panic!("{e}"));
    let run = &report.runs[0];
    assert_eq!((run.cpus, run.icount, run.wall_ns), (2, true, 123_456));
    assert_eq!(run.config, "depth1-uclamp-on-eevdf");
    let clock = run.clock.as_ref().expect("the clock line");
    assert_eq!(
        (
            clock.timer.as_str(),
            clock.timer_hz,
            clock.cycle_counter.as_str()
        ),
        ("cntpct", 62_500_000, "pmccntr")
    );
    for (cpu, costs) in per_cpu.iter_mut().enumerate() {
        for cost in costs.iter_mut() {
            let summary = cost.summary();
            let parsed = run
                .costs
                .iter()
                .find(|c| c.cpu == CpuScope::Cpu(cpu as u64) && c.op == cost.name)
                .expect("every cost line is parsed");
            assert_eq!(parsed.count, summary.count);
            assert_eq!(parsed.sum, summary.sum);
            assert_eq!(Some(parsed.min), summary.min);
            assert_eq!(Some(parsed.p50), summary.p50);
            assert_eq!(Some(parsed.p99), summary.p99);
            assert_eq!(Some(parsed.max), summary.max);
            assert_eq!(parsed.overhead, 20);
            let buckets: Vec<(u32, u64)> = cost
                .histogram
                .non_empty()
                .map(|(i, c)| (i as u32, c))
                .collect();
            assert_eq!(parsed.histogram.as_ref().unwrap().buckets, buckets);
        }
    }
    // The all-CPU records win in the per-op aggregate: exact quantiles.
    let by_op = run.cost_by_op();
    assert_eq!(by_op.len(), OPS.len());
    for aggregate in &by_op {
        assert!(aggregate.p50.is_some() && aggregate.p99.is_some());
        assert_eq!(aggregate.cpus, 2);
    }
    let task = &run.tasks[0];
    let summary = latency.summary();
    assert_eq!(task.wakeups, 40);
    assert_eq!(
        (
            Some(task.lat_p50_ns),
            Some(task.lat_p99_ns),
            Some(task.lat_max_ns)
        ),
        (summary.p50, summary.p99, summary.max)
    );
    assert_eq!(task.latency_histogram.as_ref().unwrap().total(), 40);
    assert_eq!(run.metrics[0].value, 42);
}

#[test]
fn same_measurements_give_byte_identical_json_and_summary() {
    let first = parse_report(&transcript(5).0).unwrap();
    let second = parse_report(&transcript(5).0).unwrap();
    assert_eq!(first.to_json(), second.to_json());
    assert_eq!(first.summary(), second.summary());
    let other = parse_report(&transcript(6).0).unwrap();
    assert_ne!(first.to_json(), other.to_json());
}

#[test]
fn group_lines_parse_back_to_the_same_figures() {
    for seed in 0..16 {
        let (lines, _, _, groups) = transcript(seed);
        let report = parse_report(&lines).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(report.runs[0].groups, groups);
        assert_eq!(report.runs[0].groups[1].quota_us, None);
    }
    // The JSON carries them too: `max` as null, the per-CPU list in order.
    let (lines, _, _, groups) = transcript(3);
    let json: serde_json::Value =
        serde_json::from_str(&parse_report(&lines).unwrap().to_json()).unwrap();
    let parsed = &json["runs"][0]["groups"];
    assert_eq!(parsed[0]["quota_us"], serde_json::json!(groups[0].quota_us));
    assert_eq!(parsed[1]["quota_us"], serde_json::Value::Null);
    assert_eq!(
        parsed[0]["local_throttled_usec"],
        serde_json::json!(groups[0].local_throttled_usec)
    );
    assert_eq!(
        parsed[1]["nr_periods"],
        serde_json::json!(groups[1].nr_periods)
    );
}
