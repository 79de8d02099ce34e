//! Replaying repeated samples.
//!
//! Most samples of a profile repeat one seen before. Resolving such a
//! sample again (maps, symbols, frames, then with `--children` one hist
//! entry per chain element and a walk down every such entry's call tree,
//! quadratic in the chain's depth) reaches the same entries and tree nodes.
//! So [`SampleReplay`] remembers what the first resolution touched
//! ([`Effect`]s), and later copies only add their period there.
//!
//! Three tables find a remembered resolution:
//! * by the sample's raw bytes that resolution reads (attr, pid, tid,
//!   cpumode, ip, callchain), plus an epoch that changes whenever a COMM,
//!   FORK, EXIT or MMAP record could change what they resolve to (per
//!   process; kernel maps change every process's). A hit skips all
//!   resolution.
//! * by the sample's raw bytes again, with its ip and first chain entry
//!   replaced by what they resolved to (map, symbol, level): most samples
//!   that miss the raw table differ from one seen before only in where
//!   they were in the innermost function. A hit skips resolving the rest
//!   of the chain. Only resolved samples none of whose checks compared
//!   that first frame's address are found this way: their effects hold
//!   for any address of the same symbol. The report uses this table only
//!   where no output reads a sample's exact address (see
//!   [`SampleReplay::find_tail`]).
//! * by the resolved sample (its own entry, thread, and each frame's
//!   symbol): samples at different addresses of the same functions, or in
//!   another process of the same program, share these effects. A hit skips
//!   the per-frame entries and call trees. Where a call-tree walk went
//!   through one of perf's trees whose result hangs on the frames'
//!   addresses (see `CallTree::walked_mixed`), the key maps to a pin group
//!   instead: the frames whose addresses were compared, which with
//!   addresses between the same tree nodes' (an [`IpSpan`] per frame)
//!   find the effects, valid while their [`Check`]s hold.
//!
//! Entries and tree nodes are only ever created by a first resolution, in
//! sample order, so the output (including perf's order of equal entries) is
//! the same as resolving every sample.

use crate::callgraph::{CursorFrame, IpSpan};
use rustc_hash::FxHashMap as HashMap;
use std::hash::Hasher;

/// What resolving one sample added to, besides the event totals.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Effect {
    /// Index of the hist entry.
    pub entry: u32,
    /// The sample's own entry: period and sample count.
    pub own: bool,
    /// The `--children` period.
    pub acc: bool,
    /// The sample's cpumode (for the own entry's `sys`/`usr` periods).
    pub cpumode: u8,
    /// The level (`b'k'`, `b'.'`) the entry gets if this hit creates it.
    /// Equal keys can differ in it: a frame without a map takes the level
    /// of the sample's frame before it.
    pub level: u8,
    /// The entry's call-tree node that got the hit, or [`NO_NODE`].
    pub node: u32,
}

/// A call tree whose walk a remembered sample's effects depend on: the
/// effects hold while the tree of `node`'s children in entry `entry`'s
/// call tree is still at `version` (see `CallTree::walked_mixed`), or
/// while a walk of it with `cursor` (at the sample's address of chain
/// frame `frame`) still finds `child`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Check {
    pub entry: u32,
    pub node: u32,
    pub version: u32,
    pub frame: u32,
    pub cursor: Option<CursorFrame>,
    pub child: u32,
}

/// What [`SampleReplay`] asks of the call trees of the hists entries.
pub(crate) trait Trees {
    /// The version of the tree of `node`'s children in entry `entry`'s
    /// call tree (see `CallTree::mixed_version`).
    fn version(&self, hists: usize, entry: u32, node: u32) -> Option<u32>;
    /// Whether a walk of that tree of `check` with its frame at `ip` still
    /// finds its child; and for which of the frame's addresses it does.
    fn rewalk(&self, hists: usize, check: &Check, ip: u64) -> Option<IpSpan>;
    /// The walk to `node` in entry `entry`'s tree went down from node
    /// `ancestor`.
    fn descends_from(&self, hists: usize, entry: u32, node: u32, ancestor: u32) -> bool;
}

/// [`Effect::node`] when no call tree was appended to.
pub(crate) const NO_NODE: u32 = u32::MAX;

/// What a raw sample resolved to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawOutcome {
    /// Counted as a sample without a map.
    pub no_map: bool,
    /// The resolved outcome's index (see [`SampleReplay::resolved`]), or
    /// `None` when the sample was not added to the hists
    /// (`--hide-unresolved`).
    pub resolved: Option<u32>,
}

/// Byte-string keys to values; a key whose hash is taken by another key is
/// not stored (its sample is then resolved every time: slower, not wrong).
/// A key is a head, copied, and a tail borrowed from the input (a raw
/// sample's callchain: most of a key, and already in memory).
#[derive(Default)]
struct Table<'a> {
    index: HashMap<u64, u32>,
    /// Per key: its head's range in `heads`, its tail, its value.
    keys: Vec<(u32, u32, &'a [u8], u32)>,
    heads: Vec<u8>,
}

impl<'a> Table<'a> {
    fn hash(head: &[u8], tail: &[u8]) -> u64 {
        let mut h = rustc_hash::FxHasher::default();
        h.write(head);
        h.write(tail);
        h.finish()
    }

    /// The key's value, or its hash for [`Self::insert`].
    fn find(&self, head: &[u8], tail: &[u8]) -> Result<u32, u64> {
        self.find_slot(head, tail).map(|(_, value)| value)
    }

    /// [`Self::find`] with where the key is stored, for [`Self::set`].
    fn find_slot(&self, head: &[u8], tail: &[u8]) -> Result<(u32, u32), u64> {
        let hash = Self::hash(head, tail);
        match self.index.get(&hash) {
            Some(&i) => {
                let (start, end, stored_tail, value) = self.keys[i as usize];
                if self.heads.get(start as usize..end as usize) == Some(head) && stored_tail == tail
                {
                    Ok((i, value))
                } else {
                    Err(hash)
                }
            }
            None => Err(hash),
        }
    }

