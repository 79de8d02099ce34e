//! Typed feature sections (the `adds_features` part of a perf.data file, and
//! the payload of pipe-mode `HEADER_FEATURE` records).
//!
//! [`decode`] turns a section's bytes into a [`Feature`]; [`encode`] writes
//! the byte form perf 6.1 writes (strings padded to 64 bytes, build-id
//! entries padded to 64-byte names), so `encode(decode(x)) == x` for sections
//! perf wrote. Sections this module does not model (TRACING_DATA,
//! BPF_PROG_INFO, BPF_BTF, unknown numbers) are kept as [`Feature::Raw`].
//!
//! A section that is empty although its feature needs content (old perf
//! left some so when a writer failed) decodes as an empty `Raw`.
//!
//! Decoding never panics and never allocates more than the input justifies:
//! every count is checked against the bytes left before a vector is sized.

use crate::attr::Attr;
use crate::bytes::{until_nul, Cursor};
use crate::constants::FeatureId;
use crate::endian::Endian;
use crate::error::{Error, ErrorKind, Result};

/// perf's `NAME_ALIGN`: strings and build-id file names are padded to this.
pub const NAME_ALIGN: usize = 64;

/// `PERF_RECORD_MISC_BUILD_ID_SIZE`: the build-id size byte is valid.
pub const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// Size of a build-id entry before its file name (header, pid, 24 id bytes).
pub const BUILD_ID_ENTRY_HEADER: usize = 36;

/// One entry of the BUILD_ID feature (also the body of record type 67).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// Record header misc: cpumode, plus [`MISC_BUILD_ID_SIZE`].
    pub misc: u16,
    /// -1 for the host, 0 for the default guest, else a guest machine pid.
    pub pid: i32,
    /// The id bytes: `size` bytes when the size byte is valid, else 20.
    pub build_id: Vec<u8>,
    /// The DSO path.
    pub filename: String,
}

/// One event of EVENT_DESC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventDesc {
    pub attr: Attr,
    pub name: String,
    pub ids: Vec<u64>,
    /// True when reserved attr bits or fields are non-zero (perf 6.1 then
    /// rejects the whole EVENT_DESC when printing it).
    pub reserved_set: bool,
}

/// The EVENT_DESC feature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventDescs {
    /// Stride of the attrs in the section (perf writes `sizeof(attr)`).
    pub attr_size: u32,
    pub events: Vec<EventDesc>,
}

/// Core and socket id of one CPU in CPU_TOPOLOGY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuIds {
    pub core_id: u32,
    pub socket_id: u32,
}

/// The CPU_TOPOLOGY feature; later parts are optional (older perf).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CpuTopology {
    /// Package (socket) sibling lists ("sibling sockets").
    pub package_cpus: Vec<String>,
    /// SMT sibling lists ("sibling threads").
    pub core_cpus: Vec<String>,
    /// Per-CPU core/socket ids, one per available CPU; `None` if absent.
    pub cpus: Option<Vec<CpuIds>>,
    /// Die sibling lists; `None` if absent.
    pub die_cpus: Option<Vec<String>>,
    /// Per-CPU die ids (present with `die_cpus`).
    pub die_ids: Vec<u32>,
}

/// One node of NUMA_TOPOLOGY.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaNode {
    pub node: u32,
    pub mem_total: u64,
    pub mem_free: u64,
    /// CPU list, e.g. "0-7,16-23".
    pub cpus: String,
}

/// One group of GROUP_DESC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupDesc {
    /// "{anon_group}" for unnamed groups.
    pub name: String,
    pub leader_idx: u32,
    pub nr_members: u32,
}

/// One cache of CACHE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheLevel {
    pub level: u32,
    pub line_size: u32,
    pub sets: u32,
    pub ways: u32,
    pub type_: String,
    pub size: String,
    pub map: String,
}

/// One node of MEM_TOPOLOGY.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemNode {
    pub node: u64,
    /// Number of bits in the bitmap (memory block indexes).
    pub nbits: u64,
    /// ceil(nbits / 64) words.
    pub bitmap: Vec<u64>,
}

/// The MEM_TOPOLOGY feature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemTopology {
    pub version: u64,
    pub block_size: u64,
    pub nodes: Vec<MemNode>,
}

/// The COMPRESSED feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compressed {
    pub version: u32,
    /// 1 = zstd.
    pub type_: u32,
    pub level: u32,
    pub ratio: u32,
    pub mmap_len: u32,
}

/// The CLOCK_DATA feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockData {
    pub version: u32,
    pub clockid: u32,
    /// Wall-clock (TOD) reference time in ns.
    pub wall_ns: u64,
    /// The same instant on `clockid`, in ns.
    pub clockid_ns: u64,
}

/// Capabilities of one PMU (PMU_CAPS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuCaps {
    pub pmu_name: String,
    pub caps: Vec<(String, String)>,
}

/// A decoded feature section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Feature {
    BuildId(Vec<BuildIdEntry>),
    Hostname(String),
    OsRelease(String),
    Version(String),
    Arch(String),
    NrCpus {
        available: u32,
        online: u32,
    },
    CpuDesc(String),
    CpuId(String),
    /// kB.
    TotalMem(u64),
    Cmdline(Vec<String>),
    EventDesc(EventDescs),
    CpuTopology(CpuTopology),
    NumaTopology(Vec<NumaNode>),
    BranchStack,
    /// (type, name).
    PmuMappings(Vec<(u32, String)>),
    GroupDesc(Vec<GroupDesc>),
    /// (file offset, size) of each AUXTRACE record.
    Auxtrace(Vec<(u64, u64)>),
    Stat,
    /// CACHE version (perf only knows 1) and caches.
    Cache(Vec<CacheLevel>),
    SampleTime {
        first: u64,
        last: u64,
    },
    MemTopology(MemTopology),
    /// Clock resolution in ns.
    ClockId(u64),
    DirFormat(u64),
    Compressed(Compressed),
    CpuPmuCaps(Vec<(String, String)>),
    ClockData(ClockData),
    /// (pmu name, cpu list).
    HybridTopology(Vec<(String, String)>),
    PmuCaps(Vec<PmuCaps>),
    /// A section kept as bytes (TRACING_DATA, BPF_PROG_INFO, BPF_BTF, unknown).
    Raw {
        id: FeatureId,
        bytes: Vec<u8>,
    },
}

