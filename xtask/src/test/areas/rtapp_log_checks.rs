//! rt-app's logs from a kernel run (`--rtapp-logs`; docs/tracing.md,
//! "rt-app's logs"), checked against what the scenario itself gives: a
//! periodic task alone on its CPU (4 ms of work every 16 ms, 3 s;
//! `tests/scenarios/periodic-work4ms-16ms-cpu1.json`) booted under icount,
//! its log written as the runner writes it and read back from the file,
//! then compared row by row with the simulator's log of the same scenario;
//! and the same run with too few rows, which must be an error naming
//! `rtapp_log_rows=`.
//!
//! The kernel is not the simulator: between the events it spends the
//! instructions of its interrupts, wake-ups and switches (1 instruction =
//! 1 ns under icount). [`OVERHEAD_US`] bounds them; see there.

use std::path::Path;

use crate::run::board::workspace_root;

const SCENARIO: &str = "tests/scenarios/periodic-work4ms-16ms-cpu1.json";
/// The scenario's `run`, `timer` period and duration, µs.
const RUN_US: i64 = 4_000;
const PERIOD_US: i64 = 16_000;
const DURATION_US: i64 = 3_000_000;
/// The loops that end within the duration: the k-th (from 0) ends one
/// period after the first start plus k periods, so 187 (the 188th would end
/// at 3,008 ms, past the 3 s), whatever the few µs the first start takes.
const ROWS: usize = (DURATION_US / PERIOD_US) as usize;
/// The most the kernel's own work may add to an interval of the log, µs:
/// the task's first start after the run's (the spawn's IPI and switch),
/// a wake-up after its timer (the timer interrupt, the wake-up, the switch
/// and the return from the sleep), the run event's excess over its 4 ms of
/// work (the busy loop's step and the tick's interrupt each 4 ms at
/// hz=250), and the executor's own steps between events. Each is a few
/// thousand instructions (measured: 18 µs to the first start, wu_lat 3 µs,
/// run 4000 µs, slack 11,996 µs), so 50 µs is over ten times what they
/// take, and a tick (4,000 µs) or a period (16,000 µs) lost or gained is
/// far outside it.
const OVERHEAD_US: i64 = 50;

/// Runs the checks; returns (passed, failed).
pub fn run() -> Result<(u64, u64), String> {
    let (mut passed, mut failed) = (0, 0);
    let mut tally = |name: &str, outcome: Result<String, String>| match outcome {
        Ok(summary) => {
            passed += 1;
            eprintln!("rtapp-log {name:<32} ok\n    {summary}");
        }
        Err(report) => {
            failed += 1;
            eprintln!("rtapp-log {name:<32} FAILED\n    {report}");
        }
    };
    match crate::run::build::release_kernel() {
        Ok(kernel) => {
            tally("kernel-periodic-alone", periodic_alone(&kernel));
            tally("kernel-log-full", log_full(&kernel));
        }
        Err(error) => tally("kernel-build", Err(error)),
    }
    eprintln!("xtask: rt-app log checks: {passed} passed, {failed} failed");
    Ok((passed, failed))
}

/// Boots `kernel` on the scenario under icount, 2 CPUs, with `append`; the
/// decoded lines of a clean exit.
fn boot(kernel: &Path, append: &str) -> Result<Vec<String>, String> {
    let mut config = crate::test::areas::trace_checks::icount_config("qemu-virt", 2, append)?;
    config.scenario = Some(workspace_root().join(SCENARIO));
    config.use_board_device_tree()?;
    config.load_scenario()?;
    crate::test::areas::trace_checks::boot(kernel, &config)
}

/// A written log's rows: the 11 whitespace-separated numbers after the
/// header (`idx perf run period start end rel_st slack c_duration c_period
/// wu_lat`, µs).
fn read_log(path: &Path) -> Result<Vec<[i64; 11]>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    if lines.next() != Some(fairway_sim::rtapp_log::HEADER) {
        return Err(format!("{}: not rt-app's header", path.display()));
    }
    lines
        .map(|line| {
            let numbers: Vec<i64> = line
                .split_whitespace()
                .map(|word| word.parse().map_err(|_| format!("{line:?}")))
                .collect::<Result<_, _>>()?;
            numbers
                .try_into()
                .map_err(|_| format!("{}: not 11 fields: {line:?}", path.display()))
        })
        .collect()
}

/// Field indices of a row.
const IDX: usize = 0;
const PERF: usize = 1;
const RUN: usize = 2;
const PERIOD: usize = 3;
const START: usize = 4;
const END: usize = 5;
const REL_ST: usize = 6;
const SLACK: usize = 7;
const C_DURATION: usize = 8;
const C_PERIOD: usize = 9;
const WU_LAT: usize = 10;

/// `value` within `low..=high`, or an error naming the row and field.
fn within(k: usize, field: &str, value: i64, low: i64, high: i64) -> Result<(), String> {
    if (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "row {k}: {field} {value} µs outside {low}..={high}"
        ))
    }
}

