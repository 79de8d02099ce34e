//! The thread and process timeline: perf 6.1's `struct machine` for the host.
//!
//! Records are applied in delivery order ([`prec_format::PerfFile::ordered_records`]),
//! so a sample resolved right after the records before it sees the state at
//! its time. The rules are perf's (`util/machine.c`, `util/thread.c`):
//!
//! * A thread unknown so far is created on first sight with comm `:TID`
//!   (not "set": a fork does not pass it on). A thread whose pid differs
//!   from its tid shares the maps of its process leader, created as needed.
//! * COMM renames the thread (an exec COMM does not drop the maps; the new
//!   image's MMAPs evict the old ones they overlap). The first COMM of a
//!   thread still named `:TID` overrides that comm object in place, so perf
//!   report shows the thread's samples taken before it under the new name
//!   (perf script, printing as it goes, shows `:TID`): see
//!   [`Machine::late_names`].
//! * FORK drops any thread already using the child tid, creates the child,
//!   gives it the parent's comm when the parent's comm was set, and for a new
//!   process copies the parent's maps (not for synthesized FORKs flagged
//!   `PERF_RECORD_MISC_FORK_EXEC`).
//! * EXIT only marks the thread; later samples still find it (perf 6.1).
//! * MMAP/MMAP2 with kernel cpumode add the kernel map (`[kernel.kallsyms]…`,
//!   extending to the end of the address space when the record says so) or a
//!   module; others go into the process's maps.
//! * Thread 0 is `swapper` (perf's idle thread).
//!
//! Strings (comms) are interned into [`CommId`]s so that samples carry
//! integers only.

use rustc_hash::FxHashMap as HashMap;

use prec_format::constants::misc;
use prec_format::record::{Mmap, MmapFileId};

use crate::maps::{is_anon_memory, is_no_dso_memory, is_vdso, DsoId, DsoKind, Dsos, Map, Maps};

/// `PERF_RECORD_MISC_FORK_EXEC`: perf's private flag on synthesized FORKs.
const MISC_FORK_EXEC: u16 = 1 << 13;
/// `PERF_RECORD_MISC_MMAP_DATA`.
const MISC_MMAP_DATA: u16 = misc::MMAP_DATA;
/// `MAP_HUGETLB`.
const MAP_HUGETLB: u32 = 0x40000;
/// `PROT_EXEC`.
const PROT_EXEC: u32 = 4;
/// `MAP_SHARED`.
const MAP_SHARED: u32 = 1;

/// Handle of an interned comm string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommId(pub u32);

/// Handle of a thread object (a tid reused after FORK gets a new object).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId(pub u32);

/// Handle of an address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MapsId(pub u32);

/// One thread.
#[derive(Clone, Debug)]
pub struct Thread {
    pub pid: i32,
    pub tid: i32,
    pub ppid: i32,
    /// Current comm.
    pub comm: CommId,
    /// Whether a COMM (or fork from a named parent) set the comm.
    pub comm_set: bool,
    pub maps: MapsId,
    pub exited: bool,
    /// Whether a sample was resolved while the comm was still `:TID`.
    placeholder_sampled: bool,
}

/// String interner for comms.
#[derive(Debug, Default)]
pub struct Comms {
    names: Vec<String>,
    by_name: HashMap<String, CommId>,
}

impl Comms {
    /// Interns `name`.
    pub fn intern(&mut self, name: &str) -> CommId {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let id = CommId(self.names.len() as u32);
        self.names.push(name.to_string());
        self.by_name.insert(name.to_string(), id);
        id
    }

    /// The string of a handle.
    pub fn get(&self, id: CommId) -> &str {
        self.names.get(id.0 as usize).map_or("", String::as_str)
    }

