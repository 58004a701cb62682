//! A kernel that never exits: the host runner's timeout must end it (the test
//! harness expects the timeout).
#![no_std]
#![no_main]

fairway::entry!(main);

fn main() -> fairway::ExitCode {
    defmt::println!("hang: spinning forever");
    loop {
        core::hint::spin_loop();
    }
}
