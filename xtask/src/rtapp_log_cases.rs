//! placeholder
pub fn run() -> Result<(u64, u64), String> {
    Ok((0, 0))
}
