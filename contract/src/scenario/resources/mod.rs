//! rt-app's resources as one state machine that the kernel and the simulator share
//! (`docs/rtapp.md`, "Resources"): mutexes, condition variables, barriers, counting
//! semaphores, and suspend/resume.
//!
//! Each call is made by a running instance for one of its events and says whether it
//! proceeds or blocks; the instances it unblocks are appended to `wake`, and the
//! mechanism wakes them (the kernel with `wake_up`, the simulator with a wake-up
//! event). An instance is woken once, when its whole event is done: a task blocked
//! in `lock` is woken holding the mutex, one blocked in `wait` holding the mutex
//! again, one blocked in `sync` after it has been signalled, has retaken the mutex
//! and released it. The steps between (a `sync` that waited for its mutex signals
//! and waits when it gets it) are carried out here on the blocked task's behalf,
//! so neither mechanism needs to know them and both take the same decisions.
//!
//! ```text
//!   lock m      free: take it, proceed        held: queue on m (FIFO), block
//!   unlock m    hand m to m's first waiter (it continues its event), proceed
//!   wait c m    queue on c, release m, block; signalled: retake m (queue if held)
//!   signal c    first waiter of c retakes its mutex; nobody waits: lost
//!   broad c     every waiter of c, in order
//!   sync c m    lock m; signal c; wait c m; unlock m   (as one event)
//!   barrier b   the last of its users to arrive releases the others
//!   sem_post s  wake the first waiter, else count + 1
//!   sem_wait s  count > 0: count - 1, proceed; else queue, block
//!   suspend     block until resumed; resume t: wake t if suspended (else lost)
//! ```
//!
//! A call that returns [`Outcome::Block`] may already list the caller in `wake`
//! (a `wait` whose release lets a partner signal it back at once): the mechanism
//! registers the block first, then carries out the wake-ups.
//!
//! A mutex is handed over in arrival order (no stealing by a task that comes later),
//! or with `pi_enabled` in priority order ([`inheritance`]), which makes runs
//! deterministic; rt-app's pthread mutexes let the woken waiter race
//! for it. Misuse that would be undefined behaviour with pthreads (unlocking a mutex
//! one does not hold, locking it twice) is a [`ResourceError`] naming the task and
//! the mutex, and ends the run.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::{Event, Scenario};

mod inheritance;
pub use inheritance::{PiChange, normal_prio};

/// A task instance: its index in the run's table of instances.
pub type Instance = usize;

/// Whether the calling instance goes on with its next event or blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Outcome {
    /// The event is done; go on.
    Proceed,
    /// Sleep until woken (the instance is then appended to some call's `wake`).
    Block,
}

/// A use of a mutex that pthreads leaves undefined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceError {
    /// `unlock` (or `wait`) of a mutex the instance does not hold.
    NotOwner {
        /// The instance.
        instance: Instance,
        /// The mutex.
        mutex: String,
    },
    /// `lock` (or `sync`) of a mutex the instance already holds: it would wait for
    /// itself forever.
    Relock {
        /// The instance.
        instance: Instance,
        /// The mutex.
        mutex: String,
    },
}

impl fmt::Display for ResourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceError::NotOwner { mutex, .. } => {
                write!(f, "releases mutex \"{mutex}\", which it does not hold")
            }
            ResourceError::Relock { mutex, .. } => write!(
                f,
                "locks mutex \"{mutex}\", which it already holds (it would wait for itself)"
            ),
        }
    }
}

impl ResourceError {
    /// The instance that misused the mutex.
    pub fn instance(&self) -> Instance {
        match self {
            ResourceError::NotOwner { instance, .. } | ResourceError::Relock { instance, .. } => {
                *instance
            }
        }
    }
}

/// What a task that is handed a mutex does with it, still blocked.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Continuation {
    /// Its `lock`, or the retake of its `wait`, is done: wake it holding the mutex.
    Wake,
    /// Its `sync` got the mutex: signal the condition, then wait on it.
    SyncSignal(String),
    /// Its `sync` was signalled and retook the mutex: release it and wake.
    UnlockThenWake,
}

