//! Booting a kernel image under QEMU: the command line from a board and options,
//! a wall-clock timeout, and live decoding of the kernel's defmt frames.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use defmt_decoder::{DecodeError, Table};

use crate::run::board::Board;

/// Where blobs for the kernel (scenarios, test device trees) are loaded: the free
/// MiB between QEMU's device tree (first MiB of RAM) and the kernel (at +2 MiB).
pub const BLOB_ADDRESS: u64 = 0x4010_0000;
pub const SCENARIO_ADDRESS: u64 = BLOB_ADDRESS;
const SCENARIO_ROOM: usize = 1 << 20;

/// A scenario encoded for the kernel (see [`QemuConfig::prepare_scenario`]).
#[derive(Debug, Clone)]
pub struct PreparedScenario {
    /// The blob, to load at [`SCENARIO_ADDRESS`].
    pub file: PathBuf,
    /// The kernel options that run it (`workload=rtapp scenario=... scenario_size=...`).
    pub command_line: String,
}

/// The largest `-dtb` file QEMU loads: it adds 10,000 bytes of room for its
/// own edits and drops, without a message, a tree whose size with that room
/// passes 1 MiB. Measured with QEMU 7.2 on `virt`: 1,038,575 bytes boot,
/// 1,038,579 bytes reach the kernel as no tree at all (`bad magic`).
pub const QEMU_DTB_MAX_BYTES: usize = 1_048_576 - 10_000;

/// How to boot one kernel image.
#[derive(Debug, Clone)]
pub struct QemuConfig {
    /// The board (machine, CPU model, memory and defaults).
    pub board: Board,
    /// CPU count.
    pub cpus: u32,
    /// GIC version, 2 or 3.
    pub gic: u32,
    /// Exception level at entry, 1 or 2.
    pub el: u32,
    /// Deterministic mode: `-icount shift=0,align=off,sleep=off`.
    pub icount: bool,
    /// Kernel command line (`/chosen/bootargs`).
    pub append: String,
    /// A device tree to pass instead of QEMU's own.
    pub dtb: Option<PathBuf>,
    /// An rt-app scenario to run (parsed and validated here, loaded as a blob).
    pub scenario: Option<PathBuf>,
    /// Boot a flat arm64 Image made from the ELF (device tree address in x0, as
    /// on boards) instead of the ELF itself; the ELF still decodes the log.
    pub as_image: bool,
    /// More QEMU arguments (e.g. `-device loader,...`).
    pub extra_arguments: Vec<String>,
    /// Extra `-smp` topology, e.g. `,clusters=2,cores=2`.
    pub smp_topology: String,
    /// Boot without any firmware QEMU could load (see [`isolated_qemu`]): the tests
    /// do, so that any dependence on an optional ROM fails on every machine, not
    /// only on one without Debian's `ipxe-qemu`.
    pub no_firmware: bool,
    /// Let QEMU add its default devices (no `-nodefaults`): only for the test that
    /// shows [`isolated_qemu`] catches a default device's ROM.
    pub qemu_defaults: bool,
    /// Wall-clock limit.
    pub timeout: Duration,
    /// Print notes on what a scenario sets that has no effect (`--verbose`).
    pub verbose: bool,
    /// Print decoded log lines as they arrive.
    pub echo: bool,
    /// The loaded scenario's duration, when it has one (for the progress
    /// line).
    pub scenario_duration_ns: Option<u64>,
}

impl QemuConfig {
    /// The board's defaults.
    pub fn for_board(board: Board) -> Self {
        QemuConfig {
            cpus: board.cpus,
            gic: board.gic,
            el: board.el,
            board,
            icount: false,
            append: String::new(),
            dtb: None,
            smp_topology: String::new(),
            extra_arguments: Vec::new(),
            as_image: false,
            scenario: None,
            no_firmware: false,
            qemu_defaults: false,
            verbose: false,
            timeout: Duration::from_secs(60),
            echo: true,
            scenario_duration_ns: None,
        }
    }

    /// Whether the board brings its own CPUs (its device tree, or a `cpus_dtsi`
    /// merged into QEMU's), so that it runs with exactly its count.
    fn board_has_own_cpus(&self) -> bool {
        self.board.dts.is_some() || self.board.cpus_dtsi.is_some()
    }