impl Feature {
    /// The feature number.
    pub fn id(&self) -> FeatureId {
        match self {
            Feature::BuildId(_) => FeatureId::BUILD_ID,
            Feature::Hostname(_) => FeatureId::HOSTNAME,
            Feature::OsRelease(_) => FeatureId::OSRELEASE,
            Feature::Version(_) => FeatureId::VERSION,
            Feature::Arch(_) => FeatureId::ARCH,
            Feature::NrCpus { .. } => FeatureId::NRCPUS,
            Feature::CpuDesc(_) => FeatureId::CPUDESC,
            Feature::CpuId(_) => FeatureId::CPUID,
            Feature::TotalMem(_) => FeatureId::TOTAL_MEM,
            Feature::Cmdline(_) => FeatureId::CMDLINE,
            Feature::EventDesc(_) => FeatureId::EVENT_DESC,
            Feature::CpuTopology(_) => FeatureId::CPU_TOPOLOGY,
            Feature::NumaTopology(_) => FeatureId::NUMA_TOPOLOGY,
            Feature::BranchStack => FeatureId::BRANCH_STACK,
            Feature::PmuMappings(_) => FeatureId::PMU_MAPPINGS,
            Feature::GroupDesc(_) => FeatureId::GROUP_DESC,
            Feature::Auxtrace(_) => FeatureId::AUXTRACE,
            Feature::Stat => FeatureId::STAT,
            Feature::Cache(_) => FeatureId::CACHE,
            Feature::SampleTime { .. } => FeatureId::SAMPLE_TIME,
            Feature::MemTopology(_) => FeatureId::MEM_TOPOLOGY,
            Feature::ClockId(_) => FeatureId::CLOCKID,
            Feature::DirFormat(_) => FeatureId::DIR_FORMAT,
            Feature::Compressed(_) => FeatureId::COMPRESSED,
            Feature::CpuPmuCaps(_) => FeatureId::CPU_PMU_CAPS,
            Feature::ClockData(_) => FeatureId::CLOCK_DATA,
            Feature::HybridTopology(_) => FeatureId::HYBRID_TOPOLOGY,
            Feature::PmuCaps(_) => FeatureId::PMU_CAPS,
            Feature::Raw { id, .. } => *id,
        }
    }
}

/// Facts from other sections that a decoder may need.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeContext {
    /// NRCPUS' `available` count: the number of per-CPU entries in
    /// CPU_TOPOLOGY. Without it the count is inferred from the section size.
    pub nr_cpus_avail: Option<u32>,
}

/// Decodes one feature section. `base_offset` is the section's offset in
/// the file (for error messages).
pub fn decode(id: FeatureId, bytes: &[u8], base_offset: u64, endian: Endian) -> Result<Feature> {
    decode_with(id, bytes, base_offset, endian, &DecodeContext::default())
}

/// Like [`decode`], with facts from other sections (see [`DecodeContext`]).
pub fn decode_with(
    id: FeatureId,
    bytes: &[u8],
    base_offset: u64,
    endian: Endian,
    ctx: &DecodeContext,
) -> Result<Feature> {
    let mut c = Cursor::new(bytes, base_offset, endian);
    match decode_inner(id, &mut c, ctx) {
        Ok(f) => Ok(f),
        // perf leaves a section empty when its writer failed (old perf):
        // keep it as an empty raw section rather than failing.
        Err(_) if bytes.is_empty() => Ok(Feature::Raw {
            id,
            bytes: Vec::new(),
        }),
        Err(e) => Err(feature_error(id, e)),
    }
}

/// Decodes every section of a file's feature table, NRCPUS first so that
/// CPU_TOPOLOGY gets its CPU count. Input and output are in the given order.
pub fn decode_all(
    sections: &[(FeatureId, &[u8], u64)],
    endian: Endian,
) -> Vec<(FeatureId, Result<Feature>)> {
    let mut ctx = DecodeContext::default();
    for &(id, bytes, off) in sections {
        if id == FeatureId::NRCPUS {
            if let Ok(Feature::NrCpus { available, .. }) = decode(id, bytes, off, endian) {
                ctx.nr_cpus_avail = Some(available);
            }
        }
    }
    sections
        .iter()
        .map(|&(id, bytes, off)| (id, decode_with(id, bytes, off, endian, &ctx)))
        .collect()
}

/// Decodes a pipe-mode HEADER_FEATURE record (type 80), header included.
/// Returns the feature number and the feature.
pub fn decode_record(
    record: &[u8],
    base_offset: u64,
    endian: Endian,
) -> Result<(FeatureId, Feature)> {
    decode_record_with(record, base_offset, endian, &DecodeContext::default())
}

