//! Boot in Rust: the ordered, one-time set-up of each core, from the device tree
//! to the idle loop. `boot.s` calls [`kernel_init_primary`] on the boot core with
//! the MMU and caches already on, and [`kernel_init_secondary`] on the others
//! (by symbol: the two are exported under their names).
//!
//! The boot floor, above scheduling and below the workloads: it builds each
//! floor in turn and wires them together, handing the lower floors what they
//! call back (the IRQ vector's way-out hook, the IRQ table's handlers, the lazy
//! arenas' page source), so that no floor names one above it.

use core::sync::atomic::Ordering;

use fairway_sched::boot_options::{BootOptions, MAX_BOOTARGS};
use heapless::String;
use spin::Once;

use crate::arch::aarch64::{cpu, exception, mmu, pmu, psci, timer};
use crate::board::{BoardError, BoardInfo, GicInfo, QEMU_DTB_ADDRESS};
use crate::drivers::console;
use crate::drivers::gic::{GIC, Gic, v2::GicV2, v3::GicV3};
use crate::observe::{explain, replay, trace};
use crate::platform::exit::{ExitCode, allow_semihosting, exit};
use crate::platform::{heap, hrtimer, irq, percpu, smp};
use crate::scheduling::{self, balance, cpufreq, eas, energy, load};
use crate::tasks::TaskParams;

/// What the running kernel knows about its machine, for applications and reports.
#[derive(Debug)]
pub struct SystemInfo {
    /// The root `model` of the device tree.
    pub model: String<64>,
    /// CPUs listed by the device tree (and used).
    pub nr_cpus: usize,
    /// CPUs that came online.
    pub nr_online: usize,
    /// GIC version (2 or 3).
    pub gic_version: u8,
    /// The exception level the boot core was entered at (1 or 2).
    pub entry_el: u8,
    /// The generic timer's frequency, from CNTFRQ_EL0.
    pub timer_frequency: u64,
    /// The kernel command line (`/chosen/bootargs`), checked; the scheduler's
    /// settings are `options.sched`.
    pub options: BootOptions,
}

static SYSTEM: Once<SystemInfo> = Once::new();

/// The machine, once booted.
pub fn system() -> &'static SystemInfo {
    SYSTEM.get().expect("system() before boot finished")
}

/// The kernel command line, checked at boot (`fairway_sched::boot_options`).
pub fn boot_options() -> &'static BootOptions {
    &system().options
}

/// Reads `/chosen/bootargs`, or stops the boot naming the bad option and value.
fn read_boot_options(board: &BoardInfo) -> BootOptions {
    if board.bootargs_length > MAX_BOOTARGS {
        defmt::error!(
            "bootargs: the command line is {=usize} bytes, more than {=usize}",
            board.bootargs_length,
            MAX_BOOTARGS
        );
        exit(ExitCode::Failure)
    }
    match BootOptions::parse(board.bootargs.as_str()) {
        Ok(options) => options,
        Err(error) => {
            defmt::error!("{}", defmt::Display2Format(&error));
            exit(ExitCode::Failure)
        }
    }
}

/// Whether uclamp is in use for this run: `uclamp=0|1` decide; `uclamp=auto`
/// (the default) turns it on for an rt-app scenario that sets a clamp, as
/// Linux turns `sched_uclamp_used` on at the first clamp a user sets (§3.2),
/// and leaves it off for every other workload, which then pays nothing for it.
/// A scenario that cannot be decoded leaves it off: the rt-app workload
/// reports the error when it decodes the blob again.
fn uclamp_used(options: &BootOptions, nr_cpus: usize) -> bool {
    let sets_clamp = match (options.sched.uclamp, &options.workload) {
        (None, fairway_sched::boot_options::Workload::RtApp(rtapp)) => {
            let blob = loaded_blob(
                rtapp.scenario.address as usize,
                rtapp.scenario.size as usize,
            );
            fairway_contract::scenario::wire::decode_and_validate(blob, nr_cpus)
                .is_ok_and(|scenario| scenario.first_clamp().is_some())
        }
        _ => false,
    };
    options.sched.uclamp_used(sets_clamp)
}

unsafe extern "Rust" {
    /// The application's main function, defined by [`crate::entry!`].
    safe fn fairway_main() -> ExitCode;
}

