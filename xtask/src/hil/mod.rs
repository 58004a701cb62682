//! `cargo xtask hil`: runs a kernel image on a board through U-Boot on its
//! serial console (docs/hil.md).
//!
//! It waits for U-Boot's prompt (power-cycling the board once through a
//! configurable command when none comes), loads the flat Image, the device
//! tree and the scenario over TFTP or over the console (`loady`), boots with
//! `booti`, decodes the kernel's defmt frames as the QEMU runner does
//! ([`crate::run::qemu::decode_frames`]) until the kernel's last line,
//! `exit: success` or `exit: failure`, writes the same report, and exits with
//! the kernel's status. `rehearsal` makes QEMU with U-Boot such a board.

pub mod console;
pub mod rehearsal;
mod uboot;
mod ymodem;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::run::board::Board;
use crate::run::qemu::{self, QemuConfig};
use console::{Console, Received};
use uboot::UBoot;

/// The Image's `text_offset` (src/arch/aarch64/boot.s): the kernel runs
/// 2 MiB above the start of its RAM.
const TEXT_OFFSET: u64 = 0x20_0000;
/// The room `booti` needs above a device tree it edits in place
/// (`fdt_high` = all ones): 12 KiB.
const FDT_GROWTH: u64 = 0x3000;

/// Where the files go on the board, from the RAM the kernel was built for
/// (`FAIRWAY_RAM`, build.rs), read from the kernel's link address: the
/// ELF's entry point `_start` is RAM start + 2 MiB (linker.ld).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The start of the kernel's RAM; the device tree goes there.
    pub ram_start: u64,
    /// The scenario blob: RAM start + 1 MiB, where the kernel accepts one.
    pub scenario: u64,
    /// The Image, loaded at its link address: its header's flags bit 3
    /// tells `booti` to leave it there (U-Boot would otherwise move it to
    /// the start of the board's first DRAM bank).
    pub image: u64,
}

impl Layout {
    /// The layout of the kernel ELF `elf`.
    pub fn of_kernel(elf: &[u8]) -> Result<Layout, String> {
        use object::Object;
        let file = object::File::parse(elf).map_err(|e| format!("reading the kernel ELF: {e}"))?;
        let image = file.entry();
        if image < TEXT_OFFSET || !(image - TEXT_OFFSET).is_multiple_of(TEXT_OFFSET) {
            return Err(format!(
                "the kernel's entry point {image:#x} is not 2 MiB above a 2 MiB-aligned RAM start"
            ));
        }
        let ram_start = image - TEXT_OFFSET;
        Ok(Layout {
            ram_start,
            scenario: ram_start + 0x10_0000,
            image,
        })
    }

    /// Where the device tree goes: the start of RAM, below the scenario.
    pub fn fdt(&self) -> u64 {
        self.ram_start
    }

    /// The device tree's room: up to the scenario, less what `booti` adds.
    pub fn fdt_room(&self) -> u64 {
        self.scenario - self.fdt() - FDT_GROWTH
    }
}

/// Checks that the board's device tree (`dtb`, from `path`) has RAM where
/// the kernel was built to run (`FAIRWAY_RAM`): from the layout's RAM start
/// (the device tree and the scenario go there) to the end of the Image.
pub fn check_ram(dtb: &[u8], layout: &Layout, image_size: u64, path: &Path) -> Result<(), String> {
    let board = fairway_devicetree::BoardInfo::parse(dtb, layout.ram_start as usize, 0)
        .map_err(|e| format!("--dtb {}: {e}", path.display()))?;
    let memory = board.memory;
    let needed = layout.ram_start..layout.image + image_size;
    if memory.start > needed.start || memory.end < needed.end {
        return Err(format!(
            "--dtb {}: its /memory is {:#x}..{:#x}, but the kernel was built for RAM from \
             {:#x} (it runs at {:#x}): build it for this board with \
             FAIRWAY_RAM=START..END cargo build --release (the board's notes give the range)",
            path.display(),
            memory.start,
            memory.end,
            layout.ram_start,
            layout.image
        ));
    }
    Ok(())
}

