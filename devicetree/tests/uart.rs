//! The console UART chosen from the device tree: the driver its `compatible`
//! asks for, a 16550's `reg-shift` and `reg-io-width` (checked), and the node
//! `/chosen/stdout-path` names (a path or an alias, options cut off). The trees
//! are QEMU virt's fixture with UART nodes added or edited node by node.

mod tree;

use fairway_devicetree::{BoardInfo, Ns16550Layout, Uart, UartKind};
use tree::{Node, cells, text};

const VIRT: &[u8] = include_bytes!("fixtures/qemu-virt-gicv3.dtb");

/// An RK3399 UART node as its device tree writes it (two address cells).
fn rk3399_uart(base: u32, extra: &[(&str, Vec<u8>)]) -> Node {
    let mut node = Node::new(&format!("serial@{base:x}"))
        .with(
            "compatible",
            [text("rockchip,rk3399-uart"), text("snps,dw-apb-uart")].concat(),
        )
        .with("reg", cells(&[0, base, 0, 0x100]))
        .with("reg-shift", cells(&[2]))
        .with("reg-io-width", cells(&[4]));
    for (name, value) in extra {
        node.properties.retain(|(n, _)| n != name);
        node.properties.push((name.to_string(), value.clone()));
    }
    node
}

/// QEMU virt's tree, not QEMU (so that no fallback hides a mistake), with
/// its PL011 removed, `uarts` added and `/chosen/stdout-path` set to
/// `stdout_path` (removed when `None`).
fn board_with(uarts: Vec<Node>, stdout_path: Option<&str>, aliases: Option<Node>) -> Vec<u8> {
    let mut root = Node::decode(VIRT);
    root.properties.retain(|(name, _)| name != "compatible");
    root.properties
        .push(("compatible".into(), text("vendor,board")));
    root.children.retain(|child| child.name != "pl011@9000000");
    root.children.extend(uarts);
    if let Some(aliases) = aliases {
        root.children.push(aliases);
    }
    let chosen = root
        .children
        .iter_mut()
        .find(|child| child.name == "chosen")
        .expect("the fixture has /chosen");
    chosen.properties.retain(|(name, _)| name != "stdout-path");
    if let Some(path) = stdout_path {
        chosen.properties.push(("stdout-path".into(), text(path)));
    }
    root.encode()
}

fn parse(blob: &[u8]) -> BoardInfo {
    BoardInfo::parse(blob, 0x4000_0000, 0).unwrap_or_else(|error| panic!("{error}"))
}

fn refusal(blob: &[u8]) -> String {
    match BoardInfo::parse(blob, 0x4000_0000, 0) {
        Ok(board) => panic!("accepted: {:?}", board.uart),
        Err(error) => error.to_string(),
    }
}

fn ns16550(base: u64, reg_shift: u8, reg_io_width: u8) -> Option<Uart> {
    Some(Uart {
        base,
        kind: UartKind::Ns16550(Ns16550Layout {
            reg_shift,
            reg_io_width,
        }),
    })
}

#[test]
fn an_rk3399_uart_is_a_16550_with_shift_2_and_32_bit_access() {
    let blob = board_with(vec![rk3399_uart(0xff1a_0000, &[])], None, None);
    let board = parse(&blob);
    assert_eq!(board.uart, ns16550(0xff1a_0000, 2, 4));
    assert!(board.notices.is_empty(), "{:?}", board.notices);
}

#[test]
fn a_16550_without_shift_or_width_takes_0_and_1() {
    let plain = Node::new("uart@1c28000")
        .with("compatible", text("ns16550a"))
        .with("reg", cells(&[0, 0x1c2_8000, 0, 0x400]));
    let board = parse(&board_with(vec![plain], None, None));
    assert_eq!(board.uart, ns16550(0x1c2_8000, 0, 1));
}

#[test]
fn stdout_path_alias_picks_the_console_among_several_uarts() {
    let uarts = vec![rk3399_uart(0xff18_0000, &[]), rk3399_uart(0xff1a_0000, &[])];
    // Without stdout-path: the first one.
    let board = parse(&board_with(uarts.clone(), None, None));
    assert_eq!(board.uart, ns16550(0xff18_0000, 2, 4));
    // The alias, with its options cut off.
    let aliases = Node::new("aliases")
        .with("serial0", text("/serial@ff180000"))
        .with("serial2", text("/serial@ff1a0000"));
    let board = parse(&board_with(
        uarts.clone(),
        Some("serial2:1500000n8"),
        Some(aliases),
    ));
    assert_eq!(board.uart, ns16550(0xff1a_0000, 2, 4));
    assert!(board.notices.is_empty(), "{:?}", board.notices);
    // A path, with and without the unit address.
    let board = parse(&board_with(
        uarts.clone(),
        Some("/serial@ff1a0000:115200n8"),
        None,
    ));
    assert_eq!(board.uart, ns16550(0xff1a_0000, 2, 4));
    let board = parse(&board_with(uarts, Some("/serial"), None));
    assert_eq!(board.uart, ns16550(0xff18_0000, 2, 4));
}

