//! The scheduler tick (Linux's `sched_tick`): every tick period, on each
//! CPU's high-resolution timer, the running task is charged, the driver
//! decides whether its slice is over, the CPU's load is published, and the
//! tick's periodic work follows: the task groups' load, the bandwidth
//! grants left for this CPU, cpufreq's request and load balancing.

use core::sync::atomic::Ordering;

use super::observe::{trace_group_bandwidth, trace_signals};
use super::run_queue::run_queue;
use super::settings::{next_tick_after, tick_period_ns};
use super::{balance, bandwidth, cpufreq, eas, groups, load};
use crate::arch::cpu::this_cpu;
use crate::arch::timer::now_ns;
use crate::observe::{costs, trace};
use crate::platform::{hrtimer, percpu};
use crate::tasks::table::account_runtime;

/// Starts CPU `cpu`'s periodic tick (on that CPU).
pub fn start_tick() {
    let cpu = this_cpu();
    hrtimer::start(
        hrtimer::tick_timer(cpu),
        now_ns() + tick_period_ns(),
        scheduler_tick,
        cpu,
    );
}

/// Keeps the longest time between two ticks in which a task ran on `cpu`
/// (`running`: one runs now): a running task is charged at each tick and
/// when it leaves the CPU, so none ran longer without a charge. Kept at
/// the tick only, off the switch path.
fn note_tick_gap(cpu: usize, running: bool, now: u64) {
    let this = percpu::of(cpu);
    let last = this.last_tick_ns.swap(now, Ordering::Relaxed);
    let switches = this.context_switches.load(Ordering::Relaxed);
    let switched = this.switches_at_tick.swap(switches, Ordering::Relaxed) != switches;
    let gap = now.saturating_sub(last);
    if last != 0
        && (running || switched)
        && this.max_uncharged_ns.fetch_max(gap, Ordering::Relaxed) < gap
    {
        this.max_uncharged_end_ns.store(now, Ordering::Relaxed);
    }
}

/// The tick: accounts the running task and asks the policy whether its slice is over.
fn scheduler_tick(cpu: usize) {
    // Ticks fall on multiples of the period, as Linux's jiffies do, plus this
    // CPU's skew.
    let next = next_tick_after(cpu, now_ns());
    hrtimer::start(hrtimer::tick_timer(cpu), next, scheduler_tick, cpu);
    percpu::of(cpu).ticks.fetch_add(1, Ordering::Relaxed);
    let mut rq = run_queue(cpu).lock();
    // The clock is read under the lock, so that the run queue never sees time
    // go backwards (another CPU may have queued a task here meanwhile).
    let now = now_ns();
    note_tick_gap(cpu, rq.core.current().is_some(), now);
    account_runtime(rq.current(), now);
    let active = cpufreq::active();
    if active {
        cpufreq::apply_frequency_scale(cpu, rq.core.run_queue_mut());
    }
    if rq.core.sched_tick(now).resched {
        percpu::of(cpu).need_resched.store(true, Ordering::Relaxed);
    }
    rq.core.update_blocked_averages(now);
    if trace::recording() {
        trace_signals(now, cpu, rq.core.run_queue(), rq.core.current());
        trace_group_bandwidth(now, cpu, rq.core.run_queue());
    }
    groups::exchange_group_load(cpu, &mut rq.core, now);
    // The tick's PELT updates, in the PELT histogram.
    costs::record_op_costs(cpu, || rq.core.take_op_costs());
    // schedutil's tick call, in both modes (after the tick's PELT and
    // blocked-load updates).
    let perf = active.then(|| {
        let queue = rq.core.run_queue_mut();
        let _ = queue.take_util_changed();
        cpufreq::cpu_perf_request(queue)
    });
    load::publish(cpu, &rq);
    if eas::active() {
        load::note_overutilized(cpu);
    }
    drop(rq);
    if let Some(perf) = perf {
        cpufreq::update(cpu, perf, now);
    }
    // Grants whose call-function IPI found the mailbox full.
    bandwidth::apply_pending_grants(cpu);
    balance::periodic(cpu);
}
