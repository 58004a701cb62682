//! Links every kernel image (the binary and each QEMU test) with Fairway's memory
//! layout and defmt's section script.
//!
//! The layout follows one setting, `FAIRWAY_RAM=START..END` (hexadecimal
//! with `0x`, or decimal), the RAM the kernel may use: the kernel is linked
//! at START + 2 MiB (the arm64 Image's `text_offset`), the boot map makes
//! `[START, END)` normal memory and everything else below the lazy window
//! Device memory, with 2 MiB granularity (`src/arch/aarch64/mmu.rs`). The
//! default is QEMU virt's, `0x40000000..0x4000000000` (1 GiB to 256 GiB);
//! a board's is in its notes (`boards/*/README.md`, docs/hil.md).

/// The default: QEMU virt's RAM window.
const QEMU_VIRT_RAM: (u64, u64) = (0x4000_0000, 0x40_0000_0000);
/// The boot map's granule for RAM's ends.
const TWO_MIB: u64 = 2 << 20;
/// The lazy window's first byte (level-1 entry 511): RAM must end below it.
const LAZY_WINDOW: u64 = 511 << 30;

fn parse_address(text: &str) -> Option<u64> {
    let text = text.trim().replace('_', "");
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Reads `FAIRWAY_RAM`; the error names the variable, the value and the rule.
fn ram_window() -> Result<(u64, u64), String> {
    let Ok(value) = std::env::var("FAIRWAY_RAM") else {
        return Ok(QEMU_VIRT_RAM);
    };
    let bad = |why: &str| {
        format!("FAIRWAY_RAM={value}: {why} (expected START..END, e.g. 0x80000000..0xff000000)")
    };
    let (start, end) = value.split_once("..").ok_or_else(|| bad("no '..'"))?;
    let start = parse_address(start).ok_or_else(|| bad("START is not a number"))?;
    let end = parse_address(end).ok_or_else(|| bad("END is not a number"))?;
    if !start.is_multiple_of(TWO_MIB) || !end.is_multiple_of(TWO_MIB) {
        return Err(bad("START and END must be multiples of 2 MiB (0x200000)"));
    }
    // The device tree below the kernel (1 MiB), the scenario (1 MiB), the
    // kernel and some heap: 16 MiB at least.
    if end < start + (16 << 20) {
        return Err(bad("the window must be at least 16 MiB"));
    }
    if end > LAZY_WINDOW {
        return Err(bad(
            "END must not pass 511 GiB (0x7fc0000000), the lazy window",
        ));
    }
    Ok((start, end))
}

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rerun-if-changed=linker.ld");
    println!("cargo:rerun-if-env-changed=FAIRWAY_RAM");
    let (start, end) = ram_window().unwrap_or_else(|error| {
        eprintln!("error: {error}");
        std::process::exit(1)
    });
    // For the linker script (`INCLUDE ram.ld`) and the boot map.
    std::fs::write(
        format!("{out}/ram.ld"),
        format!("/* FAIRWAY_RAM (build.rs) */\nRAM_START = {start:#x};\nRAM_END = {end:#x};\n"),
    )
    .expect("writing ram.ld");
    std::fs::write(
        format!("{out}/ram.rs"),
        format!(
            "/// The RAM the kernel may use, `FAIRWAY_RAM` at build time (build.rs).\n\
             pub const RAM: core::ops::Range<u64> = {start:#x}..{end:#x};\n"
        ),
    )
    .expect("writing ram.rs");
    if target.starts_with("aarch64-") && target.contains("-none") {
        println!("cargo:rustc-link-search={out}");
        println!("cargo:rustc-link-arg=-T{dir}/linker.ld");
        println!("cargo:rustc-link-arg=-Tdefmt.x");
    }
}
