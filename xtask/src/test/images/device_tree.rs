//! The `device_tree` image's cases (`tests/device_tree.rs`): QEMU's device
//! tree, edited and loaded into RAM, parsed by the kernel's reader: what it
//! accepts, what it refuses and where it falls back.

use crate::test::Case;
use crate::test::dts::{remove_node, replace_once};

/// The cases of `tests/device_tree.rs`.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = vec![
        Case::new("dt-parse-unchanged", "device_tree")
            .parse(|dts| Ok(dts.to_string()))
            .contains("device_tree: parsed: 4 CPUs, psci Some(Hvc), timer INTID 30, GIC v3 (GICD 0x8000000, GICR 0x80a0000)"),
        Case::new("dt-parse-psci-method-bad", "device_tree")
            .parse(|dts| replace_once(dts, "method = \"hvc\";", "method = \"foo\";"))
            .contains("device_tree: error: device tree: /psci/method: must be \"hvc\" or \"smc\""),
        Case::new("dt-parse-no-psci", "device_tree")
            .parse(|dts| remove_node(dts, "\tpsci {"))
            .contains(
                "device_tree: notice: /psci: missing; fallback: running on the boot CPU only",
            ),
        Case::new("dt-parse-no-memory", "device_tree")
            .parse(|dts| remove_node(dts, "\tmemory@40000000 {"))
            .contains("device_tree: error: device tree: node /memory is missing"),
        Case::new("dt-parse-cpu-reg-missing", "device_tree")
            .parse(|dts| replace_once(dts, "reg = <0x01>;\n", ""))
            .contains("device_tree: error: device tree: /cpus/cpu/reg: missing or shorter than #address-cells"),
        Case::new("dt-parse-timer-interrupts-missing", "device_tree")
            .parse(|dts| {
                replace_once(
                    dts,
                    "interrupts = <0x01 0x0d 0x04 0x01 0x0e 0x04 0x01 0x0b 0x04 0x01 0x0a 0x04>;",
                    "",
                )
            })
            .contains(
                "device_tree: notice: /timer/interrupts: missing or short; fallback: INTID 30",
            ),
    ];
    let mut bad_magic = Case::new("dt-parse-bad-magic", "device_tree")
        .parse(|dts| Ok(dts.to_string()))
        .contains("device_tree: error: no usable device tree at 0x40100000: bad magic (expected 0xd00dfeed)");
    bad_magic.corrupt_magic = true;
    cases.push(bad_magic);
    cases
}
