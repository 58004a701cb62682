//! A conversation with U-Boot on the board's console: getting its prompt
//! (stopping autoboot, power-cycling once when the board does not answer),
//! running commands and reading their status, loading files over TFTP or
//! YMODEM (`loady`), and `booti` up to U-Boot's last line.

use std::process::Command;
use std::time::{Duration, Instant};

use super::console::{Console, Received};
use super::ymodem;

/// What U-Boot prints just before jumping to the kernel.
pub const STARTING_KERNEL: &[u8] = b"Starting kernel ...";

/// The board's console with U-Boot on the other end.
pub struct UBoot {
    console: Console,
    /// Received and not consumed yet.
    pending: Vec<u8>,
    /// Everything U-Boot printed, for the transcript.
    pub transcript: Vec<u8>,
    /// The prompt (`=> ` by default).
    prompt: Vec<u8>,
    /// Print what U-Boot says as it comes (stderr).
    echo: bool,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The last bytes of `bytes`, printable, for messages.
fn tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(160);
    let text: String = String::from_utf8_lossy(&bytes[start..])
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '.'
            }
        })
        .collect();
    if text.is_empty() {
        "nothing".into()
    } else {
        format!("'{text}'")
    }
}

impl UBoot {
    /// Talks to U-Boot on `console`.
    pub fn new(console: Console, prompt: &str, echo: bool) -> Self {
        UBoot {
            console,
            pending: Vec::new(),
            transcript: Vec::new(),
            prompt: prompt.as_bytes().to_vec(),
            echo,
        }
    }

    /// The console, for the kernel's output after `booti`.
    pub fn console(&mut self) -> &mut Console {
        &mut self.console
    }

    /// Takes what was received and not consumed (the kernel's first bytes).
    pub fn take_pending(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }

    /// Reads once, waiting at most `wait`; false when nothing came.
    fn receive(&mut self, wait: Duration) -> Result<bool, String> {
        let mut buffer = [0u8; 4096];
        match self.console.read(&mut buffer, wait)? {
            Received::Bytes(count) => {
                let bytes = &buffer[..count];
                self.pending.extend_from_slice(bytes);
                self.transcript.extend_from_slice(bytes);
                if self.echo {
                    eprint!("{}", String::from_utf8_lossy(bytes).replace('\r', ""));
                }
                Ok(true)
            }
            Received::Nothing => Ok(false),
            Received::Closed => Err(format!(
                "console {}: closed by the other end (board or QEMU gone?)",
                self.console.name
            )),
        }
    }

    /// Consumes input up to and including the first of `needles`; returns
    /// which one and the text before it.
    fn until(&mut self, needles: &[&[u8]], limit: Duration) -> Result<(usize, Vec<u8>), String> {
        let start = Instant::now();
        loop {
            let found = needles
                .iter()
                .enumerate()
                .filter_map(|(index, needle)| find(&self.pending, needle).map(|at| (at, index)))
                .min();
            if let Some((at, index)) = found {
                let before = self.pending[..at].to_vec();
                self.pending.drain(..at + needles[index].len());
                return Ok((index, before));
            }
            if start.elapsed() > limit {
                return Err(format!(
                    "waited {} s for '{}' on {}; last bytes seen: {}",
                    limit.as_secs(),
                    String::from_utf8_lossy(needles[0]),
                    self.console.name,
                    tail(&self.pending)
                ));
            }
            self.receive(Duration::from_millis(100))?;
        }
    }

    /// Waits for the prompt: stops autoboot, and pokes (Ctrl-C: cancels a
    /// half-typed line and repeats no command) every second of silence, in
    /// case the board already sits at its prompt. Done when the input ends
    /// with the prompt and stays quiet for 300 ms.
    pub fn wait_for_prompt(&mut self, limit: Duration) -> Result<(), String> {
        let start = Instant::now();
        let mut quiet_since = Instant::now();
        let mut stopped_autoboot = false;
        while start.elapsed() < limit {
            if self.receive(Duration::from_millis(100))? {
                quiet_since = Instant::now();
                if !stopped_autoboot && find(&self.pending, b"autoboot").is_some() {
                    self.console.write_all(b"\x03")?;
                    stopped_autoboot = true;
                }
                continue;
            }
            if self.pending.ends_with(&self.prompt)
                && quiet_since.elapsed() > Duration::from_millis(300)
            {
                self.pending.clear();
                return Ok(());
            }
            if quiet_since.elapsed() > Duration::from_secs(1) {
                self.console.write_all(b"\x03")?;
                quiet_since = Instant::now();
            }
        }
        Err(format!(
            "no U-Boot prompt ('{}') within {} s on {}; last bytes seen: {}",
            String::from_utf8_lossy(&self.prompt),
            limit.as_secs(),
            self.console.name,
            tail(&self.transcript)
        ))
    }

