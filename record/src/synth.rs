//! Synthesized side-band records (the "prologue" `perf record` writes before
//! the kernel's own records): COMM, FORK, MMAP (kernel), MMAP2 (from
//! `/proc/PID/maps`), FINISHED_ROUND and FINISHED_INIT.
//!
//! Every non-sample record ends with a `sample_id` trailer when the attr has
//! `sample_id_all`; perf zero-fills it for synthesized records (only its size
//! matters to readers), and so does prec. All records are native-endian and
//! 8-byte aligned.

use crate::proc_synth::{KernelText, MapEntry};

pub const PERF_RECORD_MMAP: u32 = 1;
pub const PERF_RECORD_COMM: u32 = 3;
pub const PERF_RECORD_EXIT: u32 = 4;
pub const PERF_RECORD_FORK: u32 = 7;
pub const PERF_RECORD_SAMPLE: u32 = 9;
pub const PERF_RECORD_MMAP2: u32 = 10;
pub const PERF_RECORD_FINISHED_ROUND: u32 = 68;
pub const PERF_RECORD_ID_INDEX: u32 = 69;
pub const PERF_RECORD_THREAD_MAP: u32 = 73;
pub const PERF_RECORD_CPU_MAP: u32 = 74;
pub const PERF_RECORD_FINISHED_INIT: u32 = 82;
pub const PERF_RECORD_EVENT_UPDATE: u32 = 78;

/// `PERF_EVENT_UPDATE__UNIT`, `__SCALE` and `__NAME`.
pub mod event_update {
    pub const UNIT: u64 = 0;
    pub const SCALE: u64 = 1;
    pub const NAME: u64 = 2;
}

pub const MISC_KERNEL: u16 = 1;
pub const MISC_USER: u16 = 2;
/// PERF_RECORD_NAMESPACES.
pub const PERF_RECORD_NAMESPACES: u32 = 16;
/// PERF_RECORD_CGROUP.
pub const PERF_RECORD_CGROUP: u32 = 19;

/// Builds records with a fixed-size zeroed sample_id trailer.
#[derive(Clone, Copy, Debug)]
pub struct Synth {
    /// Bytes of the sample_id trailer (0 without sample_id_all).
    pub trailer: usize,
    /// `--buildid-mmap`: maps are MMAP2 records with the file's build-id
    /// where it can be read (perf's `perf_record_mmap2__read_build_id`).
    pub buildid_mmap: bool,
}

/// `PERF_RECORD_MISC_MMAP_BUILD_ID`: an MMAP2 carries a build-id in place
/// of the device and inode.
pub const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

