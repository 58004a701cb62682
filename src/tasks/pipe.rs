//! Pipes: a bounded ring buffer with blocking read and write, usable between
//! tasks on any CPUs. A reader sleeps while the pipe is empty; a writer sleeps
//! while it is full. One lock covers the ring and both wait lists, so a wake-up
//! can never be lost between a check and a sleep.

use alloc::boxed::Box;
use core::marker::PhantomData;

use super::scheduler::Scheduler;
use super::wait::{WaitList, wait_until};
use crate::platform::sync::IrqSpinLock;

/// Bytes a pipe holds (Linux's `PIPE_BUF` page).
pub const PIPE_CAPACITY: usize = 4096;

struct Ring {
    bytes: Box<[u8; PIPE_CAPACITY]>,
    head: usize,
    length: usize,
    readers: WaitList,
    writers: WaitList,
}

/// Copies `source` into `target` (same lengths): up to 16 bytes inline, as
/// words where they fit (sched-pipe's 8-byte messages: a `memcpy` call costs
/// about 60 instructions for them), longer runs through `memcpy`.
#[inline(always)]
fn copy_bytes(target: &mut [u8], source: &[u8]) {
    if source.len() == 8 {
        let word: [u8; 8] = source.try_into().unwrap_or([0; 8]);
        target.copy_from_slice(&word);
    } else if source.len() < 16 {
        for (t, s) in target.iter_mut().zip(source) {
            *t = *s;
        }
    } else {
        target.copy_from_slice(source);
    }
}

/// A one-way byte channel between tasks, generic over the [`Scheduler`]
/// that sleeps and wakes (the scheduling floor names it `scheduling::Pipe`).
pub struct Pipe<S> {
    ring: IrqSpinLock<Ring>,
    scheduler: PhantomData<fn() -> S>,
}

impl<S: Scheduler> Default for Pipe<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Scheduler> Pipe<S> {
    /// An empty pipe (allocates its buffer on the boot-time heap).
    pub fn new() -> Self {
        Pipe {
            ring: IrqSpinLock::new(Ring {
                bytes: Box::new([0; PIPE_CAPACITY]),
                head: 0,
                length: 0,
                readers: WaitList::new(),
                writers: WaitList::new(),
            }),
            scheduler: PhantomData,
        }
    }

    /// Reads at least one byte into `buffer` (sleeping while the pipe is empty)
    /// and returns how many were read.
    ///
    /// Out of line, as `write`, as they were compiled before the pipe was
    /// generic over the scheduler: inlined into `read_exact` and each
    /// caller, they cost sched-pipe's round trip 25 instructions more than
    /// the calls do (measured under icount, ARCHITECTURE.md's floors).
    #[inline(never)]
    pub fn read(&self, buffer: &mut [u8]) -> usize {
        if buffer.is_empty() {
            return 0;
        }
        let guard = self.ring.lock();
        let mut ring = wait_until::<S, _>(&self.ring, guard, |r| &mut r.readers, |r| r.length > 0);
        let count = buffer.len().min(ring.length);
        // At most two runs: from the head to the end of the ring, then from
        // its start (Linux's pipe copies whole buffers too, not bytes).
        let head = ring.head;
        let first = count.min(PIPE_CAPACITY - head);
        copy_bytes(&mut buffer[..first], &ring.bytes[head..head + first]);
        if first < count {
            copy_bytes(&mut buffer[first..count], &ring.bytes[..count - first]);
        }
        ring.head = (head + count) % PIPE_CAPACITY;
        ring.length -= count;
        ring.writers.wake_all::<S>();
        drop(ring);
        S::preempt_point();
        count
    }

    /// Reads exactly `buffer.len()` bytes.
    pub fn read_exact(&self, buffer: &mut [u8]) {
        let mut done = 0;
        while done < buffer.len() {
            done += self.read(&mut buffer[done..]);
        }
    }

    /// Writes all of `bytes`, sleeping whenever the pipe is full. A write of at
    /// most [`PIPE_CAPACITY`] bytes is atomic, as POSIX requires up to `PIPE_BUF`:
    /// it waits for room for all of it, so writers never interleave inside it.
    #[inline(never)]
    pub fn write(&self, bytes: &[u8]) {
        let atomic = bytes.len() <= PIPE_CAPACITY;
        let mut written = 0;
        while written < bytes.len() {
            let guard = self.ring.lock();
            let needed = if atomic { bytes.len() } else { 1 };
            let mut ring = wait_until::<S, _>(
                &self.ring,
                guard,
                |r| &mut r.writers,
                |r| PIPE_CAPACITY - r.length >= needed,
            );
            let count = (bytes.len() - written).min(PIPE_CAPACITY - ring.length);
            let tail = (ring.head + ring.length) % PIPE_CAPACITY;
            let first = count.min(PIPE_CAPACITY - tail);
            let source = &bytes[written..written + count];
            copy_bytes(&mut ring.bytes[tail..tail + first], &source[..first]);
            if first < count {
                copy_bytes(&mut ring.bytes[..count - first], &source[first..]);
            }
            ring.length += count;
            written += count;
            ring.readers.wake_all::<S>();
            drop(ring);
            S::preempt_point();
        }
    }
}
