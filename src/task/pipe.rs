//! Pipes: a bounded ring buffer with blocking read and write, usable between
//! tasks on any CPUs. A reader sleeps while the pipe is empty; a writer sleeps
//! while it is full. One lock covers the ring and both wait lists, so a wake-up
//! can never be lost between a check and a sleep.

use alloc::boxed::Box;

use super::preempt_point;
use super::wait::{WaitList, wait_until};
use crate::sync::IrqSpinLock;

/// Bytes a pipe holds (Linux's `PIPE_BUF` page).
pub const PIPE_CAPACITY: usize = 4096;

struct Ring {
    bytes: Box<[u8; PIPE_CAPACITY]>,
    head: usize,
    length: usize,
    readers: WaitList,
    writers: WaitList,
}

/// A one-way byte channel between tasks.
pub struct Pipe {
    ring: IrqSpinLock<Ring>,
}

impl Default for Pipe {
    fn default() -> Self {
        Self::new()
    }
}

impl Pipe {
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
        }
    }

    /// Reads at least one byte into `buffer` (sleeping while the pipe is empty)
    /// and returns how many were read.
    pub fn read(&self, buffer: &mut [u8]) -> usize {
        if buffer.is_empty() {
            return 0;
        }
        let guard = self.ring.lock();
        let mut ring = wait_until(&self.ring, guard, |r| &mut r.readers, |r| r.length > 0);
        let count = buffer.len().min(ring.length);
        for (i, byte) in buffer.iter_mut().take(count).enumerate() {
            *byte = ring.bytes[(ring.head + i) % PIPE_CAPACITY];
        }
        ring.head = (ring.head + count) % PIPE_CAPACITY;
        ring.length -= count;
        ring.writers.wake_all();
        drop(ring);
        preempt_point();
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
    pub fn write(&self, bytes: &[u8]) {
        let atomic = bytes.len() <= PIPE_CAPACITY;
        let mut written = 0;
        while written < bytes.len() {
            let guard = self.ring.lock();
            let needed = if atomic { bytes.len() } else { 1 };
            let mut ring = wait_until(
                &self.ring,
                guard,
                |r| &mut r.writers,
                |r| PIPE_CAPACITY - r.length >= needed,
            );
            let count = (bytes.len() - written).min(PIPE_CAPACITY - ring.length);
            let tail = ring.head + ring.length;
            for (i, &byte) in bytes[written..written + count].iter().enumerate() {
                ring.bytes[(tail + i) % PIPE_CAPACITY] = byte;
            }
            ring.length += count;
            written += count;
            ring.readers.wake_all();
            drop(ring);
            preempt_point();
        }
    }
}
