//! The timeline: an index-based red-black tree of queued entities with a cached
//! leftmost node, optionally augmented with each subtree's minimum vruntime.
//!
//! CFS orders entities by vruntime and picks the leftmost (§1.4). EEVDF orders
//! them by virtual deadline and needs, for every subtree, the smallest vruntime
//! in it, so that the earliest-deadline *eligible* entity is found in O(log n)
//! (§1.5, `pick_eevdf`):
//!
//! ```text
//!                 [d=9 v=4 | min 1]          key = deadline (d)
//!                /                 \         augment = min vruntime below
//!     [d=5 v=6 | min 6]      [d=12 v=1 | min 1]
//! ```
//!
//! Nodes live in one arena indexed by entity number, shared by all the trees of
//! a CPU (an entity is in at most one tree at a time), so nothing allocates after
//! [`TimelineNodes::new`]. Keys are compared wrap-safe, `(s64)(a - b) < 0` (§1.3);
//! equal keys go right, so ties keep insertion order.

use alloc::vec;
use alloc::vec::Vec;

use crate::weight::vtime_before;

/// "No node".
pub const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    left: u32,
    right: u32,
    parent: u32,
    red: bool,
    key: u64,
    vruntime: u64,
    /// Smallest vruntime in the subtree rooted here (augmented trees only).
    min_vruntime: u64,
}

const EMPTY: Node = Node {
    left: NIL,
    right: NIL,
    parent: NIL,
    red: false,
    key: 0,
    vruntime: 0,
    min_vruntime: 0,
};

/// One tree: its root and its cached leftmost node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeline {
    root: u32,
    leftmost: u32,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            root: NIL,
            leftmost: NIL,
        }
    }
}

impl Timeline {
    /// The entity with the smallest key, if any (O(1)).
    pub fn first(&self) -> Option<u32> {
        (self.leftmost != NIL).then_some(self.leftmost)
    }

    /// Whether the tree is empty.
    pub fn is_empty(&self) -> bool {
        self.root == NIL
    }
}

/// The node arena shared by the timelines of one CPU.
#[derive(Clone, Debug)]
pub struct TimelineNodes {
    nodes: Vec<Node>,
    augmented: bool,
}

impl TimelineNodes {
    /// An arena for entity numbers below `capacity`; `augmented` keeps the
    /// subtree minimum vruntime (needed by EEVDF).
    pub fn new(capacity: usize, augmented: bool) -> Self {
        TimelineNodes {
            nodes: vec![EMPTY; capacity],
            augmented,
        }
    }

    /// The key `id` was inserted with.
    pub fn key(&self, id: u32) -> u64 {
        self.nodes[id as usize].key
    }

    /// The vruntime `id` was inserted with.
    pub fn vruntime(&self, id: u32) -> u64 {
        self.nodes[id as usize].vruntime
    }

    /// The smallest vruntime in the tree (augmented trees only), O(1).
    pub fn min_vruntime(&self, timeline: &Timeline) -> Option<u64> {
        (timeline.root != NIL).then(|| self.nodes[timeline.root as usize].min_vruntime)
    }

    fn is_red(&self, id: u32) -> bool {
        id != NIL && self.nodes[id as usize].red
    }

    /// Recomputes the augmented value of `id` from its children.
    fn recompute(&mut self, id: u32) {
        let node = self.nodes[id as usize];
        let mut min = node.vruntime;
        if node.left != NIL {
            let v = self.nodes[node.left as usize].min_vruntime;
            if vtime_before(v, min) {
                min = v;
            }
        }
        if node.right != NIL {
            let v = self.nodes[node.right as usize].min_vruntime;
            if vtime_before(v, min) {
                min = v;
            }
        }
        self.nodes[id as usize].min_vruntime = min;
    }

    /// Replaces `old` by `new` as the child of `parent` (or as the root).
    fn replace_child(&mut self, timeline: &mut Timeline, parent: u32, old: u32, new: u32) {
        if parent == NIL {
            timeline.root = new;
        } else if self.nodes[parent as usize].left == old {
            self.nodes[parent as usize].left = new;
        } else {
            self.nodes[parent as usize].right = new;
        }
    }

    fn rotate_left(&mut self, timeline: &mut Timeline, x: u32) {
        let y = self.nodes[x as usize].right;
        let y_left = self.nodes[y as usize].left;
        let parent = self.nodes[x as usize].parent;
        self.nodes[x as usize].right = y_left;
        if y_left != NIL {
            self.nodes[y_left as usize].parent = x;
        }
        self.nodes[y as usize].parent = parent;
        self.replace_child(timeline, parent, x, y);
        self.nodes[y as usize].left = x;
        self.nodes[x as usize].parent = y;
        if self.augmented {
            // y now covers the subtree x covered; x lost y's right subtree.
            self.nodes[y as usize].min_vruntime = self.nodes[x as usize].min_vruntime;
            self.recompute(x);
        }
    }

