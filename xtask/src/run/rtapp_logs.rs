//! rt-app's per-task logs from a kernel run (the runner's `--rtapp-logs
//! DIR`; docs/tracing.md, "rt-app's logs"): the kernel's `rtapp-log:` lines
//! (`src/workload/rtapp_log.rs`) read back into the simulator's rows and
//! written with the simulator's writer (`fairway_sim::rtapp_log`), so a
//! kernel run's `DIR/rt-app-TASK-N.log` and a simulated one's have the same
//! shape, N being the task's index in the report (the simulator's results
//! order).

use std::collections::BTreeMap;
use std::path::Path;

use fairway_sim::rtapp_log::RtappLogRow;

/// Rows per task the runner asks for with `--rtapp-logs` when `--append`
/// does not set `rtapp_log_rows=` (80 bytes each: 800 kB a task).
pub const DEFAULT_ROWS: u64 = 10_000;

/// The text after `marker` in `line`, when `line` has it (the decoder may
/// put a prefix before the kernel's text).
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|at| &line[at + marker.len()..])
}

fn malformed(line: &str) -> String {
    format!("a malformed rt-app log line: {line:?}")
}

/// One `rtapp-log: ID PHASE PERF RUN_NS START_NS END_NS REL_ST_NS SLACK_NS
/// C_DURATION_US C_PERIOD_US WU_LAT_NS` line: the task id and its row.
fn parse_row(rest: &str, line: &str) -> Result<(u16, RtappLogRow), String> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    if words.len() != 11 {
        return Err(malformed(line));
    }
    let u = |i: usize| words[i].parse::<u64>().map_err(|_| malformed(line));
    let id = words[0].parse::<u16>().map_err(|_| malformed(line))?;
    Ok((
        id,
        RtappLogRow {
            phase: words[1].parse().map_err(|_| malformed(line))?,
            perf: u(2)?,
            run_ns: u(3)?,
            start_ns: u(4)?,
            end_ns: u(5)?,
            rel_st_ns: u(6)?,
            slack_ns: words[7].parse().map_err(|_| malformed(line))?,
            c_duration_us: u(8)?,
            c_period_us: u(9)?,
            wu_lat_ns: u(10)?,
        },
    ))
}

/// A reported task's name and its log's rows.
pub type TaskLog = (String, Vec<RtappLogRow>);

/// One task's log as the kernel announced it: rows printed, rows dropped.
struct Announced {
    rows: u64,
    dropped: u64,
}

/// The logs in a decoded run's lines, one per reported task in the
/// report's order, with its name; `None` when the kernel printed none (it
/// ran without `rtapp_log_rows=`). A task whose log filled up (`dropped`),
/// or whose rows did not all arrive, is an error naming `rtapp_log_rows=`.
pub fn from_lines(lines: &[String]) -> Result<Option<Vec<TaskLog>>, String> {
    let mut announced: BTreeMap<u16, Announced> = BTreeMap::new();
    let mut rows: BTreeMap<u16, Vec<RtappLogRow>> = BTreeMap::new();
    for line in lines {
        if let Some(rest) = after(line, "rtapp-log: ") {
            let (id, row) = parse_row(rest, line)?;
            rows.entry(id).or_default().push(row);
        } else if let Some(rest) = after(line, "rtapp-log-task: ") {
            let mut words = rest.split_whitespace();
            let id = words.next().and_then(|w| w.parse::<u16>().ok());
            let count = words.next().and_then(|w| w.strip_prefix("rows="));
            let dropped = words.next().and_then(|w| w.strip_prefix("dropped="));
            match (id, count.map(str::parse), dropped.map(str::parse)) {
                (Some(id), Some(Ok(rows)), Some(Ok(dropped))) => {
                    announced.insert(id, Announced { rows, dropped });
                }
                _ => return Err(malformed(line)),
            }
        }
    }
    if announced.is_empty() {
        return Ok(None);
    }
    let report = crate::run::report::parse_report(lines).map_err(|e| format!("report: {e}"))?;
    let tasks = &report
        .runs
        .last()
        .ok_or("the kernel printed rt-app logs but no report")?
        .tasks;
    let mut logs = Vec::new();
    for task in tasks {
        let id = u16::try_from(task.id).map_err(|_| format!("task id {} too large", task.id))?;
        let Some(log) = announced.get(&id) else {
            return Err(format!(
                "task {} (id {id}) is in the report but has no rt-app log",
                task.name
            ));
        };
        if log.dropped > 0 {
            return Err(format!(
                "task {} (id {id}): its rt-app log filled up, {} loops not logged \
                 (raise rtapp_log_rows=, rows per task, with --append)",
                task.name, log.dropped
            ));
        }
        let task_rows = rows.remove(&id).unwrap_or_default();
        if task_rows.len() as u64 != log.rows {
            return Err(format!(
                "task {} (id {id}): the kernel announced {} rt-app log rows, {} arrived",
                task.name,
                log.rows,
                task_rows.len()
            ));
        }
        logs.push((task.name.clone(), task_rows));
    }
    if let Some(id) = rows.keys().next() {
        return Err(format!(
            "rt-app log rows of task id {id}, which is not in the report"
        ));
    }
    Ok(Some(logs))
}