/// How the files reach the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Load {
    /// TFTP: the files are copied into `dir`, the root of the host's TFTP
    /// server; `dhcp` asks for an address first; `server` sets `serverip`.
    Tftp {
        dir: PathBuf,
        dhcp: bool,
        server: Option<String>,
    },
    /// YMODEM over the console (`loady`).
    Serial,
}

/// Everything `hil` needs.
#[derive(Debug, Clone)]
pub struct HilOptions {
    /// The serial device, socket or other file the board's console is on.
    pub console: PathBuf,
    /// Line speed for a serial device (`None`: leave it).
    pub baud: Option<u32>,
    /// The kernel ELF (its defmt table decodes the output; its Image boots).
    pub kernel: PathBuf,
    /// The device tree to boot with; `None`: U-Boot's own (`$fdtcontroladdr`),
    /// copied below the kernel.
    pub dtb: Option<PathBuf>,
    /// An rt-app scenario.
    pub scenario: Option<PathBuf>,
    /// The board's CPU count (for checking the scenario).
    pub cpus: u32,
    /// More kernel options.
    pub append: String,
    /// TFTP or serial.
    pub load: Load,
    /// U-Boot's prompt.
    pub prompt: String,
    /// How long to wait for the prompt (each try).
    pub prompt_timeout: Duration,
    /// How long the kernel may run, from `booti`.
    pub timeout: Duration,
    /// The command that power-cycles the board, run once when no prompt comes.
    pub power_cycle: Option<String>,
    /// Print U-Boot's text and the kernel's lines as they come.
    pub echo: bool,
}

/// What a board run gave.
#[derive(Debug, Clone)]
pub struct HilOutcome {
    /// 0 (`exit: success`), 1 (`exit: failure`), `None` (no verdict).
    pub status: Option<i32>,
    /// U-Boot's text (each line prefixed `u-boot: `), then the kernel's lines.
    pub lines: Vec<String>,
    /// Why there is no verdict, when there is none.
    pub problem: Option<String>,
    /// From the first byte read to the verdict.
    pub wall: Duration,
}

impl HilOutcome {
    /// The first line containing `needle`.
    pub fn find(&self, needle: &str) -> Option<&str> {
        self.lines
            .iter()
            .find(|l| l.contains(needle))
            .map(String::as_str)
    }
}

/// The files to load and the kernel command line, checked before the board
/// is touched.
struct Prepared {
    layout: Layout,
    image: Vec<u8>,
    dtb: Option<Vec<u8>>,
    scenario: Option<Vec<u8>>,
    command_line: String,
}

