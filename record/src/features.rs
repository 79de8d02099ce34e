//! The feature sections `prec record` writes at the end of a perf.data file
//! (or at the start of a pipe-mode stream), built from [`crate::sysinfo`]
//! and converted to [`prec_format::features::Feature`] values.
//!
//! perf 6.1 writes, for a plain `perf record`: BUILD_ID, HOSTNAME, OSRELEASE,
//! VERSION, ARCH, NRCPUS, CPUDESC, CPUID, TOTAL_MEM, CMDLINE, EVENT_DESC,
//! CPU_TOPOLOGY, NUMA_TOPOLOGY, PMU_MAPPINGS, CACHE, SAMPLE_TIME,
//! MEM_TOPOLOGY, BPF_PROG_INFO, BPF_BTF, PMU_CAPS (the last three empty, as
//! perf writes them when no BPF program ran). A section whose
//! source cannot be read is left out, as perf does.

use prec_format::features::{
    self as ff, BuildIdEntry, EventDesc, EventDescs, Feature, MemNode, MemTopology,
    MISC_BUILD_ID_SIZE,
};
use prec_format::{Attr, Endian, FeatureId};

use crate::sysinfo;

/// One recorded event, for EVENT_DESC.
#[derive(Clone, Debug)]
pub struct EventInfo {
    pub attr: Attr,
    pub name: String,
    pub ids: Vec<u64>,
}

/// A DSO that got samples (or `[vdso]`), for BUILD_ID.
#[derive(Clone, Debug)]
pub struct DsoBuildId {
    /// `PERF_RECORD_MISC_KERNEL` (1) or `PERF_RECORD_MISC_USER` (2).
    pub cpumode: u16,
    pub build_id: Vec<u8>,
    pub filename: String,
}

/// Inputs that depend on the recording.
#[derive(Clone, Debug, Default)]
pub struct RecordingFacts {
    pub cmdline: Vec<String>,
    pub events: Vec<EventInfo>,
    /// (first, last) sample time; `None` when there were no samples.
    pub sample_time: Option<(u64, u64)>,
    pub build_ids: Vec<DsoBuildId>,
}

/// The version string written to the VERSION feature.
pub fn version_string() -> String {
    format!("{}.prec", env!("CARGO_PKG_VERSION"))
}

/// Host features (everything except BUILD_ID, EVENT_DESC, CMDLINE and
/// SAMPLE_TIME).
pub fn host_features() -> Vec<Feature> {
    let mut out = Vec::new();
    if let Ok(u) = sysinfo::uname_info() {
        out.push(Feature::Hostname(u.hostname));
        out.push(Feature::OsRelease(u.os_release));
        out.push(Feature::Version(version_string()));
        out.push(Feature::Arch(u.arch));
    } else {
        out.push(Feature::Version(version_string()));
    }
    if let Ok(n) = sysinfo::nr_cpus() {
        out.push(Feature::NrCpus {
            available: n.available,
            online: n.online,
        });
    }
    if let Ok(Some(d)) = sysinfo::cpu_desc() {
        out.push(Feature::CpuDesc(d));
    }
    if let Ok(Some(c)) = sysinfo::cpuid() {
        out.push(Feature::CpuId(c));
    }
    if let Ok(m) = sysinfo::total_mem_kb() {
        out.push(Feature::TotalMem(m));
    }
    if let Ok(t) = sysinfo::cpu_topology() {
        let has_dies = !t.die_siblings.is_empty();
        out.push(Feature::CpuTopology(ff::CpuTopology {
            package_cpus: t.core_siblings,
            core_cpus: t.thread_siblings,
            cpus: Some(
                t.cpus
                    .iter()
                    .map(|c| ff::CpuIds {
                        core_id: c.core_id as u32,
                        socket_id: c.socket_id as u32,
                    })
                    .collect(),
            ),
            die_cpus: has_dies.then_some(t.die_siblings),
            die_ids: if has_dies {
                t.cpus.iter().map(|c| c.die_id as u32).collect()
            } else {
                Vec::new()
            },
        }));
    }
    if let Ok(nodes) = sysinfo::numa_nodes() {
        out.push(Feature::NumaTopology(
            nodes
                .into_iter()
                .map(|n| ff::NumaNode {
                    node: n.node,
                    mem_total: n.mem_total_kb,
                    mem_free: n.mem_free_kb,
                    cpus: n.cpus,
                })
                .collect(),
        ));
    }
    if let Ok(p) = sysinfo::pmu_mappings() {
        out.push(Feature::PmuMappings(p));
    }
    if let Ok(c) = sysinfo::caches() {
        if !c.is_empty() {
            out.push(Feature::Cache(
                c.into_iter()
                    .map(|c| ff::CacheLevel {
                        level: c.level,
                        line_size: c.line_size,
                        sets: c.sets,
                        ways: c.ways,
                        type_: c.type_,
                        size: c.size,
                        map: c.map,
                    })
                    .collect(),
            ));
        }
    }
    if let Ok((block_size, nodes)) = sysinfo::memory_topology() {
        out.push(Feature::MemTopology(MemTopology {
            version: 1,
            block_size,
            nodes: nodes
                .into_iter()
                .map(|n| {
                    let nbits = n.blocks.last().map_or(0, |&b| b + 1);
                    let mut bitmap = vec![0u64; nbits.div_ceil(64) as usize];
                    for &b in &n.blocks {
                        bitmap[(b / 64) as usize] |= 1 << (b % 64);
                    }
                    MemNode {
                        node: n.node,
                        nbits,
                        bitmap,
                    }
                })
                .collect(),
        }));
    }
    // perf 6.1 writes these even when empty (no BPF programs seen, no PMU
    // with capabilities): a zero count each.
    out.push(Feature::Raw {
        id: FeatureId::BPF_PROG_INFO,
        bytes: vec![0; 4],
    });
    out.push(Feature::Raw {
        id: FeatureId::BPF_BTF,
        bytes: vec![0; 4],
    });
    out.push(Feature::PmuCaps(Vec::new()));
    out
}

