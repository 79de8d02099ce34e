//! Parsing of perf event names (`-e EVENT[,EVENT...]`).
//!
//! Supported: the generic hardware events (`cycles`, `instructions`, ...,
//! `PERF_TYPE_HARDWARE`), the software events (`cpu-clock`, `task-clock`,
//! `page-faults`, ..., `dummy`, `PERF_TYPE_SOFTWARE`) and raw events `rNNNN`
//! (`PERF_TYPE_RAW`, hex config), and tracepoints `system:name` (either
//! part a glob, `sched:*`; `PERF_TYPE_TRACEPOINT`, the id from tracefs, see
//! [`crate::tracefs`]), each optionally followed by `:modifiers` with
//! perf's semantics:
//!
//! * `u`, `k`, `h`: count only user / kernel / hypervisor (the first of them
//!   excludes all three, then each letter re-includes its level);
//! * `G` (guest only → `exclude_host`), `H` (host only → `exclude_guest`);
//! * `p`, `pp`, `ppp`: `precise_ip` 1..3; `P`: maximum precision (perf tries
//!   3→2→1→0, see [`EventSpec::lower_precise`]);
//! * `I` exclude_idle, `S` sample_read, `D` pinned, `e` exclusive, `W` weak
//!   group (ignored here but accepted).
//!
//! Like perf 6.1, explicitly given events without modifiers get
//! `exclude_guest = 1`; with modifiers only `u` and `p` set it (`task-clock:k`
//! has exclude_guest 0); the default event ([`EventSpec::default_event`],
//! `cycles:P`) has it too (perf 6.1.187; earlier 6.1 releases left it
//! out). When a
//! hardware `cycles` event fails to open with `ENOENT`/`ENXIO`/`ENODEV`/
//! `EOPNOTSUPP`, [`EventSpec::fallback`] gives the software `cpu-clock` event
//! perf falls back to, named from the attr bits (`cpu-clock:pppH`).
#![forbid(unsafe_code)]

use std::fmt;

use crate::sys::{flags, perf_type, PerfEventAttr};

/// A parsed event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// The event name as perf displays it: what the user wrote (e.g.
    /// `cycles:u`, `r1a2`), or a name derived from the attr for fallbacks.
    pub name: String,
    /// `PERF_TYPE_*`.
    pub type_: u32,
    pub config: u64,
    pub exclude_user: bool,
    pub exclude_kernel: bool,
    pub exclude_hv: bool,
    pub exclude_host: bool,
    pub exclude_guest: bool,
    pub exclude_idle: bool,
    /// 0..=3.
    pub precise_ip: u8,
    /// `P` modifier: use the highest precise_ip the PMU accepts.
    pub precise_max: bool,
    /// `S` modifier.
    pub sample_read: bool,
    /// `D` modifier.
    pub pinned: bool,
    /// `e` modifier.
    pub exclusive: bool,
    /// `W` modifier.
    pub weak_group: bool,
    /// A tracepoint's system and name.
    pub tracepoint: Option<(String, String)>,
    /// In a group of two or more (`{a,b}`): the leader's index in the
    /// event list (the leader's own index for the leader).
    pub group_leader: Option<usize>,
    /// A group member other than the leader.
    pub group_member: bool,
    /// `--filter` after this event's `-e`: a tracepoint filter the kernel
    /// applies (`PERF_EVENT_IOC_SET_FILTER`).
    pub filter: Option<String>,
    /// `-G NAME`: count only in this cgroup (a path below the cgroup
    /// mount perf uses), system-wide.
    pub cgroup: Option<String>,
    /// `EVENT/TERMS/`: settings of this event that override the command
    /// line's.
    pub terms: EventTerms,
}

/// perf's per-event config terms (`cpu-clock/period=100000,call-graph=fp/`),
/// applied after the command line's settings as perf's
/// `evsel__apply_config_terms` does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventTerms {
    /// `period=N`: a fixed period (no PERIOD in the samples).
    pub period: Option<u64>,
    /// `freq=N`: a frequency.
    pub freq: Option<u64>,
    /// `call-graph=no|fp|dwarf`.
    pub call_graph: Option<TermCallGraph>,
    /// `stack-size=N`: bytes of user stack per sample (DWARF).
    pub stack_size: Option<u32>,
    /// `max-stack=N`: the kernel's callchain depth limit.
    pub max_stack: Option<u16>,
    /// `inherit` / `no-inherit`.
    pub inherit: Option<bool>,
    /// `time` / `time=0`: whether samples carry TIME.
    pub time: Option<bool>,
}

