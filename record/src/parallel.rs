//! `--threads[=SPEC]`, perf record's parallel streaming mode: the output is
//! a directory, its header file `data` and one `data.N` file per ring (the
//! N-th CPU's), and perf shares the rings out among reading threads.
//!
//! SPEC is how perf groups the CPUs into threads: `cpu` (the default, a
//! thread per CPU), `core`, `package`, `numa`, or masks
//! `MAPS/AFFINITY[:MAPS/AFFINITY...]` (CPU lists: which CPUs' rings a
//! thread reads, and where it runs). Which file a ring's records go to does
//! not depend on it, and prec reads every ring from one thread, so only
//! the masks are checked.

use crate::sys;

/// Checks `spec` against `cpus` (the recorded CPUs) as perf's
/// `record__init_thread_masks` does; the error is perf's message. The
/// topology specs (`cpu`, `core`, `package`, `numa`) always hold.
pub fn check_spec(spec: &str, cpus: &[u32]) -> Result<(), String> {
    match spec {
        "" | "cpu" | "core" | "package" | "numa" => Ok(()),
        masks => check_masks(masks, cpus),
    }
}

/// `MAPS/AFFINITY[:...]`: each thread's maps mask must be CPUs being
/// recorded, and no two threads may share one.
fn check_masks(spec: &str, cpus: &[u32]) -> Result<(), String> {
    let invalid = || "Invalid thread maps or affinity specs".to_string();
    let mut taken: Vec<u32> = Vec::new();
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
        if maps.iter().any(|c| taken.contains(c)) {
            return Err("Intersecting thread specs".into());
        }
        taken.extend(maps);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_checked_like_perf() {
        assert!(check_spec("cpu", &[0, 1, 2]).is_ok());
        assert!(check_spec("0,2/0:1/1", &[0, 1, 2]).is_ok());
        assert!(check_spec("0-2/0", &[0, 1, 2]).is_ok());
        assert!(check_spec("bogus", &[0, 1]).is_err());
        assert!(check_spec("0/0:0/1", &[0, 1]).is_err());
        assert!(check_spec("7/7", &[0, 1]).is_err());
    }
}
