//! The replay's tests: recorded runs printed as the kernel prints them,
//! read back and replayed.

use super::*;
use fairway_sched::bandwidth::Bandwidth;
use fairway_sched::bandwidth::pools::{BandwidthPools, BandwidthTimer, BandwidthTimerKind};
use fairway_sched::cpu_core::Decision;
use fairway_sched::task::{TaskId, TaskParams};

fn sequence() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A small two-CPU run recorded, printed as the kernel prints it, read
/// back and replayed: every decision agrees; one changed decision is found.
#[test]
fn a_printed_record_replays_and_a_changed_decision_is_found() {
    let setup = ReplaySetup {
        // The cores below end slices on the high-resolution timer.
        config: SchedConfig {
            hrtick: true,
            // As the kernel records it: resolved at boot.
            uclamp: Some(true),
            ..SchedConfig::DEFAULT
        },
        tasks: 8,
        groups: 4,
        capacities: vec![1024, 1024],
    };
    let policy = setup.config.policy_kind(2);
    let mut cores: Vec<CpuCore> = (0..2)
        .map(|cpu| {
            let queue = RunQueue::with_options(policy, 8, 4, true);
            let mut core = CpuCore::new(cpu, queue, 8, true);
            core.start_recording(100, sequence);
            core
        })
        .collect();
    let ms = 1_000_000;
    for task in 1..=3 {
        let _ = cores[0].wake_up_new_task(TaskId(task), &TaskParams::default(), 0);
    }
    let _ = cores[0].schedule(0, Leaving::Runnable);
    let _ = cores[0].sched_tick(4 * ms);
    let _ = cores[0].schedule(4 * ms, Leaving::Runnable);
    // Task 3 moves to CPU 1 (balancing).
    let migration = cores[0].detach_task(TaskId(3), 5 * ms).expect("movable");
    cores[1]
        .migrate_task_in(TaskId(3), &migration, 5 * ms)
        .unwrap();
    let _ = cores[1].attach_task(TaskId(3), 5 * ms);
    let _ = cores[1].schedule(5 * ms, Leaving::Runnable);
    let _ = cores[0].schedule(6 * ms, Leaving::Sleeping);
    let mut lines = vec![
        "core: config sched=eevdf hz=250 hrtick=true slice_us=4000 uclamp=true tasks=8 \
         groups=4 cpus=2"
            .to_string(),
    ];
    for core in &mut cores {
        let (records, dropped) = core.take_records();
        lines.push(format!(
            "core: cpu={} capacity=1024 records={} dropped={dropped}",
            core.cpu(),
            records.len()
        ));
        for record in records {
            let words: Vec<String> = record.encode().iter().map(u64::to_string).collect();
            lines.push(format!("12.5 core: record {}", words.join(" ")));
        }
    }
    let transcript = parse_kernel_lines(lines.iter().map(String::as_str)).unwrap();
    assert_eq!(transcript.setup, setup);
    assert_eq!(transcript.dropped, 0);
    let records = transcript.records;
    // CPU 0: three new tasks, schedule, tick, schedule, the detach (dequeue and
    // migrate_out), schedule; CPU 1: migrate_in, attach, schedule.
    assert_eq!(records.len(), 12);
    let outcome = replay(&setup, &records).unwrap();
    assert_eq!(outcome.divergence, None);
    assert_eq!(outcome.agreeing, 12);
    // Idle -> task, task -> task on CPU 0, idle -> task 3 on CPU 1, and
    // CPU 0's last switch.
    assert_eq!(outcome.switches, 4);
    // A decision the kernel recorded differently is caught where it is.
    let mut changed = records.clone();
    let at = changed
        .iter()
        .position(|r| matches!(r.input, Input::Tick))
        .unwrap();
    changed[at].output.resched = !changed[at].output.resched;
    let outcome = replay(&setup, &changed).unwrap();
    let divergence = outcome.divergence.expect("found");
    assert_eq!(divergence.record, changed[at]);
    assert_eq!(outcome.agreeing, at);
}

/// A two-CPU run with two limited groups (CPU-bound tasks throttled,
/// periodic ones that wake on either CPU, balancing moves), driven
/// through the cores with shared pools and their timers, recorded and
/// printed as the kernel prints it.
fn bandwidth_run(policy: &str) -> (Vec<String>, ReplaySetup) {
    bandwidth_run_for(policy, 1000)
}

