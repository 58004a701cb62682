//! GICv2: memory-mapped distributor (GICD) and CPU interface (GICC).

use core::sync::atomic::{AtomicU8, Ordering};

use crate::config::MAX_CPUS;
use crate::drivers::mmio::Mmio;

use super::DEFAULT_PRIORITY;

const GICD_CTLR: usize = 0x000;
const GICD_TYPER: usize = 0x004;
const GICD_ISENABLER: usize = 0x100;
const GICD_ICENABLER: usize = 0x180;
const GICD_IPRIORITYR: usize = 0x400;
const GICD_ITARGETSR: usize = 0x800;
const GICD_SGIR: usize = 0xf00;
const SGIR_FILTER_SELF: u32 = 0b10 << 24;
const GICC_CTLR: usize = 0x00;
const GICC_PMR: usize = 0x04;
const GICC_IAR: usize = 0x0c;
const GICC_EOIR: usize = 0x10;

/// A GICv2.
#[derive(Debug)]
pub struct GicV2 {
    distributor: Mmio,
    cpu_interface: Mmio,
    /// Each logical CPU's interface bit for GICD_SGIR's target list.
    targets: [AtomicU8; MAX_CPUS],
}

impl GicV2 {
    /// # Safety
    /// `distributor` and `cpu_interface` must be the GICD and GICC register
    /// windows of a GICv2, identity mapped as Device memory.
    pub unsafe fn new(distributor: usize, cpu_interface: usize) -> Self {
        GicV2 {
            // SAFETY: the caller vouches for both windows (sizes per the GICv2 spec).
            distributor: unsafe { Mmio::new(distributor, 0x1000) },
            // SAFETY: as above.
            cpu_interface: unsafe { Mmio::new(cpu_interface, 0x2000) },
            targets: [const { AtomicU8::new(0) }; MAX_CPUS],
        }
    }

    pub(super) fn init_distributor(&self) {
        let lines = ((self.distributor.read32(GICD_TYPER) & 0x1f) + 1) * 32;
        self.distributor.write32(GICD_CTLR, 0);
        for register in 1..lines as usize / 32 {
            self.distributor
                .write32(GICD_ICENABLER + 4 * register, u32::MAX);
        }
        self.distributor.write32(GICD_CTLR, 1);
    }

    pub(super) fn init_cpu(&self, cpu: usize, ppi: u32) {
        // The banked ITARGETSR0 reads as this CPU interface's own bit.
        let own = self.distributor.read32(GICD_ITARGETSR) as u8;
        self.targets[cpu].store(own, Ordering::Release);
        for intid in 0..32 {
            self.distributor
                .write8(GICD_IPRIORITYR + intid, DEFAULT_PRIORITY);
        }
        self.distributor
            .write32(GICD_ISENABLER, 0xffff | (1 << ppi));
        self.cpu_interface.write32(GICC_PMR, 0xff);
        self.cpu_interface.write32(GICC_CTLR, 1);
    }

    pub(super) fn acknowledge(&self) -> u32 {
        self.cpu_interface.read32(GICC_IAR) & 0x3ff
    }

    pub(super) fn end_of_interrupt(&self, intid: u32) {
        self.cpu_interface.write32(GICC_EOIR, intid);
    }

    pub(super) fn send_sgi(&self, target: usize, sgi: u32) {
        // To itself a CPU uses the "requesting CPU only" filter: on a
        // uniprocessor GIC the ITARGETSR registers read as zero, so there is no
        // target bit to name.
        let filter = if target == crate::arch::cpu::this_cpu() {
            SGIR_FILTER_SELF
        } else {
            u32::from(self.targets[target].load(Ordering::Acquire)) << 16
        };
        // Make the request's data visible before the interrupt.
        aarch64_cpu::asm::barrier::dsb(aarch64_cpu::asm::barrier::ISHST);
        self.distributor.write32(GICD_SGIR, filter | (sgi & 0xf));
    }
}