    /// Compiles the board's own device tree source, if it has one, and uses it; or
    /// merges the board's CPUs (`cpus_dtsi`) into QEMU's own tree for this machine.
    pub fn use_board_device_tree(&mut self) -> Result<(), String> {
        let folder = crate::run::board::workspace_root()
            .join("target")
            .join("xtask-dtb");
        std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
        if let Some(source) = &self.board.dts {
            let source = self.board.folder().join(source);
            let target = folder.join(format!("{}.dtb", self.board.name));
            compile_dts(&source, &target)?;
            self.dtb = Some(target);
        } else if let Some(include) = &self.board.cpus_dtsi {
            let include = self.board.folder().join(include);
            let stem = format!(
                "{}-{}cpus-gic{}-el{}",
                self.board.name, self.cpus, self.gic, self.el
            );
            // QEMU's tree for these options, as source, then the board's include:
            // dtc merges the nodes they both name (/cpus/cpu@N) and adds the rest.
            let qemu_dtb = folder.join(format!("{stem}-qemu.dtb"));
            dump_dtb(self, &qemu_dtb)?;
            let output = Command::new("dtc")
                .args(["-I", "dtb", "-O", "dts", "-q"])
                .arg(&qemu_dtb)
                .output()
                .map_err(|e| format!("dtc: {e}"))?;
            if !output.status.success() {
                return Err(format!("dtc could not read {}", qemu_dtb.display()));
            }
            let mut source = String::from_utf8_lossy(&output.stdout).into_owned();
            source.push_str(&format!("\n/include/ \"{}\"\n", include.display()));
            let merged = folder.join(format!("{stem}.dts"));
            write_whole(&merged, source.as_bytes())?;
            let target = folder.join(format!("{stem}.dtb"));
            compile_dts(&merged, &target)?;
            self.dtb = Some(target);
        }
        Ok(())
    }

    /// Parses and validates the scenario with the rt-app reader (`fairway_rtapp`), encodes
    /// it (`fairway_contract::scenario::wire`) and has QEMU load it below the kernel.
    pub fn load_scenario(&mut self) -> Result<(), String> {
        let Some(prepared) = self.prepare_scenario()? else {
            return Ok(());
        };
        self.extra_arguments.extend([
            "-device".into(),
            format!(
                "loader,file={},addr={SCENARIO_ADDRESS:#x},force-raw=on",
                prepared.file.display()
            ),
        ]);
        if !self.append.is_empty() {
            self.append.push(' ');
        }
        self.append.push_str(&prepared.command_line);
        Ok(())
    }

    /// The scenario's blob for [`SCENARIO_ADDRESS`], written to a file under
    /// `target/xtask-scenario`, and the kernel options that run it: parsed and
    /// validated for [`QemuConfig::cpus`] CPUs; shared by QEMU's loader and the
    /// board runner (`crate::hil`), which loads the file with U-Boot.
    pub fn prepare_scenario(&mut self) -> Result<Option<PreparedScenario>, String> {
        self.prepare_scenario_at(SCENARIO_ADDRESS)
    }

