//! Bandwidth control against docs/linux-sched-reference.md §4.5's analytic
//! expectations, driven by a small model of CPU-bound tasks of one group: the
//! tick (HZ = 1000, no hrtick) charges each running CPU 1 ms, a CPU out of
//! runtime is throttled at its next pick (the tick's reschedule), the period
//! timer fires on its grid and pays the throttled CPUs.

use alloc::vec;
use alloc::vec::Vec;

use super::pool::CfsBandwidth;
use super::runtime::{CfsRqRuntime, Charge};
use super::*;

/// One group's tasks on `cpus` CPUs under `bandwidth`.
struct Model {
    pool: CfsBandwidth,
    cpus: Vec<CfsRqRuntime>,
    /// Whether each CPU's task wants to run at a given time.
    demand: fn(cpu: usize, now: Nanoseconds) -> bool,
    timer: Option<Nanoseconds>,
    /// Run time per CPU.
    ran: Vec<Nanoseconds>,
    /// Run time of the whole group per period (by the period it fell in).
    ran_in_period: Vec<Nanoseconds>,
    /// Run time of each CPU per period.
    cpu_in_period: Vec<Vec<Nanoseconds>>,
}

const TICK: Nanoseconds = MS;

impl Model {
    fn new(bandwidth: Bandwidth, cpus: usize, demand: fn(usize, Nanoseconds) -> bool) -> Self {
        bandwidth.validate().unwrap();
        let mut pool = CfsBandwidth::new(bandwidth, 0, cpus);
        // Setting a quota starts the period timer (`tg_set_cfs_bandwidth`).
        let timer = pool.start_period_timer(0);
        Model {
            pool,
            cpus: vec![
                CfsRqRuntime {
                    enabled: true,
                    ..CfsRqRuntime::default()
                };
                cpus
            ],
            demand,
            timer,
            ran: vec![0; cpus],
            ran_in_period: Vec::new(),
            cpu_in_period: Vec::new(),
        }
    }

    /// Runs until `end`, 1 ms at a time: at each tick, the CPUs that ran
    /// through the last millisecond are charged (and throttled when out of
    /// runtime), then the period timer fires if it is due.
    fn run(&mut self, end: Nanoseconds) {
        let mut now = 0;
        while now < end {
            now += TICK;
            let period = ((now - 1) / self.pool.settings().period) as usize;
            if self.ran_in_period.len() <= period {
                self.ran_in_period.resize(period + 1, 0);
                self.cpu_in_period
                    .resize(period + 1, vec![0; self.cpus.len()]);
            }
            for cpu in 0..self.cpus.len() {
                let wants = (self.demand)(cpu, now - TICK);
                let rq = &mut self.cpus[cpu];
                if !wants {
                    // Its task sleeps: the run queue emptied and returns slack.
                    if let Some(at) = rq.return_slack(&mut self.pool, now) {
                        assert!(at > now);
                    }
                    continue;
                }
                if rq.throttled {
                    continue;
                }
                self.ran[cpu] += TICK;
                self.ran_in_period[period] += TICK;
                self.cpu_in_period[period][cpu] += TICK;
                match rq.charge(TICK, &mut self.pool, now) {
                    Charge::Runs | Charge::Refilled { .. } => {}
                    Charge::Exhausted { .. } => {
                        // `resched_curr`, then the pick throttles it.
                        rq.throttle_if_needed(&mut self.pool, cpu as u16, now);
                    }
                }
            }
            if let Some(at) = self.timer
                && at <= now
            {
                let outcome = self.pool.period_timer(|| now);
                for grant in &outcome.grants {
                    self.cpus[usize::from(grant.cpu)].grant(
                        grant.amount,
                        grant.unthrottle,
                        &mut self.pool,
                        now,
                    );
                }
                self.timer = outcome.rearm;
                // No run queue is left throttled while the pool has runtime.
                assert!(self.pool.runtime() == 0 || self.pool.throttled().next().is_none());
            }
        }
    }
}

fn always(_: usize, _: Nanoseconds) -> bool {
    true
}

fn limited(quota_ms: u64, period_ms: u64, burst_ms: u64) -> Bandwidth {
    Bandwidth {
        period: period_ms * MS,
        quota: Some(quota_ms * MS),
        burst: burst_ms * MS,
    }
}