    /// Gives the key stored at `slot` the value `value`.
    fn set(&mut self, slot: u32, value: u32) {
        if let Some(key) = self.keys.get_mut(slot as usize) {
            key.3 = value;
        }
    }

    /// Stores the key `head` + `tail` (looked up as `hash`) with `value`;
    /// false when it could not.
    fn insert(&mut self, hash: u64, head: &[u8], tail: &'a [u8], value: u32) -> bool {
        if self.index.contains_key(&hash) {
            return false;
        }
        let (Ok(i), Ok(start), Ok(end)) = (
            u32::try_from(self.keys.len()),
            u32::try_from(self.heads.len()),
            u32::try_from(self.heads.len() + head.len()),
        ) else {
            return false;
        };
        self.heads.extend_from_slice(head);
        self.keys.push((start, end, tail, value));
        self.index.insert(hash, i);
        true
    }
}

/// Remembered resolutions of one report.
#[derive(Default)]
pub(crate) struct SampleReplay<'a> {
    global_epoch: u32,
    process_epochs: HashMap<i32, u32>,
    raw: Table<'a>,
    /// Per raw key, its [`RawOutcome`] packed (see [`pack`]), and the
    /// revision of its resolved sample it was found with: side by side,
    /// as every hit reads both.
    raw_outcomes: Vec<(u32, u32)>,
    /// Values: a resolved index, or with [`PINNED`] a pin group's.
    resolved: Table<'static>,
    /// Per pin group, its samples: indexes into `pinned`, oldest first.
    pin_groups: Vec<Vec<u32>>,
    /// The remembered samples of all pin groups.
    pinned: Vec<Pinned>,
    /// Per pinned sample, the frames its walks compared, each with the
    /// addresses that compare the same.
    pin_spans: Vec<(u32, IpSpan)>,
    pinned_hits: u64,
    resolved_outcomes: Vec<Resolved>,
    /// Per resolved key: (samples, period) of its copies not yet added to
    /// the entries (see [`Self::repeat`]).
    repeats: Vec<(u64, u64)>,
    effects: Vec<Effect>,
    checks: Vec<Check>,
    /// Each check's entry, apart: [`Self::checks_hold`] reads them all and
    /// the rest of a check only where its tree changed.
    check_entries: Vec<u32>,
    /// Scratch of [`Self::checks_hold`]: the checks whose trees changed.
    changed_checks: Vec<usize>,
    /// Counts [`Self::reordered`] calls.
    generation: u32,
    /// Counts [`Self::trees_changed`] calls.
    trees_changes: u32,
    /// Per hists, per entry: the [`Self::trees_changes`] count of the last
    /// change to its tree's versions, so that checks of an entry whose
    /// tree did not change since they held are not looked at again.
    tree_changed_at: Vec<Vec<u32>>,
    /// (hists, entry) -> (generation, node) of each reordering of its call
    /// tree, oldest first.
    reordered: HashMap<(u32, u32), Vec<(u32, u32)>>,
    /// Distinct resolved frames (see [`Self::frame_id`]).
    frames: HashMap<[u64; 5], u32>,
    /// Recent rewalks (see [`Self::rewalk`]), direct-mapped by hash.
    rewalks: Vec<Option<(RewalkKey, Option<IpSpan>)>>,
    /// By the sample's resolved first frame and raw rest (see
    /// [`Self::find_tail`]): an index into `tail_outcomes`.
    tails: Table<'a>,
    /// Per tail key, its resolved sample and that sample's revision when
    /// stored.
    tail_outcomes: Vec<(u32, u32)>,
    /// Scratch for building raw, tail and resolved keys: a sample that
    /// missed the raw table holds one while it looks up the others.
    raw_key: Vec<u8>,
    tail_key: Vec<u8>,
    resolved_key: Vec<u8>,
}

/// A resolved sample of a pin group.
struct Pinned {
    /// The resolved index ([`NO_PIN`] when none).
    resolved: u32,
    /// Its range of [`SampleReplay::pin_spans`].
    spans: (u32, u32),
}

const NO_PIN: u32 = u32::MAX;

/// The newest samples of a pin group that a lookup tries: broken
/// frame-pointer chains give a group many that never match.
const PIN_CANDIDATES: usize = 32;

/// In a resolved table value: the rest is a pin group.
const PINNED: u32 = 1 << 31;

/// Pinned keys stored before their hits must pay for them (see
/// [`SampleReplay::pin`]).
const PINS_ON_TRIAL: u64 = 4096;

/// What a resolved sample did.
struct Resolved {
    /// Its ranges of [`SampleReplay::effects`] and [`SampleReplay::checks`].
    effects: (u32, u32),
    checks: (u32, u32),
    /// The index of the event's hists.
    hists: u32,
    /// It adds to the callchain period.
    callchain_period: bool,
    /// A generation at which its effects held (see [`SampleReplay::current`]).
    generation: u32,
    /// Counts revisions of its checks (see [`SampleReplay::checks_hold`])
    /// and effects.
    revision: u32,
    /// A [`SampleReplay::trees_changes`] count at which all its checks
    /// held at the trees' versions ([`UNCHECKED`] when not known): until
    /// the count moves, no version changed, so they still do.
    checked_at: u32,
}

/// [`Resolved::checked_at`] before its checks were checked.
const UNCHECKED: u32 = u32::MAX;

/// Resolved indexes stay below this, whose bit [`pack`] uses.
const NO_MAP: u32 = 1 << 31;