    fn rotate_right(&mut self, timeline: &mut Timeline, x: u32) {
        let y = self.nodes[x as usize].left;
        let y_right = self.nodes[y as usize].right;
        let parent = self.nodes[x as usize].parent;
        self.nodes[x as usize].left = y_right;
        if y_right != NIL {
            self.nodes[y_right as usize].parent = x;
        }
        self.nodes[y as usize].parent = parent;
        self.replace_child(timeline, parent, x, y);
        self.nodes[y as usize].right = x;
        self.nodes[x as usize].parent = y;
        if self.augmented {
            self.nodes[y as usize].min_vruntime = self.nodes[x as usize].min_vruntime;
            self.recompute(x);
        }
    }

    /// Inserts entity `id` with `key` (vruntime for CFS, deadline for EEVDF).
    /// `id` must not be in any tree.
    pub fn insert(&mut self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64) {
        let mut parent = NIL;
        let mut cursor = timeline.root;
        let mut go_left = false;
        let mut leftmost = true;
        while cursor != NIL {
            parent = cursor;
            let node = &self.nodes[cursor as usize];
            go_left = vtime_before(key, node.key);
            if go_left {
                cursor = node.left;
            } else {
                cursor = node.right;
                leftmost = false;
            }
        }
        self.nodes[id as usize] = Node {
            left: NIL,
            right: NIL,
            parent,
            red: true,
            key,
            vruntime,
            min_vruntime: vruntime,
        };
        if parent == NIL {
            timeline.root = id;
        } else if go_left {
            self.nodes[parent as usize].left = id;
        } else {
            self.nodes[parent as usize].right = id;
        }
        if leftmost {
            timeline.leftmost = id;
        }
        if self.augmented {
            // Adding a value can only lower minima: stop where it does not.
            let mut at = parent;
            while at != NIL && vtime_before(vruntime, self.nodes[at as usize].min_vruntime) {
                self.nodes[at as usize].min_vruntime = vruntime;
                at = self.nodes[at as usize].parent;
            }
        }
        self.insert_fixup(timeline, id);
    }

    fn insert_fixup(&mut self, timeline: &mut Timeline, mut z: u32) {
        loop {
            let mut parent = self.nodes[z as usize].parent;
            if !self.is_red(parent) {
                break;
            }
            // A red parent is never the root, so the grandparent exists.
            let grand = self.nodes[parent as usize].parent;
            if parent == self.nodes[grand as usize].left {
                let uncle = self.nodes[grand as usize].right;
                if self.is_red(uncle) {
                    self.nodes[parent as usize].red = false;
                    self.nodes[uncle as usize].red = false;
                    self.nodes[grand as usize].red = true;
                    z = grand;
                    continue;
                }
                if z == self.nodes[parent as usize].right {
                    self.rotate_left(timeline, parent);
                    z = parent;
                    parent = self.nodes[z as usize].parent;
                }
                self.nodes[parent as usize].red = false;
                self.nodes[grand as usize].red = true;
                self.rotate_right(timeline, grand);
            } else {
                let uncle = self.nodes[grand as usize].left;
                if self.is_red(uncle) {
                    self.nodes[parent as usize].red = false;
                    self.nodes[uncle as usize].red = false;
                    self.nodes[grand as usize].red = true;
                    z = grand;
                    continue;
                }
                if z == self.nodes[parent as usize].left {
                    self.rotate_right(timeline, parent);
                    z = parent;
                    parent = self.nodes[z as usize].parent;
                }
                self.nodes[parent as usize].red = false;
                self.nodes[grand as usize].red = true;
                self.rotate_left(timeline, grand);
            }
        }
        let root = timeline.root;
        self.nodes[root as usize].red = false;
    }

    /// The next node in key order.
    pub fn next(&self, id: u32) -> Option<u32> {
        let node = &self.nodes[id as usize];
        if node.right != NIL {
            let mut at = node.right;
            while self.nodes[at as usize].left != NIL {
                at = self.nodes[at as usize].left;
            }
            return Some(at);
        }
        let mut child = id;
        let mut parent = node.parent;
        while parent != NIL && self.nodes[parent as usize].right == child {
            child = parent;
            parent = self.nodes[parent as usize].parent;
        }
        (parent != NIL).then_some(parent)
    }

