//! rt-app's events in the simulator, each against the behaviour rt-app documents
//! (`docs/rtapp.md`), with times worked out by hand. Tasks are pinned to CPUs of
//! their own where contention for a CPU would blur the times.

use fairway_rtapp::parse_and_validate;
use fairway_sched::run_queue::{CpuCapacity, PolicyKind};
use fairway_sim::results::Results;
use fairway_sim::{Config, SimError, Simulation};

const MS: u64 = 1_000_000;

fn config(cpus: usize, duration_ns: Option<u64>) -> Config {
    Config {
        policy: PolicyKind::RoundRobin { slice: 4 * MS },
        policy_name: "rr".into(),
        capacities: vec![CpuCapacity::default(); cpus],
        tick_ns: 4 * MS,
        duration_ns,
        sample_interval_ns: MS,
        hrtick: true,
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

fn simulate(text: &str, cpus: usize) -> Result<Results, SimError> {
    let scenario = parse_and_validate(text, cpus).unwrap();
    Simulation::new(&scenario, config(cpus, None))?.run(None)
}

fn finished_at(results: &Results, name: &str) -> u64 {
    let task = results
        .tasks
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no task {name}"));
    task.finished_at_ns
        .unwrap_or_else(|| panic!("{name} did not finish"))
}

#[test]
fn lock_makes_the_second_task_wait_for_the_unlock() {
    // a holds m for 10 ms of work; b, 1 ms later, waits for it, then works 5 ms.
    let text = r#"{"tasks": {
        "a": {"loop": 1, "cpus": [0], "lock": "m", "run": 10000, "unlock": "m"},
        "b": {"loop": 1, "cpus": [1], "delay": 1000, "lock": "m", "run": 5000, "unlock": "m"}}}"#;
    let results = simulate(text, 2).unwrap();
    assert_eq!(finished_at(&results, "a"), 10 * MS);
    assert_eq!(finished_at(&results, "b"), 15 * MS);
}

#[test]
fn wait_and_signal_hand_over_in_order() {
    // w waits on c at 0 (holding m, released by the wait); s signals at 3 ms
    // without holding m: w retakes m, works 2 ms.
    let text = r#"{"tasks": {
        "w": {"loop": 1, "cpus": [0], "lock": "m", "wait": {"ref": "c", "mutex": "m"},
              "run": 2000, "unlock": "m"},
        "s": {"loop": 1, "cpus": [1], "run": 3000, "signal": "c"}}}"#;
    let results = simulate(text, 2).unwrap();
    assert_eq!(finished_at(&results, "s"), 3 * MS);
    assert_eq!(finished_at(&results, "w"), 5 * MS);
}

#[test]
fn a_broadcast_wakes_every_waiter() {
    let text = r#"{"tasks": {
        "w": {"instance": 2, "loop": 1, "lock": "m", "wait": {"ref": "c", "mutex": "m"},
              "unlock": "m", "run": 1000},
        "s": {"loop": 1, "cpus": [2], "run": 2000, "broad": "c"}}}"#;
    let results = simulate(text, 3).unwrap();
    // Both waiters are woken at 2 ms, each on its own CPU (placement spreads them).
    assert_eq!(finished_at(&results, "w-0"), 3 * MS);
    assert_eq!(finished_at(&results, "w-1"), 3 * MS);
}

#[test]
fn sync_partners_alternate_on_one_cpu() {
    // On one CPU, ping and pong each work 1 ms per turn and wake the other with
    // `sync`: the turns alternate, 3 each.
    let text = r#"{"tasks": {
        "ping": {"loop": 3, "run": 1000, "sync": {"ref": "c", "mutex": "m"}},
        "pong": {"loop": 3, "delay": 100, "run": 1000, "sync": {"ref": "c", "mutex": "m"}}},
        "global": {"duration": 1}}"#;
    let scenario = parse_and_validate(text, 1).unwrap();
    let results = Simulation::new(&scenario, config(1, None))
        .unwrap()
        .run(None)
        .unwrap();
    let order: Vec<&str> = results
        .switches
        .iter()
        .filter_map(|s| s.next.map(|n| results.tasks[n].name.as_str()))
        .collect();
    assert_eq!(order[..6], ["ping", "pong", "ping", "pong", "ping", "pong"]);
}