impl EventTerms {
    /// Whether a term changes the event's call graph.
    pub fn sets_call_graph(&self) -> bool {
        self.call_graph.is_some() || self.stack_size.is_some() || self.max_stack.is_some()
    }
}

/// A `call-graph=` term's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermCallGraph {
    No,
    Fp,
    Dwarf,
}

/// The config terms prec takes (perf has more, for PMU and AUX events).
const VALID_TERMS: &str =
    "name,period,freq,time,call-graph,stack-size,no-inherit,inherit,max-stack";

/// Parses the terms between an event's slashes into `terms`; the event's
/// new name with `name=`.
fn parse_terms(text: &str, terms: &mut EventTerms) -> Result<Option<String>, String> {
    let mut name = None;
    for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (key, value) = match term.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (term, None),
        };
        let number = |v: Option<&str>| -> Result<u64, String> {
            let v = v.ok_or_else(|| format!("'{key}' needs a value"))?;
            let parsed = match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            };
            parsed.map_err(|_| format!("'{key}': not a number: '{v}'"))
        };
        match key {
            "period" => terms.period = Some(number(value)?),
            "freq" => terms.freq = Some(number(value)?),
            "stack-size" => {
                let n = number(value)?;
                terms.stack_size =
                    Some(u32::try_from(n).map_err(|_| format!("stack-size too big: {n}"))?);
            }
            "max-stack" => {
                let n = number(value)?;
                terms.max_stack =
                    Some(u16::try_from(n).map_err(|_| format!("max-stack too big: {n}"))?);
            }
            "call-graph" => {
                terms.call_graph = Some(match value {
                    Some("no") => TermCallGraph::No,
                    Some("fp") => TermCallGraph::Fp,
                    Some("dwarf") => TermCallGraph::Dwarf,
                    _ => return Err(format!("unknown call-graph mode '{}'", value.unwrap_or(""))),
                })
            }
            "inherit" => terms.inherit = Some(value.is_none_or(|v| v != "0")),
            "no-inherit" => terms.inherit = Some(false),
            "time" => terms.time = Some(value.is_none_or(|v| v != "0")),
            "name" => name = Some(value.unwrap_or("").to_string()),
            _ => return Err(format!("unknown term '{key}'")),
        }
    }
    Ok(name)
}

/// An event string that could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventParseError {
    /// The offending event term (e.g. `foo` or `cycles:q`).
    pub event: String,
    /// What was wrong.
    pub reason: String,
    /// Whether the list of valid event names helps (not for a tracepoint
    /// that could not be found).
    pub list_events: bool,
}

