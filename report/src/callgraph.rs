//! Call-graph trees of hist entries and their `--stdio` printing, like
//! perf 6.1 (`util/callchain.c`, `ui/stdio/hist.c`).
//!
//! * [`Params`] is perf's `callchain_param` (`-g print_type,threshold
//!   [,print_limit],order,sort_key,value`, parsed by [`parse_report_opt`]
//!   with perf's prefix matching).
//! * Frames are interned into [`FrameId`]s by their *match key* (perf's
//!   `match_chain`: with the `function` key, same DSO and symbol start, an
//!   inline frame's name, or same DSO and address without a symbol); a node
//!   shows the first frame inserted with its key, as perf keeps the first
//!   `callchain_list` (with `-g srcline`, where one line can be in several
//!   functions, the node's own first frame).
//! * A [`CallTree`] is a trie with per-node hits (samples whose chain ends
//!   there). perf's radix tree (`callchain_node` with `val` lists) is the
//!   same trie with paths compressed between branch points and chain ends;
//!   [`CallTree::finish`] computes that view. A node's children are found
//!   by walking perf's red-black tree of them with perf's `match_chain`,
//!   which is not a total order (it compares symbol starts, names or
//!   addresses depending on the two frames), so a walk can miss an equal
//!   child and add a second one, as perf's does.
//! * Sibling order follows perf: cumulated hits descending (flat/folded:
//!   own hits), ties in that tree's order (`match_chain` puts a greater key
//!   left; DSO identity is approximated by creation order, like perf's heap
//!   pointers).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cmp::Ordering;
use std::io::{self, Write};

use crate::aggregate::{StrId, Strings, SymId};
use crate::callchain::{ChainFrame, Order};
use crate::maps::DsoId;
use crate::rbtree::{RbTree, NIL};

/// perf's `enum chain_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `graph`: percentages of the total (CHAIN_GRAPH_ABS).
    Graph,
    /// `fractal`: percentages of the parent (CHAIN_GRAPH_REL).
    Fractal,
    Flat,
    Folded,
}

/// perf's `enum chain_key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Function,
    Address,
    Srcline,
}

/// perf's `enum chain_value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Percent,
    Period,
    Count,
}

/// Call-graph parameters (perf's `callchain_param` + the report switches).
#[derive(Clone, Debug)]
pub struct Params {
    /// Call graphs are built and printed (`symbol_conf.use_callchain`).
    pub enabled: bool,
    /// `--children` (`symbol_conf.cumulate_callchain`).
    pub children: bool,
    pub mode: Mode,
    pub order: Order,
    /// The order was given with `-g` (so `--children` does not force caller).
    pub order_set: bool,
    /// Threshold in percent.
    pub min_percent: f64,
    /// Max entries per level (0 = all).
    pub print_limit: u32,
    pub key: Key,
    pub value: Value,
    /// `--max-stack`.
    pub max_stack: usize,
    /// Expand inline frames of DWARF-unwound entries (perf 6.1's
    /// `--inline`, on by default; `--no-inline` turns it off).
    pub inline: bool,
    /// perf's quirk: with `--sort` starting with `sym` (and no `-F`), the
    /// first entry of a single-root graph is not printed.
    pub skip_first_sym: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            enabled: true,
            children: true,
            mode: Mode::Graph,
            order: Order::Callee,
            order_set: false,
            min_percent: 0.5,
            print_limit: 0,
            key: Key::Function,
            value: Value::Percent,
            max_stack: crate::callchain::DEFAULT_MAX_STACK,
            inline: true,
            skip_first_sym: false,
        }
    }
}

fn prefix_of(tok: &str, word: &str) -> bool {
    word.starts_with(tok)
}

/// perf's `__parse_callchain_report_opt` (`-g`/`--call-graph` of report).
pub fn parse_report_opt(arg: &str, p: &mut Params) -> Result<(), String> {
    p.enabled = true;
    let mut minpcnt_set = false;
    for tok in arg.split(',').filter(|t| !t.is_empty()) {
        if prefix_of(tok, "none") {
            p.enabled = false;
            return Ok(());
        }
        if prefix_of(tok, "graph") {
            p.mode = Mode::Graph;
        } else if prefix_of(tok, "flat") {
            p.mode = Mode::Flat;
        } else if prefix_of(tok, "fractal") {
            p.mode = Mode::Fractal;
        } else if prefix_of(tok, "folded") {
            p.mode = Mode::Folded;
        } else if prefix_of(tok, "caller") {
            p.order = Order::Caller;
            p.order_set = true;
        } else if prefix_of(tok, "callee") {
            p.order = Order::Callee;
            p.order_set = true;
        } else if prefix_of(tok, "function") {
            p.key = Key::Function;
        } else if prefix_of(tok, "address") {
            p.key = Key::Address;
        } else if prefix_of(tok, "srcline") {
            p.key = Key::Srcline;
        } else if prefix_of(tok, "branch") {
            return Err("-g branch is not supported".into());
        } else if prefix_of(tok, "percent") {
            p.value = Value::Percent;
        } else if prefix_of(tok, "period") {
            p.value = Value::Period;
        } else if prefix_of(tok, "count") {
            p.value = Value::Count;
        } else if !minpcnt_set {
            p.min_percent = strtod_prefix(tok).ok_or_else(|| bad(arg))?;
            minpcnt_set = true;
        } else {
            p.print_limit = strtoul_prefix(tok).ok_or_else(|| bad(arg))?;
        }
    }
    Ok(())
}

fn bad(arg: &str) -> String {
    format!("Invalid callchain option: {arg}")
}

/// C `strtod` on the longest numeric prefix (None when nothing parses).
fn strtod_prefix(s: &str) -> Option<f64> {
    let s = s.trim_start();
    let mut end = 0;
    let mut best = None;
    for (i, _) in s.char_indices().chain(std::iter::once((s.len(), ' '))) {
        if i == 0 {
            continue;
        }
        if let Ok(v) = s[..i].parse::<f64>() {
            best = Some(v);
            end = i;
        }
    }
    let _ = end;
    best
}

fn strtoul_prefix(s: &str) -> Option<u32> {
    let s = s.trim_start();
    let (radix, body) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, h)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let digits: String = body.chars().take_while(|c| c.is_digit(radix)).collect();
    if digits.is_empty() {
        return if s.starts_with('0') { Some(0) } else { None };
    }
    u64::from_str_radix(&digits, radix)
        .ok()
        .map(|v| v.min(u32::MAX as u64) as u32)
}

/// Interned frame (by match key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum MatchKey {
    /// (dso rank, symbol start).
    Sym(u32, u64),
    /// Inline frame: by name.
    Inlined(StrId),
    /// (dso rank, ip).
    Ip(u32, u64),
    /// `-g address` inline frame: (dso rank, ip, name); perf's tree nodes
    /// keep their own inline symbol although the address matches.
    IpInlined(u32, u64, StrId),
    /// `-g srcline`: by source line.
    Src(StrId),
    /// What a `-g srcline` node shows: (source line, symbol or NO_SYM and
    /// dso rank and ip).
    SrcShown(StrId, u32, u32, u64),
}

/// [`MatchKey::SrcShown`] of a frame without a symbol.
const NO_SYM_ID: u32 = u32::MAX;

/// What a node shows: the first frame inserted with its key.
#[derive(Clone, Copy, Debug)]
pub struct FrameInfo {
    pub ip: u64,
    pub dso: Option<DsoId>,
    pub sym: Option<SymId>,
    pub inlined: bool,
    /// With `-g address`/`-g srcline`: the frame's srcline.
    pub srcline: Option<StrId>,
    /// The symbol's start and name, which perf's `match_chain` compares.
    start: u64,
    name: Option<StrId>,
}

/// A frame of a chain to append: its interned id, plus what perf's
/// `match_chain` reads of the frame itself rather than of its key (the
/// address, and the DSO: perf compares heap pointers, approximated by
/// creation order, 0 without a map).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CursorFrame {
    pub id: FrameId,
    /// What a node first appended with this frame shows: `id`, except
    /// with `-g srcline`, where frames of one source line can be in
    /// different functions, and perf's node shows its first one's.
    shown: FrameId,
    ip: u64,
    dso_rank: u32,
}

