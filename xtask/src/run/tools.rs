//! Host prerequisites: QEMU, dtc and U-Boot for QEMU (the board runner's
//! rehearsal board, `crate::hil::rehearsal`), and a TrueType font for `plot`. Installed with apt-get when we can (as root,
//! or through sudo without a password), saying so; otherwise the exact command to
//! run is printed and the task stops.

use std::process::{Command, Stdio};

/// Debian's U-Boot for QEMU's arm64 `virt` (package `u-boot-qemu`): the
/// firmware of the board runner's rehearsal board.
pub const UBOOT: &str = "/usr/lib/u-boot/qemu_arm64/u-boot.bin";

/// A host program (or, starting with `/`, a file) and the Debian package that
/// provides it.
struct Tool {
    program: &'static str,
    package: &'static str,
}

const TOOLS: [Tool; 3] = [
    Tool {
        program: "qemu-system-aarch64",
        package: "qemu-system-arm",
    },
    Tool {
        program: "dtc",
        package: "device-tree-compiler",
    },
    Tool {
        program: UBOOT,
        package: "u-boot-qemu",
    },
];

fn found(program: &str) -> bool {
    if program.starts_with('/') {
        return std::path::Path::new(program).is_file();
    }
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn passwordless_sudo() -> bool {
    Command::new("sudo")
        .args(["-n", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Makes sure QEMU, dtc and U-Boot for QEMU are installed, and a TrueType
/// font for `plot`.
pub fn ensure() -> Result<(), String> {
    ensure_programs()?;
    if crate::plot::FONTS
        .iter()
        .any(|f| std::path::Path::new(f).exists())
    {
        return Ok(());
    }
    let command = "apt-get update && apt-get install -y --no-install-recommends fonts-dejavu-core";
    let installed = (is_root() || passwordless_sudo())
        && found("apt-get")
        && Command::new(if is_root() { "sh" } else { "sudo" })
            .args(if is_root() {
                vec!["-c", command]
            } else {
                vec!["-n", "sh", "-c", command]
            })
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !installed {
        eprintln!(
            "xtask: note: no TrueType font for `cargo xtask plot`; install with: sudo {command}"
        );
    }
    Ok(())
}

/// Makes sure QEMU, dtc and U-Boot for QEMU are installed.
fn ensure_programs() -> Result<(), String> {
    let missing: Vec<&Tool> = TOOLS.iter().filter(|t| !found(t.program)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let packages: Vec<&str> = missing.iter().map(|t| t.package).collect();
    let programs: Vec<&str> = missing.iter().map(|t| t.program).collect();
    let command = format!(
        "apt-get update && apt-get install -y --no-install-recommends {}",
        packages.join(" ")
    );
    let runner: Option<Vec<&str>> = if is_root() {
        Some(vec![])
    } else if passwordless_sudo() {
        Some(vec!["sudo", "-n"])
    } else {
        None
    };
    let Some(prefix) = runner.filter(|_| found("apt-get")) else {
        return Err(format!(
            "{} not found. Install with:\n    sudo sh -c '{command}'",
            programs.join(" and ")
        ));
    };
    eprintln!(
        "xtask: {} not found; installing {} with apt-get{}",
        programs.join(" and "),
        packages.join(" "),
        if prefix.is_empty() { "" } else { " (sudo)" }
    );
    let shell = |script: &str| {
        let mut argv: Vec<&str> = prefix.clone();
        argv.extend(["sh", "-c", script]);
        Command::new(argv[0])
            .args(&argv[1..])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .status()
    };
    match shell(&command) {
        Ok(status) if status.success() => {}
        _ => {
            return Err(format!(
                "installing failed; run:\n    sudo sh -c '{command}'"
            ));
        }
    }
    match TOOLS.iter().find(|t| !found(t.program)) {
        Some(tool) => Err(format!("{} still not found after installing", tool.program)),
        None => Ok(()),
    }
}

/// The version of Perfetto's Python bindings the trace checks decode with.
const PERFETTO_PYPI: &str = "perfetto==0.59.1";

/// The module those bindings put Perfetto's trace definitions in.
const PERFETTO_TRACE_MODULE: &str = "perfetto.protos.perfetto.trace.perfetto_trace_pb2";

/// A Python with Perfetto's published bindings (`perfetto_trace_pb2`, PyPI
/// package `perfetto`), in a virtual environment of its own under
/// `target/tools/perfetto-venv`, made and filled with pip when missing (no
/// root needed). Returns its interpreter.
pub fn perfetto_python() -> Result<std::path::PathBuf, String> {
    let venv = crate::run::board::workspace_root().join("target/tools/perfetto-venv");
    let python = venv.join("bin/python");
    let importable = |python: &std::path::Path| {
        Command::new(python)
            .args(["-c", &format!("import {PERFETTO_TRACE_MODULE}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if importable(&python) {
        return Ok(python);
    }
    eprintln!(
        "xtask: installing Perfetto's Python bindings ({PERFETTO_PYPI}) in {}",
        venv.display()
    );
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("python3 -m venv: {e} (the trace checks need Python 3)"))?;
    if !status.success() {
        return Err(format!("python3 -m venv {} failed", venv.display()));
    }
    let status = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            PERFETTO_PYPI,
        ])
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("pip: {e}"))?;
    if !status.success() || !importable(&python) {
        return Err(format!(
            "could not install {PERFETTO_PYPI}; run:\n    {} install {PERFETTO_PYPI}",
            venv.join("bin/pip").display()
        ));
    }
    Ok(python)
}
