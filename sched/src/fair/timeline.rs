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
//! "no node"), shared by all the trees of all the CPUs of a machine (an entity
//! is in at most one tree at a time; the "entity numbers" here are the node
//! numbers the run queues give, unique on the machine: `fair::numbering`), so
//! nothing allocates after [`TimelineArena::new`]. Keys are
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
//!
//! Sharing: every node field is an atomic, loaded and stored with `Relaxed`
//! ordering, so that the CPUs hold one arena through `&` ([`Arc`]) in safe
//! Rust. Each CPU touches only the nodes of the entities in its own trees,
//! under its own run-queue lock, and a task's node passes from one CPU to
//! another only through a migration, which takes both CPUs' locks: the
//! locks order every access, and the atomics only make the sharing expressible
//! without `unsafe`. A relaxed load or store compiles to the plain one (AArch64
//! and x86_64), and no access is a read-modify-write, so the tree costs the
//! same instructions as with plain fields (measured: `tests/timeline_bench.rs`).
//! One arena per machine instead of one per CPU is what keeps the scheduler's
//! memory from growing with its CPUs (issue 15): 1 or 2 MiB in all rather than
//! per CPU.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU8, AtomicU16, AtomicU64, Ordering::Relaxed};

use crate::weight::vtime_before;

/// "No entity", for the entity fields that other modules keep (`curr`, `skip`).
pub const NIL: u32 = u32::MAX;

/// A node's index in the arena: entity `id` lives at index `id + 1`.
///
/// Sixteen bits and an arena of exactly 2^16 slots make every index in bounds
/// by its type, so a node access is one shifted add from the arena base, with
/// neither a bounds check nor a mask (the mask cost one more instruction at
/// each of the ~30 node accesses of a pick + dequeue + enqueue, about 10 % of
/// the timeline's instructions; issue 3's budget).
type Link = u16;

/// The atomic cell holding a [`Link`].
type AtomicLink = AtomicU16;

/// A node index in registers: a [`Link`] widened, so that values carried
/// from one tree level to the next are known to be zero-extended and index
/// the arena with no mask.
type Index = usize;

/// Node index meaning "no node".
const NONE: Index = 0;

/// A node's colour as stored: [`BLACK`] or [`RED`], or [`DETACHED`] out of
/// every tree.
type Colour = u8;
const BLACK: Colour = 1;
const RED: Colour = 0;
/// The colour of a node in no tree: never read as a colour (it counts as
/// black), written by `remove` only in builds with debug assertions, where
/// `insert` checks it, so that the tests catch an entity entering a tree while
/// in another, which the CPUs' sharing of the arena rules out.
const DETACHED: Colour = 2;

/// Node slots of every arena: all the values of [`Link`]. 65,536 nodes of
/// 16 bytes (CFS) or 32 bytes (EEVDF) are 1 or 2 MiB.
const ARENA: usize = 1 << Link::BITS;

/// The most entities (tasks and group entities) one arena can hold.
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
///
/// Every field is an atomic accessed with `Relaxed` ordering (the module's
/// "Sharing"): the layout and the instructions are those of plain fields.
#[derive(Debug)]
#[repr(C)]
struct Node<A: Augment> {
    /// Right and left children (`NONE` when absent).
    child: [AtomicLink; 2],
    /// `NONE` for the root. Parent and colour are separate fields, not one
    /// packed word as in a pointer tree: each is then read and written by
    /// itself, with no mask and no read-modify-write.
    parent: AtomicLink,
    /// [`BLACK`] or [`RED`]: a byte rather than an `AtomicBool`, so that a
    /// colour is copied from node to node as loaded (an `AtomicBool` load is
    /// normalised with a compare and a set before it can be stored again).
    colour: AtomicU8,
    key: AtomicU64,
    /// What an augmented tree keeps besides the key.
    augment: A::Cell,
}

const _: () = assert!(core::mem::size_of::<Node<()>>() == 16);
const _: () = assert!(core::mem::size_of::<Node<MinVruntime>>() == 32);

