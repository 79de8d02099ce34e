//! The perf mmap ring buffer and helpers to walk the records copied out of it.
//!
//! [`RingBuffer`] owns a `PROT_READ|PROT_WRITE, MAP_SHARED` mapping of
//! `1 + 2^n` pages of a perf event fd: page 0 is the control page
//! (`perf_event_mmap_page`: `data_head` at offset 1024, `data_tail` at 1032,
//! `data_offset` 1040, `data_size` 1048), the rest is the data area. The
//! consumer protocol (perf-data-format.md §6.1) is implemented by
//! [`RingBuffer::read_available`]: load `data_head` with Acquire ordering,
//! copy bytes `[tail, head)` (two pieces when they wrap), then store
//! `data_tail = head` with Release ordering so the kernel may reuse the space.
//! Because the mapping is writable the kernel never overwrites unread data; it
//! drops samples and later emits `PERF_RECORD_LOST`. A read-only mapping
//! ([`RingBuffer::new_overwrite`], perf's `--overwrite`) is the other way
//! round: the kernel keeps the newest records, overwriting the oldest.
//!
//! [`records`] splits copied bytes into raw records (validating each header's
//! size), and [`LostCounter`] tallies `PERF_RECORD_LOST` /
//! `PERF_RECORD_LOST_SAMPLES` found in such a stream.
//!
//! No raw pointer leaves this module.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// `PERF_RECORD_LOST`.
pub const PERF_RECORD_LOST: u32 = 2;
/// `PERF_RECORD_LOST_SAMPLES`.
pub const PERF_RECORD_LOST_SAMPLES: u32 = 13;

const DATA_HEAD_OFF: usize = 1024;
const DATA_TAIL_OFF: usize = 1032;
const DATA_OFFSET_OFF: usize = 1040;
const DATA_SIZE_OFF: usize = 1048;

/// An mmapped perf ring buffer; unmapped on drop.
///
/// The mapping stays valid after the event fd is closed, so the buffer does
/// not borrow the fd.
pub struct RingBuffer {
    base: *mut u8,
    map_len: usize,
    data_offset: usize,
    data_size: u64,
    overruns: u64,
    /// Mapped read-only: the kernel overwrites old records (`--overwrite`,
    /// with `write_backward` events); read with
    /// [`RingBuffer::read_overwritten`].
    overwrite: bool,
    /// The `data_head` of the last [`RingBuffer::read_overwritten`].
    overwrite_prev: u64,
}

// SAFETY: the mapping is owned exclusively by this value (it is never shared
// or aliased by other Rust objects), so moving it to another thread is fine;
// all kernel-shared accesses go through atomics.
unsafe impl Send for RingBuffer {}

impl fmt::Debug for RingBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingBuffer")
            .field("map_len", &self.map_len)
            .field("data_size", &self.data_size)
            .finish()
    }
}

impl RingBuffer {
    /// Maps `1 + data_pages` pages of `fd` (`data_pages` must be a power of
    /// two ≥ 1, otherwise `EINVAL` like the kernel). perf's default is 128
    /// pages (512 KiB) per CPU.
    pub fn new(fd: BorrowedFd<'_>, data_pages: usize) -> io::Result<RingBuffer> {
        Self::map(fd, data_pages, false)
    }

    /// Maps `fd`'s ring read-only, which makes the kernel overwrite the
    /// oldest records instead of dropping new ones (perf's `--overwrite`;
    /// the events write backward). Read it once stopped, with
    /// [`RingBuffer::read_overwritten`].
    pub fn new_overwrite(fd: BorrowedFd<'_>, data_pages: usize) -> io::Result<RingBuffer> {
        Self::map(fd, data_pages, true)
    }

