//! An unexpected exception (a BRK instruction) is reported with the core, ESR,
//! FAR and ELR, and the kernel exits with a failing status.
#![no_std]
#![no_main]

fairway::entry!(main);

fn main() -> fairway::ExitCode {
    fairway::arch::exception::trigger_breakpoint();
    fairway::ExitCode::Success
}
