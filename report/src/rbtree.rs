//! The red-black tree of Linux's `lib/rbtree.c` (the textbook algorithm:
//! the same cases, rotations and recolourings), as arena nodes. perf keeps
//! symbols and hist entries in such trees; where its comparisons are not a
//! strict total order (overlapping symbols, entries of different threads),
//! the answer depends on the tree's shape, so prec builds the same shape.

pub(crate) const NIL: u32 = u32::MAX;

/// One node of [`RbTree`]: links, colour and the search key (`start`,
/// `end`) of symbol `sym` of the table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RbNode {
    pub left: u32,
    pub right: u32,
    pub parent: u32,
    pub red: bool,
    pub erased: bool,
    pub start: u64,
    pub end: u64,
    pub sym: u32,
}

/// The shape of the red-black tree perf keeps a DSO's symbols in, built by
/// the same insertions and erasures (Linux's `lib/rbtree.c` is the textbook
/// algorithm: the same cases, rotations and recolourings), so that lookups
/// of overlapping symbols walk the same path as perf's `symbols__find`.
/// Node ids are the caller's (index in symbol-table order).
#[derive(Clone, Debug)]
pub(crate) struct RbTree {
    pub nodes: Vec<RbNode>,
    pub root: u32,
    /// How many rotations the tree has had: a search's path changes only
    /// with them (an insertion without one only hangs a leaf).
    pub rotations: u64,
}

impl Default for RbTree {
    fn default() -> Self {
        RbTree {
            nodes: Vec::new(),
            root: NIL,
            rotations: 0,
        }
    }
}

impl RbTree {
    pub(crate) fn left(&self, n: u32) -> u32 {
        self.nodes.get(n as usize).map_or(NIL, |x| x.left)
    }

    pub(crate) fn right(&self, n: u32) -> u32 {
        self.nodes.get(n as usize).map_or(NIL, |x| x.right)
    }

    pub(crate) fn parent(&self, n: u32) -> u32 {
        self.nodes.get(n as usize).map_or(NIL, |x| x.parent)
    }

    /// NIL leaves are black.
    pub(crate) fn is_red(&self, n: u32) -> bool {
        self.nodes.get(n as usize).is_some_and(|x| x.red)
    }

    pub(crate) fn set_red(&mut self, n: u32, red: bool) {
        if let Some(x) = self.nodes.get_mut(n as usize) {
            x.red = red;
        }
    }

    pub(crate) fn set_left(&mut self, n: u32, v: u32) {
        if let Some(x) = self.nodes.get_mut(n as usize) {
            x.left = v;
        }
    }

    pub(crate) fn set_right(&mut self, n: u32, v: u32) {
        if let Some(x) = self.nodes.get_mut(n as usize) {
            x.right = v;
        }
    }

    pub(crate) fn set_parent(&mut self, n: u32, v: u32) {
        if let Some(x) = self.nodes.get_mut(n as usize) {
            x.parent = v;
        }
    }

    /// Puts `new` where `old` hangs from `parent` (or at the root).
    pub(crate) fn change_child(&mut self, old: u32, new: u32, parent: u32) {
        if parent == NIL {
            self.root = new;
        } else if self.left(parent) == old {
            self.set_left(parent, new);
        } else {
            self.set_right(parent, new);
        }
    }

    pub(crate) fn rotate_left(&mut self, x: u32) {
        self.rotations += 1;
        let y = self.right(x);
        let yl = self.left(y);
        self.set_right(x, yl);
        if yl != NIL {
            self.set_parent(yl, x);
        }
        let p = self.parent(x);
        self.set_parent(y, p);
        self.change_child(x, y, p);
        self.set_left(y, x);
        self.set_parent(x, y);
    }

    pub(crate) fn rotate_right(&mut self, x: u32) {
        self.rotations += 1;
        let y = self.left(x);
        let yr = self.right(y);
        self.set_left(x, yr);
        if yr != NIL {
            self.set_parent(yr, x);
        }
        let p = self.parent(x);
        self.set_parent(y, p);
        self.change_child(x, y, p);
        self.set_right(y, x);
        self.set_parent(x, y);
    }

    /// perf's `symbols__insert`: equal starts go right (after the existing
    /// ones). `id` must be the next node id.
    pub(crate) fn insert(&mut self, id: usize, start: u64) -> usize {
        debug_assert_eq!(id, self.nodes.len());
        self.insert_by(start, |_, n| start < n.start)
    }