/// §4.5: one CPU-bound task, 25 ms per 100 ms: 25 ms a period; after 10
/// periods, 10 periods counted, 10 throttled, 750 ms throttled.
#[test]
fn a_quarter_quota_runs_a_quarter_of_each_period() {
    let mut model = Model::new(limited(25, 100, 0), 1, always);
    model.run(1000 * MS);
    for (period, &ran) in model.ran_in_period.iter().enumerate() {
        // The 1 ns paid back at each refill shifts a tick's charge by 1 ns.
        assert_eq!(ran, 25 * MS, "period {period}");
    }
    let stats = model.pool.stats();
    assert_eq!(stats.nr_periods, 10);
    assert_eq!(stats.nr_throttled, 10);
    assert_eq!(stats.throttled_time, 10 * 75 * MS);
    assert_eq!(stats.nr_bursts, 0);
}

/// §4.5: two tasks on two CPUs, 50 ms per 100 ms: 50 ms a period in all,
/// and the throttled time counts both CPUs (2 × 75 ms a period).
#[test]
fn two_cpus_share_one_quota_and_both_count_throttled_time() {
    let mut model = Model::new(limited(50, 100, 0), 2, always);
    model.run(1000 * MS);
    for &ran in &model.ran_in_period {
        assert_eq!(ran, 50 * MS);
    }
    assert_eq!(model.pool.stats().throttled_time, 10 * 2 * 75 * MS);
    assert_eq!(model.pool.stats().nr_throttled, 10);
}

/// §4.5: 150 ms per 100 ms over two CPUs: each task gets about 75 %.
#[test]
fn one_and_a_half_cpus_of_quota_give_each_of_two_tasks_three_quarters() {
    let mut model = Model::new(limited(150, 100, 0), 2, always);
    model.run(1000 * MS);
    for per_cpu in &model.cpu_in_period {
        assert_eq!(per_cpu.iter().sum::<u64>(), 150 * MS);
        for &ran in per_cpu {
            // Slices of 5 ms: the CPUs' shares differ by at most a slice.
            assert!((70 * MS..=80 * MS).contains(&ran), "{ran}");
        }
    }
}

fn after_first_period(_: usize, now: Nanoseconds) -> bool {
    now >= 100 * MS
}

/// §4.5: 20 ms quota with 20 ms burst, idle for a period: the next period
/// may run 40 ms, and the refill after it records the burst.
#[test]
fn burst_carries_an_idle_periods_quota_into_the_next() {
    let mut model = Model::new(limited(20, 100, 20), 1, after_first_period);
    model.run(300 * MS);
    assert_eq!(model.ran_in_period[1], 40 * MS);
    assert_eq!(model.ran_in_period[2], 20 * MS);
    let stats = model.pool.stats();
    assert_eq!(stats.nr_bursts, 1);
    assert_eq!(stats.burst_time, 20 * MS);
}

/// Without burst an idle period's quota is lost.
#[test]
fn without_burst_an_idle_periods_quota_is_lost() {
    let mut model = Model::new(limited(20, 100, 0), 1, after_first_period);
    model.run(300 * MS);
    assert_eq!(model.ran_in_period[1], 20 * MS);
    assert_eq!(model.pool.stats().nr_bursts, 0);
}

fn first_period_only(_: usize, now: Nanoseconds) -> bool {
    now < 100 * MS
}

/// A group that stops asking for runtime lets its timer go idle after one
/// fully idle period (`do_sched_cfs_period_timer`'s deactivation).
#[test]
fn the_period_timer_goes_idle_after_an_idle_period() {
    let mut model = Model::new(limited(20, 100, 0), 1, first_period_only);
    model.run(500 * MS);
    // Period 1 refills (throttled: counted), period 2 marks idle, period 3
    // deactivates: counted too, as Linux counts it before checking.
    assert_eq!(model.timer, None);
    assert_eq!(model.pool.stats().nr_periods, 3);
}

/// `sched_cfs_period_timer`: a callback that keeps finding periods to
/// forward (more than three rounds) doubles period, quota and burst.
#[test]
fn a_period_too_short_for_its_timer_doubles() {
    let mut pool = CfsBandwidth::new(limited(2, 4, 1), 0, 1);
    let _ = pool.start_period_timer(0);
    // A clock that moves two periods on at each of its first four reads: the
    // callback is still forwarding after three rounds.
    let mut reads = 0;
    let outcome = pool.period_timer(|| {
        reads += 1;
        reads.min(4) * 8 * MS
    });
    assert!(outcome.scaled_up);
    assert_eq!(pool.settings(), limited(4, 8, 2));
}