/// Like [`decode_record`], with facts from earlier records (in a pipe,
/// NRCPUS comes before CPU_TOPOLOGY).
pub fn decode_record_with(
    record: &[u8],
    base_offset: u64,
    endian: Endian,
    ctx: &DecodeContext,
) -> Result<(FeatureId, Feature)> {
    let mut c = Cursor::new(record, base_offset, endian);
    let _type = c.u32("feature record header")?;
    let _misc = c.u16("feature record header")?;
    let size = c.u16("feature record header")? as usize;
    let feat = c.u64("feature record id")?;
    let id = FeatureId(u32::try_from(feat).unwrap_or(u32::MAX));
    let end = size.min(record.len()).max(16);
    let payload = record.get(16..end).unwrap_or(&[]);
    Ok((id, decode_with(id, payload, base_offset + 16, endian, ctx)?))
}

fn feature_error(id: FeatureId, e: Error) -> Error {
    let problem = match e.kind {
        ErrorKind::BadFeature { problem, .. } => problem,
        ErrorKind::UnexpectedEof {
            what,
            needed,
            available,
        } => format!("{what} needs {needed} bytes but only {available} are left"),
        other => format!("{other:?}"),
    };
    Error::new(
        e.offset,
        ErrorKind::BadFeature {
            feature: id.0,
            problem: format!("{id}: {problem}"),
        },
    )
}

/// Capacity for `count` items of at least `min_size` bytes each.
fn cap(count: u64, c: &Cursor<'_>, min_size: usize) -> usize {
    let most = c.remaining() / min_size.max(1);
    usize::try_from(count).unwrap_or(usize::MAX).min(most)
}

fn strings(c: &mut Cursor<'_>, what: &'static str) -> Result<Vec<String>> {
    let nr = c.u32(what)?;
    let mut v = Vec::with_capacity(cap(u64::from(nr), c, 4));
    for _ in 0..nr {
        v.push(c.perf_str(what)?);
    }
    Ok(v)
}

fn decode_inner(id: FeatureId, c: &mut Cursor<'_>, ctx: &DecodeContext) -> Result<Feature> {
    Ok(match id {
        FeatureId::BUILD_ID => Feature::BuildId(decode_build_ids(c)?),
        FeatureId::HOSTNAME => Feature::Hostname(c.perf_str("hostname")?),
        FeatureId::OSRELEASE => Feature::OsRelease(c.perf_str("os release")?),
        FeatureId::VERSION => Feature::Version(c.perf_str("version")?),
        FeatureId::ARCH => Feature::Arch(c.perf_str("arch")?),
        FeatureId::CPUDESC => Feature::CpuDesc(c.perf_str("cpu description")?),
        FeatureId::CPUID => Feature::CpuId(c.perf_str("cpuid")?),
        FeatureId::NRCPUS => Feature::NrCpus {
            available: c.u32("nr_cpus_avail")?,
            online: c.u32("nr_cpus_online")?,
        },
        FeatureId::TOTAL_MEM => Feature::TotalMem(c.u64("total memory")?),
        FeatureId::CMDLINE => Feature::Cmdline(strings(c, "cmdline")?),
        FeatureId::EVENT_DESC => Feature::EventDesc(decode_event_desc(c)?),
        FeatureId::CPU_TOPOLOGY => Feature::CpuTopology(decode_cpu_topology(c, ctx)?),
        FeatureId::NUMA_TOPOLOGY => {
            let nr = c.u32("numa nodes")?;
            let mut v = Vec::with_capacity(cap(u64::from(nr), c, 24));
            for _ in 0..nr {
                v.push(NumaNode {
                    node: c.u32("numa node")?,
                    mem_total: c.u64("numa mem_total")?,
                    mem_free: c.u64("numa mem_free")?,
                    cpus: c.perf_str("numa cpu list")?,
                });
            }
            Feature::NumaTopology(v)
        }
        FeatureId::BRANCH_STACK => Feature::BranchStack,
        FeatureId::PMU_MAPPINGS => {
            let nr = c.u32("pmu mappings")?;
            let mut v = Vec::with_capacity(cap(u64::from(nr), c, 8));
            for _ in 0..nr {
                let t = c.u32("pmu type")?;
                v.push((t, c.perf_str("pmu name")?));
            }
            Feature::PmuMappings(v)
        }
        FeatureId::GROUP_DESC => {
            let nr = c.u32("groups")?;
            let mut v = Vec::with_capacity(cap(u64::from(nr), c, 12));
            for _ in 0..nr {
                v.push(GroupDesc {
                    name: c.perf_str("group name")?,
                    leader_idx: c.u32("group leader")?,
                    nr_members: c.u32("group members")?,
                });
            }
            Feature::GroupDesc(v)
        }
        FeatureId::AUXTRACE => {
            let nr = c.u64("auxtrace index")?;
            let raw = c.array(nr, 16, "auxtrace index entries")?;
            let e = c.endian();
            Feature::Auxtrace(
                raw.chunks_exact(16)
                    .map(|b| (e.u64(&b[..8]), e.u64(&b[8..])))
                    .collect(),
            )
        }
        FeatureId::STAT => Feature::Stat,
        FeatureId::CACHE => {
            let version = c.u32("cache version")?;
            if version != 1 {
                return Err(c.error(ErrorKind::BadFeature {
                    feature: id.0,
                    problem: format!("unsupported cache version {version}"),
                }));
            }
            let nr = c.u32("caches")?;
            let mut v = Vec::with_capacity(cap(u64::from(nr), c, 28));
            for _ in 0..nr {
                v.push(CacheLevel {
                    level: c.u32("cache level")?,
                    line_size: c.u32("cache line size")?,
                    sets: c.u32("cache sets")?,
                    ways: c.u32("cache ways")?,
                    type_: c.perf_str("cache type")?,
                    size: c.perf_str("cache size")?,
                    map: c.perf_str("cache cpu list")?,
                });
            }
            Feature::Cache(v)
        }
        FeatureId::SAMPLE_TIME => Feature::SampleTime {
            first: c.u64("first sample time")?,
            last: c.u64("last sample time")?,
        },
        FeatureId::MEM_TOPOLOGY => {
            let version = c.u64("mem topology version")?;
            if version != 1 {
                return Err(c.error(ErrorKind::BadFeature {
                    feature: id.0,
                    problem: format!("unsupported mem topology version {version}"),
                }));
            }
            let block_size = c.u64("memory block size")?;
            let nr = c.u64("memory nodes")?;
            let mut nodes = Vec::with_capacity(cap(nr, c, 24));
            for _ in 0..nr {
                let node = c.u64("memory node")?;
                let _size = c.u64("memory node size")?;
                let nbits = c.u64("memory node bitmap size")?;
                let words = nbits.div_ceil(64);
                let raw = c.array(words, 8, "memory node bitmap")?;
                let e = c.endian();
                nodes.push(MemNode {
                    node,
                    nbits,
                    bitmap: raw.chunks_exact(8).map(|b| e.u64(b)).collect(),
                });
            }
            Feature::MemTopology(MemTopology {
                version,
                block_size,
                nodes,
            })
        }
        FeatureId::CLOCKID => Feature::ClockId(c.u64("clockid resolution")?),
        FeatureId::DIR_FORMAT => Feature::DirFormat(c.u64("dir format version")?),
        FeatureId::COMPRESSED => Feature::Compressed(Compressed {
            version: c.u32("compression version")?,
            type_: c.u32("compression type")?,
            level: c.u32("compression level")?,
            ratio: c.u32("compression ratio")?,
            mmap_len: c.u32("compression mmap_len")?,
        }),
        FeatureId::CPU_PMU_CAPS => Feature::CpuPmuCaps(decode_caps(c)?),
        FeatureId::CLOCK_DATA => {
            let version = c.u32("clock data version")?;
            if version != 1 {
                return Err(c.error(ErrorKind::BadFeature {
                    feature: id.0,
                    problem: format!("unsupported clock data version {version}"),
                }));
            }
            Feature::ClockData(ClockData {
                version,
                clockid: c.u32("clockid")?,
                wall_ns: c.u64("wall clock reference")?,
                clockid_ns: c.u64("clockid reference")?,
            })
        }
        FeatureId::HYBRID_TOPOLOGY => {
            let nr = c.u32("hybrid nodes")?;
            let mut v = Vec::with_capacity(cap(u64::from(nr), c, 8));
            for _ in 0..nr {
                let pmu = c.perf_str("hybrid pmu name")?;
                v.push((pmu, c.perf_str("hybrid cpu list")?));
            }
            Feature::HybridTopology(v)
        }
        FeatureId::PMU_CAPS => {
            let nr = c.u32("pmus with caps")?;
            let mut v = Vec::with_capacity(cap(u64::from(nr), c, 8));
            for _ in 0..nr {
                let caps = decode_caps(c)?;
                v.push(PmuCaps {
                    pmu_name: c.perf_str("pmu name")?,
                    caps,
                });
            }
            Feature::PmuCaps(v)
        }
        _ => Feature::Raw {
            id,
            bytes: c.rest().to_vec(),
        },
    })
}

