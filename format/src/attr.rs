//! `struct perf_event_attr`, in every size the kernel and perf have used.
//!
//! The struct grew over time (`PERF_ATTR_SIZE_VER0` = 64 bytes up to VER8 =
//! 136). A file carries `attr.size`; fields past it read as zero, and bytes
//! past what this crate knows are kept in [`Attr::extra`] so a copy keeps them.
//!
//! The flags word is a C bitfield. On a big-endian host the first field
//! (`disabled`) is the most significant bit, so a big-endian file holds the
//! 64-bit bit-reversal of the little-endian numbering; [`Attr::parse`] and
//! [`Attr::write`] convert.

use crate::bytes::Cursor;
use crate::constants::{read_format, sample_type};
use crate::endian::Endian;
use crate::error::{ErrorKind, Result};

/// Size of the first published attr (VER0).
pub const ATTR_SIZE_VER0: u32 = 64;
/// Size of the attr that perf 6.1 writes and accepts at most (VER7).
pub const ATTR_SIZE_VER7: u32 = 128;
/// Size of the largest attr this crate decodes field by field (VER8).
pub const ATTR_SIZE_VER8: u32 = 136;

/// Flag bits of the attr's bitfield word, numbered as on little-endian hosts.
pub mod flags {
    pub const DISABLED: u64 = 1 << 0;
    pub const INHERIT: u64 = 1 << 1;
    pub const PINNED: u64 = 1 << 2;
    pub const EXCLUSIVE: u64 = 1 << 3;
    pub const EXCLUDE_USER: u64 = 1 << 4;
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub const EXCLUDE_HV: u64 = 1 << 6;
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    pub const MMAP: u64 = 1 << 8;
    pub const COMM: u64 = 1 << 9;
    pub const FREQ: u64 = 1 << 10;
    pub const INHERIT_STAT: u64 = 1 << 11;
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    pub const TASK: u64 = 1 << 13;
    pub const WATERMARK: u64 = 1 << 14;
    pub const PRECISE_IP_SHIFT: u32 = 15;
    pub const PRECISE_IP_MASK: u64 = 3 << 15;
    pub const MMAP_DATA: u64 = 1 << 17;
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    pub const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    pub const MMAP2: u64 = 1 << 23;
    pub const COMM_EXEC: u64 = 1 << 24;
    pub const USE_CLOCKID: u64 = 1 << 25;
    pub const CONTEXT_SWITCH: u64 = 1 << 26;
    pub const WRITE_BACKWARD: u64 = 1 << 27;
    pub const NAMESPACES: u64 = 1 << 28;
    pub const KSYMBOL: u64 = 1 << 29;
    pub const BPF_EVENT: u64 = 1 << 30;
    pub const AUX_OUTPUT: u64 = 1 << 31;
    pub const CGROUP: u64 = 1 << 32;
    pub const TEXT_POKE: u64 = 1 << 33;
    pub const BUILD_ID: u64 = 1 << 34;
    pub const INHERIT_THREAD: u64 = 1 << 35;
    pub const REMOVE_ON_EXEC: u64 = 1 << 36;
    pub const SIGTRAP: u64 = 1 << 37;
}

/// `perf_event_attr.type` values.
pub mod attr_type {
    pub const HARDWARE: u32 = 0;
    pub const SOFTWARE: u32 = 1;
    pub const TRACEPOINT: u32 = 2;
    pub const HW_CACHE: u32 = 3;
    pub const RAW: u32 = 4;
    pub const BREAKPOINT: u32 = 5;
}

/// One `perf_event_attr`, decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attr {
    pub type_: u32,
    /// The size the attr had in the file (0 in very old files means VER0).
    pub size: u32,
    pub config: u64,
    /// `sample_period`, or `sample_freq` when [`flags::FREQ`] is set.
    pub sample_period_or_freq: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// The bitfield word, little-endian numbering (see [`flags`]).
    pub flags: u64,
    /// `wakeup_events` or `wakeup_watermark`.
    pub wakeup: u32,
    pub bp_type: u32,
    /// `config1` / `bp_addr` / `kprobe_func` / `uprobe_path`.
    pub config1: u64,
    /// `config2` / `bp_len` / `probe_offset`.
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub aux_sample_size: u32,
    pub sig_data: u64,
    pub config3: u64,
    /// Bytes past VER8 in the file's attr, kept verbatim.
    pub extra: Vec<u8>,
}