    /// Removes entity `id`, which must be in `timeline`.
    pub fn remove(&mut self, timeline: &mut Timeline, id: u32) {
        let z = self.nodes[id as usize];
        if timeline.leftmost == id {
            // The leftmost has no left child: its successor is the leftmost of
            // its right subtree, or its parent.
            timeline.leftmost = if z.right != NIL {
                let mut at = z.right;
                while self.nodes[at as usize].left != NIL {
                    at = self.nodes[at as usize].left;
                }
                at
            } else {
                z.parent
            };
        }
        let child;
        let child_parent;
        let removed_red;
        if z.left == NIL || z.right == NIL {
            child = if z.left == NIL { z.right } else { z.left };
            child_parent = z.parent;
            removed_red = z.red;
            self.replace_child(timeline, z.parent, id, child);
            if child != NIL {
                self.nodes[child as usize].parent = z.parent;
            }
        } else {
            // Two children: the successor y takes z's place and colour.
            let mut y = z.right;
            while self.nodes[y as usize].left != NIL {
                y = self.nodes[y as usize].left;
            }
            removed_red = self.nodes[y as usize].red;
            child = self.nodes[y as usize].right;
            if self.nodes[y as usize].parent == id {
                child_parent = y;
            } else {
                child_parent = self.nodes[y as usize].parent;
                self.nodes[child_parent as usize].left = child;
                if child != NIL {
                    self.nodes[child as usize].parent = child_parent;
                }
                self.nodes[y as usize].right = z.right;
                self.nodes[z.right as usize].parent = y;
            }
            self.replace_child(timeline, z.parent, id, y);
            self.nodes[y as usize].parent = z.parent;
            self.nodes[y as usize].left = z.left;
            self.nodes[z.left as usize].parent = y;
            self.nodes[y as usize].red = z.red;
        }
        if self.augmented {
            let mut at = child_parent;
            while at != NIL {
                self.recompute(at);
                at = self.nodes[at as usize].parent;
            }
        }
        if !removed_red {
            self.remove_fixup(timeline, child, child_parent);
        }
        self.nodes[id as usize] = EMPTY;
    }

    fn remove_fixup(&mut self, timeline: &mut Timeline, mut x: u32, mut parent: u32) {
        while x != timeline.root && !self.is_red(x) {
            if x == self.nodes[parent as usize].left {
                let mut w = self.nodes[parent as usize].right;
                if self.is_red(w) {
                    self.nodes[w as usize].red = false;
                    self.nodes[parent as usize].red = true;
                    self.rotate_left(timeline, parent);
                    w = self.nodes[parent as usize].right;
                }
                let (wl, wr) = (self.nodes[w as usize].left, self.nodes[w as usize].right);
                if !self.is_red(wl) && !self.is_red(wr) {
                    self.nodes[w as usize].red = true;
                    x = parent;
                    parent = self.nodes[x as usize].parent;
                } else {
                    if !self.is_red(wr) {
                        self.nodes[wl as usize].red = false;
                        self.nodes[w as usize].red = true;
                        self.rotate_right(timeline, w);
                        w = self.nodes[parent as usize].right;
                    }
                    self.nodes[w as usize].red = self.nodes[parent as usize].red;
                    self.nodes[parent as usize].red = false;
                    let wr = self.nodes[w as usize].right;
                    self.nodes[wr as usize].red = false;
                    self.rotate_left(timeline, parent);
                    x = timeline.root;
                    break;
                }
            } else {
                let mut w = self.nodes[parent as usize].left;
                if self.is_red(w) {
                    self.nodes[w as usize].red = false;
                    self.nodes[parent as usize].red = true;
                    self.rotate_right(timeline, parent);
                    w = self.nodes[parent as usize].left;
                }
                let (wl, wr) = (self.nodes[w as usize].left, self.nodes[w as usize].right);
                if !self.is_red(wl) && !self.is_red(wr) {
                    self.nodes[w as usize].red = true;
                    x = parent;
                    parent = self.nodes[x as usize].parent;
                } else {
                    if !self.is_red(wl) {
                        self.nodes[wr as usize].red = false;
                        self.nodes[w as usize].red = true;
                        self.rotate_left(timeline, w);
                        w = self.nodes[parent as usize].left;
                    }
                    self.nodes[w as usize].red = self.nodes[parent as usize].red;
                    self.nodes[parent as usize].red = false;
                    let wl = self.nodes[w as usize].left;
                    self.nodes[wl as usize].red = false;
                    self.rotate_right(timeline, parent);
                    x = timeline.root;
                    break;
                }
            }
        }
        if x != NIL {
            self.nodes[x as usize].red = false;
        }
    }