/// `--rtapp-logs DIR`: writes `DIR/rt-app-TASK-N.log` for every reported
/// task, with the simulator's writer.
pub fn write(lines: &[String], dir: &Path) -> Result<(), String> {
    let logs = from_lines(lines)?.ok_or(
        "--rtapp-logs: the kernel printed no rt-app logs (only rt-app runs keep them, \
         with rtapp_log_rows= above 0)",
    )?;
    let tasks = logs
        .iter()
        .map(|(name, rows)| (name.as_str(), rows.as_slice()));
    fairway_sim::rtapp_log::write_logs(dir, tasks).map_err(|e| format!("--rtapp-logs: {e}"))?;
    eprintln!(
        "xtask: rt-app logs: {} tasks, {} rows in {}",
        logs.len(),
        logs.iter().map(|(_, rows)| rows.len()).sum::<usize>(),
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    /// A run's report with tasks `b` (id 7) then `a` (id 5), in that order.
    const REPORT: &str = "report: run name=rtapp config=x cpus=2 icount=1 wall_ns=100000000
report: task id=7 name=b cpu=0 runtime_ns=1 wait_ns=0 wakeups=0 lat_p50_ns=0 lat_p99_ns=0 lat_max_ns=0 missed_periods=0 pending_wakeups=0 migrations=0 switches=1
report: task id=5 name=a cpu=1 runtime_ns=1 wait_ns=0 wakeups=0 lat_p50_ns=0 lat_p99_ns=0 lat_max_ns=0 missed_periods=0 pending_wakeups=0 migrations=0 switches=1
report: end";

    #[test]
    fn rows_are_read_field_by_field_and_ordered_as_the_report() {
        // Task 5's row: phase 1, 4000 µs of work in 4.5 ms, loop 16..32 ms,
        // expiry 11 ms after the timer event (slack), woken 20 µs late; task
        // 7's: an overrun, slack -3 ms. Lines carry the decoder's prefix.
        let text = format!(
            "[00:00.1] rtapp-log-task: 5 rows=1 dropped=0
[00:00.1] rtapp-log: 5 1 4000 4500000 16000000 32000000 16000000 11000000 4000 16000 20000
rtapp-log-task: 7 rows=1 dropped=0
rtapp-log: 7 0 20000 20000000 0 20000000 0 -3000000 20000 16000 0
{REPORT}"
        );
        let logs = from_lines(&lines(&text)).unwrap().unwrap();
        let names: Vec<&str> = logs.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["b", "a"]);
        assert_eq!(
            logs[1].1,
            [RtappLogRow {
                phase: 1,
                perf: 4000,
                run_ns: 4_500_000,
                start_ns: 16_000_000,
                end_ns: 32_000_000,
                rel_st_ns: 16_000_000,
                slack_ns: 11_000_000,
                c_duration_us: 4000,
                c_period_us: 16000,
                wu_lat_ns: 20_000,
            }]
        );
        assert_eq!(logs[0].1[0].slack_ns, -3_000_000);
    }

    #[test]
    fn no_log_lines_is_no_logs() {
        assert_eq!(from_lines(&lines(REPORT)).unwrap(), None);
    }

    #[test]
    fn a_full_buffer_or_a_lost_row_is_an_error_naming_the_option() {
        let full = format!(
            "rtapp-log-task: 5 rows=0 dropped=3\nrtapp-log-task: 7 rows=0 dropped=0\n{REPORT}"
        );
        let error = from_lines(&lines(&full)).unwrap_err();
        assert!(error.contains("rtapp_log_rows="), "{error}");
        assert!(error.contains("3 loops not logged"), "{error}");
        let lost = format!(
            "rtapp-log-task: 5 rows=2 dropped=0\n\
             rtapp-log: 5 0 1 1 0 1 0 0 1 0 0\n\
             rtapp-log-task: 7 rows=0 dropped=0\n{REPORT}"
        );
        let error = from_lines(&lines(&lost)).unwrap_err();
        assert!(
            error.contains("announced 2 rt-app log rows, 1 arrived"),
            "{error}"
        );
        let short = "rtapp-log: 5 0 1 1 0 1 0 0 1 0".to_string();
        assert!(from_lines(&[short]).unwrap_err().contains("malformed"));
    }

    #[test]
    fn the_files_are_the_simulators() {
        // The written file is the simulator's format: its header, then the
        // row in µs with the report index (1 for task a) as `idx`.
        let text = format!(
            "rtapp-log-task: 5 rows=1 dropped=0
rtapp-log: 5 0 4000 4000000 16000000 32000000 16000000 12000000 4000 16000 0
rtapp-log-task: 7 rows=0 dropped=0
{REPORT}"
        );
        let dir = std::env::temp_dir().join(format!("fairway-rtapp-logs-{}", std::process::id()));
        write(&lines(&text), &dir).unwrap();
        let a = std::fs::read_to_string(dir.join("rt-app-a-1.log")).unwrap();
        let b = std::fs::read_to_string(dir.join("rt-app-b-0.log")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(b, format!("{}\n", fairway_sim::rtapp_log::HEADER));
        let row: Vec<&str> = a.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(
            row,
            [
                "1", "4000", "4000", "16000", "16000", "32000", "16000", "12000", "4000", "16000",
                "0"
            ]
        );
    }
}
