//! EAS against the reference's worked vector (§5.2) and against choices
//! worked by hand from Juno r0's energy model (§7.2: A53 costs 1,794 /
//! 1,932 / 2,162 / 2,411 / 2,668 at performance 236 / 301 / 367 / 406 / 446;
//! A57 costs 3,836 / 4,119 / 4,616 / 5,140 / 5,693 at 418 / 581 / 744 / 884
//! / 1,024).

use super::enabled::DomainState;
use super::*;
use crate::balance::CpuSnapshot;
use crate::energy::{OperatingPoint, PerfDomainModel};
use crate::schedutil::Governor;
use crate::task::{CpuId, CpuMask};
use crate::topology::Topology;
use alloc::vec::Vec;

use crate::topology::test_boards::juno_r0;

const LITTLE: CpuMask = CpuMask(0b11_1001);
const BIG: CpuMask = CpuMask(0b00_0110);

fn model(table: &[(u64, u64)], coefficient: u32, max_cap: u64) -> PerfDomainModel {
    let points: Vec<OperatingPoint> = table
        .iter()
        .map(|&(mhz, mv)| OperatingPoint {
            hz: mhz * 1_000_000,
            microvolt: mv * 1000,
        })
        .collect();
    PerfDomainModel::from_operating_points(&points, coefficient, max_cap).unwrap()
}

/// Juno r0's two performance domains with their §7.2 energy models.
fn juno_r0_domains() -> Vec<EnergyDomain> {
    alloc::vec![
        EnergyDomain {
            cpus: LITTLE,
            model: model(
                &[(450, 820), (575, 850), (700, 900), (775, 950), (850, 1000)],
                140,
                446,
            ),
        },
        EnergyDomain {
            cpus: BIG,
            model: model(
                &[(450, 820), (625, 850), (800, 900), (950, 950), (1100, 1000)],
                530,
                1024,
            ),
        },
    ]
}

/// Every CPU idle, with util `utils[i]` (util_avg = runnable_avg, no util_est).
fn snapshots(topology: &Topology, utils: &[u64]) -> Vec<CpuSnapshot> {
    (0..topology.nr_cpus())
        .map(|i| {
            let cpu = CpuId(i as u16);
            let util = utils.get(i).copied().unwrap_or(0);
            CpuSnapshot {
                cpu,
                capacity: topology.capacity_orig(cpu),
                nr_running: 0,
                idle: true,
                load_avg: util,
                util_avg: util,
                runnable_avg: util,
                util_est: 0,
                misfit_task_load: 0,
                uclamp: [0, 1024],
                uclamp_idle: true,
                rt_runnable: false,
            }
        })
        .collect()
}

fn task(prev: u16, util: u64) -> WakingTask {
    WakingTask {
        prev_cpu: CpuId(prev),
        affinity: CpuMask(0b11_1111),
        util_avg: util,
        util_est: util,
        uclamp: [0, 1024],
        uclamp_used: false,
    }
}

/// §5.2's worked vector: Juno r0's LITTLE domain with CPU utils
/// [100, 50, 0, 0] costs 269,100 without a task of util 150 and 648,600
/// with it on cpu0 (700 MHz, cost 2,162, busy 300): the task adds 379,500.
#[test]
fn compute_energy_matches_the_worked_vector() {
    let topology = juno_r0();
    let domains = juno_r0_domains();
    // cpu0, cpu3, cpu4, cpu5 are the LITTLE domain's four CPUs.
    let snapshots = snapshots(&topology, &[100, 0, 0, 50, 0, 0]);
    // The task last ran on a big CPU, so no LITTLE CPU counts it yet.
    let task = task(1, 150);
    let little = &domains[0];
    let env = energy_env::EnergyEnv::new(&topology, &snapshots, little, &task);
    assert_eq!(env.pd_busy_time, 150);
    assert_eq!(env.pd_cap, 4 * 446);
    let without = compute_energy(&topology, &snapshots, little, &task, &env, None);
    let with = compute_energy(&topology, &snapshots, little, &task, &env, Some(CpuId(0)));
    assert_eq!(without, 269_100);
    assert_eq!(with, 648_600);
    assert_eq!(with - without, 379_500);
}

