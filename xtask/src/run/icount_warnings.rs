//! Warnings after a run whose figures emulation shaped (docs/icount.md,
//! "Busy loops hand the turn on").
//!
//! Under icount QEMU runs one vCPU at a time. A CPU whose turn does not come
//! takes its tick late, so a task running there goes uncharged for longer
//! than a tick period, and the virtual clock runs on while it does not run.
//! The kernel prints, per CPU at its exit, the longest time a running task
//! went without a tick charging it and when that ended (`turns:` lines,
//! `src/platform/exit.rs`). A gap of more than two tick periods means that the CPU
//! went more than two ticks uncharged, and that for more than a tick another
//! vCPU held QEMU's turn while this CPU had a task to run (its tick was
//! due): both are named here, with the CPU and the time.

/// The tick period the kernel booted with, from its `HZ=N` boot line.
fn tick_ns(lines: &[String]) -> Option<u64> {
    lines.iter().find_map(|line| {
        let hz: u64 = line
            .split_once("HZ=")?
            .1
            .split(',')
            .next()?
            .trim()
            .parse()
            .ok()?;
        (hz > 0).then(|| 1_000_000_000 / hz)
    })
}

fn field(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
        .and_then(|value| value.parse().ok())
}

/// The warnings a transcript calls for, one per CPU whose longest uncharged
/// stretch passed two tick periods; `icount`: the run was under icount (one
/// vCPU at a time), else each vCPU had a host thread of its own.
pub fn warnings(lines: &[String], icount: bool) -> Vec<String> {
    let Some(tick) = tick_ns(lines) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in lines {
        let Some(at) = line.find("turns: ") else {
            continue;
        };
        let rest = &line[at..];
        let (Some(cpu), Some(gap), Some(end)) = (
            field(rest, "cpu"),
            field(rest, "max_uncharged_ns"),
            field(rest, "end_ns"),
        ) else {
            continue;
        };
        if gap > 2 * tick {
            let held = if icount {
                "another vCPU held QEMU's turn"
            } else {
                "the host did not run this vCPU's thread (its cores were busy)"
            };
            out.push(format!(
                "warning: cpu{cpu} went {:.3} ms ({:.1} ticks) without its time charged, \
                 from {:.6} s to {:.6} s after boot: for {:.3} ms past its tick {held} \
                 while cpu{cpu} had a task to run, so emulation, not scheduling, shaped \
                 what happened there (docs/icount.md)",
                gap as f64 / 1e6,
                gap as f64 / tick as f64,
                end.saturating_sub(gap) as f64 / 1e9,
                end as f64 / 1e9,
                gap.saturating_sub(tick) as f64 / 1e6,
            ));
        }
    }
    out
}

/// Prints [`warnings`] to standard error.
pub fn print(lines: &[String], icount: bool) {
    for warning in warnings(lines, icount) {
        eprintln!("xtask: {warning}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn a_gap_past_two_ticks_is_named() {
        let transcript = lines(
            "0.005 INFO  6/6 CPUs online, scheduler eevdf, timer 62500000 Hz, HZ=250, slice 4000 us\n\
             turns: cpu=1 max_uncharged_ns=8000000 end_ns=100000000\n\
             turns: cpu=2 max_uncharged_ns=11986832 end_ns=1234000000",
        );
        let warnings = warnings(&transcript, true);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("warning: cpu2 went 11.987 ms (3.0 ticks)"));
        assert!(warnings[0].contains("to 1.234000 s after boot"));
        assert!(warnings[0].contains("another vCPU held QEMU's turn"));
        assert!(super::warnings(&transcript, false)[0].contains("did not run this vCPU's thread"));
    }

    #[test]
    fn one_tick_gaps_are_quiet() {
        let transcript = lines(
            "INFO  1/1 CPUs online, scheduler eevdf, timer 62500000 Hz, HZ=1000, slice 4000 us\n\
             turns: cpu=0 max_uncharged_ns=1000080 end_ns=5000000",
        );
        assert!(warnings(&transcript, true).is_empty());
    }
}
