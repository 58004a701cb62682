//! The decoder: reads a [`Scenario`]'s items, checking every length, tag and string.

use alloc::string::String;
use alloc::vec::Vec;

use super::{HEADER_LEN, MAGIC, VERSION, WireError, WireErrorKind};
use crate::scenario::{
    Attributes, BandwidthChange, Calibration, Event, Global, NamedEvent, Phase, PolicyName,
    Scenario, TaskGroup, TaskSpec, TimerMode,
};

/// The fewest bytes each list element can take, to refuse a count the input cannot hold
/// before allocating for it.
mod min_size {
    pub const I64: usize = 8;
    pub const STRING: usize = 4;
    pub const ATTRIBUTES: usize = 7; // seven absent options
    pub const TASK_GROUP: usize = STRING + I64 + 1 + 2 * I64 + 4;
    pub const BANDWIDTH_CHANGE: usize = I64 + 1 + 2 * I64;
    pub const TASK: usize = STRING + 3 * I64 + ATTRIBUTES + 4;
    pub const PHASE: usize = STRING + I64 + ATTRIBUTES + 4;
    pub const EVENT: usize = STRING + 1; // a yield
}

/// Reads items from `bytes[..end]`, tracking the offset for errors.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    end: usize,
    pub(super) position: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8], end: usize) -> Self {
        Reader {
            bytes,
            end,
            position: 0,
        }
    }

    fn take(&mut self, field: &'static str, needed: usize) -> Result<&'a [u8], WireError> {
        let available = self.end - self.position;
        if needed > available {
            return Err(WireError::new(
                self.position,
                WireErrorKind::Truncated {
                    field,
                    needed,
                    available,
                },
            ));
        }
        let slice = &self.bytes[self.position..self.position + needed];
        self.position += needed;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], WireError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(field, N)?);
        Ok(array)
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, WireError> {
        self.array(field).map(u32::from_le_bytes)
    }

    fn i64(&mut self, field: &'static str) -> Result<i64, WireError> {
        self.array(field).map(i64::from_le_bytes)
    }

    /// A `u8` tag in `0..limit`.
    fn tag(&mut self, field: &'static str, limit: u8) -> Result<u8, WireError> {
        let offset = self.position;
        let [tag] = self.array(field)?;
        if tag < limit {
            Ok(tag)
        } else {
            Err(WireError::new(offset, WireErrorKind::BadTag { field, tag }))
        }
    }

    /// Reads the header; returns the total length and the stored checksum.
    pub(super) fn header(&mut self) -> Result<(usize, u32), WireError> {
        let found = self.array("header.magic")?;
        if found != MAGIC {
            return Err(WireError::new(0, WireErrorKind::BadMagic { found }));
        }
        let version = self.u32("header.version")?;
        if version != VERSION {
            return Err(WireError::new(
                4,
                WireErrorKind::UnsupportedVersion {
                    found: version,
                    supported: VERSION,
                },
            ));
        }
        let declared = self.u32("header.total_length")?;
        let checksum = self.u32("header.checksum")?;
        let total = usize::try_from(declared).unwrap_or(usize::MAX);
        if total < HEADER_LEN {
            return Err(WireError::new(
                8,
                WireErrorKind::BadTotalLength { declared },
            ));
        }
        Ok((total, checksum))
    }

    /// A count of elements taking at least `element_size` bytes each, checked against the
    /// bytes left so that no allocation exceeds the input.
    fn count(&mut self, field: &'static str, element_size: usize) -> Result<usize, WireError> {
        let offset = self.position;
        let length = self.u32(field)?;
        let available = self.end - self.position;
        let count = length as usize;
        if count
            .checked_mul(element_size)
            .is_none_or(|n| n > available)
        {
            return Err(WireError::new(
                offset,
                WireErrorKind::LengthOverflow {
                    field,
                    length,
                    available,
                },
            ));
        }
        Ok(count)
    }

    fn string(&mut self, field: &'static str) -> Result<String, WireError> {
        let length = self.count(field, 1)?;
        let offset = self.position;
        let bytes = self.take(field, length)?;
        match core::str::from_utf8(bytes) {
            Ok(text) => Ok(String::from(text)),
            Err(error) => Err(WireError::new(
                offset + error.valid_up_to(),
                WireErrorKind::BadUtf8 { field },
            )),
        }
    }

    fn integers(&mut self, field: &'static str) -> Result<Vec<i64>, WireError> {
        let count = self.count(field, min_size::I64)?;
        (0..count).map(|_| self.i64(field)).collect()
    }

    /// Reads an option tag; `true` if the value follows.
    fn present(&mut self, field: &'static str) -> Result<bool, WireError> {
        Ok(self.tag(field, 2)? == 1)
    }

    fn option_i64(&mut self, field: &'static str) -> Result<Option<i64>, WireError> {
        if self.present(field)? {
            self.i64(field).map(Some)
        } else {
            Ok(None)
        }
    }

    fn policy(&mut self, field: &'static str) -> Result<PolicyName, WireError> {
        Ok(match self.tag(field, 5)? {
            0 => PolicyName::Other,
            1 => PolicyName::Batch,
            2 => PolicyName::Idle,
            3 => PolicyName::Fifo,
            _ => PolicyName::RoundRobin,
        })
    }

    fn bandwidth_changes(&mut self) -> Result<Vec<BandwidthChange>, WireError> {
        let count = self.count("task_group.changes", min_size::BANDWIDTH_CHANGE)?;
        let mut changes = Vec::with_capacity(count);
        for _ in 0..count {
            changes.push(BandwidthChange {
                at_us: self.i64("bandwidth_change.at_us")?,
                quota_us: self.option_i64("bandwidth_change.quota_us")?,
                period_us: self.i64("bandwidth_change.period_us")?,
                burst_us: self.i64("bandwidth_change.burst_us")?,
            });
        }
        Ok(changes)
    }

    pub(super) fn scenario(&mut self) -> Result<Scenario, WireError> {
        let duration_s = self.i64("global.duration")?;
        let calibration = match self.tag("global.calibration", 2)? {
            0 => Calibration::Cpu(self.i64("global.calibration")?),
            _ => Calibration::NsPerLoop(self.i64("global.calibration")?),
        };
        let default_policy = self.policy("global.default_policy")?;
        let capacities = self.integers("global.capacities")?;
        let frequency_scales = self.integers("global.frequency_scales")?;
        let count = self.count("global.task_groups", min_size::TASK_GROUP)?;
        let mut task_groups = Vec::with_capacity(count);
        for _ in 0..count {
            task_groups.push(TaskGroup {
                path: self.string("task_group.path")?,
                shares: self.i64("task_group.shares")?,
                quota_us: self.option_i64("task_group.quota_us")?,
                period_us: self.i64("task_group.period_us")?,
                burst_us: self.i64("task_group.burst_us")?,
                changes: self.bandwidth_changes()?,
            });
        }
        let pi_enabled = self.tag("global.pi_enabled", 2)? == 1;
        let global = Global {
            duration_s,
            calibration,
            default_policy,
            capacities,
            frequency_scales,
            task_groups,
            pi_enabled,
        };
        let count = self.count("tasks", min_size::TASK)?;
        let mut tasks = Vec::with_capacity(count);
        for _ in 0..count {
            let name = self.string("task.name")?;
            let instances = self.i64("task.instances")?;
            let loop_count = self.i64("task.loop")?;
            let delay_us = self.i64("task.delay")?;
            let attributes = self.attributes()?;
            let phase_count = self.count("task.phases", min_size::PHASE)?;
            let mut phases = Vec::with_capacity(phase_count);
            for _ in 0..phase_count {
                phases.push(self.phase()?);
            }
            tasks.push(TaskSpec {
                name,
                instances,
                loop_count,
                delay_us,
                attributes,
                phases,
            });
        }
        Ok(Scenario { global, tasks })
    }

    fn attributes(&mut self) -> Result<Attributes, WireError> {
        let policy = if self.present("attributes.policy")? {
            Some(self.policy("attributes.policy")?)
        } else {
            None
        };
        let priority = self.option_i64("attributes.priority")?;
        let cpus = if self.present("attributes.cpus")? {
            Some(self.integers("attributes.cpus")?)
        } else {
            None
        };
        let util_min = self.option_i64("attributes.util_min")?;
        let util_max = self.option_i64("attributes.util_max")?;
        let taskgroup = if self.present("attributes.taskgroup")? {
            Some(self.string("attributes.taskgroup")?)
        } else {
            None
        };
        let custom_slice_us = self.option_i64("attributes.custom_slice")?;
        Ok(Attributes {
            policy,
            priority,
            cpus,
            util_min,
            util_max,
            taskgroup,
            custom_slice_us,
        })
    }

    fn phase(&mut self) -> Result<Phase, WireError> {
        let name = self.string("phase.name")?;
        let loop_count = self.i64("phase.loop")?;
        let attributes = self.attributes()?;
        let count = self.count("phase.events", min_size::EVENT)?;
        let mut events = Vec::with_capacity(count);
        for _ in 0..count {
            let key = self.string("event.key")?;
            let event = match self.tag("event", 19)? {
                0 => Event::Run {
                    us: self.i64("event.run")?,
                },
                1 => Event::Runtime {
                    us: self.i64("event.runtime")?,
                },
                2 => Event::Sleep {
                    us: self.i64("event.sleep")?,
                },
                3 => Event::Timer {
                    reference: self.string("timer.reference")?,
                    period_us: self.option_i64("timer.period")?,
                    mode: match self.tag("timer.mode", 2)? {
                        0 => TimerMode::Relative,
                        _ => TimerMode::Absolute,
                    },
                },
                4 => Event::Yield,
                5 => Event::Lock {
                    mutex: self.string("event.lock")?,
                },
                6 => Event::Unlock {
                    mutex: self.string("event.unlock")?,
                },
                7 => Event::Wait {
                    condition: self.string("event.wait.ref")?,
                    mutex: self.string("event.wait.mutex")?,
                },
                8 => Event::Signal {
                    condition: self.string("event.signal")?,
                },
                9 => Event::Broadcast {
                    condition: self.string("event.broad")?,
                },
                10 => Event::Sync {
                    condition: self.string("event.sync.ref")?,
                    mutex: self.string("event.sync.mutex")?,
                },
                11 => Event::Barrier {
                    name: self.string("event.barrier")?,
                },
                12 => Event::Suspend,
                13 => Event::Resume {
                    task: self.string("event.resume")?,
                },
                14 => Event::SemPost {
                    name: self.string("event.sem_post")?,
                },
                15 => Event::SemWait {
                    name: self.string("event.sem_wait")?,
                },
                16 => Event::Fork {
                    task: self.string("event.fork")?,
                },
                17 => Event::Mem {
                    bytes: self.i64("event.mem")?,
                },
                _ => Event::IoRun {
                    bytes: self.i64("event.iorun")?,
                },
            };
            events.push(NamedEvent { key, event });
        }
        Ok(Phase {
            name,
            loop_count,
            attributes,
            events,
        })
    }
}