/// Lets the boot core report a device tree it cannot use: the UART is unknown,
/// so QEMU virt's is tried, and QEMU's semihosting exit (a real board always
/// passes a device tree).
fn early_failure(error: BoardError) -> ! {
    // SAFETY: QEMU virt's PL011; the only machine that boots Fairway without a
    // usable device tree is QEMU given a broken `-dtb`.
    unsafe {
        console::init(fairway_devicetree::Uart {
            base: fairway_devicetree::QEMU_UART,
            kind: fairway_devicetree::UartKind::Pl011,
        })
    };
    allow_semihosting(true);
    defmt::error!("boot failed: {}", error);
    exit(ExitCode::Failure)
}

fn read_board(address: usize) -> Result<BoardInfo, BoardError> {
    let refuse = |reason| BoardError::NoDeviceTree { address, reason };
    if !mmu::check_memory_is_mapped(address as u64, address as u64 + 40)
        || !address.is_multiple_of(4)
    {
        return Err(refuse("address is not 4-byte aligned RAM"));
    }
    // SAFETY: the 8 header bytes lie in RAM mapped as normal memory (checked above).
    let header = unsafe { core::slice::from_raw_parts(address as *const u8, 8) };
    if header[..4] != [0xd0, 0x0d, 0xfe, 0xed] {
        return Err(refuse("bad magic (expected 0xd00dfeed)"));
    }
    let size = u32::from_be_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if !(40..=2 * 1024 * 1024).contains(&size)
        || !mmu::check_memory_is_mapped(address as u64, (address + size) as u64)
    {
        return Err(refuse("totalsize is not between 40 bytes and 2 MiB of RAM"));
    }
    // SAFETY: `size` bytes of mapped RAM holding the device tree, which nothing
    // writes while the kernel runs.
    let blob = unsafe { core::slice::from_raw_parts(address as *const u8, size) };
    BoardInfo::parse(blob, address, cpu::mpidr())
}

unsafe extern "C" {
    static __kernel_start: u8;
    static __kernel_end: u8;
}

/// A blob the host loaded into RAM (QEMU `-device loader`), for tests.
///
/// # Panics
/// When `[address, address + size)` is not RAM below the kernel image, where
/// nothing of the kernel lives.
pub fn loaded_blob(address: usize, size: usize) -> &'static [u8] {
    let kernel_start = (&raw const __kernel_start) as usize;
    assert!(
        address >= mmu::RAM.start as usize + 0x10_0000
            && address
                .checked_add(size)
                .is_some_and(|end| end <= kernel_start),
        "blob {address:#x}+{size} is not in the free RAM below the kernel"
    );
    // SAFETY: the range is RAM mapped as normal memory, between QEMU's device
    // tree (first MiB) and the kernel image, which the kernel never writes.
    unsafe { core::slice::from_raw_parts(address as *const u8, size) }
}

/// The boot core's Rust entry: `dtb` is x0 at entry (0 for an ELF under QEMU),
/// `entry_el` the exception level the core was entered at.
///
/// The ordered bring-up, each step needing the ones before it: the core
/// itself, then the board from the device tree (and the console), memory,
/// interrupts, the scheduler, the other cores; then [`kernel_main`].
// SAFETY (the exported name): `boot.s` calls it by this name with the C ABI
// declared here (x0 = dtb, x1 = entry EL); no other symbol has the name.
#[unsafe(no_mangle)]
pub extern "C" fn kernel_init_primary(dtb: usize, entry_el: u64) -> ! {
    cpu::set_this_cpu(0);
    exception::install_vector_table();
    let frequency = timer::init_clock();
    pmu::enable_cycle_counter();
    let board = init_board(dtb, entry_el);
    let Some(frequency) = frequency else {
        defmt::error!("CNTFRQ_EL0 is 0: the firmware did not set the timer frequency");
        exit(ExitCode::Failure)
    };
    init_memory(&board);
    let gic = init_interrupts(&board);
    let options = init_scheduler(&board);
    start_secondaries(&board);
    SYSTEM.call_once(|| SystemInfo {
        model: board.model.clone(),
        nr_cpus: board.cpus.len(),
        nr_online: percpu::nr_online(),
        gic_version: gic.version(),
        entry_el: entry_el as u8,
        timer_frequency: frequency,
        options,
    });
    kernel_main()
}

