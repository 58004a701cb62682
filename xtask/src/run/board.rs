//! Board descriptions: `boards/<name>/board.toml`, data that selects QEMU's
//! machine and its defaults (the kernel itself learns the board from the device tree).

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One `board.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Board {
    /// Folder name.
    pub name: String,
    /// One line for humans.
    pub description: String,
    /// QEMU `-machine`.
    pub machine: String,
    /// QEMU `-cpu`.
    pub cpu: String,
    /// QEMU `-m`.
    pub memory: String,
    /// Default CPU count.
    pub cpus: u32,
    /// Default GIC version.
    pub gic: u32,
    /// Default entry exception level.
    pub el: u32,
    /// A device tree source to compile with dtc and pass with `-dtb` (relative to the folder).
    #[serde(default)]
    pub dts: Option<String>,
    /// The board's CPUs as a device-tree include (relative to the folder): merged by dtc
    /// into the tree QEMU generates for the same machine, CPU count and GIC, so that the
    /// kernel gets one tree with QEMU's devices and the board's CPU data (`cpu-map`,
    /// `capacity-dmips-mhz`, OPP tables, `dynamic-power-coefficient`).
    #[serde(default)]
    pub cpus_dtsi: Option<String>,
}

/// The workspace root (the folder above `xtask/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

impl Board {
    /// Loads `boards/<name>/board.toml`.
    pub fn load(name: &str) -> Result<Board, String> {
        let path = workspace_root()
            .join("boards")
            .join(name)
            .join("board.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "board '{name}': cannot read {}: {e} (boards: {})",
                path.display(),
                Board::names().join(", ")
            )
        })?;
        let board: Board = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if board.name != name {
            return Err(format!(
                "{}: name = \"{}\" but the folder is '{name}'",
                path.display(),
                board.name
            ));
        }
        Ok(board)
    }

    /// Every board folder.
    pub fn names() -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(workspace_root().join("boards"))
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.path().join("board.toml").exists())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The board's folder.
    pub fn folder(&self) -> PathBuf {
        workspace_root().join("boards").join(&self.name)
    }
}

/// `cargo xtask board-blobs`: compiles each board's tree for the simulator
/// (`boards/NAME/sim.dtb`, `fairway_sim::board::compile_merged`) with dtc, so that
/// the simulator reads boards without it.
pub fn board_blobs() -> Result<std::process::ExitCode, String> {
    crate::run::tools::ensure()?;
    let boards = workspace_root().join("boards");
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&boards)
        .map_err(|e| format!("{}: {e}", boards.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|dir| dir.join("board.toml").exists())
        .collect();
    folders.sort();
    for dir in folders {
        let path = dir.to_string_lossy().into_owned();
        if let Some(blob) = fairway_sim::board::compile_merged(&path).map_err(|e| e.to_string())? {
            let target = dir.join(fairway_sim::board::SIM_BLOB);
            std::fs::write(&target, &blob).map_err(|e| format!("{}: {e}", target.display()))?;
            println!("{}: {} bytes", target.display(), blob.len());
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
