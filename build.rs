//! Links every kernel image (the binary and each QEMU test) with Fairway's memory
//! layout and defmt's section script.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rerun-if-changed=linker.ld");
    if target.starts_with("aarch64-") && target.contains("-none") {
        println!("cargo:rustc-link-arg=-T{dir}/linker.ld");
        println!("cargo:rustc-link-arg=-Tdefmt.x");
    }
}
