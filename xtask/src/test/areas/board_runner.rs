//! The board runner's rehearsal cases (`cargo xtask test --only hil-`): `hil`
//! drives QEMU with U-Boot as it drives a board (`crate::hil::rehearsal`),
//! through TFTP and through `loady`, against a console that never shows a
//! prompt, and with a kernel that panics.

use std::collections::BTreeMap;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::hil::console::Console;
use crate::hil::rehearsal::{RehearsalBoard, SilentBoard};
use crate::hil::{self, HilOptions, HilOutcome, Load};
use crate::run::board::workspace_root;

/// The scenario of the full runs: a 20 ms hog on CPU 0 and a task on CPU 1
/// that runs 2 ms and sleeps 8 ms five times.
const SCENARIO: &str = "tests/scenarios/hil-two-tasks.json";

/// CPUs of the rehearsal board.
const CPUS: u32 = 4;

type HilCase = fn(&BTreeMap<String, PathBuf>) -> Result<String, String>;

/// Every case: name and body (the body returns a note for the log).
fn cases() -> Vec<(&'static str, HilCase)> {
    vec![
        ("hil-uboot-tftp-scenario", |images| full_run(images, false)),
        ("hil-uboot-loady-scenario", |images| full_run(images, true)),
        ("hil-no-prompt-power-cycle-then-fail", no_prompt_power_cycle),
        ("hil-no-prompt-silent-console-fails", no_prompt_silent),
        ("hil-uboot-kernel-panics", kernel_panics),
        ("hil-interrupt-restores-console", interrupt_restores_console),
        ("hil-uboot-ram-moved", ram_moved),
        ("hil-16550-console-raspi3b", console_16550),
    ]
}

fn options(kernel: &Path, console: PathBuf, load: Load) -> HilOptions {
    HilOptions {
        console,
        baud: None,
        kernel: kernel.to_path_buf(),
        dtb: None,
        scenario: None,
        cpus: CPUS,
        append: String::new(),
        load,
        prompt: "=> ".into(),
        prompt_timeout: Duration::from_secs(30),
        timeout: Duration::from_secs(60),
        power_cycle: None,
        echo: false,
    }
}

/// Boots `options.kernel` on a fresh rehearsal board; returns the outcome
/// and whether the machine powered off after the verdict (the kernel's PSCI
/// SYSTEM_OFF).
fn on_rehearsal_board(
    name: &str,
    mut options: HilOptions,
    serial: bool,
) -> Result<(HilOutcome, bool), String> {
    let folder = workspace_root().join("target").join("xtask-hil").join(name);
    std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
    // The board's own device tree, as a user gives a board's (`--dtb`).
    options.dtb = Some(crate::hil::rehearsal::board_dtb(CPUS, &folder)?);
    let tftp_dir = folder.join("tftp");
    if !serial {
        options.load = Load::Tftp {
            dir: tftp_dir.clone(),
            dhcp: true,
            server: None,
        };
    }
    let mut board: Option<RehearsalBoard> = None;
    let outcome = hil::run_with(&options, || {
        let mut console = None;
        let started = RehearsalBoard::start(CPUS, &tftp_dir, |pty| {
            console = Some(Console::open(pty, None)?);
            Ok(())
        })?;
        board = Some(started);
        console.ok_or_else(|| "the rehearsal board gave no console".to_string())
    });
    let powered_off = match (&outcome, board.as_mut()) {
        (Ok(o), Some(board)) if o.status.is_some() => board.powered_off(Duration::from_secs(10))?,
        _ => false,
    };
    Ok((outcome?, powered_off))
}

/// The scenario's tasks, read from its JSON (not from the run).
fn scenario_tasks() -> Result<Vec<String>, String> {
    let text =
        std::fs::read_to_string(workspace_root().join(SCENARIO)).map_err(|e| e.to_string())?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    Ok(json["tasks"]
        .as_object()
        .ok_or("the scenario has no tasks")?
        .keys()
        .cloned()
        .collect())
}