fn decode_caps(c: &mut Cursor<'_>) -> Result<Vec<(String, String)>> {
    let nr = c.u32("pmu caps")?;
    let mut v = Vec::with_capacity(cap(u64::from(nr), c, 8));
    for _ in 0..nr {
        let name = c.perf_str("pmu cap name")?;
        v.push((name, c.perf_str("pmu cap value")?));
    }
    Ok(v)
}

fn decode_build_ids(c: &mut Cursor<'_>) -> Result<Vec<BuildIdEntry>> {
    let start = c.clone();
    let mut v = Vec::new();
    while c.remaining() > 0 {
        let _type = c.u32("build-id header")?;
        let misc = c.u16("build-id header")?;
        let size = usize::from(c.u16("build-id header")?);
        let pid = c.u32("build-id pid")? as i32;
        let id = c.bytes(24, "build-id")?;
        let name_len = size.checked_sub(BUILD_ID_ENTRY_HEADER).ok_or_else(|| {
            c.error(ErrorKind::BadFeature {
                feature: FeatureId::BUILD_ID.0,
                problem: format!("build-id entry size {size} is smaller than 36"),
            })
        })?;
        let name = c.bytes(name_len, "build-id file name")?;
        if v.is_empty() && name.starts_with(b"nel.kallsyms]") {
            // Pre-a1645ce1 layout without the pid field.
            return decode_build_ids_abi_quirk(start);
        }
        v.push(BuildIdEntry {
            misc,
            pid,
            build_id: build_id_bytes(misc, id),
            filename: String::from_utf8_lossy(until_nul(name)).into_owned(),
        });
    }
    Ok(v)
}

fn build_id_bytes(misc: u16, id: &[u8]) -> Vec<u8> {
    let n = if misc & MISC_BUILD_ID_SIZE != 0 {
        usize::from(id[20]).min(20)
    } else {
        20
    };
    id[..n].to_vec()
}

