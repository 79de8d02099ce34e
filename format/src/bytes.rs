//! A panic-free cursor over borrowed bytes.
//!
//! Every read checks the length first and fails with an [`Error`] naming the
//! absolute offset, so a count or size read from a file can never index past
//! the input or make an allocation larger than the input.

use crate::endian::Endian;
use crate::error::{Error, ErrorKind, Result};

/// Reads integers and byte runs from a slice, tracking the absolute offset.
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    /// Absolute offset of `data[0]` in the input, for error messages.
    base: u64,
    endian: Endian,
}

impl<'a> Cursor<'a> {
    /// A cursor over `data`, which starts at absolute offset `base`.
    pub fn new(data: &'a [u8], base: u64, endian: Endian) -> Self {
        Cursor {
            data,
            pos: 0,
            base,
            endian,
        }
    }

    /// The byte order used for integers.
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Absolute offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The unread bytes.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    /// An error at the current offset.
    pub fn error(&self, kind: ErrorKind) -> Error {
        Error::new(self.offset(), kind)
    }

    /// Takes the next `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(ErrorKind::UnexpectedEof {
                what,
                needed: n as u64,
                available: self.remaining() as u64,
            }));
        }
        let b = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    /// Takes `count` items of `item_size` bytes, checking the product.
    pub fn array(&mut self, count: u64, item_size: usize, what: &'static str) -> Result<&'a [u8]> {
        let n = count
            .checked_mul(item_size as u64)
            .filter(|&n| n <= self.remaining() as u64);
        match n {
            Some(n) => self.bytes(n as usize, what),
            None => Err(self.error(ErrorKind::UnexpectedEof {
                what,
                needed: count.saturating_mul(item_size as u64),
                available: self.remaining() as u64,
            })),
        }
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize, what: &'static str) -> Result<()> {
        self.bytes(n, what).map(|_| ())
    }

    /// Reads a u8.
    #[inline]
    pub fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.bytes(1, what)?[0])
    }

    /// Reads a u16.
    #[inline]
    pub fn u16(&mut self, what: &'static str) -> Result<u16> {
        let e = self.endian;
        Ok(e.u16(self.bytes(2, what)?))
    }

    /// Reads a u32.
    #[inline]
    pub fn u32(&mut self, what: &'static str) -> Result<u32> {
        let e = self.endian;
        Ok(e.u32(self.bytes(4, what)?))
    }

    /// Reads a u64.
    #[inline]
    pub fn u64(&mut self, what: &'static str) -> Result<u64> {
        let e = self.endian;
        Ok(e.u64(self.bytes(8, what)?))
    }

    /// Reads a NUL-padded string field of exactly `n` bytes; the text ends at
    /// the first NUL (or at `n`).
    pub fn fixed_str(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        Ok(until_nul(self.bytes(n, what)?))
    }

    /// Reads perf's feature-section string: u32 length, then that many bytes
    /// holding NUL-terminated, zero-padded text.
    pub fn perf_str(&mut self, what: &'static str) -> Result<String> {
        let len = self.u32(what)?;
        let b = self.array(u64::from(len), 1, what)?;
        Ok(String::from_utf8_lossy(until_nul(b)).into_owned())
    }
}

/// The bytes before the first NUL.
pub fn until_nul(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(n) => &b[..n],
        None => b,
    }
}

/// A borrowed array of u64 in file byte order (callchains, register sets,
/// id lists), read without copying.
#[derive(Clone, Copy, Debug)]
pub struct U64Slice<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl<'a> U64Slice<'a> {
    /// Wraps `bytes`, whose length must be a multiple of 8 (extra bytes are ignored).
    pub fn new(bytes: &'a [u8], endian: Endian) -> Self {
        U64Slice { bytes, endian }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// The values' bytes, in the file's byte order.
    pub fn as_bytes(&self) -> &'a [u8] {
        &self.bytes[..self.len() * 8]
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i`, if present.
    pub fn get(&self, i: usize) -> Option<u64> {
        let b = self.bytes.get(i * 8..i * 8 + 8)?;
        Some(self.endian.u64(b))
    }

    /// Iterates over the values.
    pub fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        let e = self.endian;
        self.bytes.chunks_exact(8).map(move |c| e.u64(c))
    }

    /// The raw bytes.
    pub fn raw(&self) -> &'a [u8] {
        self.bytes
    }
}
