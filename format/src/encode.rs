//! Re-encoding decoded records in a chosen byte order.
//!
//! Copies in the input's own byte order move raw bytes and never come here;
//! this is for converting a file to the other byte order (each field swapped
//! by its own width, strings and byte payloads kept), as perf's
//! `perf_event__*_swap` functions do on reading.

use crate::attr::Attr;
use crate::bytes::U64Slice;
use crate::constants::{read_format, sample_type as st, RecordType};
use crate::endian::Endian;
use crate::error::{Error, ErrorKind, Result};
use crate::record::{MmapFileId, RawRecord, Record, SampleId};
use crate::sample::{ReadValues, Regs, Sample};

struct Out<'o> {
    buf: &'o mut Vec<u8>,
    e: Endian,
}

impl Out<'_> {
    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.e.put_u16(self.buf, v);
    }
    fn u32(&mut self, v: u32) {
        self.e.put_u32(self.buf, v);
    }
    fn u64(&mut self, v: u64) {
        self.e.put_u64(self.buf, v);
    }
    fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    fn u64s(&mut self, s: U64Slice<'_>) {
        for v in s.iter() {
            self.u64(v);
        }
    }
    /// A NUL-terminated string padded with zeros to `total` bytes from `start`.
    fn padded_str(&mut self, s: &[u8], start: usize, total: usize) {
        self.bytes(s);
        let end = start + total;
        self.buf.resize(end.max(self.buf.len()), 0);
    }
    fn read(&mut self, r: &ReadValues<'_>) {
        let group = r.format & read_format::GROUP != 0;
        if group {
            let w = 1
                + usize::from(r.format & read_format::ID != 0)
                + usize::from(r.format & read_format::LOST != 0);
            self.u64((r.group.len() / w) as u64);
        } else if let Some(s) = r.single {
            self.u64(s.value);
        }
        if let Some(t) = r.time_enabled {
            self.u64(t);
        }
        if let Some(t) = r.time_running {
            self.u64(t);
        }
        if group {
            self.u64s(r.group);
        } else if let Some(s) = r.single {
            if let Some(id) = s.id {
                self.u64(id);
            }
            if let Some(l) = s.lost {
                self.u64(l);
            }
        }
    }
    fn regs(&mut self, r: &Regs<'_>) {
        self.u64(r.abi);
        self.u64s(r.values);
    }
    fn sample_id(&mut self, t: u64, id: &SampleId) {
        if t & st::TID != 0 {
            self.u32(id.pid.unwrap_or(0));
            self.u32(id.tid.unwrap_or(0));
        }
        if t & st::TIME != 0 {
            self.u64(id.time.unwrap_or(0));
        }
        if t & st::ID != 0 {
            self.u64(id.id.unwrap_or(0));
        }
        if t & st::STREAM_ID != 0 {
            self.u64(id.stream_id.unwrap_or(0));
        }
        if t & st::CPU != 0 {
            self.u32(id.cpu.unwrap_or(0));
            self.u32(0);
        }
        if t & st::IDENTIFIER != 0 {
            self.u64(id.identifier.unwrap_or(0));
        }
    }
    fn sample(&mut self, s: &Sample<'_>, attr: &Attr) {
        let t = attr.sample_type;
        let opt = |o: &mut Self, bit: u64, v: Option<u64>| {
            if t & bit != 0 {
                o.u64(v.unwrap_or(0));
            }
        };
        opt(self, st::IDENTIFIER, s.identifier);
        opt(self, st::IP, s.ip);
        if t & st::TID != 0 {
            self.u32(s.pid.unwrap_or(0));
            self.u32(s.tid.unwrap_or(0));
        }
        opt(self, st::TIME, s.time);
        opt(self, st::ADDR, s.addr);
        opt(self, st::ID, s.id);
        opt(self, st::STREAM_ID, s.stream_id);
        if t & st::CPU != 0 {
            self.u32(s.cpu.unwrap_or(0));
            self.u32(0);
        }
        opt(self, st::PERIOD, s.period);
        if let Some(r) = &s.read {
            self.read(r);
        }
        if let Some(c) = s.callchain {
            self.u64(c.len() as u64);
            self.u64s(c);
        }
        if let Some(raw) = s.raw {
            self.u32(raw.len() as u32);
            self.bytes(raw);
        }
        if let Some(b) = &s.branch_stack {
            self.u64((b.entries.len() / 3) as u64);
            if let Some(h) = b.hw_idx {
                self.u64(h);
            }
            self.u64s(b.entries);
            if let Some(c) = b.counters {
                self.u64s(c);
            }
        }
        if let Some(r) = &s.regs_user {
            self.regs(r);
        }
        if let Some(su) = &s.stack_user {
            self.u64(su.data.len() as u64);
            if !su.data.is_empty() {
                // perf swaps the whole sample as u64 words on reading (its
                // `perf_event__all64_swap`), stack memory included: a stack
                // of the other byte order is stored word-swapped.
                for w in su.data.chunks(8) {
                    if w.len() == 8 {
                        self.buf.extend(w.iter().rev());
                    } else {
                        self.bytes(w);
                    }
                }
                self.u64(su.dyn_size);
            }
        }
        // WEIGHT_STRUCT is swapped as one u64, like perf reads it.
        opt(self, st::WEIGHT | st::WEIGHT_STRUCT, s.weight);
        opt(self, st::DATA_SRC, s.data_src);
        opt(self, st::TRANSACTION, s.transaction);
        if let Some(r) = &s.regs_intr {
            self.regs(r);
        }
        opt(self, st::PHYS_ADDR, s.phys_addr);
        opt(self, st::CGROUP, s.cgroup);
        opt(self, st::DATA_PAGE_SIZE, s.data_page_size);
        opt(self, st::CODE_PAGE_SIZE, s.code_page_size);
        if let Some(a) = s.aux {
            self.u64(a.len() as u64);
            self.bytes(a);
        }
    }
}