/// A sleeping task's util_avg still counts on its previous CPU, not its
/// util_est: priced elsewhere it leaves, priced there it is not added twice.
#[test]
fn cpu_util_moves_the_task_between_cpus() {
    let topology = juno_r0();
    let snapshots = snapshots(&topology, &[300, 0, 0, 0, 0, 0]);
    let task = task(0, 200);
    let util = |cpu: u16, dst: Option<u16>| {
        energy_env::cpu_util(
            &snapshots[usize::from(cpu)],
            topology.capacity_orig(CpuId(cpu)),
            &task,
            dst.map(CpuId),
            false,
        )
    };
    assert_eq!(util(0, None), 100, "300 less the task's 200");
    assert_eq!(util(0, Some(0)), 300, "still 300, its util_est 200 below");
    assert_eq!(util(3, Some(3)), 200, "the task joins an empty CPU");
    assert_eq!(util(3, Some(0)), 0);
    assert_eq!(util(1, Some(1)), 200);
}

/// A small task (util 100, still counted on its previous CPU) last on a big
/// CPU, every CPU idle: on a LITTLE
/// CPU it adds 100 × 1,794 = 179,400 (450 MHz covers 125), on its big CPU
/// 100 × 3,836 = 383,600. It moves to the LITTLE CPU with the most spare
/// capacity, the first one (all tie at 346).
#[test]
fn a_small_task_moves_to_a_little_cpu() {
    let topology = juno_r0();
    let choice = find_energy_efficient_cpu(
        &topology,
        &juno_r0_domains(),
        &snapshots(&topology, &[0, 100, 0, 0, 0, 0]),
        &task(1, 100),
        CpuId(1),
    );
    assert_eq!(choice.cpu, Some(CpuId(0)));
    assert_eq!(choice.prev_delta, Some(383_600));
    assert_eq!(choice.delta, Some(179_400));
}

/// The same task last on a LITTLE CPU stays: the big domain's candidate adds
/// more, and no other LITTLE CPU has more spare capacity than its own.
#[test]
fn a_small_task_on_a_little_cpu_stays() {
    let topology = juno_r0();
    let choice = find_energy_efficient_cpu(
        &topology,
        &juno_r0_domains(),
        &snapshots(&topology, &[0, 0, 0, 0, 100, 0]),
        &task(4, 100),
        CpuId(0),
    );
    assert_eq!(choice.cpu, Some(CpuId(4)));
    assert_eq!(choice.prev_delta, Some(179_400));
    assert_eq!(choice.delta, Some(179_400));
}

/// The LITTLE candidate is the CPU with the most spare capacity: with utils
/// 200, 300 and 100 on cpu0, cpu3 and cpu4, and cpu5 at 20, the task (util
/// 60, from a big CPU) goes to cpu5. Its domain's busiest CPU (300, boosted
/// 375) sets 775 MHz with or without it, so the task adds 60 × 2,411.
#[test]
fn the_candidate_is_the_cpu_with_most_spare_capacity() {
    let topology = juno_r0();
    let choice = find_energy_efficient_cpu(
        &topology,
        &juno_r0_domains(),
        &snapshots(&topology, &[200, 0, 0, 300, 100, 20]),
        &task(2, 60),
        CpuId(2),
    );
    assert_eq!(choice.cpu, Some(CpuId(5)));
    assert_eq!(choice.delta, Some(60 * 2_411));
    // On its big CPU: 75 → 450 MHz, 60 × 3,836.
    assert_eq!(choice.prev_delta, Some(60 * 3_836));
}

/// A task that fits no LITTLE CPU (util 400: 400 × 1280 ≥ 446 × 1024) goes
/// to the big CPU with the most spare capacity even from a LITTLE one,
/// because it fits there (best_fits 1 > prev_fits −1).
#[test]
fn a_big_task_moves_to_a_big_cpu() {
    let topology = juno_r0();
    let choice = find_energy_efficient_cpu(
        &topology,
        &juno_r0_domains(),
        &snapshots(&topology, &[400, 300, 0, 0, 0, 0]),
        &task(0, 400),
        CpuId(0),
    );
    assert_eq!(choice.cpu, Some(CpuId(2)), "cpu2 has more spare than cpu1");
}

