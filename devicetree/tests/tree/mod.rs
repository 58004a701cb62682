//! A device tree as plain data, to and from the flattened format (the devicetree
//! specification's chapter 5), so that tests can build and edit trees node by node:
//! `decode` reads the well-formed fixtures, `encode` writes any tree.
// Each test crate that includes this module uses part of it.
#![allow(dead_code)]

/// A node: its name (with the unit address), properties in order, children in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub properties: Vec<(String, Vec<u8>)>,
    pub children: Vec<Node>,
}

const MAGIC: u32 = 0xd00d_feed;
const BEGIN_NODE: u32 = 1;
const END_NODE: u32 = 2;
const PROP: u32 = 3;
const NOP: u32 = 4;
const END: u32 = 9;
const HEADER_LEN: usize = 40;

fn word(blob: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(blob[at..at + 4].try_into().unwrap())
}

fn align4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes
        .iter()
        .position(|&b| b == 0)
        .expect("unterminated string");
    String::from_utf8(bytes[..end].to_vec()).expect("not UTF-8")
}

impl Node {
    /// A node without properties or children.
    pub fn new(name: &str) -> Self {
        Node {
            name: name.into(),
            properties: Vec::new(),
            children: Vec::new(),
        }
    }

    /// Adds a property.
    pub fn with(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        self.properties.push((name.into(), value.into()));
        self
    }

    /// Adds a child.
    pub fn child(mut self, child: Node) -> Self {
        self.children.push(child);
        self
    }

    /// Reads a well-formed flattened tree (panics on anything else: for fixtures).
    pub fn decode(blob: &[u8]) -> Node {
        assert_eq!(word(blob, 0), MAGIC);
        let structs = word(blob, 8) as usize;
        let strings = word(blob, 12) as usize;
        let mut at = structs;
        let mut stack: Vec<Node> = Vec::new();
        loop {
            let token = word(blob, at);
            at += 4;
            match token {
                BEGIN_NODE => {
                    let name = c_string(&blob[at..]);
                    at = align4(at + name.len() + 1);
                    stack.push(Node::new(&name));
                }
                PROP => {
                    let length = word(blob, at) as usize;
                    let name = c_string(&blob[strings + word(blob, at + 4) as usize..]);
                    let value = blob[at + 8..at + 8 + length].to_vec();
                    at = align4(at + 8 + length);
                    stack.last_mut().unwrap().properties.push((name, value));
                }
                END_NODE => {
                    let node = stack.pop().unwrap();
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(node),
                        None => return node,
                    }
                }
                NOP => {}
                END => panic!("END before the root node ended"),
                other => panic!("token {other:#x} at {}", at - 4),
            }
        }
    }

    /// Writes the tree as a version-17 flattened tree with an empty memory
    /// reservation map.
    pub fn encode(&self) -> Vec<u8> {
        let mut structs = Vec::new();
        let mut strings: Vec<u8> = Vec::new();
        self.encode_into(&mut structs, &mut strings);
        structs.extend_from_slice(&END.to_be_bytes());
        let reservations = HEADER_LEN;
        let structs_offset = reservations + 16;
        let strings_offset = structs_offset + structs.len();
        let total = strings_offset + strings.len();
        let mut blob = Vec::with_capacity(total);
        for field in [
            MAGIC,
            total as u32,
            structs_offset as u32,
            strings_offset as u32,
            reservations as u32,
            17,
            16,
            0,
            strings.len() as u32,
            structs.len() as u32,
        ] {
            blob.extend_from_slice(&field.to_be_bytes());
        }
        blob.extend_from_slice(&[0; 16]);
        blob.extend_from_slice(&structs);
        blob.extend_from_slice(&strings);
        blob
    }

    fn encode_into(&self, structs: &mut Vec<u8>, strings: &mut Vec<u8>) {
        structs.extend_from_slice(&BEGIN_NODE.to_be_bytes());
        structs.extend_from_slice(self.name.as_bytes());
        structs.push(0);
        structs.resize(align4(structs.len()), 0);
        for (name, value) in &self.properties {
            let offset = string_offset(strings, name);
            structs.extend_from_slice(&PROP.to_be_bytes());
            structs.extend_from_slice(&(value.len() as u32).to_be_bytes());
            structs.extend_from_slice(&offset.to_be_bytes());
            structs.extend_from_slice(value);
            structs.resize(align4(structs.len()), 0);
        }
        for child in &self.children {
            child.encode_into(structs, strings);
        }
        structs.extend_from_slice(&END_NODE.to_be_bytes());
    }

    /// Every node, depth first, the root first.
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(Node::count).sum::<usize>()
    }

    /// The `index`th node depth first, the root being 0 (modulo the count).
    pub fn nth_mut(&mut self, index: usize) -> &mut Node {
        let index = index % self.count();
        self.nth_inner(index).unwrap()
    }

    fn nth_inner(&mut self, mut index: usize) -> Option<&mut Node> {
        if index == 0 {
            return Some(self);
        }
        index -= 1;
        for child in &mut self.children {
            let size = child.count();
            if index < size {
                return child.nth_inner(index);
            }
            index -= size;
        }
        None
    }
}

/// The offset of `name` in the strings block, added if new.
fn string_offset(strings: &mut Vec<u8>, name: &str) -> u32 {
    let mut at = 0;
    while at < strings.len() {
        let existing = c_string(&strings[at..]);
        if existing == name {
            return at as u32;
        }
        at += existing.len() + 1;
    }
    strings.extend_from_slice(name.as_bytes());
    strings.push(0);
    at as u32
}

/// Big-endian cells.
pub fn cells(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_be_bytes()).collect()
}

/// A NUL-terminated string.
pub fn text(value: &str) -> Vec<u8> {
    let mut bytes = value.as_bytes().to_vec();
    bytes.push(0);
    bytes
}