fn prepare(options: &HilOptions) -> Result<Prepared, String> {
    let image_path = qemu::make_image(&options.kernel)?;
    let image = std::fs::read(&image_path).map_err(|e| format!("{}: {e}", image_path.display()))?;
    let elf =
        std::fs::read(&options.kernel).map_err(|e| format!("{}: {e}", options.kernel.display()))?;
    let layout = Layout::of_kernel(&elf)?;
    let mut config = QemuConfig::for_board(Board::load("qemu-virt")?);
    config.cpus = options.cpus;
    config.append = options.append.clone();
    config.scenario = options.scenario.clone();
    config.dtb = options.dtb.clone();
    config.check_dtb()?;
    let dtb = match &options.dtb {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            if bytes.len() as u64 > layout.fdt_room() {
                return Err(format!(
                    "--dtb {}: {} bytes; at most {} fit between {:#x} and the scenario at \
                     {:#x} (with the 12 KiB booti adds)",
                    path.display(),
                    bytes.len(),
                    layout.fdt_room(),
                    layout.fdt(),
                    layout.scenario
                ));
            }
            check_ram(&bytes, &layout, image.len() as u64, path)?;
            Some(bytes)
        }
        None => None,
    };
    let scenario = match config.prepare_scenario_at(layout.scenario)? {
        Some(prepared) => {
            if !config.append.is_empty() {
                config.append.push(' ');
            }
            config.append.push_str(&prepared.command_line);
            Some(std::fs::read(&prepared.file).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    config.check_command_line()?;
    let command_line = config.command_line();
    if command_line.contains(['\'', '"', ';', '$', '\\']) {
        return Err(format!(
            "kernel command line '{command_line}': U-Boot's shell would interpret its quotes, \
             ';', '$' or '\\'"
        ));
    }
    Ok(Prepared {
        layout,
        image,
        dtb,
        scenario,
        command_line,
    })
}

/// Runs the kernel on the board and returns what it said.
pub fn run(options: &HilOptions) -> Result<HilOutcome, String> {
    run_with(options, || Console::open(&options.console, options.baud))
}

/// [`run`] on the console `open` gives, opened once the files are ready (the
/// rehearsal starts its board there).
pub fn run_with(
    options: &HilOptions,
    open: impl FnOnce() -> Result<Console, String>,
) -> Result<HilOutcome, String> {
    let prepared = prepare(options)?;
    let elf =
        std::fs::read(&options.kernel).map_err(|e| format!("{}: {e}", options.kernel.display()))?;
    let table = defmt_decoder::Table::parse(&elf)
        .map_err(|e| format!("reading the defmt table: {e}"))?
        .ok_or("the kernel image has no defmt table")?;
    let start = Instant::now();
    let console = open()?;
    let mut uboot = UBoot::new(console, &options.prompt, options.echo);
    if let Err(first) = uboot.wait_for_prompt(options.prompt_timeout) {
        let Some(command) = &options.power_cycle else {
            return Err(format!(
                "{first}\n    (check the wiring, the line speed (--baud) and that the board is \
                 powered; --power-cycle CMD lets the command cycle its power and try again)"
            ));
        };
        eprintln!("xtask: hil: {first}");
        uboot::power_cycle(command)?;
        uboot
            .wait_for_prompt(options.prompt_timeout)
            .map_err(|e| format!("after power-cycling with '{command}': {e}"))?;
    }
    let short = Duration::from_secs(10);
    uboot.run_ok("setenv fdt_high 0xffffffffffffffff", short)?;
    uboot.run_ok("setenv initrd_high 0xffffffffffffffff", short)?;
    load(&mut uboot, options, &prepared)?;
    if prepared.dtb.is_none() {
        // U-Boot's own tree, copied below the kernel (its place at the top of
        // RAM becomes the kernel's heap).
        // `fdt move` works on the tree `fdt addr` selected, and never
        // shrinks it: with a scenario it must fit below the scenario (with
        // the 12 KiB booti adds); without one, it may take the whole MiB
        // (QEMU's tree, U-Boot's own on QEMU, says 1 MiB).
        uboot.run_ok("fdt addr ${fdtcontroladdr}", short)?;
        let layout = prepared.layout;
        let room = if prepared.scenario.is_some() {
            layout.fdt_room()
        } else {
            layout.scenario - layout.fdt()
        };
        uboot
            .run_ok(
                &format!("fdt move ${{fdtcontroladdr}} {:#x} {room:#x}", layout.fdt()),
                short,
            )
            .map_err(|e| {
                format!(
                    "{e}\n    (U-Boot's own device tree does not fit in the {room:#x} bytes \
                     below {:#x}: give the board's tree with --dtb)",
                    layout.scenario
                )
            })?;
    }
    if prepared.command_line.is_empty() {
        uboot.run_ok("setenv bootargs", short)?;
    } else {
        uboot.run_ok(
            &format!("setenv bootargs '{}'", prepared.command_line),
            short,
        )?;
    }
    let boot_start = Instant::now();
    uboot.boot(
        &format!(
            "booti {:#x} - {:#x}",
            prepared.layout.image,
            prepared.layout.fdt()
        ),
        Duration::from_secs(30),
    )?;
    let mut lines: Vec<String> = String::from_utf8_lossy(&uboot.transcript)
        .replace('\r', "")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("u-boot: {l}"))
        .collect();
    if options.echo {
        eprintln!();
    }
    let mut decoder = table.new_stream_decoder();
    decoder.received(&uboot.take_pending());
    let mut verdict: Option<i32> = None;
    let mut closed = false;
    let mut buffer = [0u8; 4096];
    loop {
        qemu::decode_frames(decoder.as_mut(), options.echo, |line| {
            if verdict.is_none() {
                if line.ends_with("exit: success") {
                    verdict = Some(0);
                } else if line.ends_with("exit: failure") {
                    verdict = Some(1);
                }
            }
            lines.push(line);
        });
        if verdict.is_some() || closed || boot_start.elapsed() > options.timeout {
            break;
        }
        match uboot
            .console()
            .read(&mut buffer, Duration::from_millis(100))?
        {
            Received::Bytes(count) => decoder.received(&buffer[..count]),
            Received::Nothing => {}
            Received::Closed => closed = true,
        }
    }
    let console_name = uboot.console().name.clone();
    let problem = match (verdict, closed) {
        (Some(_), _) => None,
        (None, true) => Some(format!(
            "the console {console_name} closed before the kernel's last line (exit: success or \
             exit: failure)"
        )),
        (None, false) => Some(format!(
            "TIMEOUT: no 'exit: success' or 'exit: failure' from the kernel within {} s of booti",
            options.timeout.as_secs()
        )),
    };
    if let Some(problem) = &problem {
        lines.push(problem.clone());
    }
    Ok(HilOutcome {
        status: verdict,
        lines,
        problem,
        wall: start.elapsed(),
    })
}

/// Loads the Image, the device tree and the scenario at their addresses.
fn load(uboot: &mut UBoot, options: &HilOptions, prepared: &Prepared) -> Result<(), String> {
    let layout = prepared.layout;
    let mut files: Vec<(&str, u64, &[u8])> = vec![("fairway-Image", layout.image, &prepared.image)];
    if let Some(dtb) = &prepared.dtb {
        files.push(("fairway.dtb", layout.fdt(), dtb));
    }
    if let Some(scenario) = &prepared.scenario {
        files.push(("fairway-scenario.bin", layout.scenario, scenario));
    }
    match &options.load {
        Load::Tftp { dir, dhcp, server } => {
            for (name, _, data) in &files {
                let path = dir.join(name);
                std::fs::write(&path, data).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            if *dhcp {
                uboot.run_ok("setenv autoload no", Duration::from_secs(10))?;
                uboot.run_ok("dhcp", Duration::from_secs(60))?;
            }
            if let Some(server) = server {
                uboot.run_ok(
                    &format!("setenv serverip {server}"),
                    Duration::from_secs(10),
                )?;
            }
            for (name, address, data) in &files {
                let output = uboot.run_ok(
                    &format!("tftpboot {address:#x} {name}"),
                    Duration::from_secs(120),
                )?;
                let expected = format!("Bytes transferred = {} ", data.len());
                if !output.contains(&expected) {
                    return Err(format!(
                        "tftpboot {name}: expected {} bytes: {}",
                        data.len(),
                        output.trim()
                    ));
                }
            }
        }
        Load::Serial => {
            for (name, address, data) in &files {
                let started = Instant::now();
                uboot.loady(*address, name, data)?;
                eprintln!(
                    "xtask: hil: loady {name}: {} bytes in {:.1} s",
                    data.len(),
                    started.elapsed().as_secs_f64()
                );
            }
        }
    }
    Ok(())
}

fn parse_seconds(text: &str, flag: &str) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(seconds) if seconds > 0 => Ok(Duration::from_secs(seconds)),
        _ => Err(format!("{flag} {text}: a number of seconds, at least 1")),
    }
}

