//! GICv3: memory-mapped distributor (GICD) and redistributors (GICR), and the
//! system-register CPU interface (ICC_*_EL1).

use core::sync::atomic::{AtomicU64, Ordering};

use tock_registers::interfaces::{ReadWriteable, Readable, Writeable};
use tock_registers::registers::{ReadOnly, ReadWrite};
use tock_registers::{register_bitfields, register_structs};

use crate::config::MAX_CPUS;
use crate::drivers::registers::DeviceRegisters;

register_bitfields! {
    u32,
    /// GICD_CTLR, by the names of a GIC with one security state (DS=1).
    GICD_CTLR [
        /// Register write pending.
        RWP OFFSET(31) NUMBITS(1) [],
        /// Affinity routing (ARE_NS in the Non-secure view).
        ARE OFFSET(4) NUMBITS(1) [],
        /// Enables Group 1 interrupts (EnableGrp1A in the Non-secure view).
        EnableGrp1 OFFSET(1) NUMBITS(1) [],
        /// Enables Group 0 interrupts (EnableGrp1 in the Non-secure view).
        EnableGrp0 OFFSET(0) NUMBITS(1) []
    ],
    /// GICD_TYPER.
    GICD_TYPER [
        /// The number of interrupt lines, as (lines / 32) - 1.
        ITLinesNumber OFFSET(0) NUMBITS(5) []
    ],
    /// GICR_WAKER.
    GICR_WAKER [
        /// Whether the redistributor's children (the CPU interface) are asleep.
        ChildrenAsleep OFFSET(2) NUMBITS(1) [],
        /// Whether the core is asleep to the redistributor.
        ProcessorSleep OFFSET(1) NUMBITS(1) []
    ]
}

register_bitfields! {
    u64,
    /// GICR_TYPER.
    GICR_TYPER [
        /// The core's affinity: Aff3.Aff2.Aff1.Aff0.
        AffinityValue OFFSET(32) NUMBITS(32) [],
        /// The last redistributor frame of the region.
        Last OFFSET(4) NUMBITS(1) []
    ]
}

register_structs! {
    /// The distributor's 64 KiB window; only the registers the driver uses are named.
    Distributor {
        (0x0000 => ctlr: ReadWrite<u32, GICD_CTLR::Register>),
        (0x0004 => typer: ReadOnly<u32, GICD_TYPER::Register>),
        (0x0008 => _reserved0),
        (0x0180 => icenabler: [ReadWrite<u32>; 32]),
        (0x0200 => _reserved1),
        (0x1_0000 => @END),
    },

    /// A redistributor's RD_base frame (64 KiB).
    RedistributorControl {
        (0x0000 => _reserved0),
        (0x0008 => typer: ReadOnly<u64, GICR_TYPER::Register>),
        (0x0010 => _reserved1),
        (0x0014 => waker: ReadWrite<u32, GICR_WAKER::Register>),
        (0x0018 => _reserved2),
        (0x1_0000 => @END),
    },

    /// A redistributor's SGI_base frame (64 KiB): the SGIs' and PPIs' registers.
    RedistributorSgi {
        (0x0000 => _reserved0),
        (0x0080 => igroupr0: ReadWrite<u32>),
        (0x0084 => _reserved1),
        (0x0100 => isenabler0: ReadWrite<u32>),
        (0x0104 => _reserved2),
        /// One byte per SGI or PPI (byte access is allowed).
        (0x0400 => ipriorityr: [ReadWrite<u8>; 32]),
        (0x0420 => _reserved3),
        (0x1_0000 => @END),
    },

    /// One core's redistributor: RD_base, then SGI_base 64 KiB above it.
    Redistributor {
        (0x0_0000 => control: RedistributorControl),
        (0x1_0000 => sgi: RedistributorSgi),
        (0x2_0000 => @END),
    }
}

