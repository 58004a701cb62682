//! The record of a run: every call into a [`CpuCore`](super::CpuCore) with its
//! inputs (time, CPU, event) and the decision it returned, so that another
//! mechanism (the host simulator) can feed the same inputs to its own cores
//! and check that each returns the same decision (issue 11, point 4; see
//! `docs/core-driver.md`).
//!
//! A record travels as ten unsigned 64-bit words (the kernel prints them on
//! one line); [`Record::encode`] and [`Record::decode`] are the only
//! definition of that format, used on both sides.
//!
//! Bandwidth control (§4.2): the pools are shared by every CPU, so what a
//! pool answers one CPU depends on the others' order. The record keeps those
//! answers as inputs ([`Input::PoolAnswer`], each before the record of the
//! call it was given in), with the calls that reach a core from the pools'
//! timers and settings ([`Input::DistributeRuntime`],
//! [`Input::SetGroupBandwidth`], [`Input::AttachBandwidth`]), so a replay
//! needs no pools.

use crate::bandwidth::runtime::{PoolAnswer, PoolCall};
use crate::class::{DequeueFlags, EnqueueFlags};
use crate::task::{CpuMask, GroupId, Policy, TaskId, TaskParams};

use super::{Leaving, TimerRequest};

/// One call into a core: what it was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// `task_new` and the first enqueue (`wake_up_new_task`).
    TaskNew {
        /// The new task.
        task: TaskId,
        /// Its parameters.
        params: TaskParams,
    },
    /// A wake-up's enqueue and preemption test (`ttwu_do_activate`).
    Wakeup {
        /// The woken task.
        task: TaskId,
        /// The enqueue flags (`migrated` when it changed CPU on the way).
        flags: EnqueueFlags,
    },
    /// An enqueue with no preemption test (a task put back).
    Enqueue {
        /// The task.
        task: TaskId,
        /// The enqueue flags.
        flags: EnqueueFlags,
    },
    /// A dequeue outside `__schedule` (a task leaving for another CPU).
    Dequeue {
        /// The task.
        task: TaskId,
        /// The dequeue flags.
        flags: DequeueFlags,
    },
    /// `__schedule`.
    Schedule {
        /// What becomes of the running task.
        leaving: Leaving,
    },
    /// The periodic tick (`sched_tick`).
    Tick,
    /// The slice-end timer fired (`hrtick`).
    Hrtick,
    /// The slice-end timer re-evaluated (a task was queued from another CPU).
    HrtickUpdate,
    /// The running task yields (`sched_yield`).
    Yield,
    /// The task leaves this run queue with its state (`migrate_task_rq`).
    MigrateOut {
        /// The task.
        task: TaskId,
    },
    /// The task joins this run queue with the state it left its last one with.
    MigrateIn {
        /// The task.
        task: TaskId,
    },
    /// `update_blocked_averages`.
    UpdateBlockedAverages,
    /// A group's load summed over every CPU (`tg->load_avg`) handed to this one.
    GroupLoadSum {
        /// The group.
        group: GroupId,
        /// The sum.
        sum: u64,
    },
    /// A new task group.
    CreateGroup {
        /// Its parent.
        parent: GroupId,
        /// Its `cpu.shares`.
        shares: u64,
    },
    /// A task moves to another group.
    SetTaskGroup {
        /// The task.
        task: TaskId,
        /// Its new group.
        group: GroupId,
    },
    /// A task's uclamp request changes.
    SetTaskUclamp {
        /// The task.
        task: TaskId,
        /// The new `uclamp_min` request.
        min: Option<u16>,
        /// The new `uclamp_max` request.
        max: Option<u16>,
    },
    /// Priority inheritance boosts or restores a task (`rt_mutex_setprio`).
    RtMutexSetprio {
        /// The task.
        task: TaskId,
        /// The RT priority it runs at, `None` for its own.
        priority: Option<u8>,
    },
    /// A task that is not queued is forgotten (it exited while not running).
    TaskDead {
        /// The task.
        task: TaskId,
    },
    /// Load balancing looked at a task and left it: it goes to the head of
    /// `cfs_tasks`.
    CfsTasksRotate {
        /// The task.
        task: TaskId,
    },
    /// The run queue is connected to the groups' bandwidth pools (the first
    /// group with a quota); the output's `resched` says whether it has
    /// bandwidth control. Recorded with `now` 0.
    AttachBandwidth,
    /// A group's limit was set or lifted on this CPU
    /// (`tg_set_cfs_bandwidth`, after its pool was).
    SetGroupBandwidth {
        /// The group.
        group: GroupId,
        /// Whether it has a quota now.
        limited: bool,
    },
    /// Runtime granted by a pool's period or slack timer reached this CPU
    /// (`distribute_cfs_runtime`).
    DistributeRuntime {
        /// The group.
        group: GroupId,
        /// The runtime.
        amount: u64,
        /// The pool paid the whole debt: the run queue comes back.
        unthrottle: bool,
    },
    /// What a group's pool answered this CPU's run queue during the call
    /// recorded next on this CPU (a replay queues it for that call).
    PoolAnswer(PoolAnswer),
}

