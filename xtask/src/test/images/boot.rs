//! The `boot` image's cases (`tests/boot.rs`): every CPU count, GIC version
//! and exception level; the flat Image; QEMU's default devices (the
//! firmware isolation's control); QEMU's device tree edited (no UART, a
//! malformed capacity, Juno-like clusters, no GIC); and runs that end
//! through PSCI, as on a board.

use crate::test::checks::last_exit_lines;
use crate::test::dts::{remove_node, replace_once};
use crate::test::{Case, Expect};

/// The cases of `tests/boot.rs`.
pub(crate) fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for cpus in [1, 2, 4, 8] {
        for gic in [2, 3] {
            for el in [1, 2] {
                cases.push(
                    Case::new(format!("boot-{cpus}cpu-gicv{gic}-el{el}"), "boot")
                        .cpus(cpus)
                        .gic(gic)
                        .el(el)
                        .contains(format!(
                            "boot: {cpus}/{cpus} CPUs online, GICv{gic}, entered at EL{el}"
                        ))
                        .contains("boot: every CPU ran a task and answered an IPI"),
                );
            }
        }
    }
    let mut image = Case::new("boot-image-dtb-in-x0", "boot")
        .el(2)
        .contains("(from x0: Image boot)")
        .contains("boot: every CPU ran a task and answered an IPI");
    image.as_image = true;
    cases.push(image);
    // The control of the firmware isolation every case boots with: QEMU's default
    // devices include a network card whose option ROM it must then fail to find.
    let mut defaults = Case::new("no-firmware-control-default-devices-fail", "boot")
        .expect(Expect::Failure)
        .contains("failed to find romfile");
    defaults.qemu_defaults = true;
    cases.push(defaults);
    cases.push(
        Case::new("dt-no-uart-falls-back", "boot")
            .dts(|dts| remove_node(dts, "\tpl011@9000000 {"))
            .contains(
                "device tree: uart: no arm,pl011 or 16550-compatible node; fallback: QEMU virt's UART at 0x09000000",
            )
            .contains("boot: every CPU ran a task"),
    );
    // A run that ends as on a board (issue 17, point 1): `semihosting=0`
    // leaves QEMU's exit to PSCI, whose SYSTEM_OFF and SYSTEM_RESET (with
    // `-no-reboot`) end QEMU with status 0 whatever the verdict, so the
    // verdict line must be the last the kernel prints.
    cases.push(
        Case::new("exit-psci-system-off", "boot")
            .cpus(2)
            .append("semihosting=0")
            .contains("boot: every CPU ran a task")
            .check(|lines| last_exit_lines(lines, &["exit: success"])),
    );
    cases.push(
        Case::new("exit-psci-system-reset", "boot")
            .cpus(2)
            .append("semihosting=0 power_off=reset")
            .contains("boot: every CPU ran a task")
            .check(|lines| last_exit_lines(lines, &["exit: success"])),
    );
    cases.push(
        // A board without PSCI: QEMU adds its own /psci to any device tree,
        // so `psci=0` has the kernel ignore it. QEMU is never told to stop and
        // the case times out; it checks the last two lines, after which the
        // CPU is parked.
        Case::new("exit-no-psci-parks", "boot")
            .cpus(1)
            .append("semihosting=0 psci=0")
            .expect(Expect::Timeout)
            .timeout(3)
            .contains("boot: every CPU ran a task")
            .check(|lines| {
                last_exit_lines(
                    lines,
                    &["exit: success", "exit: no PSCI power-off; CPUs parked"],
                )
            }),
    );
    cases.push(
        Case::new("dt-capacity-malformed", "boot")
            .dts(|dts| {
                replace_once(
                    dts,
                    "reg = <0x00>;\n\t\t\tenable-method",
                    "reg = <0x00>;\n\t\t\tcapacity-dmips-mhz = <0x00>;\n\t\t\tenable-method",
                )
            })
            .expect(Expect::Failure)
            .contains("/cpus/cpu/capacity-dmips-mhz: must be one non-zero u32 cell"),
    );
    let mut juno_like = Case::new("dt-juno-like-clusters", "boot")
        .dts(|dts| {
            let mut out = dts.to_string();
            for (cpu, dmips) in [(0, 1024), (1, 1024), (2, 578), (3, 578)] {
                let from = format!("reg = <0x{cpu:02x}>;\n\t\t\tenable-method");
                let to = format!(
                    "reg = <0x{cpu:02x}>;\n\t\t\tcapacity-dmips-mhz = <{dmips}>;\n\t\t\tenable-method"
                );
                out = replace_once(&out, &from, &to)?;
            }
            Ok(out)
        })
        .contains("boot: cpu0 mpidr=0x0 cluster=0 capacity=1024")
        .contains("boot: cpu2 mpidr=0x2 cluster=1 capacity=578");
    juno_like.smp_topology = ",clusters=2,cores=2";
    cases.push(juno_like);
    cases.push(
        Case::new("dt-no-gic", "boot")
            .dts(|dts| remove_node(dts, "\tintc@8000000 {"))
            .expect(Expect::Failure)
            .contains("node interrupt-controller (compatible arm,gic-v3 or arm,cortex-a15-gic) is missing"),
    );
    cases
}