/// Validation as `tg_set_cfs_bandwidth` (§4.1), each error naming its field.
#[test]
fn settings_are_checked_as_linux_checks_them() {
    let field = |b: Bandwidth| b.validate().err().map(|e| e.field);
    assert_eq!(field(limited(25, 100, 0)), None);
    assert_eq!(field(Bandwidth::UNLIMITED), None);
    assert_eq!(
        field(Bandwidth {
            period: MS - 1,
            ..Bandwidth::UNLIMITED
        }),
        Some("period")
    );
    assert_eq!(
        field(Bandwidth {
            period: MAX_PERIOD + 1,
            ..Bandwidth::UNLIMITED
        }),
        Some("period")
    );
    assert_eq!(
        field(Bandwidth {
            quota: Some(MS - 1),
            ..Bandwidth::UNLIMITED
        }),
        Some("quota")
    );
    assert_eq!(
        field(Bandwidth {
            quota: Some(MAX_RUNTIME + 1),
            ..Bandwidth::UNLIMITED
        }),
        Some("quota")
    );
    assert_eq!(field(limited(10, 100, 11)), Some("burst"));
    let near_max = Bandwidth {
        period: DEFAULT_PERIOD,
        quota: Some(MAX_RUNTIME),
        burst: 1,
    };
    assert_eq!(field(near_max), Some("burst"));
    // MAX_BW = 2^44 - 1 µs: max_cfs_runtime ≈ 1.76e16 ns.
    assert_eq!(MAX_RUNTIME, ((1u64 << 44) - 1) * 1000);
}

/// cgroup v2's rule (§4.4): no limit inherits the parent's ratio, a limit
/// takes the smaller of the two; the ratio is quota / period in 2^-20 units.
#[test]
fn the_effective_ratio_is_the_smaller_down_the_hierarchy() {
    let quarter = limited(25, 100, 0).ratio();
    assert_eq!(quarter, Some(1 << 18));
    let half = limited(50, 100, 0).ratio();
    assert_eq!(hierarchical_ratio(half, quarter), quarter);
    assert_eq!(hierarchical_ratio(quarter, half), quarter);
    assert_eq!(hierarchical_ratio(None, half), half);
    assert_eq!(hierarchical_ratio(half, None), half);
    assert_eq!(hierarchical_ratio(None, None), None);
}

/// A CPU whose task sleeps returns what it holds above 1 ms; with another
/// CPU throttled and more than a slice in the pool, the slack timer is armed
/// 5 ms out, and its expiry pays the throttled CPU.
#[test]
fn slack_returns_to_the_pool_and_pays_a_throttled_cpu() {
    let mut pool = CfsBandwidth::new(limited(20, 100, 0), 0, 2);
    let _ = pool.start_period_timer(0);
    let mut sleeper = CfsRqRuntime {
        enabled: true,
        ..CfsRqRuntime::default()
    };
    let mut hog = CfsRqRuntime {
        enabled: true,
        ..CfsRqRuntime::default()
    };
    // The sleeper takes 15 ms, the hog 5 ms and runs them: the pool is empty.
    let (amount, _) = pool.assign(0, 15 * MS, MS);
    sleeper.runtime_remaining = amount as i64;
    let (amount, _) = pool.assign(0, SLICE, MS);
    hog.runtime_remaining = amount as i64 - SLICE as i64;
    assert_eq!(pool.runtime(), 0);
    assert!(hog.throttle_if_needed(&mut pool, 1, 10 * MS).0);
    // The sleeper used 1 ms and sleeps: 14 ms left, 13 ms go back.
    sleeper.runtime_remaining -= MS as i64;
    let timer = sleeper.return_slack(&mut pool, 20 * MS);
    assert_eq!(sleeper.runtime_remaining, MS as i64);
    assert_eq!(pool.runtime(), 13 * MS);
    assert_eq!(timer, Some(25 * MS));
    let grants = pool.slack_timer(25 * MS);
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].cpu, 1);
    assert!(grants[0].unthrottle);
    assert!(hog.grant(grants[0].amount, true, &mut pool, 25 * MS));
    assert_eq!(pool.stats().throttled_time, 15 * MS);
}

/// Close to a refill the slack waits for the period timer instead.
#[test]
fn no_slack_timer_near_a_refill() {
    let mut pool = CfsBandwidth::new(limited(20, 100, 0), 0, 2);
    let _ = pool.start_period_timer(0);
    let (_, _) = pool.assign(0, 20 * MS, MS);
    pool.throttle(1, -(MS as i64));
    // 95 ms: the refill at 100 ms is within 7 ms.
    let (returned, timer) = pool.return_slack(10 * MS as i64, 95 * MS);
    assert_eq!(returned, 9 * MS);
    assert_eq!(timer, None);
}

