//! The Arm Generic Interrupt Controller, version 2 or 3, as the device tree says.
//!
//! Fairway uses three kinds of interrupt: software-generated ones (SGIs) for
//! inter-processor requests, the private timer interrupt (a PPI), and nothing
//! else yet. Every interrupt is Group 1, priority 0x80, level-sensitive.

pub mod v2;
pub mod v3;

use spin::Once;

/// The interrupt controller found at boot.
#[derive(Debug)]
pub enum Gic {
    /// GICv2: distributor and memory-mapped CPU interface.
    V2(v2::GicV2),
    /// GICv3: distributor, redistributors and the system-register CPU interface.
    V3(v3::GicV3),
}

/// The system's interrupt controller, set once by the boot core.
pub static GIC: Once<Gic> = Once::new();

/// The priority every interrupt gets (lower is more urgent), handed to the
/// version's `init_cpu`.
pub const DEFAULT_PRIORITY: u8 = 0x80;

/// Interrupt IDs at or above this are spurious (1020..1023).
pub const SPURIOUS: u32 = 1020;

impl Gic {
    /// Initializes the distributor (boot core, once).
    pub fn init_distributor(&self) {
        match self {
            Gic::V2(gic) => gic.init_distributor(),
            Gic::V3(gic) => gic.init_distributor(),
        }
    }

    /// Initializes this core's interface and enables SGIs 0-15 and the private
    /// interrupt `ppi`. Fails (with a reason) when this core has no redistributor.
    pub fn init_cpu(&self, cpu: usize, ppi: u32) -> Result<(), &'static str> {
        match self {
            Gic::V2(gic) => {
                gic.init_cpu(cpu, ppi, DEFAULT_PRIORITY);
                Ok(())
            }
            Gic::V3(gic) => gic.init_cpu(cpu, ppi, DEFAULT_PRIORITY),
        }
    }

    /// Acknowledges the highest-priority pending interrupt; `None` if spurious.
    pub fn acknowledge(&self) -> Option<u32> {
        let intid = match self {
            Gic::V2(gic) => gic.acknowledge(),
            Gic::V3(_) => v3::acknowledge(),
        };
        (intid < SPURIOUS).then_some(intid)
    }

    /// Signals the end of handling `intid`.
    pub fn end_of_interrupt(&self, intid: u32) {
        match self {
            Gic::V2(gic) => gic.end_of_interrupt(intid),
            Gic::V3(_) => v3::end_of_interrupt(intid),
        }
    }

    /// Sends SGI `sgi` (0..=15) to logical CPU `target`.
    pub fn send_sgi(&self, target: usize, sgi: u32) {
        match self {
            Gic::V2(gic) => gic.send_sgi(target, sgi),
            Gic::V3(gic) => gic.send_sgi(target, sgi),
        }
    }

    /// The version, 2 or 3.
    pub fn version(&self) -> u8 {
        match self {
            Gic::V2(_) => 2,
            Gic::V3(_) => 3,
        }
    }
}