/// uclamp_min 1024 makes a util-50 task miss its boost on every LITTLE CPU
/// (fits −1: 1024 > 446) and fit on a big one (§3.4): it moves to a big CPU
/// whatever the energy (the highest A57 state, 50 × 5,693, against 50 ×
/// 2,668 on its LITTLE CPU at 850 MHz, where the boost caps at 446).
#[test]
fn uclamp_min_moves_a_small_task_to_a_big_cpu() {
    let topology = juno_r0();
    let mut small = task(0, 50);
    small.uclamp = [1024, 1024];
    small.uclamp_used = true;
    let idle = snapshots(&topology, &[50, 0, 0, 0, 0, 0]);
    let choice = find_energy_efficient_cpu(&topology, &juno_r0_domains(), &idle, &small, CpuId(0));
    assert_eq!(choice.cpu, Some(CpuId(1)));
    assert_eq!(choice.prev_delta, Some(50 * 2_668));
    assert_eq!(choice.delta, Some(50 * 5_693));
    // Without the clamp it stays on its LITTLE CPU (62 → 450 MHz).
    small.uclamp = [0, 1024];
    let choice = find_energy_efficient_cpu(&topology, &juno_r0_domains(), &idle, &small, CpuId(0));
    assert_eq!(choice.cpu, Some(CpuId(0)));
    assert_eq!(choice.delta, Some(50 * 1_794));
}

/// A task with neither utilization nor boost stays where it was (§5.4 step 5).
#[test]
fn a_task_without_utilization_stays() {
    let topology = juno_r0();
    let choice = find_energy_efficient_cpu(
        &topology,
        &juno_r0_domains(),
        &snapshots(&topology, &[0; 6]),
        &task(2, 0),
        CpuId(0),
    );
    assert_eq!(choice.cpu, Some(CpuId(2)));
    assert_eq!(choice.prev_delta, None);
}

/// No asymmetric domain, or no performance domain: EAS has no say.
#[test]
fn no_choice_without_asymmetry_or_domains() {
    let symmetric = Topology::symmetric(4, 4).unwrap();
    let domains = [EnergyDomain {
        cpus: CpuMask(0b1111),
        model: model(&[(1000, 1000)], 100, 1024),
    }];
    let choice = find_energy_efficient_cpu(
        &symmetric,
        &domains,
        &snapshots(&symmetric, &[0; 4]),
        &task(0, 100),
        CpuId(0),
    );
    assert_eq!(choice.cpu, None);
    let topology = juno_r0();
    let choice = find_energy_efficient_cpu(
        &topology,
        &[],
        &snapshots(&topology, &[0; 6]),
        &task(0, 100),
        CpuId(0),
    );
    assert_eq!(choice.cpu, None);
}

/// The affinity limits the candidates: pinned to the big CPUs, the small task
/// goes to the big CPU with the most spare capacity.
#[test]
fn the_affinity_limits_the_candidates() {
    let topology = juno_r0();
    let mut pinned = task(0, 100);
    pinned.affinity = BIG;
    let choice = find_energy_efficient_cpu(
        &topology,
        &juno_r0_domains(),
        &snapshots(&topology, &[100, 200, 0, 0, 0, 0]),
        &pinned,
        CpuId(0),
    );
    assert_eq!(choice.cpu, Some(CpuId(2)));
}

/// §5.3's conditions, each in turn.
#[test]
fn eas_possible_checks_each_condition() {
    let topology = juno_r0();
    let schedutil = |cpus| DomainState {
        cpus,
        governor: Governor::Schedutil,
        energy_model: true,
    };
    let domains = [schedutil(LITTLE), schedutil(BIG)];
    let inputs = |energy_aware, topology, domains| EasInputs {
        energy_aware,
        topology,
        domains,
    };
    assert_eq!(eas_possible(&inputs(true, &topology, &domains)), Ok(()));
    assert_eq!(
        eas_possible(&inputs(false, &topology, &domains)),
        Err(EasUnavailable::SwitchedOff)
    );
    let symmetric = Topology::symmetric(6, 6).unwrap();
    assert_eq!(
        eas_possible(&inputs(true, &symmetric, &domains)),
        Err(EasUnavailable::SymmetricCapacities)
    );
    assert_eq!(
        eas_possible(&inputs(true, &topology, &domains[..1])),
        Err(EasUnavailable::NotFrequencyInvariant { cpus: BIG })
    );
    let performance = [
        schedutil(LITTLE),
        DomainState {
            governor: Governor::Performance,
            ..schedutil(BIG)
        },
    ];
    let error = eas_possible(&inputs(true, &topology, &performance)).unwrap_err();
    assert_eq!(
        error,
        EasUnavailable::GovernorNotSchedutil {
            domain: 1,
            governor: Governor::Performance
        }
    );
    assert_eq!(
        alloc::format!("{error}"),
        "perf domain 1 is governed by performance: schedutil is mandatory for EAS"
    );
    let no_model = [
        DomainState {
            energy_model: false,
            ..schedutil(LITTLE)
        },
        schedutil(BIG),
    ];
    assert_eq!(
        eas_possible(&inputs(true, &topology, &no_model)),
        Err(EasUnavailable::NoEnergyModel { domain: 0 })
    );
}

