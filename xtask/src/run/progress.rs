//! The runner's progress line (`cargo run` on a terminal): after 2 s of
//! wall time, the virtual time the kernel has reached and the share of the
//! scenario's duration, on standard error, rewritten in place about four
//! times a second and erased when a log line or the end comes. As the
//! simulator's (`sim/src/engine/progress.rs`), never in CI logs or pipes.
//!
//! The kernel is not asked for anything: it exports where CPU 0 writes the
//! time of its last tick (`percpu::PROGRESS_NS`, a pointer in the image's
//! data), and the runner reads that word of guest memory through QEMU's
//! monitor (QMP's `human-monitor-command` running `xp`). Reading memory
//! from the monitor leaves the guest's instructions and, under icount, its
//! virtual time as they were, so a run with the line is the same run as
//! one without it.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use object::{Object, ObjectSection, ObjectSymbol};

/// How long a run goes before the line appears.
const QUIET_FOR: Duration = Duration::from_secs(2);
/// How often it is rewritten.
const EVERY: Duration = Duration::from_millis(250);

/// Whether the line is on the terminal now (log lines erase it first).
static SHOWN: AtomicBool = AtomicBool::new(false);

/// Erases the line, if shown, before other output: hold the returned lock
/// of the terminal's standard error while writing the output, so that the
/// line's thread cannot put the line back in between.
pub fn before_output() -> std::io::StderrLock<'static> {
    let mut err = std::io::stderr().lock();
    if SHOWN.swap(false, Ordering::AcqRel) {
        let _ = write!(err, "\r\x1b[K");
        let _ = err.flush();
    }
    err
}

/// When an rt-app run starts at the earliest, ns since boot (the kernel's
/// `RUN_START_NS`, src/workload/rtapp.rs): the line measures the run's share
/// of its duration from there, as the tick time it reads counts from boot.
const RUN_START_NS: u64 = 20_000_000;

/// Whether this run shows the line: standard error is a terminal and `CI`
/// is not set.
pub fn wanted() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}

/// Where the kernel keeps CPU 0's last tick time: the value of the pointer
/// `PROGRESS_NS` in the image `elf` (a physical address: the kernel is
/// identity mapped, linker.ld).
pub fn tick_time_address(elf: &[u8]) -> Option<u64> {
    let file = object::File::parse(elf).ok()?;
    let symbol = file
        .symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains("PROGRESS_NS")))?;
    let section = file.section_by_index(symbol.section_index()?).ok()?;
    let data = section.data().ok()?;
    let offset = usize::try_from(symbol.address() - section.address()).ok()?;
    let bytes: [u8; 8] = data.get(offset..offset + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// What the line's thread read: how many times, and the last time read.
#[derive(Debug, Default)]
pub struct Readings {
    /// Reads answered.
    pub count: AtomicU64,
    /// The last value read, ns.
    pub last_ns: AtomicU64,
}

/// The line's thread, reading the kernel's time through QMP on `socket`.
pub struct ProgressLine {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// What it read (the test of the line checks it).
    pub readings: Arc<Readings>,
}

impl ProgressLine {
    /// Starts the thread: it connects once QEMU listens on `socket`, and
    /// shows `address`'s value against `duration_ns` (the scenario's, when
    /// it has one).
    pub fn start(socket: PathBuf, address: u64, duration_ns: Option<u64>) -> Self {
        Self::start_with(socket, address, duration_ns, QUIET_FOR, true)
    }

    /// [`ProgressLine::start`], reading after `quiet_for` and printing the
    /// line only when `print` (the test reads without printing).
    pub fn start_with(
        socket: PathBuf,
        address: u64,
        duration_ns: Option<u64>,
        quiet_for: Duration,
        print: bool,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let readings = Arc::new(Readings::default());
        let (stopped, read) = (Arc::clone(&stop), Arc::clone(&readings));
        let thread = std::thread::spawn(move || {
            let line = Line {
                stop: &stopped,
                socket: &socket,
                address,
                duration_ns,
                quiet_for,
                print,
                readings: &read,
            };
            let _ = line.show_until_stopped();
            let _ = std::fs::remove_file(&socket);
        });
        ProgressLine {
            stop,
            thread: Some(thread),
            readings,
        }
    }
}

impl Drop for ProgressLine {
    /// Stops the thread and erases the line.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        drop(before_output());
    }
}

/// One QMP exchange: sends `command`, returns the line that answers it
/// (events QEMU sends meanwhile are skipped).
fn exchange(stream: &mut UnixStream, reader: &mut impl BufRead, command: &str) -> Option<String> {
    stream.write_all(command.as_bytes()).ok()?;
    stream.write_all(b"\n").ok()?;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line.contains("\"return\"") || line.contains("\"error\"") {
            return Some(line);
        }
    }
}

/// The thread's settings.
struct Line<'a> {
    stop: &'a AtomicBool,
    socket: &'a PathBuf,
    address: u64,
    duration_ns: Option<u64>,
    quiet_for: Duration,
    print: bool,
    readings: &'a Readings,
}

impl Line<'_> {
    fn show_until_stopped(&self) -> Option<()> {
        let start = Instant::now();
        while start.elapsed() < self.quiet_for {
            if self.stop.load(Ordering::Acquire) {
                return Some(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // QEMU may not listen yet.
        let mut stream = loop {
            match UnixStream::connect(self.socket) {
                Ok(stream) => break stream,
                Err(_) if !self.stop.load(Ordering::Acquire) => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(_) => return Some(()),
            }
        };
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let mut reader = BufReader::new(stream.try_clone().ok()?);
        let mut greeting = String::new();
        reader.read_line(&mut greeting).ok()?;
        exchange(
            &mut stream,
            &mut reader,
            r#"{"execute":"qmp_capabilities"}"#,
        )?;
        let read = format!(
            r#"{{"execute":"human-monitor-command","arguments":{{"command-line":"xp /1gx {:#x}"}}}}"#,
            self.address
        );
        while !self.stop.load(Ordering::Acquire) {
            let answer = exchange(&mut stream, &mut reader, &read)?;
            // `{"return": "0000000040a1b2c0: 0x000000000bebc200\r\n"}`
            let value = answer
                .split("0x")
                .nth(1)
                .and_then(|hex| hex.get(..16))
                .and_then(|hex| u64::from_str_radix(hex, 16).ok());
            if let Some(now) = value {
                self.readings.count.fetch_add(1, Ordering::Relaxed);
                self.readings.last_ns.store(now, Ordering::Relaxed);
                if self.print && now > 0 {
                    self.print(now);
                }
            }
            std::thread::sleep(EVERY);
        }
        Some(())
    }

    fn print(&self, now: u64) {
        let seconds = |ns: u64| ns as f64 / 1e9;
        let line = match self.duration_ns {
            Some(duration) if duration > 0 => format!(
                "xtask: {:.2} s of the kernel's time, the run ends near {:.2} s ({:.0} %)",
                seconds(now),
                seconds(RUN_START_NS + duration),
                (100.0 * now.saturating_sub(RUN_START_NS) as f64 / duration as f64).min(100.0)
            ),
            _ => format!("xtask: {:.2} s of the kernel's time", seconds(now)),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}\x1b[K");
        let _ = err.flush();
        SHOWN.store(true, Ordering::Release);
    }
}