#[test]
fn a_barrier_releases_everyone_when_the_last_arrives() {
    // Three tasks reach the barrier after 1, 2 and 5 ms of work, then work 1 ms.
    let text = r#"{"tasks": {
        "a": {"loop": 1, "cpus": [0], "run": 1000, "barrier": "b", "run1": 1000},
        "b": {"loop": 1, "cpus": [1], "run": 2000, "barrier": "b", "run1": 1000},
        "c": {"loop": 1, "cpus": [2], "run": 5000, "barrier": "b", "run1": 1000}}}"#;
    let results = simulate(text, 3).unwrap();
    for name in ["a", "b", "c"] {
        assert_eq!(finished_at(&results, name), 6 * MS, "{name}");
    }
}

#[test]
fn a_semaphore_counts_posts() {
    // The producer posts at 1, 2 and 3 ms; the consumer, waiting from 0, works
    // 100 µs after each post it takes. Two posts made before it waits again are
    // remembered.
    let text = r#"{"tasks": {
        "producer": {"loop": 3, "cpus": [0], "run": 1000, "sem_post": "s"},
        "consumer": {"loop": 3, "cpus": [1], "sem_wait": "s", "run": 100}}}"#;
    let results = simulate(text, 2).unwrap();
    assert_eq!(finished_at(&results, "producer"), 3 * MS);
    assert_eq!(finished_at(&results, "consumer"), 3 * MS + 100_000);
}

#[test]
fn suspend_blocks_until_resumed_by_name() {
    let text = r#"{"tasks": {
        "sleeper": {"loop": 1, "cpus": [0], "suspend": "sleeper", "run": 1000},
        "waker": {"loop": 1, "cpus": [1], "run": 3000, "resume": "sleeper"}}}"#;
    let results = simulate(text, 2).unwrap();
    assert_eq!(finished_at(&results, "sleeper"), 4 * MS);
}

#[test]
fn fork_starts_instances_at_run_time() {
    // `child` has no instance of its own; the parent forks two, 1 ms apart.
    let text = r#"{"tasks": {
        "parent": {"loop": 1, "cpus": [0], "fork": "child", "run": 1000, "fork1": "child"},
        "child": {"instance": 0, "loop": 1, "cpus": [1, 2], "run": 2000}}}"#;
    let results = simulate(text, 3).unwrap();
    let names: Vec<&str> = results.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["parent", "child-0", "child-1"]);
    assert_eq!(finished_at(&results, "child-0"), 2 * MS);
    assert_eq!(finished_at(&results, "child-1"), 3 * MS);
}

#[test]
fn mem_and_iorun_are_work_of_their_size() {
    // 1,000 bytes per µs of work (fairway_contract::scenario::MEMORY_BYTES_PER_US).
    let text = r#"{"tasks": {"t": {"loop": 1, "mem": 2000000, "iorun": 3000000}}}"#;
    let results = simulate(text, 1).unwrap();
    assert_eq!(finished_at(&results, "t"), 5 * MS);
}

#[test]
fn a_deadlock_without_a_duration_is_reported_naming_the_tasks() {
    let text = r#"{"tasks": {
        "a": {"loop": 1, "cpus": [0], "lock": "m1", "run": 1000, "lock1": "m2"},
        "b": {"loop": 1, "cpus": [1], "lock": "m2", "run": 1000, "lock1": "m1"}}}"#;
    match simulate(text, 2) {
        Err(error) => assert_eq!(
            error.to_string(),
            "deadlock at 1000000 ns: every live task is blocked on a resource (a, b) and \
             global.duration does not end the run"
        ),
        Ok(_) => panic!("a deadlock ran to its end"),
    }
    // With a duration, the run simply ends then, as rt-app's would.
    let with_duration = text.replace(r#""tasks""#, r#""global": {"duration": 1}, "tasks""#);
    let results = simulate(&with_duration, 2).unwrap();
    assert_eq!(results.end_ns, 1_000 * MS);
}

