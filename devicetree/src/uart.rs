//! The console UART: which driver a node's `compatible` asks for, the 16550's
//! register layout (`reg-shift`, `reg-io-width`), and the `/chosen/stdout-path`
//! that names the console among several UARTs.

use heapless::Vec;

use crate::parse::{DtNode, first_reg, property, strings};
use crate::{BoardError, NodeName};

/// `compatible` strings of the Arm PL011 (Juno, QEMU virt).
pub(crate) const PL011_COMPATIBLES: [&str; 1] = ["arm,pl011"];

/// `compatible` strings of UARTs with the 16550 (8250) register set: the
/// National Semiconductor parts and their clones, and Synopsys' DesignWare APB
/// UART, which most Arm SoCs carry (RK3399 lists `rockchip,rk3399-uart` before
/// `snps,dw-apb-uart`). Only the transmit side is used, which all of them share.
pub(crate) const NS16550_COMPATIBLES: [&str; 5] = [
    "ns16550a",
    "ns16550",
    "ns16450",
    "ns8250",
    "snps,dw-apb-uart",
];

/// The largest `reg-shift` Fairway accepts: registers 4 bytes apart at most 8,
/// which covers every board we know of (RK3399: 2).
const MAX_REG_SHIFT: u32 = 3;

/// Where a 16550's registers are and how wide an access is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Ns16550Layout {
    /// `reg-shift`: register `n` is at `n << reg_shift` from the base.
    pub reg_shift: u8,
    /// `reg-io-width`: each access is this many bytes (1 or 4).
    pub reg_io_width: u8,
}

/// One 16550 register's place in the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UartRegisterAccess {
    /// Bytes from the UART's base.
    pub offset: usize,
    /// Access width in bytes (1: 8-bit loads and stores; 4: 32-bit).
    pub width: u8,
}

impl Ns16550Layout {
    /// Register `index` (0 = THR/RBR, 5 = LSR, ...): at `index << reg-shift`,
    /// accessed `reg-io-width` bytes wide.
    pub fn register(&self, index: usize) -> UartRegisterAccess {
        UartRegisterAccess {
            offset: index << self.reg_shift,
            width: self.reg_io_width,
        }
    }
}

/// Which driver runs the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UartKind {
    /// Arm PL011 (`arm,pl011`).
    Pl011,
    /// A 16550/8250-compatible UART.
    Ns16550(Ns16550Layout),
}

#[cfg(feature = "defmt")]
impl defmt::Format for UartKind {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            UartKind::Pl011 => defmt::write!(f, "PL011"),
            UartKind::Ns16550(layout) => defmt::write!(
                f,
                "16550 (reg-shift {=u8}, reg-io-width {=u8})",
                layout.reg_shift,
                layout.reg_io_width
            ),
        }
    }
}

/// The console UART.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Uart {
    /// The register window's base (the first `reg` entry).
    pub base: u64,
    /// The driver and its parameters.
    pub kind: UartKind,
}

/// The most UART nodes among the root's children that are remembered while
/// looking for the one `/chosen/stdout-path` names.
pub(crate) const MAX_UART_CANDIDATES: usize = 8;

/// A UART node among the root's children.
pub(crate) struct Candidate<'a> {
    pub(crate) node: DtNode<'a>,
    /// `name@unit-address`, as written.
    pub(crate) full_name: NodeName,
    /// The name without the unit address.
    pub(crate) base_name: NodeName,
}

/// `node` as a UART candidate, if its `compatible` names a driver Fairway has.
pub(crate) fn candidate<'a>(node: &DtNode<'a>) -> Option<Candidate<'a>> {
    let compatible = property(node, "compatible")?;
    if !strings(compatible)
        .any(|c| PL011_COMPATIBLES.contains(&c) || NS16550_COMPATIBLES.contains(&c))
    {
        return None;
    }
    let name = node.name().ok()?;
    let mut full_name = NodeName::new();
    let mut base_name = NodeName::new();
    push_truncated(&mut base_name, name.name);
    push_truncated(&mut full_name, name.name);
    if let Some(unit) = name.unit_address {
        push_truncated(&mut full_name, "@");
        push_truncated(&mut full_name, unit);
    }
    Some(Candidate {
        node: *node,
        full_name,
        base_name,
    })
}

fn push_truncated(target: &mut NodeName, text: &str) {
    for c in text.chars() {
        if target.push(c).is_err() {
            break;
        }
    }
}