    /// How many comms there are (handles are `0..len`).
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Where a sample address landed.
#[derive(Clone, Copy, Debug)]
pub struct Location {
    pub thread: ThreadId,
    /// Comm of the thread at the sample's time.
    pub comm: CommId,
    /// perf's level: `k` kernel, `.` user, `H` hypervisor/unknown, `g`/`u` guest.
    pub level: u8,
    /// The map hit, if any.
    pub map: Option<Map>,
    /// perf's `al->addr`: `map.map_ip(ip)`, or `ip` without a map.
    pub addr: u64,
}

/// The host machine's threads, address spaces and DSOs.
#[derive(Debug)]
pub struct Machine {
    threads: Vec<Thread>,
    by_tid: HashMap<i32, ThreadId>,
    maps: Vec<Maps>,
    kernel: Maps,
    pub dsos: Dsos,
    pub comms: Comms,
    /// Whether the kernel map was seen.
    pub has_kernel_map: bool,
    /// Whether the kernel's symbols were loaded (see
    /// [`Self::fixup_kernel_map`]).
    kernel_symbols_loaded: bool,
    /// Changes each time a kernel map changes after it was first set.
    pub kernel_epoch: u32,
    /// perf's `ref_reloc_sym`: the kernel MMAP's name suffix (`_text`) and
    /// that symbol's address when recorded (the record's pgoff), to
    /// relocate kernel symbols of another boot (KASLR).
    pub kernel_ref: Option<(String, u64)>,
    /// Threads whose `:TID` comm a sample saw before their first COMM
    /// named them, with that name (see [`Self::late_names`]).
    late_names: Vec<(ThreadId, CommId)>,
    /// Names to give such threads' samples from the start.
    known_late_names: HashMap<ThreadId, CommId>,
}

impl Default for Machine {
    fn default() -> Self {
        Self::new()
    }
}

impl Machine {
    /// A machine with only the idle thread (`swapper`, tid 0).
    pub fn new() -> Self {
        let mut m = Machine {
            threads: Vec::new(),
            by_tid: HashMap::default(),
            maps: Vec::new(),
            kernel: Maps::new(),
            dsos: Dsos::default(),
            comms: Comms::default(),
            has_kernel_map: false,
            kernel_symbols_loaded: false,
            kernel_epoch: 0,
            kernel_ref: None,
            late_names: Vec::new(),
            known_late_names: HashMap::default(),
        };
        let idle = m.findnew(0, 0);
        let swapper = m.comms.intern("swapper");
        let t = m.thread_mut(idle);
        t.comm = swapper;
        t.comm_set = true;
        m
    }

    /// A thread by handle.
    pub fn thread(&self, id: ThreadId) -> &Thread {
        &self.threads[id.0 as usize]
    }

    fn thread_mut(&mut self, id: ThreadId) -> &mut Thread {
        &mut self.threads[id.0 as usize]
    }

    /// The comm string of a thread's current comm.
    pub fn thread_comm(&self, id: ThreadId) -> &str {
        self.comms.get(self.thread(id).comm)
    }

    /// Live thread using `tid`.
    pub fn find(&self, tid: i32) -> Option<ThreadId> {
        self.by_tid.get(&tid).copied()
    }

    fn new_maps(&mut self) -> MapsId {
        self.maps.push(Maps::new());
        MapsId(self.maps.len() as u32 - 1)
    }

    /// perf's `machine__findnew_thread`.
    pub fn findnew(&mut self, pid: i32, tid: i32) -> ThreadId {
        if let Some(id) = self.find(tid) {
            self.update_pid(id, pid);
            return id;
        }
        let id = ThreadId(self.threads.len() as u32);
        let comm = self.comms.intern(&format!(":{tid}"));
        self.threads.push(Thread {
            pid,
            tid,
            ppid: -1,
            comm,
            comm_set: false,
            maps: MapsId(u32::MAX),
            exited: false,
            placeholder_sampled: false,
        });
        self.by_tid.insert(tid, id);
        // thread__init_maps
        let maps = if pid == tid || pid == -1 {
            self.new_maps()
        } else {
            let leader = self.findnew(pid, pid);
            self.thread(leader).maps
        };
        self.thread_mut(id).maps = maps;
        id
    }

