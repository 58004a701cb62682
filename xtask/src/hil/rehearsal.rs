//! A rehearsal board: QEMU's `virt` machine with Debian's U-Boot as its
//! firmware, its console on a pseudo-terminal and QEMU's user networking with
//! its built-in TFTP server, so that `hil` drives it as it drives a board; and
//! a console that never shows a prompt.
//!
//! The board's device tree is QEMU's own for the machine with the root's
//! `compatible` changed from `linux,dummy-virt` to `fairway,hil-rehearsal`:
//! the kernel then takes the machine for a board and leaves through PSCI
//! SYSTEM_OFF, not semihosting (QEMU is started without semihosting, as a
//! board has none), and its `exit:` line is all the host learns.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use crate::run::board::Board;
use crate::run::qemu::{self, QemuConfig};
use crate::run::tools::UBOOT;

/// The board's root `compatible` (anything but QEMU's).
const COMPATIBLE: &str = "fairway,hil-rehearsal";

/// QEMU running U-Boot; killed (by its PID, through its handle) when dropped.
pub struct RehearsalBoard {
    child: Child,
    /// QEMU's monitor: `cont` starts the machine, `info status` says whether
    /// the kernel powered it off.
    monitor: ChildStdin,
    /// The monitor's output, line by line.
    monitor_lines: Receiver<String>,
    /// The console's pseudo-terminal.
    pub console: PathBuf,
}

/// The machine: QEMU virt, `cpus` CPUs, GICv3, entered at EL1 (the board's
/// defaults).
fn machine(cpus: u32) -> Result<QemuConfig, String> {
    let mut config = QemuConfig::for_board(Board::load("qemu-virt")?);
    config.cpus = cpus;
    Ok(config)
}

/// QEMU's device tree for the machine, made to look like a board's.
pub fn board_dtb(cpus: u32, folder: &Path) -> Result<PathBuf, String> {
    let config = machine(cpus)?;
    let dumped = folder.join("qemu.dtb");
    let _ = std::fs::remove_file(&dumped);
    qemu::dump_dtb(&config, &dumped)?;
    let output = Command::new("dtc")
        .args(["-I", "dtb", "-O", "dts", "-q"])
        .arg(&dumped)
        .output()
        .map_err(|e| format!("dtc: {e}"))?;
    let source = String::from_utf8_lossy(&output.stdout);
    let qemu_root = "compatible = \"linux,dummy-virt\";";
    if !source.contains(qemu_root) {
        return Err(format!(
            "QEMU's device tree has no root {qemu_root} to replace"
        ));
    }
    let edited = source
        .replacen(qemu_root, &format!("compatible = \"{COMPATIBLE}\";"), 1)
        .replacen(
            "model = \"linux,dummy-virt\";",
            "model = \"QEMU virt with U-Boot (HIL rehearsal)\";",
            1,
        );
    let dts = folder.join("board.dts");
    std::fs::write(&dts, edited).map_err(|e| format!("{}: {e}", dts.display()))?;
    let dtb = folder.join("board.dtb");
    qemu::compile_dts(&dts, &dtb)?;
    Ok(dtb)
}

