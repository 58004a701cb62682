//! Engine invariants on the round-robin policy, against analytic expectations worked out
//! by hand from the scenario, the round-robin rule (a slice of 4 ms, checked at each tick;
//! no wake-up preemption) and the capacity-invariance rule of facts §2.3.

use fairway_rtapp::{parse, parse_and_validate, parse_and_validate_for};
use fairway_sched::round_robin::DEFAULT_SLICE_NS;
use fairway_sched::run_queue::{CpuCapacity, PolicyKind};
use fairway_sim::results::Results;
use fairway_sim::{Config, Sampler, Simulation};

const MS: u64 = 1_000_000;

fn config(capacities: &[(u32, u32)], duration_ns: Option<u64>) -> Config {
    Config {
        policy: PolicyKind::RoundRobin {
            slice: DEFAULT_SLICE_NS,
        },
        policy_name: "rr".into(),
        capacities: capacities
            .iter()
            .map(|&(capacity_orig, frequency_scale)| CpuCapacity {
                capacity_orig,
                frequency_scale,
            })
            .collect(),
        tick_ns: 4 * MS,
        duration_ns,
        sample_interval_ns: MS,
        hrtick: false,
        tick_phase_ns: 0,
        skew_tick: false,
        tick_seed: 0,
        balance: false,
        uclamp: true,
        bandwidth_timer: fairway_sched::bandwidth::PeriodTimerStart::Aligned,
        cfs_bandwidth: false,
        dvfs: None,
    }
}

fn simulate(text: &str, capacities: &[(u32, u32)], duration_ns: Option<u64>) -> Results {
    let scenario = parse(text).unwrap();
    scenario
        .validate_for(capacities.len(), duration_ns.is_some())
        .unwrap();
    Simulation::new(&scenario, config(capacities, duration_ns))
        .unwrap()
        .run(None)
        .unwrap()
}

/// Runs with a CSV and returns (results JSON text, CSV text).
fn simulate_with_outputs(
    text: &str,
    capacities: &[(u32, u32)],
    duration_ns: Option<u64>,
) -> (String, String) {
    let scenario = parse(text).unwrap();
    scenario
        .validate_for(capacities.len(), duration_ns.is_some())
        .unwrap();
    let mut csv = Vec::new();
    let mut sampler = Sampler::new(&mut csv);
    let results = Simulation::new(&scenario, config(capacities, duration_ns))
        .unwrap()
        .run(Some(&mut sampler))
        .unwrap();
    let json = serde_json::to_string_pretty(&results.to_json(usize::MAX)).unwrap();
    (json, String::from_utf8(csv).unwrap())
}

