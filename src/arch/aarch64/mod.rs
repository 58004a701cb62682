//! AArch64: boot, exceptions, MMU, context switch, the generic timer, PSCI and the
//! PMU cycle counter. Everything that touches a system register lives below here.

pub mod boot;
pub mod context;
pub mod cpu;
pub mod exception;
pub mod lazy;
pub mod mmu;
pub mod pmu;
pub mod psci;
pub mod timer;

/// The marker of an image built with trace events (the `trace` feature): the host
/// runner looks for these bytes in the image before it boots it, so that
/// `--trace` and `--explain` on an image without them are refused at once, with
/// the build command, instead of after a boot.
#[cfg(feature = "trace")]
// SAFETY: a section of its own, which linker.ld keeps inside `.rodata` and the
// kernel never reads; a plain byte array placed there overlaps nothing.
#[unsafe(link_section = ".fairway.features")]
#[used]
pub static FEATURE_MARKER: [u8; 24] = *b"fairway-features: trace\0";
