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
//! Nodes live in one arena indexed by entity number plus one (index 0 means
//! "no node"), shared by all the trees of a CPU (an entity is in at most one
//! tree at a time), so nothing allocates after [`TimelineNodes::new`]. Keys are
//! compared wrap-safe, `(s64)(a - b) < 0` (§1.3); equal keys go right, so ties
//! keep insertion order.
//!
//! The algorithms are the classic red-black insertion and deletion, written the
//! way an intrusive kernel tree does them because the scheduler's hot paths run
//! them on every switch (issue 3's budget): the two mirror-image cases are one
//! code path indexed by direction, a node with at most one child is unlinked
//! without any rebalancing when its child can take its black, the leftmost
//! (removed at every CFS pick) is unlinked by a path of its own, and nothing is
//! written to a shared sentinel. Links are 16-bit indices into an arena of
//! 2^16 nodes, so every index is in bounds by its type: a node access is one
//! shifted add, with no bounds check and no mask.
//!
//! What a node keeps besides its links and key is chosen by type ([`Augment`]),
//! as Linux chooses between `rb_add_cached` and `rb_add_augmented_cached` at
//! compile time: the CFS tree ([`CfsNodes`]) keeps nothing more, in 16-byte
//! nodes, and its code has no trace of the augmentation; the EEVDF tree
//! ([`EevdfNodes`]) keeps the vruntime and the subtree minimum, in 32-byte
//! nodes. A run queue picks one at boot through [`TimelineNodes`].

use alloc::boxed::Box;
use alloc::vec;

use crate::weight::vtime_before;

mod store;

pub use store::{TimelineNodes, TimelineStore};

/// "No entity", for the entity fields that other modules keep (`curr`, `skip`).
pub const NIL: u32 = u32::MAX;

/// A node's index in the arena: entity `id` lives at index `id + 1`.
///
/// Sixteen bits and an arena of exactly 2^16 slots make every index in bounds
/// by its type, so a node access is one shifted add from the arena base, with
/// neither a bounds check nor a mask (the mask cost one more instruction at
/// each of the ~30 node accesses of a pick + dequeue + enqueue, about 10 % of
/// the timeline's instructions; an arena sized to the entities, with a bounds
/// check at each access, cost 28 % at N = 8: `docs/performance.md`,
/// "Memory"; issue 3's budget).
type Link = u16;

/// A node index in registers: a [`Link`] widened, so that values carried
/// from one tree level to the next are known to be zero-extended and index
/// the arena with no mask.
type Index = usize;

/// Node index meaning "no node".
const NONE: Index = 0;

/// Node slots of every arena: all the values of [`Link`]. 65,536 nodes of
/// 16 bytes (CFS) or 32 bytes (EEVDF) are 1 or 2 MiB of address space per
/// CPU; the kernel backs only the pages a CPU writes (`src/arch/aarch64/
/// lazy.rs`), which is why an empty node is all zero bits.
const ARENA: usize = 1 << Link::BITS;

/// The most entities (tasks and group entities) one CPU's arena can hold.
pub const MAX_ENTITIES: usize = ARENA - 1;

/// Child directions, as indices into [`Node::child`]. Left is 1 so that the
/// direction of a descent is the sign bit of `key - node.key` (a smaller key
/// goes left), one shift with no negation.
/// The side a child `x` is on is then `usize::from(child[RIGHT] != x)`.
const LEFT: usize = 1;
const RIGHT: usize = 0;
const _: () = assert!(LEFT == 1 && RIGHT == 0, "side tests rely on this");

/// A node: the links first, so that `child[dir]` is addressed from the node's
/// address with the direction as a scaled register offset; 16 bytes (CFS) or
/// 32 (EEVDF), so that an index becomes an address with one shifted add (on
/// AArch64, the 16-byte node's add also zero-extends the 16-bit link, since
/// an extended-register add shifts by up to 4).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Node<A> {
    /// Right and left children (`NONE` when absent).
    child: [Link; 2],
    /// `NONE` for the root. Parent and colour are separate fields, not one
    /// packed word as in a pointer tree: each is then read and written by
    /// itself, with no mask and no read-modify-write.
    parent: Link,
    black: bool,
    key: u64,
    /// What an augmented tree keeps besides the key.
    augment: A,
}