impl CursorFrame {
    /// The same frame at address `ip`.
    pub fn with_ip(self, ip: u64) -> CursorFrame {
        CursorFrame { ip, ..self }
    }
}

/// The frame interner of a report.
#[derive(Default, Debug)]
pub struct Frames {
    v: Vec<FrameInfo>,
    by_key: HashMap<MatchKey, FrameId>,
}

impl Frames {
    /// Interns a resolved frame under `key`; `sym` is the start and name of
    /// its symbol, `srcline` is needed for the address and srcline keys
    /// only.
    pub fn intern(
        &mut self,
        key: Key,
        f: &ChainFrame,
        sym: Option<(u64, StrId)>,
        srcline: Option<StrId>,
    ) -> CursorFrame {
        let rank = f.map.map_or(0, |m| m.dso.0 + 1);
        let mk = match (key, sym) {
            (Key::Srcline, _) if srcline.is_some() => MatchKey::Src(srcline.unwrap()),
            (Key::Address, Some((_, name))) if f.inlined => MatchKey::IpInlined(rank, f.ip, name),
            (Key::Address, _) => MatchKey::Ip(rank, f.ip),
            (_, Some((_, name))) if f.inlined => MatchKey::Inlined(name),
            (_, Some((start, _))) => MatchKey::Sym(rank, start),
            (_, None) => MatchKey::Ip(rank, f.ip),
        };
        let id = self.id_of(mk, f, sym, srcline);
        let shown = match mk {
            MatchKey::Src(src) => {
                let (sym_id, ip) = f.sym.map_or((NO_SYM_ID, f.ip), |s| (s.0, 0));
                self.id_of(MatchKey::SrcShown(src, sym_id, rank, ip), f, sym, srcline)
            }
            _ => id,
        };
        CursorFrame {
            id,
            shown,
            ip: f.ip,
            dso_rank: rank,
        }
    }

    fn id_of(
        &mut self,
        mk: MatchKey,
        f: &ChainFrame,
        sym: Option<(u64, StrId)>,
        srcline: Option<StrId>,
    ) -> FrameId {
        *self.by_key.entry(mk).or_insert_with(|| {
            self.v.push(FrameInfo {
                ip: f.ip,
                dso: f.map.map(|m| m.dso),
                sym: f.sym,
                inlined: f.inlined,
                srcline,
                start: sym.map_or(0, |(start, _)| start),
                name: sym.map(|(_, name)| name),
            });
            FrameId(self.v.len() as u32 - 1)
        })
    }

    pub fn get(&self, id: FrameId) -> &FrameInfo {
        &self.v[id.0 as usize]
    }

    /// How many frames are interned.
    pub fn len(&self) -> usize {
        self.v.len()
    }

    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    /// The frames interned after the first `n`.
    pub(crate) fn since(&self, n: usize) -> &[FrameInfo] {
        self.v.get(n..).unwrap_or(&[])
    }

    /// Appends frames interned elsewhere (see [`Self::since`]): a copy of
    /// another interner's frames, for [`Self::get`] only.
    pub(crate) fn extend_copy(&mut self, frames: &[FrameInfo]) {
        self.v.extend_from_slice(frames);
    }
}

/// perf's `match_chain_strings`: a missing string sorts after any other.
fn match_strings(left: Option<StrId>, right: Option<StrId>, strings: &Strings) -> Option<Ordering> {
    match (left, right) {
        (Some(l), Some(r)) => Some(strings.get(l).cmp(strings.get(r))),
        (None, Some(_)) => Some(Ordering::Greater),
        (Some(_), None) => Some(Ordering::Less),
        (None, None) => None,
    }
}

/// perf's `match_chain(cursor, node)`: how the tree node's first frame
/// compares with the cursor's (Less is perf's MATCH_LT, which sends the
/// cursor left). Its keys mix: symbol starts between two symbols, names
/// when either is inlined, addresses when either has no symbol; so it is
/// not a total order, and a walk can miss an equal node (perf then adds a
/// second node with the same name).
fn match_chain(
    key: Key,
    node: &CursorFrame,
    cursor: &CursorFrame,
    frames: &Frames,
    strings: &Strings,
) -> Ordering {
    if node.id == cursor.id {
        return Ordering::Equal;
    }
    match_chain_by(key, node, cursor, frames, strings).0
}

/// [`match_chain`] of two frames with different ids, and whether the
/// cursor's address decided it (same DSO, compared by address).
fn match_chain_by(
    key: Key,
    node: &CursorFrame,
    cursor: &CursorFrame,
    frames: &Frames,
    strings: &Strings,
) -> (Ordering, bool) {
    let (n, c) = (frames.get(node.id), frames.get(cursor.id));
    if key == Key::Srcline {
        if let Some(o) = match_strings(n.srcline, c.srcline, strings) {
            return (o, false);
        }
    }
    if key != Key::Address && n.sym.is_some() && c.sym.is_some() {
        if n.inlined || c.inlined {
            if let Some(o) = match_strings(n.name, c.name, strings) {
                return (o, false);
            }
        } else {
            return (
                (node.dso_rank, n.start).cmp(&(cursor.dso_rank, c.start)),
                false,
            );
        }
    }
    match node.dso_rank.cmp(&cursor.dso_rank) {
        Ordering::Equal => (node.ip.cmp(&cursor.ip), true),
        o => (o, false),
    }
}

/// The addresses (inclusive) a frame may have and still compare like the
/// one a walk took: where perf's tree of mixed children compares by
/// address, a chain's frame at another address between the same siblings
/// goes the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpSpan {
    pub first: u64,
    pub last: u64,
}

impl IpSpan {
    pub const ANY: IpSpan = IpSpan {
        first: 0,
        last: u64::MAX,
    };

    pub fn contains(self, ip: u64) -> bool {
        (self.first..=self.last).contains(&ip)
    }

    /// The addresses in both (never empty for two spans of one address).
    pub fn intersect(self, other: IpSpan) -> IpSpan {
        IpSpan {
            first: self.first.max(other.first),
            last: self.last.min(other.last),
        }
    }

    /// Narrows to the addresses that compare with `node_ip` as `o`
    /// (`node_ip` vs the frame's address).
    fn narrow(&mut self, node_ip: u64, o: Ordering) {
        let (first, last) = match o {
            // The node is below the frame.
            Ordering::Less => (node_ip.saturating_add(1), u64::MAX),
            Ordering::Greater => (0, node_ip.saturating_sub(1)),
            Ordering::Equal => (node_ip, node_ip),
        };
        *self = self.intersect(IpSpan { first, last });
    }
}

#[derive(Clone, Debug)]
struct TNode {
    /// The first frame appended at this node.
    frame: CursorFrame,
    /// Own hits (chains ending here) and sample count.
    hit: u64,
    count: u64,
    /// (frame, node) of each child, in the order they were added until
    /// [`CallTree::finish`], then in perf's tree order. The frame is kept
    /// beside the index so a lookup does not visit every child node.
    children: Children,
    /// The kinds of frames among the children ([`FrameKind`] bits).
    child_kinds: u8,
    /// The children mix kinds: perf's tree of them is in
    /// [`CallTree::mixed_siblings`].
    children_mixed: bool,
    /// Changes whenever that tree does (see [`CallTree::walked_mixed`]).
    mixed_version: u32,
}

/// A node's (frame, child) pairs. Most nodes have one child, kept in the
/// node: a walk down a chain then reads each node, not also a list.
#[derive(Clone, Debug, Default)]
enum Children {
    #[default]
    None,
    One((FrameId, u32)),
    Many(Vec<(FrameId, u32)>),
}

impl Children {
    fn push(&mut self, child: (FrameId, u32)) {
        *self = match std::mem::take(self) {
            Children::None => Children::One(child),
            Children::One(first) => Children::Many(vec![first, child]),
            Children::Many(mut v) => {
                v.push(child);
                Children::Many(v)
            }
        };
    }
}

