//! Edits of QEMU's own device tree source that cases boot with or load
//! (`Case::dts`, `Case::parse`): a property replaced, a node removed.

pub(crate) fn replace_once(dts: &str, from: &str, to: &str) -> Result<String, String> {
    if !dts.contains(from) {
        return Err(format!("device tree source has no '{from}'"));
    }
    Ok(dts.replacen(from, to, 1))
}

/// Removes the node that starts at the line `header` (e.g. "\tpsci {").
pub(crate) fn remove_node(dts: &str, header: &str) -> Result<String, String> {
    let start = dts
        .find(header)
        .ok_or_else(|| format!("device tree source has no node '{header}'"))?;
    let indent: String = header.chars().take_while(|c| *c == '\t').collect();
    let end_marker = format!("\n{indent}}};");
    let end = dts[start..].find(&end_marker).ok_or("unterminated node")? + start + end_marker.len();
    Ok(format!("{}{}", &dts[..start], &dts[end..]))
}
