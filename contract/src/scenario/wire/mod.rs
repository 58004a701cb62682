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
//! # Layout (format version 4)
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
//! | Global      | duration_s `i64`, Calibration, default_policy Policy, capacities list\<`i64`\>, frequency_scales list\<`i64`\>, task_groups list\<TaskGroup\>, pi_enabled `u8` (0 or 1) |
//! | Calibration | `u8` tag (0 = `Cpu`, 1 = `NsPerLoop`), then the value `i64`             |
//! | Policy      | `u8` tag: 0 `Other`, 1 `Batch`, 2 `Idle`, 3 `Fifo`, 4 `RoundRobin`      |
//! | TaskGroup   | path string, shares `i64`, quota_us option\<`i64`\>, period_us `i64`, burst_us `i64`, changes list\<BandwidthChange\> |
//! | BandwidthChange | at_us `i64`, quota_us option\<`i64`\>, period_us `i64`, burst_us `i64` |
//! | TaskSpec    | name string, instances `i64`, loop_count `i64`, delay_us `i64`, Attributes, list\<Phase\> |
//! | Attributes  | policy option\<Policy\>, priority option\<`i64`\>, cpus option\<list\<`i64`\>\>, util_min option\<`i64`\>, util_max option\<`i64`\>, taskgroup option\<string\>, custom_slice_us option\<`i64`\> |
//! | Phase       | name string, loop_count `i64`, Attributes, list\<NamedEvent\>           |
//! | NamedEvent  | key string, Event                                                       |
//! | Event       | `u8` tag: 0 `Run` us `i64`; 1 `Runtime` us `i64`; 2 `Sleep` us `i64`; 3 `Timer` reference string, period_us option\<`i64`\>, TimerMode; 4 `Yield` (nothing); 5 `Lock` mutex string; 6 `Unlock` mutex string; 7 `Wait` condition string, mutex string; 8 `Signal` condition string; 9 `Broadcast` condition string; 10 `Sync` condition string, mutex string; 11 `Barrier` name string; 12 `Suspend` (nothing); 13 `Resume` task string; 14 `SemPost` name string; 15 `SemWait` name string; 16 `Fork` task string; 17 `Mem` bytes `i64`; 18 `IoRun` bytes `i64` |
//! | TimerMode   | `u8` tag: 0 `Relative`, 1 `Absolute`                                    |
//!
//! The body must end exactly at the total length. Values are stored as the model holds
//! them (signed, unchecked), so [`Scenario::validate`] refuses a bad one with the same
//! field path on both sides.

mod error;
mod reader;
#[cfg(test)]
mod tests;
mod writer;

pub use error::{WireError, WireErrorKind};

use alloc::vec::Vec;

use super::Scenario;
use reader::Reader;
use writer::Writer;

/// The four magic bytes that open a blob.
pub const MAGIC: [u8; 4] = *b"FWSC";

/// The format version this module writes and reads.
pub const VERSION: u32 = 4;

/// The header's size in bytes (magic, version, total length, checksum).
pub const HEADER_LEN: usize = 16;

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