#[derive(Debug, Default)]
struct Mutex {
    owner: Option<Instance>,
    waiters: VecDeque<(Instance, Continuation)>,
}

/// A task waiting on a condition, with the mutex it retakes when signalled.
#[derive(Debug)]
struct ConditionWaiter {
    instance: Instance,
    mutex: String,
    /// `sync`: release the mutex once retaken.
    then_unlock: bool,
}

#[derive(Debug, Default)]
struct Barrier {
    users: usize,
    waiting: Vec<Instance>,
}

#[derive(Debug, Default)]
struct Semaphore {
    count: u64,
    waiters: VecDeque<Instance>,
}

/// Every resource of a run.
#[derive(Debug, Default)]
pub struct Resources {
    mutexes: BTreeMap<String, Mutex>,
    conditions: BTreeMap<String, VecDeque<ConditionWaiter>>,
    barriers: BTreeMap<String, Barrier>,
    semaphores: BTreeMap<String, Semaphore>,
    suspended: BTreeSet<Instance>,
    /// Instances blocked here, for deadlock detection.
    blocked: BTreeSet<Instance>,
    /// Priority inheritance (`pi_enabled`), off by default.
    inheritance: inheritance::Inheritance,
}

impl Resources {
    /// The resources of `scenario`: each barrier knows its users, every instance of
    /// every task whose program names it (rt-app counts them from the file; tasks
    /// started by `fork` may not use barriers, which validation checks).
    pub fn new(scenario: &Scenario) -> Self {
        let mut resources = Resources::default();
        if scenario.global.pi_enabled {
            resources.enable_priority_inheritance();
        }
        for task in &scenario.tasks {
            let mut names: BTreeSet<&str> = BTreeSet::new();
            for phase in &task.phases {
                for event in &phase.events {
                    if let Event::Barrier { name } = &event.event {
                        names.insert(name);
                    }
                }
            }
            for name in names {
                resources
                    .barriers
                    .entry(String::from(name))
                    .or_default()
                    .users += task.instances.max(0) as usize;
            }
        }
        resources
    }

    /// How many instances are blocked on a resource. When it equals the number of
    /// live instances and none sleeps on a timer, nothing can wake them: a deadlock.
    pub fn blocked_count(&self) -> usize {
        self.blocked.len()
    }