fn load(name: &str) -> String {
    std::fs::read_to_string(format!("{}/scenarios/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn assert_accounting(results: &Results) {
    let runtime: u64 = results.tasks.iter().map(|t| t.runtime_ns).sum();
    let busy: u64 = results.cpus.iter().map(|c| c.busy_ns).sum();
    assert_eq!(runtime, busy, "no task time lost or invented");
    for cpu in &results.cpus {
        assert_eq!(cpu.busy_ns + cpu.idle_ns, results.end_ns, "cpu{}", cpu.cpu);
    }
}

#[test]
fn two_hogs_share_one_cpu_within_one_slice() {
    let text = r#"{"tasks": {"a": {"runtime": 1000000}, "b": {"runtime": 1000000}}}"#;
    let results = simulate(text, &[(1024, 1024)], Some(1000 * MS));
    assert_eq!(results.end_ns, 1000 * MS);
    for task in &results.tasks {
        let half = 500 * MS;
        assert!(
            task.runtime_ns.abs_diff(half) <= DEFAULT_SLICE_NS,
            "{} ran {} ns",
            task.name,
            task.runtime_ns
        );
    }
    assert_accounting(&results);
}

#[test]
fn periodic_25_percent_alone_is_busy_exactly_25_percent() {
    let results = simulate(&load("periodic-25.json"), &[(1024, 1024)], None);
    // 62 periods of 16 ms; the task ends when its last timer fires.
    assert_eq!(results.end_ns, 62 * 16 * MS);
    assert_eq!(results.cpus[0].busy_ns * 4, results.end_ns);
    let task = &results.tasks[0];
    assert_eq!(task.runtime_ns, 62 * 4 * MS);
    assert_eq!(task.missed_periods, 0);
    assert_eq!(task.wait_ns, 0);
    assert_eq!(
        task.wakeup_latency.count, 62,
        "62 timer wake-ups; the start is not a wake-up"
    );
    assert_eq!(task.wakeup_latency.max, 0, "alone on its CPU");
    assert!(task.finished);
    assert_accounting(&results);
}

#[test]
fn run_is_capacity_invariant() {
    let text = r#"{"tasks": {"t": {"loop": 1, "run": 1000}}}"#;
    // 1000 µs of work at half capacity, or at half frequency, take 2000 µs.
    for capacity in [(512, 1024), (1024, 512)] {
        let results = simulate(text, &[capacity], None);
        assert_eq!(results.end_ns, 2_000_000, "{capacity:?}");
        assert_eq!(results.tasks[0].runtime_ns, 2_000_000);
    }
    // Juno r0 LITTLE (§7.2, capacity 446): 1000 µs × 1024/446 = 2295.964... µs, rounded up
    // to the next ns.
    let results = simulate(text, &[(446, 1024)], None);
    assert_eq!(results.end_ns, 2_295_965);
    // `runtime` is wall time whatever the capacity.
    let text = r#"{"tasks": {"t": {"loop": 1, "runtime": 1000}}}"#;
    assert_eq!(simulate(text, &[(512, 1024)], None).end_ns, 1_000_000);
}

#[test]
fn runs_are_byte_identical() {
    let first = simulate_with_outputs(
        &load("taskgroups.json"),
        &[(446, 1024), (1024, 1024), (1024, 1024), (446, 1024)],
        None,
    );
    let second = simulate_with_outputs(
        &load("taskgroups.json"),
        &[(446, 1024), (1024, 1024), (1024, 1024), (446, 1024)],
        None,
    );
    assert_eq!(first, second);
    let hogs = load("mixed-nice-hogs.json");
    assert_eq!(
        simulate_with_outputs(&hogs, &[(1024, 1024)], None),
        simulate_with_outputs(&hogs, &[(1024, 1024)], None)
    );
}

#[test]
fn no_task_time_is_lost_in_the_examples() {
    for (name, cpus) in [
        ("periodic-25.json", vec![(1024, 1024)]),
        ("mixed-nice-hogs.json", vec![(1024, 1024), (1024, 1024)]),
        (
            "taskgroups.json",
            vec![(446, 1024), (1024, 1024), (1024, 1024), (446, 1024)],
        ),
    ] {
        let results = simulate(&load(name), &cpus, None);
        assert_accounting(&results);
    }
}

#[test]
fn csv_has_one_row_per_task_and_cpu_each_millisecond() {
    let (_, csv) = simulate_with_outputs(
        &load("periodic-25.json"),
        &[(1024, 1024), (1024, 1024)],
        None,
    );
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("time_ns,task,cpu,state,vruntime,util_avg,load_avg,runnable_avg,util_est")
    );
    // Samples at 0, 1, ..., 991 ms (the run ends at 992 ms): 1 task row + 2 CPU rows each.
    assert_eq!(lines.clone().count(), 992 * 3);
    let rows: Vec<&str> = lines.take(3).collect();
    assert!(rows[0].starts_with("0,periodic,0,running,"), "{}", rows[0]);
    assert!(rows[1].starts_with("0,cpu0,0,busy,,"), "{}", rows[1]);
    assert!(rows[2].starts_with("0,cpu1,1,idle,,"), "{}", rows[2]);
    // At 5 ms the task sleeps (it ran 0..4 ms of its 16 ms period).
    assert!(csv.contains("\n5000000,periodic,0,sleeping,"));
}

#[test]
fn timer_overruns_follow_rt_app_modes() {
    // Phase a overruns the shared timer "t" (30 ms of work, 16 ms period), then phase b
    // runs 4 ms per 16 ms period, three times.
    let scenario = |mode: &str| {
        format!(
            r#"{{"tasks": {{"t": {{"loop": 1, "phases": {{
                "a": {{"run": 30000, "timer": {{"ref": "t", "period": 16000, "mode": "{mode}"}}}},
                "b": {{"loop": 3, "run": 4000, "timer": {{"ref": "t", "period": 16000, "mode": "{mode}"}}}}
            }}}}}}}}"#
        )
    };
    // Absolute: boundaries stay at 16, 32, 48, 64 ms. a ends at 30 > 16 (missed); b1 runs
    // 30..34 > 32 (missed); b2 runs 34..38, sleeps to 48; b3 runs 48..52, sleeps to 64.
    let absolute = simulate(&scenario("absolute"), &[(1024, 1024)], None);
    assert_eq!(absolute.tasks[0].missed_periods, 2);
    assert_eq!(absolute.end_ns, 64 * MS);
    // Relative: after the miss at 30 ms the grid restarts there: b1 30..34 sleeps to 46,
    // b2 46..50 to 62, b3 62..66 to 78.
    let relative = simulate(&scenario("relative"), &[(1024, 1024)], None);
    assert_eq!(relative.tasks[0].missed_periods, 1);
    assert_eq!(relative.end_ns, 78 * MS);
}