    /// [`QemuConfig::prepare_scenario`] for a kernel that takes its blob at
    /// `address` (a board's RAM start + 1 MiB, `crate::hil::Layout`).
    pub fn prepare_scenario_at(
        &mut self,
        address: u64,
    ) -> Result<Option<PreparedScenario>, String> {
        let Some(path) = &self.scenario else {
            return Ok(None);
        };
        for word in self.append.split_ascii_whitespace() {
            let key = word.split('=').next().unwrap_or(word);
            if matches!(key, "workload" | "scenario" | "scenario_size") && word != "workload=rtapp"
            {
                return Err(format!(
                    "--append \"{word}\" conflicts with --scenario, which runs workload=rtapp \
                     with the scenario's blob"
                ));
            }
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let parsed = fairway_rtapp::parse_with_notes(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let scenario = parsed.scenario;
        scenario.validate(self.cpus as usize).map_err(|e| {
            // A CPU number past the machine: say where its CPU count came from.
            let hint = if !e.path.contains(".cpus") {
                String::new()
            } else if self.board_has_own_cpus() {
                format!(" (board {} has {} CPUs)", self.board.name, self.cpus)
            } else {
                format!(
                    " (the kernel boots {} CPU(s) on {}; --cpus N boots up to 8)",
                    self.cpus, self.board.name
                )
            };
            format!("{}: {e}{hint}", path.display())
        })?;
        // Always: the file runs as rt-app reads it, which may not be as it reads.
        for note in &parsed.reinterpreted {
            eprintln!("xtask: {}: {note}", path.display());
        }
        if self.verbose {
            for note in &parsed.notes {
                eprintln!("xtask: {}: note: {note}", path.display());
            }
        }
        self.scenario_duration_ns = u64::try_from(scenario.global.duration_s)
            .ok()
            .filter(|&s| s > 0)
            .map(|s| s * 1_000_000_000);
        let blob =
            fairway_contract::scenario::wire::encode(&scenario).map_err(|e| e.to_string())?;
        if blob.len() > SCENARIO_ROOM {
            return Err(format!(
                "{}: encoded scenario is {} bytes, more than the {SCENARIO_ROOM} bytes below the kernel",
                path.display(),
                blob.len()
            ));
        }
        let folder = crate::run::board::workspace_root()
            .join("target")
            .join("xtask-scenario");
        std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = folder.join(format!("{stem}.bin"));
        write_whole(&file, &blob)?;
        let mut command_line = format!(
            "workload=rtapp scenario={address:#x} scenario_size={}",
            blob.len()
        );
        // A group with a cpu.max needs run queues built with bandwidth
        // control; the kernel refuses the scenario without it.
        let limited = scenario.global.task_groups.iter().any(|g| g.ever_limited());
        let chosen = self
            .append
            .split_ascii_whitespace()
            .any(|word| word.starts_with("cfs_bandwidth="));
        if limited && !chosen {
            command_line.push_str(" cfs_bandwidth=1");
        }
        Ok(Some(PreparedScenario { file, command_line }))
    }

    /// Checks the combination before QEMU does, with a clearer message.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=8).contains(&self.cpus) {
            return Err(format!("--cpus {}: Fairway runs on 1 to 8 CPUs", self.cpus));
        }
        if !matches!(self.gic, 2 | 3) {
            return Err(format!("--gic {}: must be 2 or 3", self.gic));
        }
        if !matches!(self.el, 1 | 2) {
            return Err(format!("--el {}: must be 1 or 2", self.el));
        }
        // A board that brings its own CPUs (capacities, clusters, OPPs) has
        // exactly that many: the kernel would stop at boot on the merged
        // tree (`/cpus/cpu/reg: missing or shorter than #address-cells`).
        // The simulator refuses the same with the same words.
        if self.board_has_own_cpus() && self.dtb.is_none() && self.cpus != self.board.cpus {
            return Err(format!(
                "--cpus {}: board {} has {} CPUs",
                self.cpus, self.board.name, self.board.cpus
            ));
        }
        Ok(())
    }

    /// The kernel command line QEMU passes (`/chosen/bootargs`): `--append`, the
    /// scenario's blob, and `icount=1` under icount (the kernel learns it from
    /// there, for its report).
    pub fn command_line(&self) -> String {
        match (self.icount, self.append.is_empty()) {
            (true, true) => "icount=1".to_string(),
            (true, false) => format!("{} icount=1", self.append),
            (false, _) => self.append.clone(),
        }
    }

    /// Checks the kernel command line with the kernel's own parser, so a bad
    /// option stops here, before QEMU starts.
    pub fn check_command_line(&self) -> Result<(), String> {
        let line = self.command_line();
        fairway_sched::boot_options::BootOptions::parse(&line)
            .map(|_| ())
            .map_err(|error| error.to_string())
    }

