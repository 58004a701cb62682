//! Device-tree parsing of a blob QEMU does not touch: the host loads an edited
//! device tree at the address given by `dtb=` on the command line (QEMU rewrites
//! `/psci`, `/memory` and `/chosen` of the tree it hands the kernel, so those
//! errors can only be shown this way). Prints the parse result; the test harness
//! checks the message.
#![no_std]
#![no_main]

use fairway::board::BoardInfo;
use fairway::{ExitCode, boot_options};

fairway::entry!(main);

fn main() -> ExitCode {
    let Some(loaded) = boot_options().loaded_dtb else {
        defmt::println!("device_tree: give dtb=0xADDRESS dtb_size=BYTES on the command line");
        return ExitCode::Failure;
    };
    let (address, size) = (loaded.address as usize, loaded.size as usize);
    let blob = fairway::init::loaded_blob(address, size);
    match BoardInfo::parse(blob, address, 0) {
        Ok(board) => {
            defmt::println!(
                "device_tree: parsed: {=usize} CPUs, psci {}, timer INTID {=u32}, GIC {}",
                board.cpus.len(),
                board.psci,
                board.timer_intid,
                board.gic
            );
            for cpu in &board.cpus {
                defmt::println!(
                    "device_tree: cpu mpidr={=u64:#x} cluster={=u16} capacity={=u32}",
                    cpu.mpidr,
                    cpu.cluster,
                    cpu.capacity
                );
            }
            for notice in &board.notices {
                defmt::println!(
                    "device_tree: notice: {=str}: {=str}; fallback: {=str}",
                    notice.property,
                    notice.problem,
                    notice.fallback
                );
            }
        }
        Err(error) => defmt::println!("device_tree: error: {}", error),
    }
    ExitCode::Success
}