/// What `/chosen/stdout-path` names, once its options (`:115200n8`) are cut
/// off: a path (`/serial@ff1a0000`) or an alias (`serial2`).
pub(crate) fn stdout_target(value: &str) -> &str {
    value.split(':').next().unwrap_or("")
}

/// The candidate a path names, if the path is one of the root's children: by
/// its full name, or by its name alone when the path gives no unit address
/// (the first such node, as the devicetree specification allows).
pub(crate) fn find_candidate<'c, 'a>(
    candidates: &'c Vec<Candidate<'a>, MAX_UART_CANDIDATES>,
    path: &str,
) -> Option<&'c Candidate<'a>> {
    let component = path.strip_prefix('/')?;
    if component.is_empty() || component.contains('/') {
        return None;
    }
    if component.contains('@') {
        candidates
            .iter()
            .find(|c| c.full_name.as_str() == component)
    } else {
        candidates
            .iter()
            .find(|c| c.base_name.as_str() == component)
    }
}

/// Reads a one-cell property with a default; another shape is refused.
fn optional_cell(
    candidate: &Candidate<'_>,
    name: &'static str,
    default: u32,
    allowed: &'static str,
) -> Result<u32, BoardError> {
    match property(&candidate.node, name) {
        None => Ok(default),
        Some(value) if value.len() == 4 => {
            Ok(u32::from_be_bytes([value[0], value[1], value[2], value[3]]))
        }
        Some(_) => Err(BoardError::BadValue {
            node: candidate.full_name.clone(),
            property: name,
            value: None,
            allowed,
        }),
    }
}

/// Reads the UART `candidate` with the root's cell sizes: its base, its kind
/// and, for a 16550, `reg-shift` (default 0, at most 3) and `reg-io-width`
/// (default 1; 1 or 4). A value outside these is refused naming the node,
/// the property and the value.
pub(crate) fn read(candidate: &Candidate<'_>, cells: (usize, usize)) -> Result<Uart, BoardError> {
    let is_pl011 = property(&candidate.node, "compatible")
        .is_some_and(|value| strings(value).any(|c| PL011_COMPATIBLES.contains(&c)));
    if is_pl011 {
        let (base, _) = first_reg(&candidate.node, 0, cells, "serial (arm,pl011)")?;
        return Ok(Uart {
            base,
            kind: UartKind::Pl011,
        });
    }
    const SHIFTS: &str = "0, 1, 2 or 3";
    const WIDTHS: &str = "1 or 4";
    let reg_shift = optional_cell(candidate, "reg-shift", 0, SHIFTS)?;
    if reg_shift > MAX_REG_SHIFT {
        return Err(BoardError::BadValue {
            node: candidate.full_name.clone(),
            property: "reg-shift",
            value: Some(reg_shift),
            allowed: SHIFTS,
        });
    }
    let reg_io_width = optional_cell(candidate, "reg-io-width", 1, WIDTHS)?;
    if reg_io_width != 1 && reg_io_width != 4 {
        return Err(BoardError::BadValue {
            node: candidate.full_name.clone(),
            property: "reg-io-width",
            value: Some(reg_io_width),
            allowed: WIDTHS,
        });
    }
    let (base, _) = first_reg(&candidate.node, 0, cells, "serial (16550)")?;
    Ok(Uart {
        base,
        kind: UartKind::Ns16550(Ns16550Layout {
            reg_shift: reg_shift as u8,
            reg_io_width: reg_io_width as u8,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdout_path_options_are_cut_off() {
        assert_eq!(stdout_target("serial2:1500000n8"), "serial2");
        assert_eq!(stdout_target("/pl011@9000000"), "/pl011@9000000");
        assert_eq!(
            stdout_target("/serial@ff1a0000:115200n8"),
            "/serial@ff1a0000"
        );
    }

    /// The 16550's registers are `reg-shift` apart; the offsets are written
    /// out by hand from the datasheet's register numbers (THR 0, LSR 5).
    #[test]
    fn register_offsets_follow_reg_shift_and_width() {
        for (shift, width, thr, lsr) in [
            (0u8, 1u8, 0usize, 5usize),
            (2, 4, 0, 0x14),
            (1, 1, 0, 10),
            (3, 4, 0, 40),
        ] {
            let layout = Ns16550Layout {
                reg_shift: shift,
                reg_io_width: width,
            };
            assert_eq!(
                layout.register(0),
                UartRegisterAccess { offset: thr, width }
            );
            assert_eq!(
                layout.register(5),
                UartRegisterAccess { offset: lsr, width }
            );
        }
    }
}