    /// Checks that `--dtb` names a flattened device tree before QEMU reads it.
    pub fn check_dtb(&self) -> Result<(), String> {
        let Some(path) = &self.dtb else {
            return Ok(());
        };
        let bytes = std::fs::read(path).map_err(|e| format!("--dtb {}: {e}", path.display()))?;
        const FDT_MAGIC: [u8; 4] = [0xd0, 0x0d, 0xfe, 0xed];
        if bytes.len() < 40 || bytes[..4] != FDT_MAGIC {
            return Err(format!(
                "--dtb {}: not a flattened device tree (a .dtb starts with the magic number \
                 0xd00dfeed; compile a .dts with dtc)",
                path.display()
            ));
        }
        let total = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        if total != bytes.len() {
            return Err(format!(
                "--dtb {}: its header says {total} bytes, the file has {}",
                path.display(),
                bytes.len()
            ));
        }
        if bytes.len() > QEMU_DTB_MAX_BYTES {
            return Err(format!(
                "--dtb {}: {} bytes; QEMU loads a device tree of at most {QEMU_DTB_MAX_BYTES} \
                 bytes and drops a larger one without a word (the kernel would find no tree)",
                path.display(),
                bytes.len()
            ));
        }
        Ok(())
    }

    /// The `-machine` value.
    fn machine(&self, extra: &str) -> String {
        let mut machine = format!("{},gic-version={}", self.board.machine, self.gic);
        if self.el == 2 {
            machine.push_str(",virtualization=on");
        }
        machine.push_str(extra);
        machine
    }

    /// QEMU's arguments (without the kernel, for `dumpdtb`, when `kernel` is None).
    ///
    /// `-nodefaults`: QEMU adds no device of its own (the `virt` machine's default
    /// network card would load an option ROM, `efi-virtio.rom`, from a package that
    /// `apt-get install --no-install-recommends qemu-system-arm` leaves out). Fairway
    /// uses the machine's built-in PL011, GIC, timer and PSCI, and asks for the
    /// serial port explicitly.
    pub fn arguments(&self, kernel: Option<&Path>, machine_extra: &str) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "-machine".into(),
            self.machine(machine_extra),
            "-cpu".into(),
            self.board.cpu.clone(),
            "-smp".into(),
            format!("{}{}", self.cpus, self.smp_topology),
            "-m".into(),
            self.board.memory.clone(),
            "-display".into(),
            "none".into(),
            "-monitor".into(),
            "none".into(),
            "-serial".into(),
            "stdio".into(),
            "-semihosting-config".into(),
            "enable=on,target=native".into(),
            // A guest reset (PSCI SYSTEM_RESET, `power_off=reset`) ends QEMU
            // with status 0 instead of booting the kernel again.
            "-no-reboot".into(),
        ];
        if self.icount {
            args.extend(["-icount".into(), "shift=0,align=off,sleep=off".into()]);
        }
        if !self.qemu_defaults {
            args.insert(0, "-nodefaults".into());
        }
        if let Some(kernel) = kernel {
            args.extend(["-kernel".into(), kernel.display().to_string()]);
        }
        // QEMU takes a command line only with a kernel (not for `dumpdtb`).
        let append = self.command_line();
        if !append.is_empty() && kernel.is_some() {
            args.extend(["-append".into(), append]);
        }
        if let Some(dtb) = &self.dtb {
            args.extend(["-dtb".into(), dtb.display().to_string()]);
        }
        if kernel.is_some() {
            args.extend(self.extra_arguments.iter().cloned());
        }
        args
    }
}

/// Compiles the device tree source `source` into `target` with dtc.
pub fn compile_dts(source: &Path, target: &Path) -> Result<(), String> {
    let temporary = temporary_beside(target);
    let status = Command::new("dtc")
        .args(["-I", "dts", "-O", "dtb", "-q", "-o"])
        .arg(&temporary)
        .arg(source)
        .status()
        .map_err(|e| format!("dtc: {e}"))?;
    if !status.success() {
        let _ = std::fs::remove_file(&temporary);
        return Err(format!("dtc could not compile {}", source.display()));
    }
    rename_over(&temporary, target)
}

/// A path beside `path`, unique to this process and call. The test command boots
/// cases concurrently, and cases of one board write the same files (its device
/// tree, a scenario's blob, the flat Image): each is written here, then renamed
/// over `path`, so a QEMU opening `path` reads a whole file, old or new, never
/// one being written.
pub fn temporary_beside(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.{call}.tmp", std::process::id()))
}