impl Attr {
    /// Decodes an attr from `c`, which must hold at least `size` bytes; the
    /// size comes from the attr itself (offset 4), 0 meaning VER0. Returns the
    /// attr and leaves the cursor after it.
    pub fn parse(c: &mut Cursor<'_>) -> Result<Attr> {
        let start = c.offset();
        let head = c.clone().bytes(8, "perf_event_attr")?;
        let declared = c.endian().u32(&head[4..8]);
        let size = if declared == 0 {
            ATTR_SIZE_VER0
        } else {
            declared
        };
        if size < ATTR_SIZE_VER0 {
            return Err(c.error(ErrorKind::BadHeader(format!(
                "perf_event_attr at {start:#x} has size {size}, smaller than the minimum 64"
            ))));
        }
        let raw = c.bytes(size as usize, "perf_event_attr")?;
        Ok(Attr::from_bytes(raw, c.endian(), declared))
    }

    /// Decodes from exactly the attr's bytes (at least 64; shorter input reads as zeros).
    pub fn from_bytes(raw: &[u8], endian: Endian, declared_size: u32) -> Attr {
        let mut full = [0u8; ATTR_SIZE_VER8 as usize];
        let known = raw.len().min(full.len());
        full[..known].copy_from_slice(&raw[..known]);
        let e = endian;
        let u16_at = |o: usize| e.u16(&full[o..]);
        let u32_at = |o: usize| e.u32(&full[o..]);
        let u64_at = |o: usize| e.u64(&full[o..]);
        let raw_flags = u64_at(40);
        Attr {
            type_: u32_at(0),
            size: declared_size,
            config: u64_at(8),
            sample_period_or_freq: u64_at(16),
            sample_type: u64_at(24),
            read_format: u64_at(32),
            flags: match endian {
                Endian::Little => raw_flags,
                Endian::Big => raw_flags.reverse_bits(),
            },
            wakeup: u32_at(48),
            bp_type: u32_at(52),
            config1: u64_at(56),
            config2: u64_at(64),
            branch_sample_type: u64_at(72),
            sample_regs_user: u64_at(80),
            sample_stack_user: u32_at(88),
            clockid: u32_at(92) as i32,
            sample_regs_intr: u64_at(96),
            aux_watermark: u32_at(104),
            sample_max_stack: u16_at(108),
            aux_sample_size: u32_at(112),
            sig_data: u64_at(120),
            config3: u64_at(128),
            extra: raw.get(ATTR_SIZE_VER8 as usize..).unwrap_or(&[]).to_vec(),
        }
    }

    /// Encodes the attr as `size` bytes (64 ..= 136, or more to carry
    /// [`Attr::extra`]), with the size field set to `size`.
    pub fn write(&self, endian: Endian, size: u32, out: &mut Vec<u8>) {
        let start = out.len();
        let e = endian;
        e.put_u32(out, self.type_);
        e.put_u32(out, size);
        e.put_u64(out, self.config);
        e.put_u64(out, self.sample_period_or_freq);
        e.put_u64(out, self.sample_type);
        e.put_u64(out, self.read_format);
        e.put_u64(
            out,
            match endian {
                Endian::Little => self.flags,
                Endian::Big => self.flags.reverse_bits(),
            },
        );
        e.put_u32(out, self.wakeup);
        e.put_u32(out, self.bp_type);
        e.put_u64(out, self.config1);
        e.put_u64(out, self.config2);
        e.put_u64(out, self.branch_sample_type);
        e.put_u64(out, self.sample_regs_user);
        e.put_u32(out, self.sample_stack_user);
        e.put_u32(out, self.clockid as u32);
        e.put_u64(out, self.sample_regs_intr);
        e.put_u32(out, self.aux_watermark);
        e.put_u16(out, self.sample_max_stack);
        e.put_u16(out, 0);
        e.put_u32(out, self.aux_sample_size);
        e.put_u32(out, 0);
        e.put_u64(out, self.sig_data);
        e.put_u64(out, self.config3);
        out.extend_from_slice(&self.extra);
        out.resize(start + size as usize, 0);
    }

