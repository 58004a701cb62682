//! The simulator on the kernel's boards (`--board`, docs/boards.md): the same
//! files read the same way, with DVFS and the energy meter. Expected values
//! are worked by hand from docs/linux-sched-reference.md §5.1 and §7: a `run`
//! of W µs takes `W × 1024 / capacity × 1024 / scale` of CPU time, with
//! `scale = f × 1024 / fmax` (floored), and a domain's energy is the busy time
//! at each OPP times that OPP's power (`C × mV² × MHz / 10^6` µW). The
//! simulator's times are exact (its operations take no time), so these are
//! equalities, up to the ns the engine rounds a completion up to.

use fairway_sched::boot_options::SchedConfig;
use fairway_sim::results::Results;
use fairway_sim::{Config, Simulation};

const MS: u64 = 1_000_000;

fn simulate_on(board: &str, scenario: &str, options: &str) -> Results {
    let sched = SchedConfig::parse(options).unwrap();
    let board = fairway_sim::board::load(board, &sched).unwrap();
    let path = format!(
        "{}/../tests/scenarios/{scenario}",
        env!("CARGO_MANIFEST_DIR")
    );
    let scenario = fairway_rtapp::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cpus = board.capacities.len();
    scenario.validate_for(cpus, false).unwrap();
    let config = Config {
        policy: sched.policy_kind(cpus),
        policy_name: sched.policy.name().into(),
        capacities: board.capacities,
        tick_ns: sched.tick_ns(),
        duration_ns: None,
        sample_interval_ns: MS,
        hrtick: sched.hrtick,
        tick_phase_ns: 0,
        skew_tick: sched.skew_tick,
        tick_seed: sched.tick_seed,
        balance: sched.balance,
        uclamp: fairway_sim::uclamp_used(&sched, &scenario).unwrap(),
        bandwidth_timer: sched.bandwidth_timer,
        cfs_bandwidth: false,
        dvfs: board.dvfs,
    };
    Simulation::new(&scenario, config)
        .unwrap()
        .run(None)
        .unwrap()
}

/// CPU time of 10 ms of work at `capacity` and `scale`, rounded up to the ns.
fn cpu_time(capacity: u64, scale: u64) -> u64 {
    (10 * MS * 1024 * 1024).div_ceil(capacity * scale)
}

fn runtime(results: &Results) -> u64 {
    results.tasks[0].runtime_ns
}

/// Juno r0's LITTLE CPU 0 (capacity 446, §7.2): 22.96 ms at 850 MHz (119,000
/// µW) and 43.38 ms at 450 MHz (scale 542, 42,361 µW).
#[test]
fn juno_r0_little_at_its_two_ends() {
    let fmax = simulate_on("juno-r0", "run-10ms-cpu0.json", "governor=performance");
    assert_eq!(runtime(&fmax), cpu_time(446, 1024));
    assert_eq!(fmax.energy[0].cpus, [0, 3, 4, 5]);
    assert_eq!(fmax.energy[0].energy_nj, 119_000 * cpu_time(446, 1024) / MS);
    let low = simulate_on("juno-r0", "run-10ms-cpu0.json", "governor=powersave");
    assert_eq!(runtime(&low), cpu_time(446, 542));
    assert_eq!(low.energy[0].energy_nj, 42_361 * cpu_time(446, 542) / MS);
    assert_eq!(low.energy[0].residency[0], (450_000, low.end_ns));
}

/// Juno r2's A72 (CPU 1, §7.3): half the highest frequency, twice the time:
/// 10 ms at 1200 MHz (540,000 µW: 5.4 mJ), 20 ms at 600 MHz (181,548 µW:
/// 3.631 mJ); the LITTLE domain, idle, costs nothing (no idle power).
#[test]
fn juno_r2_half_frequency_doubles_the_time() {
    let fmax = simulate_on("juno-r2", "run-10ms-cpu1.json", "governor=performance");
    assert_eq!(runtime(&fmax), 10 * MS);
    assert_eq!(fmax.energy[1].energy_nj, 5_400_000);
    let half = simulate_on("juno-r2", "run-10ms-cpu1.json", "governor=powersave");
    assert_eq!(runtime(&half), 20 * MS);
    assert_eq!(half.energy[1].energy_nj, 3_630_960);
    assert_eq!(half.energy[0].energy_nj, 0);
}