const _: () = assert!(core::mem::size_of::<Node<()>>() == 16);
const _: () = assert!(core::mem::size_of::<Node<MinVruntime>>() == 32);

/// What a tree keeps per node besides its key, chosen by type as Linux
/// chooses between `rb_add_cached` and `rb_add_augmented_cached` at compile
/// time: the CFS tree (`()`) pays nothing for EEVDF's augmentation, not even
/// a branch (issue 3's budget).
pub trait Augment: sealed::Sealed + Copy + core::fmt::Debug {
    /// Whether the subtree minima are kept (rotations and removals update
    /// them).
    const AUGMENTED: bool;
    /// The value of an unused node.
    const EMPTY: Self;
    /// The augmentation of a node of `vruntime`, alone in its subtree.
    fn leaf(vruntime: u64) -> Self;
    /// The node's vruntime (`key` is it in a vruntime-ordered tree).
    fn vruntime(&self, key: u64) -> u64;
    /// The smallest vruntime in the node's subtree (augmented trees only).
    fn min_vruntime(&self) -> u64;
    /// Sets it (augmented trees only).
    fn set_min_vruntime(&mut self, min_vruntime: u64);
}

/// Only the two trees below: `min_vruntime` and `first_eligible` rely on an
/// unaugmented tree's key being its vruntime.
mod sealed {
    pub trait Sealed {}
    impl Sealed for () {}
    impl Sealed for super::MinVruntime {}
}

/// CFS: the tree is ordered by vruntime (§1.4), so the key is the vruntime and
/// the smallest vruntime is the leftmost's; nothing more is kept.
impl Augment for () {
    const AUGMENTED: bool = false;
    const EMPTY: Self = ();
    #[inline(always)]
    fn leaf(_: u64) -> Self {}
    #[inline(always)]
    fn vruntime(&self, key: u64) -> u64 {
        key
    }
    #[inline(always)]
    fn min_vruntime(&self) -> u64 {
        unreachable!("a vruntime-ordered tree keeps no subtree minima")
    }
    #[inline(always)]
    fn set_min_vruntime(&mut self, _: u64) {}
}

/// EEVDF: the tree is ordered by virtual deadline, and each node keeps its
/// vruntime and its subtree's smallest vruntime, for the eligibility search
/// (§1.5, `pick_eevdf`).
#[derive(Clone, Copy, Debug)]
pub struct MinVruntime {
    vruntime: u64,
    /// Smallest vruntime in the subtree rooted here.
    min_vruntime: u64,
}

impl Augment for MinVruntime {
    const AUGMENTED: bool = true;
    const EMPTY: Self = MinVruntime {
        vruntime: 0,
        min_vruntime: 0,
    };
    #[inline(always)]
    fn leaf(vruntime: u64) -> Self {
        MinVruntime {
            vruntime,
            min_vruntime: vruntime,
        }
    }
    #[inline(always)]
    fn vruntime(&self, _: u64) -> u64 {
        self.vruntime
    }
    #[inline(always)]
    fn min_vruntime(&self) -> u64 {
        self.min_vruntime
    }
    #[inline(always)]
    fn set_min_vruntime(&mut self, min_vruntime: u64) {
        self.min_vruntime = min_vruntime;
    }
}

impl<A: Augment> Node<A> {
    /// An unused node: all zero bits, so that a kernel can back an arena's
    /// pages only once they are written (the colour of a node outside a
    /// tree is never read).
    const EMPTY: Self = Node {
        child: [0; 2],
        parent: 0,
        black: false,
        key: 0,
        augment: A::EMPTY,
    };
}

/// Node index of entity `id` (below [`MAX_ENTITIES`], checked when the arena
/// was sized).
#[inline(always)]
fn index_of(id: u32) -> Index {
    debug_assert!((id as usize) < MAX_ENTITIES);
    id as Index + 1
}

/// Entity number of node `at` (not `NONE`).
#[inline(always)]
fn id_of(at: Index) -> u32 {
    (at - 1) as u32
}

/// One tree: its root and its cached leftmost node (node indices).
/// The default is the empty tree (0 is [`NONE`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    root: Link,
    leftmost: Link,
}

const _: () = assert!(NONE == 0, "the derived Default is the empty tree");

impl Timeline {
    /// The entity with the smallest key, if any (O(1)).
    #[inline]
    pub fn first(&self) -> Option<u32> {
        (self.leftmost != 0).then(|| id_of(Index::from(self.leftmost)))
    }

