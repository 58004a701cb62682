//! Tests of the timeline: invariant checks and a brute-force sorted-list model.

use super::*;
use crate::fair::test_rng::Rng;
use alloc::vec::Vec;

impl<A: Augment> TimelineArena<A> {
    /// Checks the red-black, ordering, parent and augmentation invariants; returns
    /// the number of nodes. For tests.
    pub fn check(&self, timeline: &Timeline) -> usize {
        fn walk<A: Augment>(
            nodes: &TimelineArena<A>,
            at: Index,
            parent: Index,
            count: &mut usize,
        ) -> (usize, u64) {
            if at == NONE {
                return (1, u64::MAX);
            }
            *count += 1;
            let node = *nodes.node(at);
            let (left, right) = (
                Index::from(node.child[LEFT]),
                Index::from(node.child[RIGHT]),
            );
            assert_eq!(Index::from(node.parent), parent, "parent link of {at}");
            let red = !node.black;
            if red {
                assert!(
                    !nodes.is_red(left) && !nodes.is_red(right),
                    "red-red at {at}"
                );
            }
            if left != NONE {
                assert!(!vtime_before(node.key, nodes.node(left).key));
            }
            if right != NONE {
                assert!(!vtime_before(nodes.node(right).key, node.key));
            }
            let (lh, lmin) = walk(nodes, left, at, count);
            let (rh, rmin) = walk(nodes, right, at, count);
            assert_eq!(lh, rh, "black height at {at}");
            let mut min = node.augment.vruntime(node.key);
            for m in [lmin, rmin] {
                if m != u64::MAX && vtime_before(m, min) {
                    min = m;
                }
            }
            if A::AUGMENTED {
                assert_eq!(node.augment.min_vruntime(), min, "augmented min at {at}");
            }
            (lh + usize::from(!red), min)
        }
        let mut count = 0;
        assert!(
            !self.is_red(Index::from(timeline.root)),
            "the root is black"
        );
        walk(self, Index::from(timeline.root), NONE, &mut count);
        let mut leftmost = Index::from(timeline.root);
        while leftmost != NONE && Index::from(self.node(leftmost).child[LEFT]) != NONE {
            leftmost = Index::from(self.node(leftmost).child[LEFT]);
        }
        assert_eq!(Index::from(timeline.leftmost), leftmost, "cached leftmost");
        count
    }
}

/// Brute-force model: random inserts and removals agree with a sorted list,
/// and every invariant holds after each operation.
#[test]
fn matches_a_sorted_list_model() {
    // A small arena with many equal keys, and a larger one for deep trees
    // (every rotation and recolouring case at several heights).
    for (capacity, keys, ops) in [(64, 50, 4000), (700, 100_000, 12_000)] {
        for augmented in [false, true] {
            model_run(capacity, keys, ops, augmented);
        }
    }
}

fn model_run(capacity: u64, keys: u64, ops: usize, augmented: bool) {
    let mut rng = Rng::new(7 + capacity);
    let mut nodes = TimelineNodes::new(capacity as usize, augmented);
    let mut timeline = Timeline::default();
    let mut model: Vec<(u64, u32, u64)> = Vec::new();
    for _ in 0..ops {
        let id = rng.below(capacity) as u32;
        if let Some(pos) = model.iter().position(|e| e.1 == id) {
            model.remove(pos);
            nodes.remove(&mut timeline, id);
        } else {
            let key = rng.below(keys);
            // A vruntime-ordered tree's key is the vruntime.
            let vruntime = if augmented { rng.below(1000) } else { key };
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
        let min = model.iter().map(|e| e.2).min();
        assert_eq!(nodes.min_vruntime(&timeline), min);
        let limit = rng.below(if augmented { 1000 } else { keys });
        let brute = model.iter().find(|e| e.2 <= limit).map(|e| e.1);
        assert_eq!(nodes.first_eligible(&timeline, |v| v <= limit), brute);
    }
}