impl Input {
    /// Whether this input exists only with bandwidth control (a replay then
    /// builds its run queues with it).
    pub fn is_bandwidth(&self) -> bool {
        matches!(
            self,
            Input::AttachBandwidth
                | Input::SetGroupBandwidth { .. }
                | Input::DistributeRuntime { .. }
                | Input::PoolAnswer(_)
        )
    }
}

/// What a call decided (the fields that do not apply stay at their defaults).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// Reschedule the CPU (or: the call succeeded, for a migration or a setter).
    pub resched: bool,
    /// `Schedule`: the task switched to (`None`: idle).
    pub next: Option<TaskId>,
    /// The slice-end timer request.
    pub hrtick: TimerRequest,
}

/// One call: when, on which CPU, what, and what came out. `sequence` orders
/// the records of all CPUs (each taken under the CPU's run-queue lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// The global order.
    pub sequence: u64,
    /// The CPU whose core was called.
    pub cpu: u16,
    /// The time passed in, in ns.
    pub now: u64,
    /// What was asked.
    pub input: Input,
    /// What was decided.
    pub output: Output,
}

/// A record that cannot be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// What is wrong.
    pub what: &'static str,
    /// The offending word.
    pub value: u64,
}

/// "No value" in an optional 16-bit field.
const ABSENT: u64 = 0xffff;

fn optional16(value: Option<u16>) -> u64 {
    value.map_or(ABSENT, u64::from)
}

fn decode_optional16(value: u64) -> Option<u16> {
    (value & 0xffff != ABSENT).then_some((value & 0xffff) as u16)
}

fn enqueue_bits(flags: EnqueueFlags) -> u64 {
    u64::from(flags.wakeup) | u64::from(flags.migrated) << 1 | u64::from(flags.initial) << 2
}

fn enqueue_flags(bits: u64) -> EnqueueFlags {
    EnqueueFlags {
        wakeup: bits & 1 != 0,
        migrated: bits & 2 != 0,
        initial: bits & 4 != 0,
    }
}

fn dequeue_bits(flags: DequeueFlags) -> u64 {
    u64::from(flags.sleep) | u64::from(flags.migrating) << 1
}

fn dequeue_flags(bits: u64) -> DequeueFlags {
    DequeueFlags {
        sleep: bits & 1 != 0,
        migrating: bits & 2 != 0,
    }
}

/// A policy as (kind, value): 0 normal, 1 batch, 2 idle, 3 FIFO, 4 RR.
fn policy_word(policy: Policy) -> u64 {
    let (kind, value) = match policy {
        Policy::Normal { nice } => (0, nice as u8),
        Policy::Batch { nice } => (1, nice as u8),
        Policy::Idle => (2, 0),
        Policy::Fifo { priority } => (3, priority),
        Policy::RoundRobin { priority } => (4, priority),
    };
    kind << 8 | u64::from(value)
}

fn decode_policy(word: u64) -> Result<Policy, DecodeError> {
    let value = (word & 0xff) as u8;
    Ok(match (word >> 8) & 0xff {
        0 => Policy::Normal { nice: value as i8 },
        1 => Policy::Batch { nice: value as i8 },
        2 => Policy::Idle,
        3 => Policy::Fifo { priority: value },
        4 => Policy::RoundRobin { priority: value },
        _ => {
            return Err(DecodeError {
                what: "policy",
                value: word,
            });
        }
    })
}

fn leaving_word(leaving: Leaving) -> u64 {
    match leaving {
        Leaving::Runnable => 0,
        Leaving::Sleeping => 1,
        Leaving::Dead => 2,
    }
}

fn timer_words(request: TimerRequest) -> (u64, u64) {
    match request {
        TimerRequest::Keep => (0, 0),
        TimerRequest::Arm(at) => (1, at),
        TimerRequest::Cancel => (2, 0),
    }
}