/// Appends a SAMPLE record holding `sample`, laid out as `attr`'s
/// sample_type says, in `endian`: for samples a reader synthesizes (perf's
/// `perf_event__synthesize_sample`). Fields the attr does not ask for are
/// left out; fields it asks for that `sample` lacks are written as zero.
/// A record over 64 KiB is an error.
pub fn encode_sample(
    sample: &Sample<'_>,
    attr: &Attr,
    misc: u16,
    endian: Endian,
    buf: &mut Vec<u8>,
) -> Result<()> {
    let mut body = Vec::new();
    Out {
        buf: &mut body,
        e: endian,
    }
    .sample(sample, attr);
    let size = u16::try_from(body.len() + 8).map_err(|_| {
        Error::new(
            0,
            ErrorKind::BadRecord {
                record_type: RecordType::SAMPLE.0,
                problem: format!(
                    "a synthesized sample of {} bytes does not fit a record",
                    body.len() + 8
                ),
            },
        )
    })?;
    endian.put_u32(buf, RecordType::SAMPLE.0);
    endian.put_u16(buf, misc);
    endian.put_u16(buf, size);
    buf.extend_from_slice(&body);
    Ok(())
}

/// Appends `raw` re-encoded in `endian`. `attr` is the record's attr.
/// Types this crate does not decode cannot be converted and are an error.
pub fn encode_record(
    raw: &RawRecord<'_>,
    attr: Option<&Attr>,
    endian: Endian,
    buf: &mut Vec<u8>,
) -> Result<()> {
    let start = buf.len();
    let rec = raw.parse(attr)?;
    let mut o = Out { buf, e: endian };
    o.u32(raw.header.kind.0);
    o.u16(raw.header.misc);
    o.u16(raw.header.size);
    let body_start = start + 8;
    match &rec {
        Record::Sample(s) => {
            let a = attr.ok_or_else(|| unconvertible(raw, "sample without attr"))?;
            o.sample(s, a);
        }
        Record::Mmap(m) | Record::Mmap2(m) => {
            o.u32(m.pid);
            o.u32(m.tid);
            o.u64(m.addr);
            o.u64(m.len);
            o.u64(m.pgoff);
            match m.file_id {
                Some(MmapFileId::Inode {
                    maj,
                    min,
                    ino,
                    ino_generation,
                }) => {
                    o.u32(maj);
                    o.u32(min);
                    o.u64(ino);
                    o.u64(ino_generation);
                }
                Some(MmapFileId::BuildId(id)) => {
                    let mut u = [0u8; 24];
                    u[0] = id.len() as u8;
                    u[4..4 + id.len()].copy_from_slice(id);
                    o.bytes(&u);
                }
                None => {}
            }
            if m.file_id.is_some() {
                o.u32(m.prot);
                o.u32(m.flags);
            }
            let pos = o.buf.len() - body_start;
            let total = raw.body_without_trailer(attr).len() - pos;
            o.padded_str(m.filename, o.buf.len(), total);
        }
        Record::Lost { id, lost } => {
            o.u64(*id);
            o.u64(*lost);
        }
        Record::Comm { pid, tid, comm, .. } => {
            o.u32(*pid);
            o.u32(*tid);
            let total = raw.body_without_trailer(attr).len() - 8;
            o.padded_str(comm, o.buf.len(), total);
        }
        Record::Exit(t) | Record::Fork(t) => {
            o.u32(t.pid);
            o.u32(t.ppid);
            o.u32(t.tid);
            o.u32(t.ptid);
            o.u64(t.time);
        }
        Record::Throttle {
            time,
            id,
            stream_id,
        }
        | Record::Unthrottle {
            time,
            id,
            stream_id,
        } => {
            o.u64(*time);
            o.u64(*id);
            o.u64(*stream_id);
        }
        Record::Read { pid, tid, values } => {
            o.u32(*pid);
            o.u32(*tid);
            o.read(values);
        }
        Record::Aux {
            aux_offset,
            aux_size,
            flags,
        } => {
            o.u64(*aux_offset);
            o.u64(*aux_size);
            o.u64(*flags);
        }
        Record::ItraceStart { pid, tid } => {
            o.u32(*pid);
            o.u32(*tid);
        }
        Record::LostSamples { lost } => o.u64(*lost),
        Record::Switch { .. } => {}
        Record::SwitchCpuWide {
            next_prev_pid,
            next_prev_tid,
            ..
        } => {
            o.u32(*next_prev_pid);
            o.u32(*next_prev_tid);
        }
        Record::Namespaces {
            pid,
            tid,
            namespaces,
        } => {
            o.u32(*pid);
            o.u32(*tid);
            o.u64((namespaces.len() / 2) as u64);
            o.u64s(*namespaces);
        }
        Record::Ksymbol {
            addr,
            len,
            ksym_type,
            flags,
            name,
        } => {
            o.u64(*addr);
            o.u32(*len);
            o.u16(*ksym_type);
            o.u16(*flags);
            let total = raw.body_without_trailer(attr).len() - 16;
            o.padded_str(name, o.buf.len(), total);
        }
        Record::BpfEvent {
            event_type,
            flags,
            id,
            tag,
        } => {
            o.u16(*event_type);
            o.u16(*flags);
            o.u32(*id);
            o.bytes(tag);
        }
        Record::Cgroup { id, path } => {
            o.u64(*id);
            let total = raw.body_without_trailer(attr).len() - 8;
            o.padded_str(path, o.buf.len(), total);
        }
        Record::TextPoke {
            addr,
            old_bytes,
            new_bytes,
        } => {
            o.u64(*addr);
            o.u16(old_bytes.len() as u16);
            o.u16(new_bytes.len() as u16);
            o.bytes(old_bytes);
            o.bytes(new_bytes);
            let total = raw.body_without_trailer(attr).len();
            o.buf.resize(body_start + total, 0);
        }
        Record::AuxOutputHwId { hw_id } => o.u64(*hw_id),
        Record::FinishedRound | Record::FinishedInit => {}
        Record::IdIndex { entries } => {
            o.u64((entries.len() / 4) as u64);
            o.u64s(*entries);
        }
        Record::ThreadMap { entries } => {
            o.u64((entries.len() / 24) as u64);
            for e in entries.chunks_exact(24) {
                o.u64(raw.endian.u64(e));
                o.bytes(&e[8..]);
            }
        }
        Record::StatConfig { entries } => {
            o.u64((entries.len() / 2) as u64);
            o.u64s(*entries);
        }
        Record::Stat {
            id,
            cpu,
            thread,
            val,
            ena,
            run,
        } => {
            o.u64(*id);
            o.u32(*cpu);
            o.u32(*thread);
            o.u64(*val);
            o.u64(*ena);
            o.u64(*run);
        }
        Record::StatRound { round_type, time } => {
            o.u64(*round_type);
            o.u64(*time);
        }
        Record::TimeConv {
            time_shift,
            time_mult,
            time_zero,
            time_cycles,
            time_mask,
            cap_user_time_zero,
            cap_user_time_short,
        } => {
            o.u64(*time_shift);
            o.u64(*time_mult);
            o.u64(*time_zero);
            if let (Some(c), Some(m)) = (time_cycles, time_mask) {
                o.u64(*c);
                o.u64(*m);
                o.u8(u8::from(cap_user_time_zero.unwrap_or(false)));
                o.u8(u8::from(cap_user_time_short.unwrap_or(false)));
            }
            o.buf.resize(start + usize::from(raw.header.size), 0);
        }
        Record::BuildId {
            pid,
            build_id,
            filename,
        } => {
            o.u32(*pid as u32);
            let mut id = [0u8; 24];
            id[..build_id.len()].copy_from_slice(build_id);
            id[20] = build_id.len() as u8;
            o.bytes(&id);
            let total = raw.body.len() - 28;
            o.padded_str(filename, o.buf.len(), total);
        }
        Record::CpuMap { data } => cpu_map(&mut o, raw.endian, data),
        Record::EventUpdate {
            update_type,
            id,
            payload,
        } => {
            o.u64(*update_type);
            o.u64(*id);
            match update_type {
                // Scale: a double, swapped as one u64.
                1 if payload.len() >= 8 => {
                    o.u64(raw.endian.u64(payload));
                    o.bytes(&payload[8..]);
                }
                // Cpus: a cpu map.
                3 => cpu_map(&mut o, raw.endian, payload),
                // Unit and name: strings.
                _ => o.bytes(payload),
            }
        }
        Record::TracingData { size, .. } => {
            o.u32(*size);
            o.bytes(&raw.body[4..]);
        }
        Record::AuxtraceInfo { info_type, private } => {
            o.u32(*info_type);
            o.u32(0);
            o.u64s(*private);
        }
        Record::Auxtrace {
            size,
            offset,
            reference,
            idx,
            tid,
            cpu,
            ..
        } => {
            o.u64(*size);
            o.u64(*offset);
            o.u64(*reference);
            o.u32(*idx);
            o.u32(*tid);
            o.u32(*cpu);
            o.u32(0);
        }
        _ => {
            return Err(unconvertible(
                raw,
                "this record type cannot be byte-swapped",
            ))
        }
    }
    if raw.header.kind != RecordType::SAMPLE && raw.header.kind.is_kernel() {
        if let Some(a) = attr {
            if a.sample_id_all() {
                let id = raw.sample_id(a);
                o.sample_id(a.sample_type, &id);
            }
        }
    }
    if o.buf.len() - start != usize::from(raw.header.size) {
        let got = o.buf.len() - start;
        o.buf.truncate(start);
        return Err(unconvertible(
            raw,
            &format!(
                "re-encoded size {got} differs from the record's {}",
                raw.header.size
            ),
        ));
    }
    Ok(())
}