/// A [`RawOutcome`] in 32 bits: the resolved index (all ones below
/// [`NO_MAP`] for none), and [`NO_MAP`].
fn pack(o: RawOutcome) -> u32 {
    o.resolved.unwrap_or(NO_MAP - 1) | if o.no_map { NO_MAP } else { 0 }
}

fn unpack(o: u32) -> RawOutcome {
    let resolved = o & (NO_MAP - 1);
    RawOutcome {
        no_map: o & NO_MAP != 0,
        resolved: (resolved != NO_MAP - 1).then_some(resolved),
    }
}

/// A key looked up and not found: where to remember it.
#[derive(Debug)]
pub(crate) struct Pending<'a> {
    hash: u64,
    key: Vec<u8>,
    tail: &'a [u8],
    /// The key is stored, but its outcome's checks failed: its index in
    /// `raw_outcomes` (raw lookups) or `pinned` (pinned ones).
    existing: Option<u32>,
    /// That outcome's resolved sample, whose place a new resolution can
    /// take (see [`SampleReplay::take_repeats_of`]).
    stale: Option<u32>,
    /// A resolved key of a pin group, whose addresses no pinned sample
    /// covers, or that of `existing`.
    pin_group: Option<u32>,
    /// A resolved key stored (at this slot of its table) whose sample's
    /// trees were reordered since.
    slot: Option<u32>,
}

/// A rewalk's inputs: (hists, entry, node, the node's version, the
/// check's frame id and child, the frame's address).
type RewalkKey = (u32, u32, u32, u32, u32, u32, u64);

/// Slots of [`SampleReplay::rewalks`].
const REWALK_SLOTS: usize = 1 << 12;

/// A sample [`SampleReplay::find_tail`] did not find: its key, for
/// [`SampleReplay::remember_tail`].
pub(crate) struct TailPending<'a> {
    hash: u64,
    key: Vec<u8>,
    tail: &'a [u8],
    /// The address of the frame the key holds resolved.
    first: u64,
    /// The key is stored, but its resolved sample no longer holds: its
    /// index in `tail_outcomes`.
    existing: Option<u32>,
}

impl Pending<'_> {
    /// The resolved sample whose checks failed, if any.
    pub fn stale(&self) -> Option<u32> {
        self.stale
    }
}

impl<'a> SampleReplay<'a> {
    /// Records that what `pid`'s samples resolve to may have changed
    /// (`None`: every process's, e.g. a kernel map).
    pub fn invalidate(&mut self, pid: Option<i32>) {
        match pid {
            Some(pid) => *self.process_epochs.entry(pid).or_default() += 1,
            None => self.global_epoch += 1,
        }
    }

    /// The epoch of `pid`'s addresses: it changes with every
    /// [`Self::invalidate`] that covers `pid`.
    pub fn epoch(&self, pid: i32) -> u64 {
        let process = self.process_epochs.get(&pid).copied().unwrap_or(0);
        (self.global_epoch as u64) << 32 | process as u64
    }

    /// Records that the children of node `node` of entry `entry`'s call
    /// tree (in hists `hists`) got mixed: walks down from it, which did not
    /// pass perf's tree of those children, may not be repeated.
    pub fn reordered(&mut self, hists: usize, entry: u32, node: u32) {
        self.generation += 1;
        self.reordered
            .entry((hists as u32, entry))
            .or_default()
            .push((self.generation, node));
    }

    /// Notes that an append changed a version of the call tree of entry
    /// `entry` of hists `hists` (see `Appended::changed_mixed`): checks of
    /// that tree must look at versions again.
    pub fn trees_changed(&mut self, hists: usize, entry: u32) {
        // Wrapping could meet an old `checked_at` again: start over.
        self.trees_changes = match self.trees_changes.checked_add(1) {
            Some(n) if n != UNCHECKED => n,
            _ => {
                for o in &mut self.resolved_outcomes {
                    o.checked_at = UNCHECKED;
                }
                for stamps in &mut self.tree_changed_at {
                    stamps.fill(0);
                }
                0
            }
        };
        if self.tree_changed_at.len() <= hists {
            self.tree_changed_at.resize_with(hists + 1, Vec::new);
        }
        let stamps = &mut self.tree_changed_at[hists];
        if stamps.len() <= entry as usize {
            stamps.resize(entry as usize + 1, 0);
        }
        stamps[entry as usize] = self.trees_changes;
    }

    /// Whether the checks of resolved sample `r` hold for a sample whose
    /// frames are at `ips` (empty when not known). A check whose tree
    /// changed holds if walking it again finds the same child; then the
    /// check is revised to the tree's version, and the spans of pinned
    /// sample `p` narrowed to the addresses that walk finds it with.
    fn checks_hold(&mut self, r: u32, trees: &impl Trees, ips: &[u64], p: Option<u32>) -> bool {
        let Some(o) = self.resolved_outcomes.get(r as usize) else {
            return false;
        };
        if o.checked_at == self.trees_changes {
            return true;
        }
        let (hists, (start, end)) = (o.hists as usize, o.checks);
        let held_at = o.checked_at;
        let stamps = self
            .tree_changed_at
            .get(hists)
            .map_or(&[][..], Vec::as_slice);
        let mut changed = std::mem::take(&mut self.changed_checks);
        changed.clear();
        changed.extend((start as usize..end as usize).filter(|&at| {
            let entry = self.check_entries[at] as usize;
            held_at == UNCHECKED || stamps.get(entry).is_some_and(|&s| s > held_at)
        }));
        let holds = self.revise_checks(r, &changed, trees, ips, p);
        self.changed_checks = changed;
        if holds {
            self.resolved_outcomes[r as usize].checked_at = self.trees_changes;
        }
        holds
    }