    /// Inserts the next node (key `start`), walking down from the root and
    /// going left where `go_left_of(id, node)` of the node met; returns the
    /// new node's id.
    pub(crate) fn insert_by(
        &mut self,
        start: u64,
        mut go_left_of: impl FnMut(usize, &RbNode) -> bool,
    ) -> usize {
        let mut parent = NIL;
        let mut cur = self.root;
        let mut go_left = false;
        while let Some(n) = self.nodes.get(cur as usize) {
            parent = cur;
            go_left = go_left_of(cur as usize, n);
            cur = if go_left { n.left } else { n.right };
        }
        self.insert_at(parent, go_left, start)
    }

    /// Links the next node (key `start`) as the `go_left` child of leaf
    /// slot `parent` (NIL: the root), found by the caller's own walk, and
    /// rebalances (`rb_link_node` + `rb_insert_color`); returns its id.
    pub(crate) fn insert_at(&mut self, parent: u32, go_left: bool, start: u64) -> usize {
        let id = self.nodes.len();
        let Ok(z) = u32::try_from(id) else {
            return id;
        };
        if z == NIL {
            return id;
        }
        self.nodes.push(RbNode {
            left: NIL,
            right: NIL,
            parent,
            red: true,
            erased: false,
            start,
            end: start,
            sym: 0,
        });
        if parent == NIL {
            self.root = z;
        } else if go_left {
            self.set_left(parent, z);
        } else {
            self.set_right(parent, z);
        }
        self.insert_fixup(z);
        z as usize
    }

    pub(crate) fn insert_fixup(&mut self, mut z: u32) {
        while self.is_red(self.parent(z)) {
            let p = self.parent(z);
            let g = self.parent(p);
            if p == self.left(g) {
                let u = self.right(g);
                if self.is_red(u) {
                    self.set_red(p, false);
                    self.set_red(u, false);
                    self.set_red(g, true);
                    z = g;
                    continue;
                }
                if z == self.right(p) {
                    z = p;
                    self.rotate_left(z);
                }
                let p = self.parent(z);
                let g = self.parent(p);
                self.set_red(p, false);
                self.set_red(g, true);
                self.rotate_right(g);
            } else {
                let u = self.left(g);
                if self.is_red(u) {
                    self.set_red(p, false);
                    self.set_red(u, false);
                    self.set_red(g, true);
                    z = g;
                    continue;
                }
                if z == self.left(p) {
                    z = p;
                    self.rotate_right(z);
                }
                let p = self.parent(z);
                let g = self.parent(p);
                self.set_red(p, false);
                self.set_red(g, true);
                self.rotate_left(g);
            }
        }
        let root = self.root;
        self.set_red(root, false);
    }

    /// `rb_erase`: a node with two children is replaced by its successor,
    /// which takes its colour.
    pub(crate) fn erase(&mut self, id: usize) {
        let Ok(z) = u32::try_from(id) else { return };
        match self.nodes.get(id) {
            Some(n) if !n.erased => {}
            _ => return,
        }
        let (x, xparent, removed_black);
        if self.left(z) == NIL || self.right(z) == NIL {
            x = if self.left(z) == NIL {
                self.right(z)
            } else {
                self.left(z)
            };
            xparent = self.parent(z);
            removed_black = !self.is_red(z);
            self.change_child(z, x, xparent);
            if x != NIL {
                self.set_parent(x, xparent);
            }
        } else {
            let mut y = self.right(z);
            while self.left(y) != NIL {
                y = self.left(y);
            }
            removed_black = !self.is_red(y);
            x = self.right(y);
            if self.parent(y) == z {
                xparent = y;
            } else {
                xparent = self.parent(y);
                self.change_child(y, x, xparent);
                if x != NIL {
                    self.set_parent(x, xparent);
                }
                let zr = self.right(z);
                self.set_right(y, zr);
                self.set_parent(zr, y);
            }
            let zp = self.parent(z);
            self.change_child(z, y, zp);
            self.set_parent(y, zp);
            let zl = self.left(z);
            self.set_left(y, zl);
            self.set_parent(zl, y);
            let zred = self.is_red(z);
            self.set_red(y, zred);
        }
        if let Some(n) = self.nodes.get_mut(id) {
            n.erased = true;
            n.left = NIL;
            n.right = NIL;
            n.parent = NIL;
        }
        if removed_black {
            self.erase_fixup(x, xparent);
        }
    }

