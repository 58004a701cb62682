//! The scenario wire format: a compact, versioned, checksummed binary encoding of a
//! [`Scenario`], so the host can hand a parsed rt-app scenario (facts §8.3) to the kernel,
//! which has no JSON parser.
//!
//! The host parses and validates the JSON (`fairway-sim SCENARIO.json --encode OUT.bin`),
//! the runner loads the blob into guest RAM, and the kernel calls [`decode_and_validate`]
//! on it. [`decode`] trusts nothing: every length, tag and string is checked against the
//! input, and a refusal is a [`WireError`] naming the field and its byte offset; it never
//! panics and never allocates more than a small multiple of the input's size.
//!
//! # Layout (format version 1)
//!
//! Integers are little-endian and fixed-width; offsets are from the start of the blob.
//!
//! | offset | size | field                                                            |
//! |--------|------|------------------------------------------------------------------|
//! | 0      | 4    | magic `46 57 53 43` (`"FWSC"`)                                   |
//! | 4      | 4    | format version, `u32` = [`VERSION`]                              |
//! | 8      | 4    | total length in bytes, header included, `u32`                    |
//! | 12     | 4    | CRC-32 (ISO-HDLC, as zlib's `crc32`) of bytes `16..total`, `u32`  |
//! | 16     | ...  | body: a `Scenario`                                               |
//!
//! The body, field by field in declaration order (`count` is a `u32`; `string` is a
//! `count` of bytes followed by that many bytes of UTF-8; `option<T>` is a `u8` tag, 0 =
//! absent or 1 = present, followed by `T` if present; `list<T>` is a `count` then the
//! elements):
//!
//! | item        | encoding                                                                |
//! |-------------|-------------------------------------------------------------------------|
//! | Scenario    | Global, list\<TaskSpec\>                                                |
//! | Global      | duration_s `i64`, Calibration, default_policy Policy, capacities list\<`i64`\>, frequency_scales list\<`i64`\>, task_groups list\<TaskGroup\> |
//! | Calibration | `u8` tag (0 = `Cpu`, 1 = `NsPerLoop`), then the value `i64`             |
//! | Policy      | `u8` tag: 0 `Other`, 1 `Batch`, 2 `Idle`, 3 `Fifo`, 4 `RoundRobin`      |
//! | TaskGroup   | path string, shares `i64`                                               |
//! | TaskSpec    | name string, instances `i64`, loop_count `i64`, delay_us `i64`, Attributes, list\<Phase\> |
//! | Attributes  | policy option\<Policy\>, priority option\<`i64`\>, cpus option\<list\<`i64`\>\>, util_min option\<`i64`\>, util_max option\<`i64`\>, taskgroup option\<string\> |
//! | Phase       | name string, loop_count `i64`, Attributes, list\<NamedEvent\>           |
//! | NamedEvent  | key string, Event                                                       |
//! | Event       | `u8` tag: 0 `Run` us `i64`; 1 `Runtime` us `i64`; 2 `Sleep` us `i64`; 3 `Timer` reference string, period_us option\<`i64`\>, TimerMode; 4 `Yield` (nothing) |
//! | TimerMode   | `u8` tag: 0 `Relative`, 1 `Absolute`                                    |
//!
//! The body must end exactly at the total length. Values are stored as the model holds
//! them (signed, unchecked), so [`Scenario::validate`] refuses a bad one with the same
//! field path on both sides.

#[cfg(test)]
mod tests;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::{
    Attributes, Calibration, Event, Global, NamedEvent, Phase, PolicyName, Scenario, ScenarioError,
    TaskGroup, TaskSpec, TimerMode,
};

/// The four magic bytes that open a blob.
pub const MAGIC: [u8; 4] = *b"FWSC";

/// The format version this module writes and reads.
pub const VERSION: u32 = 1;

/// The header's size in bytes (magic, version, total length, checksum).
pub const HEADER_LEN: usize = 16;

