//! The simulator on the fair class (CFS and EEVDF), against analytic expectations:
//! CPU shares in the ratio of the nice weights (facts §1.1), task groups splitting a CPU
//! by their shares whatever their task counts (§2.7 `calc_group_shares`), a new group
//! entity starting with no load (§2.5), and a periodic task's PELT utilization inside
//! the steady-state range of the reference vectors (§2.8).

use fairway_rtapp::parse_and_validate_for;
use fairway_sched::fair::{CfsTunables, EevdfTunables};
use fairway_sched::run_queue::{CpuCapacity, PolicyKind, RunQueue};
use fairway_sched::task::GroupId;
use fairway_sim::results::Results;
use fairway_sim::{Config, Sampler, Simulation, policy_kind};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;
/// HZ=1000: Linux's common desktop setting; ticks (and so slices) of 1 ms.
const TICK: u64 = MS;

fn config(policy: &str, cpus: usize, duration_ns: u64) -> Config {
    Config {
        policy: policy_kind(policy, 4 * MS, cpus, TICK).unwrap(),
        policy_name: policy.into(),
        capacities: vec![CpuCapacity::default(); cpus],
        tick_ns: TICK,
        duration_ns: Some(duration_ns),
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

fn simulate(text: &str, policy: &str, cpus: usize, duration_ns: u64) -> Results {
    let scenario = parse_and_validate_for(text, cpus, true).unwrap();
    let results = Simulation::new(&scenario, config(policy, cpus, duration_ns))
        .unwrap()
        .run(None)
        .unwrap();
    let runtime: u64 = results.tasks.iter().map(|t| t.runtime_ns).sum();
    let busy: u64 = results.cpus.iter().map(|c| c.busy_ns).sum();
    assert_eq!(runtime, busy, "no task time lost or invented");
    results
}

fn runtime(results: &Results, name: &str) -> u64 {
    results
        .tasks
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no task {name}"))
        .runtime_ns
}

/// `got` within `relative` of `expected`.
fn assert_close(got: f64, expected: f64, relative: f64, what: &str) {
    assert!(
        (got - expected).abs() <= relative * expected,
        "{what}: {got:.0} ns, expected {expected:.0} ± {:.1} %",
        relative * 100.0
    );
}

/// A CPU hog pinned to `cpu` (20 s of work, longer than any run here).
fn hog(name: &str, nice: i8, cpu: usize, group: Option<&str>) -> String {
    let group = group.map_or(String::new(), |g| format!(r#""taskgroup": "{g}", "#));
    format!(r#""{name}": {{ {group}"priority": {nice}, "cpus": [{cpu}], "run": 20000000 }}"#)
}

fn scenario(groups: &[(&str, u64)], tasks: &[String]) -> String {
    let groups: Vec<String> = groups
        .iter()
        .map(|(path, shares)| format!(r#""{path}": {{ "shares": {shares} }}"#))
        .collect();
    format!(
        r#"{{ "global": {{ "duration": -1, "taskgroups": {{ {} }} }}, "tasks": {{ {} }} }}"#,
        groups.join(", "),
        tasks.join(", ")
    )
}

#[test]
fn nice_levels_share_a_cpu_by_weight() {
    // §1.1: nice -5, 0, 0, 3, 7 weigh 3121, 1024, 1024, 526, 215 (sum 5910).
    let nice_weights = [
        (-5i8, 3121.0),
        (0, 1024.0),
        (0, 1024.0),
        (3, 526.0),
        (7, 215.0),
    ];
    let total: f64 = nice_weights.iter().map(|&(_, w)| w).sum();
    let tasks: Vec<String> = nice_weights
        .iter()
        .enumerate()
        .map(|(i, &(nice, _))| hog(&format!("t{i}"), nice, 0, None))
        .collect();
    let text = scenario(&[], &tasks);
    for policy in ["cfs", "eevdf"] {
        let results = simulate(&text, policy, 1, 10 * SECOND);
        for (i, &(nice, weight)) in nice_weights.iter().enumerate() {
            let expected = 10.0 * SECOND as f64 * weight / total;
            let got = runtime(&results, &format!("t{i}")) as f64;
            assert_close(got, expected, 0.005, &format!("{policy} nice {nice}"));
        }
    }
}

#[test]
fn equal_share_groups_split_a_cpu_equally_whatever_their_task_counts() {
    // §2.7: each group entity weighs its shares (all its load is on this CPU), so
    // three groups of 1024 get a third each, their tasks splitting it equally.
    let mut tasks = Vec::new();
    for (group, count) in [("/one", 1), ("/two", 2), ("/five", 5)] {
        for i in 0..count {
            tasks.push(hog(&format!("{}{i}", &group[1..]), 0, 0, Some(group)));
        }
    }
    let text = scenario(&[("/one", 1024), ("/two", 1024), ("/five", 1024)], &tasks);
    for policy in ["cfs", "eevdf"] {
        let results = simulate(&text, policy, 1, 10 * SECOND);
        for (group, count) in [("one", 1), ("two", 2), ("five", 5)] {
            let sum: u64 = (0..count)
                .map(|i| runtime(&results, &format!("{group}{i}")))
                .sum();
            let third = 10.0 * SECOND as f64 / 3.0;
            assert_close(sum as f64, third, 0.005, &format!("{policy} /{group}"));
        }
    }
}

#[test]
fn nested_groups_split_a_cpu_level_by_level() {
    // root -> a, b; a -> a1, a2, all 1024 shares: b gets 1/2, a1 and a2 1/4 each,
    // whatever their task counts (1, 2 and 3 here).
    let mut tasks = vec![hog("b0", 0, 0, Some("/b"))];
    for i in 0..2 {
        tasks.push(hog(&format!("a1_{i}"), 0, 0, Some("/a/a1")));
    }
    for i in 0..3 {
        tasks.push(hog(&format!("a2_{i}"), 0, 0, Some("/a/a2")));
    }
    let text = scenario(&[], &tasks);
    for policy in ["cfs", "eevdf"] {
        let results = simulate(&text, policy, 1, 10 * SECOND);
        let total = 10.0 * SECOND as f64;
        let b = runtime(&results, "b0") as f64;
        let a1: u64 = (0..2).map(|i| runtime(&results, &format!("a1_{i}"))).sum();
        let a2: u64 = (0..3).map(|i| runtime(&results, &format!("a2_{i}"))).sum();
        assert_close(b, total / 2.0, 0.005, &format!("{policy} /b"));
        assert_close(a1 as f64, total / 4.0, 0.005, &format!("{policy} /a/a1"));
        assert_close(a2 as f64, total / 4.0, 0.005, &format!("{policy} /a/a2"));
    }
}

#[test]
fn a_grouped_hog_among_many_empty_groups_gets_half_its_cpu() {
    // The group-load-from-birth regression: 63 groups (the scenario limit), 62 of
    // them empty; the hog in the other one, on CPU 0, against an ungrouped hog on
    // each of the 2 CPUs. All of its group's load is on CPU 0, so its group entity
    // weighs the full 1024 shares there (§2.7), as much as the nice-0 hog beside
    // it: half of CPU 0 each.
    let groups: Vec<String> = (0..63).map(|i| format!("/g{i:03}")).collect();
    let shares: Vec<(&str, u64)> = groups.iter().map(|g| (g.as_str(), 1024)).collect();
    let tasks = vec![
        hog("grouped", 0, 0, Some("/g042")),
        hog("plain0", 0, 0, None),
        hog("plain1", 0, 1, None),
    ];
    let text = scenario(&shares, &tasks);
    for policy in ["cfs", "eevdf"] {
        let results = simulate(&text, policy, 2, 10 * SECOND);
        let half = 5.0 * SECOND as f64;
        assert_close(runtime(&results, "grouped") as f64, half, 0.01, policy);
        assert_close(runtime(&results, "plain0") as f64, half, 0.01, policy);
    }
}

#[test]
fn a_new_group_entity_starts_with_no_load() {
    // §2.5: init_entity_runnable_average gives a task its weight as load, a group
    // entity nothing.
    for kind in [
        PolicyKind::Cfs(CfsTunables::for_cpus(2)),
        PolicyKind::Eevdf(EevdfTunables::for_cpus(2, TICK)),
    ] {
        let mut run_queue = RunQueue::new(kind, 4);
        let group = run_queue.create_group(GroupId::ROOT, 1024).unwrap();
        let signals = run_queue.group_signals(group).unwrap();
        assert_eq!(
            (signals.entity_load_avg, signals.load_avg, signals.util_avg),
            (0, 0, 0),
            "{kind:?}"
        );
        assert_eq!(run_queue.group_load_contribution(group), 0);
        assert_eq!(run_queue.group_signals(GroupId(9)), None);
    }
}

#[test]
fn periodic_25_percent_util_settles_in_the_reference_range() {
    // §2.8 "Periodic tasks in steady state" (alone on a CPU, HZ=1000): 25 % duty of a
    // 16 ms period swings between 225 (at wake-up) and 288 (at sleep).
    let text = r#"{"tasks": {"periodic": {"loop": -1, "run": 4000,
                   "timer": {"ref": "unique", "period": 16000}}}}"#;
    for policy in ["cfs", "eevdf"] {
        let scenario = parse_and_validate_for(text, 1, true).unwrap();
        let mut csv = Vec::new();
        let mut sampler = Sampler::new(&mut csv);
        Simulation::new(&scenario, config(policy, 1, 2 * SECOND))
            .unwrap()
            .run(Some(&mut sampler))
            .unwrap();
        let csv = String::from_utf8(csv).unwrap();
        // time_ns,task,cpu,state,vruntime,util_avg,... from 1 s on (settled).
        let utils: Vec<u64> = csv
            .lines()
            .skip(1)
            .map(|line| line.split(',').collect::<Vec<_>>())
            .filter(|f| f[1] == "periodic" && f[0].parse::<u64>().unwrap() >= SECOND)
            .map(|f| f[5].parse().unwrap())
            .collect();
        assert!(utils.len() > 900, "{policy}: {} samples", utils.len());
        let (min, max) = (utils.iter().min().unwrap(), utils.iter().max().unwrap());
        assert_eq!((*min, *max), (225, 288), "{policy}");
    }
}

#[test]
fn an_affinity_change_migrates_the_task_with_its_signals() {
    // §2.6: a migrated task takes its PELT signals along (detach on the old CPU,
    // attach on the new one), so a CPU hog's rising util_avg keeps rising across
    // the move instead of restarting as a new task's.
    let text = r#"{"tasks": {"t": {"loop": 1, "phases": {
                    "on0": {"cpus": [0], "run": 50000},
                    "on1": {"cpus": [1], "run": 50000}}}}}"#;
    for policy in ["cfs", "eevdf"] {
        let scenario = parse_and_validate_for(text, 2, true).unwrap();
        let mut csv = Vec::new();
        let mut sampler = Sampler::new(&mut csv);
        let results = Simulation::new(&scenario, config(policy, 2, SECOND))
            .unwrap()
            .run(Some(&mut sampler))
            .unwrap();
        assert_eq!(results.end_ns, 100 * MS, "{policy}");
        assert_eq!(results.tasks[0].migrations, 1);
        assert_eq!(results.cpus[0].busy_ns, 50 * MS);
        assert_eq!(results.cpus[1].busy_ns, 50 * MS);
        let csv = String::from_utf8(csv).unwrap();
        let sample = |time: u64| -> (String, u64) {
            let line = csv
                .lines()
                .find(|l| l.starts_with(&format!("{time},t,")))
                .unwrap();
            let fields: Vec<&str> = line.split(',').collect();
            (fields[2].to_string(), fields[5].parse().unwrap())
        };
        let (before_cpu, before) = sample(49 * MS);
        let (after_cpu, after) = sample(51 * MS);
        assert_eq!((before_cpu.as_str(), after_cpu.as_str()), ("0", "1"));
        // §2.5: it started at 512 (half the idle CPU's capacity) and rose since.
        assert!(before > 512, "{policy}: util {before}");
        assert!(after >= before, "{policy}: util {before} -> {after}");
    }
}