impl std::ops::Deref for Children {
    type Target = [(FrameId, u32)];
    fn deref(&self) -> &Self::Target {
        match self {
            Children::None => &[],
            Children::One(c) => std::slice::from_ref(c),
            Children::Many(v) => v,
        }
    }
}

impl std::ops::DerefMut for Children {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Children::None => &mut [],
            Children::One(c) => std::slice::from_mut(c),
            Children::Many(v) => v,
        }
    }
}

impl<'a> IntoIterator for &'a Children {
    type Item = &'a (FrameId, u32);
    type IntoIter = std::slice::Iter<'a, (FrameId, u32)>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl FromIterator<(FrameId, u32)> for Children {
    fn from_iter<I: IntoIterator<Item = (FrameId, u32)>>(iter: I) -> Self {
        let mut c = Children::None;
        for child in iter {
            c.push(child);
        }
        c
    }
}

/// Kinds of frames, which perf's `match_chain` compares by different keys.
struct FrameKind;

impl FrameKind {
    /// A symbol (by start, or by name against an inline frame).
    const PLAIN: u8 = 1;
    /// An inline frame (by name against any symbol).
    const INLINED: u8 = 2;
    /// No symbol (by address against anything).
    const NO_SYM: u8 = 4;
    const SYM: u8 = Self::PLAIN | Self::INLINED;

    fn of(f: &FrameInfo) -> u8 {
        match (f.sym, f.inlined) {
            (Some(_), false) => Self::PLAIN,
            (Some(_), true) => Self::INLINED,
            (None, _) => Self::NO_SYM,
        }
    }
}

/// One hist entry's call tree (perf's `callchain_root`).
///
/// perf finds a child by walking a red-black tree of the children with
/// `match_chain`. Among children of one kind per DSO, and without inline
/// frames beside other kinds, that comparison is a total order: the walk
/// finds the child with the frame's key, and the tree's order is the sorted
/// order, so a child is found by its frame id and the children are sorted
/// once at the end. Where the children mix kinds (symbols and addresses in
/// one DSO: other processes map it elsewhere, so addresses do not follow
/// symbol starts; or inline frames' names beside symbol starts), the walk
/// can miss an equal child and add a second one, so those nodes keep
/// perf's tree and are walked like perf's.
#[derive(Clone, Debug)]
pub struct CallTree {
    /// Node 0 is the root (no frame).
    nodes: Vec<TNode>,
    /// perf's `max_depth`: the longest chain appended.
    pub max_depth: usize,
    /// Each node's parent and depth (the root's are 0), so that
    /// [`Self::descends_from`] climbs only to the ancestor's.
    links: Vec<(u32, u32)>,
    /// Each node's hits and samples with its descendants', from
    /// [`CallTree::finish`] (apart from the nodes: only the output reads
    /// them, and the appends walk the nodes).
    cumuls: Vec<(u64, u64)>,
    /// Made for the first node with many or mixed children: a report has
    /// a tree per entry, and most trees never need it.
    extra: Option<Box<TreeExtra>>,
}

/// What a [`CallTree`] keeps for nodes with many or mixed children.
#[derive(Clone, Debug, Default)]
struct TreeExtra {
    /// (node, frame) -> child, for nodes with more than [`WIDE`]
    /// children: broken frame-pointer chains give a node thousands of
    /// distinct children, and a scan per append then dominates.
    wide: HashMap<(u32, FrameId), u32>,
    /// perf's tree of the children of nodes whose children mix kinds (its
    /// node `i` is `children[i]`).
    mixed_siblings: HashMap<u32, RbTree>,
    /// Kinds of children per (node, DSO rank), for nodes with children
    /// both with and without symbols, and the pairs that mix them.
    rank_kinds: HashMap<(u32, u32), u8>,
    mixed_ranks: HashSet<(u32, u32)>,
    /// Nodes the last append walked perf's tree of, where the result
    /// depends on the tree's shape and the addresses.
    walked: Vec<u32>,
    /// The frames (indexes into those walked) the last append compared
    /// in those trees, and the addresses that compare the same: their
    /// addresses decide.
    walked_steps: Vec<(u32, IpSpan)>,
    /// The span of the last walk through a tree of mixed children.
    last_span: IpSpan,
    /// The nodes whose children the last append newly mixed.
    reordered: Vec<u32>,
}

impl Default for IpSpan {
    fn default() -> Self {
        IpSpan::ANY
    }
}

/// Children a node may have before [`CallTree::append`] indexes them.
const WIDE: usize = 8;

/// What [`CallTree::append`] did.
#[derive(Clone, Copy, Debug)]
pub struct Appended {
    /// The node that got the hit (None for an empty chain), for
    /// [`CallTree::add_hits`].
    pub node: Option<u32>,
    /// Appending the same frames again reaches the same node, at least
    /// while the trees in [`CallTree::walked_mixed`] stay as they are:
    /// false when this append made some node's children mix kinds.
    pub replayable: bool,
    /// This append mixed some node's children, so earlier walks through it
    /// may not be repeated.
    pub reorders: bool,
    /// This append changed some node's [`CallTree::mixed_version`].
    pub changed_mixed: bool,
}

impl Default for CallTree {
    fn default() -> Self {
        CallTree {
            nodes: vec![TNode::new(CursorFrame {
                id: FrameId(u32::MAX),
                shown: FrameId(u32::MAX),
                ip: 0,
                dso_rank: 0,
            })],
            max_depth: 0,
            links: vec![(0, 0)],
            cumuls: Vec::new(),
            extra: None,
        }
    }
}

impl TNode {
    fn new(frame: CursorFrame) -> TNode {
        TNode {
            frame,
            hit: 0,
            count: 0,
            children: Children::None,
            child_kinds: 0,
            children_mixed: false,
            mixed_version: 0,
        }
    }
}

impl CallTree {
    /// perf's `callchain_append`: adds one chain with `period`.
    pub fn append(
        &mut self,
        chain: &[CursorFrame],
        period: u64,
        key: Key,
        frames: &Frames,
        strings: &Strings,
    ) -> Appended {
        let cmp = Cmp {
            key,
            frames,
            strings,
        };
        self.append_from(0, chain, period, &cmp, None)
    }

    /// [`Self::append`] of a chain whose first frames are known to reach
    /// node `start` (see [`WalkMemo`]): walks on from there with `rest`,
    /// the frames after those, and pushes the nodes it reaches to `path`.
    #[allow(clippy::too_many_arguments)]
    pub fn append_resumed(
        &mut self,
        start: u32,
        chain_len: usize,
        rest: &[CursorFrame],
        period: u64,
        key: Key,
        frames: &Frames,
        strings: &Strings,
        path: &mut Vec<u32>,
    ) -> Appended {
        let cmp = Cmp {
            key,
            frames,
            strings,
        };
        let out = self.append_from(start, rest, period, &cmp, Some(path));
        self.max_depth = self.max_depth.max(chain_len);
        out
    }

    fn append_from(
        &mut self,
        start: u32,
        rest: &[CursorFrame],
        period: u64,
        cmp: &Cmp,
        mut path: Option<&mut Vec<u32>>,
    ) -> Appended {
        let mut out = Appended {
            node: None,
            replayable: true,
            reorders: false,
            changed_mixed: false,
        };
        if let Some(x) = &mut self.extra {
            x.walked.clear();
            x.walked_steps.clear();
            x.reordered.clear();
        }
        if rest.is_empty() && start == 0 {
            return out;
        }
        let mut cur = start;
        for (step, f) in rest.iter().enumerate() {
            let walked = self.walked().len();
            cur = self.find_or_add_child(cur, f, cmp, &mut out);
            if let Some(x) = self
                .extra
                .as_deref_mut()
                .filter(|x| x.walked.len() != walked)
            {
                x.walked_steps.push((step as u32, x.last_span));
            }
            if let Some(path) = path.as_deref_mut() {
                path.push(cur);
            }
        }
        self.add_hits(cur, 1, period);
        self.max_depth = self.max_depth.max(rest.len());
        out.node = Some(cur);
        out
    }