    fn map(fd: BorrowedFd<'_>, data_pages: usize, overwrite: bool) -> io::Result<RingBuffer> {
        if data_pages == 0 || !data_pages.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("ring buffer data pages must be a power of two, got {data_pages}"),
            ));
        }
        let page = crate::sys::page_size();
        let map_len = page
            .checked_mul(data_pages + 1)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "ring buffer too large"))?;
        // SAFETY: a fresh shared mapping of the perf fd chosen by the kernel
        // (addr NULL); no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                if overwrite {
                    libc::PROT_READ
                } else {
                    libc::PROT_READ | libc::PROT_WRITE
                },
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut rb = RingBuffer {
            base: p as *mut u8,
            map_len,
            data_offset: page,
            data_size: (data_pages * page) as u64,
            overruns: 0,
            overwrite,
            overwrite_prev: 0,
        };
        // Kernels since 4.1 publish data_offset/data_size; trust them only if
        // they describe a region inside our mapping.
        let off = rb.control(DATA_OFFSET_OFF).load(Ordering::Relaxed);
        let size = rb.control(DATA_SIZE_OFF).load(Ordering::Relaxed);
        if off != 0
            && size != 0
            && size.is_power_of_two()
            && off.checked_add(size).is_some_and(|e| e <= map_len as u64)
        {
            rb.data_offset = off as usize;
            rb.data_size = size;
        }
        Ok(rb)
    }

    /// Size of the data area in bytes (2^n pages).
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Total mapping length (control page + data).
    pub fn mmap_len(&self) -> usize {
        self.map_len
    }

    /// How many times `head - tail` exceeded the data size (a consumer bug,
    /// perf's "failed to keep up with mmap data"); the oldest bytes were
    /// skipped in that case.
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    fn control(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off + 8 <= 4096 && off.is_multiple_of(8));
        // SAFETY: `off` is one of the 8-byte-aligned u64 fields of the control
        // page, which lies inside our live mapping (page-aligned base). The
        // kernel accesses these fields concurrently, hence AtomicU64, which has
        // the same layout as u64. The reference lives no longer than `self`.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    /// Bytes currently available (`data_head - data_tail`), without consuming.
    pub fn available(&self) -> u64 {
        if self.overwrite {
            return 0;
        }
        let head = self.control(DATA_HEAD_OFF).load(Ordering::Acquire);
        let tail = self.control(DATA_TAIL_OFF).load(Ordering::Relaxed);
        head.wrapping_sub(tail)
    }

    /// Appends all bytes the kernel has published since the last call to
    /// `out` and releases them to the kernel. Returns the number of bytes
    /// appended. Records are never split across calls (the kernel publishes
    /// `data_head` only at record boundaries).
    pub fn read_available(&mut self, out: &mut Vec<u8>) -> usize {
        // The read-only mapping has no data_tail to store.
        if self.overwrite {
            return 0;
        }
        let head = self.control(DATA_HEAD_OFF).load(Ordering::Acquire);
        let mut tail = self.control(DATA_TAIL_OFF).load(Ordering::Relaxed);
        let mut len = head.wrapping_sub(tail);
        if len == 0 {
            return 0;
        }
        if len > self.data_size {
            self.overruns += 1;
            tail = head.wrapping_sub(self.data_size);
            len = self.data_size;
        }
        let start = (tail & (self.data_size - 1)) as usize;
        self.copy_wrapping(start, len as usize, out);
        self.control(DATA_TAIL_OFF).store(head, Ordering::Release);
        len as usize
    }

    /// Appends what an overwritable ring of backward-writing events holds
    /// that the last call did not take, newest record first, as perf's
    /// `perf_mmap__read_init` takes it: from `data_head` on, and when more
    /// than the ring was written, only the whole records that fit in it
    /// (`overwrite_rb_find_range`). The events should be stopped (disabled
    /// or paused), or records may tear. Returns the bytes appended.
    pub fn read_overwritten(&mut self, out: &mut Vec<u8>) -> usize {
        if !self.overwrite {
            return 0;
        }
        let head = self.control(DATA_HEAD_OFF).load(Ordering::Acquire);
        // Writing backward, data_head counts down from 0.
        let written = self.overwrite_prev.wrapping_sub(head);
        if written == 0 {
            return 0;
        }
        let mask = self.data_size - 1;
        let mut len = written;
        if written > self.data_size {
            let mut walked = 0u64;
            let mut header = Vec::with_capacity(8);
            while walked < self.data_size {
                let at = ((head.wrapping_add(walked)) & mask) as usize;
                header.clear();
                self.copy_wrapping(at, 8, &mut header);
                let record_size = u64::from(u16::from_ne_bytes([header[6], header[7]]));
                if record_size < 8 || walked + record_size > self.data_size {
                    break;
                }
                walked += record_size;
            }
            len = walked;
        }
        self.copy_wrapping((head & mask) as usize, len as usize, out);
        self.overwrite_prev = head;
        len as usize
    }

    /// Appends `len` bytes of the data area from `start`, across its end.
    fn copy_wrapping(&self, start: usize, len: usize, out: &mut Vec<u8>) {
        let first = len.min(self.data_size as usize - start);
        out.reserve(len);
        out.extend_from_slice(self.data_slice(start, first));
        if first < len {
            out.extend_from_slice(self.data_slice(0, len - first));
        }
    }

    fn data_slice(&self, start: usize, len: usize) -> &[u8] {
        assert!(start + len <= self.data_size as usize);
        // SAFETY: [data_offset + start, +len) lies inside the data area of our
        // mapping (checked above and in `new`). The kernel does not write to
        // bytes between data_tail and data_head (already published, Acquire
        // load of data_head above) until we advance data_tail, which happens
        // only after the copy; an overwrite ring is read only once its
        // events are stopped. The slice does not outlive this call's borrow.
        unsafe { std::slice::from_raw_parts(self.base.add(self.data_offset + start), len) }
    }
}