/// Reads the device tree (at `dtb`, or where QEMU puts it for an ELF), starts
/// the console it names, and says what Fairway runs on.
fn init_board(dtb: usize, entry_el: u64) -> BoardInfo {
    let address = if dtb == 0 { QEMU_DTB_ADDRESS } else { dtb };
    let board = read_board(address).unwrap_or_else(|error| early_failure(error));
    allow_semihosting(board.is_qemu);
    // A UART in the range the boot map makes normal (cached) memory (RK3399's
    // at 0xff1a0000 is, since the map is QEMU virt's) would keep its bytes in
    // the cache: it is not used, and the board stays silent.
    if let Some(uart) = board.uart.filter(|uart| mmu::is_device_memory(uart.base)) {
        // SAFETY: the device tree names this window a UART of this kind (its
        // `compatible`), and it lies where the boot map has Device memory.
        unsafe { console::init(uart) };
    }
    defmt::info!(
        "Fairway {=str} on {=str}: {=usize} CPUs, GIC {}, entered at EL{=u64}",
        env!("CARGO_PKG_VERSION"),
        board.model.as_str(),
        board.cpus.len(),
        board.gic,
        entry_el
    );
    defmt::info!(
        "device tree at {=u64:#x} ({=str})",
        address as u64,
        if dtb == 0 {
            "RAM base: ELF boot"
        } else {
            "from x0: Image boot"
        }
    );
    if let Some(uart) = board.uart {
        defmt::info!("console: {} at {=u64:#x}", uart.kind, uart.base);
    }
    for notice in &board.notices {
        defmt::warn!(
            "device tree: {=str}: {=str}; fallback: {=str}",
            notice.property,
            notice.problem,
            notice.fallback
        );
    }
    log_topology(&board);
    board
}

/// Gives the RAM after the kernel to the heap: the device tree's first
/// `/memory` range, within the RAM the kernel was built for (`FAIRWAY_RAM`,
/// the boot map's normal memory), which must hold the kernel.
fn init_memory(board: &BoardInfo) {
    let kernel_start = (&raw const __kernel_start) as u64;
    let kernel_end = (&raw const __kernel_end) as u64;
    let usable = board.memory.start.max(mmu::RAM.start)..board.memory.end.min(mmu::RAM.end);
    if !usable.contains(&kernel_start) || !usable.contains(&kernel_end) {
        defmt::error!(
            "device tree: /memory {=u64:#x}..{=u64:#x} does not hold the kernel ({=u64:#x}..{=u64:#x}) within the RAM it was built for, {=u64:#x}..{=u64:#x} (FAIRWAY_RAM)",
            board.memory.start,
            board.memory.end,
            kernel_start,
            kernel_end,
            mmu::RAM.start,
            mmu::RAM.end
        );
        exit(ExitCode::Failure)
    }
    defmt::info!(
        "memory: kernel {=u64:#x}..{=u64:#x}, heap to {=u64:#x} (device tree {=u64:#x}..{=u64:#x}, built for {=u64:#x}..{=u64:#x})",
        kernel_start,
        kernel_end,
        usable.end,
        board.memory.start,
        board.memory.end,
        mmu::RAM.start,
        mmu::RAM.end
    );
    heap::init(kernel_end as usize, usable.end as usize);
    crate::arch::lazy::init(heap::allocate);
}

/// The PSCI conduit, and the interrupt controller the device tree names, set
/// up for this core's timer.
fn init_interrupts(board: &BoardInfo) -> &'static Gic {
    if let Some(conduit) = board.psci {
        psci::set_conduit(conduit);
    }
    let gic = match board.gic {
        GicInfo::V2 {
            distributor,
            cpu_interface,
        } => {
            // SAFETY: the device tree names these windows a GICv2's GICD and
            // GICC; the boot map makes everything below 1 GiB Device memory.
            let gic = unsafe { GicV2::new(distributor as usize, cpu_interface as usize) };
            Gic::V2(gic)
        }
        GicInfo::V3 {
            distributor,
            redistributors,
            redistributor_size,
        } => {
            // SAFETY: the device tree names these windows a GICv3's GICD and
            // GICR; the boot map makes everything below 1 GiB Device memory.
            let gic = unsafe {
                GicV3::new(
                    distributor as usize,
                    redistributors as usize,
                    redistributor_size as usize,
                )
            };
            Gic::V3(gic)
        }
    };
    let gic = GIC.call_once(|| gic);
    gic.init_distributor();
    // Every handler is in place before any CPU unmasks IRQs: the platform's
    // (reschedule, call-function and stop IPIs, the timer), the scheduling
    // floor's (the wake-up IPI), and the vector's way out (the scheduling
    // floor's preemption on return from interrupt).
    exception::set_irq_exit(scheduling::switch::preempt_on_irq_return);
    let registered = crate::platform::register_interrupt_handlers(board.timer_intid)
        .and_then(|()| scheduling::register_irq_handlers());
    if let Err(error) = registered {
        defmt::error!("interrupt {=u32}: a second handler", error.intid);
        exit(ExitCode::Failure)
    }
    if let Err(reason) = gic.init_cpu(0, board.timer_intid) {
        defmt::error!("CPU 0: {=str}", reason);
        exit(ExitCode::Failure)
    }
    gic
}