    /// perf's `machine__update_thread_pid`.
    fn update_pid(&mut self, id: ThreadId, pid: i32) {
        let th = self.thread(id);
        if pid == th.pid || pid == -1 || th.pid != -1 {
            return;
        }
        let tid = th.tid;
        self.thread_mut(id).pid = pid;
        if pid == tid {
            return;
        }
        let leader = self.findnew(pid, pid);
        let maps = self.thread(leader).maps;
        self.thread_mut(id).maps = maps;
    }

    fn remove(&mut self, tid: i32) {
        self.by_tid.remove(&tid);
    }

    /// COMM record.
    pub fn comm(&mut self, pid: i32, tid: i32, comm: &[u8]) {
        let id = self.findnew(pid, tid);
        let c = self.comms.intern(&String::from_utf8_lossy(comm));
        let t = self.thread_mut(id);
        let late = !t.comm_set && t.placeholder_sampled;
        t.comm = c;
        t.comm_set = true;
        if late {
            self.late_names.push((id, c));
        }
    }

    /// perf's `comm__override`: a thread's first COMM renames the `:TID`
    /// comm object its earlier samples' entries point to, so perf report
    /// shows those samples under the later name. Records cannot be read
    /// ahead, so a report reads the file again when this is not empty,
    /// with these names given to [`Self::name_late_threads`] first.
    /// (Threads are numbered in creation order, the same on both reads.)
    pub fn late_names(&self) -> Vec<(ThreadId, String)> {
        self.late_names
            .iter()
            .map(|&(t, c)| (t, self.comms.get(c).to_string()))
            .collect()
    }

    /// Samples of these threads taken while they are still `:TID` resolve
    /// to the given comm (from [`Self::late_names`] of a first read).
    pub fn name_late_threads(&mut self, names: &[(ThreadId, String)]) {
        for (t, name) in names {
            let c = self.comms.intern(name);
            self.known_late_names.insert(*t, c);
        }
    }

    /// FORK record (`misc` is the record header's).
    pub fn fork(&mut self, pid: i32, tid: i32, ppid: i32, ptid: i32, misc: u16) {
        let existing = self.find(tid);
        let mut parent = self.findnew(ppid, ptid);
        if self.thread(parent).pid != ppid {
            self.remove(ptid);
            parent = self.findnew(ppid, ptid);
        }
        if existing.is_some() {
            self.remove(tid);
        }
        let child = self.findnew(pid, tid);
        let p = self.thread(parent).clone();
        {
            let c = self.thread_mut(child);
            if p.comm_set {
                c.comm = p.comm;
                c.comm_set = true;
            }
            c.ppid = p.tid;
        }
        let c = self.thread(child);
        if c.pid != p.pid && c.maps != p.maps && misc & MISC_FORK_EXEC == 0 {
            let copy = self.maps[p.maps.0 as usize].clone();
            let dst = c.maps.0 as usize;
            // maps__clone appends the parent's maps to the child's.
            for m in copy.iter() {
                self.maps[dst].insert(*m);
            }
        }
    }

    /// EXIT record.
    pub fn exit(&mut self, tid: i32) {
        if let Some(id) = self.find(tid) {
            self.thread_mut(id).exited = true;
        }
    }

