//! rt-app's own per-task logs from kernel runs (`rtapp_log_rows=N`; the
//! runner's `--rtapp-logs DIR`; docs/tracing.md, "rt-app's logs"): each
//! rt-app instance feeds its program's events to the state machine the
//! simulator uses (`fairway_contract::rtapp_log`), and the rows are printed
//! at the end of the run as `rtapp-log:` lines, which the host writes with
//! the simulator's writer.
//!
//! Cost: off (the default), an instance's event costs a test of a local
//! (`Option<&Log>`, read once when the instance starts) in the rt-app
//! executor, nothing in the scheduler. On, every row is allocated when the
//! instance is created (the run's start, or its `fork`): recording takes
//! this instance's own lock (no other CPU waits for it until the end) and
//! never allocates; rows past the bound are counted and the host reports
//! them as an error naming `rtapp_log_rows=`.

use fairway_contract::rtapp_log::RtappLog;
use spin::Once;

use crate::platform::sync::IrqSpinLock;
use crate::tasks::TaskId;

/// One instance's log. Only the instance records into it; the task that
/// prints the report reads it once the run has ended.
pub type Log = IrqSpinLock<RtappLog>;

/// Allocates `slot`'s log of `rows` rows (0: none, logs off), when an
/// instance is created; stops the kernel, naming the option, when the heap
/// has no room for it.
pub fn allocate(slot: &Once<Log>, rows: u64) {
    if rows == 0 {
        return;
    }
    match RtappLog::bounded(rows as usize) {
        Some(log) => {
            slot.call_once(|| IrqSpinLock::new(log));
        }
        None => {
            defmt::error!(
                "rtapp: rtapp_log_rows={=u64}: no room in the heap for a task's rt-app log of {=u64} rows ({=u64} bytes each): lower rtapp_log_rows",
                rows,
                rows,
                core::mem::size_of::<fairway_contract::rtapp_log::RtappLogRow>() as u64
            );
            crate::platform::exit::exit(crate::ExitCode::Failure)
        }
    }
}

/// Prints task `id`'s log: `rtapp-log-task: ID rows=N dropped=D`, then one
/// `rtapp-log: ID PHASE PERF RUN_NS START_NS END_NS REL_ST_NS SLACK_NS
/// C_DURATION_US C_PERIOD_US WU_LAT_NS` line per row (times in ns since the
/// run's start; the host writes µs, as rt-app). Rows of loops that ended
/// after the run did (`end_ns`, since the run's start) are left out: an
/// instance may close one between the end and its next look at the stop
/// flag, and rt-app's log stops with the run.
pub fn print(id: TaskId, log: &Log, end_ns: u64) {
    let log = log.lock();
    let rows = log.rows().iter().filter(|row| row.end_ns <= end_ns);
    defmt::println!(
        "rtapp-log-task: {=u16} rows={=u64} dropped={=u64}",
        id.0,
        rows.clone().count() as u64,
        log.dropped()
    );
    for row in rows {
        defmt::println!(
            "rtapp-log: {=u16} {=u32} {=u64} {=u64} {=u64} {=u64} {=u64} {=i64} {=u64} {=u64} {=u64}",
            id.0,
            row.phase as u32,
            row.perf,
            row.run_ns,
            row.start_ns,
            row.end_ns,
            row.rel_st_ns,
            row.slack_ns,
            row.c_duration_us,
            row.c_period_us,
            row.wu_lat_ns
        );
    }
}
