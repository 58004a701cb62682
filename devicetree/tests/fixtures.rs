//! The reader on the committed fixtures (`tests/fixtures/*.dts`, compiled to `.dtb`):
//! a QEMU virt tree and a Juno-like two-cluster tree, read back field by field.

mod tree;

use fairway_devicetree::{BoardInfo, Conduit, GicInfo};
use tree::Node;

const VIRT: &[u8] = include_bytes!("fixtures/qemu-virt-gicv3.dtb");
const JUNO: &[u8] = include_bytes!("fixtures/juno-like.dtb");

fn parse(blob: &[u8], boot_mpidr: u64) -> BoardInfo {
    BoardInfo::parse(blob, 0x4000_0000, boot_mpidr).unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn qemu_virt_is_read_whole() {
    let board = parse(VIRT, 0);
    assert_eq!(board.model.as_str(), "linux,dummy-virt");
    assert!(board.is_qemu);
    assert_eq!(board.memory, 0x4000_0000..0x6000_0000);
    assert_eq!(board.uart, Some(0x900_0000));
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
    assert_eq!(board.uart, Some(0x7ff8_0000));
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

/// The tests' tree model writes what it reads: a fixture decoded and encoded again
/// parses to the same board.
#[test]
fn the_tree_model_round_trips_the_fixtures() {
    for (blob, boot) in [(VIRT, 0), (JUNO, 0x100)] {
        let tree = Node::decode(blob);
        let encoded = tree.encode();
        assert_eq!(Node::decode(&encoded), tree);
        assert_eq!(
            format!("{:?}", parse(&encoded, boot)),
            format!("{:?}", parse(blob, boot))
        );
    }
}