/// What a tree keeps per node besides its key, chosen by type as Linux
/// chooses between `rb_add_cached` and `rb_add_augmented_cached` at compile
/// time: the CFS tree (`()`) pays nothing for EEVDF's augmentation, not even
/// a branch (issue 3's budget).
pub trait Augment: sealed::Sealed + Copy + core::fmt::Debug {
    /// The node's storage for the augmentation (atomics, as the other fields).
    type Cell: Sync + Send + core::fmt::Debug;
    /// Whether the subtree minima are kept (rotations and removals update
    /// them).
    const AUGMENTED: bool;
    /// The cell of an unused node.
    fn empty() -> Self::Cell;
    /// Stores the augmentation of a node of `vruntime`, alone in its subtree.
    fn store_leaf(cell: &Self::Cell, vruntime: u64);
    /// The node's vruntime (`key` is it in a vruntime-ordered tree); loads
    /// only what it needs.
    fn vruntime(cell: &Self::Cell, key: &AtomicU64) -> u64;
    /// The smallest vruntime in the node's subtree (augmented trees only).
    fn min_vruntime(cell: &Self::Cell) -> u64;
    /// Sets it (augmented trees only).
    fn set_min_vruntime(cell: &Self::Cell, min_vruntime: u64);
    /// This tree's arena in `nodes`, if `nodes` holds this kind of tree.
    fn arena(nodes: &TimelineNodes) -> Option<&TimelineArena<Self>>;
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
    type Cell = ();
    const AUGMENTED: bool = false;
    #[inline(always)]
    fn empty() -> Self::Cell {}
    #[inline(always)]
    fn store_leaf(_: &Self::Cell, _: u64) {}
    #[inline(always)]
    fn vruntime(_: &Self::Cell, key: &AtomicU64) -> u64 {
        key.load(Relaxed)
    }
    #[inline(always)]
    fn min_vruntime(_: &Self::Cell) -> u64 {
        unreachable!("a vruntime-ordered tree keeps no subtree minima")
    }
    #[inline(always)]
    fn set_min_vruntime(_: &Self::Cell, _: u64) {}
    fn arena(nodes: &TimelineNodes) -> Option<&CfsNodes> {
        match nodes {
            TimelineNodes::Cfs(arena) => Some(arena),
            TimelineNodes::Eevdf(_) => None,
        }
    }
}

/// EEVDF: the tree is ordered by virtual deadline, and each node keeps its
/// vruntime and its subtree's smallest vruntime (in that order in its
/// [`Augment::Cell`]), for the eligibility search (§1.5, `pick_eevdf`).
#[derive(Clone, Copy, Debug)]
pub struct MinVruntime;

/// Index of the vruntime, then of the subtree minimum, in the EEVDF cell.
const VRUNTIME: usize = 0;
const MIN_VRUNTIME: usize = 1;

impl Augment for MinVruntime {
    type Cell = [AtomicU64; 2];
    const AUGMENTED: bool = true;
    #[inline(always)]
    fn empty() -> Self::Cell {
        [AtomicU64::new(0), AtomicU64::new(0)]
    }
    #[inline(always)]
    fn store_leaf(cell: &Self::Cell, vruntime: u64) {
        cell[VRUNTIME].store(vruntime, Relaxed);
        cell[MIN_VRUNTIME].store(vruntime, Relaxed);
    }
    #[inline(always)]
    fn vruntime(cell: &Self::Cell, _: &AtomicU64) -> u64 {
        cell[VRUNTIME].load(Relaxed)
    }
    #[inline(always)]
    fn min_vruntime(cell: &Self::Cell) -> u64 {
        cell[MIN_VRUNTIME].load(Relaxed)
    }
    #[inline(always)]
    fn set_min_vruntime(cell: &Self::Cell, min_vruntime: u64) {
        cell[MIN_VRUNTIME].store(min_vruntime, Relaxed);
    }
    fn arena(nodes: &TimelineNodes) -> Option<&EevdfNodes> {
        match nodes {
            TimelineNodes::Eevdf(arena) => Some(arena),
            TimelineNodes::Cfs(_) => None,
        }
    }
}

