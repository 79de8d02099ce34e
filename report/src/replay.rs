//! Replaying repeated samples.
//!
//! Most samples of a profile repeat one seen before. Resolving such a
//! sample again (maps, symbols, frames, then with `--children` one hist
//! entry per chain element and a walk down every such entry's call tree,
//! quadratic in the chain's depth) reaches the same entries and tree nodes.
//! So [`SampleReplay`] remembers what the first resolution touched
//! ([`Effect`]s), and later copies only add their period there.
//!
//! Two tables find a remembered resolution:
//! * by the sample's raw bytes that resolution reads (attr, pid, tid,
//!   cpumode, ip, callchain), plus an epoch that changes whenever a COMM,
//!   FORK, EXIT or MMAP record could change what they resolve to (per
//!   process; kernel maps change every process's). A hit skips all
//!   resolution.
//! * by the resolved sample (its own entry, thread, and each frame's
//!   symbol): samples at different addresses of the same functions, or in
//!   another process of the same program, share these effects. A hit skips
//!   the per-frame entries and call trees. Where a call-tree walk went
//!   through one of perf's trees whose result hangs on the frames'
//!   addresses (see `CallTree::walked_mixed`), the key maps to a pin group
//!   instead: the frames whose addresses were compared, which with those
//!   addresses find the effects, valid while their [`Check`]s hold.
//!
//! Entries and tree nodes are only ever created by a first resolution, in
//! sample order, so the output (including perf's order of equal entries) is
//! the same as resolving every sample.

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
    /// The entry's call-tree node that got the hit, or [`NO_NODE`].
    pub node: u32,
}