impl RehearsalBoard {
    /// Starts the machine paused, reads the console's pseudo-terminal from
    /// QEMU, and lets it run once `attach` has opened the console (a
    /// pseudo-terminal drops what is written while nobody holds it open).
    pub fn start(
        cpus: u32,
        tftp_dir: &Path,
        attach: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<RehearsalBoard, String> {
        if !Path::new(UBOOT).exists() {
            return Err(format!(
                "{UBOOT} is missing: cargo xtask ensure-tools installs Debian's u-boot-qemu"
            ));
        }
        std::fs::create_dir_all(tftp_dir).map_err(|e| format!("{}: {e}", tftp_dir.display()))?;
        let config = machine(cpus)?;
        let mut machine = format!("{},gic-version={}", config.board.machine, config.gic);
        if config.el == 2 {
            machine.push_str(",virtualization=on");
        }
        let mut child = Command::new("qemu-system-aarch64")
            .args([
                "-nodefaults",
                "-machine",
                &machine,
                "-cpu",
                &config.board.cpu,
            ])
            .args(["-smp", &cpus.to_string(), "-m", &config.board.memory])
            .args([
                "-display", "none", "-monitor", "stdio", "-serial", "pty", "-S",
            ])
            // Power-off stops the machine but keeps QEMU, and so the
            // console, open: closing a pseudo-terminal's master discards
            // what its reader has not read yet (the kernel's last frames),
            // which a board's serial line never does.
            .arg("-no-shutdown")
            .args(["-bios", UBOOT])
            .args([
                "-netdev",
                &format!("user,id=n0,tftp={}", tftp_dir.display()),
                "-device",
                "virtio-net-device,netdev=n0",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start qemu-system-aarch64: {e}"))?;
        let monitor = child.stdin.take().expect("piped stdin");
        let (sender, monitor_lines) = channel();
        let mut board = RehearsalBoard {
            child,
            monitor,
            monitor_lines,
            console: PathBuf::new(),
        };
        // "char device redirected to /dev/pts/N (label serial0)", on the
        // monitor (stdout) since the monitor is on stdio.
        let stdout = board.child.stdout.take().expect("piped stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err("QEMU stopped before it named the console's pseudo-terminal".into());
            }
            if let Some(rest) = line.split("redirected to ").nth(1) {
                board.console = PathBuf::from(rest.split_whitespace().next().unwrap_or(""));
                break;
            }
        }
        // The monitor's further output, read as it comes so that QEMU never
        // blocks on it.
        std::thread::spawn(move || {
            for line in reader.lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        attach(&board.console)?;
        board
            .monitor
            .write_all(b"cont\n")
            .map_err(|e| format!("QEMU's monitor: {e}"))?;
        Ok(board)
    }

    /// Whether the machine powered off (the kernel's PSCI SYSTEM_OFF; QEMU's
    /// monitor then says `VM status: paused (shutdown)`) within `limit`.
    pub fn powered_off(&mut self, limit: Duration) -> Result<bool, String> {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            self.monitor
                .write_all(b"info status\n")
                .map_err(|e| format!("QEMU's monitor: {e}"))?;
            let asked = std::time::Instant::now();
            while asked.elapsed() < Duration::from_millis(300) {
                match self.monitor_lines.recv_timeout(Duration::from_millis(50)) {
                    Ok(line) if line.contains("VM status:") && line.contains("shutdown") => {
                        return Ok(true);
                    }
                    _ => {}
                }
            }
        }
        Ok(false)
    }
}

impl Drop for RehearsalBoard {
    fn drop(&mut self) {
        // Only this QEMU, by its own handle (its PID).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A console that shows no prompt: a pseudo-terminal whose other side prints
/// `noise` every 200 ms (nothing when empty) until dropped.
pub struct SilentBoard {
    /// The pseudo-terminal `hil` opens.
    pub console: PathBuf,
    stop: Arc<AtomicBool>,
    _writer: Option<std::thread::JoinHandle<()>>,
}

impl SilentBoard {
    /// Opens the pair and starts the writer.
    pub fn start(noise: &'static [u8]) -> Result<SilentBoard, String> {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master: OwnedFd =
            openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).map_err(|e| format!("openpt: {e}"))?;
        grantpt(&master).map_err(|e| format!("grantpt: {e}"))?;
        unlockpt(&master).map_err(|e| format!("unlockpt: {e}"))?;
        let name = ptsname(&master, Vec::new()).map_err(|e| format!("ptsname: {e}"))?;
        let console = PathBuf::from(name.to_string_lossy().into_owned());
        let stop = Arc::new(AtomicBool::new(false));
        let running = Arc::clone(&stop);
        let mut file = std::fs::File::from(master);
        let writer = std::thread::spawn(move || {
            // Reading keeps the line's input from filling up; what `hil` sends
            // (its Ctrl-C pokes) is dropped, as a board without U-Boot would.
            let mut reader = file.try_clone().ok();
            let drain = std::thread::spawn(move || {
                let mut buffer = [0u8; 256];
                while let Some(r) = reader.as_mut() {
                    match std::io::Read::read(r, &mut buffer) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
            });
            while !running.load(Ordering::Relaxed) {
                if !noise.is_empty() {
                    let _ = file.write_all(noise);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            // The reader ends when `hil` closes its side.
            drop((file, drain));
        });
        Ok(SilentBoard {
            console,
            stop,
            _writer: Some(writer),
        })
    }
}

impl Drop for SilentBoard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
