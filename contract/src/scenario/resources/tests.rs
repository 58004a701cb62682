//! Each resource's documented behaviour (`docs/rtapp.md`, "Resources"), worked out
//! by hand: who proceeds, who blocks, and who is woken in what order.

use super::*;
use crate::scenario::{Attributes, Global, NamedEvent, Phase, TaskSpec};
use alloc::vec;

const A: Instance = 0;
const B: Instance = 1;
const C: Instance = 2;

fn woken(f: impl FnOnce(&mut Vec<Instance>) -> Outcome) -> (Outcome, Vec<Instance>) {
    let mut wake = Vec::new();
    let outcome = f(&mut wake);
    (outcome, wake)
}

#[test]
fn a_mutex_is_handed_to_its_waiters_in_arrival_order() {
    let mut r = Resources::default();
    let mut wake = Vec::new();
    assert_eq!(r.lock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.lock(B, "m", &mut wake), Ok(Outcome::Block));
    assert_eq!(r.lock(C, "m", &mut wake), Ok(Outcome::Block));
    assert_eq!(r.blocked_count(), 2);
    assert_eq!(r.unlock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(wake, [B], "B, first to queue, holds m");
    // C still waits: A may not take m back before it.
    assert_eq!(r.lock(A, "m", &mut wake), Ok(Outcome::Block));
    assert_eq!(r.unlock(B, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(wake, [B, C]);
    assert_eq!(r.unlock(C, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(wake, [B, C, A]);
    assert_eq!(r.blocked_count(), 0);
}

#[test]
fn misuse_of_a_mutex_is_an_error_naming_it() {
    let mut r = Resources::default();
    let mut wake = Vec::new();
    assert_eq!(
        r.unlock(A, "m", &mut wake),
        Err(ResourceError::NotOwner {
            instance: A,
            mutex: "m".into()
        })
    );
    assert_eq!(r.lock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(
        r.lock(A, "m", &mut wake),
        Err(ResourceError::Relock {
            instance: A,
            mutex: "m".into()
        })
    );
    assert_eq!(
        r.wait(B, "c", "m", &mut wake),
        Err(ResourceError::NotOwner {
            instance: B,
            mutex: "m".into()
        })
    );
}

#[test]
fn a_waiter_is_woken_by_a_signal_holding_its_mutex_again() {
    let mut r = Resources::default();
    let mut wake = Vec::new();
    assert_eq!(r.lock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.wait(A, "c", "m", &mut wake), Ok(Outcome::Block));
    // The wait released m.
    assert_eq!(r.lock(B, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.signal("c", false, &mut wake), Outcome::Proceed);
    assert!(wake.is_empty(), "A needs m, which B holds");
    assert_eq!(r.unlock(B, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(wake, [A], "A is woken holding m");
    assert_eq!(r.unlock(A, "m", &mut wake), Ok(Outcome::Proceed));
}

#[test]
fn a_signal_with_no_waiter_is_lost() {
    let mut r = Resources::default();
    let (_, wake) = woken(|w| r.signal("c", false, w));
    assert!(wake.is_empty());
    let mut wake = Vec::new();
    assert_eq!(r.lock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.wait(A, "c", "m", &mut wake), Ok(Outcome::Block));
    assert!(wake.is_empty(), "the earlier signal is not remembered");
    assert_eq!(r.blocked_count(), 1);
}

#[test]
fn a_broadcast_wakes_every_waiter_in_order_as_the_mutex_frees() {
    let mut r = Resources::default();
    let mut wake = Vec::new();
    for who in [A, B] {
        assert_eq!(r.lock(who, "m", &mut wake), Ok(Outcome::Proceed));
        assert_eq!(r.wait(who, "c", "m", &mut wake), Ok(Outcome::Block));
    }
    // C broadcasts without holding m: A retakes it at once, B queues for it.
    assert_eq!(r.signal("c", true, &mut wake), Outcome::Proceed);
    assert_eq!(wake, [A]);
    assert_eq!(r.unlock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(wake, [A, B]);
    let _ = C;
}

/// Two tasks that `sync` on one condition take turns: each wakes the other and
/// blocks, as rt-app's ping-pong examples use it.
#[test]
fn sync_partners_take_turns() {
    let mut r = Resources::default();
    let mut wake = Vec::new();
    // A syncs first: nobody to signal, it waits (and has released m).
    assert_eq!(r.sync(A, "c", "m", &mut wake), Ok(Outcome::Block));
    assert!(wake.is_empty());
    // B syncs: signals A, waits; A retakes m, releases it and is woken.
    assert_eq!(r.sync(B, "c", "m", &mut wake), Ok(Outcome::Block));
    assert_eq!(wake, [A]);
    assert_eq!(r.blocked().collect::<Vec<_>>(), [B]);
    // A syncs again: B is woken, A blocks; and so on.
    wake.clear();
    assert_eq!(r.sync(A, "c", "m", &mut wake), Ok(Outcome::Block));
    assert_eq!(wake, [B]);
    assert_eq!(r.blocked().collect::<Vec<_>>(), [A]);
    // m is free between turns.
    assert_eq!(r.lock(C, "m", &mut wake), Ok(Outcome::Proceed));
}

/// A `sync` that must wait for its mutex signals and waits once it gets it, while
/// still blocked; it is woken only after being signalled back.
#[test]
fn a_sync_queued_on_its_mutex_completes_without_waking_in_between() {
    let mut r = Resources::default();
    let mut wake = Vec::new();
    assert_eq!(r.lock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.wait(A, "c", "m", &mut wake), Ok(Outcome::Block));
    assert_eq!(r.lock(C, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.sync(B, "c", "m", &mut wake), Ok(Outcome::Block));
    // C releases m: B takes it, signals A (who queues for m), waits, releases m;
    // A takes m and is woken.
    assert_eq!(r.unlock(C, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(wake, [A]);
    assert_eq!(r.blocked().collect::<Vec<_>>(), [B]);
}

fn task(name: &str, instances: i64, events: Vec<Event>) -> TaskSpec {
    TaskSpec {
        name: name.into(),
        instances,
        loop_count: 1,
        delay_us: 0,
        attributes: Attributes::default(),
        phases: vec![Phase {
            name: String::new(),
            loop_count: 1,
            attributes: Attributes::default(),
            events: events
                .into_iter()
                .map(|event| NamedEvent {
                    key: "e".into(),
                    event,
                })
                .collect(),
        }],
    }
}

#[test]
fn a_barrier_counts_its_users_from_the_file_and_can_be_met_again() {
    let barrier = || Event::Barrier { name: "b".into() };
    let scenario = Scenario {
        global: Global::default(),
        tasks: vec![
            task("x", 2, vec![barrier(), Event::Run { us: 1 }, barrier()]),
            task("y", 1, vec![barrier()]),
            task("z", 3, vec![Event::Run { us: 1 }]),
        ],
    };
    let mut r = Resources::new(&scenario);
    // Users: x's 2 instances and y's 1 (z does not use it).
    let mut wake = Vec::new();
    assert_eq!(r.barrier(0, "b", &mut wake), Outcome::Block);
    assert_eq!(r.barrier(1, "b", &mut wake), Outcome::Block);
    assert_eq!(r.barrier(2, "b", &mut wake), Outcome::Proceed);
    assert_eq!(wake, [0, 1]);
    // A second meeting starts from none.
    assert_eq!(r.barrier(1, "b", &mut wake), Outcome::Block);
    assert_eq!(r.barrier(0, "b", &mut wake), Outcome::Block);
    assert_eq!(r.barrier(2, "b", &mut wake), Outcome::Proceed);
    assert_eq!(wake, [0, 1, 1, 0]);
}

#[test]
fn a_semaphore_remembers_posts_and_wakes_waiters_in_order() {
    let mut r = Resources::default();
    let mut wake = Vec::new();
    assert_eq!(r.sem_post("s", &mut wake), Outcome::Proceed);
    assert_eq!(r.sem_post("s", &mut wake), Outcome::Proceed);
    assert_eq!(r.sem_wait(A, "s"), Outcome::Proceed);
    assert_eq!(r.sem_wait(A, "s"), Outcome::Proceed);
    assert_eq!(r.sem_wait(A, "s"), Outcome::Block);
    assert_eq!(r.sem_wait(B, "s"), Outcome::Block);
    assert_eq!(r.sem_post("s", &mut wake), Outcome::Proceed);
    assert_eq!(wake, [A]);
    assert_eq!(r.sem_post("s", &mut wake), Outcome::Proceed);
    assert_eq!(wake, [A, B]);
    assert_eq!(r.blocked_count(), 0);
}

#[test]
fn resume_wakes_a_suspended_task_and_is_lost_otherwise() {
    let mut r = Resources::default();
    let mut wake = Vec::new();
    assert_eq!(r.resume([A], &mut wake), Outcome::Proceed);
    assert!(wake.is_empty(), "A was not suspended");
    assert_eq!(r.suspend(A), Outcome::Block);
    assert_eq!(r.resume([A, B], &mut wake), Outcome::Proceed);
    assert_eq!(wake, [A]);
    assert_eq!(r.blocked_count(), 0);
}

#[test]
fn a_lock_order_inversion_leaves_both_blocked() {
    let mut r = Resources::default();
    let mut wake = Vec::new();
    assert_eq!(r.lock(A, "m1", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.lock(B, "m2", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.lock(A, "m2", &mut wake), Ok(Outcome::Block));
    assert_eq!(r.lock(B, "m1", &mut wake), Ok(Outcome::Block));
    assert!(wake.is_empty());
    assert_eq!(r.blocked().collect::<Vec<_>>(), [A, B]);
}

fn with_inheritance(policies: &[(Instance, fairway_sched::task::Policy)]) -> Resources {
    let mut r = Resources::default();
    r.enable_priority_inheritance();
    for &(instance, policy) in policies {
        r.set_policy(instance, policy);
    }
    r
}

const FAIR: fairway_sched::task::Policy = fairway_sched::task::Policy::Normal { nice: 0 };
const fn fifo(priority: u8) -> fairway_sched::task::Policy {
    fairway_sched::task::Policy::Fifo { priority }
}

#[test]
fn without_inheritance_nothing_is_boosted() {
    let mut r = Resources::default();
    r.set_policy(A, FAIR);
    r.set_policy(B, fifo(90));
    let mut wake = Vec::new();
    assert_eq!(r.lock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.lock(B, "m", &mut wake), Ok(Outcome::Block));
    assert!(r.take_pi_changes().is_empty());
}

#[test]
fn an_owner_inherits_its_top_waiters_priority_until_it_unlocks() {
    let mut r = with_inheritance(&[(A, FAIR), (B, fifo(20)), (C, fifo(80))]);
    let mut wake = Vec::new();
    assert_eq!(r.lock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert!(r.take_pi_changes().is_empty(), "no waiter: no boost");
    assert_eq!(r.lock(B, "m", &mut wake), Ok(Outcome::Block));
    assert_eq!(r.take_pi_changes(), [(A, Some(20))]);
    assert_eq!(r.lock(C, "m", &mut wake), Ok(Outcome::Block));
    assert_eq!(r.take_pi_changes(), [(A, Some(80))]);
    assert_eq!(r.pi_boost(A), Some(80));
    // The boost ends at the unlock; the mutex goes to the strongest waiter,
    // C, though B queued first; C, owning m with B waiting, is stronger than
    // B already: no boost for it.
    assert_eq!(r.unlock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(wake, [C]);
    assert_eq!(r.take_pi_changes(), [(A, None)]);
    assert_eq!(r.unlock(C, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(wake, [C, B]);
    assert!(r.take_pi_changes().is_empty());
}

#[test]
fn a_boost_follows_the_chain_of_blocked_owners() {
    // A (fair) holds m1; B (FIFO 20) holds m2 and waits for m1; C (FIFO 80)
    // waits for m2: C's priority reaches A through B.
    let mut r = with_inheritance(&[(A, FAIR), (B, fifo(20)), (C, fifo(80))]);
    let mut wake = Vec::new();
    assert_eq!(r.lock(A, "m1", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.lock(B, "m2", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.lock(B, "m1", &mut wake), Ok(Outcome::Block));
    assert_eq!(r.take_pi_changes(), [(A, Some(20))]);
    assert_eq!(r.lock(C, "m2", &mut wake), Ok(Outcome::Block));
    assert_eq!(r.take_pi_changes(), [(A, Some(80)), (B, Some(80))]);
    // A releases m1: B gets it (still boosted by C through m2), A is itself.
    assert_eq!(r.unlock(A, "m1", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(wake, [B]);
    assert_eq!(r.take_pi_changes(), [(A, None)]);
    assert_eq!(r.pi_boost(B), Some(80));
    assert_eq!(r.unlock(B, "m2", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.take_pi_changes(), [(B, None)]);
    assert_eq!(wake, [B, C]);
}

#[test]
fn a_fair_waiter_lends_no_rt_priority_and_a_stronger_owner_none() {
    let mut r = with_inheritance(&[
        (A, fairway_sched::task::Policy::Normal { nice: 10 }),
        (B, fairway_sched::task::Policy::Normal { nice: -20 }),
        (C, fifo(50)),
    ]);
    let mut wake = Vec::new();
    assert_eq!(r.lock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.lock(B, "m", &mut wake), Ok(Outcome::Block));
    assert!(r.take_pi_changes().is_empty(), "fair to fair: weight kept");
    assert_eq!(r.unlock(A, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.unlock(B, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.lock(C, "m", &mut wake), Ok(Outcome::Proceed));
    assert_eq!(r.lock(A, "m", &mut wake), Ok(Outcome::Block));
    assert!(r.take_pi_changes().is_empty(), "the owner is the stronger");
}
