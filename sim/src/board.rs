//! Boards for the simulator (`--board NAME`): the files the kernel boots with
//! (`boards/NAME/board.toml` and its `cpus.dtsi`, docs/boards.md), read the
//! same way. dtc merges the board's CPU data into a minimal tree standing for
//! QEMU's (memory, GIC, PSCI and one `cpu@N` node per CPU), and the kernel's
//! own reader (`fairway_devicetree::BoardInfo::parse`) turns it into the
//! CPUs' capacities and the performance domains; the energy model comes from
//! the same rules (`fairway_sched::energy`, §5.1).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use fairway_devicetree::BoardInfo;
use fairway_sched::boot_options::SchedConfig;
use fairway_sched::cpufreq::DomainSpec;
use fairway_sched::energy::{OperatingPoint, PerfDomainModel};
use fairway_sched::run_queue::CpuCapacity;
use fairway_sched::schedutil::default_rate_limit;

use crate::SimError;
use crate::engine::Dvfs;

/// A board's CPUs for the simulator: their capacities (at the highest
/// frequency) and, when it has OPP tables, its performance domains.
pub struct SimBoard {
    /// Per CPU.
    pub capacities: Vec<CpuCapacity>,
    /// The domains, with the governor and call sites of `sched`.
    pub dvfs: Option<Dvfs>,
}

/// The folder of board `name`: `boards/NAME` under the current directory,
/// else under the workspace the simulator was built in; a name with a `/`
/// is a path.
fn folder(name: &str) -> PathBuf {
    if name.contains('/') {
        return PathBuf::from(name);
    }
    let here = Path::new("boards").join(name);
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../boards")
        .join(name)
}

/// `key = value` of a `board.toml` line (the few keys read here).
fn toml_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"'))
    })
}

/// The file of a board's merged tree, committed beside its `cpus.dtsi`: the
/// simulator reads it, so that it needs no device-tree compiler (`cargo xtask
/// board-blobs` writes it again; a test checks it is the sources compiled).
pub const SIM_BLOB: &str = "sim.dtb";

/// A board's `board.toml` facts the simulator reads: its CPU count and its
/// `cpus_dtsi`, if it has one.
fn board_toml(name: &str, dir: &Path) -> Result<(usize, Option<String>), SimError> {
    let bad = |what: String| SimError::Config(format!("--board {name}: {what}"));
    let toml_path = dir.join("board.toml");
    let toml = std::fs::read_to_string(&toml_path)
        .map_err(|e| bad(format!("{}: {e}", toml_path.display())))?;
    let cpus: usize = toml_value(&toml, "cpus")
        .and_then(|v| v.parse().ok())
        .filter(|n| (1..=fairway_sched::task::MAX_CPUS).contains(n))
        .ok_or_else(|| bad("board.toml: no cpus = N (1..=64)".into()))?;
    Ok((cpus, toml_value(&toml, "cpus_dtsi").map(str::to_string)))
}

/// The source of board `name`'s tree for the simulator: a minimal tree standing
/// for QEMU's (memory, GIC, PSCI and one `cpu@N` node per CPU), then the board's
/// `cpus.dtsi`, which dtc merges into it.
fn merged_source(cpus: usize, dtsi: &str) -> String {
    let mut source = String::from(
        "/dts-v1/;\n/ {\n\t#address-cells = <2>;\n\t#size-cells = <2>;\n\
         \tcompatible = \"linux,dummy-virt\";\n\
         \tmemory@40000000 {\n\t\tdevice_type = \"memory\";\n\t\treg = <0 0x40000000 0 0x20000000>;\n\t};\n\
         \tintc@8000000 {\n\t\tcompatible = \"arm,gic-v3\";\n\t\tinterrupt-controller;\n\
         \t\t#interrupt-cells = <3>;\n\t\treg = <0 0x8000000 0 0x10000 0 0x80a0000 0 0xf60000>;\n\t};\n\
         \tpsci {\n\t\tcompatible = \"arm,psci-1.0\";\n\t\tmethod = \"hvc\";\n\t};\n\
         \tcpus {\n\t\t#address-cells = <1>;\n\t\t#size-cells = <0>;\n\
         \t\tcpu-map {\n\t\t\tcluster0 {\n\t\t\t\tcore0 {\n\t\t\t\t\tcpu = <&{/cpus/cpu@0}>;\n\t\t\t\t};\n\t\t\t};\n\t\t};\n",
    );
    for cpu in 0..cpus {
        let _ = write!(
            source,
            "\t\tcpu@{cpu} {{\n\t\t\tdevice_type = \"cpu\";\n\t\t\tcompatible = \"arm,cortex-a57\";\n\
             \t\t\treg = <{cpu:#x}>;\n\t\t\tenable-method = \"psci\";\n\t\t}};\n"
        );
    }
    let _ = write!(source, "\t}};\n}};\n/include/ \"{dtsi}\"\n");
    source
}

