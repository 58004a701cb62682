//! How a run queue holds its tree: a [`TimelineArena`] of the pick its type
//! fixes, called directly, or a [`TimelineNodes`] whose pick is chosen at
//! boot, dispatching once per call ([`TimelineStore`] is what both give).

use super::{Augment, CfsNodes, EevdfNodes, Timeline, TimelineArena};

/// The node arena of a run queue whose pick policy is chosen at boot: the
/// CFS or the EEVDF tree. Each call dispatches once on the policy, where the
/// tree code below it is compiled for that tree alone.
#[derive(Clone, Debug)]
pub enum TimelineNodes {
    /// Ordered by vruntime (CFS, §1.4).
    Cfs(CfsNodes),
    /// Ordered by virtual deadline, augmented with the subtree minimum
    /// vruntime (EEVDF, §1.5).
    Eevdf(EevdfNodes),
}

/// Evaluates `$call` with `$arena` bound to whichever arena `$nodes` holds.
macro_rules! dispatch {
    ($nodes:expr, $arena:ident => $call:expr) => {
        match $nodes {
            TimelineNodes::Cfs($arena) => $call,
            TimelineNodes::Eevdf($arena) => $call,
        }
    };
}

impl TimelineNodes {
    /// An arena for entity numbers below `capacity` (at most
    /// [`MAX_ENTITIES`](super::MAX_ENTITIES)(super::MAX_ENTITIES)); `augmented` chooses the EEVDF tree.
    pub fn new(capacity: usize, augmented: bool) -> Self {
        if augmented {
            TimelineNodes::Eevdf(TimelineArena::new(capacity))
        } else {
            TimelineNodes::Cfs(TimelineArena::new(capacity))
        }
    }
}

/// What a fair run queue needs of its node arena. A run queue built for one
/// pick (`CfsPick`, `EevdfPick`) holds that pick's [`TimelineArena`] and calls
/// it directly; one whose pick is a run-time value ([`TimelineNodes`], for tests
/// and tools that compare both picks) dispatches once per call.
pub trait TimelineStore: Clone + core::fmt::Debug {
    /// An arena for entity numbers below `capacity`; `augmented`: the EEVDF
    /// tree (fixed by the type, except for [`TimelineNodes`]).
    fn build(capacity: usize, augmented: bool) -> Self;
    /// See [`TimelineArena::reserve`].
    fn reserve(&mut self, capacity: usize);
    /// See [`TimelineArena::bytes`].
    fn bytes(&self) -> usize;
    /// See [`TimelineArena::key`].
    fn key(&self, id: u32) -> u64;
    /// See [`TimelineArena::min_vruntime`].
    fn min_vruntime(&self, timeline: &Timeline) -> Option<u64>;
    /// See [`TimelineArena::insert`].
    fn insert(&mut self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64);
    /// See [`TimelineArena::remove`].
    fn remove(&mut self, timeline: &mut Timeline, id: u32);
    /// See [`TimelineArena::next`].
    fn next(&self, id: u32) -> Option<u32>;
    /// See [`TimelineArena::first_eligible`].
    fn first_eligible(&self, timeline: &Timeline, eligible: impl Fn(u64) -> bool) -> Option<u32>;
    /// Checks the tree's invariants; the number of nodes (tests).
    #[cfg(test)]
    fn check(&self, timeline: &Timeline) -> usize;
}

impl<A: Augment> TimelineStore for TimelineArena<A> {
    fn build(capacity: usize, _augmented: bool) -> Self {
        TimelineArena::new(capacity)
    }
    fn reserve(&mut self, capacity: usize) {
        TimelineArena::reserve(self, capacity)
    }
    fn bytes(&self) -> usize {
        TimelineArena::bytes(self)
    }
    #[inline(always)]
    fn key(&self, id: u32) -> u64 {
        TimelineArena::key(self, id)
    }
    #[inline(always)]
    fn min_vruntime(&self, timeline: &Timeline) -> Option<u64> {
        TimelineArena::min_vruntime(self, timeline)
    }
    #[inline(always)]
    fn insert(&mut self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64) {
        TimelineArena::insert(self, timeline, id, key, vruntime)
    }
    #[inline(always)]
    fn remove(&mut self, timeline: &mut Timeline, id: u32) {
        TimelineArena::remove(self, timeline, id)
    }
    #[inline(always)]
    fn next(&self, id: u32) -> Option<u32> {
        TimelineArena::next(self, id)
    }
    #[inline(always)]
    fn first_eligible(&self, timeline: &Timeline, eligible: impl Fn(u64) -> bool) -> Option<u32> {
        TimelineArena::first_eligible(self, timeline, eligible)
    }
    #[cfg(test)]
    fn check(&self, timeline: &Timeline) -> usize {
        TimelineArena::check(self, timeline)
    }
}

impl TimelineStore for TimelineNodes {
    fn build(capacity: usize, augmented: bool) -> Self {
        TimelineNodes::new(capacity, augmented)
    }
    fn reserve(&mut self, capacity: usize) {
        dispatch!(self, arena => arena.reserve(capacity))
    }
    fn bytes(&self) -> usize {
        dispatch!(self, arena => arena.bytes())
    }
    #[inline]
    fn key(&self, id: u32) -> u64 {
        dispatch!(self, arena => arena.key(id))
    }
    #[inline]
    fn min_vruntime(&self, timeline: &Timeline) -> Option<u64> {
        dispatch!(self, arena => arena.min_vruntime(timeline))
    }
    #[inline]
    fn insert(&mut self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64) {
        dispatch!(self, arena => arena.insert(timeline, id, key, vruntime))
    }
    #[inline]
    fn remove(&mut self, timeline: &mut Timeline, id: u32) {
        dispatch!(self, arena => arena.remove(timeline, id))
    }
    fn next(&self, id: u32) -> Option<u32> {
        dispatch!(self, arena => arena.next(id))
    }
    fn first_eligible(&self, timeline: &Timeline, eligible: impl Fn(u64) -> bool) -> Option<u32> {
        dispatch!(self, arena => arena.first_eligible(timeline, eligible))
    }
    #[cfg(test)]
    fn check(&self, timeline: &Timeline) -> usize {
        dispatch!(self, arena => arena.check(timeline))
    }
}
