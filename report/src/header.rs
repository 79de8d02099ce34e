//! `perf report --header-only` (and `-I`): the header block, printed byte
//! for byte as perf 6.1 prints it (`perf_header__fprintf_info` and the
//! `print_*` functions of tools/perf/util/header.c, and
//! `perf_event_attr__fprintf`).
//!
//! The local time zone is a fixed offset ([`HeaderInfo::utc_offset`]).
//!
//! Build a [`HeaderInfo`] with [`HeaderInfo::from_sections`] from what a
//! reader has (attrs, raw feature sections, data offset/size, mtime) and
//! call [`print_header`].

use std::io::{self, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use prec_format::attr::flags;
use prec_format::features::{self, Feature};
use prec_format::{Attr, Endian, FeatureId};

/// perf 6.1's HEADER_LAST_FEATURE.
const LAST_FEATURE: u32 = 32;

/// One attr of the file, with its ids and (if the caller knows it) its name.
#[derive(Clone, Debug, Default)]
pub struct EventInfo {
    pub attr: Attr,
    pub ids: Vec<u64>,
    /// The evsel name; EVENT_DESC's name is used when this is `None`.
    pub name: Option<String>,
}

/// Everything `--header-only` prints.
#[derive(Clone, Debug, Default)]
pub struct HeaderInfo {
    /// The file's modification time, seconds since the epoch ("captured on").
    pub mtime: i64,
    /// Local time offset from UTC in seconds (perf prints local time; 0 = UTC).
    pub utc_offset: i64,
    /// Pipe-mode input: offsets print as 0, features follow the block, and
    /// there is no "missing features" line.
    pub is_pipe: bool,
    pub data_offset: u64,
    pub data_size: u64,
    /// The attrs in file order.
    pub events: Vec<EventInfo>,
    /// Feature sections in file order (increasing bit; stream order for
    /// pipes). `None` = present but undecodable.
    pub features: Vec<(FeatureId, Option<Feature>)>,
    /// `-I`: print the full-only features (CPU_TOPOLOGY, NUMA, CACHE, ...).
    pub full: bool,
    /// The file's byte order is not this machine's: perf 6.1 does not read
    /// BPF program information from it.
    pub swapped: bool,
}

impl HeaderInfo {
    /// Builds the info from a reader's view of a perf.data file.
    pub fn from_sections(
        endian: Endian,
        attrs: Vec<(Attr, Vec<u64>)>,
        sections: &[(FeatureId, &[u8], u64)],
        data_offset: u64,
        data_size: u64,
        mtime: SystemTime,
    ) -> HeaderInfo {
        let mtime = match mtime.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs() as i64),
        };
        HeaderInfo {
            mtime,
            data_offset,
            data_size,
            events: attrs
                .into_iter()
                .map(|(attr, ids)| EventInfo {
                    attr,
                    ids,
                    name: None,
                })
                .collect(),
            features: processed(features::decode_all(sections, endian)),
            swapped: endian != Endian::NATIVE,
            ..HeaderInfo::default()
        }
    }

    fn feature(&self, id: FeatureId) -> Option<&Feature> {
        self.features
            .iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, f)| f.as_ref())
    }
}

/// perf stops processing feature sections at the first one that fails
/// (print then shows defaults for it and all later ones), except that
/// EVENT_DESC is re-read when printed.
fn processed(
    v: Vec<(FeatureId, prec_format::Result<Feature>)>,
) -> Vec<(FeatureId, Option<Feature>)> {
    let mut failed = false;
    v.into_iter()
        .map(|(id, r)| {
            let ok = match &r {
                Ok(Feature::Raw { bytes, .. }) => {
                    !bytes.is_empty() || !has_print(id) || id == FeatureId::BUILD_ID
                }
                Ok(_) => true,
                Err(_) => false,
            };
            let keep = !failed || id == FeatureId::EVENT_DESC;
            failed |= !ok;
            (id, if keep { r.ok() } else { None })
        })
        .collect()
}

/// Prints what `perf report --header-only [-I] -i FILE` prints.
pub fn print_header(out: &mut dyn Write, info: &HeaderInfo) -> io::Result<()> {
    writeln!(out, "# ========")?;
    write!(
        out,
        "# captured on    : {}",
        ctime(info.mtime + info.utc_offset)
    )?;
    writeln!(out, "# header version : 1")?;
    let (doff, dsize) = if info.is_pipe {
        (0, 0)
    } else {
        (info.data_offset, info.data_size)
    };
    writeln!(out, "# data offset    : {doff}")?;
    writeln!(out, "# data size      : {dsize}")?;
    writeln!(out, "# feat offset    : {}", doff.wrapping_add(dsize))?;
    if info.is_pipe {
        writeln!(out, "# ========\n#")?;
    }
    let mut seen = [false; LAST_FEATURE as usize];
    for (id, f) in &info.features {
        if id.0 < LAST_FEATURE {
            seen[id.0 as usize] = true;
        }
        print_feature(out, info, *id, f.as_ref())?;
    }
    if info.is_pipe {
        return Ok(());
    }
    write!(out, "# missing features: ")?;
    for bit in 1..LAST_FEATURE {
        if !seen[bit as usize] {
            write!(out, "{} ", upper_name(FeatureId(bit)))?;
        }
    }
    writeln!(out)?;
    writeln!(out, "# ========\n#")
}

