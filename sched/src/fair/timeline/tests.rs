//! Tests of the timeline: invariant checks and a brute-force sorted-list model.

use super::*;
use crate::fair::test_rng::Rng;

impl TimelineNodes {
    /// Checks the red-black, ordering, parent and augmentation invariants; returns
    /// the number of nodes. For tests.
    pub fn check(&self, timeline: &Timeline) -> usize {
        fn walk(nodes: &TimelineNodes, at: u32, parent: u32, count: &mut usize) -> (usize, u64) {
            if at == SENTINEL {
                return (1, u64::MAX);
            }
            *count += 1;
            let node = *nodes.node(at);
            assert_eq!(node.parent, parent, "parent link of {at}");
            if node.red {
                assert!(
                    !nodes.node(node.left).red && !nodes.node(node.right).red,
                    "red-red at {at}"
                );
            }
            if node.left != SENTINEL {
                assert!(!vtime_before(node.key, nodes.node(node.left).key));
            }
            if node.right != SENTINEL {
                assert!(!vtime_before(nodes.node(node.right).key, node.key));
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
        assert!(!self.node(SENTINEL).red, "sentinel stays black");
        assert!(!self.node(timeline.root).red);
        walk(self, timeline.root, SENTINEL, &mut count);
        let mut leftmost = timeline.root;
        while leftmost != SENTINEL && self.node(leftmost).left != SENTINEL {
            leftmost = self.node(leftmost).left;
        }
        assert_eq!(timeline.leftmost, leftmost, "cached leftmost");
        count
    }
}

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