/// What is wrong with a blob (see [`WireError`] for where).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireErrorKind {
    /// The first four bytes are not [`MAGIC`].
    BadMagic {
        /// The bytes found.
        found: [u8; 4],
    },
    /// A format version this decoder does not read.
    UnsupportedVersion {
        /// The version found.
        found: u32,
        /// The version supported, [`VERSION`].
        supported: u32,
    },
    /// The header's total length is smaller than the header itself.
    BadTotalLength {
        /// The total length declared.
        declared: u32,
    },
    /// The input ends inside `field`.
    Truncated {
        /// The item being read.
        field: &'static str,
        /// Bytes it needs from the offset.
        needed: usize,
        /// Bytes left from the offset.
        available: usize,
    },
    /// Bytes after the end of the blob (the input is longer than the total length) or after
    /// the end of the body (the body is shorter than the total length).
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// The body's CRC-32 is not the one in the header.
    ChecksumMismatch {
        /// The checksum in the header.
        stored: u32,
        /// The checksum of the body as received.
        computed: u32,
    },
    /// An enum or option tag outside its range.
    BadTag {
        /// The item whose tag it is.
        field: &'static str,
        /// The tag found.
        tag: u8,
    },
    /// A string that is not UTF-8.
    BadUtf8 {
        /// The string's field.
        field: &'static str,
    },
    /// A count (string length or list length) larger than the bytes left could hold.
    LengthOverflow {
        /// The string or list.
        field: &'static str,
        /// The count found.
        length: u32,
        /// Bytes left after the count.
        available: usize,
    },
    /// Encoding: a string, a list or the blob is longer than a `u32` can count.
    TooLarge {
        /// The string or list (or `"blob"`).
        field: &'static str,
        /// Its length.
        length: usize,
    },
    /// The scenario decoded but [`Scenario::validate`] refuses it.
    Invalid(ScenarioError),
}

/// A refused blob: what is wrong and at which byte offset from the start of the blob
/// (for [`WireErrorKind::Invalid`], the start of the body; the scenario error names the
/// field's path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError {
    /// Byte offset of the offending item.
    pub offset: usize,
    /// What is wrong.
    pub kind: WireErrorKind,
}

impl WireError {
    fn new(offset: usize, kind: WireErrorKind) -> Self {
        WireError { offset, kind }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "scenario blob, byte {}: ", self.offset)?;
        match &self.kind {
            WireErrorKind::BadMagic { found } => {
                write!(f, "magic {found:02x?} is not {MAGIC:02x?} (\"FWSC\")")
            }
            WireErrorKind::UnsupportedVersion { found, supported } => {
                write!(f, "format version {found}, only {supported} is supported")
            }
            WireErrorKind::BadTotalLength { declared } => {
                write!(
                    f,
                    "total length {declared} is below the header's {HEADER_LEN}"
                )
            }
            WireErrorKind::Truncated {
                field,
                needed,
                available,
            } => write!(f, "{field} needs {needed} bytes, {available} left"),
            WireErrorKind::TrailingBytes { count } => write!(f, "{count} unused trailing bytes"),
            WireErrorKind::ChecksumMismatch { stored, computed } => write!(
                f,
                "body CRC-32 is {computed:#010x}, the header says {stored:#010x}"
            ),
            WireErrorKind::BadTag { field, tag } => write!(f, "{field}: bad tag {tag}"),
            WireErrorKind::BadUtf8 { field } => write!(f, "{field}: not UTF-8"),
            WireErrorKind::LengthOverflow {
                field,
                length,
                available,
            } => write!(
                f,
                "{field}: length {length} does not fit in the {available} bytes left"
            ),
            WireErrorKind::TooLarge { field, length } => {
                write!(f, "{field}: length {length} exceeds u32")
            }
            WireErrorKind::Invalid(error) => write!(f, "invalid scenario: {error}"),
        }
    }
}

/// CRC-32/ISO-HDLC (reflected polynomial `0xEDB88320`, initial and final XOR all ones),
/// the checksum of zlib, PNG and Ethernet; computed bit by bit (blobs are a few KiB).
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// Encodes `scenario` as a version-[`VERSION`] blob (see the module doc for the layout).
///
/// Fails only if a string, a list or the whole blob is longer than a `u32` can count.
pub fn encode(scenario: &Scenario) -> Result<Vec<u8>, WireError> {
    let mut writer = Writer {
        bytes: Vec::with_capacity(256),
    };
    writer.bytes.extend_from_slice(&MAGIC);
    writer.bytes.extend_from_slice(&VERSION.to_le_bytes());
    writer.bytes.extend_from_slice(&[0; 8]); // total length and checksum, patched below
    writer.scenario(scenario)?;
    let total = u32::try_from(writer.bytes.len()).map_err(|_| {
        WireError::new(
            0,
            WireErrorKind::TooLarge {
                field: "blob",
                length: writer.bytes.len(),
            },
        )
    })?;
    let checksum = crc32(&writer.bytes[HEADER_LEN..]);
    writer.bytes[8..12].copy_from_slice(&total.to_le_bytes());
    writer.bytes[12..16].copy_from_slice(&checksum.to_le_bytes());
    Ok(writer.bytes)
}