fn put_str_padded(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    // At least one NUL, then up to the next multiple of 8.
    out.push(0);
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

impl Synth {
    fn finish(&self, out: &mut Vec<u8>, type_: u32, misc: u16, body: Vec<u8>) {
        let size = 8 + body.len() + self.trailer;
        debug_assert!(size.is_multiple_of(8));
        let size = u16::try_from(size).unwrap_or(u16::MAX);
        out.extend_from_slice(&type_.to_ne_bytes());
        out.extend_from_slice(&misc.to_ne_bytes());
        out.extend_from_slice(&size.to_ne_bytes());
        out.extend_from_slice(&body);
        out.resize(out.len() + self.trailer, 0);
    }

    /// PERF_RECORD_COMM (`exec` sets PERF_RECORD_MISC_COMM_EXEC).
    pub fn comm(&self, out: &mut Vec<u8>, pid: i32, tid: i32, comm: &str, exec: bool) {
        let mut b = Vec::with_capacity(32);
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&tid.to_ne_bytes());
        let comm: String = comm.chars().take(15).collect();
        put_str_padded(&mut b, &comm);
        let misc = if exec { 1 << 13 } else { 0 };
        self.finish(out, PERF_RECORD_COMM, misc, b);
    }

    /// PERF_RECORD_NAMESPACES of a thread: (dev, inode) of its net, uts,
    /// ipc, pid, user, mnt and cgroup namespaces (zeros when unreadable).
    pub fn namespaces(&self, out: &mut Vec<u8>, pid: i32, tid: i32) {
        use std::os::unix::fs::MetadataExt;
        const NS: [&str; 7] = ["net", "uts", "ipc", "pid", "user", "mnt", "cgroup"];
        let mut b = Vec::with_capacity(16 + 16 * NS.len());
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&tid.to_ne_bytes());
        b.extend_from_slice(&(NS.len() as u64).to_ne_bytes());
        for ns in NS {
            let (dev, ino) = std::fs::metadata(format!("/proc/{pid}/task/{tid}/ns/{ns}"))
                .map_or((0, 0), |m| (m.dev(), m.ino()));
            b.extend_from_slice(&dev.to_ne_bytes());
            b.extend_from_slice(&ino.to_ne_bytes());
        }
        self.finish(out, PERF_RECORD_NAMESPACES, 0, b);
    }

    /// PERF_RECORD_CGROUP: a cgroup's id and path (`--all-cgroups`).
    pub fn cgroup(&self, out: &mut Vec<u8>, id: u64, path: &str) {
        let mut b = Vec::with_capacity(16 + path.len());
        b.extend_from_slice(&id.to_ne_bytes());
        put_str_padded(&mut b, path);
        self.finish(out, PERF_RECORD_CGROUP, 0, b);
    }

    /// PERF_RECORD_FORK.
    pub fn fork(&self, out: &mut Vec<u8>, pid: i32, ppid: i32, tid: i32, ptid: i32) {
        let mut b = Vec::with_capacity(24);
        for v in [pid, ppid, tid, ptid] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&0u64.to_ne_bytes());
        // perf's synthesized FORKs say PERF_RECORD_MISC_FORK_EXEC.
        self.finish(out, PERF_RECORD_FORK, 1 << 13, b);
    }

    /// perf's kernel map: MMAP `[kernel.kallsyms]_text`, pid −1, misc KERNEL.
    pub fn kernel_mmap(&self, out: &mut Vec<u8>, k: &KernelText) {
        if self.buildid_mmap {
            // perf: MMAP2 with pgoff the start, prot and flags 0, and the
            // build-id of /sys/kernel/notes.
            let map = MapEntry {
                start: k.text,
                end: k.etext.max(k.text),
                pgoff: k.text,
                path: "[kernel.kallsyms]_text".to_string(),
                ..MapEntry::default()
            };
            let id = crate::buildid::kernel_build_id().ok().flatten();
            self.mmap2_with(out, (-1, 0), &map, MISC_KERNEL, id.as_deref());
            return;
        }
        let mut b = Vec::with_capacity(64);
        b.extend_from_slice(&(-1i32).to_ne_bytes());
        b.extend_from_slice(&0i32.to_ne_bytes());
        b.extend_from_slice(&k.text.to_ne_bytes());
        b.extend_from_slice(&k.etext.saturating_sub(k.text).to_ne_bytes());
        b.extend_from_slice(&k.text.to_ne_bytes());
        put_str_padded(&mut b, "[kernel.kallsyms]_text");
        self.finish(out, PERF_RECORD_MMAP, MISC_KERNEL, b);
    }

    /// MMAP for a loaded kernel module (pid −1, misc KERNEL, pgoff 0,
    /// file name `[name]` as perf uses when it has no module path).
    pub fn module_mmap(&self, out: &mut Vec<u8>, name: &str, addr: u64, len: u64) {
        let mut b = Vec::with_capacity(64);
        b.extend_from_slice(&(-1i32).to_ne_bytes());
        b.extend_from_slice(&0i32.to_ne_bytes());
        b.extend_from_slice(&addr.to_ne_bytes());
        b.extend_from_slice(&len.to_ne_bytes());
        b.extend_from_slice(&0u64.to_ne_bytes());
        put_str_padded(&mut b, &format!("[{name}]"));
        self.finish(out, PERF_RECORD_MMAP, MISC_KERNEL, b);
    }

    /// MMAP2 for one mapping of `pid` (as perf's
    /// `perf_event__synthesize_mmap_events`).
    pub fn mmap2(&self, out: &mut Vec<u8>, pid: i32, tid: i32, m: &MapEntry) {
        self.mmap2_marked(out, pid, tid, m, 0);
    }

    /// [`Self::mmap2`] with more misc bits (PROC_MAP_PARSE_TIMEOUT).
    pub fn mmap2_marked(&self, out: &mut Vec<u8>, pid: i32, tid: i32, m: &MapEntry, misc: u16) {
        let id = if self.buildid_mmap && m.path.starts_with('/') {
            crate::buildid::file_build_id(std::path::Path::new(&m.path))
                .ok()
                .flatten()
        } else {
            None
        };
        self.mmap2_with(out, (pid, tid), m, MISC_USER | misc, id.as_deref());
    }

    fn mmap2_with(
        &self,
        out: &mut Vec<u8>,
        (pid, tid): (i32, i32),
        m: &MapEntry,
        misc: u16,
        build_id: Option<&[u8]>,
    ) {
        let mut b = Vec::with_capacity(128);
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&tid.to_ne_bytes());
        b.extend_from_slice(&m.start.to_ne_bytes());
        b.extend_from_slice(&m.len().to_ne_bytes());
        b.extend_from_slice(&m.pgoff.to_ne_bytes());
        let misc = match build_id.filter(|id| id.len() <= 20) {
            Some(id) => {
                // build_id_size, 3 reserved bytes, 20 bytes of id.
                let mut field = [0u8; 24];
                field[0] = id.len() as u8;
                field[4..4 + id.len()].copy_from_slice(id);
                b.extend_from_slice(&field);
                misc | MISC_MMAP_BUILD_ID
            }
            None => {
                b.extend_from_slice(&m.dev_major.to_ne_bytes());
                b.extend_from_slice(&m.dev_minor.to_ne_bytes());
                b.extend_from_slice(&m.inode.to_ne_bytes());
                b.extend_from_slice(&0u64.to_ne_bytes()); // ino_generation
                misc
            }
        };
        b.extend_from_slice(&m.prot.to_ne_bytes());
        b.extend_from_slice(&m.flags.to_ne_bytes());
        put_str_padded(&mut b, &m.path);
        self.finish(out, PERF_RECORD_MMAP2, misc, b);
    }
}