/// CLOCKID (the clock's resolution in ns) and CLOCK_DATA (wall-clock and
/// `clockid` time of one instant, now), as perf writes them for `-k`.
pub fn clock_features(clockid: i32, res_ns: u64) -> Vec<Feature> {
    let wall_ns = crate::sys::gettimeofday_ns();
    let clockid_ns = crate::sys::clock_gettime_ns(clockid).unwrap_or(0);
    vec![
        Feature::ClockId(res_ns),
        Feature::ClockData(ff::ClockData {
            version: 1,
            clockid: clockid as u32,
            wall_ns,
            clockid_ns,
        }),
    ]
}

fn event_desc(events: &[EventInfo]) -> Feature {
    Feature::EventDesc(EventDescs {
        attr_size: prec_format::write::WRITE_ATTR_SIZE,
        events: events
            .iter()
            .map(|e| EventDesc {
                attr: e.attr.clone(),
                name: e.name.clone(),
                ids: e.ids.clone(),
                reserved_set: false,
            })
            .collect(),
    })
}

fn build_id_feature(ids: &[DsoBuildId]) -> Feature {
    Feature::BuildId(
        ids.iter()
            .map(|b| BuildIdEntry {
                misc: b.cpumode | MISC_BUILD_ID_SIZE,
                pid: -1,
                build_id: b.build_id.clone(),
                filename: b.filename.clone(),
            })
            .collect(),
    )
}

/// All features of a finished file-mode recording, encoded.
pub fn file_features(
    host: &[Feature],
    facts: &RecordingFacts,
    endian: Endian,
) -> Vec<(FeatureId, Vec<u8>)> {
    let mut all: Vec<Feature> = host.to_vec();
    all.push(Feature::Cmdline(facts.cmdline.clone()));
    all.push(event_desc(&facts.events));
    // perf writes it without samples too, as zeros.
    let (first, last) = facts.sample_time.unwrap_or((0, 0));
    all.push(Feature::SampleTime { first, last });
    if !facts.build_ids.is_empty() {
        all.push(build_id_feature(&facts.build_ids));
    }
    all.iter()
        .map(|f| (f.id(), ff::encode(f, endian)))
        .collect()
}

/// Features for the start of a pipe-mode stream (no BUILD_ID: not known
/// yet).
pub fn pipe_features(
    host: &[Feature],
    cmdline: &[String],
    events: &[EventInfo],
    endian: Endian,
) -> Vec<(FeatureId, Vec<u8>)> {
    // As perf 6.1 in pipe mode: no CACHE, and SAMPLE_TIME as zeros.
    let mut all: Vec<Feature> = host
        .iter()
        .filter(|f| f.id() != FeatureId::CACHE)
        .cloned()
        .collect();
    all.push(Feature::Cmdline(cmdline.to_vec()));
    all.push(event_desc(events));
    all.push(Feature::SampleTime { first: 0, last: 0 });
    all.sort_by_key(|f| f.id());
    all.iter()
        .map(|f| (f.id(), ff::encode(f, endian)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_features_encode_and_decode() {
        let host = host_features();
        assert!(host.iter().any(|f| matches!(f, Feature::Version(_))));
        for f in host.iter().filter(|f| !matches!(f, Feature::Raw { .. })) {
            let bytes = ff::encode(f, Endian::NATIVE);
            let back = ff::decode(f.id(), &bytes, 0, Endian::NATIVE).unwrap();
            assert_eq!(&back, f, "{:?}", f.id());
        }
    }
}
