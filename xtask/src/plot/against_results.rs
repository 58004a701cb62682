//! The charts' own series against a simulator run's results JSON, an
//! account the engine keeps apart from its trace: the energy lines end on
//! each domain's `energy_nj`, the frequency legend's residency is each
//! domain's `residency_us`, the occupancy chart's CPU capacities are the
//! CPUs' `capacity_orig`, and its stretches add up to each task's
//! `runtime_ns` and each CPU's `busy_ns`, over the whole run and over two
//! windows that split it. (The results give no task util, so
//! the util lines have no such figure to end on.)

use fairway_sim::cli::{parse_args, run};
use fairway_trace::Trace;
use serde_json::Value;

use super::occupancy;
use super::series::{self, Tracks};
use super::window::{Window, seconds};

/// The juno-r2 EAS run (two performance domains, frequency changes, nine
/// tasks), traced, and its results.
fn traced_run() -> (Trace, Value) {
    let folder = std::env::temp_dir().join(format!("xtask-plot-results-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let (trace_path, results_path) = (folder.join("run.pftrace"), folder.join("run.json"));
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/scenarios/eas-workload-a.json"
    );
    let args: Vec<String> = [
        scenario,
        "--board",
        "juno-r2",
        "--quiet",
        "--trace",
        trace_path.to_str().unwrap(),
        "--results",
        results_path.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    run(&parse_args(&args).unwrap()).unwrap();
    let trace = Trace::from_perfetto(&std::fs::read(&trace_path).unwrap()).unwrap();
    let results = serde_json::from_slice(&std::fs::read(&results_path).unwrap()).unwrap();
    std::fs::remove_dir_all(&folder).unwrap();
    (trace, results)
}

#[test]
fn the_charts_end_on_the_results_figures() {
    let (trace, results) = traced_run();
    let end = series::end_ns(&trace);
    assert_eq!(
        end,
        results["end_ns"].as_u64().unwrap(),
        "the trace ends with the run"
    );
    let whole = Window::whole(end);
    let tracks = Tracks::of(&trace);

    // The whole run, and a window from 0.4 s to the end.
    let last_stretch = Window {
        from_ns: 400_000_000,
        to_ns: end,
    };
    let domains = results["energy"].as_array().unwrap();
    for window in [whole, last_stretch] {
        let energy = series::energy_lines(&tracks, &window);
        assert_eq!(energy.len(), domains.len(), "one energy line per domain");
        for (index, (line, domain)) in energy.iter().zip(domains).enumerate() {
            assert_eq!(line.label, [format!("perf domain {index}")]);
            let &(at, millijoules) = line.points.last().unwrap();
            let expected = domain["energy_nj"].as_u64().unwrap() as f64 / 1e6;
            assert_eq!(at, seconds(end), "pd{index}'s line reaches the end");
            assert!(
                (millijoules - expected).abs() < 1e-9 * expected.max(1.0),
                "pd{index}'s line ends on {millijoules} mJ, the results give {expected} mJ"
            );
        }
    }

    // Both domains spent time at their top operating point (their
    // `residency_us`), so the capacity the occupancy chart reads back from
    // the trace is each CPU's `capacity_orig`.
    let capacities = occupancy::capacities(&trace, &tracks);
    for cpu in results["cpus"].as_array().unwrap() {
        let number = cpu["cpu"].as_u64().unwrap() as usize;
        assert_eq!(
            capacities[number],
            cpu["capacity_orig"].as_u64(),
            "cpu{number}'s capacity"
        );
    }

    let frequency = series::frequency_lines(&trace, &whole);
    assert_eq!(
        frequency.len(),
        domains.len(),
        "one frequency line per domain"
    );
    for domain in domains {
        let cpus: Vec<String> = domain["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.to_string())
            .collect();
        let name = format!("cpus {}", cpus.join(","));
        let line = frequency
            .iter()
            .find(|l| l.label[0] == name)
            .unwrap_or_else(|| panic!("no frequency line for {name}"));
        let drawn = series::residency(&line.points);
        for opp in domain["residency_us"].as_array().unwrap() {
            let mhz = opp["mhz"].as_u64().unwrap();
            let expected = opp["us"].as_u64().unwrap() as f64 / 1e6;
            // The results round each residency down to a microsecond.
            let seen = drawn.get(&mhz).copied().unwrap_or(0.0);
            assert!(
                (0.0..1e-6 + 1e-12).contains(&(seen - expected)),
                "{name} at {mhz} MHz: the legend counts {seen} s, the results {expected} s"
            );
        }
        let listed = domain["residency_us"].as_array().unwrap().len();
        assert_eq!(drawn.len(), listed, "{name}: the same operating points");
    }

    // Over the whole run, then over two windows that split it at 0.4 s:
    // a stretch that crosses the split is cut in two, not lost or doubled.
    let split = 400_000_000;
    let halves = [
        Window {
            from_ns: 0,
            to_ns: split,
        },
        Window {
            from_ns: split,
            to_ns: end,
        },
    ];
    for windows in [&[whole][..], &halves[..]] {
        let mut task_time = vec![0u64; trace.tasks.len()];
        let mut cpu_time = vec![0u64; trace.nr_cpus];
        for window in windows {
            for stretch in series::stretches(&trace, end, window) {
                task_time[stretch.task] += stretch.to - stretch.from;
                cpu_time[stretch.cpu] += stretch.to - stretch.from;
            }
        }
        for task in results["tasks"].as_array().unwrap() {
            let name = task["name"].as_str().unwrap();
            let index = trace.tasks.iter().position(|t| t.name == name).unwrap();
            assert_eq!(
                task_time[index],
                task["runtime_ns"].as_u64().unwrap(),
                "{name}'s stretches ({} windows)",
                windows.len()
            );
        }
        for cpu in results["cpus"].as_array().unwrap() {
            let number = cpu["cpu"].as_u64().unwrap() as usize;
            assert_eq!(
                cpu_time[number],
                cpu["busy_ns"].as_u64().unwrap(),
                "cpu{number}'s stretches ({} windows)",
                windows.len()
            );
        }
    }
}
