//! System facts for perf.data feature sections, gathered the way perf 6.1
//! does (compare `perf report --header-only -I`):
//!
//! | feature | function |
//! |---|---|
//! | HOSTNAME / OSRELEASE / ARCH | [`uname_info`] (uname nodename, release, machine) |
//! | NRCPUS | [`nr_cpus`] (avail = max present CPU + 1, online = online count) |
//! | CPUDESC | [`cpu_desc`] (first `model name` of /proc/cpuinfo, spaces squeezed) |
//! | CPUID | [`cpuid`] (x86: `vendor,family,model,stepping`, e.g. `AuthenticAMD,25,1,1`) |
//! | TOTAL_MEM | [`total_mem_kb`] (MemTotal of /proc/meminfo, kB) |
//! | CPU_TOPOLOGY | [`cpu_topology`] |
//! | NUMA_TOPOLOGY | [`numa_nodes`] |
//! | CACHE | [`caches`] |
//! | PMU_MAPPINGS | [`pmu_mappings`] |
//! | MEM_TOPOLOGY | [`memory_topology`] |
//!
//! plus [`max_sample_rate`], [`perf_event_paranoid`], [`perf_event_mlock_kb`].
#![forbid(unsafe_code)]

use std::fs;
use std::io;
use std::path::Path;

use crate::sys::parse_cpu_list;

fn read_trim(p: impl AsRef<Path>) -> io::Result<String> {
    Ok(fs::read_to_string(p)?.trim().to_string())
}

fn read_num<T: std::str::FromStr>(p: impl AsRef<Path>) -> io::Result<T> {
    let p = p.as_ref();
    let s = read_trim(p)?;
    s.parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: bad number '{s}'", p.display()),
        )
    })
}

/// Hostname, OS release and architecture (uname).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnameInfo {
    pub hostname: String,
    pub os_release: String,
    pub arch: String,
}

/// `uname()` nodename / release / machine.
pub fn uname_info() -> io::Result<UnameInfo> {
    let u = crate::sys::uname()?;
    Ok(UnameInfo {
        hostname: u.nodename,
        os_release: u.release,
        arch: u.machine,
    })
}

/// NRCPUS feature values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NrCpus {
    /// `nr_cpus_avail`: highest present CPU + 1.
    pub available: u32,
    /// `nr_cpus_online`.
    pub online: u32,
}

/// NRCPUS from `/sys/devices/system/cpu/{present,online}`.
pub fn nr_cpus() -> io::Result<NrCpus> {
    let present = parse_cpu_list(&fs::read_to_string("/sys/devices/system/cpu/present")?)?;
    let online = crate::sys::online_cpus()?;
    Ok(NrCpus {
        available: present.iter().max().map_or(0, |m| m + 1),
        online: online.len() as u32,
    })
}

fn cpuinfo_field<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// CPUDESC from cpuinfo text: the first `model name` (x86) / `Processor` /
/// `cpu model` / `cpu` line, whitespace runs squeezed to one space.
pub fn cpu_desc_from(cpuinfo: &str) -> Option<String> {
    let v = ["model name", "Processor", "cpu model", "cpu"]
        .iter()
        .find_map(|k| cpuinfo_field(cpuinfo, k))?;
    Some(v.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// CPUDESC of this machine.
pub fn cpu_desc() -> io::Result<Option<String>> {
    Ok(cpu_desc_from(&fs::read_to_string("/proc/cpuinfo")?))
}

/// CPUID from cpuinfo text, x86 format `vendor,family,model,stepping`
/// (decimal; cpuinfo already reports the combined family/model).
/// Non-x86 cpuinfo gives `None`.
pub fn cpuid_from(cpuinfo: &str) -> Option<String> {
    let vendor = cpuinfo_field(cpuinfo, "vendor_id")?;
    let family = cpuinfo_field(cpuinfo, "cpu family")?;
    let model = cpuinfo_field(cpuinfo, "model")?;
    let stepping = cpuinfo_field(cpuinfo, "stepping")?;
    Some(format!("{vendor},{family},{model},{stepping}"))
}

/// CPUID of this machine (x86 only; `None` elsewhere).
pub fn cpuid() -> io::Result<Option<String>> {
    Ok(cpuid_from(&fs::read_to_string("/proc/cpuinfo")?))
}

/// `MemTotal` from /proc/meminfo-style text, in kB.
pub fn meminfo_kb(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        // "MemTotal:  123 kB" or, for node meminfo, "Node 0 MemTotal: 123 kB"
        let (k, v) = l.split_once(':')?;
        if k.split_whitespace().last()? != key {
            return None;
        }
        v.split_whitespace().next()?.parse().ok()
    })
}