/// A small generator for the stress test (xorshift, seeded).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Seeded stress: random demand on 1-8 CPUs, random quotas, periods and
/// bursts. Whatever happens, the group never runs more in a period than the
/// pool held at its refill plus what the CPUs held then plus one tick per CPU
/// (the overrun carried into the next period), and no CPU stays throttled
/// while the pool has runtime (checked by the model after every refill).
#[test]
fn a_group_never_runs_beyond_its_runtime() {
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let cpus = (rng.next() % 8 + 1) as usize;
        let period = (rng.next() % 200 + 10) * MS;
        let quota = (rng.next() % (period / MS * cpus as u64) + 1) * MS;
        let burst = (rng.next() % 2) * (rng.next() % quota.min(50 * MS) / MS) * MS;
        let bandwidth = Bandwidth {
            period,
            quota: Some(quota),
            burst,
        };
        // Each CPU's task runs 7 ms out of every 11, each CPU at another
        // phase: run queues empty and refill, returning slack.
        fn demand(cpu: usize, now: Nanoseconds) -> bool {
            let x = (now / MS / 7 + cpu as u64 * 13) % 11;
            x < 7
        }
        let mut model = Model::new(bandwidth, cpus, demand);
        model.run(20 * period);
        let limit = quota + burst + cpus as u64 * (SLICE + TICK);
        for (index, &ran) in model.ran_in_period.iter().enumerate() {
            assert!(
                ran <= limit,
                "seed {seed}: period {index} ran {ran} > {limit}"
            );
        }
        // Total: never more than what the pool ever held, plus one tick of
        // overrun per CPU.
        let refills = model.pool.stats().nr_periods + 1;
        let total: u64 = model.ran.iter().sum();
        assert!(
            total <= refills * (quota + burst) + cpus as u64 * TICK,
            "seed {seed}"
        );
    }
}

/// The grid offsets of the three start modes (§4.6): aligned at 0, the RFC's
/// multiples of period/10, and seeded random offsets inside the period that a
/// run reproduces and another seed changes.
#[test]
fn period_timer_start_offsets() {
    let period = 100 * MS;
    assert_eq!(PeriodTimerStart::Aligned.offset(7, period), 0);
    let tenths: Vec<u64> = (1..=11)
        .map(|g| PeriodTimerStart::Period10.offset(g, period))
        .collect();
    assert_eq!(
        tenths,
        [10, 20, 30, 40, 50, 60, 70, 80, 90, 0, 10].map(|ms| ms * MS)
    );
    let random = PeriodTimerStart::Random { seed: 42 };
    let offsets: Vec<u64> = (1..=64).map(|g| random.offset(g, period)).collect();
    assert!(offsets.iter().all(|&o| o < period));
    assert_eq!(
        offsets,
        (1..=64)
            .map(|g| random.offset(g, period))
            .collect::<Vec<_>>()
    );
    let other: Vec<u64> = (1..=64)
        .map(|g| PeriodTimerStart::Random { seed: 43 }.offset(g, period))
        .collect();
    assert_ne!(offsets, other);
    // Different seeds are different configurations, not the same offsets
    // dealt to other groups: the gap between groups 1 and 2 differs.
    let gap = |seed| {
        let start = PeriodTimerStart::Random { seed };
        start.offset(1, period).abs_diff(start.offset(2, period))
    };
    assert!(gap(1) != gap(2) && gap(2) != gap(3) && gap(1) != gap(3));
    // Spread over the period: every tenth of it holds some of 64 offsets.
    for tenth in 0..10 {
        assert!(
            offsets.iter().any(|&o| o / (period / 10) == tenth),
            "tenth {tenth}"
        );
    }
}

/// Two groups at 25 %/100 ms on one CPU each: aligned, both refill at the same
/// instant; interleaved by half a period, their refills fall 50 ms apart, as
/// the period timers' first expiries show.
#[test]
fn interleaved_groups_refill_at_different_instants() {
    let grid = |start: PeriodTimerStart, group: u16| {
        let settings = limited(25, 100, 0);
        let mut pool = CfsBandwidth::new(settings, start.offset(group, settings.period), 1);
        pool.start_period_timer(1).unwrap()
    };
    assert_eq!(
        grid(PeriodTimerStart::Aligned, 1),
        grid(PeriodTimerStart::Aligned, 2)
    );
    assert_eq!(grid(PeriodTimerStart::Period10, 1), 10 * MS);
    assert_eq!(grid(PeriodTimerStart::Period10, 6), 60 * MS);
}