    /// The child of `parent` that perf's `append_chain_children` (or, for
    /// a single child, `split_add_child`) finds equal to `f`, or a new one.
    fn find_or_add_child(
        &mut self,
        parent: u32,
        f: &CursorFrame,
        cmp: &Cmp,
        out: &mut Appended,
    ) -> u32 {
        if self.nodes[parent as usize].children_mixed {
            let x = self.extra_mut();
            if x.mixed_ranks.contains(&(parent, f.dso_rank))
                || self.nodes[parent as usize].child_kinds & FrameKind::INLINED != 0
            {
                self.extra_mut().walked.push(parent);
            }
            return self.walk_mixed(parent, f, cmp, out);
        }
        let children = &self.nodes[parent as usize].children;
        let found = if children.len() > WIDE {
            let wide = self.extra.as_ref().map(|x| &x.wide);
            wide.and_then(|w| w.get(&(parent, f.id))).copied()
        } else {
            children
                .iter()
                .find(|&&(frame, _)| frame == f.id)
                .map(|&(_, c)| c)
        };
        if let Some(c) = found {
            return c;
        }
        if !self.note_child_kind(parent, f, cmp, out) {
            return self.push_child(parent, f);
        }
        // The children mix kinds from now on: build perf's tree of them
        // (their order was total until now, so inserting them in turn
        // gives its shape), then walk it.
        let mut tree = RbTree::default();
        let children = &self.nodes[parent as usize].children;
        for &(_, c) in children {
            let new = &self.nodes[c as usize].frame;
            tree.insert_by(0, |at, _| {
                let node = &self.nodes[children[at].1 as usize].frame;
                cmp.node_vs(node, new) == Ordering::Less
            });
        }
        self.extra_mut().mixed_siblings.insert(parent, tree);
        self.nodes[parent as usize].children_mixed = true;
        self.walk_mixed(parent, f, cmp, out)
    }

    /// perf's walk of the children of `parent`, which mix kinds.
    fn walk_mixed(&mut self, parent: u32, f: &CursorFrame, cmp: &Cmp, out: &mut Appended) -> u32 {
        let x = self.extra.get_or_insert_with(Box::default);
        x.last_span = IpSpan::ANY;
        let Some(tree) = x.mixed_siblings.get(&parent) else {
            return self.push_child(parent, f);
        };
        let mut span = IpSpan::ANY;
        let children = &self.nodes[parent as usize].children;
        let (mut at, mut link_to, mut go_left) = (tree.root, NIL, false);
        while at != NIL {
            let child = children[at as usize].1;
            let node = &self.nodes[child as usize].frame;
            if node.id == f.id {
                self.extra_mut().last_span = span;
                return child;
            }
            let (o, by_ip) = match_chain_by(cmp.key, node, f, cmp.frames, cmp.strings);
            if by_ip {
                span.narrow(node.ip, o);
            }
            if o == Ordering::Equal {
                self.extra_mut().last_span = span;
                return child;
            }
            link_to = at;
            go_left = o == Ordering::Less;
            at = if go_left {
                tree.left(at)
            } else {
                tree.right(at)
            };
        }
        self.extra_mut().last_span = span;
        self.note_child_kind(parent, f, cmp, out);
        // Without a rotation the new child is only a leaf where this walk
        // ended, and every other walk goes as before.
        let x = self.extra_mut();
        let rotated = x.mixed_siblings.get_mut(&parent).is_none_or(|tree| {
            let rotations = tree.rotations;
            tree.insert_at(link_to, go_left, 0);
            tree.rotations != rotations
        });
        if rotated {
            self.nodes[parent as usize].mixed_version += 1;
            out.changed_mixed = true;
        }
        self.push_child(parent, f)
    }

