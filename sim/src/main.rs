//! `fairway-sim SCENARIO.json [options]`: see `sim/README.md` or `--help`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = fairway_sim::cli::parse_args(&args).and_then(|o| fairway_sim::cli::run(&o));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fairway-sim: {error}");
            ExitCode::FAILURE
        }
    }
}
