//! Priority inheritance in the kernel: the lock model
//! (`fairway_contract::scenario::resources`) decides which owner runs at which
//! lent priority; this carries each decision out on the CPU that owns the task
//! (Linux's `rt_mutex_setprio`, `docs/priority-inheritance.md`).
//!
//! The wanted boost is kept in the task's slot as well as in its run queue: a
//! task caught between two CPUs by a wake-up (`detach_for_wakeup` has taken it
//! off one run queue, the other has not attached it yet) is known to neither,
//! and the CPU that attaches it applies the boost (`attach_pending`).

use core::sync::atomic::Ordering;

use fairway_sched::task::TaskId;

use super::run_queue::{CpuRunQueue, run_queue};
use crate::arch::cpu::this_cpu;
use crate::arch::timer::now_ns;
use crate::platform::irq::{Ipi, send_ipi};
use crate::platform::percpu;
use crate::tasks::table::NO_BOOST;
use crate::tasks::task;

/// Runs `id` as an RT task of `boost` (`Some`) or at its own policy (`None`),
/// and reschedules its CPU when the change asks for it.
pub fn rt_mutex_setprio(id: TaskId, boost: Option<u8>) {
    task(id)
        .pi_priority
        .store(boost.unwrap_or(NO_BOOST), Ordering::SeqCst);
    loop {
        let cpu = task(id).cpu();
        let mut rq = run_queue(cpu).lock();
        if task(id).cpu() != cpu {
            continue; // moved while we took the lock: follow it
        }
        apply(&mut rq, cpu, id);
        return;
    }
}

/// Brings `id`'s run-queue priority to the one its slot wants (the run queue
/// of `cpu` locked). An unknown task is in transit: its attach applies it.
pub fn apply(rq: &mut CpuRunQueue, cpu: usize, id: TaskId) {
    let wanted = match task(id).pi_priority.load(Ordering::SeqCst) {
        NO_BOOST => None,
        priority => Some(priority),
    };
    if rq.queue().task_class(id).is_none() || rq.queue().pi_priority(id) == wanted {
        return;
    }
    let Ok(decision) = rq.core.rt_mutex_setprio(id, wanted, now_ns()) else {
        return;
    };
    if decision.resched {
        percpu::of(cpu).need_resched.store(true, Ordering::Relaxed);
        if cpu != this_cpu() {
            send_ipi(cpu, Ipi::Reschedule);
        }
    }
}