    fn push_child(&mut self, parent: u32, f: &CursorFrame) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(TNode::new(*f));
        let depth = self.links.get(parent as usize).map_or(0, |&(_, d)| d + 1);
        self.links.push((parent, depth));
        let children = &mut self.nodes[parent as usize].children;
        children.push((f.id, id));
        let many = children.len();
        if many == WIDE + 1 {
            let x = self.extra.get_or_insert_with(Box::default);
            for &(frame, child) in self.nodes[parent as usize].children.iter() {
                x.wide.insert((parent, frame), child);
            }
        } else if many > WIDE + 1 {
            self.extra_mut().wide.insert((parent, f.id), id);
        }
        id
    }

    /// Adds the kind of `f` to the kinds of `parent`'s children; returns
    /// whether that newly mixes them (see [`CallTree`]), which `out` then
    /// records: earlier walks may no longer repeat, nor may this one.
    fn note_child_kind(
        &mut self,
        parent: u32,
        f: &CursorFrame,
        cmp: &Cmp,
        out: &mut Appended,
    ) -> bool {
        // Addresses alone are a total order.
        if cmp.key == Key::Address {
            return false;
        }
        let frames = cmp.frames;
        let kind = FrameKind::of(frames.get(f.id));
        let node = &mut self.nodes[parent as usize];
        let before = node.child_kinds;
        node.child_kinds |= kind;
        let after = node.child_kinds;
        let inline_mix =
            |k: u8| k & FrameKind::INLINED != 0 && k & (FrameKind::PLAIN | FrameKind::NO_SYM) != 0;
        let mut newly = inline_mix(after) && !inline_mix(before);
        let both = |k: u8| k & FrameKind::SYM != 0 && k & FrameKind::NO_SYM != 0;
        if both(after) {
            if !both(before) {
                let x = self.extra.get_or_insert_with(Box::default);
                for &(_, c) in &self.nodes[parent as usize].children {
                    let cf = &self.nodes[c as usize].frame;
                    let k = FrameKind::of(frames.get(cf.id));
                    *x.rank_kinds.entry((parent, cf.dso_rank)).or_default() |= k;
                }
            }
            let slot = (parent, f.dso_rank);
            let x = self.extra_mut();
            let kinds = x.rank_kinds.entry(slot).or_default();
            *kinds |= kind;
            if both(*kinds) && x.mixed_ranks.insert(slot) {
                newly = true;
            }
        }
        if newly {
            out.reorders = true;
            out.replayable = false;
            self.extra_mut().reordered.push(parent);
        }
        newly
    }

    /// The nodes whose perf tree the last [`Self::append`] walked where
    /// the result depends on its shape and on the frames' addresses, with
    /// the trees' versions after it: appending the same frames again
    /// reaches the same node while [`Self::mixed_version`] still says so.
    pub fn walked_mixed(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.walked()
            .iter()
            .map(|&n| (n, self.nodes[n as usize].mixed_version))
    }

    fn walked(&self) -> &[u32] {
        self.extra.as_ref().map_or(&[], |x| &x.walked)
    }

    fn extra_mut(&mut self) -> &mut TreeExtra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// The frames of the last [`Self::append`] (indexes into the frames
    /// it walked) whose addresses the walks of [`Self::walked_mixed`]
    /// compared, with the addresses that compare the same: the same
    /// frames at other addresses may go elsewhere.
    pub fn walked_steps(&self) -> &[(u32, IpSpan)] {
        self.extra.as_ref().map_or(&[], |x| &x.walked_steps)
    }

    /// The version of `node`'s perf tree of children (see
    /// [`Self::walked_mixed`]).
    pub fn mixed_version(&self, node: u32) -> Option<u32> {
        self.nodes.get(node as usize).map(|n| n.mixed_version)
    }

    /// The nodes whose children the last [`Self::append`] mixed
    /// ([`Appended::reorders`]): walks through them may now go elsewhere.
    pub fn reordered(&self) -> &[u32] {
        self.extra.as_ref().map_or(&[], |x| &x.reordered)
    }

    /// The child of `parent`, whose children mix kinds, that perf's walk
    /// finds equal to `f` now (None if it would add one), and the
    /// addresses of `f` that find it the same way.
    pub fn find_mixed(
        &self,
        parent: u32,
        f: &CursorFrame,
        key: Key,
        frames: &Frames,
        strings: &Strings,
    ) -> Option<(u32, IpSpan)> {
        let tree = self.extra.as_ref()?.mixed_siblings.get(&parent)?;
        let children = &self.nodes.get(parent as usize)?.children;
        let (mut at, mut span) = (tree.root, IpSpan::ANY);
        while at != NIL {
            let child = children.get(at as usize)?.1;
            let node = &self.nodes.get(child as usize)?.frame;
            if node.id == f.id {
                return Some((child, span));
            }
            let (o, by_ip) = match_chain_by(key, node, f, frames, strings);
            if by_ip {
                span.narrow(node.ip, o);
            }
            match o {
                Ordering::Equal => return Some((child, span)),
                Ordering::Less => at = tree.left(at),
                Ordering::Greater => at = tree.right(at),
            }
        }
        None
    }

    /// Whether the walk to `node` went down from `ancestor` (a proper
    /// ancestor).
    pub fn descends_from(&self, node: u32, ancestor: u32) -> bool {
        let depth = |n: u32| self.links.get(n as usize).map_or(0, |&(_, d)| d);
        let (from, to) = (depth(node), depth(ancestor));
        if from <= to {
            return false;
        }
        let mut at = node;
        for _ in to..from {
            at = self.links.get(at as usize).map_or(0, |&(p, _)| p);
        }
        at == ancestor
    }

    /// The frames from the root down to `node`: a chain that, appended to
    /// another tree, reaches the same place there.
    pub(crate) fn chain_to(&self, node: u32) -> Vec<CursorFrame> {
        let mut chain = Vec::new();
        let mut at = node;
        while at != 0 && chain.len() < self.nodes.len() {
            let Some(n) = self.nodes.get(at as usize) else {
                break;
            };
            chain.push(n.frame);
            at = self.links.get(at as usize).map_or(0, |&(p, _)| p);
        }
        chain.reverse();
        chain
    }

    /// How many nodes the tree has (the root included): the measure of
    /// its [`Self::finish`].
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Adds `count` samples of `period` to `node` (from [`Self::append`]):
    /// what appending the same chain again would do.
    pub fn add_hits(&mut self, node: u32, count: u64, period: u64) {
        let n = &mut self.nodes[node as usize];
        n.hit += period;
        n.count += count;
    }

    /// Computes cumulated hits and puts children in perf's tree order.
    /// Call once after the last [`Self::append`].
    pub fn finish(&mut self, key: Key, frames: &Frames, strings: &Strings) {
        // Nodes are created after their parents: a reverse sweep is
        // post-order enough for sums.
        self.cumuls = vec![(0, 0); self.nodes.len()];
        for i in (0..self.nodes.len()).rev() {
            let (mut c, mut cc) = (self.nodes[i].hit, self.nodes[i].count);
            for &(_, ch) in &self.nodes[i].children {
                let (chc, chcc) = self.cumuls[ch as usize];
                c += chc;
                cc += chcc;
            }
            self.cumuls[i] = (c, cc);
        }
        let mixed_siblings = self
            .extra
            .take()
            .map(|x| x.mixed_siblings)
            .unwrap_or_default();
        let cmp = Cmp {
            key,
            frames,
            strings,
        };
        for i in 0..self.nodes.len() {
            let mut ch = std::mem::take(&mut self.nodes[i].children);
            let tree = match self.nodes[i].children_mixed {
                true => mixed_siblings.get(&(i as u32)),
                false => None,
            };
            match tree {
                Some(tree) => ch = tree.in_order().into_iter().map(|at| ch[at]).collect(),
                // match_chain sends a greater new key left: in-order is
                // descending.
                None if ch.len() > 1 => ch.sort_by(|&(_, a), &(_, b)| {
                    cmp.node_vs(&self.nodes[b as usize].frame, &self.nodes[a as usize].frame)
                }),
                None => {}
            }
            self.nodes[i].children = ch;
        }
    }

    /// The nodes with hits, each with its hits, in the order perf's
    /// `callchain_merge` adds them to another tree: a node before its
    /// children, the children in perf's tree order (after
    /// [`Self::finish`]).
    pub(crate) fn hits_in_merge_order(&self) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        let mut stack = vec![0u32];
        while let Some(n) = stack.pop() {
            let Some(node) = self.nodes.get(n as usize) else {
                continue;
            };
            if node.hit > 0 {
                out.push((n, node.hit));
            }
            stack.extend(node.children.iter().rev().map(|&(_, c)| c));
        }
        out
    }

    /// Total hits of the tree.
    pub fn total(&self) -> u64 {
        self.cumul(0).0
    }

    /// Node `node`'s cumulated hits and samples ([`Self::finish`]).
    fn cumul(&self, node: u32) -> (u64, u64) {
        self.cumuls.get(node as usize).copied().unwrap_or_default()
    }
}

/// perf's `match_chain` with what it reads.
struct Cmp<'a> {
    key: Key,
    frames: &'a Frames,
    strings: &'a Strings,
}

impl Cmp<'_> {
    fn node_vs(&self, node: &CursorFrame, cursor: &CursorFrame) -> Ordering {
        match_chain(self.key, node, cursor, self.frames, self.strings)
    }
}

/// A node of perf's radix view: a run of trie nodes.
struct RNode {
    /// Trie nodes of the run (first..=last).
    run: Vec<u32>,
    /// perf's `hit` (of the last trie node) and `children_hit`.
    hit: u64,
    count: u64,
    children_hit: u64,
    children_count: u64,
}

impl RNode {
    fn cumul(&self) -> u64 {
        self.hit + self.children_hit
    }
    fn cumul_count(&self) -> u64 {
        self.count + self.children_count
    }
}

impl CallTree {
    /// The radix node starting at trie node `start`.
    fn rnode(&self, start: u32) -> RNode {
        let mut run = vec![start];
        let mut cur = start;
        loop {
            let n = &self.nodes[cur as usize];
            if n.hit != 0 || n.children.len() != 1 {
                break;
            }
            cur = n.children[0].1;
            run.push(cur);
        }
        let last = &self.nodes[cur as usize];
        let (cumul, cumul_count) = self.cumul(cur);
        RNode {
            run,
            hit: last.hit,
            count: last.count,
            children_hit: cumul - last.hit,
            children_count: cumul_count - last.count,
        }
    }

    /// The radix children of trie node `at` (the last node of a run), in
    /// insertion-tree order.
    fn rchildren(&self, at: u32) -> Vec<RNode> {
        self.nodes[at as usize]
            .children
            .iter()
            .map(|&(_, c)| self.rnode(c))
            .collect()
    }
}

/// How frames are named (symbol names, DSO names).
pub trait Namer {
    /// perf's `callchain_list__sym_name` without DSO.
    fn name(&self, f: &FrameInfo, key: Key) -> String;
}

/// Prints an entry's call graph like perf's `hist_entry_callchain__fprintf`.
/// `total` is the hists' total period, `parent` the entry's period
/// (children period with `--children`), `min_hit` perf's
/// `min_callchain_hits`.
#[allow(clippy::too_many_arguments)]
pub fn write_graph(
    out: &mut dyn Write,
    tree: &CallTree,
    frames: &Frames,
    namer: &dyn Namer,
    p: &Params,
    total: u64,
    parent: u64,
    min_hit: u64,
) -> io::Result<()> {
    let pr = Printer {
        tree,
        frames,
        namer,
        p,
    };
    match p.mode {
        Mode::Graph | Mode::Fractal => pr.graph(out, total, parent, min_hit),
        Mode::Flat => pr.flat(out, total, min_hit),
        Mode::Folded => pr.folded(out, total, min_hit),
    }
}

struct Printer<'a> {
    tree: &'a CallTree,
    frames: &'a Frames,
    namer: &'a dyn Namer,
    p: &'a Params,
}

fn left_margin(s: &mut String, m: usize) {
    s.push_str("            ");
    for _ in 0..m {
        s.push(' ');
    }
}