impl<A: Augment> Node<A> {
    fn empty() -> Self {
        Node {
            child: [AtomicLink::new(0), AtomicLink::new(0)],
            parent: AtomicLink::new(0),
            colour: AtomicU8::new(DETACHED),
            key: AtomicU64::new(0),
            augment: A::empty(),
        }
    }
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

/// A handle on the node arena shared by the timelines of every CPU, for one
/// kind of tree: [`CfsNodes`] (ordered by vruntime) or [`EevdfNodes`]
/// (ordered by deadline, augmented with the subtree minimum vruntime).
/// [`TimelineArena::new`] allocates an arena; [`TimelineArena::share`] gives
/// another handle on the same one (each CPU's run queue holds one).
///
/// The tree code reaches the nodes through a `Tree`, a plain reference to
/// the array taken once per operation: the base (the `Arc`'s pointer plus its
/// counts' size) is then computed once and kept in a register. Reached
/// through the `Arc` at each access, the counts' size was added again at
/// every level of a descent (measured: 5 to 13 % more instructions for the CFS
/// tree), and an `Arc` of a `Box` had its base reloaded after each node store.
#[derive(Debug)]
pub struct TimelineArena<A: Augment> {
    nodes: Arc<[Node<A>; ARENA]>,
}

/// The CFS tree's arena: 16-byte nodes, 1 MiB per machine.
pub type CfsNodes = TimelineArena<()>;

/// The EEVDF tree's arena: 32-byte nodes, 2 MiB per machine.
pub type EevdfNodes = TimelineArena<MinVruntime>;

impl<A: Augment> TimelineArena<A> {
    /// An arena for entity numbers below `capacity` (at most
    /// [`MAX_ENTITIES`]; more is a configuration bug and panics).
    pub fn new(capacity: usize) -> Self {
        assert!(
            capacity <= MAX_ENTITIES,
            "timeline: {capacity} entities exceed MAX_ENTITIES ({MAX_ENTITIES})"
        );
        // Collected straight into the heap (the range's length is exact): no
        // copy of 1 or 2 MiB on the stack.
        let nodes: Arc<[Node<A>]> = (0..ARENA).map(|_| Node::empty()).collect();
        TimelineArena {
            nodes: match nodes.try_into() {
                Ok(nodes) => nodes,
                Err(_) => unreachable!("the arena has ARENA nodes"),
            },
        }
    }

    /// Another handle on the same arena (for another CPU's run queue).
    pub fn share(&self) -> Self {
        TimelineArena {
            nodes: Arc::clone(&self.nodes),
        }
    }

    /// The key entity `id` was inserted with.
    #[inline]
    pub fn key(&self, id: u32) -> u64 {
        self.tree().key_of(index_of(id))
    }

    /// The smallest vruntime in the tree, O(1): the root's subtree minimum,
    /// or in a vruntime-ordered tree the leftmost's key.
    #[inline]
    pub fn min_vruntime(&self, timeline: &Timeline) -> Option<u64> {
        if A::AUGMENTED {
            (timeline.root != 0).then(|| self.tree().min_of(Index::from(timeline.root)))
        } else {
            timeline.first().map(|id| self.key(id))
        }
    }

    /// The tree code's view of the nodes: the arena's base, loaded once per
    /// operation (see [`Tree`]).
    #[inline(always)]
    fn tree(&self) -> Tree<'_, A> {
        Tree { nodes: &self.nodes }
    }

    /// Inserts entity `id` with `key` (vruntime for CFS, deadline for EEVDF)
    /// and `vruntime` (the key itself in a vruntime-ordered tree). `id` must
    /// not be in any tree.
    #[inline]
    pub fn insert(&self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64) {
        self.tree().insert(timeline, id, key, vruntime)
    }

    /// Removes entity `id`, which must be in `timeline`.
    #[inline]
    pub fn remove(&self, timeline: &mut Timeline, id: u32) {
        self.tree().remove(timeline, id)
    }

    /// The entity after `id` in key order.
    pub fn next(&self, id: u32) -> Option<u32> {
        self.tree().next(id)
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
        self.tree().first_eligible(timeline, eligible)
    }
}

