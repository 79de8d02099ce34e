//! Address maps: which DSO covers an address of a process or of the kernel.
//!
//! Follows perf 6.1's `util/map.c` and `util/maps.c`:
//!
//! * [`Dsos`] interns DSOs by their recorded path (perf's `dsos__findnew`),
//!   with perf's short names: the base name of the path, `[JIT] tid N` for
//!   `/tmp/perf-N.map`, `[kernel.kallsyms]`, `[vdso]`, `[module]`.
//! * [`Maps`] is one address space. [`Maps::insert`] evicts whatever the new
//!   map overlaps, keeping the parts of old maps before and after it (perf's
//!   `maps__fixup_overlappings`), so lookups see the newest mapping.
//! * [`Map::map_ip`] turns a runtime address into perf's `al->addr`: the file
//!   offset `ip - start + pgoff` for file mappings, the address itself for
//!   anonymous memory, heap and stack (perf's `identity__map_ip`).

use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

/// Handle of an interned DSO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DsoId(pub u32);

/// What kind of object a DSO is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DsoKind {
    /// A file mapped by a process.
    User,
    /// The kernel image (`[kernel.kallsyms]`).
    Kernel,
    /// A kernel module.
    Module,
    /// `[vdso]` and friends.
    Vdso,
    /// Anonymous executable memory (JIT code; perf names it `[JIT] tid N`).
    Jit,
    /// Memory with no file (`//anon`, `[heap]`, `[stack]`, ...).
    NoFile,
}

/// One DSO.
#[derive(Clone, Debug)]
pub struct Dso {
    /// The path as recorded (perf's `long_name`).
    pub long_name: String,
    /// perf's `short_name`.
    pub short_name: String,
    /// The name the `Shared Object` column shows and compares: the short
    /// one, or with `-v` the long one (the kernel's stays
    /// `[kernel.kallsyms]`).
    pub shown_name: String,
    pub kind: DsoKind,
    /// Build-id from the BUILD_ID feature or an MMAP2 record.
    pub build_id: Option<Vec<u8>>,
}

/// The DSO table of a report.
#[derive(Debug, Default)]
pub struct Dsos {
    dsos: Vec<Dso>,
    by_name: HashMap<String, DsoId>,
    show_long_names: bool,
}

/// perf's `is_anon_memory`.
pub fn is_anon_memory(name: &str) -> bool {
    name == "//anon" || name.starts_with("/dev/zero") || name.starts_with("/anon_hugepage")
}

/// perf's `is_no_dso_memory`.
pub fn is_no_dso_memory(name: &str) -> bool {
    name.starts_with("[stack") || name.starts_with("/SYSV") || name == "[heap]"
}

/// perf's `is_vdso_map` (plus `[vsyscall]`-like names handled as vdso).
pub fn is_vdso(name: &str) -> bool {
    name == "[vdso]" || name == "[vdso32]" || name == "[vdsox32]"
}

/// Base name like libc's `basename` (a trailing `/` yields an empty name).
fn basename(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// perf's `dso__set_basename`.
fn short_name_of(long: &str) -> String {
    if let Some(rest) = long.strip_prefix("/tmp/perf-") {
        let digits: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        if let Ok(tid) = digits.parse::<i64>() {
            if rest[digits.len()..].starts_with(".map") {
                return format!("[JIT] tid {tid}");
            }
        }
    }
    basename(long).to_string()
}

/// perf's kernel module short name: `/lib/modules/.../ext4.ko[.xz]` → `[ext4]`
/// (dashes become underscores); a name already in brackets is kept.
fn module_short_name(long: &str) -> String {
    if long.starts_with('[') {
        return long.to_string();
    }
    let base = basename(long);
    let stem = base.split('.').next().unwrap_or(base);
    format!("[{}]", stem.replace('-', "_"))
}

impl Dsos {
    /// Finds or adds the DSO recorded as `long_name`.
    pub fn findnew(&mut self, long_name: &str, kind: DsoKind) -> DsoId {
        if let Some(&id) = self.by_name.get(long_name) {
            return id;
        }
        let short_name = match kind {
            DsoKind::Kernel => "[kernel.kallsyms]".to_string(),
            DsoKind::Module => module_short_name(long_name),
            DsoKind::Vdso => long_name.to_string(),
            _ => short_name_of(long_name),
        };
        let id = DsoId(self.dsos.len() as u32);
        let shown_name = match kind {
            DsoKind::Kernel => short_name.clone(),
            _ if self.show_long_names => long_name.to_string(),
            _ => short_name.clone(),
        };
        self.dsos.push(Dso {
            long_name: long_name.to_string(),
            short_name,
            shown_name,
            kind,
            build_id: None,
        });
        self.by_name.insert(long_name.to_string(), id);
        id
    }

    /// Shows (and compares) DSOs added from now on by their long names,
    /// as perf's `-v` does.
    pub fn show_long_names(&mut self) {
        self.show_long_names = true;
    }

    /// Looks a DSO up by its recorded path.
    pub fn find(&self, long_name: &str) -> Option<DsoId> {
        self.by_name.get(long_name).copied()
    }

    /// The DSO behind a handle.
    pub fn get(&self, id: DsoId) -> &Dso {
        &self.dsos[id.0 as usize]
    }

    /// Sets a DSO's build-id (first one wins, like perf's header table).
    pub fn set_build_id(&mut self, id: DsoId, build_id: &[u8]) {
        if let Some(d) = self.dsos.get_mut(id.0 as usize) {
            if d.build_id.is_none() && !build_id.is_empty() {
                d.build_id = Some(build_id.to_vec());
            }
        }
    }

    /// Number of DSOs.
    pub fn len(&self) -> usize {
        self.dsos.len()
    }

    /// True when no DSO was added.
    pub fn is_empty(&self) -> bool {
        self.dsos.is_empty()
    }
}

/// One mapping `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Map {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub dso: DsoId,
    /// perf's `identity__map_ip`: `map_ip(ip) == ip` (anonymous memory,
    /// heap, stack).
    pub identity: bool,
    /// `PROT_*` bits, and [`Map::SHARED`] for a `MAP_SHARED` mapping.
    pub access: u8,
    /// The file's inode from MMAP2 (0 from MMAP). perf keeps it in the
    /// DSO's id, one DSO per name and inode.
    pub ino: u64,
}