/// A millisecond, in ns.
const MS: u64 = 1_000_000;
/// [`bandwidth_run`]'s time step.
const STEP: u64 = MS / 4;
/// Task slots per run queue in [`bandwidth_run`].
const TASKS: usize = 8;
/// Group slots per run queue in [`bandwidth_run`].
const GROUPS: usize = 4;

/// A task of [`bandwidth_run`]: its group, its first CPU, and (periodic) its
/// run and sleep.
type Spec = (GroupId, usize, Option<(u64, u64)>);

/// [`bandwidth_run`] for `duration_ms` milliseconds: the run set up, stepped
/// a quarter of a millisecond at a time (the pools' timers, the wake-ups,
/// each CPU's running task and tick, the balancing), then printed.
fn bandwidth_run_for(policy: &str, duration_ms: u64) -> (Vec<String>, ReplaySetup) {
    let config = SchedConfig::parse(&format!(
        "sched={policy} hz=1000 hrtick=0 uclamp=1 cfs_bandwidth=1"
    ))
    .unwrap();
    let setup = ReplaySetup {
        config,
        tasks: TASKS,
        groups: GROUPS,
        capacities: vec![1024, 1024],
    };
    let mut run = BandwidthRun::start(config.policy_kind(2));
    let mut now = 0;
    while now < duration_ms * MS {
        now += STEP;
        run.fire_timers(now);
        run.wake_sleepers(now);
        run.run_cpus(now);
        run.balance(now);
    }
    (printed(policy, &mut run.cores), setup)
}

/// [`bandwidth_run`] as it runs: the two cores, the groups' shared pools and
/// their timers armed, and each task's CPU, burst left and wake-up time.
struct BandwidthRun {
    cores: Vec<CpuCore>,
    pools: std::sync::Arc<BandwidthPools>,
    tasks: [Spec; 6],
    cpu_of: Vec<usize>,
    left: Vec<u64>,
    asleep: Vec<Option<u64>>,
    timers: Vec<(BandwidthTimer, usize)>,
    wakes: u64,
}

impl BandwidthRun {
    /// The cores recording, two limited groups with their pools, and the six
    /// tasks woken on their first CPUs.
    fn start(kind: fairway_sched::run_queue::PolicyKind) -> Self {
        let mut cores: Vec<CpuCore> = (0..2)
            .map(|cpu| {
                let queue = RunQueue::build(kind, TASKS, GROUPS, true, true);
                let mut core = CpuCore::new(cpu, queue, TASKS, false);
                core.start_recording(40_000, sequence);
                core
            })
            .collect();
        let create = |cores: &mut Vec<CpuCore>| {
            let ids: Vec<GroupId> = cores
                .iter_mut()
                .map(|core| core.create_group(GroupId::ROOT, 1024, 0).unwrap())
                .collect();
            ids[0]
        };
        let a = create(&mut cores);
        let b = create(&mut cores);
        let pools = std::sync::Arc::new(BandwidthPools::new(GROUPS));
        let limit = |period, quota| Bandwidth {
            period,
            quota: Some(quota),
            burst: 0,
        };
        pools.set(a, limit(20 * MS, 7 * MS), 0, 2);
        pools.set(b, limit(10 * MS, 4 * MS), 3 * MS, 2);
        for core in &mut cores {
            assert!(core.attach_bandwidth(pools.clone()));
            let _ = core.set_group_bandwidth(a, true, 0).unwrap();
            let _ = core.set_group_bandwidth(b, true, 0).unwrap();
        }
        let tasks: [Spec; 6] = [
            (a, 0, None),
            (a, 1, None),
            (b, 0, None),
            (b, 1, Some((3 * MS / 2, 4 * MS))),
            (b, 0, Some((MS, 3 * MS))),
            (GroupId::ROOT, 1, Some((MS, 2 * MS))),
        ];
        let mut run = BandwidthRun {
            cores,
            pools,
            tasks,
            cpu_of: tasks.iter().map(|t| t.1).collect(),
            left: tasks.iter().map(|t| t.2.map_or(0, |p| p.0)).collect(),
            asleep: vec![None; tasks.len()],
            timers: Vec::new(),
            wakes: 0,
        };
        for (t, &(group, cpu, _)) in tasks.iter().enumerate() {
            let params = TaskParams {
                group,
                ..TaskParams::default()
            };
            let decision = run.cores[cpu]
                .wake_up_new_task(TaskId(t as u16), &params, 0)
                .unwrap();
            run.carry_out(cpu, decision, 0);
        }
        run
    }

