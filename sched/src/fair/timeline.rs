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
//! Nodes live in one arena indexed by entity number (plus one: slot 0 is a
//! shared black sentinel, as in the textbook), shared by all the trees of a CPU (an entity is in at most one tree at a time), so nothing allocates after
//! [`TimelineNodes::new`]. Keys are compared wrap-safe, `(s64)(a - b) < 0` (§1.3);
//! equal keys go right, so ties keep insertion order.

use alloc::vec;
use alloc::vec::Vec;

use crate::weight::vtime_before;

/// "No entity", for the entity fields that other modules keep (`curr`, `skip`).
pub const NIL: u32 = u32::MAX;

/// Index of the shared black sentinel node. Entity `id` lives at index `id + 1`,
/// so that a child or parent link of 0 means "none" and the sentinel can be read
/// (it is black) and written (its parent, during a removal) without a branch.
const SENTINEL: u32 = 0;

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
    left: SENTINEL,
    right: SENTINEL,
    parent: SENTINEL,
    red: false,
    key: 0,
    vruntime: 0,
    min_vruntime: 0,
};

/// One tree: its root and its cached leftmost node (node indices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeline {
    root: u32,
    leftmost: u32,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            root: SENTINEL,
            leftmost: SENTINEL,
        }
    }
}

impl Timeline {
    /// The entity with the smallest key, if any (O(1)).
    #[inline]
    pub fn first(&self) -> Option<u32> {
        (self.leftmost != SENTINEL).then(|| self.leftmost - 1)
    }

