//! `--threads[=SPEC]`, perf record's parallel streaming mode: the output is
//! a directory, its header file `data` and one `data.N` file per ring (the
//! N-th CPU's), and perf shares the rings out among reading threads.
//!
//! SPEC is how perf groups the CPUs into threads: `cpu` (the default, a
//! thread per CPU), `core`, `package`, `numa`, or masks
//! `MAPS/AFFINITY[:MAPS/AFFINITY...]` (CPU lists: which CPUs' rings a
//! thread reads, and where it runs). Which file a ring's records go to does
//! not depend on it.

use std::io;

use crate::sys;

/// Which reading thread each ring belongs to: `threads[i]` for the ring of
/// `cpus[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadMasks {
    pub threads: Vec<usize>,
}

/// Groups `cpus` (the recorded CPUs, one ring each) by `spec` as perf's
/// `record__init_thread_masks` does; the error is perf's message.
pub fn thread_masks(spec: &str, cpus: &[u32]) -> Result<ThreadMasks, String> {
    let groups: Vec<Vec<u32>> = match spec {
        "" | "cpu" => cpus.iter().map(|&c| vec![c]).collect(),
        "core" => topology_groups(cpus, |c| {
            sysfs_cpus(&format!("cpu{c}/topology/core_cpus_list"))
                .or_else(|_| sysfs_cpus(&format!("cpu{c}/topology/thread_siblings_list")))
        }),
        "package" => topology_groups(cpus, |c| {
            sysfs_cpus(&format!("cpu{c}/topology/package_cpus_list"))
                .or_else(|_| sysfs_cpus(&format!("cpu{c}/topology/core_siblings_list")))
        }),
        "numa" => numa_groups(cpus),
        user => user_groups(user, cpus)?,
    };
    let mut threads = vec![usize::MAX; cpus.len()];
    let mut thread = 0;
    for group in groups {
        let mut used = false;
        for (i, c) in cpus.iter().enumerate() {
            if group.contains(c) && threads[i] == usize::MAX {
                threads[i] = thread;
                used = true;
            }
        }
        // perf drops a thread that would read no ring.
        if used {
            thread += 1;
        }
    }
    // A CPU no group names still has its ring read, by the first thread.
    for t in &mut threads {
        if *t == usize::MAX {
            *t = 0;
        }
    }
    Ok(ThreadMasks { threads })
}

fn sysfs_cpus(rel: &str) -> io::Result<Vec<u32>> {
    let text = std::fs::read_to_string(format!("/sys/devices/system/cpu/{rel}"))?;
    sys::parse_cpu_list(text.trim())
}

/// One group per distinct topology list, in the order of the CPUs.
fn topology_groups(cpus: &[u32], list: impl Fn(u32) -> io::Result<Vec<u32>>) -> Vec<Vec<u32>> {
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for &c in cpus {
        let group = list(c).unwrap_or_else(|_| vec![c]);
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

fn numa_groups(cpus: &[u32]) -> Vec<Vec<u32>> {
    let mut nodes: Vec<(u32, Vec<u32>)> = std::fs::read_dir("/sys/devices/system/node")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let n: u32 = name.strip_prefix("node")?.parse().ok()?;
                    let list = std::fs::read_to_string(e.path().join("cpulist")).ok()?;
                    Some((n, sys::parse_cpu_list(list.trim()).ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    if nodes.is_empty() {
        return vec![cpus.to_vec()];
    }
    nodes.sort();
    nodes.into_iter().map(|(_, cpus)| cpus).collect()
}

/// `MAPS/AFFINITY[:...]`: each thread's maps mask must be CPUs being
/// recorded, and no two threads may share one.
fn user_groups(spec: &str, cpus: &[u32]) -> Result<Vec<Vec<u32>>, String> {
    let invalid = || "Invalid thread maps or affinity specs".to_string();
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for part in spec.split(':') {
        let (maps, affinity) = part.split_once('/').ok_or_else(invalid)?;
        let maps = sys::parse_cpu_list(maps).map_err(|_| invalid())?;
        let affinity = sys::parse_cpu_list(affinity).map_err(|_| invalid())?;
        if maps.is_empty() || affinity.is_empty() {
            return Err(invalid());
        }
        let maps: Vec<u32> = maps.into_iter().filter(|c| cpus.contains(c)).collect();
        if maps.is_empty() {
            return Err("Failed to initialize maps thread mask".into());
        }
        if groups.iter().any(|g| g.iter().any(|c| maps.contains(c))) {
            return Err("Intersecting thread specs".into());
        }
        groups.push(maps);
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_spec_is_a_thread_per_cpu() {
        assert_eq!(
            thread_masks("cpu", &[0, 1, 2]).unwrap().threads,
            vec![0, 1, 2]
        );
    }

    #[test]
    fn user_spec_groups_cpus() {
        assert_eq!(
            thread_masks("0,2/0:1/1", &[0, 1, 2]).unwrap().threads,
            vec![0, 1, 0]
        );
        assert_eq!(
            thread_masks("0-2/0", &[0, 1, 2]).unwrap().threads,
            vec![0, 0, 0]
        );
        assert!(thread_masks("bogus", &[0, 1]).is_err());
        assert!(thread_masks("0/0:0/1", &[0, 1]).is_err());
        assert!(thread_masks("7/7", &[0, 1]).is_err());
    }
}