    /// MMAP or MMAP2 record, with the record header's cpumode and misc bits.
    pub fn mmap(&mut self, cpumode: u16, misc_bits: u16, record: &Mmap<'_>) {
        let (pid, tid, start, len, pgoff) = (
            record.pid as i32,
            record.tid as i32,
            record.addr,
            record.len,
            record.pgoff,
        );
        // MMAP (not MMAP2) records carry no protection: perf takes them as
        // executable unless flagged as data.
        let (prot, build_id, ino) = match record.file_id {
            Some(MmapFileId::BuildId(b)) => (Some(record.prot), Some(b), 0),
            Some(MmapFileId::Inode { ino, .. }) => (Some(record.prot), None, ino),
            None => (None, None, 0),
        };
        let flags = record.flags;
        let name = String::from_utf8_lossy(record.filename);
        if cpumode == misc::KERNEL || cpumode == misc::GUEST_KERNEL {
            self.kernel_mmap(&name, start, len, pgoff, build_id);
            return;
        }
        let id = self.findnew(pid, tid);
        let prot = prot.unwrap_or(if misc_bits & MISC_MMAP_DATA == 0 {
            PROT_EXEC
        } else {
            0
        });
        let anon = is_anon_memory(&name) || flags & MAP_HUGETLB != 0;
        let no_dso = is_no_dso_memory(&name);
        let mut pgoff = pgoff;
        let dso = if (anon || no_dso) && prot & PROT_EXEC != 0 {
            let pid = self.thread(id).pid;
            self.dsos
                .findnew(&format!("/tmp/perf-{pid}.map"), DsoKind::Jit)
        } else if is_vdso(&name) {
            pgoff = 0;
            self.dsos.findnew(&name, DsoKind::Vdso)
        } else if anon || no_dso {
            self.dsos.findnew(&name, DsoKind::NoFile)
        } else {
            self.dsos.findnew(&name, DsoKind::User)
        };
        if let Some(b) = build_id {
            self.dsos.set_build_id(dso, b);
        }
        let map = Map {
            start,
            end: start.wrapping_add(len),
            pgoff,
            dso,
            identity: anon || no_dso,
            access: (prot & 7) as u8
                | if flags & MAP_SHARED != 0 {
                    Map::SHARED
                } else {
                    0
                },
            ino,
        };
        let maps = self.thread(id).maps;
        self.maps[maps.0 as usize].insert(map);
    }

    fn kernel_mmap(
        &mut self,
        name: &str,
        start: u64,
        len: u64,
        pgoff: u64,
        build_id: Option<&[u8]>,
    ) {
        let is_kernel = name.starts_with("[kernel.kallsyms]") || name.starts_with("[guest.kernel");
        if name.starts_with('/') || (!is_kernel && name.starts_with('[')) {
            let dso = self.dsos.findnew(name, DsoKind::Module);
            if let Some(b) = build_id {
                self.dsos.set_build_id(dso, b);
            }
            self.kernel.insert(Map {
                start,
                end: start.wrapping_add(len),
                pgoff: 0,
                dso,
                identity: false,
                access: 0,
                ino: 0,
            });
        } else if is_kernel {
            let dso = self.dsos.findnew("[kernel.kallsyms]", DsoKind::Kernel);
            if let Some(b) = build_id {
                self.dsos.set_build_id(dso, b);
            }
            // machine__update_kernel_mmap: remove the old kernel map, set
            // start/end (a zero-sized record means "to the end"), reinsert.
            let old: Vec<u64> = self
                .kernel
                .iter()
                .filter(|m| m.dso == dso)
                .map(|m| m.start)
                .collect();
            for s in old {
                self.kernel.remove(s);
            }
            let mut end = start.wrapping_add(len);
            if (start == 0 && len == 0) || end < start {
                end = u64::MAX;
            }
            self.kernel.insert(Map {
                start,
                end,
                pgoff: 0,
                dso,
                identity: true,
                access: 0,
                ino: 0,
            });
            self.has_kernel_map = true;
            // A zero pgoff means addresses were hidden when recording.
            let ref_name = name.split_once(']').map_or("", |(_, r)| r);
            if pgoff != 0 && !ref_name.is_empty() {
                self.kernel_ref = Some((ref_name.to_string(), pgoff));
            }
        }
    }

    /// Whether the kernel's symbols still have to be loaded when `map`
    /// (from [`Self::resolve`]) is hit: perf loads a DSO on the first hit
    /// of one of its maps.
    pub fn kernel_symbols_pending(&self, map: &Map) -> bool {
        !self.kernel_symbols_loaded && self.dsos.get(map.dso).kind == DsoKind::Kernel
    }

