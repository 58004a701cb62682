//! Task-group propagation: keeping a group entity's signals equal to its group run queue's (§2.7).
//!
//! ```text
//!   parent run queue  <-- group entity (weight = shares)
//!                              ^ mirrors
//!                         group run queue  <-- tasks attach / detach here
//! ```
//! When a task attaches to or detaches from a group run queue, the change is
//! recorded there ([`add_tg_cfs_propagate`]); at the group entity's next
//! update [`propagate_entity_load_avg`] copies the group's util and runnable
//! into the entity, re-derives its load, applies the differences to the parent
//! run queue, and passes the change one level up.
//!
//! Also here: [`calc_group_shares`], the group entity's weight on one CPU.

use super::accumulate::pelt_divider;
use super::{PELT_MIN_DIVIDER, SCHED_CAPACITY_SHIFT, SchedAvg, add_positive, signed_difference};

/// A fair run queue's pending propagation (`cfs_rq->propagate`,
/// `cfs_rq->prop_runnable_sum`, §2.7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Propagation {
    /// Something changed below; the group entity must be updated.
    pub propagate: bool,
    /// Load-sum (unweighted, like an entity's `load_sum`) added (> 0) or
    /// removed (< 0) below since the last propagation.
    pub prop_runnable_sum: i64,
}

/// `add_tg_cfs_propagate(cfs_rq, runnable_sum)` (§2.7).
pub fn add_tg_cfs_propagate(propagation: &mut Propagation, runnable_sum: i64) {
    propagation.propagate = true;
    propagation.prop_runnable_sum = propagation.prop_runnable_sum.saturating_add(runnable_sum);
}

/// `update_tg_cfs_util` (§2.7): the group entity's util becomes its group
/// run queue's; the parent run queue takes the difference.
pub fn update_tg_cfs_util(run_queue: &mut SchedAvg, entity: &mut SchedAvg, group: &SchedAvg) {
    let delta_avg = signed_difference(group.util_avg, entity.util_avg);
    if delta_avg == 0 {
        return;
    }
    let divider = pelt_divider(run_queue);
    entity.util_avg = group.util_avg;
    let new_sum = entity.util_avg.saturating_mul(divider);
    let delta_sum = signed_difference(new_sum, entity.util_sum);
    entity.util_sum = new_sum;
    run_queue.util_avg = add_positive(run_queue.util_avg, delta_avg);
    run_queue.util_sum = add_positive(run_queue.util_sum, delta_sum);
    run_queue.util_sum = run_queue
        .util_sum
        .max(run_queue.util_avg.saturating_mul(PELT_MIN_DIVIDER));
}

/// `update_tg_cfs_runnable` (§2.7): as [`update_tg_cfs_util`], for runnable.
pub fn update_tg_cfs_runnable(run_queue: &mut SchedAvg, entity: &mut SchedAvg, group: &SchedAvg) {
    let delta_avg = signed_difference(group.runnable_avg, entity.runnable_avg);
    if delta_avg == 0 {
        return;
    }
    let divider = pelt_divider(run_queue);
    entity.runnable_avg = group.runnable_avg;
    let new_sum = entity.runnable_avg.saturating_mul(divider);
    let delta_sum = signed_difference(new_sum, entity.runnable_sum);
    entity.runnable_sum = new_sum;
    run_queue.runnable_avg = add_positive(run_queue.runnable_avg, delta_avg);
    run_queue.runnable_sum = add_positive(run_queue.runnable_sum, delta_sum);
    run_queue.runnable_sum = run_queue
        .runnable_sum
        .max(run_queue.runnable_avg.saturating_mul(PELT_MIN_DIVIDER));
}