/// `cargo xtask hil KERNEL --console PATH [options]`.
pub fn command(args: &[String]) -> Result<std::process::ExitCode, String> {
    let usage = "usage: cargo xtask hil KERNEL --console PATH (--tftp DIR [--no-dhcp] \
                 [--server-ip IP] | --serial-load) [--baud N] [--dtb FILE] [--scenario FILE.json] \
                 [--board NAME | --cpus N] [--append ARGS] [--prompt TEXT] [--prompt-timeout S] \
                 [--timeout S] [--power-cycle CMD] [--report FILE.json]";
    let (kernel, rest) = args.split_first().ok_or(usage)?;
    let mut options = HilOptions {
        console: PathBuf::new(),
        baud: Some(115_200),
        kernel: PathBuf::from(kernel),
        dtb: None,
        scenario: None,
        cpus: 0,
        append: String::new(),
        load: Load::Serial,
        prompt: "=> ".into(),
        prompt_timeout: Duration::from_secs(30),
        timeout: Duration::from_secs(60),
        power_cycle: None,
        echo: true,
    };
    let mut report = None;
    let mut tftp: Option<PathBuf> = None;
    let mut serial = false;
    let mut dhcp = true;
    let mut server = None;
    let mut board = "qemu-virt".to_string();
    let mut i = 0;
    while i < rest.len() {
        let flag = rest[i].as_str();
        let needs_value = !matches!(flag, "--serial-load" | "--no-dhcp");
        let value = if needs_value {
            i += 1;
            rest.get(i)
                .cloned()
                .ok_or(format!("{flag} needs a value\n{usage}"))?
        } else {
            String::new()
        };
        match flag {
            "--console" => options.console = PathBuf::from(value),
            "--baud" => {
                options.baud = Some(
                    value
                        .parse()
                        .map_err(|_| format!("--baud {value}: not a number"))?,
                )
            }
            "--dtb" => options.dtb = Some(PathBuf::from(value)),
            "--scenario" => options.scenario = Some(PathBuf::from(value)),
            "--board" => board = value,
            "--cpus" => {
                options.cpus = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=8).contains(n))
                    .ok_or(format!("--cpus {value}: 1 to 8"))?
            }
            "--append" => {
                if !options.append.is_empty() {
                    options.append.push(' ');
                }
                options.append.push_str(&value);
            }
            "--tftp" => tftp = Some(PathBuf::from(value)),
            "--no-dhcp" => dhcp = false,
            "--server-ip" => server = Some(value),
            "--serial-load" => serial = true,
            "--prompt" => options.prompt = value,
            "--prompt-timeout" => options.prompt_timeout = parse_seconds(&value, flag)?,
            "--timeout" => options.timeout = parse_seconds(&value, flag)?,
            "--power-cycle" => options.power_cycle = Some(value),
            "--report" => report = Some(PathBuf::from(value)),
            other => return Err(format!("hil: unknown option '{other}'\n{usage}")),
        }
        i += 1;
    }
    if options.console.as_os_str().is_empty() {
        return Err(format!("hil needs --console PATH\n{usage}"));
    }
    if options.cpus == 0 {
        options.cpus = Board::load(&board)?.cpus;
    }
    options.load = match (tftp, serial) {
        (Some(dir), false) => Load::Tftp { dir, dhcp, server },
        (None, true) => Load::Serial,
        _ => {
            return Err(format!(
                "hil: give one of --tftp DIR and --serial-load\n{usage}"
            ));
        }
    };
    let outcome = run(&options)?;
    finish(&outcome, report.as_deref())
}

/// Prints the summary, writes the report and turns the verdict into the exit
/// status, as the QEMU runner does.
pub fn finish(
    outcome: &HilOutcome,
    report: Option<&Path>,
) -> Result<std::process::ExitCode, String> {
    eprintln!(
        "xtask: hil: {} after {:.2} s",
        match (outcome.status, &outcome.problem) {
            (Some(code), _) => format!("the kernel said exit status {code}"),
            (None, Some(problem)) => problem.clone(),
            (None, None) => "no verdict".into(),
        },
        outcome.wall.as_secs_f64()
    );
    Ok(crate::run::runner::exit_status(
        outcome.status,
        crate::run::report::emit(&outcome.lines, report),
    ))
}
