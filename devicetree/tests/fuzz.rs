//! Fuzz target of the device-tree reader (`BoardInfo::parse`), the first thing the
//! kernel reads, from whatever a boot loader hands it: for any bytes it returns a
//! board or a `BoardError`, never panics, and a board it returns is one the kernel
//! can boot (see `check_board`). Inputs: arbitrary bytes, a valid header over
//! arbitrary bytes, the fixtures with byte edits, and the fixtures edited node by
//! node (`TreeEdit`) and re-encoded, then possibly byte-edited too. The harness is
//! `fairway_fuzzing` (case count, seed, persisted failures).

mod tree;

use fairway_devicetree::{BoardInfo, MAX_CPUS, QEMU_UART};
use fairway_fuzzing::proptest::prelude::*;
use fairway_fuzzing::proptest::test_runner::TestCaseError;
use fairway_fuzzing::{ByteEdit, ByteOrder, Outcome, apply, byte_edits, interesting_u32};
use tree::{Node, cells, text};

const FIXTURES: [&[u8]; 2] = [
    include_bytes!("fixtures/qemu-virt-gicv3.dtb"),
    include_bytes!("fixtures/juno-like.dtb"),
];

/// Names the reader looks for, and a few it must not trip on.
const NODE_NAMES: [&str; 20] = [
    "cpus",
    "cpu@0",
    "cpu@100",
    "cpu",
    "memory@40000000",
    "memory",
    "psci",
    "chosen",
    "cpu-map",
    "socket0",
    "cluster0",
    "cluster1",
    "core0",
    "thread0",
    "timer",
    "pl011@9000000",
    "serial@ff1a0000",
    "aliases",
    "",
    "a@b@c",
];

const PROPERTY_NAMES: [&str; 18] = [
    "reg",
    "#address-cells",
    "#size-cells",
    "compatible",
    "model",
    "capacity-dmips-mhz",
    "interrupts",
    "method",
    "bootargs",
    "phandle",
    "cpu",
    "device_type",
    "status",
    "reg-shift",
    "reg-io-width",
    "stdout-path",
    "serial0",
    "",
];

const STRINGS: [&str; 18] = [
    "hvc",
    "smc",
    "arm,pl011",
    "arm,gic-v3",
    "arm,gic-400",
    "arm,cortex-a15-gic",
    "arm,armv8-timer",
    "linux,dummy-virt",
    "memory",
    "cpu",
    "psci",
    "sched=cfs hz=1000",
    "workload=demo hz=10",
    "snps,dw-apb-uart",
    "ns16550a",
    "/serial@ff1a0000:1500000n8",
    "serial0",
    "",
];

/// A property value: cells at the edges, known strings (terminated or not), a
/// command line longer than the kernel keeps, or bytes.
fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::collection::vec(interesting_u32(), 0..7).prop_map(|values| cells(&values)),
        2 => prop::sample::select(STRINGS.to_vec()).prop_map(text),
        1 => prop::sample::select(STRINGS.to_vec()).prop_map(|s| s.as_bytes().to_vec()),
        1 => (1usize..200).prop_map(|n| text(&"hz=1000 ".repeat(n))),
        1 => prop::collection::vec(any::<u8>(), 0..40),
    ]
}