    /// The entity with the earliest key among those whose vruntime satisfies
    /// `eligible`, found through the augmented minima (§1.5 `pick_eevdf` steps
    /// 4–5): descend left while the left subtree holds an eligible entity; an
    /// eligible node is the answer; otherwise go right.
    pub fn first_eligible(
        &self,
        timeline: &Timeline,
        eligible: impl Fn(u64) -> bool,
    ) -> Option<u32> {
        debug_assert!(self.augmented);
        let leftmost = timeline.leftmost;
        if leftmost != NIL && eligible(self.nodes[leftmost as usize].vruntime) {
            return Some(leftmost);
        }
        let mut at = timeline.root;
        while at != NIL {
            let node = &self.nodes[at as usize];
            if node.left != NIL && eligible(self.nodes[node.left as usize].min_vruntime) {
                at = node.left;
                continue;
            }
            if eligible(node.vruntime) {
                return Some(at);
            }
            at = node.right;
        }
        None
    }

    /// Checks the red-black, ordering, parent and augmentation invariants; returns
    /// the number of nodes. For tests.
    #[cfg(test)]
    pub fn check(&self, timeline: &Timeline) -> usize {
        fn walk(nodes: &TimelineNodes, at: u32, parent: u32, count: &mut usize) -> (usize, u64) {
            if at == NIL {
                return (1, u64::MAX);
            }
            *count += 1;
            let node = nodes.nodes[at as usize];
            assert_eq!(node.parent, parent, "parent link of {at}");
            if node.red {
                assert!(
                    !nodes.is_red(node.left) && !nodes.is_red(node.right),
                    "red-red at {at}"
                );
            }
            if node.left != NIL {
                assert!(!vtime_before(node.key, nodes.nodes[node.left as usize].key));
            }
            if node.right != NIL {
                assert!(!vtime_before(
                    nodes.nodes[node.right as usize].key,
                    node.key
                ));
            }
            let (lh, lmin) = walk(nodes, node.left, at, count);
            let (rh, rmin) = walk(nodes, node.right, at, count);
            assert_eq!(lh, rh, "black height at {at}");
            let mut min = node.vruntime;
            for m in [lmin, rmin] {
                if m != u64::MAX && vtime_before(m, min) {
                    min = m;
                }
            }
            if nodes.augmented {
                assert_eq!(node.min_vruntime, min, "augmented min at {at}");
            }
            (lh + usize::from(!node.red), min)
        }
        let mut count = 0;
        assert!(!self.is_red(timeline.root));
        walk(self, timeline.root, NIL, &mut count);
        let mut leftmost = timeline.root;
        while leftmost != NIL && self.nodes[leftmost as usize].left != NIL {
            leftmost = self.nodes[leftmost as usize].left;
        }
        assert_eq!(timeline.leftmost, leftmost, "cached leftmost");
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fair::test_rng::Rng;

    /// Brute-force model: random inserts and removals agree with a sorted list,
    /// and every invariant holds after each operation.
    #[test]
    fn matches_a_sorted_list_model() {
        for augmented in [false, true] {
            let mut rng = Rng::new(7);
            let mut nodes = TimelineNodes::new(64, augmented);
            let mut timeline = Timeline::default();
            let mut model: Vec<(u64, u32, u64)> = Vec::new();
            for _ in 0..4000 {
                let id = rng.below(64) as u32;
                if let Some(pos) = model.iter().position(|e| e.1 == id) {
                    model.remove(pos);
                    nodes.remove(&mut timeline, id);
                } else {
                    let key = rng.below(50);
                    let vruntime = rng.below(1000);
                    // Equal keys go after existing ones.
                    let pos = model.iter().position(|e| e.0 > key).unwrap_or(model.len());
                    model.insert(pos, (key, id, vruntime));
                    nodes.insert(&mut timeline, id, key, vruntime);
                }
                assert_eq!(nodes.check(&timeline), model.len());
                assert_eq!(timeline.first(), model.first().map(|e| e.1));
                let mut walk = Vec::new();
                let mut at = timeline.first();
                while let Some(id) = at {
                    walk.push(id);
                    at = nodes.next(id);
                }
                let expected: Vec<u32> = model.iter().map(|e| e.1).collect();
                assert_eq!(walk, expected);
                if augmented {
                    let min = model.iter().map(|e| e.2).min();
                    assert_eq!(nodes.min_vruntime(&timeline), min);
                    let limit = rng.below(1000);
                    let brute = model.iter().find(|e| e.2 <= limit).map(|e| e.1);
                    assert_eq!(nodes.first_eligible(&timeline, |v| v <= limit), brute);
                }
            }
        }
    }
}
