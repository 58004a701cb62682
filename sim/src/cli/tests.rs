//! The command line's tests: options, outputs, and runs of the scenarios.

use super::*;
use fairway_sched::boot_options::SchedConfig;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// `tests/scenarios/pending-wakeup.json`, whose figures its comment derives:
/// a task woken at 600 ms and starved by a FIFO hog to the end at 1 s is one
/// pending wake-up with 400 ms of wait, none run, none missed; a task asleep
/// on a timer that has not fired is none pending.
#[test]
fn a_woken_task_starved_to_the_end_is_one_pending_wake_up() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/scenarios/pending-wakeup.json"
    );
    let prepared = prepare(&parse_args(&args(&[path, "--cpus", "2"])).unwrap()).unwrap();
    let results = Simulation::new(&prepared.scenario, prepared.config().unwrap())
        .unwrap()
        .run(None)
        .unwrap();
    let task = |name: &str| results.tasks.iter().find(|t| t.name == name).unwrap();
    let periodic = task("periodic");
    assert_eq!(
        (
            periodic.runtime_ns,
            periodic.wait_ns,
            periodic.wakeup_latency.count,
            periodic.pending_wakeups,
            periodic.missed_periods
        ),
        (1_000_000, 400_000_000, 0, 1, 0)
    );
    let sleeper = task("sleeper");
    assert_eq!(
        (sleeper.wakeup_latency.count, sleeper.pending_wakeups),
        (0, 0)
    );
}

#[test]
fn a_csv_sure_to_pass_its_cap_is_refused_before_the_run() {
    // 10,000 never-ending tasks sampled every millisecond for 60 s: at least
    // 60,000 samples of 10,000 rows of about 20 bytes, 12 GB, past 1 GiB.
    let text = r#"{"global": {"duration": 60},
                   "tasks": {"t": {"instance": 10000, "run": 10, "sleep": 990}}}"#;
    let scenario = fairway_rtapp::parse_and_validate(text, 1).unwrap();
    let options = parse_args(&args(&["s.json", "--csv", "out.csv"])).unwrap();
    let error = check_csv_size("out.csv", &scenario, &options, 1)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("--csv out.csv: the signals CSV would hold at least "),
        "{error}"
    );
    assert!(
        error.contains("past the cap of 1073741824 bytes"),
        "{error}"
    );
    // Every 100 ms it fits: 600 samples.
    let options = parse_args(&args(&[
        "s.json",
        "--csv",
        "out.csv",
        "--sample-interval",
        "100ms",
    ]))
    .unwrap();
    check_csv_size("out.csv", &scenario, &options, 1).unwrap();
}

#[test]
fn times_take_units() {
    assert_eq!(parse_time("--duration", "2").unwrap(), 2_000_000_000);
    assert_eq!(parse_time("--duration", "1.5s").unwrap(), 1_500_000_000);
    assert_eq!(parse_time("--duration", "500ms").unwrap(), 500_000_000);
    assert_eq!(parse_time("--duration", "1500us").unwrap(), 1_500_000);
    assert_eq!(parse_time("--duration", "10ns").unwrap(), 10);
    assert_eq!(
        parse_time("--duration", "-1").unwrap_err().to_string(),
        "--duration -1: outside 0..=1e18 ns"
    );
    assert!(parse_time("--duration", "soon").is_err());
}

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// sim/README.md shows the options as `--help` prints them, whole.
#[test]
fn the_readme_shows_the_usage_as_the_tool_prints_it() {
    assert!(
        readme().contains(&format!("```text\n{USAGE}\n```")),
        "sim/README.md's Options must be USAGE, verbatim"
    );
}

/// sim/README.md's results JSON lists the keys a run writes, in their order
/// (objects depth-first, an array by its first element): a run with a limited
/// group on a board with an energy model, so that every key is there.
#[test]
fn the_readme_lists_the_results_keys_in_order() {
    fn keys(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    out.push(key.clone());
                    keys(value, out);
                }
            }
            serde_json::Value::Array(values) => {
                if let Some(first) = values.first() {
                    keys(first, out);
                }
            }
            _ => {}
        }
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/scenarios/bandwidth-25-100.json"
    );
    let options = parse_args(&args(&[path, "--board", "juno-r2", "--quiet"])).unwrap();
    let prepared = prepare(&options).unwrap();
    let mut config = prepared.config().unwrap();
    config.duration_ns = Some(300_000_000);
    let results = Simulation::new(&prepared.scenario, config)
        .unwrap()
        .run(None)
        .unwrap();
    let mut written = Vec::new();
    keys(&results.to_json(10), &mut written);
    let text = readme();
    let start = text.find("**Results JSON**").unwrap();
    let block = &text[start..];
    let block = &block[block.find("```").unwrap() + 3..];
    let block = &block[..block.find("```").unwrap()];
    let listed: Vec<String> = block
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    assert_eq!(listed, written);
}