/// Renames `temporary` (from [`temporary_beside`]) over `path`, atomically.
pub fn rename_over(temporary: &Path, path: &Path) -> Result<(), String> {
    std::fs::rename(temporary, path).map_err(|e| {
        let _ = std::fs::remove_file(temporary);
        format!("{}: {e}", path.display())
    })
}

/// Writes `bytes` to `path` through [`temporary_beside`].
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let temporary = temporary_beside(path);
    std::fs::write(&temporary, bytes).map_err(|e| format!("{}: {e}", temporary.display()))?;
    rename_over(&temporary, path)
}

/// What a boot produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// QEMU's exit status; `None` when killed by the timeout.
    pub status: Option<i32>,
    /// The limit fired.
    pub timed_out: bool,
    /// Decoded log lines, in order.
    pub lines: Vec<String>,
    /// Wall time of the boot.
    pub wall: Duration,
}

impl Outcome {
    /// The first line containing `needle`.
    pub fn find(&self, needle: &str) -> Option<&str> {
        self.lines
            .iter()
            .find(|l| l.contains(needle))
            .map(String::as_str)
    }
}

/// Boots `kernel` and waits for it to exit or time out.
pub fn run(kernel: &Path, config: &QemuConfig) -> Result<Outcome, String> {
    config.validate()?;
    let elf = std::fs::read(kernel).map_err(|e| format!("{}: {e}", kernel.display()))?;
    let image = if config.as_image {
        make_image(kernel)?
    } else {
        kernel.to_path_buf()
    };
    let (program, mut arguments) = if config.no_firmware {
        let (program, empty) = isolated_qemu()?;
        (program, vec!["-L".into(), empty.display().to_string()])
    } else {
        (PathBuf::from("qemu-system-aarch64"), Vec::new())
    };
    arguments.extend(config.arguments(Some(&image), ""));
    let mut child = Command::new(&program)
        .args(&arguments)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let start = Instant::now();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let mut stdout = child.stdout.take().expect("piped stdout");
    let decoded = Arc::clone(&lines);
    let echo = config.echo;
    let reader = std::thread::spawn(move || -> Result<(), String> {
        let table = Table::parse(&elf)
            .map_err(|e| format!("reading the defmt table: {e}"))?
            .ok_or("the kernel image has no defmt table")?;
        let mut decoder = table.new_stream_decoder();
        let mut buffer = [0u8; 4096];
        loop {
            let count = match stdout.read(&mut buffer) {
                Ok(0) | Err(_) => return Ok(()),
                Ok(count) => count,
            };
            decoder.received(&buffer[..count]);
            decode_frames(decoder.as_mut(), echo, |line| {
                decoded.lock().expect("log lock").push(line);
            });
        }
    });
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if start.elapsed() > config.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                timed_out = true;
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for QEMU: {e}")),
        }
    };
    let wall = start.elapsed();
    match reader.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err("the log decoder thread panicked".into()),
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let mut lines = std::mem::take(&mut *lines.lock().expect("log lock"));
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        let line = format!("qemu: {line}");
        if config.echo {
            let _terminal = crate::run::progress::before_output();
            eprintln!("{line}");
        }
        lines.push(line);
    }
    if timed_out {
        let line = format!(
            "TIMEOUT: QEMU killed after {:.1} s (limit {:?})",
            wall.as_secs_f64(),
            config.timeout
        );
        if config.echo {
            let _terminal = crate::run::progress::before_output();
            eprintln!("{line}");
        }
        lines.push(line);
    }
    Ok(Outcome {
        status,
        timed_out,
        lines,
        wall,
    })
}

