//! Every fault the fuzz target (`tests/fuzz.rs`) found in the device-tree reader,
//! each as the smallest input that showed it, and one found while reading the code
//! around them. The fuzz target's seeds for them are in
//! `proptest-regressions/device_tree.txt`; these tests keep the inputs themselves,
//! which stay valid when the target's strategies change.

mod tree;

use std::sync::mpsc;
use std::time::Duration;

use fairway_devicetree::{BoardError, BoardInfo};
use tree::{Node, cells, text};

const VIRT: &[u8] = include_bytes!("fixtures/qemu-virt-gicv3.dtb");

/// Parses in another thread, failing if it takes more than 10 s (a reader that
/// loops forever would otherwise hang the test run).
fn parse(blob: Vec<u8>, boot_mpidr: u64) -> Result<BoardInfo, BoardError> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(BoardInfo::parse(&blob, 0x4000_0000, boot_mpidr));
    });
    receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("the reader did not return within 10 s")
}

fn refusal(blob: Vec<u8>) -> String {
    match parse(blob, 0) {
        Ok(board) => panic!("accepted: {board:?}"),
        Err(error) => error.to_string(),
    }
}

/// Replaces the PROP token of the property named `name` (a name used once) with
/// 5, which is no token: the node holding it cannot be read.
fn break_property(blob: &mut [u8], name: &str) {
    let field = |at: usize| u32::from_be_bytes(blob[at..at + 4].try_into().unwrap()) as usize;
    let (structs, strings) = (field(8), field(12));
    let needle = text(name);
    let name_offset = blob[strings..]
        .windows(needle.len())
        .position(|window| window == needle)
        .expect("the name in the strings block") as u32;
    let token = (structs..strings - 12)
        .step_by(4)
        .find(|&at| {
            blob[at..at + 4] == 3u32.to_be_bytes()
                && blob[at + 8..at + 12] == name_offset.to_be_bytes()
        })
        .expect("the property");
    blob[token..token + 4].copy_from_slice(&5u32.to_be_bytes());
}

/// The header's structure block at 0x7700_0000 with size 0x8900_0000: `fdt` added
/// the two as `u32` and overflowed (a panic; with wrapping, a slice out of bounds).
#[test]
fn block_offset_plus_size_past_4_gib_is_truncated() {
    let mut blob = vec![0u8; 40];
    blob[8] = 0x77;
    blob[36] = 0x89;
    assert_eq!(
        refusal(blob.clone()),
        "no usable device tree at 0x40000000: truncated"
    );
    // The same with the magic number, as the kernel's loader checks it first.
    blob[..4].copy_from_slice(&[0xd0, 0x0d, 0xfe, 0xed]);
    assert_eq!(
        refusal(blob),
        "no usable device tree at 0x40000000: truncated"
    );
}

/// A structure block holding only the root's BEGIN_NODE: `fdt` read the four bytes
/// before the end of what follows it at `0 - 4` (a panic with overflow checks).
#[test]
fn a_root_begin_node_with_nothing_after_it_has_no_root() {
    let mut blob = Node::new("").encode();
    // Structure block size 4: the BEGIN_NODE token alone.
    blob[36..40].copy_from_slice(&4u32.to_be_bytes());
    assert_eq!(
        refusal(blob),
        "no usable device tree at 0x40000000: no root node"
    );
}

/// A root child whose first property token is not a token: `fdt`'s child iterator
/// returned the same error forever and the reader's `.flatten()` never ended (the
/// boot hung). Now the tree is refused.
#[test]
fn an_unreadable_root_child_is_refused_not_looped_on() {
    let tree = Node::new("").child(Node::new("x").with("broken", []));
    let mut blob = tree.encode();
    break_property(&mut blob, "broken");
    assert_eq!(
        refusal(blob),
        "no usable device tree at 0x40000000: unreadable root children"
    );
}