/// Board `name`'s merged tree compiled with dtc, as [`SIM_BLOB`] holds it; `None`
/// for a board without `cpus_dtsi` (QEMU's identical CPUs). `cargo xtask
/// board-blobs` writes it, and a test compares it with the committed one.
pub fn compile_merged(name: &str) -> Result<Option<Vec<u8>>, SimError> {
    let bad = |what: String| SimError::Config(format!("--board {name}: {what}"));
    let dir = folder(name);
    let (cpus, Some(dtsi)) = board_toml(name, &dir)? else {
        return Ok(None);
    };
    let source = merged_source(cpus, &dtsi);
    // One name per load: threads of one process (the tests) may load the
    // same board at once.
    static LOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let scratch = std::env::temp_dir().join(format!(
        "fairway-sim-{}-{}-{}",
        std::process::id(),
        LOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        name.replace(['/', '.'], "_")
    ));
    let (dts, dtb) = (scratch.with_extension("dts"), scratch.with_extension("dtb"));
    std::fs::write(&dts, &source).map_err(|e| bad(format!("{}: {e}", dts.display())))?;
    let output = Command::new("dtc")
        .args(["-q", "-I", "dts", "-O", "dtb", "-i"])
        .arg(&dir)
        .arg("-o")
        .arg(&dtb)
        .arg(&dts)
        .output()
        .map_err(|e| {
            bad(format!(
                "dtc, which compiles a board without {SIM_BLOB} (cargo xtask ensure-tools \
                 installs it): {e}"
            ))
        })?;
    let blob = std::fs::read(&dtb);
    let _ = std::fs::remove_file(&dts);
    let _ = std::fs::remove_file(&dtb);
    if !output.status.success() {
        return Err(bad(format!(
            "dtc could not merge {dtsi}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    blob.map(Some)
        .map_err(|e| bad(format!("{}: {e}", dtb.display())))
}

/// Loads board `name` for `sched`'s governor and call sites: from its committed
/// [`SIM_BLOB`] when it has one (no external tool), else compiled with dtc (a
/// board of the user's own, given as a path).
pub fn load(name: &str, sched: &SchedConfig) -> Result<SimBoard, SimError> {
    let bad = |what: String| SimError::Config(format!("--board {name}: {what}"));
    let dir = folder(name);
    let (cpus, dtsi) = board_toml(name, &dir)?;
    if dtsi.is_none() {
        // QEMU's identical CPUs.
        return Ok(SimBoard {
            capacities: vec![CpuCapacity::default(); cpus],
            dvfs: None,
        });
    }
    let committed = dir.join(SIM_BLOB);
    let blob = match std::fs::read(&committed) {
        Ok(blob) => blob,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            compile_merged(name)?.expect("a board with cpus_dtsi has a merged tree")
        }
        Err(error) => return Err(bad(format!("{}: {error}", committed.display()))),
    };
    let info = BoardInfo::parse(&blob, 0, 0).map_err(|e| bad(e.to_string()))?;
    let capacities = info
        .cpus
        .iter()
        .map(|c| CpuCapacity {
            capacity_orig: c.capacity,
            frequency_scale: 1024,
        })
        .collect();
    let mut domains = Vec::new();
    let mut models = Vec::new();
    for (index, table) in info.perf_domains.iter().enumerate() {
        let members: Vec<usize> = (0..info.cpus.len())
            .filter(|&c| info.cpus[c].perf_domain == Some(index as u8))
            .collect();
        let Some(&first) = members.first() else {
            continue;
        };
        let capacity = u64::from(info.cpus[first].capacity);
        let points: Vec<OperatingPoint> = table
            .opps
            .iter()
            .map(|opp| OperatingPoint {
                hz: opp.hz,
                microvolt: u64::from(opp.microvolt),
            })
            .collect();
        let model = match info.cpus[first].dynamic_power_coefficient {
            Some(coefficient) if coefficient > 0 => Some(
                PerfDomainModel::from_operating_points(&points, coefficient, capacity)
                    .map_err(|e| bad(format!("perf domain {index}: energy model refused: {e}")))?,
            ),
            _ => None,
        };
        let power = model.as_ref().map_or_else(
            || vec![0; points.len()],
            |model| model.states.iter().map(|s| s.power).collect(),
        );
        models.push(model);
        let latency = u64::from(table.transition_latency_ns);
        domains.push((
            members.clone(),
            DomainSpec {
                frequencies: table.opps.iter().map(|opp| opp.hz / 1000).collect(),
                power,
                idle_power: u64::from(table.idle_power_uw),
                capacity,
                cpus: members.len(),
                governor: sched.governor,
                rate_limit: default_rate_limit(latency),
                transition_latency: latency,
            },
        ));
    }
    Ok(SimBoard {
        capacities,
        dvfs: (!domains.is_empty()).then_some(Dvfs {
            domains,
            models,
            sites: sched.cpufreq_update,
            energy_aware: sched.energy_aware,
            eas_overutilized: sched.eas_overutilized,
        }),
    })
}