/// `PERF_RECORD_ID_INDEX`: (id, event index, cpu, tid) of every fd.
pub fn id_index(out: &mut Vec<u8>, entries: &[[u64; 4]]) {
    let mut b = Vec::with_capacity(8 + 32 * entries.len());
    b.extend_from_slice(&(entries.len() as u64).to_ne_bytes());
    for e in entries {
        for v in e {
            b.extend_from_slice(&v.to_ne_bytes());
        }
    }
    user_record(out, PERF_RECORD_ID_INDEX, &b);
}

/// `PERF_RECORD_EVENT_UPDATE` of `kind` for the event of sample id `id`,
/// sized as perf's `event_update_event__new` sizes it: the payload after
/// type and id, and zeros up to `payload + 40` rounded up to 8 bytes.
pub fn event_update(out: &mut Vec<u8>, kind: u64, id: u64, payload: &[u8]) {
    let size = (payload.len() + 40).next_multiple_of(8);
    let mut b = Vec::with_capacity(size - 8);
    b.extend_from_slice(&kind.to_ne_bytes());
    b.extend_from_slice(&id.to_ne_bytes());
    b.extend_from_slice(payload);
    b.resize(size - 8, 0);
    user_record(out, PERF_RECORD_EVENT_UPDATE, &b);
}

/// `PERF_RECORD_THREAD_MAP`: (pid, comm) entries, comm in 16 bytes.
pub fn thread_map(out: &mut Vec<u8>, threads: &[(i32, String)]) {
    let mut b = Vec::with_capacity(8 + 24 * threads.len());
    b.extend_from_slice(&(threads.len() as u64).to_ne_bytes());
    for (pid, comm) in threads {
        b.extend_from_slice(&i64::from(*pid).to_ne_bytes());
        let mut c = [0u8; 16];
        let n = comm.len().min(15);
        c[..n].copy_from_slice(&comm.as_bytes()[..n]);
        b.extend_from_slice(&c);
    }
    user_record(out, PERF_RECORD_THREAD_MAP, &b);
}

/// `PERF_RECORD_CPU_MAP` as perf 6.1 writes it: a range (type 2) when the
/// CPUs are contiguous, else a list (type 0).
pub fn cpu_map(out: &mut Vec<u8>, cpus: &[u32]) {
    let mut b = Vec::new();
    // (u32::MAX is CPU -1: perf lists it.)
    let contiguous =
        !cpus.is_empty() && !cpus.contains(&u32::MAX) && cpus.windows(2).all(|w| w[1] == w[0] + 1);
    if contiguous {
        b.extend_from_slice(&2u16.to_ne_bytes());
        b.push(0); // any_cpu
        b.push(0);
        b.extend_from_slice(&(cpus[0] as u16).to_ne_bytes());
        b.extend_from_slice(&(cpus[cpus.len() - 1] as u16).to_ne_bytes());
    } else {
        b.extend_from_slice(&0u16.to_ne_bytes());
        b.extend_from_slice(&(cpus.len() as u16).to_ne_bytes());
        for &c in cpus {
            b.extend_from_slice(&(c as u16).to_ne_bytes());
        }
    }
    b.resize(b.len().next_multiple_of(8), 0);
    user_record(out, PERF_RECORD_CPU_MAP, &b);
}

fn user_record(out: &mut Vec<u8>, type_: u32, body: &[u8]) {
    let size = u16::try_from(8 + body.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&type_.to_ne_bytes());
    out.extend_from_slice(&0u16.to_ne_bytes());
    out.extend_from_slice(&size.to_ne_bytes());
    out.extend_from_slice(body);
}

/// A bare 8-byte record (FINISHED_ROUND, FINISHED_INIT).
pub fn bare(out: &mut Vec<u8>, type_: u32) {
    out.extend_from_slice(&type_.to_ne_bytes());
    out.extend_from_slice(&0u16.to_ne_bytes());
    out.extend_from_slice(&8u16.to_ne_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_aligned_and_trailer_appended() {
        let s = Synth {
            trailer: 16,
            buildid_mmap: false,
        };
        let mut out = Vec::new();
        s.comm(&mut out, 1, 1, "perf-exec", false);
        assert_eq!(out.len() % 8, 0);
        assert_eq!(u16::from_ne_bytes([out[6], out[7]]) as usize, out.len());
        assert_eq!(out.len(), 8 + 8 + 16 + 16);
        let mut out = Vec::new();
        bare(&mut out, PERF_RECORD_FINISHED_ROUND);
        assert_eq!(out.len(), 8);
    }
}
