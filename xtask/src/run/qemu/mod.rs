//! Booting a kernel image under QEMU: the command line from a board and options
//! (here), the boot itself with a wall-clock timeout and live decoding of the
//! kernel's defmt frames ([`boot`]), and the files QEMU reads, written whole
//! ([`files`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::run::board::Board;

mod boot;
mod files;

pub use boot::{Outcome, decode_frames, dump_dtb, isolated_qemu, make_image, run};
pub use files::{compile_dts, write_whole};

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

#[cfg(test)]
mod tests;