    /// The part of [`Self::checks_hold`] for the checks at `changed`,
    /// whose trees changed since they held.
    fn revise_checks(
        &mut self,
        r: u32,
        changed: &[usize],
        trees: &impl Trees,
        ips: &[u64],
        p: Option<u32>,
    ) -> bool {
        let hists = self.resolved_outcomes[r as usize].hists as usize;
        for &at in changed {
            let c = self.checks[at];
            let version = match trees.version(hists, c.entry, c.node) {
                Some(v) if v == c.version => continue,
                Some(v) => v,
                None => return false,
            };
            let (Some(&ip), Some(p)) = (ips.get(c.frame as usize), p) else {
                return false;
            };
            let Some(span) = self.rewalk(hists, &c, version, ip, trees) else {
                return false;
            };
            let Some(pinned) = self.pinned.get(p as usize).filter(|p| p.resolved == r) else {
                return false;
            };
            let (first, last) = pinned.spans;
            let Some(pin) = self.pin_spans[first as usize..last as usize]
                .iter_mut()
                .find(|(f, _)| *f == c.frame)
            else {
                return false;
            };
            pin.1 = pin.1.intersect(span);
            self.checks[at].version = version;
            self.resolved_outcomes[r as usize].revision += 1;
        }
        true
    }

    /// `trees.rewalk` of check `c` with its frame at `ip`, its tree being
    /// at `version`. A tree changes only with its version, so the result
    /// is kept: many remembered samples check the same tree for the same
    /// frame (the roots of the entries' trees, for one), each after every
    /// change to it.
    fn rewalk(
        &mut self,
        hists: usize,
        c: &Check,
        version: u32,
        ip: u64,
        trees: &impl Trees,
    ) -> Option<IpSpan> {
        let frame = c.cursor.map_or(u32::MAX, |f| f.id.0);
        let key = (hists as u32, c.entry, c.node, version, frame, c.child, ip);
        let slot = {
            let mut h = rustc_hash::FxHasher::default();
            std::hash::Hash::hash(&key, &mut h);
            (h.finish() >> 20) as usize % REWALK_SLOTS
        };
        if self.rewalks.is_empty() {
            self.rewalks.resize(REWALK_SLOTS, None);
        }
        if let Some((k, span)) = self.rewalks[slot] {
            if k == key {
                return span;
            }
        }
        let span = trees.rewalk(hists, c, ip);
        self.rewalks[slot] = Some((key, span));
        span
    }

    /// Whether resolved sample `r`'s effects still hold: no call tree
    /// node it walked down from was reordered since they were known to.
    fn current(&mut self, r: u32, trees: &impl Trees) -> bool {
        let Some(o) = self.resolved_outcomes.get(r as usize) else {
            return false;
        };
        if o.generation == self.generation {
            return true;
        }
        let (start, end) = o.effects;
        let holds = self.effects[start as usize..end as usize].iter().all(|e| {
            let Some(reorderings) = self.reordered.get(&(o.hists, e.entry)) else {
                return true;
            };
            reorderings
                .iter()
                .rev()
                .take_while(|&&(g, _)| g > o.generation)
                .all(|&(_, node)| {
                    e.node == NO_NODE
                        || !trees.descends_from(o.hists as usize, e.entry, e.node, node)
                })
        });
        if holds {
            self.resolved_outcomes[r as usize].generation = self.generation;
        }
        holds
    }