impl Printer<'_> {
    fn name(&self, trie: u32) -> String {
        let f = self.frames.get(self.tree.nodes[trie as usize].frame.shown);
        self.namer.name(f, self.p.key)
    }

    fn value(&self, cumul: u64, cumul_count: u64, total: u64) -> String {
        match self.p.value {
            Value::Period => cumul.to_string(),
            Value::Count => cumul_count.to_string(),
            Value::Percent => {
                let pct = if total != 0 {
                    cumul as f64 * 100.0 / total as f64
                } else {
                    0.0
                };
                format!("{pct:.2}%")
            }
        }
    }

    /// Sorted, filtered graph children of the run ending at trie node `at`
    /// (`None` = the root), per perf's `__sort_chain_graph_abs/rel`.
    fn sorted(&self, at: Option<u32>, min_hit: u64) -> Vec<RNode> {
        let (kids, children_hit) = match at {
            None => (self.tree.rchildren(0), self.tree.cumul(0).0),
            Some(t) => {
                let n = &self.tree.nodes[t as usize];
                (self.tree.rchildren(t), self.tree.cumul(t).0 - n.hit)
            }
        };
        let min = match self.p.mode {
            Mode::Fractal => (children_hit as f64 * (self.p.min_percent / 100.0)).ceil() as u64,
            _ => min_hit,
        };
        let mut v: Vec<RNode> = kids.into_iter().filter(|k| k.cumul() >= min).collect();
        // rb_insert_callchain: larger cumul left; ties keep insertion order.
        v.sort_by_key(|k| std::cmp::Reverse(k.cumul()));
        v
    }

    fn graph(&self, out: &mut dyn Write, total: u64, parent: u64, min_hit: u64) -> io::Result<()> {
        let mut s = String::new();
        let mut lm = 0usize;
        let mut top = self.sorted(None, min_hit);
        let mut at: Option<u32> = None;
        let mut total_samples = total;
        if top.len() == 1 && top[0].cumul() == parent {
            let r = top.pop().unwrap();
            let mut printed = false;
            let mut n = 0u32;
            for (i, &t) in r.run.iter().enumerate() {
                if i == 0 && self.p.skip_first_sym {
                    continue;
                }
                if !printed {
                    left_margin(&mut s, lm);
                    s.push_str("|\n");
                    left_margin(&mut s, lm);
                    s.push_str("---");
                    lm += 3;
                    printed = true;
                } else {
                    left_margin(&mut s, lm);
                }
                s.push_str(&self.name(t));
                s.push('\n');
                n += 1;
                if n == self.p.print_limit {
                    break;
                }
            }
            at = r.run.last().copied();
            if at.is_none() {
                at = Some(0);
            }
        }
        if self.p.mode == Mode::Fractal {
            total_samples = parent;
        }
        let before = s.len();
        self.level(&mut s, at, total_samples, 1, 1, lm, min_hit);
        if !s.is_empty() || s.len() != before {
            s.push('\n');
        }
        out.write_all(s.as_bytes())
    }

    #[allow(clippy::too_many_arguments)]
    fn level(
        &self,
        s: &mut String,
        at: Option<u32>,
        total: u64,
        depth: usize,
        depth_mask: u32,
        lm: usize,
        min_hit: u64,
    ) {
        let kids = self.sorted(at, min_hit);
        let mut remaining = total;
        let mut new_mask = depth_mask;
        let mut printed = 0u32;
        let mut cumul_count_sum = 0u64;
        let n = kids.len();
        for (k, child) in kids.iter().enumerate() {
            let cumul = child.cumul();
            remaining = remaining.wrapping_sub(cumul);
            cumul_count_sum += child.cumul_count();
            let last = k + 1 == n;
            if last && (self.p.mode != Mode::Fractal || remaining == 0) {
                new_mask &= !bit(depth - 1);
            }
            // ipchain__fprintf_graph_line
            left_margin(s, lm);
            for i in 0..depth {
                if depth_mask & bit(i) != 0 {
                    s.push_str("|          ");
                } else {
                    s.push_str("           ");
                }
            }
            s.push('\n');
            for (i, &t) in child.run.iter().enumerate() {
                let v = self.value(cumul, child.cumul_count(), total);
                self.graph_entry(s, &self.name(t), depth, new_mask, i, &v, lm);
            }
            let new_total = if self.p.mode == Mode::Fractal {
                child.children_hit
            } else {
                total
            };
            let last_t = *child.run.last().unwrap();
            self.level(
                s,
                Some(last_t),
                new_total,
                depth + 1,
                new_mask | bit(depth),
                lm,
                min_hit,
            );
            printed += 1;
            if printed == self.p.print_limit {
                break;
            }
        }
        if self.p.mode == Mode::Fractal && remaining != 0 && remaining != total {
            let mut rem_count = 0;
            if self.p.value == Value::Count {
                // child->parent->children_count - cumul_count
                let pc = match at {
                    None => self.tree.cumul(0).1,
                    Some(t) => {
                        let n = &self.tree.nodes[t as usize];
                        self.tree.cumul(t).1 - n.count
                    }
                };
                let c = pc as i64 - cumul_count_sum as i64;
                if c <= 0 {
                    return;
                }
                rem_count = c as u64;
            }
            new_mask &= !bit(depth - 1);
            let v = self.value(remaining, rem_count, total);
            self.graph_entry(s, "[...]", depth, new_mask, 0, &v, lm);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn graph_entry(
        &self,
        s: &mut String,
        name: &str,
        depth: usize,
        mask: u32,
        period: usize,
        value: &str,
        lm: usize,
    ) {
        left_margin(s, lm);
        for i in 0..depth {
            s.push(if mask & bit(i) != 0 { '|' } else { ' ' });
            if period == 0 && i == depth - 1 {
                s.push_str("--");
                s.push_str(value);
                s.push_str("--");
            } else {
                s.push_str("          ");
            }
        }
        s.push_str(name);
        s.push('\n');
    }

    /// Whether flat and folded output list trie node `t`: perf's
    /// `__callchain__fprintf_flat` and `_folded` skip context markers and
    /// the `-1` (`0xffffffffffffffff`) frame of a truncated DWARF chain
    /// (`ip >= PERF_CONTEXT_MAX`), which the graph prints.
    fn listed(&self, t: u32) -> bool {
        const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
        self.tree.nodes[t as usize].frame.ip < PERF_CONTEXT_MAX
    }

    /// perf's `sort_chain_flat`: radix nodes with own hits, post-order,
    /// by hit descending (stable).
    fn flat_nodes(&self, min_hit: u64) -> Vec<(Vec<u32>, RNode)> {
        let mut v = Vec::new();
        self.collect(0, true, &mut Vec::new(), &mut v);
        v.retain(|(_, r)| r.hit != 0 && r.hit >= min_hit);
        v.sort_by_key(|e| std::cmp::Reverse(e.1.hit));
        v
    }

    fn collect(&self, at: u32, root: bool, path: &mut Vec<u32>, out: &mut Vec<(Vec<u32>, RNode)>) {
        for r in self.tree.rchildren(at) {
            let len = path.len();
            path.extend_from_slice(&r.run);
            let last = *r.run.last().unwrap();
            self.collect(last, false, path, out);
            out.push((path.clone(), r));
            path.truncate(len);
        }
        let _ = root;
    }

    fn flat(&self, out: &mut dyn Write, total: u64, min_hit: u64) -> io::Result<()> {
        let mut s = String::new();
        let mut n = 0u32;
        for (path, r) in self.flat_nodes(min_hit) {
            s.push_str("           ");
            s.push_str(&self.value(r.cumul(), r.cumul_count(), total));
            s.push('\n');
            for t in path.into_iter().filter(|&t| self.listed(t)) {
                s.push_str("                ");
                s.push_str(&self.name(t));
                s.push('\n');
            }
            s.push('\n');
            n += 1;
            if n == self.p.print_limit {
                break;
            }
        }
        out.write_all(s.as_bytes())
    }

    fn folded(&self, out: &mut dyn Write, total: u64, min_hit: u64) -> io::Result<()> {
        let mut s = String::new();
        let mut n = 0u32;
        for (path, r) in self.flat_nodes(min_hit) {
            s.push_str(&self.value(r.hit, r.count, total));
            s.push(' ');
            for (i, t) in path.into_iter().filter(|&t| self.listed(t)).enumerate() {
                if i > 0 {
                    s.push(';');
                }
                s.push_str(&self.name(t));
            }
            s.push('\n');
            n += 1;
            if n == self.p.print_limit {
                break;
            }
        }
        out.write_all(s.as_bytes())
    }
}

/// Where each thread's last chain went in the call trees of perf's
/// children entries, to resume the walks of the next chain of the thread
/// where the two part.
///
/// In children mode the entry of each frame gets the chain from that frame
/// on, so a sample costs a walk per frame per frame. Consecutive samples of
/// a thread mostly share their outer callers: in each such entry's tree
/// the shared frames lead to the same nodes as last time, as long as no
/// tree's children got mixed in between (then [`Self::invalidate`]). A
/// step through a perf tree whose result hangs on its shape and on the
/// frame's address (a gate) repeats only for the same frame at the same
/// address while that tree is at the same version; the walk that reuses
/// it depends on it like the walk that took it (see [`Self::gates`]).
#[derive(Debug)]
pub struct WalkMemo {
    slots: Vec<MemoSlot>,
    generation: u64,
    /// The chain being appended: its slot, the generation at its start,
    /// how many first frames it shares with the slot's last chain by id
    /// and exactly.
    slot: usize,
    /// The slot the chain goes to: its owner's least recently used.
    write_slot: usize,
    clock: u64,
    started: u64,
    shared: usize,
    shared_exactly: usize,
    next: MemoSlot,
    /// The walk being taken: its nodes and gates so far.
    path: Vec<u32>,
    gates: Vec<Gate>,
}

#[derive(Debug, Default, Clone)]
struct MemoSlot {
    owner: u64,
    generation: u64,
    /// When it was last read or written.
    used: u64,
    frames: Vec<CursorFrame>,
    /// Per frame: the walk of the chain from that frame on; then the walk
    /// of the whole chain in the sample's own entry.
    walks: Vec<MemoWalk>,
    paths: Vec<u32>,
    gates: Vec<Gate>,
}

/// A walk's entry and its ranges of [`MemoSlot::paths`] and
/// [`MemoSlot::gates`].
#[derive(Debug, Clone, Copy)]
struct MemoWalk {
    entry: u32,
    path: (u32, u32),
    gates: (u32, u32),
}

/// A step of a walk through a perf tree whose result hangs on its shape:
/// the step's index in the walk, the parent node, the tree's version, the
/// frame's addresses that take the same step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    pub step: u32,
    pub parent: u32,
    pub version: u32,
    pub span: IpSpan,
}