/// The CPUs' capacities and clusters, and each performance domain's OPPs,
/// as read from the device tree (docs/linux-sched-reference.md §7.1).
fn log_topology(board: &BoardInfo) {
    let mut capacities = heapless::Vec::<u32, { crate::config::MAX_CPUS }>::new();
    let mut clusters = heapless::Vec::<u16, { crate::config::MAX_CPUS }>::new();
    for cpu in &board.cpus {
        let _ = capacities.push(cpu.capacity);
        let _ = clusters.push(cpu.cluster);
    }
    defmt::info!(
        "cpus: capacity {=[?]}, cluster {=[?]}",
        &capacities[..],
        &clusters[..]
    );
    for (index, domain) in board.perf_domains.iter().enumerate() {
        let mut cpus = 0u32;
        for (cpu, info) in board.cpus.iter().enumerate() {
            if info.perf_domain == Some(index as u8) {
                cpus |= 1 << cpu;
            }
        }
        defmt::info!(
            "perf domain {=usize}: cpus {=u32:#x}, {=usize} OPPs, {=u64} to {=u64} MHz",
            index,
            cpus,
            domain.opps.len(),
            domain.opps.first().map_or(0, |opp| opp.hz / 1_000_000),
            domain.max_hz() / 1_000_000
        );
    }
}

/// The CPUs' identities, the command line's settings fixed once, the
/// balancer's topology, the timer queues, and this core's run queue and tick.
fn init_scheduler(board: &BoardInfo) -> BootOptions {
    if !energy::init(board) {
        exit(ExitCode::Failure)
    }
    let nr_cpus = board.cpus.len();
    percpu::set_nr_cpus(nr_cpus);
    for (index, info) in board.cpus.iter().enumerate() {
        let slot = percpu::of(index);
        slot.mpidr.store(info.mpidr, Ordering::Relaxed);
        slot.capacity.store(info.capacity, Ordering::Relaxed);
        slot.cluster.store(info.cluster, Ordering::Relaxed);
    }
    // The idle tasks' slots (and the wake lists, sized for `nr_cpus`) exist
    // before anything reads them (`eas::init` does).
    scheduling::init_table();
    let mut options = read_boot_options(board);
    crate::platform::exit::set_power_off(options.power_off);
    if !options.semihosting {
        allow_semihosting(false);
    }
    if !options.psci {
        psci::disable();
        defmt::info!("psci=0: the firmware's PSCI is not used (boot CPU only, no power-off)");
    }
    if options.trace_records > 0 {
        if !trace::ENABLED {
            defmt::error!(
                "bootargs: trace_records={=u64}: this kernel was built without trace events (build it with --features trace)",
                options.trace_records
            );
            exit(ExitCode::Failure)
        }
        if trace::allocate(nr_cpus, options.trace_records as usize).is_err() {
            defmt::error!(
                "bootargs: trace_records={=u64}: no room on the heap for {=usize} CPUs' buffers of 24-byte records",
                options.trace_records,
                nr_cpus
            );
            exit(ExitCode::Failure)
        }
    }
    if options.explain > 0 {
        if options.trace_records == 0 {
            defmt::error!(
                "bootargs: explain={=u64}: explain mode keeps its records in the trace buffers; set trace_records=N too",
                options.explain
            );
            exit(ExitCode::Failure)
        }
        explain::set_budget(options.explain);
    }
    options.sched.uclamp = Some(uclamp_used(&options, nr_cpus));
    scheduling::configure(options.sched, nr_cpus);
    cpufreq::init(board, options.sched.governor, options.sched.cpufreq_update);
    if let fairway_sched::boot_options::Workload::RtApp(rtapp) = options.workload {
        replay::set_capacity(rtapp.record_core as usize);
    }
    if let Err(reason) = balance::init(nr_cpus, options.sched.balance) {
        defmt::warn!("load balancing off: {=str}", reason);
    }
    match load::topology() {
        Some(topology) if options.sched.balance => eas::init(
            board,
            topology,
            options.sched.energy_aware,
            options.sched.governor,
        ),
        Some(_) => defmt::info!("eas: off: balance=0 (no wake-up placement)"),
        None => defmt::info!("eas: off: no CPU topology (no wake-up placement)"),
    }
    hrtimer::init(nr_cpus);
    scheduling::init_cpu(0);
    percpu::of(0).online.store(true, Ordering::Release);
    scheduling::start_tick();
    options
}