impl Drop for RingBuffer {
    fn drop(&mut self) {
        // SAFETY: `base`/`map_len` are exactly the mapping created in `new`,
        // and no references into it outlive `self`.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.map_len);
        }
    }
}

/// One record as found in the stream (header decoded, bytes include it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// `perf_event_header.type`.
    pub type_: u32,
    /// `perf_event_header.misc`.
    pub misc: u16,
    /// The whole record, header included (`header.size` bytes).
    pub bytes: &'a [u8],
}

impl<'a> RawRecord<'a> {
    /// The record body after the 8-byte header.
    pub fn body(&self) -> &'a [u8] {
        &self.bytes[8..]
    }
}

/// A malformed record header in a byte stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// Fewer than 8 bytes left for a header.
    TruncatedHeader { offset: usize, remaining: usize },
    /// `header.size` < 8 (including 0, which would otherwise loop forever).
    SizeTooSmall { offset: usize, size: u16 },
    /// `header.size` larger than the bytes left.
    SizeTooLarge {
        offset: usize,
        size: u16,
        remaining: usize,
    },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::TruncatedHeader { offset, remaining } => {
                write!(
                    f,
                    "truncated record header at offset {offset} ({remaining} bytes left)"
                )
            }
            RecordError::SizeTooSmall { offset, size } => {
                write!(
                    f,
                    "invalid record size {size} at offset {offset} (minimum 8)"
                )
            }
            RecordError::SizeTooLarge {
                offset,
                size,
                remaining,
            } => write!(
                f,
                "record size {size} at offset {offset} exceeds the {remaining} bytes left"
            ),
        }
    }
}

impl std::error::Error for RecordError {}

/// Iterator over the records of a byte stream; see [`records`]. After the
/// first error it yields nothing more.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    buf: &'a [u8],
    off: usize,
    failed: bool,
}

