//! One suite for every policy, built-in and registered (docs/testing.md,
//! docs/policies.md): the grader's properties ([`crate::policies::grader`])
//! asserted for round robin, CFS, EEVDF and every policy in
//! [`crate::policies::REGISTERED`]: nothing lost, nothing duplicated, idle
//! when empty, nr_running consistent with a model, no starvation,
//! migration, and the share each promises.

use super::*;
use crate::policies::{PolicyContext, PolicyId, grader};
use alloc::vec::Vec;

const MS: u64 = 1_000_000;

/// Every policy, with the slice its shares are counted in.
fn policies() -> Vec<(PolicyKind, Nanoseconds)> {
    let mut kinds = Vec::from([
        (PolicyKind::RoundRobin { slice: 4 * MS }, 4 * MS),
        (PolicyKind::Cfs(CfsTunables::for_cpus(1)), 4 * MS),
        (
            PolicyKind::Eevdf(EevdfTunables::for_cpus(1, 4 * MS)),
            4 * MS,
        ),
    ]);
    for id in PolicyId::all() {
        let context = PolicyContext {
            max_tasks: 0,
            slice_ns: 4 * MS,
            tick_ns: MS,
            nr_cpus: 1,
            cpu: 0,
        };
        kinds.push((PolicyKind::Registered(id, context), 4 * MS));
    }
    kinds
}

fn assert_holds(kind: &PolicyKind, result: Result<alloc::string::String, alloc::string::String>) {
    if let Err(failure) = result {
        panic!("{kind:?}: {failure}");
    }
}

#[test]
fn random_operations_keep_every_task_once() {
    for (kind, _) in policies() {
        let check_fair = &mut |rq: &RunQueue| {
            if let Some(fair) = rq.fair() {
                fair.check_consistency();
            }
        };
        assert_holds(&kind, grader::every_task_once(kind, check_fair));
    }
}

/// CPU-bound tasks driven by a 1 ms tick: every one runs within its window.
#[test]
fn no_starvation_under_ticks() {
    for (kind, _) in policies() {
        assert_holds(&kind, grader::no_starvation(kind));
    }
}

#[test]
fn migration_keeps_the_task() {
    for (kind, _) in policies() {
        assert_holds(&kind, grader::migration_keeps_the_task(kind));
    }
}

/// Each policy's share: equal (round robin, the template), by weight
/// within a slice (CFS, EEVDF) or within stride's bound, by weight within
/// 4 σ of a binomial count (lottery).
#[test]
fn every_policy_gives_the_share_it_promises() {
    for (kind, slice) in policies() {
        assert_holds(&kind, grader::shares(kind, slice));
    }
}

/// The verdicts `cargo xtask policy-check` prints: one per property, all
/// passing for every policy.
#[test]
fn grade_gives_one_passing_verdict_per_property() {
    for (kind, slice) in policies() {
        let verdicts = grader::grade(kind, slice);
        assert_eq!(verdicts.len(), 4);
        for verdict in verdicts {
            assert!(
                verdict.passed,
                "{kind:?}: {}: {}",
                verdict.property, verdict.detail
            );
        }
    }
}