    /// True if the flag bit(s) in `mask` are set.
    pub fn has(&self, mask: u64) -> bool {
        self.flags & mask == mask
    }

    /// `precise_ip` (0..=3).
    pub fn precise_ip(&self) -> u8 {
        ((self.flags & flags::PRECISE_IP_MASK) >> flags::PRECISE_IP_SHIFT) as u8
    }

    /// Whether non-sample records carry the sample_id trailer.
    pub fn sample_id_all(&self) -> bool {
        self.has(flags::SAMPLE_ID_ALL)
    }

    /// Size in bytes of the sample_id trailer on non-sample records.
    pub fn id_trailer_size(&self) -> usize {
        if !self.sample_id_all() {
            return 0;
        }
        let st = self.sample_type;
        [
            sample_type::TID,
            sample_type::TIME,
            sample_type::ID,
            sample_type::STREAM_ID,
            sample_type::CPU,
            sample_type::IDENTIFIER,
        ]
        .iter()
        .filter(|&&b| st & b != 0)
        .count()
            * 8
    }

    /// Index (in u64 words after the record header) of the event id in a
    /// SAMPLE, as perf's `evsel__calc_id_pos`; `None` without ID/IDENTIFIER.
    pub fn sample_id_pos(&self) -> Option<usize> {
        let st = self.sample_type;
        if st & sample_type::IDENTIFIER != 0 {
            return Some(0);
        }
        if st & sample_type::ID == 0 {
            return None;
        }
        Some(
            [
                sample_type::IP,
                sample_type::TID,
                sample_type::TIME,
                sample_type::ADDR,
            ]
            .iter()
            .filter(|&&b| st & b != 0)
            .count(),
        )
    }

    /// Index, counted from the end in u64 words (1 = last), of the event id in
    /// a non-sample record's trailer; `None` without ID/IDENTIFIER.
    pub fn trailer_id_pos(&self) -> Option<usize> {
        let st = self.sample_type;
        if st & sample_type::IDENTIFIER != 0 {
            return Some(1);
        }
        if st & sample_type::ID == 0 {
            return None;
        }
        Some(
            1 + usize::from(st & sample_type::CPU != 0)
                + usize::from(st & sample_type::STREAM_ID != 0),
        )
    }

    /// Size of one read_format block for this attr when not a group.
    pub fn read_value_size(&self) -> usize {
        let rf = self.read_format;
        8 * (1
            + usize::from(rf & read_format::TOTAL_TIME_ENABLED != 0)
            + usize::from(rf & read_format::TOTAL_TIME_RUNNING != 0)
            + usize::from(rf & read_format::ID != 0)
            + usize::from(rf & read_format::LOST != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_attr() -> Attr {
        Attr {
            type_: attr_type::SOFTWARE,
            size: 128,
            sample_period_or_freq: 4000,
            sample_type: 0x107,
            read_format: 0x14,
            flags: 0x6185b703,
            sample_max_stack: 127,
            ..Attr::default()
        }
    }

    #[test]
    fn round_trips_in_both_byte_orders() {
        for endian in [Endian::Little, Endian::Big] {
            let attr = sample_attr();
            let mut out = Vec::new();
            attr.write(endian, 128, &mut out);
            assert_eq!(out.len(), 128);
            let mut c = Cursor::new(&out, 0, endian);
            assert_eq!(Attr::parse(&mut c).unwrap(), attr);
        }
    }

    #[test]
    fn big_endian_flags_are_bit_reversed() {
        let mut out = Vec::new();
        sample_attr().write(Endian::Big, 128, &mut out);
        // `disabled` (bit 0) is the most significant bit of the big-endian word.
        assert_eq!(out[40] & 0x80, 0x80);
    }

    #[test]
    fn short_and_zero_sizes() {
        let mut out = Vec::new();
        sample_attr().write(Endian::Little, 64, &mut out);
        out[4..8].copy_from_slice(&0u32.to_le_bytes());
        let a = Attr::parse(&mut Cursor::new(&out, 0, Endian::Little)).unwrap();
        assert_eq!(a.sample_type, 0x107);
        assert_eq!(a.sample_max_stack, 0);
        out[4..8].copy_from_slice(&8u32.to_le_bytes());
        assert!(Attr::parse(&mut Cursor::new(&out, 0, Endian::Little)).is_err());
    }
}