fn full_run(images: &BTreeMap<String, PathBuf>, serial: bool) -> Result<String, String> {
    let name = if serial {
        "hil-uboot-loady-scenario"
    } else {
        "hil-uboot-tftp-scenario"
    };
    let kernel = images.get("fairway").ok_or("no fairway image")?;
    let mut options = options(kernel, PathBuf::new(), Load::Serial);
    options.scenario = Some(workspace_root().join(SCENARIO));
    let (outcome, powered_off) = on_rehearsal_board(name, options, serial)?;
    let report = workspace_root()
        .join("target")
        .join("xtask-hil")
        .join(format!("{name}.json"));
    let _ = std::fs::remove_file(&report);
    // The whole transcript beside the report, U-Boot's side and the kernel's.
    std::fs::write(
        report.with_extension("log"),
        outcome.lines.join("\n") + "\n",
    )
    .map_err(|e| e.to_string())?;
    let code = hil::finish(&outcome, Some(&report))?;
    let mut problems = Vec::new();
    if code != ExitCode::SUCCESS || outcome.status != Some(0) {
        problems.push(format!("expected exit: success, got {:?}", outcome.status));
    }
    // The board powered off through PSCI, not semihosting (QEMU has none).
    if !powered_off {
        problems.push("the machine did not power off after the verdict".into());
    }
    // The loader's own account of what arrived: the Image's size in bytes.
    // The Image `hil` made from the ELF for this run (it does not exist
    // before the first run after a build).
    let image = kernel.with_extension("img");
    let size = std::fs::metadata(&image)
        .map_err(|e| format!("{}: {e}", image.display()))?
        .len();
    let loaded = if serial {
        format!("= {size} Bytes")
    } else {
        format!("Bytes transferred = {size} ")
    };
    if !outcome
        .lines
        .iter()
        .any(|l| l.starts_with("u-boot: ") && l.contains(&loaded))
    {
        problems.push(format!("U-Boot never said '{loaded}'"));
    }
    if outcome.find("u-boot: Starting kernel ...").is_none() {
        problems.push("no 'Starting kernel ...' in U-Boot's text".into());
    }
    match std::fs::read_to_string(&report) {
        Err(e) => problems.push(format!("report {}: {e}", report.display())),
        Ok(text) => {
            let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            let tasks = json["runs"][0]["tasks"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            // rt-app's work: the hog's 20 ms and five 2 ms runs, on
            // capacity-1024 CPUs at full speed, are at least that much CPU time.
            for (task, least) in [("hog", 20_000_000u64), ("periodic", 10_000_000)] {
                if !scenario_tasks()?.iter().any(|t| t == task) {
                    problems.push(format!("{SCENARIO} has no task {task}"));
                }
                match tasks.iter().find(|t| t["name"].as_str() == Some(task)) {
                    None => problems.push(format!("the report has no task '{task}'")),
                    Some(t) => {
                        let runtime = t["runtime_ns"].as_u64().unwrap_or(0);
                        if runtime < least {
                            problems.push(format!(
                                "task {task}: runtime {runtime} ns, less than {least}"
                            ));
                        }
                    }
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(format!("{:.1} s board run", outcome.wall.as_secs_f64()))
    } else {
        Err(with_tail(problems, &outcome.lines))
    }
}

fn with_tail(problems: Vec<String>, lines: &[String]) -> String {
    let mut report = problems.join("\n    ");
    report.push_str("\n    --- output ---\n");
    for line in lines.iter().rev().take(40).rev() {
        report.push_str(&format!("    | {line}\n"));
    }
    report
}

fn kernel_panics(images: &BTreeMap<String, PathBuf>) -> Result<String, String> {
    let kernel = images.get("panic").ok_or("no panic image")?;
    let options = options(kernel, PathBuf::new(), Load::Serial);
    let (outcome, powered_off) = on_rehearsal_board("hil-uboot-kernel-panics", options, false)?;
    let code = hil::finish(&outcome, None)?;
    let mut problems = Vec::new();
    if outcome.status != Some(1) || code == ExitCode::SUCCESS {
        problems.push(format!("expected exit: failure, got {:?}", outcome.status));
    }
    for needle in [
        "panic on CPU 0 at tests/panic.rs:",
        "the deliberate panic of tests/panic.rs",
    ] {
        if outcome.find(needle).is_none() {
            problems.push(format!("output lacks: {needle}"));
        }
    }
    if !powered_off {
        problems.push("the machine did not power off after the verdict".into());
    }
    if problems.is_empty() {
        Ok(String::new())
    } else {
        Err(with_tail(problems, &outcome.lines))
    }
}

/// A console that prints garbage and never a prompt: `hil` gives up after
/// the prompt timeout, runs the power-cycle command, waits again, and fails
/// with a message that says so.
fn no_prompt_power_cycle(images: &BTreeMap<String, PathBuf>) -> Result<String, String> {
    let kernel = images.get("fairway").ok_or("no fairway image")?;
    let fake = SilentBoard::start(b"\x7f\x01garbage \xfe\r\n")?;
    let marker = workspace_root()
        .join("target")
        .join("xtask-hil")
        .join("power-cycled");
    std::fs::create_dir_all(marker.parent().expect("folder")).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&marker);
    let mut options = options(kernel, fake.console.clone(), Load::Serial);
    options.prompt_timeout = Duration::from_secs(2);
    options.power_cycle = Some(format!("echo cycled >> {}", marker.display()));
    let start = Instant::now();
    let result = hil::run(&options);
    let wall = start.elapsed();
    let mut problems = Vec::new();
    match &result {
        Ok(outcome) => problems.push(format!("no error; status {:?}", outcome.status)),
        Err(message) => {
            for needle in [
                "no U-Boot prompt ('=> ') within 2 s",
                "after power-cycling with",
                "garbage",
            ] {
                if !message.contains(needle) {
                    problems.push(format!("the message lacks '{needle}': {message}"));
                }
            }
        }
    }
    match std::fs::read_to_string(&marker) {
        Ok(text) if text == "cycled\n" => {}
        other => problems.push(format!(
            "the power-cycle command ran not exactly once: {other:?}"
        )),
    }
    // Two prompt waits of 2 s, and not much more.
    if !(Duration::from_secs(4)..Duration::from_secs(10)).contains(&wall) {
        problems.push(format!(
            "took {:.1} s, expected 4 to 10",
            wall.as_secs_f64()
        ));
    }
    if problems.is_empty() {
        Ok(format!("failed as expected in {:.1} s", wall.as_secs_f64()))
    } else {
        Err(problems.join("\n    "))
    }
}

/// A console that prints nothing, through the command itself: it fails
/// (no exit status 0) with a message naming the prompt and the console.
fn no_prompt_silent(images: &BTreeMap<String, PathBuf>) -> Result<String, String> {
    let kernel = images.get("fairway").ok_or("no fairway image")?;
    let fake = SilentBoard::start(b"")?;
    let tftp = workspace_root()
        .join("target")
        .join("xtask-hil")
        .join("silent-tftp");
    std::fs::create_dir_all(&tftp).map_err(|e| e.to_string())?;
    let args: Vec<String> = [
        kernel.display().to_string(),
        "--console".into(),
        fake.console.display().to_string(),
        "--tftp".into(),
        tftp.display().to_string(),
        "--prompt-timeout".into(),
        "2".into(),
    ]
    .into();
    let start = Instant::now();
    let result = hil::command(&args);
    let wall = start.elapsed();
    match result {
        Ok(code) => Err(format!("the command did not fail (exit {code:?})")),
        Err(message)
            if message.contains("no U-Boot prompt ('=> ') within 2 s")
                && message.contains(&fake.console.display().to_string())
                && message.contains("last bytes seen: nothing")
                && wall < Duration::from_secs(6) =>
        {
            Ok(format!("failed as expected in {:.1} s", wall.as_secs_f64()))
        }
        Err(message) => Err(format!(
            "unexpected failure after {:.1} s: {message}",
            wall.as_secs_f64()
        )),
    }
}

/// The RAM window of `hil-uboot-ram-moved`: 128 MiB above QEMU virt's RAM
/// start, ending at 1.5 GiB, inside the rehearsal board's 512 MiB. The
/// kernel then runs at 0x4820_0000, and its boot map splits the GiB from
/// 1 GiB into 2 MiB blocks (normal from 0x4800_0000 to 0x6000_0000, Device
/// memory around them), as a board's RAM that does not start and end on
/// GiB boundaries needs (Juno r2's ends at 0xff00_0000).
const MOVED_RAM: (u64, u64) = (0x4800_0000, 0x6000_0000);

/// raspi3b's RAM, for `hil-16550-console-raspi3b`: `0x0..0x3c000000`.
const RASPI3B_RAM: (u64, u64) = (0x0, 0x3c00_0000);

/// Builds, side by side, the kernels of the cases that build their own
/// (`hil-uboot-ram-moved`, `hil-16550-console-raspi3b`), so that their two
/// whole-program LTO links, each on one core, overlap; `also` runs beside
/// them (the benchmarks' kernel). Errors are left to the cases, which build
/// again (then a no-op) and report them.
pub(crate) fn build_kernels_beside(also: impl FnOnce() + Send) {
    std::thread::scope(|scope| {
        scope.spawn(|| build_kernel_for_ram("ram-moved", MOVED_RAM).ok());
        scope.spawn(|| build_kernel_for_ram("raspi3b", RASPI3B_RAM).ok());
        scope.spawn(also);
    });
}

/// Builds the kernel for the RAM window `ram` (`FAIRWAY_RAM`, build.rs) in
/// its own target directory, `target/xtask-hil/FOLDER`.
fn build_kernel_for_ram(folder: &str, ram: (u64, u64)) -> Result<PathBuf, String> {
    let root = workspace_root();
    let target_dir = root.join("target").join("xtask-hil").join(folder);
    let output =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(&root)
            .args([
                "build",
                "--release",
                "--package",
                "fairway",
                "--bin",
                "fairway",
            ])
            .arg("--target-dir")
            .arg(&target_dir)
            .env("FAIRWAY_RAM", format!("{:#x}..{:#x}", ram.0, ram.1))
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "the kernel for FAIRWAY_RAM did not build: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(target_dir.join("aarch64-unknown-none-softfloat/release/fairway"))
}

/// A kernel built for other RAM than QEMU virt's (`FAIRWAY_RAM`): `hil`
/// reads its layout from the ELF (RAM start = entry − 2 MiB) and loads the
/// tree, the scenario and the Image there, `booti` leaves the Image at its
/// link address (flags bit 3), and the kernel runs the scenario and says
/// where it lives. `hil` also refuses, before touching the board, a device
/// tree whose /memory does not hold the RAM a kernel was built for.
fn ram_moved(_images: &BTreeMap<String, PathBuf>) -> Result<String, String> {
    let kernel = build_kernel_for_ram("ram-moved", MOVED_RAM)?;
    let elf = std::fs::read(&kernel).map_err(|e| e.to_string())?;
    let layout = hil::Layout::of_kernel(&elf)?;
    let expected = hil::Layout {
        ram_start: MOVED_RAM.0,
        scenario: MOVED_RAM.0 + 0x10_0000,
        image: MOVED_RAM.0 + 0x20_0000,
    };
    if layout != expected {
        return Err(format!("layout {layout:?}, expected {expected:?}"));
    }
    let mut options = options(&kernel, PathBuf::new(), Load::Serial);
    options.scenario = Some(workspace_root().join(SCENARIO));
    let (outcome, powered_off) = on_rehearsal_board("hil-uboot-ram-moved", options, false)?;
    let mut problems = Vec::new();
    if outcome.status != Some(0) {
        problems.push(format!("expected exit: success, got {:?}", outcome.status));
    }
    let needles = [
        format!("tftpboot {:#x} fairway-Image", expected.image),
        format!("booti {:#x} - {:#x}", expected.image, expected.ram_start),
        format!("scenario={:#x}", expected.scenario),
        format!("memory: kernel {:#x}..", expected.image),
        format!("built for {:#x}..{:#x}", MOVED_RAM.0, MOVED_RAM.1),
    ];
    for needle in &needles {
        if outcome.find(needle).is_none() {
            problems.push(format!("output lacks: {needle}"));
        }
    }
    if !powered_off {
        problems.push("the machine did not power off after the verdict".into());
    }
    // A tree whose /memory (QEMU's 0x4000_0000..0x6000_0000) does not hold a
    // kernel built for RAM from 2 GiB (Juno r2's) is refused, naming both.
    let folder = workspace_root()
        .join("target")
        .join("xtask-hil")
        .join("hil-uboot-ram-moved");
    let dtb = crate::hil::rehearsal::board_dtb(CPUS, &folder)?;
    let bytes = std::fs::read(&dtb).map_err(|e| e.to_string())?;
    let juno = hil::Layout {
        ram_start: 0x8000_0000,
        scenario: 0x8010_0000,
        image: 0x8020_0000,
    };
    match hil::check_ram(&bytes, &juno, 1 << 20, &dtb) {
        Ok(()) => problems.push("a tree without the kernel's RAM was accepted".into()),
        Err(message)
            if message.contains("0x40000000..0x60000000")
                && message.contains("0x80000000")
                && message.contains("FAIRWAY_RAM") => {}
        Err(message) => problems.push(format!("unexpected refusal: {message}")),
    }
    if let Err(message) = hil::check_ram(&bytes, &expected, 1 << 20, &dtb) {
        problems.push(format!(
            "the rehearsal tree refused for the moved kernel: {message}"
        ));
    }
    if problems.is_empty() {
        Ok(format!(
            "ran at {:#x} in {:.1} s: {}",
            expected.image,
            outcome.wall.as_secs_f64(),
            outcome.find("memory: kernel").unwrap_or_default().trim()
        ))
    } else {
        Err(with_tail(problems, &outcome.lines))
    }
}

/// The 16550 driver on a UART QEMU emulates: raspi3b's mini UART, which has
/// the 16550's registers 4 bytes apart (`tests/devicetree/raspi3b-16550.dts`
/// says why). The kernel, built for the board's RAM (`0x0..0x3c000000`),
/// boots as an Image with that tree, which names the UART through
/// `/chosen/stdout-path` and an alias, as `ns16550a` with `reg-shift = <2>`
/// and `reg-io-width = <4>`. Everything the kernel prints goes through the
/// driver: its boot lines, decoded from QEMU's second serial port, name the
/// board and the console. The board has no GIC: the placeholder the tree
/// names faults when the kernel sets it up, and the kernel reports the
/// data abort at its address and ends as on a board without PSCI (`exit:
/// failure`, then the CPUs parked). QEMU is stopped (by its handle) once
/// the lines are in, or after 30 s.
fn console_16550(_images: &BTreeMap<String, PathBuf>) -> Result<String, String> {
    let kernel = build_kernel_for_ram("raspi3b", RASPI3B_RAM)?;
    let image = crate::run::qemu::make_image(&kernel)?;
    let folder = workspace_root()
        .join("target")
        .join("xtask-hil")
        .join("raspi3b");
    let dts = workspace_root().join("tests/devicetree/raspi3b-16550.dts");
    let dtb = folder.join("raspi3b-16550.dtb");
    let dtb_path = dtb.display().to_string();
    crate::test::harness::run_dtc(&["-q", "-I", "dts", "-O", "dtb", "-o", &dtb_path], &dts)
        .map_err(|e| format!("{}: {e}", dts.display()))?;
    let serial = folder.join("mini-uart.bin");
    let _ = std::fs::remove_file(&serial);
    let mut qemu = std::process::Command::new("qemu-system-aarch64")
        .args([
            "-machine", "raspi3b", "-display", "none", "-monitor", "none",
        ])
        .args(["-no-reboot", "-serial", "null", "-serial"])
        .arg(format!("file:{}", serial.display()))
        .arg("-kernel")
        .arg(&image)
        .arg("-dtb")
        .arg(&dtb)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("qemu-system-aarch64: {e}"))?;
    let elf = std::fs::read(&kernel).map_err(|e| e.to_string())?;
    let table = defmt_decoder::Table::parse(&elf)
        .map_err(|e| format!("reading the defmt table: {e}"))?
        .ok_or("the kernel image has no defmt table")?;
    let needles = [
        "on QEMU raspi3b, its mini UART as a 16550",
        "console: 16550",
        "at 0x3f215040",
        "memory: kernel 0x200000..",
        "data abort) FAR=0x40041004",
        "exit: failure",
        "exit: no PSCI power-off; CPUs parked",
    ];
    let start = Instant::now();
    let mut lines = Vec::new();
    while start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(200));
        let bytes = std::fs::read(&serial).unwrap_or_default();
        let mut decoder = table.new_stream_decoder();
        decoder.received(&bytes);
        lines.clear();
        crate::run::qemu::decode_frames(decoder.as_mut(), false, |line| lines.push(line));
        if needles
            .iter()
            .all(|needle| lines.iter().any(|l| l.contains(needle)))
        {
            break;
        }
        if let Ok(Some(status)) = qemu.try_wait() {
            lines.push(format!("QEMU exited: {status}"));
            break;
        }
    }
    // Only this QEMU, by its own handle.
    let _ = qemu.kill();
    let _ = qemu.wait();
    let _ = std::fs::write(folder.join("mini-uart.log"), lines.join("\n") + "\n");
    let missing: Vec<&str> = needles
        .iter()
        .copied()
        .filter(|needle| !lines.iter().any(|l| l.contains(needle)))
        .collect();
    if missing.is_empty() {
        Ok(format!(
            "{} lines through the 16550 driver in {:.1} s: {}",
            lines.len(),
            start.elapsed().as_secs_f64(),
            lines
                .iter()
                .find(|l| l.contains("console: "))
                .map(|l| l.trim())
                .unwrap_or_default()
        ))
    } else {
        Err(format!(
            "missing {missing:?} in what the mini UART carried:\n    {}",
            lines.join("\n    ")
        ))
    }
}

