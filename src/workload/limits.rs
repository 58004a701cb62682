//! The `cpu.max` of an rt-app run's task groups (docs/bandwidth.md): set when
//! the run starts, then rewritten at the times `cpu.max.changes` gives, as a
//! script writing the cgroup files would (`tg_set_cfs_bandwidth`,
//! docs/linux-sched-reference.md §4.1).
//!
//! Each setting is logged with where its period grid lies, for readers of
//! the switch trace (the per-period checks of xtask/src/test/areas/bandwidth.rs):
//!
//! ```text
//! rtapp: task group /a: from 0 ns: quota 25000000 ns, period 100000000 ns,
//!        burst 0 ns; period timer at 0 ns + k x 100000000 ns from the run's start
//! ```

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use fairway_contract::scenario::Scenario;
use fairway_sched::bandwidth::Bandwidth;
use fairway_sched::task::GroupId;
use spin::Once;

use crate::platform::hrtimer;
use crate::tasks::SpawnError;

/// A limit written during the run.
struct Change {
    /// When, in ns since boot.
    at: u64,
    /// The group's id in the run queues.
    group: GroupId,
    /// The group's path, for the log.
    path: String,
    /// Its new `cpu.max` and `cpu.max.burst`.
    settings: Bandwidth,
}

/// The run's changes in time order, and the run's start.
static CHANGES: Once<(Vec<Change>, u64)> = Once::new();
/// The index of the next change to write; past the end once the run ended.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Sets the limits of the groups limited at some time of the run, with
/// their period grids laid from the run's start `origin`, and arms the
/// timer of the first change.
pub fn set_limits(
    scenario: &Scenario,
    groups: &BTreeMap<String, GroupId>,
    origin: u64,
) -> Result<(), SpawnError> {
    let mut changes = Vec::new();
    for group in scenario
        .global
        .task_groups
        .iter()
        .filter(|g| g.ever_limited())
    {
        let Some(&id) = groups.get(&group.path) else {
            continue;
        };
        // An unlimited start still sets up the pools, here in task context,
        // before a change needs them.
        if !write(id, &group.path, group.bandwidth(), origin, 0) {
            return Err(SpawnError::TaskGroup);
        }
        for change in &group.changes {
            changes.push(Change {
                at: origin + change.at_us.max(0) as u64 * 1000,
                group: id,
                path: group.path.clone(),
                settings: change.bandwidth(),
            });
        }
    }
    // Stable: a group's own changes keep their order.
    changes.sort_by_key(|change| change.at);
    let (changes, _) = CHANGES.call_once(|| (changes, origin));
    if let Some(first) = changes.first() {
        hrtimer::start(
            hrtimer::limit_change_timer(),
            first.at,
            write_due_changes,
            0,
        );
    }
    Ok(())
}

/// Writes no more changes (the run ended; its statistics are taken next).
pub fn stop() {
    NEXT.store(usize::MAX, Ordering::Relaxed);
    hrtimer::cancel(hrtimer::limit_change_timer());
}

/// The timer: writes the changes that are due, then waits for the next.
fn write_due_changes(_: usize) {
    let Some((changes, origin)) = CHANGES.get() else {
        return;
    };
    loop {
        let now = crate::arch::timer::now_ns();
        let Some(change) = changes.get(NEXT.load(Ordering::Relaxed)) else {
            return;
        };
        if change.at > now {
            hrtimer::start(
                hrtimer::limit_change_timer(),
                change.at,
                write_due_changes,
                0,
            );
            return;
        }
        NEXT.fetch_add(1, Ordering::Relaxed);
        // Logged at the time it is written, which under icount can be late.
        // The scenario was validated: a refusal here is a bug, and logged.
        let _ = write(
            change.group,
            &change.path,
            change.settings,
            *origin,
            now.saturating_sub(*origin),
        );
    }
}

/// Writes `settings` to `group` at `at` ns after the run's start, and logs
/// them with the group's period grid; false (logged) if refused.
fn write(group: GroupId, path: &str, settings: Bandwidth, origin: u64, at: u64) -> bool {
    match crate::scheduling::bandwidth::set_group_bandwidth(group, settings, origin) {
        Ok(start) => {
            let quota = settings
                .quota
                .map_or_else(|| String::from("max"), |quota| alloc::format!("{quota}"));
            defmt::info!(
                "rtapp: task group {=str}: from {=u64} ns: quota {=str} ns, period {=u64} ns, burst {=u64} ns; period timer at {=u64} ns + k x {=u64} ns from the run's start",
                path,
                at,
                quota.as_str(),
                settings.period,
                settings.burst,
                start,
                settings.period
            );
            true
        }
        Err(error) => {
            defmt::error!(
                "rtapp: task group {=str}: cpu.max: {}",
                path,
                defmt::Display2Format(&error)
            );
            false
        }
    }
}
