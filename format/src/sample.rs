//! `PERF_RECORD_SAMPLE` bodies, decoded by their attr's `sample_type`.
//!
//! Fields appear in the kernel's fixed order (`perf_output_sample` in
//! `kernel/events/core.c`), each only when its bit is set. Variable parts
//! (callchain, raw data, branch stack, registers, stack copy) borrow from the
//! record: decoding a sample allocates nothing.

use crate::attr::Attr;
use crate::bytes::{Cursor, U64Slice};
use crate::constants::{branch_sample_type, read_format, sample_type as st};
use crate::error::Result;

/// A decoded sample. `None` means the attr did not ask for the field.
#[derive(Clone, Debug, Default)]
pub struct Sample<'a> {
    pub identifier: Option<u64>,
    pub ip: Option<u64>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub time: Option<u64>,
    pub addr: Option<u64>,
    pub id: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    pub read: Option<ReadValues<'a>>,
    /// Callchain entries, context markers included.
    pub callchain: Option<U64Slice<'a>>,
    pub raw: Option<&'a [u8]>,
    pub branch_stack: Option<BranchStack<'a>>,
    pub regs_user: Option<Regs<'a>>,
    pub stack_user: Option<StackUser<'a>>,
    /// WEIGHT, or WEIGHT_STRUCT as its raw u64.
    pub weight: Option<u64>,
    pub data_src: Option<u64>,
    pub transaction: Option<u64>,
    pub regs_intr: Option<Regs<'a>>,
    pub phys_addr: Option<u64>,
    pub cgroup: Option<u64>,
    pub data_page_size: Option<u64>,
    pub code_page_size: Option<u64>,
    pub aux: Option<&'a [u8]>,
}

/// A read_format block (from SAMPLE with PERF_SAMPLE_READ, or a READ record).
#[derive(Clone, Copy, Debug)]
pub struct ReadValues<'a> {
    /// The attr's read_format.
    pub format: u64,
    pub time_enabled: Option<u64>,
    pub time_running: Option<u64>,
    /// Without GROUP: the one `(value, id, lost)`.
    pub single: Option<ReadEntry>,
    /// With GROUP: `nr` entries of `value, [id], [lost]` words.
    pub group: U64Slice<'a>,
}

/// One counter value of a read_format block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadEntry {
    pub value: u64,
    pub id: Option<u64>,
    pub lost: Option<u64>,
}

impl ReadValues<'_> {
    /// Iterates the entries: one without GROUP, `nr` with it.
    pub fn iter(&self) -> impl Iterator<Item = ReadEntry> + '_ {
        let has_id = self.format & read_format::ID != 0;
        let has_lost = self.format & read_format::LOST != 0;
        let w = 1 + usize::from(has_id) + usize::from(has_lost);
        let g = self.group;
        self.single
            .into_iter()
            .chain((0..g.len() / w).map(move |i| {
                let base = i * w;
                ReadEntry {
                    value: g.get(base).unwrap_or(0),
                    id: has_id.then(|| g.get(base + 1).unwrap_or(0)),
                    lost: has_lost.then(|| g.get(base + 1 + usize::from(has_id)).unwrap_or(0)),
                }
            }))
    }
}

/// A branch stack: `nr` entries of `{from, to, flags}`.
#[derive(Clone, Copy, Debug)]
pub struct BranchStack<'a> {
    pub hw_idx: Option<u64>,
    /// 3 × nr words.
    pub entries: U64Slice<'a>,
    /// With PERF_SAMPLE_BRANCH_COUNTERS: nr words.
    pub counters: Option<U64Slice<'a>>,
}

/// Sampled registers: the ABI word and one value per bit of the mask.
#[derive(Clone, Copy, Debug)]
pub struct Regs<'a> {
    /// 0 none, 1 32-bit, 2 64-bit.
    pub abi: u64,
    /// The attr's register mask.
    pub mask: u64,
    pub values: U64Slice<'a>,
}

/// A copy of the user stack.
#[derive(Clone, Copy, Debug)]
pub struct StackUser<'a> {
    /// The copied bytes (the size requested).
    pub data: &'a [u8],
    /// How many of them are valid.
    pub dyn_size: u64,
}

/// Reads a read_format block.
pub(crate) fn parse_read<'a>(c: &mut Cursor<'a>, format: u64) -> Result<ReadValues<'a>> {
    let has_id = format & read_format::ID != 0;
    let has_lost = format & read_format::LOST != 0;
    let endian = c.endian();
    if format & read_format::GROUP != 0 {
        let nr = c.u64("read_format group nr")?;
        let time_enabled = opt(
            c,
            format & read_format::TOTAL_TIME_ENABLED != 0,
            "time_enabled",
        )?;
        let time_running = opt(
            c,
            format & read_format::TOTAL_TIME_RUNNING != 0,
            "time_running",
        )?;
        let words = 1 + usize::from(has_id) + usize::from(has_lost);
        let entries = c.array(nr, 8 * words, "read_format group entries")?;
        Ok(ReadValues {
            format,
            time_enabled,
            time_running,
            single: None,
            group: U64Slice::new(entries, endian),
        })
    } else {
        let value = c.u64("read_format value")?;
        let time_enabled = opt(
            c,
            format & read_format::TOTAL_TIME_ENABLED != 0,
            "time_enabled",
        )?;
        let time_running = opt(
            c,
            format & read_format::TOTAL_TIME_RUNNING != 0,
            "time_running",
        )?;
        let id = opt(c, has_id, "read_format id")?;
        let lost = opt(c, has_lost, "read_format lost")?;
        Ok(ReadValues {
            format,
            time_enabled,
            time_running,
            single: Some(ReadEntry { value, id, lost }),
            group: U64Slice::new(&[], endian),
        })
    }
}