/// A call tree whose walk a remembered sample's effects depend on: the
/// effects hold while the tree of `node`'s children in entry `entry`'s
/// call tree is still at `version` (see `CallTree::walked_mixed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Check {
    pub entry: u32,
    pub node: u32,
    pub version: u32,
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
        let hash = Self::hash(head, tail);
        match self.index.get(&hash) {
            Some(&i) => {
                let (start, end, stored_tail, value) = self.keys[i as usize];
                if self.heads.get(start as usize..end as usize) == Some(head) && stored_tail == tail
                {
                    Ok(value)
                } else {
                    Err(hash)
                }
            }
            None => Err(hash),
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
    /// Per raw key, its [`RawOutcome`] packed (see [`pack`]).
    raw_outcomes: Vec<u32>,
    /// Values: a resolved index, or with [`PINNED`] a pin group's.
    resolved: Table<'static>,
    /// Per pin group, its range of `pin_frames`: the frames whose
    /// addresses its samples' walks compared.
    pin_groups: Vec<(u32, u32)>,
    pin_frames: Vec<u32>,
    /// (pin group, those frames' addresses) -> index into
    /// `pinned_outcomes`, a resolved index.
    pinned: Table<'static>,
    pinned_outcomes: Vec<u32>,
    pinned_hits: u64,
    resolved_outcomes: Vec<Resolved>,
    /// Per resolved key: (samples, period) of its copies not yet added to
    /// the entries (see [`Self::repeat`]).
    repeats: Vec<(u64, u64)>,
    effects: Vec<Effect>,
    checks: Vec<Check>,
    /// Distinct resolved frames (see [`Self::frame_id`]).
    frames: HashMap<[u64; 5], u32>,
    /// Scratch for building keys.
    key: Vec<u8>,
    pinned_key: Vec<u8>,
}

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
}

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
    /// `raw_outcomes` (raw lookups) or `pinned_outcomes` (pinned ones).
    existing: Option<u32>,
    /// That outcome's resolved sample, whose place a new resolution can
    /// take (see [`SampleReplay::take_repeats_of`]).
    stale: Option<u32>,
    /// A resolved key of a pin group, whose pinned key was not found
    /// (`pinned` with its hash) or is stored at `existing`.
    pin_group: Option<u32>,
    pinned: Option<(u64, Vec<u8>)>,
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

    /// Forgets every remembered lookup, as when a call tree's walks stop
    /// being repeatable (the counted repeats stay).
    pub fn forget_lookups(&mut self) {
        self.raw.index.clear();
        self.resolved.index.clear();
        self.pinned.index.clear();
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
        valid: impl Fn(usize, &[Check]) -> bool,
    ) -> Result<RawOutcome, Pending<'a>> {
        let epoch = self.process_epochs.get(&pid).copied().unwrap_or(0);
        let mut key = std::mem::take(&mut self.key);
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
                let outcome = unpack(self.raw_outcomes[i as usize]);
                if let Some(r) = outcome.resolved {
                    let resolved = &self.resolved_outcomes[r as usize];
                    let (start, end) = resolved.checks;
                    let checks = &self.checks[start as usize..end as usize];
                    if !checks.is_empty() && !valid(resolved.hists as usize, checks) {
                        return Err(Pending {
                            hash: 0,
                            key,
                            tail: chain,
                            existing: Some(i),
                            stale: Some(r),
                            pin_group: None,
                            pinned: None,
                        });
                    }
                }
                self.key = key;
                Ok(outcome)
            }
            Err(hash) => Err(Pending {
                hash,
                key,
                tail: chain,
                existing: None,
                stale: None,
                pin_group: None,
                pinned: None,
            }),
        }
    }

    /// Remembers what a raw sample looked up with [`Self::find_raw`]
    /// resolved to.
    pub fn remember_raw(&mut self, pending: Pending<'a>, outcome: RawOutcome) {
        if let Some(i) = pending.existing {
            self.raw_outcomes[i as usize] = pack(outcome);
        } else if self.raw.insert(
            pending.hash,
            &pending.key,
            pending.tail,
            self.raw_outcomes.len() as u32,
        ) {
            self.raw_outcomes.push(pack(outcome));
        }
        self.key = pending.key;
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
        valid: impl Fn(usize, &[Check]) -> bool,
    ) -> Result<u32, Pending<'a>> {
        let mut key = std::mem::take(&mut self.key);
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
            pinned: None,
        };
        let value = match self.resolved.find(&pending.key, &[]) {
            Ok(v) => v,
            Err(hash) => {
                pending.hash = hash;
                return Err(pending);
            }
        };
        if value & PINNED == 0 {
            self.key = pending.key;
            return Ok(value);
        }
        let group = value & !PINNED;
        pending.pin_group = Some(group);
        let mut pinned_key = std::mem::take(&mut self.pinned_key);
        if !self.pinned_key_of(group, ips, &mut pinned_key) {
            return Err(pending);
        }
        match self.pinned.find(&pinned_key, &[]) {
            Ok(p) => {
                let r = self.pinned_outcomes[p as usize];
                let resolved = &self.resolved_outcomes[r as usize];
                let (start, end) = resolved.checks;
                if valid(
                    resolved.hists as usize,
                    &self.checks[start as usize..end as usize],
                ) {
                    self.pinned_hits += 1;
                    self.key = pending.key;
                    self.pinned_key = pinned_key;
                    return Ok(r);
                }
                pending.existing = Some(p);
                pending.stale = Some(r);
                pending.pinned = Some((0, pinned_key));
            }
            Err(hash) => pending.pinned = Some((hash, pinned_key)),
        }
        Err(pending)
    }

    /// The pinned key of `ips` in pin group `group`: false when a pinned
    /// frame is beyond them.
    fn pinned_key_of(&self, group: u32, ips: &[u64], key: &mut Vec<u8>) -> bool {
        key.clear();
        key.extend_from_slice(&group.to_le_bytes());
        let Some(&(start, end)) = self.pin_groups.get(group as usize) else {
            return false;
        };
        for &f in &self.pin_frames[start as usize..end as usize] {
            match ips.get(f as usize) {
                Some(ip) => key.extend_from_slice(&ip.to_le_bytes()),
                None => return false,
            }
        }
        true
    }

    /// Remembers a resolved sample's effects on the entries of hists
    /// `hists`; returns its index for [`RawOutcome::resolved`] (`None` when
    /// it could not be stored).
    ///
    /// Effects that hold only while `checks` do depend on the addresses of
    /// the frames those walks compared (`pins`, indexes into `ips`): they
    /// are found by the resolved key plus those addresses.
    #[allow(clippy::too_many_arguments)]
    pub fn remember_resolved(
        &mut self,
        mut pending: Pending<'a>,
        hists: usize,
        callchain_period: bool,
        effects: &[Effect],
        checks: &[Check],
        pins: &[u32],
        ips: &[u64],
        stale: Option<u32>,
    ) -> Option<u32> {
        let i = self.store_resolved(hists, callchain_period, effects, checks, stale);
        if let Some(i) = i {
            if pending.pin_group.is_some() || !checks.is_empty() {
                self.pin(&mut pending, i, pins, ips);
            } else {
                self.resolved.insert(pending.hash, &pending.key, &[], i);
            }
        }
        self.key = pending.key;
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
                    self.effects[es as usize..ee as usize].copy_from_slice(effects);
                    self.checks[cs as usize..ce as usize].copy_from_slice(checks);
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
        let effects_start = self.effects.len() as u32;
        self.effects.extend_from_slice(effects);
        self.resolved_outcomes.push(Resolved {
            effects: (effects_start, self.effects.len() as u32),
            checks: (checks_start, self.checks.len() as u32),
            hists: hists as u32,
            callchain_period,
        });
        self.repeats.push((0, 0));
        Some(i)
    }

    /// Finds resolved sample `i` by its pinned key from now on: under the
    /// resolved key's pin group, or a new one pinning `pins`.
    fn pin(&mut self, pending: &mut Pending<'a>, i: u32, pins: &[u32], ips: &[u64]) {
        if let Some(p) = pending.existing {
            if let Some(o) = self.pinned_outcomes.get_mut(p as usize) {
                *o = i;
            }
            return;
        }
        // Broken frame-pointer chains pin garbage addresses that never
        // repeat: stop pinning while few pinned keys are found again.
        if self.pinned_outcomes.len() as u64 > PINS_ON_TRIAL + 8 * self.pinned_hits {
            return;
        }
        match pending.pin_group {
            Some(group) => {
                // Samples that match the group's pins match this one's
                // only if those include its own.
                let (start, end) = self.pin_groups[group as usize];
                let pinned = &self.pin_frames[start as usize..end as usize];
                if !pins.iter().all(|f| pinned.binary_search(f).is_ok()) {
                    return;
                }
            }
            None => {
                let (Ok(group), Ok(start), Ok(end)) = (
                    u32::try_from(self.pin_groups.len()),
                    u32::try_from(self.pin_frames.len()),
                    u32::try_from(self.pin_frames.len() + pins.len()),
                ) else {
                    return;
                };
                if group >= PINNED
                    || !self
                        .resolved
                        .insert(pending.hash, &pending.key, &[], group | PINNED)
                {
                    return;
                }
                self.pin_frames.extend_from_slice(pins);
                self.pin_groups.push((start, end));
                let mut key = std::mem::take(&mut self.pinned_key);
                if !self.pinned_key_of(group, ips, &mut key) {
                    return;
                }
                let Err(hash) = self.pinned.find(&key, &[]) else {
                    return;
                };
                pending.pinned = Some((hash, key));
            }
        }
        let Some((hash, key)) = pending.pinned.take() else {
            return;
        };
        let Ok(p) = u32::try_from(self.pinned_outcomes.len()) else {
            return;
        };
        if self.pinned.insert(hash, &key, &[], p) {
            self.pinned_outcomes.push(i);
        }
        self.pinned_key = key;
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

    fn raw<'a>(
        r: &mut SampleReplay<'a>,
        pid: i32,
        ip: u64,
        chain: &'a [u8],
    ) -> Result<RawOutcome, Pending<'a>> {
        r.find_raw(0, pid, pid, 2, ip, 0, chain, |_, _| true)
    }

    #[test]
    fn raw_samples_are_found_until_their_process_changes() {
        let mut r = SampleReplay::default();
        let pending = raw(&mut r, 7, 0x1000, &[1, 2, 3]).expect_err("new sample");
        let resolved_pending = r
            .find_resolved(&[1], &[5], &[], |_, _| true)
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
                node: NO_NODE,
            }],
            &[],
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
            r.find_resolved(&[1], &[5], &[], |_, _| true).is_ok(),
            "resolved keys have no epoch"
        );
    }

    #[test]
    fn checked_samples_are_found_by_their_pinned_addresses() {
        let mut r = SampleReplay::default();
        let effect = Effect {
            entry: 1,
            own: true,
            acc: false,
            cpumode: 2,
            node: 4,
        };
        let check = Check {
            entry: 1,
            node: 0,
            version: 3,
        };
        let valid = |_: usize, c: &[Check]| c.iter().all(|c| c.version == 3);
        let ips = [0x10, 0x20, 0x30];
        let pending = r
            .find_resolved(&[1], &[5, 6, 7], &ips, valid)
            .expect_err("new resolved");
        // Its walks compared frame 1's address.
        let i = r.remember_resolved(pending, 0, true, &[effect], &[check], &[1], &ips, None);
        assert!(i.is_some());
        assert_eq!(r.find_resolved(&[1], &[5, 6, 7], &ips, valid).ok(), i);
        assert_eq!(
            r.find_resolved(&[1], &[5, 6, 7], &[0x11, 0x20, 0x31], valid)
                .ok(),
            i,
            "other frames' addresses do not matter"
        );
        assert!(
            r.find_resolved(&[1], &[5, 6, 7], &[0x10, 0x21, 0x30], valid)
                .is_err(),
            "the pinned frame's does"
        );
        let stale = r
            .find_resolved(&[1], &[5, 6, 7], &ips, |_, _| false)
            .expect_err("checks fail");
        assert_eq!(stale.stale(), i);
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