/// Splits `buf` (a whole number of records, e.g. the output of
/// [`RingBuffer::read_available`]) into records, validating that each
/// `header.size` is ≥ 8 and ≤ the bytes left.
pub fn records(buf: &[u8]) -> Records<'_> {
    Records {
        buf,
        off: 0,
        failed: false,
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RawRecord<'a>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.off >= self.buf.len() {
            return None;
        }
        let rest = &self.buf[self.off..];
        let offset = self.off;
        let fail = |s: &mut Self, e| {
            s.failed = true;
            Some(Err(e))
        };
        let Some(hdr) = rest.get(..8) else {
            return fail(
                self,
                RecordError::TruncatedHeader {
                    offset,
                    remaining: rest.len(),
                },
            );
        };
        let type_ = u32::from_ne_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
        let misc = u16::from_ne_bytes([hdr[4], hdr[5]]);
        let size = u16::from_ne_bytes([hdr[6], hdr[7]]);
        if size < 8 {
            return fail(self, RecordError::SizeTooSmall { offset, size });
        }
        if usize::from(size) > rest.len() {
            return fail(
                self,
                RecordError::SizeTooLarge {
                    offset,
                    size,
                    remaining: rest.len(),
                },
            );
        }
        self.off += usize::from(size);
        Some(Ok(RawRecord {
            type_,
            misc,
            bytes: &rest[..usize::from(size)],
        }))
    }
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_ne_bytes(a))
}

/// Tally of lost-data records seen in a record stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LostCounter {
    /// Number of `PERF_RECORD_LOST` records.
    pub lost_records: u64,
    /// Sum of their `lost` fields (events dropped because the buffer was full).
    pub lost_events: u64,
    /// Number of `PERF_RECORD_LOST_SAMPLES` records.
    pub lost_samples_records: u64,
    /// Sum of their `lost` fields.
    pub lost_samples: u64,
}

impl LostCounter {
    /// A zeroed counter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Scans all records of `buf` (see [`records`]) and adds the LOST /
    /// LOST_SAMPLES counts. Stops at the first malformed header and returns
    /// its error (counts up to that point are kept). A LOST record too short
    /// for its body is counted as a record with 0 lost.
    pub fn scan(&mut self, buf: &[u8]) -> Result<(), RecordError> {
        for rec in records(buf) {
            let rec = rec?;
            match rec.type_ {
                PERF_RECORD_LOST => {
                    // body: u64 id, u64 lost
                    self.lost_records += 1;
                    self.lost_events += u64_at(rec.body(), 8).unwrap_or(0);
                }
                PERF_RECORD_LOST_SAMPLES => {
                    // body: u64 lost
                    self.lost_samples_records += 1;
                    self.lost_samples += u64_at(rec.body(), 0).unwrap_or(0);
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(type_: u32, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&type_.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn split_and_count_lost() {
        let mut buf = rec(
            PERF_RECORD_LOST,
            &[1u64.to_ne_bytes(), 5u64.to_ne_bytes()].concat(),
        );
        buf.extend(rec(9, &[0u8; 16]));
        buf.extend(rec(PERF_RECORD_LOST_SAMPLES, &7u64.to_ne_bytes()));
        buf.extend(rec(
            PERF_RECORD_LOST,
            &[1u64.to_ne_bytes(), 2u64.to_ne_bytes()].concat(),
        ));
        let types: Vec<u32> = records(&buf)
            .map(|r| r.map(|r| r.type_))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(types, vec![2, 9, 13, 2]);
        let mut c = LostCounter::new();
        c.scan(&buf).unwrap();
        assert_eq!(
            c,
            LostCounter {
                lost_records: 2,
                lost_events: 7,
                lost_samples_records: 1,
                lost_samples: 7
            }
        );
    }

    #[test]
    fn zero_size_is_an_error_not_a_hang() {
        let mut buf = rec(9, &[0u8; 8]);
        buf.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0]);
        let all: Vec<_> = records(&buf).collect();
        assert_eq!(all.len(), 2);
        assert_eq!(
            all[1],
            Err(RecordError::SizeTooSmall {
                offset: 16,
                size: 0
            })
        );
        assert!(LostCounter::new().scan(&buf).is_err());
    }

    #[test]
    fn oversize_and_truncated() {
        let mut buf = rec(9, &[0u8; 8]);
        buf.truncate(12);
        assert!(matches!(
            records(&buf).next(),
            Some(Err(RecordError::SizeTooLarge { .. }))
        ));
        assert!(matches!(
            records(&buf[..4]).next(),
            Some(Err(RecordError::TruncatedHeader { .. }))
        ));
        assert_eq!(records(&[]).count(), 0);
    }
}
