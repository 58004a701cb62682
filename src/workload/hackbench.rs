//! hackbench (pipe mode): groups of senders and receivers. In each group every
//! sender writes `loops` messages of 100 bytes to every receiver, each receiver
//! owning one pipe; every message carries its sender and sequence number, and
//! each receiver checks that it gets every message of every sender, in order.
//!
//! Options (command line): `groups=G` (default 4), `fds=F` (senders and
//! receivers per group, default 10), `loops=L` (default 50).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use spin::Once;

use super::report;
use crate::ExitCode;
use crate::arch::timer::now_ns;
use crate::platform::percpu;
use crate::scheduling::{Completion, Pipe, spawn};
use crate::tasks::{TaskId, TaskParams};
use fairway_sched::boot_options::HackbenchOptions;

/// hackbench's message size.
const MESSAGE_BYTES: usize = 100;

struct Setup {
    fds: usize,
    loops: u64,
    /// One pipe per receiver, `groups * fds` of them.
    pipes: Vec<Pipe>,
}

static SETUP: Once<Setup> = Once::new();
static DONE: Completion = Completion::new();
static RECEIVED: AtomicU64 = AtomicU64::new(0);
static BAD: AtomicU64 = AtomicU64::new(0);

fn sender(index: usize) {
    let setup = SETUP.get().expect("set up");
    let (group, sender) = (index / setup.fds, index % setup.fds);
    let mut message = [0u8; MESSAGE_BYTES];
    for sequence in 0..setup.loops {
        for receiver in 0..setup.fds {
            message[..4].copy_from_slice(&(sender as u32).to_le_bytes());
            message[4..12].copy_from_slice(&sequence.to_le_bytes());
            message[12] = (sender as u8) ^ (sequence as u8);
            setup.pipes[group * setup.fds + receiver].write(&message);
        }
    }
    DONE.complete();
}

fn receiver(index: usize) {
    let setup = SETUP.get().expect("set up");
    let pipe = &setup.pipes[index];
    let mut next = alloc::vec![0u64; setup.fds];
    let expected = setup.loops * setup.fds as u64;
    let mut message = [0u8; MESSAGE_BYTES];
    for _ in 0..expected {
        pipe.read_exact(&mut message);
        let sender = u32::from_le_bytes([message[0], message[1], message[2], message[3]]) as usize;
        let mut sequence_bytes = [0u8; 8];
        sequence_bytes.copy_from_slice(&message[4..12]);
        let sequence = u64::from_le_bytes(sequence_bytes);
        let intact = message[12] == (sender as u8) ^ (sequence as u8);
        if sender >= setup.fds || next[sender] != sequence || !intact {
            BAD.fetch_add(1, Ordering::Relaxed);
        } else {
            next[sender] += 1;
        }
        RECEIVED.fetch_add(1, Ordering::Relaxed);
    }
    DONE.complete();
}

/// Runs hackbench with the command line's options.
pub fn run(options: &HackbenchOptions) -> ExitCode {
    match run_inner(options) {
        Ok(code) => code,
        Err(code) => code,
    }
}

fn run_inner(options: &HackbenchOptions) -> Result<ExitCode, ExitCode> {
    let groups = options.groups as usize;
    let fds = options.fds as usize;
    let loops = options.loops;
    if groups * fds * 2 >= crate::config::MAX_TASKS {
        defmt::error!(
            "hackbench: groups={=usize} x fds={=usize} needs {=usize} tasks, more than the kernel supports",
            groups,
            fds,
            groups * fds * 2
        );
        return Err(ExitCode::Failure);
    }
    SETUP.call_once(|| Setup {
        fds,
        loops,
        pipes: (0..groups * fds).map(|_| Pipe::new()).collect(),
    });
    crate::observe::costs::reset();
    let cpus = percpu::nr_online();
    let start = now_ns();
    let mut tasks: Vec<(TaskId, u64)> = Vec::new();
    for index in 0..groups * fds {
        let spawned = spawn(
            "receiver",
            receiver,
            index,
            index % cpus,
            TaskParams::default(),
        )
        .and_then(|r| {
            let s = spawn(
                "sender",
                sender,
                index,
                (index + 1) % cpus,
                TaskParams::default(),
            )?;
            Ok((r, s))
        });
        match spawned {
            Ok((r, s)) => {
                tasks.push((r, 0));
                tasks.push((s, 0));
            }
            Err(error) => {
                defmt::error!("hackbench: {}", error);
                return Err(ExitCode::Failure);
            }
        }
    }
    DONE.wait_for(2 * (groups * fds) as u64);
    let elapsed = now_ns() - start;
    let expected = (groups * fds * fds) as u64 * loops;
    let received = RECEIVED.load(Ordering::Relaxed);
    let bad = BAD.load(Ordering::Relaxed);
    defmt::println!(
        "hackbench: {=usize} groups x {=usize} senders/receivers x {=u64} loops: {=u64} of {=u64} messages received, {=u64} out of order or damaged, {=u64} us",
        groups,
        fds,
        loops,
        received,
        expected,
        bad,
        elapsed / 1000
    );
    let config = report::config_label("");
    let mut metrics = alloc::vec![
        ("messages", received),
        ("messages_bad", bad),
        (
            "messages_per_second",
            received * 1_000_000_000 / elapsed.max(1),
        ),
    ];
    metrics.extend(crate::scheduling::eas::metrics());
    report::print(&report::RunResults {
        name: "hackbench",
        config: &config,
        wall_ns: elapsed,
        tasks: &tasks,
        metrics: &metrics,
        window: None,
        groups: &[],
    });
    Ok(if received == expected && bad == 0 {
        ExitCode::Success
    } else {
        ExitCode::Failure
    })
}
