//! The typed refusal of a blob: what is wrong and at which byte offset.

use core::fmt;

use super::{HEADER_LEN, MAGIC};
use crate::scenario::ScenarioError;

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
        /// The version supported, [`VERSION`](super::VERSION).
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
    /// The scenario decoded but [`Scenario::validate`](crate::scenario::Scenario::validate) refuses it.
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
    pub(super) fn new(offset: usize, kind: WireErrorKind) -> Self {
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