/// `update_tg_cfs_load` (§2.7): re-derives the group entity's load from
/// the load-sum change recorded in the group run queue.
///
/// - `entity_weight`: the group entity's weight (`se_weight`, its shares).
/// - `group_load_weight`: `scale_load_down(gcfs_rq->load.weight)`.
///
/// Added load is added to the entity's `load_sum` (capped at the divider: an
/// entity cannot be more than always runnable); removed load is estimated from
/// the group's average per unit of weight. The entity is never less loaded
/// than it is running.
pub fn update_tg_cfs_load(
    run_queue: &mut SchedAvg,
    entity: &mut SchedAvg,
    entity_weight: u64,
    group: &SchedAvg,
    group_load_weight: u64,
    group_propagation: &mut Propagation,
) {
    let prop = group_propagation.prop_runnable_sum;
    if prop == 0 {
        return;
    }
    group_propagation.prop_runnable_sum = 0;
    let divider = pelt_divider(run_queue);
    let runnable_sum = if prop >= 0 {
        (prop as u64).saturating_add(entity.load_sum).min(divider)
    } else {
        let group_load_sum = group.load_sum.checked_div(group_load_weight).unwrap_or(0);
        entity.load_sum.min(group_load_sum)
    };
    let running_sum = entity.util_sum >> SCHED_CAPACITY_SHIFT;
    let runnable_sum = runnable_sum.max(running_sum);
    let load_sum = entity_weight.saturating_mul(runnable_sum);
    let load_avg = load_sum / divider;
    let delta_avg = signed_difference(load_avg, entity.load_avg);
    if delta_avg == 0 {
        return;
    }
    let delta_sum = signed_difference(load_sum, entity_weight.saturating_mul(entity.load_sum));
    entity.load_sum = runnable_sum;
    entity.load_avg = load_avg;
    run_queue.load_avg = add_positive(run_queue.load_avg, delta_avg);
    run_queue.load_sum = add_positive(run_queue.load_sum, delta_sum);
    run_queue.load_sum = run_queue
        .load_sum
        .max(run_queue.load_avg.saturating_mul(PELT_MIN_DIVIDER));
}

/// The parent side of a group entity: the run queue it is queued on.
#[derive(Debug)]
pub struct ParentRunQueue<'a> {
    /// The parent run queue's signals.
    pub avg: &'a mut SchedAvg,
    /// The parent run queue's pending propagation.
    pub propagation: &'a mut Propagation,
}

/// The group side of a group entity: the run queue it represents.
#[derive(Debug)]
pub struct GroupRunQueue<'a> {
    /// The group run queue's signals.
    pub avg: &'a SchedAvg,
    /// `gcfs_rq->load.weight`, scaled (scaled down only when a change is
    /// propagated: most updates find none pending).
    pub load: u64,
    /// The group run queue's pending propagation.
    pub propagation: &'a mut Propagation,
}

/// `propagate_entity_load_avg(se)` for a group entity (§2.7): if its group
/// run queue has something pending, clear it, pass the load change to the
/// parent's pending propagation, and update util, runnable and load (in that
/// order). Returns `true` if anything was propagated (it counts as "decayed"
/// in `update_load_avg`, §2.6).
///
/// The test for nothing pending is inlined into every group entity's update
/// (most find nothing pending); the propagation stays out of line.
#[inline(always)]
pub fn propagate_entity_load_avg(
    parent: ParentRunQueue<'_>,
    entity: &mut SchedAvg,
    entity_weight: u64,
    group: GroupRunQueue<'_>,
) -> bool {
    if !group.propagation.propagate {
        return false;
    }
    propagate_pending(parent, entity, entity_weight, group)
}

/// [`propagate_entity_load_avg`] of a group run queue with a change pending.
#[inline(never)]
fn propagate_pending(
    parent: ParentRunQueue<'_>,
    entity: &mut SchedAvg,
    entity_weight: u64,
    group: GroupRunQueue<'_>,
) -> bool {
    group.propagation.propagate = false;
    add_tg_cfs_propagate(parent.propagation, group.propagation.prop_runnable_sum);
    update_tg_cfs_util(parent.avg, entity, group.avg);
    update_tg_cfs_runnable(parent.avg, entity, group.avg);
    update_tg_cfs_load(
        parent.avg,
        entity,
        entity_weight,
        group.avg,
        crate::weight::scale_load_down(group.load),
        group.propagation,
    );
    true
}

/// `MIN_SHARES` = 2, deliberately unscaled (§2.7, §9).
pub const MIN_SHARES: u64 = 2;

