//! The demo's end-of-run summary printed over defmt: per-CPU and per-task
//! runtime (the workloads' `report:` lines are [`super::report`]'s).

use core::fmt::Write;
use core::sync::atomic::Ordering;

use heapless::String;

use crate::platform::percpu;
use crate::tasks::{TaskState, for_each_task, idle_task_id, task};

/// Prints each online CPU's busy and idle time and each task's runtime,
/// measured over the `elapsed_ns` since `start_ns`.
pub fn print_runtime_report(elapsed_ns: u64) {
    defmt::println!("per-CPU (over {=u64} us):", elapsed_ns / 1000);
    defmt::println!("  cpu    busy_us    idle_us  switches  interrupts  ticks");
    for cpu in 0..percpu::nr_cpus() {
        let slot = percpu::of(cpu);
        if !slot.online.load(Ordering::Acquire) {
            continue;
        }
        let idle = task(idle_task_id(cpu))
            .sum_exec_runtime
            .load(Ordering::Relaxed);
        let mut line: String<160> = String::new();
        let _ = write!(
            line,
            "  {:>3} {:>10} {:>10} {:>9} {:>11} {:>6}",
            cpu,
            elapsed_ns.saturating_sub(idle) / 1000,
            idle / 1000,
            slot.context_switches.load(Ordering::Relaxed),
            slot.interrupts.load(Ordering::Relaxed),
            slot.ticks.load(Ordering::Relaxed)
        );
        defmt::println!("{=str}", line.as_str());
    }
    defmt::println!("per-task:");
    defmt::println!(
        "  id  name              cpu  runtime_us  switches  wakeups  max_wakeup_latency_us"
    );
    for_each_task(|id, slot| {
        let state = slot.state();
        if state == TaskState::Free {
            return;
        }
        let mut line: String<160> = String::new();
        let _ = write!(
            line,
            "  {:>3} {:<16} {:>4} {:>11} {:>9} {:>8} {:>22}",
            id.0,
            slot.name().as_str(),
            slot.cpu(),
            slot.sum_exec_runtime.load(Ordering::Relaxed) / 1000,
            slot.switches_in.load(Ordering::Relaxed),
            slot.wakeups.load(Ordering::Relaxed),
            slot.wakeup_latency_max.load(Ordering::Relaxed) / 1000
        );
        defmt::println!("{=str}", line.as_str());
    });
}
