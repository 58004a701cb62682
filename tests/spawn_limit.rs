//! Creating more tasks than the kernel supports gives a clear error, and the
//! tasks that were created all run.
#![no_std]
#![no_main]

use fairway::config::MAX_TASKS;
use fairway::scheduling::{Completion, spawn};
use fairway::tasks::{SpawnError, TaskParams};

fairway::entry!(main);

static RAN: Completion = Completion::new();
static RELEASE: Completion = Completion::new();

fn sleeper(_: usize) {
    RAN.complete();
    RELEASE.wait_for(1);
}

fn main() -> fairway::ExitCode {
    let cpus = fairway::system().nr_online;
    let mut created = 0usize;
    let error = loop {
        match spawn("sleeper", sleeper, 0, created % cpus, TaskParams::default()) {
            Ok(_) => created += 1,
            Err(error) => break error,
        }
        assert!(created <= MAX_TASKS, "the limit is enforced");
    };
    defmt::println!("spawn_limit: task {=usize} refused: {}", created + 1, error);
    // The main task holds one slot.
    assert_eq!(created, MAX_TASKS - 1);
    assert_eq!(error, SpawnError::TooManyTasks { limit: MAX_TASKS });
    let bad = spawn(
        "bad",
        sleeper,
        0,
        0,
        TaskParams {
            policy: fairway::tasks::Policy::Normal { nice: 20 },
            ..TaskParams::default()
        },
    );
    defmt::println!("spawn_limit: nice 20 refused: {}", bad.unwrap_err());
    RAN.wait_for(created as u64);
    RELEASE.complete();
    defmt::println!("spawn_limit: all {=usize} tasks ran", created);
    fairway::ExitCode::Success
}