fn decode_build_ids_abi_quirk(mut c: Cursor<'_>) -> Result<Vec<BuildIdEntry>> {
    let mut v = Vec::new();
    while c.remaining() > 0 {
        let _type = c.u32("build-id header")?;
        let misc = c.u16("build-id header")?;
        let size = usize::from(c.u16("build-id header")?);
        let id = c.bytes(24, "build-id")?;
        let name_len = size.checked_sub(32).ok_or_else(|| {
            c.error(ErrorKind::BadFeature {
                feature: FeatureId::BUILD_ID.0,
                problem: format!("old-style build-id entry size {size} is smaller than 32"),
            })
        })?;
        let name = c.bytes(name_len, "build-id file name")?;
        let pid = if misc == 4 || misc == 5 { 0 } else { -1 };
        v.push(BuildIdEntry {
            misc,
            pid,
            build_id: build_id_bytes(misc, id),
            filename: String::from_utf8_lossy(until_nul(name)).into_owned(),
        });
    }
    Ok(v)
}

fn decode_event_desc(c: &mut Cursor<'_>) -> Result<EventDescs> {
    let nr = c.u32("event desc count")?;
    let attr_size = c.u32("event desc attr size")?;
    let stride = attr_size as usize;
    let mut events = Vec::with_capacity(cap(u64::from(nr), c, stride.saturating_add(8)));
    for _ in 0..nr {
        let raw = c.bytes(stride, "event desc attr")?;
        let declared = if raw.len() >= 8 {
            c.endian().u32(&raw[4..8])
        } else {
            0
        };
        let attr = Attr::from_bytes(raw, c.endian(), declared);
        let nonzero =
            |r: std::ops::Range<usize>| raw.get(r).is_some_and(|b| b.iter().any(|&x| x != 0));
        let reserved_set = attr.flags >> 38 != 0 || nonzero(110..112) || nonzero(116..120);
        let nr_ids = c.u32("event desc id count")?;
        let name = c.perf_str("event name")?;
        let raw_ids = c.array(u64::from(nr_ids), 8, "event desc ids")?;
        let e = c.endian();
        events.push(EventDesc {
            attr,
            name,
            ids: raw_ids.chunks_exact(8).map(|b| e.u64(b)).collect(),
            reserved_set,
        });
    }
    Ok(EventDescs { attr_size, events })
}

/// Size perf's `string_size()` gives a string read from the file.
fn perf_string_size(s: &str) -> usize {
    (s.len() + 1).div_ceil(NAME_ALIGN) * NAME_ALIGN + 4
}

fn decode_cpu_topology(c: &mut Cursor<'_>, ctx: &DecodeContext) -> Result<CpuTopology> {
    let start = c.offset();
    let mut t = CpuTopology {
        package_cpus: strings(c, "cpu topology package siblings")?,
        core_cpus: strings(c, "cpu topology thread siblings")?,
        ..CpuTopology::default()
    };
    // perf decides whether the optional parts are present by comparing the
    // section size with the size its strings would take written by perf
    // itself (64-byte padding), not with the bytes actually read.
    let total = c.offset() - start + c.remaining() as u64;
    let mut perf_size = 8 + t
        .package_cpus
        .iter()
        .chain(&t.core_cpus)
        .map(|s| perf_string_size(s) as u64)
        .sum::<u64>();
    if c.remaining() == 0 || total <= perf_size {
        return Ok(t);
    }
    let rest = c.clone();
    let n = match ctx.nr_cpus_avail {
        Some(n) => n as usize,
        None => infer_topology_cpus(rest),
    };
    if c.remaining() < n.saturating_mul(8) {
        // Padding only (an aligned pipe record), not per-CPU ids.
        return Ok(t);
    }
    let raw = c.array(n as u64, 8, "cpu topology core/socket ids")?;
    let e = c.endian();
    t.cpus = Some(
        raw.chunks_exact(8)
            .map(|b| CpuIds {
                core_id: e.u32(&b[..4]),
                socket_id: e.u32(&b[4..]),
            })
            .collect(),
    );
    perf_size += 8 * n as u64;
    if c.remaining() < 4 || total <= perf_size {
        return Ok(t);
    }
    t.die_cpus = Some(strings(c, "cpu topology die siblings")?);
    let raw = c.array(n as u64, 4, "cpu topology die ids")?;
    t.die_ids = raw.chunks_exact(4).map(|b| e.u32(b)).collect();
    Ok(t)
}

/// The number of per-CPU entries in the rest of a CPU_TOPOLOGY section when
/// NRCPUS is not known: the count for which the optional die part ends
/// exactly at the end, else everything as core/socket pairs.
fn infer_topology_cpus(rest: Cursor<'_>) -> usize {
    let r = rest.remaining();
    let mut n = 1;
    while n * 12 + 4 <= r {
        let mut c = rest.clone();
        if c.skip(n * 8, "").is_ok() && strings_leave(c, n * 4) {
            return n;
        }
        n += 1;
    }
    r / 8
}

/// Whether `c` holds a non-empty string list (as [`strings`] reads) followed
/// by exactly `tail` bytes. Allocates nothing and stops once fewer than
/// `tail` bytes are left: [`infer_topology_cpus`] calls it for every
/// candidate count, and allocating there made big sections quadratic.
fn strings_leave(mut c: Cursor<'_>, tail: usize) -> bool {
    let Ok(nr) = c.u32("") else { return false };
    if nr == 0 {
        return false;
    }
    for _ in 0..nr {
        let Ok(len) = c.u32("") else { return false };
        if c.skip(len as usize, "").is_err() || c.remaining() < tail {
            return false;
        }
    }
    c.remaining() == tail
}

// ---------------------------------------------------------------- encoding

/// Appends a string as perf's `do_write_string` does: u32 length (text +
/// NUL, rounded up to 64), then the text zero-padded to that length.
pub fn put_string(out: &mut Vec<u8>, endian: Endian, s: &str) {
    let len = (s.len() + 1).div_ceil(NAME_ALIGN) * NAME_ALIGN;
    endian.put_u32(out, len as u32);
    let start = out.len();
    out.extend_from_slice(s.as_bytes());
    out.resize(start + len, 0);
}