/// A `perf_record_cpu_map_data`: u16 type, then a list, a mask or a range.
fn cpu_map(o: &mut Out<'_>, from: Endian, data: &[u8]) {
    let start = o.buf.len();
    let u16_at = |i: usize| data.get(i..i + 2).map_or(0, |b| from.u16(b));
    let map_type = u16_at(0);
    o.u16(map_type);
    match map_type {
        0 => {
            // u16 nr, u16 cpu[nr]
            let mut i = 2;
            while i + 2 <= data.len() {
                o.u16(u16_at(i));
                i += 2;
            }
        }
        1 => {
            // u16 nr, u16 long_size, then u32 or (pad, u64) words.
            o.u16(u16_at(2));
            let long_size = u16_at(4);
            o.u16(long_size);
            if long_size == 8 {
                o.bytes(data.get(6..8).unwrap_or(&[0, 0]));
                let mut i = 8;
                while i + 8 <= data.len() {
                    o.u64(from.u64(&data[i..]));
                    i += 8;
                }
            } else {
                let mut i = 6;
                while i + 4 <= data.len() {
                    o.u32(from.u32(&data[i..]));
                    i += 4;
                }
            }
        }
        2 => {
            // u8 any_cpu, u8 pad, u16 start, u16 end
            o.bytes(data.get(2..4).unwrap_or(&[0, 0]));
            o.u16(u16_at(4));
            o.u16(u16_at(6));
        }
        _ => o.bytes(data.get(2..).unwrap_or(&[])),
    }
    // Keep the original length (padding).
    o.buf.resize(start + data.len(), 0);
}

fn unconvertible(raw: &RawRecord<'_>, why: &str) -> Error {
    Error::new(
        raw.offset,
        ErrorKind::BadRecord {
            record_type: raw.header.kind.0,
            problem: why.to_string(),
        },
    )
}
