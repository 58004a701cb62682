//! The EL1 physical generic timer: the clock (CNTPCT_EL0 scaled by CNTFRQ_EL0,
//! read at boot, never assumed) and the one-shot comparator that the
//! high-resolution timer queue programs for its earliest expiry.

use core::sync::atomic::{AtomicU64, Ordering};

use aarch64_cpu::registers::{CNTFRQ_EL0, CNTP_CTL_EL0, CNTP_CVAL_EL0, CNTPCT_EL0};
use tock_registers::interfaces::{Readable, Writeable};

/// `ns = ticks * NS_PER_TICK_MULT >> 32`.
static NS_PER_TICK_MULT: AtomicU64 = AtomicU64::new(0);
/// `ticks = ns * TICKS_PER_NS_MULT >> 32`.
static TICKS_PER_NS_MULT: AtomicU64 = AtomicU64::new(0);
static FREQUENCY: AtomicU64 = AtomicU64::new(0);

/// Reads CNTFRQ_EL0 and prepares the conversions. Returns the frequency in Hz,
/// or `None` when firmware left it zero.
pub fn init_clock() -> Option<u64> {
    let frequency = CNTFRQ_EL0.get() & 0xffff_ffff;
    if frequency == 0 {
        return None;
    }
    FREQUENCY.store(frequency, Ordering::Relaxed);
    NS_PER_TICK_MULT.store(
        ((1_000_000_000u128 << 32) / u128::from(frequency)) as u64,
        Ordering::Relaxed,
    );
    TICKS_PER_NS_MULT.store(
        ((u128::from(frequency) << 32) / 1_000_000_000u128) as u64,
        Ordering::Relaxed,
    );
    Some(frequency)
}

/// The counter frequency in Hz (0 before [`init_clock`]).
pub fn frequency() -> u64 {
    FREQUENCY.load(Ordering::Relaxed)
}

/// Raw counter ticks.
#[inline(always)]
pub fn ticks() -> u64 {
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
    CNTPCT_EL0.get()
}

/// Nanoseconds since the counter started.
#[inline]
pub fn now_ns() -> u64 {
    ticks_to_ns(ticks())
}

/// Converts counter ticks to nanoseconds.
#[inline]
pub fn ticks_to_ns(ticks: u64) -> u64 {
    ((u128::from(ticks) * u128::from(NS_PER_TICK_MULT.load(Ordering::Relaxed))) >> 32) as u64
}

/// Converts nanoseconds to counter ticks, rounding up so that a deadline is never
/// reached early.
#[inline]
pub fn ns_to_ticks(ns: u64) -> u64 {
    (((u128::from(ns) * u128::from(TICKS_PER_NS_MULT.load(Ordering::Relaxed))) >> 32) as u64)
        .saturating_add(1)
}

/// Programs this core's comparator to fire at `deadline_ns`.
pub fn program_oneshot(deadline_ns: u64) {
    CNTP_CVAL_EL0.set(ns_to_ticks(deadline_ns));
    CNTP_CTL_EL0.write(CNTP_CTL_EL0::ENABLE::SET + CNTP_CTL_EL0::IMASK::CLEAR);
}

/// Stops this core's comparator from interrupting.
pub fn disarm() {
    CNTP_CTL_EL0.write(CNTP_CTL_EL0::ENABLE::CLEAR + CNTP_CTL_EL0::IMASK::SET);
}