fn put_strings(out: &mut Vec<u8>, endian: Endian, v: &[String]) {
    endian.put_u32(out, v.len() as u32);
    for s in v {
        put_string(out, endian, s);
    }
}

/// Appends one build-id entry as perf's `write_buildid` does, with header
/// type `record_type` (0 in the BUILD_ID feature, 67 as a record).
pub fn put_build_id(out: &mut Vec<u8>, endian: Endian, record_type: u32, b: &BuildIdEntry) {
    let name_len = (b.filename.len() + 1).div_ceil(NAME_ALIGN) * NAME_ALIGN;
    endian.put_u32(out, record_type);
    endian.put_u16(out, b.misc);
    endian.put_u16(out, (BUILD_ID_ENTRY_HEADER + name_len) as u16);
    endian.put_u32(out, b.pid as u32);
    let mut id = [0u8; 24];
    let n = b.build_id.len().min(20);
    id[..n].copy_from_slice(&b.build_id[..n]);
    if b.misc & MISC_BUILD_ID_SIZE != 0 {
        id[20] = n as u8;
    }
    out.extend_from_slice(&id);
    let start = out.len();
    out.extend_from_slice(b.filename.as_bytes());
    out.resize(start + name_len, 0);
}

/// Encodes a feature's payload as perf 6.1 writes it.
pub fn encode(f: &Feature, endian: Endian) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(f, endian, &mut out);
    out
}

/// Encodes a pipe-mode HEADER_FEATURE record (type 80): 8-byte header,
/// u64 feature number, payload, zero-padded to a multiple of 8.
pub fn encode_record(f: &Feature, endian: Endian) -> Vec<u8> {
    let mut out = Vec::new();
    endian.put_u32(&mut out, 80);
    endian.put_u16(&mut out, 0);
    endian.put_u16(&mut out, 0);
    endian.put_u64(&mut out, u64::from(f.id().0));
    encode_into(f, endian, &mut out);
    out.resize(out.len().div_ceil(8) * 8, 0);
    let size = u16::try_from(out.len()).unwrap_or(u16::MAX);
    let b = match endian {
        Endian::Little => size.to_le_bytes(),
        Endian::Big => size.to_be_bytes(),
    };
    out[6..8].copy_from_slice(&b);
    out
}

fn encode_into(f: &Feature, e: Endian, out: &mut Vec<u8>) {
    match f {
        Feature::BuildId(v) => {
            for b in v {
                put_build_id(out, e, 0, b);
            }
        }
        Feature::Hostname(s)
        | Feature::OsRelease(s)
        | Feature::Version(s)
        | Feature::Arch(s)
        | Feature::CpuDesc(s)
        | Feature::CpuId(s) => put_string(out, e, s),
        Feature::NrCpus { available, online } => {
            e.put_u32(out, *available);
            e.put_u32(out, *online);
        }
        Feature::TotalMem(v) | Feature::ClockId(v) | Feature::DirFormat(v) => e.put_u64(out, *v),
        Feature::Cmdline(v) => put_strings(out, e, v),
        Feature::EventDesc(d) => {
            e.put_u32(out, d.events.len() as u32);
            e.put_u32(out, d.attr_size);
            for ev in &d.events {
                let start = out.len();
                ev.attr.write(e, d.attr_size, out);
                if d.attr_size >= 8 {
                    let b = match e {
                        Endian::Little => ev.attr.size.to_le_bytes(),
                        Endian::Big => ev.attr.size.to_be_bytes(),
                    };
                    out[start + 4..start + 8].copy_from_slice(&b);
                }
                e.put_u32(out, ev.ids.len() as u32);
                put_string(out, e, &ev.name);
                for &id in &ev.ids {
                    e.put_u64(out, id);
                }
            }
        }
        Feature::CpuTopology(t) => {
            put_strings(out, e, &t.package_cpus);
            put_strings(out, e, &t.core_cpus);
            if let Some(cpus) = &t.cpus {
                for c in cpus {
                    e.put_u32(out, c.core_id);
                    e.put_u32(out, c.socket_id);
                }
                if let Some(d) = &t.die_cpus {
                    put_strings(out, e, d);
                    for &id in &t.die_ids {
                        e.put_u32(out, id);
                    }
                }
            }
        }
        Feature::NumaTopology(v) => {
            e.put_u32(out, v.len() as u32);
            for n in v {
                e.put_u32(out, n.node);
                e.put_u64(out, n.mem_total);
                e.put_u64(out, n.mem_free);
                put_string(out, e, &n.cpus);
            }
        }
        Feature::BranchStack | Feature::Stat => {}
        Feature::PmuMappings(v) => {
            e.put_u32(out, v.len() as u32);
            for (t, name) in v {
                e.put_u32(out, *t);
                put_string(out, e, name);
            }
        }
        Feature::GroupDesc(v) => {
            e.put_u32(out, v.len() as u32);
            for g in v {
                put_string(out, e, &g.name);
                e.put_u32(out, g.leader_idx);
                e.put_u32(out, g.nr_members);
            }
        }
        Feature::Auxtrace(v) => {
            e.put_u64(out, v.len() as u64);
            for &(o, s) in v {
                e.put_u64(out, o);
                e.put_u64(out, s);
            }
        }
        Feature::Cache(v) => {
            e.put_u32(out, 1);
            e.put_u32(out, v.len() as u32);
            for c in v {
                e.put_u32(out, c.level);
                e.put_u32(out, c.line_size);
                e.put_u32(out, c.sets);
                e.put_u32(out, c.ways);
                put_string(out, e, &c.type_);
                put_string(out, e, &c.size);
                put_string(out, e, &c.map);
            }
        }
        Feature::SampleTime { first, last } => {
            e.put_u64(out, *first);
            e.put_u64(out, *last);
        }
        Feature::MemTopology(m) => {
            e.put_u64(out, m.version);
            e.put_u64(out, m.block_size);
            e.put_u64(out, m.nodes.len() as u64);
            for n in &m.nodes {
                e.put_u64(out, n.node);
                e.put_u64(out, n.nbits);
                e.put_u64(out, n.nbits);
                for &w in &n.bitmap {
                    e.put_u64(out, w);
                }
            }
        }
        Feature::Compressed(c) => {
            for v in [c.version, c.type_, c.level, c.ratio, c.mmap_len] {
                e.put_u32(out, v);
            }
        }
        Feature::CpuPmuCaps(caps) => put_caps(out, e, caps),
        Feature::ClockData(c) => {
            e.put_u32(out, c.version);
            e.put_u32(out, c.clockid);
            e.put_u64(out, c.wall_ns);
            e.put_u64(out, c.clockid_ns);
        }
        Feature::HybridTopology(v) => {
            e.put_u32(out, v.len() as u32);
            for (pmu, cpus) in v {
                put_string(out, e, pmu);
                put_string(out, e, cpus);
            }
        }
        Feature::PmuCaps(v) => {
            e.put_u32(out, v.len() as u32);
            for p in v {
                put_caps(out, e, &p.caps);
                put_string(out, e, &p.pmu_name);
            }
        }
        Feature::Raw { bytes, .. } => out.extend_from_slice(bytes),
    }
}

