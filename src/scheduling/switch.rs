//! The switch (Linux's `__schedule` and `finish_task_switch`): the pick on
//! this CPU and the context switch to the task picked; the preemption points
//! that lead to it (a voluntary one after a wake-up, the return from an
//! interrupt, a yield); and the idle loop.
//!
//! `schedule()` keeps its CPU's run-queue lock across the switch; the task
//! switched to releases it in [`finish_task_switch`], and only then clears the
//! `on_cpu` flag of the task switched away from, so a task is never resumed on
//! one CPU before its registers are saved on another.

use core::sync::atomic::{AtomicU64, Ordering};

use fairway_sched::cpu_core::Leaving;
use fairway_sched::task::TaskId;

use super::observe::{explain_pick, trace_group_bandwidth, trace_signals};
use super::run_queue::{CpuRunQueue, carry_out_hrtick, run_queue};
use super::{balance, cpufreq, load};
use crate::arch::cpu::{IrqState, irq_disable, irq_enable, this_cpu, wait_for_interrupt};
use crate::arch::timer::now_ns;
use crate::observe::costs::{self, Op};
use crate::observe::{explain, switches, trace};
use crate::platform::percpu;
use crate::tasks::table::account_runtime_of;
use crate::tasks::{TaskState, task};

/// Picks the next task on this CPU and switches to it. Call with no lock held;
/// IRQs may be masked or not (the state is restored on return).
pub fn schedule() {
    // IRQs are masked before the CPU number is read: an interrupt between the
    // two could preempt this task, let it migrate and resume it on another CPU,
    // which would then lock and switch on the first CPU's run queue and release
    // its own in `finish_task_switch`: the first CPU's lock was never released
    // (found as a hang of hackbench-4x10x50, every CPU spinning on run-queue
    // locks).
    let irq_state = crate::arch::cpu::irq_save();
    let cpu = this_cpu();
    let mut rq = run_queue(cpu).lock_masked(irq_state);
    let irq_state = rq.irq_state();
    let now = now_ns();
    let previous = rq.current();
    let previous_task = task(previous);
    account_runtime_of(previous_task, now);
    percpu::of(cpu).need_resched.store(false, Ordering::Relaxed);
    // A task that set itself sleeping (or dead) and was not woken since
    // leaves the run queue now, as Linux's `__schedule` dequeues it.
    let leaving = match previous_task.state() {
        _ if previous == rq.idle || !previous_task.on_rq.load(Ordering::Relaxed) => {
            Leaving::Runnable
        }
        TaskState::Running => Leaving::Runnable,
        TaskState::Dead => Leaving::Dead,
        _ => Leaving::Sleeping,
    };
    if leaving != Leaving::Runnable {
        previous_task.on_rq.store(false, Ordering::Relaxed);
    } else {
        // An active balance asked to push the running task away: it leaves
        // the run queue now and moves once switched out.
        balance::take_push(cpu, &mut rq, previous, now);
    }
    let switch = rq.core.schedule(now, leaving);
    costs::record_op_costs(cpu, || rq.core.take_op_costs());
    if cpufreq::active() {
        let context_switch = switch.next.unwrap_or(rq.idle) != previous;
        cpufreq::governor_call(cpu, &mut rq, now, context_switch);
    }
    if previous != rq.idle && previous_task.on_rq.load(Ordering::Relaxed) {
        previous_task.wait_start.store(now, Ordering::Relaxed);
    }
    let next = switch.next.unwrap_or(rq.idle);
    if explain::explaining() {
        explain_pick(cpu, &rq, now, previous, next);
    }
    trace_group_bandwidth(now, cpu, rq.core.run_queue());
    let next_task = task(next);
    next_task.exec_start.store(now, Ordering::Relaxed);
    carry_out_hrtick(switch.hrtick, cpu);
    load::publish(cpu, &rq);
    if next == previous {
        return;
    }
    if next != rq.idle {
        let waited = now.saturating_sub(next_task.wait_start.load(Ordering::Relaxed));
        add_locked(&next_task.wait_total, waited);
    }
    let woken_at = next_task.woken_at.load(Ordering::Relaxed);
    if woken_at != 0 {
        next_task.woken_at.store(0, Ordering::Relaxed);
        let latency = now.saturating_sub(woken_at);
        next_task
            .last_wakeup_latency
            .store(latency, Ordering::Relaxed);
        add_locked(&next_task.wakeup_latency_total, latency);
        let max = next_task.wakeup_latency_max.load(Ordering::Relaxed);
        if latency > max {
            next_task
                .wakeup_latency_max
                .store(latency, Ordering::Relaxed);
        }
        if let Some(stats) = next_task.latency.lock().as_mut() {
            stats.record(latency);
        }
    }
    add_locked(&next_task.switches_in, 1);
    if trace::recording() {
        trace_switch(cpu, &rq, now, previous, next, leaving);
    }
    switches::record(switches::Switch {
        time_ns: now,
        cpu: cpu as u16,
        previous,
        next,
    });
    next_task.on_cpu.store(true, Ordering::Relaxed);
    let this = percpu::of(cpu);
    this.current_task.store(next.0, Ordering::Relaxed);
    if switch.newidle_balance() {
        // The idle loop balances once it runs (no lock held).
        this.entered_idle.store(true, Ordering::Relaxed);
    }
    this.previous_task.store(previous.0, Ordering::Relaxed);
    add_locked(&this.context_switches, 1);
    // The lock stays held across the switch; `finish_task_switch` releases it.
    core::mem::forget(rq);
    if costs::ENABLED {
        this.switch_start.store(costs::counter(), Ordering::Relaxed);
    }
    // SAFETY: `previous` runs on this CPU (it is `current`); `next` is queued here
    // (or is this CPU's idle task), is not running (`on_cpu` was false: a queued
    // task's previous switch-out finished under this lock), and its context was
    // saved by `switch` or prepared by `spawn`.
    unsafe { previous_task.context.switch(&next_task.context) };
    finish_task_switch(irq_state);
}