/// The total length a blob's header declares, from its first [`HEADER_LEN`] bytes (magic
/// and version checked), so a loader can learn how much memory the blob spans.
pub fn declared_length(header: &[u8]) -> Result<usize, WireError> {
    let mut reader = Reader::new(header, header.len());
    reader.header().map(|(total, _)| total)
}

/// Decodes a blob into a [`Scenario`], checking the header, the checksum and every length,
/// tag and string; `bytes` must be exactly the blob. Values are not range-checked: see
/// [`decode_and_validate`].
pub fn decode(bytes: &[u8]) -> Result<Scenario, WireError> {
    let mut reader = Reader::new(bytes, bytes.len());
    let (total, stored) = reader.header()?;
    if bytes.len() < total {
        return Err(WireError::new(
            0,
            WireErrorKind::Truncated {
                field: "blob",
                needed: total,
                available: bytes.len(),
            },
        ));
    }
    if bytes.len() > total {
        return Err(WireError::new(
            total,
            WireErrorKind::TrailingBytes {
                count: bytes.len() - total,
            },
        ));
    }
    let computed = crc32(&bytes[HEADER_LEN..]);
    if computed != stored {
        return Err(WireError::new(
            12,
            WireErrorKind::ChecksumMismatch { stored, computed },
        ));
    }
    let scenario = reader.scenario()?;
    if reader.position != total {
        return Err(WireError::new(
            reader.position,
            WireErrorKind::TrailingBytes {
                count: total - reader.position,
            },
        ));
    }
    Ok(scenario)
}

/// [`decode`], then [`Scenario::validate`] for a machine of `nr_cpus` CPUs, as the host
/// validates the JSON before encoding it: what the kernel calls on a loaded blob.
pub fn decode_and_validate(bytes: &[u8], nr_cpus: usize) -> Result<Scenario, WireError> {
    let scenario = decode(bytes)?;
    scenario
        .validate(nr_cpus)
        .map_err(|error| WireError::new(HEADER_LEN, WireErrorKind::Invalid(error)))?;
    Ok(scenario)
}

/// The fewest bytes each list element can take, to refuse a count the input cannot hold
/// before allocating for it.
mod min_size {
    pub const I64: usize = 8;
    pub const STRING: usize = 4;
    pub const ATTRIBUTES: usize = 6; // six absent options
    pub const TASK_GROUP: usize = STRING + I64;
    pub const TASK: usize = STRING + 3 * I64 + ATTRIBUTES + 4;
    pub const PHASE: usize = STRING + I64 + ATTRIBUTES + 4;
    pub const EVENT: usize = STRING + 1; // a yield
}

/// Appends the body's items.
struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    fn u8(&mut self, value: u8) {
        self.bytes.push(value);
    }

    fn i64(&mut self, value: i64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    fn count(&mut self, field: &'static str, length: usize) -> Result<(), WireError> {
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

    fn scenario(&mut self, scenario: &Scenario) -> Result<(), WireError> {
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
        }
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
        Ok(())
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
            }
        }
        Ok(())
    }
}

/// Reads items from `bytes[..end]`, tracking the offset for errors.
struct Reader<'a> {
    bytes: &'a [u8],
    end: usize,
    position: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], end: usize) -> Self {
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
    fn header(&mut self) -> Result<(usize, u32), WireError> {
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

    fn scenario(&mut self) -> Result<Scenario, WireError> {
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
            });
        }
        let global = Global {
            duration_s,
            calibration,
            default_policy,
            capacities,
            frequency_scales,
            task_groups,
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
        Ok(Attributes {
            policy,
            priority,
            cpus,
            util_min,
            util_max,
            taskgroup,
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
            let event = match self.tag("event", 5)? {
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
                _ => Event::Yield,
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