fn opt(c: &mut Cursor<'_>, present: bool, what: &'static str) -> Result<Option<u64>> {
    if present {
        Ok(Some(c.u64(what)?))
    } else {
        Ok(None)
    }
}

fn regs<'a>(c: &mut Cursor<'a>, mask: u64, what: &'static str) -> Result<Regs<'a>> {
    let abi = c.u64(what)?;
    let values = if abi != 0 {
        c.array(u64::from(mask.count_ones()), 8, what)?
    } else {
        &[]
    };
    Ok(Regs {
        abi,
        mask,
        values: U64Slice::new(values, c.endian()),
    })
}

impl<'a> Sample<'a> {
    /// Decodes a sample body (the bytes after the 8-byte record header).
    #[inline]
    pub fn parse(
        body: &'a [u8],
        body_offset: u64,
        attr: &Attr,
        endian: crate::Endian,
    ) -> Result<Sample<'a>> {
        let mut c = Cursor::new(body, body_offset, endian);
        let c = &mut c;
        let t = attr.sample_type;
        let mut s = Sample::default();
        if t & st::IDENTIFIER != 0 {
            s.identifier = Some(c.u64("sample identifier")?);
        }
        if t & st::IP != 0 {
            s.ip = Some(c.u64("sample ip")?);
        }
        if t & st::TID != 0 {
            s.pid = Some(c.u32("sample pid")?);
            s.tid = Some(c.u32("sample tid")?);
        }
        if t & st::TIME != 0 {
            s.time = Some(c.u64("sample time")?);
        }
        if t & st::ADDR != 0 {
            s.addr = Some(c.u64("sample addr")?);
        }
        if t & st::ID != 0 {
            s.id = Some(c.u64("sample id")?);
        }
        if t & st::STREAM_ID != 0 {
            s.stream_id = Some(c.u64("sample stream_id")?);
        }
        if t & st::CPU != 0 {
            s.cpu = Some(c.u32("sample cpu")?);
            c.u32("sample cpu reserved")?;
        }
        if t & st::PERIOD != 0 {
            s.period = Some(c.u64("sample period")?);
        }
        if t & st::READ != 0 {
            s.read = Some(parse_read(c, attr.read_format)?);
        }
        if t & st::CALLCHAIN != 0 {
            let nr = c.u64("callchain nr")?;
            s.callchain = Some(U64Slice::new(c.array(nr, 8, "callchain")?, c.endian()));
        }
        if t & st::RAW != 0 {
            let size = c.u32("raw size")?;
            s.raw = Some(c.bytes(size as usize, "raw data")?);
        }
        if t & st::BRANCH_STACK != 0 {
            let nr = c.u64("branch stack nr")?;
            let hw_idx = if attr.branch_sample_type & branch_sample_type::HW_INDEX != 0 {
                Some(c.u64("branch hw_idx")?)
            } else {
                None
            };
            let entries = U64Slice::new(c.array(nr, 24, "branch entries")?, c.endian());
            let counters = if attr.branch_sample_type & branch_sample_type::COUNTERS != 0 {
                Some(U64Slice::new(
                    c.array(nr, 8, "branch counters")?,
                    c.endian(),
                ))
            } else {
                None
            };
            s.branch_stack = Some(BranchStack {
                hw_idx,
                entries,
                counters,
            });
        }
        if t & st::REGS_USER != 0 {
            s.regs_user = Some(regs(c, attr.sample_regs_user, "user regs")?);
        }
        if t & st::STACK_USER != 0 {
            let size = c.u64("user stack size")?;
            if size != 0 {
                let data = c.array(size, 1, "user stack")?;
                let dyn_size = c.u64("user stack dyn_size")?;
                s.stack_user = Some(StackUser { data, dyn_size });
            } else {
                s.stack_user = Some(StackUser {
                    data: &[],
                    dyn_size: 0,
                });
            }
        }
        if t & (st::WEIGHT | st::WEIGHT_STRUCT) != 0 {
            s.weight = Some(c.u64("sample weight")?);
        }
        if t & st::DATA_SRC != 0 {
            s.data_src = Some(c.u64("sample data_src")?);
        }
        if t & st::TRANSACTION != 0 {
            s.transaction = Some(c.u64("sample transaction")?);
        }
        if t & st::REGS_INTR != 0 {
            s.regs_intr = Some(regs(c, attr.sample_regs_intr, "intr regs")?);
        }
        if t & st::PHYS_ADDR != 0 {
            s.phys_addr = Some(c.u64("sample phys_addr")?);
        }
        if t & st::CGROUP != 0 {
            s.cgroup = Some(c.u64("sample cgroup")?);
        }
        if t & st::DATA_PAGE_SIZE != 0 {
            s.data_page_size = Some(c.u64("sample data_page_size")?);
        }
        if t & st::CODE_PAGE_SIZE != 0 {
            s.code_page_size = Some(c.u64("sample code_page_size")?);
        }
        if t & st::AUX != 0 {
            let size = c.u64("aux size")?;
            s.aux = Some(c.array(size, 1, "aux data")?);
        }
        Ok(s)
    }
}