/// Decodes every complete defmt frame `decoder` holds into a log line
/// (`TIMESTAMP LEVEL message`, as the runner prints them), echoes it when
/// `echo` (trace records are data, never echoed) and hands it to `push`;
/// a malformed frame becomes the line `(malformed defmt frame skipped)`. Shared
/// by the QEMU runner and the board runner (`crate::hil`).
pub fn decode_frames(
    decoder: &mut dyn defmt_decoder::StreamDecoder,
    echo: bool,
    mut push: impl FnMut(String),
) {
    loop {
        match decoder.decode() {
            Ok(frame) => {
                let message = frame.display_message().to_string();
                let line = match (frame.level(), frame.display_timestamp()) {
                    (Some(level), Some(ts)) => {
                        format!("{ts} {:<5} {message}", level.as_str().to_uppercase())
                    }
                    (None, Some(ts)) => format!("{ts} {message}"),
                    (Some(level), None) => {
                        format!("{:<5} {message}", level.as_str().to_uppercase())
                    }
                    (None, None) => message,
                };
                // Trace records are data for `--trace`, and the turns
                // lines for the runner's warnings (`icount_warnings`), not
                // for a reader.
                if echo && !line.contains("trace-record: ") && !line.contains("turns: ") {
                    let _terminal = crate::run::progress::before_output();
                    println!("{line}");
                }
                push(line);
            }
            Err(DecodeError::UnexpectedEof) => return,
            Err(DecodeError::Malformed) => {
                let line = "(malformed defmt frame skipped)".to_string();
                if echo {
                    let _terminal = crate::run::progress::before_output();
                    println!("{line}");
                }
                push(line);
            }
        }
    }
}

/// Makes a flat arm64 Image (`KERNEL.img`) from the ELF with the toolchain's
/// llvm-objcopy (rustup component llvm-tools).
pub fn make_image(kernel: &Path) -> Result<PathBuf, String> {
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("rustc: {e}"))?;
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_string();
    let host = Command::new("rustc")
        .args(["--print", "host-tuple"])
        .output()
        .map_err(|e| format!("rustc: {e}"))?;
    let host = String::from_utf8_lossy(&host.stdout).trim().to_string();
    let objcopy = Path::new(&sysroot)
        .join("lib/rustlib")
        .join(host)
        .join("bin/llvm-objcopy");
    let image = kernel.with_extension("img");
    let temporary = temporary_beside(&image);
    let status = Command::new(&objcopy)
        .args(["-O", "binary"])
        .arg(kernel)
        .arg(&temporary)
        .status()
        .map_err(|e| {
            format!(
                "{}: {e} (install it with: rustup component add llvm-tools)",
                objcopy.display()
            )
        })?;
    if !status.success() {
        let _ = std::fs::remove_file(&temporary);
        return Err(format!("llvm-objcopy failed on {}", kernel.display()));
    }
    rename_over(&temporary, &image)?;
    Ok(image)
}