#[test]
fn a_stdout_path_that_names_no_uart_falls_back_to_the_first_with_a_notice() {
    for (path, problem) in [
        ("serial7", "names an alias that /aliases does not have"),
        (
            "/serial@12345678",
            "names no PL011 or 16550 UART among the root's children",
        ),
        (
            "/soc/serial@ff1a0000",
            "names no PL011 or 16550 UART among the root's children",
        ),
    ] {
        let uarts = vec![rk3399_uart(0xff18_0000, &[]), rk3399_uart(0xff1a_0000, &[])];
        let board = parse(&board_with(uarts, Some(path), None));
        assert_eq!(board.uart, ns16550(0xff18_0000, 2, 4), "{path}");
        let notice = board
            .notices
            .iter()
            .find(|n| n.property == "/chosen/stdout-path")
            .unwrap_or_else(|| panic!("no notice for {path}: {:?}", board.notices));
        assert_eq!(notice.problem, problem);
        assert_eq!(notice.fallback, "the first UART found");
    }
}

#[test]
fn a_pl011_and_a_16550_are_told_apart_by_compatible() {
    let pl011 = Node::new("serial@7ff80000")
        .with(
            "compatible",
            [text("arm,pl011"), text("arm,primecell")].concat(),
        )
        .with("reg", cells(&[0, 0x7ff8_0000, 0, 0x1000]))
        // A PL011 has no reg-shift; a value here is not the 16550's to check.
        .with("reg-io-width", cells(&[3]));
    let board = parse(&board_with(
        vec![pl011, rk3399_uart(0xff1a_0000, &[])],
        None,
        None,
    ));
    assert_eq!(
        board.uart,
        Some(Uart {
            base: 0x7ff8_0000,
            kind: UartKind::Pl011
        })
    );
}

#[test]
fn bad_reg_io_width_and_reg_shift_are_refused_naming_node_property_and_value() {
    for (property, value, message) in [
        (
            "reg-io-width",
            cells(&[3]),
            "device tree: serial@ff1a0000/reg-io-width = <3>: must be 1 or 4",
        ),
        (
            "reg-io-width",
            cells(&[2]),
            "device tree: serial@ff1a0000/reg-io-width = <2>: must be 1 or 4",
        ),
        (
            "reg-shift",
            cells(&[4]),
            "device tree: serial@ff1a0000/reg-shift = <4>: must be 0, 1, 2 or 3",
        ),
        (
            "reg-shift",
            cells(&[0, 2]),
            "device tree: serial@ff1a0000/reg-shift: not one 32-bit cell; must be 0, 1, 2 or 3",
        ),
    ] {
        let uart = rk3399_uart(0xff1a_0000, &[(property, value)]);
        assert_eq!(refusal(&board_with(vec![uart], None, None)), message);
    }
}

#[test]
fn a_bad_uart_that_is_not_the_console_is_not_read() {
    let bad = rk3399_uart(0xff18_0000, &[("reg-io-width", cells(&[3]))]);
    let board = parse(&board_with(
        vec![bad, rk3399_uart(0xff1a_0000, &[])],
        Some("/serial@ff1a0000"),
        None,
    ));
    assert_eq!(board.uart, ns16550(0xff1a_0000, 2, 4));
}

#[test]
fn no_uart_on_a_board_means_no_output_and_on_qemu_qemus_pl011() {
    let board = parse(&board_with(Vec::new(), None, None));
    assert_eq!(board.uart, None);
    let notice = board.notices.iter().find(|n| n.property == "uart").unwrap();
    assert_eq!(notice.fallback, "no output");
    let mut root = Node::decode(VIRT);
    root.children.retain(|child| child.name != "pl011@9000000");
    let board = parse(&root.encode());
    assert_eq!(
        board.uart,
        Some(Uart {
            base: 0x900_0000,
            kind: UartKind::Pl011
        })
    );
}