/// Starts the other cores through PSCI (each runs [`kernel_init_secondary`]).
fn start_secondaries(board: &BoardInfo) {
    if !psci::available() {
        return;
    }
    for (index, info) in board.cpus.iter().enumerate().skip(1) {
        if let Err(status) = smp::start_cpu(index, info.mpidr) {
            defmt::warn!(
                "CPU {=usize} (MPIDR {=u64:#x}) did not start: PSCI status {=i64}",
                index,
                info.mpidr,
                status
            );
        }
    }
}

/// The boot core once the machine is up: starts the main task and becomes
/// this CPU's idle task. Nothing here touches hardware directly.
fn kernel_main() -> ! {
    let system = system();
    let sched = system.options.sched;
    defmt::info!(
        "{=usize}/{=usize} CPUs online, scheduler {=str}, timer {=u64} Hz, HZ={=u64}, slice {=u64} us, hrtick {=bool}, heap {=u64} KiB free",
        percpu::nr_online(),
        system.nr_cpus,
        sched.policy.name(),
        system.timer_frequency,
        sched.hz,
        sched.slice_us,
        sched.hrtick,
        heap::free_bytes() as u64 / 1024
    );
    if let Some(features) = sched.features_in_force() {
        // The feature switches in force (`sched_feat=`), as Linux's features
        // file lists them: a run's report says which variant ran.
        let mut line = heapless::String::<128>::new();
        let _ = core::fmt::write(&mut line, format_args!("{features}"));
        defmt::info!("sched_feat: {=str}", line.as_str());
    }
    defmt::info!(
        "clock: time from the generic timer (CNTPCT_EL0) at {=u64} Hz; costs from {=str}",
        system.timer_frequency,
        if pmu::cycle_counter_available() {
            "the PMU cycle counter (PMCCNTR_EL0)"
        } else {
            "no cycle counter (the CPU has no PMU)"
        }
    );
    log_scheduler_memory("");
    if let Err(error) = scheduling::spawn("main", run_main, 0, 0, TaskParams::default()) {
        defmt::error!("cannot start the main task: {}", error);
        exit(ExitCode::Failure)
    }
    cpu::irq_enable();
    scheduling::idle_loop()
}

fn run_main(_: usize) {
    let code = fairway_main();
    log_scheduler_memory(" at exit");
    exit(code)
}

/// Logs the scheduler's memory (issue 15; `docs/performance.md`, memory):
/// the run queues' heap and the task table, which grow with the task ids
/// created (`room for`), out of the kernel's task slots.
fn log_scheduler_memory(when: &str) {
    let (run_queues, tables) = scheduling::memory_bytes();
    defmt::info!(
        "scheduler memory{=str}: {=u64} KiB (run queues {=u64} KiB, task table and wake lists {=u64} KiB) for {=usize} CPUs, room for {=usize} of {=usize} task ids, {=usize} task slots allocated; the tasks' latency statistics take {=u64} KiB more",
        when,
        (run_queues + tables) as u64 / 1024,
        run_queues as u64 / 1024,
        tables as u64 / 1024,
        percpu::nr_online(),
        scheduling::task_ids_reserved(),
        crate::config::MAX_TASKS,
        crate::tasks::task_slots_allocated(),
        crate::tasks::statistics_bytes() as u64 / 1024
    );
}

/// A secondary core's Rust entry, with its logical number.
// SAFETY (the exported name): `boot.s` calls it by this name with the C ABI
// declared here (x0 = the logical CPU number); no other symbol has the name.
#[unsafe(no_mangle)]
pub extern "C" fn kernel_init_secondary(cpu_number: usize) -> ! {
    cpu::set_this_cpu(cpu_number);
    exception::install_vector_table();
    pmu::enable_cycle_counter();
    let gic = GIC.get().expect("the boot core sets up the GIC first");
    if let Err(reason) = gic.init_cpu(cpu_number, irq::timer_intid()) {
        defmt::error!("CPU {=usize}: {=str}", cpu_number, reason);
        cpu::halt()
    }
    scheduling::init_cpu(cpu_number);
    percpu::of(cpu_number).online.store(true, Ordering::Release);
    scheduling::start_tick();
    cpu::irq_enable();
    scheduling::idle_loop()
}