/// A Ctrl-C while `hil` waits on a serial line: `cargo xtask hil` (this
/// binary, as a child process) puts the line in raw mode, is sent SIGINT by
/// its process id, and exits with the line's settings as they were before
/// it opened it (the terminal's own state, read through the line), saying
/// why it stopped.
fn interrupt_restores_console(images: &BTreeMap<String, PathBuf>) -> Result<String, String> {
    use rustix::termios::{LocalModes, tcgetattr};
    let kernel = images.get("fairway").ok_or("no fairway image")?;
    let fake = SilentBoard::start(b"")?;
    // The line as the test sees it: a new pseudo-terminal is in cooked
    // mode (line editing and echo on).
    let line = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
        .open(&fake.console)
        .map_err(|e| format!("{}: {e}", fake.console.display()))?;
    let modes = |t: &rustix::termios::Termios| {
        (
            t.input_modes,
            t.output_modes,
            t.control_modes,
            t.local_modes,
            t.input_speed(),
            t.output_speed(),
        )
    };
    let before = tcgetattr(&line).map_err(|e| e.to_string())?;
    if !before
        .local_modes
        .contains(LocalModes::ICANON | LocalModes::ECHO)
    {
        return Err(format!("the new line is not in cooked mode: {before:?}"));
    }
    let tftp = workspace_root()
        .join("target")
        .join("xtask-hil")
        .join("interrupt-tftp");
    std::fs::create_dir_all(&tftp).map_err(|e| e.to_string())?;
    // This binary as the kernel knows it (`/proc/self/exe` still runs it
    // when a rebuild has replaced its file meanwhile).
    let mut child = std::process::Command::new("/proc/self/exe")
        .arg("hil")
        .arg(kernel)
        .arg("--console")
        .arg(&fake.console)
        .arg("--tftp")
        .arg(&tftp)
        .args(["--baud", "9600", "--prompt-timeout", "30"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting cargo xtask hil: {e}"))?;
    let pid = rustix::process::Pid::from_child(&child);
    // Wait until the line is raw: `hil` holds it and waits for a prompt.
    let start = Instant::now();
    let raw = loop {
        let now = tcgetattr(&line).map_err(|e| e.to_string())?;
        if !now.local_modes.contains(LocalModes::ICANON) {
            break Some(now);
        }
        if start.elapsed() > Duration::from_secs(20) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let sent = rustix::process::kill_process(pid, rustix::process::Signal::INT);
    let sent_at = Instant::now();
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let exited_in = sent_at.elapsed();
    let after = tcgetattr(&line).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    match &raw {
        None => problems.push("hil never put the line in raw mode".to_string()),
        Some(raw) if raw.output_speed() != 9600 => {
            problems.push(format!("--baud 9600 not applied: {}", raw.output_speed()))
        }
        Some(_) => {}
    }
    if let Err(e) = sent {
        problems.push(format!("SIGINT not sent: {e}"));
    }
    if status.success() || !stderr.contains("interrupted by a signal") {
        problems.push(format!("exit {status}, said: {stderr}"));
    }
    if modes(&after) != modes(&before) {
        problems.push(format!(
            "the line's settings were not put back: before {before:?}, after {after:?}"
        ));
    }
    if exited_in > Duration::from_secs(5) {
        problems.push(format!("took {:.1} s to stop", exited_in.as_secs_f64()));
    }
    if problems.is_empty() {
        Ok(format!(
            "stopped {:.2} s after SIGINT, the line's settings put back",
            exited_in.as_secs_f64()
        ))
    } else {
        Err(problems.join("\n    "))
    }
}

/// Runs the cases whose name contains `only` (all without it); returns
/// (passed, failed).
pub fn run(only: Option<&str>, images: &BTreeMap<String, PathBuf>) -> (u64, u64) {
    let (mut passed, mut failed) = (0, 0);
    for (name, case) in cases() {
        if only.is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let start = Instant::now();
        match case(images) {
            Ok(note) => {
                passed += 1;
                eprintln!(
                    "hil  {name:<32} ok ({:.2} s) {note}",
                    start.elapsed().as_secs_f64()
                );
            }
            Err(report) => {
                failed += 1;
                eprintln!("hil  {name:<32} FAILED\n    {report}");
            }
        }
    }
    (passed, failed)
}

/// Whether some case's name contains `only`.
pub fn matches(only: &str) -> bool {
    cases().iter().any(|(name, _)| name.contains(only))
}
