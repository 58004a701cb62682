//! `cargo xtask replay TRANSCRIPT`: replays a kernel run recorded with
//! `record_core=N` through the simulator's drivers (`fairway_sim::replay`) and
//! reports whether every decision agrees (docs/core-driver.md, "Replay").

use fairway_sim::replay::{ReplayOutcome, describe, parse_kernel_lines, replay_transcript};

/// Replays the `core:` lines of a kernel transcript; the report, and whether
/// every record agreed with none dropped.
pub fn check(lines: &[String]) -> Result<(ReplayOutcome, String), String> {
    let transcript = parse_kernel_lines(lines.iter().map(String::as_str))?;
    let (setup, dropped) = (&transcript.setup, transcript.dropped);
    if dropped > 0 {
        return Err(format!(
            "{dropped} records did not fit the kernel's buffers: raise record_core"
        ));
    }
    let outcome = replay_transcript(&transcript)?;
    let kinds: Vec<String> = outcome
        .kinds
        .iter()
        .map(|(kind, count)| format!("{kind} {count}"))
        .collect();
    let mut report = format!(
        "replay ({} on {} CPUs): {} of {} records agree, {} context switches ({})",
        setup.config.policy.name(),
        setup.capacities.len(),
        outcome.agreeing,
        outcome.records,
        outcome.switches,
        kinds.join(", ")
    );
    if let Some(divergence) = &outcome.divergence {
        match &divergence.pool {
            Some(mismatch) => report.push_str(&format!(
                "\nfirst difference at record {}: kernel {}; in the simulator {mismatch}",
                divergence.index,
                describe(&divergence.record),
            )),
            None => report.push_str(&format!(
                "\nfirst difference at record {}: kernel {}; simulator decided {:?}",
                divergence.index,
                describe(&divergence.record),
                divergence.replayed
            )),
        }
    }
    Ok((outcome, report))
}

/// The command.
pub fn command(args: &[String]) -> Result<std::process::ExitCode, String> {
    let [transcript] = args else {
        return Err(
            "usage: cargo xtask replay TRANSCRIPT (a kernel run with record_core=N)".into(),
        );
    };
    let text = std::fs::read_to_string(transcript).map_err(|e| format!("{transcript}: {e}"))?;
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let (outcome, report) = check(&lines)?;
    println!("{report}");
    Ok(if outcome.divergence.is_none() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}