fn upper_name(id: FeatureId) -> String {
    id.name()
        .map(str::to_ascii_uppercase)
        .unwrap_or_else(|| "(null)".to_string())
}

fn full_only(id: FeatureId) -> bool {
    matches!(
        id,
        FeatureId::CPU_TOPOLOGY
            | FeatureId::NUMA_TOPOLOGY
            | FeatureId::CACHE
            | FeatureId::MEM_TOPOLOGY
            | FeatureId::HYBRID_TOPOLOGY
    )
}

fn has_print(id: FeatureId) -> bool {
    !matches!(
        id,
        FeatureId::TRACING_DATA
            | FeatureId::BUILD_ID
            | FeatureId::BPF_PROG_INFO
            | FeatureId::BPF_BTF
    ) && id.0 >= 1
        && id.0 < LAST_FEATURE
}

fn print_feature(
    out: &mut dyn Write,
    info: &HeaderInfo,
    id: FeatureId,
    f: Option<&Feature>,
) -> io::Result<()> {
    if id == FeatureId::BPF_BTF {
        return print_bpf_btf(out, f);
    }
    if id == FeatureId::BPF_PROG_INFO {
        let btf = info.feature(FeatureId::BPF_BTF);
        return print_bpf_prog_info(out, f, btf, info.swapped);
    }
    if !has_print(id) {
        return Ok(());
    }
    if full_only(id) && !info.full {
        return writeln!(
            out,
            "# {} info available, use -I to display",
            upper_name(id)
        );
    }
    let s = |f: Option<&Feature>| -> String {
        match f {
            Some(
                Feature::Hostname(s)
                | Feature::OsRelease(s)
                | Feature::Version(s)
                | Feature::Arch(s)
                | Feature::CpuDesc(s)
                | Feature::CpuId(s),
            ) => s.clone(),
            _ => "(null)".to_string(),
        }
    };
    match id {
        FeatureId::HOSTNAME => writeln!(out, "# hostname : {}", s(f)),
        FeatureId::OSRELEASE => writeln!(out, "# os release : {}", s(f)),
        FeatureId::VERSION => writeln!(out, "# perf version : {}", s(f)),
        FeatureId::ARCH => writeln!(out, "# arch : {}", s(f)),
        FeatureId::CPUDESC => writeln!(out, "# cpudesc : {}", s(f)),
        FeatureId::CPUID => writeln!(out, "# cpuid : {}", s(f)),
        FeatureId::NRCPUS => {
            let (a, o) = match f {
                Some(Feature::NrCpus { available, online }) => (*available, *online),
                _ => (0, 0),
            };
            writeln!(out, "# nrcpus online : {o}")?;
            writeln!(out, "# nrcpus avail : {a}")
        }
        FeatureId::TOTAL_MEM => {
            let m = match f {
                Some(Feature::TotalMem(m)) => *m,
                _ => 0,
            };
            writeln!(out, "# total memory : {m} kB")
        }
        FeatureId::CMDLINE => {
            write!(out, "# cmdline : ")?;
            if let Some(Feature::Cmdline(v)) = f {
                for a in v {
                    write!(out, "{} ", a.replace('\'', "\\'"))?;
                }
            }
            writeln!(out)
        }
        FeatureId::EVENT_DESC => print_event_desc(out, f),
        FeatureId::CPU_TOPOLOGY => print_cpu_topology(out, info, f),
        FeatureId::NUMA_TOPOLOGY => {
            if let Some(Feature::NumaTopology(v)) = f {
                for n in v {
                    writeln!(
                        out,
                        "# node{} meminfo  : total = {} kB, free = {} kB",
                        n.node, n.mem_total, n.mem_free
                    )?;
                    writeln!(out, "# node{} cpu list : {}", n.node, cpu_list(&n.cpus))?;
                }
            }
            Ok(())
        }
        FeatureId::BRANCH_STACK => writeln!(out, "# contains samples with branch stack"),
        FeatureId::AUXTRACE => writeln!(out, "# contains AUX area data (e.g. instruction trace)"),
        FeatureId::STAT => writeln!(out, "# contains stat data"),
        FeatureId::PMU_MAPPINGS => match f {
            Some(Feature::PmuMappings(v)) if !v.is_empty() => {
                let mut delim = "# pmu mappings: ";
                for (t, name) in v {
                    write!(out, "{delim}{name} = {t}")?;
                    delim = ", ";
                }
                writeln!(out)
            }
            _ => writeln!(out, "# pmu mappings: not available"),
        },
        FeatureId::GROUP_DESC => print_group_desc(out, info, f),
        FeatureId::CACHE => {
            writeln!(out, "# CPU cache info:")?;
            if let Some(Feature::Cache(v)) = f {
                for c in v {
                    writeln!(
                        out,
                        "#  L{} {:<15} {:>8} [{}]",
                        c.level as i32, c.type_, c.size, c.map
                    )?;
                }
            }
            Ok(())
        }
        FeatureId::SAMPLE_TIME => {
            let (first, last) = match f {
                Some(Feature::SampleTime { first, last }) => (*first, *last),
                _ => (0, 0),
            };
            let us = |t: u64| format!("{}.{:06}", t / 1_000_000_000, t % 1_000_000_000 / 1000);
            writeln!(out, "# time of first sample : {}", us(first))?;
            writeln!(out, "# time of last sample : {}", us(last))?;
            let d = last.wrapping_sub(first) as f64 / 1e6;
            writeln!(out, "# sample duration : {d:10.3} ms")
        }
        FeatureId::MEM_TOPOLOGY => {
            let Some(Feature::MemTopology(m)) = f else {
                return writeln!(out, "# memory nodes (nr 0, block size 0x0):");
            };
            writeln!(
                out,
                "# memory nodes (nr {}, block size {:#x}):",
                m.nodes.len() as i32,
                m.block_size
            )?;
            for n in &m.nodes {
                let bit = |i: u64| {
                    n.bitmap
                        .get((i / 64) as usize)
                        .is_some_and(|w| w >> (i % 64) & 1 == 1)
                };
                let weight = (0..n.nbits.min(n.bitmap.len() as u64 * 64))
                    .filter(|&i| bit(i))
                    .count() as u64;
                let size = unit_number(m.block_size.wrapping_mul(weight));
                let mut map = bitmap_list(n.nbits.min(n.bitmap.len() as u64 * 64), bit);
                map.truncate(99);
                writeln!(out, "#  {:>3} [{size}]: {map}", n.node)?;
            }
            Ok(())
        }
        FeatureId::CLOCKID => {
            let r = match f {
                Some(Feature::ClockId(r)) => *r,
                _ => 0,
            };
            writeln!(out, "# clockid frequency: {} MHz", r.wrapping_mul(1000))
        }
        FeatureId::DIR_FORMAT => {
            let v = match f {
                Some(Feature::DirFormat(v)) => *v,
                _ => 0,
            };
            writeln!(out, "# directory data version : {v}")
        }
        FeatureId::COMPRESSED => {
            let c = match f {
                Some(Feature::Compressed(c)) => *c,
                _ => features::Compressed {
                    version: 0,
                    type_: 0,
                    level: 0,
                    ratio: 0,
                    mmap_len: 0,
                },
            };
            writeln!(
                out,
                "# compressed : {}, level = {}, ratio = {}",
                if c.type_ == 1 { "Zstd" } else { "Unknown" },
                c.level as i32,
                c.ratio as i32
            )
        }
        FeatureId::CPU_PMU_CAPS => {
            let caps = match f {
                Some(Feature::CpuPmuCaps(c)) => c.as_slice(),
                _ => &[],
            };
            print_pmu_caps(out, "cpu", caps)
        }
        FeatureId::CLOCK_DATA => {
            let Some(Feature::ClockData(c)) = f else {
                return writeln!(out, "# reference time disabled");
            };
            let tod_s = c.wall_ns / 1_000_000_000;
            let tod_us = c.wall_ns % 1_000_000_000 / 1000;
            let ck_s = c.clockid_ns / 1_000_000_000;
            let ck_ns = c.clockid_ns % 1_000_000_000;
            let name = clockid_name(c.clockid);
            let (date, time) = civil(tod_s as i64 + info.utc_offset);
            writeln!(out, "# clockid: {name} ({})", c.clockid)?;
            writeln!(
                out,
                "# reference time: {date} {time}.{tod_us:06} = {tod_s}.{tod_us:06} (TOD) = {ck_s}.{ck_ns:09} ({name})"
            )
        }
        FeatureId::HYBRID_TOPOLOGY => {
            writeln!(out, "# hybrid cpu system:")?;
            if let Some(Feature::HybridTopology(v)) = f {
                for (pmu, cpus) in v {
                    writeln!(out, "# {pmu} cpu list : {cpus}")?;
                }
            }
            Ok(())
        }
        FeatureId::PMU_CAPS => {
            if let Some(Feature::PmuCaps(v)) = f {
                for p in v {
                    print_pmu_caps(out, &p.pmu_name, &p.caps)?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// perf's `print_bpf_btf`: one line per BTF blob, by increasing id. The
/// section is `u32 count; count × {u32 id, u32 size, u8 data[size]}` in the
/// recording host's order (perf reads it only on a host of the same order).
fn print_bpf_btf(out: &mut dyn Write, f: Option<&Feature>) -> io::Result<()> {
    let Some(Feature::Raw { bytes, .. }) = f else {
        return Ok(());
    };
    // An object cut short by the section's end is still listed.
    let mut ids: Vec<u32> = btf_objects(bytes).map(|(id, _)| id).collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        writeln!(out, "# btf info of id {id}")?;
    }
    Ok(())
}

/// perf's `sizeof(struct bpf_prog_info)` (linux/bpf.h as of 6.1): a longer
/// record is taken as corrupt.
const BPF_PROG_INFO_SIZE: usize = 232;

/// perf's `print_bpf_prog_info`: per loaded BPF program, by id, its JITed
/// functions' names (`bpf_prog_<tag>_<name>`, the name from the program's
/// BTF when there is one), addresses and sizes.
///
/// The section holds, after a u32 count, per program: u32 info_len, u32
/// data_len, u64 arrays (a bit per array present), `struct bpf_prog_info`
/// (info_len bytes; its array pointers are offsets into the data), then
/// the data.
fn print_bpf_prog_info(
    out: &mut dyn Write,
    f: Option<&Feature>,
    btf: Option<&Feature>,
    swapped: bool,
) -> io::Result<()> {
    let Some(Feature::Raw { bytes, .. }) = f else {
        return Ok(());
    };
    if swapped {
        return Ok(());
    }
    let count = ne_u32(bytes, 0).unwrap_or(0);
    let mut progs: Vec<(u32, [u8; BPF_PROG_INFO_SIZE], &[u8])> = Vec::new();
    let mut pos = 4usize;
    for _ in 0..count {
        let (Some(info_len), Some(data_len)) = (ne_u32(bytes, pos), ne_u32(bytes, pos + 4)) else {
            break;
        };
        let (info_len, data_len) = (info_len as usize, data_len as usize);
        if info_len > BPF_PROG_INFO_SIZE {
            break;
        }
        let info_at = pos + 16;
        let data_at = info_at + info_len;
        let (Some(info), Some(data)) = (
            bytes.get(info_at..data_at),
            bytes.get(data_at..data_at.saturating_add(data_len)),
        ) else {
            break;
        };
        let mut full = [0u8; BPF_PROG_INFO_SIZE];
        full[..info_len].copy_from_slice(info);
        let id = ne_u32(&full, 4).unwrap_or(0);
        // perf's tree of programs by id keeps the first of an id.
        if !progs.iter().any(|p| p.0 == id) {
            progs.push((id, full, data));
        }
        pos = data_at + data_len;
    }
    progs.sort_by_key(|p| p.0);
    for (id, info, data) in progs {
        let u32_at = |o: usize| ne_u32(&info, o).unwrap_or(0);
        let u64_at = |o: usize| ne_u64(&info, o).unwrap_or(0);
        let subs = u32_at(104) as usize;
        if subs != u32_at(180) as usize || subs != u32_at(108) as usize {
            continue;
        }
        // The arrays, at their offsets into the data.
        let array = |field: usize, item: usize, n: usize| -> Option<&[u8]> {
            let at = usize::try_from(u64_at(field)).ok()?;
            data.get(at..at.checked_add(item.checked_mul(n)?)?)
        };
        let (Some(addrs), Some(lens), Some(tags)) = (
            array(112, 8, subs),
            array(120, 4, subs),
            array(184, 8, subs),
        ) else {
            continue;
        };
        let btf_id = u32_at(128);
        let types = btf
            .filter(|_| btf_id != 0)
            .and_then(|b| btf_data(b, btf_id))
            .and_then(BtfNames::new);
        let rec_size = u32_at(132) as usize;
        let func_info = array(136, rec_size.max(1), u32_at(144) as usize);
        let name = |i: usize| -> String {
            let mut s = String::from("bpf_prog_");
            for b in &tags[i * 8..i * 8 + 8] {
                s.push_str(&format!("{b:02x}"));
            }
            let short = match &types {
                Some(types) => func_info
                    .and_then(|fi| ne_u32(fi, i * rec_size + 4))
                    .and_then(|t| types.name_of(t)),
                None if i == 0 && subs == 1 => {
                    let raw = &info[64..80];
                    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                    (end > 0).then(|| String::from_utf8_lossy(&raw[..end]).into_owned())
                }
                None => Some("F".to_string()),
            };
            if let Some(short) = short {
                s.push('_');
                s.push_str(&short);
            }
            s
        };
        let addr = |i: usize| ne_u64(addrs, i * 8).unwrap_or(0);
        let len = |i: usize| ne_u32(lens, i * 4).unwrap_or(0);
        if subs == 1 {
            writeln!(
                out,
                "# bpf_prog_info {id}: {} addr {:#x} size {}",
                name(0),
                addr(0),
                len(0)
            )?;
            continue;
        }
        writeln!(out, "# bpf_prog_info {id}:")?;
        for i in 0..subs {
            writeln!(
                out,
                "# \tsub_prog {i}: {} addr {:#x} size {}",
                name(i),
                addr(i),
                len(i)
            )?;
        }
    }
    Ok(())
}

fn ne_u32(b: &[u8], at: usize) -> Option<u32> {
    let b = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

fn ne_u64(b: &[u8], at: usize) -> Option<u64> {
    let b = b.get(at..at.checked_add(8)?)?;
    let mut w = [0u8; 8];
    w.copy_from_slice(b);
    Some(u64::from_ne_bytes(w))
}

/// The objects of a BPF_BTF section (u32 count, then per object u32 id,
/// u32 size, data): each id, and its data when the section holds all of it.
fn btf_objects(bytes: &[u8]) -> impl Iterator<Item = (u32, Option<&[u8]>)> {
    let count = ne_u32(bytes, 0).unwrap_or(0);
    let mut pos = Some(4usize);
    (0..count).map_while(move |_| {
        let at = pos.filter(|&p| p <= bytes.len())?;
        let id = ne_u32(bytes, at)?;
        let size = ne_u32(bytes, at + 4)? as usize;
        let end = (at + 8).checked_add(size);
        pos = end;
        Some((id, end.and_then(|end| bytes.get(at + 8..end))))
    })
}

/// The BTF data of id `id` in a BPF_BTF section.
fn btf_data(f: &Feature, id: u32) -> Option<&[u8]> {
    let Feature::Raw { bytes, .. } = f else {
        return None;
    };
    btf_objects(bytes).find(|o| o.0 == id).and_then(|o| o.1)
}

/// The names of a BTF object's types (libbpf's `btf__type_by_id` and
/// `btf__name_by_offset`).
struct BtfNames<'a> {
    /// Per type id (from 1), its name's offset in the strings.
    name_offs: Vec<u32>,
    strings: &'a [u8],
}

impl<'a> BtfNames<'a> {
    /// Parses `btf` (its header, types and strings); `None` when it is not
    /// BTF, as libbpf's `btf__new` refuses it.
    fn new(btf: &'a [u8]) -> Option<BtfNames<'a>> {
        if btf.get(0..2)? != 0xeb9fu16.to_ne_bytes() {
            return None;
        }
        let hdr_len = ne_u32(btf, 4)? as usize;
        let (type_off, type_len) = (ne_u32(btf, 8)? as usize, ne_u32(btf, 12)? as usize);
        let (str_off, str_len) = (ne_u32(btf, 16)? as usize, ne_u32(btf, 20)? as usize);
        let types = btf.get(hdr_len.checked_add(type_off)?..)?.get(..type_len)?;
        let strings = btf.get(hdr_len.checked_add(str_off)?..)?.get(..str_len)?;
        let mut name_offs = Vec::new();
        let mut at = 0usize;
        while at < types.len() {
            let name_off = ne_u32(types, at)?;
            let info = ne_u32(types, at + 4)?;
            let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            // struct btf_type, then the kind's own data.
            let extra = match kind {
                1 | 14 | 17 => 4,        // INT, VAR, DECL_TAG
                3 => 12,                 // ARRAY
                4 | 5 | 15 => vlen * 12, // STRUCT, UNION, DATASEC
                6 | 13 => vlen * 8,      // ENUM, FUNC_PROTO
                19 => vlen * 12,         // ENUM64
                0 | 2 | 7..=12 | 16 | 18 => 0,
                _ => return None,
            };
            name_offs.push(name_off);
            at += 12 + extra;
        }
        Some(BtfNames { name_offs, strings })
    }

    fn name_of(&self, type_id: u32) -> Option<String> {
        let off = *self.name_offs.get((type_id as usize).checked_sub(1)?)? as usize;
        let rest = self.strings.get(off..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&rest[..end]).into_owned())
    }
}

fn print_pmu_caps(out: &mut dyn Write, pmu: &str, caps: &[(String, String)]) -> io::Result<()> {
    if caps.is_empty() {
        return writeln!(out, "# {pmu} pmu capabilities: not available");
    }
    write!(out, "# {pmu} pmu capabilities: ")?;
    let mut delim = "";
    for (n, v) in caps {
        write!(out, "{delim}{n}={v}")?;
        delim = ", ";
    }
    writeln!(out)
}

fn print_event_desc(out: &mut dyn Write, f: Option<&Feature>) -> io::Result<()> {
    let events = match f {
        Some(Feature::EventDesc(d)) if d.events.iter().all(attr_ok) => &d.events,
        _ => return writeln!(out, "# event desc: not available or unable to read"),
    };
    for e in events {
        if e.attr.size == 0 {
            break;
        }
        write!(out, "# event : name = {}, ", e.name)?;
        if !e.ids.is_empty() {
            write!(out, ", id = {{")?;
            for (j, id) in e.ids.iter().enumerate() {
                if j > 0 {
                    write!(out, ",")?;
                }
                write!(out, " {id}")?;
            }
            write!(out, " }}")?;
        }
        for (name, val) in attr_fields(&e.attr) {
            write!(out, ", {name} = {val}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// perf 6.1's `perf_attr_check`.
fn attr_ok(e: &features::EventDesc) -> bool {
    let a = &e.attr;
    !e.reserved_set
        && a.sample_type & !((1 << 25) - 1) == 0
        && a.read_format & !((1 << 5) - 1) == 0
        && (a.sample_type & (1 << 11) == 0 || a.branch_sample_type & !((1 << 19) - 1) == 0)
}

const SAMPLE_BITS: &[(u64, &str)] = &[
    (1 << 0, "IP"),
    (1 << 1, "TID"),
    (1 << 2, "TIME"),
    (1 << 3, "ADDR"),
    (1 << 4, "READ"),
    (1 << 5, "CALLCHAIN"),
    (1 << 6, "ID"),
    (1 << 7, "CPU"),
    (1 << 8, "PERIOD"),
    (1 << 9, "STREAM_ID"),
    (1 << 10, "RAW"),
    (1 << 11, "BRANCH_STACK"),
    (1 << 12, "REGS_USER"),
    (1 << 13, "STACK_USER"),
    (1 << 16, "IDENTIFIER"),
    (1 << 18, "REGS_INTR"),
    (1 << 15, "DATA_SRC"),
    (1 << 14, "WEIGHT"),
    (1 << 19, "PHYS_ADDR"),
    (1 << 20, "AUX"),
    (1 << 21, "CGROUP"),
    (1 << 22, "DATA_PAGE_SIZE"),
    (1 << 23, "CODE_PAGE_SIZE"),
    (1 << 24, "WEIGHT_STRUCT"),
];

const READ_BITS: &[&str] = &[
    "TOTAL_TIME_ENABLED",
    "TOTAL_TIME_RUNNING",
    "ID",
    "GROUP",
    "LOST",
];

const BRANCH_BITS: &[&str] = &[
    "USER",
    "KERNEL",
    "HV",
    "ANY",
    "ANY_CALL",
    "ANY_RETURN",
    "IND_CALL",
    "ABORT_TX",
    "IN_TX",
    "NO_TX",
    "COND",
    "CALL_STACK",
    "IND_JUMP",
    "CALL",
    "NO_FLAGS",
    "NO_CYCLES",
    "TYPE_SAVE",
    "HW_INDEX",
    "PRIV_SAVE",
];

/// Flag bits in perf_event_attr__fprintf order (precise_ip handled apart).
const FLAG_NAMES: &[(u32, &str)] = &[
    (0, "disabled"),
    (1, "inherit"),
    (2, "pinned"),
    (3, "exclusive"),
    (4, "exclude_user"),
    (5, "exclude_kernel"),
    (6, "exclude_hv"),
    (7, "exclude_idle"),
    (8, "mmap"),
    (9, "comm"),
    (10, "freq"),
    (11, "inherit_stat"),
    (12, "enable_on_exec"),
    (13, "task"),
    (14, "watermark"),
    (15, "precise_ip"),
    (17, "mmap_data"),
    (18, "sample_id_all"),
    (19, "exclude_host"),
    (20, "exclude_guest"),
    (21, "exclude_callchain_kernel"),
    (22, "exclude_callchain_user"),
    (23, "mmap2"),
    (24, "comm_exec"),
    (25, "use_clockid"),
    (26, "context_switch"),
    (27, "write_backward"),
    (28, "namespaces"),
    (29, "ksymbol"),
    (30, "bpf_event"),
    (31, "aux_output"),
    (32, "cgroup"),
    (33, "text_poke"),
    (34, "build_id"),
    (35, "inherit_thread"),
    (36, "remove_on_exec"),
    (37, "sigtrap"),
];

fn bits_str(v: u64, names: impl Iterator<Item = (u64, &'static str)>) -> String {
    names
        .filter(|(b, _)| v & b != 0)
        .map(|(_, n)| n)
        .collect::<Vec<_>>()
        .join("|")
}

/// The (name, value) pairs `perf_event_attr__fprintf` prints for an attr.
pub fn attr_fields(a: &Attr) -> Vec<(&'static str, String)> {
    let mut v: Vec<(&'static str, String)> = Vec::new();
    let hex = |x: u64| format!("{x:#x}");
    if a.type_ != 0 {
        v.push(("type", a.type_.to_string()));
    }
    if a.size != 0 {
        v.push(("size", a.size.to_string()));
    }
    if a.config != 0 {
        v.push(("config", hex(a.config)));
    }
    if a.sample_period_or_freq != 0 {
        v.push((
            "{ sample_period, sample_freq }",
            a.sample_period_or_freq.to_string(),
        ));
    }
    if a.sample_type != 0 {
        v.push((
            "sample_type",
            bits_str(a.sample_type, SAMPLE_BITS.iter().copied()),
        ));
    }
    if a.read_format != 0 {
        v.push((
            "read_format",
            bits_str(
                a.read_format,
                READ_BITS.iter().enumerate().map(|(i, n)| (1u64 << i, *n)),
            ),
        ));
    }
    for &(bit, name) in FLAG_NAMES {
        if bit == flags::PRECISE_IP_SHIFT {
            if a.precise_ip() != 0 {
                v.push((name, a.precise_ip().to_string()));
            }
        } else if a.flags >> bit & 1 == 1 {
            v.push((name, "1".to_string()));
        }
    }
    if a.wakeup != 0 {
        v.push(("{ wakeup_events, wakeup_watermark }", a.wakeup.to_string()));
    }
    if a.bp_type != 0 {
        v.push(("bp_type", a.bp_type.to_string()));
    }
    if a.config1 != 0 {
        v.push(("{ bp_addr, config1 }", hex(a.config1)));
    }
    if a.config2 != 0 {
        v.push(("{ bp_len, config2 }", hex(a.config2)));
    }
    if a.branch_sample_type != 0 {
        v.push((
            "branch_sample_type",
            bits_str(
                a.branch_sample_type,
                BRANCH_BITS.iter().enumerate().map(|(i, n)| (1u64 << i, *n)),
            ),
        ));
    }
    if a.sample_regs_user != 0 {
        v.push(("sample_regs_user", hex(a.sample_regs_user)));
    }
    if a.sample_stack_user != 0 {
        v.push(("sample_stack_user", a.sample_stack_user.to_string()));
    }
    if a.clockid != 0 {
        v.push(("clockid", a.clockid.to_string()));
    }
    if a.sample_regs_intr != 0 {
        v.push(("sample_regs_intr", hex(a.sample_regs_intr)));
    }
    if a.aux_watermark != 0 {
        v.push(("aux_watermark", a.aux_watermark.to_string()));
    }
    if a.sample_max_stack != 0 {
        v.push(("sample_max_stack", a.sample_max_stack.to_string()));
    }
    if a.aux_sample_size != 0 {
        v.push(("aux_sample_size", a.aux_sample_size.to_string()));
    }
    if a.sig_data != 0 {
        v.push(("sig_data", a.sig_data.to_string()));
    }
    v
}

fn print_cpu_topology(
    out: &mut dyn Write,
    info: &HeaderInfo,
    f: Option<&Feature>,
) -> io::Result<()> {
    let empty = features::CpuTopology::default();
    let t = match f {
        Some(Feature::CpuTopology(t)) => t,
        _ => &empty,
    };
    let nr = match info.feature(FeatureId::NRCPUS) {
        Some(Feature::NrCpus { available, .. }) => *available as usize,
        _ => 0,
    };
    for s in &t.package_cpus {
        writeln!(out, "# sibling sockets : {s}")?;
    }
    let dies = t.die_cpus.as_ref().filter(|d| !d.is_empty());
    if let Some(d) = dies {
        for s in d {
            writeln!(out, "# sibling dies    : {s}")?;
        }
    }
    for s in &t.core_cpus {
        writeln!(out, "# sibling threads : {s}")?;
    }
    match (&t.cpus, dies) {
        (Some(cpus), Some(_)) => {
            for i in 0..nr {
                let c = cpus.get(i).copied().unwrap_or(features::CpuIds {
                    core_id: 0,
                    socket_id: 0,
                });
                let die = t.die_ids.get(i).copied().unwrap_or(0);
                writeln!(
                    out,
                    "# CPU {i}: Core ID {}, Die ID {}, Socket ID {}",
                    c.core_id as i32, die as i32, c.socket_id as i32
                )?;
            }
            Ok(())
        }
        (Some(cpus), None) => {
            for i in 0..nr {
                let c = cpus.get(i).copied().unwrap_or(features::CpuIds {
                    core_id: 0,
                    socket_id: 0,
                });
                writeln!(
                    out,
                    "# CPU {i}: Core ID {}, Socket ID {}",
                    c.core_id as i32, c.socket_id as i32
                )?;
            }
            Ok(())
        }
        (None, Some(_)) => writeln!(
            out,
            "# Core ID, Die ID and Socket ID information is not available"
        ),
        (None, None) => writeln!(out, "# Core ID and Socket ID information is not available"),
    }
}

fn print_group_desc(out: &mut dyn Write, info: &HeaderInfo, f: Option<&Feature>) -> io::Result<()> {
    let Some(Feature::GroupDesc(groups)) = f else {
        return Ok(());
    };
    let desc_names: Vec<&str> = match info.feature(FeatureId::EVENT_DESC) {
        Some(Feature::EventDesc(d)) => d.events.iter().map(|e| e.name.as_str()).collect(),
        _ => Vec::new(),
    };
    let name = |i: usize| -> String {
        info.events
            .get(i)
            .and_then(|e| e.name.clone())
            .or_else(|| desc_names.get(i).map(|s| s.to_string()))
            .unwrap_or_default()
    };
    // Rebuild the leaders as process_group_desc does.
    let n = info.events.len().max(desc_names.len());
    let mut gi = 0;
    let mut nr = 0u32;
    for idx in 0..n {
        if gi < groups.len() && groups[gi].leader_idx as usize == idx {
            let g = &groups[gi];
            gi += 1;
            if g.nr_members > 1 {
                let gname = if g.name == "{anon_group}" {
                    ""
                } else {
                    &g.name
                };
                write!(out, "# group: {gname}{{{}", name(idx))?;
                nr = g.nr_members - 1;
            } else {
                nr = 0;
            }
        } else if nr > 0 {
            write!(out, ",{}", name(idx))?;
            nr -= 1;
            if nr == 0 {
                writeln!(out, "}}")?;
            }
        }
    }
    Ok(())
}

/// perf's cpu_map__snprint of a parsed cpu list ("0-3,5").
fn cpu_list(s: &str) -> String {
    let mut cpus: Vec<i64> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<i64>(), b.trim().parse::<i64>()),
            None => (part.parse::<i64>(), part.parse::<i64>()),
        };
        if let (Ok(a), Ok(b)) = (a, b) {
            if b >= a && b - a < 1 << 16 {
                cpus.extend(a..=b);
            }
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        cpus.push(-1);
    }
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=cpus.len() {
        if i == cpus.len() || cpus[i] != cpus[i - 1] + 1 {
            if start == i - 1 {
                out.push(cpus[start].to_string());
            } else {
                out.push(format!("{}-{}", cpus[start], cpus[i - 1]));
            }
            start = i;
        }
    }
    out.join(",")
}

/// perf's bitmap_scnprintf.
fn bitmap_list(nbits: u64, bit: impl Fn(u64) -> bool) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < nbits {
        if !bit(i) {
            i += 1;
            continue;
        }
        let start = i;
        while i + 1 < nbits && bit(i + 1) {
            i += 1;
        }
        if start < i {
            out.push(format!("{start}-{i}"));
        } else {
            out.push(start.to_string());
        }
        i += 1;
    }
    out.join(",")
}

/// perf's unit_number__scnprintf.
pub(crate) fn unit_number(mut n: u64) -> String {
    let units = ['B', 'K', 'M', 'G'];
    let mut i = 0;
    while n / 1024 > 1 && i < 3 {
        n /= 1024;
        i += 1;
    }
    format!("{n}{}", units[i])
}

fn clockid_name(id: u32) -> &'static str {
    match id {
        1 => "monotonic",
        4 => "monotonic_raw",
        0 => "realtime",
        7 => "boottime",
        11 => "tai",
        _ => "(not found)",
    }
}

/// Days since the epoch to (year, month 1..=12, day).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// strftime("%F", "%T") of a (local) time.
pub(crate) fn civil(t: i64) -> (String, String) {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    (
        format!("{y:04}-{m:02}-{d:02}"),
        format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60),
    )
}

/// ctime(3) of a (local) time, with its trailing newline.
fn ctime(t: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}\n",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        y
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use prec_format::Cursor;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// Minimal perf.data header parsing for the tests.
    fn info_of(path: &Path, full: bool) -> Option<HeaderInfo> {
        let file = std::fs::read(path).ok()?;
        let endian = match file.get(..8)? {
            b"PERFILE2" => Endian::Little,
            b"2ELIFREP" => Endian::Big,
            _ => return None,
        };
        let u64_at = |o: usize| file.get(o..o + 8).map(|b| endian.u64(b));
        if u64_at(8)? != 104 {
            return None;
        }
        let attr_size = u64_at(16)? as usize;
        let (aoff, asize) = (u64_at(24)? as usize, u64_at(32)? as usize);
        let (doff, dsize) = (u64_at(40)?, u64_at(48)?);
        let mut attrs = Vec::new();
        let mut o = aoff;
        while attr_size > 0 && o + attr_size <= aoff + asize {
            let mut c = Cursor::new(&file[o..], o as u64, endian);
            let attr = Attr::parse(&mut c).ok()?;
            let ids_at = o + attr.size.max(64) as usize;
            let (io, is) = (u64_at(ids_at)? as usize, u64_at(ids_at + 8)? as usize);
            let ids = file
                .get(io..io + is)?
                .chunks_exact(8)
                .map(|b| endian.u64(b))
                .collect();
            attrs.push((attr, ids));
            o += attr_size;
        }
        let mut words = [0u64; 4];
        for (i, w) in words.iter_mut().enumerate() {
            *w = u64_at(72 + 8 * i)?;
        }
        let mut table = (doff + dsize) as usize;
        let mut secs = Vec::new();
        for bit in 0..256u32 {
            if words[(bit / 64) as usize] >> (bit % 64) & 1 == 0 {
                continue;
            }
            let (off, size) = (u64_at(table)? as usize, u64_at(table + 8)? as usize);
            table += 16;
            secs.push((FeatureId(bit), file.get(off..off + size)?, off as u64));
        }
        let mtime = std::fs::metadata(path).ok()?.modified().ok()?;
        let mut info = HeaderInfo::from_sections(endian, attrs, &secs, doff, dsize, mtime);
        info.full = full;
        Some(info)
    }

    fn render(info: &HeaderInfo) -> String {
        let mut v = Vec::new();
        print_header(&mut v, info).unwrap();
        String::from_utf8(v).unwrap()
    }

    fn perf_header(path: &Path, full: bool) -> Option<String> {
        let mut cmd = Command::new("/usr/bin/perf");
        cmd.args(["report", "--header-only", "-i"]).arg(path);
        if full {
            cmd.arg("-I");
        }
        let out = cmd.env("TZ", "UTC").output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        out.status.success().then_some(text)
    }

    fn fixture_files() -> Vec<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/quipper");
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.retain(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("perf.data") && !n.ends_with(".buildids") && !n.contains("piped")
        });
        v.sort();
        v
    }

    /// Compares with Linux perf on the foreign files (skipped without perf).
    #[test]
    fn matches_perf_on_quipper_files() {
        if !Path::new("/usr/bin/perf").exists() {
            return;
        }
        let mut compared = 0;
        let mut diffs = Vec::new();
        for p in fixture_files() {
            for full in [false, true] {
                let Some(want) = perf_header(&p, full) else {
                    continue;
                };
                let got = render(&info_of(&p, full).unwrap());
                compared += 1;
                if got != want {
                    let line = want
                        .lines()
                        .zip(got.lines())
                        .find(|(a, b)| a != b)
                        .map(|(a, b)| format!("perf: {a}\nprec: {b}"))
                        .unwrap_or_else(|| "line count differs".into());
                    diffs.push(format!("{} (-I {full}):\n{line}", p.display()));
                }
            }
        }
        assert!(diffs.is_empty(), "{}", diffs.join("\n"));
        assert!(compared > 40 || fixture_files().is_empty());
    }

    /// Records with perf in several modes and compares.
    #[test]
    fn matches_perf_on_fresh_recordings() {
        if !Path::new("/usr/bin/perf").exists() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("prec-header-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let runs: &[&[&str]] = &[
            &[],
            &["-e", "cpu-clock"],
            &["-g"],
            &["-e", "cpu-clock,page-faults"],
            &["-e", "{cpu-clock,page-faults}", "-k", "1", "-z"],
            &["--call-graph", "dwarf"],
        ];
        let mut diffs = Vec::new();
        for (i, args) in runs.iter().enumerate() {
            let out = dir.join(format!("{i}.data"));
            let ok = Command::new("/usr/bin/perf")
                .args(["record", "-q", "-o"])
                .arg(&out)
                .args(*args)
                .args(["--", "true"])
                .output()
                .is_ok_and(|o| o.status.success());
            if !ok {
                continue;
            }
            for full in [false, true] {
                let Some(want) = perf_header(&out, full) else {
                    continue;
                };
                let got = render(&info_of(&out, full).unwrap());
                if got != want {
                    diffs.push(format!("{args:?} -I {full}:\nperf:\n{want}\nprec:\n{got}"));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    }

    #[test]
    fn formatting_helpers() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970\n");
        assert_eq!(ctime(1_795_402_307), "Mon Nov 23 02:51:47 2026\n");
        assert_eq!(cpu_list("0-7,16-23"), "0-7,16-23");
        assert_eq!(cpu_list("3,1,2"), "1-3");
        assert_eq!(cpu_list(""), "-1");
        assert_eq!(unit_number(24 << 30), "24G");
        assert_eq!(unit_number(1024), "1024B");
        let words = [0x0000_00ff_00ff_ffffu64, 0xffff_ffff];
        let bit = |i: u64| words[(i / 64) as usize] >> (i % 64) & 1 == 1;
        assert_eq!(bitmap_list(100, bit), "0-23,32-39,64-95");
    }
}