/// Adds `value` to a counter whose only writer holds this CPU's run-queue
/// lock (a task's switch-in statistics, written by the CPU it is queued
/// on; the CPU's own switch count): a plain load and store, where
/// `fetch_add` would spin on the exclusive monitor (ARMv8.0 has no atomic
/// add) for writers that cannot exist. Readers elsewhere see either value.
#[inline(always)]
fn add_locked(counter: &AtomicU64, value: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(value),
        Ordering::Relaxed,
    );
}

/// The switch's trace events, as the simulator records them: leaving idle,
/// `sched_switch`, entering idle, then the counters of the CPU with those
/// of the task switched out (as its dequeue or put left them: a task going
/// to sleep is at its peak, so a chart drawn from switch-ins alone shows only
/// the troughs of a periodic task), and with those of the task switched in.
#[inline(never)]
fn trace_switch(
    cpu: usize,
    rq: &CpuRunQueue,
    now: u64,
    previous: TaskId,
    next: TaskId,
    leaving: Leaving,
) {
    use trace::{Kind, PrevState, record, task_arg};
    if previous == rq.idle {
        record(now, cpu, Kind::CpuIdle, 0, 0, u64::from(u32::MAX));
    }
    let prev_state = match leaving {
        Leaving::Runnable => PrevState::Preempted,
        Leaving::Sleeping => PrevState::Sleeping,
        Leaving::Dead => PrevState::Dead,
    };
    record(
        now,
        cpu,
        Kind::Switch,
        task_arg(previous, rq.idle),
        task_arg(next, rq.idle),
        prev_state as u64,
    );
    if next == rq.idle {
        record(now, cpu, Kind::CpuIdle, 0, 0, 0);
    }
    if previous != rq.idle {
        trace_signals(now, cpu, rq.core.run_queue(), Some(previous));
    }
    let next = (next != rq.idle).then_some(next);
    trace_signals(now, cpu, rq.core.run_queue(), next);
}