#[test]
fn rt_tasks_run_above_every_fair_slot_policy() {
    // sched(7): a SCHED_FIFO task runs as soon as it wakes (here 3 ms every 10 ms, so
    // the fair hog beside it gets the other 70 %); two SCHED_RR peers alternate in
    // 100 ms slices (RR_TIMESLICE) and starve the fair hog on their CPU (RT
    // throttling is off by default in the core).
    let text = r#"{ "tasks": {
        "fifo": {"policy": "SCHED_FIFO", "priority": 50, "cpus": [0], "run": 3000,
                 "timer": {"ref": "unique", "period": 10000}},
        "rr": {"policy": "SCHED_RR", "priority": 10, "cpus": [1], "instance": 2, "run": 300000},
        "hog0": {"cpus": [0], "run": 2000000}, "hog1": {"cpus": [1], "run": 2000000} } }"#;
    for policy in ["rr", "cfs", "eevdf"] {
        let results = simulate(text, policy, 2, SECOND);
        let fifo = results.tasks.iter().find(|t| t.name == "fifo").unwrap();
        assert_eq!(fifo.runtime_ns, 300 * MS, "{policy}");
        assert_eq!(
            fifo.wakeup_latency.max, 0,
            "{policy}: FIFO preempts at once"
        );
        assert_eq!(runtime(&results, "hog0"), 700 * MS, "{policy}");
        assert_eq!(runtime(&results, "rr-0"), 500 * MS, "{policy}");
        assert_eq!(runtime(&results, "rr-1"), 500 * MS, "{policy}");
        assert_eq!(runtime(&results, "hog1"), 0, "{policy}");
    }
}
