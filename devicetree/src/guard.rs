//! What the `fdt` crate (0.2.0-alpha3) panics on, refused before it sees the blob,
//! with the reason it gives for the same fault where it does not panic. Each case was
//! found by the fuzz target (`tests/fuzz.rs`) and is kept as a test in
//! `tests/regressions.rs`.

const HEADER_LEN: usize = 40;
const BEGIN_NODE: [u8; 4] = 1u32.to_be_bytes();
const NOP: [u8; 4] = 4u32.to_be_bytes();

fn header_field(blob: &[u8], offset: usize) -> usize {
    u32::from_be_bytes([
        blob[offset],
        blob[offset + 1],
        blob[offset + 2],
        blob[offset + 3],
    ]) as usize
}

/// Refuses what `fdt` cannot read without panicking; a blob too short for a
/// header passes, as `fdt` refuses it itself.
pub(crate) fn check(blob: &[u8]) -> Result<(), &'static str> {
    if blob.len() < HEADER_LEN {
        return Ok(());
    }
    // `fdt` adds each block's offset and size as `u32` before any check: a header
    // such as structure offset 0x7700_0000 and size 0x8900_0000 overflows (a
    // panic with overflow checks, else a wrapped end that passes its bounds check
    // and a slice index out of bounds). Such a block ends past the blob, which
    // `fdt` calls truncated.
    let block = |offset, size| {
        let start = header_field(blob, offset);
        let end = start as u64 + header_field(blob, size) as u64;
        blob.get(start..usize::try_from(end).ok()?)
    };
    let (Some(structs), Some(_)) = (block(8, 36), block(12, 32)) else {
        return Err("truncated");
    };
    // To find the root node, `fdt` reads the four bytes before the end of what
    // follows the root's BEGIN_NODE token (leading NOP tokens skipped) at
    // `len - 4`, which underflows when fewer than four bytes follow. Where it
    // wraps instead, it refuses the tree as having no root node.
    let mut at = 0;
    while structs.get(at..at + 4) == Some(&NOP[..]) {
        at += 4;
    }
    if structs.get(at..at + 4) == Some(&BEGIN_NODE[..]) && structs.len() - (at + 4) < 4 {
        return Err("no root node");
    }
    Ok(())
}
