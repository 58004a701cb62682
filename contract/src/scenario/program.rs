//! A task's place in its rt-app program: task loop, phase, phase loop and event (§8.3).
//! Shared by the host simulator and the kernel, so both walk a program identically.

use crate::scenario::{Event, TaskSpec};

/// Where a task instance is in its program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    /// Completed passes over all phases.
    pub task_iteration: i64,
    /// The current phase.
    pub phase: usize,
    /// Completed passes of the current phase.
    pub phase_iteration: i64,
    /// The next event in the current phase.
    pub event: usize,
}

/// The next step of a program.
#[derive(Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// Carry out this event. `phase_start` is set for the first event of a phase's first pass,
    /// when the phase's attributes take effect; `iteration_start` for the first event of any
    /// pass of a phase (the reference of a timer first used in it).
    Event {
        /// The event.
        event: &'a Event,
        /// The phase index.
        phase: usize,
        /// First event of the phase's first pass.
        phase_start: bool,
        /// First event of a pass of the phase.
        iteration_start: bool,
    },
    /// The program is over.
    Finished,
}

fn finished(count: i64, done: i64) -> bool {
    count != -1 && done >= count
}

impl Cursor {
    /// Whether a program loops forever (task `loop: -1`, or a phase with `loop: -1`).
    pub fn runs_forever(spec: &TaskSpec) -> bool {
        spec.instances > 0
            && spec.phases.iter().any(|p| p.loop_count != 0)
            && (spec.loop_count == -1 || spec.phases.iter().any(|p| p.loop_count == -1))
    }

    /// Whether a forever-looping program spends time in each pass (a positive run, runtime,
    /// sleep, mem or iorun, or a timer); without it a simulation could not advance. Waiting
    /// for another task (a lock, a condition, a barrier...) does not count: two tasks
    /// that only wake each other would loop at one instant.
    pub fn makes_progress(spec: &TaskSpec) -> bool {
        spec.phases.iter().filter(|p| p.loop_count != 0).any(|p| {
            p.events.iter().any(|e| match e.event {
                Event::Runtime { us } | Event::Sleep { us } => us > 0,
                Event::Timer { .. } => true,
                ref busy => busy.work_us().is_some_and(|us| us > 0),
            })
        })
    }

    /// Takes the next step of `spec`'s program and moves past it.
    pub fn next<'a>(&mut self, spec: &'a TaskSpec) -> Step<'a> {
        // A pass over all phases with loop 0 consumes no event: bounded by one full pass.
        let mut empty_phases = 0;
        loop {
            if finished(spec.loop_count, self.task_iteration) {
                return Step::Finished;
            }
            let phase = &spec.phases[self.phase];
            if finished(phase.loop_count, self.phase_iteration) {
                empty_phases += 1;
                if empty_phases > spec.phases.len() {
                    return Step::Finished;
                }
                self.next_phase(spec);
                continue;
            }
            if let Some(named) = phase.events.get(self.event) {
                let iteration_start = self.event == 0;
                let step = Step::Event {
                    event: &named.event,
                    phase: self.phase,
                    phase_start: iteration_start && self.phase_iteration == 0,
                    iteration_start,
                };
                self.event += 1;
                return step;
            }
            self.event = 0;
            self.phase_iteration += 1;
            if finished(phase.loop_count, self.phase_iteration) {
                self.next_phase(spec);
            }
        }
    }

    fn next_phase(&mut self, spec: &TaskSpec) {
        self.phase_iteration = 0;
        self.event = 0;
        self.phase += 1;
        if self.phase == spec.phases.len() {
            self.phase = 0;
            self.task_iteration += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Attributes, NamedEvent, Phase};
    use alloc::vec;
    use alloc::vec::Vec;

    fn phase(name: &str, loop_count: i64, runs: &[i64]) -> Phase {
        Phase {
            name: name.into(),
            loop_count,
            attributes: Attributes::default(),
            events: runs
                .iter()
                .map(|&us| NamedEvent {
                    key: "run".into(),
                    event: Event::Run { us },
                })
                .collect(),
        }
    }

    fn spec(loop_count: i64, phases: Vec<Phase>) -> TaskSpec {
        TaskSpec {
            name: "t".into(),
            instances: 1,
            loop_count,
            delay_us: 0,
            attributes: Attributes::default(),
            phases,
        }
    }

    fn trace(spec: &TaskSpec, limit: usize) -> Vec<(i64, bool)> {
        let mut cursor = Cursor::default();
        let mut out = Vec::new();
        while out.len() < limit {
            match cursor.next(spec) {
                Step::Finished => break,
                Step::Event {
                    event: Event::Run { us },
                    phase_start,
                    ..
                } => out.push((*us, phase_start)),
                Step::Event { .. } => unreachable!(),
            }
        }
        out
    }

    #[test]
    fn loops_nest_as_rt_app_describes() {
        // Task loop 2 over phases a (loop 2: 1, 2), b (loop 0: skipped), c (loop 1: 3).
        let spec = spec(
            2,
            vec![
                phase("a", 2, &[1, 2]),
                phase("b", 0, &[9]),
                phase("c", 1, &[3]),
            ],
        );
        let expected = [
            (1, true),
            (2, false),
            (1, false),
            (2, false),
            (3, true),
            (1, true),
            (2, false),
            (1, false),
            (2, false),
            (3, true),
        ];
        assert_eq!(trace(&spec, 100), expected);
        assert!(!Cursor::runs_forever(&spec));
    }

    #[test]
    fn forever_and_progress() {
        let forever = spec(-1, vec![phase("a", 1, &[0])]);
        assert!(Cursor::runs_forever(&forever));
        assert!(!Cursor::makes_progress(&forever));
        assert_eq!(trace(&forever, 5).len(), 5);
        let phase_forever = spec(1, vec![phase("a", -1, &[5])]);
        assert!(Cursor::runs_forever(&phase_forever));
        assert!(Cursor::makes_progress(&phase_forever));
        let skipped = spec(-1, vec![phase("a", 0, &[5])]);
        assert!(!Cursor::runs_forever(&skipped));
        assert_eq!(trace(&skipped, 5), []);
    }
}