/// The nodes of an arena as the tree code sees them: a plain reference to the
/// array, taken once per operation, so that its base stays in a register (see
/// [`TimelineArena`]).
#[derive(Clone, Copy)]
struct Tree<'a, A: Augment> {
    nodes: &'a [Node<A>; ARENA],
}

impl<A: Augment> Tree<'_, A> {
    /// Node `at`. Every [`Link`] is in bounds, so there is no check, and the
    /// narrowing is free: the index was read from a [`Link`].
    #[inline(always)]
    fn node(&self, at: Index) -> &Node<A> {
        &self.nodes[usize::from(at as Link)]
    }

    // Field accessors: every access is a `Relaxed` load or store.

    #[inline(always)]
    fn child(&self, at: Index, dir: usize) -> Index {
        Index::from(self.node(at).child[dir].load(Relaxed))
    }

    #[inline(always)]
    fn set_child(&self, at: Index, dir: usize, child: Index) {
        self.node(at).child[dir].store(child as Link, Relaxed);
    }

    #[inline(always)]
    fn parent(&self, at: Index) -> Index {
        Index::from(self.node(at).parent.load(Relaxed))
    }

    #[inline(always)]
    fn set_parent(&self, at: Index, parent: Index) {
        self.node(at).parent.store(parent as Link, Relaxed);
    }

    #[inline(always)]
    fn colour(&self, at: Index) -> Colour {
        self.node(at).colour.load(Relaxed)
    }

    #[inline(always)]
    fn set_colour(&self, at: Index, colour: Colour) {
        self.node(at).colour.store(colour, Relaxed);
    }

    #[inline(always)]
    fn is_black(&self, at: Index) -> bool {
        self.colour(at) != RED
    }

    #[inline(always)]
    fn set_black(&self, at: Index) {
        self.set_colour(at, BLACK);
    }

    #[inline(always)]
    fn set_red(&self, at: Index) {
        self.set_colour(at, RED);
    }

    #[inline(always)]
    fn key_of(&self, at: Index) -> u64 {
        self.node(at).key.load(Relaxed)
    }

    /// Node `at`'s vruntime (its key in a vruntime-ordered tree).
    #[inline(always)]
    fn vruntime_of(&self, at: Index) -> u64 {
        let node = self.node(at);
        A::vruntime(&node.augment, &node.key)
    }

    #[inline(always)]
    fn min_of(&self, at: Index) -> u64 {
        A::min_vruntime(&self.node(at).augment)
    }

    #[inline(always)]
    fn set_min(&self, at: Index, min: u64) {
        A::set_min_vruntime(&self.node(at).augment, min);
    }

    /// Writes every field of node `at` (a node entering a tree).
    #[inline(always)]
    fn init(&self, at: Index, parent: Index, colour: Colour, key: u64, vruntime: u64) {
        let node = self.node(at);
        node.child[RIGHT].store(0, Relaxed);
        node.child[LEFT].store(0, Relaxed);
        node.parent.store(parent as Link, Relaxed);
        node.colour.store(colour, Relaxed);
        node.key.store(key, Relaxed);
        A::store_leaf(&node.augment, vruntime);
    }

    /// Whether `at` is a red node (an absent node counts as black).
    #[inline(always)]
    fn is_red(&self, at: Index) -> bool {
        at != NONE && !self.is_black(at)
    }

    /// Recomputes the augmented value of node `at` from its children;
    /// returns it (what a reload would read, without the reload).
    #[inline(always)]
    fn recompute(&self, at: Index) -> u64 {
        let mut min = self.vruntime_of(at);
        for dir in [RIGHT, LEFT] {
            let child = self.child(at, dir);
            if child != NONE {
                let v = self.min_of(child);
                if vtime_before(v, min) {
                    min = v;
                }
            }
        }
        self.set_min(at, min);
        min
    }

    /// Makes `new` the child of `parent` in place of `old` (or the root);
    /// returns the side `old` was on (meaningless for the root).
    #[inline(always)]
    fn replace_child(
        &self,
        timeline: &mut Timeline,
        parent: Index,
        old: Index,
        new: Index,
    ) -> usize {
        if parent == NONE {
            timeline.root = new as Link;
            LEFT
        } else {
            let dir = usize::from(self.child(parent, RIGHT) != old);
            self.set_child(parent, dir, new);
            dir
        }
    }

    /// Rotates at `x` toward `dir`: its child on the other side, `y`, takes its
    /// place and `x` becomes `y`'s child on side `dir`. Colours are unchanged;
    /// returns `y`.
    #[inline(always)]
    fn rotate(&self, timeline: &mut Timeline, x: Index, dir: usize) -> Index {
        let x_parent = self.parent(x);
        let y = self.child(x, 1 - dir);
        let inner = self.child(y, dir);
        self.set_child(x, 1 - dir, inner);
        if inner != NONE {
            self.set_parent(inner, x);
        }
        self.set_child(y, dir, x);
        self.set_parent(x, y);
        self.set_parent(y, x_parent);
        self.replace_child(timeline, x_parent, x, y);
        if A::AUGMENTED {
            // y now covers the subtree x covered; x lost y's other subtree.
            let min = self.min_of(x);
            self.set_min(y, min);
            self.recompute(x);
        }
        y
    }

    /// Inserts entity `id` with `key` (vruntime for CFS, deadline for EEVDF)
    /// and `vruntime` (the key itself in a vruntime-ordered tree). `id` must
    /// not be in any tree.
    #[inline]
    fn insert(&self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64) {
        debug_assert!(A::AUGMENTED || key == vruntime, "CFS keys are vruntimes");
        let z = index_of(id);
        debug_assert_eq!(self.colour(z), DETACHED, "entity {id} is already in a tree");
        let mut parent = Index::from(timeline.root);
        if parent == NONE {
            self.init(z, NONE, BLACK, key, vruntime);
            timeline.root = z as Link;
            timeline.leftmost = z as Link;
            return;
        }
        // Descend to the leaf position; only the node index is carried from
        // one level to the next (this loop is most of the cost at large N).
        let mut dir;
        loop {
            // Equal keys go right.
            dir = usize::from(vtime_before(key, self.key_of(parent)));
            let next = self.child(parent, dir);
            if next == NONE {
                break;
            }
            parent = next;
        }
        self.init(z, parent, RED, key, vruntime);
        self.set_child(parent, dir, z);
        // The new node is the leftmost exactly when it became the left child
        // of the old leftmost (which has no left child).
        if parent == Index::from(timeline.leftmost) && dir == LEFT {
            timeline.leftmost = z as Link;
        }
        if A::AUGMENTED {
            // Adding a value can only lower minima: stop where it does not.
            let mut at = parent;
            while at != NONE && vtime_before(vruntime, self.min_of(at)) {
                self.set_min(at, vruntime);
                at = self.parent(at);
            }
        }
        self.insert_color(timeline, z, parent);
    }

    /// Restores the red-black rules after red `node` was linked under `parent`.
    #[inline(always)]
    fn insert_color(&self, timeline: &mut Timeline, mut node: Index, mut parent: Index) {
        loop {
            if self.is_black(parent) {
                return;
            }
            // A red parent is never the root: the grandparent exists.
            let grand = self.parent(parent);
            let grand_child = [self.child(grand, RIGHT), self.child(grand, LEFT)];
            let side = usize::from(grand_child[RIGHT] != parent);
            let uncle = grand_child[1 - side];
            if self.is_red(uncle) {
                // Push the grandparent's black down to both of its children.
                self.set_black(uncle);
                self.set_black(parent);
                let great = self.parent(grand);
                if great == NONE {
                    // The root stays black.
                    return;
                }
                self.set_red(grand);
                node = grand;
                parent = great;
                continue;
            }
            if self.child(parent, 1 - side) == node {
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
    fn next(&self, id: u32) -> Option<u32> {
        let at = index_of(id);
        let right = self.child(at, RIGHT);
        if right != NONE {
            return Some(id_of(self.leftmost_below(right)));
        }
        let mut child = at;
        let mut parent = self.parent(at);
        while parent != NONE && self.child(parent, RIGHT) == child {
            child = parent;
            parent = self.parent(parent);
        }
        (parent != NONE).then(|| id_of(parent))
    }

    #[inline(always)]
    fn leftmost_below(&self, mut at: Index) -> Index {
        loop {
            let left = self.child(at, LEFT);
            if left == NONE {
                return at;
            }
            at = left;
        }
    }

    /// Removes entity `id`, which must be in `timeline`.
    #[inline]
    fn remove(&self, timeline: &mut Timeline, id: u32) {
        let z = index_of(id);
        let right = self.child(z, RIGHT);
        let z_parent = self.parent(z);
        let z_colour = self.colour(z);
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
                self.set_child(z_parent, LEFT, right);
            }
            rebalance = self.take_place(right, z_parent, z_colour);
            timeline.leftmost = if right != NONE { right } else { z_parent } as Link;
            side = LEFT;
            changed = z_parent;
        } else {
            let left = self.child(z, LEFT);
            if left == NONE || right == NONE {
                let child = left | right;
                side = self.replace_child(timeline, z_parent, z, child);
                rebalance = self.take_place(child, z_parent, z_colour);
                changed = z_parent;
            } else {
                // Two children: the successor (leftmost of the right subtree, with
                // no left child) takes z's place and colour.
                let successor = self.leftmost_below(right);
                let successor_right = self.child(successor, RIGHT);
                let successor_colour = self.colour(successor);
                let hole_parent;
                if successor == right {
                    hole_parent = successor;
                    side = RIGHT;
                } else {
                    hole_parent = self.parent(successor);
                    side = LEFT;
                    self.set_child(hole_parent, LEFT, successor_right);
                    self.set_child(successor, RIGHT, right);
                    self.set_parent(right, successor);
                }
                self.set_child(successor, LEFT, left);
                self.set_parent(left, successor);
                self.set_parent(successor, z_parent);
                self.set_colour(successor, z_colour);
                self.replace_child(timeline, z_parent, z, successor);
                if successor_right != NONE {
                    // A red child under the black successor takes its black.
                    self.set_parent(successor_right, hole_parent);
                    self.set_black(successor_right);
                    rebalance = NONE;
                } else {
                    rebalance = if successor_colour != RED {
                        hole_parent
                    } else {
                        NONE
                    };
                }
                changed = hole_parent;
                moved = successor;
            }
        }
        if A::AUGMENTED {
            let mut at = changed;
            while at != NONE {
                let old = self.min_of(at);
                let min = self.recompute(at);
                if at == moved {
                    moved = NONE;
                } else if moved == NONE && min == old {
                    break;
                }
                at = self.parent(at);
            }
        }
        if rebalance != NONE {
            self.erase_color(timeline, rebalance, side);
        }
        if cfg!(debug_assertions) {
            self.set_colour(z, DETACHED);
        }
    }

    /// Finishes unlinking a node with at most one child, `child`, already
    /// linked under the node's parent `parent`: a child (then red under a
    /// black node) takes the node's colour, and no black is lost; without one,
    /// a black node leaves `parent` one black short. Returns the node to
    /// rebalance from (`NONE` when none).
    #[inline(always)]
    fn take_place(&self, child: Index, parent: Index, colour: Colour) -> Index {
        if child != NONE {
            self.set_parent(child, parent);
            self.set_colour(child, colour);
            NONE
        } else if colour != RED {
            parent
        } else {
            NONE
        }
    }

    /// Restores the red-black rules after a black node was removed below
    /// `parent` on `side`, leaving the path through the (possibly absent)
    /// child there one black short.
    #[inline(always)]
    fn erase_color(&self, timeline: &mut Timeline, mut parent: Index, mut side: usize) {
        loop {
            // The sibling subtree of the short side has a black height of at
            // least one, so the sibling exists.
            let mut sibling = self.child(parent, 1 - side);
            if self.is_red(sibling) {
                // Make the sibling black: rotate it above the parent.
                self.rotate(timeline, parent, side);
                self.set_black(sibling);
                self.set_red(parent);
                sibling = self.child(parent, 1 - side);
            }
            // Loaded by direction (no array indexed by `side`, which LLVM
            // spills to the stack to index).
            let near = self.child(sibling, side);
            let far = self.child(sibling, 1 - side);
            if !self.is_red(far) {
                if !self.is_red(near) {
                    // Both nephews black: the sibling turns red, and the
                    // shortage moves up to the parent (or ends at a red one).
                    self.set_red(sibling);
                    if !self.is_black(parent) {
                        self.set_black(parent);
                        return;
                    }
                    let node = parent;
                    parent = self.parent(parent);
                    if parent == NONE {
                        return;
                    }
                    side = usize::from(self.child(parent, RIGHT) != node);
                    continue;
                }
                // Near nephew red: rotate it up so that it becomes the sibling
                // with a red far child (the old sibling).
                self.rotate(timeline, sibling, 1 - side);
                sibling = near;
            }
            // Far nephew red: the sibling takes the parent's place and colour,
            // and both the parent and the far side turn black.
            let far = self.child(sibling, 1 - side);
            let parent_colour = self.colour(parent);
            self.rotate(timeline, parent, side);
            self.set_colour(sibling, parent_colour);
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
    fn first_eligible(&self, timeline: &Timeline, eligible: impl Fn(u64) -> bool) -> Option<u32> {
        let leftmost = Index::from(timeline.leftmost);
        if leftmost != NONE && eligible(self.vruntime_of(leftmost)) {
            return Some(id_of(leftmost));
        }
        if !A::AUGMENTED {
            return None;
        }
        let mut at = Index::from(timeline.root);
        while at != NONE {
            let left = self.child(at, LEFT);
            if left != NONE && eligible(self.min_of(left)) {
                at = left;
                continue;
            }
            if eligible(self.vruntime_of(at)) {
                return Some(id_of(at));
            }
            at = self.child(at, RIGHT);
        }
        None
    }
}

/// The node arena of a run queue whose pick policy is chosen at boot: the
/// CFS or the EEVDF tree. Each call dispatches once on the policy, where the
/// tree code below it is compiled for that tree alone. It is also how a
/// machine hands its one arena to its CPUs' run queues
/// ([`super::SharedArena`]), whatever their pick.
#[derive(Debug)]
pub enum TimelineNodes {
    /// Ordered by vruntime (CFS, §1.4).
    Cfs(CfsNodes),
    /// Ordered by virtual deadline, augmented with the subtree minimum
    /// vruntime (EEVDF, §1.5).
    Eevdf(EevdfNodes),
}

/// Evaluates `$call` with `$arena` bound to whichever arena `$nodes` holds.
macro_rules! dispatch {
    ($nodes:expr, $arena:ident => $call:expr) => {
        match $nodes {
            TimelineNodes::Cfs($arena) => $call,
            TimelineNodes::Eevdf($arena) => $call,
        }
    };
}

impl TimelineNodes {
    /// An arena for entity numbers below `capacity` (at most
    /// [`MAX_ENTITIES`]); `augmented` chooses the EEVDF tree.
    pub fn new(capacity: usize, augmented: bool) -> Self {
        if augmented {
            TimelineNodes::Eevdf(TimelineArena::new(capacity))
        } else {
            TimelineNodes::Cfs(TimelineArena::new(capacity))
        }
    }

    /// Whether it is the EEVDF tree.
    pub fn augmented(&self) -> bool {
        matches!(self, TimelineNodes::Eevdf(_))
    }
}

/// What a fair run queue needs of its node arena. A run queue built for one
/// pick (`CfsPick`, `EevdfPick`) holds that pick's [`TimelineArena`] and calls
/// it directly; one whose pick is a run-time value ([`TimelineNodes`], for tests
/// and tools that compare both picks) dispatches once per call.
pub trait TimelineStore: core::fmt::Debug + Sized {
    /// An arena of its own for entity numbers below `capacity`; `augmented`:
    /// the EEVDF tree (fixed by the type, except for [`TimelineNodes`]).
    fn build(capacity: usize, augmented: bool) -> Self;
    /// A handle on the machine's arena `nodes`, which must be the tree this
    /// store keeps (`None` when it is the other one).
    fn share(nodes: &TimelineNodes) -> Option<Self>;
    /// See [`TimelineArena::key`].
    fn key(&self, id: u32) -> u64;
    /// See [`TimelineArena::min_vruntime`].
    fn min_vruntime(&self, timeline: &Timeline) -> Option<u64>;
    /// See [`TimelineArena::insert`].
    fn insert(&self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64);
    /// See [`TimelineArena::remove`].
    fn remove(&self, timeline: &mut Timeline, id: u32);
    /// See [`TimelineArena::next`].
    fn next(&self, id: u32) -> Option<u32>;
    /// See [`TimelineArena::first_eligible`].
    fn first_eligible(&self, timeline: &Timeline, eligible: impl Fn(u64) -> bool) -> Option<u32>;
    /// Checks the tree's invariants; the number of nodes (tests).
    #[cfg(test)]
    fn check(&self, timeline: &Timeline) -> usize;
}

impl<A: Augment> TimelineStore for TimelineArena<A> {
    fn build(capacity: usize, _augmented: bool) -> Self {
        TimelineArena::new(capacity)
    }
    fn share(nodes: &TimelineNodes) -> Option<Self> {
        A::arena(nodes).map(TimelineArena::share)
    }
    #[inline(always)]
    fn key(&self, id: u32) -> u64 {
        TimelineArena::key(self, id)
    }
    #[inline(always)]
    fn min_vruntime(&self, timeline: &Timeline) -> Option<u64> {
        TimelineArena::min_vruntime(self, timeline)
    }
    #[inline(always)]
    fn insert(&self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64) {
        TimelineArena::insert(self, timeline, id, key, vruntime)
    }
    #[inline(always)]
    fn remove(&self, timeline: &mut Timeline, id: u32) {
        TimelineArena::remove(self, timeline, id)
    }
    #[inline(always)]
    fn next(&self, id: u32) -> Option<u32> {
        TimelineArena::next(self, id)
    }
    #[inline(always)]
    fn first_eligible(&self, timeline: &Timeline, eligible: impl Fn(u64) -> bool) -> Option<u32> {
        TimelineArena::first_eligible(self, timeline, eligible)
    }
    #[cfg(test)]
    fn check(&self, timeline: &Timeline) -> usize {
        TimelineArena::check(self, timeline)
    }
}

impl TimelineStore for TimelineNodes {
    fn build(capacity: usize, augmented: bool) -> Self {
        TimelineNodes::new(capacity, augmented)
    }
    fn share(nodes: &TimelineNodes) -> Option<Self> {
        Some(match nodes {
            TimelineNodes::Cfs(arena) => TimelineNodes::Cfs(arena.share()),
            TimelineNodes::Eevdf(arena) => TimelineNodes::Eevdf(arena.share()),
        })
    }
    #[inline]
    fn key(&self, id: u32) -> u64 {
        dispatch!(self, arena => arena.key(id))
    }
    #[inline]
    fn min_vruntime(&self, timeline: &Timeline) -> Option<u64> {
        dispatch!(self, arena => arena.min_vruntime(timeline))
    }
    #[inline]
    fn insert(&self, timeline: &mut Timeline, id: u32, key: u64, vruntime: u64) {
        dispatch!(self, arena => arena.insert(timeline, id, key, vruntime))
    }
    #[inline]
    fn remove(&self, timeline: &mut Timeline, id: u32) {
        dispatch!(self, arena => arena.remove(timeline, id))
    }
    fn next(&self, id: u32) -> Option<u32> {
        dispatch!(self, arena => arena.next(id))
    }
    fn first_eligible(&self, timeline: &Timeline, eligible: impl Fn(u64) -> bool) -> Option<u32> {
        dispatch!(self, arena => arena.first_eligible(timeline, eligible))
    }
    #[cfg(test)]
    fn check(&self, timeline: &Timeline) -> usize {
        dispatch!(self, arena => arena.check(timeline))
    }
}

#[cfg(test)]
mod tests;