    /// Carries out a decision: timers armed on that CPU, a resched at once.
    fn carry_out(&mut self, cpu: usize, decision: Decision, now: u64) {
        while let Some(timer) = self.cores[cpu].take_bandwidth_timer() {
            self.timers.push((timer, cpu));
        }
        if decision.resched {
            let _ = self.cores[cpu].schedule(now, Leaving::Runnable);
            while let Some(timer) = self.cores[cpu].take_bandwidth_timer() {
                self.timers.push((timer, cpu));
            }
        }
    }

    /// The pools' timers due, earliest first, their grants handed to the
    /// cores.
    fn fire_timers(&mut self, now: u64) {
        self.timers.sort_by_key(|(timer, _)| timer.expires);
        while self
            .timers
            .first()
            .is_some_and(|(timer, _)| timer.expires <= now)
        {
            let (timer, armed_on) = self.timers.remove(0);
            let at = timer.expires;
            let grants = match timer.kind {
                BandwidthTimerKind::Period => {
                    let outcome = self
                        .pools
                        .with(timer.group, |p| p.period_timer(|| at))
                        .unwrap();
                    if let Some(expires) = outcome.rearm {
                        self.timers
                            .push((BandwidthTimer { expires, ..timer }, armed_on));
                    }
                    outcome.grants
                }
                BandwidthTimerKind::Slack => {
                    self.pools.with(timer.group, |p| p.slack_timer(at)).unwrap()
                }
            };
            for grant in grants {
                let cpu = usize::from(grant.cpu);
                let decision = self.cores[cpu].distribute_runtime(
                    timer.group,
                    grant.amount,
                    grant.unthrottle,
                    now,
                );
                self.carry_out(cpu, decision, now);
            }
            self.timers.sort_by_key(|(timer, _)| timer.expires);
        }
    }

    /// Wake-ups of the periodic tasks whose sleep is over: every third on
    /// the other CPU.
    fn wake_sleepers(&mut self, now: u64) {
        for t in 0..self.tasks.len() {
            if self.asleep[t].is_none_or(|until| until > now) {
                continue;
            }
            self.asleep[t] = None;
            self.left[t] = self.tasks[t].2.unwrap().0;
            self.wakes += 1;
            let id = TaskId(t as u16);
            let migrated = self.wakes.is_multiple_of(3);
            if migrated {
                let from = self.cpu_of[t];
                let to = 1 - from;
                let migration = self.cores[from].migrate_task_out(id, now).unwrap();
                self.cores[to].migrate_task_in(id, &migration, now).unwrap();
                self.cpu_of[t] = to;
            }
            let cpu = self.cpu_of[t];
            let decision = self.cores[cpu].try_to_wake_up(id, now, migrated);
            self.carry_out(cpu, decision, now);
        }
    }

    /// On each CPU, the running periodic task's burst (then its sleep), and
    /// the 1 ms tick, CPU 1's half a tick after CPU 0's.
    fn run_cpus(&mut self, now: u64) {
        for cpu in 0..2 {
            // The running periodic task's burst, then its sleep.
            if let Some(current) = self.cores[cpu].current()
                && let Some((_, sleep)) = self.tasks[current.index()].2
            {
                let t = current.index();
                self.left[t] = self.left[t].saturating_sub(STEP);
                if self.left[t] == 0 {
                    self.asleep[t] = Some(now + sleep);
                    let _ = self.cores[cpu].schedule(now, Leaving::Sleeping);
                    self.carry_out(cpu, Decision::default(), now);
                }
            }
            // The 1 ms tick, CPU 1's half a tick after CPU 0's.
            if now % MS == cpu as u64 * MS / 2 {
                let decision = self.cores[cpu].sched_tick(now);
                self.carry_out(cpu, decision, now);
            }
        }
    }

    /// Balancing moves a waiting CPU-bound task every 25 ms.
    fn balance(&mut self, now: u64) {
        if !now.is_multiple_of(25 * MS) {
            return;
        }
        let t = (now / (25 * MS)) as usize % 3;
        let id = TaskId(t as u16);
        let from = self.cpu_of[t];
        if self.cores[from].current() != Some(id)
            && let Some(migration) = self.cores[from].detach_task(id, now)
        {
            let to = 1 - from;
            self.cores[to].migrate_task_in(id, &migration, now).unwrap();
            let decision = self.cores[to].attach_task(id, now);
            self.carry_out(to, decision, now);
            self.cpu_of[t] = to;
        }
    }
}