    /// Whether the tree is empty.
    pub fn is_empty(&self) -> bool {
        self.root == 0
    }
}

/// The node arena shared by the timelines of one CPU, for one kind of tree:
/// [`CfsNodes`] (ordered by vruntime) or [`EevdfNodes`] (ordered by deadline,
/// augmented with the subtree minimum vruntime).
#[derive(Clone, Debug)]
pub struct TimelineArena<A: Augment> {
    nodes: Box<[Node<A>; ARENA]>,
}

/// The CFS tree's arena: 16-byte nodes, 1 MiB of address space per CPU.
pub type CfsNodes = TimelineArena<()>;

/// The EEVDF tree's arena: 32-byte nodes, 2 MiB of address space per CPU.
pub type EevdfNodes = TimelineArena<MinVruntime>;

impl<A: Augment> TimelineArena<A> {
    /// An arena for entity numbers below `capacity` (at most
    /// [`MAX_ENTITIES`]; more is a configuration bug and panics).
    pub fn new(capacity: usize) -> Self {
        Self::check_capacity(capacity);
        let nodes: Box<[Node<A>]> = vec![Node::EMPTY; ARENA].into_boxed_slice();
        TimelineArena {
            nodes: match nodes.try_into() {
                Ok(nodes) => nodes,
                Err(_) => unreachable!("the vector has ARENA nodes"),
            },
        }
    }

    /// Checks that the arena can hold entity numbers below `capacity` (at
    /// most [`MAX_ENTITIES`]; more is a configuration bug and panics): the
    /// arena has every node from the start.
    pub fn reserve(&mut self, capacity: usize) {
        Self::check_capacity(capacity);
    }

    fn check_capacity(capacity: usize) {
        assert!(
            capacity <= MAX_ENTITIES,
            "timeline: {capacity} entities exceed MAX_ENTITIES ({MAX_ENTITIES})"
        );
    }

    /// The heap the arena takes: all its nodes.
    pub fn bytes(&self) -> usize {
        core::mem::size_of_val(&*self.nodes)
    }

    /// The key entity `id` was inserted with.
    #[inline]
    pub fn key(&self, id: u32) -> u64 {
        self.node(index_of(id)).key
    }

    /// The smallest vruntime in the tree, O(1): the root's subtree minimum,
    /// or in a vruntime-ordered tree the leftmost's key.
    #[inline]
    pub fn min_vruntime(&self, timeline: &Timeline) -> Option<u64> {
        if A::AUGMENTED {
            (timeline.root != 0)
                .then(|| self.node(Index::from(timeline.root)).augment.min_vruntime())
        } else {
            timeline.first().map(|id| self.key(id))
        }
    }

    /// Node `at`. Every [`Link`] is in bounds, so there is no check, and the
    /// narrowing is free: the index was read from a [`Link`].
    #[inline(always)]
    fn node(&self, at: Index) -> &Node<A> {
        &self.nodes[usize::from(at as Link)]
    }

    #[inline(always)]
    fn node_mut(&mut self, at: Index) -> &mut Node<A> {
        &mut self.nodes[usize::from(at as Link)]
    }

    #[inline(always)]
    fn set_parent(&mut self, at: Index, parent: Index) {
        self.node_mut(at).parent = parent as Link;
    }

    #[inline(always)]
    fn set_black(&mut self, at: Index) {
        self.node_mut(at).black = true;
    }

    #[inline(always)]
    fn set_red(&mut self, at: Index) {
        self.node_mut(at).black = false;
    }

    /// Whether `at` is a red node (an absent node counts as black).
    #[inline(always)]
    fn is_red(&self, at: Index) -> bool {
        at != NONE && !self.node(at).black
    }

    /// Recomputes the augmented value of node `at` from its children.
    #[inline(always)]
    fn recompute(&mut self, at: Index) {
        let node = self.node(at);
        let mut min = node.augment.vruntime(node.key);
        for child in node.child {
            let child = Index::from(child);
            if child != NONE {
                let v = self.node(child).augment.min_vruntime();
                if vtime_before(v, min) {
                    min = v;
                }
            }
        }
        self.node_mut(at).augment.set_min_vruntime(min);
    }