/// TOTAL_MEM: MemTotal in kB.
pub fn total_mem_kb() -> io::Result<u64> {
    meminfo_kb(&fs::read_to_string("/proc/meminfo")?, "MemTotal")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no MemTotal in /proc/meminfo"))
}

/// Per-CPU ids of the CPU_TOPOLOGY feature (−1 when not readable, e.g. an
/// offline CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuIds {
    pub core_id: i32,
    pub socket_id: i32,
    pub die_id: i32,
}

/// CPU_TOPOLOGY: deduplicated sibling lists in first-seen CPU order, then
/// per-CPU ids for CPUs 0..nr_cpus_avail.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuTopology {
    /// "sibling sockets": `package_cpus_list` (or `core_siblings_list`).
    pub core_siblings: Vec<String>,
    /// "sibling dies": `die_cpus_list` (empty when unsupported).
    pub die_siblings: Vec<String>,
    /// "sibling threads": `core_cpus_list` (or `thread_siblings_list`).
    pub thread_siblings: Vec<String>,
    pub cpus: Vec<CpuIds>,
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// CPU_TOPOLOGY from `/sys/devices/system/cpu/cpuN/topology`.
pub fn cpu_topology() -> io::Result<CpuTopology> {
    let nr = nr_cpus()?.available;
    let mut t = CpuTopology::default();
    for cpu in 0..nr {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
        let first = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| read_trim(format!("{dir}/{n}")).ok())
        };
        if let Some(s) = first(&["package_cpus_list", "core_siblings_list"]) {
            push_unique(&mut t.core_siblings, s);
        }
        if let Some(s) = first(&["die_cpus_list"]) {
            push_unique(&mut t.die_siblings, s);
        }
        if let Some(s) = first(&["core_cpus_list", "thread_siblings_list"]) {
            push_unique(&mut t.thread_siblings, s);
        }
        let id = |n: &str| read_num::<i32>(format!("{dir}/{n}")).unwrap_or(-1);
        t.cpus.push(CpuIds {
            core_id: id("core_id"),
            socket_id: id("physical_package_id"),
            die_id: id("die_id"),
        });
    }
    Ok(t)
}

/// One NUMA node of the NUMA_TOPOLOGY feature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaNode {
    pub node: u32,
    /// MemTotal, kB.
    pub mem_total_kb: u64,
    /// MemFree, kB.
    pub mem_free_kb: u64,
    /// CPU list as in sysfs, e.g. `0-1`.
    pub cpus: String,
}

/// NUMA_TOPOLOGY from `/sys/devices/system/node/online` and
/// `nodeN/{meminfo,cpulist}`. Empty if the node directory does not exist.
pub fn numa_nodes() -> io::Result<Vec<NumaNode>> {
    let online = match fs::read_to_string("/sys/devices/system/node/online") {
        Ok(s) => parse_cpu_list(&s)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for node in online {
        let dir = format!("/sys/devices/system/node/node{node}");
        let mi = fs::read_to_string(format!("{dir}/meminfo"))?;
        out.push(NumaNode {
            node,
            mem_total_kb: meminfo_kb(&mi, "MemTotal").unwrap_or(0),
            mem_free_kb: meminfo_kb(&mi, "MemFree").unwrap_or(0),
            cpus: read_trim(format!("{dir}/cpulist"))?,
        });
    }
    Ok(out)
}

/// One entry of the CACHE feature (`struct cpu_cache_level`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheLevel {
    pub level: u32,
    pub line_size: u32,
    pub sets: u32,
    pub ways: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub type_: String,
    /// As in sysfs, e.g. `32K`.
    pub size: String,
    /// `shared_cpu_list`, e.g. `0-1`.
    pub map: String,
}