/// A CPU with no spare capacity can still be the candidate when only the
/// clamps make the task fit: a util-100
/// task capped at 300, woken from big CPU 1, with every LITTLE CPU at util
/// 400 under a run-queue uclamp_max of 300 too. On a LITTLE CPU 500 is
/// capped at 446 (no spare) and does not fit, but uclamp_max 300 ≤ 446
/// does (§3.4). The LITTLE domain's request is its CPUs' cap, 300 → 575 MHz
/// (performance 301, cost 1,932), with or without the task, so the task adds
/// 100 × 1,932; on its idle big CPU its own cap leaves 125 → 450 MHz, 100 ×
/// 3,836. It moves to the first LITTLE CPU. (Linux's −1 start of
/// `max_spare_cap` matters only for a CPU that misses the boost with no spare
/// capacity, which needs `capacity_of` below the arch capacity: Fairway
/// models no RT or IRQ pressure, so no test can tell the start apart.)
#[test]
fn a_cpu_without_spare_capacity_can_be_the_candidate() {
    let topology = juno_r0();
    let mut capped = task(1, 100);
    capped.uclamp = [0, 300];
    capped.uclamp_used = true;
    let mut snapshots = snapshots(&topology, &[400, 100, 0, 400, 400, 400]);
    for cpu in [0, 3, 4, 5] {
        snapshots[cpu].uclamp = [0, 300];
        snapshots[cpu].uclamp_idle = false;
    }
    let choice =
        find_energy_efficient_cpu(&topology, &juno_r0_domains(), &snapshots, &capped, CpuId(1));
    assert_eq!(choice.cpu, Some(CpuId(0)));
    assert_eq!(choice.delta, Some(100 * 1_932));
    assert_eq!(choice.prev_delta, Some(100 * 3_836));
}

/// Every CPU too full for the task (`util_fits_cpu` 0 everywhere: 400 + 100
/// on a LITTLE CPU and 900 + 100 on a big one, both above 80 % of capacity,
/// and the default uclamp_max of 1024 rescues neither): Linux's feec keeps
/// the previous CPU, and says that nothing fit, which the 2024 RFC's
/// option turns into "let the wake-up path decide" (§5.6).
#[test]
fn nothing_fits_keeps_the_previous_cpu_and_says_so() {
    let topology = juno_r0();
    let full = snapshots(&topology, &[400, 900, 900, 400, 400, 400]);
    let choice = find_energy_efficient_cpu(
        &topology,
        &juno_r0_domains(),
        &full,
        &task(0, 100),
        CpuId(0),
    );
    assert_eq!(choice.cpu, Some(CpuId(0)));
    assert!(choice.nothing_fits);
    assert_eq!((choice.prev_delta, choice.delta), (None, None));
    // One big CPU with room: it fits there, and feec says so.
    let room = snapshots(&topology, &[400, 900, 0, 400, 400, 400]);
    let choice = find_energy_efficient_cpu(
        &topology,
        &juno_r0_domains(),
        &room,
        &task(0, 100),
        CpuId(0),
    );
    assert_eq!(choice.cpu, Some(CpuId(2)));
    assert!(!choice.nothing_fits);
}

