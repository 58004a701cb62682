//! Booting: QEMU started with a configuration's arguments, its output
//! decoded live (the kernel's defmt frames) until it exits or its time is
//! up; and the images and trees a boot needs.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use defmt_decoder::{DecodeError, Table};

use super::QemuConfig;
use super::files::{rename_over, temporary_beside};

/// What a boot produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// QEMU's exit status; `None` when killed by the timeout.
    pub status: Option<i32>,
    /// The limit fired.
    pub timed_out: bool,
    /// Decoded log lines, in order.
    pub lines: Vec<String>,
    /// Wall time of the boot.
    pub wall: Duration,
}

impl Outcome {
    /// The first line containing `needle`.
    pub fn find(&self, needle: &str) -> Option<&str> {
        self.lines
            .iter()
            .find(|l| l.contains(needle))
            .map(String::as_str)
    }
}

/// Boots `kernel` and waits for it to exit or time out.
pub fn run(kernel: &Path, config: &QemuConfig) -> Result<Outcome, String> {
    config.validate()?;
    let elf = std::fs::read(kernel).map_err(|e| format!("{}: {e}", kernel.display()))?;
    let image = if config.as_image {
        make_image(kernel)?
    } else {
        kernel.to_path_buf()
    };
    let (program, mut arguments) = if config.no_firmware {
        let (program, empty) = isolated_qemu()?;
        (program, vec!["-L".into(), empty.display().to_string()])
    } else {
        (PathBuf::from("qemu-system-aarch64"), Vec::new())
    };
    arguments.extend(config.arguments(Some(&image), ""));
    let mut child = Command::new(&program)
        .args(&arguments)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let start = Instant::now();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let mut stdout = child.stdout.take().expect("piped stdout");
    let decoded = Arc::clone(&lines);
    let echo = config.echo;
    let reader = std::thread::spawn(move || -> Result<(), String> {
        let table = Table::parse(&elf)
            .map_err(|e| format!("reading the defmt table: {e}"))?
            .ok_or("the kernel image has no defmt table")?;
        let mut decoder = table.new_stream_decoder();
        let mut buffer = [0u8; 4096];
        loop {
            let count = match stdout.read(&mut buffer) {
                Ok(0) | Err(_) => return Ok(()),
                Ok(count) => count,
            };
            decoder.received(&buffer[..count]);
            decode_frames(decoder.as_mut(), echo, |line| {
                decoded.lock().expect("log lock").push(line);
            });
        }
    });
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if start.elapsed() > config.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                timed_out = true;
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for QEMU: {e}")),
        }
    };
    let wall = start.elapsed();
    match reader.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err("the log decoder thread panicked".into()),
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let mut lines = std::mem::take(&mut *lines.lock().expect("log lock"));
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        let line = format!("qemu: {line}");
        if config.echo {
            let _terminal = crate::run::progress::before_output();
            eprintln!("{line}");
        }
        lines.push(line);
    }
    if timed_out {
        let line = format!(
            "TIMEOUT: QEMU killed after {:.1} s (limit {:?})",
            wall.as_secs_f64(),
            config.timeout
        );
        if config.echo {
            let _terminal = crate::run::progress::before_output();
            eprintln!("{line}");
        }
        lines.push(line);
    }
    Ok(Outcome {
        status,
        timed_out,
        lines,
        wall,
    })
}

/// Decodes every complete defmt frame `decoder` holds into a log line
/// (`TIMESTAMP LEVEL message`, as the runner prints them), echoes it when
/// `echo` (trace records are data, never echoed) and hands it to `push`;
/// a malformed frame becomes the line `(malformed defmt frame skipped)`. Shared
/// by the QEMU runner and the board runner (`crate::hil`).
pub fn decode_frames(
    decoder: &mut dyn defmt_decoder::StreamDecoder,
    echo: bool,
    mut push: impl FnMut(String),
) {
    loop {
        match decoder.decode() {
            Ok(frame) => {
                let message = frame.display_message().to_string();
                let line = match (frame.level(), frame.display_timestamp()) {
                    (Some(level), Some(ts)) => {
                        format!("{ts} {:<5} {message}", level.as_str().to_uppercase())
                    }
                    (None, Some(ts)) => format!("{ts} {message}"),
                    (Some(level), None) => {
                        format!("{:<5} {message}", level.as_str().to_uppercase())
                    }
                    (None, None) => message,
                };
                // Trace records are data for `--trace`, and the turns
                // lines for the runner's warnings (`icount_warnings`), not
                // for a reader.
                if echo && !line.contains("trace-record: ") && !line.contains("turns: ") {
                    let _terminal = crate::run::progress::before_output();
                    println!("{line}");
                }
                push(line);
            }
            Err(DecodeError::UnexpectedEof) => return,
            Err(DecodeError::Malformed) => {
                let line = "(malformed defmt frame skipped)".to_string();
                if echo {
                    let _terminal = crate::run::progress::before_output();
                    println!("{line}");
                }
                push(line);
            }
        }
    }
}