    /// Makes `new` the child of `parent` in place of `old` (or the root);
    /// returns the side `old` was on (meaningless for the root).
    #[inline(always)]
    fn replace_child(
        &mut self,
        timeline: &mut Timeline,
        parent: Index,
        old: Index,
        new: Index,
    ) -> usize {
        if parent == NONE {
            timeline.root = new as Link;
            LEFT
        } else {
            let node = self.node_mut(parent);
            let dir = usize::from(Index::from(node.child[RIGHT]) != old);
            node.child[dir] = new as Link;
            dir
        }
    }

    /// Rotates at `x` toward `dir`: its child on the other side, `y`, takes its
    /// place and `x` becomes `y`'s child on side `dir`. Colours are unchanged;
    /// returns `y`.
    #[inline(always)]
    fn rotate(&mut self, timeline: &mut Timeline, x: Index, dir: usize) -> Index {
        let x_parent = Index::from(self.node(x).parent);
        let y = Index::from(self.node(x).child[1 - dir]);
        let inner = Index::from(self.node(y).child[dir]);
        self.node_mut(x).child[1 - dir] = inner as Link;
        if inner != NONE {
            self.set_parent(inner, x);
        }
        self.node_mut(y).child[dir] = x as Link;
        self.set_parent(x, y);
        self.set_parent(y, x_parent);
        self.replace_child(timeline, x_parent, x, y);
        if A::AUGMENTED {
            // y now covers the subtree x covered; x lost y's other subtree.
            let min = self.node(x).augment.min_vruntime();
            self.node_mut(y).augment.set_min_vruntime(min);
            self.recompute(x);
        }
        y
    }

    /// Inserts entity `id` with `key` (vruntime for CFS, deadline for EEVDF)
    /// and `vruntime` (the key itself in a vruntime-ordered tree). `id` must
    /// not be in any tree.
    #[inline]
    pub fn insert(&mut self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64) {
        debug_assert!(A::AUGMENTED || key == vruntime, "CFS keys are vruntimes");
        let z = index_of(id);
        let mut parent = Index::from(timeline.root);
        if parent == NONE {
            *self.node_mut(z) = Node {
                child: [0; 2],
                parent: 0,
                black: true,
                key,
                augment: A::leaf(vruntime),
            };
            timeline.root = z as Link;
            timeline.leftmost = z as Link;
            return;
        }
        // Descend to the leaf position; only the node index is carried from
        // one level to the next (this loop is most of the cost at large N).
        let mut dir;
        loop {
            let node = self.node(parent);
            // Equal keys go right.
            dir = usize::from(vtime_before(key, node.key));
            let next = Index::from(node.child[dir]);
            if next == NONE {
                break;
            }
            parent = next;
        }
        *self.node_mut(z) = Node {
            child: [0; 2],
            parent: parent as Link,
            black: false,
            key,
            augment: A::leaf(vruntime),
        };
        self.node_mut(parent).child[dir] = z as Link;
        // The new node is the leftmost exactly when it became the left child
        // of the old leftmost (which has no left child).
        if parent == Index::from(timeline.leftmost) && dir == LEFT {
            timeline.leftmost = z as Link;
        }
        if A::AUGMENTED {
            // Adding a value can only lower minima: stop where it does not.
            let mut at = parent;
            while at != NONE && vtime_before(vruntime, self.node(at).augment.min_vruntime()) {
                let node = self.node_mut(at);
                node.augment.set_min_vruntime(vruntime);
                at = Index::from(node.parent);
            }
        }
        self.insert_color(timeline, z, parent);
    }

    /// Restores the red-black rules after red `node` was linked under `parent`.
    #[inline(always)]
    fn insert_color(&mut self, timeline: &mut Timeline, mut node: Index, mut parent: Index) {
        loop {
            if self.node(parent).black {
                return;
            }
            // A red parent is never the root: the grandparent exists.
            let grand = Index::from(self.node(parent).parent);
            let grand_child = self.node(grand).child.map(Index::from);
            let side = usize::from(grand_child[RIGHT] != parent);
            let uncle = grand_child[1 - side];
            if self.is_red(uncle) {
                // Push the grandparent's black down to both of its children.
                self.set_black(uncle);
                self.set_black(parent);
                let great = Index::from(self.node(grand).parent);
                if great == NONE {
                    // The root stays black.
                    return;
                }
                self.set_red(grand);
                node = grand;
                parent = great;
                continue;
            }
            if Index::from(self.node(parent).child[1 - side]) == node {
                // Inner grandchild: turn it into the outer one first.
                self.rotate(timeline, parent, side);
                parent = node;
            }
            // Outer grandchild: the parent takes the grandparent's place.
            self.rotate(timeline, grand, 1 - side);
            self.set_black(parent);
            self.set_red(grand);
            return;
        }
    }

