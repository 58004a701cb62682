//! CFS bandwidth control (`cpu.max`, `cpu.max.burst`) in the simulator, against the
//! analytic expectations of docs/linux-sched-reference.md §4 (§4.2 runtime flow, §4.3
//! statistics, §4.4 hierarchy, §4.5 derived expectations), under both fair policies.
//!
//! Every expected value below is derived in the comments from the rules of §4, for
//! HZ=1000 (runtime charged at ticks of 1 ms), no hrtick, 5 ms slices, and period timers
//! aligned on multiples of the period from t = 0. What a task ran in each period window
//! is reconstructed from the context-switch trace.

use fairway_rtapp::parse_and_validate_for;
use fairway_sched::bandwidth::PeriodTimerStart;
use fairway_sched::run_queue::CpuCapacity;
use fairway_sim::results::{GroupResult, Results};
use fairway_sim::{Config, Simulation, policy_kind};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;
/// HZ=1000: runtime is charged to the groups at each 1 ms tick (no hrtick).
const TICK: u64 = MS;
/// `sysctl_sched_cfs_bandwidth_slice` (§4.1).
const SLICE: u64 = 5 * MS;
/// `min_cfs_rq_runtime` (§4.1): what a run queue that goes idle keeps.
const MIN_CFS_RQ_RUNTIME: u64 = MS;
/// Both fair picks; bandwidth control sits below them and must hold under each.
const POLICIES: [&str; 2] = ["eevdf", "cfs"];

fn config(policy: &str, cpus: usize, duration_ns: u64, balance: bool) -> Config {
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
        balance,
        uclamp: true,
        bandwidth_timer: PeriodTimerStart::Aligned,
        cfs_bandwidth: false,
        dvfs: None,
    }
}

/// Runs `text` and checks what every run must satisfy: the trace accounts for every
/// task's runtime, and the tasks' runtime is the CPUs' busy time.
fn simulate(text: &str, policy: &str, cpus: usize, duration_ns: u64, balance: bool) -> Results {
    let scenario = parse_and_validate_for(text, cpus, true).unwrap();
    let results = Simulation::new(&scenario, config(policy, cpus, duration_ns, balance))
        .unwrap()
        .run(None)
        .unwrap_or_else(|e| panic!("{policy}: {e}"));
    let runtime: u64 = results.tasks.iter().map(|t| t.runtime_ns).sum();
    let busy: u64 = results.cpus.iter().map(|c| c.busy_ns).sum();
    assert_eq!(runtime, busy, "{policy}: no task time lost or invented");
    let mut traced = vec![0u64; results.tasks.len()];
    for run in runs(&results) {
        traced[run.task] += run.end - run.start;
    }
    for (task, traced) in results.tasks.iter().zip(&traced) {
        assert_eq!(
            task.runtime_ns, *traced,
            "{policy}: {} runtime against its switch trace",
            task.name
        );
    }
    results
}

/// One stretch of a task on a CPU, from the switch trace.
#[derive(Clone, Copy, Debug)]
struct Run {
    task: usize,
    cpu: usize,
    start: u64,
    end: u64,
}

/// Every stretch of every task on every CPU, rebuilt from the switch trace (a task runs
/// from the switch that picks it to the next switch on its CPU, or the end of the run).
fn runs(results: &Results) -> Vec<Run> {
    let mut current: Vec<Option<(usize, u64)>> = vec![None; results.cpus.len()];
    let mut runs = Vec::new();
    for switch in &results.switches {
        let slot = &mut current[switch.cpu];
        if let Some((task, start)) = *slot {
            assert_eq!(
                switch.previous,
                Some(task),
                "switch trace out of step on cpu{} at {} ns",
                switch.cpu,
                switch.time_ns
            );
            if switch.time_ns > start {
                runs.push(Run {
                    task,
                    cpu: switch.cpu,
                    start,
                    end: switch.time_ns,
                });
            }
        }
        *slot = switch.next.map(|task| (task, switch.time_ns));
    }
    for (cpu, slot) in current.iter().enumerate() {
        if let Some((task, start)) = *slot
            && results.end_ns > start
        {
            runs.push(Run {
                task,
                cpu,
                start,
                end: results.end_ns,
            });
        }
    }
    runs
}