/// One edit of a tree; nodes are numbered depth first, root 0, modulo their count.
#[derive(Clone, Debug)]
enum TreeEdit {
    RemoveNode(u16),
    /// Repeats a node (a CPU, a cluster...) up to this many times.
    Duplicate(u16, u8),
    RemoveProperty(u16, u8),
    SetProperty(u16, &'static str, Vec<u8>),
    Rename(u16, &'static str),
    AddChild(u16, &'static str, Vec<(&'static str, Vec<u8>)>),
}

fn tree_edit() -> impl Strategy<Value = TreeEdit> {
    let node_name = prop::sample::select(NODE_NAMES.to_vec());
    let property_name = prop::sample::select(PROPERTY_NAMES.to_vec());
    prop_oneof![
        1 => any::<u16>().prop_map(TreeEdit::RemoveNode),
        1 => (any::<u16>(), 1u8..12).prop_map(|(n, times)| TreeEdit::Duplicate(n, times)),
        1 => (any::<u16>(), any::<u8>()).prop_map(|(n, p)| TreeEdit::RemoveProperty(n, p)),
        4 => (any::<u16>(), property_name.clone(), value())
            .prop_map(|(n, name, value)| TreeEdit::SetProperty(n, name, value)),
        1 => (any::<u16>(), node_name.clone()).prop_map(|(n, name)| TreeEdit::Rename(n, name)),
        1 => (
            any::<u16>(),
            node_name,
            prop::collection::vec((property_name, value()), 0..4)
        )
            .prop_map(|(n, name, properties)| TreeEdit::AddChild(n, name, properties)),
    ]
}

fn edit_tree(tree: &mut Node, edits: &[TreeEdit]) {
    for edit in edits {
        match edit {
            TreeEdit::RemoveNode(n) | TreeEdit::Duplicate(n, _) => {
                // Acts on a child of the chosen node's parent: find the parent by index.
                let count = tree.count();
                let target = usize::from(*n) % count;
                if target == 0 {
                    continue;
                }
                let parent = parent_of(tree, target);
                let child_index = parent
                    .1
                    .expect("a non-root node has a position in its parent");
                let parent = tree.nth_mut(parent.0);
                match edit {
                    TreeEdit::RemoveNode(_) => {
                        parent.children.remove(child_index);
                    }
                    TreeEdit::Duplicate(_, times) => {
                        let copy = parent.children[child_index].clone();
                        for _ in 0..*times {
                            parent.children.insert(child_index, copy.clone());
                        }
                    }
                    _ => unreachable!(),
                }
            }
            TreeEdit::RemoveProperty(n, p) => {
                let node = tree.nth_mut(usize::from(*n));
                if !node.properties.is_empty() {
                    let index = usize::from(*p) % node.properties.len();
                    node.properties.remove(index);
                }
            }
            TreeEdit::SetProperty(n, name, value) => {
                let node = tree.nth_mut(usize::from(*n));
                match node.properties.iter_mut().find(|(k, _)| k == name) {
                    Some((_, existing)) => *existing = value.clone(),
                    None => node.properties.push((name.to_string(), value.clone())),
                }
            }
            TreeEdit::Rename(n, name) => {
                let node = tree.nth_mut(usize::from(*n));
                if node.name.is_empty() {
                    continue; // the root stays the root
                }
                node.name = name.to_string();
            }
            TreeEdit::AddChild(n, name, properties) => {
                let mut child = Node::new(name);
                for (key, value) in properties {
                    child = child.with(key, value.clone());
                }
                tree.nth_mut(usize::from(*n)).children.push(child);
            }
        }
    }
}

/// The depth-first index of `target`'s parent and `target`'s position among its
/// siblings.
fn parent_of(tree: &Node, target: usize) -> (usize, Option<usize>) {
    fn walk(node: &Node, index: usize, target: usize) -> Option<(usize, Option<usize>)> {
        let mut next = index + 1;
        for (position, child) in node.children.iter().enumerate() {
            if next == target {
                return Some((index, Some(position)));
            }
            if let Some(found) = walk(child, next, target) {
                return Some(found);
            }
            next += child.count();
        }
        None
    }
    walk(tree, 0, target).unwrap_or((0, None))
}

/// What a fuzz case feeds the reader.
#[derive(Clone, Debug)]
enum Input {
    /// Any bytes.
    Bytes(Vec<u8>),
    /// A fixture (index) with byte edits; `fix_total` sets the header's total size
    /// to the edited length, so the reader gets past that check.
    EditedBytes(usize, Vec<ByteEdit>, bool),
    /// A fixture edited node by node, re-encoded, then byte-edited.
    EditedTree(usize, Vec<TreeEdit>, Vec<ByteEdit>),
}

fn input() -> impl Strategy<Value = (Input, u64)> {
    let fixture = 0..FIXTURES.len();
    let input = prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..256).prop_map(Input::Bytes),
        1 => (prop::collection::vec(interesting_u32(), 10), prop::collection::vec(any::<u8>(), 0..256))
            .prop_map(|(header, body)| {
                let mut bytes = cells(&header);
                bytes[..4].copy_from_slice(&0xd00d_feedu32.to_be_bytes());
                bytes.extend(body);
                Input::Bytes(bytes)
            }),
        3 => (fixture.clone(), byte_edits(4), any::<bool>())
            .prop_map(|(f, edits, fix)| Input::EditedBytes(f, edits, fix)),
        5 => (
            fixture,
            prop::collection::vec(tree_edit(), 1..6),
            prop::collection::vec(byte_edits(2), 0..=1)
        )
            .prop_map(|(f, tree_edits, bytes)| {
                Input::EditedTree(f, tree_edits, bytes.into_iter().flatten().collect())
            }),
    ];
    // The boot core's MPIDR: one of the fixtures' CPUs, or another.
    let boot = prop::sample::select(vec![0u64, 1, 3, 0x100, 0x103, 0xffff_ffff]);
    (input, boot)
}

