//! GICv3: memory-mapped distributor (GICD) and redistributors (GICR), and the
//! system-register CPU interface (ICC_*_EL1).

use core::sync::atomic::{AtomicU64, Ordering};

use crate::config::MAX_CPUS;
use crate::drivers::mmio::Mmio;

use super::DEFAULT_PRIORITY;

const GICD_CTLR: usize = 0x0000;
const GICD_TYPER: usize = 0x0004;
const GICD_ICENABLER: usize = 0x0180;
const GICD_CTLR_RWP: u32 = 1 << 31;
const GICR_TYPER: usize = 0x0008;
const GICR_WAKER: usize = 0x0014;
const GICR_FRAME: usize = 0x2_0000;
const SGI_BASE: usize = 0x1_0000;
const GICR_IGROUPR0: usize = SGI_BASE + 0x080;
const GICR_ISENABLER0: usize = SGI_BASE + 0x100;
const GICR_IPRIORITYR: usize = SGI_BASE + 0x400;
const TYPER_LAST: u64 = 1 << 4;

/// A GICv3.
#[derive(Debug)]
pub struct GicV3 {
    distributor: Mmio,
    redistributors: Mmio,
    redistributor_size: usize,
    /// Each logical CPU's MPIDR affinity, for ICC_SGI1R_EL1.
    affinity: [AtomicU64; MAX_CPUS],
}

impl GicV3 {
    /// # Safety
    /// `distributor` (64 KiB) and `redistributors` (`redistributor_size` bytes)
    /// must be a GICv3's GICD and GICR windows, identity mapped as Device memory.
    pub unsafe fn new(
        distributor: usize,
        redistributors: usize,
        redistributor_size: usize,
    ) -> Self {
        GicV3 {
            // SAFETY: the caller vouches for the window.
            distributor: unsafe { Mmio::new(distributor, 0x1_0000) },
            // SAFETY: the caller vouches for the window.
            redistributors: unsafe { Mmio::new(redistributors, redistributor_size) },
            redistributor_size,
            affinity: [const { AtomicU64::new(0) }; MAX_CPUS],
        }
    }

    fn wait_for_distributor(&self) {
        while self.distributor.read32(GICD_CTLR) & GICD_CTLR_RWP != 0 {
            crate::arch::cpu::relax();
        }
    }

    pub(super) fn init_distributor(&self) {
        self.distributor.write32(GICD_CTLR, 0);
        self.wait_for_distributor();
        let lines = ((self.distributor.read32(GICD_TYPER) & 0x1f) + 1) * 32;
        for register in 1..lines as usize / 32 {
            self.distributor
                .write32(GICD_ICENABLER + 4 * register, u32::MAX);
        }
        // ARE_NS (affinity routing) | EnableGrp1NS (with DS=1 also EnableGrp0).
        self.distributor.write32(GICD_CTLR, (1 << 4) | (1 << 1) | 1);
        self.wait_for_distributor();
    }

    /// Finds this core's redistributor frame by its affinity in GICR_TYPER.
    fn find_redistributor(&self, mpidr: u64) -> Option<usize> {
        let affinity = ((mpidr >> 32) & 0xff) << 24 | (mpidr & 0xff_ffff);
        let mut offset = 0;
        while offset + GICR_FRAME <= self.redistributor_size {
            let typer = self.redistributors.read64(offset + GICR_TYPER);
            if typer >> 32 == affinity {
                return Some(offset);
            }
            if typer & TYPER_LAST != 0 {
                break;
            }
            offset += GICR_FRAME;
        }
        None
    }

    pub(super) fn init_cpu(&self, cpu: usize, ppi: u32) -> Result<(), &'static str> {
        let mpidr = crate::arch::cpu::mpidr();
        self.affinity[cpu].store(mpidr, Ordering::Release);
        let frame = self
            .find_redistributor(mpidr)
            .ok_or("no GICv3 redistributor matches this core's MPIDR")?;
        let waker = self.redistributors.read32(frame + GICR_WAKER);
        self.redistributors
            .write32(frame + GICR_WAKER, waker & !(1 << 1));
        while self.redistributors.read32(frame + GICR_WAKER) & (1 << 2) != 0 {
            crate::arch::cpu::relax();
        }
        self.redistributors.write32(frame + GICR_IGROUPR0, u32::MAX);
        for intid in 0..32 {
            self.redistributors
                .write8(frame + GICR_IPRIORITYR + intid, DEFAULT_PRIORITY);
        }
        self.redistributors
            .write32(frame + GICR_ISENABLER0, 0xffff | (1 << ppi));
        // SAFETY: this core's GIC CPU interface registers: enable system-register
        // access (ICC_SRE_EL1.SRE), accept all priorities (ICC_PMR_EL1), enable
        // Group 1 interrupts (ICC_IGRPEN1_EL1). EL2 allowed this in boot.s.
        unsafe {
            core::arch::asm!(
                "mrs {tmp}, S3_0_C12_C12_5",
                "orr {tmp}, {tmp}, #1",
                "msr S3_0_C12_C12_5, {tmp}",
                "isb",
                "mov {tmp}, #0xff",
                "msr S3_0_C4_C6_0, {tmp}",
                "mov {tmp}, #1",
                "msr S3_0_C12_C12_7, {tmp}",
                "isb",
                tmp = out(reg) _,
                options(nostack)
            )
        };
        Ok(())
    }

    pub(super) fn send_sgi(&self, target: usize, sgi: u32) {
        let mpidr = self.affinity[target].load(Ordering::Acquire);
        let aff0 = mpidr & 0xff;
        // Target list bit aff0 % 16 within range selector RS = aff0 / 16.
        let value = ((mpidr >> 32) & 0xff) << 48
            | (aff0 / 16) << 44
            | ((mpidr >> 16) & 0xff) << 32
            | u64::from(sgi & 0xf) << 24
            | ((mpidr >> 8) & 0xff) << 16
            | (1 << (aff0 % 16));
        // SAFETY: writes ICC_SGI1R_EL1 of this core, which only raises the SGI;
        // the barrier makes the request's data visible first.
        unsafe {
            core::arch::asm!("dsb ishst", "msr S3_0_C12_C11_5, {v}", "isb", v = in(reg) value, options(nostack))
        };
    }
}

pub(super) fn acknowledge() -> u32 {
    let intid: u64;
    // SAFETY: reads ICC_IAR1_EL1, acknowledging this core's highest pending interrupt.
    unsafe { core::arch::asm!("mrs {v}, S3_0_C12_C12_0", v = out(reg) intid, options(nostack)) };
    intid as u32 & 0xff_ffff
}

pub(super) fn end_of_interrupt(intid: u32) {
    // SAFETY: writes ICC_EOIR1_EL1 for an interrupt this core acknowledged.
    unsafe {
        core::arch::asm!("msr S3_0_C12_C12_1, {v}", "isb", v = in(reg) u64::from(intid), options(nostack))
    };
}
