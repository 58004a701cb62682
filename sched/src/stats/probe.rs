//! Cost probes inside the core: the PELT update and the uclamp update happen
//! deep inside `enqueue_task`/`dequeue_task`, where the mechanism cannot put its
//! own brackets. The mechanism installs a counter read (the PMU cycle counter,
//! instructions under QEMU icount); the core brackets those two updates with it
//! and accumulates the counts, which the mechanism takes after each operation.
//! Without a counter (the host), each bracket costs one predictable branch.

/// Reads a free-running counter.
pub type CounterRead = fn() -> u64;

/// What the probe accumulated: counts and the number of brackets behind them
/// (so that the mechanism subtracts the empty-bracket cost once per bracket).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeCosts {
    /// Counts spent in PELT updates.
    pub pelt: u64,
    /// PELT brackets (one per entity update).
    pub pelt_brackets: u64,
    /// Counts spent in uclamp updates.
    pub uclamp: u64,
    /// uclamp brackets.
    pub uclamp_brackets: u64,
}

impl ProbeCosts {
    /// Adds `other`'s counts and brackets.
    pub fn add(&mut self, other: ProbeCosts) {
        self.pelt = self.pelt.wrapping_add(other.pelt);
        self.pelt_brackets += other.pelt_brackets;
        self.uclamp = self.uclamp.wrapping_add(other.uclamp);
        self.uclamp_brackets += other.uclamp_brackets;
    }
}

/// Accumulated counter deltas of the PELT and uclamp updates.
#[derive(Clone, Copy, Debug, Default)]
pub struct CostProbe {
    counter: Option<CounterRead>,
    costs: ProbeCosts,
}

impl CostProbe {
    /// Installs (or removes) the counter.
    pub fn set_counter(&mut self, counter: Option<CounterRead>) {
        self.counter = counter;
    }

    /// The counter now (0 without a counter): the start of a bracket.
    #[inline(always)]
    pub fn start(&self) -> u64 {
        match self.counter {
            Some(read) => read(),
            None => 0,
        }
    }

    /// Ends a PELT bracket started at `start`.
    #[inline(always)]
    pub fn end_pelt(&mut self, start: u64) {
        if let Some(read) = self.counter {
            self.costs.pelt = self.costs.pelt.wrapping_add(read().wrapping_sub(start));
            self.costs.pelt_brackets += 1;
        }
    }

    /// Ends a uclamp bracket started at `start`.
    #[inline(always)]
    pub fn end_uclamp(&mut self, start: u64) {
        if let Some(read) = self.counter {
            self.costs.uclamp = self.costs.uclamp.wrapping_add(read().wrapping_sub(start));
            self.costs.uclamp_brackets += 1;
        }
    }

    /// Whether a counter is installed: the caller then brackets its update
    /// with [`Self::start`] and an end, and otherwise skips both tests.
    #[inline(always)]
    pub fn counting(&self) -> bool {
        self.counter.is_some()
    }

    /// Returns what accumulated and resets it.
    pub fn take(&mut self) -> ProbeCosts {
        core::mem::take(&mut self.costs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::{AtomicU64, Ordering};

    static FAKE: AtomicU64 = AtomicU64::new(0);

    /// A counter that advances by 10 at each read.
    fn fake_counter() -> u64 {
        FAKE.fetch_add(10, Ordering::Relaxed)
    }

    #[test]
    fn brackets_accumulate_and_take_resets() {
        let mut probe = CostProbe::default();
        let start = probe.start();
        probe.end_pelt(start);
        assert_eq!(probe.take(), ProbeCosts::default(), "no counter, no cost");
        probe.set_counter(Some(fake_counter));
        let start = probe.start();
        probe.end_pelt(start);
        let start = probe.start();
        probe.end_pelt(start);
        let start = probe.start();
        probe.end_uclamp(start);
        // Each bracket reads twice, 10 apart.
        assert_eq!(
            probe.take(),
            ProbeCosts {
                pelt: 20,
                pelt_brackets: 2,
                uclamp: 10,
                uclamp_brackets: 1
            }
        );
        assert_eq!(probe.take(), ProbeCosts::default());
    }
}