    /// The entity after `id` in key order.
    pub fn next(&self, id: u32) -> Option<u32> {
        let at = index_of(id);
        let node = self.node(at);
        if Index::from(node.child[RIGHT]) != NONE {
            return Some(id_of(self.leftmost_below(Index::from(node.child[RIGHT]))));
        }
        let mut child = at;
        let mut parent = Index::from(node.parent);
        while parent != NONE && Index::from(self.node(parent).child[RIGHT]) == child {
            child = parent;
            parent = Index::from(self.node(parent).parent);
        }
        (parent != NONE).then(|| id_of(parent))
    }

    #[inline(always)]
    fn leftmost_below(&self, mut at: Index) -> Index {
        loop {
            let left = Index::from(self.node(at).child[LEFT]);
            if left == NONE {
                return at;
            }
            at = left;
        }
    }

    /// Removes entity `id`, which must be in `timeline`.
    #[inline]
    pub fn remove(&mut self, timeline: &mut Timeline, id: u32) {
        let z = index_of(id);
        let Node {
            child: [right, left],
            parent: z_parent,
            black: z_black,
            ..
        } = *self.node(z);
        let [right, left, z_parent] = [right, left, z_parent].map(Index::from);
        // `rebalance`: the parent of a position that lost a black node (NONE
        // when no black was lost), and `side`, the side of that position.
        // `changed`: the lowest node whose subtree lost an entity, where the
        // augmented minima are recomputed from.
        let rebalance;
        let side;
        let changed;
        // Set when z had two children: its successor moved into z's place, so
        // the minima are recomputed at least up to it.
        let mut moved = NONE;
        if Index::from(timeline.leftmost) == z {
            // The common case (CFS dequeues the leftmost at every pick), by
            // itself because its shape is known: z has no left child and is
            // its parent's left child, and its right child, if any, is a red
            // leaf (both sides have the same black height), which takes z's
            // place and colour and becomes the leftmost.
            if z_parent == NONE {
                timeline.root = right as Link;
            } else {
                self.node_mut(z_parent).child[LEFT] = right as Link;
            }
            rebalance = self.take_place(right, z_parent, z_black);
            timeline.leftmost = if right != NONE { right } else { z_parent } as Link;
            side = LEFT;
            changed = z_parent;
        } else if left == NONE || right == NONE {
            let child = left | right;
            side = self.replace_child(timeline, z_parent, z, child);
            rebalance = self.take_place(child, z_parent, z_black);
            changed = z_parent;
        } else {
            // Two children: the successor (leftmost of the right subtree, with
            // no left child) takes z's place and colour.
            let successor = self.leftmost_below(right);
            let Node {
                child: [successor_right, _],
                parent: successor_parent,
                black: successor_black,
                ..
            } = *self.node(successor);
            let [successor_right, successor_parent] =
                [successor_right, successor_parent].map(Index::from);
            let hole_parent;
            if successor == right {
                hole_parent = successor;
                side = RIGHT;
            } else {
                hole_parent = successor_parent;
                side = LEFT;
                self.node_mut(hole_parent).child[LEFT] = successor_right as Link;
                self.node_mut(successor).child[RIGHT] = right as Link;
                self.set_parent(right, successor);
            }
            self.node_mut(successor).child[LEFT] = left as Link;
            self.set_parent(left, successor);
            {
                let node = self.node_mut(successor);
                node.parent = z_parent as Link;
                node.black = z_black;
            }
            self.replace_child(timeline, z_parent, z, successor);
            if successor_right != NONE {
                // A red child under the black successor takes its black.
                let node = self.node_mut(successor_right);
                node.parent = hole_parent as Link;
                node.black = true;
                rebalance = NONE;
            } else {
                rebalance = if successor_black { hole_parent } else { NONE };
            }
            changed = hole_parent;
            moved = successor;
        }
        if A::AUGMENTED {
            let mut at = changed;
            while at != NONE {
                let old = self.node(at).augment.min_vruntime();
                self.recompute(at);
                if at == moved {
                    moved = NONE;
                } else if moved == NONE && self.node(at).augment.min_vruntime() == old {
                    break;
                }
                at = Index::from(self.node(at).parent);
            }
        }
        if rebalance != NONE {
            self.erase_color(timeline, rebalance, side);
        }
    }

