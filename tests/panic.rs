//! A panic prints its message and location and exits QEMU with a failing status
//! (the test harness expects the failure).
#![no_std]
#![no_main]

fairway::entry!(main);

fn main() -> fairway::ExitCode {
    let answer = core::hint::black_box(41);
    assert_eq!(answer, 42, "the deliberate panic of tests/panic.rs");
    fairway::ExitCode::Success
}