#[test]
fn dash_h_and_dash_dash_help_ask_for_the_usage() {
    for line in [&["-h"][..], &["--help"], &["s.json", "--cpus", "2", "-h"]] {
        assert!(parse_args(&args(line)).unwrap().help, "{line:?}");
    }
    assert!(!parse_args(&args(&["s.json"])).unwrap().help);
}

#[test]
fn options_are_parsed() {
    let options = parse_args(&args(&[
        "s.json",
        "--cpus",
        "4",
        "--hz",
        "1000",
        "--capacities",
        "446,1024",
        "--csv",
        "out.csv",
        "--check",
    ]))
    .unwrap();
    assert_eq!(options.scenario, "s.json");
    assert_eq!(options.cpus, Some(4));
    assert_eq!(options.sched.hz, 1000);
    assert_eq!(options.capacities, Some(vec![446, 1024]));
    assert_eq!(options.csv.as_deref(), Some("out.csv"));
    assert!(options.check);
    assert!(parse_args(&args(&["--cpus"])).is_err());
    assert_eq!(
        parse_args(&args(&["s.json", "--duration", "0"]))
            .unwrap_err()
            .to_string(),
        "--duration 0: must be above 0 (a run of no time simulates nothing)"
    );
    assert!(parse_args(&args(&["s.json", "--bogus", "1"])).is_err());
}

#[test]
fn example_scenarios_round_trip_through_the_wire_format() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let scenario = fairway_rtapp::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let nr_cpus = capacities(&scenario, &Options::default()).unwrap().len();
        let blob = wire::encode(&scenario).unwrap();
        assert_eq!(wire::decode(&blob).as_ref(), Ok(&scenario), "{path:?}");
        assert_eq!(wire::decode_and_validate(&blob, nr_cpus), Ok(scenario));
        count += 1;
    }
    assert!(count >= 3);
}

#[test]
fn encode_option_writes_the_blob_with_topology_overrides() {
    let out = std::env::temp_dir().join(format!("fairway-wire-{}.bin", std::process::id()));
    let scenario_path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/taskgroups.json");
    let options = parse_args(&args(&[
        scenario_path,
        "--capacities",
        "512,1024,1024,512",
        "--encode",
        out.to_str().unwrap(),
        "--quiet",
    ]))
    .unwrap();
    run(&options).unwrap();
    let blob = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    let mut expected =
        fairway_rtapp::parse(&std::fs::read_to_string(scenario_path).unwrap()).unwrap();
    expected.global.capacities = vec![512, 1024, 1024, 512];
    assert_eq!(wire::decode_and_validate(&blob, 4), Ok(expected));
    // An invalid scenario writes nothing.
    let refused = Options {
        cpus: Some(3),
        ..options
    };
    assert!(run(&refused).is_err());
    assert!(!out.exists());
}