/// The Pixel-6-like board (§7.4, boards/pixel6/README.md): its LITTLE CPU
/// (capacity 160) at 1803 MHz does 10 ms of work in 64 ms, at 113,904 µW.
#[test]
fn pixel6_little_at_fmax() {
    let results = simulate_on("pixel6", "run-10ms-cpu0.json", "governor=performance");
    assert_eq!(runtime(&results), 64 * MS);
    assert_eq!(results.energy.len(), 3);
    assert_eq!(results.energy[0].energy_nj, 113_904 * 64);
}

/// schedutil (§6.1) moves the A72's frequency during the run, so the work
/// takes between its time at the highest and at the lowest frequency, and
/// the meter's busy time at each frequency adds up to the task's runtime.
#[test]
fn schedutil_moves_the_frequency_during_a_run() {
    let results = simulate_on("juno-r2", "run-10ms-cpu1.json", "governor=schedutil");
    let big = &results.energy[1];
    assert!(big.changes >= 1, "{big:?}");
    assert!(
        (10 * MS..20 * MS).contains(&runtime(&results)),
        "{}",
        runtime(&results)
    );
    let power = [181_548u64, 364_500, 540_000];
    let busy_energy: u64 = big
        .residency
        .iter()
        .zip(power)
        .map(|(&(_, ns), uw)| ns * uw / MS)
        .sum();
    // CPU 1 was busy the whole run, so its energy is the residency's.
    assert!(
        busy_energy.abs_diff(big.energy_nj) <= 3,
        "{busy_energy} vs {}",
        big.energy_nj
    );
}

/// The CPUs task `task` was switched in on, in order, with the times.
fn switch_ins(results: &Results, task: usize) -> Vec<(u64, usize)> {
    results
        .switches
        .iter()
        .filter(|s| s.next == Some(task))
        .map(|s| (s.time_ns, s.cpu))
        .collect()
}

const JUNO_LITTLE: [usize; 4] = [0, 3, 4, 5];

/// EAS (docs/eas.md, §5.4) on Juno r2: a small task (1 ms of work every
/// 16 ms) freed after 10 periods pinned to big CPU 1 moves to a LITTLE CPU
/// at its next wake-up (its first free period still starts on CPU 1): a
/// LITTLE CPU at 450 MHz costs 2,340 per unit of util against the A72's
/// 3,545 at 600 MHz (§7.3). Its 19 periods there each take 1 ms × 1024/383 ×
/// 1024/485 (450 MHz: scale 485) = 5,644,910 ns at 42,361 µW. Without EAS
/// the wake-up keeps it on its idle previous CPU, where it fits.
#[test]
fn eas_moves_a_small_task_from_big_to_little() {
    let per_period: u64 = (MS * 1024 * 1024).div_ceil(383 * 485);
    let eas = simulate_on("juno-r2", "eas-small-task-leaves-big.json", "");
    let ins = switch_ins(&eas, 0);
    // 30 periods and the wake-up after the last one, to exit; the 11th
    // switch-in ends the pinned phase's last sleep, so it is placed pinned.
    assert_eq!(ins.len(), 31);
    assert!(ins[..11].iter().all(|&(_, cpu)| cpu == 1), "{ins:?}");
    assert!(
        ins[11..].iter().all(|(_, cpu)| JUNO_LITTLE.contains(cpu)),
        "{ins:?}"
    );
    assert_eq!(eas.tasks[0].migrations, 1);
    let little = &eas.energy[0];
    let busy = eas.cpus.iter().map(|c| c.busy_ns).sum::<u64>() - eas.cpus[1].busy_ns;
    assert!(busy.abs_diff(19 * per_period) <= 19, "{busy}");
    assert!(little.energy_nj.abs_diff(42_361 * busy / MS) <= 1);
    let performance = simulate_on(
        "juno-r2",
        "eas-small-task-leaves-big.json",
        "sched_energy_aware=0",
    );
    assert!(switch_ins(&performance, 0).iter().all(|&(_, cpu)| cpu == 1));
    assert_eq!(performance.tasks[0].migrations, 0);
    assert_eq!(performance.energy[0].energy_nj, 0);
    let total = |r: &Results| r.energy.iter().map(|d| d.energy_nj).sum::<u64>();
    assert!(total(&eas) < total(&performance));
}

