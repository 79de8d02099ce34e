//! Records of the data section: the raw form every record has, and the
//! decoded form of each type in the kernel's `perf_event.h` and perf's
//! `event.h`.
//!
//! A [`RawRecord`] is the header plus borrowed body bytes; it is cheap and
//! never fails. [`RawRecord::parse`] decodes the body by type (samples by
//! their attr's `sample_type`); an unknown type decodes to
//! [`Record::Unknown`], never to an error.

use crate::attr::Attr;
use crate::bytes::{until_nul, Cursor, U64Slice};
use crate::constants::{misc, sample_type as st, RecordType};
use crate::endian::Endian;
use crate::error::Result;
use crate::sample::{parse_read, ReadValues, Sample};

/// The 8-byte header of every record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: RecordType,
    pub misc: u16,
    pub size: u16,
}

/// A record as found in the data: header and undecoded body.
#[derive(Clone, Copy, Debug)]
pub struct RawRecord<'a> {
    /// Offset of the record header in the file or stream.
    pub offset: u64,
    /// Which file holds the record: 0 for the input itself (and a
    /// directory-format perf.data's header file), n for the directory's
    /// n-th data file ([`crate::PerfFile::data_file_name`]).
    pub file: u32,
    pub header: RecordHeader,
    /// The bytes after the header, `header.size - 8` of them.
    pub body: &'a [u8],
    /// Payload that follows the record without being counted in its size
    /// (HEADER_TRACING_DATA and AUXTRACE); empty for other types.
    pub trailing: &'a [u8],
    pub endian: Endian,
}

/// The sample_id trailer of a non-sample kernel record (or the same fields
/// of a sample).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleId {
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub time: Option<u64>,
    pub id: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu: Option<u32>,
    pub identifier: Option<u64>,
}

/// MMAP and MMAP2.
#[derive(Clone, Copy, Debug)]
pub struct Mmap<'a> {
    pub pid: u32,
    pub tid: u32,
    pub addr: u64,
    pub len: u64,
    pub pgoff: u64,
    /// MMAP2 only: what identifies the file.
    pub file_id: Option<MmapFileId<'a>>,
    /// MMAP2 only.
    pub prot: u32,
    /// MMAP2 only.
    pub flags: u32,
    pub filename: &'a [u8],
}

/// MMAP2's union: device and inode, or (misc MMAP_BUILD_ID) a build-id.
#[derive(Clone, Copy, Debug)]
pub enum MmapFileId<'a> {
    Inode {
        maj: u32,
        min: u32,
        ino: u64,
        ino_generation: u64,
    },
    BuildId(&'a [u8]),
}

/// FORK and EXIT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskEvent {
    pub pid: u32,
    pub ppid: u32,
    pub tid: u32,
    pub ptid: u32,
    pub time: u64,
}

