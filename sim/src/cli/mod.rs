//! The `fairway-sim` command line: its options ([`options`]), the scenario
//! read with its topology and board ([`prepare`]), then the run and the
//! outputs it writes (here).

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};

use fairway_contract::scenario::{Scenario, wire};

use fairway_sched::boot_options::SchedConfig;

use crate::{Sampler, SimError, Simulation};

mod options;
mod prepare;

pub use options::{Options, USAGE, parse_args, parse_time};
pub use prepare::{Prepared, capacities, prepare, prepare_args, with_topology};

/// Writes the validated `scenario` as a wire blob to `path` (`--encode`).
fn write_blob(scenario: &Scenario, options: &Options, path: &str) -> Result<(), SimError> {
    let blob = wire::encode(&with_topology(scenario, options))
        .map_err(|e| SimError::Config(format!("{}: {e}", options.scenario)))?;
    std::fs::write(path, &blob).map_err(|e| SimError::Config(format!("{path}: {e}")))?;
    if !options.quiet {
        println!(
            "{path}: {} bytes, format version {}",
            blob.len(),
            wire::VERSION
        );
    }
    Ok(())
}

/// Makes folder `dir` if needed and checks that a file can be written in it
/// (the simulator's and the runner's output folders, before their runs).
pub fn check_folder(dir: &std::path::Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".fairway-sim-{}", std::process::id()));
    File::create(&probe)?;
    std::fs::remove_file(&probe)
}

/// Opens output `path` of `option` (`-`: standard output); an error names both.
fn create(option: &str, path: &str) -> Result<Box<dyn Write>, SimError> {
    if path == "-" {
        return Ok(Box::new(io::stdout()));
    }
    let file = File::create(path).map_err(|e| SimError::Config(format!("{option} {path}: {e}")))?;
    Ok(Box::new(BufWriter::new(file)))
}

/// Runs the command.
pub fn run(options: &Options) -> Result<(), SimError> {
    if options.help {
        print!("{USAGE}");
        return Ok(());
    }
    let prepared = prepare(options)?;
    let (scenario, options) = (&prepared.scenario, &prepared.options);
    if let Some(path) = &options.encode {
        return write_blob(scenario, options, path);
    }
    if options.check {
        println!(
            "{}: valid, {} task instance(s), {} CPU(s)",
            options.scenario,
            scenario.instance_count(),
            prepared.capacities.len()
        );
        return Ok(());
    }
    let config = prepared.config()?;
    let mut simulation = Simulation::new(scenario, config)?;
    if options.trace.is_some() {
        simulation = simulation.with_trace();
    }
    if options.rtapp_logs.is_some() {
        simulation = simulation.with_rtapp_logs();
    }
    if options.explain > 0 {
        simulation = simulation.with_explain(options.explain);
    }
    if !options.quiet && io::stderr().is_terminal() && std::env::var_os("CI").is_none() {
        simulation = simulation.with_progress();
    }
    if !options.quiet
        && options.sched.features != SchedConfig::DEFAULT.features
        && let Some(features) = options.sched.features_in_force()
    {
        println!("sched_feat: {features}");
    }
    if options.board.is_some() && !options.quiet {
        // As the kernel says at boot (docs/eas.md).
        match simulation.eas_status() {
            Ok(domains) if options.sched.eas_overutilized => println!(
                "eas: on ({domains} perf domains), also when overutilized (eas_overutilized=1)"
            ),
            Ok(domains) => println!("eas: on ({domains} perf domains)"),
            Err(Some(reason)) => println!("eas: off: {reason}"),
            Err(None) => println!("eas: off: balance=0 (no wake-up placement)"),
        }
    }
    if let Some(path) = &options.csv {
        check_csv_size(path, scenario, options, prepared.capacities.len())?;
    }
    // Every output is opened (a log folder made and written to) before the
    // run, so that an unwritable path is refused at once, not after a run
    // of many minutes.
    let mut switches_out = options
        .switches
        .as_deref()
        .map(|p| create("--switches", p))
        .transpose()?;
    let mut trace_out = options
        .trace
        .as_deref()
        .map(|p| create("--trace", p))
        .transpose()?;
    let mut results_out = options
        .results
        .as_deref()
        .map(|p| create("--results", p))
        .transpose()?;
    if let Some(dir) = &options.rtapp_logs {
        check_folder(std::path::Path::new(dir))
            .map_err(|e| SimError::Config(format!("--rtapp-logs {dir}: {e}")))?;
    }
    let mut csv_cut = None;
    let results = match &options.csv {
        Some(path) => {
            let mut out = create("--csv", path)?;
            let mut sampler = Sampler::new(&mut *out);
            let results = simulation.run(Some(&mut sampler))?;
            if let Some(time_ns) = sampler.cut_at() {
                csv_cut = Some((path, time_ns, sampler.written()));
            }
            out.flush()?;
            results
        }
        None => simulation.run(None)?,
    };
    if let Some(out) = &mut switches_out {
        results.write_switches(&mut **out)?;
        out.flush()?;
    }
    if let (Some(dir), Some(logs)) = (&options.rtapp_logs, &results.rtapp_logs) {
        let tasks = results.tasks.iter().enumerate().map(|(index, task)| {
            let rows = logs.get(index).map_or(&[][..], Vec::as_slice);
            (task.name.as_str(), rows)
        });
        crate::rtapp_log::write_logs(std::path::Path::new(dir), tasks)
            .map_err(|e| SimError::Config(format!("--rtapp-logs: {e}")))?;
    }
    if let (Some(out), Some(trace)) = (&mut trace_out, &results.trace) {
        out.write_all(&trace.to_perfetto())?;
        out.flush()?;
    }
    if let Some(out) = &mut results_out {
        let json = results.to_json(options.results_switches);
        serde_json::to_writer_pretty(&mut **out, &json).map_err(io::Error::other)?;
        writeln!(out)?;
        out.flush()?;
    }
    if !options.quiet {
        results.write_summary(&mut io::stdout().lock())?;
    }
    // Every other output is whole; the run still fails, as its CSV is not.
    if let Some((path, time_ns, written)) = csv_cut {
        return Err(SimError::Config(format!(
            "--csv {path}: cut at {time_ns} ns, after {written} bytes: the next sample would \
             pass the cap of {} bytes; the file ends on the last whole sample and every other \
             output is whole; sample less often (--sample-interval) or simulate fewer tasks",
            crate::sampler::MAX_CSV_BYTES
        )));
    }
    Ok(())
}

/// Refuses, before the run, a signals CSV sure to pass its cap
/// ([`crate::sampler::least_csv_bytes`]); a run with no set end is left to the cap.
fn check_csv_size(
    path: &str,
    scenario: &Scenario,
    options: &Options,
    nr_cpus: usize,
) -> Result<(), SimError> {
    let Some(end_ns) = crate::engine::run_end(options.duration_ns, scenario) else {
        return Ok(());
    };
    let interval = options.sample_interval_ns;
    let least = crate::sampler::least_csv_bytes(scenario, nr_cpus, end_ns, interval);
    let cap = crate::sampler::MAX_CSV_BYTES;
    if least > cap {
        return Err(SimError::Config(format!(
            "--csv {path}: the signals CSV would hold at least {least} bytes (a row per CPU and \
             per never-ending task every {interval} ns for {end_ns} ns), past the cap of {cap} \
             bytes; sample less often (--sample-interval), or simulate fewer tasks or less time"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
