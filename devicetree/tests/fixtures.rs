//! The reader on the committed fixtures (`tests/fixtures/*.dts`, compiled to `.dtb`):
//! a QEMU virt tree and a Juno-like two-cluster tree, read back field by field.

mod tree;

use fairway_devicetree::{BoardInfo, Conduit, GicInfo, Uart, UartKind};
use tree::Node;

const VIRT: &[u8] = include_bytes!("fixtures/qemu-virt-gicv3.dtb");
const JUNO: &[u8] = include_bytes!("fixtures/juno-like.dtb");
const JUNO_OPP: &[u8] = include_bytes!("fixtures/juno-r0-opp.dtb");

fn parse(blob: &[u8], boot_mpidr: u64) -> BoardInfo {
    BoardInfo::parse(blob, 0x4000_0000, boot_mpidr).unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn qemu_virt_is_read_whole() {
    let board = parse(VIRT, 0);
    assert_eq!(board.model.as_str(), "linux,dummy-virt");
    assert!(board.is_qemu);
    assert_eq!(board.memory, 0x4000_0000..0x6000_0000);
    assert_eq!(
        board.uart,
        Some(Uart {
            base: 0x900_0000,
            kind: UartKind::Pl011
        })
    );
    assert_eq!(
        board.gic,
        GicInfo::V3 {
            distributor: 0x800_0000,
            redistributors: 0x80a_0000,
            redistributor_size: 0xf6_0000
        }
    );
    assert_eq!(board.timer_intid, 30);
    assert_eq!(board.psci, Some(Conduit::Hvc));
    let mpidrs: Vec<u64> = board.cpus.iter().map(|c| c.mpidr).collect();
    assert_eq!(mpidrs, [0, 1, 2, 3]);
    assert!(
        board
            .cpus
            .iter()
            .all(|c| c.cluster == 0 && c.capacity == 1024)
    );
    assert_eq!(board.bootargs.as_str(), "sched=cfs hz=1000");
    assert_eq!(board.bootargs_length, 17);
    assert_eq!(board.notices.len(), 0, "{:?}", board.notices);
}

#[test]
fn juno_like_has_two_clusters_and_the_boot_cpu_first() {
    let board = parse(JUNO, 0x100);
    assert_eq!(board.model.as_str(), "ARM Juno development board (r0)");
    assert!(!board.is_qemu);
    assert_eq!(board.memory, 0x8000_0000..0xff00_0000);
    // Through /chosen/stdout-path = "serial0:115200n8" and /aliases/serial0.
    assert_eq!(
        board.uart,
        Some(Uart {
            base: 0x7ff8_0000,
            kind: UartKind::Pl011
        })
    );
    assert_eq!(
        board.gic,
        GicInfo::V2 {
            distributor: 0x2c01_0000,
            cpu_interface: 0x2c02_f000
        }
    );
    assert_eq!(board.psci, Some(Conduit::Smc));
    let cpus: Vec<(u64, u16, Option<u32>, u32)> = board
        .cpus
        .iter()
        .map(|c| (c.mpidr, c.cluster, c.capacity_dmips_mhz, c.capacity))
        .collect();
    assert_eq!(
        cpus,
        [
            (0x100, 1, Some(578), 578),
            (0x0, 0, Some(1024), 1024),
            (0x1, 0, Some(1024), 1024),
            (0x101, 1, Some(578), 578),
            (0x102, 1, Some(578), 578),
            (0x103, 1, Some(578), 578),
        ]
    );
    assert_eq!(board.bootargs_length, 0);
    assert_eq!(board.notices.len(), 0, "{:?}", board.notices);
}

/// Juno r0 with its OPP tables (docs/linux-sched-reference.md §7.2): one
/// performance domain per cluster with the SCP-firmware's OPPs, and the
/// capacities normalised with each cluster's highest frequency (§7.1):
/// A53 = 578 × 850 × 1024 / (1024 × 1100) = 446.6 → 446, A57 1024.
#[test]
fn juno_r0_opp_tables_make_two_perf_domains_and_capacity_446() {
    let board = parse(JUNO_OPP, 0x100);
    let cpus: Vec<(u64, u32, Option<u32>, Option<u8>)> = board
        .cpus
        .iter()
        .map(|c| {
            (
                c.mpidr,
                c.capacity,
                c.dynamic_power_coefficient,
                c.perf_domain,
            )
        })
        .collect();
    assert_eq!(
        cpus,
        [
            (0x100, 446, Some(140), Some(0)),
            (0x0, 1024, Some(530), Some(1)),
            (0x1, 1024, Some(530), Some(1)),
            (0x101, 446, Some(140), Some(0)),
            (0x102, 446, Some(140), Some(0)),
            (0x103, 446, Some(140), Some(0)),
        ]
    );
    let table = |domain: usize| -> Vec<(u64, u32)> {
        board.perf_domains[domain]
            .opps
            .iter()
            .map(|o| (o.hz / 1_000_000, o.microvolt / 1000))
            .collect()
    };
    assert_eq!(board.perf_domains.len(), 2);
    assert_eq!(
        table(0),
        [(450, 820), (575, 850), (700, 900), (775, 950), (850, 1000)]
    );
    assert_eq!(
        table(1),
        [(450, 820), (625, 850), (800, 900), (950, 950), (1100, 1000)]
    );
    assert_eq!(board.notices.len(), 0, "{:?}", board.notices);
}

/// A malformed OPP table is refused, naming the property: frequencies that do
/// not increase, a missing voltage, a table a CPU names that does not exist.
#[test]
fn malformed_opp_tables_are_refused() {
    for (from, to, problem) in [
        (
            "opp-hz = /bits/ 64 <575000000>;",
            "opp-hz = /bits/ 64 <450000000>;",
            "frequencies must increase down the table",
        ),
        (
            "opp-microvolt = <850000>;",
            "",
            "opp-microvolt is missing or zero",
        ),
        (
            "operating-points-v2 = <&cluster1_opp>;",
            "operating-points-v2 = <0x77>;",
            "names no operating-points-v2 table",
        ),
    ] {
        let source = include_str!("fixtures/juno-r0-opp.dts").replacen(from, to, 1);
        let blob = compile(&source);
        let error = BoardInfo::parse(&blob, 0x4000_0000, 0x100).unwrap_err();
        assert!(error.to_string().contains(problem), "{error}");
    }
}

/// `dtc` on `source` (the tooling installs it beside QEMU).
fn compile(source: &str) -> Vec<u8> {
    use std::io::Write;
    let mut child = std::process::Command::new("dtc")
        .args(["-q", "-I", "dts", "-O", "dtb"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("dtc (cargo xtask ensure-tools installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(source.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "dtc refused the edited fixture");
    output.stdout
}

/// The tests' tree model writes what it reads: a fixture decoded and encoded again
/// parses to the same board.
#[test]
fn the_tree_model_round_trips_the_fixtures() {
    for (blob, boot) in [(VIRT, 0), (JUNO, 0x100), (JUNO_OPP, 0x100)] {
        let tree = Node::decode(blob);
        let encoded = tree.encode();
        assert_eq!(Node::decode(&encoded), tree);
        assert_eq!(
            format!("{:?}", parse(&encoded, boot)),
            format!("{:?}", parse(blob, boot))
        );
    }
}