    /// perf's `map__fixup_start` + `map__fixup_end` after loading the
    /// kernel's symbols from kallsyms: the kernel map then spans its
    /// symbols, `[start, end)`, not just the recorded `_text`..`_etext`, so
    /// init code (`start_kernel` in the idle task's stack) resolves too.
    /// `None`: the symbols could not be loaded, the map stays.
    pub fn kernel_symbols_loaded(&mut self, span: Option<(u64, u64)>) {
        self.kernel_symbols_loaded = true;
        let Some((start, end)) = span.filter(|(s, e)| s < e) else {
            return;
        };
        let Some(map) = self
            .kernel
            .iter()
            .find(|m| self.dsos.get(m.dso).kind == DsoKind::Kernel)
            .copied()
        else {
            return;
        };
        self.kernel.remove(map.start);
        self.kernel.insert(Map { start, end, ..map });
        self.kernel_epoch += 1;
    }

    /// The lowest start of the maps of `dso` in the user address space of
    /// thread `tid` (maps left from before an exec included, as perf keeps
    /// them).
    pub fn lowest_map_start(&mut self, pid: i32, tid: i32, dso: DsoId) -> Option<u64> {
        let thread = self.findnew(pid, tid);
        self.maps[self.thread(thread).maps.0 as usize].lowest_start(dso)
    }

    /// Resolves a sample address like perf's `machine__resolve` +
    /// `thread__find_map`.
    pub fn resolve(&mut self, pid: i32, tid: i32, cpumode: u16, ip: u64) -> Location {
        let thread = self.findnew(pid, tid);
        let comm = self.sample_comm(thread);
        let t = self.thread(thread);
        let (level, maps) = match cpumode {
            misc::KERNEL => (b'k', Some(&self.kernel)),
            misc::USER => (b'.', Some(&self.maps[t.maps.0 as usize])),
            _ => (b'H', None),
        };
        let map = maps.and_then(|m| m.find(ip)).copied();
        let addr = map.map_or(ip, |m| m.map_ip(ip));
        Location {
            thread,
            comm,
            level,
            map,
            addr,
        }
    }

    /// The comm a sample of `thread` is reported under now.
    fn sample_comm(&mut self, thread: ThreadId) -> CommId {
        let t = &mut self.threads[thread.0 as usize];
        if t.comm_set {
            return t.comm;
        }
        if let Some(&late) = self.known_late_names.get(&thread) {
            return late;
        }
        t.placeholder_sampled = true;
        t.comm
    }

    /// Resolves a branch-stack address like perf's
    /// `thread__find_cpumode_addr_location`: the thread's maps (level `.`),
    /// then the kernel's (`k`); guest modes are not modelled, so a miss is
    /// `H` with no map and the raw address.
    pub fn resolve_branch(&self, thread: ThreadId, ip: u64) -> (u8, Option<Map>, u64) {
        let t = self.thread(thread);
        if let Some(m) = self.maps[t.maps.0 as usize].find(ip) {
            return (b'.', Some(*m), m.map_ip(ip));
        }
        if let Some(m) = self.kernel.find(ip) {
            return (b'k', Some(*m), m.map_ip(ip));
        }
        (b'H', None, ip)
    }

