//! rt-app's own per-task logs (`--rtapp-logs DIR`): one row per loop of a
//! phase, with the fields rt-app writes and LISA reads
//! (docs/tracing.md, "rt-app's logs"): `idx` (the thread's index), `perf`,
//! `run`, `period`, `start`, `end`, `rel_st`, `slack`, `c_duration`,
//! `c_period`, `wu_lat`, times in µs, whitespace separated, under a
//! `#`-header naming them. The rows come from the state machine the kernel
//! shares (`fairway_contract::rtapp_log`); the files are written here, for
//! the simulator and for the kernel runner's `--rtapp-logs` (xtask).

use std::io::{self, Write};
use std::path::Path;

pub use fairway_contract::rtapp_log::{RtappLog, RtappLogRow};

/// rt-app's header line.
pub const HEADER: &str = "#idx\t    perf\t     run\t  period\t           start\t             end\t          rel_st\t     slack\tc_duration\t  c_period\t    wu_lat";

/// Writes `rows` as rt-app's log of the task of index `thread`.
pub fn write_log(out: &mut dyn Write, thread: usize, rows: &[RtappLogRow]) -> io::Result<()> {
    writeln!(out, "{HEADER}")?;
    let us = |ns: u64| ns / 1000;
    for row in rows {
        writeln!(
            out,
            "{}\t{:8}\t{:8}\t{:8}\t{:16}\t{:16}\t{:16}\t{:10}\t{:10}\t{:10}\t{:10}",
            thread,
            row.perf,
            us(row.run_ns),
            us(row.end_ns - row.start_ns),
            us(row.start_ns),
            us(row.end_ns),
            us(row.rel_st_ns),
            row.slack_ns / 1000,
            row.c_duration_us,
            row.c_period_us,
            us(row.wu_lat_ns),
        )?;
    }
    Ok(())
}

/// Writes one log per task into `dir` (created if missing):
/// `DIR/rt-app-NAME-N.log`, N the task's index in the results, as rt-app
/// names its logs after the thread. A task without rows gets the header
/// alone.
pub fn write_logs<'a>(
    dir: &Path,
    tasks: impl IntoIterator<Item = (&'a str, &'a [RtappLogRow])>,
) -> io::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    for (index, (name, rows)) in tasks.into_iter().enumerate() {
        let path = dir.join(format!("rt-app-{name}-{index}.log"));
        let file = std::fs::File::create(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let mut out = io::BufWriter::new(file);
        write_log(&mut out, index, rows)?;
        out.flush()?;
    }
    Ok(())
}
