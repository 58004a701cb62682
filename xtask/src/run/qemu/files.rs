//! The files QEMU reads (device trees, blobs, images), written beside their
//! place and renamed over it, so that concurrent boots read whole files.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles the device tree source `source` into `target` with dtc.
pub fn compile_dts(source: &Path, target: &Path) -> Result<(), String> {
    let temporary = temporary_beside(target);
    let status = Command::new("dtc")
        .args(["-I", "dts", "-O", "dtb", "-q", "-o"])
        .arg(&temporary)
        .arg(source)
        .status()
        .map_err(|e| format!("dtc: {e}"))?;
    if !status.success() {
        let _ = std::fs::remove_file(&temporary);
        return Err(format!("dtc could not compile {}", source.display()));
    }
    rename_over(&temporary, target)
}

/// A path beside `path`, unique to this process and call. The test command boots
/// cases concurrently, and cases of one board write the same files (its device
/// tree, a scenario's blob, the flat Image): each is written here, then renamed
/// over `path`, so a QEMU opening `path` reads a whole file, old or new, never
/// one being written.
pub fn temporary_beside(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.{call}.tmp", std::process::id()))
}

/// Renames `temporary` (from [`temporary_beside`]) over `path`, atomically.
pub fn rename_over(temporary: &Path, path: &Path) -> Result<(), String> {
    std::fs::rename(temporary, path).map_err(|e| {
        let _ = std::fs::remove_file(temporary);
        format!("{}: {e}", path.display())
    })
}

/// Writes `bytes` to `path` through [`temporary_beside`].
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let temporary = temporary_beside(path);
    std::fs::write(&temporary, bytes).map_err(|e| format!("{}: {e}", temporary.display()))?;
    rename_over(&temporary, path)
}