fn periodic_alone(kernel: &Path) -> Result<String, String> {
    let out = workspace_root().join("target/rtapp-log-checks");
    let (kernel_dir, sim_dir) = (out.join("kernel"), out.join("sim"));
    for dir in [&kernel_dir, &sim_dir] {
        let _ = std::fs::remove_dir_all(dir);
    }
    let lines = boot(kernel, "rtapp_log_rows=1000")?;
    crate::run::rtapp_logs::write(&lines, &kernel_dir)?;
    let rows = read_log(&kernel_dir.join("rt-app-periodic-0.log"))?;
    if rows.len() != ROWS {
        return Err(format!("{} rows, {ROWS} loops end within 3 s", rows.len()));
    }
    let (start0, mut worst_wu_lat, mut worst_slack_gap) = (rows[0][START], 0, 0);
    within(0, "the first start", start0, 0, OVERHEAD_US)?;
    for (k, row) in rows.iter().enumerate() {
        // What the scenario fixes exactly.
        let fixed = [
            (IDX, 0),
            (PERF, RUN_US),
            (C_DURATION, RUN_US),
            (C_PERIOD, PERIOD_US),
        ];
        for (field, value) in fixed {
            if row[field] != value {
                return Err(format!(
                    "row {k}: field {field} is {}, not {value}",
                    row[field]
                ));
            }
        }
        if row[REL_ST] != row[START] {
            return Err(format!("row {k}: rel_st {} is not start", row[REL_ST]));
        }
        // Times are truncated to µs one by one: a difference is off by 1.
        within(
            k,
            "period (end - start)",
            row[PERIOD] - (row[END] - row[START]),
            -1,
            1,
        )?;
        // The timer's grid is one period apart from the first start (the
        // relative timer restarts only on an overrun, and there is none):
        // each loop starts its wake-up latency after its expiry.
        let expiry = start0 + PERIOD_US * k as i64;
        within(
            k,
            "start past its expiry",
            row[START] - expiry,
            0,
            OVERHEAD_US,
        )?;
        within(
            k,
            "end past the next expiry",
            row[END] - expiry - PERIOD_US,
            -1,
            OVERHEAD_US,
        )?;
        within(k, "run", row[RUN], RUN_US, RUN_US + OVERHEAD_US)?;
        within(k, "wu_lat", row[WU_LAT], 0, OVERHEAD_US)?;
        // slack: the expiry less the timer event's time, the loop's start
        // plus its run and the executor's steps.
        let gap = (PERIOD_US - RUN_US) - row[SLACK];
        within(k, "period - run - slack", gap, 0, 2 * OVERHEAD_US)?;
        worst_wu_lat = worst_wu_lat.max(row[WU_LAT]);
        worst_slack_gap = worst_slack_gap.max(gap);
    }
    // The simulator's log of the same scenario: as many rows, its times
    // the kernel's less the kernel's overheads.
    let args: Vec<String> = [
        workspace_root().join(SCENARIO).display().to_string(),
        "--cpus".into(),
        "2".into(),
        "--quiet".into(),
        "--rtapp-logs".into(),
        sim_dir.display().to_string(),
    ]
    .into();
    fairway_sim::cli::parse_args(&args)
        .and_then(|options| fairway_sim::cli::run(&options))
        .map_err(|e| format!("fairway-sim: {e}"))?;
    let sim = read_log(&sim_dir.join("rt-app-periodic-0.log"))?;
    if sim.len() != rows.len() {
        return Err(format!(
            "the simulator logs {} rows, the kernel {}",
            sim.len(),
            rows.len()
        ));
    }
    for (k, (kernel_row, sim_row)) in rows.iter().zip(&sim).enumerate() {
        within(
            k,
            "start less the simulator's",
            kernel_row[START] - sim_row[START],
            0,
            2 * OVERHEAD_US,
        )?;
        within(
            k,
            "slack less the simulator's",
            sim_row[SLACK] - kernel_row[SLACK],
            0,
            2 * OVERHEAD_US,
        )?;
    }
    Ok(format!(
        "{} rows as the simulator's; first start {start0} µs; wu_lat at most {worst_wu_lat} µs; \
         period - run - slack at most {worst_slack_gap} µs (bound {OVERHEAD_US} µs each)",
        rows.len()
    ))
}

/// With room for 100 rows the 187 loops overflow the log: the host's error
/// names the option and the 87 loops not logged.
fn log_full(kernel: &Path) -> Result<String, String> {
    const ROOM: usize = 100;
    let lines = boot(kernel, &format!("rtapp_log_rows={ROOM}"))?;
    match crate::run::rtapp_logs::from_lines(&lines) {
        Ok(_) => Err("a log with room for 100 rows took 187 loops without an error".into()),
        Err(error) => {
            let dropped = format!("{} loops not logged", ROWS - ROOM);
            if error.contains("rtapp_log_rows=") && error.contains(&dropped) {
                Ok(error)
            } else {
                Err(format!(
                    "the error does not say rtapp_log_rows= and {dropped}: {error}"
                ))
            }
        }
    }
}