/// Completes a switch on the CPU that made it: marks the task switched away from
/// as off-CPU, frees it if it died, and releases the run-queue lock that
/// `schedule()` kept, restoring `irq_state` (the resumed task's own).
pub fn finish_task_switch(irq_state: IrqState) {
    let cpu = this_cpu();
    // SAFETY: `schedule()` on this CPU locked this run queue and forgot its guard
    // before switching here, with IRQs masked.
    let mut rq = unsafe { run_queue(cpu).adopt(irq_state) };
    if costs::ENABLED {
        let start = percpu::of(cpu).switch_start.swap(0, Ordering::Relaxed);
        if start != 0 {
            costs::record(cpu, Op::ContextSwitch, costs::counter().wrapping_sub(start));
        }
    }
    let previous = TaskId(percpu::of(cpu).previous_task.load(Ordering::Relaxed));
    let previous_task = task(previous);
    previous_task.on_cpu.store(false, Ordering::Release);
    if previous_task.state() == TaskState::Dead {
        // The core forgot it at the switch (`Leaving::Dead`).
        rq.remove_member(previous);
        previous_task
            .state
            .store(TaskState::Free as u8, Ordering::Release);
    }
    drop(rq);
    // A task an active balance pushed away, now switched out.
    balance::finish_push(cpu);
    // Under icount, end this vCPU's turn (docs/icount.md, "Turns at
    // switches"): the other vCPUs run as they would beside it on hardware,
    // where `YIELD` is only a hint.
    crate::arch::cpu::relax();
}

/// Reschedules if asked to and not in an interrupt handler (a voluntary
/// preemption point for task context, after a wake-up for instance).
pub fn preempt_point() {
    if !percpu::in_interrupt() && percpu::this().need_resched.load(Ordering::Relaxed) {
        schedule();
    }
}

/// Called on the way out of every IRQ (registered at boot with
/// `exception::set_irq_exit`): preemption, as Linux's
/// `arm64_preempt_schedule_irq`.
pub fn preempt_on_irq_return() {
    if percpu::this().need_resched.load(Ordering::Relaxed) {
        schedule();
    }
}

/// Gives up the CPU to the next queued task, if any.
pub fn yield_now() {
    {
        // Masked before the CPU number is read, as in `schedule()`: a task
        // migrated in between would mark another CPU's current task as yielded.
        let irq_state = crate::arch::cpu::irq_save();
        let cpu = this_cpu();
        run_queue(cpu)
            .lock_masked(irq_state)
            .core
            .yield_task(now_ns());
    }
    schedule();
}

/// This CPU's idle loop: wait for interrupts, schedule when asked.
pub fn idle_loop() -> ! {
    // The idle task never leaves its CPU: its data is looked up once.
    let cpu = this_cpu();
    let this = percpu::of(cpu);
    loop {
        // Newly-idle balancing once per entry into idle, as Linux does when
        // `schedule()` finds nothing to run (WFI may also return spuriously).
        // Only this CPU writes `entered_idle` (in `schedule()`, IRQs masked,
        // and here with IRQs on: an interrupt's switch away and back sets it
        // again, which a plain clear after the test could lose; hence the
        // swap).
        if this.entered_idle.swap(false, Ordering::Relaxed)
            && !this.need_resched.load(Ordering::Relaxed)
        {
            balance::newly_idle(cpu);
        }
        irq_disable();
        if !this.need_resched.load(Ordering::Relaxed) {
            wait_for_interrupt();
            // Only this CPU writes it, here with IRQs masked.
            add_locked(&this.idle_wakeups, 1);
            // The interrupts that ended the wait (a wake-up IPI, a timer) are
            // handled here, IRQs still masked, then the reschedule they ask
            // for, as unmasking would have run them through the exception
            // vector and `preempt_on_irq_return`: the same handlers in the
            // same order, the same switch, without the exception's entry,
            // register save and return. Linux's idle loop likewise runs
            // the wake list itself when a wake-up needs no IPI
            // (`flush_smp_call_function_queue` in `do_idle`).
            crate::platform::irq::handle_irq();
            preempt_on_irq_return();
        }
        irq_enable();
        if this.need_resched.load(Ordering::Relaxed) {
            schedule();
        }
    }
}