#[test]
fn round_robin_wakeup_waits_for_the_tick() {
    // A periodic task (1 ms per 18 ms) shares CPU 0 with a hog. Round-robin never preempts
    // on wake-up; the hog's slice is long over, so the woken task runs at the next 4 ms
    // tick: wake-ups at 18, 36, 54, 72 ms run at 20, 36, 56, 72 ms.
    let text = r#"{"tasks": {
        "periodic": {"loop": 4, "run": 1000, "timer": {"ref": "unique", "period": 18000}},
        "hog": {"runtime": 1000000}
    }}"#;
    let results = simulate(text, &[(1024, 1024)], Some(100 * MS));
    let periodic = &results.tasks[0];
    // Latencies (the start is not a wake-up): 2, 0, 2, 0 ms: nearest-rank p50 = 0,
    // p99 = max = 2 ms.
    assert_eq!(periodic.wakeup_latency.count, 4);
    assert_eq!(periodic.wakeup_latency.p50, 0);
    assert_eq!(periodic.wakeup_latency.p99, 2 * MS);
    assert_eq!(periodic.wakeup_latency.max, 2 * MS);
    // Four runs (at 0, 20, 36, 56 ms); switched in at 72 ms it finds its program over.
    assert_eq!(periodic.runtime_ns, 4 * MS);
    assert_eq!(periodic.wait_ns, 4 * MS);
    let hog = &results.tasks[1];
    assert_eq!(
        (hog.wakeup_latency.count, hog.wait_ns),
        (0, 4 * MS),
        "a start is not a wake-up; the hog waits out each of the periodic task's four \
         1 ms runs (at 0, 20, 36 and 56 ms)"
    );
    assert_eq!(hog.runtime_ns, 100 * MS - 4 * MS);
    assert_accounting(&results);
}

#[test]
fn placement_and_affinity_changes() {
    // Four hogs on two CPUs: least-loaded placement in CPU order gives a, c on CPU 0 and
    // b, d on CPU 1; the first switches at 0 show it.
    let text = r#"{"tasks": {"a": {"runtime": 1000000}, "b": {"runtime": 1000000},
                             "c": {"runtime": 1000000}, "d": {"runtime": 1000000}}}"#;
    let results = simulate(text, &[(1024, 1024), (1024, 1024)], Some(40 * MS));
    let first: Vec<(usize, &str)> = results.switches[..2]
        .iter()
        .map(|s| (s.cpu, results.tasks[s.next.unwrap()].name.as_str()))
        .collect();
    assert_eq!(first, [(0, "a"), (1, "b")]);
    for task in &results.tasks {
        assert_eq!(
            task.runtime_ns,
            20 * MS,
            "{}: two per CPU, 4 ms slices",
            task.name
        );
        assert_eq!(task.migrations, 0);
    }
    // A phase-level `cpus` moves the task: 1 ms on CPU 0, then 1 ms on CPU 1.
    let text = r#"{"tasks": {"t": {"loop": 1, "phases": {
        "here": {"cpus": [0], "run": 1000}, "there": {"cpus": [1], "run": 1000}}}}}"#;
    let results = simulate(text, &[(1024, 1024), (1024, 1024)], None);
    assert_eq!(results.tasks[0].migrations, 1);
    assert_eq!(results.end_ns, 2 * MS);
    assert_eq!((results.cpus[0].busy_ns, results.cpus[1].busy_ns), (MS, MS));
    assert_accounting(&results);
}