    /// Looks a raw sample up; `cpu` only when an output depends on it, and
    /// `chain` only when callchains are used. An outcome with checks (see
    /// [`Self::remember_resolved`]) is found only if `valid(hists index,
    /// checks)`.
    #[allow(clippy::too_many_arguments)]
    pub fn find_raw(
        &mut self,
        attr_index: usize,
        pid: i32,
        tid: i32,
        cpumode: u16,
        ip: u64,
        cpu: u32,
        chain: &'a [u8],
        trees: impl Trees,
    ) -> Result<RawOutcome, Pending<'a>> {
        let epoch = self.process_epochs.get(&pid).copied().unwrap_or(0);
        let mut key = std::mem::take(&mut self.raw_key);
        key.clear();
        for w in [
            attr_index as u64 | (cpumode as u64) << 32,
            (pid as u32 as u64) << 32 | tid as u32 as u64,
            (self.global_epoch as u64) << 32 | epoch as u64,
            ip,
            cpu as u64,
        ] {
            key.extend_from_slice(&w.to_le_bytes());
        }
        match self.raw.find(&key, chain) {
            Ok(i) => {
                let (packed, raw_revision) = self.raw_outcomes[i as usize];
                let outcome = unpack(packed);
                if let Some(r) = outcome.resolved {
                    // The raw key pins exact addresses, but not those of
                    // the resolved sample's walks since they were revised.
                    let revised = self.resolved_outcomes[r as usize].revision != raw_revision;
                    if revised
                        || !self.current(r, &trees)
                        || !self.checks_hold(r, &trees, &[], None)
                    {
                        return Err(Pending {
                            hash: 0,
                            key,
                            tail: chain,
                            existing: Some(i),
                            stale: Some(r),
                            pin_group: None,
                            slot: None,
                        });
                    }
                }
                self.raw_key = key;
                Ok(outcome)
            }
            Err(hash) => Err(Pending {
                hash,
                key,
                tail: chain,
                existing: None,
                stale: None,
                pin_group: None,
                slot: None,
            }),
        }
    }

    /// Remembers what a raw sample looked up with [`Self::find_raw`]
    /// resolved to.
    pub fn remember_raw(&mut self, pending: Pending<'a>, outcome: RawOutcome) {
        let revision = outcome
            .resolved
            .and_then(|r| self.resolved_outcomes.get(r as usize))
            .map_or(0, |r| r.revision);
        if let Some(i) = pending.existing {
            self.raw_outcomes[i as usize] = (pack(outcome), revision);
        } else if self.raw.insert(
            pending.hash,
            &pending.key,
            pending.tail,
            self.raw_outcomes.len() as u32,
        ) {
            self.raw_outcomes.push((pack(outcome), revision));
        }
        self.raw_key = pending.key;
    }

    /// Looks a sample up by `head`, its raw words with its ip and first
    /// chain entry (at address `first`) replaced by what they resolved to,
    /// and `tail`, the rest of its raw callchain. What is found holds as a
    /// raw table hit does, for the tail's exact addresses.
    ///
    /// The caller must put into `head` everything that the sample's
    /// resolution reads from its ip and first chain entry: the table
    /// forgets those addresses.
    pub fn find_tail(
        &mut self,
        head: &[u64],
        first: u64,
        tail: &'a [u8],
        trees: impl Trees,
    ) -> Result<u32, TailPending<'a>> {
        let mut key = std::mem::take(&mut self.tail_key);
        key.clear();
        for w in head {
            key.extend_from_slice(&w.to_le_bytes());
        }
        let mut pending = TailPending {
            hash: 0,
            key,
            tail,
            first,
            existing: None,
        };
        let i = match self.tails.find(&pending.key, tail) {
            Ok(i) => i,
            Err(hash) => {
                pending.hash = hash;
                return Err(pending);
            }
        };
        let (r, revision) = self.tail_outcomes[i as usize];
        let revised = self.resolved_outcomes[r as usize].revision != revision;
        if revised || !self.current(r, &trees) || !self.checks_hold(r, &trees, &[], None) {
            pending.existing = Some(i);
            return Err(pending);
        }
        self.tail_key = pending.key;
        Ok(r)
    }

    /// Remembers that the sample looked up with [`Self::find_tail`]
    /// resolved to resolved sample `r`, whose frames are at `ips`; unless
    /// a check of `r` compared the address of the frame the key holds
    /// resolved (or one at the same address).
    pub fn remember_tail(&mut self, pending: TailPending<'a>, r: u32, ips: &[u64]) {
        if let Some(o) = self.resolved_outcomes.get(r as usize) {
            let (start, end) = o.checks;
            let pinned = self.checks[start as usize..end as usize].iter().any(|c| {
                ips.get(c.frame as usize)
                    .is_none_or(|&ip| ip == pending.first)
            });
            if !pinned {
                let value = (r, o.revision);
                if let Some(i) = pending.existing {
                    self.tail_outcomes[i as usize] = value;
                } else if self.tails.insert(
                    pending.hash,
                    &pending.key,
                    pending.tail,
                    self.tail_outcomes.len() as u32,
                ) {
                    self.tail_outcomes.push(value);
                }
            }
        }
        self.tail_key = pending.key;
    }

    /// A small id for a resolved frame's words: a resolved key holds 4
    /// bytes per frame instead of 40.
    pub fn frame_id(&mut self, words: [u64; 5]) -> u32 {
        let next = self.frames.len() as u32;
        *self.frames.entry(words).or_insert(next)
    }

    /// Looks a resolved sample up by its context words and frame ids (see
    /// the module docs), and `ips`, its frames' addresses, which some
    /// remembered samples' walks compared (see [`Self::remember_resolved`]);
    /// those are found only if `valid(hists index, checks)`.
    pub fn find_resolved(
        &mut self,
        context: &[u64],
        frames: &[u32],
        ips: &[u64],
        trees: impl Trees,
    ) -> Result<u32, Pending<'a>> {
        let mut key = std::mem::take(&mut self.resolved_key);
        key.clear();
        for w in context {
            key.extend_from_slice(&w.to_le_bytes());
        }
        for f in frames {
            key.extend_from_slice(&f.to_le_bytes());
        }
        let mut pending = Pending {
            hash: 0,
            key,
            tail: &[],
            existing: None,
            stale: None,
            pin_group: None,
            slot: None,
        };
        let (slot, value) = match self.resolved.find_slot(&pending.key, &[]) {
            Ok(v) => v,
            Err(hash) => {
                pending.hash = hash;
                return Err(pending);
            }
        };
        if value & PINNED == 0 {
            if self.current(value, &trees) {
                self.resolved_key = pending.key;
                return Ok(value);
            }
            pending.slot = Some(slot);
            pending.stale = Some(value);
            return Err(pending);
        }
        let group = value & !PINNED;
        pending.pin_group = Some(group);
        let Some(p) = self.find_pinned(group, ips) else {
            return Err(pending);
        };
        let r = self.pinned[p as usize].resolved;
        if self.current(r, &trees) && self.checks_hold(r, &trees, ips, Some(p)) {
            self.pinned_hits += 1;
            self.resolved_key = pending.key;
            return Ok(r);
        }
        pending.existing = Some(p);
        pending.stale = Some(r);
        Err(pending)
    }

    /// The newest sample of pin group `group` whose spans hold `ips`.
    fn find_pinned(&self, group: u32, ips: &[u64]) -> Option<u32> {
        self.pin_groups
            .get(group as usize)?
            .iter()
            .rev()
            .take(PIN_CANDIDATES)
            .copied()
            .find(|&p| {
                let pinned = &self.pinned[p as usize];
                let (start, end) = pinned.spans;
                pinned.resolved != NO_PIN
                    && self.pin_spans[start as usize..end as usize]
                        .iter()
                        .all(|&(f, span)| ips.get(f as usize).is_some_and(|&ip| span.contains(ip)))
            })
    }

    /// Remembers a resolved sample's effects on the entries of hists
    /// `hists`; returns its index for [`RawOutcome::resolved`] (`None` when
    /// it could not be stored).
    ///
    /// Effects that hold only while `checks` do depend on the addresses of
    /// the frames those walks compared (`pins`: indexes into the frames,
    /// each with the addresses that compare the same, sorted by frame):
    /// they are found by the resolved key plus addresses in those spans.
    #[allow(clippy::too_many_arguments)]
    pub fn remember_resolved(
        &mut self,
        pending: Pending<'a>,
        hists: usize,
        callchain_period: bool,
        effects: &[Effect],
        checks: &[Check],
        pins: &[(u32, IpSpan)],
        stale: Option<u32>,
    ) -> Option<u32> {
        // A stale sample is taken in place only by the pinned sample that
        // finds it: another (found by a raw key) keeps its own spans.
        let in_place = stale.filter(|&r| {
            let p = pending.existing.filter(|_| pending.pin_group.is_some());
            p.and_then(|p| self.pinned.get(p as usize))
                .is_some_and(|p| p.resolved == r)
        });
        let i = self.store_resolved(hists, callchain_period, effects, checks, in_place);
        if let Some(i) = i {
            if let Some(slot) = pending.slot.filter(|_| checks.is_empty()) {
                self.resolved.set(slot, i);
            } else if pending.pin_group.is_some() || !checks.is_empty() {
                self.pin(&pending, i, pins);
            } else {
                self.resolved.insert(pending.hash, &pending.key, &[], i);
            }
        }
        self.resolved_key = pending.key;
        i
    }

    fn store_resolved(
        &mut self,
        hists: usize,
        callchain_period: bool,
        effects: &[Effect],
        checks: &[Check],
        stale: Option<u32>,
    ) -> Option<u32> {
        // A stale sample (its copies taken) whose new effects and checks
        // have the same sizes takes them in place.
        if let Some(old) = stale.filter(|_| !checks.is_empty()) {
            if let Some(r) = self.resolved_outcomes.get_mut(old as usize) {
                let (es, ee) = r.effects;
                let (cs, ce) = r.checks;
                if (ee - es) as usize == effects.len()
                    && (ce - cs) as usize == checks.len()
                    && r.hists as usize == hists
                {
                    r.callchain_period = callchain_period;
                    r.generation = self.generation;
                    r.revision += 1;
                    // The checks were taken during the sample's appends,
                    // and a later append of it may have moved a version.
                    r.checked_at = UNCHECKED;
                    self.effects[es as usize..ee as usize].copy_from_slice(effects);
                    self.checks[cs as usize..ce as usize].copy_from_slice(checks);
                    for (to, c) in self.check_entries[cs as usize..ce as usize]
                        .iter_mut()
                        .zip(checks)
                    {
                        *to = c.entry;
                    }
                    return Some(old);
                }
            }
        }
        if self.effects.len() + effects.len() > u32::MAX as usize
            || self.checks.len() + checks.len() > u32::MAX as usize
        {
            return None;
        }
        let i = u32::try_from(self.resolved_outcomes.len())
            .ok()
            .filter(|&i| i < NO_MAP - 1)?;
        let checks_start = self.checks.len() as u32;
        self.checks.extend_from_slice(checks);
        self.check_entries.extend(checks.iter().map(|c| c.entry));
        let effects_start = self.effects.len() as u32;
        self.effects.extend_from_slice(effects);
        self.resolved_outcomes.push(Resolved {
            effects: (effects_start, self.effects.len() as u32),
            checks: (checks_start, self.checks.len() as u32),
            hists: hists as u32,
            callchain_period,
            generation: self.generation,
            revision: 0,
            checked_at: UNCHECKED,
        });
        self.repeats.push((0, 0));
        Some(i)
    }

    /// Finds resolved sample `i` by its pinned frames' addresses from now
    /// on (`pins`), in the resolved key's pin group (a new one if it has
    /// none).
    fn pin(&mut self, pending: &Pending<'a>, i: u32, pins: &[(u32, IpSpan)]) {
        if let Some(p) = pending.existing.filter(|_| pending.pin_group.is_some()) {
            let spans = self.push_spans(pins);
            if let Some(pinned) = self.pinned.get_mut(p as usize) {
                *pinned = match spans {
                    Some(spans) => Pinned { resolved: i, spans },
                    None => Pinned {
                        resolved: NO_PIN,
                        spans: (0, 0),
                    },
                };
            }
            return;
        }
        // Broken frame-pointer chains pin garbage addresses that never
        // repeat: stop pinning while few pinned samples are found again.
        if self.pinned.len() as u64 > PINS_ON_TRIAL + 8 * self.pinned_hits {
            return;
        }
        let group = match pending.pin_group {
            Some(group) => group,
            None => {
                let Ok(group) = u32::try_from(self.pin_groups.len()) else {
                    return;
                };
                if group >= PINNED {
                    return;
                }
                match pending.slot {
                    Some(slot) => self.resolved.set(slot, group | PINNED),
                    None => {
                        if !self
                            .resolved
                            .insert(pending.hash, &pending.key, &[], group | PINNED)
                        {
                            return;
                        }
                    }
                }
                self.pin_groups.push(Vec::new());
                group
            }
        };
        let (Some(spans), Ok(p)) = (self.push_spans(pins), u32::try_from(self.pinned.len())) else {
            return;
        };
        self.pinned.push(Pinned { resolved: i, spans });
        if let Some(g) = self.pin_groups.get_mut(group as usize) {
            g.push(p);
        }
    }

    /// Stores `pins`; returns their range of `pin_spans`.
    fn push_spans(&mut self, pins: &[(u32, IpSpan)]) -> Option<(u32, u32)> {
        let start = u32::try_from(self.pin_spans.len()).ok()?;
        let end = u32::try_from(self.pin_spans.len() + pins.len()).ok()?;
        self.pin_spans.extend_from_slice(pins);
        Some((start, end))
    }

    /// The copies of resolved sample `i` counted so far, as
    /// [`Self::take_repeats`] gives them, for a caller about to resolve
    /// that sample again and store the result in its place.
    pub fn take_repeats_of(&mut self, i: u32) -> Option<(usize, u64, u64, &[Effect])> {
        let r = self.resolved_outcomes.get(i as usize)?;
        let (count, period) = std::mem::take(self.repeats.get_mut(i as usize)?);
        let (start, end) = r.effects;
        let effects = self.effects.get(start as usize..end as usize)?;
        Some((r.hists as usize, count, period, effects))
    }

    /// Counts one more copy of resolved sample `i` with `period`; returns
    /// whether it adds to the callchain period. Its effects are applied
    /// once per resolved sample, by [`Self::take_repeats`]: the entries
    /// and tree nodes only sum periods, and visiting them for each copy
    /// cost more than finding the sample.
    pub fn repeat(&mut self, i: u32, period: u64) -> bool {
        let r = &mut self.repeats[i as usize];
        r.0 += 1;
        r.1 += period;
        self.resolved_outcomes[i as usize].callchain_period
    }

    /// The hists index and effects of resolved sample `i`.
    pub fn effects_of(&self, i: u32) -> Option<(usize, &[Effect])> {
        let r = self.resolved_outcomes.get(i as usize)?;
        let (start, end) = r.effects;
        Some((
            r.hists as usize,
            self.effects.get(start as usize..end as usize)?,
        ))
    }

    /// The copies counted by [`Self::repeat`] since the last call, as
    /// (hists index, samples, period, effects) per resolved sample.
    pub fn take_repeats(&mut self) -> impl Iterator<Item = (usize, u64, u64, &[Effect])> + '_ {
        let effects = &self.effects;
        self.repeats
            .iter_mut()
            .zip(&self.resolved_outcomes)
            .filter(|(r, _)| r.0 != 0)
            .map(move |(r, resolved)| {
                let (count, period) = std::mem::take(r);
                let (start, end) = resolved.effects;
                let effects = &effects[start as usize..end as usize];
                (resolved.hists as usize, count, period, effects)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Call trees as the tests set them: every tree of mixed children at
    /// `version`; walked again, a check finds its child at `rewalk`'s
    /// addresses; `descends` says whether a walk passed a reordered node.
    #[derive(Clone, Copy)]
    struct TestTrees {
        version: u32,
        rewalk: Option<IpSpan>,
        descends: bool,
    }

    impl Trees for TestTrees {
        fn version(&self, _: usize, _: u32, _: u32) -> Option<u32> {
            Some(self.version)
        }

        fn rewalk(&self, _: usize, _: &Check, ip: u64) -> Option<IpSpan> {
            self.rewalk.filter(|s| s.contains(ip))
        }

        fn descends_from(&self, _: usize, _: u32, _: u32, _: u32) -> bool {
            self.descends
        }
    }

    /// What the tests' remembered samples did: entry 1's own period, at
    /// node 4 of its tree.
    const EFFECT: Effect = Effect {
        entry: 1,
        own: true,
        acc: false,
        cpumode: 2,
        level: b'.',
        node: 4,
    };

    const AS_RECORDED: TestTrees = TestTrees {
        version: 3,
        rewalk: None,
        descends: true,
    };

    fn span(first: u64, last: u64) -> IpSpan {
        IpSpan { first, last }
    }

    fn raw<'a>(
        r: &mut SampleReplay<'a>,
        pid: i32,
        ip: u64,
        chain: &'a [u8],
    ) -> Result<RawOutcome, Pending<'a>> {
        r.find_raw(0, pid, pid, 2, ip, 0, chain, AS_RECORDED)
    }

    #[test]
    fn raw_samples_are_found_until_their_process_changes() {
        let mut r = SampleReplay::default();
        let pending = raw(&mut r, 7, 0x1000, &[1, 2, 3]).expect_err("new sample");
        let resolved_pending = r
            .find_resolved(&[1], &[5], &[], AS_RECORDED)
            .expect_err("new resolved");
        let resolved = r.remember_resolved(
            resolved_pending,
            0,
            true,
            &[Effect {
                entry: 3,
                own: true,
                acc: false,
                cpumode: 2,
                level: b'.',
                node: NO_NODE,
            }],
            &[],
            &[],
            None,
        );
        r.remember_raw(
            pending,
            RawOutcome {
                no_map: false,
                resolved,
            },
        );
        let found = raw(&mut r, 7, 0x1000, &[1, 2, 3]).expect("remembered");
        assert!(r.repeat(found.resolved.expect("resolved"), 5));
        assert!(r.repeat(found.resolved.expect("resolved"), 6));
        let repeats: Vec<_> = r
            .take_repeats()
            .map(|(h, n, p, e)| (h, n, p, e.len(), e[0].entry))
            .collect();
        assert_eq!(repeats, [(0, 2, 11, 1, 3)]);
        assert_eq!(r.take_repeats().count(), 0, "taken once");
        // Another chain, another process: not the same sample.
        assert!(raw(&mut r, 7, 0x1000, &[1, 2, 4]).is_err());
        assert!(raw(&mut r, 8, 0x1000, &[1, 2, 3]).is_err());
        // Another process's mmap leaves it; this process's (or a kernel
        // map) does not.
        r.invalidate(Some(8));
        assert!(raw(&mut r, 7, 0x1000, &[1, 2, 3]).is_ok());
        r.invalidate(Some(7));
        assert!(raw(&mut r, 7, 0x1000, &[1, 2, 3]).is_err());
        r.invalidate(None);
        assert!(
            r.find_resolved(&[1], &[5], &[], AS_RECORDED).is_ok(),
            "resolved keys have no epoch"
        );
    }

    #[test]
    fn tails_are_found_unless_a_check_compared_the_first_frame() {
        let mut r = SampleReplay::default();
        let effect = EFFECT;
        let check_of = |frame: u32| Check {
            entry: 1,
            node: 0,
            version: 3,
            frame,
            cursor: None,
            child: 4,
        };
        // Frames at 0x10 (the first, held resolved in the head) and 0x20.
        let ips = [0x10, 0x20];
        let tail: &[u8] = &[0x20, 0, 0, 0, 0, 0, 0, 0];
        let remember = |r: &mut SampleReplay<'_>, head: u64, checks: &[Check]| {
            let pending = r
                .find_tail(&[head], 0x10, tail, AS_RECORDED)
                .map(|_| ())
                .expect_err("new tail");
            let resolved = r
                .find_resolved(&[head], &[5, 6], &ips, AS_RECORDED)
                .expect_err("new resolved");
            let pins: Vec<_> = checks.iter().map(|c| (c.frame, span(0, 0x100))).collect();
            let i = r
                .remember_resolved(resolved, 0, true, &[effect], checks, &pins, None)
                .expect("stored");
            r.remember_tail(pending, i, &ips);
            i
        };
        let plain = remember(&mut r, 1, &[]);
        let checked_further_out = remember(&mut r, 2, &[check_of(1)]);
        let checked_first = remember(&mut r, 3, &[check_of(0)]);
        let find = |r: &mut SampleReplay<'_>, head: u64, trees: TestTrees| {
            r.find_tail(&[head], 0x10, tail, trees).ok()
        };
        assert_eq!(find(&mut r, 1, AS_RECORDED), Some(plain));
        assert_eq!(find(&mut r, 2, AS_RECORDED), Some(checked_further_out));
        assert_eq!(
            find(&mut r, 3, AS_RECORDED),
            None,
            "its first frame's address decided: {checked_first}"
        );
        assert_eq!(find(&mut r, 4, AS_RECORDED), None, "another head");
        // A tree the checked sample walked turned: found again only by
        // its exact addresses (not held here).
        r.trees_changed(0, 1);
        let turned = TestTrees {
            version: 4,
            rewalk: Some(span(0, 0x100)),
            descends: true,
        };
        assert_eq!(find(&mut r, 1, turned), Some(plain));
        assert_eq!(find(&mut r, 2, turned), None);
        // A reordering below the plain sample's walk leaves it stale.
        r.reordered(0, 1, 0);
        assert_eq!(find(&mut r, 1, AS_RECORDED), None);
    }

    #[test]
    fn checked_samples_are_found_by_their_pinned_addresses() {
        let mut r = SampleReplay::default();
        let effect = EFFECT;
        let check = Check {
            entry: 1,
            node: 0,
            version: 3,
            frame: 1,
            cursor: None,
            child: 4,
        };
        let ips = [0x10, 0x20, 0x30];
        fn find(r: &mut SampleReplay, ips: &[u64], trees: TestTrees) -> Result<u32, ()> {
            r.find_resolved(&[1], &[5, 6, 7], ips, trees)
                .map_err(|_| ())
        }
        let pending = r
            .find_resolved(&[1], &[5, 6, 7], &ips, AS_RECORDED)
            .expect_err("new resolved");
        // Its walks compared frame 1's address, with siblings at 0x17
        // and 0x29.
        let pins = [(1, span(0x18, 0x28))];
        let i = r.remember_resolved(pending, 0, true, &[effect], &[check], &pins, None);
        assert!(i.is_some());
        assert_eq!(find(&mut r, &ips, AS_RECORDED).ok(), i);
        assert_eq!(
            find(&mut r, &[0x11, 0x27, 0x31], AS_RECORDED).ok(),
            i,
            "other frames' addresses do not matter, nor the pinned frame's within its span"
        );
        assert!(
            find(&mut r, &[0x10, 0x29, 0x30], AS_RECORDED).is_err(),
            "the pinned frame's beyond it does"
        );
        // A sibling was added: the tree turned.
        r.trees_changed(0, 1);
        let turned = |version, rewalk| TestTrees {
            version,
            rewalk,
            descends: true,
        };
        let stale = r
            .find_resolved(&[1], &[5, 6, 7], &ips, turned(4, None))
            .expect_err("the walk goes elsewhere");
        assert_eq!(stale.stale(), i);
        assert!(
            find(&mut r, &ips, turned(4, Some(span(0x1e, 0x22)))).is_err(),
            "a tree at the same version is walked the same way"
        );
        // Another sibling: the tree turned again.
        r.trees_changed(0, 1);
        assert_eq!(
            find(&mut r, &ips, turned(5, Some(span(0x1e, 0x22)))).ok(),
            i,
            "the walk still finds the child"
        );
        assert!(
            find(&mut r, &[0x10, 0x27, 0x30], turned(5, None)).is_err(),
            "the span narrowed to where the turned tree was walked"
        );
        // Reordering a node the walk went down from.
        r.reordered(0, 1, 2);
        let below = |descends| TestTrees {
            version: 5,
            rewalk: None,
            descends,
        };
        assert_eq!(find(&mut r, &ips, below(false)).ok(), i, "elsewhere");
        r.reordered(0, 1, 3);
        assert!(find(&mut r, &ips, below(true)).is_err(), "on the way");
    }

    #[test]
    fn a_taken_hash_is_not_overwritten() {
        let mut t = Table::default();
        let a = t.find(b"a", b"1").expect_err("empty table");
        assert!(t.insert(a, b"a", b"1", 7));
        // Pretend "b" collides with "a": it is not stored, "a" still is.
        assert!(!t.insert(a, b"b", b"1", 8));
        assert_eq!(t.find(b"a", b"1"), Ok(7));
        assert!(t.find(b"b", b"1").is_err());
        assert!(t.find(b"a", b"2").is_err(), "the tail is part of the key");
    }
}