/// `tg_set_cfs_bandwidth` on a pool that exists (§4.1): the new settings and a
/// refill (`runtime += quota`, at most quota + burst); the period timer keeps
/// its expiry and the next periods follow the new length; a lifted limit
/// (`max`) lets the timer go idle when it fires; the counters carry over all
/// of it. By hand, times in ms:
/// - 25/100 from 0: pool 25; a CPU takes it all at 1, the timer is armed for
///   the grid point 100;
/// - at 2, 50/50 with a 10 burst: pool 0 + 50 = 50; the timer still fires at
///   100, where it counts a period, refills 50 + 50 → 60 (quota + burst), and
///   is armed for 150 (the new period);
/// - at 120, `max`: no refill; at 150 the timer moves its expiry past now,
///   to 200 (`hrtimer_forward_now`), and goes idle without counting;
/// - at 400, 20/100: pool 60 + 20 → 20; a CPU asks at 420 and the timer is
///   forwarded from its expiry kept at 200 by whole periods: 500.
#[test]
fn a_rewritten_limit_keeps_the_grid_the_timer_and_the_counters() {
    use super::pools::BandwidthPools;
    use crate::task::GroupId;
    let pools = BandwidthPools::new(2);
    let g = GroupId(1);
    assert_eq!(
        pools.set(g, Bandwidth::UNLIMITED, 0, 1),
        None,
        "never limited"
    );
    assert_eq!(pools.stats(g), None);
    assert_eq!(pools.set(g, limited(25, 100, 0), 0, 1), Some(0));
    let taken = pools.with(g, |pool| pool.assign(0, 25 * MS, MS)).unwrap();
    assert_eq!(taken, (25 * MS, Some(100 * MS)));
    assert_eq!(pools.set(g, limited(50, 50, 10), 7, 1), Some(100 * MS));
    assert_eq!(pools.with(g, |pool| pool.runtime()), Some(50 * MS));
    let outcome = pools
        .with(g, |pool| pool.period_timer(|| 100 * MS))
        .unwrap();
    assert_eq!(outcome.rearm, Some(150 * MS));
    assert_eq!(pools.with(g, |pool| pool.runtime()), Some(60 * MS));
    assert_eq!(pools.stats(g).unwrap().nr_periods, 1);
    let lifted = Bandwidth {
        period: 50 * MS,
        quota: None,
        burst: 0,
    };
    assert_eq!(pools.set(g, lifted, 0, 1), Some(150 * MS));
    assert_eq!(pools.settings(g), Some(lifted));
    let outcome = pools
        .with(g, |pool| pool.period_timer(|| 150 * MS))
        .unwrap();
    assert_eq!(outcome.rearm, None, "the timer goes idle");
    assert_eq!(pools.stats(g).unwrap().nr_periods, 1, "not counted");
    pools.set(g, limited(20, 100, 0), 0, 1);
    assert_eq!(pools.with(g, |pool| pool.runtime()), Some(20 * MS));
    let asked = pools
        .with(g, |pool| pool.assign(0, SLICE, 420 * MS))
        .unwrap();
    assert_eq!(asked, (5 * MS, Some(500 * MS)));
    assert_eq!(pools.stats(g).unwrap().nr_periods, 1);
}

/// The debt a run queue carries: 0.75 ms overrun when it is throttled, then
/// 0.5 ms more charged before its task left the CPU; the refill repays 1.25
/// ms + 1 ns and `max_debt` keeps the 1.25 ms, not the 0.75 ms seen at the
/// throttle. A period's run then differs from the quota by the debts at its
/// two ends (docs/bandwidth.md, "The period's bound").
#[test]
fn max_debt_counts_charges_after_the_throttle() {
    let mut pool = CfsBandwidth::new(limited(10, 100, 0), 0, 1);
    let _ = pool.start_period_timer(0);
    let mut hog = CfsRqRuntime {
        enabled: true,
        ..CfsRqRuntime::default()
    };
    let (amount, _) = pool.assign(0, 10 * MS, 0);
    hog.runtime_remaining = amount as i64;
    // 10.75 ms ran: the pool is empty, the last attempt finds nothing.
    let _ = hog.charge(10 * MS + 750_000, &mut pool, 11 * MS);
    assert!(hog.throttle_if_needed(&mut pool, 0, 11 * MS).0);
    assert_eq!(hog.max_debt, 750_000);
    // Charged while throttled, before the switch.
    let _ = hog.charge(500_000, &mut pool, 11 * MS + 500_000);
    assert_eq!(hog.runtime_remaining, -1_250_000);
    assert!(hog.grant(1_250_001, true, &mut pool, 100 * MS));
    assert_eq!(hog.max_debt, 1_250_000);
    assert_eq!(hog.runtime_remaining, 1);
}