/// What the tasks selected by `tasks` ran in `[from, to)`, summed over CPUs.
fn ran_in(runs: &[Run], tasks: &dyn Fn(usize) -> bool, from: u64, to: u64) -> u64 {
    runs.iter()
        .filter(|r| tasks(r.task))
        .map(|r| r.end.min(to).saturating_sub(r.start.max(from)))
        .sum()
}

/// Per period window `[k·period, (k+1)·period)` up to the end of the run (the last
/// window cut at the end), what the tasks selected ran in it.
fn per_window(results: &Results, tasks: &dyn Fn(usize) -> bool, period: u64) -> Vec<u64> {
    let runs = runs(results);
    (0..results.end_ns.div_ceil(period))
        .map(|k| {
            ran_in(
                &runs,
                tasks,
                k * period,
                ((k + 1) * period).min(results.end_ns),
            )
        })
        .collect()
}

fn task_index(results: &Results, name: &str) -> usize {
    results
        .tasks
        .iter()
        .position(|t| t.name == name)
        .unwrap_or_else(|| panic!("no task {name}"))
}

fn runtime(results: &Results, name: &str) -> u64 {
    results.tasks[task_index(results, name)].runtime_ns
}

fn group<'a>(results: &'a Results, path: &str) -> &'a GroupResult {
    results
        .groups
        .iter()
        .find(|g| g.path == path)
        .unwrap_or_else(|| panic!("no limited group {path}"))
}

/// Whether task `task` is in group `path` (the path of its first phase).
fn in_group(results: &Results, task: usize, path: &str) -> bool {
    results.tasks[task]
        .taskgroup
        .as_ref()
        .is_some_and(|(p, _)| p == path)
}

fn assert_within(got: u64, expected: u64, tolerance: u64, what: &str) {
    assert!(
        got.abs_diff(expected) <= tolerance,
        "{what}: got {got} ns, expected {expected} ± {tolerance} ns"
    );
}