#[test]
fn unlocking_a_mutex_not_held_is_an_error_naming_task_and_mutex() {
    let text = r#"{"tasks": {"t": {"loop": 1, "run": 1000, "unlock": "m"}}}"#;
    match simulate(text, 1) {
        Err(error) => assert_eq!(
            error.to_string(),
            "task t at 1000000 ns: releases mutex \"m\", which it does not hold"
        ),
        Ok(_) => panic!("accepted"),
    }
}

/// The classic priority inversion on one CPU (`docs/priority-inheritance.md`):
/// `low` takes m at 0 for 10 ms of work; `medium` (FIFO 50) arrives at 1 ms
/// with 20 ms of work; `high` (FIFO 90) arrives at 2 ms and wants m for 1 ms.
fn inversion(low_policy: &str, pi_enabled: bool) -> String {
    format!(
        r#"{{"global": {{"pi_enabled": {pi_enabled}}}, "tasks": {{
        "low": {{"loop": 1, {low_policy} "lock": "m", "run": 10000, "unlock": "m"}},
        "medium": {{"loop": 1, "policy": "SCHED_FIFO", "priority": 50, "delay": 1000,
                   "run": 20000}},
        "high": {{"loop": 1, "policy": "SCHED_FIFO", "priority": 90, "delay": 2000,
                 "lock": "m", "run": 1000, "unlock": "m"}}}}}}"#
    )
}

#[test]
fn without_inheritance_the_medium_task_holds_up_the_high_one() {
    // high blocks at 2 ms; medium runs its 19 ms left (to 21), low its 9 ms
    // left (to 30), then high its 1 ms: 31 ms.
    for low in [r#""policy": "SCHED_FIFO", "priority": 10,"#, ""] {
        let results = simulate(&inversion(low, false), 1).unwrap();
        assert_eq!(finished_at(&results, "medium"), 21 * MS, "{low}");
        assert_eq!(finished_at(&results, "low"), 30 * MS, "{low}");
        assert_eq!(finished_at(&results, "high"), 31 * MS, "{low}");
    }
}

#[test]
fn with_inheritance_the_owner_runs_at_the_waiters_priority() {
    // high blocks at 2 ms: low, an RT or a fair task, runs at priority 90 and
    // finishes its 9 ms left at 11; high takes m and is done at 12; medium's
    // 19 ms left end at 31.
    for low in [r#""policy": "SCHED_FIFO", "priority": 10,"#, ""] {
        let results = simulate(&inversion(low, true), 1).unwrap();
        assert_eq!(finished_at(&results, "low"), 11 * MS, "{low}");
        assert_eq!(finished_at(&results, "high"), 12 * MS, "{low}");
        assert_eq!(finished_at(&results, "medium"), 31 * MS, "{low}");
    }
}

#[test]
fn with_inheritance_the_mutex_goes_to_the_strongest_waiter() {
    // owner holds m 5 ms on CPU 0; weak (FIFO 10) queues at 1 ms, strong
    // (FIFO 80) at 2 ms, each on a CPU of its own: strong takes m at 5 ms and
    // works 3 ms (to 8), weak then works 3 ms (to 11). Without inheritance,
    // arrival order: weak 5-8, strong 8-11.
    let scenario = |pi: bool| {
        format!(
            r#"{{"global": {{"pi_enabled": {pi}}}, "tasks": {{
            "owner": {{"loop": 1, "cpus": [0], "lock": "m", "run": 5000, "unlock": "m"}},
            "weak": {{"loop": 1, "cpus": [1], "policy": "SCHED_FIFO", "priority": 10,
                     "delay": 1000, "lock": "m", "run": 3000, "unlock": "m"}},
            "strong": {{"loop": 1, "cpus": [2], "policy": "SCHED_FIFO", "priority": 80,
                       "delay": 2000, "lock": "m", "run": 3000, "unlock": "m"}}}}}}"#
        )
    };
    let results = simulate(&scenario(true), 3).unwrap();
    assert_eq!(finished_at(&results, "strong"), 8 * MS);
    assert_eq!(finished_at(&results, "weak"), 11 * MS);
    let results = simulate(&scenario(false), 3).unwrap();
    assert_eq!(finished_at(&results, "weak"), 8 * MS);
    assert_eq!(finished_at(&results, "strong"), 11 * MS);
}