impl fmt::Display for EventParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "event syntax error: '{}'\n  \\___ {}",
            self.event, self.reason
        )?;
        if self.list_events {
            let names: Vec<&str> = EVENT_NAMES.iter().map(|(n, _, _)| *n).collect();
            write!(
                f,
                "\nValid events: {}, rNNN (raw) or SYSTEM:TRACEPOINT (as in /sys/kernel/tracing/events); \
                 modifiers after ':' (u, k, h, p, P, ...)",
                names.join(", ")
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for EventParseError {}

/// (name, type, config) for every symbolic event name.
pub const EVENT_NAMES: &[(&str, u32, u64)] = &[
    ("cpu-cycles", perf_type::HARDWARE, 0),
    ("cycles", perf_type::HARDWARE, 0),
    ("instructions", perf_type::HARDWARE, 1),
    ("cache-references", perf_type::HARDWARE, 2),
    ("cache-misses", perf_type::HARDWARE, 3),
    ("branch-instructions", perf_type::HARDWARE, 4),
    ("branches", perf_type::HARDWARE, 4),
    ("branch-misses", perf_type::HARDWARE, 5),
    ("bus-cycles", perf_type::HARDWARE, 6),
    ("stalled-cycles-frontend", perf_type::HARDWARE, 7),
    ("idle-cycles-frontend", perf_type::HARDWARE, 7),
    ("stalled-cycles-backend", perf_type::HARDWARE, 8),
    ("idle-cycles-backend", perf_type::HARDWARE, 8),
    ("ref-cycles", perf_type::HARDWARE, 9),
    ("cpu-clock", perf_type::SOFTWARE, 0),
    ("task-clock", perf_type::SOFTWARE, 1),
    ("page-faults", perf_type::SOFTWARE, 2),
    ("faults", perf_type::SOFTWARE, 2),
    ("context-switches", perf_type::SOFTWARE, 3),
    ("cs", perf_type::SOFTWARE, 3),
    ("cpu-migrations", perf_type::SOFTWARE, 4),
    ("migrations", perf_type::SOFTWARE, 4),
    ("minor-faults", perf_type::SOFTWARE, 5),
    ("major-faults", perf_type::SOFTWARE, 6),
    ("alignment-faults", perf_type::SOFTWARE, 7),
    ("emulation-faults", perf_type::SOFTWARE, 8),
    ("dummy", perf_type::SOFTWARE, 9),
    // perf's tool event for perf stat; recorded, a dummy of that name.
    ("duration_time", perf_type::SOFTWARE, 9),
];

/// `PERF_COUNT_HW_CPU_CYCLES`.
pub const HW_CPU_CYCLES: u64 = 0;
/// `PERF_COUNT_SW_CPU_CLOCK`.
pub const SW_CPU_CLOCK: u64 = 0;
/// `PERF_COUNT_SW_TASK_CLOCK`.
pub const SW_TASK_CLOCK: u64 = 1;

impl EventSpec {
    /// A clock event asked for by name (`cpu-clock`, `task-clock`): perf
    /// gives it the unit `msec` and the scale 1e-6 (its EVENT_UPDATE
    /// records). The `cpu-clock` a `cycles` event falls back to has none.
    pub fn is_clock(&self) -> bool {
        self.type_ == perf_type::SOFTWARE
            && (self.config == SW_CPU_CLOCK || self.config == SW_TASK_CLOCK)
    }

    fn base(name: &str, type_: u32, config: u64) -> EventSpec {
        EventSpec {
            name: name.to_string(),
            type_,
            config,
            exclude_user: false,
            exclude_kernel: false,
            exclude_hv: false,
            exclude_host: false,
            exclude_guest: false,
            exclude_idle: false,
            precise_ip: 0,
            precise_max: false,
            sample_read: false,
            pinned: false,
            exclusive: false,
            weak_group: false,
            tracepoint: None,
            group_leader: None,
            group_member: false,
            filter: None,
            cgroup: None,
            terms: EventTerms::default(),
        }
    }

    /// perf's default event `cycles:P`: precise_ip starts at 3, and
    /// exclude_guest is set (perf 6.1.187's `evlist__add_default` goes
    /// through `event_attr_init`; its fallback is named `cpu-clock:pppH`).
    pub fn default_event() -> EventSpec {
        let mut e = EventSpec::base("cycles:P", perf_type::HARDWARE, HW_CPU_CYCLES);
        e.precise_ip = 3;
        e.precise_max = true;
        e.exclude_guest = true;
        e
    }

    /// [`Self::default_event`] as perf 6.1 makes it on the CPU of `cpuid`
    /// (`vendor,family,model,stepping`): on AMD, its
    /// `arch_evsel__fixup_new_cycles` clears exclude_guest (precise cycles
    /// use IBS there, which cannot filter guests), so the fallback is named
    /// `cpu-clock:ppp`.
    pub fn default_event_for(cpuid: Option<&str>) -> EventSpec {
        let mut e = Self::default_event();
        if cpuid.is_some_and(|c| c.starts_with("AuthenticAMD")) {
            e.exclude_guest = false;
        }
        e
    }

    /// Parses one event term such as `cycles:u`, `task-clock`, `r1a2:k`.
    /// Names are matched case-insensitively; the name is kept as written.
    pub fn parse(term: &str) -> Result<EventSpec, EventParseError> {
        let err = |reason: &str| EventParseError {
            event: term.to_string(),
            reason: reason.to_string(),
            list_events: true,
        };
        let term_trim = term.trim();
        if term_trim.is_empty() {
            return Err(err("empty event"));
        }
        // `EVENT/TERMS/` with modifiers after the slash, with or without
        // a colon.
        let mut terms = EventTerms::default();
        let mut renamed = None;
        let (base, mods) = match term_trim.split_once('/') {
            Some((b, rest)) => {
                let (inside, after) = rest.split_once('/').ok_or_else(|| err("parser error"))?;
                renamed = parse_terms(inside, &mut terms).map_err(|reason| EventParseError {
                    event: term_trim.to_string(),
                    reason: format!("{reason}\n\nvalid terms: {VALID_TERMS}"),
                    list_events: false,
                })?;
                // Modifiers follow the slash directly (perf: `/:k` is a
                // syntax error).
                if after.starts_with(':') {
                    return Err(err("parser error"));
                }
                (b, (!after.is_empty()).then_some(after))
            }
            None => match term_trim.split_once(':') {
                Some((b, m)) => (b, Some(m)),
                None => (term_trim, None),
            },
        };
        let lower = base.to_ascii_lowercase();
        let mut spec = if let Some(&(_, t, c)) = EVENT_NAMES.iter().find(|(n, _, _)| *n == lower) {
            EventSpec::base(term_trim, t, c)
        } else if let Some(hex) = base.strip_prefix('r').filter(|h| !h.is_empty()) {
            let hex = hex.strip_prefix("0x").unwrap_or(hex);
            let config = u64::from_str_radix(hex, 16).map_err(|_| err("parser error"))?;
            EventSpec::base(term_trim, perf_type::RAW, config)
        } else {
            return Err(err("parser error"));
        };
        match mods {
            // perf 6.1: an event without modifiers gets exclude_guest=1; with
            // modifiers only `u` and `p` set it (verified with perf evlist).
            None => spec.exclude_guest = true,
            Some(m) => spec.apply_modifiers(m).map_err(|r| err(&r))?,
        }
        spec.terms = terms;
        if let Some(name) = renamed {
            spec.name = name;
        }
        Ok(spec)
    }

    fn apply_modifiers(&mut self, m: &str) -> Result<(), String> {
        if m.is_empty() {
            return Err("empty modifier".to_string());
        }
        let (mut eu, mut ek, mut eh) = (self.exclude_user, self.exclude_kernel, self.exclude_hv);
        let (mut e_host, mut e_guest) = (self.exclude_host, self.exclude_guest);
        let mut exclude = eu || ek || eh;
        let mut exclude_gh = false;
        let mut precise = 0u8;
        for c in m.chars() {
            match c {
                'u' | 'k' | 'h' => {
                    if !exclude {
                        exclude = true;
                        eu = true;
                        ek = true;
                        eh = true;
                    }
                    if c == 'u' && !exclude_gh {
                        e_guest = true;
                    }
                    match c {
                        'u' => eu = false,
                        'k' => ek = false,
                        _ => eh = false,
                    }
                }
                'G' | 'H' => {
                    if !exclude_gh {
                        exclude_gh = true;
                        e_host = true;
                        e_guest = true;
                    }
                    if c == 'G' {
                        e_guest = false;
                    } else {
                        e_host = false;
                    }
                }
                'p' => {
                    // "use of precise requires exclude_guest" (perf)
                    if !exclude_gh {
                        e_guest = true;
                    }
                    precise += 1;
                    if precise > 3 {
                        return Err(format!("invalid precise modifier '{m}' (at most ppp)"));
                    }
                }
                'P' => self.precise_max = true,
                'I' => self.exclude_idle = true,
                'S' => self.sample_read = true,
                'D' => self.pinned = true,
                'e' => self.exclusive = true,
                'W' => self.weak_group = true,
                _ => return Err(format!("unknown modifier '{c}'")),
            }
        }
        if self.precise_max {
            precise = 3;
        }
        self.exclude_user = eu;
        self.exclude_kernel = ek;
        self.exclude_hv = eh;
        self.exclude_host = e_host;
        self.exclude_guest = e_guest;
        self.precise_ip = precise;
        Ok(())
    }

    /// The event `perf record` would switch to after this one failed to open
    /// with `ENOENT`/`ENXIO`/`ENODEV`/`EOPNOTSUPP`: hardware `cycles` →
    /// software `cpu-clock`, keeping all modifiers, renamed from its attr bits
    /// (`cycles:P` → `cpu-clock:pppH`, `cycles:u` → `cpu-clock:u`). `None` for
    /// every other event.
    pub fn fallback(&self) -> Option<EventSpec> {
        if self.type_ != perf_type::HARDWARE || self.config != HW_CPU_CYCLES {
            return None;
        }
        let mut e = self.clone();
        e.type_ = perf_type::SOFTWARE;
        e.config = SW_CPU_CLOCK;
        e.name = format!("cpu-clock{}", e.modifier_suffix());
        Some(e)
    }

    /// For `P` (precise_max) events: the same event with precise_ip one lower,
    /// to retry after `EOPNOTSUPP`/`EINVAL`/`ENOENT`; `None` when not
    /// `precise_max` or already 0.
    pub fn lower_precise(&self) -> Option<EventSpec> {
        if !self.precise_max || self.precise_ip == 0 {
            return None;
        }
        let mut e = self.clone();
        e.precise_ip -= 1;
        Some(e)
    }

    /// The modifier suffix perf derives from an attr (`evsel__add_modifiers`):
    /// included levels `k`,`u`,`h` if any level is excluded, then `p` ×
    /// precise_ip, then `H`/`G` for non-default guest/host exclusion; empty or
    /// starting with `:`.
    pub fn modifier_suffix(&self) -> String {
        let mut s = String::new();
        let mut exclude_guest_default = false;
        if self.exclude_kernel || self.exclude_user || self.exclude_hv {
            if !self.exclude_kernel {
                s.push('k');
            }
            if !self.exclude_user {
                s.push('u');
            }
            if !self.exclude_hv {
                s.push('h');
            }
            exclude_guest_default = true;
        }
        if self.precise_ip > 0 {
            s.push_str(&"ppp"[..usize::from(self.precise_ip.min(3))]);
            exclude_guest_default = true;
        }
        if self.exclude_host || self.exclude_guest == exclude_guest_default {
            if !self.exclude_host {
                s.push('H');
            }
            if !self.exclude_guest {
                s.push('G');
            }
        }
        if s.is_empty() {
            s
        } else {
            format!(":{s}")
        }
    }

    /// A [`PerfEventAttr`] with type, config and the modifier bits set (size
    /// 128); the caller adds sampling/tracking settings.
    pub fn to_attr(&self) -> PerfEventAttr {
        let mut a = PerfEventAttr::new(self.type_, self.config);
        a.set_flag(flags::EXCLUDE_USER, self.exclude_user);
        a.set_flag(flags::EXCLUDE_KERNEL, self.exclude_kernel);
        a.set_flag(flags::EXCLUDE_HV, self.exclude_hv);
        a.set_flag(flags::EXCLUDE_HOST, self.exclude_host);
        a.set_flag(flags::EXCLUDE_GUEST, self.exclude_guest);
        a.set_flag(flags::EXCLUDE_IDLE, self.exclude_idle);
        a.set_flag(flags::PINNED, self.pinned);
        a.set_flag(flags::EXCLUSIVE, self.exclusive);
        a.set_precise_ip(self.precise_ip);
        a
    }
}

/// Parses a comma-separated `-e` argument (`cycles:u,task-clock`,
/// `sched:sched_switch`, `{cpu-clock,page-faults}:S`); a tracepoint glob
/// gives every tracepoint it matches. A group's modifiers apply to each of
/// its events, as in perf.
pub fn parse_event_list(s: &str) -> Result<Vec<EventSpec>, EventParseError> {
    let mut out = Vec::new();
    for term in split_terms(s) {
        let trimmed = term.trim();
        let Some(group) = trimmed.strip_prefix('{') else {
            out.extend(parse_term(term)?);
            continue;
        };
        let syntax = |reason: &str| EventParseError {
            event: trimmed.to_string(),
            reason: reason.to_string(),
            list_events: false,
        };
        let (inner, mods) = group
            .split_once('}')
            .ok_or_else(|| syntax("no closing '}'"))?;
        if inner.contains('{') {
            return Err(syntax("groups do not nest"));
        }
        let mods = match mods {
            "" => None,
            m => Some(
                m.strip_prefix(':')
                    .ok_or_else(|| syntax("expected ':' after '}'"))?,
            ),
        };
        let leader = out.len();
        let mut members = Vec::new();
        for t in split_terms(inner) {
            members.extend(parse_term(t)?);
        }
        let grouped = members.len() > 1;
        for (i, mut m) in members.into_iter().enumerate() {
            if let Some(mods) = mods {
                m.apply_modifiers(mods).map_err(|r| syntax(&r))?;
            }
            if grouped {
                m.group_leader = Some(leader);
                m.group_member = i > 0;
            }
            out.push(m);
        }
    }
    Ok(out)
}

/// Splits at the commas outside braces and an event's `/TERMS/`.
fn split_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start, mut in_terms) = (0i32, 0, false);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            '/' => in_terms = !in_terms,
            ',' if depth == 0 && !in_terms => {
                terms.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&s[start..]);
    terms
}

