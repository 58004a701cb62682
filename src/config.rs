//! Build-time limits. Each is a size of a statically allocated table.

/// The most CPUs Fairway runs on (QEMU virt's GICv2 limit; GICv3 boards use the first 8):
/// as many as the device-tree reader lists.
pub const MAX_CPUS: usize = fairway_devicetree::MAX_CPUS;

/// The kernel's own tasks beside a scenario's: `main`, the rt-app starter and
/// the util_avg sampler, and one spare.
pub const KERNEL_TASKS: usize = 4;

/// The most tasks that can exist at once, idle tasks excluded: a scenario's
/// instances (the one task limit, `fairway_contract::scenario::MAX_TASKS`) and the
/// kernel's own.
pub const MAX_TASKS: usize = fairway_contract::scenario::MAX_TASKS + KERNEL_TASKS;

/// Task slots in all: the tasks, then one idle task per CPU.
pub const TASK_SLOTS: usize = MAX_TASKS + MAX_CPUS;

/// Task groups per run queue, the root included: a scenario's groups (the one
/// limit, `fairway_contract::scenario::MAX_TASK_GROUPS`, checked on the host before
/// boot) and the root.
pub const MAX_GROUPS: usize = fairway_contract::scenario::MAX_TASK_GROUPS + 1;

/// Each task's kernel stack.
pub const TASK_STACK_SIZE: usize = 16 * 1024;

/// Default scheduler tick frequency (`CONFIG_HZ`); `hz=` on the command line overrides it.
pub const DEFAULT_HZ: u64 = fairway_sched::boot_options::DEFAULT_HZ;