const NO_WALK: MemoWalk = MemoWalk {
    entry: u32::MAX,
    path: (0, 0),
    gates: (0, 0),
};

/// Threads remembered at once (by owner, direct-mapped), and chains per
/// thread: a thread often alternates between a few call paths.
const MEMO_SLOTS: usize = 64;
const MEMO_WAYS: usize = 8;

/// The walk of a [`WalkMemo`] in the sample's own entry.
pub const OWN: usize = usize::MAX;

/// Where walk `at` is kept among `walks` ones, and the frame it starts at.
fn walk_index(at: usize, walks: usize) -> (usize, usize) {
    if at == OWN {
        (walks.saturating_sub(1), 0)
    } else {
        (at, at)
    }
}

impl Default for WalkMemo {
    fn default() -> Self {
        WalkMemo {
            slots: vec![MemoSlot::default(); MEMO_SLOTS * MEMO_WAYS],
            generation: 1,
            slot: 0,
            write_slot: 0,
            clock: 0,
            started: 0,
            shared: 0,
            shared_exactly: 0,
            next: MemoSlot::default(),
            path: Vec::new(),
            gates: Vec::new(),
        }
    }
}

impl WalkMemo {
    /// Starts the appends of `chain` for `owner` (a thread of one event).
    pub fn start(&mut self, owner: u64, chain: &[CursorFrame]) {
        let set = (owner as usize).wrapping_mul(0x9e37_79b9) % MEMO_SLOTS * MEMO_WAYS;
        self.started = self.generation;
        self.clock += 1;
        (self.slot, self.shared, self.shared_exactly) = (set, 0, 0);
        self.write_slot = set;
        for way in set..set + MEMO_WAYS {
            let slot = &self.slots[way];
            if slot.used < self.slots[self.write_slot].used {
                self.write_slot = way;
            }
            if slot.owner != owner || slot.generation != self.generation {
                continue;
            }
            let shared = chain
                .iter()
                .zip(&slot.frames)
                .take_while(|(a, b)| a.id == b.id)
                .count();
            if shared > self.shared {
                let exactly = chain
                    .iter()
                    .zip(&slot.frames[..shared])
                    .take_while(|(a, b)| a == b)
                    .count();
                (self.slot, self.shared, self.shared_exactly) = (way, shared, exactly);
            }
        }
        self.slots[self.slot].used = self.clock;
        self.next.owner = owner;
        self.next.frames.clear();
        self.next.frames.extend_from_slice(chain);
        self.next.walks.clear();
        self.next.walks.resize(chain.len() + 1, NO_WALK);
        self.next.paths.clear();
        self.next.gates.clear();
    }

    /// Where the walk of the chain from frame `at` on in `entry`'s tree
    /// `tree` can resume: the node and how many frames lead there (the
    /// root and 0 when it cannot). The gates it passes are in
    /// [`Self::gates`]; call [`Self::walked`] after the walk. [`OWN`] is
    /// the whole chain in the sample's own entry.
    pub fn resume(&mut self, at: usize, entry: u32, tree: &CallTree) -> (u32, usize) {
        self.path.clear();
        self.gates.clear();
        let slot = &self.slots[self.slot];
        let (index, at) = walk_index(at, slot.walks.len());
        if self.started != self.generation || at >= self.shared {
            return (0, 0);
        }
        let Some(walk) = slot.walks.get(index).filter(|w| w.entry == entry) else {
            return (0, 0);
        };
        let (Some(path), Some(gates)) = (
            slot.paths.get(walk.path.0 as usize..walk.path.1 as usize),
            slot.gates.get(walk.gates.0 as usize..walk.gates.1 as usize),
        ) else {
            return (0, 0);
        };
        let mut known = path.len().min(self.shared - at);
        for g in gates {
            let step = g.step as usize;
            if step >= known {
                break;
            }
            if at + step >= self.shared_exactly || tree.mixed_version(g.parent) != Some(g.version) {
                known = step;
                break;
            }
            self.gates.push(*g);
        }
        self.path.extend_from_slice(&path[..known]);
        (path[..known].last().copied().unwrap_or(0), known)
    }

    /// The gates of the steps [`Self::resume`] reused.
    pub fn gates(&self) -> &[Gate] {
        &self.gates
    }

    /// The path to push the walk's nodes to.
    pub fn path(&mut self) -> &mut Vec<u32> {
        &mut self.path
    }

    /// The nodes of the walk taken: one per frame walked.
    pub fn walk_path(&self) -> &[u32] {
        &self.path
    }

    /// Notes the walk of the chain from frame `at` on in `entry`'s tree
    /// `tree`, resumed after `known` frames: its nodes are in
    /// [`Self::path`], and its new gates are the tree's last walked ones.
    pub fn walked(&mut self, at: usize, entry: u32, known: usize, tree: &CallTree) {
        let (index, _) = walk_index(at, self.next.walks.len());
        let Some(w) = self.next.walks.get_mut(index) else {
            return;
        };
        let (path_start, gates_start) = (self.next.paths.len(), self.next.gates.len());
        self.next.paths.extend_from_slice(&self.path);
        self.next.gates.extend_from_slice(&self.gates);
        self.next
            .gates
            .extend(tree.walked_steps().iter().zip(tree.walked_mixed()).map(
                |(&(step, span), (parent, version))| Gate {
                    step: known as u32 + step,
                    parent,
                    version,
                    span,
                },
            ));
        *w = MemoWalk {
            entry,
            path: (path_start as u32, self.next.paths.len() as u32),
            gates: (gates_start as u32, self.next.gates.len() as u32),
        };
    }