    pub(crate) fn erase_fixup(&mut self, mut x: u32, mut p: u32) {
        while x != self.root && !self.is_red(x) && p != NIL {
            // Like Linux: `x` is the left child unless it is the right one
            // (`x` may be NIL, its sibling never is).
            if x != self.right(p) {
                let mut w = self.right(p);
                if self.is_red(w) {
                    self.set_red(w, false);
                    self.set_red(p, true);
                    self.rotate_left(p);
                    w = self.right(p);
                }
                if !self.is_red(self.left(w)) && !self.is_red(self.right(w)) {
                    self.set_red(w, true);
                    x = p;
                    p = self.parent(x);
                } else {
                    if !self.is_red(self.right(w)) {
                        let wl = self.left(w);
                        self.set_red(wl, false);
                        self.set_red(w, true);
                        self.rotate_right(w);
                        w = self.right(p);
                    }
                    let pred = self.is_red(p);
                    self.set_red(w, pred);
                    self.set_red(p, false);
                    let wr = self.right(w);
                    self.set_red(wr, false);
                    self.rotate_left(p);
                    x = self.root;
                    break;
                }
            } else {
                let mut w = self.left(p);
                if self.is_red(w) {
                    self.set_red(w, false);
                    self.set_red(p, true);
                    self.rotate_right(p);
                    w = self.left(p);
                }
                if !self.is_red(self.left(w)) && !self.is_red(self.right(w)) {
                    self.set_red(w, true);
                    x = p;
                    p = self.parent(x);
                } else {
                    if !self.is_red(self.left(w)) {
                        let wr = self.right(w);
                        self.set_red(wr, false);
                        self.set_red(w, true);
                        self.rotate_left(w);
                        w = self.left(p);
                    }
                    let pred = self.is_red(p);
                    self.set_red(w, pred);
                    self.set_red(p, false);
                    let wl = self.left(w);
                    self.set_red(wl, false);
                    self.rotate_right(p);
                    x = self.root;
                    break;
                }
            }
        }
        self.set_red(x, false);
    }

    /// Live node ids in key order (ties in insertion order).
    pub(crate) fn in_order(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack: Vec<u32> = Vec::new();
        let mut cur = self.root;
        loop {
            while let Some(n) = self.nodes.get(cur as usize) {
                stack.push(cur);
                cur = n.left;
            }
            let Some(n) = stack.pop() else { break };
            out.push(n as usize);
            cur = self.right(n);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks the red-black invariants and parent links; returns the black
    /// height.
    fn check(t: &RbTree, n: u32, parent: u32, lo: u64, hi: u64) -> usize {
        if n == NIL {
            return 1;
        }
        let node = &t.nodes[n as usize];
        assert!(!node.erased);
        assert_eq!(node.parent, parent);
        assert!(node.start >= lo && node.start <= hi);
        if node.red {
            assert!(!t.is_red(node.left) && !t.is_red(node.right));
        }
        let l = check(t, node.left, n, lo, node.start);
        let r = check(t, node.right, n, node.start, hi);
        assert_eq!(l, r);
        l + usize::from(!node.red)
    }

    #[test]
    fn rbtree_stays_balanced_through_inserts_and_erases() {
        let mut t = RbTree::default();
        let mut x: u64 = 12345;
        let mut keys = Vec::new();
        for i in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = (x >> 33) % 500;
            t.insert(i, k);
            keys.push(k);
        }
        check(&t, t.root, NIL, 0, u64::MAX);
        let order = t.in_order();
        assert!(order.windows(2).all(|w| {
            let (a, b) = (keys[w[0]], keys[w[1]]);
            a < b || (a == b && w[0] < w[1])
        }));
        for i in (0..2000).step_by(3) {
            t.erase(i);
            t.erase(i); // a second erase is a no-op
        }
        check(&t, t.root, NIL, 0, u64::MAX);
        let left: Vec<usize> = t.in_order();
        assert_eq!(left.len(), 2000 - 667);
        assert!(left.iter().all(|i| i % 3 != 0));
    }

    #[test]
    fn rbtree_shape_matches_linux_for_sequential_inserts() {
        // Linux rbtree after inserting 1..=7 in order: 2 at the root,
        // 1 and 4 below it, 4 with 3 and 6, 6 with 5 and 7.
        let mut t = RbTree::default();
        for i in 0..7 {
            t.insert(i, i as u64 + 1);
        }
        let key = |n: u32| t.nodes.get(n as usize).map(|x| x.start);
        assert_eq!(key(t.root), Some(2));
        assert_eq!(key(t.left(t.root)), Some(1));
        let four = t.right(t.root);
        assert_eq!(key(four), Some(4));
        assert_eq!(key(t.left(four)), Some(3));
        assert_eq!(key(t.right(four)), Some(6));
    }
}
