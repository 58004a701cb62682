//! rt-app's per-task logs (`--rtapp-logs`, `fairway_sim::rtapp_log`): each
//! row against times worked out by hand from the scenario, on CPUs of their
//! own (no contention) unless the case is about contention.

use fairway_rtapp::parse_and_validate;
use fairway_sched::run_queue::{CpuCapacity, PolicyKind};
use fairway_sim::rtapp_log::RtappLogRow;
use fairway_sim::{Config, Simulation};

const MS: u64 = 1_000_000;

fn config(cpus: usize, duration_ns: u64) -> Config {
    Config {
        policy: PolicyKind::RoundRobin { slice: 4 * MS },
        policy_name: "rr".into(),
        capacities: vec![CpuCapacity::default(); cpus],
        tick_ns: 4 * MS,
        duration_ns: Some(duration_ns),
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

fn logs(text: &str, cpus: usize, duration_ns: u64) -> Vec<Vec<RtappLogRow>> {
    let scenario = parse_and_validate(text, cpus).unwrap();
    let results = Simulation::new(&scenario, config(cpus, duration_ns))
        .unwrap()
        .with_rtapp_logs()
        .run(None)
        .unwrap();
    results.rtapp_logs.unwrap()
}

#[test]
fn a_periodic_task_alone_logs_its_run_its_slack_and_its_period() {
    // 4 ms of work every 16 ms: each loop starts on the 16 ms grid, runs
    // 4 ms, sleeps 12 ms (slack), wakes on time (wu_lat 0). Over 100 ms the
    // loops starting at 0, 16, ..., 80 ms have ended (the one at 96 ms has
    // not: rt-app logs a loop when it ends).
    let rows = logs(
        r#"{"global": {"duration": 1}, "tasks": {"p": {"cpus": [0], "run": 4000, "timer": {"ref": "unique", "period": 16000}}}}"#,
        1,
        100 * MS,
    );
    let rows = &rows[0];
    assert_eq!(rows.len(), 6);
    for (k, row) in rows.iter().enumerate() {
        let start = k as u64 * 16 * MS;
        assert_eq!(
            *row,
            RtappLogRow {
                phase: 0,
                perf: 4000,
                run_ns: 4 * MS,
                start_ns: start,
                end_ns: start + 16 * MS,
                rel_st_ns: start,
                slack_ns: 12 * MS as i64,
                c_duration_us: 4000,
                c_period_us: 16000,
                wu_lat_ns: 0,
            },
            "loop {k}"
        );
    }
}

#[test]
fn an_overrun_gives_negative_slack_and_the_relative_timer_restarts() {
    // 20 ms of work against a 16 ms period: the expiry has passed by 4 ms
    // when the timer event comes (slack -4 ms); relative mode restarts the
    // grid from there, so every loop is the same, 20 ms long.
    let rows = logs(
        r#"{"global": {"duration": 1}, "tasks": {"p": {"cpus": [0], "run": 20000, "timer": {"ref": "unique", "period": 16000}}}}"#,
        1,
        100 * MS,
    );
    let rows = &rows[0];
    assert_eq!(rows.len(), 4);
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row.start_ns, k as u64 * 20 * MS, "loop {k}");
        assert_eq!(row.end_ns - row.start_ns, 20 * MS, "loop {k}");
        assert_eq!(row.run_ns, 20 * MS, "loop {k}");
        assert_eq!(row.slack_ns, -4 * MS as i64, "loop {k}");
        assert_eq!((row.c_duration_us, row.c_period_us), (20000, 16000));
        assert_eq!(row.wu_lat_ns, 0, "loop {k}");
    }
}

#[test]
fn a_task_woken_behind_another_logs_its_wake_up_latency() {
    // Round robin with 4 ms slices on one CPU, no wake-up preemption.
    // b: 1 ms of work and a 5 ms timer, from 0. a: from 2 ms, 6 ms of work
    // once. b runs 0..1 ms and sleeps until 5 ms (slack 4 ms); a runs from
    // 2 ms, and its slice ends at 6 ms, when b, woken at 5 ms, runs: b's
    // wake-up latency is 1 ms and its first loop ends at 6 ms. Its second
    // loop (the timer's grid goes on from 5 ms: next expiry 10 ms) runs
    // 6..7 ms, sleeps 3 ms and wakes on time at 10 ms. a's run event takes
    // 2..9 ms of wall time (6 ms of work, 1 ms preempted by b).
    let rows = logs(
        r#"{"global": {"duration": 1}, "tasks": {
            "b": {"cpus": [0], "run": 1000, "timer": {"ref": "unique", "period": 5000}},
            "a": {"loop": 1, "cpus": [0], "delay": 2000, "run": 6000}}}"#,
        1,
        30 * MS,
    );
    let b = &rows[0];
    let expected = |start: u64, end: u64, slack: u64, wu_lat: u64| RtappLogRow {
        phase: 0,
        perf: 1000,
        run_ns: MS,
        start_ns: start * MS,
        end_ns: end * MS,
        rel_st_ns: start * MS,
        slack_ns: (slack * MS) as i64,
        c_duration_us: 1000,
        c_period_us: 5000,
        wu_lat_ns: wu_lat * MS,
    };
    assert_eq!(b[0], expected(0, 6, 4, 1));
    assert_eq!(b[1], expected(6, 10, 3, 0));
    let a = &rows[1];
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].start_ns, a[0].end_ns), (2 * MS, 9 * MS));
    assert_eq!((a[0].run_ns, a[0].perf), (7 * MS, 6000));
}