/// Dumps QEMU's own device tree for `config` into `path`.
pub fn dump_dtb(config: &QemuConfig, path: &Path) -> Result<(), String> {
    let temporary = temporary_beside(path);
    let extra = format!(",dumpdtb={}", temporary.display());
    let output = Command::new("qemu-system-aarch64")
        .args(config.arguments(None, &extra))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start qemu-system-aarch64: {e}"))?;
    if !temporary.exists() {
        return Err(format!(
            "QEMU did not dump its device tree: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    rename_over(&temporary, path)
}

/// A copy of QEMU that can find no firmware, and an empty folder for `-L`.
///
/// `-L DIR` only puts DIR in front of QEMU's search path (QEMU 7.2 still searches
/// `share/qemu`, `share/seabios` and `lib/ipxe/qemu` after it), so by itself it
/// hides nothing. Those folders are found relative to the executable, so a copy
/// of the executable in a folder of its own has none. This checks that QEMU lists
/// only such folders, so a QEMU that searches elsewhere fails here rather than
/// passing the tests by luck.
pub fn isolated_qemu() -> Result<(PathBuf, PathBuf), String> {
    let root = crate::run::board::workspace_root()
        .join("target")
        .join("xtask-isolated-qemu");
    let program = root.join("bin").join("qemu-system-aarch64");
    let empty = root.join("empty");
    let installed = which("qemu-system-aarch64")?;
    let stale = match (std::fs::metadata(&installed), std::fs::metadata(&program)) {
        (Ok(source), Ok(copy)) => {
            source.len() != copy.len() || source.modified().ok() > copy.modified().ok()
        }
        _ => true,
    };
    if stale {
        std::fs::create_dir_all(program.parent().expect("bin folder"))
            .map_err(|e| format!("{}: {e}", root.display()))?;
        let temporary = temporary_beside(&program);
        std::fs::copy(&installed, &temporary).map_err(|e| {
            format!(
                "copying {} to {}: {e}",
                installed.display(),
                temporary.display()
            )
        })?;
        rename_over(&temporary, &program)?;
    }
    std::fs::create_dir_all(&empty).map_err(|e| format!("{}: {e}", empty.display()))?;
    let listed = Command::new(&program)
        .args(["-L"])
        .arg(&empty)
        .args(["-L", "help"])
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    for folder in String::from_utf8_lossy(&listed.stdout).lines() {
        let folder = Path::new(folder.trim());
        let inside = folder
            .canonicalize()
            .map_or(folder.starts_with(&root) || !folder.exists(), |f| {
                f.starts_with(&root)
            });
        let has_files = std::fs::read_dir(folder).is_ok_and(|mut d| d.next().is_some());
        if !inside || has_files {
            return Err(format!(
                "QEMU searches {} for firmware, outside {} or not empty: the tests cannot \
                 boot without optional firmware",
                folder.display(),
                root.display()
            ));
        }
    }
    Ok((program, empty))
}

/// The file `program` names on the PATH, with symbolic links resolved.
fn which(program: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|folder| folder.join(program))
        .find(|candidate| candidate.is_file())
        .and_then(|found| found.canonicalize().ok())
        .ok_or_else(|| format!("{program} is not on the PATH"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(board: &str) -> QemuConfig {
        QemuConfig::for_board(Board::load(board).unwrap())
    }

    /// A board with its own CPUs runs with exactly that many; QEMU virt,
    /// whose tree QEMU makes for any count, takes any count up to 8.
    #[test]
    fn a_board_with_its_own_cpus_takes_only_its_count() {
        let mut pixel6 = config("pixel6");
        assert!(pixel6.validate().is_ok());
        pixel6.cpus = 2;
        assert_eq!(
            pixel6.validate().unwrap_err(),
            "--cpus 2: board pixel6 has 8 CPUs"
        );
        let mut juno = config("juno-r2");
        juno.cpus = 4;
        assert_eq!(
            juno.validate().unwrap_err(),
            "--cpus 4: board juno-r2 has 6 CPUs"
        );
        let mut virt = config("qemu-virt");
        virt.cpus = 2;
        assert!(virt.validate().is_ok());
    }

    /// A scenario pinned past the machine's CPUs is refused before boot, saying
    /// where the CPU count came from.
    #[test]
    fn a_cpu_past_the_machine_names_where_its_count_came_from() {
        let path = std::env::temp_dir().join(format!("fairway-pin-{}.json", std::process::id()));
        std::fs::write(
            &path,
            r#"{"global": {"duration": 1}, "tasks": {"t": {"cpus": [1], "run": 10, "sleep": 90}}}"#,
        )
        .unwrap();
        let mut virt = config("qemu-virt");
        virt.cpus = 1;
        virt.scenario = Some(path.clone());
        let error = virt.prepare_scenario().unwrap_err();
        assert_eq!(
            error,
            format!(
                "{}: tasks.t.cpus.0: 1 is outside 0..=0 (the kernel boots 1 CPU(s) on qemu-virt; \
                 --cpus N boots up to 8)",
                path.display()
            )
        );
        std::fs::remove_file(&path).unwrap();
    }

    /// A tree QEMU would drop is refused with its size and the limit; one
    /// byte under the limit passes (the header's size is checked first).
    #[test]
    fn a_device_tree_qemu_would_drop_is_refused() {
        let folder = std::env::temp_dir().join(format!("fairway-dtb-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let tree = |len: usize| {
            let mut bytes = vec![0u8; len];
            bytes[..4].copy_from_slice(&[0xd0, 0x0d, 0xfe, 0xed]);
            bytes[4..8].copy_from_slice(&(len as u32).to_be_bytes());
            let path = folder.join(format!("{len}.dtb"));
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let mut virt = config("qemu-virt");
        virt.dtb = Some(tree(QEMU_DTB_MAX_BYTES));
        assert!(virt.check_dtb().is_ok());
        virt.dtb = Some(tree(QEMU_DTB_MAX_BYTES + 1));
        let error = virt.check_dtb().unwrap_err();
        assert!(
            error.contains("1038577 bytes; QEMU loads a device tree of at most 1038576"),
            "{error}"
        );
        let _ = std::fs::remove_dir_all(&folder);
    }
}
