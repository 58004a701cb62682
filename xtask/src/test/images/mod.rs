//! The kernel's test images' cases, one file per image: the cases of
//! `tests/NAME.rs` (every `Case::new(_, "NAME")`) are in `NAME.rs` here.

pub(crate) mod boot;
pub(crate) mod device_tree;
pub(crate) mod exception;
pub(crate) mod hang;
pub(crate) mod load;
pub(crate) mod migration;
pub(crate) mod panic;
pub(crate) mod pipe;
pub(crate) mod preempt;
pub(crate) mod spawn_limit;
pub(crate) mod timeline_bench;
pub(crate) mod timer;
