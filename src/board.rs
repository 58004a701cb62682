//! Board discovery: the device tree is read by the portable crate
//! `fairway_devicetree` (`devicetree/`), which builds and is fuzzed on the host;
//! this module adds what only the kernel's boot knows, where QEMU puts the tree.

pub use fairway_devicetree::{BoardError, BoardInfo, CpuInfo, GicInfo, Notice};

/// Where QEMU puts its device tree for an ELF kernel (the base of RAM).
pub const QEMU_DTB_ADDRESS: usize = 0x4000_0000;
