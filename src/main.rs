#![no_std]
#![no_main]
#[panic_handler] fn p(_:&core::panic::PanicInfo)->!{loop{}}
