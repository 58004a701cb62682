//! Analytic CPU-share tests of the fair class: tasks of mixed nice, groups of
//! equal and unequal shares, nesting, and moving a task between groups, under
//! both picks.

use alloc::vec::Vec;

use super::FairRunQueue;
use super::test_support::*;
use crate::class::SchedClass;
use crate::task::{GroupId, TaskId};
use crate::weight::PRIO_TO_WEIGHT;

/// Analytic: CPU-bound tasks of mixed nice on one CPU get run time in the ratio
/// of their weights (§1.1) within 0.5 % over 10 s, ticks at 1 ms and 4 ms.
#[test]
fn mixed_nice_tasks_share_by_weight() {
    let nices = [0i8, 1, 3, -2, 5];
    let total: f64 = nices
        .iter()
        .map(|&n| f64::from(PRIO_TO_WEIGHT[(n + 20) as usize]))
        .sum();
    let expected: Vec<f64> = nices
        .iter()
        .map(|&n| f64::from(PRIO_TO_WEIGHT[(n + 20) as usize]) / total)
        .collect();
    for tick in [MS, 4 * MS] {
        for pick in [cfs(), eevdf(tick)] {
            let mut fair = FairRunQueue::new(pick, nices.len(), 1);
            for (i, &n) in nices.iter().enumerate() {
                fair.task_new(TaskId(i as u16), &nice(n), 0).unwrap();
                fair.enqueue_task(TaskId(i as u16), 0, INITIAL);
            }
            let runtime = drive(&mut fair, nices.len(), tick, 0, 10_000 * MS);
            assert_shares(&runtime, &expected, "mixed nice");
        }
    }
}

/// Analytic: two groups of equal shares, with 1 and 3 tasks, split the CPU
/// 50/50; the three share their half equally.
#[test]
fn equal_share_groups_split_equally() {
    for pick in [cfs(), eevdf(MS)] {
        let mut fair = FairRunQueue::new(pick, 4, 3);
        let a = fair.create_group(GroupId::ROOT, 1024).unwrap();
        let b = fair.create_group(GroupId::ROOT, 1024).unwrap();
        fair.task_new(TaskId(0), &in_group(0, a), 0).unwrap();
        for t in 1..4 {
            fair.task_new(TaskId(t), &in_group(0, b), 0).unwrap();
        }
        for t in 0..4 {
            fair.enqueue_task(TaskId(t), 0, INITIAL);
        }
        let runtime = drive(&mut fair, 4, MS, 0, 10_000 * MS);
        assert_shares(&runtime, &[0.5, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0], "1 vs 3");
    }
}

/// Analytic: root + 3 levels. Root holds task 0 and group G1; G1 holds task 1
/// and G2; G2 holds task 2 and G3; G3 holds tasks 3 and 4. All weights 1024, so
/// each level halves: 1/2, 1/4, 1/8, 1/16, 1/16.
#[test]
fn nested_groups_split_by_level() {
    for pick in [cfs(), eevdf(MS)] {
        let mut fair = FairRunQueue::new(pick, 5, 4);
        let g1 = fair.create_group(GroupId::ROOT, 1024).unwrap();
        let g2 = fair.create_group(g1, 1024).unwrap();
        let g3 = fair.create_group(g2, 1024).unwrap();
        let groups = [GroupId::ROOT, g1, g2, g3, g3];
        for (t, &g) in groups.iter().enumerate() {
            fair.task_new(TaskId(t as u16), &in_group(0, g), 0).unwrap();
            fair.enqueue_task(TaskId(t as u16), 0, INITIAL);
        }
        let runtime = drive(&mut fair, 5, MS, 0, 20_000 * MS);
        assert_shares(
            &runtime,
            &[0.5, 0.25, 0.125, 0.0625, 0.0625],
            "nested groups",
        );
    }
}

/// Analytic: shares weigh groups: 2048 vs 1024 gives 2/3 vs 1/3.
#[test]
fn group_shares_weigh_groups() {
    for pick in [cfs(), eevdf(MS)] {
        let mut fair = FairRunQueue::new(pick, 2, 3);
        let a = fair.create_group(GroupId::ROOT, 1024).unwrap();
        let b = fair.create_group(GroupId::ROOT, 1024).unwrap();
        fair.task_new(TaskId(0), &in_group(0, a), 0).unwrap();
        fair.task_new(TaskId(1), &in_group(0, b), 0).unwrap();
        fair.enqueue_task(TaskId(0), 0, INITIAL);
        fair.enqueue_task(TaskId(1), 0, INITIAL);
        fair.set_group_shares(a, 2048, 0).unwrap();
        let runtime = drive(&mut fair, 2, MS, 0, 10_000 * MS);
        assert_shares(&runtime, &[2.0 / 3.0, 1.0 / 3.0], "shares 2:1");
    }
}

/// Analytic: moving a task between groups changes the split. Group A has task
/// 0, group B tasks 1 and 2: 1/2, 1/4, 1/4. Then task 2 moves to A (while it
/// runs or waits): 1/4, 1/2, 1/4.
#[test]
fn moving_a_task_between_groups() {
    for pick in [cfs(), eevdf(MS)] {
        let mut fair = FairRunQueue::new(pick, 3, 3);
        let a = fair.create_group(GroupId::ROOT, 1024).unwrap();
        let b = fair.create_group(GroupId::ROOT, 1024).unwrap();
        for (t, g) in [(0, a), (1, b), (2, b)] {
            fair.task_new(TaskId(t), &in_group(0, g), 0).unwrap();
            fair.enqueue_task(TaskId(t), 0, INITIAL);
        }
        let first = drive(&mut fair, 3, MS, 0, 10_000 * MS);
        assert_shares(&first, &[0.5, 0.25, 0.25], "before the move");
        fair.set_task_group(TaskId(2), a, 10_000 * MS).unwrap();
        assert_eq!(fair.task_group(TaskId(2)), Some(a));
        assert_eq!(fair.nr_running(), 3);
        let second = drive(&mut fair, 3, MS, 10_000 * MS, 20_000 * MS);
        assert_shares(&second, &[0.25, 0.5, 0.25], "after the move");
    }
}
