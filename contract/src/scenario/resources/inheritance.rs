//! Priority inheritance for rt-app's mutexes when `pi_enabled` is set
//! (`docs/priority-inheritance.md`): rt-app then makes its mutexes
//! `PTHREAD_PRIO_INHERIT`, which Linux backs with an rt_mutex.
//!
//! ```text
//!   waiters     handed the mutex in priority order (FIFO among equals)
//!   owner       runs at the best priority of itself and of the top waiter of
//!               each mutex it holds, itself possibly boosted (the chain)
//!   unlock      the boost ends at once: recomputed from what is still held
//! ```
//!
//! Priorities are Linux's `prio` numbers (lower is stronger): an RT priority
//! `p` (1..=99) is `99 - p`, a fair task's is `120 + nice`. A boost only
//! changes scheduling when it reaches the RT range: a fair owner boosted by a
//! fair waiter of a better nice keeps its weight (Linux changes `p->prio`,
//! whose fair class reads `static_prio`), so such boosts are not reported.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::{Instance, Resources};
use fairway_sched::task::Policy;

/// Linux's `MAX_RT_PRIO`: prio numbers below it are RT.
const MAX_RT_PRIO: i32 = 100;
/// The prio number of a fair task of nice 0 (`DEFAULT_PRIO`).
const DEFAULT_PRIO: i32 = 120;

/// A boost the mechanism carries out (`rt_mutex_setprio`): the instance now
/// runs as an RT task of that priority (`Some`), or at its own policy (`None`).
pub type PiChange = (Instance, Option<u8>);

/// Linux's `normal_prio` of `policy`.
pub const fn normal_prio(policy: Policy) -> i32 {
    match policy {
        Policy::Fifo { priority } | Policy::RoundRobin { priority } => {
            MAX_RT_PRIO - 1 - priority as i32
        }
        Policy::Normal { nice } | Policy::Batch { nice } => DEFAULT_PRIO + nice as i32,
        // SCHED_IDLE: the weakest.
        Policy::Idle => DEFAULT_PRIO + 19,
    }
}

/// The inheritance side of [`Resources`].
#[derive(Debug, Default)]
pub(super) struct Inheritance {
    pub(super) enabled: bool,
    /// Each instance's own prio (registered by the mechanism; nice 0 if not).
    normal: BTreeMap<Instance, i32>,
    /// The instances boosted into the RT class now, with their RT priority.
    boosted: BTreeMap<Instance, u8>,
    /// Boosts decided and not yet taken by the mechanism.
    changes: Vec<PiChange>,
}

impl Inheritance {
    fn normal(&self, instance: Instance) -> i32 {
        self.normal.get(&instance).copied().unwrap_or(DEFAULT_PRIO)
    }

    /// `instance`'s prio as it runs now (its boost, else its own).
    pub(super) fn effective(&self, instance: Instance) -> i32 {
        match self.boosted.get(&instance) {
            Some(&priority) => MAX_RT_PRIO - 1 - i32::from(priority),
            None => self.normal(instance),
        }
    }
}

impl Resources {
    /// Turns priority inheritance on (`global.pi_enabled`).
    pub fn enable_priority_inheritance(&mut self) {
        self.inheritance.enabled = true;
    }

    /// Whether mutexes inherit priority.
    pub fn priority_inheritance(&self) -> bool {
        self.inheritance.enabled
    }

    /// Registers the policy `instance` runs with (before it uses a mutex;
    /// unregistered instances count as nice 0).
    pub fn set_policy(&mut self, instance: Instance, policy: Policy) {
        self.inheritance
            .normal
            .insert(instance, normal_prio(policy));
    }

    /// The boosts decided since the last call, in the order they were decided;
    /// the mechanism applies each with `RunQueue::rt_mutex_setprio`.
    pub fn take_pi_changes(&mut self) -> Vec<PiChange> {
        core::mem::take(&mut self.inheritance.changes)
    }

    /// The RT priority `instance` is boosted to now, if it is.
    pub fn pi_boost(&self, instance: Instance) -> Option<u8> {
        self.inheritance.boosted.get(&instance).copied()
    }

    /// The index in `waiters` of the one to hand a mutex to: the first in
    /// arrival order, or with inheritance the strongest (FIFO among equals),
    /// as an rt_mutex orders its waiters.
    pub(super) fn top_waiter(&self, waiters: impl Iterator<Item = Instance>) -> usize {
        if !self.inheritance.enabled {
            return 0;
        }
        let mut best = (i32::MAX, 0);
        for (index, instance) in waiters.enumerate() {
            let prio = self.inheritance.effective(instance);
            if prio < best.0 {
                best = (prio, index);
            }
        }
        best.1
    }

    /// Recomputes every boost from the mutexes' owners and waiters, and
    /// records the ones that changed. The chain (an owner blocked on a mutex
    /// lends its boost on) is a fixed point: each pass can only lower a prio
    /// number, so it ends, even on a cycle of blocked owners (a deadlock).
    pub(super) fn update_boosts(&mut self) {
        if !self.inheritance.enabled {
            return;
        }
        let mut prio: BTreeMap<Instance, i32> = BTreeMap::new();
        for mutex in self.mutexes.values() {
            let Some(owner) = mutex.owner else { continue };
            prio.insert(owner, self.inheritance.normal(owner));
            for &(waiter, _) in &mutex.waiters {
                prio.insert(waiter, self.inheritance.normal(waiter));
            }
        }
        loop {
            let mut changed = false;
            for mutex in self.mutexes.values() {
                let Some(owner) = mutex.owner else { continue };
                let top = mutex
                    .waiters
                    .iter()
                    .map(|(waiter, _)| prio[waiter])
                    .min()
                    .unwrap_or(i32::MAX);
                if top < prio[&owner] {
                    prio.insert(owner, top);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let boost_of = |instance: Instance, inheritance: &Inheritance| {
            let effective = prio.get(&instance).copied()?;
            (effective < MAX_RT_PRIO && effective < inheritance.normal(instance))
                .then(|| (MAX_RT_PRIO - 1 - effective) as u8)
        };
        let mut candidates: Vec<Instance> = self.inheritance.boosted.keys().copied().collect();
        candidates.extend(prio.keys().copied());
        candidates.sort_unstable();
        candidates.dedup();
        for instance in candidates {
            let new = boost_of(instance, &self.inheritance);
            let old = self.inheritance.boosted.get(&instance).copied();
            if new == old {
                continue;
            }
            match new {
                Some(priority) => self.inheritance.boosted.insert(instance, priority),
                None => self.inheritance.boosted.remove(&instance),
            };
            self.inheritance.changes.push((instance, new));
        }
    }
}