fn pool_call_word(call: PoolCall) -> u64 {
    match call {
        PoolCall::Assign => 0,
        PoolCall::ReturnSlack => 1,
        PoolCall::NoPool => 2,
    }
}

/// A pool answer's `a` word: group in bits 0-15, the call in bits 16-23
/// (0 assign, 1 return_slack, 2 no pool), bit 24 set when it asked for a
/// timer (whose expiry is `c`).
fn pool_answer_words(answer: PoolAnswer) -> (u64, u64, u64) {
    (
        u64::from(answer.group.0)
            | pool_call_word(answer.call) << 16
            | u64::from(answer.timer.is_some()) << 24,
        answer.amount,
        answer.timer.unwrap_or(0),
    )
}

fn decode_pool_answer(a: u64, b: u64, c: u64) -> Result<PoolAnswer, DecodeError> {
    let call = match (a >> 16) & 0xff {
        0 => PoolCall::Assign,
        1 => PoolCall::ReturnSlack,
        2 => PoolCall::NoPool,
        _ => {
            return Err(DecodeError {
                what: "pool call",
                value: a,
            });
        }
    };
    Ok(PoolAnswer {
        group: GroupId(a as u16),
        call,
        amount: b,
        timer: (a & 1 << 24 != 0).then_some(c),
    })
}

impl Record {
    /// The ten words of this record:
    /// `sequence cpu now event task a b c decision timer_at`.
    ///
    /// `event` numbers the input (the order of [`Input`]'s variants up to
    /// `CfsTasksRotate` = 17, `TaskDead` = 18, then the bandwidth inputs):
    ///
    /// | event | input | task | a | b | c |
    /// |---|---|---|---|---|---|
    /// | 19 | `AttachBandwidth` | 0 | 0 | 0 | 0 |
    /// | 20 | `SetGroupBandwidth` | 0 | group | limited (0/1) | 0 |
    /// | 21 | `DistributeRuntime` | 0 | group | amount (ns) | unthrottle (0/1) |
    /// | 22 | `PoolAnswer` | 0 | group, call << 16, timer? << 24 | amount (ns) | timer expiry (ns) |
    ///
    /// A pool answer's call is 0 for `assign`, 1 for `return_slack`, 2 for
    /// no pool; bit 24 of `a` says whether `c` holds a timer request.
    pub fn encode(&self) -> [u64; 10] {
        let (event, task, a, b, c) = match self.input {
            Input::TaskNew { task, params } => (
                0,
                task,
                policy_word(params.policy)
                    | optional16(params.uclamp_min) << 16
                    | optional16(params.uclamp_max) << 32
                    | u64::from(params.group.0) << 48,
                params.affinity.0,
                params.custom_slice.map_or(u64::MAX, |slice| slice),
            ),
            Input::Wakeup { task, flags } => (1, task, enqueue_bits(flags), 0, 0),
            Input::Enqueue { task, flags } => (2, task, enqueue_bits(flags), 0, 0),
            Input::Dequeue { task, flags } => (3, task, dequeue_bits(flags), 0, 0),
            Input::Schedule { leaving } => (4, TaskId(0), leaving_word(leaving), 0, 0),
            Input::Tick => (5, TaskId(0), 0, 0, 0),
            Input::Hrtick => (6, TaskId(0), 0, 0, 0),
            Input::HrtickUpdate => (7, TaskId(0), 0, 0, 0),
            Input::Yield => (8, TaskId(0), 0, 0, 0),
            Input::MigrateOut { task } => (9, task, 0, 0, 0),
            Input::MigrateIn { task } => (10, task, 0, 0, 0),
            Input::UpdateBlockedAverages => (11, TaskId(0), 0, 0, 0),
            Input::GroupLoadSum { group, sum } => (12, TaskId(0), u64::from(group.0), sum, 0),
            Input::CreateGroup { parent, shares } => {
                (13, TaskId(0), u64::from(parent.0), shares, 0)
            }
            Input::SetTaskGroup { task, group } => (14, task, u64::from(group.0), 0, 0),
            Input::SetTaskUclamp { task, min, max } => {
                (15, task, optional16(min), optional16(max), 0)
            }
            Input::RtMutexSetprio { task, priority } => {
                (16, task, optional16(priority.map(u16::from)), 0, 0)
            }
            Input::CfsTasksRotate { task } => (17, task, 0, 0, 0),
            Input::TaskDead { task } => (18, task, 0, 0, 0),
            Input::AttachBandwidth => (19, TaskId(0), 0, 0, 0),
            Input::SetGroupBandwidth { group, limited } => {
                (20, TaskId(0), u64::from(group.0), u64::from(limited), 0)
            }
            Input::DistributeRuntime {
                group,
                amount,
                unthrottle,
            } => (
                21,
                TaskId(0),
                u64::from(group.0),
                amount,
                u64::from(unthrottle),
            ),
            Input::PoolAnswer(answer) => {
                let (a, b, c) = pool_answer_words(answer);
                (22, TaskId(0), a, b, c)
            }
        };
        let (timer_kind, timer_at) = timer_words(self.output.hrtick);
        let decision = u64::from(self.output.resched)
            | timer_kind << 1
            | self.output.next.map_or(0, |t| u64::from(t.0) + 1) << 8;
        [
            self.sequence,
            u64::from(self.cpu),
            self.now,
            event,
            u64::from(task.0),
            a,
            b,
            c,
            decision,
            timer_at,
        ]
    }