/// The cores' records printed as the kernel prints them (`core: config`,
/// then each CPU's line and its records).
fn printed(policy: &str, cores: &mut [CpuCore]) -> Vec<String> {
    let mut lines = vec![format!(
        "core: config sched={policy} hz=1000 hrtick=false slice_us=4000 uclamp=true \
         cfs_bandwidth=true tasks={TASKS} groups={GROUPS} cpus=2"
    )];
    for core in cores {
        let (records, dropped) = core.take_records();
        lines.push(format!(
            "core: cpu={} capacity=1024 records={} dropped={dropped}",
            core.cpu(),
            records.len()
        ));
        for record in records {
            let words: Vec<String> = record.encode().iter().map(u64::to_string).collect();
            lines.push(format!("core: record {}", words.join(" ")));
        }
    }
    lines
}

/// The recorded two-CPU bandwidth run replays with every decision the
/// same, under EEVDF and CFS, each pool answer taken from the record.
#[test]
fn a_recorded_bandwidth_run_replays_without_the_pools() {
    for policy in ["eevdf", "cfs"] {
        let (lines, setup) = bandwidth_run(policy);
        let transcript = parse_kernel_lines(lines.iter().map(String::as_str)).unwrap();
        assert_eq!(transcript.setup, setup);
        assert_eq!(transcript.dropped, 0);
        let records = transcript.records;
        let outcome = replay(&setup, &records).unwrap();
        assert_eq!(outcome.divergence, None, "{policy}");
        assert_eq!(outcome.agreeing, records.len());
        assert!(
            outcome.switches > 1000,
            "{policy}: {} switches",
            outcome.switches
        );
        for kind in [
            "attach_bandwidth",
            "set_group_bandwidth",
            "distribute_runtime",
            "pool_answer",
            "migrate_in",
        ] {
            assert!(
                outcome.kinds.get(kind).is_some_and(|&n| n > 0),
                "{policy}: no {kind} in {:?}",
                outcome.kinds
            );
        }
        let throttling_grants = records
            .iter()
            .filter(|r| {
                matches!(
                    r.input,
                    Input::DistributeRuntime {
                        unthrottle: true,
                        ..
                    }
                )
            })
            .count();
        assert!(
            throttling_grants > 20,
            "{policy}: {throttling_grants} unthrottles"
        );
    }
}

/// A pool answer changed in the record is found: a decision differs, or
/// the replayed core asks its pools otherwise, at that answer's call or
/// later; a removed answer is found at its own call, as a pool mismatch.
#[test]
fn a_changed_pool_answer_is_reported() {
    use fairway_sched::bandwidth::runtime::PoolCall;
    let (lines, setup) = bandwidth_run("eevdf");
    let mut records = parse_kernel_lines(lines.iter().map(String::as_str))
        .unwrap()
        .records;
    records.sort_by_key(|record| record.sequence);
    let at = records
        .iter()
        .enumerate()
        .skip(records.len() / 2)
        .find(|(_, r)| matches!(r.input, Input::PoolAnswer(a) if a.call == PoolCall::Assign && a.amount > 0))
        .map(|(index, _)| index)
        .unwrap();
    let mut changed = records.clone();
    if let Input::PoolAnswer(answer) = &mut changed[at].input {
        answer.amount = 0;
    }
    let outcome = replay(&setup, &changed).unwrap();
    let divergence = outcome.divergence.expect("a refused grant is found");
    assert!(divergence.index > at, "{divergence:?} before {at}");
    let mut removed = records.clone();
    let answer = removed.remove(at);
    let call = at
        + removed[at..]
            .iter()
            .position(|r| r.cpu == answer.cpu && !matches!(r.input, Input::PoolAnswer(_)))
            .unwrap();
    let outcome = replay(&setup, &removed).unwrap();
    let divergence = outcome.divergence.expect("a missing answer is found");
    assert_eq!(divergence.index, call);
    assert!(divergence.pool.is_some(), "{divergence:?}");
}

/// The fixture of the replay reader's tests and fuzz target
/// (`sim/tests/fixtures/replay-bandwidth-eevdf.txt`): 100 ms of
/// [`bandwidth_run`] under EEVDF, printed as the kernel prints it.
/// Run with `--ignored` to write it again (the sequence numbers come
/// from a counter every test shares, so a new one differs in them).
#[test]
#[ignore = "writes the fixture"]
fn write_the_replay_fixture() {
    let (lines, _) = bandwidth_run_for("eevdf", 100);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/replay-bandwidth-eevdf.txt"
    );
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}
