//! The Linux `perf.data` format: model, reader and writer.
//!
//! Pure data code: no syscalls, builds on any OS, and never panics on bad
//! input. Every length read from a file is checked against the bytes present.
#![forbid(unsafe_code)]

pub mod attr;
pub mod bytes;
pub mod constants;
pub mod convert;
pub mod encode;
pub mod endian;
pub mod error;
pub mod features;

pub use attr::Attr;
pub use bytes::{Cursor, U64Slice};
pub use constants::{FeatureId, RecordType};
pub use endian::Endian;
pub use error::{Error, ErrorKind, Result};
pub mod read;
pub mod record;
pub mod sample;
pub mod tracing;
pub mod write;

pub use read::{EventAttr, PerfFile};
pub use record::{RawRecord, Record};
pub use sample::Sample;