    /// The instances blocked on a resource, in index order.
    pub fn blocked(&self) -> impl Iterator<Item = Instance> + '_ {
        self.blocked.iter().copied()
    }

    fn block(&mut self, instance: Instance) -> Outcome {
        self.blocked.insert(instance);
        Outcome::Block
    }

    /// Blocks `me`, just queued on a mutex: its owner may inherit its priority.
    fn block_on_mutex(&mut self, me: Instance) -> Outcome {
        let outcome = self.block(me);
        self.update_boosts();
        outcome
    }

    fn wake(&mut self, instance: Instance, wake: &mut Vec<Instance>) {
        self.blocked.remove(&instance);
        wake.push(instance);
    }

    /// `lock`: take `mutex`, or queue for it.
    pub fn lock(
        &mut self,
        me: Instance,
        mutex: &str,
        _wake: &mut Vec<Instance>,
    ) -> Result<Outcome, ResourceError> {
        let entry = self.mutexes.entry(String::from(mutex)).or_default();
        match entry.owner {
            None => {
                entry.owner = Some(me);
                Ok(Outcome::Proceed)
            }
            Some(owner) if owner == me => Err(ResourceError::Relock {
                instance: me,
                mutex: String::from(mutex),
            }),
            Some(_) => {
                entry.waiters.push_back((me, Continuation::Wake));
                Ok(self.block_on_mutex(me))
            }
        }
    }

    /// `unlock`: release `mutex`, handing it to its first waiter.
    pub fn unlock(
        &mut self,
        me: Instance,
        mutex: &str,
        wake: &mut Vec<Instance>,
    ) -> Result<Outcome, ResourceError> {
        self.check_owner(me, mutex)?;
        self.release(String::from(mutex), wake);
        self.update_boosts();
        Ok(Outcome::Proceed)
    }

    /// `wait`: release `mutex` and sleep on `condition`; woken holding `mutex`.
    pub fn wait(
        &mut self,
        me: Instance,
        condition: &str,
        mutex: &str,
        wake: &mut Vec<Instance>,
    ) -> Result<Outcome, ResourceError> {
        self.check_owner(me, mutex)?;
        self.enqueue_waiter(me, condition, mutex, false);
        // Blocked before the release: what the release sets going may wake it.
        let outcome = self.block(me);
        self.release(String::from(mutex), wake);
        self.update_boosts();
        Ok(outcome)
    }

    /// `signal` (`all` = false) or `broad` (`all` = true) of `condition`.
    pub fn signal(&mut self, condition: &str, all: bool, wake: &mut Vec<Instance>) -> Outcome {
        let mut releases = VecDeque::new();
        self.signal_inner(condition, all, wake, &mut releases);
        self.release_all(releases, wake);
        self.update_boosts();
        Outcome::Proceed
    }

    /// `sync`: lock `mutex`, signal `condition`, wait on it, unlock, as one event.
    pub fn sync(
        &mut self,
        me: Instance,
        condition: &str,
        mutex: &str,
        wake: &mut Vec<Instance>,
    ) -> Result<Outcome, ResourceError> {
        let entry = self.mutexes.entry(String::from(mutex)).or_default();
        match entry.owner {
            Some(owner) if owner == me => Err(ResourceError::Relock {
                instance: me,
                mutex: String::from(mutex),
            }),
            Some(_) => {
                entry
                    .waiters
                    .push_back((me, Continuation::SyncSignal(String::from(condition))));
                Ok(self.block_on_mutex(me))
            }
            None => {
                entry.owner = Some(me);
                let mut releases = VecDeque::new();
                self.signal_inner(condition, false, wake, &mut releases);
                self.enqueue_waiter(me, condition, mutex, true);
                // Blocked before the release: what the release sets going may wake it.
                let outcome = self.block(me);
                releases.push_back(String::from(mutex));
                self.release_all(releases, wake);
                self.update_boosts();
                Ok(outcome)
            }
        }
    }

    /// `barrier`: the last of the barrier's users to arrive releases the others.
    pub fn barrier(&mut self, me: Instance, name: &str, wake: &mut Vec<Instance>) -> Outcome {
        let barrier = self.barriers.entry(String::from(name)).or_default();
        if barrier.waiting.len() + 1 >= barrier.users {
            let released = core::mem::take(&mut barrier.waiting);
            for instance in released {
                self.wake(instance, wake);
            }
            Outcome::Proceed
        } else {
            barrier.waiting.push(me);
            self.block(me)
        }
    }

    /// `sem_post`: wake the first waiter, or remember the post.
    pub fn sem_post(&mut self, name: &str, wake: &mut Vec<Instance>) -> Outcome {
        let semaphore = self.semaphores.entry(String::from(name)).or_default();
        match semaphore.waiters.pop_front() {
            Some(waiter) => self.wake(waiter, wake),
            None => semaphore.count = semaphore.count.saturating_add(1),
        }
        Outcome::Proceed
    }

    /// `sem_wait`: take a post, or queue for one.
    pub fn sem_wait(&mut self, me: Instance, name: &str) -> Outcome {
        let semaphore = self.semaphores.entry(String::from(name)).or_default();
        if semaphore.count > 0 {
            semaphore.count -= 1;
            Outcome::Proceed
        } else {
            semaphore.waiters.push_back(me);
            self.block(me)
        }
    }

    /// `suspend`: block until another instance resumes this one.
    pub fn suspend(&mut self, me: Instance) -> Outcome {
        self.suspended.insert(me);
        self.block(me)
    }

    /// `resume`: wake each of `targets` that is suspended (a resume of a task that
    /// is not suspended is lost, as a signal with no waiter).
    pub fn resume(
        &mut self,
        targets: impl IntoIterator<Item = Instance>,
        wake: &mut Vec<Instance>,
    ) -> Outcome {
        for target in targets {
            if self.suspended.remove(&target) {
                self.wake(target, wake);
            }
        }
        Outcome::Proceed
    }

    fn check_owner(&self, me: Instance, mutex: &str) -> Result<(), ResourceError> {
        match self.mutexes.get(mutex) {
            Some(entry) if entry.owner == Some(me) => Ok(()),
            _ => Err(ResourceError::NotOwner {
                instance: me,
                mutex: String::from(mutex),
            }),
        }
    }

    fn enqueue_waiter(&mut self, me: Instance, condition: &str, mutex: &str, then_unlock: bool) {
        self.conditions
            .entry(String::from(condition))
            .or_default()
            .push_back(ConditionWaiter {
                instance: me,
                mutex: String::from(mutex),
                then_unlock,
            });
    }

    /// Signalled waiters retake their mutexes; a mutex that a continuation
    /// releases is appended to `releases`.
    fn signal_inner(
        &mut self,
        condition: &str,
        all: bool,
        wake: &mut Vec<Instance>,
        releases: &mut VecDeque<String>,
    ) {
        loop {
            let Some(waiter) = self
                .conditions
                .get_mut(condition)
                .and_then(VecDeque::pop_front)
            else {
                return;
            };
            let continuation = if waiter.then_unlock {
                Continuation::UnlockThenWake
            } else {
                Continuation::Wake
            };
            let entry = self.mutexes.entry(waiter.mutex.clone()).or_default();
            if entry.owner.is_none() {
                entry.owner = Some(waiter.instance);
                self.carry_on(waiter.instance, waiter.mutex, continuation, wake, releases);
            } else {
                entry.waiters.push_back((waiter.instance, continuation));
            }
            if !all {
                return;
            }
        }
    }

    /// `instance` was handed `mutex`: it does what its event asks next.
    fn carry_on(
        &mut self,
        instance: Instance,
        mutex: String,
        continuation: Continuation,
        wake: &mut Vec<Instance>,
        releases: &mut VecDeque<String>,
    ) {
        match continuation {
            Continuation::Wake => self.wake(instance, wake),
            Continuation::UnlockThenWake => {
                self.wake(instance, wake);
                releases.push_back(mutex);
            }
            Continuation::SyncSignal(condition) => {
                self.signal_inner(&condition, false, wake, releases);
                self.enqueue_waiter(instance, &condition, &mutex, true);
                releases.push_back(mutex);
            }
        }
    }

    fn release(&mut self, mutex: String, wake: &mut Vec<Instance>) {
        let mut releases = VecDeque::new();
        releases.push_back(mutex);
        self.release_all(releases, wake);
    }

    /// Releases each mutex in turn, handing it to its first waiter, whose
    /// continuation may release more (iterative: no recursion depth to bound).
    fn release_all(&mut self, mut releases: VecDeque<String>, wake: &mut Vec<Instance>) {
        while let Some(mutex) = releases.pop_front() {
            let Some(entry) = self.mutexes.get(&mutex) else {
                continue;
            };
            let top = self.top_waiter(entry.waiters.iter().map(|(waiter, _)| *waiter));
            let Some(entry) = self.mutexes.get_mut(&mutex) else {
                continue;
            };
            entry.owner = None;
            if let Some((next, continuation)) = entry.waiters.remove(top) {
                entry.owner = Some(next);
                self.carry_on(next, mutex, continuation, wake, &mut releases);
            }
        }
    }
}

#[cfg(test)]
mod tests;