/// uclamp in placement and frequency (docs/eas.md, §3.4): in its second
/// phase "boosted" asks for util_min 1024, which no LITTLE CPU can give
/// ("fits, boost unmet"); from its first wake-up in that phase it runs on a
/// big CPU, whose domain schedutil raises to 1200 MHz for it (30 periods of
/// 1 ms of work at capacity 1024 and 1200 MHz). Its twin without a clamp
/// stays on LITTLE CPUs throughout.
#[test]
fn uclamp_min_moves_a_small_task_to_a_big_cpu_and_raises_its_frequency() {
    let results = simulate_on("juno-r2", "eas-uclamp-boost.json", "");
    let boosted = switch_ins(&results, 0);
    // 31 periods × 16 ms: the second phase's first run starts on the LITTLE
    // CPU (the clamp comes while it runs), where the task is now misfit
    // (boost unmet), so it moves to a big CPU by active balance during that
    // run or at its next wake-up; its other runs and the wake-up to exit
    // are on big CPUs.
    let boost_start = 31 * 16 * MS;
    let (before, after): (Vec<_>, Vec<_>) = boosted.iter().partition(|(t, _)| *t < boost_start);
    assert!(
        before.iter().all(|(_, cpu)| JUNO_LITTLE.contains(cpu)),
        "{before:?}"
    );
    assert!(JUNO_LITTLE.contains(&after[0].1), "{after:?}");
    let big = |&&(_, cpu): &&(u64, usize)| cpu == 1 || cpu == 2;
    let first_big = after.iter().position(|s| big(&s)).expect("a big CPU");
    assert!(first_big <= 2, "{after:?}");
    assert!(after[first_big..].iter().all(|s| big(&s)), "{after:?}");
    assert!(after.len() - first_big >= 31, "{after:?}");
    // Its twin starts on big CPU 1 (new tasks go to the least-loaded CPU)
    // with a new task's util (half the idle CPU's spare capacity, §2.5),
    // which fits no LITTLE CPU; once it has decayed to fit, EAS moves the
    // twin to a LITTLE CPU, within 10 periods, and it stays there.
    let plain = switch_ins(&results, 1);
    let moved = plain
        .iter()
        .position(|(_, cpu)| JUNO_LITTLE.contains(cpu))
        .expect("the twin reaches a LITTLE CPU");
    assert!(moved <= 10, "{plain:?}");
    assert!(
        plain[moved..]
            .iter()
            .all(|(_, cpu)| JUNO_LITTLE.contains(cpu)),
        "{plain:?}"
    );
    let top = results.energy[1].residency[2];
    assert_eq!(top.0, 1_200_000);
    assert!(top.1 >= 30 * MS, "{top:?}");
}

/// Each board's committed `sim.dtb`, which the simulator reads so that it needs
/// no device-tree compiler, is its `board.toml` and `cpus.dtsi` compiled now:
/// read by the kernel's reader, both give the same board (`cargo xtask
/// board-blobs` writes them again after a change).
#[test]
fn the_committed_board_trees_are_their_sources_compiled() {
    let boards = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../boards");
    let mut checked = 0;
    for entry in std::fs::read_dir(&boards).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !dir.join("board.toml").exists() {
            continue;
        }
        let Some(compiled) = fairway_sim::board::compile_merged(dir.to_str().unwrap()).unwrap()
        else {
            assert!(!dir.join(fairway_sim::board::SIM_BLOB).exists(), "{name}");
            continue;
        };
        let committed = std::fs::read(dir.join(fairway_sim::board::SIM_BLOB))
            .unwrap_or_else(|e| panic!("{name}: {e}: run cargo xtask board-blobs"));
        let read = |blob: &[u8]| format!("{:?}", fairway_devicetree::BoardInfo::parse(blob, 0, 0));
        assert_eq!(
            read(&committed),
            read(&compiled),
            "{name}: the committed sim.dtb is stale: run cargo xtask board-blobs"
        );
        checked += 1;
    }
    assert_eq!(
        checked, 3,
        "juno-r0, juno-r2 and pixel6 have their own CPUs"
    );
}