#[test]
fn task_groups_are_reported_until_the_group_api_lands() {
    let cpus = [(446, 1024), (1024, 1024), (1024, 1024), (446, 1024)];
    let results = simulate(&load("taskgroups.json"), &cpus, Some(10 * MS));
    let groups: Vec<_> = results
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.taskgroup.clone()))
        .collect();
    let fg = Some(("/foreground".to_string(), 2048));
    let bg = Some(("/background".to_string(), 512));
    assert_eq!(
        groups,
        [
            ("ui-0", fg.clone()),
            ("ui-1", fg),
            ("indexer-0", bg.clone()),
            ("indexer-1", bg)
        ]
    );
}

#[test]
fn yield_and_delay() {
    // y runs 1 ms and yields: the hog h runs from 1 ms; at the 8 ms tick h has used its
    // 4 ms slice and y is waiting, so y runs 8..9 ms and ends; h finishes its remaining
    // 3 ms at 12 ms.
    let text = r#"{"tasks": {
        "y": {"loop": 1, "cpus": [0], "run0": 1000, "yield": "", "run1": 1000},
        "h": {"loop": 1, "cpus": [0], "runtime": 10000}
    }}"#;
    let results = simulate(text, &[(1024, 1024), (1024, 1024)], None);
    assert_eq!(results.end_ns, 12 * MS);
    let (y, h) = (&results.tasks[0], &results.tasks[1]);
    assert_eq!((y.runtime_ns, y.wait_ns), (2 * MS, 7 * MS));
    assert_eq!((y.involuntary_switches, y.voluntary_switches), (1, 1));
    assert_eq!((h.runtime_ns, h.wait_ns), (10 * MS, 2 * MS));
    assert_eq!(
        h.wakeup_latency.count, 0,
        "h only started (its 1 ms before its first run is wait, not wake-up latency)"
    );
    assert_eq!(results.cpus[1].busy_ns, 0, "affinity keeps both on CPU 0");
    assert_accounting(&results);
    // `delay` postpones the start: 5 ms, then 1 ms of work.
    let text = r#"{"tasks": {"t": {"loop": 1, "delay": 5000, "run": 1000}}}"#;
    let results = simulate(text, &[(1024, 1024)], None);
    assert_eq!(results.end_ns, 6 * MS);
    assert_eq!(results.cpus[0].idle_ns, 5 * MS);
}

/// More scheduling entities than a CPU's timeline arena holds is a clear
/// configuration error, not a panic: 4096 tasks (the scenario limit), each in
/// its own fifteen-level group path, need 4096 + 15 × 4096 = 65536 entities,
/// one over `MAX_ENTITIES` (2^16 - 1). Validation refuses such a scenario first
/// (at most 63 groups), so it is parsed only: the engine holds its own limit.
#[test]
fn too_many_entities_is_an_error() {
    let tasks: Vec<String> = (0..4096)
        .map(|i| {
            format!(
                r#""t{i}": {{ "taskgroup": "/a{i}/b/c/d/e/f/g/h/i/j/k/l/m/n/o", "run": 1000 }}"#
            )
        })
        .collect();
    let text = format!(
        r#"{{ "global": {{ "duration": 1 }}, "tasks": {{ {} }} }}"#,
        tasks.join(",")
    );
    let scenario = parse(&text).unwrap();
    let error = match Simulation::new(&scenario, config(&[(1024, 1024)], None)) {
        Ok(_) => panic!("65536 entities were accepted"),
        Err(error) => error.to_string(),
    };
    assert_eq!(fairway_sched::fair::timeline::MAX_ENTITIES, 65535);
    assert!(
        error.contains("4096 tasks and 61440 task groups need 65536 scheduling entities"),
        "{error}"
    );
    assert!(error.contains("the limit is 65535"), "{error}");
}

