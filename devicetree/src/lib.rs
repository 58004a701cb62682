//! Board discovery: everything Fairway needs to know about the machine, read from
//! the flattened device tree (the single source of truth for the machine, ARCHITECTURE.md, "How it fits together").
//!
//! Each property that is missing or malformed is either fatal, with an error that
//! names it ([`BoardError`]), or replaced by a stated fallback recorded as a
//! [`Notice`] that boot prints once the UART works.
//!
//! This is pure parsing of a byte slice (no MMIO, no unsafe), kept out of the
//! kernel crate so that it builds and is fuzzed on the host (`tests/fuzz.rs`): the
//! kernel reads a tree that a boot loader hands it, and must refuse a bad one with a
//! message rather than panic. The kernel (`src/board.rs`) re-exports it and adds
//! where QEMU puts the tree. The `defmt` feature formats the types for the kernel's log.
#![no_std]
#![forbid(unsafe_code)]

use core::fmt;

use heapless::{String, Vec};

mod guard;
mod parse;
mod uart;

pub use uart::{Ns16550Layout, Uart, UartKind, UartRegisterAccess};

/// The most CPUs a [`BoardInfo`] lists (QEMU virt's GICv2 limit; GICv3 boards use
/// the first 8); the kernel sizes its per-CPU tables by it (`config::MAX_CPUS`).
pub const MAX_CPUS: usize = 8;

// The notice for ignored CPUs names the limit in its text.
const _: () = assert!(MAX_CPUS == 8, "update the \"more CPUs\" notice in parse.rs");

/// How PSCI calls reach the firmware (`/psci/method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Conduit {
    /// Hypervisor call (firmware at EL2; QEMU virt entered at EL1).
    Hvc,
    /// Secure monitor call (firmware at EL3; QEMU virt with virtualization=on).
    Smc,
}

/// QEMU virt's PL011, the fallback when a QEMU device tree names no UART.
pub const QEMU_UART: u64 = 0x0900_0000;

/// A device-tree node's name as written (`serial@ff1a0000`), truncated, for
/// errors that must say which node is wrong.
pub type NodeName = String<48>;
/// The EL1 physical timer's architected interrupt (PPI 14), the fallback when the
/// timer node gives none.
pub const ARCHITECTED_TIMER_INTID: u32 = 30;

/// The interrupt controller's kind and register windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GicInfo {
    /// GICv2: distributor and CPU interface.
    V2 {
        /// GICD base.
        distributor: u64,
        /// GICC base.
        cpu_interface: u64,
    },
    /// GICv3: distributor and the redistributor region.
    V3 {
        /// GICD base.
        distributor: u64,
        /// GICR region base.
        redistributors: u64,
        /// GICR region size.
        redistributor_size: u64,
    },
}

#[cfg(feature = "defmt")]
impl defmt::Format for GicInfo {
    fn format(&self, f: defmt::Formatter<'_>) {
        match *self {
            GicInfo::V2 {
                distributor,
                cpu_interface,
            } => defmt::write!(
                f,
                "v2 (GICD {=u64:#x}, GICC {=u64:#x})",
                distributor,
                cpu_interface
            ),
            GicInfo::V3 {
                distributor,
                redistributors,
                ..
            } => defmt::write!(
                f,
                "v3 (GICD {=u64:#x}, GICR {=u64:#x})",
                distributor,
                redistributors
            ),
        }
    }
}

/// One CPU of the device tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CpuInfo {
    /// Its MPIDR affinity (the node's `reg`).
    pub mpidr: u64,
    /// Its cluster in `cpu-map` (0 when there is no cpu-map).
    pub cluster: u16,
    /// `capacity-dmips-mhz`, if the node has it.
    pub capacity_dmips_mhz: Option<u32>,
    /// Normalised capacity, 1..=1024 (§7.1 of `docs/linux-sched-reference.md`).
    pub capacity: u32,
    /// `dynamic-power-coefficient` (µW/MHz/V²), if the node has it.
    pub dynamic_power_coefficient: Option<u32>,
    /// Its performance domain: the index in [`BoardInfo::perf_domains`] of
    /// the OPP table its `operating-points-v2` names.
    pub perf_domain: Option<u8>,
    phandle: Option<u32>,
    opp_table: Option<u32>,
}

/// The most operating points one table may list.
pub const MAX_OPPS: usize = 32;

/// One operating performance point (a child of an `operating-points-v2`
/// table): a frequency and the voltage it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Opp {
    /// `opp-hz`.
    pub hz: u64,
    /// `opp-microvolt` (its target, the first cell).
    pub microvolt: u32,
}

/// A performance domain: the CPUs whose `operating-points-v2` names one
/// table, which change frequency together (a cpufreq policy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfDomain {
    /// The table's operating points, in increasing frequency.
    pub opps: Vec<Opp, MAX_OPPS>,
    /// The longest `clock-latency-ns` of its OPPs (0 when none gives one):
    /// how long a frequency change takes to come into effect (§6.2).
    pub transition_latency_ns: u32,
    /// `fairway,idle-power-microwatt` (0 when absent): the power of one idle
    /// CPU of the domain, for the energy meter.
    pub idle_power_uw: u32,
}

