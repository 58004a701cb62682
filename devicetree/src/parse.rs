//! The reader: a flattened device tree's bytes into a [`BoardInfo`], through the
//! `fdt` crate in its fallible mode.

use fdt::Fdt;
use fdt::nodes::Node;
use fdt::parsing::{NoPanic, unaligned::UnalignedParser};
use heapless::{String, Vec};

use crate::uart::{self, Candidate, MAX_UART_CANDIDATES};
use crate::{
    ARCHITECTED_TIMER_INTID, BoardError, BoardInfo, Conduit, CpuInfo, GicInfo, MAX_CPUS, MAX_OPPS,
    Notice, Opp, PerfDomain, QEMU_UART, Uart, UartKind, guard,
};

pub(crate) type DtNode<'a> = Node<'a, (UnalignedParser<'a>, NoPanic)>;

fn be_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// Reads a `cells`-cell big-endian number.
fn read_cells(bytes: &[u8], cells: usize) -> u64 {
    bytes[..cells * 4].chunks(4).fold(0u64, |value, chunk| {
        (value << 32) | u64::from(be_u32(chunk))
    })
}

/// `node`'s children in order; the first that cannot be read ends the iteration
/// as `Err(())`.
///
/// `fdt`'s own child iterator does not move past a child it cannot read: it returns
/// the same error forever, so `.flatten()` over it never ends (the boot hung on
/// such a tree; found by the fuzz target).
fn children<'a>(node: &DtNode<'a>) -> impl Iterator<Item = Result<DtNode<'a>, ()>> + 'a {
    let mut state = Some(node.children().map(|children| children.iter()));
    core::iter::from_fn(move || match state.as_mut()?.as_mut() {
        Ok(iterator) => match iterator.next() {
            Some(Ok(child)) => Some(Ok(child)),
            Some(Err(_)) => {
                state = None;
                Some(Err(()))
            }
            None => {
                state = None;
                None
            }
        },
        Err(_) => {
            state = None;
            Some(Err(()))
        }
    })
}

pub(crate) fn property<'a>(node: &DtNode<'a>, name: &str) -> Option<&'a [u8]> {
    node.raw_property(name).ok().flatten().map(|p| p.value)
}

fn property_u32(node: &DtNode<'_>, name: &str) -> Option<u32> {
    property(node, name).filter(|v| v.len() == 4).map(be_u32)
}

pub(crate) fn strings(value: &[u8]) -> impl Iterator<Item = &str> {
    value
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .filter_map(|s| core::str::from_utf8(s).ok())
}

fn is_compatible(node: &DtNode<'_>, candidates: &[&str]) -> bool {
    property(node, "compatible")
        .is_some_and(|value| strings(value).any(|c| candidates.contains(&c)))
}

/// Reads the first `(address, size)` of `reg` with the root's cell sizes.
pub(crate) fn first_reg(
    node: &DtNode<'_>,
    index: usize,
    cells: (usize, usize),
    name: &'static str,
) -> Result<(u64, u64), BoardError> {
    let stride = (cells.0 + cells.1) * 4;
    let reg = property(node, "reg").ok_or(BoardError::BadProperty {
        node: name,
        property: "reg",
        problem: "missing",
    })?;
    let entry = reg
        .get(index * stride..(index + 1) * stride)
        .ok_or(BoardError::BadProperty {
            node: name,
            property: "reg",
            problem: "shorter than #address-cells + #size-cells",
        })?;
    Ok((
        read_cells(entry, cells.0),
        read_cells(&entry[cells.0 * 4..], cells.1),
    ))
}