/// A decoded record. Kernel records' sample_id trailers are decoded
/// separately by [`RawRecord::sample_id`].
#[derive(Clone, Debug)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // samples dominate; boxing them would allocate per record
pub enum Record<'a> {
    Mmap(Mmap<'a>),
    Lost {
        id: u64,
        lost: u64,
    },
    Comm {
        pid: u32,
        tid: u32,
        comm: &'a [u8],
        exec: bool,
    },
    Exit(TaskEvent),
    Throttle {
        time: u64,
        id: u64,
        stream_id: u64,
    },
    Unthrottle {
        time: u64,
        id: u64,
        stream_id: u64,
    },
    Fork(TaskEvent),
    Read {
        pid: u32,
        tid: u32,
        values: ReadValues<'a>,
    },
    Sample(Sample<'a>),
    Mmap2(Mmap<'a>),
    Aux {
        aux_offset: u64,
        aux_size: u64,
        flags: u64,
    },
    ItraceStart {
        pid: u32,
        tid: u32,
    },
    LostSamples {
        lost: u64,
    },
    Switch {
        out: bool,
        preempt: bool,
    },
    SwitchCpuWide {
        out: bool,
        preempt: bool,
        next_prev_pid: u32,
        next_prev_tid: u32,
    },
    /// `(dev, inode)` pairs, index 0 net .. 6 cgroup.
    Namespaces {
        pid: u32,
        tid: u32,
        namespaces: U64Slice<'a>,
    },
    Ksymbol {
        addr: u64,
        len: u32,
        ksym_type: u16,
        flags: u16,
        name: &'a [u8],
    },
    BpfEvent {
        event_type: u16,
        flags: u16,
        id: u32,
        tag: &'a [u8],
    },
    Cgroup {
        id: u64,
        path: &'a [u8],
    },
    TextPoke {
        addr: u64,
        old_bytes: &'a [u8],
        new_bytes: &'a [u8],
    },
    AuxOutputHwId {
        hw_id: u64,
    },
    HeaderAttr {
        attr: Attr,
        ids: U64Slice<'a>,
    },
    HeaderEventType {
        event_id: u64,
        name: &'a [u8],
    },
    TracingData {
        size: u32,
        data: &'a [u8],
    },
    BuildId {
        pid: i32,
        build_id: &'a [u8],
        filename: &'a [u8],
    },
    FinishedRound,
    /// `nr` entries of `id, idx, cpu, tid` (4 words each).
    IdIndex {
        entries: U64Slice<'a>,
    },
    AuxtraceInfo {
        info_type: u32,
        private: U64Slice<'a>,
    },
    Auxtrace {
        size: u64,
        offset: u64,
        reference: u64,
        idx: u32,
        tid: u32,
        cpu: u32,
        data: &'a [u8],
    },
    AuxtraceError {
        error_type: u32,
        code: u32,
        cpu: u32,
        pid: u32,
        tid: u32,
        ip: u64,
        time: u64,
        msg: &'a [u8],
    },
    /// `nr` entries of `u64 pid; char comm[16]`.
    ThreadMap {
        entries: &'a [u8],
    },
    CpuMap {
        data: &'a [u8],
    },
    StatConfig {
        entries: U64Slice<'a>,
    },
    Stat {
        id: u64,
        cpu: u32,
        thread: u32,
        val: u64,
        ena: u64,
        run: u64,
    },
    StatRound {
        round_type: u64,
        time: u64,
    },
    EventUpdate {
        update_type: u64,
        id: u64,
        payload: &'a [u8],
    },
    TimeConv {
        time_shift: u64,
        time_mult: u64,
        time_zero: u64,
        time_cycles: Option<u64>,
        time_mask: Option<u64>,
        cap_user_time_zero: Option<bool>,
        cap_user_time_short: Option<bool>,
    },
    HeaderFeature {
        feature: u64,
        payload: &'a [u8],
    },
    Compressed {
        data: &'a [u8],
    },
    FinishedInit,
    /// A type this crate does not decode; the body is kept.
    Unknown {
        kind: RecordType,
        body: &'a [u8],
    },
}

impl<'a> RawRecord<'a> {
    /// The cpumode from `misc` (see [`misc`]).
    pub fn cpumode(&self) -> u16 {
        self.header.misc & misc::CPUMODE_MASK
    }

    /// The body without the sample_id trailer (for kernel non-sample records).
    pub fn body_without_trailer(&self, attr: Option<&Attr>) -> &'a [u8] {
        if self.header.kind == RecordType::SAMPLE || !self.header.kind.is_kernel() {
            return self.body;
        }
        let n = attr.map_or(0, |a| a.id_trailer_size()).min(self.body.len());
        &self.body[..self.body.len() - n]
    }

    /// Decodes the sample_id trailer (or, for samples, the same fields from
    /// the front of the body). Empty for perf's own records and when the attr
    /// has no sample_id_all.
    pub fn sample_id(&self, attr: &Attr) -> SampleId {
        let t = attr.sample_type;
        if self.header.kind == RecordType::SAMPLE {
            return Sample::parse_prefix(self.body, attr, self.endian).unwrap_or_default();
        }
        if !self.header.kind.is_kernel() || !attr.sample_id_all() {
            return SampleId::default();
        }
        let n = attr.id_trailer_size();
        if n > self.body.len() {
            return SampleId::default();
        }
        let mut c = Cursor::new(&self.body[self.body.len() - n..], 0, self.endian);
        let mut id = SampleId::default();
        let mut read = || -> Result<()> {
            if t & st::TID != 0 {
                id.pid = Some(c.u32("trailer pid")?);
                id.tid = Some(c.u32("trailer tid")?);
            }
            if t & st::TIME != 0 {
                id.time = Some(c.u64("trailer time")?);
            }
            if t & st::ID != 0 {
                id.id = Some(c.u64("trailer id")?);
            }
            if t & st::STREAM_ID != 0 {
                id.stream_id = Some(c.u64("trailer stream_id")?);
            }
            if t & st::CPU != 0 {
                id.cpu = Some(c.u32("trailer cpu")?);
                c.u32("trailer cpu reserved")?;
            }
            if t & st::IDENTIFIER != 0 {
                id.identifier = Some(c.u64("trailer identifier")?);
            }
            Ok(())
        };
        // The trailer size was checked above, so reading cannot fail.
        let _ = read();
        id
    }

    /// Decodes the body. `attr` is the record's attr (needed for samples,
    /// READ and the trailer size); perf's own records ignore it.
    #[inline]
    pub fn parse(&self, attr: Option<&Attr>) -> Result<Record<'a>> {
        let kind = self.header.kind;
        let body_offset = self.offset + 8;
        if kind == RecordType::SAMPLE {
            return match attr {
                Some(a) => Ok(Record::Sample(Sample::parse(
                    self.body,
                    body_offset,
                    a,
                    self.endian,
                )?)),
                None => Ok(Record::Unknown {
                    kind,
                    body: self.body,
                }),
            };
        }
        let body = self.body_without_trailer(attr);
        let mut c = Cursor::new(body, body_offset, self.endian);
        let c = &mut c;
        let misc = self.header.misc;
        Ok(match kind {
            RecordType::MMAP => Record::Mmap(Mmap {
                pid: c.u32("mmap pid")?,
                tid: c.u32("mmap tid")?,
                addr: c.u64("mmap addr")?,
                len: c.u64("mmap len")?,
                pgoff: c.u64("mmap pgoff")?,
                file_id: None,
                prot: 0,
                flags: 0,
                filename: until_nul(c.rest()),
            }),
            RecordType::MMAP2 => {
                let pid = c.u32("mmap2 pid")?;
                let tid = c.u32("mmap2 tid")?;
                let addr = c.u64("mmap2 addr")?;
                let len = c.u64("mmap2 len")?;
                let pgoff = c.u64("mmap2 pgoff")?;
                let union = c.bytes(24, "mmap2 file id")?;
                let file_id = if misc & misc::MMAP_BUILD_ID != 0 {
                    let size = usize::from(union[0]).min(20);
                    MmapFileId::BuildId(&union[4..4 + size])
                } else {
                    let e = self.endian;
                    MmapFileId::Inode {
                        maj: e.u32(&union[0..]),
                        min: e.u32(&union[4..]),
                        ino: e.u64(&union[8..]),
                        ino_generation: e.u64(&union[16..]),
                    }
                };
                Record::Mmap2(Mmap {
                    pid,
                    tid,
                    addr,
                    len,
                    pgoff,
                    file_id: Some(file_id),
                    prot: c.u32("mmap2 prot")?,
                    flags: c.u32("mmap2 flags")?,
                    filename: until_nul(c.rest()),
                })
            }
            RecordType::LOST => Record::Lost {
                id: c.u64("lost id")?,
                lost: c.u64("lost count")?,
            },
            RecordType::COMM => Record::Comm {
                pid: c.u32("comm pid")?,
                tid: c.u32("comm tid")?,
                comm: until_nul(c.rest()),
                exec: misc & misc::COMM_EXEC != 0,
            },
            RecordType::EXIT | RecordType::FORK => {
                let t = TaskEvent {
                    pid: c.u32("task pid")?,
                    ppid: c.u32("task ppid")?,
                    tid: c.u32("task tid")?,
                    ptid: c.u32("task ptid")?,
                    time: c.u64("task time")?,
                };
                if kind == RecordType::EXIT {
                    Record::Exit(t)
                } else {
                    Record::Fork(t)
                }
            }
            RecordType::THROTTLE | RecordType::UNTHROTTLE => {
                let time = c.u64("throttle time")?;
                let id = c.u64("throttle id")?;
                let stream_id = c.u64("throttle stream_id")?;
                if kind == RecordType::THROTTLE {
                    Record::Throttle {
                        time,
                        id,
                        stream_id,
                    }
                } else {
                    Record::Unthrottle {
                        time,
                        id,
                        stream_id,
                    }
                }
            }
            RecordType::READ => {
                let pid = c.u32("read pid")?;
                let tid = c.u32("read tid")?;
                let format = attr.map_or(0, |a| a.read_format);
                Record::Read {
                    pid,
                    tid,
                    values: parse_read(c, format)?,
                }
            }
            RecordType::AUX => Record::Aux {
                aux_offset: c.u64("aux offset")?,
                aux_size: c.u64("aux size")?,
                flags: c.u64("aux flags")?,
            },
            RecordType::ITRACE_START => Record::ItraceStart {
                pid: c.u32("itrace pid")?,
                tid: c.u32("itrace tid")?,
            },
            RecordType::LOST_SAMPLES => Record::LostSamples {
                lost: c.u64("lost samples")?,
            },
            RecordType::SWITCH => Record::Switch {
                out: misc & misc::SWITCH_OUT != 0,
                preempt: misc & misc::SWITCH_OUT_PREEMPT != 0,
            },
            RecordType::SWITCH_CPU_WIDE => Record::SwitchCpuWide {
                out: misc & misc::SWITCH_OUT != 0,
                preempt: misc & misc::SWITCH_OUT_PREEMPT != 0,
                next_prev_pid: c.u32("switch pid")?,
                next_prev_tid: c.u32("switch tid")?,
            },
            RecordType::NAMESPACES => {
                let pid = c.u32("namespaces pid")?;
                let tid = c.u32("namespaces tid")?;
                let nr = c.u64("namespaces nr")?;
                Record::Namespaces {
                    pid,
                    tid,
                    namespaces: U64Slice::new(c.array(nr, 16, "namespaces")?, self.endian),
                }
            }
            RecordType::KSYMBOL => Record::Ksymbol {
                addr: c.u64("ksymbol addr")?,
                len: c.u32("ksymbol len")?,
                ksym_type: c.u16("ksymbol type")?,
                flags: c.u16("ksymbol flags")?,
                name: until_nul(c.rest()),
            },
            RecordType::BPF_EVENT => Record::BpfEvent {
                event_type: c.u16("bpf type")?,
                flags: c.u16("bpf flags")?,
                id: c.u32("bpf id")?,
                tag: c.bytes(8, "bpf tag")?,
            },
            RecordType::CGROUP => Record::Cgroup {
                id: c.u64("cgroup id")?,
                path: until_nul(c.rest()),
            },
            RecordType::TEXT_POKE => {
                let addr = c.u64("text_poke addr")?;
                let old_len = c.u16("text_poke old_len")?;
                let new_len = c.u16("text_poke new_len")?;
                Record::TextPoke {
                    addr,
                    old_bytes: c.bytes(usize::from(old_len), "text_poke old bytes")?,
                    new_bytes: c.bytes(usize::from(new_len), "text_poke new bytes")?,
                }
            }
            RecordType::AUX_OUTPUT_HW_ID => Record::AuxOutputHwId {
                hw_id: c.u64("hw_id")?,
            },
            RecordType::HEADER_ATTR => {
                let attr = Attr::parse(c)?;
                let ids = c.rest();
                Record::HeaderAttr {
                    attr,
                    ids: U64Slice::new(ids, self.endian),
                }
            }
            RecordType::HEADER_EVENT_TYPE => Record::HeaderEventType {
                event_id: c.u64("event type id")?,
                name: until_nul(c.rest()),
            },
            RecordType::HEADER_TRACING_DATA => Record::TracingData {
                size: c.u32("tracing data size")?,
                data: self.trailing,
            },
            RecordType::HEADER_BUILD_ID => {
                let pid = c.u32("build-id pid")? as i32;
                let id = c.bytes(24, "build-id")?;
                let size = if misc & 0x8000 != 0 {
                    usize::from(id[20]).min(20)
                } else {
                    20
                };
                Record::BuildId {
                    pid,
                    build_id: &id[..size],
                    filename: until_nul(c.rest()),
                }
            }
            RecordType::FINISHED_ROUND => Record::FinishedRound,
            RecordType::FINISHED_INIT => Record::FinishedInit,
            RecordType::ID_INDEX => {
                let nr = c.u64("id_index nr")?;
                // perf >= 6.6 appends a second array of {machine_pid, vcpu};
                // the first array keeps its layout.
                Record::IdIndex {
                    entries: U64Slice::new(c.array(nr, 32, "id_index entries")?, self.endian),
                }
            }
            RecordType::AUXTRACE_INFO => Record::AuxtraceInfo {
                info_type: {
                    let t = c.u32("auxtrace_info type")?;
                    c.u32("auxtrace_info pad")?;
                    t
                },
                private: U64Slice::new(c.rest(), self.endian),
            },
            RecordType::AUXTRACE => Record::Auxtrace {
                size: c.u64("auxtrace size")?,
                offset: c.u64("auxtrace offset")?,
                reference: c.u64("auxtrace reference")?,
                idx: c.u32("auxtrace idx")?,
                tid: c.u32("auxtrace tid")?,
                cpu: c.u32("auxtrace cpu")?,
                data: self.trailing,
            },
            RecordType::AUXTRACE_ERROR => {
                let error_type = c.u32("auxtrace_error type")?;
                let code = c.u32("auxtrace_error code")?;
                let cpu = c.u32("auxtrace_error cpu")?;
                let pid = c.u32("auxtrace_error pid")?;
                let tid = c.u32("auxtrace_error tid")?;
                let _fmt = c.u32("auxtrace_error fmt")?;
                let ip = c.u64("auxtrace_error ip")?;
                let time = c.u64("auxtrace_error time")?;
                let msg = until_nul(c.bytes(c.remaining().min(64), "auxtrace_error msg")?);
                Record::AuxtraceError {
                    error_type,
                    code,
                    cpu,
                    pid,
                    tid,
                    ip,
                    time,
                    msg,
                }
            }
            RecordType::THREAD_MAP => {
                let nr = c.u64("thread_map nr")?;
                Record::ThreadMap {
                    entries: c.array(nr, 24, "thread_map entries")?,
                }
            }
            RecordType::CPU_MAP => Record::CpuMap { data: c.rest() },
            RecordType::STAT_CONFIG => {
                let nr = c.u64("stat_config nr")?;
                Record::StatConfig {
                    entries: U64Slice::new(c.array(nr, 16, "stat_config entries")?, self.endian),
                }
            }
            RecordType::STAT => Record::Stat {
                id: c.u64("stat id")?,
                cpu: c.u32("stat cpu")?,
                thread: c.u32("stat thread")?,
                val: c.u64("stat val")?,
                ena: c.u64("stat ena")?,
                run: c.u64("stat run")?,
            },
            RecordType::STAT_ROUND => Record::StatRound {
                round_type: c.u64("stat_round type")?,
                time: c.u64("stat_round time")?,
            },
            RecordType::EVENT_UPDATE => Record::EventUpdate {
                update_type: c.u64("event_update type")?,
                id: c.u64("event_update id")?,
                payload: c.rest(),
            },
            RecordType::TIME_CONV => {
                let time_shift = c.u64("time_conv shift")?;
                let time_mult = c.u64("time_conv mult")?;
                let time_zero = c.u64("time_conv zero")?;
                let (time_cycles, time_mask, cap_zero, cap_short) = if c.remaining() >= 24 {
                    (
                        Some(c.u64("time_conv cycles")?),
                        Some(c.u64("time_conv mask")?),
                        Some(c.u8("time_conv cap")? != 0),
                        Some(c.u8("time_conv cap")? != 0),
                    )
                } else {
                    (None, None, None, None)
                };
                Record::TimeConv {
                    time_shift,
                    time_mult,
                    time_zero,
                    time_cycles,
                    time_mask,
                    cap_user_time_zero: cap_zero,
                    cap_user_time_short: cap_short,
                }
            }
            RecordType::HEADER_FEATURE => Record::HeaderFeature {
                feature: c.u64("feature id")?,
                payload: c.rest(),
            },
            RecordType::COMPRESSED => Record::Compressed { data: c.rest() },
            _ => Record::Unknown {
                kind,
                body: self.body,
            },
        })
    }
}

impl Sample<'_> {
    /// The sample_id fields of a sample, read from the front of its body
    /// without decoding the rest. `None` if the body is too short.
    pub fn parse_prefix(body: &[u8], attr: &Attr, endian: Endian) -> Option<SampleId> {
        let t = attr.sample_type;
        let mut c = Cursor::new(body, 0, endian);
        let mut id = SampleId::default();
        if t & st::IDENTIFIER != 0 {
            id.identifier = Some(c.u64("").ok()?);
        }
        if t & st::IP != 0 {
            c.u64("").ok()?;
        }
        if t & st::TID != 0 {
            id.pid = Some(c.u32("").ok()?);
            id.tid = Some(c.u32("").ok()?);
        }
        if t & st::TIME != 0 {
            id.time = Some(c.u64("").ok()?);
        }
        if t & st::ADDR != 0 {
            c.u64("").ok()?;
        }
        if t & st::ID != 0 {
            id.id = Some(c.u64("").ok()?);
        }
        if t & st::STREAM_ID != 0 {
            id.stream_id = Some(c.u64("").ok()?);
        }
        if t & st::CPU != 0 {
            id.cpu = Some(c.u32("").ok()?);
        }
        Some(id)
    }
}