impl PerfDomain {
    /// The highest frequency (`capacity_freq_ref`, §7.1).
    pub fn max_hz(&self) -> u64 {
        self.opps.last().map_or(0, |opp| opp.hz)
    }
}

/// A fallback taken while reading the device tree, printed at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notice {
    /// The node or property concerned.
    pub property: &'static str,
    /// What was wrong.
    pub problem: &'static str,
    /// What Fairway does instead.
    pub fallback: &'static str,
}

/// What boot learned about the machine.
#[derive(Debug)]
pub struct BoardInfo {
    /// The root `model` (truncated).
    pub model: String<64>,
    /// Root `compatible` includes `linux,dummy-virt` (QEMU): semihosting exit is available.
    pub is_qemu: bool,
    /// Usable RAM `[start, end)` from the first `/memory` node.
    pub memory: core::ops::Range<u64>,
    /// The console UART: the node `/chosen/stdout-path` names, else the first
    /// PL011 or 16550 among the root's children, else (QEMU only) QEMU virt's PL011.
    pub uart: Option<Uart>,
    /// The interrupt controller.
    pub gic: GicInfo,
    /// The EL1 physical timer's interrupt ID.
    pub timer_intid: u32,
    /// PSCI conduit; `None` means secondaries cannot be started.
    pub psci: Option<Conduit>,
    /// The CPUs, boot CPU first.
    pub cpus: Vec<CpuInfo, MAX_CPUS>,
    /// How many CPU nodes were beyond [`MAX_CPUS`] and ignored.
    pub ignored_cpus: usize,
    /// The performance domains, in the order their CPUs appear in `cpus`
    /// (empty when no CPU names an OPP table: no cpufreq).
    pub perf_domains: Vec<PerfDomain, MAX_CPUS>,
    /// `/chosen/bootargs`, when it fits (see `bootargs_length`).
    pub bootargs: String<{ fairway_sched::boot_options::MAX_BOOTARGS }>,
    /// The length of `/chosen/bootargs` in bytes, also when it is too long to keep
    /// (the boot then stops with the length, rather than parse a truncated line).
    pub bootargs_length: usize,
    /// Fallbacks taken.
    pub notices: Vec<Notice, 16>,
}

/// A device tree Fairway cannot boot from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoardError {
    /// No valid device tree at the address.
    NoDeviceTree {
        /// Where it was looked for.
        address: usize,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A node Fairway cannot work without is missing.
    MissingNode(&'static str),
    /// A property is missing or has the wrong shape.
    BadProperty {
        /// The node.
        node: &'static str,
        /// The property.
        property: &'static str,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A property of a node Fairway names by its own name (a UART) has a value
    /// outside what Fairway supports, as Linux refuses it with `EINVAL`.
    BadValue {
        /// The node, as written (`serial@ff1a0000`).
        node: NodeName,
        /// The property.
        property: &'static str,
        /// The value found (`None`: not one 32-bit cell).
        value: Option<u32>,
        /// What is allowed.
        allowed: &'static str,
    },
}

impl fmt::Display for BoardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoardError::NoDeviceTree { address, reason } => {
                write!(f, "no usable device tree at {address:#x}: {reason}")
            }
            BoardError::MissingNode(node) => write!(f, "device tree: node {node} is missing"),
            BoardError::BadProperty {
                node,
                property,
                problem,
            } => write!(f, "device tree: {node}/{property}: {problem}"),
            BoardError::BadValue {
                node,
                property,
                value: Some(value),
                allowed,
            } => write!(
                f,
                "device tree: {node}/{property} = <{value}>: must be {allowed}"
            ),
            BoardError::BadValue {
                node,
                property,
                value: None,
                allowed,
            } => write!(
                f,
                "device tree: {node}/{property}: not one 32-bit cell; must be {allowed}"
            ),
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for BoardError {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            BoardError::NoDeviceTree { address, reason } => defmt::write!(
                f,
                "no usable device tree at {=u64:#x}: {=str}",
                *address as u64,
                reason
            ),
            BoardError::MissingNode(node) => {
                defmt::write!(f, "device tree: node {=str} is missing", node)
            }
            BoardError::BadProperty {
                node,
                property,
                problem,
            } => defmt::write!(
                f,
                "device tree: {=str}/{=str}: {=str}",
                node,
                property,
                problem
            ),
            BoardError::BadValue {
                node,
                property,
                value: Some(value),
                allowed,
            } => defmt::write!(
                f,
                "device tree: {=str}/{=str} = <{=u32}>: must be {=str}",
                node.as_str(),
                property,
                value,
                allowed
            ),
            BoardError::BadValue {
                node,
                property,
                value: None,
                allowed,
            } => defmt::write!(
                f,
                "device tree: {=str}/{=str}: not one 32-bit cell; must be {=str}",
                node.as_str(),
                property,
                allowed
            ),
        }
    }
}