    /// Whether the tree is empty.
    pub fn is_empty(&self) -> bool {
        self.root == SENTINEL
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
            nodes: vec![EMPTY; capacity + 1],
            augmented,
        }
    }

    /// The key entity `id` was inserted with.
    #[inline]
    pub fn key(&self, id: u32) -> u64 {
        self.nodes[id as usize + 1].key
    }

    /// The vruntime entity `id` was inserted with.
    #[inline]
    pub fn vruntime(&self, id: u32) -> u64 {
        self.nodes[id as usize + 1].vruntime
    }

    /// The smallest vruntime in the tree (augmented trees only), O(1).
    #[inline]
    pub fn min_vruntime(&self, timeline: &Timeline) -> Option<u64> {
        (timeline.root != SENTINEL).then(|| self.nodes[timeline.root as usize].min_vruntime)
    }

    #[inline(always)]
    fn node(&self, at: u32) -> &Node {
        &self.nodes[at as usize]
    }

    #[inline(always)]
    fn node_mut(&mut self, at: u32) -> &mut Node {
        &mut self.nodes[at as usize]
    }

    /// Recomputes the augmented value of node `at` from its children (an empty
    /// child is skipped).
    #[inline(always)]
    fn recompute(&mut self, at: u32) {
        let node = self.node(at);
        let (left, right) = (node.left, node.right);
        let mut min = node.vruntime;
        if left != SENTINEL {
            let v = self.node(left).min_vruntime;
            if vtime_before(v, min) {
                min = v;
            }
        }
        if right != SENTINEL {
            let v = self.node(right).min_vruntime;
            if vtime_before(v, min) {
                min = v;
            }
        }
        self.node_mut(at).min_vruntime = min;
    }

    /// Makes `new` the child of `parent` in place of `old` (or the root).
    #[inline(always)]
    fn replace_child(&mut self, timeline: &mut Timeline, parent: u32, old: u32, new: u32) {
        if parent == SENTINEL {
            timeline.root = new;
        } else if self.node(parent).left == old {
            self.node_mut(parent).left = new;
        } else {
            self.node_mut(parent).right = new;
        }
    }

    #[inline(always)]
    fn rotate_left<const A: bool>(&mut self, timeline: &mut Timeline, x: u32) {
        let y = self.node(x).right;
        let y_left = self.node(y).left;
        let parent = self.node(x).parent;
        self.node_mut(x).right = y_left;
        self.node_mut(y_left).parent = x;
        self.node_mut(y).parent = parent;
        self.replace_child(timeline, parent, x, y);
        self.node_mut(y).left = x;
        self.node_mut(x).parent = y;
        if A {
            // y now covers the subtree x covered; x lost y's right subtree.
            self.node_mut(y).min_vruntime = self.node(x).min_vruntime;
            self.recompute(x);
        }
    }

    #[inline(always)]
    fn rotate_right<const A: bool>(&mut self, timeline: &mut Timeline, x: u32) {
        let y = self.node(x).left;
        let y_right = self.node(y).right;
        let parent = self.node(x).parent;
        self.node_mut(x).left = y_right;
        self.node_mut(y_right).parent = x;
        self.node_mut(y).parent = parent;
        self.replace_child(timeline, parent, x, y);
        self.node_mut(y).right = x;
        self.node_mut(x).parent = y;
        if A {
            self.node_mut(y).min_vruntime = self.node(x).min_vruntime;
            self.recompute(x);
        }
    }

    /// Inserts entity `id` with `key` (vruntime for CFS, deadline for EEVDF).
    /// `id` must not be in any tree.
    pub fn insert(&mut self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64) {
        // One branch here instead of one per rotation and per step.
        if self.augmented {
            self.insert_with::<true>(timeline, id, key, vruntime);
        } else {
            self.insert_with::<false>(timeline, id, key, vruntime);
        }
    }

    fn insert_with<const A: bool>(
        &mut self,
        timeline: &mut Timeline,
        id: u32,
        key: u64,
        vruntime: u64,
    ) {
        let z = id + 1;
        let mut parent = SENTINEL;
        let mut cursor = timeline.root;
        let mut go_left = false;
        // Equal keys go right, so only a strictly smaller key is the new leftmost.
        let leftmost =
            timeline.leftmost == SENTINEL || vtime_before(key, self.node(timeline.leftmost).key);
        while cursor != SENTINEL {
            parent = cursor;
            let node = self.node(cursor);
            go_left = vtime_before(key, node.key);
            cursor = if go_left { node.left } else { node.right };
        }
        *self.node_mut(z) = Node {
            left: SENTINEL,
            right: SENTINEL,
            parent,
            red: true,
            key,
            vruntime,
            min_vruntime: vruntime,
        };
        if parent == SENTINEL {
            timeline.root = z;
        } else if go_left {
            self.node_mut(parent).left = z;
        } else {
            self.node_mut(parent).right = z;
        }
        if leftmost {
            timeline.leftmost = z;
        }
        if A {
            // Adding a value can only lower minima: stop where it does not.
            let mut at = parent;
            while at != SENTINEL && vtime_before(vruntime, self.node(at).min_vruntime) {
                self.node_mut(at).min_vruntime = vruntime;
                at = self.node(at).parent;
            }
        }
        self.insert_fixup::<A>(timeline, z);
    }

    #[inline(always)]
    fn insert_fixup<const A: bool>(&mut self, timeline: &mut Timeline, mut z: u32) {
        loop {
            let mut parent = self.node(z).parent;
            if !self.node(parent).red {
                break;
            }
            // A red parent is never the root, so the grandparent exists.
            let grand = self.node(parent).parent;
            let (grand_left, grand_right) = (self.node(grand).left, self.node(grand).right);
            if parent == grand_left {
                let uncle = grand_right;
                if self.node(uncle).red {
                    self.node_mut(parent).red = false;
                    self.node_mut(uncle).red = false;
                    self.node_mut(grand).red = true;
                    z = grand;
                    continue;
                }
                if z == self.node(parent).right {
                    self.rotate_left::<A>(timeline, parent);
                    z = parent;
                    parent = self.node(z).parent;
                }
                self.node_mut(parent).red = false;
                self.node_mut(grand).red = true;
                self.rotate_right::<A>(timeline, grand);
            } else {
                let uncle = grand_left;
                if self.node(uncle).red {
                    self.node_mut(parent).red = false;
                    self.node_mut(uncle).red = false;
                    self.node_mut(grand).red = true;
                    z = grand;
                    continue;
                }
                if z == self.node(parent).left {
                    self.rotate_right::<A>(timeline, parent);
                    z = parent;
                    parent = self.node(z).parent;
                }
                self.node_mut(parent).red = false;
                self.node_mut(grand).red = true;
                self.rotate_left::<A>(timeline, grand);
            }
            break;
        }
        let root = timeline.root;
        self.node_mut(root).red = false;
    }

    /// The entity after `id` in key order.
    pub fn next(&self, id: u32) -> Option<u32> {
        let at = id + 1;
        let node = self.node(at);
        if node.right != SENTINEL {
            let mut at = node.right;
            while self.node(at).left != SENTINEL {
                at = self.node(at).left;
            }
            return Some(at - 1);
        }
        let mut child = at;
        let mut parent = node.parent;
        while parent != SENTINEL && self.node(parent).right == child {
            child = parent;
            parent = self.node(parent).parent;
        }
        (parent != SENTINEL).then(|| parent - 1)
    }

    /// Removes entity `id`, which must be in `timeline`.
    pub fn remove(&mut self, timeline: &mut Timeline, id: u32) {
        if self.augmented {
            self.remove_with::<true>(timeline, id);
        } else {
            self.remove_with::<false>(timeline, id);
        }
    }

    fn remove_with<const A: bool>(&mut self, timeline: &mut Timeline, id: u32) {
        let z = id + 1;
        let Node {
            left: z_left,
            right: z_right,
            parent: z_parent,
            red: z_red,
            ..
        } = *self.node(z);
        if timeline.leftmost == z {
            // The leftmost has no left child: its successor is the leftmost of
            // its right subtree, or its parent.
            timeline.leftmost = if z_right != SENTINEL {
                let mut at = z_right;
                while self.node(at).left != SENTINEL {
                    at = self.node(at).left;
                }
                at
            } else {
                z_parent
            };
        }
        let child;
        let removed_red;
        // The node that took z's place: the augmented minima must be recomputed
        // up to it; above it they can stop as soon as one does not change.
        let mut replacement = SENTINEL;
        if z_left == SENTINEL || z_right == SENTINEL {
            child = if z_left == SENTINEL { z_right } else { z_left };
            removed_red = z_red;
            self.replace_child(timeline, z_parent, z, child);
            // Also sets the sentinel's parent, which the fix-up reads.
            self.node_mut(child).parent = z_parent;
        } else {
            // Two children: the successor y takes z's place and colour.
            let mut y = z_right;
            while self.node(y).left != SENTINEL {
                y = self.node(y).left;
            }
            removed_red = self.node(y).red;
            child = self.node(y).right;
            if y == z_right {
                self.node_mut(child).parent = y;
            } else {
                let y_parent = self.node(y).parent;
                self.node_mut(y_parent).left = child;
                self.node_mut(child).parent = y_parent;
                self.node_mut(y).right = z_right;
                self.node_mut(z_right).parent = y;
            }
            self.replace_child(timeline, z_parent, z, y);
            let y_node = self.node_mut(y);
            y_node.parent = z_parent;
            y_node.left = z_left;
            y_node.red = z_red;
            self.node_mut(z_left).parent = y;
            replacement = y;
        }
        if A {
            let mut at = self.node(child).parent;
            while at != SENTINEL {
                let old = self.node(at).min_vruntime;
                self.recompute(at);
                if at == replacement {
                    replacement = SENTINEL;
                } else if replacement == SENTINEL && self.node(at).min_vruntime == old {
                    break;
                }
                at = self.node(at).parent;
            }
        }
        if !removed_red {
            self.remove_fixup::<A>(timeline, child);
        }
    }

    #[inline(always)]
    fn remove_fixup<const A: bool>(&mut self, timeline: &mut Timeline, mut x: u32) {
        while x != timeline.root && !self.node(x).red {
            let parent = self.node(x).parent;
            if x == self.node(parent).left {
                let mut w = self.node(parent).right;
                if self.node(w).red {
                    self.node_mut(w).red = false;
                    self.node_mut(parent).red = true;
                    self.rotate_left::<A>(timeline, parent);
                    w = self.node(parent).right;
                }
                let (wl, wr) = (self.node(w).left, self.node(w).right);
                if !self.node(wl).red && !self.node(wr).red {
                    self.node_mut(w).red = true;
                    x = parent;
                } else {
                    if !self.node(wr).red {
                        self.node_mut(wl).red = false;
                        self.node_mut(w).red = true;
                        self.rotate_right::<A>(timeline, w);
                        w = self.node(parent).right;
                    }
                    self.node_mut(w).red = self.node(parent).red;
                    self.node_mut(parent).red = false;
                    let wr = self.node(w).right;
                    self.node_mut(wr).red = false;
                    self.rotate_left::<A>(timeline, parent);
                    x = timeline.root;
                }
            } else {
                let mut w = self.node(parent).left;
                if self.node(w).red {
                    self.node_mut(w).red = false;
                    self.node_mut(parent).red = true;
                    self.rotate_right::<A>(timeline, parent);
                    w = self.node(parent).left;
                }
                let (wl, wr) = (self.node(w).left, self.node(w).right);
                if !self.node(wl).red && !self.node(wr).red {
                    self.node_mut(w).red = true;
                    x = parent;
                } else {
                    if !self.node(wl).red {
                        self.node_mut(wr).red = false;
                        self.node_mut(w).red = true;
                        self.rotate_left::<A>(timeline, w);
                        w = self.node(parent).left;
                    }
                    self.node_mut(w).red = self.node(parent).red;
                    self.node_mut(parent).red = false;
                    let wl = self.node(w).left;
                    self.node_mut(wl).red = false;
                    self.rotate_right::<A>(timeline, parent);
                    x = timeline.root;
                }
            }
        }
        self.node_mut(x).red = false;
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
        if leftmost != SENTINEL && eligible(self.node(leftmost).vruntime) {
            return Some(leftmost - 1);
        }
        let mut at = timeline.root;
        while at != SENTINEL {
            let node = self.node(at);
            if node.left != SENTINEL && eligible(self.node(node.left).min_vruntime) {
                at = node.left;
                continue;
            }
            if eligible(node.vruntime) {
                return Some(at - 1);
            }
            at = node.right;
        }
        None
    }
}

#[cfg(test)]
mod tests;