/// A signals CSV that reaches its limit mid-run ends on the last whole sample, and
/// the run goes on to its results (issue 10: 4,096 tasks wrote 6.4 GB; a cut
/// mid-row and lost results were the first answer).
#[test]
fn a_csv_at_its_limit_ends_on_a_whole_sample_and_the_run_ends() {
    let text = r#"{"tasks": {"t": {"instance": 100, "loop": 1, "run": 10000}}}"#;
    let scenario = parse_and_validate_for(text, 1, true).unwrap();
    let mut csv = Vec::new();
    // 101 rows (100 tasks, 1 CPU) of about 30 bytes a millisecond for 10 ms is well
    // past 10 kB.
    let mut sampler = Sampler::with_limit(&mut csv, 10_000);
    let results = Simulation::new(&scenario, config(&[(1024, 1024)], Some(10 * MS)))
        .unwrap()
        .run(Some(&mut sampler));
    assert!(results.is_ok(), "{:?}", results.err());
    let cut_at = sampler.cut_at().expect("the limit was reached");
    assert_eq!(sampler.written(), csv.len() as u64);
    assert!(csv.len() <= 10_000);
    let text = String::from_utf8(csv).unwrap();
    assert!(text.ends_with('\n'), "the file ends on a whole row");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert!(rows.iter().all(|row| row.len() == 9), "whole rows only");
    // Whole samples only: every time written has its 101 rows, and the cut is the
    // sample after the last one written.
    let last: u64 = rows.last().unwrap()[0].parse().unwrap();
    for k in 0..=last / MS {
        let time = (k * MS).to_string();
        assert_eq!(rows.iter().filter(|row| row[0] == time).count(), 101);
    }
    assert_eq!(cut_at, last + MS);
}

/// The lower bound the simulator refuses a CSV on before the run never exceeds
/// what a run writes (a brute-force check on runs with CPUs, never-ending tasks
/// with delays, finite tasks, and sample intervals that cross powers of ten).
#[test]
fn the_least_csv_size_never_exceeds_a_real_run() {
    let text = r#"{"tasks": {
        "forever": {"instance": 3, "run": 700, "sleep": 300},
        "late": {"delay": 4500, "run": 100, "sleep": 900},
        "finite": {"instance": 2, "loop": 3, "run": 200}}}"#;
    let scenario = parse_and_validate_for(text, 2, true).unwrap();
    for (interval, end) in [
        (MS, 20 * MS),
        (333_333, 7 * MS),
        (7, 20_000),
        (MS / 10, 3 * MS),
    ] {
        let mut csv = Vec::new();
        let mut sampler = Sampler::new(&mut csv);
        let mut config = config(&[(1024, 1024), (1024, 1024)], Some(end));
        config.sample_interval_ns = interval;
        Simulation::new(&scenario, config)
            .unwrap()
            .run(Some(&mut sampler))
            .unwrap();
        let least = fairway_sim::sampler::least_csv_bytes(&scenario, 2, end, interval);
        let written = csv.len() as u64;
        assert!(
            least <= written,
            "interval {interval}, end {end}: bound {least} > {written} written"
        );
        // And close enough to refuse what cannot fit: the never-ending tasks are
        // most of the rows.
        assert!(
            least * 2 >= written,
            "interval {interval}, end {end}: bound {least}, {written} written"
        );
    }
}

/// rt-app stops its tasks only after a positive `duration`: 0 runs, like -1, until
/// every task has finished (a 3 ms run here, not a 0 s one).
#[test]
fn duration_zero_runs_until_every_task_has_finished() {
    let text = r#"{"global": {"duration": 0}, "tasks": {"t": {"loop": 3, "run": 1000}}}"#;
    let scenario = parse_and_validate(text, 1).unwrap();
    let config = fairway_sim::Config {
        policy: fairway_sched::run_queue::PolicyKind::RoundRobin { slice: 4_000_000 },
        policy_name: "rr".into(),
        capacities: vec![fairway_sched::run_queue::CpuCapacity::default()],
        tick_ns: 4_000_000,
        duration_ns: None,
        sample_interval_ns: 1_000_000,
        hrtick: false,
        tick_phase_ns: 0,
        skew_tick: false,
        tick_seed: 0,
        balance: false,
        uclamp: true,
        bandwidth_timer: fairway_sched::bandwidth::PeriodTimerStart::Aligned,
        cfs_bandwidth: false,
        dvfs: None,
    };
    let results = fairway_sim::Simulation::new(&scenario, config)
        .unwrap()
        .run(None)
        .unwrap();
    assert_eq!(results.tasks[0].runtime_ns, 3_000_000);
}
