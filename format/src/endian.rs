//! Byte order of a perf.data file.
//!
//! perf writes every integer in the recording host's byte order. The reader
//! picks the order once, from the magic number, and passes it down; the writer
//! can produce either order (big-endian copies are used in tests).

use byteorder::{BigEndian, ByteOrder, LittleEndian};

/// The byte order of a file, chosen at run time from its magic number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Little-endian (x86-64, arm64, ...).
    Little,
    /// Big-endian (s390x, ppc64, ...).
    Big,
}

impl Endian {
    /// The byte order of the machine running this code.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };

    /// Reads a u16 from the first two bytes. Panics if `b` is shorter: callers
    /// check lengths first (see [`crate::bytes::Cursor`]).
    #[inline]
    pub fn u16(self, b: &[u8]) -> u16 {
        match self {
            Endian::Little => LittleEndian::read_u16(b),
            Endian::Big => BigEndian::read_u16(b),
        }
    }

    /// Reads a u32 from the first four bytes (panics if shorter).
    #[inline]
    pub fn u32(self, b: &[u8]) -> u32 {
        match self {
            Endian::Little => LittleEndian::read_u32(b),
            Endian::Big => BigEndian::read_u32(b),
        }
    }

    /// Reads a u64 from the first eight bytes (panics if shorter).
    #[inline]
    pub fn u64(self, b: &[u8]) -> u64 {
        match self {
            Endian::Little => LittleEndian::read_u64(b),
            Endian::Big => BigEndian::read_u64(b),
        }
    }

    /// Appends `v` in this byte order.
    #[inline]
    pub fn put_u16(self, out: &mut Vec<u8>, v: u16) {
        out.extend_from_slice(&match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        });
    }

    /// Appends `v` in this byte order.
    #[inline]
    pub fn put_u32(self, out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        });
    }

    /// Appends `v` in this byte order.
    #[inline]
    pub fn put_u64(self, out: &mut Vec<u8>, v: u64) {
        out.extend_from_slice(&match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        });
    }
}