    /// The record the ten words of [`Record::encode`] describe.
    pub fn decode(words: &[u64; 10]) -> Result<Record, DecodeError> {
        let [sequence, cpu, now, event, task, a, b, c, decision, timer_at] = *words;
        let task = TaskId(u16::try_from(task).map_err(|_| DecodeError {
            what: "task",
            value: task,
        })?);
        let input = match event {
            0 => Input::TaskNew {
                task,
                params: TaskParams {
                    policy: decode_policy(a & 0xffff)?,
                    uclamp_min: decode_optional16(a >> 16),
                    uclamp_max: decode_optional16(a >> 32),
                    group: GroupId((a >> 48) as u16),
                    affinity: CpuMask(b),
                    custom_slice: (c != u64::MAX).then_some(c),
                },
            },
            1 => Input::Wakeup {
                task,
                flags: enqueue_flags(a),
            },
            2 => Input::Enqueue {
                task,
                flags: enqueue_flags(a),
            },
            3 => Input::Dequeue {
                task,
                flags: dequeue_flags(a),
            },
            4 => Input::Schedule {
                leaving: match a {
                    0 => Leaving::Runnable,
                    1 => Leaving::Sleeping,
                    2 => Leaving::Dead,
                    _ => {
                        return Err(DecodeError {
                            what: "leaving",
                            value: a,
                        });
                    }
                },
            },
            5 => Input::Tick,
            6 => Input::Hrtick,
            7 => Input::HrtickUpdate,
            8 => Input::Yield,
            9 => Input::MigrateOut { task },
            10 => Input::MigrateIn { task },
            11 => Input::UpdateBlockedAverages,
            12 => Input::GroupLoadSum {
                group: GroupId(a as u16),
                sum: b,
            },
            13 => Input::CreateGroup {
                parent: GroupId(a as u16),
                shares: b,
            },
            14 => Input::SetTaskGroup {
                task,
                group: GroupId(a as u16),
            },
            15 => Input::SetTaskUclamp {
                task,
                min: decode_optional16(a),
                max: decode_optional16(b),
            },
            16 => Input::RtMutexSetprio {
                task,
                priority: decode_optional16(a).map(|p| p as u8),
            },
            17 => Input::CfsTasksRotate { task },
            18 => Input::TaskDead { task },
            19 => Input::AttachBandwidth,
            20 => Input::SetGroupBandwidth {
                group: GroupId(a as u16),
                limited: b != 0,
            },
            21 => Input::DistributeRuntime {
                group: GroupId(a as u16),
                amount: b,
                unthrottle: c != 0,
            },
            22 => Input::PoolAnswer(decode_pool_answer(a, b, c)?),
            _ => {
                return Err(DecodeError {
                    what: "event",
                    value: event,
                });
            }
        };
        let hrtick = match (decision >> 1) & 0x3 {
            0 => TimerRequest::Keep,
            1 => TimerRequest::Arm(timer_at),
            2 => TimerRequest::Cancel,
            _ => {
                return Err(DecodeError {
                    what: "timer request",
                    value: decision,
                });
            }
        };
        let next = (decision >> 8) & 0x1_ffff;
        Ok(Record {
            sequence,
            cpu: u16::try_from(cpu).map_err(|_| DecodeError {
                what: "cpu",
                value: cpu,
            })?,
            now,
            input,
            output: Output {
                resched: decision & 1 != 0,
                next: (next != 0).then(|| TaskId((next - 1) as u16)),
                hrtick,
            },
        })
    }
}
