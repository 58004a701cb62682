//! GICv2: memory-mapped distributor (GICD) and CPU interface (GICC).

use core::sync::atomic::{AtomicU8, Ordering};

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};
use tock_registers::{register_bitfields, register_structs};

use crate::config::MAX_CPUS;
use crate::drivers::registers::DeviceRegisters;

register_bitfields! {
    u32,
    /// GICD_CTLR.
    GICD_CTLR [
        /// Forwards pending interrupts to the CPU interfaces.
        Enable OFFSET(0) NUMBITS(1) []
    ],
    /// GICD_TYPER.
    GICD_TYPER [
        /// The number of interrupt lines, as (lines / 32) - 1.
        ITLinesNumber OFFSET(0) NUMBITS(5) []
    ],
    /// GICD_SGIR.
    GICD_SGIR [
        /// Which CPUs the SGI goes to.
        TargetListFilter OFFSET(24) NUMBITS(2) [
            /// The CPU interfaces named in CPUTargetList.
            Listed = 0b00,
            /// The requesting CPU only.
            RequestingCpu = 0b10
        ],
        /// One bit per CPU interface.
        CPUTargetList OFFSET(16) NUMBITS(8) [],
        /// The SGI's interrupt ID.
        SGIINTID OFFSET(0) NUMBITS(4) []
    ],
    /// GICC_CTLR.
    GICC_CTLR [
        /// Signals interrupts to the processor.
        Enable OFFSET(0) NUMBITS(1) []
    ],
    /// GICC_PMR.
    GICC_PMR [
        /// Interrupts of higher priority (lower value) than this are signalled.
        Priority OFFSET(0) NUMBITS(8) []
    ],
    /// GICC_IAR.
    GICC_IAR [
        /// The acknowledged interrupt's ID.
        InterruptID OFFSET(0) NUMBITS(10) []
    ]
}

register_structs! {
    /// The distributor's 4 KiB window; only the registers the driver uses are named.
    Distributor {
        (0x000 => ctlr: ReadWrite<u32, GICD_CTLR::Register>),
        (0x004 => typer: ReadOnly<u32, GICD_TYPER::Register>),
        (0x008 => _reserved0),
        (0x100 => isenabler: [ReadWrite<u32>; 32]),
        (0x180 => icenabler: [ReadWrite<u32>; 32]),
        (0x200 => _reserved1),
        /// One byte per interrupt (byte access is allowed).
        (0x400 => ipriorityr: [ReadWrite<u8>; 1020]),
        (0x7fc => _reserved2),
        /// ITARGETSR0-7: the SGIs' and PPIs' targets, banked and read-only.
        (0x800 => itargetsr: [ReadOnly<u32>; 8]),
        (0x820 => _reserved3),
        (0xf00 => sgir: WriteOnly<u32, GICD_SGIR::Register>),
        (0xf04 => _reserved4),
        (0x1000 => @END),
    },

    /// The CPU interface's 8 KiB window; only the registers the driver uses are named.
    CpuInterface {
        (0x000 => ctlr: ReadWrite<u32, GICC_CTLR::Register>),
        (0x004 => pmr: ReadWrite<u32, GICC_PMR::Register>),
        (0x008 => _reserved0),
        (0x00c => iar: ReadOnly<u32, GICC_IAR::Register>),
        (0x010 => eoir: WriteOnly<u32>),
        (0x014 => _reserved1),
        (0x2000 => @END),
    }
}

/// A GICv2.
#[derive(Debug)]
pub struct GicV2 {
    distributor: DeviceRegisters<Distributor>,
    cpu_interface: DeviceRegisters<CpuInterface>,
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
            distributor: unsafe { DeviceRegisters::new(distributor) },
            // SAFETY: as above.
            cpu_interface: unsafe { DeviceRegisters::new(cpu_interface) },
            targets: [const { AtomicU8::new(0) }; MAX_CPUS],
        }
    }

    pub(super) fn init_distributor(&self) {
        let gicd = &*self.distributor;
        let lines = (gicd.typer.read(GICD_TYPER::ITLinesNumber) + 1) * 32;
        gicd.ctlr.write(GICD_CTLR::Enable::CLEAR);
        for register in 1..lines as usize / 32 {
            gicd.icenabler[register].set(u32::MAX);
        }
        gicd.ctlr.write(GICD_CTLR::Enable::SET);
    }

    pub(super) fn init_cpu(&self, cpu: usize, ppi: u32, priority: u8) {
        let gicd = &*self.distributor;
        // The banked ITARGETSR0 reads as this CPU interface's own bit.
        let own = gicd.itargetsr[0].get() as u8;
        self.targets[cpu].store(own, Ordering::Release);
        for register in &gicd.ipriorityr[..32] {
            register.set(priority);
        }
        gicd.isenabler[0].set(0xffff | (1 << ppi));
        let gicc = &*self.cpu_interface;
        gicc.pmr.write(GICC_PMR::Priority.val(0xff));
        gicc.ctlr.write(GICC_CTLR::Enable::SET);
    }

    pub(super) fn acknowledge(&self) -> u32 {
        self.cpu_interface.iar.read(GICC_IAR::InterruptID)
    }

    pub(super) fn end_of_interrupt(&self, intid: u32) {
        self.cpu_interface.eoir.set(intid);
    }

    pub(super) fn send_sgi(&self, target: usize, sgi: u32) {
        // To itself a CPU uses the "requesting CPU only" filter: on a
        // uniprocessor GIC the ITARGETSR registers read as zero, so there is no
        // target bit to name.
        let targets = if target == crate::arch::cpu::this_cpu() {
            GICD_SGIR::TargetListFilter::RequestingCpu
        } else {
            GICD_SGIR::TargetListFilter::Listed
                + GICD_SGIR::CPUTargetList
                    .val(u32::from(self.targets[target].load(Ordering::Acquire)))
        };
        // Make the request's data visible before the interrupt.
        aarch64_cpu::asm::barrier::dsb(aarch64_cpu::asm::barrier::ISHST);
        self.distributor
            .sgir
            .write(targets + GICD_SGIR::SGIINTID.val(sgi));
    }
}