    /// Types `line` 16 bytes at a time, each chunk echoed before the next
    /// (a UART without flow control loses what U-Boot cannot take), then Enter.
    fn type_line(&mut self, line: &str) -> Result<(), String> {
        for chunk in line.as_bytes().chunks(16) {
            self.console.write_all(chunk)?;
            self.until(&[chunk], Duration::from_secs(5))
                .map_err(|e| format!("U-Boot did not echo what was typed: {e}"))?;
        }
        self.console.write_all(b"\r")
    }

    /// Runs `command` and returns its output and exit status (`$?`).
    pub fn run(&mut self, command: &str, limit: Duration) -> Result<(String, u32), String> {
        self.type_line(&format!("{command}; echo hil-rc=$?"))?;
        let (_, output) = self.until(&[b"hil-rc="], limit)?;
        let (_, status) = self.until(&[b"\n"], Duration::from_secs(5))?;
        self.until(&[&self.prompt.clone()], Duration::from_secs(5))?;
        let status = String::from_utf8_lossy(&status)
            .trim()
            .parse()
            .map_err(|_| format!("{command}: unreadable status '{}'", tail(&status)))?;
        Ok((String::from_utf8_lossy(&output).replace('\r', ""), status))
    }

    /// Runs `command` and fails unless it succeeds.
    pub fn run_ok(&mut self, command: &str, limit: Duration) -> Result<String, String> {
        let (output, status) = self.run(command, limit)?;
        if status != 0 {
            return Err(format!(
                "U-Boot: '{command}' failed (status {status}): {}",
                output.trim()
            ));
        }
        Ok(output)
    }

    /// Sends `data` with `loady ADDRESS` and checks the size U-Boot received.
    pub fn loady(&mut self, address: u64, name: &str, data: &[u8]) -> Result<(), String> {
        self.type_line(&format!("loady {address:#x}"))?;
        // "## Ready for binary (ymodem) download to ... at N bps..."
        self.until(&[b"ymodem"], Duration::from_secs(5))?;
        self.until(&[b"\n"], Duration::from_secs(5))?;
        let sent = ymodem::send(&mut *self, name, data, |_| {});
        if let Err(error) = sent {
            ymodem::cancel(self);
            let _ = self.wait_for_prompt(Duration::from_secs(10));
            return Err(format!("loady {name}: {error}"));
        }
        let (_, text) = self.until(&[&self.prompt.clone()], Duration::from_secs(10))?;
        let text = String::from_utf8_lossy(&text);
        // "## Total Size      = 0x0013e6d0 = 1304272 Bytes"
        let expected = format!("= {} Bytes", data.len());
        if !text.contains(&expected) {
            return Err(format!(
                "loady {name}: U-Boot did not report {} bytes received: {}",
                data.len(),
                text.trim()
            ));
        }
        Ok(())
    }

    /// Types the boot command and reads U-Boot's text up to its last line;
    /// what follows belongs to the kernel ([`UBoot::take_pending`]).
    pub fn boot(&mut self, command: &str, limit: Duration) -> Result<(), String> {
        self.type_line(command)?;
        let prompt = self.prompt.clone();
        let mut again = b"\n".to_vec();
        again.extend_from_slice(&prompt);
        let (which, text) = self.until(&[STARTING_KERNEL, &again], limit)?;
        if which == 1 {
            return Err(format!(
                "U-Boot: '{command}' returned to the prompt: {}",
                String::from_utf8_lossy(&text).replace('\r', "").trim()
            ));
        }
        // U-Boot ends its line and adds an empty one before jumping.
        let mut skipped = 0;
        while skipped < 4 && matches!(self.pending.first(), Some(b'\r' | b'\n')) {
            self.pending.remove(0);
            skipped += 1;
        }
        if skipped < 4 {
            // The line ends may still be on their way.
            let start = Instant::now();
            while skipped < 4 && start.elapsed() < Duration::from_millis(200) {
                if self.pending.is_empty() {
                    self.receive(Duration::from_millis(20))?;
                    continue;
                }
                if !matches!(self.pending.first(), Some(b'\r' | b'\n')) {
                    break;
                }
                self.pending.remove(0);
                skipped += 1;
            }
        }
        Ok(())
    }
}

impl ymodem::Link for UBoot {
    fn read_byte(&mut self, wait: Duration) -> Result<Option<u8>, String> {
        if self.pending.is_empty() {
            let mut buffer = [0u8; 1];
            match self.console.read(&mut buffer, wait)? {
                Received::Bytes(_) => return Ok(Some(buffer[0])),
                Received::Nothing => return Ok(None),
                Received::Closed => return Err("the console closed during YMODEM".into()),
            }
        }
        Ok(Some(self.pending.remove(0)))
    }
    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.console.write_all(bytes)
    }
}

/// Runs the power-cycle command (`sh -c`), for a board that did not answer.
pub fn power_cycle(command: &str) -> Result<(), String> {
    eprintln!("xtask: hil: power-cycling the board: {command}");
    let status = Command::new("sh")
        .args(["-c", command])
        .status()
        .map_err(|e| format!("--power-cycle '{command}': {e}"))?;
    if !status.success() {
        return Err(format!("--power-cycle '{command}' failed ({status})"));
    }
    Ok(())
}
