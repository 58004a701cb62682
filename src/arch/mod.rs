//! Architecture support. Fairway runs on AArch64 only; the module mirrors the
//! generic names (`cpu`, `timer`, `context`) so another architecture could sit beside it.

pub mod aarch64;

pub use aarch64::{boot, context, cpu, exception, lazy, mmu, pmu, psci, timer};