/// A CPU hog (20 s of work, longer than any run here) in `group`, pinned to `cpu`.
fn hog(name: &str, group: Option<&str>, cpu: Option<usize>) -> String {
    let group = group.map_or(String::new(), |g| format!(r#""taskgroup": "{g}", "#));
    let cpus = cpu.map_or(String::new(), |c| format!(r#""cpus": [{c}], "#));
    format!(r#""{name}": {{ {group}{cpus}"run": 20000000 }}"#)
}

/// A scenario with `groups` (path, fields) and `tasks`.
fn scenario(groups: &[(&str, &str)], tasks: &[String]) -> String {
    let groups: Vec<String> = groups
        .iter()
        .map(|(path, fields)| format!(r#""{path}": {{ {fields} }}"#))
        .collect();
    format!(
        r#"{{ "global": {{ "duration": -1, "taskgroups": {{ {} }} }}, "tasks": {{ {} }} }}"#,
        groups.join(", "),
        tasks.join(", ")
    )
}

#[test]
fn one_hog_at_25_ms_per_100_ms_runs_25_ms_per_period() {
    // §4.5, first case. The pool starts full (25 ms). The run queue borrows 5 ms slices
    // at ticks until the pool is empty: at 25 ms its runtime_remaining reaches 0, the
    // last 1 ns attempt fails and it is throttled for the other 75 ms. Each refill (at
    // 100, 200, ... 1000 ms: ten timer periods, the run ending at 1050 ms) pays its
    // debt + 1 ns out of the new 25 ms and unthrottles it, so each window again holds
    // 25 ms: a charge that crosses zero part-way would overrun by less than one tick,
    // repaid from the next period, hence ± 1 tick. nr_periods = 10; it is throttled at
    // every refill, nr_throttled = 10; throttled_time = Σ (100 ms − ran) over the 10
    // completed throttles = 750 ms (the one in progress at the end, 1025..1050 ms, is
    // not counted yet: `unthrottle_cfs_rq` adds it).
    let text = scenario(
        &[("/a", r#""cpu.max": "25000 100000""#)],
        &[hog("hog", Some("/a"), None)],
    );
    for policy in POLICIES {
        let results = simulate(&text, policy, 1, 1050 * MS, false);
        let hog = task_index(&results, "hog");
        let windows = per_window(&results, &|t| t == hog, 100 * MS);
        assert_eq!(windows.len(), 11, "{policy}");
        for (k, &ran) in windows.iter().enumerate() {
            assert_within(ran, 25 * MS, TICK, &format!("{policy}: window {k}"));
        }
        let g = group(&results, "/a");
        assert_eq!(
            (g.quota_ns, g.period_ns, g.burst_ns),
            (Some(25 * MS), 100 * MS, 0)
        );
        assert_eq!(g.stats.nr_periods, 10, "{policy}: {:?}", g.stats);
        assert_eq!(g.stats.nr_throttled, 10, "{policy}: {:?}", g.stats);
        assert_within(
            g.stats.throttled_time,
            750 * MS,
            2 * TICK,
            &format!("{policy}: throttled_time"),
        );
        assert_eq!((g.stats.nr_bursts, g.stats.burst_time), (0, 0), "{policy}");
        assert_eq!(g.local_throttled_ns.len(), 1);
    }
}

#[test]
fn two_cpus_share_50_ms_per_100_ms() {
    // §4.5, second case: one pool of 50 ms for both CPUs, each borrowing slices until it
    // is empty, then both throttled until the refill: 50 ms per window in total, ± one
    // tick of overrun per CPU. Each CPU is throttled for the rest of its 100 ms, so
    // throttled_time counts 2 × 100 − 50 = 150 ms per period: 1500 ms over the 10
    // completed periods (a few ms either way for the overruns moved between periods).
    // Each CPU's own throttled time (cpu.stat.local) is non-zero and they sum to the
    // group's, give or take the throttles still in progress at the end (at most the
    // 50 ms after the last refill, per CPU).
    let text = scenario(
        &[("/a", r#""cpu.max": "50000 100000""#)],
        &[
            hog("h0", Some("/a"), Some(0)),
            hog("h1", Some("/a"), Some(1)),
        ],
    );
    for policy in POLICIES {
        let results = simulate(&text, policy, 2, 1050 * MS, false);
        let windows = per_window(&results, &|t| in_group(&results, t, "/a"), 100 * MS);
        for (k, &ran) in windows.iter().enumerate() {
            assert_within(ran, 50 * MS, 2 * TICK, &format!("{policy}: window {k}"));
        }
        let all_runs = runs(&results);
        for (cpu, name) in ["h0", "h1"].iter().enumerate() {
            let task = task_index(&results, name);
            assert!(
                all_runs
                    .iter()
                    .filter(|r| r.task == task)
                    .all(|r| r.cpu == cpu),
                "{policy}: {name} stays on cpu{cpu}"
            );
            assert!(runtime(&results, name) > 0, "{policy}: {name} ran");
        }
        let g = group(&results, "/a");
        assert_eq!(g.stats.nr_periods, 10, "{policy}: {:?}", g.stats);
        assert_eq!(g.stats.nr_throttled, 10, "{policy}: {:?}", g.stats);
        assert_within(
            g.stats.throttled_time,
            1500 * MS,
            5 * MS,
            &format!("{policy}: throttled_time"),
        );
        assert_eq!(g.local_throttled_ns.len(), 2);
        assert!(
            g.local_throttled_ns.iter().all(|&ns| ns > 0),
            "{policy}: local throttled {:?}",
            g.local_throttled_ns
        );
        let local: u64 = g.local_throttled_ns.iter().sum();
        assert_within(
            local,
            g.stats.throttled_time,
            2 * 50 * MS,
            &format!("{policy}: local throttled sum"),
        );
    }
}

#[test]
fn two_cpus_share_150_ms_per_100_ms_three_quarters_each() {
    // §4.5, third case: a pool of 150 ms per 100 ms drained by two CPU-bound CPUs at the
    // same rate empties after 75 ms: each task runs about 75 % of the time.
    let text = scenario(
        &[("/a", r#""cpu.max": "150000 100000""#)],
        &[
            hog("h0", Some("/a"), Some(0)),
            hog("h1", Some("/a"), Some(1)),
        ],
    );
    for policy in POLICIES {
        let results = simulate(&text, policy, 2, SECOND, false);
        for name in ["h0", "h1"] {
            let share = runtime(&results, name) as f64 / SECOND as f64;
            assert!(
                (0.70..=0.80).contains(&share),
                "{policy}: {name} ran {:.1} %",
                share * 100.0
            );
        }
        let windows = per_window(&results, &|t| in_group(&results, t, "/a"), 100 * MS);
        for (k, &ran) in windows.iter().enumerate() {
            assert_within(ran, 150 * MS, 2 * TICK, &format!("{policy}: window {k}"));
        }
    }
}

/// A task that runs 1 ms, sleeps 250 ms, then is CPU-bound, in `/b` = 20 ms per 100 ms
/// with `burst`.
fn burst_scenario(burst_us: u64) -> String {
    format!(
        r#"{{ "global": {{ "duration": -1, "taskgroups": {{
              "/b": {{ "cpu.max": "20000 100000", "cpu.max.burst": {burst_us} }} }} }},
            "tasks": {{ "t": {{ "taskgroup": "/b", "loop": 1, "phases": {{
              "p1": {{ "run": 1000, "sleep": 250000 }},
              "p2": {{ "run": 2000000 }} }} }} }} }}"#
    )
}

#[test]
fn burst_carries_an_idle_period_quota_into_the_next() {
    // §4.2 refill with burst. t = 0: the pool starts full, 20 ms. The task runs 1 ms;
    // its first charge borrows a slice (pool 14 ms, period timer armed for 100 ms); it
    // sleeps and its run queue returns all but min_cfs_rq_runtime (1 ms) of its local
    // runtime: pool 18 ms, 1 ms kept on the CPU.
    // 100 ms: refill 18 + 20 = 38 ≤ quota + burst = 40; snap 38; no demand since, so
    // `idle` is set (the timer stays armed for one more period).
    // 200 ms: refill 38 + 20 = 58, capped at 40; snap 40; the period [100, 200) was idle
    // and nothing is throttled: the timer stops.
    // 251 ms: the task wakes, CPU-bound: 1 ms kept + 40 ms of pool = 41 ms, throttled at
    // 292 ms: the window [200, 300) holds 41 ms ± 1 tick: the 20 ms quota, the 20 ms
    // carried by burst and the 1 ms the CPU kept. Its first borrow (252 ms) re-armed the
    // timer on the grid, for 300 ms.
    // 300 ms: refill 0 + 20 = 20 < snap 40: 20 ms of burst used, nr_bursts = 1,
    // burst_time = 20 ms. From then on the pool never exceeds the 20 ms refill (it is
    // drained every period, the 1 ns paid to unthrottle coming out of it): 20 ms per
    // window ± 1 tick, and no more bursts.
    // Counted periods: 100, 200, then 300 ... 900 ms (the run ends at 1000 ms, exactly
    // on a boundary, which is not counted): nr_periods = 9, and nr_throttled = 7 (300
    // ... 900 ms). throttled_time: 292 → 300 ms, then 80 ms in each of the six periods
    // from 300 to 900 ms: 8 + 480 = 488 ms.
    // Without burst the refills at 100 and 200 ms cap the pool at 20 ms: 21 ms in
    // [200, 300) (20 + the 1 ms kept), throttled 272 → 300 ms: 28 + 480 = 508 ms, and
    // never a burst.
    for policy in POLICIES {
        for (burst_us, first_active, throttled) in
            [(20_000, 41 * MS, 488 * MS), (0, 21 * MS, 508 * MS)]
        {
            let what = format!("{policy}, burst {burst_us} us");
            let results = simulate(&burst_scenario(burst_us), policy, 1, SECOND, false);
            let t = task_index(&results, "t");
            let windows = per_window(&results, &|task| task == t, 100 * MS);
            assert_eq!(windows.len(), 10, "{what}");
            assert_eq!(windows[0], MS, "{what}: the first 1 ms run");
            assert_eq!(windows[1], 0, "{what}: asleep all period");
            assert_within(windows[2], first_active, TICK, &format!("{what}: window 2"));
            for (k, &ran) in windows.iter().enumerate().skip(3) {
                assert_within(ran, 20 * MS, TICK, &format!("{what}: window {k}"));
            }
            let g = group(&results, "/b");
            assert_eq!(g.burst_ns, burst_us * 1000, "{what}");
            assert_eq!(
                (g.stats.nr_periods, g.stats.nr_throttled),
                (9, 7),
                "{what}: {:?}",
                g.stats
            );
            assert_within(
                g.stats.throttled_time,
                throttled,
                2 * TICK,
                &format!("{what}: throttled_time"),
            );
            if burst_us > 0 {
                assert_eq!(g.stats.nr_bursts, 1, "{what}: {:?}", g.stats);
                assert_within(
                    g.stats.burst_time,
                    20 * MS,
                    TICK,
                    &format!("{what}: burst_time"),
                );
            } else {
                assert_eq!((g.stats.nr_bursts, g.stats.burst_time), (0, 0), "{what}");
            }
        }
    }
}

#[test]
fn a_parent_limit_caps_its_children() {
    // §4.4: a throttled parent throttles its whole subtree, and each level charges its
    // own pool. Two CPU-bound tasks of /p/c on 2 CPUs, 1.05 s (windows of 100 ms):
    // - /p 20 ms per 100 ms, /p/c unlimited: /p/c inherits the parent's limit: 20 ms per
    //   window in total;
    // - /p 20 ms, /p/c 50 ms: the parent's 20 ms binds;
    // - /p 80 ms, /p/c 10 ms: the child's 10 ms binds.
    // ± one tick of overrun per CPU.
    for (parent, child, expected) in [
        ("20000 100000", "max", 20 * MS),
        ("20000 100000", "50000 100000", 20 * MS),
        ("80000 100000", "10000 100000", 10 * MS),
    ] {
        let text = scenario(
            &[
                ("/p", &format!(r#""cpu.max": "{parent}""#)),
                ("/p/c", &format!(r#""cpu.max": "{child}""#)),
            ],
            &[
                hog("c0", Some("/p/c"), Some(0)),
                hog("c1", Some("/p/c"), Some(1)),
            ],
        );
        for policy in POLICIES {
            let what = format!("{policy}: /p {parent}, /p/c {child}");
            let results = simulate(&text, policy, 2, 1050 * MS, false);
            let windows = per_window(&results, &|t| in_group(&results, t, "/p/c"), 100 * MS);
            for (k, &ran) in windows.iter().enumerate() {
                assert_within(ran, expected, 2 * TICK, &format!("{what}: window {k}"));
            }
            assert!(
                runtime(&results, "c0") > 0 && runtime(&results, "c1") > 0,
                "{what}"
            );
        }
    }
}

#[test]
fn an_unlimited_neighbour_runs_while_the_limited_group_is_throttled() {
    // One CPU, a CPU-bound task of /lim (30 ms per 100 ms) against an unlimited one, in
    // the sibling group /free or at the root. Their equal weights would give /lim 50 ms
    // per 100 ms; its quota caps it at 30 ms (± 1 tick), taken within the first ~60 ms
    // of each period, and the other task runs the rest: the CPU is never idle.
    for neighbour in [Some("/free"), None] {
        let text = scenario(
            &[("/lim", r#""cpu.max": "30000 100000""#)],
            &[
                hog("limited", Some("/lim"), Some(0)),
                hog("free", neighbour, Some(0)),
            ],
        );
        for policy in POLICIES {
            let what = format!("{policy}, neighbour in {neighbour:?}");
            let results = simulate(&text, policy, 1, SECOND, false);
            assert_eq!(results.cpus[0].busy_ns, SECOND, "{what}: never idle");
            let limited = task_index(&results, "limited");
            let windows = per_window(&results, &|t| t == limited, 100 * MS);
            for (k, &ran) in windows.iter().enumerate() {
                assert_within(ran, 30 * MS, TICK, &format!("{what}: window {k}"));
            }
            assert_within(
                runtime(&results, "free"),
                700 * MS,
                TICK,
                &format!("{what}: free"),
            );
        }
    }
}

/// xorshift64: a tiny deterministic generator for the randomised scenarios.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform enough in `low..=high`.
    fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }
}

/// One setting of a randomised group's limit, in ns: from when, and its values
/// (`quota` `None`: `max`).
#[derive(Clone, Copy, Debug)]
struct Epoch {
    from: u64,
    quota: Option<u64>,
    period: u64,
    burst: u64,
}

/// A limited group of a randomised scenario: its settings over the run.
struct RandomGroup {
    path: String,
    epochs: Vec<Epoch>,
}

/// A random limit: period 10-100 ms, quota 1 ms up to two periods, burst none or
/// up to the quota; with `may_lift`, `max` one time in four.
fn random_limit(rng: &mut XorShift, from: u64, may_lift: bool) -> Epoch {
    let period = rng.range(10, 100) * MS;
    let quota = rng.range(1, 2 * period / MS) * MS;
    let burst = if rng.next().is_multiple_of(2) {
        0
    } else {
        rng.range(0, quota / MS) * MS
    };
    Epoch {
        from,
        quota: (!may_lift || !rng.next().is_multiple_of(4)).then_some(quota),
        period,
        burst,
    }
}

/// 3-4 groups with random limits, half of them rewritten once or twice during the
/// run (`cpu.max.changes`, sometimes to `max`), each with 1-4 tasks that run and
/// sleep in two phases (some CPU-bound), plus an unlimited root task; nothing pinned.
fn random_scenario(rng: &mut XorShift) -> (String, Vec<RandomGroup>) {
    let mut groups = Vec::new();
    let mut tasks = Vec::new();
    for g in 0..rng.range(3, 4) {
        let mut epochs = vec![random_limit(rng, 0, false)];
        if rng.next().is_multiple_of(2) {
            let mut at = 0;
            for _ in 0..rng.range(1, 2) {
                at = rng.range(at / MS + 50, at / MS + 400) * MS;
                epochs.push(random_limit(rng, at, true));
            }
        }
        let path = format!("/g{g}");
        for t in 0..rng.range(1, 4) {
            let mut phases = Vec::new();
            for p in 0..2 {
                let run = rng.range(1, 30) * 1000;
                let sleep = rng.range(0, 50) * 1000;
                let sleep = if sleep == 0 {
                    String::new()
                } else {
                    format!(r#", "sleep": {sleep}"#)
                };
                phases.push(format!(r#""p{p}": {{ "run": {run}{sleep} }}"#));
            }
            tasks.push(format!(
                r#""g{g}t{t}": {{ "taskgroup": "{path}", "phases": {{ {} }} }}"#,
                phases.join(", ")
            ));
        }
        groups.push(RandomGroup { path, epochs });
    }
    tasks.push(r#""root": { "run": 7000, "sleep": 3000 }"#.to_string());
    let cpu_max = |e: &Epoch| {
        format!(
            r#""cpu.max": "{} {}", "cpu.max.burst": {}"#,
            e.quota
                .map_or("max".to_string(), |q| (q / 1000).to_string()),
            e.period / 1000,
            e.burst / 1000
        )
    };
    let fields: Vec<String> = groups
        .iter()
        .map(|g| {
            let changes: Vec<String> = g.epochs[1..]
                .iter()
                .map(|e| format!(r#"{{ "at": {}, {} }}"#, e.from / 1000, cpu_max(e)))
                .collect();
            format!(
                r#""{}": {{ {}, "cpu.max.changes": [{}] }}"#,
                g.path,
                cpu_max(&g.epochs[0]),
                changes.join(", ")
            )
        })
        .collect();
    let text = format!(
        r#"{{ "global": {{ "duration": -1, "taskgroups": {{ {} }} }}, "tasks": {{ {} }} }}"#,
        fields.join(", "),
        tasks.join(", ")
    );
    (text, groups)
}

/// The windows of a group's limit up to `end`, cut at each refill (each firing of its
/// period timer) and at each write of the limit (a write refills too), each with the
/// setting in force when it began.
fn limit_windows(epochs: &[Epoch], refills: &[u64], end: u64) -> Vec<(u64, u64, Epoch)> {
    let mut cuts: Vec<u64> = epochs
        .iter()
        .map(|e| e.from)
        .chain(refills.iter().copied())
        .filter(|&t| t < end)
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts.push(end);
    cuts.windows(2)
        .map(|w| {
            let epoch = epochs.iter().rev().find(|e| e.from <= w[0]).unwrap();
            (w[0], w[1], *epoch)
        })
        .collect()
}

#[test]
fn no_group_ever_runs_more_than_its_pool_allows() {
    // The invariant, from §4.2. In a window between two refills of a group's pool (its
    // period timer's firings, or a write of its limit, which refills it too: a write
    // keeps the timer and its grid, §4.1), what its tasks ran on the CPUs came from:
    // - the pool, which after the refill holds at most quota + burst (the refill caps
    //   it there; between refills it only shrinks, or takes back runtime a CPU returned
    //   as slack, which that CPU then no longer holds);
    // - what each CPU's run queue still held when the window began: its
    //   runtime_remaining, never more than one slice (a borrow tops it up to 5 ms, a
    //   grant to debt + 1 ns); this also covers a tick at k·P borrowing from the old
    //   pool before the refill;
    // - an overrun at the end of the window: runtime is charged at ticks, so a CPU can
    //   run up to one tick past its runtime (left as debt, repaid next period).
    // So: ran ≤ quota + burst + nr_cpus × (SLICE + TICK).
    // Over the whole run, the pools took in at most one quota per window (a refill adds
    // one quota, and so does a write), and the CPUs' debts were repaid except those
    // forgiven at each write (it sets every CPU's runtime to 0) and those left at the
    // end, each at most one tick's overrun: ran while limited ≤ Σ over windows of the
    // quota + the number of settings × nr_cpus × TICK.
    // Also: every task ran (no task starved for the whole run), and the tasks' runtime
    // is the CPUs' busy time (checked by `simulate`).
    const CPUS: u64 = 4;
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    // That the runs exercise what the bound is about: throttling, burst, migrations,
    // limits rewritten and lifted.
    let (mut throttled, mut bursts, mut migrations, mut rewrites, mut lifts) = (0, 0, 0, 0, 0);
    for seed in 0..6 {
        let (text, groups) = random_scenario(&mut rng);
        for policy in POLICIES {
            let what = format!("seed {seed}, {policy}");
            let results = simulate(&text, policy, CPUS as usize, SECOND, true);
            for task in &results.tasks {
                assert!(
                    task.runtime_ns > 0,
                    "{what}: {} never ran\n{text}",
                    task.name
                );
                migrations += task.migrations;
            }
            for g in &groups {
                let result = group(&results, &g.path);
                let last = g.epochs.last().unwrap();
                assert_eq!(
                    (result.quota_ns, result.period_ns, result.burst_ns),
                    (last.quota, last.period, last.burst),
                    "{what}: {} settings (never scaled up at these periods)",
                    g.path
                );
                throttled += result.stats.nr_throttled;
                bursts += result.stats.nr_bursts;
                rewrites += g.epochs.len() - 1;
                lifts += g.epochs.iter().filter(|e| e.quota.is_none()).count();
                let windows = limit_windows(&g.epochs, &result.period_timer_ns, results.end_ns);
                let runs = runs(&results);
                let member = |t: usize| in_group(&results, t, &g.path);
                let mut input = 0;
                let mut limited_ran = 0;
                for &(from, to, epoch) in &windows {
                    let Some(quota) = epoch.quota else {
                        continue;
                    };
                    let ran = ran_in(&runs, &member, from, to);
                    input += quota;
                    limited_ran += ran;
                    let bound = quota + epoch.burst + CPUS * (SLICE + TICK);
                    assert!(
                        ran <= bound,
                        "{what}: {} ({epoch:?}) ran {ran} ns in [{from}, {to}), bound \
                         {bound}\n{text}",
                        g.path,
                    );
                }
                let total_bound = input + g.epochs.len() as u64 * CPUS * TICK;
                assert!(
                    limited_ran <= total_bound,
                    "{what}: {} ran {limited_ran} ns while limited, bound {total_bound} \
                     ({:?})\n{text}",
                    g.path,
                    result.stats
                );
            }
        }
    }
    assert!(
        throttled > 0 && bursts > 0 && migrations > 0 && rewrites > 0 && lifts > 0,
        "throttled {throttled}, bursts {bursts}, migrations {migrations}, rewrites \
         {rewrites}, lifts {lifts}"
    );
}

/// `MIN_CFS_RQ_RUNTIME` is the 1 ms the burst test counts as kept on the CPU.
#[test]
fn constants_match_the_reference() {
    assert_eq!(SLICE, fairway_sched::bandwidth::SLICE);
    assert_eq!(
        MIN_CFS_RQ_RUNTIME,
        fairway_sched::bandwidth::MIN_CFS_RQ_RUNTIME
    );
}