    /// Ends the chain begun with [`Self::start`].
    pub fn finish(&mut self) {
        let slot = &mut self.slots[self.write_slot];
        std::mem::swap(slot, &mut self.next);
        slot.used = self.clock;
        slot.generation = if self.started == self.generation {
            self.generation
        } else {
            0
        };
    }

    /// Forgets every chain: some tree's children got mixed.
    pub fn invalidate(&mut self) {
        self.generation += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(n: u32) -> CursorFrame {
        CursorFrame {
            id: FrameId(n),
            shown: FrameId(n),
            ip: n as u64,
            dso_rank: 1,
        }
    }

    /// Appends `chain` like a children-mode sample: the chain from each
    /// frame on into tree `from` (one tree per start frame), through the
    /// memo; returns the nodes reached and how many steps were walked.
    fn append_all(
        trees: &mut [CallTree],
        memo: &mut WalkMemo,
        chain: &[CursorFrame],
    ) -> (Vec<u32>, usize) {
        let (frames, strings) = (Frames::default(), Strings::default());
        memo.start(7, chain);
        let mut reached = Vec::new();
        let mut walked = 0;
        for i in 0..chain.len() {
            let (start, known) = memo.resume(i, i as u32, &trees[i]);
            let rest = &chain[i + known..];
            walked += rest.len();
            let a = trees[i].append_resumed(
                start,
                chain.len() - i,
                rest,
                1,
                Key::Address,
                &frames,
                &strings,
                memo.path(),
            );
            memo.walked(i, i as u32, known, &trees[i]);
            reached.push(a.node.expect("a node"));
        }
        memo.finish();
        (reached, walked)
    }

    /// A frame of DSO 0 at `ip`, in symbol `sym` (start, name) or none.
    fn interned(frames: &mut Frames, ip: u64, sym: Option<(u64, StrId)>) -> CursorFrame {
        let map = crate::maps::Map {
            start: 0,
            end: u64::MAX,
            pgoff: 0,
            dso: DsoId(0),
            identity: true,
            access: 0,
            ino: 0,
        };
        let f = ChainFrame {
            ip,
            cpumode: 2,
            level: b'.',
            map: Some(map),
            addr: ip,
            sym: sym.map(|(start, _)| SymId(start as u32)),
            inlined: false,
            srcline: None,
            unwound: false,
        };
        frames.intern(Key::Function, &f, sym, None)
    }

    #[test]
    fn a_walk_of_mixed_children_goes_the_same_way_across_its_span() {
        let (mut frames, mut strings) = (Frames::default(), Strings::default());
        let main = (0x1000, strings.intern("main"));
        let work = (0x5000, strings.intern("work"));
        // Children of the root with and without symbols in one DSO:
        // perf's tree of them compares those by address.
        let mut chains = vec![interned(&mut frames, 0x1010, Some(main))];
        for ip in [0x2000, 0x7000, 0x3000, 0x9000, 0x6000, 0x4000] {
            chains.push(interned(&mut frames, ip, None));
        }
        chains.push(interned(&mut frames, 0x5010, Some(work)));
        let mut tree = CallTree::default();
        let mut reordered = Vec::new();
        for f in &chains {
            tree.append(&[*f], 1, Key::Function, &frames, &strings);
            reordered.extend_from_slice(tree.reordered());
        }
        assert_eq!(reordered, [0], "the root's children got mixed");
        for f in [chains[0], chains[7]] {
            let found = |ip| tree.find_mixed(0, &f.with_ip(ip), Key::Function, &frames, &strings);
            let (child, span) = found(f.ip).expect("appended");
            assert!(span.contains(f.ip) && span != IpSpan::ANY);
            for ip in (0..0xa000).step_by(8) {
                if span.contains(ip) {
                    assert_eq!(
                        found(ip).map(|(c, _)| c),
                        Some(child),
                        "{ip:#x} in {span:?}"
                    );
                }
            }
            assert!(tree.descends_from(child, 0));
            assert!(!tree.descends_from(0, child));
        }
    }

    #[test]
    fn walk_memo_resumes_where_the_last_chain_parted() {
        let mut trees = vec![CallTree::default(); 4];
        let mut plain = vec![CallTree::default(); 4];
        let mut memo = WalkMemo::default();
        let first = [frame(1), frame(2), frame(3), frame(4)];
        let second = [frame(1), frame(2), frame(5), frame(6)];
        let (_, walked) = append_all(&mut trees, &mut memo, &first);
        assert_eq!(walked, 4 + 3 + 2 + 1);
        let (reached, walked) = append_all(&mut trees, &mut memo, &second);
        // Trees 0 and 1 resume after frame 2; 2 and 3 start afresh.
        assert_eq!(walked, 2 + 2 + 2 + 1);
        let mut want = Vec::new();
        for chain in [&first, &second] {
            want.clear();
            for (i, tree) in plain.iter_mut().enumerate() {
                let (frames, strings) = (Frames::default(), Strings::default());
                let a = tree.append(&chain[i..], 1, Key::Address, &frames, &strings);
                want.push(a.node.expect("a node"));
            }
        }
        assert_eq!(reached, want, "the nodes a plain append reaches");
        // After a tree's children got mixed, nothing is resumed.
        memo.invalidate();
        let (_, walked) = append_all(&mut trees, &mut memo, &second);
        assert_eq!(walked, 4 + 3 + 2 + 1);
    }

    #[test]
    fn parse_opts() {
        let mut p = Params::default();
        parse_report_opt("graph,0.5,caller,function,percent", &mut p).unwrap();
        assert_eq!(p.mode, Mode::Graph);
        assert_eq!(p.order, Order::Caller);
        assert!(p.order_set);
        let mut p = Params::default();
        parse_report_opt("f,1,10,callee", &mut p).unwrap();
        assert_eq!(p.mode, Mode::Flat);
        assert_eq!(p.min_percent, 1.0);
        assert_eq!(p.print_limit, 10);
        assert_eq!(p.order, Order::Callee);
        let mut p = Params::default();
        parse_report_opt("none", &mut p).unwrap();
        assert!(!p.enabled);
        assert!(parse_report_opt("bogus", &mut Params::default()).is_err());
    }
}

/// The in-order sequence of a Linux rbtree after inserting items `0..n` in
/// that order, each walking from the root and going left when
/// `left(new, existing)`. perf orders hist entries this way
/// (`__hists__insert_output_entry`); with a comparator that is not a total
/// order (perf's `--children` depth rule applies to entries of the same
/// thread only) the result depends on the tree's shape, so the red-black
/// balancing is reproduced (`__rb_insert`: same cases as CLRS).
pub fn rb_insertion_order(n: usize, mut left: impl FnMut(usize, usize) -> bool) -> Vec<usize> {
    let mut tree = crate::rbtree::RbTree::default();
    for i in 0..n {
        tree.insert_by(0, |existing, _| left(i, existing));
    }
    tree.in_order()
}

#[cfg(test)]
mod rb_tests {
    use super::rb_insertion_order;

    #[test]
    fn total_order_sorts_stably() {
        let v = [5, 3, 9, 3, 1, 7, 5, 5, 0, 2, 8, 3];
        let order = rb_insertion_order(v.len(), |a, b| v[a] < v[b]);
        let got: Vec<_> = order.iter().map(|&i| (v[i], i)).collect();
        let mut want: Vec<_> = v.iter().copied().zip(0..).collect();
        want.sort();
        assert_eq!(got, want);
    }
}

/// perf's `1 << i` on its `int depth_mask`: x86 shifts count modulo 32, so
/// graphs deeper than 32 levels reuse the low bits.
fn bit(i: usize) -> u32 {
    1u32.wrapping_shl(i as u32)
}
