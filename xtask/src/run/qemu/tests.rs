//! The QEMU configuration's tests: a board's CPUs, and device trees QEMU
//! would drop.

use super::*;

fn config(board: &str) -> QemuConfig {
    QemuConfig::for_board(Board::load(board).unwrap())
}

/// A board with its own CPUs runs with exactly that many; QEMU virt,
/// whose tree QEMU makes for any count, takes any count up to 8.
#[test]
fn a_board_with_its_own_cpus_takes_only_its_count() {
    let mut pixel6 = config("pixel6");
    assert!(pixel6.validate().is_ok());
    pixel6.cpus = 2;
    assert_eq!(
        pixel6.validate().unwrap_err(),
        "--cpus 2: board pixel6 has 8 CPUs"
    );
    let mut juno = config("juno-r2");
    juno.cpus = 4;
    assert_eq!(
        juno.validate().unwrap_err(),
        "--cpus 4: board juno-r2 has 6 CPUs"
    );
    let mut virt = config("qemu-virt");
    virt.cpus = 2;
    assert!(virt.validate().is_ok());
}

/// A scenario pinned past the machine's CPUs is refused before boot, saying
/// where the CPU count came from.
#[test]
fn a_cpu_past_the_machine_names_where_its_count_came_from() {
    let path = std::env::temp_dir().join(format!("fairway-pin-{}.json", std::process::id()));
    std::fs::write(
        &path,
        r#"{"global": {"duration": 1}, "tasks": {"t": {"cpus": [1], "run": 10, "sleep": 90}}}"#,
    )
    .unwrap();
    let mut virt = config("qemu-virt");
    virt.cpus = 1;
    virt.scenario = Some(path.clone());
    let error = virt.prepare_scenario().unwrap_err();
    assert_eq!(
        error,
        format!(
            "{}: tasks.t.cpus.0: 1 is outside 0..=0 (the kernel boots 1 CPU(s) on qemu-virt; \
             --cpus N boots up to 8)",
            path.display()
        )
    );
    std::fs::remove_file(&path).unwrap();
}

/// A tree QEMU would drop is refused with its size and the limit; one
/// byte under the limit passes (the header's size is checked first).
#[test]
fn a_device_tree_qemu_would_drop_is_refused() {
    let folder = std::env::temp_dir().join(format!("fairway-dtb-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let tree = |len: usize| {
        let mut bytes = vec![0u8; len];
        bytes[..4].copy_from_slice(&[0xd0, 0x0d, 0xfe, 0xed]);
        bytes[4..8].copy_from_slice(&(len as u32).to_be_bytes());
        let path = folder.join(format!("{len}.dtb"));
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let mut virt = config("qemu-virt");
    virt.dtb = Some(tree(QEMU_DTB_MAX_BYTES));
    assert!(virt.check_dtb().is_ok());
    virt.dtb = Some(tree(QEMU_DTB_MAX_BYTES + 1));
    let error = virt.check_dtb().unwrap_err();
    assert!(
        error.contains("1038577 bytes; QEMU loads a device tree of at most 1038576"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&folder);
}