/// Makes a flat arm64 Image (`KERNEL.img`) from the ELF with the toolchain's
/// llvm-objcopy (rustup component llvm-tools).
pub fn make_image(kernel: &Path) -> Result<PathBuf, String> {
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("rustc: {e}"))?;
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_string();
    let host = Command::new("rustc")
        .args(["--print", "host-tuple"])
        .output()
        .map_err(|e| format!("rustc: {e}"))?;
    let host = String::from_utf8_lossy(&host.stdout).trim().to_string();
    let objcopy = Path::new(&sysroot)
        .join("lib/rustlib")
        .join(host)
        .join("bin/llvm-objcopy");
    let image = kernel.with_extension("img");
    let temporary = temporary_beside(&image);
    let status = Command::new(&objcopy)
        .args(["-O", "binary"])
        .arg(kernel)
        .arg(&temporary)
        .status()
        .map_err(|e| {
            format!(
                "{}: {e} (install it with: rustup component add llvm-tools)",
                objcopy.display()
            )
        })?;
    if !status.success() {
        let _ = std::fs::remove_file(&temporary);
        return Err(format!("llvm-objcopy failed on {}", kernel.display()));
    }
    rename_over(&temporary, &image)?;
    Ok(image)
}

/// Dumps QEMU's own device tree for `config` into `path`.
pub fn dump_dtb(config: &QemuConfig, path: &Path) -> Result<(), String> {
    let temporary = temporary_beside(path);
    let extra = format!(",dumpdtb={}", temporary.display());
    let output = Command::new("qemu-system-aarch64")
        .args(config.arguments(None, &extra))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start qemu-system-aarch64: {e}"))?;
    if !temporary.exists() {
        return Err(format!(
            "QEMU did not dump its device tree: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    rename_over(&temporary, path)
}

/// A copy of QEMU that can find no firmware, and an empty folder for `-L`.
///
/// `-L DIR` only puts DIR in front of QEMU's search path (QEMU 7.2 still searches
/// `share/qemu`, `share/seabios` and `lib/ipxe/qemu` after it), so by itself it
/// hides nothing. Those folders are found relative to the executable, so a copy
/// of the executable in a folder of its own has none. This checks that QEMU lists
/// only such folders, so a QEMU that searches elsewhere fails here rather than
/// passing the tests by luck.
pub fn isolated_qemu() -> Result<(PathBuf, PathBuf), String> {
    let root = crate::run::board::workspace_root()
        .join("target")
        .join("xtask-isolated-qemu");
    let program = root.join("bin").join("qemu-system-aarch64");
    let empty = root.join("empty");
    let installed = which("qemu-system-aarch64")?;
    let stale = match (std::fs::metadata(&installed), std::fs::metadata(&program)) {
        (Ok(source), Ok(copy)) => {
            source.len() != copy.len() || source.modified().ok() > copy.modified().ok()
        }
        _ => true,
    };
    if stale {
        std::fs::create_dir_all(program.parent().expect("bin folder"))
            .map_err(|e| format!("{}: {e}", root.display()))?;
        let temporary = temporary_beside(&program);
        std::fs::copy(&installed, &temporary).map_err(|e| {
            format!(
                "copying {} to {}: {e}",
                installed.display(),
                temporary.display()
            )
        })?;
        rename_over(&temporary, &program)?;
    }
    std::fs::create_dir_all(&empty).map_err(|e| format!("{}: {e}", empty.display()))?;
    let listed = Command::new(&program)
        .args(["-L"])
        .arg(&empty)
        .args(["-L", "help"])
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    for folder in String::from_utf8_lossy(&listed.stdout).lines() {
        let folder = Path::new(folder.trim());
        let inside = folder
            .canonicalize()
            .map_or(folder.starts_with(&root) || !folder.exists(), |f| {
                f.starts_with(&root)
            });
        let has_files = std::fs::read_dir(folder).is_ok_and(|mut d| d.next().is_some());
        if !inside || has_files {
            return Err(format!(
                "QEMU searches {} for firmware, outside {} or not empty: the tests cannot \
                 boot without optional firmware",
                folder.display(),
                root.display()
            ));
        }
    }
    Ok((program, empty))
}

/// The file `program` names on the PATH, with symbolic links resolved.
fn which(program: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|folder| folder.join(program))
        .find(|candidate| candidate.is_file())
        .and_then(|found| found.canonicalize().ok())
        .ok_or_else(|| format!("{program} is not on the PATH"))
}
