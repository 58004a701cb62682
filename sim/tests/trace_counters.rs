//! The simulator's trace closes every counter at the run's end: the charts
//! `cargo xtask plot` draws from it end on the figures the results give (a
//! domain's energy line used to stop at its last frequency change: pd1 showed
//! 3.5 mJ of a true 46.3 mJ).

use fairway_sim::cli::{parse_args, run};
use fairway_trace::{CounterTrack, Trace};

#[test]
fn the_energy_lines_end_on_the_results_energy() {
    let folder = std::env::temp_dir().join(format!("fairway-counters-{}", std::process::id()));
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
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results_path).unwrap()).unwrap();
    std::fs::remove_dir_all(&folder).unwrap();
    let end_ns = results["end_ns"].as_u64().unwrap();
    let domains = results["energy"].as_array().unwrap();
    assert_eq!(domains.len(), 2, "juno-r2 has two performance domains");
    for (domain, expected) in domains.iter().enumerate() {
        let last = trace
            .counters
            .iter()
            .filter(|c| c.track == CounterTrack::DomainEnergy(domain))
            .max_by_key(|c| c.time_ns)
            .unwrap();
        assert_eq!(last.time_ns, end_ns, "pd{domain}'s line reaches the end");
        assert_eq!(
            last.value,
            expected["energy_nj"].as_i64().unwrap(),
            "pd{domain}'s line ends on its energy"
        );
    }
}