impl BoardInfo {
    /// Parses the device tree in `blob`; `boot_mpidr` is the boot core's.
    pub fn parse(blob: &[u8], address: usize, boot_mpidr: u64) -> Result<Self, BoardError> {
        let no_tree = |reason| BoardError::NoDeviceTree { address, reason };
        guard::check(blob).map_err(no_tree)?;
        let fdt = Fdt::new_unaligned_fallible(blob).map_err(|error| {
            no_tree(match error {
                fdt::FdtError::BadMagic => "bad magic (expected 0xd00dfeed)",
                fdt::FdtError::SliceTooSmall => "truncated",
                _ => "malformed header",
            })
        })?;
        let root = fdt
            .find_node("/")
            .ok()
            .flatten()
            .ok_or(no_tree("no root node"))?;
        let cells = (
            property_u32(&root, "#address-cells").unwrap_or(2) as usize,
            property_u32(&root, "#size-cells").unwrap_or(1) as usize,
        );
        if !(1..=2).contains(&cells.0) || !(1..=2).contains(&cells.1) {
            return Err(BoardError::BadProperty {
                node: "/",
                property: "#address-cells",
                problem: "must be 1 or 2 (and #size-cells 1 or 2)",
            });
        }
        let mut info = BoardInfo {
            model: String::new(),
            is_qemu: property(&root, "compatible")
                .is_some_and(|v| strings(v).any(|c| c == "linux,dummy-virt")),
            memory: 0..0,
            uart: None,
            gic: GicInfo::V2 {
                distributor: 0,
                cpu_interface: 0,
            },
            timer_intid: ARCHITECTED_TIMER_INTID,
            psci: None,
            cpus: Vec::new(),
            ignored_cpus: 0,
            perf_domains: Vec::new(),
            bootargs: String::new(),
            bootargs_length: 0,
            notices: Vec::new(),
        };
        if let Some(model) = property(&root, "model").and_then(|m| strings(m).next()) {
            for c in model.chars() {
                if info.model.push(c).is_err() {
                    break;
                }
            }
        }

        let mut memory = None;
        let mut gic = None;
        let mut cpus_node = None;
        let mut opp_tables: Vec<(u32, DtNode<'_>), MAX_CPUS> = Vec::new();
        let mut chosen_seen = false;
        let mut stdout_path = None;
        let mut aliases = None;
        let mut uarts: Vec<Candidate<'_>, MAX_UART_CANDIDATES> = Vec::new();
        for child in children(&root) {
            let child = child.map_err(|()| no_tree("unreadable root children"))?;
            let Ok(name) = child.name() else { continue };
            match name.name {
                "memory" if memory.is_none() => {
                    memory = Some(first_reg(&child, 0, cells, "/memory")?)
                }
                "cpus" => cpus_node = Some(child),
                "psci" => info.psci = Some(read_psci(&child)?),
                "aliases" if aliases.is_none() => aliases = Some(child),
                // The first /chosen only, as the first /memory: a second one's
                // bootargs were appended to the first's (found by the fuzz target).
                "chosen" if !chosen_seen => {
                    chosen_seen = true;
                    stdout_path = property(&child, "stdout-path").and_then(|p| strings(p).next());
                    if let Some(args) = property(&child, "bootargs").and_then(|a| strings(a).next())
                    {
                        info.bootargs_length = args.len();
                        // Too long: left empty; init refuses the length.
                        let _ = info.bootargs.push_str(args);
                    }
                }
                _ => {}
            }
            if let Some(candidate) = uart::candidate(&child) {
                // More UARTs than remembered: the first ones are candidates.
                let _ = uarts.push(candidate);
            } else if is_compatible(
                &child,
                &["arm,cortex-a15-gic", "arm,gic-400", "arm,cortex-a9-gic"],
            ) {
                gic = Some(GicInfo::V2 {
                    distributor: first_reg(&child, 0, cells, "interrupt-controller (GICv2)")?.0,
                    cpu_interface: first_reg(&child, 1, cells, "interrupt-controller (GICv2)")?.0,
                });
            } else if is_compatible(&child, &["arm,gic-v3"]) {
                let redistributors = first_reg(&child, 1, cells, "interrupt-controller (GICv3)")?;
                gic = Some(GicInfo::V3 {
                    distributor: first_reg(&child, 0, cells, "interrupt-controller (GICv3)")?.0,
                    redistributors: redistributors.0,
                    redistributor_size: redistributors.1,
                });
            } else if is_compatible(&child, &["arm,armv8-timer", "arm,armv7-timer"]) {
                info.read_timer(&child);
            } else if is_compatible(&child, &["operating-points-v2"])
                && let Some(phandle) = property_u32(&child, "phandle")
                && opp_tables.push((phandle, child)).is_err()
            {
                info.notice(
                    "operating-points-v2",
                    "more tables than CPUs",
                    "the first ones are read",
                );
            }
        }

        let (start, size) = memory.ok_or(BoardError::MissingNode("/memory"))?;
        info.memory = start..start.saturating_add(size);
        info.gic = gic.ok_or(BoardError::MissingNode(
            "interrupt-controller (compatible arm,gic-v3 or arm,cortex-a15-gic)",
        ))?;
        if info.psci.is_none() {
            info.notice("/psci", "missing", "running on the boot CPU only");
        }
        info.choose_uart(&uarts, stdout_path, aliases.as_ref(), cells)?;
        match cpus_node {
            Some(cpus) => info.read_cpus(&cpus, boot_mpidr)?,
            None => info.notice("/cpus", "missing", "running on the boot CPU only"),
        }
        info.read_perf_domains(&opp_tables)?;
        info.normalise_capacities();
        if info.cpus.is_empty() {
            let _ = info.cpus.push(CpuInfo {
                mpidr: boot_mpidr,
                cluster: 0,
                capacity_dmips_mhz: None,
                capacity: 1024,
                dynamic_power_coefficient: None,
                perf_domain: None,
                phandle: None,
                opp_table: None,
            });
        }
        Ok(info)
    }

    /// The console: the UART `/chosen/stdout-path` names (a path to one of
    /// the root's children or an alias in `/aliases`, options after `:`
    /// ignored), else the first UART among the root's children, else on QEMU
    /// QEMU virt's PL011. Only the chosen UART's properties are checked.
    fn choose_uart(
        &mut self,
        uarts: &Vec<Candidate<'_>, MAX_UART_CANDIDATES>,
        stdout_path: Option<&str>,
        aliases: Option<&DtNode<'_>>,
        cells: (usize, usize),
    ) -> Result<(), BoardError> {
        let mut chosen = None;
        if let Some(value) = stdout_path {
            let target = uart::stdout_target(value);
            let path = if target.starts_with('/') {
                Some(target)
            } else {
                aliases
                    .and_then(|aliases| property(aliases, target))
                    .and_then(|p| strings(p).next())
            };
            match path {
                None => self.notice(
                    "/chosen/stdout-path",
                    "names an alias that /aliases does not have",
                    "the first UART found",
                ),
                Some(path) => match uart::find_candidate(uarts, path) {
                    Some(candidate) => chosen = Some(candidate),
                    None => self.notice(
                        "/chosen/stdout-path",
                        "names no PL011 or 16550 UART among the root's children",
                        "the first UART found",
                    ),
                },
            }
        }
        if let Some(candidate) = chosen.or(uarts.first()) {
            self.uart = Some(uart::read(candidate, cells)?);
        } else if self.is_qemu {
            self.uart = Some(Uart {
                base: QEMU_UART,
                kind: UartKind::Pl011,
            });
            self.notice(
                "uart",
                "no arm,pl011 or 16550-compatible node",
                "QEMU virt's UART at 0x09000000",
            );
        } else {
            self.notice("uart", "no arm,pl011 or 16550-compatible node", "no output");
        }
        Ok(())
    }

    fn notice(&mut self, property: &'static str, problem: &'static str, fallback: &'static str) {
        let _ = self.notices.push(Notice {
            property,
            problem,
            fallback,
        });
    }

    fn read_timer(&mut self, node: &DtNode<'_>) {
        // Four (type, number, flags) triples: secure, non-secure physical, virtual, hypervisor.
        match property(node, "interrupts").filter(|v| v.len() >= 24) {
            Some(value) => {
                let (kind, number) = (be_u32(&value[12..]), be_u32(&value[16..]));
                if kind == 1 && number < 16 {
                    self.timer_intid = number + 16;
                } else {
                    self.notice("/timer/interrupts", "second entry is not a PPI", "INTID 30");
                }
            }
            None => self.notice("/timer/interrupts", "missing or short", "INTID 30"),
        }
    }

    fn read_cpus(&mut self, cpus: &DtNode<'_>, boot_mpidr: u64) -> Result<(), BoardError> {
        let address_cells = property_u32(cpus, "#address-cells").unwrap_or(1) as usize;
        if !(1..=2).contains(&address_cells) {
            return Err(BoardError::BadProperty {
                node: "/cpus",
                property: "#address-cells",
                problem: "must be 1 or 2",
            });
        }
        let mut cpu_map = None;
        for child in children(cpus) {
            let child = child.map_err(|()| BoardError::BadProperty {
                node: "/cpus",
                property: "children",
                problem: "unreadable",
            })?;
            let Ok(name) = child.name() else { continue };
            if name.name == "cpu-map" {
                cpu_map = Some(child);
                continue;
            }
            if name.name != "cpu" {
                continue;
            }
            let reg = property(&child, "reg")
                .filter(|r| r.len() >= address_cells * 4)
                .ok_or(BoardError::BadProperty {
                    node: "/cpus/cpu",
                    property: "reg",
                    problem: "missing or shorter than #address-cells",
                })?;
            let mpidr = read_cells(reg, address_cells);
            // Two CPUs with one MPIDR would be started twice and share a
            // redistributor (found by the fuzz target; Linux skips the second).
            if self.cpus.iter().any(|cpu| cpu.mpidr == mpidr) {
                return Err(BoardError::BadProperty {
                    node: "/cpus/cpu",
                    property: "reg",
                    problem: "two cpu nodes have the same MPIDR",
                });
            }
            let capacity_dmips_mhz = match property(&child, "capacity-dmips-mhz") {
                None => None,
                Some(v) if v.len() == 4 && be_u32(v) > 0 => Some(be_u32(v)),
                Some(_) => {
                    return Err(BoardError::BadProperty {
                        node: "/cpus/cpu",
                        property: "capacity-dmips-mhz",
                        problem: "must be one non-zero u32 cell",
                    });
                }
            };
            let dynamic_power_coefficient = match property(&child, "dynamic-power-coefficient") {
                None => None,
                Some(v) if v.len() == 4 => Some(be_u32(v)),
                Some(_) => {
                    return Err(BoardError::BadProperty {
                        node: "/cpus/cpu",
                        property: "dynamic-power-coefficient",
                        problem: "must be one u32 cell",
                    });
                }
            };
            let opp_table = match property(&child, "operating-points-v2") {
                None => None,
                Some(v) if v.len() == 4 => Some(be_u32(v)),
                Some(_) => {
                    return Err(BoardError::BadProperty {
                        node: "/cpus/cpu",
                        property: "operating-points-v2",
                        problem: "must be one phandle",
                    });
                }
            };
            let cpu = CpuInfo {
                mpidr,
                cluster: 0,
                capacity_dmips_mhz,
                capacity: 1024,
                dynamic_power_coefficient,
                perf_domain: None,
                phandle: property_u32(&child, "phandle"),
                opp_table,
            };
            if self.cpus.is_full() {
                self.ignored_cpus += 1;
            } else if mpidr == boot_mpidr {
                let _ = self.cpus.insert(0, cpu);
            } else {
                let _ = self.cpus.push(cpu);
            }
        }
        if self.ignored_cpus > 0 {
            self.notice(
                "/cpus",
                "more CPUs than Fairway supports (8)",
                "the first 8 are used",
            );
        }
        if !self.cpus.iter().any(|c| c.mpidr == boot_mpidr) {
            self.notice(
                "/cpus",
                "no cpu node matches the boot core's MPIDR",
                "boot CPU is cpu 0",
            );
        }
        match cpu_map {
            Some(map) => self.read_cpu_map(&map),
            None => self.notice("/cpus/cpu-map", "missing", "all CPUs in cluster 0"),
        }
        Ok(())
    }

    /// Reads the OPP table each CPU's `operating-points-v2` names into a
    /// performance domain (one per table, in the order of the CPUs that name
    /// them). A table must exist, list at least one OPP, and give each an
    /// `opp-hz` (64 bits, increasing down the table) and an `opp-microvolt`.
    fn read_perf_domains(&mut self, tables: &[(u32, DtNode<'_>)]) -> Result<(), BoardError> {
        let bad = |problem| BoardError::BadProperty {
            node: "operating-points-v2 table",
            property: "opp",
            problem,
        };
        let mut read: Vec<u32, MAX_CPUS> = Vec::new();
        for index in 0..self.cpus.len() {
            let Some(phandle) = self.cpus[index].opp_table else {
                continue;
            };
            if let Some(domain) = read.iter().position(|&p| p == phandle) {
                self.cpus[index].perf_domain = Some(domain as u8);
                continue;
            }
            let (_, table) =
                tables
                    .iter()
                    .find(|(p, _)| *p == phandle)
                    .ok_or(BoardError::BadProperty {
                        node: "/cpus/cpu",
                        property: "operating-points-v2",
                        problem: "names no operating-points-v2 table",
                    })?;
            let mut opps: Vec<Opp, MAX_OPPS> = Vec::new();
            let mut transition_latency_ns = 0u32;
            for opp in children(table) {
                let opp = opp.map_err(|()| bad("unreadable OPP node"))?;
                let hz = property(&opp, "opp-hz")
                    .filter(|v| v.len() == 8)
                    .map(|v| read_cells(v, 2))
                    .filter(|&hz| hz > 0)
                    .ok_or(bad("opp-hz must be one non-zero 64-bit value"))?;
                let microvolt = property(&opp, "opp-microvolt")
                    .filter(|v| !v.is_empty() && v.len() % 4 == 0)
                    .map(be_u32)
                    .filter(|&uv| uv > 0)
                    .ok_or(bad("opp-microvolt is missing or zero"))?;
                if opps.last().is_some_and(|last| last.hz >= hz) {
                    return Err(bad("frequencies must increase down the table"));
                }
                // The table's transition latency is its OPPs' longest
                // (`dev_pm_opp_get_max_clock_latency`).
                if let Some(value) = property(&opp, "clock-latency-ns") {
                    let latency = Some(value)
                        .filter(|v| v.len() == 4)
                        .map(be_u32)
                        .ok_or(bad("clock-latency-ns must be one 32-bit value"))?;
                    transition_latency_ns = transition_latency_ns.max(latency);
                }
                opps.push(Opp { hz, microvolt })
                    .map_err(|_| bad("more than 32 OPPs in one table"))?;
            }
            if opps.is_empty() {
                return Err(bad("the table lists no OPP"));
            }
            // Fairway's own property: the power of one idle CPU of the
            // domain (Linux's energy model has none; docs/boards.md).
            let idle_power_uw = match property(table, "fairway,idle-power-microwatt") {
                None => 0,
                Some(value) => Some(value).filter(|v| v.len() == 4).map(be_u32).ok_or(
                    BoardError::BadProperty {
                        node: "operating-points-v2 table",
                        property: "fairway,idle-power-microwatt",
                        problem: "must be one u32 cell",
                    },
                )?,
            };
            // As many tables as CPUs at most: each CPU names one.
            let _ = read.push(phandle);
            let _ = self.perf_domains.push(PerfDomain {
                opps,
                transition_latency_ns,
                idle_power_uw,
            });
            self.cpus[index].perf_domain = Some((read.len() - 1) as u8);
        }
        let with = self.cpus.iter().filter(|c| c.perf_domain.is_some()).count();
        if with > 0 && with < self.cpus.len() {
            self.notice(
                "/cpus/cpu/operating-points-v2",
                "present on some CPUs only",
                "ignored: no frequency scaling",
            );
            self.perf_domains.clear();
            for cpu in self.cpus.iter_mut() {
                cpu.perf_domain = None;
            }
        }
        Ok(())
    }

    /// Numbers clusters in `cpu-map` order (cluster nodes, possibly nested in
    /// sockets) and assigns each CPU its cluster through the `cpu` phandles. The
    /// map is read up to the first node that cannot be read; a number past
    /// `u16::MAX` clusters stays there (the scheduler's topology refuses any
    /// cluster number from `MAX_CPUS` on).
    fn read_cpu_map(&mut self, map: &DtNode<'_>) {
        let mut cluster_index = 0u16;
        for level1 in children(map).map_while(Result::ok) {
            let Ok(name) = level1.name() else { continue };
            if name.name.starts_with("socket") {
                for cluster in children(&level1).map_while(Result::ok) {
                    self.read_cluster(&cluster, cluster_index);
                    cluster_index = cluster_index.saturating_add(1);
                }
            } else if name.name.starts_with("cluster") {
                self.read_cluster(&level1, cluster_index);
                cluster_index = cluster_index.saturating_add(1);
            }
        }
    }

    fn read_cluster(&mut self, cluster: &DtNode<'_>, index: u16) {
        for core in children(cluster).map_while(Result::ok) {
            let mut phandles: Vec<u32, 8> = Vec::new();
            if let Some(p) = property_u32(&core, "cpu") {
                let _ = phandles.push(p);
            }
            for thread in children(&core).map_while(Result::ok) {
                if let Some(p) = property_u32(&thread, "cpu") {
                    let _ = phandles.push(p);
                }
            }
            for phandle in phandles {
                for cpu in self.cpus.iter_mut() {
                    if cpu.phandle == Some(phandle) {
                        cpu.cluster = index;
                    }
                }
            }
        }
    }

    /// §7.1: `raw = capacity-dmips-mhz × capacity_freq_ref` (the CPU's
    /// highest frequency, in MHz, when every CPU has an OPP table; else 1),
    /// `cpu_scale = raw × 1024 / max(raw)`; without the property on every
    /// CPU, every CPU gets 1024.
    fn normalise_capacities(&mut self) {
        let all = self.cpus.iter().all(|c| c.capacity_dmips_mhz.is_some());
        let any = self.cpus.iter().any(|c| c.capacity_dmips_mhz.is_some());
        if all {
            let domains = &self.perf_domains;
            let raw = |cpu: &CpuInfo| {
                let freq_ref = cpu
                    .perf_domain
                    .and_then(|d| domains.get(usize::from(d)))
                    .map_or(1, |d| (d.max_hz() / 1_000_000).max(1));
                u64::from(cpu.capacity_dmips_mhz.unwrap_or(1)).saturating_mul(freq_ref)
            };
            let max = self.cpus.iter().map(raw).max().unwrap_or(1).max(1);
            let scaled: Vec<u32, MAX_CPUS> = self
                .cpus
                .iter()
                // At least 1: a CPU more than 1024 times slower than the fastest
                // came out as 0 (found by the fuzz target), and work never ends on
                // a CPU of capacity 0.
                .map(|cpu| ((u128::from(raw(cpu)) << 10) / u128::from(max)).max(1) as u32)
                .collect();
            for (cpu, capacity) in self.cpus.iter_mut().zip(scaled) {
                cpu.capacity = capacity;
            }
        } else if any {
            self.notice(
                "/cpus/cpu/capacity-dmips-mhz",
                "present on some CPUs only",
                "ignored: every CPU has capacity 1024",
            );
        }
    }
}

fn read_psci(node: &DtNode<'_>) -> Result<Conduit, BoardError> {
    match property(node, "method").and_then(|m| strings(m).next()) {
        Some("hvc") => Ok(Conduit::Hvc),
        Some("smc") => Ok(Conduit::Smc),
        Some(_) => Err(BoardError::BadProperty {
            node: "/psci",
            property: "method",
            problem: "must be \"hvc\" or \"smc\"",
        }),
        None => Err(BoardError::BadProperty {
            node: "/psci",
            property: "method",
            problem: "missing",
        }),
    }
}