/// `calc_group_shares` (§2.7): the weight, in scaled units (nice 0 =
/// `1024 << 10`), of a group's entity on one CPU: the group's shares in
/// proportion to this CPU's part of the group's load.
///
/// - `tg_shares`: the group's shares, scaled (`tg->shares`).
/// - `load_weight`: `scale_load_down(cfs_rq->load.weight)` of the group run queue here.
/// - `load_avg`: that run queue's `load_avg`.
/// - `tg_load_avg`: the group's summed load over all CPUs (`tg->load_avg`).
/// - `tg_load_avg_contrib`: this run queue's last contribution to it.
#[must_use]
pub fn calc_group_shares(
    tg_shares: u64,
    load_weight: u64,
    load_avg: u64,
    tg_load_avg: i64,
    tg_load_avg_contrib: u64,
) -> u64 {
    let load = load_weight.max(load_avg);
    let max_shares = tg_shares.max(MIN_SHARES);
    // In 64 bits when the product and the group weight fit and the weight is
    // positive (every run queue's loads do): the same quotient as below.
    if let Some(shares) = tg_shares.checked_mul(load)
        && let Ok(tg_load_avg) = u64::try_from(tg_load_avg)
        && let Some(tg_weight) = tg_load_avg.checked_add(load)
        && let Some(tg_weight) = tg_weight.checked_sub(tg_load_avg_contrib)
        && tg_weight > 0
    {
        return (shares / tg_weight).clamp(MIN_SHARES, max_shares);
    }
    calc_group_shares_wide(tg_shares, load, tg_load_avg, tg_load_avg_contrib)
}

/// [`calc_group_shares`] in 128 bits, for the inputs its 64-bit form cannot
/// hold (`load` is already the larger of the weight and the average).
#[inline(never)]
fn calc_group_shares_wide(
    tg_shares: u64,
    load: u64,
    tg_load_avg: i64,
    tg_load_avg_contrib: u64,
) -> u64 {
    let tg_weight = tg_load_avg as i128 - tg_load_avg_contrib as i128 + load as i128;
    let mut shares = tg_shares as i128 * load as i128;
    if tg_weight > 0 {
        shares = crate::weight::div_wide(shares, tg_weight);
    }
    shares.clamp(MIN_SHARES as i128, tg_shares.max(MIN_SHARES) as i128) as u64
}

