//! The board's console as the board runner sees it: a serial device (put in
//! raw mode, its settings restored when the console is dropped), a Unix socket
//! or any other readable and writable file, read with a deadline.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::termios::{OptionalActions, Termios, isatty, tcgetattr, tcsetattr};

/// Set by SIGINT, SIGTERM or SIGHUP once [`stop_on_signals`] ran.
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Turns SIGINT (Ctrl-C), SIGTERM and SIGHUP into an error from the next
/// read or write of any console, instead of the default of dying on the
/// spot: the error unwinds `hil` as any other does, so each console's
/// terminal settings are put back (its `Drop`) before the process exits. A
/// second signal of the same kind ends the process at once, for a `hil`
/// stuck outside a console (a power-cycle command that does not return).
pub fn stop_on_signals() -> Result<(), String> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let flag = STOP.get_or_init(|| Arc::new(AtomicBool::new(false)));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        // The order matters: the first signal finds the flag clear and
        // only sets it; the second finds it set and exits.
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(flag))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(flag)))
            .map_err(|e| format!("hil: handling signal {signal}: {e}"))?;
    }
    Ok(())
}

/// The error once a signal asked to stop.
fn stopped(name: &str) -> Result<(), String> {
    match STOP.get() {
        Some(flag) if flag.load(Ordering::Relaxed) => Err(format!(
            "interrupted by a signal; the console {name}'s settings are put back"
        )),
        _ => Ok(()),
    }
}

/// What one read gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Received {
    /// This many bytes.
    Bytes(usize),
    /// Nothing before the deadline.
    Nothing,
    /// The other end is gone (a pseudo-terminal whose QEMU exited, a closed
    /// socket, the end of a file).
    Closed,
}

enum Channel {
    File(File),
    Socket(UnixStream),
}

/// An open console.
pub struct Console {
    channel: Channel,
    /// The terminal settings found at open, put back on drop (serial devices).
    saved: Option<Termios>,
    /// The path, for messages.
    pub name: String,
}

impl Console {
    /// Opens `path`: a Unix socket is connected to; anything else is opened
    /// for reading and writing, and a terminal is switched to raw mode (8N1,
    /// no echo, no line editing, no flow control) at `baud` when given.
    pub fn open(path: &Path, baud: Option<u32>) -> Result<Console, String> {
        let name = path.display().to_string();
        let metadata = std::fs::metadata(path).map_err(|e| format!("console {name}: {e}"))?;
        if metadata.file_type().is_socket() {
            let socket = UnixStream::connect(path).map_err(|e| format!("console {name}: {e}"))?;
            return Ok(Console {
                channel: Channel::Socket(socket),
                saved: None,
                name,
            });
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            // Never become the controlling terminal of this process.
            .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
            .open(path)
            .map_err(|e| format!("console {name}: {e}"))?;
        let mut saved = None;
        if isatty(&file) {
            let original = tcgetattr(&file).map_err(|e| format!("console {name}: {e}"))?;
            let mut raw = original.clone();
            raw.make_raw();
            if let Some(baud) = baud {
                raw.set_speed(baud)
                    .map_err(|e| format!("console {name}: speed {baud}: {e}"))?;
            }
            tcsetattr(&file, OptionalActions::Now, &raw)
                .map_err(|e| format!("console {name}: {e}"))?;
            saved = Some(original);
        }
        Ok(Console {
            channel: Channel::File(file),
            saved,
            name,
        })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match &self.channel {
            Channel::File(file) => file.as_fd(),
            Channel::Socket(socket) => socket.as_fd(),
        }
    }

    /// Reads what is there, waiting at most `wait`.
    pub fn read(&mut self, buffer: &mut [u8], wait: Duration) -> Result<Received, String> {
        stopped(&self.name)?;
        let timeout = Timespec {
            tv_sec: wait.as_secs() as i64,
            tv_nsec: i64::from(wait.subsec_nanos()),
        };
        let fd = self.fd();
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => return Ok(Received::Nothing),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {
                stopped(&self.name)?;
                return Ok(Received::Nothing);
            }
            Err(e) => return Err(format!("console {}: {e}", self.name)),
        }
        let revents = fds[0].revents();
        if !revents.contains(PollFlags::IN) && revents.intersects(PollFlags::HUP | PollFlags::ERR) {
            return Ok(Received::Closed);
        }
        let result = match &mut self.channel {
            Channel::File(file) => file.read(buffer),
            Channel::Socket(socket) => socket.read(buffer),
        };
        match result {
            Ok(0) => Ok(Received::Closed),
            Ok(count) => Ok(Received::Bytes(count)),
            // A pseudo-terminal whose other side closed reads EIO.
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error()) => {
                Ok(Received::Closed)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(Received::Nothing),
            Err(e) => Err(format!("console {}: {e}", self.name)),
        }
    }

    /// Writes all of `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), String> {
        stopped(&self.name)?;
        let result = match &mut self.channel {
            Channel::File(file) => file.write_all(bytes).and_then(|()| file.flush()),
            Channel::Socket(socket) => socket.write_all(bytes),
        };
        result.map_err(|e| format!("console {}: writing: {e}", self.name))
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        if let (Some(saved), Channel::File(file)) = (&self.saved, &self.channel) {
            // Let what was written go out first, then put the settings back.
            let _ = tcsetattr(file, OptionalActions::Drain, saved);
        }
    }
}