/// CACHE: `/sys/devices/system/cpu/cpuN/cache/indexM` for all CPUs,
/// deduplicated, ordered by level (stable: CPU order, then index, within a
/// level) — the order perf 6.1 prints here (`L1 Data [0]`,
/// `L1 Instruction [0]`, `L1 Data [1]`, ..., L2 ..., L3).
pub fn caches() -> io::Result<Vec<CacheLevel>> {
    let nr = nr_cpus()?.available;
    let mut out: Vec<CacheLevel> = Vec::new();
    for cpu in 0..nr {
        for idx in 0..16 {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cache/index{idx}");
            let Ok(level) = read_num::<u32>(format!("{dir}/level")) else {
                break;
            };
            let num = |n: &str| read_num::<u32>(format!("{dir}/{n}")).unwrap_or(0);
            let c = CacheLevel {
                level,
                line_size: num("coherency_line_size"),
                sets: num("number_of_sets"),
                ways: num("ways_of_associativity"),
                type_: read_trim(format!("{dir}/type")).unwrap_or_default(),
                size: read_trim(format!("{dir}/size")).unwrap_or_default(),
                map: read_trim(format!("{dir}/shared_cpu_list")).unwrap_or_default(),
            };
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out.sort_by_key(|c| c.level);
    Ok(out)
}

/// PMU_MAPPINGS: (type, name) for each `/sys/bus/event_source/devices/*/type`
/// in directory order (perf 6.1 printed `software = 1, uprobe = 8,
/// breakpoint = 5, tracepoint = 2, msr = 9` here — readdir order).
pub fn pmu_mappings() -> io::Result<Vec<(u32, String)>> {
    let mut out = Vec::new();
    for e in fs::read_dir("/sys/bus/event_source/devices")? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Ok(t) = read_num::<u32>(e.path().join("type")) {
            out.push((t, name));
        }
    }
    Ok(out)
}

/// One node of the MEM_TOPOLOGY feature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryNode {
    pub node: u64,
    /// Bytes (number of memory blocks × block size).
    pub size: u64,
    /// Indexes of the `memoryN` blocks of the node, ascending.
    pub blocks: Vec<u64>,
}

/// MEM_TOPOLOGY: (block size in bytes, nodes) from
/// `/sys/devices/system/memory/block_size_bytes` (hex) and the `memoryN`
/// entries of `/sys/devices/system/node/nodeN`.
pub fn memory_topology() -> io::Result<(u64, Vec<MemoryNode>)> {
    let bs = read_trim("/sys/devices/system/memory/block_size_bytes")?;
    let block_size = u64::from_str_radix(&bs, 16).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad block_size_bytes '{bs}'"),
        )
    })?;
    let mut nodes = Vec::new();
    for e in fs::read_dir("/sys/devices/system/node")? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(node) = name
            .strip_prefix("node")
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        let mut blocks: Vec<u64> = fs::read_dir(e.path())?
            .filter_map(|b| b.ok())
            .filter_map(|b| b.file_name().to_str()?.strip_prefix("memory")?.parse().ok())
            .collect();
        blocks.sort_unstable();
        nodes.push(MemoryNode {
            node,
            size: blocks.len() as u64 * block_size,
            blocks,
        });
    }
    nodes.sort_by_key(|n| n.node);
    Ok((block_size, nodes))
}

/// `/proc/sys/kernel/perf_event_max_sample_rate`.
pub fn max_sample_rate() -> io::Result<u64> {
    read_num("/proc/sys/kernel/perf_event_max_sample_rate")
}

/// `/proc/sys/kernel/perf_event_paranoid`.
pub fn perf_event_paranoid() -> io::Result<i32> {
    read_num("/proc/sys/kernel/perf_event_paranoid")
}

/// `/proc/sys/kernel/perf_event_mlock_kb`.
pub fn perf_event_mlock_kb() -> io::Result<u64> {
    read_num("/proc/sys/kernel/perf_event_mlock_kb")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_parsing() {
        let ci = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD  EPYC   7R13\nstepping\t: 1\n";
        assert_eq!(cpuid_from(ci).as_deref(), Some("AuthenticAMD,25,1,1"));
        assert_eq!(cpu_desc_from(ci).as_deref(), Some("AMD EPYC 7R13"));
        assert_eq!(
            meminfo_kb(
                "Node 0 MemTotal:  4810528 kB\nNode 0 MemFree: 12 kB\n",
                "MemFree"
            ),
            Some(12)
        );
    }

    #[test]
    fn this_machine() {
        let u = uname_info().unwrap();
        assert!(!u.hostname.is_empty() && !u.os_release.is_empty());
        assert_eq!(u.arch, std::env::consts::ARCH);
        let n = nr_cpus().unwrap();
        assert!(n.online >= 1 && n.available >= n.online);
        assert!(total_mem_kb().unwrap() > 0);
        let t = cpu_topology().unwrap();
        assert_eq!(t.cpus.len(), n.available as usize);
        assert!(!t.thread_siblings.is_empty());
        let c = caches().unwrap();
        assert!(c.windows(2).all(|w| w[0].level <= w[1].level));
        let p = pmu_mappings().unwrap();
        assert!(p.iter().any(|(t, n)| *t == 1 && n == "software"));
        numa_nodes().unwrap();
        assert!(max_sample_rate().unwrap() > 0);
        perf_event_paranoid().unwrap();
        perf_event_mlock_kb().unwrap();
        if cfg!(target_arch = "x86_64") {
            assert!(cpuid().unwrap().is_some());
        }
    }
}
