//! sched-pipe (Linux's `perf bench sched pipe`): two tasks pass a counter back
//! and forth through two pipes; every value is checked. The figure is round trips
//! per second, which under QEMU icount is per second of instructions (1 ns each).
//!
//! Options (command line): `loops=N` (round trips, default 100000), `pinned=1`
//! (both tasks on CPU 0; default: CPU 0 and CPU 1), `depth=D` (both tasks in a
//! chain of D nested task groups, 0..=3).

use core::sync::atomic::{AtomicU64, Ordering};

use spin::Once;

use super::report;
use crate::ExitCode;
use crate::arch::timer::now_ns;
use crate::platform::percpu;
use crate::scheduling::groups::create_group_chain;
use crate::scheduling::{Completion, Pipe, spawn};
use crate::tasks::TaskParams;
use fairway_sched::boot_options::SchedPipeOptions;

static PIPES: Once<(Pipe, Pipe)> = Once::new();
static LOOPS: AtomicU64 = AtomicU64::new(0);
static ELAPSED: AtomicU64 = AtomicU64::new(0);
static DONE: Completion = Completion::new();

fn ping(_: usize) {
    let (there, back) = PIPES.get().expect("pipes");
    let loops = LOOPS.load(Ordering::Relaxed);
    let start = now_ns();
    for value in 0..loops {
        there.write(&value.to_le_bytes());
        let mut reply = [0u8; 8];
        back.read_exact(&mut reply);
        assert_eq!(
            u64::from_le_bytes(reply),
            value ^ u64::MAX,
            "sched-pipe reply"
        );
    }
    ELAPSED.store(now_ns() - start, Ordering::Relaxed);
    DONE.complete();
}

fn pong(_: usize) {
    let (there, back) = PIPES.get().expect("pipes");
    let loops = LOOPS.load(Ordering::Relaxed);
    for expected in 0..loops {
        let mut message = [0u8; 8];
        there.read_exact(&mut message);
        let value = u64::from_le_bytes(message);
        assert_eq!(value, expected, "sched-pipe message");
        back.write(&(value ^ u64::MAX).to_le_bytes());
    }
    DONE.complete();
}

/// Runs sched-pipe with the command line's options and prints its report lines.
pub fn run(options: &SchedPipeOptions) -> ExitCode {
    match run_inner(options) {
        Ok(()) => ExitCode::Success,
        Err(code) => code,
    }
}

fn run_inner(options: &SchedPipeOptions) -> Result<(), ExitCode> {
    let SchedPipeOptions {
        loops,
        pinned,
        depth,
        quota_us,
    } = *options;
    let second_cpu = if pinned || percpu::nr_online() < 2 {
        0
    } else {
        1
    };
    LOOPS.store(loops, Ordering::Relaxed);
    PIPES.call_once(|| (Pipe::new(), Pipe::new()));
    let (top, group) = create_group_chain(depth as usize).map_err(|error| {
        defmt::error!(
            "sched-pipe: cannot create the groups: {}",
            defmt::Debug2Format(&error)
        );
        ExitCode::Failure
    })?;
    if quota_us > 0 {
        // The chain's top group is limited (issue 12's cost figure): the
        // accounting runs at every update_curr of the pair's levels.
        let settings = fairway_sched::bandwidth::Bandwidth {
            period: fairway_sched::bandwidth::DEFAULT_PERIOD,
            quota: Some(quota_us * 1000),
            burst: 0,
        };
        crate::scheduling::bandwidth::set_group_bandwidth(top, settings, now_ns()).map_err(
            |error| {
                defmt::error!(
                    "sched-pipe: cpu.max {=u64}: {}",
                    quota_us,
                    defmt::Debug2Format(&error)
                );
                ExitCode::Failure
            },
        )?;
    }
    let spawn_in_group = |name: &str, entry: fn(usize), cpu: usize| {
        let params = TaskParams {
            group,
            affinity: if pinned {
                fairway_sched::task::CpuMask::only(fairway_sched::task::CpuId(0))
            } else {
                fairway_sched::task::CpuMask::ALL
            },
            ..TaskParams::default()
        };
        spawn(name, entry, 0, cpu, params).map_err(|error| {
            defmt::error!("sched-pipe: {}", error);
            ExitCode::Failure
        })
    };
    crate::observe::costs::reset();
    crate::scheduling::cpufreq::restart_meters();
    crate::scheduling::observe::trace_start(now_ns());
    let a = spawn_in_group("pipe-a", ping, 0)?;
    let b = spawn_in_group("pipe-b", pong, second_cpu)?;
    DONE.wait_for(2);
    crate::scheduling::observe::trace_stop(now_ns());
    let energy = crate::scheduling::cpufreq::metrics(&crate::scheduling::cpufreq::report());
    let elapsed = ELAPSED.load(Ordering::Relaxed).max(1);
    let ops_per_second = loops * 1_000_000_000 / elapsed;
    defmt::println!(
        "sched-pipe: {=u64} round trips, every value checked, {=u64} ns each, {=u64} ops/s (depth {=u64}, {=str})",
        loops,
        elapsed / loops.max(1),
        ops_per_second,
        depth,
        if pinned {
            "pinned to CPU 0"
        } else {
            "CPU 0 <-> CPU 1"
        }
    );
    let mut extra: heapless::String<32> = heapless::String::new();
    let _ = core::fmt::write(
        &mut extra,
        format_args!(
            "depth{depth}-{}",
            if pinned { "pinned" } else { "two-cpus" }
        ),
    );
    if quota_us > 0 {
        let _ = core::fmt::write(&mut extra, format_args!("-quota{quota_us}us"));
    }
    crate::scheduling::observe::print_trace(&[]);
    let config = report::config_label(&extra);
    // With DVFS, the energy meter's figures over the run (docs/boards.md).
    let mut metrics: alloc::vec::Vec<(&str, u64)> =
        alloc::vec![("ops_per_second", ops_per_second), ("round_trips", loops)];
    metrics.extend(energy.iter().map(|(name, value)| (name.as_str(), *value)));
    report::print(&report::RunResults {
        name: "sched-pipe",
        config: &config,
        wall_ns: elapsed,
        tasks: &[(a, 0), (b, 0)],
        metrics: &metrics,
        window: None,
        groups: &[],
    });
    Ok(())
}