    /// Finishes unlinking a node with at most one child, `child`, already
    /// linked under the node's parent `parent`: a child (then red under a
    /// black node) takes the node's colour, and no black is lost; without one,
    /// a black node leaves `parent` one black short. Returns the node to
    /// rebalance from (`NONE` when none).
    #[inline(always)]
    fn take_place(&mut self, child: Index, parent: Index, black: bool) -> Index {
        if child != NONE {
            let node = self.node_mut(child);
            node.parent = parent as Link;
            node.black = black;
            NONE
        } else if black {
            parent
        } else {
            NONE
        }
    }

    /// Restores the red-black rules after a black node was removed below
    /// `parent` on `side`, leaving the path through the (possibly absent)
    /// child there one black short.
    #[inline(always)]
    fn erase_color(&mut self, timeline: &mut Timeline, mut parent: Index, mut side: usize) {
        loop {
            // The sibling subtree of the short side has a black height of at
            // least one, so the sibling exists.
            let mut sibling = Index::from(self.node(parent).child[1 - side]);
            if self.is_red(sibling) {
                // Make the sibling black: rotate it above the parent.
                self.rotate(timeline, parent, side);
                self.set_black(sibling);
                self.set_red(parent);
                sibling = Index::from(self.node(parent).child[1 - side]);
            }
            let [near, far] = {
                let child = self.node(sibling).child.map(Index::from);
                [child[side], child[1 - side]]
            };
            if !self.is_red(far) {
                if !self.is_red(near) {
                    // Both nephews black: the sibling turns red, and the
                    // shortage moves up to the parent (or ends at a red one).
                    self.set_red(sibling);
                    if !self.node(parent).black {
                        self.set_black(parent);
                        return;
                    }
                    let node = parent;
                    parent = Index::from(self.node(parent).parent);
                    if parent == NONE {
                        return;
                    }
                    side = usize::from(Index::from(self.node(parent).child[RIGHT]) != node);
                    continue;
                }
                // Near nephew red: rotate it up so that it becomes the sibling
                // with a red far child (the old sibling).
                self.rotate(timeline, sibling, 1 - side);
                sibling = near;
            }
            // Far nephew red: the sibling takes the parent's place and colour,
            // and both the parent and the far side turn black.
            let far = Index::from(self.node(sibling).child[1 - side]);
            let parent_black = self.node(parent).black;
            self.rotate(timeline, parent, side);
            self.node_mut(sibling).black = parent_black;
            self.set_black(parent);
            self.set_black(far);
            return;
        }
    }

    /// The entity with the earliest key among those whose vruntime satisfies
    /// `eligible`, found through the augmented minima (§1.5 `pick_eevdf` steps
    /// 4–5): descend left while the left subtree holds an eligible entity; an
    /// eligible node is the answer; otherwise go right. `eligible` must hold
    /// for every vruntime below one it holds for (EEVDF's `v ≤ V` does), so
    /// that in a vruntime-ordered tree the answer is the leftmost, or none.
    pub fn first_eligible(
        &self,
        timeline: &Timeline,
        eligible: impl Fn(u64) -> bool,
    ) -> Option<u32> {
        let leftmost = Index::from(timeline.leftmost);
        if leftmost != NONE && {
            let node = self.node(leftmost);
            eligible(node.augment.vruntime(node.key))
        } {
            return Some(id_of(leftmost));
        }
        if !A::AUGMENTED {
            return None;
        }
        let mut at = Index::from(timeline.root);
        while at != NONE {
            let node = self.node(at);
            let left = Index::from(node.child[LEFT]);
            if left != NONE && eligible(self.node(left).augment.min_vruntime()) {
                at = left;
                continue;
            }
            if eligible(node.augment.vruntime(node.key)) {
                return Some(id_of(at));
            }
            at = Index::from(node.child[RIGHT]);
        }
        None
    }
}

#[cfg(test)]
mod tests;