/// The wake-up of a task of util ~600 on Juno r0 while the root domain is
/// overutilized, asked of its previous CPU's core (cpu0, a LITTLE CPU, busy):
/// - Linux (`eas_overutilized=0`): feec does not run (no cost measured);
/// - the 2024 RFC (`eas_overutilized=1`) with room on big cpu2: feec runs
///   and places it there (the only CPU where 600 fits);
/// - the RFC with no CPU that fits, but cpu2 idle (its blocked util 900
///   still counted): feec gives up, and the wake-up path's
///   `select_idle_capacity` takes the idle CPU where the task's own util
///   fits, cpu2, where Linux's feec (run when the flag is not yet set)
///   keeps cpu0.
#[test]
fn the_rfc_option_runs_feec_while_overutilized() {
    use crate::cpu_core::{CpuCore, FeecOutcome, Leaving};
    use crate::run_queue::{PolicyKind, RunQueue};
    use crate::task::{TaskId, TaskParams};
    const MS: u64 = 1_000_000;
    fn counter() -> u64 {
        7
    }
    let topology = juno_r0();
    let domains = juno_r0_domains();
    let kind = PolicyKind::Eevdf(crate::fair::EevdfTunables::for_cpus(1, 4 * MS));
    let mut core = CpuCore::new(0, RunQueue::new(kind, 8), 8, false);
    core.set_cost_counter(Some(counter));
    let _ = core
        .wake_up_new_task(TaskId(1), &TaskParams::default(), 0)
        .unwrap();
    let _ = core.schedule(0, Leaving::Runnable);
    let _ = core.schedule(10 * MS, Leaving::Sleeping);
    let signals = core.run_queue().task_signals(TaskId(1));
    // A new task starts at half the idle CPU's capacity (512) and runs 10 ms:
    // 512 + 512 × (1 − y^10) ≈ 612 (§2), which fits only a big CPU.
    assert!(
        (580..=640).contains(&signals.util_avg.max(signals.util_est)),
        "{signals:?}"
    );
    let mut busy = snapshots(&topology, &[400, 900, 0, 400, 400, 400]);
    for cpu in [0, 1, 3, 4, 5] {
        busy[cpu].idle = false;
        busy[cpu].nr_running = 1;
    }
    let wake_when = |snapshots: &[CpuSnapshot], overutilized: bool, when_overutilized: bool| {
        core.select_task_rq(
            TaskId(1),
            CpuId(0),
            CpuMask(0b11_1111),
            0,
            &topology,
            snapshots,
            Some(EnergyContext {
                domains: &domains,
                overutilized,
                when_overutilized,
            }),
        )
    };
    let wake = |snapshots: &[CpuSnapshot], when_overutilized| {
        wake_when(snapshots, true, when_overutilized)
    };
    let linux = wake(&busy, false);
    assert_eq!(linux.feec_cost, None, "Linux skips feec when overutilized");
    assert_eq!(linux.feec, FeecOutcome::NotRun);
    let rfc = wake(&busy, true);
    assert_eq!((rfc.cpu, rfc.feec_cost), (CpuId(2), Some(0)));
    assert_eq!(rfc.feec, FeecOutcome::Placed);
    let mut full = busy.clone();
    full[2].util_avg = 900;
    full[2].runnable_avg = 900;
    let rfc = wake(&full, true);
    assert_eq!((rfc.cpu, rfc.feec_cost), (CpuId(2), Some(0)));
    assert_eq!(rfc.feec, FeecOutcome::Declined);
    // Not overutilized (the flag lags), the same snapshots: Linux's feec
    // keeps the previous CPU when nothing fits.
    let linux = wake_when(&full, false, false);
    assert_eq!((linux.cpu, linux.feec_cost), (CpuId(0), Some(0)));
}

/// §5.4 step 4: wake-up placement ages a sleeping task's PELT to its run
/// queue's last update before reading it. A task of util ~607 (half of 1024
/// at its start, then 10 ms of running) that slept 190 ms while its run
/// queue's signals were brought up to date has util 607 × y^185 ≈ 11
/// (y^32 = 1/2); util_est, which does not decay in sleep, keeps its value
/// (`task_util_est` is the larger of the two).
#[test]
fn placement_reads_a_sleeping_task_at_its_decayed_util() {
    use crate::cpu_core::{CpuCore, Leaving};
    use crate::run_queue::{PolicyKind, RunQueue};
    use crate::task::{TaskId, TaskParams};
    const MS: u64 = 1_000_000;
    let kind = PolicyKind::Eevdf(crate::fair::EevdfTunables::for_cpus(1, 4 * MS));
    let mut core = CpuCore::new(0, RunQueue::new(kind, 8), 8, false);
    let _ = core
        .wake_up_new_task(TaskId(1), &TaskParams::default(), 0)
        .unwrap();
    let _ = core.schedule(0, Leaving::Runnable);
    let _ = core.schedule(10 * MS, Leaving::Sleeping);
    let before = core.run_queue().task_signals_synced(TaskId(1));
    core.update_blocked_averages(200 * MS);
    let stale = core.run_queue().task_signals(TaskId(1));
    let synced = core.run_queue().task_signals_synced(TaskId(1));
    assert_eq!(before.util_avg, stale.util_avg, "nothing to age yet");
    assert!((580..=640).contains(&stale.util_avg), "{stale:?}");
    assert!((8..=14).contains(&synced.util_avg), "{synced:?}");
    assert!(synced.load_avg < stale.load_avg / 32);
    assert_eq!(synced.util_est, stale.util_est);
}