/// A GICv3.
#[derive(Debug)]
pub struct GicV3 {
    distributor: DeviceRegisters<Distributor>,
    /// The redistributor region's frames, in address order.
    redistributors: DeviceRegisters<[Redistributor]>,
    /// Each logical CPU's ICC_SGI1R_EL1 value without the SGI number: its
    /// affinity fields and target-list bit, computed once from its MPIDR
    /// ([`sgi_target`]) so that sending an SGI only adds the number.
    sgi_targets: [AtomicU64; MAX_CPUS],
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
            distributor: unsafe { DeviceRegisters::new(distributor) },
            // SAFETY: the caller vouches for the window, which holds this many
            // whole 128 KiB frames.
            redistributors: unsafe {
                DeviceRegisters::array(
                    redistributors,
                    redistributor_size / size_of::<Redistributor>(),
                )
            },
            sgi_targets: [const { AtomicU64::new(0) }; MAX_CPUS],
        }
    }

    fn wait_for_distributor(&self) {
        while self.distributor.ctlr.is_set(GICD_CTLR::RWP) {
            crate::arch::cpu::relax();
        }
    }

    pub(super) fn init_distributor(&self) {
        let gicd = &*self.distributor;
        gicd.ctlr.set(0);
        self.wait_for_distributor();
        let lines = (gicd.typer.read(GICD_TYPER::ITLinesNumber) + 1) * 32;
        for register in 1..lines as usize / 32 {
            gicd.icenabler[register].set(u32::MAX);
        }
        // Affinity routing, and Group 1 (and Group 0, which no interrupt uses)
        // enabled.
        gicd.ctlr
            .write(GICD_CTLR::ARE::SET + GICD_CTLR::EnableGrp1::SET + GICD_CTLR::EnableGrp0::SET);
        self.wait_for_distributor();
    }

    /// Finds this core's redistributor frame by its affinity in GICR_TYPER.
    fn find_redistributor(&self, mpidr: u64) -> Option<&Redistributor> {
        let affinity = ((mpidr >> 32) & 0xff) << 24 | (mpidr & 0xff_ffff);
        for frame in self.redistributors.iter() {
            let typer = frame.control.typer.extract();
            if typer.read(GICR_TYPER::AffinityValue) == affinity {
                return Some(frame);
            }
            if typer.is_set(GICR_TYPER::Last) {
                break;
            }
        }
        None
    }

    pub(super) fn init_cpu(&self, cpu: usize, ppi: u32, priority: u8) -> Result<(), &'static str> {
        let mpidr = crate::arch::cpu::mpidr();
        self.sgi_targets[cpu].store(sgi_target(mpidr), Ordering::Release);
        let frame = self
            .find_redistributor(mpidr)
            .ok_or("no GICv3 redistributor matches this core's MPIDR")?;
        frame
            .control
            .waker
            .modify(GICR_WAKER::ProcessorSleep::CLEAR);
        while frame.control.waker.is_set(GICR_WAKER::ChildrenAsleep) {
            crate::arch::cpu::relax();
        }
        frame.sgi.igroupr0.set(u32::MAX);
        for register in &frame.sgi.ipriorityr {
            register.set(priority);
        }
        frame.sgi.isenabler0.set(0xffff | (1 << ppi));
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
        let value = self.sgi_targets[target].load(Ordering::Acquire) | u64::from(sgi & 0xf) << 24;
        // SAFETY: writes ICC_SGI1R_EL1 of this core, which only raises the SGI;
        // the barrier makes the request's data visible first.
        unsafe {
            core::arch::asm!("dsb ishst", "msr S3_0_C12_C11_5, {v}", "isb", v = in(reg) value, options(nostack))
        };
    }
}

/// ICC_SGI1R_EL1 for the core of affinity `mpidr`, SGI number 0: Aff3, Aff2
/// and Aff1, and target-list bit aff0 % 16 within range selector RS = aff0 / 16.
fn sgi_target(mpidr: u64) -> u64 {
    let aff0 = mpidr & 0xff;
    ((mpidr >> 32) & 0xff) << 48
        | (aff0 / 16) << 44
        | ((mpidr >> 16) & 0xff) << 32
        | ((mpidr >> 8) & 0xff) << 16
        | (1 << (aff0 % 16))
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
