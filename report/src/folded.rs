//! Folded stacks (`comm;outer;...;leaf count`), exactly as
//! `inferno-collapse-perf` (and FlameGraph's `stackcollapse-perf.pl`)
//! produce them from `perf script` output with their default options:
//!
//! * only samples of the first event seen are counted (perf script's event
//!   name, e.g. `cpu-clock:ppp`); without call chains (no blank lines), the
//!   collapsers skip everything after the first sample of another event;
//! * the first part is the comm, spaces replaced by `_`;
//! * frames are the call chain outermost first, each the symbol without its
//!   `+0x…` offset, "tidied" (`;` → `:`, an argument list `(…)` cut unless it
//!   belongs to `(anonymous namespace)` or a Go-style `.(`), `[dso-basename]`
//!   for an unresolved symbol in a known DSO and `[unknown]` otherwise;
//! * a sample without call chain is a one-frame stack (its ip);
//! * every sample counts its period (the number perf script shows before
//!   the event name), 1 when no period is shown; lines are sorted.

use std::collections::BTreeMap;

use prec_format::PerfFile;

use crate::script::{Frame, OutField, ResolvedSample, ScriptOptions, Session};

/// inferno's `tidy_generic`.
fn tidy_generic(func: &str) -> String {
    let mut func = func.replace(';', ":");
    if let Some(p) = func.find('(') {
        let anon = func[p..].starts_with("(anonymous namespace)");
        let go = p > 0 && func.as_bytes()[p - 1] == b'.';
        if !anon && !go {
            func.truncate(p);
        }
    }
    func
}

/// The folded name of one frame, or `None` when the collapsers skip it.
pub fn frame_name(sym: Option<&str>, dso: Option<&str>) -> Option<String> {
    let raw = sym.unwrap_or("[unknown]");
    if raw.starts_with('(') {
        return None;
    }
    if raw == "[unknown]" {
        let module = dso.unwrap_or("[unknown]");
        if module == "[unknown]" {
            return Some("[unknown]".into());
        }
        let base = &module[module.rfind('/').map_or(0, |i| i + 1)..];
        return Some(format!("[{}]", tidy_generic(base)));
    }
    Some(tidy_generic(raw))
}

fn frame_of(f: &Frame) -> Option<String> {
    frame_name(f.sym.as_ref().map(|s| &*s.0), f.dso.as_deref())
}

/// The folded stack line (without the count) of one sample: its call
/// chain, or its own ip when it has none (the collapsers read the ip part of
/// a one-line sample as a one-frame stack). `None` for a call chain without
/// frames, which the collapsers skip.
pub fn stack_of(rs: &ResolvedSample<'_>) -> Option<String> {
    let mut s = rs.comm.replace(' ', "_");
    let one = std::slice::from_ref(&rs.frame);
    let frames = rs.chain.as_deref().unwrap_or(one);
    let mut named = false;
    for f in frames.iter().rev() {
        if let Some(name) = frame_of(f) {
            s.push(';');
            s.push_str(&name);
            named = true;
        }
    }
    (named || rs.chain.is_none()).then_some(s)
}

/// Folded stacks of `file` with their counts, sorted, and the warnings.
#[allow(clippy::type_complexity)]
pub fn folded(
    file: &PerfFile<'_>,
    opts: ScriptOptions,
) -> Result<(Vec<(String, u64)>, Vec<String>), Box<dyn std::error::Error>> {
    let mut session = Session::new(file, opts)?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut filter: Option<String> = None;
    let mut sticky_skip = false;
    session.walk(
        |rs, sess| {
            // The collapsers count the period shown on the event line.
            let attr = &file.attrs()[rs.attr_index].attr;
            let n = if sess.fields_of(attr).has(OutField::Period) {
                rs.period
            } else {
                1
            };
            if sticky_skip {
                return Ok(());
            }
            match &filter {
                None => filter = Some(rs.event.to_string()),
                Some(f) if f != rs.event => {
                    // inferno marks the stack skipped and clears the mark
                    // only at the blank line ending a call chain: after a
                    // one-line sample of another event, nothing more counts.
                    if rs.chain.is_none() {
                        sticky_skip = true;
                    }
                    return Ok(());
                }
                _ => {}
            }
            if let Some(stack) = stack_of(rs) {
                *counts.entry(stack).or_insert(0) += n;
            }
            Ok(())
        },
        |_| Ok(()),
    )?;
    Ok((counts.into_iter().collect(), session.warnings))
}

/// Parses folded lines (`stack count`), skipping malformed ones.
pub fn parse_folded(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_end();
            let (stack, n) = l.rsplit_once(' ')?;
            Some((stack.to_string(), n.parse().ok()?))
        })
        .collect()
}