/// `update_tg_load_avg`'s decision (§2.7): the change to add to the group's
/// `tg->load_avg`, or `None` when it is too soon (less than 1 ms since
/// `last_update_ns`) or too small (`|delta| <= contrib / 64`). On `Some`, the
/// caller adds the delta, sets its contribution to `load_avg` and its
/// last-update time to `now_ns`. The root group is never updated.
#[must_use]
pub fn tg_load_avg_delta(
    load_avg: u64,
    tg_load_avg_contrib: u64,
    now_ns: u64,
    last_update_ns: u64,
) -> Option<i64> {
    if now_ns.saturating_sub(last_update_ns) < 1_000_000 {
        return None;
    }
    let delta = signed_difference(load_avg, tg_load_avg_contrib);
    if delta.unsigned_abs() > tg_load_avg_contrib / 64 {
        Some(delta)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pelt::attach::{attach_entity_load_avg, detach_entity_load_avg};

    const NICE_0_SCALED: u64 = 1024 << 10;

    /// §2.7 worked vectors (by hand): shares 1024, one busy nice-0 task on
    /// each of 2 CPUs: 512 each; all on one CPU: 1024; 3 + 1 tasks: 768 / 256.
    #[test]
    fn group_shares_worked_vectors() {
        let shares = |load: u64, tg_load: i64| {
            calc_group_shares(NICE_0_SCALED, load, load, tg_load, load) >> 10
        };
        assert_eq!(shares(1024, 2048), 512);
        assert_eq!(shares(1024, 1024), 1024);
        assert_eq!(shares(3072, 4096), 768);
        assert_eq!(shares(1024, 4096), 256);
    }

    /// The 64-bit form of `calc_group_shares` gives the 128-bit one's shares,
    /// at the edges (overflowing products, a group weight of 0 or below, a
    /// negative sum) and on random inputs.
    #[test]
    fn group_shares_64_bit_form_matches_128_bit() {
        let wide = |tg_shares: u64, load_weight: u64, load_avg: u64, tg: i64, contrib: u64| {
            let load = load_weight.max(load_avg);
            let tg_weight = i128::from(tg) - i128::from(contrib) + i128::from(load);
            let mut shares = i128::from(tg_shares) * i128::from(load);
            if tg_weight > 0 {
                shares /= tg_weight;
            }
            shares.clamp(
                i128::from(MIN_SHARES),
                i128::from(tg_shares.max(MIN_SHARES)),
            ) as u64
        };
        let edges = [
            0,
            1,
            2,
            1023,
            1024,
            1 << 20,
            1 << 32,
            1 << 40,
            i64::MAX as u64,
            u64::MAX,
        ];
        let signed = [i64::MIN, -1, 0, 1, 1024, 1 << 40, i64::MAX];
        for &a in &edges {
            for &b in &edges {
                for &c in &edges {
                    for &t in &signed {
                        for &k in &[0, 1, 1024, 1 << 40, u64::MAX] {
                            let shares = a.min(1 << 28);
                            assert_eq!(
                                calc_group_shares(shares, b, c, t, k),
                                wide(shares, b, c, t, k),
                                "{shares} {b} {c} {t} {k}"
                            );
                        }
                    }
                }
            }
        }
        let mut rng = crate::fair::test_rng::Rng::new(41);
        for _ in 0..100_000 {
            let bits = |rng: &mut crate::fair::test_rng::Rng| rng.next_u64() >> rng.below(64);
            let (shares, b, c) = (bits(&mut rng) >> 35, bits(&mut rng), bits(&mut rng));
            let (t, k) = (bits(&mut rng) as i64, bits(&mut rng));
            assert_eq!(
                calc_group_shares(shares, b, c, t, k),
                wide(shares, b, c, t, k)
            );
        }
    }

    /// §2.7: the result is clamped to [MIN_SHARES (unscaled 2), tg_shares];
    /// `load` is the larger of the queued weight and the load average.
    #[test]
    fn group_shares_clamps() {
        assert_eq!(
            calc_group_shares(NICE_0_SCALED, 0, 0, 1 << 40, 0),
            MIN_SHARES
        );
        assert_eq!(
            calc_group_shares(NICE_0_SCALED, 0, 0, 0, 0),
            MIN_SHARES,
            "no load, tg_weight 0"
        );
        assert_eq!(
            calc_group_shares(NICE_0_SCALED, 4096, 0, 0, 0),
            NICE_0_SCALED
        );
        // Queued weight 0 but a blocked load_avg of 512, the other CPU 512: half.
        assert_eq!(
            calc_group_shares(NICE_0_SCALED, 0, 512, 1024, 512) >> 10,
            512
        );
    }

    /// §2.7 `update_tg_load_avg`: at least 1 ms apart and |delta| > contrib/64.
    #[test]
    fn tg_load_avg_rate_limit_and_threshold() {
        assert_eq!(
            tg_load_avg_delta(2000, 1000, 5_000_000, 4_500_000),
            None,
            "0.5 ms: too soon"
        );
        assert_eq!(
            tg_load_avg_delta(2000, 1000, 5_500_000, 4_500_000),
            Some(1000)
        );
        assert_eq!(
            tg_load_avg_delta(6400 + 100, 6400, 10_000_000, 0),
            None,
            "100 = 6400/64: not more"
        );
        assert_eq!(
            tg_load_avg_delta(6400 + 101, 6400, 10_000_000, 0),
            Some(101)
        );
        assert_eq!(tg_load_avg_delta(0, 6400, 10_000_000, 0), Some(-6400));
    }

    /// A parent and an empty group run queue on the same PELT time and open
    /// period (so their dividers are equal), and the group entity.
    fn hierarchy() -> (SchedAvg, SchedAvg, SchedAvg) {
        let aligned = SchedAvg {
            last_update_time: 5_000_000,
            period_contrib: 300,
            ..SchedAvg::default()
        };
        (aligned, aligned, aligned)
    }

    /// §2.7: a new task (load_avg 1024, util 512) attached to an empty
    /// group makes the group entity (weight 1024) fully loaded, with the
    /// group's util; the parent gains both, and the change is passed up.
    #[test]
    fn attach_propagates_to_group_entity_and_parent() {
        let (mut parent, mut group, mut entity) = hierarchy();
        let mut parent_propagation = Propagation::default();
        let mut group_propagation = Propagation::default();
        let mut task = SchedAvg {
            load_avg: 1024,
            util_avg: 512,
            runnable_avg: 512,
            ..SchedAvg::default()
        };
        let added = attach_entity_load_avg(&mut group, &mut task, 1024);
        add_tg_cfs_propagate(&mut group_propagation, added);
        let divider = pelt_divider(&parent);
        assert_eq!(
            added as u64, divider,
            "load_avg 1024 at weight 1024: load_sum = divider"
        );

        let propagated = propagate_entity_load_avg(
            ParentRunQueue {
                avg: &mut parent,
                propagation: &mut parent_propagation,
            },
            &mut entity,
            1024,
            GroupRunQueue {
                avg: &group,
                load: crate::weight::scale_load(1024),
                propagation: &mut group_propagation,
            },
        );
        assert!(propagated);
        assert_eq!(group_propagation, Propagation::default(), "consumed");
        assert_eq!(
            parent_propagation,
            Propagation {
                propagate: true,
                prop_runnable_sum: added
            },
            "passed one level up"
        );
        assert_eq!(
            entity.util_avg, 512,
            "the group entity mirrors its group's util"
        );
        assert_eq!(entity.util_sum, 512 * divider);
        assert_eq!(entity.runnable_avg, 512);
        assert_eq!(entity.load_sum, divider, "capped at the divider");
        assert_eq!(entity.load_avg, 1024, "weight * divider / divider");
        assert_eq!(
            (parent.util_avg, parent.runnable_avg, parent.load_avg),
            (512, 512, 1024)
        );
        assert_eq!(parent.util_sum, 512 * divider);
        assert_eq!(parent.load_sum, 1024 * divider);

        // Nothing pending: no second propagation.
        let again = propagate_entity_load_avg(
            ParentRunQueue {
                avg: &mut parent,
                propagation: &mut parent_propagation,
            },
            &mut entity,
            1024,
            GroupRunQueue {
                avg: &group,
                load: crate::weight::scale_load(1024),
                propagation: &mut group_propagation,
            },
        );
        assert!(!again);

        // The task leaves: the group is empty (no weight), so the entity's
        // load, util and runnable all drop to 0 and the parent loses them.
        let removed = detach_entity_load_avg(&mut group, &task, 1024);
        add_tg_cfs_propagate(&mut group_propagation, removed);
        assert_eq!((group.util_avg, group.load_avg), (0, 0));
        assert!(propagate_entity_load_avg(
            ParentRunQueue {
                avg: &mut parent,
                propagation: &mut parent_propagation,
            },
            &mut entity,
            1024,
            GroupRunQueue {
                avg: &group,
                load: 0,
                propagation: &mut group_propagation,
            },
        ));
        assert_eq!(
            (
                entity.util_avg,
                entity.runnable_avg,
                entity.load_avg,
                entity.load_sum
            ),
            (0, 0, 0, 0)
        );
        assert_eq!(
            (parent.util_avg, parent.runnable_avg, parent.load_avg),
            (0, 0, 0)
        );
        assert_eq!(
            parent_propagation.prop_runnable_sum, 0,
            "added then removed"
        );
    }

    /// §2.7 step 5: a group entity is never less loaded than it is running.
    #[test]
    fn load_at_least_running() {
        let (mut parent, group, mut entity) = hierarchy();
        entity.util_sum = 600 * pelt_divider(&parent);
        entity.util_avg = 600;
        let group = SchedAvg {
            util_avg: 600,
            ..group
        };
        let mut group_propagation = Propagation::default();
        add_tg_cfs_propagate(&mut group_propagation, -5);
        update_tg_cfs_load(
            &mut parent,
            &mut entity,
            2048,
            &group,
            0,
            &mut group_propagation,
        );
        let running_sum = (600 * pelt_divider(&parent)) >> 10;
        assert_eq!(entity.load_sum, running_sum);
        assert_eq!(entity.load_avg, 2048 * running_sum / pelt_divider(&parent));
    }
}