fn bytes_of(input: &Input) -> Vec<u8> {
    match input {
        Input::Bytes(bytes) => bytes.clone(),
        Input::EditedBytes(fixture, edits, fix_total) => {
            let mut bytes = FIXTURES[*fixture].to_vec();
            apply(&mut bytes, edits, ByteOrder::Big);
            if *fix_total && bytes.len() >= 8 {
                let length = bytes.len() as u32;
                bytes[4..8].copy_from_slice(&length.to_be_bytes());
            }
            bytes
        }
        Input::EditedTree(fixture, tree_edits, byte_edits) => {
            let mut tree = Node::decode(FIXTURES[*fixture]);
            edit_tree(&mut tree, tree_edits);
            let mut bytes = tree.encode();
            apply(&mut bytes, byte_edits, ByteOrder::Big);
            bytes
        }
    }
}

/// What the kernel relies on in a board the reader accepts.
fn check_board(board: &BoardInfo, boot_mpidr: u64) -> Result<(), TestCaseError> {
    prop_assert!((1..=MAX_CPUS).contains(&board.cpus.len()));
    // The boot CPU comes first when the tree lists it.
    if board.cpus.iter().any(|c| c.mpidr == boot_mpidr) {
        prop_assert_eq!(board.cpus[0].mpidr, boot_mpidr);
    }
    for (index, cpu) in board.cpus.iter().enumerate() {
        prop_assert!(
            (1..=1024).contains(&cpu.capacity),
            "cpu {} capacity {}",
            index,
            cpu.capacity
        );
        prop_assert!(
            board.cpus[..index].iter().all(|c| c.mpidr != cpu.mpidr),
            "MPIDR {:#x} listed twice",
            cpu.mpidr
        );
    }
    prop_assert!(board.cpus.iter().any(|c| c.capacity == 1024));
    // A UART, or the stated fallback: QEMU's, or none.
    let uart_notice = board.notices.iter().find(|n| n.property == "uart");
    match (board.uart.map(|uart| uart.base), uart_notice) {
        (Some(QEMU_UART), Some(notice)) => prop_assert!(notice.fallback.contains("QEMU")),
        (Some(_), None) => {}
        (None, Some(notice)) => prop_assert_eq!(notice.fallback, "no output"),
        (uart, notice) => prop_assert!(false, "uart {:?} with notice {:?}", uart, notice),
    }
    prop_assert!(board.memory.start <= board.memory.end);
    prop_assert!(
        (16..32).contains(&board.timer_intid),
        "timer INTID {}",
        board.timer_intid
    );
    prop_assert!(board.bootargs.len() == board.bootargs_length || board.bootargs.is_empty());
    Ok(())
}

#[test]
fn fuzz_device_tree() {
    let report = fairway_fuzzing::run(
        "device_tree",
        env!("CARGO_MANIFEST_DIR"),
        100_000,
        input(),
        |(input, boot_mpidr)| -> Result<Outcome, TestCaseError> {
            let bytes = bytes_of(&input);
            match BoardInfo::parse(&bytes, 0x4000_0000, boot_mpidr) {
                Ok(board) => {
                    check_board(&board, boot_mpidr)?;
                    Ok("accepted")
                }
                Err(error) => {
                    let message = error.to_string();
                    prop_assert!(
                        message.starts_with("device tree: ")
                            || message.starts_with("no usable device tree at 0x40000000: "),
                        "{}",
                        message
                    );
                    Ok("refused")
                }
            }
        },
    );
    // The edits leave many trees the reader accepts, so its checks beyond the
    // header are exercised.
    assert!(report.count("accepted") * 10 > report.cases, "{report:?}");
}