fn put_caps(out: &mut Vec<u8>, e: Endian, caps: &[(String, String)]) {
    e.put_u32(out, caps.len() as u32);
    for (n, v) in caps {
        put_string(out, e, n);
        put_string(out, e, v);
    }
}

/// The size perf's reader assumes a string took (used by CPU_TOPOLOGY's
/// optional-part detection in perf; exposed for printers that emulate it).
pub fn perf_string_len(s: &str) -> usize {
    perf_string_size(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (feature id, bytes, offset) of every feature section of a perf.data
    /// file, or None for pipe files and files without features.
    type Sections<'a> = (Endian, Vec<(FeatureId, &'a [u8], u64)>);

    pub(crate) fn sections(file: &[u8]) -> Option<Sections<'_>> {
        let magic = file.get(..8)?;
        let endian = if magic == b"PERFILE2" {
            Endian::Little
        } else if magic == b"2ELIFREP" {
            Endian::Big
        } else {
            return None;
        };
        let u64_at = |o: usize| file.get(o..o + 8).map(|b| endian.u64(b));
        if u64_at(8)? != 104 {
            return None;
        }
        let data_off = u64_at(40)?;
        let data_size = u64_at(48)?;
        let mut words = [0u64; 4];
        for (i, w) in words.iter_mut().enumerate() {
            *w = u64_at(72 + 8 * i)?;
        }
        let mut table = usize::try_from(data_off.checked_add(data_size)?).ok()?;
        let mut out = Vec::new();
        for bit in 0..256u32 {
            if words[(bit / 64) as usize] >> (bit % 64) & 1 == 0 {
                continue;
            }
            let off = u64_at(table)?;
            let size = u64_at(table + 8)?;
            table += 16;
            let o = usize::try_from(off).ok()?;
            let s = usize::try_from(size).ok()?;
            out.push((FeatureId(bit), file.get(o..o.checked_add(s)?)?, off));
        }
        Some((endian, out))
    }

    fn fixtures() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/quipper")
    }

    #[test]
    fn quipper_files_decode() {
        let dir = fixtures();
        let Ok(rd) = std::fs::read_dir(&dir) else {
            eprintln!("no fixtures at {}", dir.display());
            return;
        };
        let mut files = 0;
        let mut feats = 0;
        let mut failures = Vec::new();
        for ent in rd.flatten() {
            let name = ent.file_name().to_string_lossy().into_owned();
            if !name.starts_with("perf.data") || name.ends_with(".buildids") {
                continue;
            }
            let bytes = std::fs::read(ent.path()).unwrap();
            if name.contains("piped") {
                feats += check_pipe(&name, &bytes);
                files += 1;
                continue;
            }
            let (endian, secs) = sections(&bytes).unwrap_or_else(|| panic!("{name}: header"));
            files += 1;
            for (i, (id, r)) in decode_all(&secs, endian).into_iter().enumerate() {
                match r {
                    Ok(f) => assert_eq!(f.id(), id),
                    Err(e) => {
                        failures.push(format!("{name}: {id} ({} bytes): {e}", secs[i].1.len()))
                    }
                }
                feats += 1;
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
        assert!(files >= 40, "only {files} files");
        assert!(feats > 300, "only {feats} features");
    }

    /// Decodes the HEADER_FEATURE records at the start of a pipe file.
    fn check_pipe(name: &str, b: &[u8]) -> usize {
        let e = if b.starts_with(b"PERFILE2") {
            Endian::Little
        } else {
            Endian::Big
        };
        let mut off = 16usize;
        let mut n = 0;
        let mut ctx = DecodeContext::default();
        while off + 8 <= b.len() {
            let t = e.u32(&b[off..]);
            let size = usize::from(e.u16(&b[off + 6..]));
            if size < 8 || off + size > b.len() {
                break;
            }
            if t == 80 {
                let (id, f) = decode_record_with(&b[off..off + size], off as u64, e, &ctx)
                    .unwrap_or_else(|err| panic!("{name}: {err}"));
                assert_eq!(f.id(), id);
                if let Feature::NrCpus { available, .. } = f {
                    ctx.nr_cpus_avail = Some(available);
                }
                n += 1;
            }
            off += size;
            if t == 66 && off >= 8 {
                // TRACING_DATA is followed by its unaccounted payload.
                let sz = e.u32(&b[off - size + 8..]) as usize;
                off += sz;
            }
        }
        n
    }

    #[test]
    fn quipper_round_trip_where_canonical() {
        let dir = fixtures();
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return;
        };
        let mut checked = 0;
        for ent in rd.flatten() {
            let name = ent.file_name().to_string_lossy().into_owned();
            if !name.starts_with("perf.data")
                || name.ends_with(".buildids")
                || name.contains("piped")
            {
                continue;
            }
            let bytes = std::fs::read(ent.path()).unwrap();
            let Some((endian, secs)) = sections(&bytes) else {
                continue;
            };
            for (i, (id, r)) in decode_all(&secs, endian).into_iter().enumerate() {
                let f = r.unwrap();
                let raw = secs[i].1;
                // Only perf-written canonical encodings are expected to match.
                // Old perf and quipper pad some strings differently, so
                // only count the sections that match byte for byte.
                assert_eq!(f.id(), id);
                if encode(&f, endian) == raw {
                    checked += 1;
                }
            }
        }
        assert!(checked > 200, "only {checked} round-trips");
    }

    /// Records with Linux perf (when available) and checks every feature
    /// decodes and round-trips byte for byte.
    #[test]
    fn perf_recorded_files_round_trip() {
        if !std::path::Path::new("/usr/bin/perf").exists() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("prec-features-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let runs: &[&[&str]] = &[
            &["-e", "cpu-clock"],
            &["-g"],
            &["-e", "{cpu-clock,page-faults}", "-k", "1"],
        ];
        for (i, args) in runs.iter().enumerate() {
            let out = dir.join(format!("{i}.data"));
            let ok = std::process::Command::new("/usr/bin/perf")
                .arg("record")
                .arg("-q")
                .arg("-o")
                .arg(&out)
                .args(*args)
                .args(["--", "true"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                continue;
            }
            let bytes = std::fs::read(&out).unwrap();
            let (endian, secs) = sections(&bytes).unwrap();
            assert!(secs.len() > 10);
            for (j, (id, r)) in decode_all(&secs, endian).into_iter().enumerate() {
                let f = r.unwrap_or_else(|e| panic!("{args:?}: {id}: {e}"));
                assert_eq!(encode(&f, endian), secs[j].1, "{args:?}: {id}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn strings_and_build_ids_use_perf_padding() {
        let mut out = Vec::new();
        put_string(&mut out, Endian::Little, "vm");
        assert_eq!(out.len(), 4 + 64);
        assert_eq!(&out[..4], &64u32.to_le_bytes());
        let b = BuildIdEntry {
            misc: 0x8001,
            pid: -1,
            build_id: vec![0xab; 20],
            filename: "[kernel.kallsyms]".into(),
        };
        let f = Feature::BuildId(vec![b.clone()]);
        let enc = encode(&f, Endian::Big);
        assert_eq!(enc.len(), 100);
        assert_eq!(enc[8 + 4 + 20], 20);
        assert_eq!(
            decode(FeatureId::BUILD_ID, &enc, 0, Endian::Big).unwrap(),
            f
        );
    }

    #[test]
    fn record_round_trip() {
        let f = Feature::NrCpus {
            available: 4,
            online: 2,
        };
        let r = encode_record(&f, Endian::Little);
        assert_eq!(r.len(), 24);
        assert_eq!(
            decode_record(&r, 0, Endian::Little).unwrap(),
            (FeatureId::NRCPUS, f)
        );
    }

    #[test]
    fn hostile_counts_fail_without_allocating() {
        let e = Endian::Little;
        for id in 1..40 {
            for bytes in [
                vec![0xffu8; 7],
                vec![0xff; 16],
                [0xff, 0xff, 0xff, 0x7f, 0x80, 0, 0, 0].to_vec(),
                vec![],
            ] {
                let r = decode(FeatureId(id), &bytes, 1000, e);
                if let Err(err) = r {
                    assert!(err.offset >= 1000);
                    assert!(
                        matches!(err.kind, ErrorKind::BadFeature { feature, .. } if feature == id)
                    );
                }
            }
        }
        // Truncations of a real-looking section never panic.
        let f = Feature::Cmdline(vec!["perf".into(), "record".into()]);
        let enc = encode(&f, e);
        for n in 0..enc.len() {
            let _ = decode(FeatureId::CMDLINE, &enc[..n], 0, e);
        }
    }

    #[test]
    fn cpu_topology_infers_cpu_count() {
        let t = CpuTopology {
            package_cpus: vec!["0-3".into()],
            core_cpus: vec!["0-1".into(), "2-3".into()],
            cpus: Some(
                (0..4)
                    .map(|i| CpuIds {
                        core_id: i / 2,
                        socket_id: 0,
                    })
                    .collect(),
            ),
            die_cpus: Some(vec!["0-3".into()]),
            die_ids: vec![0; 4],
        };
        let f = Feature::CpuTopology(t);
        let enc = encode(&f, Endian::Little);
        assert_eq!(
            decode(FeatureId::CPU_TOPOLOGY, &enc, 0, Endian::Little).unwrap(),
            f
        );
        let ctx = DecodeContext {
            nr_cpus_avail: Some(4),
        };
        assert_eq!(
            decode_with(FeatureId::CPU_TOPOLOGY, &enc, 0, Endian::Little, &ctx).unwrap(),
            f
        );
    }
}
