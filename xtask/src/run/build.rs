//! Cargo from the runner's side: a cargo command in the workspace, and the
//! default release kernel that `cargo run`, `cargo xtask compare` and
//! `cargo xtask judge-phases` boot.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::run::board::workspace_root;

/// The workspace's host packages, each as `--package NAME`: what the lint's
/// host clippy and the test command's host tests both cover.
pub const HOST_PACKAGES: [&str; 16] = [
    "--package",
    "fairway-sched",
    "--package",
    "fairway-contract",
    "--package",
    "fairway-rtapp",
    "--package",
    "fairway-sim",
    "--package",
    "fairway-trace",
    "--package",
    "fairway-devicetree",
    "--package",
    "fairway-fuzzing",
    "--package",
    "xtask",
];

/// Runs `cargo` with `args` in the workspace, failing with its output on error.
pub fn cargo(args: &[&str]) -> Result<String, String> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        return Err(format!("cargo {} failed\n{stdout}", args.join(" ")));
    }
    Ok(stdout)
}

/// The default release kernel (rt-app's logs are a boot option, not a
/// feature), built where `cargo build --release` puts it (`cargo run` boots
/// it; `cargo xtask compare` too).
pub fn release_kernel() -> Result<PathBuf, String> {
    let root = workspace_root();
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&root)
        .args([
            "build",
            "--release",
            "--package",
            "fairway",
            "--bin",
            "fairway",
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "the kernel did not build: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(root.join("target/aarch64-unknown-none-softfloat/release/fairway"))
}