/// One event term, or the tracepoints a tracepoint term names.
fn parse_term(term: &str) -> Result<Vec<EventSpec>, EventParseError> {
    match EventSpec::parse(term) {
        Ok(e) => Ok(vec![e]),
        Err(e) => match tracepoint_parts(term) {
            Some((system, name, mods)) => tracepoints(term, system, name, mods),
            None => Err(e),
        },
    }
}

/// `system:name[:modifiers]` when `term` reads as a tracepoint.
fn tracepoint_parts(term: &str) -> Option<(&str, &str, Option<&str>)> {
    let mut parts = term.trim().splitn(3, ':');
    let (system, name) = (parts.next()?, parts.next()?);
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-*?.".contains(&b))
    };
    (ok(system) && ok(name)).then_some((system, name, parts.next()))
}

fn tracepoints(
    term: &str,
    system: &str,
    name: &str,
    mods: Option<&str>,
) -> Result<Vec<EventSpec>, EventParseError> {
    let err = |reason: String| EventParseError {
        event: term.trim().to_string(),
        reason,
        list_events: false,
    };
    let found = crate::tracefs::find(system, name).map_err(|e| err(e.to_string()))?;
    found
        .into_iter()
        .map(|tp| {
            let mut full = format!("{}:{}", tp.system, tp.name);
            if let Some(m) = mods {
                full = format!("{full}:{m}");
            }
            let mut spec = EventSpec::base(&full, perf_type::TRACEPOINT, tp.id);
            match mods {
                None => spec.exclude_guest = true,
                Some(m) => spec.apply_modifiers(m).map_err(err)?,
            }
            spec.tracepoint = Some((tp.system, tp.name));
            Ok(spec)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_types() {
        let l = parse_event_list("cycles,task-clock,cs,r1a2,branch-misses").unwrap();
        let tc: Vec<_> = l.iter().map(|e| (e.type_, e.config)).collect();
        assert_eq!(tc, vec![(0, 0), (1, 1), (1, 3), (4, 0x1a2), (0, 5)]);
        assert_eq!(l[3].name, "r1a2");
        assert!(l.iter().all(|e| e.exclude_guest && !e.exclude_kernel));
        assert_eq!(EventSpec::parse("dummy").unwrap().config, 9);
        assert_eq!(EventSpec::parse("faults").unwrap().config, 2);
    }

    #[test]
    fn modifiers() {
        let e = EventSpec::parse("cycles:u").unwrap();
        assert!(!e.exclude_user && e.exclude_kernel && e.exclude_hv);
        let e = EventSpec::parse("instructions:kpp").unwrap();
        assert!(e.exclude_user && !e.exclude_kernel && e.exclude_hv);
        assert_eq!(e.precise_ip, 2);
        let e = EventSpec::parse("cpu-clock:uk").unwrap();
        assert!(!e.exclude_user && !e.exclude_kernel && e.exclude_hv);
        let e = EventSpec::parse("cycles:G").unwrap();
        assert!(e.exclude_host && !e.exclude_guest);
        let e = EventSpec::parse("cycles:H").unwrap();
        assert!(!e.exclude_host && e.exclude_guest);
        let a = EventSpec::parse("task-clock:uppp").unwrap().to_attr();
        assert_eq!(a.precise_ip(), 3);
        assert!(a.has_flag(flags::EXCLUDE_KERNEL | flags::EXCLUDE_HV));
        assert!(EventSpec::parse("cycles:pppp").is_err());
        assert!(EventSpec::parse("cycles:q").is_err());
    }

    #[test]
    fn tracepoint_syntax() {
        assert_eq!(
            tracepoint_parts("sched:sched_switch"),
            Some(("sched", "sched_switch", None))
        );
        assert_eq!(
            tracepoint_parts("syscalls:sys_enter_*:u"),
            Some(("syscalls", "sys_enter_*", Some("u")))
        );
        assert_eq!(tracepoint_parts("cycles"), None);
        assert_eq!(tracepoint_parts("a:"), None);
        assert_eq!(tracepoint_parts("a b:c"), None);
        // A raw event with modifiers stays raw.
        assert_eq!(parse_event_list("r1a2:u").unwrap()[0].type_, 4);
    }

    #[test]
    fn config_terms() {
        let l = parse_event_list("cpu-clock/period=1000,call-graph=fp/u,task-clock/name=t/")
            .expect("terms parse");
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].name, "cpu-clock/period=1000,call-graph=fp/u");
        assert_eq!(l[0].terms.period, Some(1000));
        assert_eq!(l[0].terms.call_graph, Some(TermCallGraph::Fp));
        assert!(l[0].exclude_kernel && !l[0].exclude_user);
        assert_eq!(l[1].name, "t");
        for bad in [
            "cpu-clock/period=1/:k",
            "cpu-clock/bogus=1/",
            "cpu-clock/period=x/",
        ] {
            assert!(parse_event_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn groups() {
        let l = parse_event_list("{cpu-clock,page-faults}:S,task-clock").unwrap();
        let g: Vec<_> = l
            .iter()
            .map(|e| {
                (
                    e.name.as_str(),
                    e.group_leader,
                    e.group_member,
                    e.sample_read,
                )
            })
            .collect();
        assert_eq!(
            g,
            [
                ("cpu-clock", Some(0), false, true),
                ("page-faults", Some(0), true, true),
                ("task-clock", None, false, false)
            ]
        );
        let l = parse_event_list("task-clock,{cpu-clock:k,page-faults}:u").unwrap();
        assert_eq!(l[1].group_leader, Some(1));
        // The group's `u` on top of the event's own `k`, as perf.
        assert!(!l[1].exclude_user && !l[1].exclude_kernel);
        assert!(!l[2].exclude_user && l[2].exclude_kernel);
        // One event in braces is no group.
        assert_eq!(
            parse_event_list("{cpu-clock}").unwrap()[0].group_leader,
            None
        );
        for bad in [
            "{cpu-clock",
            "{cpu-clock}u",
            "{{cpu-clock}}",
            "{cpu-clock,nope}",
        ] {
            assert!(parse_event_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors() {
        let e = EventSpec::parse("foo").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("event syntax error: 'foo'"), "{msg}");
        assert!(msg.contains("Valid events: ") && msg.contains("cpu-clock"));
        assert!(parse_event_list("cycles,,").is_err());
        assert!(EventSpec::parse("rzz").is_err());
        assert!(EventSpec::parse("r").is_err());
    }

    #[test]
    fn fallback_like_perf() {
        let d = EventSpec::default_event();
        assert_eq!(d.name, "cycles:P");
        let f = d.fallback().unwrap();
        assert_eq!((f.type_, f.config, f.precise_ip), (1, 0, 3));
        assert_eq!(f.name, "cpu-clock:pppH");
        let amd = EventSpec::default_event_for(Some("AuthenticAMD,25,1,1"));
        assert_eq!(amd.fallback().unwrap().name, "cpu-clock:ppp");
        let intel = EventSpec::default_event_for(Some("GenuineIntel,6,85,7"));
        assert_eq!(intel.fallback().unwrap().name, "cpu-clock:pppH");
        // perf under paranoid 2 for non-root: exclude_kernel added
        let mut d2 = EventSpec::default_event();
        d2.exclude_kernel = true;
        assert_eq!(d2.fallback().unwrap().name, "cpu-clock:uhpppH");
        assert!(EventSpec::parse("instructions")
            .unwrap()
            .fallback()
            .is_none());
        assert!(EventSpec::parse("task-clock").unwrap().fallback().is_none());
        assert_eq!(d.lower_precise().unwrap().precise_ip, 2);
        assert!(EventSpec::parse("cycles")
            .unwrap()
            .lower_precise()
            .is_none());
        // names perf 6.1 printed on this VM (perf evlist)
        for (ev, want) in [
            ("cycles:u", "cpu-clock:uH"),
            ("cycles", "cpu-clock"),
            ("cycles:k", "cpu-clock:k"),
            ("cycles:uk", "cpu-clock:kuH"),
            ("cycles:p", "cpu-clock:pH"),
        ] {
            assert_eq!(
                EventSpec::parse(ev).unwrap().fallback().unwrap().name,
                want,
                "{ev}"
            );
        }
        assert!(!EventSpec::parse("task-clock:k").unwrap().exclude_guest);
        assert!(!EventSpec::parse("task-clock:P").unwrap().exclude_guest);
    }
}