#[test]
fn policies_map_to_linux_defaults_for_the_cpu_count() {
    use fairway_sched::boot_options::PolicyChoice;
    use fairway_sched::run_queue::PolicyKind;
    let with = |policy, hz| SchedConfig {
        policy,
        hz,
        ..SchedConfig::DEFAULT
    };
    assert_eq!(
        with(PolicyChoice::RoundRobin, 250).policy_kind(1),
        PolicyKind::RoundRobin { slice: 4_000_000 }
    );
    // §1.4: 6 ms latency × (1 + ilog2(4)) = 18 ms on 4 CPUs.
    match with(PolicyChoice::Cfs, 250).policy_kind(4) {
        PolicyKind::Cfs(t) => assert_eq!(t.latency, 18_000_000),
        other => panic!("{other:?}"),
    }
    // §1.5: a 4-CPU machine gets a 2.10 ms base slice (v6.15).
    match with(PolicyChoice::Eevdf, 1000).policy_kind(4) {
        PolicyKind::Eevdf(t) => assert_eq!((t.base_slice, t.tick), (2_100_000, 1_000_000)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_kernels_option_names_ranges_and_defaults() {
    let options = parse_args(&args(&["s.json"])).unwrap();
    assert_eq!(options.sched, SchedConfig::DEFAULT);
    let options = parse_args(&args(&[
        "s.json",
        "--sched",
        "cfs",
        "--hz",
        "1000",
        "--balance",
        "0",
        "--slice_us",
        "2000",
    ]))
    .unwrap();
    assert_eq!(
        options.sched.to_string(),
        "sched=cfs hz=1000 hrtick=0 skew_tick=0 slice_us=2000 uclamp=auto balance=0 \
         bw_timer=random bw_seed=0 cfs_bandwidth=0 governor=schedutil cpufreq_update=pelt \
         sched_energy_aware=1 eas_overutilized=0 tick_seed=0"
    );
    for (flag, value, message) in [
        ("--hz", "abc", "--hz abc: not a number"),
        ("--balance", "2", "--balance 2: must be one of 0, 1"),
        (
            "--sched",
            "foo",
            "--sched foo: must be one of eevdf, cfs, rr, template, lottery, stride",
        ),
        ("--hz", "5", "--hz 5: outside 10..=10000"),
        ("--hz", "", "--hz : not a value"),
        (
            "--governor",
            "ondemand",
            "--governor ondemand: must be one of schedutil, performance, powersave",
        ),
        (
            "--sched_feat",
            "NO_RUN_TO_PARITY,START_DEBIT",
            "--sched_feat NO_RUN_TO_PARITY,START_DEBIT: 'START_DEBIT' is not a feature \
             switch of sched=eevdf (one of RUN_TO_PARITY, PREEMPT_SHORT, DELAY_DEQUEUE, \
             DELAY_ZERO, or NO_ and one of them)",
        ),
    ] {
        let error = parse_args(&args(&["s.json", flag, value])).unwrap_err();
        assert_eq!(error.to_string(), message);
    }
    let error = parse_args(&args(&["s.json", "--hz", "100", "--hz", "1000"])).unwrap_err();
    assert_eq!(error.to_string(), "--hz 1000: hz is given twice");
}

#[test]
fn topology_comes_from_options_then_scenario() {
    let scenario = fairway_rtapp::parse(
        r#"{"global": {"capacities": [446, 1024]}, "tasks": {"t": {"loop": 1, "run": 5}}}"#,
    )
    .unwrap();
    let from_scenario = capacities(&scenario, &Options::default()).unwrap();
    assert_eq!(
        from_scenario
            .iter()
            .map(|c| c.capacity_orig)
            .collect::<Vec<_>>(),
        [446, 1024]
    );
    let options = Options {
        capacities: Some(vec![512]),
        ..Options::default()
    };
    assert_eq!(
        capacities(&scenario, &options).unwrap()[0].capacity_orig,
        512
    );
    let mismatch = Options {
        cpus: Some(3),
        ..Options::default()
    };
    assert_eq!(
        capacities(&scenario, &mismatch).unwrap_err().to_string(),
        "global.capacities: the list has 2 values for a machine of 3 CPUs: one per CPU"
    );
}

/// Every output is opened before the run: an unwritable one is refused
/// naming the option and the path, and no other output is written.
#[test]
fn an_unwritable_output_is_refused_before_the_run() {
    let scenario = format!(
        "{}/../tests/scenarios/periodic-30pct-20ms.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let folder = std::env::temp_dir().join(format!("fairway-sim-out-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let switches = folder.join("switches.csv");
    let options = parse_args(&args(&[
        &scenario,
        "--quiet",
        "--switches",
        switches.to_str().unwrap(),
        "--results",
        "/nonexistent-folder/results.json",
    ]))
    .unwrap();
    let error = run(&options).unwrap_err().to_string();
    assert!(
        error.starts_with("--results /nonexistent-folder/results.json: "),
        "{error}"
    );
    let written = std::fs::metadata(&switches).map_or(0, |m| m.len());
    assert_eq!(written, 0, "no run, so no switch written");
    let options = parse_args(&args(&[&scenario, "--rtapp-logs", "/proc/no-such-folder"])).unwrap();
    let error = run(&options).unwrap_err().to_string();
    assert!(
        error.starts_with("--rtapp-logs /proc/no-such-folder: "),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&folder);
}

/// A CPU number refused on the default machine of 1 CPU says where that
/// one CPU came from; with `--cpus` it is the scenario's own error.
#[test]
fn a_cpu_beyond_the_default_machine_names_the_default() {
    let scenario = fairway_rtapp::parse(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"cpus": [1], "run": 5}}}"#,
    )
    .unwrap();
    assert_eq!(
        capacities(&scenario, &Options::default())
            .unwrap_err()
            .to_string(),
        "tasks.t.cpus.0: 1 is outside 0..=0 (the machine has 1 CPU: the simulator's \
         default without --cpus N, --board NAME or global.capacities)"
    );
    assert!(
        capacities(
            &scenario,
            &Options {
                cpus: Some(2),
                ..Options::default()
            }
        )
        .is_ok()
    );
}
