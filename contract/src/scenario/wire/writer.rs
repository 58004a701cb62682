//! The encoder: appends a [`Scenario`]'s items in the order of the layout table.

use alloc::vec::Vec;

use super::{WireError, WireErrorKind};
use crate::scenario::{Attributes, Calibration, Event, Phase, PolicyName, Scenario, TimerMode};

/// Appends the body's items.
pub(super) struct Writer {
    pub(super) bytes: Vec<u8>,
}

impl Writer {
    fn u8(&mut self, value: u8) {
        self.bytes.push(value);
    }

    fn i64(&mut self, value: i64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    pub(super) fn count(&mut self, field: &'static str, length: usize) -> Result<(), WireError> {
        let count = u32::try_from(length).map_err(|_| {
            WireError::new(self.bytes.len(), WireErrorKind::TooLarge { field, length })
        })?;
        self.bytes.extend_from_slice(&count.to_le_bytes());
        Ok(())
    }

    fn string(&mut self, field: &'static str, text: &str) -> Result<(), WireError> {
        self.count(field, text.len())?;
        self.bytes.extend_from_slice(text.as_bytes());
        Ok(())
    }

    fn integers(&mut self, field: &'static str, values: &[i64]) -> Result<(), WireError> {
        self.count(field, values.len())?;
        values.iter().for_each(|&v| self.i64(v));
        Ok(())
    }

    fn policy(&mut self, policy: PolicyName) {
        self.u8(match policy {
            PolicyName::Other => 0,
            PolicyName::Batch => 1,
            PolicyName::Idle => 2,
            PolicyName::Fifo => 3,
            PolicyName::RoundRobin => 4,
        });
    }

    fn option_i64(&mut self, value: Option<i64>) {
        match value {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.i64(v);
            }
        }
    }

    pub(super) fn scenario(&mut self, scenario: &Scenario) -> Result<(), WireError> {
        let global = &scenario.global;
        self.i64(global.duration_s);
        match global.calibration {
            Calibration::Cpu(cpu) => {
                self.u8(0);
                self.i64(cpu);
            }
            Calibration::NsPerLoop(ns) => {
                self.u8(1);
                self.i64(ns);
            }
        }
        self.policy(global.default_policy);
        self.integers("global.capacities", &global.capacities)?;
        self.integers("global.frequency_scales", &global.frequency_scales)?;
        self.count("global.task_groups", global.task_groups.len())?;
        for group in &global.task_groups {
            self.string("task_group.path", &group.path)?;
            self.i64(group.shares);
            self.option_i64(group.quota_us);
            self.i64(group.period_us);
            self.i64(group.burst_us);
            self.count("task_group.changes", group.changes.len())?;
            for change in &group.changes {
                self.i64(change.at_us);
                self.option_i64(change.quota_us);
                self.i64(change.period_us);
                self.i64(change.burst_us);
            }
        }
        self.u8(u8::from(global.pi_enabled));
        self.count("tasks", scenario.tasks.len())?;
        for task in &scenario.tasks {
            self.string("task.name", &task.name)?;
            self.i64(task.instances);
            self.i64(task.loop_count);
            self.i64(task.delay_us);
            self.attributes(&task.attributes)?;
            self.count("task.phases", task.phases.len())?;
            for phase in &task.phases {
                self.phase(phase)?;
            }
        }
        Ok(())
    }

    fn attributes(&mut self, attributes: &Attributes) -> Result<(), WireError> {
        match attributes.policy {
            None => self.u8(0),
            Some(policy) => {
                self.u8(1);
                self.policy(policy);
            }
        }
        self.option_i64(attributes.priority);
        match &attributes.cpus {
            None => self.u8(0),
            Some(cpus) => {
                self.u8(1);
                self.integers("attributes.cpus", cpus)?;
            }
        }
        self.option_i64(attributes.util_min);
        self.option_i64(attributes.util_max);
        match &attributes.taskgroup {
            None => self.u8(0),
            Some(group) => {
                self.u8(1);
                self.string("attributes.taskgroup", group)?;
            }
        }
        self.option_i64(attributes.custom_slice_us);
        Ok(())
    }

    /// An event tag followed by its name.
    fn tagged_string(&mut self, tag: u8, field: &'static str, text: &str) -> Result<(), WireError> {
        self.u8(tag);
        self.string(field, text)
    }

    fn phase(&mut self, phase: &Phase) -> Result<(), WireError> {
        self.string("phase.name", &phase.name)?;
        self.i64(phase.loop_count);
        self.attributes(&phase.attributes)?;
        self.count("phase.events", phase.events.len())?;
        for named in &phase.events {
            self.string("event.key", &named.key)?;
            match &named.event {
                Event::Run { us } => {
                    self.u8(0);
                    self.i64(*us);
                }
                Event::Runtime { us } => {
                    self.u8(1);
                    self.i64(*us);
                }
                Event::Sleep { us } => {
                    self.u8(2);
                    self.i64(*us);
                }
                Event::Timer {
                    reference,
                    period_us,
                    mode,
                } => {
                    self.u8(3);
                    self.string("timer.reference", reference)?;
                    self.option_i64(*period_us);
                    self.u8(match mode {
                        TimerMode::Relative => 0,
                        TimerMode::Absolute => 1,
                    });
                }
                Event::Yield => self.u8(4),
                Event::Lock { mutex } => self.tagged_string(5, "event.lock", mutex)?,
                Event::Unlock { mutex } => self.tagged_string(6, "event.unlock", mutex)?,
                Event::Wait { condition, mutex } => {
                    self.tagged_string(7, "event.wait.ref", condition)?;
                    self.string("event.wait.mutex", mutex)?;
                }
                Event::Signal { condition } => self.tagged_string(8, "event.signal", condition)?,
                Event::Broadcast { condition } => {
                    self.tagged_string(9, "event.broad", condition)?
                }
                Event::Sync { condition, mutex } => {
                    self.tagged_string(10, "event.sync.ref", condition)?;
                    self.string("event.sync.mutex", mutex)?;
                }
                Event::Barrier { name } => self.tagged_string(11, "event.barrier", name)?,
                Event::Suspend => self.u8(12),
                Event::Resume { task } => self.tagged_string(13, "event.resume", task)?,
                Event::SemPost { name } => self.tagged_string(14, "event.sem_post", name)?,
                Event::SemWait { name } => self.tagged_string(15, "event.sem_wait", name)?,
                Event::Fork { task } => self.tagged_string(16, "event.fork", task)?,
                Event::Mem { bytes } => {
                    self.u8(17);
                    self.i64(*bytes);
                }
                Event::IoRun { bytes } => {
                    self.u8(18);
                    self.i64(*bytes);
                }
            }
        }
        Ok(())
    }
}