/// The same deeper in the tree, in a CPU or in `cpu-map`: reading the root's
/// children reads each child's whole subtree, so the tree is refused there.
#[test]
fn an_unreadable_node_deeper_down_is_refused_too() {
    for inserted in [
        Node::new("cpu@9").with("broken", []),
        Node::new("cpu-map").child(Node::new("cluster0").with("broken", [])),
    ] {
        let mut tree = Node::decode(VIRT);
        let cpus = tree.children.iter_mut().find(|n| n.name == "cpus").unwrap();
        cpus.children.retain(|n| n.name != inserted.name);
        cpus.children.push(inserted);
        let mut blob = tree.encode();
        break_property(&mut blob, "broken");
        assert_eq!(
            refusal(blob),
            "no usable device tree at 0x40000000: unreadable root children"
        );
    }
}

/// Two `/chosen` nodes: the second one's bootargs were appended to the first's,
/// giving a command line that neither node holds.
#[test]
fn a_second_chosen_node_is_ignored() {
    let mut tree = Node::decode(VIRT);
    tree.children
        .push(Node::new("chosen").with("bootargs", text("hz=100")));
    let board = parse(tree.encode(), 0).unwrap();
    assert_eq!(board.bootargs.as_str(), "sched=cfs hz=1000");
    assert_eq!(board.bootargs_length, 17);
}

fn with_cpu_property(tree: &mut Node, cpu: &str, name: &str, value: Vec<u8>) {
    let cpus = tree.children.iter_mut().find(|n| n.name == "cpus").unwrap();
    let cpu = cpus.children.iter_mut().find(|n| n.name == cpu).unwrap();
    match cpu.properties.iter_mut().find(|(k, _)| k == name) {
        Some((_, existing)) => *existing = value,
        None => cpu.properties.push((name.into(), value)),
    }
}

/// capacity-dmips-mhz 1 beside 0xffff_ffff normalised to capacity 0, and work on
/// a CPU of capacity 0 never ends. Capacities are at least 1.
#[test]
fn a_cpu_far_slower_than_the_fastest_keeps_capacity_1() {
    let mut tree = Node::decode(VIRT);
    for (cpu, dmips) in [
        ("cpu@0", 0xffff_ffff),
        ("cpu@1", 1),
        ("cpu@2", 1),
        ("cpu@3", 1),
    ] {
        with_cpu_property(&mut tree, cpu, "capacity-dmips-mhz", cells(&[dmips]));
    }
    let board = parse(tree.encode(), 0).unwrap();
    let capacities: Vec<u32> = board.cpus.iter().map(|c| c.capacity).collect();
    assert_eq!(capacities, [1024, 1, 1, 1]);
}

/// Two cpu nodes with one `reg`: the kernel would start the core twice and give
/// two CPUs one redistributor. Refused, naming the property.
#[test]
fn two_cpus_with_one_mpidr_are_refused() {
    let mut tree = Node::decode(VIRT);
    with_cpu_property(&mut tree, "cpu@2", "reg", cells(&[1]));
    assert_eq!(
        refusal(tree.encode()),
        "device tree: /cpus/cpu/reg: two cpu nodes have the same MPIDR"
    );
}

/// Found reading the code near the faults above: clusters are numbered in a `u16`,
/// and a 1 MiB tree can hold 65,537 cluster nodes; the count overflowed (a panic in
/// debug builds). It now stops at 65,535, which the scheduler's topology refuses.
#[test]
fn cluster_numbers_past_u16_do_not_overflow() {
    let mut tree = Node::decode(VIRT);
    let cpus = tree.children.iter_mut().find(|n| n.name == "cpus").unwrap();
    let map = cpus
        .children
        .iter_mut()
        .find(|n| n.name == "cpu-map")
        .unwrap();
    let first_core = Node::new("core0").with("cpu", cells(&[0x8004]));
    map.children = (0..=u16::MAX as usize)
        .map(|i| Node::new(&format!("cluster{i}")))
        .collect();
    map.children.push(Node::new("cluster").child(first_core));
    let board = parse(tree.encode(), 0).unwrap();
    assert_eq!(board.cpus[0].cluster, u16::MAX);
}