    /// The DSO handle of a map's DSO.
    pub fn dso_of(&self, map: &Map) -> DsoId {
        map.dso
    }
}

/// `perf report --tasks` (`--mmaps` with `with_maps`): every thread of the
/// recording as a process tree, `pid tid ppid |comm` indented by depth,
/// each followed by its process's maps when asked. The order is perf
/// 6.1's: its thread table (tid modulo 256, then tid), each thread placed
/// under its parent the first time the parent's chain is walked. Returns
/// the error that stopped the reading, if any (the tasks read before it
/// are printed).
pub fn print_tasks(
    file: &prec_format::PerfFile<'_>,
    out: &mut dyn std::io::Write,
    with_maps: bool,
) -> std::io::Result<Option<prec_format::Error>> {
    use prec_format::record::Record;
    let mut machine = Machine::new();
    let mut error = None;
    for r in file.ordered_records() {
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        if !r.header.kind.is_kernel() {
            continue;
        }
        let attr = file.attr_index(&r).map(|i| &file.attrs()[i].attr);
        match r.parse(attr) {
            Ok(Record::Comm { pid, tid, comm, .. }) => machine.comm(pid as i32, tid as i32, comm),
            Ok(Record::Fork(t)) => machine.fork(
                t.pid as i32,
                t.tid as i32,
                t.ppid as i32,
                t.ptid as i32,
                r.header.misc,
            ),
            Ok(Record::Exit(t)) => machine.exit(t.tid as i32),
            // perf's tasks mode reads only these (tasks_setup): a thread
            // known from samples alone is not listed, and one known from
            // its maps only with --mmaps.
            Ok(Record::Mmap(m) | Record::Mmap2(m)) if with_maps => {
                machine.mmap(r.cpumode(), r.header.misc, &m)
            }
            _ => {}
        }
    }
    machine.write_tasks(out, with_maps)?;
    Ok(error)
}

impl Machine {
    fn write_tasks(&self, out: &mut dyn std::io::Write, with_maps: bool) -> std::io::Result<()> {
        let mut table: Vec<ThreadId> = self.by_tid.values().copied().collect();
        table.sort_by_key(|&id| {
            let tid = self.thread(id).tid;
            ((tid as u32) % 256, tid)
        });
        let mut children: HashMap<ThreadId, Vec<ThreadId>> = HashMap::default();
        let mut listed: std::collections::HashSet<ThreadId> = Default::default();
        let mut roots = Vec::new();
        for &id in &table {
            // perf's tasks_list: link each thread under its parent, up the
            // chain until a listed thread or a root.
            let mut task = id;
            loop {
                if !listed.insert(task) {
                    break;
                }
                let ppid = self.thread(task).ppid;
                match self.find(ppid).filter(|_| ppid != -1) {
                    Some(parent) => {
                        children.entry(parent).or_default().push(task);
                        task = parent;
                    }
                    None => {
                        roots.push(task);
                        break;
                    }
                }
            }
        }
        writeln!(out, "# {:>8} {:>8} {:>8}  comm", "pid", "tid", "ppid")?;
        let mut stack: Vec<(ThreadId, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((id, level)) = stack.pop() {
            let t = self.thread(id);
            writeln!(
                out,
                "  {:>8} {:>8} {:>8} |{:level$}{}",
                t.pid,
                t.tid,
                t.ppid,
                "",
                self.comms.get(t.comm)
            )?;
            if with_maps {
                let indent = 30 + level + 2;
                for m in self.maps[t.maps.0 as usize].iter() {
                    let dso = self.dsos.get(m.dso);
                    writeln!(
                        out,
                        "{:indent$}{:x}-{:x} {} {:08x} {} {}",
                        "",
                        m.start,
                        m.end,
                        m.access_string(),
                        m.pgoff,
                        m.ino,
                        dso.long_name
                    )?;
                }
            }
            if let Some(kids) = children.get(&id) {
                stack.extend(kids.iter().rev().map(|&k| (k, level + 1)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_copies_maps_and_comm() {
        let mut m = Machine::new();
        m.comm(10, 10, b"sh");
        let sh = Mmap {
            pid: 10,
            tid: 10,
            addr: 0x1000,
            len: 0x1000,
            pgoff: 0,
            file_id: None,
            prot: 0,
            flags: 0,
            filename: b"/bin/sh",
        };
        m.mmap(misc::USER, misc::USER, &sh);
        m.fork(11, 11, 10, 10, 0);
        let loc = m.resolve(11, 11, misc::USER, 0x1800);
        assert_eq!(m.comms.get(loc.comm), "sh");
        assert_eq!(loc.addr, 0x800);
        let dso = loc.map.map(|mp| m.dsos.get(mp.dso).short_name.clone());
        assert_eq!(dso.as_deref(), Some("sh"));
        // A thread of pid 11 shares its maps.
        let loc = m.resolve(11, 12, misc::USER, 0x1800);
        assert!(loc.map.is_some());
        assert_eq!(m.comms.get(loc.comm), ":12");
    }

    #[test]
    fn idle_is_swapper() {
        let mut m = Machine::new();
        let loc = m.resolve(0, 0, misc::KERNEL, 0xffff_ffff_8100_0000);
        assert_eq!(m.comms.get(loc.comm), "swapper");
        assert!(loc.map.is_none());
        assert_eq!(loc.level, b'k');
    }
}