impl Map {
    /// The [`Map::access`] bit of `MAP_SHARED` mappings.
    pub const SHARED: u8 = 8;

    /// `r-xp` as in /proc/PID/maps (and perf's `--mmaps`).
    pub fn access_string(&self) -> String {
        let bit = |b: u8, c: char| if self.access & b != 0 { c } else { '-' };
        let shared = if self.access & Map::SHARED != 0 {
            's'
        } else {
            'p'
        };
        format!("{}{}{}{shared}", bit(1, 'r'), bit(2, 'w'), bit(4, 'x'))
    }

    /// perf's `map->map_ip`: runtime address → DSO-relative address.
    pub fn map_ip(&self, ip: u64) -> u64 {
        if self.identity {
            ip
        } else {
            ip.wrapping_sub(self.start).wrapping_add(self.pgoff)
        }
    }

    /// perf's `map->unmap_ip`: DSO-relative address → runtime address.
    pub fn unmap_ip(&self, addr: u64) -> u64 {
        if self.identity {
            addr
        } else {
            addr.wrapping_sub(self.pgoff).wrapping_add(self.start)
        }
    }

    /// Whether `addr` is inside the map.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.start && addr < self.end
    }
}

/// An address space: non-overlapping maps ordered by start.
#[derive(Clone, Debug, Default)]
pub struct Maps {
    maps: BTreeMap<u64, Map>,
}

impl Maps {
    /// An empty address space.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `map`, first cutting what it overlaps out of older maps
    /// (perf's `maps__fixup_overlappings` + `maps__insert`).
    pub fn insert(&mut self, map: Map) {
        if map.end <= map.start {
            // An empty or wrapping map covers nothing perf can find.
            self.maps.insert(map.start, map);
            return;
        }
        let overlapping: Vec<u64> = self
            .maps
            .range(..map.end)
            .rev()
            .take_while(|(_, m)| m.end > map.start || m.end <= m.start)
            .filter(|(_, m)| m.end > map.start)
            .map(|(&k, _)| k)
            .collect();
        for k in overlapping {
            let Some(old) = self.maps.remove(&k) else {
                continue;
            };
            if old.start < map.start {
                let mut before = old;
                before.end = map.start;
                self.maps.insert(before.start, before);
            }
            if old.end > map.end {
                let mut after = old;
                after.start = map.end;
                after.pgoff = old.pgoff.wrapping_add(map.end - old.start);
                self.maps.insert(after.start, after);
            }
        }
        self.maps.insert(map.start, map);
    }

    /// The map containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Map> {
        let (_, m) = self.maps.range(..=addr).next_back()?;
        m.contains(addr).then_some(m)
    }

    /// Removes the map starting at `start` (if any) and returns it.
    pub fn remove(&mut self, start: u64) -> Option<Map> {
        self.maps.remove(&start)
    }

    /// All maps in address order.
    pub fn iter(&self) -> impl Iterator<Item = &Map> {
        self.maps.values()
    }

    /// The lowest start of the maps of `dso`.
    pub fn lowest_start(&self, dso: DsoId) -> Option<u64> {
        self.iter().filter(|m| m.dso == dso).map(|m| m.start).min()
    }

    /// Number of maps.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, end: u64, pgoff: u64, dso: u32) -> Map {
        Map {
            start,
            end,
            pgoff,
            dso: DsoId(dso),
            identity: false,
            access: 0,
            ino: 0,
        }
    }

    #[test]
    fn overlap_splits_old_map() {
        let mut maps = Maps::new();
        maps.insert(m(0x1000, 0x5000, 0, 1));
        maps.insert(m(0x2000, 0x3000, 0, 2));
        let v: Vec<_> = maps.iter().copied().collect();
        assert_eq!(
            v,
            vec![
                m(0x1000, 0x2000, 0, 1),
                m(0x2000, 0x3000, 0, 2),
                m(0x3000, 0x5000, 0x2000, 1)
            ]
        );
        assert_eq!(maps.find(0x3500).map(|m| m.map_ip(0x3500)), Some(0x2500));
        assert_eq!(maps.find(0x5000), None);
    }

    #[test]
    fn replace_whole_maps() {
        let mut maps = Maps::new();
        maps.insert(m(0x1000, 0x2000, 0, 1));
        maps.insert(m(0x2000, 0x3000, 0, 1));
        maps.insert(m(0x0, 0x4000, 0, 3));
        assert_eq!(maps.len(), 1);
        assert_eq!(maps.find(0x2500).map(|m| m.dso), Some(DsoId(3)));
    }

    #[test]
    fn short_names() {
        assert_eq!(short_name_of("/usr/lib/libc.so.6"), "libc.so.6");
        assert_eq!(short_name_of("/tmp/perf-123.map"), "[JIT] tid 123");
        assert_eq!(short_name_of("//anon"), "anon");
        assert_eq!(
            module_short_name("/lib/modules/x/kvm-intel.ko"),
            "[kvm_intel]"
        );
    }
}
