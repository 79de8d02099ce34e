//! Errors of the perf.data reader and writer.
//!
//! Every parse error carries the byte offset in the input where it was found,
//! so a message can say where a file went wrong. The file name is added by the
//! caller, who knows it.

use std::fmt;

/// A perf.data parse or write error: what went wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Byte offset in the input (file or stream) where the problem was found.
    pub offset: u64,
    /// What was wrong.
    pub kind: ErrorKind,
    /// The data file the offset is in, for a directory-format perf.data's
    /// `data.N` files (`None`: the input itself).
    pub file: Option<Box<str>>,
}

/// The kinds of problems the reader and writer report.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input ended before a structure did.
    UnexpectedEof {
        /// What was being read.
        what: &'static str,
        /// Bytes the structure needs.
        needed: u64,
        /// Bytes that were left.
        available: u64,
    },
    /// The first eight bytes are not `PERFILE2` in either byte order.
    BadMagic(u64),
    /// A header field is impossible (for instance a section past the end).
    BadHeader(String),
    /// A record header gives a size smaller than 8 or past the end of the data.
    BadRecordSize {
        /// The record type from the header.
        record_type: u32,
        /// The size from the header.
        size: u64,
        /// Bytes left in the data section from this record on.
        available: u64,
    },
    /// A record's body does not match what its type and attr say.
    BadRecord {
        /// The record type.
        record_type: u32,
        /// What is wrong with it.
        problem: String,
    },
    /// A feature section could not be decoded.
    BadFeature {
        /// Feature number.
        feature: u32,
        /// What is wrong with it.
        problem: String,
    },
    /// An I/O error (only from readers of streams and from the writer).
    Io(String),
}

impl Error {
    /// Makes an error at `offset`.
    pub fn new(offset: u64, kind: ErrorKind) -> Error {
        Error {
            offset,
            kind,
            file: None,
        }
    }

    pub(crate) fn io(offset: u64, e: std::io::Error) -> Error {
        Error::new(offset, ErrorKind::Io(e.to_string()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "in {file} ")?;
        }
        write!(f, "at offset {:#x}: ", self.offset)?;
        match &self.kind {
            ErrorKind::UnexpectedEof {
                what,
                needed,
                available,
            } => write!(
                f,
                "{what} needs {needed} bytes but only {available} are left (file truncated?)"
            ),
            ErrorKind::BadMagic(m) => write!(
                f,
                "not a perf.data file: expected magic PERFILE2, found {m:#018x}"
            ),
            ErrorKind::BadHeader(s) => write!(f, "corrupt perf.data header: {s}"),
            ErrorKind::BadRecordSize {
                record_type,
                size,
                available,
            } => write!(
                f,
                "record of type {record_type} has size {size}, expected at least 8 and at most the {available} bytes left"
            ),
            ErrorKind::BadRecord {
                record_type,
                problem,
            } => write!(f, "bad record of type {record_type}: {problem}"),
            ErrorKind::BadFeature { feature, problem } => {
                write!(f, "bad feature section {feature}: {problem}")
            }
            ErrorKind::Io(e) => write!(f, "I/O error: {e}"),
        }
    }
}

impl std::error::Error for Error {}

/// Result with the crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
